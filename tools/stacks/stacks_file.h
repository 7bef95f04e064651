/* SPDX-License-Identifier: MIT */
/* The file the stack tool writes at detach (stacks_format.h). */
#ifndef ROCATTACH_STACKS_FILE_H
#define ROCATTACH_STACKS_FILE_H

/* $ROCPROF_OUTPUT_PATH/rocattach-stacks.<host>.<pid>.<n>.txt, under a .tmp name then renamed. */
void write_file(void);

#endif

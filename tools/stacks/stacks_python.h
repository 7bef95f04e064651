/* SPDX-License-Identifier: MIT */
/*
 * CPython in the process the tool is attached to (docs/stacks.md, "Python
 * frames"). At attach, out of any handler: is there an interpreter, which
 * version (its Py_Version), is its layout known (stacks_pylayout.h), where
 * is its eval loop. In the handler: the raw frame chain of the thread that
 * runs it, copied with process_vm_readv on the process itself
 * (async-signal-safe; a bad pointer is EFAULT, never SIGSEGV), bounded in
 * depth. The names are the node's to find, after the window.
 */
#ifndef ROCATTACH_STACKS_PYTHON_H
#define ROCATTACH_STACKS_PYTHON_H

#include "stacks_state.h"

/* At attach: st.py set (on, or off with why when an interpreter is there but not known). */
void py_attach(void);

/* In the handler, after the native unwind of r: its Python frames; *tstate caches the thread's. */
void py_copy(struct record *r, pid_t tid, uint64_t *tstate);

/* How many bytes a record needs for its Python frames (0 when off). */
size_t py_record_bytes(void);

#endif

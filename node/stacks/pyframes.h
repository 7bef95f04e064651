/* SPDX-License-Identifier: MIT */
/*
 * Python frames named on the node (docs/stacks.md, "Python frames"): the
 * code objects and instruction pointers the stack tool copied in the target
 * (stackfile.h, struct ra_pyframe) become "function (file.py:line)", read
 * from the target's memory after the window with process_vm_readv: the
 * target is neither stopped nor traced. A code object that is gone (its
 * type is no longer PyCode_Type) or unreadable is "[python ?]".
 */
#ifndef RA_PYFRAMES_H
#define RA_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stackfile.h"

/* Ready f's Python frames for naming from process pid. 0, or -1: none to name (or no memory). */
int ra_py_open(struct ra_stackfile *f, pid_t pid);

struct py_layout;

/*
 * 3.13: the layout of process pid from its _Py_DebugOffsets at runtime (the
 * address of its _PyRuntime). 0, or what py_layout_from_debug says (-1 also:
 * not readable).
 */
int ra_py_debug_layout(pid_t pid, uint64_t runtime, struct py_layout *out);

/* One frame's name "function (file:line)" into buf (never ';' or a newline). */
void ra_py_name(const struct ra_stackfile *f, const struct ra_pyframe *p, char *buf, size_t len);

/*
 * The line of the instruction at index addr (in code units) from a 3.11+
 * location table (CPython's Objects/locations.md), starting at firstline;
 * -1: the instruction has no line, or addr is past the table.
 */
int ra_py_line(const uint8_t *table, size_t n, int firstline, long addr);

#endif

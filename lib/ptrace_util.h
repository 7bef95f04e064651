/* SPDX-License-Identifier: MIT */
/*
 * ptrace_calls.h and target_memory.h together, for the files that have not
 * named them apart yet (remote.c, whose split is under way). New code
 * includes the one it uses.
 */
#ifndef RA_PTRACE_UTIL_H
#define RA_PTRACE_UTIL_H

#include "ptrace_calls.h"
#include "target_memory.h"

#endif

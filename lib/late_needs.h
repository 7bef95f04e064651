/* SPDX-License-Identifier: MIT */
/* The late start's tool against its SDK: what the tool needs, the SDK has (late_needs.c). */
#ifndef RA_LATE_NEEDS_H
#define RA_LATE_NEEDS_H

#include "err.h"

/*
 * Read-only, with libelf: every undefined, non-weak rocprofiler_* symbol of
 * tool is defined in sdk's dynamic symbols, and every version the tool
 * needs from the file named needed (its verneed) is one sdk defines
 * (verdef). 0, or -1 with e set to one line naming what is missing.
 */
int ra_late_tool_needs(const char *tool, const char *needed, const char *sdk, struct ra_err *e);

#endif

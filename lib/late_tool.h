/* SPDX-License-Identifier: MIT */
/* The late start's tool: the SDK it links (late_tool.c). Read-only. */
#ifndef RA_LATE_TOOL_H
#define RA_LATE_TOOL_H

#include <stddef.h>

#include "err.h"

/*
 * The SDK that the tool at path links (a DT_NEEDED librocprofiler-sdk.so*),
 * resolved through its DT_RUNPATH (else DT_RPATH, $ORIGIN expanded), then
 * its own directory; checked to be that soname with the entry points.
 * 0 and sdk; 1: the tool links no SDK; -1 with e set.
 */
int ra_late_tool_sdk(const char *tool, char *sdk, size_t len, struct ra_err *e);

#endif

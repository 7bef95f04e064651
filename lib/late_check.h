/* SPDX-License-Identifier: MIT */
/*
 * --late-start's pre-checks: read-only (/proc/PID/maps, the mapped files'
 * dynamic symbols, the tool's dynamic section). Nothing is touched, not
 * even with ptrace.
 */
#ifndef RA_LATE_CHECK_H
#define RA_LATE_CHECK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/late.h"
#include "err.h"
#include "late_tool.h"

struct ra_late_plan {
	char sdk[PATH_MAX]; /* the SDK the tool links, resolved */
	size_t ncopies;	    /* copies of librocprofiler-register in the process */
	char copy[RA_LATE_COPIES_MAX][PATH_MAX]; /* as the target sees them */
};

/* ra_late_check's answers besides -1 (refused, e set). */
enum ra_late_route {
	RA_LATE_GO = 0,	    /* a late start may run: p filled */
	RA_LATE_NORMAL = 1, /* the process is attachable: the normal attach (e says why) */
};

/*
 * Every check, in order: the process exists and is not stopped; no
 * listener and no librocprofiler-sdk-attach.so (else RA_LATE_NORMAL); no
 * librocprofiler-sdk.so mapped; at least one copy of
 * librocprofiler-register, each exporting the entry point; each tool of the
 * colon-separated list that links librocprofiler-sdk.so finds it through
 * its RUNPATH/RPATH or beside it, one SDK for all, that SDK is the file the
 * tool asks for (its soname) and has the entry points the start uses.
 * -1: refused, e has one line naming the cause and the fix.
 */
int ra_late_check(const char *procfs, pid_t pid, const char *tools, struct ra_late_plan *p,
		  struct ra_err *e);

/* Does pid map a librocprofiler-register.so copy? (For the hint without --late-start.) */
bool ra_late_maps_register(const char *procfs, pid_t pid);

#endif

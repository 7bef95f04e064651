/* SPDX-License-Identifier: MIT */
/*
 * What a late start covers, per rocprofiler-sdk version, from the upstream
 * text in ROCm/rocm-systems:
 *  - projects/rocprofiler-sdk/CHANGELOG.md (commit 0029a62d9e7ccac1224c103807d7b22a64acf421):
 *    1.3.0 (ROCm 7.13) adds late-start profiling: rocprofiler_force_configure
 *    has rocprofiler-register hand its stored API tables over again
 *    (rocprofiler_register_invoke_all_registrations), so each runtime's API
 *    calls are wrapped from the next one (registration/late.cpp); 1.3.2 is
 *    ROCm 7.14, whose release notes (docs) introduce queue interposition,
 *    the default when no tool needs dispatch counters, thread trace or PC
 *    sampling, switched by ROCPROFILER_QUEUE_INTERPOSITION;
 *  - hsa/queue_interposition.cpp (commit 008d68a83ae344ff0ebfabafd4928df28fefad16):
 *    with interposition installed outside attach mode, the write-index
 *    wrappers create a queue's state on first use for queues whose creation
 *    was not seen ("dynamic queue discovery"): the only way a queue created
 *    before the start is reached. Without it, dispatches are seen on queues
 *    created through the wrapped table, so from the start on;
 *  - code objects loaded before the start were never reported to the SDK,
 *    so their kernels have no names; nothing at the register level detaches.
 * Before 1.3.0 the SDK does not claim a late start at all, and an SDK
 * whose version cannot be read is not trusted with more than API tracing.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "late_covers.h"

#define LATE_START_MIN 10300u	 /* 1.3.0: late start */
#define INTERPOSITION_MIN 10302u /* 1.3.2: queue interposition */

static const char api[] = "HIP, HSA, ROCTx and RCCL API tracing, from each thread's next call";
static const char new_queues[] = "kernel dispatches on queues created after the start";
static const char old_queues[] =
    "kernel dispatches on queues created before the start, through inline queue "
    "interposition (experimental; off when a tool needs counters, thread trace or PC "
    "sampling, or with ROCPROFILER_QUEUE_INTERPOSITION=0)";
static const char no_old_queues[] =
    "kernel dispatches on queues created before the start (this SDK has no inline queue "
    "interposition: 1.3.2 or newer)";
static const char no_dispatches[] = "kernel dispatches: not claimed for this SDK";
static const char in_flight[] = "calls already in flight when a table was swapped";
static const char no_names[] = "names of code objects loaded before the start";
static const char no_detach[] = "a detach: the tool stays until the process exits";

int rn_late_sdk_version(const char *sdk, unsigned int v[3])
{
	char real[PATH_MAX], tail;
	const char *base, *dot;
	unsigned int a, b, c;

	if (!sdk || !sdk[0] || !realpath(sdk, real))
		return -1;
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	dot = strstr(base, ".so.");
	if (!dot || sscanf(dot + 4, "%u.%u.%u%c", &a, &b, &c, &tail) != 3)
		return -1;
	v[0] = a;
	v[1] = b;
	v[2] = c;
	return 0;
}

static void add(const char **list, size_t *n, size_t max, const char *s)
{
	if (*n < max)
		list[(*n)++] = s;
}

#define COVER(c, s) add((c)->covers, &(c)->ncovers, RN_LATE_COVERS_MAX, s)
#define NOT(c, s) add((c)->not_covered, &(c)->nnot_covered, RN_LATE_NOT_COVERED_MAX, s)

void rn_late_covers_for(const unsigned int *v, const char *why, struct rn_late_covers *c)
{
	unsigned int n = v ? 10000u * v[0] + 100u * v[1] + v[2] : 0;

	memset(c, 0, sizeof(*c));
	COVER(c, api);
	if (!v || n < LATE_START_MIN) {
		NOT(c, no_dispatches);
		if (v)
			snprintf(c->basis, sizeof(c->basis),
				 "SDK %u.%u.%u predates upstream's late start (1.3.0): "
				 "API tracing only is claimed",
				 v[0], v[1], v[2]);
		else
			snprintf(c->basis, sizeof(c->basis),
				 "the SDK's version cannot be read (%s): API tracing only "
				 "is claimed",
				 why ? why : "unknown");
	} else {
		COVER(c, new_queues);
		c->queue_interposition = n >= INTERPOSITION_MIN;
		if (c->queue_interposition)
			COVER(c, old_queues);
		else
			NOT(c, no_old_queues);
		snprintf(c->basis, sizeof(c->basis), "rocprofiler-sdk %u.%u.%u", v[0], v[1], v[2]);
	}
	NOT(c, in_flight);
	NOT(c, no_names);
	NOT(c, no_detach);
}

void rn_late_covers_of(const char *sdk, struct rn_late_covers *c)
{
	unsigned int v[3];

	if (!sdk || !sdk[0])
		rn_late_covers_for(NULL, "no SDK was found", c);
	else if (rn_late_sdk_version(sdk, v))
		rn_late_covers_for(NULL, "its file name has no M.m.p", c);
	else
		rn_late_covers_for(v, NULL, c);
}

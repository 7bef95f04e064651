/* SPDX-License-Identifier: MIT */
/*
 * What a late start covers for a given rocprofiler-sdk version, as the
 * upstream text says it (node/late_covers.c names files and commits).
 */
#ifndef RN_LATE_COVERS_H
#define RN_LATE_COVERS_H

#include <stdbool.h>
#include <stddef.h>

#define RN_LATE_COVERS_MAX 4
#define RN_LATE_NOT_COVERED_MAX 6

struct rn_late_covers {
	const char *covers[RN_LATE_COVERS_MAX];
	size_t ncovers;
	const char *not_covered[RN_LATE_NOT_COVERED_MAX];
	size_t nnot_covered;
	bool queue_interposition; /* existing queues reached (experimental) */
	char basis[160];	  /* where the lists come from: the version, or why not */
};

/*
 * The version in the SDK file's real name (librocprofiler-sdk.so.M.m.p, as
 * the SDK's build names it, .so.1 and .so links to it): 0, or -1 when it
 * cannot be read (v untouched).
 */
int rn_late_sdk_version(const char *sdk, unsigned int v[3]);

/* The lists for version v, or, v NULL, the conservative ones; why says why. */
void rn_late_covers_for(const unsigned int *v, const char *why, struct rn_late_covers *c);

/* Both: the lists for the SDK file at path sdk. */
void rn_late_covers_of(const char *sdk, struct rn_late_covers *c);

#endif

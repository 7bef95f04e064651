/* SPDX-License-Identifier: MIT */
/*
 * One plan on every rank: rank 0 parses the command line and resolves
 * everything that could differ between nodes (user names, environment
 * defaults), then sends the result; the other ranks take it as it is and
 * never parse or resolve anything themselves.
 *
 * The plan is JSON: every field of struct rm_opts that a rank acts on, and
 * rank 0's ROCP* and ROCATTACH_* variables. A receiving rank makes its own
 * variables of those names exactly rank 0's (the tools' settings cross into
 * the targets from there, and the library reads its defaults there).
 */
#ifndef RM_PLAN_H
#define RM_PLAN_H

#include <stddef.h>

#include "mpi_opts.h"

/* What a decoded plan's strings live in; free with rm_plan_free. */
struct rm_plan {
	void *json;
};

/* The plan of o and this process's environment, as a NUL-terminated string (free()). */
char *rm_plan_encode(const struct rm_opts *o);

/*
 * Fill o from a plan (defaults for what it does not give); its strings live
 * in p. 0, or -1 with a one-line reason in err.
 */
int rm_plan_decode(const char *text, struct rm_opts *o, struct rm_plan *p, char *err, size_t len);

/* Make this process's ROCP* and ROCATTACH_* variables exactly the plan's. 0 or -1. */
int rm_plan_apply_env(const struct rm_plan *p);

void rm_plan_free(struct rm_plan *p);

#endif

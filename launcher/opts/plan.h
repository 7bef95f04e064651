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

#include <stdbool.h>
#include <stddef.h>

#include "mpi_opts.h"

/* What a decoded plan's strings live in; free with rm_plan_free. */
struct rm_plan {
	void *json;
};

/*
 * The most a plan's variables may take (names, values and JSON's quotes):
 * rank 0 refuses more, and every receiver checks it.
 */
#define RM_PLAN_ENV_MAX 65536
/* The most a whole plan may take on the wire (its variables escaped, and every option). */
#define RM_PLAN_MAX (1 << 20)

/* A name a plan carries: ROCP* (the tools' settings) and ROCATTACH_* (the library's). */
bool rm_plan_var(const char *name);
/* What this process's planned variables take, to hold against RM_PLAN_ENV_MAX. */
size_t rm_plan_env_bytes(void);
/* This process's planned variables alone, as a JSON object (free()); NULL if too many. */
char *rm_plan_env_encode(void);
/*
 * The variables of one rank, as rm_plan_env_encode made them, received in
 * len bytes: checked (NUL within len, at most RM_PLAN_ENV_MAX, an object of
 * planned names and string values) into p, for rm_plan_apply_env and
 * rm_plan_env_diff. 0, or -1 with the reason in err (p holds nothing).
 */
int rm_plan_env_decode(const char *text, size_t len, struct rm_plan *p, char *err, size_t elen);

/*
 * Rank 0, before the options add their variables: keep what the user set,
 * for the plan's "user_env" (what each node's own are held against).
 */
void rm_plan_keep_user_env(void);

/* A variable that differs: here is this process's value, used the plan's (NULL: unset). */
typedef void (*rm_plan_diff_fn)(const char *name, const char *here, const char *used, void *arg);
/*
 * Each planned variable whose value here differs from what the user set on
 * rank 0 (the plan's "user_env", else its "env"), to fn with the value the
 * run uses: how many.
 */
size_t rm_plan_env_diff(const struct rm_plan *p, rm_plan_diff_fn fn, void *arg);

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

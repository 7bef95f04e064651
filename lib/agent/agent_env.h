/* SPDX-License-Identifier: MIT */
/* The environment buffer: read once, applied to environ, undone (agent_env.c). */
#ifndef RA_AGENT_ENV_H
#define RA_AGENT_ENV_H

#include <stddef.h>

/* A checked environment buffer: our private variables, and the pairs the tools see. */
struct env_scan {
	const char *owner, *start, *end; /* values of ROCP_ATTACH_OWNER, _START_NS, _END_NS */
	const char **pair;		 /* [2k] name, [2k+1] value, pointing into the buffer */
	size_t n, cap;
};
/* What an attach changed in environ, to undo it if the attach fails. */
struct env_undo {
	struct env_prev *v;
	size_t n, cap;
};
/* Check the buffer (len readable bytes) and read it: 0, -EINVAL if malformed, -ENOMEM. */
int env_scan(const char *env, size_t len, struct env_scan *sc);
void env_scan_free(struct env_scan *sc);
/* Under agent_lock: set every pair that has not its value yet (the code, fail() set). */
int env_apply(const struct env_scan *sc, struct env_undo *u);
void env_rollback(struct env_undo *u);
void env_undo_free(struct env_undo *u);

#endif

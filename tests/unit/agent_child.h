/* SPDX-License-Identifier: MIT */
/* A fresh agent in a forked child, and its tool's log, for the agent tests */
#ifndef RA_AGENT_CHILD_H
#define RA_AGENT_CHILD_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

#define CHECK_OK(expr) CHECK((expr) == 0)

struct agent {
	int (*attach)(const char *env, const char *path);
	int (*detach)(void);
	const char *(*last_error)(void);
	unsigned int (*version)(void);
};

extern struct agent ag;
extern void *agent_handle;
extern char outdir[64];
extern pid_t child_pid;
int agent_load(bool attach_env);
/* Run fn in a fresh child; its exit status, or 128 + the signal that killed it. */
int run_child(int (*fn)(void));
/* An encoded buffer of the NULL-terminated entries, plus ROCPROF_OUTPUT_PATH. */
char *make_env_len(const char *const *entries, size_t *len);
void log_path(char *path, size_t len, pid_t pid);
size_t log_read(pid_t pid, char *buf, size_t len);
extern char log_buf[65536];
/* The event names of pid's log, space-separated. */
const char *events(pid_t pid);
int setup_outdir(void **state);
int teardown_outdir(void **state);

#endif

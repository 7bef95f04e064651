/* SPDX-License-Identifier: MIT */
/*
 * Drive the example target as a victim over pipes: start it (with or
 * without the agent and ROCP_TOOL_ATTACH), send line commands, read replies,
 * and inspect what the example tool recorded inside it.
 */
#ifndef RA_TEST_VICTIM_H
#define RA_TEST_VICTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct victim {
	pid_t pid;
	int to, from; /* its stdin (write end), its stdout (read end) */
	char buf[16384];
	size_t len;
};

struct victim_opts {
	bool agent;	     /* LD_PRELOAD the agent */
	bool attach_env;     /* ROCP_TOOL_ATTACH=1 */
	const char *argv[8]; /* extra arguments, NULL-terminated */
	const char *env[8];  /* extra NAME=VALUE, NULL-terminated */
	const char *program; /* default RA_TARGET_PATH */
};

/* Start and wait for its "ready" line. 0 or -1. */
int victim_start(struct victim *v, const struct victim_opts *o);
/* Send one command line and read one reply line. 0 or -1 (timeout, EOF). */
int victim_cmd(struct victim *v, const char *cmd, char *reply, size_t len);
int victim_readline(struct victim *v, char *line, size_t len, int timeout_ms);
/* A numeric field "key=N" of the "status" reply, or -1. */
long long victim_status(struct victim *v, const char *key);
/* SIGTERM, wait; returns the wait status. Safe on a victim that never started. */
int victim_stop(struct victim *v);

/*
 * The victim still works: alive, untraced, answering, its workers advancing,
 * no EINTR seen by its reader (and, with listener, its rocp-bg-attach thread
 * intact). 0, or -1 with the first thing wrong in why.
 */
int victim_unharmed(struct victim *v, bool listener, char *why, size_t len);

/* Process exists and is not a zombie. */
bool proc_alive(pid_t pid);
/* Highest TracerPid over all threads of pid (0: nobody traces it). */
pid_t proc_tracer(pid_t pid);
/* TID of the thread named comm, or 0. */
pid_t proc_thread(pid_t pid, const char *comm);

/* A fresh directory for tool output (under /tmp). */
void make_outdir(char *dir, size_t len);
/* The example tool's log of pid in dir ("" if none). Returns length. */
size_t tool_log(const char *dir, pid_t pid, char *buf, size_t len);
/* How many lines of log start with event + ' '. */
int tool_count(const char *log, const char *event);
/* Events of the log in order, space-separated ("configure configure_attach ..."). */
void tool_events(const char *log, char *out, size_t len);

/* Poll cond(arg) every 10 ms up to timeout_ms. */
bool wait_until(bool (*cond)(void *), void *arg, int timeout_ms);

#endif

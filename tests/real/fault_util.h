/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the fault tests (docs/reliability.md): run the `rocattach` CLI
 * as a user would (optionally as another user), wait for the example tool's
 * events, and read the counts that must stay stable in a target (threads,
 * descriptors, mappings, RSS).
 */
#ifndef RA_TEST_FAULT_UTIL_H
#define RA_TEST_FAULT_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/types.h>

#define NOBODY_UID 65534
#define NOBODY_GID 65534

/* Start the CLI with args (NULL-terminated), stdin /dev/null, stderr to *errfd. uid 0: as we are.
 */
pid_t cli_spawn(const char *const *args, uid_t uid, int *errfd);
/* Wait for it; its exit code (128 + signal if killed); its stderr in err. */
int cli_finish(pid_t pid, int errfd, char *err, size_t len);
/* Both. */
int cli_run(const char *const *args, uid_t uid, char *err, size_t len);
/* Lines in s. */
int count_lines(const char *s);

/* Wait until the tool log of pid in dir has at least n lines of event. */
bool wait_tool_events(const char *dir, pid_t pid, const char *event, int n, int timeout_ms);
/* CLOCK_REALTIME ns of the nth (1-based) event of the log, or 0. */
unsigned long long tool_event_ns(const char *log, const char *event, int nth);
unsigned long long realtime_ns(void);

/* Entries of /proc/PID/fd, lines of /proc/PID/maps, threads, VmRSS in kB; -1 on error. */
int proc_fd_count(pid_t pid);
int proc_maps_count(pid_t pid);
int proc_thread_count(pid_t pid);
long proc_rss_kb(pid_t pid);
/*
 * For each thread of pid: opens /proc/PID/task/TID/NAME (NULL if it cannot)
 * and calls fn with it (closed after); the sum of what fn returns.
 */
int proc_each_task(pid_t pid, const char *name,
		   int (*fn)(FILE *f, pid_t pid, const char *tid, void *arg), void *arg);
/* State letter of /proc/PID/stat (R, S, T, Z, ...), or 0. */
char proc_state(pid_t pid);

/* A zombie: a forked child that exited and is not reaped. Reap with waitpid. */
pid_t make_zombie(void);

#endif

/* SPDX-License-Identifier: MIT */
/* What /proc/self says, for the stack tool: masks, timers, threads, the free signal. */
#ifndef ROCATTACH_STACKS_PROC_H
#define ROCATTACH_STACKS_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A line of /proc/self/task/TID/status, e.g. "SigBlk:", as a mask; 0 if unreadable. */
unsigned long long status_mask(pid_t tid, const char *key);

static inline bool sig_in_mask(unsigned long long mask, int sig)
{
	return (mask >> (sig - 1)) & 1;
}

/* Whether thread tid has run at all (its schedstat); true when that cannot be read. */
bool has_run(pid_t tid);

/* How many of the process's POSIX timers name signal sig (/proc/self/timers); -1 unreadable. */
int timers_with_signal(int sig);

/* Call fn for every thread of the process but this one; stops early when fn returns nonzero. */
void each_task(int (*fn)(pid_t tid, void *arg), void *arg);

/*
 * The highest real-time signal with the default action, blocked by no
 * thread that takes real-time signals, and named by no timer. 0 if none.
 */
int pick_signal(void);

/* The name of thread tid (its comm), "?" if unreadable. */
void read_name(pid_t tid, char *name, size_t len);

#endif

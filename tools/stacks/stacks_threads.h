/* SPDX-License-Identifier: MIT */
/*
 * The stack tool's thread table, its scans and its sampling timers. Every
 * change to the table and to the timers is made under one lock: the scan at
 * attach, the poller's scans and the stop never run at once. The handler
 * only reads the table (thread_of), without a lock.
 */
#ifndef ROCATTACH_STACKS_THREADS_H
#define ROCATTACH_STACKS_THREADS_H

#include <stdbool.h>
#include <sys/types.h>

#include "stacks_state.h"

/* The newest entry of tid, or NULL: async-signal-safe, no lock. */
struct thread *thread_of(pid_t tid);

/* An empty table, nothing taken: at each attach, before any scan. */
void threads_reset(void);

/* Add tid to the table (the thread that runs tool_attach); NULL if it is full. */
struct thread *threads_add(pid_t tid);

/*
 * One look at /proc/self/task: new threads join the table and ended ones are
 * marked (their timers deleted). With arm, and while st.sampling is set, each
 * new thread that does not block the signal gets a timer, unless the program
 * has taken the signal: then every timer of ours is deleted, sampling stops,
 * and st.taken and st.taken_note say why. True when the poller should look
 * again soon: a thread was new, ended or armed, or is to be looked at again.
 */
bool threads_scan(bool arm);

/* The helper thread that scans every 10 ms with every signal blocked; -1 (note set) if not. */
int threads_start_poller(void);

/* Stop the poller, delete every timer of ours, note each thread's CPU time while sampled. */
void threads_stop(void);

/* In a fork child: no poller, no timers, a fresh lock. */
void threads_atfork_child(void);

#endif

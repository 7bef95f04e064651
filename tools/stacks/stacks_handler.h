/* SPDX-License-Identifier: MIT */
/*
 * The stack tool's signal handler and what it fills: records in a pool
 * allocated and touched at attach, unwound with libunwind (local only). The
 * snapshot asks every known thread for one; sampling's timers bring the rest.
 */
#ifndef ROCATTACH_STACKS_HANDLER_H
#define ROCATTACH_STACKS_HANDLER_H

#include <signal.h>

/* The handler: async-signal-safe, no malloc, no locks, only atomics; errno kept. */
void stacks_handler(int sig, siginfo_t *si, void *uc);

/* The pool, from ROCPROF_STACKS_BUFFER_MB and ROCPROF_STACKS_MAX_FRAMES; -1 if it cannot be. */
int pool_alloc(void);

/* Free the pool, unless a handler still runs in it (then it is left, never freed under it). */
void pool_free(void);

/* The calling thread (the loader's) unwound in place: also libunwind's first use. */
void snapshot_self(void);

/* Ask every known thread, then wait for the answers until the deadline. */
void snapshot(long timeout_ms);

#endif

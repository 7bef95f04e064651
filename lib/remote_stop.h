/* SPDX-License-Identifier: MIT */
/*
 * remote.c's other room: stopping a seized thread and letting it go
 * (release, abandon, and a thread that will not stop, kept by our tracer
 * thread: tracer.h). Calls go one way: remote.c -> remote_stop.c -> tracer.c.
 */
#ifndef RA_REMOTE_STOP_H
#define RA_REMOTE_STOP_H

#include "remote.h"

/* The thread exited under us (said once in r->e): -ESRCH. */
int ra_remote_gone(struct ra_remote *r, const char *when);
/* The thread's end as waitpid reported it (not a stop): -ESRCH. */
int ra_remote_ended(struct ra_remote *r, int status, const char *when);
/* A request on a thread reported stopped failed: ESRCH there means it was killed. */
int ra_remote_lost(struct ra_remote *r, long ret);
/* What our agent says it is running now, kept in r->current. */
void ra_remote_read_current(struct ra_remote *r);
/*
 * The same, while a call runs, at most every millisecond (*next: when to
 * look again, 0 at first). Both ways of waiting for the park use it.
 */
void ra_remote_watch_current(struct ra_remote *r, uint64_t *next);
/*
 * waitpid on the thread without blocking, paced (ra_pace) until deadline
 * (CLOCK_MONOTONIC; 0: none). 1 with *status, 0 when the deadline came
 * first, -errno when there is nothing to wait for.
 */
int ra_remote_wait(struct ra_remote *r, int *status, uint64_t deadline, long max_nap);

/* PTRACE_INTERRUPT, its time kept (r->interrupt_mono). 0, or -errno with r->e set. */
int ra_remote_interrupt(struct ra_remote *r) RA_MUST_CHECK;
/*
 * Wait RA_INTERRUPT_WAIT_NS for the stop the interrupt asked for, passing
 * on signals reported first. On timeout the thread is r->unstopped and the
 * error names its state: -ETIMEDOUT.
 */
int ra_remote_interrupt_stop(struct ra_remote *r) RA_MUST_CHECK;
/* The call outlived its deadline: leave the thread in it, untraced (see remote_stop.c). */
int ra_remote_abandon(struct ra_remote *r);
/* ra_remote_end. */
int ra_remote_release(struct ra_remote *r);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The library's tracer threads. Every operation that seizes a thread of a
 * target runs on a thread of this library, never on the caller's: ptrace
 * ties a tracee to the one thread that attached it, and a tracee that
 * cannot be stopped cannot be detached (PTRACE_DETACH needs a stopped
 * tracee). Such a thread (one held in an uninterruptible sleep past the
 * operation's deadline) is kept by the tracer thread that seized it, after
 * the operation has returned to its caller, until it stops: then it is
 * released. The caller's thread is never left as a tracer.
 */
#ifndef RA_TRACER_H
#define RA_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * fn(arg) on a new tracer thread; the caller waits for its return, *ret.
 * 0, or -errno with e set when no thread could be started (fn not run).
 */
int ra_tracer_run(int (*fn)(void *), void *arg, int *ret, struct ra_err *e) RA_MUST_CHECK;

/*
 * On a tracer thread: keep tid of pid, traced by this thread and not
 * stopped, after the operation returns; it is released at its first stop
 * (a signal it stopped for goes with it). since: CLOCK_MONOTONIC of the
 * interrupt it has not answered. false when the calling thread is not a
 * tracer thread (it stays the tracer then).
 */
bool ra_tracer_keep(pid_t pid, pid_t tid, uint64_t since);

/* Is tid of pid kept (traced, not yet stopped) by one of our tracer threads? */
bool ra_tracer_keeps(pid_t pid, pid_t tid);

/* How many threads our tracer threads keep now (tests). */
int ra_tracer_kept_count(void);

#endif

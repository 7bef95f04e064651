/* SPDX-License-Identifier: MIT */
#ifndef RA_PACE_H
#define RA_PACE_H

#include <stdint.h>
#include <time.h>

/*
 * The pace of a wait that looks with waitpid(WNOHANG): for the first
 * RA_PACE_YIELD_NS it yields the CPU between looks (the thread we wait for
 * may share our CPU), then it naps, from 20 us doubling to max_nap. While
 * it naps the calling thread's timer slack is 1 ns, so that a 20 us nap
 * ends after about 20 us, not 70; ra_pace_end puts the slack back.
 */
#define RA_PACE_YIELD_NS 100000

struct ra_pace {
	uint64_t yield_until; /* CLOCK_MONOTONIC */
	struct timespec nap;
	long max_nap;
	long slack; /* the thread's timer slack before its first nap; -1: not changed */
};

void ra_pace_begin(struct ra_pace *p, long max_nap);
/* Wait before the next look: a yield at first, then a nap. */
void ra_pace_wait(struct ra_pace *p);
void ra_pace_end(struct ra_pace *p);

#endif

/* SPDX-License-Identifier: MIT */
#include <sched.h>
#include <sys/prctl.h>

#include "common/clock.h"
#include "pace.h"

void ra_pace_begin(struct ra_pace *p, long max_nap)
{
	p->yield_until = ra_monotonic_ns() + RA_PACE_YIELD_NS;
	p->nap = (struct timespec){0, 20000};
	p->max_nap = max_nap;
	p->slack = -1;
}

/*
 * The slack is the library user's thread's own setting: it is changed only
 * once a wait reaches its naps (most calls end during the yields), and put
 * back by ra_pace_end. A thread with a real-time policy has none; the
 * kernel ignores the request there.
 */
void ra_pace_wait(struct ra_pace *p)
{
	int slack;

	if (ra_monotonic_ns() < p->yield_until) {
		sched_yield();
		return;
	}
	if (p->slack < 0) {
		slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
		if (slack > 1 && !prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0))
			p->slack = slack;
		else
			p->slack = 0;
	}
	nanosleep(&p->nap, NULL);
	if (p->nap.tv_nsec < p->max_nap)
		p->nap.tv_nsec = p->nap.tv_nsec * 2 < p->max_nap ? p->nap.tv_nsec * 2 : p->max_nap;
}

void ra_pace_end(struct ra_pace *p)
{
	if (p->slack > 1)
		prctl(PR_SET_TIMERSLACK, p->slack, 0, 0, 0);
	p->slack = -1;
}

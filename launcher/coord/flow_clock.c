/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "flow.h"

/*
 * Clocks: each parent with its children, as rank 0 did with every rank:
 * CLOCK_ROUNDS ping-pongs (the parent sends its time t0, the child answers
 * its own t1, the parent reads t2), more (up to CLOCK_ROUNDS_MAX) while no
 * round trip was shorter than CLOCK_RTT_GOOD_NS; the estimate with the
 * shortest round trip is kept: offset = t1 - (t0 + t2) / 2, within rtt / 2.
 * The children are measured together, a round at a time (rm_flow_measure).
 * A parent answers its own parent's pings meanwhile. A child that leaves a
 * ping unanswered for CLOCK_ANSWER_NS (rm_budget) is late: the parent goes
 * on with the others, then waits for the late ones until CLOCK_LOST_NS
 * after each ping. One that does not answer is lost.
 */
static int take_answer(struct rm_flow *f, struct rm_kid *k, uint64_t t0, uint64_t sent,
		       struct rm_clock *best)
{
	uint64_t t1, rtt;

	if (FLOW_MPI(f, k->rank, "from", MPI_Recv, &t1, 1, MPI_UINT64_T, k->rank, TAG_CLOCK,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE))
		return -1;
	rm_count_in(f->link, sizeof(t1));
	/* On CLOCK_MONOTONIC: a step of this rank's wall clock does not make it absurd. */
	rtt = ra_monotonic_ns() - sent;
	rm_clock_answer(best, t0, t1, rtt);
	return 0;
}

static void wait_late_clocks(struct rm_flow *f, size_t late)
{
	uint64_t lost_after = rm_budget(f->link, CLOCK_LOST_NS);

	while (late) {
		uint64_t now = ra_monotonic_ns();

		for (int i = 0; i < f->n_kids; i++) {
			struct rm_kid *k = f->kids[i];
			int flag = 0;

			if (!k->ping_t0)
				continue;
			if (k->lost ||
			    FLOW_MPI(f, k->rank, "from", MPI_Iprobe, k->rank, TAG_CLOCK,
				     MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) ||
			    (flag && take_answer(f, k, k->ping_t0, k->ping_sent, &k->clock))) {
				/* Lost (RM_MPI said why). */
			} else if (flag) {
				k->measured_mono = now;
			} else if (now - k->ping_sent > lost_after) {
				rm_kid_lost(f, k, "no answer to a clock ping within %.1f s",
					    (double)lost_after / 1e9);
			} else {
				continue;
			}
			k->ping_t0 = 0;
			late--;
		}
		rm_flow_service(f);
		if (late)
			usleep(200);
	}
}

/* One child's exchange in rm_flow_measure. */
struct measuring {
	struct rm_clock best;
	uint64_t t0, sent; /* the ping in flight: CLOCK_REALTIME sent, and CLOCK_MONOTONIC */
	uint64_t budget;   /* no new round after this (CLOCK_MONOTONIC) */
	int rounds;
	bool active, pinged;
};

/* Another round for child m? A slow one gets fewer (a wider bound). */
static bool more_rounds(const struct measuring *m, uint64_t now)
{
	return rm_clock_more_rounds(m->rounds, m->best.rtt_ns, m->budget, now);
}

static bool any_active(const struct measuring *ms, int n)
{
	for (int i = 0; i < n; i++)
		if (ms[i].active)
			return true;
	return false;
}

static void measured(struct rm_kid *k, const struct measuring *m)
{
	k->clock = m->best;
	k->clock_stale = false;
	k->measured_mono = ra_monotonic_ns();
}

/*
 * The children are measured together: each round pings every child still
 * measuring, then takes their answers, so the exchange takes the rounds of
 * the slowest child, not the sum over the children (at 32 children on a
 * busy machine, 2 s against 60 ms here).
 */
void rm_flow_measure(struct rm_flow *f, bool all)
{
	/* Adopted meanwhile (a child lost): measured before the next order, not here. */
	int n = f->n_kids;
	struct measuring *ms = calloc((size_t)n + 1, sizeof(*ms));
	uint64_t answer = rm_budget(f->link, CLOCK_ANSWER_NS), now = ra_monotonic_ns();
	size_t late = 0;
	int pending;

	if (!ms)
		rm_out_of_memory();
	for (int i = 0; i < n; i++) {
		const struct rm_kid *k = f->kids[i];

		ms[i].active = !k->lost && (all || k->clock_stale);
		ms[i].best = (struct rm_clock){0, UINT64_MAX, 0, true, 0};
		ms[i].budget = now + answer;
	}
	do {
		pending = 0;
		for (int i = 0; i < n; i++) {
			struct measuring *m = &ms[i];
			struct rm_kid *k = f->kids[i];

			if (!m->active)
				continue;
			if (k->lost || !more_rounds(m, ra_monotonic_ns())) {
				measured(k, m);
				m->active = false;
				continue;
			}
			m->t0 = ra_realtime_ns();
			m->sent = ra_monotonic_ns();
			rm_post(f->link, k->rank, TAG_CLOCK, &m->t0, sizeof(m->t0));
			m->pinged = true;
			pending++;
		}
		while (pending) {
			for (int i = 0; i < n; i++) {
				struct measuring *m = &ms[i];
				struct rm_kid *k = f->kids[i];
				int flag = 0;

				if (!m->active || !m->pinged)
					continue;
				if (!k->lost &&
				    FLOW_MPI(f, k->rank, "from", MPI_Iprobe, k->rank, TAG_CLOCK,
					     MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE))
					flag = 0;
				if (k->lost ||
				    (flag && take_answer(f, k, m->t0, m->sent, &m->best))) {
					/* Lost (RM_MPI said why): what it gave so far. */
					measured(k, m);
					m->active = false;
				} else if (flag) {
					m->rounds++;
				} else if (ra_monotonic_ns() - m->sent > answer) {
					/* Late: its answer is waited for below. */
					measured(k, m);
					k->ping_t0 = m->t0;
					k->ping_sent = m->sent;
					m->active = false;
					late++;
					if (f->verbose)
						rm_say(f->self,
						       "rank %d late: no answer to a clock ping "
						       "within "
						       "%.1f s; waiting up to %.1f s",
						       k->rank, (double)answer / 1e9,
						       (double)rm_budget(f->link, CLOCK_LOST_NS) /
							   1e9);
				} else {
					continue;
				}
				m->pinged = false;
				pending--;
			}
			if (pending)
				rm_flow_service(f);
		}
	} while (any_active(ms, n));
	free(ms);
	wait_late_clocks(f, late);
	for (int i = 0; i < f->n_kids; i++) {
		const struct rm_kid *k = f->kids[i];

		/* Late answers' round trips are this rank's own wait: not the link's. */
		if (!k->lost && k->clock.known && k->clock.rtt_ns != UINT64_MAX &&
		    k->clock.rtt_ns > f->rtt_sub_ns)
			f->rtt_sub_ns = k->clock.rtt_ns;
	}
	if (f->self->rank == 0 && f->rtt_sub_ns > f->link->rtt_worst_ns)
		f->link->rtt_worst_ns = f->rtt_sub_ns;
}

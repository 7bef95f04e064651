/* SPDX-License-Identifier: MIT */
/*
 * Clocks, as numbers: a parent's estimate of its child's clock (measured by
 * ping-pongs, flow_clock.c), composed down the tree into each rank's offset
 * to rank 0 with its error bound, and the drift check that says when an
 * estimate no longer holds. No MPI here.
 */
#ifndef RM_CLOCK_H
#define RM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define CLOCK_ROUNDS 8	    /* ping-pongs per rank; the shortest round trip's is kept */
#define CLOCK_ROUNDS_MAX 64 /* ... or more, while none was shorter than: */
#define CLOCK_RTT_GOOD_NS 100000ull
/*
 * The drift check: a child's clock may have moved this much (parts per
 * million of the time since it was measured) before a check that disagrees
 * with it calls for a new exchange.
 */
#define CLOCK_DRIFT_PPM 100

/*
 * A rank's CLOCK_REALTIME minus rank 0's (estimated), the round trip it was
 * measured over, and whether it is applied: only when it shows the clocks
 * differ (|offset| > rtt / 2, 0 lying outside what the exchange allows);
 * else the clocks may well agree, and a correction would only add the
 * estimate's own error.
 */
struct rm_clock {
	int64_t offset_ns;
	uint64_t rtt_ns;
	int64_t applied_ns; /* offset_ns, or 0 */
	bool known;
	/*
	 * Composed down the tree: the offset to rank 0 is the parent's plus the
	 * child's, and the truth lies within bound_ns of it (the sum of rtt / 2
	 * along the path). rtt_ns is the last link's. Applied when |offset| > bound.
	 */
	uint64_t bound_ns;
};

/* A child's clock as rank 0's: this rank's composed clock plus the child's offset to it. */
struct rm_clock rm_clock_compose(const struct rm_clock *mine, const struct rm_clock *rel);

/*
 * One answer of an exchange: the parent sent t0 (its CLOCK_REALTIME), the
 * child answered t1 (its own), rtt after the send. Kept in *best if its
 * round trip is the shortest yet: offset = t1 - (t0 + t2) / 2.
 */
void rm_clock_answer(struct rm_clock *best, uint64_t t0, uint64_t t1, uint64_t rtt);

/*
 * Another round for a child that has had `rounds` and whose best round trip
 * is best_rtt? Not after budget_mono (a slow one gets fewer: a wider bound).
 */
bool rm_clock_more_rounds(int rounds, uint64_t best_rtt, uint64_t budget_mono, uint64_t now_mono);

/*
 * The drift check on a message pair: t0 the parent's send, t1 its receipt
 * there, t2 the answer's send there, t3 its receipt here. *off and *bound
 * the offset it shows. RM_DRIFT_NONE: it agrees with k (within rtt / 2,
 * widened by CLOCK_DRIFT_PPM since measured_mono), or cannot be checked.
 */
enum rm_drift { RM_DRIFT_NONE, RM_DRIFT_STEPPED, RM_DRIFT_MOVED };
enum rm_drift rm_clock_drift(const struct rm_clock *k, uint64_t since_measured_ns, uint64_t t0,
			     uint64_t t1, uint64_t t2, uint64_t t3, int64_t *off, int64_t *bound);

#endif

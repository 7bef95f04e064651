/* SPDX-License-Identifier: MIT */
/* Clocks as numbers (clock.h): compose, answer, rounds, drift. */
#include <stdlib.h>

#include "clock.h"

struct rm_clock rm_clock_compose(const struct rm_clock *mine, const struct rm_clock *rel)
{
	struct rm_clock t = {.offset_ns = mine->offset_ns + rel->offset_ns,
			     .rtt_ns = rel->rtt_ns,
			     .known = mine->known && rel->known,
			     .bound_ns = mine->bound_ns + rel->rtt_ns / 2};

	/* Applied only when it shows the clocks differ: else it would add only its error. */
	t.applied_ns = (uint64_t)llabs(t.offset_ns) > t.bound_ns ? t.offset_ns : 0;
	return t;
}

void rm_clock_answer(struct rm_clock *best, uint64_t t0, uint64_t t1, uint64_t rtt)
{
	if (rtt < best->rtt_ns) {
		best->rtt_ns = rtt;
		best->offset_ns = (int64_t)(t1 - t0) - (int64_t)(rtt / 2);
	}
}

bool rm_clock_more_rounds(int rounds, uint64_t best_rtt, uint64_t budget_mono, uint64_t now_mono)
{
	if (rounds && now_mono > budget_mono)
		return false;
	return rounds < CLOCK_ROUNDS || (rounds < CLOCK_ROUNDS_MAX && best_rtt > CLOCK_RTT_GOOD_NS);
}

/*
 * offset = ((t1 - t0) + (t2 - t3)) / 2 within ((t3 - t0) - (t2 - t1)) / 2.
 * An interval that misses the stored estimate's (rtt / 2, widened by the
 * drift allowed since it was measured) says the child's clock moved.
 */
enum rm_drift rm_clock_drift(const struct rm_clock *k, uint64_t since_measured_ns, uint64_t t0,
			     uint64_t t1, uint64_t t2, uint64_t t3, int64_t *off, int64_t *bound)
{
	int64_t lo, hi, drift;

	if (!t0 || !t1 || !t2 || !k->known || k->rtt_ns == UINT64_MAX)
		return RM_DRIFT_NONE;
	*off = ((int64_t)(t1 - t0) + (int64_t)(t2 - t3)) / 2;
	*bound = ((int64_t)(t3 - t0) - (int64_t)(t2 - t1)) / 2;
	/* The child's clock ran faster than the round trip allows: it was stepped. */
	if (*bound < 0)
		return RM_DRIFT_STEPPED;
	drift = (int64_t)(since_measured_ns / 1000000 * CLOCK_DRIFT_PPM);
	lo = k->offset_ns - (int64_t)(k->rtt_ns / 2) - drift;
	hi = k->offset_ns + (int64_t)(k->rtt_ns / 2) + drift;
	if (*off + *bound >= lo && *off - *bound <= hi)
		return RM_DRIFT_NONE;
	return RM_DRIFT_MOVED;
}

/* SPDX-License-Identifier: MIT */
/*
 * The pause target's record, shared with the benchmark through a file in
 * /dev/shm: one ring of events per thread. A busy thread records every gap
 * longer than thresh_ns between two consecutive reads of CLOCK_MONOTONIC
 * (start = the read before the gap, len = the gap); the sleeper (the main
 * thread, blocked in read(2)) records every tick it receives (start = the
 * CLOCK_MONOTONIC time the benchmark wrote it, len = how late it was read).
 * Rings do not wrap: events past PT_CAP are counted in dropped.
 */
#ifndef BENCH_PAUSE_SHM_H
#define BENCH_PAUSE_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#define PT_MAGIC 0x7061757365746731ull /* "pausetg1" */
#define PT_MAX_BUSY 8
#define PT_CAP (1u << 17)
#define PT_SLEEPER PT_MAX_BUSY /* ring index of the sleeper */

struct pt_event {
	uint64_t start_ns, len_ns;
};

struct pt_ring {
	_Atomic uint64_t n;	/* events written (may exceed PT_CAP) */
	_Atomic uint64_t iters; /* loop iterations (busy) or ticks (sleeper) */
	uint64_t pad[6];
	struct pt_event ev[PT_CAP];
};

struct pt_shm {
	uint64_t magic;
	uint32_t n_busy;
	uint32_t pad;
	uint64_t thresh_ns;
	uint64_t pad2[5];
	struct pt_ring ring[PT_MAX_BUSY + 1];
};

/* Longest event of ring r that overlaps [a, b] (ns); 0 if none. */
static inline double pt_ring_max(const struct pt_ring *r, uint64_t a, uint64_t b)
{
	uint64_t n = atomic_load_explicit(&r->n, memory_order_acquire), best = 0;

	if (n > PT_CAP)
		n = PT_CAP;
	for (uint64_t i = 0; i < n; i++) {
		const struct pt_event *e = &r->ev[i];

		if (e->start_ns < b && e->start_ns + e->len_ns > a && e->len_ns > best)
			best = e->len_ns;
	}
	return (double)best;
}

#endif

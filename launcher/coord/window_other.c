/* SPDX-License-Identifier: MIT */
/*
 * The other ranks' windows (window.h): each order followed, the stop kept
 * (by itself at a planned end), the records sent up; a parent that falls
 * silent ends this rank (rm_cut_off).
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "tree.h"
#include "window.h"

/*
 * A local signal is sent to rank 0, which stops everyone. After a SIGTERM
 * (Open MPI or Slurm ending the job: SIGKILL follows, after about a second
 * with Open MPI) this rank waits only ORPHAN_ENDING_NS for rank 0's stop
 * before detaching its targets itself: rank 0 may be stuck sending to a
 * dead rank.
 */
#define ORPHAN_ENDING_NS 600000000ull
static void watch_local(struct rm_win *w, uint64_t *orphan_deadline)
{
	int32_t sig = rm_take_signal(w->self);
	uint64_t wait = sig == SIGTERM ? ORPHAN_ENDING_NS
				       : ORPHAN_TIMEOUT_NS + (uint64_t)w->flow->depth * 2 *
								 rm_budget(w->link, LEVEL_STEP_NS);

	if (!sig)
		return;
	rm_send_up(w->flow, TAG_STOP, w->self->rank, sig);
	w->part->stops_sent++;
	if (!*orphan_deadline || ra_monotonic_ns() + wait < *orphan_deadline)
		*orphan_deadline = ra_monotonic_ns() + wait;
}

/*
 * When a rank gives up waiting for rank 0's stop (rank 0 dead or cut off):
 * the window's planned end (its duration, else --max-window) plus a grace;
 * start_ns and the result on CLOCK_MONOTONIC.
 */
static uint64_t lost_root_deadline(const struct rm_win *w, uint64_t start_ns)
{
	uint64_t end = rm_win_planned_end(w, start_ns);

	if (!end)
		end = start_ns + (uint64_t)w->o->max_window_ms * RA_NS_PER_MS;
	return end + rm_budget(w->link, GRACE_LOST_ROOT_NS) +
	       (uint64_t)w->flow->height * rm_budget(w->link, LEVEL_STEP_NS);
}

/*
 * Other ranks: the subtree's READY goes up once the children's is in (or
 * the silent ones are lost), from inside the hold.
 */
static void ready_step(struct rm_win *w)
{
	if (w->flow->ready_up_sent || !rm_ready_poll(w->flow))
		return;
	rm_ready_up(w->flow, &w->flow->ready_sum);
	w->flow->ready_up_sent = true;
}

/*
 * The stop came with READYs still owed: what this subtree has goes up now,
 * the silent children left out (their records, or their loss, say it).
 */
static void ready_at_stop(struct rm_win *w)
{
	if (w->flow->ready_up_sent)
		return;
	w->flow->ready_sum.owed += rm_ready_close(w->flow);
	rm_ready_up(w->flow, &w->flow->ready_sum);
	w->flow->ready_up_sent = true;
}

/*
 * Until rank 0's stop. A window with a duration ends at a time every rank
 * knows: rank 0 stops it there once it is STOP_MARGIN_NS away, and so does
 * each rank by itself, without waiting to hear it (rank 0's word follows).
 * Returns true when it stopped by itself (m->stop_ns set, the rest to come).
 */
static bool hold_other(struct rm_win *w, uint64_t start_ns, struct rm_halt *m)
{
	uint64_t orphan_deadline = 0, lost = lost_root_deadline(w, rm_win_mono(w, start_ns));
	uint64_t planned = rm_win_planned_end(w, rm_win_mono(w, start_ns));

	for (;;) {
		int flag = 0;
		uint64_t now;

		rm_win_watch_job(w);
		rm_flow_service(w->flow);
		ready_step(w);
		if (rm_flow_adopted_halt(w->flow, m)) {
			rm_flow_halts(w->flow, m);
			return false;
		}
		/* RM_MPI with the parent returns only on success here. */
		FLOW_MPI(w->flow, w->link->parent, "from", MPI_Iprobe, w->link->parent, TAG_HALT,
			 MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		if (flag) {
			FLOW_MPI(w->flow, w->link->parent, "from", MPI_Recv, m, sizeof(*m),
				 MPI_BYTE, w->link->parent, TAG_HALT, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			rm_flow_halts(w->flow, m);
			return false;
		}
		now = ra_monotonic_ns();
		if (planned && now + STOP_MARGIN_NS >= planned) {
			memset(m, 0, sizeof(*m));
			m->stop_ns = rm_win_planned_end(w, start_ns);
			return true;
		}
		watch_local(w, &orphan_deadline);
		if (orphan_deadline && now > orphan_deadline)
			rm_cut_off(w->link, "stop after a signal here");
		if (now > lost)
			rm_cut_off(w->link, "stop by the window's planned end");
		if (ra_monotonic_ns() > w->flow->awake_until)
			rm_wait_until(w->self,
				      rm_win_hold_wake(w, planned ? planned - STOP_MARGIN_NS : 0));
	}
}

/*
 * Other ranks: when the parent's next order is due, from now (the records
 * just sent). Rank 0 may wait --call-timeout more for the records of a node
 * whose calls run on (rm_win_calls_wait), which this rank may not know of.
 */
static uint64_t next_order_due(struct rm_win *w)
{
	const struct rm_flow *t = w->flow;
	int root_kids = rm_tree_children(0, t->k, w->self->size);

	/* Rank 0 gathers (the levels' steps), retries, may measure clocks again, and more. */
	return ra_monotonic_ns() + (uint64_t)w->o->delay_ms * RA_NS_PER_MS +
	       rm_budget(w->link, GRACE_RECORDS_NS) + rm_budget(w->link, LATE_RETRY_NS) +
	       rm_budget(w->link, CLOCK_LOST_NS) + rm_budget(w->link, GRACE_NEXT_NS) +
	       rm_win_output_wait(w) + (uint64_t)w->o->call_timeout_ms * RA_NS_PER_MS +
	       (uint64_t)t->height * rm_budget(w->link, LEVEL_STEP_NS) +
	       (uint64_t)root_kids * 2 * RA_NS_PER_MS;
}

int rm_follow_windows(struct rm_win *w, bool *lost)
{
	struct rm_order o;
	struct rm_halt m;
	uint64_t mine[2], grace;

	for (;;) {
		struct rm_ready r;
		bool stopped;

		if (rm_await_parent(w->flow, TAG_ORDER, &o, sizeof(o), w->next_deadline))
			rm_cut_off(w->link, "order");
		w->flow->order_t1 = ra_realtime_ns();
		if (o.end) {
			rm_flow_orders(w->flow, &o);
			*lost = o.lost;
			return o.code;
		}
		rm_flow_window(w->flow, o.window);
		/* From here on this rank's clock: rank 0's times turned into it. */
		w->flow->clock = o.clock;
		w->link->rtt_worst_ns = o.rtt_worst_ns;
		w->part->cut_level = o.detail;
		rm_flow_orders(w->flow, &o);
		mine[0] = rm_win_local_ns(w, o.start_ns);
		mine[1] = rm_win_local_ns(w, o.send_ns);
		/* Converted once, on receipt: a later step of this node's clock moves no wait. */
		rm_win_set_frame(w, mine[0]);
		r = rm_win_attach(w, mine);
		r.window = o.window;
		/* The children's READY is waited for inside the hold: none delays the stop. */
		rm_ready_begin(w->flow, o.window, w->frame_mono, &r);
		w->flow->ready_up_sent = false;
		stopped = hold_other(w, mine[0], &m);
		ready_at_stop(w);
		if (stopped) {
			rm_win_detach(w, m.stop_ns);
			/* The parent's word on the same stop, for its reason and what follows. */
			if (rm_await_parent(w->flow, TAG_HALT, &m, sizeof(m),
					    lost_root_deadline(w, w->frame_mono)))
				rm_cut_off(w->link, "stop");
			w->flow->halt_t1 = m.sent_rt ? ra_realtime_ns() : 0;
			rm_flow_halts(w->flow, &m);
		} else {
			w->flow->halt_t1 = m.sent_rt ? ra_realtime_ns() : 0;
			rm_win_detach(w, rm_win_local_ns(w, m.stop_ns));
		}
		/* Counted before the calls end: the word of the attaches said how many ran on. */
		grace = rm_budget(w->link, GRACE_RECORDS_NS) + rm_win_output_wait(w) +
			rm_win_calls_wait(w);
		rm_window_calls_end(w);
		rm_win_stacks_fold(w);
		rm_records_up(w->flow, o.window, rm_win_mono(w, rm_win_local_ns(w, m.stop_ns)),
			      grace);
		/* Children whose drift check disagreed, measured again before the next order. */
		rm_flow_measure(w->flow, false);
		w->next_deadline = next_order_due(w);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * READY up the tree (flow.h): each rank waits for its children's READY
 * inside the window's hold, sums them into its own, and sends the sum up;
 * the lost ones below go up with it as notes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "flow.h"

static void add_ready(struct rm_ready *sum, const struct rm_ready *m)
{
	sum->attached += m->attached;
	sum->tool_failed += m->tool_failed;
	sum->no_listener += m->no_listener;
	sum->declined += m->declined;
	sum->held += m->held;
	sum->differ += m->differ;
	sum->other += m->other;
	sum->gone += m->gone;
	if (m->ready_ns > sum->ready_ns)
		sum->ready_ns = m->ready_ns;
	if (m->rtt_sub_ns > sum->rtt_sub_ns)
		sum->rtt_sub_ns = m->rtt_sub_ns;
	sum->owed += m->owed;
	sum->pending += m->pending;
}

static void take_ready(struct rm_flow *f, struct rm_kid *k, const char *buf, size_t len,
		       int32_t window, uint64_t t3, struct rm_ready *sum)
{
	struct rm_ready m;
	const struct rm_lost_note *notes = (const void *)(buf + sizeof(m));

	if (k->lost || k->got_ready || len < sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	if (m.window != window || m.n_lost < 0 ||
	    (size_t)m.n_lost > (len - sizeof(m)) / sizeof(*notes))
		return; /* an earlier window's, late: not this one's */
	for (int32_t i = 0; i < m.n_lost; i++) {
		struct rm_lost_note n;

		memcpy(&n, &notes[i], sizeof(n));
		n.reason[sizeof(n.reason) - 1] = '\0';
		rm_take_note(f, k, n.rank, n.reason, n.adopted);
	}
	rm_flow_drift(f, k, k->order_rt, m.t1, m.t2, t3);
	k->ready = m;
	k->got_ready = true;
	add_ready(sum, &m);
	if (f->self->rank == 0) {
		f->roster->peers[k->rank].ready = m;
		f->roster->peers[k->rank].got_ready = true;
	}
}

/*
 * The wait for the children's READY runs inside the window's hold (each
 * poll takes what came and acts on the deadlines), so that a silent child
 * delays no stop: the hold acts on its stop while READYs are still owed.
 */
void rm_ready_begin(struct rm_flow *f, int32_t window, uint64_t start_mono,
		    const struct rm_ready *own)
{
	struct rm_flow *t = f;

	for (int i = 0; i < t->n_kids; i++)
		t->kids[i]->got_ready = t->kids[i]->ready_owed = false;
	t->ready_sum = *own;
	t->ready_sum.rtt_sub_ns = t->rtt_sub_ns;
	t->ready_window = window;
	t->ready_retry = rm_budget(f->link, LATE_RETRY_NS);
	t->ready_grace = rm_budget(f->link, GRACE_READY_NS) + rm_level_wait(f);
	t->ready_deadline = start_mono + t->ready_grace;
	t->ready_retried = false;
	t->ready_fresh = t->n_kids;
	t->ready_open = true;
}

/* Past the deadline and its retry: the silent children lost (their children adopted). */
static void lose_unready(struct rm_flow *f)
{
	struct rm_flow *t = f;
	int before = t->n_kids;

	for (int i = 0; i < before; i++) {
		struct rm_kid *k = t->kids[i];

		if (k->lost || k->got_ready)
			continue;
		if (i >= t->ready_fresh)
			rm_kid_lost(f, k,
				    "no word of its attaches within %.1f s of its adoption by rank "
				    "%d (rank %d, its parent, was lost)",
				    (double)rm_budget(f->link, ADOPT_WAIT_NS) / 1e9, f->self->rank,
				    k->adopted_from);
		else
			rm_kid_lost(f, k,
				    "its attaches not done within %.1f s after the start "
				    "(retried for %.1f s)",
				    (double)t->ready_grace / 1e9, (double)t->ready_retry / 1e9);
	}
	/* The lost ones' children adopted: their READY is waited for (adopt_until). */
	t->ready_fresh = before;
}

bool rm_ready_poll(struct rm_flow *f)
{
	struct rm_flow *t = f;
	uint64_t now;

	if (!t->ready_open)
		return true;
	for (;;) {
		struct rm_kid *k;
		size_t len = 0;
		char *buf;

		rm_flow_service(f);
		k = rm_take_message(f, TAG_READY, &buf, &len);
		if (!buf)
			break;
		/* t3 after the receive: never before the message was there. */
		if (k)
			take_ready(f, k, buf, len, t->ready_window, ra_realtime_ns(),
				   &t->ready_sum);
		free(buf);
	}
	if (!rm_kids_missing(f, false)) {
		t->ready_open = false;
		return true;
	}
	now = ra_monotonic_ns();
	if (now <= t->ready_deadline)
		return false;
	if (!t->ready_retried) {
		rm_say_late(f, false, "word of its attaches", t->ready_retry);
		t->ready_deadline += t->ready_retry;
		t->ready_retried = true;
		return false;
	}
	if (now <= t->adopt_until)
		return false;
	lose_unready(f);
	if (rm_kids_missing(f, false))
		return false; /* adopted ones, owed until adopt_until */
	t->ready_open = false;
	return true;
}

int rm_ready_close(struct rm_flow *f)
{
	int owed = 0;

	if (!f->ready_open)
		return 0;
	for (int i = 0; i < f->n_kids; i++) {
		struct rm_kid *k = f->kids[i];

		if (k->lost || k->got_ready)
			continue;
		k->ready_owed = true;
		owed++;
		if (f->verbose)
			rm_say(f->self,
			       "rank %d: no word of its attaches by the stop; its records say how "
			       "they went",
			       k->rank);
	}
	f->ready_open = false;
	return owed;
}

/* The notes not told up yet, after buf's first `head` bytes (a new buffer). */
static char *with_notes(struct rm_flow *f, const void *head, size_t len, size_t *total)
{
	size_t notes = f->n_notes * sizeof(struct rm_lost_note);
	char *buf = malloc(len + notes);

	if (!buf)
		rm_out_of_memory();
	memcpy(buf, head, len);
	if (notes)
		memcpy(buf + len, f->notes, notes);
	*total = len + notes;
	f->n_notes = 0;
	return buf;
}

void rm_ready_up(struct rm_flow *f, struct rm_ready *sum)
{
	size_t len;
	char *buf;

	sum->n_lost = (int32_t)f->n_notes;
	sum->t1 = f->order_t1;
	sum->t2 = ra_realtime_ns();
	buf = with_notes(f, sum, sizeof(*sum), &len);
	rm_post(f->link, f->link->parent, TAG_READY, buf, len);
	rm_keep_sent(&f->last_ready, &f->last_ready_len, &f->last_ready_window, buf, len,
		     f->window);
	free(buf);
}

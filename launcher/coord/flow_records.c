/* SPDX-License-Identifier: MIT */
/*
 * Records up the tree (flow.h): one bundle per subtree (this node's
 * records, the children's bundles as they came, and "rank r lost"
 * entries), each child's link drained of the STOP and GONE it sent before.
 * Rank 0 takes the entries into its roster.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "flow.h"
#include "tree.h"

/*
 * While rank 0 waits for records: Open MPI or Slurm ending the job
 * (SIGCONT, SIGTERM; SIGKILL follows) cuts the wait to GRACE_SIGNALLED_NS,
 * so the report is written first. The signal, or 0.
 */
static int cut_short(struct rm_flow *f, uint64_t *deadline)
{
	int sig = f->self->rank == 0 ? rm_take_signal(f->self) : 0;
	uint64_t soon = ra_monotonic_ns() + GRACE_SIGNALLED_NS;

	if (!sig)
		return 0;
	if (!f->cut_signal && sig != SIGUSR1)
		f->cut_signal = sig;
	if (soon < *deadline)
		*deadline = soon;
	return sig;
}

/* Rank 0: one entry of a bundle from child k. */
static void take_entry(struct rm_flow *f, const struct rm_kid *k, const struct rm_entry *e,
		       const char *bytes)
{
	if (e->rank <= 0 || e->rank >= f->self->size || !rm_tree_in_subtree(e->rank, k->rank, f->k))
		return; /* not from below that child */
	if (e->lost) {
		char why[320];

		snprintf(why, sizeof(why), "%.*s", (int)(e->len < sizeof(why) ? e->len : 0), bytes);
		rm_take_note(f, k, e->rank, why, e->lost == 2);
		return;
	}
	if (f->roster->peers[e->rank].got_records || f->roster->peers[e->rank].lost)
		return;
	rm_take_records(f->roster, e->rank, bytes, (size_t)e->len);
}

/*
 * Every STOP and GONE child k sent before a message that says how many it
 * had sent by then: they came first on the same link, so none is left
 * pending (and none is taken later for a stop of the next window). They
 * are there already; a child whose count claims more than comes by
 * LATE_RETRY_NS (rm_budget) is lost: no receive waits past a deadline.
 */
static void drain_link(struct rm_flow *f, struct rm_kid *k, int stops, int gones)
{
	uint64_t wait = rm_budget(f->link, LATE_RETRY_NS), deadline = ra_monotonic_ns() + wait;

	while (!k->lost && (k->stops_in < stops || k->gones_in < gones)) {
		int tag = k->stops_in < stops ? TAG_STOP : TAG_GONE, flag = 0;
		struct rm_up m;

		if (FLOW_MPI(f, k->rank, "from", MPI_Iprobe, k->rank, tag, MPI_COMM_WORLD, &flag,
			     MPI_STATUS_IGNORE))
			return; /* lost */
		if (flag) {
			if (rm_take_up(f, k, tag, &m) || f->self->rank != 0 || m.origin <= 0 ||
			    m.origin >= f->self->size)
				continue;
			if (tag == TAG_STOP)
				f->roster->peers[m.origin].stops++;
			else
				f->roster->peers[m.origin].gones++;
			continue;
		}
		if (ra_monotonic_ns() > deadline) {
			rm_kid_lost(f, k,
				    "its records count %d STOP and %d GONE messages before them, "
				    "%d and %d came within %.1f s",
				    stops, gones, k->stops_in, k->gones_in, (double)wait / 1e9);
			return;
		}
		rm_flow_service(f);
		rm_flow_nap(f, 100);
	}
}

/* Child k's bundle: checked, its link drained; rank 0 takes its entries, others keep it. */
static void take_bundle(struct rm_flow *f, struct rm_kid *k, char *buf, size_t len, int32_t window)
{
	struct rm_bundle_head h;
	size_t at = sizeof(h);

	if (k->lost || k->got_records || len < sizeof(h)) {
		free(buf);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.window != window) {
		free(buf);
		return; /* an earlier window's, late */
	}
	drain_link(f, k, h.stops_sent, h.gones_sent);
	/* A resent bundle (an adoption) was stopped by another parent: no t0 here for it. */
	if (window && !k->adopted)
		rm_flow_drift(f, k, k->halt_rt, h.t1, h.t2, ra_realtime_ns());
	for (int32_t i = 0; i < h.n; i++) {
		struct rm_entry e;

		if (len - at < sizeof(e))
			break;
		memcpy(&e, buf + at, sizeof(e));
		if (e.len > len - at - sizeof(e))
			break;
		if (f->self->rank == 0)
			take_entry(f, k, &e, buf + at + sizeof(e));
		at += sizeof(e) + e.len;
	}
	k->got_records = true;
	if (f->self->rank != 0 && at == len) {
		k->bundle = buf;
		k->bundle_len = len;
		return;
	}
	if (at != len)
		rm_kid_lost(f, k, "its records are cut short (%zu bytes)", len);
	free(buf);
}

/* Children silent at the deadline: lost, and why (those adopted from `fresh` on: since then). */
static void lose_silent(struct rm_flow *f, int cut, uint64_t grace, uint64_t retry,
			const char *after, int fresh)
{
	char more[48] = "";

	if (retry > 1)
		snprintf(more, sizeof(more), " (retried for %.1f s)", (double)retry / 1e9);
	for (int i = 0, n = f->n_kids; i < n; i++) {
		struct rm_kid *k = f->kids[i];

		if (k->lost || k->got_records)
			continue;
		if (i >= fresh && !cut)
			rm_kid_lost(f, k,
				    "no records within %.1f s of its adoption by rank %d (rank %d, "
				    "its parent, was lost)",
				    (double)rm_budget(f->link, ADOPT_WAIT_NS) / 1e9, f->self->rank,
				    k->adopted_from);
		else if (cut)
			rm_kid_lost(f, k,
				    "no records by the time the job was being ended (SIG%s on "
				    "rank 0)",
				    sigabbrev_np(cut));
		else
			rm_kid_lost(f, k, "no records within %.1f s %s%s%s", (double)grace / 1e9,
				    after, more,
				    k->ready_owed ? "; no word of its attaches by the stop either"
						  : "");
	}
}

/*
 * Every live child's bundle until since + grace + this level's steps;
 * children silent then are late: retried once, LATE_RETRY_NS (rm_budget)
 * more, unless a signal cut rank 0's wait. Who is still silent is lost.
 */
static void gather_records(struct rm_flow *f, int32_t window, uint64_t since, uint64_t grace,
			   const char *after)
{
	uint64_t retry = 0, deadline;
	int cut = 0;

	int fresh = f->n_kids, before;

	grace += rm_level_wait(f);
	deadline = since + grace;
	if (ra_monotonic_ns() > deadline) {
		/*
		 * The stop came after the deadline: from an adopter, which waits
		 * ADOPT_WAIT_NS for this rank. Its children get half of that, no retry.
		 */
		grace = rm_budget(f->link, ADOPT_WAIT_NS) / 2;
		deadline = ra_monotonic_ns() + grace;
		retry = 1;
		after = "after the stop reached this rank (late: an adoption)";
	}
	for (int i = 0; i < f->n_kids; i++) {
		f->kids[i]->got_records = false;
		f->kids[i]->bundle = NULL;
	}
again:
	while (rm_kids_missing(f, true)) {
		struct rm_kid *k;
		size_t len = 0;
		char *buf;
		uint64_t now;

		rm_flow_service(f);
		k = rm_take_message(f, TAG_RECORDS, &buf, &len);
		if (buf) {
			if (k)
				take_bundle(f, k, buf, len, window);
			else
				free(buf);
			continue;
		}
		now = ra_monotonic_ns();
		if (!cut)
			cut = cut_short(f, &deadline);
		if (now > deadline && !cut && !retry) {
			retry = rm_budget(f->link, LATE_RETRY_NS);
			rm_say_late(f, true, "records", retry);
			deadline += retry;
			continue;
		}
		if (now > deadline && (cut || now > f->adopt_until))
			break;
		rm_flow_nap(f, 100);
	}
	before = f->n_kids;
	lose_silent(f, cut, grace, retry, after, fresh);
	/* The lost ones' children adopted: their records are waited for (adopt_until). */
	if (f->n_kids != before) {
		fresh = before;
		goto again;
	}
}

static size_t put_entry(char *at, int32_t rank, int32_t lost, const void *bytes, size_t len)
{
	struct rm_entry e = {rank, lost, len};

	memcpy(at, &e, sizeof(e));
	memcpy(at + sizeof(e), bytes, len);
	return sizeof(e) + len;
}

void rm_records_up(struct rm_flow *f, int32_t window, uint64_t since, uint64_t grace)
{
	struct rm_bundle_head h = {.window = window};
	size_t own_len, total, at;
	char *own, *buf;

	gather_records(f, window, since, grace, window ? "after the stop" : "of the start");
	own = rm_pack_records(f->self, f->part, &f->clock, f->order_t1, &own_len);
	total = sizeof(h) + sizeof(struct rm_entry) + own_len;
	for (int i = 0; i < f->n_kids; i++)
		if (f->kids[i]->bundle)
			total += f->kids[i]->bundle_len - sizeof(h);
	for (size_t i = 0; i < f->n_notes; i++)
		total += sizeof(struct rm_entry) + strlen(f->notes[i].reason) + 1;
	if (!(buf = malloc(total)))
		rm_out_of_memory();
	at = sizeof(h);
	at += put_entry(buf + at, f->self->rank, 0, own, own_len);
	h.n = 1;
	free(own);
	for (int i = 0; i < f->n_kids; i++) {
		struct rm_kid *k = f->kids[i];
		struct rm_bundle_head kh;

		if (!k->bundle)
			continue;
		memcpy(&kh, k->bundle, sizeof(kh));
		memcpy(buf + at, k->bundle + sizeof(kh), k->bundle_len - sizeof(kh));
		at += k->bundle_len - sizeof(kh);
		h.n += kh.n;
		free(k->bundle);
		k->bundle = NULL;
	}
	for (size_t i = 0; i < f->n_notes; i++, h.n++)
		at += put_entry(buf + at, f->notes[i].rank, f->notes[i].adopted ? 2 : 1,
				f->notes[i].reason, strlen(f->notes[i].reason) + 1);
	f->n_notes = 0;
	/* Counted after the children's links were drained: those went up first. */
	h.stops_sent = f->up_stops;
	h.gones_sent = f->up_gones;
	h.t1 = f->halt_t1;
	h.t2 = ra_realtime_ns();
	memcpy(buf, &h, sizeof(h));
	rm_post(f->link, f->link->parent, TAG_RECORDS, buf, at);
	rm_keep_sent(&f->last_bundle, &f->last_bundle_len, &f->last_bundle_window, buf, at, window);
	free(buf);
}

/*
 * Rank 0: its own records, then every child's bundle; a rank neither in a
 * bundle nor said lost is lost (its parent would have said why).
 */
void rm_collect_records(struct rm_flow *f, int32_t window, struct rm_node **nodes, size_t *n_nodes,
			uint64_t since, uint64_t grace, const char *after)
{
	size_t len;
	char *own;

	for (int r = 0; r < f->self->size; r++)
		f->roster->peers[r].got_records = false;
	own = rm_pack_records(f->self, f->part, &f->clock, f->order_t1, &len);
	rm_take_records(f->roster, 0, own, len);
	free(own);
	gather_records(f, window, since, grace, after);
	for (int r = 1; r < f->self->size; r++) {
		int p = rm_tree_parent(r, f->k);

		if (f->roster->peers[r].lost || f->roster->peers[r].got_records)
			continue;
		rm_mark_lost(f->roster, r,
			     "its records were not in rank %d's (its parent's) bundle", p);
	}
	rm_window_nodes(f->roster, nodes, n_nodes, NULL);
}

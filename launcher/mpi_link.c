/* SPDX-License-Identifier: MIT */
/*
 * Rank 0 and each other rank, point to point: sends that never block,
 * receives that never wait past a deadline. What rank 0 does not hear in
 * time marks that rank lost; what another rank does not hear from rank 0
 * in time makes it detach its targets and end (rm_cut_off).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "mpi_ctx.h"

/* ------------------------------------------------------------------------ */
/* Checked MPI calls (RM_MPI, mpi_ctx.h). */

/* Another rank lost its link to rank 0: as if rank 0 fell silent, with the cause. */
__attribute__((noreturn)) static void link_broken(struct ctx *c, const char *msg)
{
	rn_detach_all(c->t, c->n, NULL);
	rm_rank_error(c, "%s: detached this node's targets, ending (exit %d)", msg, RM_EXIT_LOST);
	fflush(NULL);
	_exit(RM_EXIT_LOST);
}

int rm_mpi_check(struct ctx *c, int ret, const char *call, const char *dir, int peer)
{
	char text[MPI_MAX_ERROR_STRING], msg[MPI_MAX_ERROR_STRING + 64];
	int len = 0;

	if (ret == MPI_SUCCESS)
		return 0;
	if (MPI_Error_string(ret, text, &len) != MPI_SUCCESS || len <= 0)
		snprintf(text, sizeof(text), "MPI error %d", ret);
	if (peer >= 0)
		snprintf(msg, sizeof(msg), "%s %s rank %d failed: %s", call, dir, peer, text);
	else if (peer == RM_ANY)
		snprintf(msg, sizeof(msg), "%s %s any rank failed: %s", call, dir, text);
	else
		snprintf(msg, sizeof(msg), "%s failed: %s", call, text);
	if (c->rank == 0 && peer > 0 && c->peers) {
		rm_mark_lost(c, peer, "%s", msg);
		return -1;
	}
	if (c->rank != 0 && peer == 0)
		link_broken(c, msg);
	if (peer == RM_ALL) {
		/* Only the start-up uses collectives: no target is touched yet. */
		rm_rank_error(c, "%s: stopping every rank (exit %d)", msg, RM_EXIT_ERROR);
		fflush(NULL);
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
		_exit(RM_EXIT_ERROR);
	}
	if (!c->mpi_any_said)
		rm_rank_error(c, "%s (said once; ranks that stay silent are lost)", msg);
	c->mpi_any_said = true;
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Sends: a copy of the data lives until MPI has sent it. */

static void out_of_memory(void)
{
	fputs("rocattach-mpi: error: out of memory\n", stderr);
	MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
}

void rm_post(struct ctx *c, int dest, int tag, const void *data, size_t len)
{
	struct rm_outbox *o = &c->out;
	void *copy;

	rm_outbox_reap(c, false);
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		MPI_Request *req = realloc(o->req, cap * sizeof(*req));

		if (req)
			o->req = req;
		void **buf = req ? realloc(o->buf, cap * sizeof(*buf)) : NULL;

		if (buf)
			o->buf = buf;
		int *to = buf ? realloc(o->dest, cap * sizeof(*to)) : NULL;

		if (!to)
			out_of_memory();
		o->dest = to;
		o->cap = cap;
	}
	copy = malloc(len ? len : 1);
	if (!copy || len > INT32_MAX)
		out_of_memory();
	memcpy(copy, data, len);
	if (RM_MPI(c, dest, "to", MPI_Isend, copy, (int)len, MPI_BYTE, dest, tag, MPI_COMM_WORLD,
		   &o->req[o->n])) {
		free(copy);
		return; /* dest is lost */
	}
	o->dest[o->n] = dest;
	o->buf[o->n++] = copy;
}

/*
 * Free what was sent. all: at the end, sends still pending (to a lost rank)
 * are released to MPI and their copies kept: MPI may still read them.
 */
void rm_outbox_reap(struct ctx *c, bool all)
{
	struct rm_outbox *o = &c->out;
	size_t k = 0;

	for (size_t i = 0; i < o->n; i++) {
		int done = 0, d = o->dest[i];

		if (RM_MPI(c, d, "to", MPI_Test, &o->req[i], &done, MPI_STATUS_IGNORE)) {
			/* The send failed (its peer lost): MPI may still hold the copy. */
		} else if (done) {
			free(o->buf[i]);
		} else if (all) {
			RM_MPI(c, d, "to", MPI_Request_free, &o->req[i]);
		} else {
			o->req[k] = o->req[i];
			o->dest[k] = d;
			o->buf[k++] = o->buf[i];
		}
	}
	o->n = k;
}

/* ------------------------------------------------------------------------ */
/* Lost ranks (rank 0). */

void rm_mark_lost(struct ctx *c, int r, const char *fmt, ...)
{
	struct rm_peer *p = &c->peers[r];
	va_list ap;

	if (p->lost)
		return;
	p->lost = true;
	c->lost_count++;
	va_start(ap, fmt);
	vsnprintf(p->lost_reason, sizeof(p->lost_reason), fmt, ap);
	va_end(ap);
	rm_say(c, "%s (rank %d) lost: %s", p->last.host[0] ? p->last.host : "a node", r,
	       p->lost_reason);
}

/* ------------------------------------------------------------------------ */
/* The other ranks: waiting for rank 0. */

/* Answer one clock ping: our time, at once. */
static void answer_ping(struct ctx *c)
{
	uint64_t t;

	/* RM_MPI with rank 0 returns only on success here. */
	RM_MPI(c, 0, "from", MPI_Recv, &t, 1, MPI_UINT64_T, 0, TAG_CLOCK, MPI_COMM_WORLD,
	       MPI_STATUS_IGNORE);
	t = ra_realtime_ns();
	rm_post(c, 0, TAG_CLOCK, &t, sizeof(t));
}

/* Rank 0 asked for this node's records: sent now if they are final, else when they are. */
static void take_pull(struct ctx *c)
{
	int32_t w;

	RM_MPI(c, 0, "from", MPI_Recv, &w, 1, MPI_INT32_T, 0, TAG_PULL, MPI_COMM_WORLD,
	       MPI_STATUS_IGNORE);
	c->pull_pending = true;
	if (c->records_ready)
		rm_records_ready(c);
}

/*
 * The next message of tag from rank 0, answering clock pings and requests
 * for records meanwhile.
 * Idle, it looks every 500 us (many ranks share a node's CPUs in tests);
 * once pinged it stays awake (no sleep) for a while, so the rest of the
 * exchange measures the network, not our naps.
 */
int rm_await_root(struct ctx *c, int tag, void *buf, size_t len, uint64_t deadline)
{
	uint64_t awake_until = 0;

	for (;;) {
		MPI_Status st;
		int flag = 0;

		RM_MPI(c, 0, "from", MPI_Iprobe, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
		if (flag && st.MPI_TAG == TAG_CLOCK) {
			answer_ping(c);
			awake_until = ra_monotonic_ns() + 50 * RA_NS_PER_MS;
			continue;
		}
		if (flag && st.MPI_TAG == TAG_PULL && tag != TAG_PULL) {
			take_pull(c);
			continue;
		}
		if (flag && st.MPI_TAG == tag) {
			RM_MPI(c, 0, "from", MPI_Recv, buf, (int)len, MPI_BYTE, 0, tag,
			       MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			return 0;
		}
		if (ra_monotonic_ns() > deadline)
			return -1;
		if (ra_monotonic_ns() > awake_until)
			usleep(500);
	}
}

void rm_cut_off(struct ctx *c, const char *waiting_for)
{
	rn_detach_all(c->t, c->n, NULL);
	rm_rank_error(c,
		      "no %s from rank 0 in time: rank 0 is gone or this node is cut off; "
		      "detached this node's targets, ending (exit %d)",
		      waiting_for, RM_EXIT_LOST);
	fflush(NULL);
	_exit(RM_EXIT_LOST);
}

uint64_t rm_budget(const struct ctx *c, uint64_t floor_ns)
{
	uint64_t scaled = c->rtt_worst_ns * RTT_BUDGET;

	return scaled > floor_ns ? scaled : floor_ns;
}

/* ------------------------------------------------------------------------ */
/*
 * Clocks (rank 0): each live rank in turn exchanges CLOCK_ROUNDS ping-pongs
 * with rank 0 (rank 0 sends its time t0, the rank answers its own t1, rank 0
 * reads t2), more (up to CLOCK_ROUNDS_MAX) while no round trip was shorter
 * than CLOCK_RTT_GOOD_NS (a busy node); the estimate with the shortest round
 * trip is kept: offset = t1 - (t0 + t2) / 2, within rtt / 2 of the truth.
 *
 * A rank that leaves a ping unanswered for CLOCK_ANSWER_NS (rm_budget) is
 * late: rank 0 goes on with the other ranks, then waits for the late ranks'
 * answers together, each until CLOCK_LOST_NS (rm_budget) after its ping.
 * One that answers is not lost: its late round counts (t0 <= t1 <= t2 still
 * holds, the bound is only wider). One that does not is lost.
 */
static int take_answer(struct ctx *c, int r, uint64_t t0, uint64_t sent, struct rm_clock *best)
{
	uint64_t t1, rtt;

	if (RM_MPI(c, r, "from", MPI_Recv, &t1, 1, MPI_UINT64_T, r, TAG_CLOCK, MPI_COMM_WORLD,
		   MPI_STATUS_IGNORE))
		return -1;
	/* The round trip on CLOCK_MONOTONIC (sent: when the ping went): a step of rank 0's
	 * wall clock meanwhile does not make it absurd. */
	rtt = ra_monotonic_ns() - sent;
	if (rtt < best->rtt_ns) {
		best->rtt_ns = rtt;
		best->offset_ns = (int64_t)(t1 - t0) - (int64_t)(rtt / 2);
	}
	return 0;
}

/* One round: 0, or -1 if r is late (its ping's times kept for the retry). */
static int ping_pong(struct ctx *c, int r, struct rm_clock *best)
{
	struct rm_peer *p = &c->peers[r];
	uint64_t t0 = ra_realtime_ns(), sent = ra_monotonic_ns();
	uint64_t deadline = sent + rm_budget(c, CLOCK_ANSWER_NS);
	int flag = 0;

	rm_post(c, r, TAG_CLOCK, &t0, sizeof(t0));
	while (!flag) {
		if (RM_MPI(c, r, "from", MPI_Iprobe, r, TAG_CLOCK, MPI_COMM_WORLD, &flag,
			   MPI_STATUS_IGNORE))
			return -1;
		if (!flag && ra_monotonic_ns() > deadline) {
			p->ping_t0 = t0;
			p->ping_sent = sent;
			return -1;
		}
	}
	if (take_answer(c, r, t0, sent, best))
		return -1;
	return 0;
}

/* The estimate is applied only when it shows the clocks differ (struct rm_clock). */
static void settle_clock(struct rm_peer *p, struct rm_clock best)
{
	best.applied_ns = (uint64_t)llabs(best.offset_ns) > best.rtt_ns / 2 ? best.offset_ns : 0;
	p->clock = best;
}

static const char *host_of(const struct rm_peer *p)
{
	return p->last.host[0] ? p->last.host : "a node";
}

/* The late ranks' answers, each until CLOCK_LOST_NS (rm_budget) after its ping. */
static void wait_late_clocks(struct ctx *c, size_t late)
{
	uint64_t lost_after = rm_budget(c, CLOCK_LOST_NS);

	while (late) {
		uint64_t now = ra_monotonic_ns();

		for (int r = 1; r < c->size; r++) {
			struct rm_peer *p = &c->peers[r];
			int flag = 0;

			if (!p->ping_t0)
				continue;
			if (RM_MPI(c, r, "from", MPI_Iprobe, r, TAG_CLOCK, MPI_COMM_WORLD, &flag,
				   MPI_STATUS_IGNORE) ||
			    (flag && take_answer(c, r, p->ping_t0, p->ping_sent, &p->clock))) {
				/* The failed call lost it (RM_MPI said why). */
			} else if (flag) {
				settle_clock(p, p->clock);
				if (c->o.verbose)
					rm_say(c,
					       "%s (rank %d) answered its clock ping after %.1f s: "
					       "busy, not lost",
					       host_of(p), r, (double)(now - p->ping_sent) / 1e9);
			} else if (now - p->ping_sent > lost_after) {
				rm_mark_lost(c, r, "no answer to a clock ping within %.1f s",
					     (double)lost_after / 1e9);
			} else {
				continue;
			}
			p->ping_t0 = 0;
			late--;
		}
		if (late)
			usleep(200);
	}
}

void rm_clock_exchange(struct ctx *c)
{
	uint64_t worst = 0;
	size_t late = 0;

	c->peers[0].clock = (struct rm_clock){0, 0, 0, true}; /* the reference */
	for (int r = 1; r < c->size; r++) {
		struct rm_peer *p = &c->peers[r];
		struct rm_clock best = {0, UINT64_MAX, 0, true};
		uint64_t budget = ra_monotonic_ns() + rm_budget(c, CLOCK_ANSWER_NS);

		if (p->lost)
			continue;
		/* A rank that answers slowly gets fewer rounds (a wider bound). */
		for (int k = 0;
		     k < CLOCK_ROUNDS || (k < CLOCK_ROUNDS_MAX && best.rtt_ns > CLOCK_RTT_GOOD_NS);
		     k++) {
			if (k && ra_monotonic_ns() > budget)
				break;
			if (ping_pong(c, r, &best))
				break;
		}
		p->clock = best;
		if (p->ping_t0) {
			late++;
			if (c->o.verbose)
				rm_say(
				    c,
				    "%s (rank %d) late: no answer to a clock ping within %.1f s; "
				    "waiting up to %.1f s",
				    host_of(p), r, (double)rm_budget(c, CLOCK_ANSWER_NS) / 1e9,
				    (double)rm_budget(c, CLOCK_LOST_NS) / 1e9);
			continue;
		}
		settle_clock(p, best);
		worst = best.rtt_ns > worst ? best.rtt_ns : worst;
	}
	wait_late_clocks(c, late);
	/* Late answers' round trips are rank 0's own wait too: not a measure of the link. */
	c->rtt_worst_ns = worst;
}

/* Rank 0: the order to every live rank, each with its own clock. */
void rm_send_orders(struct ctx *c, const struct rm_order *o)
{
	for (int r = 1; r < c->size; r++) {
		struct rm_order mine = *o;

		if (c->peers[r].lost)
			continue;
		mine.clock = c->peers[r].clock;
		mine.rtt_worst_ns = c->rtt_worst_ns;
		rm_post(c, r, TAG_ORDER, &mine, sizeof(mine));
	}
}

/* ------------------------------------------------------------------------ */
/*
 * Records: rank 0 asks each rank for its own, --gather-slots at a time, and
 * takes them as they come.
 */

struct rm_rec_head {
	int32_t worker;
	int32_t all_gone;   /* every target of the node is gone */
	int32_t stops_sent; /* STOP and GONE messages sent before this one, all along */
	int32_t gones_sent;
	int64_t boot_offset_ns; /* CLOCK_REALTIME - CLOCK_BOOTTIME here */
	uint64_t node_ns[3];	/* selection, topology, side probes */
	char error[256];
	uint64_t stacks_len;	  /* --stacks: folded lines after the targets, this long */
	uint64_t stacks_no_rank;  /* --stacks: targets left out, with no rank */
	uint64_t samples_len;	  /* --sample: folded lines after the stacks, this long */
	uint64_t samples_missing; /* --sample: targets with no file */
	uint64_t timed_len;	  /* --sample with --trace: timed samples after those, this long */
};

static int64_t boot_offset_ns(void)
{
	return (int64_t)(ra_realtime_ns() - ra_clock_ns(CLOCK_BOOTTIME));
}

static void *pack_records(struct ctx *c, size_t *len)
{
	struct rm_rec_head h = {.worker = c->worker,
				.stops_sent = c->stops_sent,
				.gones_sent = c->gones_sent,
				.boot_offset_ns = boot_offset_ns()};
	size_t n = c->worker ? c->n : 0, body = rn_pack(c->host, c->t, n, NULL, 0);
	size_t stacks = c->stacks.text ? strlen(c->stacks.text) : 0;
	size_t samples = c->stacks.samples ? strlen(c->stacks.samples) : 0;
	size_t timed = c->stacks.timed ? strlen(c->stacks.timed) : 0;
	char *buf = malloc(sizeof(h) + body + stacks + samples + timed);

	if (!buf)
		out_of_memory();
	h.stacks_len = stacks;
	h.stacks_no_rank = c->stacks.no_rank;
	h.samples_len = samples;
	h.samples_missing = c->stacks.samples_missing;
	h.timed_len = timed;
	h.all_gone = c->watch && !rn_watch_alive(c->watch);
	memcpy(h.node_ns, c->node_ns, sizeof(h.node_ns));
	snprintf(h.error, sizeof(h.error), "%s", c->node_error);
	memcpy(buf, &h, sizeof(h));
	rn_pack(c->host, c->t, n, buf + sizeof(h), body);
	if (stacks)
		memcpy(buf + sizeof(h) + body, c->stacks.text, stacks);
	if (samples)
		memcpy(buf + sizeof(h) + body + stacks, c->stacks.samples, samples);
	if (timed)
		memcpy(buf + sizeof(h) + body + stacks + samples, c->stacks.timed, timed);
	*len = sizeof(h) + body + stacks + samples + timed;
	return buf;
}

void rm_records_open(struct ctx *c)
{
	c->records_ready = c->records_sent = false;
}

/* Sent once final, if asked or in the first slots (ranks 1 to --gather-slots: asked at once). */
void rm_records_ready(struct ctx *c)
{
	size_t len;
	void *buf;

	c->records_ready = true;
	if (c->records_sent || (!c->pull_pending && c->rank > RM_PULL_SLOTS))
		return;
	buf = pack_records(c, &len);
	rm_post(c, 0, TAG_RECORDS, buf, len);
	free(buf);
	c->pull_pending = false;
	c->records_sent = true;
}

/* A window's copy of a node: its targets are shared where kept in the store. */
static int copy_node(struct rm_node *dst, const struct rm_node *src)
{
	*dst = *src;
	dst->t = src->n && !src->store ? malloc(src->n * sizeof(*src->t)) : NULL;
	dst->error = src->error ? strdup(src->error) : NULL;
	if ((src->n && !src->store && !dst->t) || (src->error && !dst->error))
		return -1;
	if (src->n && !src->store)
		memcpy(dst->t, src->t, src->n * sizeof(*src->t));
	return 0;
}

/*
 * The STOP and GONE messages r sent before its records and rank 0 has not
 * read yet: they are there already (sent earlier, on the same link), so
 * none is left pending.
 */
static void drain_from(struct ctx *c, int r, const struct rm_rec_head *h)
{
	struct rm_peer *p = &c->peers[r];
	int v;

	for (; p->stops < h->stops_sent && !p->lost; p->stops++)
		RM_MPI(c, r, "from", MPI_Recv, &v, 1, MPI_INT, r, TAG_STOP, MPI_COMM_WORLD,
		       MPI_STATUS_IGNORE);
	for (; p->gones < h->gones_sent && !p->lost; p->gones++)
		RM_MPI(c, r, "from", MPI_Recv, &v, 1, MPI_INT, r, TAG_GONE, MPI_COMM_WORLD,
		       MPI_STATUS_IGNORE);
}

/*
 * Into the store (report_store.c) at once: rank 0 holds one node's targets
 * at a time. If the store fails (its disk full), they stay in memory.
 */
static void keep(struct ctx *c, struct rm_node *nd)
{
	char err[600];

	if (!c->run.store || c->store_full || !rm_store_put(c->run.store, nd, err, sizeof(err)))
		return;
	rm_say(c, "warning: %s; the records are kept in memory from now on", err);
	c->store_full = true; /* what is in it stays readable */
}

/* --stacks and --sample: a node's folded lines (after its records) into rank 0's trees. */
static void take_stacks(struct ctx *c, const struct rm_rec_head *h, const char *lines,
			int64_t applied_ns)
{
	if (h->stacks_len && c->run.stacks)
		c->run.stacks_refused += rm_stacks_merge(c->run.stacks, lines, h->stacks_len);
	if (h->samples_len && c->run.samples) {
		c->run.samples_refused +=
		    rm_stacks_merge(c->run.samples, lines + h->stacks_len, h->samples_len);
		if (rm_samples_keep(&c->run, lines + h->stacks_len, h->samples_len))
			out_of_memory();
	}
	if (h->timed_len && rm_timed_keep(&c->run, lines + h->stacks_len + h->samples_len,
					  h->timed_len, applied_ns))
		out_of_memory();
	c->run.stacks_no_rank += h->stacks_no_rank;
	c->run.samples_missing += h->samples_missing;
}

/* One rank's records message into its peer entry (r's last known node). */
static void take_records(struct ctx *c, int r, const char *buf, size_t len)
{
	struct rm_peer *p = &c->peers[r];
	struct rm_rec_head h;
	struct rm_node nd = {0};

	p->got_records = true;
	if (len < sizeof(h)) {
		rm_mark_lost(c, r, "its records are cut short (%zu bytes)", len);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	h.error[sizeof(h.error) - 1] = '\0';
	if (r != 0)
		drain_from(c, r, &h);
	if (p->lost)
		return;
	p->worker = h.worker;
	p->all_gone = h.all_gone;
	for (int i = 0; i < 3; i++)
		if (h.node_ns[i] > c->worst_node_ns[i])
			c->worst_node_ns[i] = h.node_ns[i];
	if (!h.worker)
		return;
	if (h.stacks_len > len - sizeof(h) || h.samples_len > len - sizeof(h) - h.stacks_len ||
	    h.timed_len > len - sizeof(h) - h.stacks_len - h.samples_len) {
		rm_mark_lost(c, r, "its records are cut short (%zu bytes)", len);
		return;
	}
	len -= h.stacks_len + h.samples_len + h.timed_len;
	take_stacks(c, &h, buf + len, p->clock.applied_ns);
	if (rm_take_node(buf + sizeof(h), len - sizeof(h), p->clock.applied_ns, &nd)) {
		rm_mark_lost(c, r, "its records do not unpack (%zu bytes)", len);
		return;
	}
	nd.error = h.error[0] ? strdup(h.error) : NULL;
	nd.boot_offset_ns = h.boot_offset_ns;
	nd.clock_offset_ns = p->clock.offset_ns;
	nd.clock_rtt_ns = p->clock.rtt_ns;
	nd.clock_known = p->clock.known;
	p->detached = 0;
	for (size_t i = 0; i < nd.n; i++)
		p->detached += nd.t[i].state == RN_DETACHED;
	keep(c, &nd);
	free(p->last.t);
	free((char *)p->last.error);
	p->last = nd;
}

/* Rank 0's own records, through the same path as everyone's. */
static void take_own_records(struct ctx *c)
{
	size_t len;
	char *buf = pack_records(c, &len);

	take_records(c, 0, buf, len);
	free(buf);
}

/*
 * While waiting for records: Open MPI or Slurm ending the job (SIGCONT,
 * SIGTERM; SIGKILL follows) cuts the wait to GRACE_SIGNALLED_NS, so the
 * report is written first. The signal, or 0.
 */
static int cut_short(struct ctx *c, uint64_t *deadline)
{
	int sig = rm_take_signal(c);
	uint64_t soon = ra_monotonic_ns() + GRACE_SIGNALLED_NS;

	if (!sig)
		return 0;
	if (!c->interrupted && sig != SIGUSR1)
		c->interrupted = sig;
	if (soon < *deadline)
		*deadline = soon;
	return sig;
}

/* Ranks silent at a deadline, said (verbose). How many. */
static size_t mark_late(struct ctx *c, bool (*silent)(const struct rm_peer *), const char *what,
			uint64_t retry)
{
	size_t n = 0;

	for (int r = 1; r < c->size; r++) {
		struct rm_peer *p = &c->peers[r];

		if (p->lost || !silent(p))
			continue;
		n++;
		if (c->o.verbose)
			rm_say(c, "%s (rank %d) late: no %s yet; retrying for %.1f s", host_of(p),
			       r, what, (double)retry / 1e9);
	}
	return n;
}

/*
 * Rank r sent no records: lost, and why. cut: the signal that cut the wait
 * short (0: none); late: it was asked so late that it had PULL_ANSWER_NS;
 * retry: how long it was retried past the grace (0: not).
 */
static void lose_silent(struct ctx *c, int r, int cut, bool late, uint64_t grace, uint64_t retry,
			const char *after)
{
	char more[48] = "";

	if (retry)
		snprintf(more, sizeof(more), " (retried for %.1f s)", (double)retry / 1e9);
	if (cut)
		rm_mark_lost(c, r,
			     "no records by the time the job was being ended (SIG%s on rank 0)%s",
			     sigabbrev_np(cut), c->peers[r].pulled_ns ? "" : ": not asked");
	else if (late)
		rm_mark_lost(c, r, "no records within %.1f s of being asked (%.1f s %s)%s",
			     (double)PULL_ANSWER_NS / 1e9, (double)grace / 1e9, after, more);
	else
		rm_mark_lost(c, r, "no records within %.1f s %s%s", (double)grace / 1e9, after,
			     more);
}

/*
 * A rank asked, but silent past its deadline (the collection's, or
 * PULL_ANSWER_NS after it was asked if that is later; after a cut, the
 * cut's) is lost: 1 if r was, else 0.
 */
static int overdue(struct ctx *c, int r, uint64_t now, uint64_t deadline, int cut, uint64_t grace,
		   uint64_t retry, const char *after)
{
	struct rm_peer *p = &c->peers[r];
	bool late = p->pulled_ns + PULL_ANSWER_NS > deadline;

	if (p->lost || p->got_records || !p->pulled_ns)
		return 0;
	if (now <= deadline || (!cut && late && now <= p->pulled_ns + PULL_ANSWER_NS))
		return 0;
	lose_silent(c, r, cut, late, grace, retry, after);
	return 1;
}

static bool no_records(const struct rm_peer *p)
{
	return p->pulled_ns && !p->got_records;
}

/* Ranks that still owe their records; *asked: of which asked. */
static size_t owed(const struct ctx *c, size_t *asked)
{
	size_t n = 0;

	*asked = 0;
	for (int r = 1; r < c->size; r++) {
		const struct rm_peer *p = &c->peers[r];

		if (p->lost || p->got_records)
			continue;
		n++;
		*asked += p->pulled_ns != 0;
	}
	return n;
}

/*
 * Ask ranks for their records, --gather-slots at a time, and wait for what is
 * missing until the deadline (see overdue); a rank asked and silent then is
 * late: every such rank is retried once, LATE_RETRY_NS (rm_budget) more,
 * unless a signal cut the wait. Who is still missing then is lost. After a
 * cut (the job is being ended) nobody more is asked.
 */
void rm_collect_records(struct ctx *c, struct rm_node **nodes, size_t *n_nodes, uint64_t since,
			uint64_t grace, const char *after)
{
	uint64_t deadline = since + grace, next_scan = 0, retry = 0;
	size_t missing = 0, asked = 0, lost_seen;
	int32_t window = (int32_t)c->run.n_w;
	char *buf = NULL;
	int cut = 0, next = c->size <= RM_PULL_SLOTS ? c->size : RM_PULL_SLOTS + 1;

	for (int r = 0; r < c->size; r++) {
		struct rm_peer *p = &c->peers[r];

		p->got_records = false;
		p->pulled_ns = 0;
		missing += r && !p->lost;
		/* The first slots: asked from the start, they send unasked. */
		if (r && r < next && !p->lost) {
			p->pulled_ns = ra_monotonic_ns();
			asked++;
		}
	}
	take_own_records(c);
	lost_seen = c->lost_count;
	while (missing) {
		MPI_Status st;
		int flag = 0, len;
		uint64_t now;
		bool owes;

		if (c->lost_count != lost_seen) {
			/* Lost meanwhile (a failed call): owes nothing now. */
			lost_seen = c->lost_count;
			missing = owed(c, &asked);
			continue;
		}
		for (; !cut && asked < (size_t)RM_PULL_SLOTS && next < c->size; next++) {
			if (c->peers[next].lost)
				continue;
			rm_post(c, next, TAG_PULL, &window, sizeof(window));
			c->peers[next].pulled_ns = ra_monotonic_ns();
			asked++;
		}
		if (RM_MPI(c, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, TAG_RECORDS,
			   MPI_COMM_WORLD, &flag, &st))
			flag = 0;
		if (!flag) {
			now = ra_monotonic_ns();
			if (!cut)
				cut = cut_short(c, &deadline);
			if (now > deadline && !cut && !retry &&
			    mark_late(c, no_records, "records", rm_budget(c, LATE_RETRY_NS))) {
				retry = rm_budget(c, LATE_RETRY_NS);
				deadline += retry;
				continue;
			}
			if (now > deadline && now >= next_scan) {
				for (int r = 1; r < next; r++)
					if (overdue(c, r, now, deadline, cut, grace, retry, after))
						missing--, asked--;
				next_scan = now + RA_NS_PER_MS;
			}
			if (cut && now > deadline)
				break;
			usleep(100);
			continue;
		}
		owes = !c->peers[st.MPI_SOURCE].lost && !c->peers[st.MPI_SOURCE].got_records &&
		       c->peers[st.MPI_SOURCE].pulled_ns;
		if (RM_MPI(c, st.MPI_SOURCE, "from", MPI_Get_count, &st, MPI_BYTE, &len))
			continue;
		buf = malloc(len > 0 ? (size_t)len : 1);
		if (!buf)
			out_of_memory();
		if (RM_MPI(c, st.MPI_SOURCE, "from", MPI_Recv, buf, len, MPI_BYTE, st.MPI_SOURCE,
			   TAG_RECORDS, MPI_COMM_WORLD, MPI_STATUS_IGNORE)) {
			free(buf);
			continue;
		}
		if (owes) {
			take_records(c, st.MPI_SOURCE, buf, (size_t)len);
			missing--;
			asked--;
		}
		free(buf);
	}
	/* After a cut: who was asked and is silent, or was never asked. */
	for (int r = 1; r < c->size; r++)
		if (!c->peers[r].lost && !c->peers[r].got_records)
			lose_silent(c, r, cut, false, grace, retry, after);
	rm_window_nodes(c, nodes, n_nodes, NULL);
}

void rm_window_nodes(struct ctx *c, struct rm_node **nodes, size_t *n_nodes, const char *unknown)
{
	size_t k = 0;

	*nodes = calloc((size_t)c->size, sizeof(**nodes));
	if (!*nodes)
		out_of_memory();
	for (int r = 0; r < c->size; r++) {
		struct rm_peer *p = &c->peers[r];

		if (!p->worker || (!p->last.host[0] && !p->lost))
			continue;
		if (copy_node(&(*nodes)[k], &p->last))
			out_of_memory();
		(*nodes)[k].lost = p->lost || unknown;
		(*nodes)[k].lost_reason = p->lost   ? strdup(p->lost_reason)
					  : unknown ? strdup(unknown)
						    : NULL;
		if ((*nodes)[k].lost) {
			/* Its last records' clock figures are an earlier window's: unknown
			 * now. */
			(*nodes)[k].clock_known = false;
			(*nodes)[k].clock_applied = false;
			(*nodes)[k].boot_offset_ns = 0;
		}
		k++;
	}
	*n_nodes = k;
}

static bool no_ready(const struct rm_peer *p)
{
	return !p->got_ready;
}

/*
 * Rank 0: every live rank's READY until GRACE_READY_NS (rm_budget) after
 * the start, start_mono on CLOCK_MONOTONIC (its own is already in peers[0]);
 * a rank still silent then is late and has LATE_RETRY_NS (rm_budget) more
 * before it is lost. A READY is not asked for: the retry is the wait.
 */
void rm_collect_ready(struct ctx *c, uint64_t start_mono)
{
	uint64_t retry = rm_budget(c, LATE_RETRY_NS), grace = rm_budget(c, GRACE_READY_NS);
	uint64_t deadline = start_mono + grace;
	size_t missing = 0;
	bool retried = false;

	for (int r = 1; r < c->size; r++) {
		c->peers[r].got_ready = false;
		missing += !c->peers[r].lost;
	}
	while (missing) {
		MPI_Status st;
		struct rm_ready m;
		int flag = 0;
		bool owes;

		if (RM_MPI(c, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, TAG_READY, MPI_COMM_WORLD,
			   &flag, &st))
			flag = 0;
		if (!flag) {
			if (ra_monotonic_ns() > deadline && retried)
				break;
			if (ra_monotonic_ns() > deadline) {
				mark_late(c, no_ready, "word of its attaches", retry);
				deadline += retry;
				retried = true;
			}
			usleep(100);
			continue;
		}
		owes = !c->peers[st.MPI_SOURCE].lost && !c->peers[st.MPI_SOURCE].got_ready;
		if (RM_MPI(c, st.MPI_SOURCE, "from", MPI_Recv, &m, sizeof(m), MPI_BYTE,
			   st.MPI_SOURCE, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE)) {
			missing -= owes; /* lost now */
			continue;
		}
		if (!owes)
			continue;
		c->peers[st.MPI_SOURCE].ready = m;
		c->peers[st.MPI_SOURCE].got_ready = true;
		missing--;
	}
	for (int r = 1; r < c->size; r++)
		if (!c->peers[r].lost && !c->peers[r].got_ready)
			rm_mark_lost(c, r,
				     "its attaches not done within %.1f s after the start "
				     "(retried for %.1f s)",
				     (double)grace / 1e9, (double)retry / 1e9);
}

void rm_free_nodes(struct rm_node *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(nodes[i].t);
		free((char *)nodes[i].error);
		free((char *)nodes[i].lost_reason);
	}
	free(nodes);
}

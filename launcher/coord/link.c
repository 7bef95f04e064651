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
#include "ctx.h"

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
	if (peer >= 0 && peer == c->tree.parent)
		link_broken(c, msg);
	if (peer >= 0 && rm_kid_of(c, peer)) {
		rm_kid_lost(c, rm_kid_of(c, peer), "%s", msg);
		return -1;
	}
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

void rm_out_of_memory(void)
{
	fputs("rocattach-mpi: error: out of memory\n", stderr);
	MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	_exit(RM_EXIT_ERROR);
}

void rm_post(struct ctx *c, int dest, int tag, const void *data, size_t len)
{
	struct rm_outbox *o = &c->out;
	void *copy;

	rm_outbox_reap(c, false);
	if (c->rank == 0) {
		c->coord.sent++;
		c->coord.bytes_sent += len;
	}
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
			rm_out_of_memory();
		o->dest = to;
		o->cap = cap;
	}
	copy = malloc(len ? len : 1);
	if (!copy || len > INT32_MAX)
		rm_out_of_memory();
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

void rm_count_in(struct ctx *c, size_t len)
{
	if (c->rank != 0)
		return;
	c->coord.received++;
	c->coord.bytes_received += len;
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

void rm_lose_subtree(struct ctx *c, int r, const char *why)
{
	int k = c->tree.k;

	if (r <= 0 || r >= c->size)
		return;
	rm_mark_lost(c, r, "%s", why);
	/* Level by level: the subtree's ranks at each depth are one run. */
	for (long long lo = (long long)k * r + 1, hi = (long long)k * r + k; lo < c->size;
	     lo = k * lo + 1, hi = k * hi + k)
		for (long long a = lo; a <= hi && a < c->size; a++)
			rm_mark_lost(c, (int)a, "under rank %d, lost: %s", r, why);
}

void rm_cut_off(struct ctx *c, const char *waiting_for)
{
	int p = c->tree.parent;

	rn_detach_all(c->t, c->n, NULL);
	rm_rank_error(c,
		      "no %s from rank %d%s in time: rank %d is gone or this node is cut off "
		      "from it; detached this node's targets, ending (exit %d)",
		      waiting_for, p, p ? " (this rank's parent in the tree)" : "", p,
		      RM_EXIT_LOST);
	fflush(NULL);
	_exit(RM_EXIT_LOST);
}

uint64_t rm_budget(const struct ctx *c, uint64_t floor_ns)
{
	uint64_t scaled = c->rtt_worst_ns * RTT_BUDGET;

	return scaled > floor_ns ? scaled : floor_ns;
}

/* ------------------------------------------------------------------------ */
/* Records: each node's own, packed, and rank 0's view of them. */

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
	struct rm_clock clock;	  /* the node's clock against rank 0's, as composed down the tree */
	/*
	 * --detail below all: the records were cut here, and struct rm_node_sum
	 * (sum_size bytes, this binary's size of it) follows this head, before
	 * the records. 0: nothing cut, no block.
	 */
	uint64_t sum_size;
	uint64_t
	    order_rt_ns; /* this window's order reached this rank (its CLOCK_REALTIME), 0: none */
};

/*
 * This window's records as the order's level keeps them, and their block
 * into *sum; NULL (and nothing cut) at level all, in the survey, or when
 * the block cannot be made. Else malloc'd, *n of them.
 */
static struct rn_target *cut_records(struct ctx *c, struct rm_node_sum *sum, size_t *n)
{
	enum rm_detail d = (enum rm_detail)c->cut_level;
	struct rn_target *kept;

	if (!c->worker || (d != RM_DETAIL_FAILURES && d != RM_DETAIL_NONE))
		return NULL;
	if (rm_node_summary(c->t, c->n, d, c->frame_rt, sum))
		return NULL;
	kept = malloc((c->n - (size_t)sum->left_out + 1) * sizeof(*kept));
	if (!kept)
		return NULL;
	*n = 0;
	for (size_t k = 0; k < c->n; k++)
		if (rm_detail_keeps_target(d, &c->t[k]))
			kept[(*n)++] = c->t[k];
	return kept;
}

static int64_t boot_offset_ns(void)
{
	return (int64_t)(ra_realtime_ns() - ra_clock_ns(CLOCK_BOOTTIME));
}

void *rm_pack_records(struct ctx *c, size_t *len)
{
	struct rm_rec_head h = {.worker = c->worker,
				.clock = c->clock,
				.stops_sent = c->stops_sent,
				.gones_sent = c->gones_sent,
				.boot_offset_ns = boot_offset_ns(),
				.order_rt_ns = c->tree.order_t1};
	size_t n = c->worker ? c->n : 0, body, sum_size;
	size_t stacks = c->stacks.text ? strlen(c->stacks.text) : 0;
	size_t samples = c->stacks.samples ? strlen(c->stacks.samples) : 0;
	size_t timed = c->stacks.timed ? strlen(c->stacks.timed) : 0;
	struct rm_node_sum *sum = calloc(1, sizeof(*sum));
	struct rn_target *kept = sum ? cut_records(c, sum, &n) : NULL, *t = kept ? kept : c->t;
	char *buf, *at;

	if (!sum)
		rm_out_of_memory();
	sum_size = kept ? sizeof(*sum) : 0;
	body = rn_pack(c->host, t, n, NULL, 0);
	buf = malloc(sizeof(h) + sum_size + body + stacks + samples + timed);
	if (!buf)
		rm_out_of_memory();
	h.sum_size = sum_size;
	h.stacks_len = stacks;
	h.stacks_no_rank = c->stacks.no_rank;
	h.samples_len = samples;
	h.samples_missing = c->stacks.samples_missing;
	h.timed_len = timed;
	h.all_gone = c->watch && !rn_watch_alive(c->watch);
	memcpy(h.node_ns, c->node_ns, sizeof(h.node_ns));
	snprintf(h.error, sizeof(h.error), "%s", c->node_error);
	memcpy(buf, &h, sizeof(h));
	at = buf + sizeof(h);
	if (sum_size)
		memcpy(at, sum, sum_size);
	at += sum_size;
	rn_pack(c->host, t, n, at, body);
	at += body;
	if (stacks)
		memcpy(at, c->stacks.text, stacks);
	if (samples)
		memcpy(at + stacks, c->stacks.samples, samples);
	if (timed)
		memcpy(at + stacks + samples, c->stacks.timed, timed);
	*len = sizeof(h) + sum_size + body + stacks + samples + timed;
	free(kept);
	free(sum);
	return buf;
}

/* A window's copy of a node: its targets are shared where kept in the store. */
static int copy_node(struct rm_node *dst, const struct rm_node *src)
{
	struct rm_node_sum *sum = src->sum ? malloc(sizeof(*sum)) : NULL;

	*dst = *src;
	dst->t = src->n && !src->store ? malloc(src->n * sizeof(*src->t)) : NULL;
	dst->error = src->error ? strdup(src->error) : NULL;
	if (sum)
		*sum = *src->sum;
	dst->sum = sum;
	if ((src->n && !src->store && !dst->t) || (src->error && !dst->error) || (src->sum && !sum))
		return -1;
	if (src->n && !src->store)
		memcpy(dst->t, src->t, src->n * sizeof(*src->t));
	return 0;
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
			rm_out_of_memory();
	}
	if (h->timed_len && rm_timed_keep(&c->run, lines + h->stacks_len + h->samples_len,
					  h->timed_len, applied_ns))
		rm_out_of_memory();
	c->run.stacks_no_rank += h->stacks_no_rank;
	c->run.samples_missing += h->samples_missing;
}

/*
 * One rank's records into its peer entry (r's last known node). Its STOP
 * and GONE messages sent before them came up the same links first and were
 * taken (mpi_tree.c): every one is counted by then.
 */
void rm_take_records(struct ctx *c, int r, const char *buf, size_t len)
{
	struct rm_peer *p = &c->peers[r];
	struct rm_rec_head h;
	struct rm_node nd = {0};
	struct rm_node_sum *sum = NULL;
	size_t head;

	p->got_records = true;
	if (len < sizeof(h)) {
		rm_mark_lost(c, r, "its records are cut short (%zu bytes)", len);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	h.error[sizeof(h.error) - 1] = '\0';
	if (p->stops < h.stops_sent || p->gones < h.gones_sent)
		rm_say(c, "warning: rank %d's records came before %d of its STOP or GONE messages",
		       r, h.stops_sent - p->stops + h.gones_sent - p->gones);
	if (p->lost)
		return;
	p->worker = h.worker;
	p->all_gone = h.all_gone;
	for (int i = 0; i < 3; i++)
		if (h.node_ns[i] > c->worst_node_ns[i])
			c->worst_node_ns[i] = h.node_ns[i];
	if (!h.worker)
		return;
	if ((h.sum_size && h.sum_size != sizeof(*sum)) || h.sum_size > len - sizeof(h) ||
	    h.stacks_len > len - sizeof(h) - h.sum_size ||
	    h.samples_len > len - sizeof(h) - h.sum_size - h.stacks_len ||
	    h.timed_len > len - sizeof(h) - h.sum_size - h.stacks_len - h.samples_len) {
		rm_mark_lost(c, r, "its records are cut short or of another size (%zu bytes)", len);
		return;
	}
	len -= h.stacks_len + h.samples_len + h.timed_len;
	p->clock = h.clock;
	take_stacks(c, &h, buf + len, h.clock.applied_ns);
	head = sizeof(h) + h.sum_size;
	if (rm_take_node(buf + head, len - head, h.clock.applied_ns, &nd)) {
		rm_mark_lost(c, r, "its records do not unpack (%zu bytes)", len);
		return;
	}
	if (h.sum_size &&
	    (!(sum = malloc(sizeof(*sum))) || (memcpy(sum, buf + sizeof(h), sizeof(*sum)),
					       rm_take_sum(sum, h.clock.applied_ns, &nd)))) {
		rm_mark_lost(c, r, "its figures do not hold against its records (%zu bytes)", len);
		free(sum);
		free(nd.t);
		rm_node_sum_free(&nd);
		return;
	}
	free(sum);
	nd.error = h.error[0] ? strdup(h.error) : NULL;
	nd.boot_offset_ns = h.boot_offset_ns;
	/* In rank 0's clock, as the targets' times (rm_take_node). */
	nd.order_ns = h.order_rt_ns ? (uint64_t)((int64_t)h.order_rt_ns - h.clock.applied_ns) : 0;
	nd.clock_offset_ns = p->clock.offset_ns;
	nd.clock_rtt_ns = p->clock.rtt_ns;
	nd.clock_known = p->clock.known;
	nd.clock_bound_ns = p->clock.bound_ns;
	p->detached = rm_left_out(&nd); /* left out: clean, detached */
	for (size_t i = 0; i < nd.n; i++)
		p->detached += nd.t[i].state == RN_DETACHED;
	keep(c, &nd);
	free(p->last.t);
	free((char *)p->last.error);
	rm_node_sum_free(&p->last);
	p->last = nd;
}

void rm_window_nodes(struct ctx *c, struct rm_node **nodes, size_t *n_nodes, const char *unknown)
{
	size_t k = 0;

	*nodes = calloc((size_t)c->size, sizeof(**nodes));
	if (!*nodes)
		rm_out_of_memory();
	for (int r = 0; r < c->size; r++) {
		struct rm_peer *p = &c->peers[r];

		if (!p->worker || (!p->last.host[0] && !p->lost))
			continue;
		if (copy_node(&(*nodes)[k], &p->last))
			rm_out_of_memory();
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
			(*nodes)[k].order_ns = 0;
		}
		k++;
	}
	*n_nodes = k;
}

void rm_free_nodes(struct rm_node *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(nodes[i].t);
		free((char *)nodes[i].error);
		free((char *)nodes[i].lost_reason);
		rm_node_sum_free(&nodes[i]);
	}
	free(nodes);
}

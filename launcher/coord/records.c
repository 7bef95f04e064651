/* SPDX-License-Identifier: MIT */
/*
 * Records on the wire (roster.h): each node's own, packed on its rank, and
 * taken into rank 0's roster and store. One file owns the format both ways.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "roster.h"

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
static struct rn_target *cut_records(const struct rm_self *s, const struct rm_part *p,
				     struct rm_node_sum *sum, size_t *n)
{
	enum rm_detail d = (enum rm_detail)p->cut_level;
	struct rn_target *kept;

	if (!p->worker || (d != RM_DETAIL_FAILURES && d != RM_DETAIL_NONE))
		return NULL;
	if (rm_node_summary(s->t, s->n, d, p->frame_rt, sum))
		return NULL;
	kept = malloc((s->n - (size_t)sum->left_out + 1) * sizeof(*kept));
	if (!kept)
		return NULL;
	*n = 0;
	for (size_t k = 0; k < s->n; k++)
		if (rm_detail_keeps_target(d, &s->t[k]))
			kept[(*n)++] = s->t[k];
	return kept;
}

static int64_t boot_offset_ns(void)
{
	return (int64_t)(ra_realtime_ns() - ra_clock_ns(CLOCK_BOOTTIME));
}

void *rm_pack_records(const struct rm_self *s, const struct rm_part *p,
		      const struct rm_clock *clock, uint64_t order_rt, size_t *len)
{
	struct rm_rec_head h = {.worker = p->worker,
				.clock = *clock,
				.stops_sent = p->stops_sent,
				.gones_sent = p->gones_sent,
				.boot_offset_ns = boot_offset_ns(),
				.order_rt_ns = order_rt};
	size_t n = p->worker ? s->n : 0, body, sum_size;
	size_t stacks = p->stacks.text ? strlen(p->stacks.text) : 0;
	size_t samples = p->stacks.samples ? strlen(p->stacks.samples) : 0;
	size_t timed = p->stacks.timed ? strlen(p->stacks.timed) : 0;
	struct rm_node_sum *sum = calloc(1, sizeof(*sum));
	struct rn_target *kept = sum ? cut_records(s, p, sum, &n) : NULL, *t = kept ? kept : s->t;
	char *buf, *at;

	if (!sum)
		rm_out_of_memory();
	sum_size = kept ? sizeof(*sum) : 0;
	body = rn_pack(s->host, t, n, NULL, 0);
	buf = malloc(sizeof(h) + sum_size + body + stacks + samples + timed);
	if (!buf)
		rm_out_of_memory();
	h.sum_size = sum_size;
	h.stacks_len = stacks;
	h.stacks_no_rank = p->stacks.no_rank;
	h.samples_len = samples;
	h.samples_missing = p->stacks.samples_missing;
	h.timed_len = timed;
	h.all_gone = p->watch && !rn_watch_alive(p->watch);
	memcpy(h.node_ns, p->node_ns, sizeof(h.node_ns));
	snprintf(h.error, sizeof(h.error), "%s", p->node_error);
	memcpy(buf, &h, sizeof(h));
	at = buf + sizeof(h);
	if (sum_size)
		memcpy(at, sum, sum_size);
	at += sum_size;
	rn_pack(s->host, t, n, at, body);
	at += body;
	if (stacks)
		memcpy(at, p->stacks.text, stacks);
	if (samples)
		memcpy(at + stacks, p->stacks.samples, samples);
	if (timed)
		memcpy(at + stacks + samples, p->stacks.timed, timed);
	*len = sizeof(h) + sum_size + body + stacks + samples + timed;
	free(kept);
	free(sum);
	return buf;
}

/*
 * Into the store (launcher/report/store.c) at once: rank 0 holds one node's targets
 * at a time. If the store fails (its disk full), they stay in memory.
 */
static void keep(struct rm_roster *ro, struct rm_node *nd)
{
	char err[600];

	if (!ro->run.store || ro->store_full || !rm_store_put(ro->run.store, nd, err, sizeof(err)))
		return;
	rm_say(ro->self, "warning: %s; the records are kept in memory from now on", err);
	ro->store_full = true; /* what is in it stays readable */
}

/* --stacks and --sample: a node's folded lines (after its records) into rank 0's trees. */
static void take_stacks(struct rm_roster *ro, const struct rm_rec_head *h, const char *lines,
			int64_t applied_ns)
{
	if (h->stacks_len && ro->run.stacks)
		ro->run.stacks_refused += rm_stacks_merge(ro->run.stacks, lines, h->stacks_len);
	if (h->samples_len && ro->run.samples) {
		ro->run.samples_refused +=
		    rm_stacks_merge(ro->run.samples, lines + h->stacks_len, h->samples_len);
		if (rm_samples_keep(&ro->run, lines + h->stacks_len, h->samples_len))
			rm_out_of_memory();
	}
	if (h->timed_len && rm_timed_keep(&ro->run, lines + h->stacks_len + h->samples_len,
					  h->timed_len, applied_ns))
		rm_out_of_memory();
	ro->run.stacks_no_rank += h->stacks_no_rank;
	ro->run.samples_missing += h->samples_missing;
}

void rm_take_records(struct rm_roster *ro, int r, const char *buf, size_t len)
{
	struct rm_peer *p = &ro->peers[r];
	struct rm_rec_head h;
	struct rm_node nd = {0};
	struct rm_node_sum *sum = NULL;
	char why[256];
	size_t head;

	p->got_records = true;
	if (len < sizeof(h)) {
		rm_mark_lost(ro, r, "its records are cut short (%zu bytes)", len);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	h.error[sizeof(h.error) - 1] = '\0';
	if (p->stops < h.stops_sent || p->gones < h.gones_sent)
		rm_say(ro->self,
		       "warning: rank %d's records came before %d of its STOP or GONE messages", r,
		       h.stops_sent - p->stops + h.gones_sent - p->gones);
	if (p->lost)
		return;
	p->worker = h.worker;
	p->all_gone = h.all_gone;
	for (int i = 0; i < 3; i++)
		if (h.node_ns[i] > ro->worst_node_ns[i])
			ro->worst_node_ns[i] = h.node_ns[i];
	if (!h.worker)
		return;
	if ((h.sum_size && h.sum_size != sizeof(*sum)) || h.sum_size > len - sizeof(h) ||
	    h.stacks_len > len - sizeof(h) - h.sum_size ||
	    h.samples_len > len - sizeof(h) - h.sum_size - h.stacks_len ||
	    h.timed_len > len - sizeof(h) - h.sum_size - h.stacks_len - h.samples_len) {
		rm_mark_lost(ro, r, "its records are cut short or of another size (%zu bytes)",
			     len);
		return;
	}
	len -= h.stacks_len + h.samples_len + h.timed_len;
	p->clock = h.clock;
	take_stacks(ro, &h, buf + len, h.clock.applied_ns);
	head = sizeof(h) + h.sum_size;
	if (rm_take_node(buf + head, len - head, h.clock.applied_ns, &nd)) {
		rm_mark_lost(ro, r, "its records do not unpack (%zu bytes)", len);
		return;
	}
	if (h.sum_size && (!(sum = malloc(sizeof(*sum))) ||
			   (memcpy(sum, buf + sizeof(h), sizeof(*sum)),
			    rm_take_sum(sum, h.clock.applied_ns, &nd, why, sizeof(why))))) {
		rm_mark_lost(ro, r, "its figures do not hold against its records: %s",
			     sum ? why : "out of memory");
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
	p->detached = rm_node_detached(&nd, nd.t);
	keep(ro, &nd);
	free(p->last.t);
	free((char *)p->last.error);
	rm_node_sum_free(&p->last);
	p->last = nd;
}

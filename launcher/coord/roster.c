/* SPDX-License-Identifier: MIT */
/*
 * Rank 0's roster (roster.h): lost marks, and the nodes of a window as
 * rank 0 knows them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roster.h"

void rm_mark_lost(struct rm_roster *ro, int r, const char *fmt, ...)
{
	struct rm_peer *p = &ro->peers[r];
	va_list ap;

	if (p->lost)
		return;
	p->lost = true;
	ro->lost_count++;
	va_start(ap, fmt);
	vsnprintf(p->lost_reason, sizeof(p->lost_reason), fmt, ap);
	va_end(ap);
	rm_say(ro->self, "%s (rank %d) lost: %s", p->last.host[0] ? p->last.host : "a node", r,
	       p->lost_reason);
}

void rm_lose_subtree(struct rm_roster *ro, int r, const char *why)
{
	int k = ro->k, size = ro->self->size;

	if (r <= 0 || r >= size)
		return;
	rm_mark_lost(ro, r, "%s", why);
	/* Level by level: the subtree's ranks at each depth are one run. */
	for (long long lo = (long long)k * r + 1, hi = (long long)k * r + k; lo < size;
	     lo = k * lo + 1, hi = k * hi + k)
		for (long long a = lo; a <= hi && a < size; a++)
			rm_mark_lost(ro, (int)a, "under rank %d, lost: %s", r, why);
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

void rm_window_nodes(struct rm_roster *ro, struct rm_node **nodes, size_t *n_nodes,
		     const char *unknown)
{
	size_t k = 0;

	*nodes = calloc((size_t)ro->self->size, sizeof(**nodes));
	if (!*nodes)
		rm_out_of_memory();
	for (int r = 0; r < ro->self->size; r++) {
		struct rm_peer *p = &ro->peers[r];

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

void rm_roster_free(struct rm_roster *ro)
{
	for (size_t i = 0; i < ro->run.n_w; i++) {
		rm_free_nodes(ro->run.w[i].nodes, ro->run.w[i].n_nodes);
		free((char *)ro->run.w[i].stop_reason);
	}
	free(ro->run.w);
	for (int r = 0; ro->peers && r < ro->self->size; r++) {
		free(ro->peers[r].last.t);
		free((char *)ro->peers[r].last.error);
		rm_node_sum_free(&ro->peers[r].last);
	}
	free(ro->peers);
}

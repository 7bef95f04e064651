/* SPDX-License-Identifier: MIT */
/*
 * --late-start in the summary: per node, how many targets were started,
 * how many the SDK says initialized, how many failed or were refused, and
 * how many had a listener and were attached on the normal path (detached at
 * the window's end), or failed there (among those failed). A late start has no end: the tools stay
 * until each process exits. A node cut at --detail gives its block's counts.
 */
#include <stdio.h>

#include "report_int.h"

struct late_counts {
	size_t tried, started, initialized, failed, exited, listener, listener_failed;
};

/* A cut node: its block counts all its targets (it has no count of those that ended). */
static void count_block(const struct rm_node_sum *s, struct late_counts *c)
{
	c->tried = (size_t)s->ls_tried;
	c->started = (size_t)s->ls_ran;
	c->initialized = (size_t)s->ls_init;
	c->failed = (size_t)s->ls_failed;
	c->listener = (size_t)s->ls_listener;
	c->listener_failed = (size_t)s->ls_listener_failed;
}

/* An uncut node: the block's counts of its targets, and those that ended. */
static void count_late(const struct rn_target *t, size_t n, struct late_counts *c)
{
	struct rm_node_sum s = {0};

	if (!t)
		return;
	rm_late_sum(t, n, &s);
	count_block(&s, c);
	for (size_t k = 0; k < n; k++)
		c->exited += t[k].ls.tried && t[k].state == RN_EXITED;
}

static void print_node(FILE *f, const struct rm_node *n, const struct late_counts *c)
{
	fprintf(f, "  %s: %zu started, %zu initialized, %zu failed or refused", n->host, c->started,
		c->initialized, c->failed);
	if (c->exited)
		fprintf(f, ", %zu ended", c->exited);
	if (c->listener)
		fprintf(f,
			", %zu with a listener attached on the normal path (detached at the "
			"window's end)",
			c->listener);
	if (c->listener_failed)
		fprintf(f, ", %zu with a listener whose normal attach failed", c->listener_failed);
	if (rm_left_out(n))
		fprintf(f, ", %zu more not listed (--detail)", rm_left_out(n));
	fputc('\n', f);
}

void rm_print_late_starts(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = rm_last_window(r);
	struct rm_hold h = {0};
	bool any = false;

	for (size_t i = 0; w && i < w->n_nodes; i++) {
		const struct rm_node *n = &w->nodes[i];
		struct late_counts c = {0};

		if (n->lost)
			continue;
		if (n->cut)
			count_block(n->sum, &c);
		else
			count_late(rm_targets(n, &h), n->n, &c);
		if (!c.tried)
			continue;
		if (!any)
			fprintf(f, "late start (the tools stay in each started process until it "
				   "exits; no detach):\n");
		any = true;
		print_node(f, n, &c);
	}
	rm_hold_free(&h);
}

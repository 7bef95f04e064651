/* SPDX-License-Identifier: MIT */
/*
 * --late-start in the summary: per node, how many targets were started,
 * how many the SDK says initialized, and how many failed or were refused.
 * A late start has no end: the tools stay until each process exits.
 */
#include <stdio.h>

#include "report_int.h"

struct late_counts {
	size_t tried, started, initialized, failed, exited;
};

static void count_late(const struct rn_target *t, size_t n, struct late_counts *c)
{
	for (size_t k = 0; t && k < n; k++) {
		if (!t[k].ls.tried)
			continue;
		c->tried++;
		c->started += t[k].ls.route == ROCATTACH_LATE_STARTED ||
			      t[k].ls.route == ROCATTACH_LATE_FAILED;
		c->initialized += t[k].state == RN_LATE_STARTED;
		c->exited += t[k].state == RN_EXITED;
		c->failed += rm_failed(&t[k]);
	}
}

void rm_print_late_starts(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = rm_last_window(r);
	struct rm_hold h = {0};
	bool any = false;

	for (size_t i = 0; w && i < w->n_nodes; i++) {
		const struct rm_node *n = &w->nodes[i];
		const struct rn_target *t = n->lost ? NULL : rm_targets(n, &h);
		struct late_counts c = {0};

		count_late(t, n->n, &c);
		if (!c.tried)
			continue;
		if (!any)
			fprintf(f, "late start (the tools stay in each started process until it "
				   "exits; no detach):\n");
		any = true;
		fprintf(f, "  %s: %zu started, %zu initialized, %zu failed or refused", n->host,
			c.started, c.initialized, c.failed);
		if (c.exited)
			fprintf(f, ", %zu ended", c.exited);
		if (rm_left_out(n))
			fprintf(f, ", %zu more not listed (--detail)", rm_left_out(n));
		fputc('\n', f);
	}
	rm_hold_free(&h);
}

/* SPDX-License-Identifier: MIT */
/*
 * What rank 0 prints: the summary table at the end of a run (a row per
 * node, a line per window, the failures) and the --dry-run listing.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/toollist.h"
#include "report_int.h"

/* "-": nothing measured; "unknown": a span no window can have (a clock gone wrong). */
static void fmt_ms(uint64_t ns, bool known, char *buf, size_t len)
{
	if (!known)
		snprintf(buf, len, "-");
	else if (ns > RM_LONGEST_WINDOW_NS)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%.3fms", (double)ns / NS_PER_MS);
}

/* A span in ms with prec decimals, or "unknown" (see fmt_ms). */
static void put_ms(FILE *f, uint64_t ns, int prec)
{
	if (ns > RM_LONGEST_WINDOW_NS)
		fputs("unknown", f);
	else
		fprintf(f, "%.*f ms", prec, (double)ns / NS_PER_MS);
}

/* Counts are sums of counts: never negative, and never printed so. */
static long long count_of(long long n)
{
	return n < 0 ? 0 : n;
}

void rm_progress_attached(char *buf, size_t len, int w, long long attached, size_t total,
			  uint64_t since, uint64_t now)
{
	int64_t d = ra_ns_span(now, since, RM_LONGEST_WINDOW_NS);
	int k = snprintf(buf, len, "window %d: attached %lld/%zu targets", w, count_of(attached),
			 total);

	if (k < 0 || (size_t)k >= len)
		return;
	if (ra_ns_known(d))
		snprintf(buf + k, len - (size_t)k, " (%.1f ms)", (double)d / NS_PER_MS);
	else
		snprintf(buf + k, len - (size_t)k, " (time unknown)");
}

void rm_progress_detached(char *buf, size_t len, int w, long long detached, size_t total,
			  uint64_t stop_ns, uint64_t now)
{
	int64_t d = ra_ns_diff(now, stop_ns);

	if (ra_ns_known(d) && (d < 0 ? -(uint64_t)d : (uint64_t)d) > RM_LONGEST_WINDOW_NS)
		d = RA_NS_UNKNOWN;
	int k = snprintf(buf, len, "window %d: detached %lld/%zu targets", w, count_of(detached),
			 total);

	if (k < 0 || (size_t)k >= len)
		return;
	if (!ra_ns_known(d))
		snprintf(buf + k, len - (size_t)k, " (time unknown)");
	else
		snprintf(buf + k, len - (size_t)k, " (%.1f ms %s the stop)",
			 (double)(d < 0 ? -d : d) / NS_PER_MS, d < 0 ? "before" : "after");
}

/* Text from other hosts and processes on a terminal: no control characters. */
static void put_text(FILE *f, const char *s, size_t width)
{
	size_t len = strnlen(s, width), i;

	for (i = 0; i < len; i++)
		fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i], f);
}

/* s in exactly width columns: padded, or cut with a '~'. */
static void put_col(FILE *f, const char *s, size_t max, int width)
{
	int len = (int)strnlen(s, max);

	if (len > width) {
		put_text(f, s, (size_t)width - 1);
		fputc('~', f);
		return;
	}
	put_text(f, s, (size_t)len);
	fprintf(f, "%*s", width - len, "");
}

/* The host column: as wide as the longest host, within 15..32. */
static int host_width(const struct rm_node *nodes, size_t n_nodes)
{
	size_t i, w = 15, len;

	for (i = 0; i < n_nodes; i++) {
		len = strnlen(nodes[i].host, sizeof(nodes[i].host));
		if (len > w)
			w = len;
	}
	return w > 32 ? 32 : (int)w;
}

static void print_headline(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = rm_last_window(r);
	struct rm_counts c = rm_count_window(w);
	size_t other = c.found - c.detached - c.failed - c.exited - c.died - c.lost - c.unreadable -
		       c.declined - c.late_started;

	if (!w)
		fprintf(f, "rocattach-mpi: no window ran");
	else
		fprintf(f, "rocattach-mpi: %zu node%s, %zu target%s", w->n_nodes,
			w->n_nodes == 1 ? "" : "s", c.found, c.found == 1 ? "" : "s");
	if (r->n_w > 1)
		fprintf(f, ", %zu windows", r->n_w);
	/* One that completed its windows, then exited, was attached and detached. */
	if (c.found)
		fprintf(f, ": %zu attached and detached", c.detached + c.exited_after);
	if (c.found && c.exited_after)
		fprintf(f, " (%zu exited after)", c.exited_after);
	if (c.found)
		fprintf(f, ", %zu failed", c.failed);
	/* The node rows count these as attached: the headline says where they are. */
	if (c.partial)
		fprintf(f,
			" (%zu of them attached and detached, with a library of the tool list "
			"failed)",
			c.partial);
	if (c.late_started)
		fprintf(f, ", %zu late-started (the tools stay until each exits)", c.late_started);
	/* Every tool declined there: no failure, and not attached. */
	if (c.declined)
		fprintf(f, ", declined on %zu", c.declined);
	if (c.exited > c.exited_after)
		fprintf(f, ", %zu exited", c.exited - c.exited_after);
	if (c.died)
		fprintf(f, ", %zu died with tools attached", c.died);
	if (c.lost_nodes)
		fprintf(f, ", %zu node%s lost (%zu target%s, last known)", c.lost_nodes,
			c.lost_nodes == 1 ? "" : "s", c.lost, c.lost == 1 ? "" : "s");
	if (c.unreadable_nodes)
		fprintf(f, ", %zu node%s unreadable (%zu target%s, not counted)",
			c.unreadable_nodes, c.unreadable_nodes == 1 ? "" : "s", c.unreadable,
			c.unreadable == 1 ? "" : "s");
	if (c.found && other)
		fprintf(f, ", %zu not completed", other);
	fprintf(f, " (exit %d%s%s)\n", r->exit_code, r->exit_reason ? ": " : "",
		r->exit_reason ? r->exit_reason : "");
}

static void print_node_row(FILE *f, const struct rm_node *n, uint64_t since, int hw,
			   struct rm_hold *h)
{
	const struct rn_target *t = n->lost ? NULL : rm_targets(n, h);
	struct rm_spread a = rm_node_attach_spread(n, t, since);
	struct rm_counts c = {0};
	char p50s[32], maxs[32], skews[32];
	uint64_t p50, max;

	put_col(f, n->host, sizeof(n->host), hw);
	if (n->lost) { /* nothing measured: its line after the table says why */
		fprintf(f, " %5zu %8s %6s %6s %11s %11s %11s\n", rm_found(n), "lost", "-", "-", "-",
			"-", "-");
		return;
	}
	if (!rm_found(n)) {
		fprintf(f, " %5d  %s%s\n", 0, n->error ? "selection failed: " : "no targets found",
			n->error ? n->error : "");
		return;
	}
	if (!t && n->n) {
		fprintf(f, " %5zu  its records could not be read back\n", n->n);
		return;
	}
	rm_count_node(n, t, &c);
	rm_node_times(n, t, since, &p50, &max);
	fmt_ms(p50, a.n, p50s, sizeof(p50s));
	fmt_ms(max, a.n, maxs, sizeof(maxs));
	fmt_ms(rm_spread_ns(&a), a.n, skews, sizeof(skews));
	fprintf(f, " %5zu %8zu %6zu %6zu %11s %11s %11s\n", c.found, c.attached, c.failed, c.exited,
		p50s, maxs, skews);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * A group's row: its outcome and size, the sums of its nodes' counts, the
 * median of their attach p50s, the largest attach max, and the start skew
 * over all their targets; then its hosts as a hostlist.
 */
static void print_group_row(FILE *f, const struct rm_window *w, const struct rm_grouping *g,
			    enum rm_outcome o, int hw, struct rm_hold *h)
{
	uint64_t *p50s = calloc(g->members[o], sizeof(*p50s)), p50, max, top = 0;
	char label[64], p50str[32], maxs[32], skews[32], *hosts;
	struct rm_spread a = {0}, na;
	struct rm_counts c = {0};
	size_t m = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct rm_node *n = &w->nodes[i];
		const struct rn_target *t;

		if (g->alone[i] || g->outcome[i] != o)
			continue;
		t = n->lost ? NULL : rm_targets(n, h);
		rm_count_node(n, t, &c);
		na = rm_node_attach_spread(n, t, w->start_ns);
		if (!na.n)
			continue;
		rm_spread_add(&a, na.lo);
		rm_spread_add(&a, na.hi);
		rm_node_times(n, t, w->start_ns, &p50, &max);
		if (p50s)
			p50s[m++] = p50;
		top = max > top ? max : top;
	}
	if (m)
		qsort(p50s, m, sizeof(*p50s), cmp_u64);
	snprintf(label, sizeof(label), "%s (%zu nodes)", rm_outcome_name(o), g->members[o]);
	put_col(f, label, sizeof(label), hw);
	if (o == RM_OUT_LOST)
		fprintf(f, " %5zu %8s %6s %6s %11s %11s %11s\n", c.found, "lost", "-", "-", "-",
			"-", "-");
	else if (o == RM_OUT_EMPTY)
		fprintf(f, " %5d  no targets found\n", 0);
	else if (o == RM_OUT_UNREADABLE)
		fprintf(f, " %5zu  their records could not be read back\n", c.found);
	else {
		fmt_ms(m ? p50s[m / 2] : 0, m, p50str, sizeof(p50str));
		fmt_ms(top, m, maxs, sizeof(maxs));
		fmt_ms(rm_spread_ns(&a), a.n, skews, sizeof(skews));
		fprintf(f, " %5zu %8zu %6zu %6zu %11s %11s %11s\n", c.found, c.attached, c.failed,
			c.exited, p50str, maxs, skews);
	}
	free(p50s);
	hosts = rm_group_hosts(w, g, o, 200);
	fputs("  hosts: ", f);
	put_text(f, hosts ? hosts : "(out of memory)", (size_t)-1);
	fputc('\n', f);
	free(hosts);
}

/* A window's length, or in words why there is none. */
static void put_length(FILE *f, const struct rm_window *w)
{
	int64_t d = rm_window_length_ns(w);

	if (ra_ns_known(d))
		fprintf(f, "%.1f ms", (double)d / NS_PER_MS);
	else
		fprintf(f, "length %s", rm_window_length_why(w));
}

/* How many targets' tools started late, and by how much (rm_late). */
static void print_late(FILE *f, const struct rm_window *w)
{
	struct rm_late l = rm_window_late(w);

	if (!l.n && !l.unknown)
		return;
	fprintf(f, "  LATE: %zu of %zu %s tools started after the start + %.1f ms", l.n, l.of,
		l.of == 1 ? "target's" : "targets'", (double)l.tolerance_ns / NS_PER_MS);
	if (l.unknown)
		fprintf(f, " (%zu more may have: records cut)", l.unknown);
	/* put_ms: a span no window can have (a clock gone wrong) is "unknown". */
	fputs(": late by p50 ", f);
	if (l.n && l.p50_known)
		put_ms(f, l.p50_ns, 1);
	else
		fputs("unknown", f);
	fputs(", max ", f);
	put_ms(f, l.max_ns, 1);
	fputs(l.bound ? " (at least: from ROCm's calls' starts)" : "", f);
	if (w->lead_why[0]) {
		fputs("; lead was ", f);
		put_ms(f, w->lead_ns, 1);
	}
	fputc('\n', f);
}

static void print_window_line(FILE *f, const struct rm_window *w)
{
	struct rm_skew s = rm_window_skew(w);
	struct rm_counts c = rm_count_window(w);
	size_t lost = 0;
	char start[40];

	for (size_t i = 0; i < w->n_nodes; i++) /* flags only: no target need be read */
		lost += w->nodes[i].lost;

	rm_fmt_time(w->start_ns, start, sizeof(start));
	fprintf(f, "window %d: start %s, ", w->index, start);
	put_length(f, w);
	fprintf(f, ", stop reason %s, ", w->stop_reason ? w->stop_reason : "-");
	if (!s.n && lost && lost == w->n_nodes) {
		/* Nothing was gathered (a provisional report): not known to have none. */
		fprintf(f, "attaches not known (%zu node%s lost)\n", lost, lost == 1 ? "" : "s");
		return;
	}
	if (!s.n) {
		/* A late start attaches nothing: its own lines follow (summary_late.c). */
		fprintf(f, "%s",
			w->stop_reason && !strcmp(w->stop_reason, "late starts done")
			    ? "nothing attached or detached (late starts)"
			    : "no target attached");
		if (lost)
			fprintf(f, " (%zu node%s lost)", lost, lost == 1 ? "" : "s");
		fputc('\n', f);
		return;
	}
	fputs("attach skew ", f);
	put_ms(f, s.attach_ns, 3);
	/* Each skew is over its own targets: the attached, and of them the detached. */
	if (s.n_detach != s.n)
		fprintf(f, " (%zu target%s)", s.n, s.n == 1 ? "" : "s");
	fputs(", detach skew ", f);
	if (s.n_detach)
		put_ms(f, s.detach_ns, 3);
	else
		fputs("-", f);
	if (s.n_detach != s.n)
		fprintf(f, " (%zu detached", s.n_detach);
	else
		fprintf(f, " (%zu target%s", s.n, s.n == 1 ? "" : "s");
	if (s.estimate)
		fprintf(f, ", an estimate: %zu call start%s unknown", s.estimate,
			s.estimate == 1 ? "" : "s");
	else if (s.bounds)
		fprintf(f, ", a bound: %zu from their calls' start and end", s.bounds);
	if (lost)
		fprintf(f, ", %zu node%s lost", lost, lost == 1 ? "" : "s");
	fputs(")\n", f);
	if (c.late)
		fprintf(f,
			"  %zu target%s late: attach returned after the stop, detached at once\n",
			c.late, c.late == 1 ? "" : "s");
	print_late(f, w);
	if (!s.n_len)
		return;
	if (s.len_max_ns > RM_LONGEST_WINDOW_NS)
		fputs("  tools' window unknown", f);
	else
		fprintf(f, "  tools' window %.1f-%.1f ms", (double)s.len_min_ns / NS_PER_MS,
			(double)s.len_max_ns / NS_PER_MS);
	fprintf(f, "%s%s\n", s.bounds ? " (at least, where bounds)" : "",
		s.len_off ? ": OFF the planned length by more than 1% + 5 ms" : "");
}

/*
 * ROCm's side has no watchdog of its own; a target that did not get ours
 * (librocattach-watchdog missing or not loadable: warned at its attach) is
 * said once per run, since a launcher killed by SIGKILL leaves its tools
 * attached until it exits.
 */
static void print_no_watchdog(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = rm_last_window(r);
	struct {
		size_t node;
		pid_t pid;
	} first[16];
	size_t i, k, n = 0, shown = 0, unnamed = 0;
	const struct rn_target *t;
	struct rm_hold h = {0};

	/* One read of each node: counted, and the first 16 kept to name. */
	for (i = 0; w && i < w->n_nodes; i++) {
		/* Those a node left out are counted, not named. */
		unnamed += w->nodes[i].cut ? (size_t)w->nodes[i].sum->unwatched_left : 0;
		t = rm_targets(&w->nodes[i], &h);
		for (k = 0; t && k < w->nodes[i].n; k++) {
			if (t[k].side != ROCATTACH_SIDE_ROCM || t[k].watchdog)
				continue;
			if (n < sizeof(first) / sizeof(first[0]))
				first[n].node = i, first[n].pid = t[k].pid;
			n++;
		}
	}
	rm_hold_free(&h);
	if (!n && !unnamed)
		return;
	fprintf(f,
		"note: %zu target%s run%s ROCm's target side without a watchdog: if this "
		"launcher is killed with SIGKILL, their tools stay attached until they exit "
		"(every other signal detaches them):",
		n + unnamed, n + unnamed == 1 ? "" : "s", n + unnamed == 1 ? "s" : "");
	for (; shown < n && shown < sizeof(first) / sizeof(first[0]); shown++) {
		const struct rm_node *nd = &w->nodes[first[shown].node];

		fputc(' ', f);
		put_text(f, nd->host, sizeof(nd->host));
		fprintf(f, ":%d%s", (int)first[shown].pid, nd->lost ? " (last known)" : "");
	}
	fprintf(f, "%s", n > shown ? " ..." : "");
	if (unnamed)
		fprintf(f, " (%zu not named: their records were left out on their nodes)", unnamed);
	fputc('\n', f);
}

/* A target as "pid 12 rank 3 (exe)". */
static void put_target(FILE *f, const struct rn_target *t)
{
	fprintf(f, "pid %d", (int)t->pid);
	if (t->rank >= 0)
		fprintf(f, " rank %ld", t->rank);
	fputs(" (", f);
	put_text(f, t->exe, sizeof(t->exe));
	fputc(')', f);
}

/*
 * "node HOST lost in window W: REASON", once per loss (the first window of
 * a run of windows that lost it), with its last known targets.
 */
static void print_lost(FILE *f, const struct rm_run *r, size_t limit)
{
	const struct rm_node *n, *p;
	const struct rn_target *t;
	struct rm_hold h = {0};
	size_t wi, ni, k, shown = 0, more = 0;

	for (wi = 0; wi < r->n_w; wi++) {
		for (ni = 0; ni < r->w[wi].n_nodes; ni++) {
			n = &r->w[wi].nodes[ni];
			p = wi ? rm_find_node(&r->w[wi - 1], ni, n->host) : NULL;
			if (!n->lost || (p && p->lost))
				continue;
			if (shown++ >= limit) {
				more++;
				continue;
			}
			fputs("node ", f);
			put_text(f, n->host, sizeof(n->host));
			fprintf(f, " lost in window %d: ", r->w[wi].index);
			put_text(f, rm_lost_reason(n), (size_t)-1);
			fputc('\n', f);
			t = rm_targets(n, &h);
			for (k = 0; t && k < n->n && k < 16; k++) {
				fputs(k ? ", " : "  its targets (last known): ", f);
				put_target(f, &t[k]);
			}
			if (n->n && t)
				fprintf(f, "%s\n", n->n > k ? ", ..." : "");
		}
	}
	rm_hold_free(&h);
	if (more)
		fprintf(f, "... and %zu more node%s lost (in the report)\n", more,
			more == 1 ? "" : "s");
}

/*
 * One line for each library of the tool list that declined or failed on a
 * target of the last window: on how many it loaded, declined, failed, or
 * could not be told apart (ROCm's side tells no more than "loaded or
 * declined").
 */
static void print_tool_outcomes(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = rm_last_window(r);
	size_t count[RN_TOOLS_MAX][ROCATTACH_TOOL_FAILED + 1] = {{0}}, i, k, n_tools = 0;
	const struct rn_target *t;
	struct ra_toollist tl = {0};
	struct rm_hold h = {0};

	for (i = 0; w && i < w->n_nodes; i++) {
		/* A node that cut its records counted those it left out. */
		for (size_t j = 0; w->nodes[i].cut && !w->nodes[i].lost && j < RM_SUM_TOOLS; j++)
			for (size_t o = 0; o <= ROCATTACH_TOOL_FAILED; o++) {
				count[j][o] += w->nodes[i].sum->tools_left[j][o];
				if (w->nodes[i].sum->tools_left[j][o])
					n_tools = j + 1 > n_tools ? j + 1 : n_tools;
			}
		t = w->nodes[i].lost ? NULL : rm_targets(&w->nodes[i], &h);
		for (k = 0; t && k < w->nodes[i].n; k++)
			for (size_t j = 0; j < t[k].tool_n && j < RN_TOOLS_MAX; j++) {
				count[j]
				     [t[k].tools[j] <= ROCATTACH_TOOL_FAILED ? t[k].tools[j] : 0]++;
				n_tools = j + 1 > n_tools ? j + 1 : n_tools;
			}
	}
	rm_hold_free(&h);
	/* The outcomes follow the list as the agent split it: the same parser. */
	if (n_tools && (!r->cfg.tools || ra_toollist_parse(r->cfg.tools, &tl)))
		tl.n = 0;
	for (i = 0; i < n_tools; i++) {
		const size_t *c = count[i];

		if (!c[ROCATTACH_TOOL_DECLINED] && !c[ROCATTACH_TOOL_FAILED])
			continue;
		if (i < tl.n)
			fprintf(f, "tool %s: ", tl.v[i]);
		else
			fprintf(f, "tool %zu of the list: ", i + 1);
		fprintf(f, "loaded on %zu, declined on %zu, failed on %zu",
			c[ROCATTACH_TOOL_LOADED], c[ROCATTACH_TOOL_DECLINED],
			c[ROCATTACH_TOOL_FAILED]);
		if (c[ROCATTACH_TOOL_UNKNOWN])
			fprintf(f, ", loaded or declined on %zu (ROCm's side does not tell)",
				c[ROCATTACH_TOOL_UNKNOWN]);
		fputs(" targets\n", f);
	}
	ra_toollist_free(&tl);
}

/* The window in which a target seen gone at ns died: the last one begun by then. */
static const struct rm_window *window_at(const struct rm_run *r, uint64_t ns)
{
	const struct rm_window *w = rm_last_window(r);

	for (size_t i = 0; i < r->n_w; i++)
		if (r->w[i].start_ns && r->w[i].start_ns <= ns)
			w = &r->w[i];
	return w;
}

static void put_after(FILE *f, const struct rm_run *r, uint64_t ns)
{
	const struct rm_window *w = window_at(r, ns);

	if (ns && w && w->start_ns && ns >= w->start_ns)
		fprintf(f, "%.1f s after the start of window %d", (double)(ns - w->start_ns) / 1e9,
			w->index);
	else
		fputs("at an unknown time", f);
}

/* Failures a node left out (--detail none): counted from its block, not named. */
static void print_failures_left_out(FILE *f, const struct rm_run *r)
{
	size_t n = rm_failures_left_out(r);

	if (n)
		fprintf(f,
			"%zu failure%s not named: %s records were left out on %s nodes (--detail "
			"none)\n",
			n, n == 1 ? "" : "s", n == 1 ? "its" : "their", n == 1 ? "its" : "their");
}

/*
 * Targets that died with their tools in them (apart from the exits: their
 * tools never got them back), each with when it was seen gone; and, when
 * no target lived on, one plain line saying so.
 */
static void print_died(FILE *f, const struct rm_run *r, size_t limit)
{
	const struct rm_window *w = rm_last_window(r);
	uint64_t first, last;
	size_t lived, died = rm_died_attached(r, &lived, &first, &last);
	const struct rn_target *t;
	struct rm_hold h = {0};
	size_t shown = 0, recorded = 0;

	if (!died)
		return;
	fputs("died with their tools attached:\n", f);
	for (size_t i = 0; i < w->n_nodes; i++) {
		if (w->nodes[i].lost || !(t = rm_targets(&w->nodes[i], &h)))
			continue;
		for (size_t k = 0; k < w->nodes[i].n; k++) {
			recorded += t[k].state == RN_DIED_ATTACHED;
			if (t[k].state != RN_DIED_ATTACHED || shown++ >= limit)
				continue;
			fputs("  ", f);
			put_text(f, w->nodes[i].host, sizeof(w->nodes[i].host));
			fputc(' ', f);
			put_target(f, &t[k]);
			fputs(": seen gone ", f);
			put_after(f, r, t[k].died_ns);
			fputc('\n', f);
		}
	}
	rm_hold_free(&h);
	shown = shown < limit ? shown : limit;
	if (recorded > shown)
		fprintf(f, "  ... and %zu more (in the report)\n", recorded - shown);
	if (died > recorded)
		fprintf(f, "  %zu%s not named: their records were left out on their nodes\n",
			died - recorded, recorded ? " more" : "");
	if (lived)
		return;
	fprintf(f, "all %zu target%s died while attached: ", died, died == 1 ? "" : "s");
	put_after(f, r, first);
	if (last > first + 100000000u) {
		fputs(" to ", f);
		put_after(f, r, last);
	}
	fputc('\n', f);
}

struct failure_out {
	FILE *f;
	bool windows; /* name the window: there was more than one */
	bool any;
	size_t shown, limit, more;
};

static int print_failure(const struct rm_window *w, const struct rm_node *n,
			 const struct rn_target *t, void *arg)
{
	struct failure_out *o = arg;
	char why[800];

	if (!o->any)
		fputs("failures:\n", o->f);
	o->any = true;
	if (o->shown >= o->limit) {
		o->more++;
		return 0;
	}
	o->shown++;
	fputs("  ", o->f);
	put_text(o->f, n->host, sizeof(n->host));
	if (!t) {
		rm_unreadable_reason(n, why, sizeof(why));
		if (o->windows)
			fprintf(o->f, ", window %d", w->index);
		fputs(": records unreadable: ", o->f);
		put_text(o->f, why, sizeof(why));
		fputc('\n', o->f);
		return 0;
	}
	fputc(' ', o->f);
	put_target(o->f, t);
	if (o->windows)
		fprintf(o->f, ", window %d", w->index);
	/* Attached, but a library of the list failed: the tool failed, not the attach. */
	fprintf(o->f, ": %s: ",
		t->state == RN_ATTACH_FAILED || t->state == RN_DETACH_FAILED ||
			!rn_some_tool_failed(t)
		    ? rn_state_name(t->state)
		    : "tool failed");
	if (t->message[0])
		put_text(o->f, t->message, sizeof(t->message));
	else
		fputs("(no message)", o->f);
	fputc('\n', o->f);
	return 0;
}

/*
 * Rows are the nodes of the last window: the same targets, gathered last; a
 * lost node's row has its last known count and its own line after the table.
 * Above RM_GROUP_ABOVE nodes, the clean ones are one row (and a line of
 * their hosts), the others alone up to RM_GROUP_ALONE then grouped by
 * outcome, and the lists after the table (lost nodes, failures, deaths)
 * stop after RM_GROUP_ALONE with how many more: the report has them all.
 */
void rm_print_summary(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = rm_last_window(r);
	struct failure_out fo = {.f = f, .windows = r->n_w > 1, .limit = (size_t)-1};
	struct rm_grouping g = {0};
	struct rm_hold h = {0};
	bool grouped = false;
	char why[512];
	size_t i;
	int hw;

	print_headline(f, r);
	if (w && w->n_nodes) {
		/* Out of memory for the groups: a row per node, as always. */
		grouped = !rm_group_nodes(w, &g) && g.grouped;
		hw = host_width(w->nodes, w->n_nodes);
		if (grouped && hw < 26) /* "unreadable (10000 nodes)" */
			hw = 26;
		fprintf(f,
			"%-*s found attached failed exited  attach p50  attach max  start skew\n",
			hw, "node");
		for (int o = 0; grouped && o < RM_OUT_N; o++)
			if (g.members[o])
				print_group_row(f, w, &g, (enum rm_outcome)o, hw, &h);
		for (i = 0; i < w->n_nodes; i++)
			if (!grouped || g.alone[i])
				print_node_row(f, &w->nodes[i], w->start_ns, hw, &h);
		rm_hold_free(&h);
		rm_grouping_free(&g);
	}
	fo.limit = grouped ? RM_GROUP_ALONE : (size_t)-1;
	print_lost(f, r, fo.limit);
	for (i = 0; i < r->n_w; i++)
		print_window_line(f, &r->w[i]);
	print_no_watchdog(f, r);
	print_tool_outcomes(f, r);
	rm_print_late_starts(f, r);
	rm_for_each_failure(r, print_failure, &fo);
	if (fo.more)
		fprintf(
		    f, "  ... and %zu more failure%s (listed in the report unless --detail none)\n",
		    fo.more, fo.more == 1 ? "" : "s");
	print_failures_left_out(f, r);
	print_died(f, r, fo.limit);
	if (rm_store_check(r->store, why, sizeof(why)))
		fprintf(f, "this summary is incomplete: %s\n", why);
	fflush(f);
}

static void print_dry_target(FILE *f, const struct rn_target *t)
{
	char pid[32], rank[24];

	if (t->nspid && t->nspid != t->pid)
		snprintf(pid, sizeof(pid), "%d (%d)", (int)t->pid, (int)t->nspid);
	else
		snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	if (t->rank >= 0)
		snprintf(rank, sizeof(rank), "%ld", t->rank);
	else
		snprintf(rank, sizeof(rank), "-");
	fprintf(f, "  %-15s %6s %6u  ", pid, rank, (unsigned)t->uid);
	put_col(f, t->exe, sizeof(t->exe), 16);
	fputc(' ', f);
	put_col(f, t->job[0] ? t->job : "-", sizeof(t->job), 24);
	fprintf(f, " %-8s  ",
		!t->listener			  ? "no"
		: t->side == ROCATTACH_SIDE_ROCM  ? "rocm"
		: t->side == ROCATTACH_SIDE_AGENT ? "agent"
						  : "yes");
	put_col(f, t->topo.cpus[0] ? t->topo.cpus : "-", sizeof(t->topo.cpus), 13);
	fputc(' ', f);
	put_col(f, t->topo.numa[0] ? t->topo.numa : "-", sizeof(t->topo.numa), 5);
	fputc(' ', f);
	put_text(f, t->topo.gpus[0] ? t->topo.gpus : "-", sizeof(t->topo.gpus));
	fputc('\n', f);
}

/* A lost node's processes (last known, if any) are listed; it attaches nothing. */
void rm_print_dry_run(FILE *f, const struct rm_node *nodes, size_t n_nodes)
{
	size_t i, k, total = 0, lost = 0;
	const struct rn_target *t;
	struct rm_hold h = {0};

	for (i = 0; i < n_nodes; i++) {
		put_text(f, nodes[i].host, sizeof(nodes[i].host));
		if (nodes[i].lost) {
			fputs(": lost: ", f);
			put_text(f, rm_lost_reason(&nodes[i]), (size_t)-1);
			fprintf(f, "; %zu process%s (last known)\n", nodes[i].n,
				nodes[i].n == 1 ? "" : "es");
			lost++;
		} else {
			fprintf(f, ": %zu process%s\n", nodes[i].n, nodes[i].n == 1 ? "" : "es");
		}
		if (!nodes[i].n) {
			if (!nodes[i].lost)
				fputs("  (no matching processes)\n", f);
			continue;
		}
		fprintf(f, "  %-15s %6s %6s  %-16s %-24s %-8s  %-13s %-5s %s\n", "pid (nspid)",
			"rank", "uid", "exe", "job", "listener", "cpus", "numa", "gpus");
		t = rm_targets(&nodes[i], &h);
		for (k = 0; t && k < nodes[i].n; k++)
			print_dry_target(f, &t[k]);
		total += nodes[i].lost ? 0 : nodes[i].n;
	}
	fprintf(f, "dry run: %zu process%s on %zu node%s would be attached", total,
		total == 1 ? "" : "es", n_nodes - lost, n_nodes - lost == 1 ? "" : "s");
	if (lost)
		fprintf(f, " (%zu node%s lost)", lost, lost == 1 ? "" : "s");
	fputs("; nothing was attached\n", f);
	rm_hold_free(&h);
	fflush(f);
}

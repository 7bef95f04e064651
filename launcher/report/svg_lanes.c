/* SPDX-License-Identifier: MIT */
/* The SVG timeline's lanes: each target's bars and calls, each group's band (svg.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

/* A dark mark over [x1, x2] of a lane: thick for a call at work, thin for one armed. */
static void svg_mark(struct svg *s, double x1, double x2, int y, bool armed, const char *t)
{
	fprintf(s->f,
		"<line class=\"%s\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
		"stroke=\"" SVG_CALL "\" stroke-width=\"%d\">",
		armed ? "armed" : "call", x1, y + 9, x2, y + 9, armed ? 2 : 14);
	svg_title(s, t);
	fputs("</line>\n", s->f);
}

/*
 * A call: sent at start, armed (waiting in the target for its time) until
 * at, then at work until end. The armed part is a thin line, the rest a
 * thick mark of at least 2 px, so a fast call still shows. at 0 (or out
 * of the call): the whole call is at work.
 */
static void svg_call(struct svg *s, uint64_t start, uint64_t at, uint64_t end, int y,
		     const char *what)
{
	double x1 = svg_x(s, start), x2 = end > start ? svg_x(s, end) : x1;
	char t[128];

	if (!start)
		return;
	if (at > start && at <= end && svg_x(s, at) - x1 >= 1) {
		snprintf(t, sizeof(t), "%s call sent and armed, waiting for its time: %.3f ms",
			 what, (double)(at - start) / NS_PER_MS);
		svg_mark(s, x1, svg_x(s, at), y, true, t);
		x1 = svg_x(s, at);
		start = at;
	}
	if (x2 - x1 < 2)
		x2 = x1 + 2;
	snprintf(t, sizeof(t), "%s call: %.3f ms", what,
		 end > start ? (double)(end - start) / NS_PER_MS : 0.0);
	svg_mark(s, x1, x2, y, false, t);
}

/*
 * When the tools got the target, as the report has it (node/record_json.c,
 * rn_window_ns): our agent measures the hand-over and the hand-back; on
 * ROCm's side the tools surely ran from the attach call's end to the
 * detach call's start (the lower bound). A target that died with its tools
 * in ran them until it was seen gone; one never detached, to the stop.
 */
enum bar_kind { BAR_NONE, BAR_MEASURED, BAR_BOUND, BAR_CALLS, BAR_FAILED };

static enum bar_kind tools_span(const struct rm_window *w, const struct rn_target *t,
				uint64_t *from, uint64_t *to)
{
	bool bound = t->attach_tool_bound || t->detach_tool_bound;
	uint64_t back = bound ? t->detach_call_ns : t->detach_tool_ns;

	if (!t->attach_tool_ns) {
		/* No hand-over known: the calls' ends are all there is. */
		*from = t->attach_end_ns;
		*to = t->detach_start_ns ? t->detach_start_ns : w->stop_ns;
		return BAR_CALLS;
	}
	*from = t->attach_tool_ns;
	*to = back ? back : w->stop_ns;
	if (!back && t->state == RN_DIED_ATTACHED && t->died_ns && t->died_ns > *from)
		*to = t->died_ns;
	return bound ? BAR_BOUND : BAR_MEASURED;
}

/*
 * Where a target's bar of one window goes: the tools' window (tools_span),
 * or for a failed attach the attach call itself.
 */
static enum bar_kind bar_span(const struct rm_window *w, const struct rn_target *t, uint64_t *from,
			      uint64_t *to)
{
	enum bar_kind k;

	if (rm_attached(t)) {
		k = tools_span(w, t, from, to);
		/* Died with its tools in: drawn to when it was seen gone. */
		if (t->state == RN_DIED_ATTACHED && t->died_ns && t->died_ns < *to)
			*to = t->died_ns;
	} else if (rm_failed(t)) {
		*from = t->attach_start_ns ? t->attach_start_ns : w->start_ns;
		*to = t->attach_end_ns;
		k = BAR_FAILED;
	} else {
		return BAR_NONE;
	}
	if (*to < *from)
		*to = *from;
	return *from ? k : BAR_NONE;
}

/* The bar's hover text, whole however long its host and message; NULL if out of memory. */
static char *bar_title(const struct rm_window *w, const struct rm_node *n,
		       const struct rn_target *t, const struct svg *s)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "%.*s pid %d (%.*s), window %d: %s", (int)sizeof(n->host), n->host, (int)t->pid,
		(int)sizeof(t->exe), t->exe, w->index, rn_state_name(t->state));
	if (t->message[0])
		fprintf(f, ": %.*s", (int)sizeof(t->message), t->message);
	if (rm_attached(t)) {
		uint64_t from, to;
		enum bar_kind k = bar_span(w, t, &from, &to);

		fprintf(f, "%s %+.3f ms to %+.3f ms (%.3f ms)",
			k == BAR_MEASURED ? "; tools' window, measured:"
			: k == BAR_BOUND  ? "; tools' window, ROCm's side, a lower bound (they ran "
					    "at least from the attach call's end to the detach "
					    "call's start):"
					  : "; tools' window unknown; between the calls:",
			svg_rel_ms(s, from), svg_rel_ms(s, to), (double)(to - from) / NS_PER_MS);
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * A failed target is not attached again: the rest of its lane is free for
 * its state's name; at the right edge, the name goes inside the bar.
 */
static void svg_state_label(struct svg *s, const struct rn_target *t, double x1, double x2, int y)
{
	const char *name = rn_state_name(t->state);
	double w = (double)strlen(name) * SVG_CHAR_W;

	if (x2 + 4 + w > SVG_W && x2 - x1 > w + 8)
		fprintf(s->f,
			"<text class=\"inbar\" x=\"%.1f\" y=\"%d\" text-anchor=\"end\">%s"
			"</text>\n",
			x2 - 4, y + 12, name);
	else
		fprintf(s->f, "<text class=\"bad halo\" x=\"%.1f\" y=\"%d\">%s</text>\n", x2 + 4,
			y + 13, name);
}

/*
 * One node in one window: its targets there (t, of node wn) and in the
 * window before (p[0..np)); the lanes are those of the last window's n.
 */
struct svg_at {
	size_t wi;
	const struct rm_node *wn;
	const struct rn_target *t, *p;
	size_t np;
};

/* The record of a target that exited, unchanged since the previous window: drawn there. */
static bool stale_exit(const struct svg_at *at, const struct rn_target *t, size_t ti)
{
	const struct rn_target *p;

	if ((t->state != RN_EXITED && t->state != RN_DIED_ATTACHED) || at->wi == 0)
		return false;
	p = rm_find_target(at->p, at->np, ti, t->pid);
	return p && p->state == t->state && p->attach_start_ns == t->attach_start_ns;
}

/*
 * One target (lane ti of n, pid) in one window: its bar (green, red if it
 * failed, grey if it exited attached), then its call marks.
 */
static void svg_target(struct svg *s, const struct svg_at *at, const struct rm_node *n, size_t ti,
		       pid_t pid, int y)
{
	const struct rm_window *w = &s->r->w[at->wi];
	const struct rn_target *t = at->wn ? rm_find_target(at->t, at->wn->n, ti, pid) : NULL;
	size_t k = t ? (size_t)(t - at->t) : 0;
	uint64_t from, to;
	enum bar_kind kind;
	double x1, x2;
	char *title;

	/* A lost node's records are the last known ones: nothing of this window to draw. */
	if (!t || at->wn->lost || !(kind = bar_span(w, t, &from, &to)))
		return;
	if (rm_failed(t) && !rm_new_failure(at->p, at->np, t, k))
		return;
	if (stale_exit(at, t, k))
		return;
	x1 = svg_x(s, from);
	x2 = svg_x(s, to);
	if (x2 - x1 < 6)
		x2 = x1 + 6;
	title = bar_title(w, n, t, s);
	/* A bound is drawn as one: lighter, with a dashed edge. */
	fprintf(s->f,
		"<rect class=\"%s\" data-pid=\"%d\" data-window=\"%d\" x=\"%.1f\" y=\"%d\" "
		"width=\"%.1f\" height=\"10\" rx=\"2\" fill=\"%s\"%s>",
		kind == BAR_MEASURED ? "tools"
		: kind == BAR_BOUND  ? "tools bound"
		: kind == BAR_CALLS  ? "tools calls"
				     : "failed",
		(int)t->pid, w->index, x1, y + 4, x2 - x1,
		rm_failed(t)						? SVG_FAIL
		: t->state == RN_EXITED || t->state == RN_DIED_ATTACHED ? SVG_EXIT
									: SVG_OK,
		kind == BAR_BOUND || kind == BAR_CALLS
		    ? " fill-opacity=\"0.6\" stroke=\"#222\" stroke-dasharray=\"3 2\""
		    : "");
	svg_title(s, title ? title : "");
	free(title);
	fputs("</rect>\n", s->f);
	/*
	 * A failed attach's bar is its call: no mark over it. The calls wait
	 * armed for the start (the hand-over) and the stop (the hand-back, or
	 * on ROCm's side the entry point's call, begun at the stop).
	 */
	if (rm_attached(t))
		svg_call(s, t->attach_start_ns,
			 t->attach_tool_bound ? w->start_ns : t->attach_tool_ns, t->attach_end_ns,
			 y, "attach");
	svg_call(s, t->detach_start_ns,
		 t->detach_tool_bound ? t->detach_call_ns : t->detach_tool_ns, t->detach_end_ns, y,
		 "detach");
	if (rm_failed(t))
		svg_state_label(s, t, x1, x2, y);
}

/* A lane's label: the target as the last window has it. */
static void svg_lane(struct svg *s, const struct rn_target *t)
{
	char label[64];

	if (t->rank >= 0)
		snprintf(label, sizeof(label), "%d (rank %ld)", (int)t->pid, t->rank);
	else
		snprintf(label, sizeof(label), "%d", (int)t->pid);
	fprintf(s->f, "<text x=\"20\" y=\"%d\"%s>%s <tspan class=\"dim\">", s->y + 13,
		rm_failed(t) ? " class=\"bad\"" : "", label);
	svg_xml_put(s->f, t->exe, sizeof(t->exe), 18);
	fputs("</tspan></text>\n", s->f);
	s->y += SVG_LANE_H;
}

/*
 * What a node's label row says of it: its counts (a lost node's: found, last
 * known), and when it was lost and why.
 */
static void svg_node_note(struct svg *s, const struct rm_node *n, const struct rn_target *t,
			  size_t ni)
{
	const struct rm_node *ln;
	const struct rm_window *lw = rm_lost_in(s->r, n->host, ni, &ln);
	struct rm_counts c = {0};

	rm_count_node(n, t, &c);
	/* Right of window 1's start line, so that no line crosses it unless windows are narrow. */
	fprintf(s->f, "<text class=\"%s halo\" x=\"%.1f\" y=\"%d\">", lw ? "bad" : "dim",
		svg_x(s, s->t0) + 6, s->y + 16);
	if (n->lost)
		fprintf(s->f, "%zu found (last known)", c.found);
	else if (rm_found(n))
		fprintf(s->f, "%zu found, %zu attached, %zu failed", c.found, c.attached, c.failed);
	else
		fputs("no targets found", s->f);
	if ((t || n->cut) && svg_lanes(s, n, t) < rm_found(n))
		fprintf(s->f, "; %zu clean not drawn (--detail %s)",
			rm_found(n) - svg_lanes(s, n, t), rm_detail_name(s->d));
	if (lw) {
		fprintf(s->f, ", lost in window %d: ", lw->index);
		svg_xml_put(s->f, rm_lost_reason(ln), (size_t)-1, 100);
	}
	fputs("</text>\n", s->f);
}

/*
 * A node's label row, then one lane per target, then its bars window by
 * window: three nodes' targets in memory at a time (the last window's, for
 * the lanes; this window's; the window before's).
 */
void svg_node(struct svg *s, const struct rm_node *n, size_t ni)
{
	struct rm_hold hl = {0}, h[2] = {{0}, {0}};
	const struct rn_target *lt = rm_targets(n, &hl);
	struct svg_at at = {0};
	int y0, lane;
	size_t k;

	fprintf(s->f,
		"<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#bbb\"/>\n"
		"<text class=\"host%s\" x=\"8\" y=\"%d\"><title>",
		s->y, SVG_W, s->y, n->lost ? " bad" : "", s->y + 16);
	svg_xml_put(s->f, n->host, sizeof(n->host), sizeof(n->host));
	fputs("</title>", s->f);
	svg_xml_put(s->f, n->host, sizeof(n->host), 30);
	fputs("</text>\n", s->f);
	svg_node_note(s, n, lt, ni);
	s->y += SVG_GROUP_H;
	y0 = s->y;
	for (k = 0; lt && k < n->n; k++)
		if (rm_detail_keeps(s->d, n, &lt[k]))
			svg_lane(s, &lt[k]);
	for (at.wi = 0; lt && at.wi < s->r->n_w; at.wi++) {
		const struct rm_node *pn = at.wn;

		at.wn = rm_find_node(&s->r->w[at.wi], ni, n->host);
		/* The window before's targets are those read last time round, if any. */
		at.p = pn ? at.t : NULL;
		at.np = at.p ? pn->n : 0;
		at.t = at.wn ? rm_targets(at.wn, &h[at.wi % 2]) : NULL;
		for (k = 0, lane = 0; at.t && k < n->n; k++)
			if (rm_detail_keeps(s->d, n, &lt[k]))
				svg_target(s, &at, n, k, lt[k].pid, y0 + lane++ * SVG_LANE_H);
	}
	s->y = y0 + (int)svg_lanes(s, n, lt) * SVG_LANE_H;
	rm_hold_free(&hl);
	rm_hold_free(&h[0]);
	rm_hold_free(&h[1]);
}

/* The band's figures of one window, over the group's nodes there. */
struct band {
	uint64_t *v[6]; /* per node: hand-over min, p50, max; hand-back min, p50, max */
	size_t m, mb, targets;
};

static uint64_t band_pick(uint64_t *v, size_t m, int which)
{
	if (!m)
		return 0;
	qsort(v, m, sizeof(*v), svg_cmp_u64);
	return which < 0 ? v[0] : which > 0 ? v[m - 1] : v[m / 2];
}

static void band_add(struct svg *s, struct band *b, const struct rm_window *w, size_t ni,
		     struct rm_hold *h)
{
	const struct rm_node *ln = &rm_last_window(s->r)->nodes[ni];
	const struct rm_node *n = rm_find_node(w, ni, ln->host);
	const struct rn_target *t = n && !n->lost ? rm_targets(n, h) : NULL;
	struct rm_node_fig f;

	if (!t)
		return;
	rm_node_figures(n, t, w->start_ns, &f);
	if (!f.over.n)
		return;
	b->v[0][b->m] = f.over.min;
	b->v[1][b->m] = f.over.p50;
	b->v[2][b->m++] = f.over.max;
	b->targets += f.over.n;
	if (!f.back.n)
		return;
	b->v[3][b->mb] = f.back.min;
	b->v[4][b->mb] = f.back.p50;
	b->v[5][b->mb++] = f.back.max;
}

/* A thin dark line over [a, b] of the band's lane: a spread. */
static void svg_spread(struct svg *s, uint64_t a, uint64_t b, int y, const char *title)
{
	double x1 = svg_x(s, a), x2 = svg_x(s, b);

	if (x2 - x1 < 2)
		x2 = x1 + 2;
	fprintf(s->f,
		"<line class=\"spread\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
		"stroke=\"" SVG_CALL "\" stroke-width=\"4\">",
		x1, y + 9, x2, y + 9);
	svg_title(s, title);
	fputs("</line>\n", s->f);
}

/* One window's band of group o: median hand-over to median hand-back, the spreads over it. */
static void svg_band(struct svg *s, const struct svg_row *row, size_t wi, struct band *b, int y)
{
	const struct rm_window *w = &s->r->w[wi];
	uint64_t o[3], k[3] = {0}, to;
	struct rm_hold h = {0};
	char t[400];

	b->m = b->mb = b->targets = 0;
	for (size_t i = 0; i < s->g.n; i++)
		if (!s->g.alone[i] && s->g.outcome[i] == row->group)
			band_add(s, b, w, i, &h);
	rm_hold_free(&h);
	if (!b->m)
		return;
	for (int j = 0; j < 3; j++) {
		o[j] = band_pick(b->v[j], b->m, j - 1);
		k[j] = band_pick(b->v[3 + j], b->mb, j - 1);
	}
	to = b->mb ? k[1] : w->stop_ns;
	snprintf(t, sizeof(t),
		 "%s: %zu nodes, %zu targets attached in window %d; hand-over min %+.3f, median "
		 "node %+.3f, max %+.3f ms; hand-back min %+.3f, median node %+.3f, max %+.3f ms",
		 rm_outcome_name((enum rm_outcome)row->group), b->m, b->targets, w->index,
		 svg_rel_ms(s, o[0]), svg_rel_ms(s, o[1]), svg_rel_ms(s, o[2]),
		 b->mb ? svg_rel_ms(s, k[0]) : 0.0, b->mb ? svg_rel_ms(s, k[1]) : 0.0,
		 b->mb ? svg_rel_ms(s, k[2]) : 0.0);
	fprintf(s->f,
		"<rect class=\"group\" data-window=\"%d\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
		"height=\"10\" rx=\"2\" fill=\"%s\">",
		w->index, svg_x(s, o[1]), y + 4, to > o[1] ? svg_x(s, to) - svg_x(s, o[1]) : 6.0,
		row->group == RM_OUT_CLEAN ? SVG_OK : SVG_FAIL);
	svg_title(s, t);
	fputs("</rect>\n", s->f);
	svg_spread(s, o[0], o[2], y, "hand-overs: first to last");
	if (b->mb)
		svg_spread(s, k[0], k[2], y, "hand-backs: first to last");
}

/* A group: its label row (outcome, count, hosts), then its band lane, window by window. */
void svg_group(struct svg *s, const struct svg_row *row)
{
	enum rm_outcome o = (enum rm_outcome)row->group;
	double x = svg_x(s, s->t0) + 6;
	size_t room = x < SVG_W - 60 ? (size_t)((SVG_W - x) / SVG_CHAR_W) : 10;
	char *hosts = rm_group_hosts(rm_last_window(s->r), &s->g, o, room);
	struct band b = {0};

	fprintf(s->f,
		"<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#bbb\"/>\n"
		"<text class=\"host%s\" x=\"8\" y=\"%d\">%s: %zu nodes</text>\n"
		"<text class=\"dim halo\" x=\"%.1f\" y=\"%d\">",
		s->y, SVG_W, s->y, o == RM_OUT_CLEAN ? "" : " bad", s->y + 16, rm_outcome_name(o),
		s->g.members[o], x, s->y + 16);
	svg_xml_put(s->f, hosts ? hosts : "?", (size_t)-1, room);
	fputs("</text>\n", s->f);
	free(hosts);
	s->y += SVG_GROUP_H;
	if (!row->lanes)
		return;
	b.v[0] = calloc(6 * s->g.n + 1, sizeof(uint64_t));
	for (int j = 1; b.v[0] && j < 6; j++)
		b.v[j] = b.v[0] + j * s->g.n;
	for (size_t wi = 0; b.v[0] && wi < s->r->n_w; wi++)
		svg_band(s, row, wi, &b, s->y);
	free(b.v[0]);
	s->y += SVG_LANE_H;
}

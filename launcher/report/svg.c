/* SPDX-License-Identifier: MIT */
/*
 * The SVG timeline (--timeline): one lane per target, grouped by node, windows
 * left to right. Above RM_GROUP_ABOVE nodes, the nodes that share an outcome
 * are one group with one band (report_scale.c says which are alone): per
 * window, the median hand-over to the median hand-back of its nodes, with
 * the spread of the hand-overs and of the hand-backs (first to last) over it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define SVG_W 1200
#define SVG_LABEL_W 220 /* lane labels left of the plot */
#define SVG_RIGHT 24
#define SVG_TOP 74 /* title, window labels, tick labels */
#define SVG_GROUP_H 24
#define SVG_LANE_H 18
#define SVG_BOTTOM 44  /* legend */
#define SVG_CHAR_W 6.6 /* average width of an 11px sans-serif character, with margin */

#define SVG_OK "#3a9d5d"
#define SVG_EXIT "#9aa5b1"
#define SVG_FAIL "#d64541"
#define SVG_CALL "#1d3557"

/* A row: a node (group < 0) with a lane per target, or a group with one band lane (or none). */
struct svg_row {
	int group;
	size_t node;
	size_t lanes;
};

struct svg {
	FILE *f;
	const struct rm_run *r;
	struct rm_grouping g;
	struct svg_row *rows;
	size_t n_rows;
	enum rm_detail d;    /* a node's lanes: the targets whose records this level keeps */
	uint64_t t0, lo, hi; /* window 1's start; the axis range */
	double px_per_ns;
	int y;	      /* top of the next row */
	int x_legend; /* where the next legend item goes */
};

/*
 * Text into XML: escaped, control characters (not allowed in XML 1.0 even
 * escaped) and non-ASCII bytes (maybe not UTF-8) as '?', cut at max
 * characters with a '~'.
 */
static void xml_put(FILE *f, const char *s, size_t width, size_t max)
{
	size_t len = strnlen(s, width), i;
	bool cut = len > max;
	unsigned char c;

	for (i = 0; i < (cut ? max - 1 : len); i++) {
		c = (unsigned char)s[i];
		switch (c) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fputc(c < 0x20 || c >= 0x7f ? '?' : c, f);
		}
	}
	if (cut)
		fputc('~', f);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static double svg_x(const struct svg *s, uint64_t ns)
{
	return SVG_LABEL_W + (double)(int64_t)(ns - s->lo) * s->px_per_ns;
}

static double rel_ms(const struct svg *s, uint64_t ns)
{
	return (double)(int64_t)(ns - s->t0) / NS_PER_MS;
}

static void range_add(struct rm_spread *sp, uint64_t ns)
{
	if (ns)
		rm_spread_add(sp, ns);
}

/* Every timestamp of the run, with a little room on both sides. */
static void svg_range(struct svg *s)
{
	const struct rm_window *w;
	const struct rn_target *t;
	struct rm_spread sp = {0};
	struct rm_hold h = {0};
	uint64_t pad;
	size_t wi, ni, k;

	for (wi = 0; wi < s->r->n_w; wi++) {
		w = &s->r->w[wi];
		range_add(&sp, w->start_ns);
		range_add(&sp, w->stop_ns);
		for (ni = 0; ni < w->n_nodes; ni++) {
			t = w->nodes[ni].lost ? NULL : rm_targets(&w->nodes[ni], &h);
			/* A node that cut its records: the extent of all its calls. */
			if (w->nodes[ni].cut && !w->nodes[ni].lost && w->nodes[ni].sum->calls_lo) {
				range_add(&sp, w->nodes[ni].sum->calls_lo);
				range_add(&sp, w->nodes[ni].sum->calls_hi);
			}
			for (k = 0; t && k < w->nodes[ni].n; k++) {
				range_add(&sp, t[k].attach_start_ns);
				range_add(&sp, t[k].attach_end_ns);
				range_add(&sp, t[k].detach_start_ns);
				range_add(&sp, t[k].detach_end_ns);
			}
		}
	}
	rm_hold_free(&h);
	if (rm_spread_ns(&sp) < 1000000)
		sp.hi = sp.lo + 1000000;
	pad = rm_spread_ns(&sp) / 50;
	if (pad > sp.lo) /* nothing ran: an axis from 0 */
		pad = sp.lo;
	s->t0 = s->r->n_w && s->r->w[0].start_ns ? s->r->w[0].start_ns : sp.lo;
	s->lo = sp.lo - pad;
	s->hi = sp.hi + pad;
	s->px_per_ns = (double)(SVG_W - SVG_LABEL_W - SVG_RIGHT) / (double)(s->hi - s->lo);
}

/* The groups first (clean, then the others), then every node shown alone. */
/*
 * The lanes of node n: its targets (of the last window, t) that s->d keeps;
 * every one at all, or when they cannot be read (empty lanes, as before).
 */
static size_t svg_lanes(const struct svg *s, const struct rm_node *n, const struct rn_target *t)
{
	size_t lanes = 0;

	if (s->d == RM_DETAIL_ALL || !t || n->cut)
		return n->n; /* a node that cut its records sent only those it keeps */
	for (size_t k = 0; k < n->n; k++)
		lanes += rm_detail_keeps(s->d, n, &t[k]);
	return lanes;
}

static int svg_rows(struct svg *s)
{
	const struct rm_window *w = rm_last_window(s->r);
	struct rm_hold h = {0};
	size_t n = 0;

	if (rm_group_nodes(w, &s->g))
		return -1;
	s->rows = calloc(s->g.n + RM_OUT_N, sizeof(*s->rows));
	if (!s->rows)
		return -1;
	for (int o = 0; s->g.grouped && o < RM_OUT_N; o++)
		if (s->g.members[o])
			s->rows[n++] =
			    (struct svg_row){.group = o,
					     .lanes = o != RM_OUT_LOST && o != RM_OUT_EMPTY &&
						      o != RM_OUT_UNREADABLE};
	for (size_t i = 0; i < s->g.n; i++)
		if (s->g.alone[i])
			s->rows[n++] = (struct svg_row){
			    .group = -1,
			    .node = i,
			    .lanes =
				s->d == RM_DETAIL_ALL
				    ? w->nodes[i].n
				    : svg_lanes(s, &w->nodes[i], rm_targets(&w->nodes[i], &h))};
	/* The same count as svg_node's: both read the node's records of the last window. */
	rm_hold_free(&h);
	s->n_rows = n;
	return 0;
}

static int svg_height(const struct svg *s)
{
	size_t i, h = SVG_TOP + SVG_BOTTOM;

	for (i = 0; i < s->n_rows; i++)
		h += SVG_GROUP_H + s->rows[i].lanes * SVG_LANE_H;
	return (int)h;
}

static void svg_head(struct svg *s, int height)
{
	const struct rm_run *r = s->r;
	struct rm_counts c = rm_count_window(rm_last_window(r));
	size_t n_nodes = r->n_w ? rm_last_window(r)->n_nodes : 0;
	char line[256], start[40];

	fprintf(s->f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n<style>\n"
		"text{font-family:DejaVu Sans,Arial,sans-serif;font-size:11px;fill:#222}\n"
		".title{font-size:14px;font-weight:bold}\n.host{font-weight:bold}\n"
		".dim{fill:#777}\n.tick{font-size:10px;fill:#666}\n.bad{fill:" SVG_FAIL "}\n"
		".inbar{fill:#fff;font-size:9px}\n"
		".halo{paint-order:stroke;stroke:#fff;stroke-width:5px;stroke-linejoin:round}\n"
		"</style>\n<path d=\"M0 0H%dV%dH0Z\" fill=\"#fff\"/>\n",
		SVG_W, height, SVG_W, height, SVG_W, height);
	rm_fmt_time(s->t0, start, sizeof(start));
	snprintf(line, sizeof(line),
		 "rocattach-mpi: %zu node%s, %zu target%s, %zu window%s from %s, exit %d%s%s",
		 n_nodes, n_nodes == 1 ? "" : "s", c.found, c.found == 1 ? "" : "s", r->n_w,
		 r->n_w == 1 ? "" : "s", start, r->exit_code, r->exit_reason ? ": " : "",
		 r->exit_reason ? r->exit_reason : "");
	fputs("<text class=\"title\" x=\"8\" y=\"20\">", s->f);
	xml_put(s->f, line, sizeof(line), sizeof(line));
	fputs("</text>\n", s->f);
}

/* 1, 2 or 5 times a power of ten: at most 10 ticks over span. */
static double nice_step(double span_ms, int *decimals)
{
	static const double m[] = {1, 2, 5};
	double base = 0.001;
	int i;

	for (*decimals = 3; base<1e12; base *= 10, *decimals -= *decimals> 0) {
		for (i = 0; i < 3; i++)
			if (span_ms / (m[i] * base) <= 10)
				return m[i] * base;
	}
	return base;
}

/*
 * Ticks in ms (or s past 10 s per tick) since window 1's start: grid lines
 * (under everything) or their labels (over the window lines).
 */
static void svg_axis(struct svg *s, int bottom, bool labels)
{
	double lo = rel_ms(s, s->lo), hi = rel_ms(s, s->hi), step, x;
	long long k;
	bool sec;
	int dec;

	step = nice_step(hi - lo, &dec);
	sec = step >= 10000;
	if (labels)
		fprintf(s->f,
			"<text class=\"tick\" x=\"8\" y=\"%d\">%s since window 1 start"
			"</text>\n",
			SVG_TOP - 8, sec ? "s" : "ms");
	k = (long long)(lo / step);
	for (k += (double)k * step < lo; (double)k * step <= hi; k++) {
		x = SVG_LABEL_W + ((double)k * step - lo) * NS_PER_MS * s->px_per_ns;
		if (!labels)
			fprintf(s->f,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
				"stroke=\"#e4e4e4\"/>\n",
				x, SVG_TOP - 4, x, bottom);
		else
			fprintf(s->f,
				"<text class=\"tick halo\" x=\"%.1f\" y=\"%d\" "
				"text-anchor=\"middle\">%.*f</text>\n",
				x, SVG_TOP - 8, sec ? 0 : dec, (double)k * step / (sec ? 1000 : 1));
	}
}

/* The label over a window from x, as long as fits in room; false if none fits. */
static bool svg_window_label(struct svg *s, const struct rm_window *w, double x, double room)
{
	struct rm_skew sk = rm_window_skew(w);
	char text[160];
	size_t len;

	len = (size_t)snprintf(text, sizeof(text),
			       "window %d: attach skew %.3f ms, detach skew %.3f ms", w->index,
			       (double)sk.attach_ns / NS_PER_MS, (double)sk.detach_ns / NS_PER_MS);
	if (!sk.n)
		len = (size_t)snprintf(text, sizeof(text), "window %d: nothing attached", w->index);
	if (len * SVG_CHAR_W > room && sk.n)
		len = (size_t)snprintf(text, sizeof(text), "w%d skew: attach %.3f, detach %.3f ms",
				       w->index, (double)sk.attach_ns / NS_PER_MS,
				       (double)sk.detach_ns / NS_PER_MS);
	if (len * SVG_CHAR_W > room)
		len = (size_t)snprintf(text, sizeof(text), "w%d", w->index);
	if (len * SVG_CHAR_W > room)
		return false;
	fprintf(s->f, "<text class=\"halo\" x=\"%.1f\" y=\"%d\">%s</text>\n", x + 3, SVG_TOP - 28,
		text);
	return true;
}

static void svg_vseg(struct svg *s, double x, int y1, int y2, const char *what, int index)
{
	fprintf(s->f,
		"<line class=\"wline\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
		"stroke=\"#555\" stroke-dasharray=\"5 3\"><title>window %d %s</title></line>\n",
		x, y1, x, y2, index, what);
}

/*
 * A window's start or stop: a mark in the window labels' row, then a line
 * through each node's lanes. The rows of text between (tick labels, node
 * names and counts) are left clear, so no line runs through a label.
 */
static void svg_vline(struct svg *s, uint64_t ns, const char *what, int index)
{
	double x = svg_x(s, ns);
	int y = SVG_TOP;

	svg_vseg(s, x, SVG_TOP - 42, SVG_TOP - 24, what, index);
	for (size_t i = 0; i < s->n_rows; i++) {
		y += SVG_GROUP_H;
		if (s->rows[i].lanes)
			svg_vseg(s, x, y, y + (int)s->rows[i].lanes * SVG_LANE_H, what, index);
		y += (int)s->rows[i].lanes * SVG_LANE_H;
	}
}

/*
 * Dashed lines at each window's start and stop, labelled with its skews:
 * the label fits between its start and stop marks, or after the stop
 * before the next window's start mark.
 */
static void svg_windows(struct svg *s)
{
	const struct rm_window *w;
	double x, stop, next;
	size_t i;

	for (i = 0; i < s->r->n_w; i++) {
		w = &s->r->w[i];
		if (!w->start_ns)
			continue;
		x = svg_x(s, w->start_ns);
		stop = w->stop_ns > w->start_ns ? svg_x(s, w->stop_ns) : 0;
		next = i + 1 < s->r->n_w && s->r->w[i + 1].start_ns
			   ? svg_x(s, s->r->w[i + 1].start_ns)
			   : SVG_W - 4;
		if (stop && !svg_window_label(s, w, x, stop - x - 6))
			svg_window_label(s, w, stop, next - stop - 6);
		else if (!stop)
			svg_window_label(s, w, x, next - x - 6);
		svg_vline(s, w->start_ns, "start", w->index);
		if (w->stop_ns)
			svg_vline(s, w->stop_ns, "stop", w->index);
	}
}

static void svg_title(struct svg *s, const char *text)
{
	fputs("<title>", s->f);
	xml_put(s->f, text, (size_t)-1, (size_t)-1);
	fputs("</title>", s->f);
}

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
 * When the tools got the target, as the report has it (records.c,
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
			rel_ms(s, from), rel_ms(s, to), (double)(to - from) / NS_PER_MS);
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

/* Every other lane shaded, drawn before the grid so that it shows through. */
static void svg_shading(struct svg *s)
{
	int y = SVG_TOP;
	size_t i, k;

	for (i = 0; i < s->n_rows; i++) {
		y += SVG_GROUP_H;
		for (k = 0; k < s->rows[i].lanes; k++, y += SVG_LANE_H)
			if (k % 2)
				fprintf(s->f, "<path d=\"M0 %dH%dV%dH0Z\" fill=\"#f1f4f8\"/>\n", y,
					SVG_W, y + SVG_LANE_H);
	}
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
	xml_put(s->f, t->exe, sizeof(t->exe), 18);
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
		xml_put(s->f, rm_lost_reason(ln), (size_t)-1, 100);
	}
	fputs("</text>\n", s->f);
}

/*
 * A node's label row, then one lane per target, then its bars window by
 * window: three nodes' targets in memory at a time (the last window's, for
 * the lanes; this window's; the window before's).
 */
static void svg_node(struct svg *s, const struct rm_node *n, size_t ni)
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
	xml_put(s->f, n->host, sizeof(n->host), sizeof(n->host));
	fputs("</title>", s->f);
	xml_put(s->f, n->host, sizeof(n->host), 30);
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
	qsort(v, m, sizeof(*v), cmp_u64);
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
		 rel_ms(s, o[0]), rel_ms(s, o[1]), rel_ms(s, o[2]), b->mb ? rel_ms(s, k[0]) : 0.0,
		 b->mb ? rel_ms(s, k[1]) : 0.0, b->mb ? rel_ms(s, k[2]) : 0.0);
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
static void svg_group(struct svg *s, const struct svg_row *row)
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
	xml_put(s->f, hosts ? hosts : "?", (size_t)-1, room);
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

/* One legend item at s->x_legend: a sample line of width px, then its text. */
static void svg_legend_item(struct svg *s, const char *stroke, int width, const char *extra,
			    const char *text)
{
	int x = s->x_legend;

	fprintf(s->f,
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
		"stroke-width=\"%d\"%s/>\n"
		"<text x=\"%d\" y=\"%d\">%s</text>\n",
		x, s->y + 20, x + 22, s->y + 20, stroke, width, extra ? extra : "", x + 28,
		s->y + 24, text);
	s->x_legend = x + 28 + (int)((double)strlen(text) * SVG_CHAR_W) + 16;
}

static void svg_legend(struct svg *s)
{
	s->x_legend = 8;
	svg_legend_item(s, SVG_OK, 10, NULL, "profiling: the tools' window");
	svg_legend_item(s, SVG_OK, 10, " stroke-opacity=\"0.6\"", "a bound (ROCm's side)");
	svg_legend_item(s, SVG_CALL, 10, NULL, "call");
	svg_legend_item(s, SVG_CALL, 2, NULL, "call armed, waiting");
	svg_legend_item(s, SVG_FAIL, 10, NULL, "failed (hover)");
	svg_legend_item(s, "#555", 1, " stroke-dasharray=\"5 3\"", "window start / stop");
	svg_legend_item(s, SVG_EXIT, 10, NULL, "died / exited attached");
}

static void svg_write(struct svg *s)
{
	const struct rm_window *w = rm_last_window(s->r);
	int height = svg_height(s), bottom = height - SVG_BOTTOM;
	size_t i;

	svg_range(s);
	svg_head(s, height);
	svg_shading(s);
	svg_axis(s, bottom, false);
	svg_windows(s);
	svg_axis(s, bottom, true);
	s->y = SVG_TOP;
	for (i = 0; i < s->n_rows; i++) {
		if (s->rows[i].group >= 0)
			svg_group(s, &s->rows[i]);
		else
			svg_node(s, &w->nodes[s->rows[i].node], s->rows[i].node);
	}
	if (!w)
		fprintf(s->f, "<text x=\"8\" y=\"%d\">no window ran</text>\n", s->y + 16);
	s->y = bottom;
	svg_legend(s);
	fputs("</svg>\n", s->f);
}

/* Lanes are the targets of the last window; earlier windows are matched by host and pid. */
int rm_write_timeline(const char *path, const struct rm_run *r, char *err, size_t len)
{
	struct svg s = {.r = r};
	struct rm_out o;

	if (rm_out_open(&o, path, "timeline", err, len))
		return -1;
	s.f = o.f;
	s.d = rm_detail_of(r, NULL, 0);
	if (svg_rows(&s)) {
		rm_grouping_free(&s.g);
		free(s.rows);
		return rm_out_abort(&o, ENOMEM, err, len);
	}
	svg_write(&s);
	rm_grouping_free(&s.g);
	free(s.rows);
	return rm_out_done(&o, r->store, err, len);
}

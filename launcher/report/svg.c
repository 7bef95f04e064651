/* SPDX-License-Identifier: MIT */
/*
 * The SVG timeline (--timeline): one lane per target, grouped by node, windows
 * left to right. Above RM_GROUP_ABOVE nodes, the nodes that share an outcome
 * are one group with one band (launcher/report/figures.c says which are alone): per
 * window, the median hand-over to the median hand-back of its nodes, with
 * the spread of the hand-overs and of the hand-backs (first to last) over it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

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
	svg_xml_put(s->f, line, sizeof(line), sizeof(line));
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
	double lo = svg_rel_ms(s, s->lo), hi = svg_rel_ms(s, s->hi), step, x;
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

/* SPDX-License-Identifier: MIT */
/*
 * The SVG timeline's parts, inside the report: svg.c lays the picture out
 * (rows, axis, windows, legend), svg_lanes.c draws a node's lanes and a
 * group's band, svg_draw.c the few marks both use.
 */
#ifndef RM_SVG_H
#define RM_SVG_H

#include <stdbool.h>
#include <stdio.h>

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

/* svg_draw.c */
/* s as XML text, at most max bytes of it (width: s's buffer), escaped. */
void svg_xml_put(FILE *f, const char *s, size_t width, size_t max);
int svg_cmp_u64(const void *a, const void *b);
/* An x of the plot for a time (rank 0's CLOCK_REALTIME), and ms since the run's first. */
double svg_x(const struct svg *s, uint64_t ns);
double svg_rel_ms(const struct svg *s, uint64_t ns);
/* A <title> (hover text) for the element just opened. */
void svg_title(struct svg *s, const char *text);
/* The lanes node n takes (its targets, t its records). */
size_t svg_lanes(const struct svg *s, const struct rm_node *n, const struct rn_target *t);

/* svg_lanes.c */
/* Node ni's rows: a label row, then a lane per target, window by window. */
void svg_node(struct svg *s, const struct rm_node *n, size_t ni);
/* A group: its label row (outcome, count, hosts), then its band lane, window by window. */
void svg_group(struct svg *s, const struct svg_row *row);

#endif

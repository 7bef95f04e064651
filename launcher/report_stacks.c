/* SPDX-License-Identifier: MIT */
/*
 * --stacks on rank 0: the merged tree as text after the summary, as
 * `stacks` in the report, and as an SVG (--stacks-svg): an icicle chart,
 * outermost frames on top, each box as wide as its threads, labelled with
 * its frame and its ranks. A box whose ranks are not all of its parent's
 * is drawn in another colour: the odd rank out stands out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"
#include "stacks_tree.h"

#define ST_W 1200.0
#define ST_ROW 20
#define ST_TOP 44
#define ST_MARGIN 10.0
#define ST_CHAR_W 6.6
#define ST_SAME "#e8a33d"
#define ST_SPLIT "#d64541"

static void notes(FILE *out, const struct rm_run *r)
{
	if (r->stacks_no_rank)
		fprintf(out,
			"  (%zu target%s left out: no rank in %s environment; select them with a "
			"rank variable, --rank-var)\n",
			r->stacks_no_rank, r->stacks_no_rank == 1 ? "" : "s",
			r->stacks_no_rank == 1 ? "its" : "their");
	if (r->stacks_refused)
		fprintf(out, "  (%zu stack line%s from the nodes could not be read: left out)\n",
			r->stacks_refused, r->stacks_refused == 1 ? "" : "s");
}

void rm_print_stacks(FILE *out, const struct rm_run *r)
{
	if (!r->stacks)
		return;
	fputs("stacks at the window's start (ranks that share a whole stack make one line):\n",
	      out);
	ra_stack_tree_print(r->stacks, out);
	notes(out, r);
}

json_t *rm_stacks_json(const struct rm_run *r)
{
	return r->stacks ? ra_stack_tree_json(r->stacks) : json_null();
}

/* Text into XML, escaped; non-ASCII and control bytes as '?'; at most max characters. */
static void xml_text(FILE *f, const char *s, size_t max)
{
	size_t len = strlen(s);

	for (size_t i = 0; i < len && i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i + 1 == max && len > max)
			c = '~';
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else
			fputc(c < 0x20 || c >= 0x7f ? '?' : c, f);
	}
}

static size_t depth_of(json_t *kids)
{
	size_t i, best = 0;
	json_t *k;

	json_array_foreach (kids, i, k) {
		size_t d = 1 + depth_of(json_object_get(k, "children"));

		if (d > best)
			best = d;
	}
	return best;
}

/* The boxes of kids, from x, one row below y; px: width of one thread. */
static void boxes(FILE *f, json_t *kids, const char *parent_ranks, double x, int y, double px)
{
	size_t i;
	json_t *k;

	json_array_foreach (kids, i, k) {
		const char *frame = json_string_value(json_object_get(k, "frame"));
		const char *ranks = json_string_value(json_object_get(k, "ranks"));
		double w = (double)json_integer_value(json_object_get(k, "threads")) * px;
		bool split = parent_ranks && strcmp(parent_ranks, ranks);

		fprintf(f, "<g><title>");
		xml_text(f, frame, 4096);
		fprintf(f, " [ranks %s] %lld thread%s</title>", ranks,
			(long long)json_integer_value(json_object_get(k, "threads")),
			json_integer_value(json_object_get(k, "threads")) == 1 ? "" : "s");
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
			"stroke=\"white\"/>",
			x, y, w, ST_ROW - 1, split ? ST_SPLIT : ST_SAME);
		if (w > 3 * ST_CHAR_W) {
			size_t max = (size_t)((w - 6) / ST_CHAR_W);
			char label[4400];

			snprintf(label, sizeof(label), "%s [%s]", frame, ranks);
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\">", x + 3,
				y + ST_ROW - 6);
			xml_text(f, label, max);
			fputs("</text>", f);
		}
		fputs("</g>\n", f);
		boxes(f, json_object_get(k, "children"), ranks, x, y + ST_ROW, px);
		x += w;
	}
}

int rm_write_stacks_svg(const char *path, const struct rm_run *r, char *err, size_t len)
{
	json_t *tree = rm_stacks_json(r), *k;
	long long threads = 0;
	struct rm_out out;
	size_t i, depth;
	int h;

	if (!json_is_array(tree)) {
		json_decref(tree);
		snprintf(err, len, "cannot write the stacks' SVG %s: out of memory", path);
		return -1;
	}
	json_array_foreach (tree, i, k)
		threads += json_integer_value(json_object_get(k, "threads"));
	depth = depth_of(tree);
	h = ST_TOP + (int)depth * ST_ROW + 30;
	if (rm_out_open(&out, path, "stacks' SVG", err, len)) {
		json_decref(tree);
		return -1;
	}
	fprintf(out.f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%d\" "
		"font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%.0f\" y=\"20\" font-size=\"15\">rocattach-mpi --stacks: %lld "
		"thread%s at the window's start (outermost frame on top)</text>\n"
		"<text x=\"%.0f\" y=\"36\" font-size=\"11\">Width: threads. Red: fewer ranks "
		"than the frame above.</text>\n",
		ST_W, h, ST_MARGIN, threads, threads == 1 ? "" : "s", ST_MARGIN);
	if (threads)
		boxes(out.f, tree, NULL, ST_MARGIN, ST_TOP,
		      (ST_W - 2 * ST_MARGIN) / (double)threads);
	else
		fprintf(out.f,
			"<text x=\"%.0f\" y=\"%d\" font-size=\"13\">No stacks were "
			"gathered.</text>\n",
			ST_MARGIN, ST_TOP + 14);
	fputs("</svg>\n", out.f);
	json_decref(tree);
	return rm_out_close(&out, err, len);
}

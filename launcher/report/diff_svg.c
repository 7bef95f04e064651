/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi --diff A B --flamegraph OUT.svg: a differential flame
 * graph. The stacks of both files merged into one tree (the host and rank
 * frames left out: every rank together), drawn as B's icicle chart
 * (outermost frame on top, widths in B's samples), each box coloured by how
 * its share of all samples changed from A to B: red grew, blue shrank,
 * white the same. Frames A had and B has not take no width: the text
 * table lists them.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "report_int.h"
#include "svg.h"

#define DS_W 1200.0
#define DS_ROW 20
#define DS_TOP 58
#define DS_MARGIN 10.0
#define DS_CHAR_W 6.6

struct dnode {
	char *frame;
	unsigned long long n[2]; /* samples through this box: A's, B's */
	struct dnode *kids;
	size_t n_kids, cap;
};

static struct dnode *child(struct dnode *d, const char *frame)
{
	struct dnode *more;

	for (size_t i = 0; i < d->n_kids; i++)
		if (!strcmp(d->kids[i].frame, frame))
			return &d->kids[i];
	if (d->n_kids == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 4;

		if (!(more = realloc(d->kids, cap * sizeof(*more))))
			return NULL;
		d->kids = more;
		d->cap = cap;
	}
	more = &d->kids[d->n_kids];
	memset(more, 0, sizeof(*more));
	if (!(more->frame = strdup(frame)))
		return NULL;
	d->n_kids++;
	return more;
}

/* The samples of p into the tree as side (0: A, 1: B). */
static int add_prof(struct dnode *root, const struct rm_prof *p, int side)
{
	for (size_t i = 0; i < p->n; i++) {
		char *copy = strdup(p->v[i].stack), **fr = NULL;
		size_t n = copy ? rm_prof_split(copy, &fr) : 0;
		struct dnode *d = root;

		root->n[side] += p->v[i].count;
		for (size_t k = 0; d && k < n; k++)
			if ((d = child(d, fr[k])))
				d->n[side] += p->v[i].count;
		free(fr);
		free(copy);
		if (!n || !d)
			return -1;
	}
	return 0;
}

static void tree_free(struct dnode *d)
{
	for (size_t i = 0; i < d->n_kids; i++)
		tree_free(&d->kids[i]);
	free(d->kids);
	free(d->frame);
}

static int by_b(const void *x, const void *y)
{
	const struct dnode *a = x, *b = y;

	return a->n[1] != b->n[1] ? (a->n[1] > b->n[1] ? -1 : 1) : strcmp(a->frame, b->frame);
}

struct draw {
	FILE *f;
	double share[2]; /* 100 / each side's samples */
	double max_change;
	double px;
	int depth;
};

static double change(const struct draw *w, const struct dnode *d)
{
	return (double)d->n[1] * w->share[1] - (double)d->n[0] * w->share[0];
}

/* The largest change (points) and the depth of the boxes B has. */
static void measure(struct draw *w, struct dnode *d, int depth)
{
	if (d->n_kids > 1)
		qsort(d->kids, d->n_kids, sizeof(*d->kids), by_b);
	for (size_t i = 0; i < d->n_kids; i++) {
		if (!d->kids[i].n[1])
			continue;
		if (fabs(change(w, &d->kids[i])) > w->max_change)
			w->max_change = fabs(change(w, &d->kids[i]));
		if (depth + 1 > w->depth)
			w->depth = depth + 1;
		measure(w, &d->kids[i], depth + 1);
	}
}

/* Red for growth, blue for shrinking, as strong as the change against the largest. */
static void colour(const struct draw *w, double c, char *buf, size_t len)
{
	double t = w->max_change > 0 ? fabs(c) / w->max_change : 0;
	int fade = (int)lround(255.0 * (1.0 - t));

	if (c > 0)
		snprintf(buf, len, "#ff%02x%02x", fade, fade);
	else if (c < 0)
		snprintf(buf, len, "#%02x%02xff", fade, fade);
	else
		snprintf(buf, len, "#ffffff");
}

static void boxes(struct draw *w, const struct dnode *d, double x, int y)
{
	for (size_t i = 0; i < d->n_kids; i++) {
		const struct dnode *k = &d->kids[i];
		double wd = (double)k->n[1] * w->px, c = change(w, k);
		char fill[16];

		if (!k->n[1])
			continue;
		colour(w, c, fill, sizeof(fill));
		fputs("<g><title>", w->f);
		svg_xml_put(w->f, k->frame, SIZE_MAX, 4096);
		fprintf(w->f,
			" A %llu (%.2f%%) B %llu (%.2f%%) change %+.2f points</title>"
			"<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
			"stroke=\"#c0c0c0\"/>",
			k->n[0], (double)k->n[0] * w->share[0], k->n[1],
			(double)k->n[1] * w->share[1], c, x, y, wd, DS_ROW - 1, fill);
		if (wd > 3 * DS_CHAR_W) {
			fprintf(w->f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\">", x + 3,
				y + DS_ROW - 6);
			svg_xml_put(w->f, k->frame, SIZE_MAX, (size_t)((wd - 6) / DS_CHAR_W));
			fputs("</text>", w->f);
		}
		fputs("</g>\n", w->f);
		boxes(w, k, x, y + DS_ROW);
		x += wd;
	}
}

static void header(struct draw *w, const struct dnode *root, const char *title)
{
	fprintf(w->f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%d\" "
		"font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%.0f\" y=\"20\" font-size=\"15\">",
		DS_W, DS_TOP + w->depth * DS_ROW + 20, DS_MARGIN);
	svg_xml_put(w->f, title, SIZE_MAX, 4096);
	fprintf(w->f,
		"</text>\n<text x=\"%.0f\" y=\"36\" font-size=\"11\">A: %llu samples, B: %llu. "
		"Width: B's samples. Red: a larger share of the samples in B than in A; blue: "
		"smaller; white: the same (strongest: %.2f points).</text>\n"
		"<text x=\"%.0f\" y=\"50\" font-size=\"11\">Frames that only A has take no "
		"width: the text table lists them.</text>\n",
		DS_MARGIN, root->n[0], root->n[1], w->max_change, DS_MARGIN);
}

int rm_write_diff_svg(const char *path, const struct rm_prof *a, const struct rm_prof *b,
		      const char *title, char *err, size_t len)
{
	struct dnode root = {0};
	struct draw w = {0};
	struct rm_out out;
	int ret = -1;

	if (add_prof(&root, a, 0) || add_prof(&root, b, 1)) {
		snprintf(err, len, "cannot write the flame graph %s: out of memory", path);
		goto out;
	}
	w.share[0] = root.n[0] ? 100.0 / (double)root.n[0] : 0;
	w.share[1] = root.n[1] ? 100.0 / (double)root.n[1] : 0;
	w.px = root.n[1] ? (DS_W - 2 * DS_MARGIN) / (double)root.n[1] : 0;
	measure(&w, &root, 0);
	if (rm_out_open(&out, path, "flame graph", err, len))
		goto out;
	w.f = out.f;
	header(&w, &root, title);
	boxes(&w, &root, DS_MARGIN, DS_TOP);
	fputs("</svg>\n", out.f);
	ret = rm_out_close(&out, err, len);
out:
	tree_free(&root);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * --stacks on rank 0: the merged tree as text after the summary, as
 * `stacks` in the report, and as an SVG (--stacks-svg): an icicle chart,
 * outermost frames on top, each box as wide as its threads, labelled with
 * its frame and its ranks. A box whose ranks are not all of its parent's
 * is drawn in another colour: the odd rank out stands out.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"
#include "svg.h"
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

struct leaf {
	char *frame;
	unsigned long long count;
};

static int leaf_cmp(const void *a, const void *b)
{
	const struct leaf *x = a, *y = b;

	return x->count != y->count ? (x->count > y->count ? -1 : 1) : strcmp(x->frame, y->frame);
}

/* The innermost frames of the kept samples, by count (the caller frees). */
static struct leaf *leaves(const struct rm_run *r, size_t *n, unsigned long long *total)
{
	char *copy = strndup(r->samples_text ? r->samples_text : "", r->samples_len), *save = NULL;
	struct leaf *v = NULL, *grown;

	*n = 0;
	*total = 0;
	for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' '), *leaf;
		unsigned long long count;
		size_t i;

		if (!sp)
			continue;
		count = strtoull(sp + 1, NULL, 10);
		*sp = '\0';
		leaf = strrchr(l, ';');
		leaf = leaf ? leaf + 1 : l;
		*total += count;
		for (i = 0; i < *n && strcmp(v[i].frame, leaf); i++)
			;
		if (i == *n) {
			grown = realloc(v, (*n + 1) * sizeof(*v));
			if (!grown || !(grown[i].frame = strdup(leaf))) {
				v = grown ? grown : v;
				break;
			}
			v = grown;
			v[(*n)++].count = 0;
		}
		v[i].count += count;
	}
	free(copy);
	if (*n > 1)
		qsort(v, *n, sizeof(*v), leaf_cmp);
	return v;
}

static void print_samples(FILE *out, const struct rm_run *r)
{
	unsigned long long total;
	size_t n;
	struct leaf *v = leaves(r, &n, &total);

	fprintf(out, "samples at %d Hz of each thread's CPU time: %llu in all", r->sample_hz,
		total);
	fputs(total ? "; where they were taken (innermost frame):\n" : "\n", out);
	for (size_t i = 0; i < n; i++) {
		if (i < 10)
			fprintf(out, "  %5.1f%% %8llu  %s\n",
				100.0 * (double)v[i].count / (double)total, v[i].count, v[i].frame);
		free(v[i].frame);
	}
	if (n > 10)
		fprintf(out, "  (%zu more frames: see --folded or --flamegraph)\n", n - 10);
	free(v);
	if (r->samples_missing)
		fprintf(out,
			"  (%zu target%s gave no samples: not attached, or no file from "
			"the tool)\n",
			r->samples_missing, r->samples_missing == 1 ? "" : "s");
	if (r->samples_refused)
		fprintf(out, "  (%zu sample line%s from the nodes could not be read: left out)\n",
			r->samples_refused, r->samples_refused == 1 ? "" : "s");
}

void rm_print_stacks(FILE *out, const struct rm_run *r)
{
	if (r->stacks) {
		fputs("stacks at the window's start (ranks that share a whole stack make one "
		      "line):\n",
		      out);
		ra_stack_tree_print(r->stacks, out);
	}
	if (r->samples)
		print_samples(out, r);
	if (r->stacks || r->samples)
		notes(out, r);
}

json_t *rm_stacks_json(const struct rm_run *r)
{
	return r->stacks ? ra_stack_tree_json(r->stacks) : json_null();
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

/* The boxes of kids, from x, one row below y; px: width of one unit (thread or sample). */
static void boxes(FILE *f, json_t *kids, const char *parent_ranks, double x, int y, double px,
		  const char *unit)
{
	size_t i;
	json_t *k;

	json_array_foreach (kids, i, k) {
		const char *frame = json_string_value(json_object_get(k, "frame"));
		const char *ranks = json_string_value(json_object_get(k, "ranks"));
		long long count = json_integer_value(json_object_get(k, "threads"));
		double w = (double)count * px;
		bool split = parent_ranks && strcmp(parent_ranks, ranks);

		fprintf(f, "<g><title>");
		svg_xml_put(f, frame, SIZE_MAX, 4096);
		fprintf(f, " [ranks %s] %lld %s%s</title>", ranks, count, unit,
			count == 1 ? "" : "s");
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
			svg_xml_put(f, label, SIZE_MAX, max);
			fputs("</text>", f);
		}
		fputs("</g>\n", f);
		boxes(f, json_object_get(k, "children"), ranks, x, y + ST_ROW, px, unit);
		x += w;
	}
}

/* A tree (its JSON) as an icicle chart: title, then the boxes. */
static int write_tree_svg(const char *path, const char *what, json_t *tree, const char *title,
			  const char *unit, char *err, size_t len)
{
	long long total = 0;
	struct rm_out out;
	size_t i;
	json_t *k;
	int h;

	if (!json_is_array(tree)) {
		snprintf(err, len, "cannot write the %s %s: out of memory", what, path);
		return -1;
	}
	json_array_foreach (tree, i, k)
		total += json_integer_value(json_object_get(k, "threads"));
	h = ST_TOP + (int)depth_of(tree) * ST_ROW + 30;
	if (rm_out_open(&out, path, what, err, len))
		return -1;
	fprintf(out.f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%d\" "
		"font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%.0f\" y=\"20\" font-size=\"15\">",
		ST_W, h, ST_MARGIN);
	svg_xml_put(out.f, title, SIZE_MAX, 4096);
	fprintf(out.f,
		": %lld %s%s (outermost frame on top)</text>\n"
		"<text x=\"%.0f\" y=\"36\" font-size=\"11\">Width: %ss. Red: fewer ranks "
		"than the frame above.</text>\n",
		total, unit, total == 1 ? "" : "s", ST_MARGIN, unit);
	if (total)
		boxes(out.f, tree, NULL, ST_MARGIN, ST_TOP, (ST_W - 2 * ST_MARGIN) / (double)total,
		      unit);
	else
		fprintf(out.f,
			"<text x=\"%.0f\" y=\"%d\" font-size=\"13\">None were gathered.</text>\n",
			ST_MARGIN, ST_TOP + 14);
	fputs("</svg>\n", out.f);
	return rm_out_close(&out, err, len);
}

int rm_write_stacks_svg(const char *path, const struct rm_run *r, char *err, size_t len)
{
	json_t *tree = rm_stacks_json(r);
	int ret =
	    write_tree_svg(path, "stacks' SVG", tree,
			   "rocattach-mpi --stacks at the window's start", "thread", err, len);

	json_decref(tree);
	return ret;
}

/* Lines into a growing buffer (text, len, cap), each ending in a newline. */
static int grow_keep(char **text, size_t *used, size_t *cap, const char *lines, size_t len)
{
	if (*used + len + 2 > *cap) {
		size_t want = (*used + len + 2) * 2;
		char *grown = realloc(*text, want);

		if (!grown)
			return -1;
		*text = grown;
		*cap = want;
	}
	memcpy(*text + *used, lines, len);
	*used += len;
	if (*used && (*text)[*used - 1] != '\n')
		(*text)[(*used)++] = '\n';
	(*text)[*used] = '\0';
	return 0;
}

int rm_samples_keep(struct rm_run *r, const char *lines, size_t len)
{
	return grow_keep(&r->samples_text, &r->samples_len, &r->samples_cap, lines, len);
}

int rm_timed_keep(struct rm_run *r, const char *lines, size_t len, int64_t applied_ns)
{
	char *copy = strndup(lines, len), *save = NULL, *line;
	int ret = copy ? 0 : -1;

	/* host, rank, pid, tid, then ns: the fifth field is in the node's clock. */
	for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l && !ret;
	     l = strtok_r(NULL, "\n", &save)) {
		char *f = l, *end;
		unsigned long long ns;

		for (int i = 0; i < 4 && f; i++)
			f = strchr(f, '\t') ? strchr(f, '\t') + 1 : NULL;
		if (!f)
			continue;
		ns = strtoull(f, &end, 10);
		if (*end != '\t')
			continue;
		if (asprintf(&line, "%.*s%lld%s", (int)(f - l), l,
			     (long long)ns - (long long)applied_ns, end) < 0)
			ret = -1;
		else
			ret = grow_keep(&r->timed_text, &r->timed_len, &r->timed_cap, line,
					strlen(line));
		free(line);
	}
	free(copy);
	return ret;
}

int rm_write_folded(const char *path, const struct rm_run *r, char *err, size_t len)
{
	struct rm_out out;

	if (rm_out_open(&out, path, "folded samples", err, len))
		return -1;
	if (r->samples_len)
		fwrite(r->samples_text, 1, r->samples_len, out.f);
	return rm_out_close(&out, err, len);
}

/* "host;rank N;..." -> N, or -1. */
static long line_rank(const char *line)
{
	const char *p = strstr(line, ";rank ");

	return p && (!strchr(line, ';') || strchr(line, ';') == p) ? strtol(p + 6, NULL, 10) : -1;
}

struct rank_tree {
	long rank;
	struct ra_stack_tree *t;
};

/* One tree per rank, of the kept lines (lines of one rank come together: a node's targets). */
static struct rank_tree *per_rank(const struct rm_run *r, size_t *n)
{
	struct rank_tree *v = NULL, *grown;
	char *copy = strndup(r->samples_text ? r->samples_text : "", r->samples_len), *save = NULL;
	char err[256];
	size_t last = 0;

	*n = 0;
	for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		long rank = line_rank(l);

		if (rank < 0)
			continue;
		if (!*n || v[last].rank != rank) {
			for (last = 0; last < *n && v[last].rank != rank; last++)
				;
			if (last == *n) {
				grown = realloc(v, (*n + 1) * sizeof(*v));
				if (!grown || !(grown[*n].t = ra_stack_tree_new())) {
					v = grown ? grown : v;
					break;
				}
				v = grown;
				v[(*n)++].rank = rank;
			}
		}
		(void)ra_stack_tree_add_folded(v[last].t, l, err, sizeof(err));
	}
	free(copy);
	return v;
}

/* FILE.svg -> FILE.rank<N>.svg */
static void rank_path(const char *path, long rank, char *out, size_t len)
{
	size_t n = strlen(path);

	if (n > 4 && !strcmp(path + n - 4, ".svg"))
		n -= 4;
	snprintf(out, len, "%.*s.rank%ld.svg", (int)n, path, rank);
}

int rm_write_flamegraph(const char *path, const struct rm_run *r, char *err, size_t len)
{
	char title[128], file[4200];
	struct rank_tree *v;
	json_t *tree;
	size_t n;
	int ret;

	snprintf(title, sizeof(title), "rocattach-mpi --sample %d, every rank", r->sample_hz);
	tree = r->samples ? ra_stack_tree_json(r->samples) : NULL;
	ret = write_tree_svg(path, "flame graph", tree, title, "sample", err, len);
	json_decref(tree);
	if (ret || !r->flame_per_rank)
		return ret;
	v = per_rank(r, &n);
	for (size_t i = 0; i < n; i++) {
		rank_path(path, v[i].rank, file, sizeof(file));
		snprintf(title, sizeof(title), "rocattach-mpi --sample %d, rank %ld", r->sample_hz,
			 v[i].rank);
		tree = ra_stack_tree_json(v[i].t);
		if (!ret)
			ret = write_tree_svg(file, "flame graph", tree, title, "sample", err, len);
		json_decref(tree);
		ra_stack_tree_free(v[i].t);
	}
	free(v);
	return ret;
}

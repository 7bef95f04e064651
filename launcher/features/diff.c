/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi --diff A B (diff.h): two --folded files read whole, each
 * function's self and total samples counted on both sides, and the ones
 * whose share changed most printed; with --flamegraph, the differential
 * flame graph (report/diff_svg.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/outpath.h"
#include "diff.h"

#define DIFF_MAX_BYTES (1ull << 30)
#define DIFF_FIX "give a file that rocattach-mpi --sample HZ --folded FILE wrote"

/* The whole file, NUL-terminated; NULL with the reason in err. */
static char *slurp(const char *path, size_t *len, char *err, size_t elen)
{
	FILE *f = fopen(path, "re");
	const char *why = NULL;
	struct stat st;
	char *buf = NULL;

	if (!f || fstat(fileno(f), &st))
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if ((unsigned long long)st.st_size > DIFF_MAX_BYTES)
		why = "larger than 1 GiB";
	if (why) {
		snprintf(err, elen, "--diff: cannot read %s: %s: %s", path, why, DIFF_FIX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	*len = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	if (!buf || ferror(f)) {
		snprintf(err, elen, "--diff: cannot read %s: %s: %s", path,
			 buf ? strerror(errno) : "out of memory", DIFF_FIX);
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[*len] = '\0';
out:
	if (f)
		fclose(f);
	return buf;
}

/* Why text is not folded lines at a glance (a report, a binary file), or NULL. */
static const char *not_folded(const char *text, size_t len)
{
	size_t i = strspn(text, " \t\r\n");

	if (i == len)
		return "is empty: it holds no samples";
	if (text[i] == '{' || text[i] == '[')
		return "is JSON (a report?), not folded lines: a report does not hold the "
		       "samples";
	if (memchr(text, '\0', len) ||
	    ((unsigned char)text[0] == 0x1f && len > 1 && (unsigned char)text[1] == 0x8b))
		return "is binary (gzip or pprof?), not folded lines";
	return NULL;
}

int rm_diff_load(const char *path, struct rm_prof *p, char *err, size_t len)
{
	size_t n = 0, bad = 0;
	char *text = slurp(path, &n, err, len);
	const char *why;
	int ret = -1;

	memset(p, 0, sizeof(*p));
	if (!text)
		return -1;
	if ((why = not_folded(text, n)))
		snprintf(err, len, "--diff: %s %s: %s", path, why, DIFF_FIX);
	else if (rm_prof_add_folded(p, text, n, &bad))
		snprintf(err, len,
			 bad ? "--diff: %s line %zu is not a folded stack (FRAME;...;FRAME COUNT): "
			       "%s"
			     : "--diff: %s: out of memory%.0zu%s",
			 path, bad, bad ? DIFF_FIX : "");
	else if (!p->total)
		snprintf(err, len, "--diff: %s holds no samples: %s", path, DIFF_FIX);
	else
		ret = rm_prof_merge(p);
	free(text);
	if (ret)
		rm_prof_free(p);
	return ret;
}

/* Every frame of p named in d (first pass). */
static int name_all(struct rm_diff *d, const struct rm_prof *p)
{
	for (size_t i = 0; i < p->n; i++) {
		char *copy = strdup(p->v[i].stack), **fr = NULL;
		size_t n = copy ? rm_prof_split(copy, &fr) : 0, k;

		for (k = 0; k < n && rm_strtab_id(&d->names, fr[k]) >= 0; k++)
			;
		free(fr);
		free(copy);
		if (!n || k < n)
			return -1;
	}
	return 0;
}

/* p's counts into side s; seen: a stamp per name, so a recursive frame counts once. */
static int count_all(struct rm_diff *d, const struct rm_prof *p, int s, size_t *seen)
{
	for (size_t i = 0; i < p->n; i++) {
		char *copy = strdup(p->v[i].stack), **fr = NULL;
		size_t n = copy ? rm_prof_split(copy, &fr) : 0, stamp = 2 * i + (size_t)s + 1;

		for (size_t k = 0; k < n; k++) {
			long id = rm_strtab_id(&d->names, fr[k]);

			if (seen[id] != stamp)
				d->v[id].total[s] += p->v[i].count;
			seen[id] = stamp;
			if (k == n - 1)
				d->v[id].self[s] += p->v[i].count;
		}
		free(fr);
		free(copy);
		if (!n)
			return -1;
		d->samples[s] += p->v[i].count;
	}
	return 0;
}

int rm_diff_build(const struct rm_prof *a, const struct rm_prof *b, struct rm_diff *d)
{
	size_t *seen = NULL;
	int ret = -1;

	memset(d, 0, sizeof(*d));
	if (name_all(d, a) || name_all(d, b))
		goto out;
	d->v = calloc(d->names.n + 1, sizeof(*d->v));
	seen = calloc(d->names.n + 1, sizeof(*seen));
	if (!d->v || !seen)
		goto out;
	for (size_t i = 0; i < d->names.n; i++)
		d->v[i].frame = d->names.s[i];
	ret = count_all(d, a, 0, seen) || count_all(d, b, 1, seen) ? -1 : 0;
out:
	free(seen);
	if (ret)
		rm_diff_free(d);
	return ret;
}

void rm_diff_free(struct rm_diff *d)
{
	free(d->v);
	rm_strtab_free(&d->names);
	memset(d, 0, sizeof(*d));
}

static double share(unsigned long long n, unsigned long long of)
{
	return of ? 100.0 * (double)n / (double)of : 0;
}

double rm_diff_change(const struct rm_diff *d, const struct rm_diff_row *r, int total)
{
	const unsigned long long *n = total ? r->total : r->self;

	return share(n[1], d->samples[1]) - share(n[0], d->samples[0]);
}

struct order {
	const struct rm_diff *d;
	int total;
};

static struct order sort_by;

static int change_cmp(const void *x, const void *y)
{
	const struct rm_diff_row *a = *(const struct rm_diff_row *const *)x;
	const struct rm_diff_row *b = *(const struct rm_diff_row *const *)y;
	double ca = rm_diff_change(sort_by.d, a, sort_by.total);
	double cb = rm_diff_change(sort_by.d, b, sort_by.total);

	if (ca < 0)
		ca = -ca;
	if (cb < 0)
		cb = -cb;
	return ca != cb ? (ca > cb ? -1 : 1) : strcmp(a->frame, b->frame);
}

/* One table: the top rows by the change of self (total 0) or total (1) share. */
static void table(FILE *out, const struct rm_diff *d, size_t top, int total,
		  const struct rm_diff_row **rows)
{
	size_t shown = 0;

	sort_by = (struct order){d, total};
	qsort(rows, d->names.n, sizeof(*rows), change_cmp);
	fprintf(out, "%s, the %zu that changed most:\n",
		total ? "total share (the function anywhere in the stack)"
		      : "self share (the function as the innermost frame)",
		top);
	fputs("     A %     B %   change  function\n", out);
	for (size_t i = 0; i < d->names.n && shown < top; i++) {
		const unsigned long long *n = total ? rows[i]->total : rows[i]->self;
		double c = rm_diff_change(d, rows[i], total);

		if (c == 0)
			break;
		fprintf(out, "  %6.1f  %6.1f  %+7.1f  %s\n", share(n[0], d->samples[0]),
			share(n[1], d->samples[1]), c, rows[i]->frame);
		shown++;
	}
	if (!shown)
		fputs("  (no function's share changed)\n", out);
}

void rm_diff_print(FILE *out, const struct rm_diff *d, size_t top, const char *a, const char *b)
{
	const struct rm_diff_row **rows = malloc((d->names.n + 1) * sizeof(*rows));

	fprintf(out,
		"--diff: A %s: %llu samples; B %s: %llu samples. Shares in %% of each "
		"file's samples; change in points (B - A).\n",
		a, d->samples[0], b, d->samples[1]);
	if (!rows) {
		fputs("  (out of memory)\n", out);
		return;
	}
	for (size_t i = 0; i < d->names.n; i++)
		rows[i] = &d->v[i];
	table(out, d, top, 0, rows);
	table(out, d, top, 1, rows);
	free(rows);
}

#define DIFF_USAGE "rocattach-mpi --diff A B [--top N] [--flamegraph OUT.svg]"

/* The mode's options into path, top and svg; 0, or -1 with the reason in err. */
static int diff_args(int argc, char **argv, const char **path, long *top, const char **svg,
		     char *err, size_t len)
{
	int n = 0;

	for (int i = 2; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--top") && i + 1 < argc) {
			*top = strtol(argv[++i], &end, 10);
			if (*end || end == argv[i] || *top < 1 || *top > 100000) {
				snprintf(err, len, "--diff: invalid --top '%s': give 1 to 100000",
					 argv[i]);
				return -1;
			}
		} else if (!strcmp(argv[i], "--flamegraph") && i + 1 < argc) {
			*svg = argv[++i];
		} else if ((argv[i][0] == '-' && argv[i][1]) || n == 2) {
			snprintf(err, len, "--diff: unexpected '%s': %s", argv[i], DIFF_USAGE);
			return -1;
		} else {
			path[n++] = argv[i];
		}
	}
	if (n < 2) {
		snprintf(err, len, "--diff needs two folded files: %s", DIFF_USAGE);
		return -1;
	}
	return *svg ? ra_outpath_check(*svg, "--flamegraph", err, len) : 0;
}

int rm_diff_main(int argc, char **argv)
{
	const char *path[2] = {NULL, NULL}, *svg = NULL;
	struct rm_prof p[2] = {{0}, {0}};
	struct rm_diff d = {0};
	char err[1024], title[512];
	long top = 10;
	int code = RM_DIFF_BAD;

	if (diff_args(argc, argv, path, &top, &svg, err, sizeof(err)) ||
	    rm_diff_load(path[0], &p[0], err, sizeof(err)) ||
	    rm_diff_load(path[1], &p[1], err, sizeof(err)))
		goto out;
	code = RM_DIFF_NOT_WRITTEN;
	if (rm_diff_build(&p[0], &p[1], &d)) {
		snprintf(err, sizeof(err), "--diff: out of memory");
		goto out;
	}
	rm_diff_print(stdout, &d, (size_t)top, path[0], path[1]);
	snprintf(title, sizeof(title), "rocattach-mpi --diff: A %s, B %s", path[0], path[1]);
	if (svg && rm_write_diff_svg(svg, &p[0], &p[1], title, err, sizeof(err)))
		goto out;
	if (svg)
		printf("flame graph written to %s\n", svg);
	code = RM_DIFF_OK;
out:
	if (code)
		fprintf(stderr, "rocattach-mpi: %s\n", err);
	rm_diff_free(&d);
	rm_prof_free(&p[0]);
	rm_prof_free(&p[1]);
	return code;
}

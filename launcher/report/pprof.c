/* SPDX-License-Identifier: MIT */
/*
 * --pprof FILE: the samples as a pprof profile, Google's profile.proto
 * (launcher/report/proto/profile.proto, google/pprof as is; its C is made by
 * protoc-c at build time), gzipped as the format asks.
 *
 * Values: samples/count, and with a known rate cpu/nanoseconds = count x
 * period, the period 1/HZ second of the thread's CPU time (the sampler's
 * timer interval: an estimate of the CPU time, not a measurement of it).
 * Each distinct frame is one function and one location (ids from 1, the
 * same for both); a frame's text is the function's name, whatever its form.
 * Labels: rank (num), host (str), thread (str: the tid) and pid (num) where
 * the lines carry them (folded lines carry no thread: no such label).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "profile.pb-c.h"
#include "profiles.h"
#include "report_int.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

#define MAX_LABELS 4

struct build {
	struct rm_strtab str;	 /* the profile's string table, "" first */
	struct rm_strtab frames; /* frame i: function and location i + 1 */
	Profile prof;
	ValueType vt[2], period_type, *vt_ptr[2];
	Sample *samples, **sample_ptr;
	Label *labels, **label_ptr;
	uint64_t *loc_ids;
	int64_t *values, comment;
	Function *fn, **fn_ptr;
	Location *loc, **loc_ptr;
	Line *line, **line_ptr;
};

/* s's index in the string table; -1 out of memory. */
static int64_t str(struct build *b, const char *s)
{
	return rm_strtab_id(&b->str, s);
}

static int label(struct build *b, Label *l, const char *key, const char *s, long num)
{
	perftools__profiles__label__init(l);
	l->key = str(b, key);
	if (s)
		l->str = str(b, s);
	else
		l->num = num;
	return l->key < 0 || l->str < 0 ? -1 : 0;
}

/* Sample i's labels; how many. */
static size_t sample_labels(struct build *b, const struct rm_prof_sample *s, Label *l)
{
	char tid[24];
	size_t n = 0;

	if (label(b, &l[n++], "rank", NULL, s->rank) || label(b, &l[n++], "host", s->host, 0))
		return 0;
	if (s->tid >= 0) {
		snprintf(tid, sizeof(tid), "%ld", s->tid);
		if (label(b, &l[n++], "thread", tid, 0))
			return 0;
	}
	if (s->pid >= 0 && label(b, &l[n++], "pid", NULL, s->pid))
		return 0;
	return n;
}

/* One sample: its locations leaf first, its values, its labels. */
static int one_sample(struct build *b, const struct rm_prof *p, size_t i, size_t *at,
		      int64_t period)
{
	const struct rm_prof_sample *s = &p->v[i];
	Sample *smp = &b->samples[i];
	char *copy = strdup(s->stack), **fr = NULL;
	size_t n = copy ? rm_prof_split(copy, &fr) : 0, k;
	int ret = -1;

	perftools__profiles__sample__init(smp);
	if (!n)
		goto out;
	smp->location_id = &b->loc_ids[*at];
	for (k = 0; k < n; k++) {
		long id = rm_strtab_id(&b->frames, fr[n - 1 - k]);

		if (id < 0)
			goto out;
		smp->location_id[k] = (uint64_t)id + 1;
	}
	smp->n_location_id = n;
	*at += n;
	smp->value = &b->values[2 * i];
	smp->value[0] = (int64_t)s->count;
	smp->value[1] = (int64_t)s->count * period;
	smp->n_value = period ? 2 : 1;
	smp->label = &b->label_ptr[MAX_LABELS * i];
	for (k = 0; k < MAX_LABELS; k++)
		smp->label[k] = &b->labels[MAX_LABELS * i + k];
	smp->n_label = sample_labels(b, s, b->labels + MAX_LABELS * i);
	ret = smp->n_label ? 0 : -1;
out:
	free(fr);
	free(copy);
	return ret;
}

/* Frames in all of p's stacks (a location id each). */
static size_t frames_in(const struct rm_prof *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++) {
		n++;
		for (const char *c = p->v[i].stack; *c; c++)
			n += *c == ';';
	}
	return n;
}

static int alloc_samples(struct build *b, const struct rm_prof *p)
{
	size_t n = p->n ? p->n : 1;

	b->samples = calloc(n, sizeof(*b->samples));
	b->sample_ptr = calloc(n, sizeof(*b->sample_ptr));
	b->labels = calloc(n * MAX_LABELS, sizeof(*b->labels));
	b->label_ptr = calloc(n * MAX_LABELS, sizeof(*b->label_ptr));
	b->values = calloc(2 * n, sizeof(*b->values));
	b->loc_ids = calloc(frames_in(p) + 1, sizeof(*b->loc_ids));
	return b->samples && b->sample_ptr && b->labels && b->label_ptr && b->values && b->loc_ids
		   ? 0
		   : -1;
}

/* A function, a location and its line for each distinct frame. */
static int functions(struct build *b)
{
	size_t n = b->frames.n ? b->frames.n : 1;

	b->fn = calloc(n, sizeof(*b->fn));
	b->fn_ptr = calloc(n, sizeof(*b->fn_ptr));
	b->loc = calloc(n, sizeof(*b->loc));
	b->loc_ptr = calloc(n, sizeof(*b->loc_ptr));
	b->line = calloc(n, sizeof(*b->line));
	b->line_ptr = calloc(n, sizeof(*b->line_ptr));
	if (!b->fn || !b->fn_ptr || !b->loc || !b->loc_ptr || !b->line || !b->line_ptr)
		return -1;
	for (size_t i = 0; i < b->frames.n; i++) {
		perftools__profiles__function__init(&b->fn[i]);
		b->fn[i].id = i + 1;
		b->fn[i].name = b->fn[i].system_name = str(b, b->frames.s[i]);
		if (b->fn[i].name < 0)
			return -1;
		b->fn_ptr[i] = &b->fn[i];
		perftools__profiles__line__init(&b->line[i]);
		b->line[i].function_id = i + 1;
		b->line_ptr[i] = &b->line[i];
		perftools__profiles__location__init(&b->loc[i]);
		b->loc[i].id = i + 1;
		b->loc[i].n_line = 1;
		b->loc[i].line = &b->line_ptr[i];
		b->loc_ptr[i] = &b->loc[i];
	}
	return 0;
}

static int value_type(struct build *b, ValueType *v, const char *type, const char *unit)
{
	perftools__profiles__value_type__init(v);
	v->type = str(b, type);
	v->unit = str(b, unit);
	return v->type < 0 || v->unit < 0 ? -1 : 0;
}

/* The profile's header: value types, period, comment. */
static int header(struct build *b, int64_t period, const char *comment)
{
	Profile *pr = &b->prof;

	perftools__profiles__profile__init(pr);
	if (str(b, "") || value_type(b, &b->vt[0], "samples", "count") ||
	    value_type(b, &b->vt[1], "cpu", "nanoseconds") ||
	    value_type(b, &b->period_type, "cpu", "nanoseconds"))
		return -1;
	b->vt_ptr[0] = &b->vt[0];
	b->vt_ptr[1] = &b->vt[1];
	pr->sample_type = b->vt_ptr;
	pr->n_sample_type = period ? 2 : 1;
	if (period) {
		pr->period_type = &b->period_type;
		pr->period = period;
	}
	pr->default_sample_type = b->vt[0].type;
	if (comment) {
		if ((b->comment = str(b, comment)) < 0)
			return -1;
		pr->comment = &b->comment;
		pr->n_comment = 1;
	}
	return 0;
}

static int build(struct build *b, const struct rm_prof *p, const char *comment)
{
	int64_t period = p->hz > 0 ? (1000000000 + p->hz / 2) / p->hz : 0;
	size_t at = 0;

	if (header(b, period, comment) || alloc_samples(b, p))
		return -1;
	for (size_t i = 0; i < p->n; i++) {
		if (one_sample(b, p, i, &at, period))
			return -1;
		b->sample_ptr[i] = &b->samples[i];
	}
	if (functions(b))
		return -1;
	b->prof.sample = b->sample_ptr;
	b->prof.n_sample = p->n;
	b->prof.function = b->fn_ptr;
	b->prof.n_function = b->frames.n;
	b->prof.location = b->loc_ptr;
	b->prof.n_location = b->frames.n;
	b->prof.string_table = b->str.s;
	b->prof.n_string_table = b->str.n;
	return 0;
}

static void build_free(struct build *b)
{
	rm_strtab_free(&b->str);
	rm_strtab_free(&b->frames);
	free(b->samples);
	free(b->sample_ptr);
	free(b->labels);
	free(b->label_ptr);
	free(b->loc_ids);
	free(b->values);
	free(b->fn);
	free(b->fn_ptr);
	free(b->loc);
	free(b->loc_ptr);
	free(b->line);
	free(b->line_ptr);
}

/* in[0..n) gzipped into f. */
static int gzip_to(FILE *f, const uint8_t *in, size_t n)
{
	z_stream z = {0};
	uint8_t *out;
	size_t cap;
	int ret = -1;

	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -1;
	cap = deflateBound(&z, (uLong)n);
	out = malloc(cap);
	if (!out)
		goto out;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) == Z_STREAM_END &&
	    fwrite(out, 1, cap - z.avail_out, f) == cap - z.avail_out)
		ret = 0;
out:
	deflateEnd(&z);
	free(out);
	return ret;
}

int rm_pprof_write(FILE *f, const struct rm_prof *p, const char *comment, char *err, size_t len)
{
	struct build b;
	uint8_t *buf = NULL;
	size_t n;
	int ret = -1;

	memset(&b, 0, sizeof(b));
	if (build(&b, p, comment)) {
		snprintf(err, len, "out of memory");
		goto out;
	}
	n = perftools__profiles__profile__get_packed_size(&b.prof);
	buf = malloc(n ? n : 1);
	if (!buf || perftools__profiles__profile__pack(&b.prof, buf) != n) {
		snprintf(err, len, "out of memory");
		goto out;
	}
	ret = gzip_to(f, buf, n);
	if (ret)
		snprintf(err, len, "gzip failed");
out:
	free(buf);
	build_free(&b);
	return ret;
}

int rm_write_pprof(const char *path, const struct rm_run *r, char *err, size_t len)
{
	char comment[160];

	snprintf(comment, sizeof(comment),
		 "rocattach-mpi --sample %d: cpu nanoseconds = samples x 1/%d s, an estimate from "
		 "the sampling rate",
		 r->sample_hz, r->sample_hz);
	return rm_prof_write_file(path, r, "pprof profile", rm_pprof_write, comment, err, len);
}

/* SPDX-License-Identifier: MIT */
/*
 * --pprof, --speedscope and --diff on fixed samples with known answers
 * (launcher/report/profiles.h, launcher/features/diff.h). The profiles are
 * read back with decoders we did not write: protobuf-c's unpacker on the
 * gunzipped pprof (zlib), jansson on the speedscope JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <zlib.h>

#include "diff.h"
#include "profile.pb-c.h"
#include "profiles.h"

/* Two ranks on two hosts; rank 1's "main" stack appears twice (merged). */
static const char folded[] = "node1;rank 0;_start;main;compute;hot 6\n"
			     "node1;rank 0;_start;main;wait 2\n"
			     "node2;rank 1;_start;main;compute;hot 3\n"
			     "node2;rank 1;_start;main;compute;hot 1\n"
			     "node2;rank 1;f (x.py:3);g (x.py:9) 4\n";

/* Timed lines: host, rank, pid, tid, ns, stack; tid 11's two "hot" samples merge. */
static const char timed[] = "node1\t0\t100\t11\t5\t_start;main;hot\n"
			    "node1\t0\t100\t12\t6\t_start;main;wait\n"
			    "node1\t0\t100\t11\t7\t_start;main;hot\n"
			    "node2\t1\t200\t21\t8\t_start;main;hot\n";

static void test_folded_in(void **state)
{
	struct rm_prof p = {0};
	size_t bad = 99;

	(void)state;
	assert_int_equal(rm_prof_add_folded(&p, folded, strlen(folded), &bad), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(rm_prof_merge(&p), 0);
	assert_int_equal(p.total, 16);
	assert_int_equal(p.n, 4); /* the two rank 1 "hot" lines are one */
	assert_string_equal(p.v[0].host, "node1");
	assert_int_equal(p.v[0].rank, 0);
	assert_int_equal(p.v[0].tid, -1); /* folded lines carry no thread */
	assert_string_equal(p.v[2].stack, "_start;main;compute;hot");
	assert_int_equal(p.v[2].count, 4);
	assert_string_equal(p.v[3].stack, "f (x.py:3);g (x.py:9)");
	rm_prof_free(&p);
}

static void test_folded_bad_line(void **state)
{
	static const char *bad_text[] = {"a;rank 0;main 3\nno count here\n", "a;rank 0;main 0\n",
					 "a;rank 0;main -2\n", "a;rank 0; 3\n", "x 3 4\n7\n"};
	static const size_t at[] = {2, 1, 1, 1, 2};

	(void)state;
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		struct rm_prof p = {0};
		size_t bad = 0;

		assert_int_equal(rm_prof_add_folded(&p, bad_text[i], strlen(bad_text[i]), &bad),
				 -1);
		assert_int_equal(bad, at[i]);
		rm_prof_free(&p);
	}
}

static void test_timed_in(void **state)
{
	struct rm_prof p = {0};
	size_t bad = 0;

	(void)state;
	assert_int_equal(rm_prof_add_timed(&p, timed, strlen(timed), &bad), 0);
	assert_int_equal(p.total, 4);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.v[0].tid, 11);
	assert_int_equal(p.v[0].pid, 100);
	assert_int_equal(p.v[0].count, 2);
	assert_int_equal(p.v[2].rank, 1);
	rm_prof_free(&p);
}

/* rm_pprof_write into memory, gunzipped with zlib, unpacked with protobuf-c. */
static Perftools__Profiles__Profile *pprof_of(const struct rm_prof *p)
{
	char *buf = NULL, err[128];
	size_t len = 0, cap = 1 << 20;
	FILE *f = open_memstream(&buf, &len);
	unsigned char *raw = malloc(cap);
	z_stream z = {0};
	Perftools__Profiles__Profile *prof;

	assert_non_null(f);
	assert_int_equal(rm_pprof_write(f, p, "test", err, sizeof(err)), 0);
	fclose(f);
	assert_true(len > 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (unsigned char *)buf;
	z.avail_in = (uInt)len;
	z.next_out = raw;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	prof = perftools__profiles__profile__unpack(NULL, cap - z.avail_out, raw);
	inflateEnd(&z);
	free(raw);
	free(buf);
	assert_non_null(prof);
	return prof;
}

static const char *label_str(const Perftools__Profiles__Profile *pr,
			     const Perftools__Profiles__Sample *s, const char *key, long *num)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(pr->string_table[s->label[i]->key], key)) {
			*num = s->label[i]->num;
			return pr->string_table[s->label[i]->str];
		}
	return NULL;
}

static void test_pprof(void **state)
{
	struct rm_prof p = {0};
	size_t bad = 0;
	Perftools__Profiles__Profile *pr;
	long long sum = 0, sum_ns = 0;
	long num = -1;

	(void)state;
	assert_int_equal(rm_prof_add_timed(&p, timed, strlen(timed), &bad), 0);
	p.hz = 100;
	pr = pprof_of(&p);
	assert_string_equal(pr->string_table[0], "");
	assert_int_equal(pr->n_sample_type, 2);
	assert_string_equal(pr->string_table[pr->sample_type[0]->type], "samples");
	assert_string_equal(pr->string_table[pr->sample_type[0]->unit], "count");
	assert_string_equal(pr->string_table[pr->sample_type[1]->type], "cpu");
	assert_string_equal(pr->string_table[pr->sample_type[1]->unit], "nanoseconds");
	assert_string_equal(pr->string_table[pr->period_type->type], "cpu");
	assert_int_equal(pr->period, 10000000); /* 1/100 s */
	/* _start, main, hot, wait: four functions and locations, each once. */
	assert_int_equal(pr->n_function, 4);
	assert_int_equal(pr->n_location, 4);
	assert_int_equal(pr->n_sample, 3);
	for (size_t i = 0; i < pr->n_sample; i++) {
		sum += pr->sample[i]->value[0];
		sum_ns += pr->sample[i]->value[1];
	}
	assert_int_equal(sum, 4);
	assert_int_equal(sum_ns, 4 * 10000000LL);
	/* The first: rank 0 on node1, thread 11, 2 samples of _start;main;hot, leaf first. */
	assert_string_equal(label_str(pr, pr->sample[0], "host", &num), "node1");
	assert_string_equal(label_str(pr, pr->sample[0], "thread", &num), "11");
	label_str(pr, pr->sample[0], "rank", &num);
	assert_int_equal(num, 0);
	label_str(pr, pr->sample[2], "rank", &num);
	assert_int_equal(num, 1);
	assert_int_equal(pr->sample[0]->value[0], 2);
	assert_int_equal(pr->sample[0]->n_location_id, 3);
	{
		uint64_t leaf = pr->sample[0]->location_id[0];
		uint64_t fn = pr->location[leaf - 1]->line[0]->function_id;

		assert_int_equal(pr->location[leaf - 1]->id, leaf);
		assert_string_equal(pr->string_table[pr->function[fn - 1]->name], "hot");
	}
	perftools__profiles__profile__free_unpacked(pr, NULL);
	rm_prof_free(&p);
}

/* Without a rate: samples/count only, no period; folded lines: no thread label. */
static void test_pprof_folded_no_rate(void **state)
{
	struct rm_prof p = {0};
	size_t bad = 0;
	Perftools__Profiles__Profile *pr;
	long num;

	(void)state;
	assert_int_equal(rm_prof_add_folded(&p, folded, strlen(folded), &bad), 0);
	assert_int_equal(rm_prof_merge(&p), 0);
	pr = pprof_of(&p);
	assert_int_equal(pr->n_sample_type, 1);
	assert_int_equal(pr->period, 0);
	assert_null(pr->period_type);
	assert_null(label_str(pr, pr->sample[0], "thread", &num));
	assert_non_null(label_str(pr, pr->sample[0], "host", &num));
	/* _start main compute hot wait f (x.py:3) g (x.py:9) */
	assert_int_equal(pr->n_function, 7);
	perftools__profiles__profile__free_unpacked(pr, NULL);
	rm_prof_free(&p);
}

static void test_speedscope(void **state)
{
	struct rm_prof p = {0};
	char *buf = NULL, err[128];
	size_t len = 0, bad = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *j, *prof, *frames;
	json_error_t je;

	(void)state;
	assert_int_equal(rm_prof_add_folded(&p, folded, strlen(folded), &bad), 0);
	assert_int_equal(rm_prof_merge(&p), 0);
	p.hz = 1000;
	assert_int_equal(rm_speedscope_write(f, &p, "t", err, sizeof(err)), 0);
	fclose(f);
	j = json_loadb(buf, len, 0, &je);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "$schema")),
			    "https://www.speedscope.app/file-format-schema.json");
	frames = json_object_get(json_object_get(j, "shared"), "frames");
	assert_int_equal(json_array_size(frames), 7);
	assert_int_equal(json_array_size(json_object_get(j, "profiles")), 2);
	prof = json_array_get(json_object_get(j, "profiles"), 1);
	assert_string_equal(json_string_value(json_object_get(prof, "name")), "rank 1 (node2)");
	assert_string_equal(json_string_value(json_object_get(prof, "unit")), "nanoseconds");
	/* rank 1: 4 + 4 samples of 1 ms */
	assert_int_equal(json_integer_value(json_object_get(prof, "endValue")), 8000000);
	{
		json_t *s = json_array_get(json_object_get(prof, "samples"), 1);
		json_t *leaf = json_array_get(s, json_array_size(s) - 1);

		assert_string_equal(
		    json_string_value(json_object_get(
			json_array_get(frames, (size_t)json_integer_value(leaf)), "name")),
		    "g (x.py:9)");
	}
	json_decref(j);
	free(buf);
	rm_prof_free(&p);
}

static const char diff_a[] = "h;rank 0;main;f 3\nh;rank 0;main;g 1\nh;rank 1;main;main;f 0\n";
static const char diff_b[] = "h;rank 0;main;f 1\nh;rank 0;main;g 2\nh;rank 0;main;g;k 1\n";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_diff_known(void **state)
{
	struct rm_prof a = {0}, b = {0};
	struct rm_diff d;
	char dir[] = "/tmp/ra-diff-XXXXXX", pa[64], pb[64], err[512], *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pa, sizeof(pa), "%s/a", dir);
	snprintf(pb, sizeof(pb), "%s/b", dir);
	/* A's line with count 0 is refused: a folded count is at least 1. */
	write_file(pa, diff_a);
	assert_int_equal(rm_diff_load(pa, &a, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "line 3 is not a folded stack"));
	write_file(pa, "h;rank 0;main;f 3\nh;rank 0;main;g 1\n");
	write_file(pb, diff_b);
	assert_int_equal(rm_diff_load(pa, &a, err, sizeof(err)), 0);
	assert_int_equal(rm_diff_load(pb, &b, err, sizeof(err)), 0);
	assert_int_equal(rm_diff_build(&a, &b, &d), 0);
	assert_int_equal(d.samples[0], 4);
	assert_int_equal(d.samples[1], 4);
	for (size_t i = 0; i < d.names.n; i++) {
		const struct rm_diff_row *r = &d.v[i];
		double s = rm_diff_change(&d, r, 0), t = rm_diff_change(&d, r, 1);

		if (!strcmp(r->frame, "f")) { /* 75 % -> 25 % */
			assert_true(s == -50.0 && t == -50.0);
		} else if (!strcmp(r->frame, "g")) { /* self 25 -> 50, total 25 -> 75 */
			assert_true(s == 25.0 && t == 50.0);
		} else if (!strcmp(r->frame, "k")) {
			assert_true(s == 25.0 && t == 25.0);
		} else {
			assert_string_equal(r->frame, "main"); /* host and rank are no functions */
			assert_true(s == 0.0 && t == 0.0);
		}
	}
	assert_int_equal(d.names.n, 4);
	f = open_memstream(&out, &len);
	rm_diff_print(f, &d, 2, "A", "B");
	fclose(f);
	assert_non_null(strstr(out, "self share (the function as the innermost frame), the 2"));
	assert_non_null(strstr(out, "    75.0    25.0    -50.0  f\n"));
	assert_non_null(strstr(out, "    25.0    75.0    +50.0  g\n"));
	assert_null(strstr(out, "  main\n")); /* unchanged: not listed */
	free(out);
	snprintf(pa, sizeof(pa), "%s/d.svg", dir);
	assert_int_equal(rm_write_diff_svg(pa, &a, &b, "t", err, sizeof(err)), 0);
	f = fopen(pa, "r");
	assert_non_null(f);
	out = calloc(1, 1 << 16);
	assert_true(fread(out, 1, (1 << 16) - 1, f) > 0);
	fclose(f);
	assert_non_null(strstr(out, "<title>f A 3 (75.00%) B 1 (25.00%) change -50.00 points"));
	assert_non_null(strstr(out, "fill=\"#0000ff\"")); /* f: the largest fall, full blue */
	assert_non_null(strstr(out, "fill=\"#ff0000\"")); /* g: the largest rise, full red */
	assert_non_null(strstr(out, "fill=\"#ffffff\"")); /* main: the same */
	free(out);
	rm_diff_free(&d);
	rm_prof_free(&a);
	rm_prof_free(&b);
	unlink(pa);
	snprintf(pa, sizeof(pa), "%s/a", dir);
	unlink(pa);
	unlink(pb);
	rmdir(dir);
}

/* Bad input: one line naming the file, the cause and the fix. */
static void test_diff_bad_input(void **state)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
	    {NULL, "cannot read /tmp/ra-diff-none/x: No such file or directory: give a file "
		   "that rocattach-mpi --sample HZ --folded FILE wrote"},
	    {"", "is empty: it holds no samples"},
	    {"\n \n", "is empty: it holds no samples"},
	    {"{\"version\": 1}\n", "is JSON (a report?), not folded lines"},
	    {"\x1f\x8b\x08", "is binary (gzip or pprof?)"},
	    {"main;f 3\nhello\n", "line 2 is not a folded stack"},
	};
	char dir[] = "/tmp/ra-diff-XXXXXX", path[64], err[512];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rm_prof p;

		if (cases[i].text)
			write_file(path, cases[i].text);
		assert_int_equal(rm_diff_load(cases[i].text ? path : "/tmp/ra-diff-none/x", &p, err,
					      sizeof(err)),
				 -1);
		assert_non_null(strstr(err, cases[i].says));
		assert_null(strchr(err, '\n'));
	}
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_folded_in),
	    cmocka_unit_test(test_folded_bad_line),
	    cmocka_unit_test(test_timed_in),
	    cmocka_unit_test(test_pprof),
	    cmocka_unit_test(test_pprof_folded_no_rate),
	    cmocka_unit_test(test_speedscope),
	    cmocka_unit_test(test_diff_known),
	    cmocka_unit_test(test_diff_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * The same run with its targets kept in rank 0's store (report_sample.h):
 * every output the same to the byte, nothing left on disk, read errors;
 * times' differences and the progress lines.
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

#include <rocattach/version.h>

#include "common/clock.h"
#include "report.h"
#include "report_sample.h"

/* ---- the same run with its targets kept in a store (rank 0 at scale) ---- */

/* The file at path, whole (what slurp reads), after writing it with fn. */
static char *written(int (*fn)(const char *, const struct rm_run *, char *, size_t),
		     const struct rm_run *r, const char *name)
{
	char err[512] = "";

	assert_int_equal(fn(path_in_dir(name), r, err, sizeof(err)), 0);
	return slurp(path_in_dir(name));
}

/* Every output of r, as text: summary, report, timeline, trace, dry run of its last window. */
static void outputs(const struct rm_run *r, char *out[5])
{
	const struct rm_window *w = &r->w[r->n_w - 1];

	out[0] = summary_of(r);
	out[1] = written(rm_write_report, r, "store.json");
	out[2] = written(rm_write_timeline, r, "store.svg");
	out[3] = written(rm_write_trace, r, "store-trace.json");
	out[4] = dry_run_of(w->nodes, w->n_nodes);
}

/*
 * A copy of r whose nodes' targets are all in store s (t NULL), as rank 0
 * keeps them; *bytes: what that takes there.
 */
static struct rm_run stored_copy(const struct rm_run *r, struct rm_store *s, size_t *bytes)
{
	struct rm_run c = *r;
	struct rm_window *w = calloc(r->n_w, sizeof(*w));
	char err[512] = "";

	assert_non_null(w);
	*bytes = 0;
	for (size_t wi = 0; wi < r->n_w; wi++) {
		w[wi] = r->w[wi];
		w[wi].nodes = calloc(r->w[wi].n_nodes, sizeof(*w[wi].nodes));
		assert_non_null(w[wi].nodes);
		for (size_t ni = 0; ni < r->w[wi].n_nodes; ni++) {
			struct rm_node *n = &w[wi].nodes[ni];

			*n = r->w[wi].nodes[ni];
			n->t = NULL;
			if (n->n) {
				n->t = malloc(n->n * sizeof(*n->t));
				assert_non_null(n->t);
				memcpy(n->t, r->w[wi].nodes[ni].t, n->n * sizeof(*n->t));
			}
			assert_int_equal(rm_store_put(s, n, err, sizeof(err)), 0);
			assert_null(n->t);
			assert_ptr_equal(n->store, n->n ? s : NULL);
			*bytes += n->n * sizeof(struct rn_target);
		}
	}
	c.w = w;
	c.store = s;
	return c;
}

static void free_copy(struct rm_run *c)
{
	for (size_t wi = 0; wi < c->n_w; wi++)
		free(c->w[wi].nodes);
	free(c->w);
}

/* Stored or in memory, every output is the same to the byte. */
static void check_same_outputs(const struct rm_run *r)
{
	char err[512] = "", *mem[5], *kept[5];
	struct rm_store *s = rm_store_open(dir, err, sizeof(err));
	struct rm_run c;
	size_t bytes;

	assert_non_null(s);
	outputs(r, mem);
	c = stored_copy(r, s, &bytes);
	assert_true(bytes > 0);
	assert_int_equal(rm_store_bytes(s), bytes);
	outputs(&c, kept);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(kept[i], mem[i]);
		free(mem[i]);
		free(kept[i]);
	}
	assert_int_equal(rm_store_check(s, err, sizeof(err)), 0);
	free_copy(&c);
	rm_store_close(s);
}

static void test_store_same_outputs(void **state)
{
	(void)state;
	check_same_outputs(&run);
	build_lost_run();
	check_same_outputs(&lost_run);
}

/* The store's file is unlinked from the start: nothing of it is left in its directory. */
static void test_store_leaves_no_file(void **state)
{
	char err[512] = "", cmd[600];
	struct rm_store *s;
	size_t bytes;
	struct rm_run c;

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/store-dir && mkdir '%s'/store-dir", dir, dir);
	assert_int_equal(system(cmd), 0);
	s = rm_store_open(path_in_dir("store-dir"), err, sizeof(err));
	assert_non_null(s);
	c = stored_copy(&run, s, &bytes);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s'/store-dir)\"", dir);
	assert_int_equal(system(cmd), 0);
	free_copy(&c);
	rm_store_close(s);
}

/*
 * A node whose records cannot be read back from the store (here: where it
 * says they are, the store's file has nothing, a short read) is a failure:
 * counted, so the run cannot end 0, and named in the summary with the
 * reason; the report is given up, not written without it.
 */
static void test_rm_count_failures_store_read_error(void **state)
{
	char err[512] = "", *text;
	struct rm_store *s = rm_store_open(dir, err, sizeof(err));
	struct rm_run c;
	size_t bytes;

	(void)state;
	assert_non_null(s);
	build_lost_run();
	c = stored_copy(&lost_run, s, &bytes);
	assert_int_equal(rm_count_failures(&c), 0);
	assert_int_equal(rm_store_check(s, err, sizeof(err)), 0);
	c.w[0].nodes[0].at = rm_store_bytes(s) + 4096; /* nodeA, not lost */
	assert_int_equal(rm_count_failures(&c), 1);
	assert_int_equal(rm_store_check(s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot read the gathered records back"));
	text = summary_of(&c);
	assert_non_null(strstr(text, "nodeA: records unreadable: cannot read the gathered "
				     "records back from"));
	assert_non_null(strstr(text, "the outcome of its 2 targets is unknown"));
	/* The headline says so too, and counts them nowhere else. */
	assert_non_null(strstr(text, ", 1 node unreadable (2 targets, not counted)"));
	assert_null(strstr(text, "not completed"));
	free(text);
	assert_int_not_equal(rm_write_report(path_in_dir("unreadable.json"), &c, err, sizeof(err)),
			     0);
	free_copy(&c);
	rm_store_close(s);
}

static void test_store_open_missing_dir(void **state)
{
	char err[512] = "";

	(void)state;
	assert_null(rm_store_open("/nonexistent-rocattach-dir", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent-rocattach-dir"));
	assert_non_null(strstr(err, "No such file or directory"));
	assert_non_null(strstr(err, "TMPDIR"));
	assert_null(strchr(err, '\n'));
}

/* Differences of times: signed, checked, unknown when a time is missing. */
static void test_ra_ns_diff_signed_and_checked(void **state)
{
	(void)state;
	assert_int_equal(ra_ns_diff(S1, T1), 1000 * MS);
	assert_int_equal(ra_ns_diff(T1, S1), -(int64_t)(1000 * MS));
	assert_false(ra_ns_known(ra_ns_diff(0, T1)));
	assert_false(ra_ns_known(ra_ns_diff(T1, 0)));
	assert_false(ra_ns_known(ra_ns_diff(UINT64_MAX, 1)));
	assert_int_equal(ra_ns_span(S1, T1, 2000 * MS), 1000 * MS);
	assert_false(ra_ns_known(ra_ns_span(T1, S1, 2000 * MS)));
	assert_false(ra_ns_known(ra_ns_span(S1, T1, 999 * MS)));
}

/* The progress lines: a stop after the records is "before the stop", never a wrapped figure. */
static void test_rm_progress_lines(void **state)
{
	char buf[128];

	(void)state;
	rm_progress_attached(buf, sizeof(buf), 1, 2, 2, T1, T1 + 1200000);
	assert_string_equal(buf, "window 1: attached 2/2 targets (1.2 ms)");
	rm_progress_detached(buf, sizeof(buf), 1, 2, 2, S1, S1 + 50400000);
	assert_string_equal(buf, "window 1: detached 2/2 targets (50.4 ms after the stop)");
	rm_progress_detached(buf, sizeof(buf), 1, 0, 2, S1, S1 - 99300000);
	assert_string_equal(buf, "window 1: detached 0/2 targets (99.3 ms before the stop)");
	rm_progress_detached(buf, sizeof(buf), 2, 0, 0, 0, S1);
	assert_string_equal(buf, "window 2: detached 0/0 targets (time unknown)");
	rm_progress_attached(buf, sizeof(buf), 3, -1, 0, 0, T1);
	assert_string_equal(buf, "window 3: attached 0/0 targets (time unknown)");
}

/* A window stopped before its start (nothing attachable): its length in words, null in JSON. */
static void test_rm_window_length_unknown(void **state)
{
	struct rm_window w = {.index = 1, .start_ns = S1, .stop_ns = T1, .stop_reason = "x"};
	struct rm_run r = {.exit_code = 4, .exit_reason = "nothing attachable", .w = &w, .n_w = 1};
	char path[] = "/tmp/test_report_length.XXXXXX", err[256], *buf;
	json_t *j, *len;
	int fd;

	(void)state;
	assert_false(ra_ns_known(rm_window_length_ns(&w)));
	assert_string_equal(rm_window_length_why(&w), "unknown: stopped before its start");
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "length unknown: stopped before its start"));
	assert_null(strstr(buf, "? ms"));
	assert_null(strstr(buf, "18446744"));
	free(buf);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rm_write_report(path, &r, err, sizeof(err)), 0);
	j = json_load_file(path, 0, NULL);
	unlink(path);
	assert_non_null(j);
	len = json_object_get(json_array_get(json_object_get(j, "windows"), 0), "length");
	assert_true(json_is_null(json_object_get(len, "planned_ns")));
	assert_string_equal(json_string_value(json_object_get(len, "planned_unknown")),
			    "unknown: stopped before its start");
	json_decref(j);
	w.stop_ns = 0;
	assert_string_equal(rm_window_length_why(&w), "unknown: no stop time");
	w.stop_ns = S1 + 8 * 24 * 3600 * 1000 * MS;
	assert_string_equal(rm_window_length_why(&w), "unknown: longer than any window can be");
	w.stop_ns = S1;
	assert_int_equal(rm_window_length_ns(&w), 0);
	assert_null(rm_window_length_why(&w));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_ns_diff_signed_and_checked),
	    cmocka_unit_test(test_rm_progress_lines),
	    cmocka_unit_test(test_rm_window_length_unknown),
	    cmocka_unit_test(test_store_same_outputs),
	    cmocka_unit_test(test_store_leaves_no_file),
	    cmocka_unit_test(test_store_open_missing_dir),
	    cmocka_unit_test(test_rm_count_failures_store_read_error),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

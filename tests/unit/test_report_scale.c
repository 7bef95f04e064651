/* SPDX-License-Identifier: MIT */
/*
 * The report at scale, through the real writers on runs built by hand:
 * --detail all / failures / none (which per-target records the report and
 * the trace keep, the per-node figures kept at every level), the default
 * level, the histograms' bins, hostlists, and a run of 1,000 nodes whose
 * summary and timeline group the clean nodes and show the odd ones alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "report_fixture.h"

/*
 * The small run: node a, 4 clean targets; node b, a failed one, an exited
 * one, 2 clean; node c lost (2 last known targets, clean ones).
 */
static struct big small;

static void small_run(void)
{
	big_run(&small, 3, 4);
	snprintf(small.nodes[0].host, sizeof(small.nodes[0].host), "a");
	snprintf(small.nodes[1].host, sizeof(small.nodes[1].host), "b");
	snprintf(small.nodes[2].host, sizeof(small.nodes[2].host), "c");
	failed(&small.t[4], 2000);
	small.t[5].state = RN_EXITED;
	small.t[5].pid = 2001;
	small.nodes[2].n = 2;
	small.nodes[2].lost = true;
	small.nodes[2].lost_reason = "no records within 5.0 s after the stop";
}

/* What every level keeps: counts that add up, the figures, the level said. */
static void check_kept_always(json_t *j, const char *level)
{
	json_t *a = node_of(j, 0), *b = node_of(j, 1), *c = node_of(j, 2), *f, *h;
	json_int_t sum = 0;
	size_t i;

	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(j, "detail"), "level")), level);
	assert_int_equal(ival(json_object_get(j, "summary"), "targets"), 10);
	assert_int_equal(ival(json_object_get(j, "summary"), "failed"), 1);
	assert_int_equal(ival(a, "found"), 4);
	assert_int_equal(ival(b, "found"), 4);
	assert_int_equal(ival(b, "failed"), 1);
	assert_int_equal(ival(b, "exited"), 1);
	assert_int_equal(ival(c, "found"), 2);
	/* Node a: attach times 0..3 us from the start (p50 of 0,1,2,3 = 1.5 -> 1 us). */
	f = json_object_get(a, "attach_time_ns");
	assert_int_equal(ival(f, "min"), 0);
	assert_int_equal(ival(f, "p50"), 1500);
	assert_int_equal(ival(f, "max"), 3000);
	f = json_object_get(a, "detach_time_ns");
	assert_int_equal(ival(f, "min"), 500000);
	assert_int_equal(ival(f, "max"), 503000);
	/* Attach times 0, 1, 2, 3 us: bins 0, 1, 2, 2. */
	h = json_object_get(a, "attach_time_hist");
	assert_int_equal(json_array_size(h), RM_HIST_BINS);
	assert_int_equal(json_integer_value(json_array_get(h, 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(h, 1)), 1);
	assert_int_equal(json_integer_value(json_array_get(h, 2)), 2);
	/* Hand-overs 0, 10, 20, 30 us after the start: bins 0, 4, 5, 5. */
	h = json_object_get(a, "attach_skew_hist");
	for (i = 0; i < RM_HIST_BINS; i++)
		sum += json_integer_value(json_array_get(h, i));
	assert_int_equal(sum, 4);
	assert_int_equal(json_integer_value(json_array_get(h, 4)), 1);
	assert_int_equal(json_integer_value(json_array_get(h, 5)), 2);
	/* A lost node's figures are of nothing measured: null, never 0. */
	assert_true(json_is_null(json_object_get(c, "attach_time_ns")));
	assert_true(json_is_null(json_object_get(c, "attach_time_hist")));
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(j, "detail"), "hist_bins_us")),
	    RM_HIST_BINS);
}

static void test_rm_write_report_detail_all(void **state)
{
	json_t *j;

	(void)state;
	small_run();
	j = report_at(&small.r, RM_DETAIL_ALL);
	check_kept_always(j, "all");
	assert_int_equal(n_targets(node_of(j, 0)), 4);
	assert_int_equal(n_targets(node_of(j, 1)), 4);
	assert_int_equal(n_targets(node_of(j, 2)), 2);
	assert_int_equal(ival(node_of(j, 1), "records_left_out"), 0);
	assert_int_equal(ival(json_array_get(json_object_get(j, "windows"), 0), "records_left_out"),
			 0);
	assert_int_equal(json_array_size(json_object_get(j, "errors")), 1);
	json_decref(j);
	big_free(&small);
}

/* Failures: the failed, the exited and the lost node's records; none of the clean ones. */
static void test_rm_write_report_detail_failures(void **state)
{
	json_t *j, *b;

	(void)state;
	small_run();
	j = report_at(&small.r, RM_DETAIL_FAILURES);
	check_kept_always(j, "failures");
	assert_int_equal(n_targets(node_of(j, 0)), 0);
	assert_int_equal(ival(node_of(j, 0), "records_left_out"), 4);
	b = node_of(j, 1);
	assert_int_equal(n_targets(b), 2);
	assert_int_equal(ival(json_array_get(json_object_get(b, "targets"), 0), "pid"), 2000);
	assert_int_equal(ival(json_array_get(json_object_get(b, "targets"), 1), "pid"), 2001);
	assert_int_equal(ival(b, "records_left_out"), 2);
	assert_int_equal(n_targets(node_of(j, 2)), 2);
	assert_int_equal(ival(json_array_get(json_object_get(j, "windows"), 0), "records_left_out"),
			 6);
	assert_int_equal(json_array_size(json_object_get(j, "errors")), 1);
	json_decref(j);
	big_free(&small);
}

/* None: no record, the failures counted, not listed (never an empty list). */
static void test_rm_write_report_detail_none(void **state)
{
	json_t *j;

	(void)state;
	small_run();
	j = report_at(&small.r, RM_DETAIL_NONE);
	check_kept_always(j, "none");
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(n_targets(node_of(j, i)), 0);
	assert_int_equal(ival(node_of(j, 1), "records_left_out"), 4);
	assert_int_equal(ival(json_array_get(json_object_get(j, "windows"), 0), "records_left_out"),
			 10);
	assert_true(json_is_null(json_object_get(j, "errors")));
	assert_int_equal(ival(j, "errors_left_out"), 1);
	json_decref(j);
	big_free(&small);
}

static void test_rm_detail_of_default(void **state)
{
	struct big b;
	char why[96];

	(void)state;
	big_run(&b, 100, 100);
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_string_equal(why, "default: 10000 targets <= 10000");
	b.nodes[0].n = 101;
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_FAILURES);
	assert_string_equal(why, "default: 10001 targets > 10000");
	b.r.cfg.detail = RM_DETAIL_ALL;
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_string_equal(why, "--detail all");
	big_free(&b);
}

/* Decided from the survey before window 1: a window that finds more keeps it, and says so. */
static void test_rm_detail_of_decided_at_start(void **state)
{
	struct big b;
	char why[192];

	(void)state;
	big_run(&b, 100, 100);
	b.r.cut = (struct rm_cut){rm_detail_default(9990), 9990};
	assert_int_equal(b.r.cut.level, RM_DETAIL_ALL);
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_string_equal(why, "default: 9990 targets found at the start <= 10000; a later "
				 "window found 10000, the level chosen at the start was kept");
	b.nodes[0].n = 101; /* past the limit now: still all, as the nodes cut at */
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_non_null(strstr(why, "a later window found 10001"));
	b.r.cut = (struct rm_cut){rm_detail_default(10001), 10001};
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_FAILURES);
	assert_string_equal(why, "default: 10001 targets found at the start > 10000");
	big_free(&b);
}

static void test_rm_detail_parse_names(void **state)
{
	enum rm_detail d;

	(void)state;
	assert_int_equal(rm_detail_parse("failures", &d), 0);
	assert_int_equal(d, RM_DETAIL_FAILURES);
	assert_int_equal(rm_detail_parse("none", &d), 0);
	assert_int_equal(d, RM_DETAIL_NONE);
	assert_int_equal(rm_detail_parse("All", &d), -1);
	assert_string_equal(rm_detail_name(RM_DETAIL_ALL), "all");
}

static void test_rm_hist_bin_edges(void **state)
{
	(void)state;
	assert_int_equal(rm_hist_bin(0), 0);
	assert_int_equal(rm_hist_bin(999), 0);
	assert_int_equal(rm_hist_bin(1000), 1);
	assert_int_equal(rm_hist_bin(1999), 1);
	assert_int_equal(rm_hist_bin(2000), 2);
	assert_int_equal(rm_hist_bin(1023999), 10);
	assert_int_equal(rm_hist_bin(1024000), 11);
	assert_int_equal(rm_hist_bin((1ull << 23) * 1000 - 1), 23);
	assert_int_equal(rm_hist_bin((1ull << 24) * 1000 - 1), 24);
	assert_int_equal(rm_hist_bin((1ull << 24) * 1000), 25);
	assert_int_equal(rm_hist_bin(UINT64_MAX), 25);
}

static void test_rm_hostlist_ranges(void **state)
{
	const char *h[] = {"node003", "node001", "node002", "node010", "gpu7",
			   "login",   "node002", "n9",	    "n10",     "n11"};
	char *s;

	(void)state;
	s = rm_hostlist(h, sizeof(h) / sizeof(h[0]));
	assert_non_null(s);
	assert_string_equal(s, "gpu7,login,n9,n[10-11],node[001-003,010]");
	free(s);
	s = rm_hostlist(h, 0);
	assert_string_equal(s, "");
	free(s);
}

/* 1,000 nodes: node 7 has a failed target, node 500 is lost, node 900 found none. */
static void odd_run(struct big *b)
{
	big_run(b, 1000, 8);
	failed(&b->nodes[7].t[3], 5003);
	b->nodes[500].lost = true;
	b->nodes[500].lost_reason = "no records within 5.0 s after the stop";
	b->nodes[900].n = 0;
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_rm_print_summary_groups_1000_nodes(void **state)
{
	struct big b;
	char *s;

	(void)state;
	odd_run(&b);
	s = summary_of(&b.r);
	assert_true(lines(s) < 40);
	assert_non_null(strstr(s, "ok (997 nodes)"));
	assert_non_null(strstr(s, "  hosts: node[0000-0006,0008-0499,0501-0899,0901-0999]\n"));
	/* The odd ones alone, in their own rows. */
	assert_non_null(strstr(s, "\nnode0007 "));
	assert_non_null(strstr(s, "\nnode0500 "));
	assert_non_null(strstr(s, "\nnode0900 "));
	assert_non_null(strstr(s, "node node0500 lost in window 1"));
	assert_non_null(strstr(s, "node0007 pid 5003"));
	assert_null(strstr(s, "\nnode0008 "));
	free(s);
	big_free(&b);
}

/* Over RM_GROUP_ALONE odd nodes: the rest grouped by outcome, the lists cut with a count. */
static void test_rm_print_summary_many_odd_nodes(void **state)
{
	struct big b;
	char *s;

	(void)state;
	big_run(&b, 1000, 8);
	for (size_t i = 0; i < 40; i++)
		failed(&b.nodes[i * 10].t[0], 9000);
	s = summary_of(&b.r);
	assert_true(lines(s) < 60);
	assert_non_null(strstr(s, "failed (24 nodes)"));
	assert_non_null(strstr(s, "ok (960 nodes)"));
	assert_non_null(strstr(s, "... and 24 more failures"));
	free(s);
	big_free(&b);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/*
 * 1,000 nodes in the timeline: one band for the clean ones (997 - the lost
 * and empty rows have no band), node 7's eight lanes drawn alone; the file
 * stays small (about 11 KB, most of it node 7's lanes; bounded at 40 KB).
 * At --detail failures node 7 has one lane, its failed target's; the lost
 * node keeps its eight.
 */
static void test_rm_write_timeline_groups_1000_nodes(void **state)
{
	char path[256], err[512], *s;
	struct big b;
	size_t size;

	(void)state;
	odd_run(&b);
	snprintf(path, sizeof(path), "%s/timeline.svg", dir);
	assert_int_equal(rm_write_timeline(path, &b.r, err, sizeof(err)), 0);
	s = slurp(path, &size);
	assert_true(size < 40000);
	assert_int_equal(count(s, "<rect class=\"group\""), 1);
	assert_non_null(strstr(s, ">ok: 997 nodes</text>"));
	assert_non_null(strstr(s, "node[0000-0006,0008-0499,0501-0899,0901-0999]"));
	/* Node 7 alone: a bar per target (7 tools, 1 failed). */
	assert_int_equal(count(s, "<rect class=\"tools\""), 7);
	assert_int_equal(count(s, "<rect class=\"failed\""), 1);
	assert_non_null(strstr(s, ">node0500</text>"));
	free(s);
	/* Below --detail all, a node alone has lanes for the records kept only. */
	b.r.cfg.detail = RM_DETAIL_FAILURES;
	assert_int_equal(rm_write_timeline(path, &b.r, err, sizeof(err)), 0);
	s = slurp(path, &size);
	assert_int_equal(count(s, "<rect class=\"tools\""), 0);
	assert_int_equal(count(s, "<rect class=\"failed\""), 1);
	assert_int_equal(count(s, "<tspan class=\"dim\">solver</tspan>"), 1 + 8);
	assert_non_null(strstr(s, "8 found, 7 attached, 1 failed; 7 clean not drawn (--detail "
				  "failures)"));
	free(s);
	big_free(&b);
}

/* Thread names of the targets' tracks ("pid ..."), and of the nodes' ("node: ..."). */
static void thread_names(json_t *j, size_t *pids, size_t *nodes)
{
	json_t *e;
	size_t i;

	*pids = *nodes = 0;
	json_array_foreach (json_object_get(j, "traceEvents"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *arg =
		    json_string_value(json_object_get(json_object_get(e, "args"), "name"));

		if (strcmp(name, "thread_name") || !arg)
			continue;
		*pids += !strncmp(arg, "pid ", 4);
		*nodes += !strncmp(arg, "node: ", 6);
	}
}

static void test_rm_write_trace_detail_levels(void **state)
{
	size_t all, fail, none, pids, nodes;
	struct big b;
	json_t *j;

	(void)state;
	odd_run(&b);
	j = trace_at(&b.r, RM_DETAIL_ALL, &all);
	thread_names(j, &pids, &nodes);
	assert_int_equal(pids, 2 * (998 * 8 + 8)); /* two tracks a target; the empty node none */
	assert_int_equal(nodes, 0);
	json_decref(j);
	j = trace_at(&b.r, RM_DETAIL_FAILURES, &fail);
	thread_names(j, &pids, &nodes);
	assert_int_equal(pids, 2 * (1 + 8)); /* the failed target, the lost node's eight */
	assert_int_equal(nodes, 2 * 1000);   /* every node, the empty one too */
	assert_string_equal(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(j, "otherData"), "detail"), "level")),
	    "failures");
	json_decref(j);
	j = trace_at(&b.r, RM_DETAIL_NONE, &none);
	thread_names(j, &pids, &nodes);
	assert_int_equal(pids, 0);
	assert_int_equal(nodes, 2 * 1000); /* every node, the empty one too */
	json_decref(j);
	assert_true(fail * 5 < all);
	assert_true(none <= fail);
	big_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_detail_parse_names),
	    cmocka_unit_test(test_rm_detail_of_default),
	    cmocka_unit_test(test_rm_detail_of_decided_at_start),
	    cmocka_unit_test(test_rm_hist_bin_edges),
	    cmocka_unit_test(test_rm_hostlist_ranges),
	    cmocka_unit_test(test_rm_write_report_detail_all),
	    cmocka_unit_test(test_rm_write_report_detail_failures),
	    cmocka_unit_test(test_rm_write_report_detail_none),
	    cmocka_unit_test(test_rm_print_summary_groups_1000_nodes),
	    cmocka_unit_test(test_rm_print_summary_many_odd_nodes),
	    cmocka_unit_test(test_rm_write_timeline_groups_1000_nodes),
	    cmocka_unit_test(test_rm_write_trace_detail_levels),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

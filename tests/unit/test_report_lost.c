/* SPDX-License-Identifier: MIT */
/*
 * A lost node in every output of rocattach-mpi (report_sample.h): its last
 * known records shown as such, measuring nothing; strings of any length.
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

/* ------------------------------------------------------------------------ */
/* A lost node: its last known records are shown as such and measure nothing. */

static void test_rm_window_skew_lost_node(void **state)
{
	struct rm_skew s;
	uint64_t p50, max;

	(void)state;
	build_lost_run();
	s = rm_window_skew(&lost_window);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.attach_ns, 200000); /* nodeA's attach ends only */
	assert_int_equal(s.n_detach, 2);
	assert_int_equal(s.detach_ns, 20000);
	assert_int_equal(rm_count_failures(&lost_run), 0);
	rm_node_attach_times(&lost_nodes[1], &p50, &max);
	assert_int_equal(p50, 0);
	assert_int_equal(max, 0);
}

static void test_rm_write_report_lost_node(void **state)
{
	char err[256] = "";
	json_t *j, *n;

	(void)state;
	build_lost_run();
	assert_int_equal(rm_write_report(path_in_dir("lost.json"), &lost_run, err, sizeof(err)), 0);
	j = json_load_file(path_in_dir("lost.json"), 0, NULL);
	assert_non_null(j);
	n = jget(j, "windows.0.nodes.0");
	assert_string_equal(json_string_value(jget(n, "state")), "ok");
	assert_true(json_is_null(jget(n, "lost_reason")));
	check_counts(n, "found", 2, 2, 0, 0);
	n = jget(j, "windows.0.nodes.1");
	assert_string_equal(json_string_value(jget(n, "state")), "lost");
	assert_string_equal(json_string_value(jget(n, "lost_reason")), LOST_REASON);
	/* Found: the last known targets, listed; nothing of them counted or timed. */
	check_counts(n, "found", 2, 0, 0, 0);
	assert_true(json_is_null(jget(n, "attach_p50_ns")));
	assert_true(json_is_null(jget(n, "attach_skew_ns")));
	assert_int_equal(json_array_size(jget(n, "targets")), 2);
	assert_int_equal(jint(n, "targets.1.pid"), 401);
	assert_int_equal(jint(j, "windows.0.skew.targets"), 2);
	assert_int_equal(jint(j, "windows.0.skew.attach_ns"), 200000);
	check_counts(jget(j, "summary"), "targets", 4, 2, 0, 0);
	assert_int_equal(jint(j, "summary.lost_nodes"), 1);
	assert_int_equal(json_array_size(jget(j, "errors")), 0);
	assert_int_equal(jint(j, "exit_code"), 6);
	json_decref(j);
}

static void test_rm_print_summary_lost_node(void **state)
{
	char *buf;

	(void)state;
	build_lost_run();
	buf = summary_of(&lost_run);
	assert_non_null(strstr(buf, "rocattach-mpi: 2 nodes, 4 targets: 2 attached and detached, 0 "
				    "failed, 1 node lost (2 targets, last known) (exit 6: 1 node "
				    "lost)\n"));
	assert_non_null(strstr(buf,
			       "\nnodeA               2        2      0      0     0.300ms     "
			       "0.400ms     0.200ms\n"));
	assert_non_null(strstr(buf,
			       "\nnodeB               2     lost      -      -           -     "
			       "      -           -\n"));
	assert_non_null(strstr(buf, "\nnode nodeB lost in window 1: " LOST_REASON "\n  its targets "
				    "(last known): pid 400 rank 2 (app), pid 401 rank 3 (app)\n"));
	assert_non_null(strstr(buf, "attach skew 0.200 ms, detach skew 0.020 ms (2 targets, an "
				    "estimate: 2 call starts unknown, 1 node lost)\n"));
	assert_null(strstr(buf, "failures:"));
	assert_null(strstr(buf, "stale failure"));
	free(buf);
}

/* The timeline and the trace draw nothing of a lost node's last known records. */
static void test_rm_write_timeline_lost_node(void **state)
{
	char err[256] = "", *svg;
	json_t *j, *e;

	(void)state;
	build_lost_run();
	assert_int_equal(rm_write_timeline(path_in_dir("lost.svg"), &lost_run, err, sizeof(err)),
			 0);
	svg = slurp(path_in_dir("lost.svg"));
	assert_int_equal(count(svg, "<rect"), 2); /* nodeA's */
	assert_int_equal(count(svg, "fill=\"#d64541\">"), 0);
	assert_int_equal(count(svg, "<text class=\"host bad\""), 1);
	assert_non_null(strstr(svg, "\"><title>nodeB</title>nodeB</text>"));
	assert_non_null(
	    strstr(svg, ">2 found (last known), lost in window 1: " LOST_REASON "</text>"));
	assert_non_null(strstr(svg, ">2 found, 2 attached, 0 failed</text>"));
	assert_xml_text_escaped(svg);
	free(svg);

	j = write_trace(&lost_run, "lost.json");
	assert_string_equal(process_name(j, 2), "nodeA");
	assert_string_equal(process_name(j, 3), "nodeB (lost in window 1: " LOST_REASON ")");
	assert_int_equal(events_of(j, "attach call", "X", CALLS(300), &e), 1);
	assert_int_equal(events_of(j, "attach call", "X", CALLS(400), &e), 0);
	assert_int_equal(events_of(j, "tools attached", NULL, 400, &e), 0);
	assert_int_equal(events_of(j, "attach-failed", NULL, CALLS(401), &e), 0);
	assert_int_equal(events_of(j, "thread_name", "M", 401, &e), 1); /* still listed */
	json_decref(j);
}

/*
 * Lost from window 2 on: said once, for window 2; window 1's failure is
 * counted once, in window 1; nodeB's bars and calls are window 1's only.
 */
static void test_rm_print_summary_lost_from_window_2(void **state)
{
	struct rn_target a[3][2];
	struct rm_node n[3][2];
	struct rm_window w[3];
	struct rm_run r;
	char err[256] = "", *buf, *svg;
	uint64_t shift;
	json_t *j, *e;
	size_t i, k;

	(void)state;
	build_lost_run();
	for (i = 0; i < 3; i++) {
		shift = i * 2000 * MS;
		memcpy(a[i], lost_a, sizeof(lost_a));
		for (k = 0; k < 2; k++)
			target_times(&a[i][k], lost_a[k].attach_start_ns + shift,
				     lost_a[k].attach_end_ns + shift,
				     lost_a[k].detach_start_ns + shift,
				     lost_a[k].detach_end_ns + shift);
		memcpy(n[i], lost_nodes, sizeof(lost_nodes));
		n[i][0].t = a[i];
		n[i][1].lost = i > 0;
		w[i] = (struct rm_window){(int)i + 1, T1 + shift, S1 + shift, "duration", n[i], 2};
	}
	r = lost_run;
	r.w = w;
	r.n_w = 3;
	buf = summary_of(&r);
	assert_int_equal(count(buf, " lost in window "), 1);
	assert_non_null(strstr(buf, "\nnode nodeB lost in window 2: " LOST_REASON "\n"));
	assert_int_equal(count(buf, "stale failure"), 1);
	assert_non_null(strstr(buf, "  nodeB pid 401 rank 3 (app), window 1: attach-failed: stale "
				    "failure\n"));
	assert_int_equal(rm_count_failures(&r), 1);
	free(buf);

	assert_int_equal(rm_write_timeline(path_in_dir("lost3.svg"), &r, err, sizeof(err)), 0);
	svg = slurp(path_in_dir("lost3.svg"));
	/* nodeA: 2 bars in each window; nodeB: window 1's 2 (one red), no more. */
	assert_int_equal(count(svg, "<rect"), 8);
	assert_int_equal(count(svg, "fill=\"#d64541\">"), 1);
	assert_non_null(
	    strstr(svg, ">2 found (last known), lost in window 2: " LOST_REASON "</text>"));
	free(svg);

	j = write_trace(&r, "lost3.json");
	assert_string_equal(process_name(j, 3), "nodeB (lost in window 2: " LOST_REASON ")");
	assert_int_equal(events_of(j, "attach call", "X", CALLS(300), &e), 3);
	assert_int_equal(events_of(j, "attach call", "X", CALLS(400), &e), 1);
	assert_int_equal(events_of(j, "attach-failed", "i", CALLS(401), &e), 1);
	json_decref(j);
}

/* A lost node in the --dry-run listing: its processes (last known), none to attach. */
static void test_rm_print_dry_run_lost_node(void **state)
{
	char *buf;

	(void)state;
	build_lost_run();
	buf = dry_run_of(lost_nodes, 2);
	assert_non_null(strstr(buf, "nodeB: lost: " LOST_REASON "; 2 processes (last known)\n"));
	assert_non_null(strstr(buf, "dry run: 2 processes on 1 node would be attached (1 node "
				    "lost); nothing was attached\n"));
	free(buf);
}

/*
 * Strings from other hosts and processes, of any length, not UTF-8: every
 * byte kept, non-ASCII ones as '?', none cut (around the 512 bytes where
 * node/'s escaper once stopped, and far past them).
 */
static void test_rm_write_report_any_string_length(void **state)
{
	static const size_t lens[] = {511, 512, 513, 100000};
	char *argv[4], *want, err[256] = "";
	struct rm_run r = {.exit_reason = "ok"};
	struct rm_node node = {.host = "n", .lost = true};
	struct rm_window w = {.index = 1, .nodes = &node, .n_nodes = 1};
	json_t *j, *v;
	size_t i, k;

	(void)state;
	for (i = 0; i < 4; i++) {
		argv[i] = malloc(lens[i] + 1);
		assert_non_null(argv[i]);
		for (k = 0; k < lens[i]; k++)
			argv[i][k] = k % 3 ? 'a' : '\xff';
		argv[i][lens[i]] = '\0';
	}
	r.cfg = (struct rm_config){.argc = 4, .argv = argv};
	node.lost_reason = argv[3];
	r.w = &w;
	r.n_w = 1;
	assert_int_equal(rm_write_report(path_in_dir("long.json"), &r, err, sizeof(err)), 0);
	j = json_load_file(path_in_dir("long.json"), 0, NULL);
	assert_non_null(j);
	for (i = 0; i < 4; i++) {
		want = strdup(argv[i]);
		for (k = 0; k < lens[i]; k += 3)
			want[k] = '?';
		v = json_array_get(jget(j, "config.argv"), i);
		assert_int_equal(json_string_length(v), lens[i]);
		assert_string_equal(json_string_value(v), want);
		if (i == 3)
			assert_string_equal(
			    json_string_value(jget(j, "windows.0.nodes.0.lost_reason")), want);
		free(want);
		free(argv[i]);
	}
	json_decref(j);
}

/* A bar's hover text is whole however long the host and the message (once cut at 512 bytes). */
static void test_rm_write_timeline_long_title(void **state)
{
	struct rn_target t = target(7, 0, "app", RN_ATTACH_FAILED);
	struct rm_node n = {.t = &t, .n = 1};
	struct rm_window w = {1, T1, S1, "duration", &n, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 4, .exit_reason = "1 target failed"};
	char err[256] = "", *svg, want[sizeof(t.message) + 32];

	(void)state;
	memset(n.host, 'h', sizeof(n.host) - 1);
	target_times(&t, T1 + 10, T1 + 20, 0, 0);
	memset(t.message, 'm', sizeof(t.message) - 2);
	t.message[sizeof(t.message) - 2] = 'Z';
	assert_int_equal(rm_write_timeline(path_in_dir("long.svg"), &r, err, sizeof(err)), 0);
	svg = slurp(path_in_dir("long.svg"));
	snprintf(want, sizeof(want), ": %s</title></rect>", t.message);
	assert_non_null(strstr(svg, want));
	free(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_window_skew_lost_node),
	    cmocka_unit_test(test_rm_write_report_lost_node),
	    cmocka_unit_test(test_rm_print_summary_lost_node),
	    cmocka_unit_test(test_rm_write_timeline_lost_node),
	    cmocka_unit_test(test_rm_print_summary_lost_from_window_2),
	    cmocka_unit_test(test_rm_print_dry_run_lost_node),
	    cmocka_unit_test(test_rm_write_report_any_string_length),
	    cmocka_unit_test(test_rm_write_timeline_long_title),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

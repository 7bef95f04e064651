/* SPDX-License-Identifier: MIT */
/*
 * The summary and the --dry-run listing of rocattach-mpi on a run built by
 * hand (report_sample.h): skews, attach times, rows and failures, tool
 * outcomes, deaths.
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

static void test_rm_window_skew_attached_targets(void **state)
{
	struct rm_skew s1 = rm_window_skew(&windows[0]), s2 = rm_window_skew(&windows[1]);

	(void)state;
	/* Window 1: attach ends 0.90, 1.32, 0.65 ms; detach starts +0.05, +0.25, +0.40 ms. */
	assert_int_equal(s1.attach_ns, 670000);
	assert_int_equal(s1.detach_ns, 350000);
	assert_int_equal(s1.n, 3);
	/*
	 * Window 2: 200 exited during the window: it was attached, so its
	 * attach counts; it was not detached, so its hand-back does not.
	 */
	assert_int_equal(s2.attach_ns, 450000);
	assert_int_equal(s2.detach_ns, 20000);
	assert_int_equal(s2.n, 3);
	assert_int_equal(s2.n_detach, 2);
}

static void test_rm_window_skew_exited_during_attach(void **state)
{
	struct rn_target t[2] = {target(1, 0, "x", RN_DETACHED), target(2, 1, "x", RN_EXITED)};
	struct rm_node n = {.host = "h", .t = t, .n = 2};
	struct rm_window w = {.index = 1, .nodes = &n, .n_nodes = 1};
	struct rm_skew s;

	(void)state;
	target_times(&t[0], 10, 20, 100, 110);
	target_times(&t[1], 10, 500, 0, 0);
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.attach_ns, 0);
	assert_int_equal(s.detach_ns, 0);
}

/* A target whose detach failed in window 1 is not attached again: window 2 has its old record. */
static void test_rm_window_skew_ignores_earlier_windows(void **state)
{
	struct rn_target t[2] = {target(1, 0, "x", RN_DETACHED),
				 target(2, 1, "x", RN_DETACH_FAILED)};
	struct rm_node n = {.host = "h", .t = t, .n = 2};
	struct rm_window w = {.index = 2, .start_ns = T2, .nodes = &n, .n_nodes = 1};
	struct rm_skew s;

	(void)state;
	target_times(&t[0], T2 + 10, T2 + 20, S2 + 100, S2 + 110);
	target_times(&t[1], T1 + 10, T1 + 50, S1 + 100, S1 + 110);
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.attach_ns, 0);
	assert_int_equal(s.detach_ns, 0);
	w.start_ns = 0; /* "now": no way to tell, every record counts */
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.attach_ns, T2 + 20 - (T1 + 50));
}

/*
 * ROCm's side: tool times are the library's bounds; our agent's measured.
 * A window whose targets' windows miss the plan by more than 1% + 5 ms is
 * flagged; the skew counts both kinds and says so.
 */
static void test_rm_window_skew_bounds_and_length(void **state)
{
	struct rn_target t[2] = {target(1, 0, "hip", RN_DETACHED),
				 target(2, 1, "app", RN_DETACHED)};
	struct rm_node n = {.host = "n1", .t = t, .n = 2};
	struct rm_window w = {1, T1, T1 + 500 * MS, "duration", &n, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_reason = "ok"};
	struct rm_skew s;
	char *buf;

	(void)state;
	target_times(&t[0], T1 - 150 * MS, T1 + 300000, T1 + 400 * MS, T1 + 500 * MS + 200000);
	t[0].side = ROCATTACH_SIDE_ROCM;
	t[0].attach_tool_ns = T1 + 300000;
	t[0].attach_call_ns = T1 + 100000;
	t[0].detach_call_ns = T1 + 500 * MS;
	t[0].detach_tool_ns = T1 + 500 * MS + 10000;
	t[0].attach_tool_bound = t[0].detach_tool_bound = true;
	target_times(&t[1], T1 - 150 * MS, T1 + 100000, T1 + 400 * MS, T1 + 500 * MS + 300000);
	t[1].side = ROCATTACH_SIDE_AGENT;
	t[1].attach_tool_ns = T1 + 20000;
	t[1].detach_tool_ns = T1 + 500 * MS + 40000;
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.bounds, 1);
	assert_int_equal(s.attach_ns, 280000);
	/* A bound: from t[0]'s detach call's start (T1 + 500 ms) to t[1]'s measured + 40 us. */
	assert_int_equal(s.detach_ns, 40000);
	assert_int_equal(s.estimate, 0);
	assert_string_equal(rm_skew_kind(&s), "bound");
	assert_int_equal(s.len_min_ns, 500 * MS - 300000);
	assert_int_equal(s.len_max_ns, 500 * MS + 20000);
	assert_false(s.len_off);
	/* 650 ms for a 500 ms plan: the window started at the attach call, long before. */
	t[0].attach_tool_ns = T1 - 150 * MS;
	t[0].attach_call_ns = T1 - 151 * MS;
	s = rm_window_skew(&w);
	assert_true(s.len_off);
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "(2 targets, a bound: 1 from their calls' start and end)"));
	assert_non_null(strstr(buf, "OFF the planned length by more than 1% + 5 ms"));
	assert_non_null(strstr(buf, "note: 1 target runs ROCm's target side without a "
				    "watchdog"));
	assert_non_null(strstr(buf, " n1:1\n"));
	free(buf);
}

/*
 * Late starts: only targets attached in the window count; late means more
 * than 1% + 5 ms (10 ms for 500 ms) after the start; p50 and max of the late
 * ones; ROCm's side (the call's end) makes them a bound; the window is off.
 */
static void test_rm_window_late_counts_and_figures(void **state)
{
	struct rn_target t[4] = {target(1, 0, "x", RN_DETACHED), target(2, 1, "x", RN_DETACHED),
				 target(3, 2, "x", RN_DETACHED),
				 target(4, 3, "x", RN_ATTACH_FAILED)};
	struct rm_node n = {.host = "n1", .t = t, .n = 4};
	struct rm_window w = {1, T1, T1 + 500 * MS, "duration", &n, 1};
	struct rm_late l;
	char *buf;
	struct rm_run r = {.w = &w, .n_w = 1, .exit_reason = "1 window late"};

	(void)state;
	for (int i = 0; i < 4; i++)
		target_times(&t[i], T1 - 100 * MS, T1 + 1 * MS, T1 + 500 * MS, T1 + 501 * MS);
	t[0].attach_tool_ns = T1 + 2 * MS; /* on time */
	t[1].attach_tool_ns = T1 + 30 * MS;
	t[2].attach_tool_ns = T1 + 10 * MS + 1; /* just past 10 ms */
	t[3].attach_tool_ns = T1 + 300 * MS;	/* failed: not counted */
	l = rm_window_late(&w);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.of, 3);
	assert_int_equal(l.tolerance_ns, 10 * MS);
	assert_int_equal(l.p50_ns, (10 * MS + 1 + 30 * MS) / 2);
	assert_int_equal(l.max_ns, 30 * MS);
	assert_false(l.bound);
	assert_true(l.p50_known);
	assert_true(rm_window_off(&w));
	snprintf(w.lead_why, sizeof(w.lead_why), "--start-lead 0");
	buf = summary_of(&r);
	assert_non_null(strstr(buf,
			       "  LATE: 2 of 3 targets' tools started after the start + "
			       "10.0 ms: late by p50 20.0 ms, max 30.0 ms; lead was 0.0 ms\n"));
	free(buf);
	/* ROCm's side: late only as shown by the call's start (the tools ran no earlier). */
	t[1].attach_tool_bound = true;
	l = rm_window_late(&w);
	assert_int_equal(l.n, 1); /* its call's start unknown: not shown late */
	t[1].attach_call_ns = T1 + 20 * MS;
	l = rm_window_late(&w);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.max_ns, 20 * MS);
	assert_true(l.bound);
	t[1].attach_call_ns = T1 + 4 * MS; /* ended late, began in time: not shown late */
	l = rm_window_late(&w);
	assert_int_equal(l.n, 1);
	t[1].attach_tool_bound = false;
	/* None late: nothing said, not off. */
	t[1].attach_tool_ns = t[2].attach_tool_ns = T1 + 3 * MS;
	l = rm_window_late(&w);
	assert_int_equal(l.n, 0);
	assert_false(rm_window_off(&w));
}

static void test_rm_node_attach_times_median(void **state)
{
	uint64_t p50, max;

	(void)state;
	rm_node_attach_times(&w1_nodes[0], &p50, &max);
	assert_int_equal(p50, 1000000); /* mean of 0.8 and 1.2 ms */
	assert_int_equal(max, 1200000);
	rm_node_attach_times(&w1_nodes[1], &p50, &max); /* the failed attach does not count */
	assert_int_equal(p50, 600000);
	assert_int_equal(max, 600000);
	rm_node_attach_times(&w1_nodes[2], &p50, &max);
	assert_int_equal(p50, 0);
	assert_int_equal(max, 0);
}

static void test_rm_print_summary_rows_and_failures(void **state)
{
	char *buf = summary_of(&run);

	(void)state;
	/*
	 * 200 exited: its job ended under it, not a failure; it completed
	 * window 1 first, so it was attached and detached.
	 */
	assert_non_null(strstr(buf,
			       "rocattach-mpi: 3 nodes, 4 targets, 2 windows: 3 attached and "
			       "detached (1 exited after), 1 failed (exit 4: 2 targets failed)\n"));
	assert_non_null(strstr(buf, "node            found attached failed exited  attach p50  "
				    "attach max  start skew\n"));
	assert_non_null(strstr(buf,
			       "\nnode1               2        2      0      0     0.400ms     "
			       "0.500ms     0.300ms\n"));
	assert_non_null(strstr(buf,
			       "\nnode2               2        1      1      1     0.100ms     "
			       "0.100ms     0.000ms\n"));
	assert_non_null(strstr(buf, "\nnode3               0  no targets found\n"));
	assert_non_null(strstr(buf, "window 1: start 2026-11-21T07:30:01.123Z, 1000.0 ms, stop "
				    "reason duration, attach skew 0.670 ms, detach skew 0.350 ms "
				    "(3 targets, an estimate: 3 call starts unknown)\n"));
	/* No hand-over times at all: the tools' windows are unknown, so not shown. */
	assert_null(strstr(buf, "tools' window"));
	assert_non_null(strstr(buf, "window 2: start 2026-11-21T07:30:02.623Z"));
	/* 200 exited during window 2, not detached: each skew names the count it is over. */
	assert_non_null(
	    strstr(buf, "attach skew 0.450 ms (3 targets), detach skew 0.020 ms (2 detached, "));
	/* Each failure once, on one line, in the window where it happened. */
	assert_non_null(strstr(buf, "failures:\n  node2 pid 201 (app), window 1: attach-failed: "
				    "PTRACE_SEIZE(201): \"denied\" <&> 'x'\n"));
	assert_null(strstr(buf, "pid 200"));
	assert_int_equal(count(buf, "pid 201"), 1);
	free(buf);
}

static void test_rm_print_summary_long_host(void **state)
{
	struct rm_node n[2] = {{.t = w1_node1, .n = 2}, {.t = NULL, .n = 0}};
	struct rm_window w = {1, T1, S1, "enter", n, 2};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 0, .exit_reason = "ok"};
	char *buf, *line, want[128];

	(void)state;
	memset(n[0].host, 'h', sizeof(n[0].host) - 1);
	snprintf(n[1].host, sizeof(n[1].host), "short");
	buf = summary_of(&r);
	/* Cut to 32 columns with a '~', the columns after it aligned. */
	line = strstr(buf, "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh~     2        2      0 ");
	assert_non_null(line);
	assert_true(strchr(line, '\n') - line < 100);
	snprintf(want, sizeof(want), "\n%-32s %5d  no targets found\n", "short", 0);
	assert_non_null(strstr(buf, want));
	assert_null(strstr(buf, "failures:"));
	free(buf);
}

/* A window whose length is not known says why, in words (it printed "? ms"). */
static void test_rm_print_summary_length_unknown(void **state)
{
	struct rm_node n = {.host = "n1", .t = NULL, .n = 0};
	struct rm_window w = {1, T1, 0, "SIGTERM on rank 0", &n, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 5, .exit_reason = "x"};
	char *buf;

	(void)state;
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "length unknown: no stop time, stop reason"));
	assert_null(strstr(buf, "?"));
	free(buf);
	w.stop_ns = T1 - 1;
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "length unknown: stopped before its start"));
	free(buf);
}

static void test_rm_print_dry_run_lists_targets(void **state)
{
	char *buf = dry_run_of(w1_nodes, 3);

	(void)state;
	assert_non_null(strstr(buf, "node1: 2 processes\n"));
	assert_non_null(strstr(buf, "  100                  0   1000  app              "
				    "-                        "
				    "yes       0-3           0     card0(0000:c1:00.0)\n"));
	assert_non_null(strstr(buf, "  101 (7)              1   1000  app"));
	assert_non_null(strstr(buf, "card0(0000:c1:00.0),card1(0000:c2:00.0)\n"));
	assert_non_null(strstr(buf, "  201                  -   1000  app              "
				    "-                        "
				    "yes       -             -     -\n"));
	assert_non_null(strstr(buf, "node3: 0 processes\n  (no matching processes)\n"));
	assert_non_null(strstr(buf, "dry run: 4 processes on 3 nodes would be attached"));
	free(buf);
}

static void test_rm_print_summary_tool_outcomes(void **state)
{
	struct rn_target t[2];
	struct rm_node node = {.host = "nodeA", .t = t, .n = 2};
	struct rm_window w = {1, T1, S1, "duration", &node, 1};
	struct rm_run r = {.cfg = {.tools = "liba.so::libb.so:libc.so"},
			   .w = &w,
			   .n_w = 1,
			   .exit_code = 4,
			   .exit_reason = "1 target failed"};
	char *buf;

	(void)state;
	for (int i = 0; i < 2; i++) {
		t[i] = target(500 + i, i, "app", RN_DETACHED);
		target_times(&t[i], T1 - 10 * MS, T1 + MS, S1, S1 + MS);
		t[i].tool_n = 3;
		t[i].tools[0] = ROCATTACH_TOOL_LOADED;
		t[i].tools[1] = ROCATTACH_TOOL_DECLINED;
		t[i].tools[2] = ROCATTACH_TOOL_LOADED;
	}
	t[1].tools[2] = ROCATTACH_TOOL_FAILED;
	snprintf(t[1].message, sizeof(t[1].message), "attached; skipped: libc.so: gone");
	assert_int_equal(rm_count_failures(&r), 1);
	buf = summary_of(&r);
	print_message("%s", buf);
	/* The two counts partition: no target is both, and none is left over. */
	/* The failed one was attached and detached too (the node row's attached 2): said. */
	assert_non_null(strstr(buf, ": 1 attached and detached, 1 failed (1 of them attached and "
				    "detached, with a library of the tool list failed) (exit 4"));
	assert_null(strstr(buf, "not completed"));
	assert_null(strstr(buf, "tool liba.so"));
	assert_non_null(
	    strstr(buf, "tool libb.so: loaded on 0, declined on 2, failed on 0 targets\n"));
	assert_non_null(
	    strstr(buf, "tool libc.so: loaded on 1, declined on 0, failed on 1 targets\n"));
	assert_non_null(
	    strstr(buf, "pid 501 rank 1 (app): tool failed: attached; skipped: libc.so: gone"));
	free(buf);
}

static void test_rm_print_summary_died_attached_and_stopped(void **state)
{
	struct rn_target t[3];
	struct rm_node node = {.host = "nodeA", .t = t, .n = 3};
	struct rm_window w = {1, T1, S1, "duration", &node, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 4, .exit_reason = "1 target failed"};
	size_t lived;
	uint64_t first, last;
	char *buf, why[256];
	json_t *j;

	(void)state;
	t[0] = target(400, 0, "app", RN_DIED_ATTACHED);
	target_times(&t[0], T1 - 10 * MS, T1 + MS, 0, 0);
	t[0].died_ns = T1 + 2500 * MS;
	t[1] = target(401, 1, "app", RN_STOPPED);
	target_times(&t[1], T1 - 10 * MS, T1 + MS, S1, S1 + MS);
	snprintf(t[1].message, sizeof(t[1].message), "process 401 is stopped");
	t[2] = target(402, 2, "app", RN_DETACHED);
	target_times(&t[2], T1 - 10 * MS, T1 + MS, S1, S1 + MS);
	/* The stopped one is the one failure; the death is not one. */
	assert_int_equal(rm_count_failures(&r), 1);
	assert_int_equal(rm_died_attached(&r, &lived, &first, &last), 1);
	assert_int_equal(lived, 2);
	assert_true(first == T1 + 2500 * MS && last == first);
	buf = summary_of(&r);
	print_message("%s", buf);
	assert_non_null(strstr(buf, ", 1 died with tools attached"));
	assert_non_null(strstr(buf, "stopped: process 401 is stopped\n"));
	assert_non_null(strstr(buf,
			       "died with their tools attached:\n  nodeA pid 400 rank 0 (app): "
			       "seen gone 2.5 s after the start of window 1\n"));
	assert_null(strstr(buf, "all 1 target"));
	free(buf);
	assert_int_equal(rm_write_report(path_in_dir("died.json"), &r, why, sizeof(why)), 0);
	j = json_load_file(path_in_dir("died.json"), 0, NULL);
	assert_non_null(j);
	assert_int_equal(jint(j, "summary.died_attached"), 1);
	assert_int_equal(jint(j, "summary.stopped"), 1);
	json_decref(j);
	/* Every target died with its tools in: the run ended, and the summary says so plainly. */
	t[1] = t[0];
	t[1].pid = 401;
	t[1].died_ns = T1 + 2700 * MS;
	node.n = 2;
	r.exit_code = 0;
	r.exit_reason = "job ended";
	assert_int_equal(rm_died_attached(&r, &lived, NULL, NULL), 2);
	assert_int_equal(lived, 0);
	buf = summary_of(&r);
	print_message("%s", buf);
	assert_non_null(strstr(buf, "all 2 targets died while attached: 2.5 s after the start of "
				    "window 1 to 2.7 s after the start of window 1\n"));
	free(buf);
}

/* A target of --late-start: its word as the node's worker records it. */
static struct rn_target late_target(pid_t pid, long rank, enum rn_state st, int route)
{
	struct rn_target t = target(pid, rank, "late_victim", st);

	t.ls.tried = true;
	t.ls.route = (int8_t)route;
	t.ls.initialized = (int8_t)(st == RN_LATE_STARTED ? 1 : -2);
	t.ls.copies = 1;
	t.ls.started = route == ROCATTACH_LATE_STARTED;
	t.ls.planned_ns = T1;
	snprintf(t.ls.sdk, sizeof(t.ls.sdk), "/opt/rocm/lib/librocprofiler-sdk.so.1");
	return t;
}

/* --late-start: per node started / initialized / failed, the tools stay; no attach words. */
static void test_rm_print_summary_late_starts(void **state)
{
	struct rn_target t[3];
	struct rm_node node = {.host = "nodeA", .t = t, .n = 3};
	struct rm_window w = {1, T1, T1 + 200 * MS, "late starts done", &node, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 4, .exit_reason = "1 target failed"};
	char *buf;

	(void)state;
	t[0] = late_target(500, 0, RN_LATE_STARTED, ROCATTACH_LATE_STARTED);
	t[1] = late_target(501, 1, RN_STOPPED, ROCATTACH_LATE_REFUSED);
	snprintf(t[1].message, sizeof(t[1].message), "process 501 is stopped: nothing was touched");
	t[2] = late_target(502, 2, RN_LATE_STARTED, ROCATTACH_LATE_STARTED);
	assert_int_equal(rm_count_failures(&r), 1);
	buf = summary_of(&r);
	print_message("%s", buf);
	assert_non_null(
	    strstr(buf, ", 1 failed, 2 late-started (the tools stay until each exits)"));
	assert_null(strstr(buf, "not completed"));
	assert_non_null(strstr(buf, "stop reason late starts done, nothing attached or detached "
				    "(late starts)\n"));
	assert_non_null(strstr(buf,
			       "late start (the tools stay in each started process until it "
			       "exits; no detach):\n  nodeA: 2 started, 2 initialized, 1 failed "
			       "or refused\n"));
	assert_non_null(strstr(buf, "stopped: process 501 is stopped: nothing was touched\n"));
	free(buf);
	/* A run without late starts has no such lines. */
	for (size_t i = 0; i < 3; i++)
		t[i].ls.tried = false;
	buf = summary_of(&r);
	assert_null(strstr(buf, "late start ("));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_window_skew_attached_targets),
	    cmocka_unit_test(test_rm_window_skew_exited_during_attach),
	    cmocka_unit_test(test_rm_window_skew_ignores_earlier_windows),
	    cmocka_unit_test(test_rm_window_late_counts_and_figures),
	    cmocka_unit_test(test_rm_window_skew_bounds_and_length),
	    cmocka_unit_test(test_rm_node_attach_times_median),
	    cmocka_unit_test(test_rm_print_summary_rows_and_failures),
	    cmocka_unit_test(test_rm_print_summary_length_unknown),
	    cmocka_unit_test(test_rm_print_summary_tool_outcomes),
	    cmocka_unit_test(test_rm_print_summary_died_attached_and_stopped),
	    cmocka_unit_test(test_rm_print_summary_late_starts),
	    cmocka_unit_test(test_rm_print_summary_long_host),
	    cmocka_unit_test(test_rm_print_dry_run_lists_targets),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

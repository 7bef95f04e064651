/* SPDX-License-Identifier: MIT */
/*
 * The JSON report of rocattach-mpi on a run built by hand (report_sample.h):
 * its top, windows, errors once, refused paths, numbers past LONG_MAX.
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

static json_t *load_report(void)
{
	char err[256] = "";
	json_error_t jerr;
	json_t *j;

	assert_int_equal(rm_write_report(path_in_dir("run.json"), &run, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(access(path_in_dir("run.json.tmp"), F_OK), -1);
	j = json_load_file(path_in_dir("run.json"), 0, &jerr);
	if (!j)
		fail_msg("%s:%d: %s", jerr.source, jerr.line, jerr.text);
	return j;
}

static void test_rm_write_report_top_and_config(void **state)
{
	json_t *j = load_report();

	(void)state;
	assert_string_equal(json_string_value(jget(j, "schema")), "rocattach-mpi-report/1");
	assert_string_equal(json_string_value(jget(j, "version")), ROCATTACH_VERSION_STRING);
	assert_int_equal(jint(j, "started_ns"), T1 - 2000 * MS);
	assert_int_equal(jint(j, "ended_ns"), S2 + 100 * MS);
	assert_int_equal(jint(j, "exit_code"), 4);
	assert_string_equal(json_string_value(jget(j, "exit_reason")), "2 targets failed");
	assert_int_equal(json_array_size(jget(j, "config.argv")), 3);
	assert_string_equal(json_string_value(jget(j, "config.argv.2")), "42.0");
	assert_string_equal(json_string_value(jget(j, "config.tools")), "libtool.so");
	assert_true(json_is_null(jget(j, "config.duration_ms")));
	assert_int_equal(jint(j, "config.delay_ms"), 500);
	assert_int_equal(jint(j, "config.windows"), 2);
	assert_int_equal(jint(j, "config.jobs"), 4);
	assert_true(json_is_true(jget(j, "config.inject")));
	assert_int_equal(jint(j, "config.ranks"), 3);
	assert_int_equal(jint(j, "summary.nodes"), 3);
	check_counts(jget(j, "summary"), "targets", 4, 3, 1, 1);
	assert_string_equal(json_string_value(jget(j, "stop_reason")), "completed");
	json_decref(j);
}

static void check_window(json_t *j, size_t i)
{
	struct rm_skew s = rm_window_skew(&windows[i]);
	json_t *w = json_array_get(jget(j, "windows"), i);

	assert_int_equal(jint(w, "index"), (json_int_t)i + 1);
	assert_int_equal(jint(w, "start_ns"), windows[i].start_ns);
	assert_int_equal(jint(w, "stop_ns"), windows[i].stop_ns);
	assert_string_equal(json_string_value(jget(w, "stop_reason")), "duration");
	assert_int_equal(jint(w, "skew.attach_ns"), s.attach_ns);
	assert_int_equal(jint(w, "skew.detach_ns"), s.detach_ns);
	assert_int_equal(jint(w, "skew.targets"), s.n);
	assert_int_equal(json_array_size(jget(w, "nodes")), 3);
	assert_string_equal(json_string_value(jget(w, "nodes.2.host")), "node3");
	assert_int_equal(jint(w, "nodes.2.found"), 0);
	assert_true(json_is_null(jget(w, "nodes.2.attach_p50_ns")));
	assert_int_equal(json_array_size(jget(w, "nodes.2.targets")), 0);
}

static void test_rm_write_report_windows(void **state)
{
	json_t *j = load_report(), *t;

	(void)state;
	assert_int_equal(json_array_size(jget(j, "windows")), 2);
	check_window(j, 0);
	check_window(j, 1);
	assert_int_equal(jint(j, "windows.0.nodes.0.attach_p50_ns"), 1000000);
	assert_int_equal(jint(j, "windows.0.nodes.0.attach_max_ns"), 1200000);
	assert_int_equal(jint(j, "windows.1.nodes.0.attach_skew_ns"), 300000);
	check_counts(jget(j, "windows.1.nodes.1"), "found", 2, 1, 1, 1);
	assert_int_equal(jint(j, "windows.0.nodes.0.realtime_minus_boottime_ns"), 5 * MS);
	assert_true(json_is_null(jget(j, "windows.0.nodes.1.realtime_minus_boottime_ns")));
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.cpus")),
			    "0-7,16");
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.numa")), "0");
	assert_int_equal(json_array_size(jget(j, "windows.0.nodes.0.topology.gpus")), 2);
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.gpus.1")),
			    "card1(0000:c2:00.0)");
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.2.topology.cpus")), "");
	/* The records as rn_target_to_json writes them, nulls included. */
	t = jget(j, "windows.0.nodes.1.targets.1");
	assert_int_equal(jint(t, "pid"), 201);
	assert_true(json_is_null(jget(t, "rank")));
	assert_string_equal(json_string_value(jget(t, "state")), "attach-failed");
	assert_true(json_is_null(jget(t, "detach")));
	assert_string_equal(json_string_value(jget(t, "message")), BAD_MESSAGE);
	t = jget(j, "windows.0.nodes.0.targets.0");
	assert_true(json_is_null(jget(t, "message")));
	assert_int_equal(jint(t, "attach.end_ns"), T1 + 900000);
	json_decref(j);
}

static void test_rm_write_report_errors_once(void **state)
{
	json_t *j = load_report(), *e;

	(void)state;
	e = jget(j, "errors");
	/* 201's failure once; 200 exited, which is no error. */
	assert_int_equal(json_array_size(e), 1);
	assert_int_equal(jint(e, "0.window"), 1);
	assert_string_equal(json_string_value(jget(e, "0.host")), "node2");
	assert_int_equal(jint(e, "0.pid"), 201);
	assert_true(json_is_null(jget(e, "0.rank")));
	assert_string_equal(json_string_value(jget(e, "0.state")), "attach-failed");
	assert_string_equal(json_string_value(jget(e, "0.message")), BAD_MESSAGE);
	assert_int_equal(rm_count_failures(&run), 1);
	json_decref(j);
}

static void test_rm_write_missing_dir(void **state)
{
	char err[256] = "";

	(void)state;
	assert_int_equal(rm_write_report("/nonexistent-dir/x/y.json", &run, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot write report /nonexistent-dir/x/y.json: No such file or "
				 "directory");
	assert_int_equal(rm_write_timeline("/nonexistent-dir/t.svg", &run, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot write timeline /nonexistent-dir/t.svg: No such file or "
				 "directory");
}

/* Rank 0 may be root writing into a shared directory. */
static void test_rm_write_report_refuses_tmp_symlink(void **state)
{
	char err[256] = "", *target = strdup(path_in_dir("victim"));

	(void)state;
	assert_int_equal(symlink(target, path_in_dir("link.json.tmp")), 0);
	assert_int_equal(rm_write_report(path_in_dir("link.json"), &run, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "link.json: Too many levels of symbolic links"));
	assert_int_equal(access(target, F_OK), -1);
	assert_int_equal(access(path_in_dir("link.json"), F_OK), -1);
	free(target);
}

static void test_rm_write_timeline_no_window(void **state)
{
	struct rm_run r = {.exit_code = 3, .exit_reason = "no targets found"};
	char err[256] = "", *svg;

	(void)state;
	assert_int_equal(rm_write_timeline(path_in_dir("none.svg"), &r, err, sizeof(err)), 0);
	svg = slurp(path_in_dir("none.svg"));
	assert_non_null(strstr(svg, "no window ran"));
	assert_int_equal(count(svg, "<rect"), 0);
	free(svg);
	assert_int_equal(rm_write_report(path_in_dir("none.json"), &r, err, sizeof(err)), 0);
}

/* Found by fuzz_report: a node's CPU list with a number past LONG_MAX overflowed the merge. */
static void test_rm_write_report_huge_cpu_numbers(void **state)
{
	struct rn_target t[2] = {{.pid = 1, .state = RN_DETACHED},
				 {.pid = 2, .state = RN_DETACHED}};
	struct rm_node n = {.host = "node1", .t = t, .n = 2};
	struct rm_window w = {.index = 1,
			      .start_ns = T1,
			      .stop_ns = T1 + MS,
			      .stop_reason = "duration",
			      .nodes = &n,
			      .n_nodes = 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_reason = "ok"};
	char err[256] = "";
	json_t *j;

	(void)state;
	topo(&t[0], "0-99999999999999999999,5", "0", "");
	topo(&t[1], "2147483648,3", "0", "");
	assert_int_equal(rm_write_report(path_in_dir("huge.json"), &r, err, sizeof(err)), 0);
	j = json_load_file(path_in_dir("huge.json"), 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.cpus")), "3,5");
	json_decref(j);
}

/*
 * Issue 21: a target that died with its tools attached is counted apart
 * from exits, with when it was seen gone; a stopped one is a failure; when
 * none lived on, one line says so plainly.
 */
/*
 * A line for each library of the list that declined or failed somewhere,
 * named as the agent split the list (empty entries dropped), and a target
 * where one failed among the failures though it detached.
 */

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_write_report_top_and_config),
	    cmocka_unit_test(test_rm_write_report_windows),
	    cmocka_unit_test(test_rm_write_report_errors_once),
	    cmocka_unit_test(test_rm_write_missing_dir),
	    cmocka_unit_test(test_rm_write_report_refuses_tmp_symlink),
	    cmocka_unit_test(test_rm_write_timeline_no_window),
	    cmocka_unit_test(test_rm_write_report_huge_cpu_numbers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

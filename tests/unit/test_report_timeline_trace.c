/* SPDX-License-Identifier: MIT */
/*
 * The SVG timeline and the trace of rocattach-mpi on a run built by hand
 * (report_sample.h): escaped text, both sides, each change once.
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

static double absd(double v)
{
	return v < 0 ? -v : v;
}
static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	assert_true(json_is_number(v));
	return json_number_value(v);
}

static void test_rm_write_timeline_svg(void **state)
{
	char err[256] = "", *svg;

	(void)state;
	assert_int_equal(rm_write_timeline(path_in_dir("run.svg"), &run, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(access(path_in_dir("run.svg.tmp"), F_OK), -1);
	svg = slurp(path_in_dir("run.svg"));
	assert_int_equal(strncmp(svg, "<svg", 4), 0);
	assert_int_equal(count(svg, "<svg"), 1);
	assert_non_null(strstr(svg, "</svg>\n"));
	/*
	 * Bars: window 1 has 3 green and 1 red (201's attach); window 2 has 2
	 * green and 1 grey (200 exited while attached: not a failure); 201's
	 * failure is not drawn twice.
	 */
	assert_int_equal(count(svg, "<rect"), 7);
	assert_int_equal(count(svg, "</rect>"), 7);
	assert_int_equal(count(svg, "fill=\"#d64541\""), 1);
	assert_int_equal(count(svg, "fill=\"#9aa5b1\""), 1);
	assert_int_equal(count(svg, "<title>"), count(svg, "</title>"));
	assert_null(strstr(svg, "<&"));
	assert_xml_text_escaped(svg);
	assert_non_null(strstr(svg, "a&lt;b&amp;c"));
	assert_non_null(strstr(svg, "attach-failed: PTRACE_SEIZE(201): &quot;denied&quot;?&lt;&amp;"
				    "&gt; &apos;x&apos;</title>"));
	assert_non_null(strstr(svg, ">node3</text>"));
	assert_non_null(strstr(svg, "no targets found"));
	assert_non_null(strstr(svg, ">201 <tspan"));
	assert_non_null(strstr(svg, ">100 (rank 0) <tspan"));
	/* 2 windows x 2 lines, each a mark over the labels and one line per node with targets. */
	assert_int_equal(count(svg, "class=\"wline\""), 2 * 2 * 3);
	free(svg);
}

/* One window: our agent (measured), ROCm's side (bounds), a failed attach, an exit. */
static void test_rm_write_trace_both_sides(void **state)
{
	struct rn_target t[4];
	struct rm_node node = {.host = "nodeA", .t = t, .n = 4, .boot_offset_ns = 42};
	struct rm_window w = {1, T1, S1, "job ended", &node, 1};
	struct rm_run r = {.w = &w,
			   .n_w = 1,
			   .exit_code = 0,
			   .exit_reason = "job ended",
			   .stop_reason = "job ended"};
	json_t *j, *e;

	(void)state;
	t[0] = target(300, 0, "app", RN_DETACHED);
	target_times(&t[0], T1 - 50 * MS, T1 + 123456, S1 - 50 * MS, S1 + 654321);
	t[0].attach_tool_ns = T1 + 1001;
	t[0].detach_tool_ns = S1 + 2002;
	t[0].side = ROCATTACH_SIDE_AGENT;
	t[1] = target(301, 1, "app", RN_DETACHED);
	target_times(&t[1], T1 - 10 * MS, T1 + 2 * MS, S1, S1 + 3 * MS);
	t[1].attach_tool_ns = T1 + 2 * MS;
	t[1].detach_tool_ns = S1 + 3 * MS;
	t[1].detach_call_ns = S1 + MS;
	t[1].attach_tool_bound = t[1].detach_tool_bound = true;
	t[1].side = ROCATTACH_SIDE_ROCM;
	t[2] = target(302, 2, "app", RN_ATTACH_FAILED);
	target_times(&t[2], T1 - 10 * MS, T1 - 9 * MS, 0, 0);
	t[2].agent_status = 6;
	snprintf(t[2].message, sizeof(t[2].message), "tool said no");
	t[3] = target(303, 3, "app", RN_EXITED);
	target_times(&t[3], T1 - 10 * MS, T1 - 8 * MS, 0, 0);
	j = write_trace(&r, "both.json");

	assert_int_equal(events_of(j, "window 1", "X", 1, &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)T1) < 300);
	assert_true(absd(num(e, "dur") * 1000 - (double)(S1 - T1)) < 1);
	/* Our agent: measured hand-over to hand-back, to within a quarter us. */
	assert_int_equal(events_of(j, "tools attached", "X", 300, &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)(T1 + 1001)) < 250);
	assert_true(absd(num(e, "dur") * 1000 - (double)(S1 + 2002 - T1 - 1001)) < 1);
	assert_string_equal(json_string_value(jget(e, "args.tool_ns_kind")), "measured");
	assert_int_equal(jint(e, "args.attach_tool_ns"), T1 + 1001);
	/* ROCm's side: labelled bounds, with the lower bound of its window. */
	assert_int_equal(events_of(j, "tools attached (bounds)", "X", 301, &e), 1);
	assert_string_equal(json_string_value(jget(e, "args.tool_ns_kind")), "bound");
	assert_int_equal(jint(e, "args.window_ns"), S1 + MS - T1 - 2 * MS);
	/* Calls on their own track, beside the tools' one. */
	assert_int_equal(events_of(j, "attach call", "X", CALLS(300), &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)(T1 - 50 * MS)) < 250);
	assert_int_equal(events_of(j, "detach call", "X", CALLS(301), &e), 1);
	/* A failure and an exit: instants, told apart. */
	assert_int_equal(events_of(j, "attach-failed", "i", CALLS(302), &e), 1);
	assert_string_equal(json_string_value(jget(e, "cat")), "failure");
	assert_string_equal(json_string_value(jget(e, "args.message")), "tool said no");
	assert_int_equal(jint(e, "args.agent_status"), 6);
	assert_int_equal(events_of(j, "tools attached", "X", 302, &e), 0);
	assert_int_equal(events_of(j, "exited", "i", CALLS(303), &e), 1);
	assert_string_equal(json_string_value(jget(e, "cat")), "exit");
	/* Names: the node is process 2, each target a named track. */
	assert_int_equal(events_of(j, "process_name", "M", -1, &e), 2);
	assert_int_equal(events_of(j, "thread_name", "M", 301, &e), 1);
	assert_string_equal(json_string_value(jget(e, "args.name")), "pid 301 rank 1 (app)");
	assert_int_equal(jint(j, "otherData.realtime_minus_boottime_ns.nodeA"), 42);
	assert_string_equal(json_string_value(jget(j, "otherData.stop_reason")), "job ended");
	json_decref(j);
}

/* Records gathered again after each window: a failure or exit is in the trace once. */
static void test_rm_write_trace_once_per_change(void **state)
{
	json_t *j, *e;

	(void)state;
	strcpy(w1_nodes[0].host, "nod\xff"
				 "1");
	strcpy(w2_nodes[0].host, "nod\xff"
				 "1");
	j = write_trace(&run, "run.json");
	strcpy(w1_nodes[0].host, "node1");
	strcpy(w2_nodes[0].host, "node1");
	assert_int_equal(events_of(j, "attach-failed", "i", CALLS(201), &e), 1);
	assert_int_equal(events_of(j, "exited", "i", CALLS(200), &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)(S2 + 95000)) < 250);
	/* 100 and 101 attached in both windows: two attach calls each. */
	assert_int_equal(events_of(j, "attach call", "X", CALLS(100), &e), 2);
	assert_int_equal(events_of(j, "window 2", "X", 1, &e), 1);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_write_timeline_svg),
	    cmocka_unit_test(test_rm_write_trace_both_sides),
	    cmocka_unit_test(test_rm_write_trace_once_per_change),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: MIT */
/*
 * Both target sides through the library: our agent and ROCm's (the test
 * double in tests/rocm/, librocprofiler-register.so.0). The side is told by
 * the agent's marker; start and stop times hold on both; the launcher's
 * private variables never reach either side's environment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

#define MS 1000000ull

static const struct victim_opts agent_side = {.agent = true, .attach_env = true};
static const struct victim_opts rocm_side = {.attach_env = true,
					     .env = {"LD_PRELOAD=" RA_ROCM_REGISTER}};

static void test_target_side_by_marker(void **state)
{
	struct victim a, r, plain;

	(void)state;
	assert_int_equal(victim_start(&a, &agent_side), 0);
	assert_int_equal(victim_start(&r, &rocm_side), 0);
	assert_int_equal(victim_start(&plain, &(struct victim_opts){0}), 0);
	assert_int_equal(rocattach_target_side(a.pid), ROCATTACH_SIDE_AGENT);
	assert_int_equal(rocattach_target_side(r.pid), ROCATTACH_SIDE_ROCM);
	assert_int_equal(rocattach_target_side(plain.pid), ROCATTACH_SIDE_UNKNOWN);
	assert_int_equal(rocattach_target_side(-1), ROCATTACH_SIDE_UNKNOWN);
	/* Looking stops nothing and leaves no tracer. */
	assert_unharmed(&a, true);
	assert_unharmed(&r, true);
	victim_stop(&a);
	victim_stop(&r);
	victim_stop(&plain);
}

/*
 * tool_attach at or after the start time, tool_detach at or after the stop
 * time, by the tool's own clock; the report says how it knows.
 */
static void timed_window(const struct victim_opts *vo, int side)
{
	rocattach_opts_t o = {.size = sizeof(o)};
	rocattach_report_t rep = {.size = sizeof(rep)};
	unsigned long long tool_at, tool_dt;
	struct victim v;

	assert_int_equal(victim_start(&v, vo), 0);
	o.start_ns = realtime_ns() + 150 * MS;
	assert_int_equal(rocattach_attach_ex(v.pid, &o, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.target_side, side);
	tool_at = tool_event_ns(log_of(v.pid), "tool_attach", 1);
	assert_true(tool_at >= o.start_ns);
	assert_true(rep.end_ns >= tool_at);
	if (side == ROCATTACH_SIDE_ROCM) {
		/* The call began at the start time; its end bounds tool_attach. */
		assert_int_equal(rep.tool_ns_bound, 1);
		assert_true(rep.call_start_ns >= o.start_ns);
		assert_true(rep.tool_ns == rep.call_end_ns && rep.tool_ns >= tool_at);
	} else {
		assert_int_equal(rep.tool_ns_bound, 0);
		assert_true(rep.tool_ns >= o.start_ns && rep.tool_ns <= tool_at);
	}
	memset(&rep, 0, sizeof(rep));
	rep.size = sizeof(rep);
	o.stop_ns = realtime_ns() + 100 * MS;
	assert_int_equal(rocattach_detach_ex(v.pid, &o, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.target_side, side);
	tool_dt = tool_event_ns(log_of(v.pid), "tool_detach", 1);
	assert_true(tool_dt >= o.stop_ns);
	if (side == ROCATTACH_SIDE_ROCM) {
		/* The call began at the stop time; its end bounds tool_detach from above. */
		assert_int_equal(rep.tool_ns_bound, 1);
		assert_true(rep.call_start_ns >= o.stop_ns && rep.call_start_ns <= tool_dt);
		assert_true(rep.tool_ns == rep.call_end_ns && rep.tool_ns >= tool_dt);
	} else {
		assert_true(rep.tool_ns >= o.stop_ns && rep.tool_ns <= tool_dt);
	}
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_start_stop_times_agent(void **state)
{
	(void)state;
	timed_window(&agent_side, ROCATTACH_SIDE_AGENT);
}

static void test_start_stop_times_rocm(void **state)
{
	(void)state;
	timed_window(&rocm_side, ROCATTACH_SIDE_ROCM);
}

/* The caller's copies of the private names never cross; ours reach only our agent's buffer. */
static void private_vars(const struct victim_opts *vo)
{
	static const char *const names[] = {"ROCP_ATTACH_OWNER", "ROCP_ATTACH_START_NS"};
	rocattach_opts_t o = {.size = sizeof(o)};
	char cmd[64], reply[256], want[128];
	struct victim v;

	/* Set once the victim runs: it must not inherit them from us at its start. */
	assert_int_equal(victim_start(&v, vo), 0);
	setenv("ROCP_ATTACH_OWNER", "1:1", 1);
	setenv("ROCP_ATTACH_START_NS", "1", 1);
	setenv("ROCP_TEST_MARKER", "crossed", 1);
	o.start_ns = realtime_ns() + 50 * MS;
	assert_int_equal(rocattach_attach_ex(v.pid, &o, NULL), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(cmd, sizeof(cmd), "env %s", names[i]);
		snprintf(want, sizeof(want), "env %s unset", names[i]);
		assert_int_equal(victim_cmd(&v, cmd, reply, sizeof(reply)), 0);
		assert_string_equal(reply, want);
	}
	assert_int_equal(victim_cmd(&v, "env ROCP_TEST_MARKER", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_TEST_MARKER=crossed");
	victim_stop(&v);
	unsetenv("ROCP_ATTACH_OWNER");
	unsetenv("ROCP_ATTACH_START_NS");
	unsetenv("ROCP_TEST_MARKER");
}

static void test_private_vars_never_in_environ_agent(void **state)
{
	(void)state;
	private_vars(&agent_side);
}

static void test_private_vars_never_in_environ_rocm(void **state)
{
	(void)state;
	private_vars(&rocm_side);
}

/* A start time absurdly far ahead is refused before anything is touched. */
static void test_start_too_far_ahead_refused(void **state)
{
	rocattach_opts_t o = {.size = sizeof(o)};
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &rocm_side), 0);
	o.start_ns = realtime_ns() + 60000 * MS;
	assert_int_equal(rocattach_attach_ex(v.pid, &o, &rep),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rep.message, "start time is"));
	assert_int_equal(rocattach_is_attached(v.pid), 0);
	assert_int_equal(tool_count(log_of(v.pid), "configure"), 0);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_target_side_by_marker),
	    cmocka_unit_test(test_start_stop_times_agent),
	    cmocka_unit_test(test_start_stop_times_rocm),
	    cmocka_unit_test(test_private_vars_never_in_environ_agent),
	    cmocka_unit_test(test_private_vars_never_in_environ_rocm),
	    cmocka_unit_test(test_start_too_far_ahead_refused),
	};

	return cmocka_run_group_tests(tests, setup_outdir_with_tool, NULL);
}

/* SPDX-License-Identifier: MIT */
/* --inject: attach processes started without any attach support. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

static int threads_of(pid_t pid)
{
	char path[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir)))
		n += d->d_name[0] != '.';
	if (dir)
		closedir(dir);
	return n;
}

static const rocattach_opts_t inject_opts = {
    .size = sizeof(rocattach_opts_t),
    .tool_libraries = RA_TOOL_PATH,
    .flags = ROCATTACH_F_INJECT,
    .agent_path = RA_AGENT_PATH,
};

static void test_inject_plain_program_full_lifecycle(void **state)
{
	const char *logtext;
	const struct victim_opts plain = {0};
	rocattach_report_t rep = {.size = sizeof(rep)};
	char events[256], reply[256];
	struct victim v;
	int threads0;

	(void)state;
	assert_int_equal(victim_start(&v, &plain), 0);
	assert_int_equal(proc_thread(v.pid, "rocp-bg-attach"), 0);
	threads0 = threads_of(v.pid);
	/* Without --inject: ROCm's behaviour, a clear refusal. */
	assert_int_equal(rocattach_attach_ex(v.pid,
					     &(rocattach_opts_t){.size = sizeof(rocattach_opts_t),
								 .tool_libraries = RA_TOOL_PATH},
					     NULL),
			 ROCATTACH_STATUS_ERROR);

	assert_int_equal(rocattach_attach_ex(v.pid, &inject_opts, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_true(rep.step_ns[ROCATTACH_STEP_INJECT] > 0);
	print_message("inject: application thread stopped %.3f ms\n",
		      rep.step_ns[ROCATTACH_STEP_INJECT] / 1e6);
	assert_true(proc_thread(v.pid, "rocp-bg-attach") > 0);
	/* The loader thread (lib/inject.c) has gone: the listener and the watchdog are new. */
	while (threads_of(v.pid) > threads0 + 1 + (proc_thread(v.pid, "rocp-watchdog") > 0))
		usleep(1000);
	logtext = log_of(v.pid);
	tool_events(logtext, events, sizeof(events));
	assert_string_equal(events, "configure configure_attach initialize tool_attach");
	/* The borrowed thread (the reader, blocked in read) lost nothing. */
	assert_int_equal(victim_cmd(&v, "echo after-inject", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "echo after-inject");
	assert_int_equal(victim_status(&v, "eintr"), 0);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	/* Second window: the listener is there now, no second load. */
	memset(&rep, 0, sizeof(rep));
	rep.size = sizeof(rep);
	assert_int_equal(rocattach_attach_ex(v.pid, &inject_opts, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.step_ns[ROCATTACH_STEP_INJECT], 0);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_detach"), 2);
	assert_int_equal(tool_count(logtext, "configure"), 1);
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_int_equal(victim_cmd(&v, "ping", reply, sizeof(reply)), 0);
	assert_int_equal(victim_status(&v, "eintr"), 0);
	victim_stop(&v);
}

static void test_inject_static_program_refused(void **state)
{
	const struct victim_opts o = {.program = RA_STATIC_SLEEPER};
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &o), 0);
	assert_int_equal(rocattach_attach_ex(v.pid, &inject_opts, NULL),
			 ROCATTACH_STATUS_ERROR_NOT_SUPPORTED);
	assert_non_null(strstr(rocattach_last_error(), "no glibc dlopen"));
	assert_true(proc_alive(v.pid));
	assert_int_equal(proc_tracer(v.pid), 0);
	victim_stop(&v);
}

static void test_inject_missing_agent_rejected(void **state)
{
	rocattach_opts_t o = inject_opts;
	struct victim v;

	(void)state;
	o.agent_path = "/nonexistent/librocattach-agent.so.0";
	assert_int_equal(victim_start(&v, &(struct victim_opts){0}), 0);
	assert_int_equal(rocattach_attach_ex(v.pid, &o, NULL),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rocattach_last_error(), "/nonexistent/"));
	assert_int_equal(proc_thread(v.pid, "rocp-bg-attach"), 0);
	victim_stop(&v);
}

/* What the library said while a test ran (its debug messages). */
struct said {
	int early, watched;
};

static void count_said(int level, const char *message, void *user)
{
	struct said *s = user;

	(void)level;
	s->early += strstr(message, "before the code ran: sent again") != NULL;
	s->watched += strstr(message, "not in the park: watching instead") != NULL;
}

/*
 * The inject runs remote calls one after the other on the loader thread,
 * which blocks every signal: the park's signal tells the attacher of each
 * call's end. After one park the thread leaves its stop still under the
 * park's mask, so the next call's signal comes before that call runs. It is
 * sent again, and the signal way holds: no call falls back to watching.
 * Before, each inject here fell back to watching after its first call.
 */
static void test_inject_park_signal_kept_from_call_to_call(void **state)
{
	struct said said = {0};
	struct victim v[5];

	(void)state;
	rocattach_set_log_callback(count_said, &said);
	rocattach_set_log_level(ROCATTACH_LOG_DEBUG);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(victim_start(&v[i], &(struct victim_opts){0}), 0);
		assert_int_equal(rocattach_attach_ex(v[i].pid, &inject_opts, NULL),
				 ROCATTACH_STATUS_SUCCESS);
		assert_int_equal(rocattach_detach(v[i].pid), ROCATTACH_STATUS_SUCCESS);
	}
	rocattach_set_log_level(ROCATTACH_LOG_WARNING);
	rocattach_set_log_callback(NULL, NULL);
	print_message("5 injects: %d signals sent again, %d calls watched\n", said.early,
		      said.watched);
	assert_true(said.early >= 5);
	assert_int_equal(said.watched, 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(tool_count(log_of(v[i].pid), "tool_detach"), 1);
		assert_int_equal(proc_tracer(v[i].pid), 0);
		assert_int_equal(victim_status(&v[i], "eintr"), 0);
		victim_stop(&v[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inject_plain_program_full_lifecycle),
	    cmocka_unit_test(test_inject_static_program_refused),
	    cmocka_unit_test(test_inject_missing_agent_rejected),
	    cmocka_unit_test(test_inject_park_signal_kept_from_call_to_call),
	};

	return cmocka_run_group_tests(tests, setup_outdir_no_tool, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * The watchdog for ROCm's target side (librocattach-watchdog), on the test
 * double of ROCm's rocprofiler-register: an attacher that dies during the
 * window leaves no tool attached (tool_detach within 2 s), the target runs
 * on and can be attached again with the same tool path; a normal detach or
 * a failed attach leaves nothing armed; nothing of ours reaches the
 * application's environment; the report says which targets are watched.
 * Every victim is a process this test started.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

/* The guarantee: tool_detach within 2 s of the attacher's death. */
#define DETACH_DEADLINE_NS 2000000000ULL

static const struct victim_opts rocm_side = {.attach_env = true,
					     .env = {"LD_PRELOAD=" RA_ROCM_REGISTER}};
static const struct victim_opts agent_side = {.agent = true, .attach_env = true};

/* What an attacher child's attach (and detach) answered. */
struct answer {
	int status;
	int side;
	unsigned int flags;
	char message[256];
};

/*
 * A child that attaches pid with flags, tells us how it went, then detaches
 * and exits (detach) or waits to be killed. It dies with us: a failed test
 * must leave nothing attached by a lingering attacher.
 */
static pid_t attacher_child(pid_t pid, unsigned int flags, bool detach, struct answer *out)
{
	int p[2];
	pid_t a;

	assert_int_equal(pipe(p), 0);
	a = fork();
	if (a == 0) {
		rocattach_opts_t o = {.size = sizeof(o), .flags = flags};
		rocattach_report_t rep = {.size = sizeof(rep)};
		struct answer r = {0};

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		r.status = (int)rocattach_attach_ex(pid, &o, &rep);
		r.side = rep.target_side;
		r.flags = rep.flags;
		snprintf(r.message, sizeof(r.message), "%.*s", (int)sizeof(r.message) - 1,
			 rep.message);
		if (detach && !r.status)
			r.status = (int)rocattach_detach(pid);
		if (write(p[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(99);
		if (!detach)
			pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], out, sizeof(*out)), (ssize_t)sizeof(*out));
	close(p[0]);
	return a;
}

static void kill_child(pid_t a, unsigned long long *killed_ns)
{
	*killed_ns = realtime_ns();
	assert_int_equal(kill(a, SIGKILL), 0);
	assert_int_equal(waitpid(a, NULL, 0), a);
}

static void assert_detached_soon(pid_t pid, int nth, unsigned long long since_ns)
{
	unsigned long long at;

	assert_true(wait_tool_events(test_outdir, pid, "tool_detach", nth, 5000));
	at = tool_event_ns(log_of(pid), "tool_detach", nth);
	print_message("tool_detach %.1f ms after the attacher died\n",
		      (double)(at - since_ns) / 1e6);
	assert_true(at >= since_ns && at - since_ns < DETACH_DEADLINE_NS);
}

/* A new attacher (us) gets a full window with the same tool path. */
static void assert_attachable(struct victim *v, int windows_before)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	const char *logtext;

	if (rocattach_attach_ex(v->pid, NULL, &rep) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("reattach: %s", rep.message);
	assert_true(rep.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_int_equal(rocattach_detach(v->pid), ROCATTACH_STATUS_SUCCESS);
	logtext = log_of(v->pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), windows_before + 1);
	assert_int_equal(tool_count(logtext, "tool_detach"), windows_before + 1);
}

static void start_rocm_victim(struct victim *v)
{
	assert_int_equal(victim_start(v, &rocm_side), 0);
	assert_int_equal(rocattach_target_side(v->pid), ROCATTACH_SIDE_ROCM);
}

static void test_rocm_watchdog_attacher_sigkill_mid_window(void **state)
{
	unsigned long long killed;
	struct answer ans;
	struct victim v;
	pid_t a;

	(void)state;
	start_rocm_victim(&v);
	a = attacher_child(v.pid, 0, false, &ans);
	if (ans.status)
		fail_msg("attach: %s", ans.message);
	assert_int_equal(ans.side, ROCATTACH_SIDE_ROCM);
	assert_true(ans.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_true(proc_thread(v.pid, "rocattach-wd") > 0);
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 1);
	usleep(200 * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 0);
	kill_child(a, &killed);
	assert_detached_soon(v.pid, 1, killed);
	assert_unharmed(&v, true);
	assert_attachable(&v, 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* The owner detached and exited: nothing fires afterwards. */
static void test_rocm_watchdog_disarmed_by_normal_detach(void **state)
{
	struct answer ans;
	struct victim v;
	pid_t a;

	(void)state;
	start_rocm_victim(&v);
	a = attacher_child(v.pid, 0, true, &ans);
	assert_int_equal(ans.status, ROCATTACH_STATUS_SUCCESS);
	assert_true(ans.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_int_equal(waitpid(a, NULL, 0), a);
	usleep(1500 * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 1);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, true);
	assert_attachable(&v, 1);
	victim_stop(&v);
}

/*
 * A failed attach arms nothing: ROCm's side refuses another tool path
 * string on a reattach (INVALID_ARGUMENT), the attacher dies, and no
 * tool_detach follows.
 */
static void test_rocm_watchdog_failed_attach_never_fires(void **state)
{
	char other[512];
	unsigned long long killed;
	struct answer ans;
	struct victim v;
	pid_t a;

	rocattach_report_t rep = {.size = sizeof(rep)};

	(void)state;
	start_rocm_victim(&v);
	/*
	 * The first window without our watchdog: no record of its tool path,
	 * so the attacher cannot refuse another ahead and ROCm's own refusal
	 * (8) comes, through the watchdog, which must stay unarmed.
	 */
	setenv("ROCATTACH_WATCHDOG", "off", 1);
	assert_int_equal(rocattach_attach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
	unsetenv("ROCATTACH_WATCHDOG");
	assert_false(rep.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	/* The same file under another string. */
	snprintf(other, sizeof(other), "%s", RA_TOOL_PATH);
	*strrchr(other, '/') = '\0';
	snprintf(other + strlen(other), sizeof(other) - strlen(other), "/.%s",
		 strrchr(RA_TOOL_PATH, '/'));
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", other, 1);
	a = attacher_child(v.pid, 0, false, &ans);
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", RA_TOOL_PATH, 1);
	print_message("%s\n", ans.message);
	assert_int_equal(ans.status, ROCATTACH_STATUS_ERROR);
	assert_non_null(strstr(ans.message, "returned 8 (INVALID_ARGUMENT): ROCm's side keeps the "
					    "tool path of its first attach"));
	assert_false(ans.flags & ROCATTACH_REPORT_WATCHDOG);
	kill_child(a, &killed);
	usleep(1500 * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 1);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, true);
	assert_attachable(&v, 1);
	victim_stop(&v);
}

/*
 * Killed inside the attach call (tool_attach takes 800 ms): the call
 * completes in the target, armed, and the watchdog then detaches.
 */
static void test_rocm_watchdog_attacher_killed_mid_attach(void **state)
{
	unsigned long long killed, attached;
	struct victim v;
	pid_t a;

	(void)state;
	start_rocm_victim(&v);
	setenv("ROCPROF_EXAMPLE_TOOL_ATTACH_MS", "800", 1);
	a = fork();
	if (a == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(rocattach_attach(v.pid));
	}
	unsetenv("ROCPROF_EXAMPLE_TOOL_ATTACH_MS");
	assert_true(wait_tool_events(test_outdir, v.pid, "initialize", 1, 10000));
	usleep(200 * 1000);
	kill_child(a, &killed);
	assert_true(wait_tool_events(test_outdir, v.pid, "tool_attach", 1, 3000));
	attached = tool_event_ns(log_of(v.pid), "tool_attach", 1);
	assert_true(attached > killed);
	assert_detached_soon(v.pid, 1, attached);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* A new attacher right after the death: every tool_attach is matched by a tool_detach. */
static void test_rocm_watchdog_next_attacher_right_after_death(void **state)
{
	unsigned long long killed;
	const char *logtext;
	struct answer ans;
	struct victim v;
	pid_t a;

	(void)state;
	start_rocm_victim(&v);
	for (int round = 0; round < 5; round++) {
		a = attacher_child(v.pid, 0, false, &ans);
		assert_int_equal(ans.status, ROCATTACH_STATUS_SUCCESS);
		kill_child(a, &killed);
		if (rocattach_attach(v.pid) != ROCATTACH_STATUS_SUCCESS)
			fail_msg("round %d: attach: %s", round, rocattach_last_error());
		if (rocattach_detach(v.pid) != ROCATTACH_STATUS_SUCCESS)
			fail_msg("round %d: detach: %s", round, rocattach_last_error());
	}
	usleep(500 * 1000);
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), 10);
	assert_int_equal(tool_count(logtext, "tool_detach"), 10);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/*
 * Another attacher that does not use the watchdog (here we, with ptrace,
 * as rocprofv3 would) drives the listener when ours dies: the window is
 * left to it, nothing is detached behind its back.
 */
static void test_rocm_watchdog_leaves_a_foreign_attacher_alone(void **state)
{
	unsigned long long killed;
	struct answer ans;
	struct victim v;
	pid_t a, tid;
	int st;

	(void)state;
	start_rocm_victim(&v);
	a = attacher_child(v.pid, 0, false, &ans);
	assert_int_equal(ans.status, ROCATTACH_STATUS_SUCCESS);
	tid = proc_thread(v.pid, "rocp-bg-attach");
	assert_true(tid > 0);
	assert_int_equal(ptrace(PTRACE_SEIZE, tid, NULL, NULL), 0);
	kill_child(a, &killed);
	usleep(300 * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 0);
	assert_int_equal(ptrace(PTRACE_INTERRUPT, tid, NULL, NULL), 0);
	assert_int_equal(waitpid(tid, &st, __WALL), tid);
	assert_int_equal(ptrace(PTRACE_DETACH, tid, NULL, NULL), 0);
	usleep(300 * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 0);
	/* Its window, closed by the next attacher as ROCm's side allows. */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* Nothing of ours in the application's environment: ROCm's side keeps all it is sent. */
static void test_rocm_watchdog_environment_untouched(void **state)
{
	static const char *const names[] = {"ROCP_ATTACH_OWNER", "ROCP_ATTACH_START_NS",
					    "ROCATTACH_WATCHDOG"};
	char cmd[64], reply[256], want[128];
	unsigned long long killed;
	struct answer ans;
	struct victim v;
	pid_t a;

	(void)state;
	start_rocm_victim(&v);
	a = attacher_child(v.pid, 0, false, &ans);
	assert_true(ans.flags & ROCATTACH_REPORT_WATCHDOG);
	kill_child(a, &killed);
	assert_detached_soon(v.pid, 1, killed);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(cmd, sizeof(cmd), "env %s", names[i]);
		snprintf(want, sizeof(want), "env %s unset", names[i]);
		assert_int_equal(victim_cmd(&v, cmd, reply, sizeof(reply)), 0);
		assert_string_equal(reply, want);
	}
	/* The tool lists every ROCP_ATTACH_* it sees in its process: none. */
	assert_null(strstr(log_of(v.pid), "rocp_attach_env=ROCP"));
	assert_non_null(strstr(log_of(v.pid), "rocp_attach_env=-"));
	victim_stop(&v);
}

/* ROCATTACH_F_NO_WATCHDOG: nothing loaded, not reported, nothing detaches. */
static void test_rocm_watchdog_opt_out(void **state)
{
	unsigned long long killed;
	struct answer ans;
	struct victim v;
	pid_t a;

	(void)state;
	start_rocm_victim(&v);
	a = attacher_child(v.pid, ROCATTACH_F_NO_WATCHDOG, false, &ans);
	assert_int_equal(ans.status, ROCATTACH_STATUS_SUCCESS);
	assert_false(ans.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_int_equal(proc_thread(v.pid, "rocattach-wd"), 0);
	kill_child(a, &killed);
	usleep(1500 * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 0);
	/* A later attacher takes the window over and closes it. */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* A watchdog library that cannot be loaded: the attach goes on, not reported as watched. */
static void test_rocm_watchdog_unloadable_attach_goes_on(void **state)
{
	struct answer ans;
	struct victim v;
	pid_t a;

	(void)state;
	start_rocm_victim(&v);
	setenv("ROCATTACH_WATCHDOG", RA_TARGET_PATH, 1); /* not a shared object */
	a = attacher_child(v.pid, 0, true, &ans);
	unsetenv("ROCATTACH_WATCHDOG");
	assert_int_equal(waitpid(a, NULL, 0), a);
	assert_int_equal(ans.status, ROCATTACH_STATUS_SUCCESS);
	assert_false(ans.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* Our agent's own watchdog is reported too. */
static void test_agent_watchdog_reported(void **state)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &agent_side), 0);
	assert_int_equal(rocattach_attach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.target_side, ROCATTACH_SIDE_AGENT);
	assert_true(rep.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_int_equal(proc_thread(v.pid, "rocattach-wd"), 0);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	victim_stop(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rocm_watchdog_attacher_sigkill_mid_window),
	    cmocka_unit_test(test_rocm_watchdog_disarmed_by_normal_detach),
	    cmocka_unit_test(test_rocm_watchdog_failed_attach_never_fires),
	    cmocka_unit_test(test_rocm_watchdog_attacher_killed_mid_attach),
	    cmocka_unit_test(test_rocm_watchdog_next_attacher_right_after_death),
	    cmocka_unit_test(test_rocm_watchdog_leaves_a_foreign_attacher_alone),
	    cmocka_unit_test(test_rocm_watchdog_environment_untouched),
	    cmocka_unit_test(test_rocm_watchdog_opt_out),
	    cmocka_unit_test(test_rocm_watchdog_unloadable_attach_goes_on),
	    cmocka_unit_test(test_agent_watchdog_reported),
	};

	return cmocka_run_group_tests(tests, setup_outdir_with_tool, NULL);
}

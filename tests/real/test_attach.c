/* SPDX-License-Identifier: MIT */
/*
 * The attach library on real processes: the example target as victim, the
 * example tool recording the lifecycle inside it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

static const struct victim_opts with_agent = {.agent = true, .attach_env = true};

static void start(struct victim *v, const struct victim_opts *o)
{
	assert_int_equal(victim_start(v, o), 0);
}

static void test_attach_detach_reattach_lifecycle(void **state)
{
	const char *logtext;
	char events[512], reply[512];
	struct victim v;
	pid_t pid;

	(void)state;
	setenv("ROCP_TEST_MARKER", "crossed", 1);
	start(&v, &with_agent);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_is_attached(v.pid), 1);
	logtext = log_of(v.pid);
	tool_events(logtext, events, sizeof(events));
	assert_string_equal(events, "configure configure_attach initialize tool_attach");
	assert_non_null(strstr(logtext, "detach_func=null"));
	/* ROCP* variables cross into the target, others do not. */
	assert_int_equal(victim_cmd(&v, "env ROCP_TEST_MARKER", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_TEST_MARKER=crossed");
	assert_int_equal(victim_cmd(&v, "env HOME", reply, sizeof(reply)), 0);
	assert_unharmed(&v, false);

	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_is_attached(v.pid), 0);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	tool_events(log_of(v.pid), events, sizeof(events));
	assert_string_equal(events, "configure configure_attach initialize tool_attach "
				    "tool_detach tool_attach tool_detach");
	assert_unharmed(&v, false);
	pid = v.pid;
	assert_true(WIFEXITED(victim_stop(&v)));
	/* finalize runs once, at exit. */
	assert_int_equal(tool_count(log_of(pid), "finalize"), 1);
	unsetenv("ROCP_TEST_MARKER");
}

static void test_attach_ex_report_steps(void **state)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct victim v;

	(void)state;
	start(&v, &with_agent);
	assert_int_equal(rocattach_attach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.status, ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.agent_status, 0);
	assert_int_equal(rep.tid, proc_thread(v.pid, "rocp-bg-attach"));
	assert_string_equal(rep.message, "");
	assert_true(rep.step_ns[ROCATTACH_STEP_SEIZE] > 0);
	assert_true(rep.step_ns[ROCATTACH_STEP_CALL] > 0);
	assert_true(rep.end_ns >= rep.start_ns);
	/* Our agent tells when it handed over to the tool: inside the call. */
	assert_true(rep.tool_ns > rep.start_ns && rep.tool_ns < rep.end_ns);
	memset(&rep, 0, sizeof(rep));
	rep.size = sizeof(rep);
	assert_int_equal(rocattach_detach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.agent_status, 0);
	assert_true(rep.tool_ns > rep.start_ns && rep.tool_ns < rep.end_ns);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

static void test_attach_opts_tool_and_env(void **state)
{
	const char *env[] = {"ROCP_EXTRA=yes", "NOT_ROCP=no", NULL};
	rocattach_opts_t o = {.size = sizeof(o), .tool_libraries = RA_TOOL_PATH, .env = env};
	char reply[256];
	struct victim v;

	(void)state;
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", "/nonexistent/ignored.so", 1);
	start(&v, &with_agent);
	assert_int_equal(rocattach_attach_ex(v.pid, &o, NULL), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(victim_cmd(&v, "env ROCP_EXTRA", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_EXTRA=yes");
	assert_int_equal(victim_cmd(&v, "env NOT_ROCP", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env NOT_ROCP unset");
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", RA_TOOL_PATH, 1);
	victim_stop(&v);
}

static void test_attach_session_rules(void **state)
{
	struct victim v;

	(void)state;
	start(&v, &with_agent);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_int_equal(rocattach_detach_tree(v.pid), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rocattach_last_error(), "already has an attach session"));
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

static void test_attach_without_rocp_tool_attach(void **state)
{
	struct victim_opts o = {.agent = true, .attach_env = false};
	struct victim v;

	(void)state;
	start(&v, &o);
	assert_int_equal(proc_thread(v.pid, "rocp-bg-attach"), 0);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_ERROR);
	assert_non_null(strstr(rocattach_last_error(), "ROCP_TOOL_ATTACH=1"));
	assert_int_equal(rocattach_is_attached(v.pid), 0);
	assert_string_equal(log_of(v.pid), "");
	assert_unharmed(&v, false);
	/* A failed attach leaves no session: the same call fails the same way again. */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_ERROR);
	victim_stop(&v);
}

static void test_attach_dead_or_invalid_pid(void **state)
{
	pid_t dead;

	(void)state;
	assert_int_equal(rocattach_attach(0), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_int_equal(rocattach_attach(-5), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_int_equal(rocattach_attach(getpid()), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	assert_int_equal(rocattach_attach(dead), ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_non_null(strstr(rocattach_last_error(), "does not exist"));
	assert_int_equal(rocattach_attach_tree(dead),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
}

static void test_attach_missing_tool_rejected_before_ptrace(void **state)
{
	char reply[256];
	struct victim v;

	(void)state;
	start(&v, &with_agent);
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", "/nonexistent/libtool.so", 1);
	setenv("ROCP_TEST_NOT_SENT", "1", 1);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rocattach_last_error(), "/nonexistent/libtool.so"));
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", RA_TOOL_PATH, 1);
	unsetenv("ROCP_TEST_NOT_SENT");
	/* Nothing reached the target: its environment is untouched. */
	assert_int_equal(victim_cmd(&v, "env ROCP_TEST_NOT_SENT", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_TEST_NOT_SENT unset");
	assert_string_equal(log_of(v.pid), "");
	assert_unharmed(&v, false);
	victim_stop(&v);
}

static void test_attach_tool_declines_reports_agent_error(void **state)
{
	struct victim v;
	char reply[256];

	(void)state;
	start(&v, &with_agent);
	setenv("ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL", "1", 1);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_ERROR);
	unsetenv("ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL");
	/* Declining is no error, but with every tool declined there is nothing to attach. */
	assert_non_null(
	    strstr(rocattach_last_error(), "returned 1 (NO_TOOLS): every tool declined"));
	/* The environment buffer was rolled back in the target. */
	assert_int_equal(
	    victim_cmd(&v, "env ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL unset");
	assert_unharmed(&v, false);
	/* As in rocprofiler-sdk, a tool's configure is asked once: it stays declined. */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_ERROR);
	assert_non_null(strstr(rocattach_last_error(), "every tool declined"));
	assert_int_equal(tool_count(log_of(v.pid), "configure"), 1);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

static pid_t child_with_listener(pid_t parent, bool want_listener)
{
	char path[64];
	FILE *f;
	pid_t c;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", parent, parent);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%d", &c) == 1) {
		if ((proc_thread(c, "rocp-bg-attach") != 0) == want_listener) {
			fclose(f);
			return c;
		}
	}
	fclose(f);
	return 0;
}

static bool grandchild_listening(void *arg)
{
	pid_t child = child_with_listener(*(pid_t *)arg, true);

	return child && child_with_listener(child, true);
}

static void test_attach_tree_skips_fork_only_child(void **state)
{
	struct victim_opts o = with_agent;
	pid_t child, grandchild, forkonly;
	struct victim v;

	(void)state;
	o.argv[0] = "--depth";
	o.argv[1] = "3";
	o.argv[2] = "--fork-only-child";
	start(&v, &o);
	assert_true(wait_until(grandchild_listening, &v.pid, 10000));
	child = child_with_listener(v.pid, true);
	grandchild = child_with_listener(child, true);
	forkonly = child_with_listener(v.pid, false);
	assert_true(child > 0 && grandchild > 0 && forkonly > 0);

	assert_int_equal(rocattach_attach_tree(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 1);
	assert_int_equal(tool_count(log_of(child), "tool_attach"), 1);
	assert_int_equal(tool_count(log_of(grandchild), "tool_attach"), 1);
	assert_string_equal(log_of(forkonly), "");
	assert_true(proc_alive(forkonly));

	assert_int_equal(rocattach_detach_tree(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_int_equal(tool_count(log_of(child), "tool_detach"), 1);
	assert_int_equal(tool_count(log_of(grandchild), "tool_detach"), 1);
	assert_int_equal(rocattach_detach_tree(v.pid), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_unharmed(&v, false);
	assert_int_equal(proc_tracer(child), 0);
	victim_stop(&v);
}

static void test_attach_tree_root_without_listener(void **state)
{
	struct victim_opts o = {.program = "/bin/sh"};
	char script[512];
	struct victim v;
	pid_t child;

	(void)state;
	/* sh (no listener) -> example target (listener): the root must attach first. */
	snprintf(script, sizeof(script),
		 "ROCP_TOOL_ATTACH=1 LD_PRELOAD=%s %s </dev/null & echo ready; wait", RA_AGENT_PATH,
		 RA_TARGET_PATH);
	o.argv[0] = "-c";
	o.argv[1] = script;
	start(&v, &o);
	for (int i = 0; i < 500 && !(child = child_with_listener(v.pid, true)); i++)
		usleep(10000);
	assert_true(child > 0);
	assert_int_equal(rocattach_attach_tree(v.pid), ROCATTACH_STATUS_ERROR);
	assert_int_equal(rocattach_is_attached(child), 0);
	assert_string_equal(log_of(child), "");
	assert_true(proc_alive(child) && proc_alive(v.pid));
	assert_int_equal(proc_tracer(child), 0);
	kill(child, SIGTERM);
	victim_stop(&v);
}

static bool has_text(const char *s, pid_t pid)
{
	char p[32];

	snprintf(p, sizeof(p), "%d", (int)pid);
	return strstr(s, p) != NULL;
}

/* The children of pid, up to max; how many. */
static int children_of(pid_t pid, pid_t *out, int max)
{
	char path[64];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (n < max && fscanf(f, "%d", &out[n]) == 1)
		n++;
	fclose(f);
	return n;
}

struct tree_of_sh {
	pid_t root;
	pid_t kids[3]; /* two static sleepers, then the example target */
};

static bool sh_tree_up(void *arg)
{
	struct tree_of_sh *t = arg;
	pid_t k[4];

	if (children_of(t->root, k, 4) != 3)
		return false;
	for (int i = 0, s = 0; i < 3; i++) {
		if (proc_thread(k[i], "rocp-bg-attach"))
			t->kids[2] = k[i];
		else if (s < 2)
			t->kids[s++] = k[i];
	}
	return t->kids[2] > 0 && t->kids[1] > 0;
}

/*
 * A tree where two children cannot be attached (static programs: nothing to
 * inject into): the root and the third child attach, the call returns the
 * worst status, and the message is the first failure's with the count.
 * Then a child killed during the window: detach_tree keeps its message.
 */
static void test_attach_tree_keeps_each_failure(void **state)
{
	const rocattach_opts_t inj = {.size = sizeof(rocattach_opts_t),
				      .tool_libraries = RA_TOOL_PATH,
				      .flags = ROCATTACH_F_INJECT,
				      .agent_path = RA_AGENT_PATH};
	struct victim_opts o = {.program = "/bin/sh"};
	struct tree_of_sh t = {0};
	char script[1024];
	struct victim v;
	const char *msg;

	(void)state;
	snprintf(script, sizeof(script),
		 "%s >/dev/null & %s >/dev/null & ROCP_TOOL_ATTACH=1 LD_PRELOAD=%s %s "
		 "</dev/null >/dev/null & echo ready; wait",
		 RA_STATIC_SLEEPER, RA_STATIC_SLEEPER, RA_AGENT_PATH, RA_TARGET_PATH);
	o.argv[0] = "-c";
	o.argv[1] = script;
	start(&v, &o);
	t.root = v.pid;
	assert_true(wait_until(sh_tree_up, &t, 10000));

	assert_int_equal(rocattach_attach_tree_ex(v.pid, &inj, NULL),
			 ROCATTACH_STATUS_ERROR_NOT_SUPPORTED);
	msg = rocattach_last_error();
	assert_non_null(strstr(msg, "2 of 4 processes failed to attach; the first: "));
	assert_non_null(strstr(msg, "no glibc dlopen"));
	assert_true(has_text(msg, t.kids[0]) || has_text(msg, t.kids[1]));
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 1);
	assert_int_equal(tool_count(log_of(t.kids[2]), "tool_attach"), 1);
	for (int i = 0; i < 2; i++) {
		assert_true(proc_alive(t.kids[i]));
		assert_int_equal(proc_tracer(t.kids[i]), 0);
	}

	/* The example target dies in the window: the detach of the rest goes on. */
	kill(t.kids[2], SIGKILL);
	for (int i = 0; i < 500 && proc_alive(t.kids[2]); i++)
		usleep(10000);
	assert_int_equal(rocattach_detach_tree(v.pid),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	msg = rocattach_last_error();
	assert_true(has_text(msg, t.kids[2]));
	assert_non_null(strstr(msg, "exited during the window"));
	assert_null(strstr(msg, "processes failed"));
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_int_equal(rocattach_is_attached(v.pid), 0);
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_true(proc_alive(v.pid));
	kill(t.kids[0], SIGKILL);
	kill(t.kids[1], SIGKILL);
	victim_stop(&v);
}

/* rocattach_detach(0) where one target died in the window: its status and message. */
static void test_detach_zero_returns_the_worst(void **state)
{
	struct victim a, b;
	const char *msg;
	pid_t gone;

	(void)state;
	start(&a, &with_agent);
	start(&b, &with_agent);
	assert_int_equal(rocattach_attach(a.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_attach(b.pid), ROCATTACH_STATUS_SUCCESS);
	gone = b.pid;
	victim_stop(&b);
	assert_int_equal(rocattach_detach(0), ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	msg = rocattach_last_error();
	assert_true(has_text(msg, gone));
	assert_non_null(strstr(msg, "exited during the window"));
	assert_int_equal(rocattach_is_attached(a.pid), 0);
	assert_int_equal(tool_count(log_of(a.pid), "tool_detach"), 1);
	assert_unharmed(&a, false);
	/* Nothing left: SUCCESS, no message. */
	assert_int_equal(rocattach_detach(0), ROCATTACH_STATUS_SUCCESS);
	assert_string_equal(rocattach_last_error(), "");
	victim_stop(&a);
}

static void test_detach_zero_detaches_every_session(void **state)
{
	struct victim a, b;

	(void)state;
	start(&a, &with_agent);
	start(&b, &with_agent);
	assert_int_equal(rocattach_attach(a.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_attach(b.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(0), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_is_attached(a.pid), 0);
	assert_int_equal(rocattach_is_attached(b.pid), 0);
	assert_int_equal(tool_count(log_of(a.pid), "tool_detach"), 1);
	assert_int_equal(tool_count(log_of(b.pid), "tool_detach"), 1);
	assert_unharmed(&a, false);
	assert_unharmed(&b, false);
	victim_stop(&a);
	victim_stop(&b);
}

static void test_attach_blocked_read_keeps_data_no_eintr(void **state)
{
	char reply[256], cmd[64];
	struct victim v;

	(void)state;
	start(&v, &with_agent);
	for (int i = 0; i < 25; i++) {
		assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
		/* A line written while attached is read whole by the blocked reader. */
		snprintf(cmd, sizeof(cmd), "echo cycle-%d", i);
		assert_int_equal(victim_cmd(&v, cmd, reply, sizeof(reply)), 0);
		assert_string_equal(reply, cmd);
		assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	}
	assert_int_equal(victim_status(&v, "eintr"), 0);
	/* 25 echoes + this status + the one in the previous line's call. */
	assert_int_equal(victim_status(&v, "lines"), 27);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

static void test_attach_signal_in_window_reaches_target(void **state)
{
	struct victim v;

	(void)state;
	start(&v, &with_agent);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	for (int i = 0; i < 3; i++) {
		kill(v.pid, SIGUSR1);
		usleep(20000);
	}
	assert_int_equal(victim_status(&v, "sigusr1"), 3);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(victim_status(&v, "sigusr1"), 3);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

/* Run fn(pid) in a child that is SIGKILLed after delay_ms. */
static void kill_attacher_after(pid_t pid, int (*fn)(int), int delay_ms)
{
	int status;
	pid_t a = fork();

	if (a == 0) {
		fn(pid);
		pause();
		_exit(0);
	}
	usleep((useconds_t)delay_ms * 1000);
	kill(a, SIGKILL);
	waitpid(a, &status, 0);
	assert_true(WIFSIGNALED(status));
}

/* SIGURG (the park's signal) pending in this thread's status, or process-wide: 1, else 0. */
static int urg_pending(FILE *f, pid_t pid, const char *tid, void *arg)
{
	unsigned long long mask;
	char line[256];

	(void)pid, (void)tid, (void)arg;
	while (f && fgets(line, sizeof(line), f))
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		     sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
		    (mask & (1ull << (SIGURG - 1))))
			return 1;
	return 0;
}

/* Is SIGURG (the park's signal) pending in any thread of pid, or process-wide? */
static bool park_signal_pending(pid_t pid)
{
	return proc_each_task(pid, "status", urg_pending, NULL) > 0;
}

static int attach_only(int pid)
{
	return rocattach_attach(pid);
}

static void test_attacher_sigkill_while_idle(void **state)
{
	struct victim v;

	(void)state;
	start(&v, &with_agent);
	kill_attacher_after(v.pid, attach_only, 500);
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 1);
	assert_unharmed(&v, false);
	/* The listener is intact: the process can be attached again. */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	victim_stop(&v);
}

static int attach_then_detach(int pid)
{
	rocattach_attach(pid);
	return rocattach_detach(pid);
}

static void test_attacher_sigkill_mid_call(void **state)
{
	struct victim_opts o = with_agent;
	struct victim v;

	(void)state;
	start(&v, &o);
	/* tool_detach sleeps 1.5 s: the attacher dies inside the remote call. */
	setenv("ROCPROF_EXAMPLE_TOOL_DETACH_MS", "1500", 1);
	kill_attacher_after(v.pid, attach_then_detach, 700);
	unsetenv("ROCPROF_EXAMPLE_TOOL_DETACH_MS");
	usleep(1500 * 1000);
	/* No stray trap: the process lives, untraced, its work goes on. */
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, false);
	/* The park's signal, sent before the call, was discarded by the park. */
	assert_false(park_signal_pending(v.pid));
	/* The listener parked: it can still be driven. */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 2);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

/*
 * The two ways of seeing the park (lib/remote.c): the kernel's report of the
 * park's signal (the default on a listener), and watching (forced here, as
 * on a thread that does not block the signal): both drive the agent alike,
 * and neither leaves the signal pending.
 */
static void test_attach_park_signalled_or_watched(void **state)
{
	struct victim v;

	(void)state;
	start(&v, &with_agent);
	for (int i = 0; i < 4; i++) {
		if (i % 2)
			setenv("ROCATTACH_PARK", "watch", 1);
		assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
		assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
		unsetenv("ROCATTACH_PARK");
		assert_false(park_signal_pending(v.pid));
	}
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 4);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

static void test_detach_after_target_exit(void **state)
{
	struct victim v;
	pid_t pid;

	(void)state;
	start(&v, &with_agent);
	pid = v.pid;
	assert_int_equal(rocattach_attach(pid), ROCATTACH_STATUS_SUCCESS);
	victim_stop(&v);
	assert_int_equal(rocattach_detach(pid), ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_non_null(strstr(rocattach_last_error(), "exited during the window"));
	assert_int_equal(rocattach_is_attached(pid), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_attach_detach_reattach_lifecycle),
	    cmocka_unit_test(test_attach_ex_report_steps),
	    cmocka_unit_test(test_attach_opts_tool_and_env),
	    cmocka_unit_test(test_attach_session_rules),
	    cmocka_unit_test(test_attach_without_rocp_tool_attach),
	    cmocka_unit_test(test_attach_dead_or_invalid_pid),
	    cmocka_unit_test(test_attach_missing_tool_rejected_before_ptrace),
	    cmocka_unit_test(test_attach_tool_declines_reports_agent_error),
	    cmocka_unit_test(test_attach_tree_skips_fork_only_child),
	    cmocka_unit_test(test_attach_tree_root_without_listener),
	    cmocka_unit_test(test_attach_tree_keeps_each_failure),
	    cmocka_unit_test(test_detach_zero_returns_the_worst),
	    cmocka_unit_test(test_detach_zero_detaches_every_session),
	    cmocka_unit_test(test_attach_blocked_read_keeps_data_no_eintr),
	    cmocka_unit_test(test_attach_signal_in_window_reaches_target),
	    cmocka_unit_test(test_attacher_sigkill_while_idle),
	    cmocka_unit_test(test_attacher_sigkill_mid_call),
	    cmocka_unit_test(test_attach_park_signalled_or_watched),
	    cmocka_unit_test(test_detach_after_target_exit),
	};

	return cmocka_run_group_tests(tests, setup_outdir_with_tool, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * Harm is reported as harm (issue 21), on both target sides (our agent, and
 * ROCm's double in tests/rocm/): a tool that crashes its target (the attach
 * fails, the signal named), a tool that never returns (the call's deadline
 * fails it, the target runs on untraced), a stopped target (refused before
 * any ptrace; retried at the detach), a target killed with its tools
 * attached (died_attached in the node layer), and the CLI's one line and
 * exit 4. Every victim is a child of this test: nothing else is touched.
 */
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "node.h"
#include "testlib.h"

#define MS 1000000ull

static const struct victim_opts agent_side = {.agent = true, .attach_env = true};
static const struct victim_opts rocm_side = {.attach_env = true,
					     .env = {"LD_PRELOAD=" RA_ROCM_REGISTER}};
static const struct victim_opts *const sides[2] = {&agent_side, &rocm_side};
static const char *const side_names[2] = {"agent", "rocm"};
static char errbuf[8192];

static rocattach_status_t attach_at(pid_t pid, const char *mode, uint32_t timeout_ms,
				    uint64_t start_ns, rocattach_report_t *rep)
{
	char knob[64];
	const char *env[2] = {knob, NULL};
	rocattach_opts_t o = {.size = sizeof(o),
			      .tool_libraries = RA_FAULT_TOOL,
			      .env = env,
			      .call_timeout_ms = timeout_ms,
			      .start_ns = start_ns};

	snprintf(knob, sizeof(knob), "ROCP_FAULT_TOOL=%s", mode);
	memset(rep, 0, sizeof(*rep));
	rep->size = sizeof(*rep);
	return rocattach_attach_ex(pid, &o, rep);
}

static rocattach_status_t attach_with(pid_t pid, const char *mode, uint32_t timeout_ms,
				      rocattach_report_t *rep)
{
	return attach_at(pid, mode, timeout_ms, 0, rep);
}

/*
 * The tool crashes the target in mode: the attach fails, killed by SIGSEGV,
 * said so; on our agent's side with the phase it was in (phase), also when
 * a start time has a starter thread, which we do not trace, run it.
 */
static void crash_at(int side, const char *mode, const char *phase, uint64_t start_ns)
{
	char want[128];
	rocattach_report_t rep;
	struct victim v;
	int status = 0;

	print_message("%s side, %s%s\n", side_names[side], mode, start_ns ? ", start time" : "");
	assert_int_equal(victim_start(&v, sides[side]), 0);
	if (start_ns)
		start_ns = realtime_ns() + 300 * MS;
	assert_int_equal(attach_at(v.pid, mode, 5000, start_ns, &rep), ROCATTACH_STATUS_ERROR);
	print_message("%s\n", rep.message);
	assert_true(rep.flags & ROCATTACH_REPORT_KILLED);
	assert_int_equal(rep.signal, SIGSEGV);
	assert_non_null(strstr(rep.message, "was killed by SIGSEGV during the attach call"));
	snprintf(want, sizeof(want), "in the tool's %s (", phase);
	if (side == 0)
		assert_non_null(strstr(rep.message, want));
	assert_int_equal(waitpid(v.pid, &status, 0), v.pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	assert_int_equal(rocattach_is_attached(v.pid), 0);
	v.pid = 0;
	victim_stop(&v);
}

static void test_harm_configure_segv(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++)
		crash_at(side, "configure-segv", "rocprofiler_configure", 0);
}

static void test_harm_tool_attach_segv(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++) {
		crash_at(side, "attach-segv", "tool_attach", 0);
		crash_at(side, "attach-segv", "tool_attach", 1);
	}
}

/*
 * The tool never returns: the call fails after 0.5 s (plus slack), naming
 * the stuck call; the target runs on, untraced, its workers advancing; a
 * later attach is refused clearly.
 */
static void hang(int side, const char *mode, const char *tool_fn)
{
	char want[PATH_MAX + 128];
	rocattach_report_t rep;
	unsigned long long t0, took;
	struct victim v;

	print_message("%s side, %s\n", side_names[side], mode);
	assert_int_equal(victim_start(&v, sides[side]), 0);
	t0 = realtime_ns();
	assert_int_equal(attach_with(v.pid, mode, 500, &rep), ROCATTACH_STATUS_ERROR);
	took = realtime_ns() - t0;
	print_message("%s (%.3f s)\n", rep.message, (double)took / 1e9);
	assert_true(took >= 500 * MS && took < 3000 * MS);
	assert_true(rep.flags & ROCATTACH_REPORT_TIMED_OUT);
	/*
	 * Our agent says which of the tool's functions it is in, and in which library;
	 * ROCm's side tells nothing, so the entry point is named.
	 */
	if (sides[side]->agent)
		snprintf(want, sizeof(want), ": the tool's %s did not return within 0.5 s (%s);",
			 tool_fn, RA_FAULT_TOOL);
	else
		snprintf(want, sizeof(want),
			 ": rocprofiler_register_attach did not return within "
			 "0.5 s; its attach listener");
	assert_non_null(strstr(rep.message, want));
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_int_equal(rocattach_is_attached(v.pid), 0);
	assert_unharmed(&v, true);
	/* Not half attached: a clear refusal, and the target is still fine. */
	assert_int_not_equal(attach_with(v.pid, "", 500, &rep), ROCATTACH_STATUS_SUCCESS);
	print_message("again: %s\n", rep.message);
	assert_non_null(strstr(rep.message, "still inside"));
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_harm_configure_never_returns(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++)
		hang(side, "configure-hang", "rocprofiler_configure");
}

static void test_harm_tool_attach_never_returns(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++)
		hang(side, "attach-hang", "tool_attach");
}

/*
 * A tool_detach that never returns: that target's detach fails after the
 * deadline (timed_out), the other target is detached on time; both run on,
 * untraced.
 */
static void test_harm_tool_detach_never_returns(void **state)
{
	struct rn_pool_opts o = {.call_timeout_ms = 500};
	rocattach_report_t rep;
	struct rn_target t[2];
	struct victim v[2];
	uint64_t t0, took;

	(void)state;
	for (int side = 0; side < 2; side++) {
		memset(t, 0, sizeof(t));
		for (int i = 0; i < 2; i++) {
			assert_int_equal(victim_start(&v[i], sides[side]), 0);
			assert_int_equal(attach_with(v[i].pid, i ? "" : "detach-hang", 5000, &rep),
					 ROCATTACH_STATUS_SUCCESS);
			t[i].pid = t[i].nspid = v[i].pid;
			t[i].rank = -1;
			t[i].state = RN_ATTACHED;
		}
		t0 = realtime_ns();
		rn_detach_all(t, 2, &o);
		took = realtime_ns() - t0;
		print_message("%s side: %s (%.3f s)\n", side_names[side], t[0].message,
			      (double)took / 1e9);
		assert_int_equal(t[0].state, RN_DETACH_FAILED);
		assert_true(t[0].timed_out);
		assert_non_null(strstr(t[0].message, "did not return within 0.5 s"));
		assert_true(took >= 500 * MS && took < 3000 * MS);
		assert_int_equal(t[1].state, RN_DETACHED);
		assert_true(t[1].detach_end_ns - t0 < 400 * MS);
		for (int i = 0; i < 2; i++) {
			assert_int_equal(proc_tracer(v[i].pid), 0);
			assert_unharmed(&v[i], true);
			victim_stop(&v[i]);
		}
	}
}

/*
 * tool_detach crashes at a stop time: our agent runs it on a starter thread
 * we do not trace; the line still names the phase. ROCm's side has no stop
 * time (the call itself is made then): its line names the entry point. Both
 * ways the attacher waits for the park: the signal way, and the watching way
 * (ROCATTACH_PARK=watch), which it also falls back to on its own.
 */
static void test_harm_tool_detach_segv_at_stop_time(void **state)
{
	rocattach_opts_t o = {.size = sizeof(o)};
	rocattach_report_t rep;
	struct victim v;
	int status = 0;

	(void)state;
	for (int run = 0; run < 4; run++) {
		int side = run % 2;

		if (run == 2)
			setenv("ROCATTACH_PARK", "watch", 1);
		assert_int_equal(victim_start(&v, sides[side]), 0);
		assert_int_equal(attach_with(v.pid, "detach-segv", 5000, &rep),
				 ROCATTACH_STATUS_SUCCESS);
		memset(&rep, 0, sizeof(rep));
		rep.size = sizeof(rep);
		o.stop_ns = realtime_ns() + 300 * MS;
		assert_int_equal(rocattach_detach_ex(v.pid, &o, &rep), ROCATTACH_STATUS_ERROR);
		print_message("%s side%s: %s\n", side_names[side], run >= 2 ? ", watching" : "",
			      rep.message);
		assert_true(rep.flags & ROCATTACH_REPORT_KILLED);
		assert_int_equal(rep.signal, SIGSEGV);
		assert_non_null(
		    strstr(rep.message, "was killed by SIGSEGV during the detach call, in "));
		assert_non_null(strstr(rep.message, side == 0 ? "in the tool's tool_detach ("
							      : "in rocprofiler_register_detach"));
		assert_int_equal(waitpid(v.pid, &status, 0), v.pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
		v.pid = 0;
		victim_stop(&v);
	}
	unsetenv("ROCATTACH_PARK");
}

/* The wait for a start or stop time is not counted against the call's deadline. */
static void test_harm_deadline_counts_from_the_start_time(void **state)
{
	rocattach_opts_t o = {.size = sizeof(o), .tool_libraries = RA_FAULT_TOOL};
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct victim v;

	(void)state;
	for (int side = 0; side < 2; side++) {
		assert_int_equal(victim_start(&v, sides[side]), 0);
		o.call_timeout_ms = 300;
		o.start_ns = realtime_ns() + 900 * MS;
		o.stop_ns = 0;
		assert_int_equal(rocattach_attach_ex(v.pid, &o, &rep), ROCATTACH_STATUS_SUCCESS);
		assert_true(rep.end_ns >= o.start_ns);
		o.start_ns = 0;
		o.stop_ns = realtime_ns() + 900 * MS;
		assert_int_equal(rocattach_detach_ex(v.pid, &o, &rep), ROCATTACH_STATUS_SUCCESS);
		assert_true(rep.end_ns >= o.stop_ns);
		assert_unharmed(&v, true);
		victim_stop(&v);
	}
}

static void stop_victim(pid_t pid)
{
	kill(pid, SIGSTOP);
	for (int i = 0; i < 1000 && proc_state(pid) != 'T'; i++)
		usleep(1000);
	assert_int_equal(proc_state(pid), 'T');
}

/* Stopped before the attach: refused with the exact message, untouched, resumable. */
static void test_harm_stopped_before_attach_refused(void **state)
{
	rocattach_report_t rep;
	char want[160];
	struct victim v;

	(void)state;
	for (int side = 0; side < 2; side++) {
		assert_int_equal(victim_start(&v, sides[side]), 0);
		stop_victim(v.pid);
		snprintf(want, sizeof(want),
			 "process %d is stopped (SIGSTOP/SIGTSTP): not attached; resume it with "
			 "kill -CONT",
			 v.pid);
		assert_int_equal(attach_with(v.pid, "", 500, &rep), ROCATTACH_STATUS_ERROR);
		assert_string_equal(rep.message, want);
		assert_true(rep.flags & ROCATTACH_REPORT_STOPPED);
		assert_int_equal(proc_tracer(v.pid), 0);
		assert_int_equal(proc_state(v.pid), 'T');
		assert_int_equal(rocattach_is_attached(v.pid), 0);
		kill(v.pid, SIGCONT);
		assert_unharmed(&v, true);
		/* Resumed, it attaches and detaches as any other. */
		assert_int_equal(attach_with(v.pid, "", 5000, &rep), ROCATTACH_STATUS_SUCCESS);
		assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
		assert_unharmed(&v, true);
		victim_stop(&v);
	}
}

/*
 * SIGSTOP for pid once one of its threads is traced (the call has begun), 50 ms
 * later. In a child; exits 0 once sent, 1 if no call began within 5 s.
 */
static pid_t stop_inside_call(pid_t pid)
{
	pid_t helper = fork();

	if (helper)
		return helper;
	for (int i = 0; i < 5000 && !proc_tracer(pid); i++)
		usleep(1000);
	if (!proc_tracer(pid))
		_exit(1);
	usleep(50 * 1000);
	kill(pid, SIGSTOP);
	_exit(0);
}

/*
 * Stopped during the attach (the check before it passed): the tool's threads
 * freeze with the process, ptrace keeps the listener running. Each run's
 * outcome is known, and checked:
 *   0 agent, no start time: tool_attach runs on the listener: done.
 *   1 ROCm's side, no start time: the tools run on the listener: done.
 *   2 agent, a start time: a starter thread of the agent would run tool_attach
 *     at the start, and it is frozen: the deadline (from the start) abandons
 *     the call, named as the entry point (no tool function had begun).
 *   3 ROCm's side, a start time: the attacher waits for it, then the tools run
 *     on the listener: done.
 * Within the deadline plus slack, nothing traced, the process still stopped,
 * and fine once resumed.
 */
static const bool stopped_call_done[4] = {true, true, false, true};

static void stopped_call_outcome(int run, rocattach_status_t st, const rocattach_report_t *rep)
{
	if (stopped_call_done[run]) {
		assert_int_equal(st, ROCATTACH_STATUS_SUCCESS);
		assert_false(rep->flags & ROCATTACH_REPORT_TIMED_OUT);
		return;
	}
	assert_int_equal(st, ROCATTACH_STATUS_ERROR);
	assert_true(rep->flags & ROCATTACH_REPORT_TIMED_OUT);
	assert_non_null(strstr(rep->message, ": rocprofiler_register_attach did not return within "
					     "1.0 s; its attach listener"));
}

static void test_harm_stops_during_attach(void **state)
{
	const char *env[] = {"ROCPROF_EXAMPLE_TOOL_ATTACH_MS=400", NULL};
	rocattach_opts_t o = {
	    .size = sizeof(o), .tool_libraries = RA_TOOL_PATH, .env = env, .call_timeout_ms = 1000};
	rocattach_report_t rep = {.size = sizeof(rep)};
	unsigned long long t0, took;
	rocattach_status_t st;
	struct victim v;
	pid_t helper;
	int hs = -1;

	(void)state;
	for (int run = 0; run < 4; run++) {
		int side = run % 2;

		assert_int_equal(victim_start(&v, sides[side]), 0);
		/* Runs 2 and 3 with a start time, well after the stop lands. */
		o.start_ns = run >= 2 ? realtime_ns() + 800 * MS : 0;
		helper = stop_inside_call(v.pid);
		t0 = realtime_ns();
		st = rocattach_attach_ex(v.pid, &o, &rep);
		took = realtime_ns() - t0;
		assert_int_equal(waitpid(helper, &hs, 0), helper);
		print_message("%s side, run %d: status %d flags %#x (%.3f s): %s\n",
			      side_names[side], run, st, rep.flags, (double)took / 1e9,
			      rep.message);
		/* The stop landed inside the call. */
		assert_true(WIFEXITED(hs) && WEXITSTATUS(hs) == 0);
		assert_true(took < 3000 * MS);
		stopped_call_outcome(run, st, &rep);
		assert_int_equal(proc_tracer(v.pid), 0);
		assert_int_equal(proc_state(v.pid), 'T');
		kill(v.pid, SIGCONT);
		/* Abandoned: once resumed the call ends in the park, and the target attaches again.
		 */
		for (int i = 0; i < 40 && st != ROCATTACH_STATUS_SUCCESS; i++) {
			usleep(50 * 1000);
			o.start_ns = 0;
			st = rocattach_attach_ex(v.pid, &o, &rep);
			print_message("  again: %d %s\n", st, rep.message);
		}
		assert_int_equal(st, ROCATTACH_STATUS_SUCCESS);
		assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
		assert_int_equal(proc_tracer(v.pid), 0);
		assert_unharmed(&v, true);
		victim_stop(&v);
	}
}

/* Two targets through the node layer, attached with the fault tool and no knob. */
static void pool_attach_two(struct victim *v, struct rn_target *t, int side)
{
	struct rn_pool_opts o = {.tools = RA_FAULT_TOOL, .call_timeout_ms = 500};

	memset(t, 0, 2 * sizeof(*t));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(victim_start(&v[i], sides[side]), 0);
		t[i].pid = t[i].nspid = v[i].pid;
		t[i].rank = -1;
		t[i].state = RN_FOUND;
	}
	rn_attach_all(t, 2, &o);
	for (int i = 0; i < 2; i++)
		assert_int_equal(t[i].state, RN_ATTACHED);
}

/* Killed between attach and detach: died_attached, with the time, apart from exited. */
static void test_harm_killed_while_attached_died_attached(void **state)
{
	struct rn_pool_opts o = {.call_timeout_ms = 500};
	struct rn_target t[2];
	struct victim v[2];
	uint64_t before;

	(void)state;
	for (int side = 0; side < 2; side++) {
		pool_attach_two(v, t, side);
		before = realtime_ns();
		kill(v[0].pid, SIGKILL);
		waitpid(v[0].pid, NULL, 0);
		rn_detach_all(t, 2, &o);
		print_message("%s side: %s\n", side_names[side], t[0].message);
		assert_int_equal(t[0].state, RN_DIED_ATTACHED);
		assert_string_equal(rn_state_name(t[0].state), "died_attached");
		assert_true(t[0].died_ns >= before && t[0].died_ns <= realtime_ns());
		assert_int_equal(t[1].state, RN_DETACHED);
		assert_int_equal(rocattach_is_attached(v[0].pid), 0);
		v[0].pid = 0;
		victim_stop(&v[0]);
		victim_stop(&v[1]);
	}
}

/* The same seen by the watch during the window: died_ns is when the watch saw it. */
static void test_harm_watch_marks_died_attached(void **state)
{
	struct rn_pool_opts o = {.call_timeout_ms = 500};
	struct rn_target t[2];
	struct rn_watch *w;
	struct victim v[2];
	uint64_t before;

	(void)state;
	pool_attach_two(v, t, 0);
	w = rn_watch_open(t, 2);
	assert_non_null(w);
	before = realtime_ns();
	kill(v[0].pid, SIGKILL);
	waitpid(v[0].pid, NULL, 0);
	assert_int_equal(rn_watch_mark(w, t, 2), 1);
	assert_int_equal(t[0].state, RN_DIED_ATTACHED);
	assert_true(t[0].died_ns >= before);
	rn_detach_all(t, 2, &o);
	assert_int_equal(t[0].state, RN_DIED_ATTACHED);
	assert_int_equal(t[1].state, RN_DETACHED);
	assert_int_equal(rocattach_is_attached(v[0].pid), 0);
	rn_watch_close(w);
	v[0].pid = 0;
	victim_stop(&v[0]);
	victim_stop(&v[1]);
}

/*
 * Stopped during the window: the healthy target is detached on time; the
 * stopped one is retried until the deadline, then RN_STOPPED saying its
 * tools are attached; resumed, the next detach takes it.
 */
static void test_harm_stopped_in_window(void **state)
{
	struct rn_pool_opts o = {.call_timeout_ms = 500};
	struct rn_target t[2];
	struct victim v[2];
	uint64_t t0, took;

	(void)state;
	for (int side = 0; side < 2; side++) {
		pool_attach_two(v, t, side);
		stop_victim(v[0].pid);
		t0 = realtime_ns();
		rn_detach_all(t, 2, &o);
		took = realtime_ns() - t0;
		print_message("%s side: %s (%.3f s)\n", side_names[side], t[0].message,
			      (double)took / 1e9);
		assert_int_equal(t[1].state, RN_DETACHED);
		assert_true(t[1].detach_end_ns - t0 < 400 * MS);
		assert_int_equal(t[0].state, RN_STOPPED);
		assert_non_null(strstr(t[0].message, "tools still attached"));
		assert_true(took >= 500 * MS && took < 2000 * MS);
		assert_int_equal(proc_tracer(v[0].pid), 0);
		assert_int_equal(proc_state(v[0].pid), 'T');
		kill(v[0].pid, SIGCONT);
		rn_detach_all(t, 2, &o);
		assert_int_equal(t[0].state, RN_DETACHED);
		for (int i = 0; i < 2; i++) {
			assert_unharmed(&v[i], true);
			victim_stop(&v[i]);
		}
	}
}

/* Resumed within the deadline: detached then. */
static void test_harm_stopped_in_window_resumes(void **state)
{
	struct rn_pool_opts o = {.call_timeout_ms = 3000};
	struct rn_target t[2];
	struct victim v[2];
	pid_t helper;

	(void)state;
	pool_attach_two(v, t, 0);
	stop_victim(v[0].pid);
	helper = fork();
	if (helper == 0) {
		usleep(300 * 1000);
		kill(v[0].pid, SIGCONT);
		_exit(0);
	}
	rn_detach_all(t, 2, &o);
	waitpid(helper, NULL, 0);
	assert_int_equal(t[0].state, RN_DETACHED);
	assert_int_equal(t[1].state, RN_DETACHED);
	for (int i = 0; i < 2; i++) {
		assert_unharmed(&v[i], true);
		victim_stop(&v[i]);
	}
}

/* rocattach --call-timeout 500 against a tool that never returns, and one that crashes. */
static void test_harm_cli_one_line_exit_4(void **state)
{
	char pid[16];
	struct victim v;
	int status;

	(void)state;
	for (int side = 0; side < 2; side++) {
		assert_int_equal(victim_start(&v, sides[side]), 0);
		snprintf(pid, sizeof(pid), "%d", v.pid);
		const char *args[] = {
		    "-p", pid, "-t", RA_FAULT_TOOL, "-d", "1000", "--call-timeout", "500", NULL};
		setenv("ROCP_FAULT_TOOL", "attach-hang", 1);
		assert_int_equal(cli_run(args, 0, errbuf, sizeof(errbuf)), 4);
		unsetenv("ROCP_FAULT_TOOL");
		print_message("%s", errbuf);
		assert_int_equal(count_lines(errbuf), 1);
		assert_non_null(strstr(errbuf, "did not return within 0.5 s"));
		assert_int_equal(proc_tracer(v.pid), 0);
		assert_unharmed(&v, true);
		victim_stop(&v);

		assert_int_equal(victim_start(&v, sides[side]), 0);
		snprintf(pid, sizeof(pid), "%d", v.pid);
		setenv("ROCP_FAULT_TOOL", "configure-segv", 1);
		assert_int_equal(cli_run(args, 0, errbuf, sizeof(errbuf)), 4);
		unsetenv("ROCP_FAULT_TOOL");
		print_message("%s", errbuf);
		assert_int_equal(count_lines(errbuf), 1);
		assert_non_null(strstr(errbuf, "killed by SIGSEGV"));
		waitpid(v.pid, &status, 0);
		v.pid = 0;
		victim_stop(&v);

		assert_int_equal(victim_start(&v, sides[side]), 0);
		snprintf(pid, sizeof(pid), "%d", v.pid);
		stop_victim(v.pid);
		assert_int_equal(cli_run(args, 0, errbuf, sizeof(errbuf)), 4);
		print_message("%s", errbuf);
		assert_int_equal(count_lines(errbuf), 1);
		assert_non_null(strstr(errbuf, "is stopped (SIGSTOP/SIGTSTP): not attached"));
		kill(v.pid, SIGCONT);
		assert_unharmed(&v, true);
		victim_stop(&v);
	}
}

/*
 * A signal during an attach that hangs is answered at once (one line), and
 * the run ends when the call's deadline has passed: no wait without an end.
 */
static void test_harm_cli_answers_sigterm_during_attach(void **state)
{
	char pid[16], got[4096] = "";
	unsigned long long t0;
	struct victim v;
	size_t len = 0;
	int fd;

	(void)state;
	assert_int_equal(victim_start(&v, &agent_side), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", RA_FAULT_TOOL, "--call-timeout", "3000", NULL};
	setenv("ROCP_FAULT_TOOL", "attach-hang", 1);
	pid_t cli = cli_spawn(args, 0, &fd);
	unsetenv("ROCP_FAULT_TOOL");
	usleep(500 * 1000);
	t0 = realtime_ns();
	kill(cli, SIGTERM);
	while (!strstr(got, "received during the attach") && realtime_ns() - t0 < 1000 * MS) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(fd, got + len, sizeof(got) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		got[len] = '\0';
	}
	print_message("after %.3f s: %s", (double)(realtime_ns() - t0) / 1e9, got);
	assert_non_null(strstr(got, "received during the attach"));
	assert_true(realtime_ns() - t0 < 1000 * MS);
	assert_int_equal(cli_finish(cli, fd, errbuf, sizeof(errbuf)), 4);
	print_message("%s", errbuf);
	assert_true(realtime_ns() - t0 < 5000 * MS);
	assert_non_null(strstr(errbuf, "did not return within 3.0 s"));
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static int setup(void **state)
{
	(void)state;
	return setup_outdir(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_harm_configure_segv),
	    cmocka_unit_test(test_harm_tool_attach_segv),
	    cmocka_unit_test(test_harm_tool_detach_segv_at_stop_time),
	    cmocka_unit_test(test_harm_configure_never_returns),
	    cmocka_unit_test(test_harm_tool_attach_never_returns),
	    cmocka_unit_test(test_harm_tool_detach_never_returns),
	    cmocka_unit_test(test_harm_deadline_counts_from_the_start_time),
	    cmocka_unit_test(test_harm_stopped_before_attach_refused),
	    cmocka_unit_test(test_harm_stops_during_attach),
	    cmocka_unit_test(test_harm_killed_while_attached_died_attached),
	    cmocka_unit_test(test_harm_watch_marks_died_attached),
	    cmocka_unit_test(test_harm_stopped_in_window),
	    cmocka_unit_test(test_harm_stopped_in_window_resumes),
	    cmocka_unit_test(test_harm_cli_one_line_exit_4),
	    cmocka_unit_test(test_harm_cli_answers_sigterm_during_attach),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

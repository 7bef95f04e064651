/* SPDX-License-Identifier: MIT */
/*
 * Each target keeps its own end (issue 30), on both target sides (our agent,
 * and ROCm's double with librocattach-watchdog): an attach that carries a
 * planned stop (rocattach_opts_t.planned_stop_ns) and gets no detach by it
 * plus the call deadline is detached by the target itself; the late detach
 * fails saying when (ROCATTACH_REPORT_SELF_DETACHED), as does the next
 * attach of another attacher; a reattach then works. A normal detach
 * disarms it, and a window without a planned stop never ends by itself.
 * The CLI stopped (SIGSTOP) mid-window holds no tool, and after SIGCONT
 * exits 4 saying what happened. Every victim is a child of this test.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

#define MS 1000000ull
/* The planned stop and the call deadline of the library's windows here. */
#define LEAD_MS 300ull
#define DEADLINE_MS 300u
/* Scheduling on a loaded machine: how late the target's own detach may be. */
#define SLACK_MS 700ull

static const struct victim_opts agent_side = {.agent = true, .attach_env = true};
static const struct victim_opts rocm_side = {.attach_env = true,
					     .env = {"LD_PRELOAD=" RA_ROCM_REGISTER}};
static const struct victim_opts *const sides[2] = {&agent_side, &rocm_side};
static const char *const side_names[2] = {"agent", "rocm"};
static char errbuf[8192];

static void start(int side, struct victim *v)
{
	print_message("%s side\n", side_names[side]);
	assert_int_equal(victim_start(v, sides[side]), 0);
	assert_int_equal(rocattach_target_side(v->pid),
			 side ? ROCATTACH_SIDE_ROCM : ROCATTACH_SIDE_AGENT);
}

/* Attach pid with a planned stop (0: none) and the test's call deadline; must succeed. */
static void attach_planned(pid_t pid, uint64_t planned, rocattach_report_t *rep)
{
	rocattach_opts_t o = {
	    .size = sizeof(o), .call_timeout_ms = DEADLINE_MS, .planned_stop_ns = planned};

	memset(rep, 0, sizeof(*rep));
	rep->size = sizeof(*rep);
	if (rocattach_attach_ex(pid, &o, rep) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("attach: %s", rep->message);
}

/* The target detached its tools itself (the nth tool_detach), by planned + deadline. */
static unsigned long long assert_self_detached(pid_t pid, int nth, uint64_t planned)
{
	uint64_t by = planned + DEADLINE_MS * MS;
	unsigned long long at;

	assert_true(wait_tool_events(test_outdir, pid, "tool_detach", nth, 5000));
	at = tool_event_ns(log_of(pid), "tool_detach", nth);
	print_message("tool_detach %+.1f ms from the planned stop + deadline\n",
		      ((double)at - (double)by) / 1e6);
	/* Never before its end (2 ms: the clocks' conversion), and soon after it. */
	assert_true(at + 2 * MS >= by);
	assert_true(at <= by + SLACK_MS * MS);
	assert_int_equal(proc_tracer(pid), 0);
	return at;
}

/*
 * The report's time of the self-detach is the tool's: our agent stamps the
 * hand-back right before tool_detach, ROCm's watchdog when its call returned.
 */
static void assert_near(uint64_t reported, unsigned long long tool_ns)
{
	uint64_t d = reported > tool_ns ? reported - tool_ns : tool_ns - reported;

	print_message("self_detach_ns %+.3f ms from the tool's tool_detach\n",
		      ((double)reported - (double)tool_ns) / 1e6);
	assert_true(reported && d < 50 * MS);
}

static void assert_late_detach_said(pid_t pid, unsigned long long at)
{
	rocattach_report_t rep = {.size = sizeof(rep)};

	assert_int_equal(rocattach_detach_ex(pid, NULL, &rep), ROCATTACH_STATUS_ERROR);
	print_message("%s\n", rep.message);
	assert_true(rep.flags & ROCATTACH_REPORT_SELF_DETACHED);
	assert_non_null(strstr(rep.message, "the target detached its tools itself at"));
	assert_non_null(strstr(rep.message, "ms after the planned stop: no detach came by then"));
	assert_near(rep.self_detach_ns, at);
	assert_int_equal(rocattach_is_attached(pid), 0);
}

static void self_detach_then_late_detach(int side)
{
	rocattach_report_t rep;
	unsigned long long at;
	uint64_t planned;
	struct victim v;

	start(side, &v);
	planned = realtime_ns() + LEAD_MS * MS;
	attach_planned(v.pid, planned, &rep);
	assert_true(rep.flags & ROCATTACH_REPORT_WATCHDOG);
	assert_false(rep.flags & ROCATTACH_REPORT_SELF_DETACHED);
	at = assert_self_detached(v.pid, 1, planned);
	assert_unharmed(&v, true);
	/* The end is ours: never in the application's environment (the tool lists ROCP_ATTACH_*).
	 */
	assert_null(strstr(log_of(v.pid), "ROCP_ATTACH_END_NS"));
	assert_late_detach_said(v.pid, at);
	/* A reattach opens a new window; the self-detach was said already. */
	attach_planned(v.pid, 0, &rep);
	assert_false(rep.flags & ROCATTACH_REPORT_SELF_DETACHED);
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 2);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 2);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_own_end_self_detach_then_late_detach(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++)
		self_detach_then_late_detach(side);
}

/*
 * Another attacher (a child, alive and idle) opened a window that ended by
 * itself; it never detaches. Our attach says so, and attaches.
 */
static void next_attach_says_it(int side)
{
	rocattach_report_t rep;
	unsigned long long at;
	uint64_t planned;
	struct victim v;
	int p[2];
	pid_t a;
	char ok;

	start(side, &v);
	assert_int_equal(pipe(p), 0);
	planned = realtime_ns() + LEAD_MS * MS;
	a = fork();
	if (a == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		attach_planned(v.pid, planned, &rep);
		ok = 'y';
		if (write(p[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &ok, 1), 1);
	close(p[0]);
	at = assert_self_detached(v.pid, 1, planned);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	attach_planned(v.pid, 0, &rep);
	assert_true(rep.flags & ROCATTACH_REPORT_SELF_DETACHED);
	assert_near(rep.self_detach_ns, at);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	/* Said once: the next attach is plain. */
	attach_planned(v.pid, 0, &rep);
	assert_false(rep.flags & ROCATTACH_REPORT_SELF_DETACHED);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 3);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_own_end_next_attach_says_it(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++)
		next_attach_says_it(side);
}

/*
 * A normal detach disarms the target's end: nothing more happens past it.
 * A window without a planned stop never ends by itself.
 */
static void never_by_itself(int side)
{
	rocattach_report_t rep;
	struct victim v;

	start(side, &v);
	attach_planned(v.pid, realtime_ns() + 100 * MS, &rep);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	attach_planned(v.pid, 0, &rep);
	usleep((100 + DEADLINE_MS + SLACK_MS) * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 2);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	memset(&rep, 0, sizeof(rep));
	rep.size = sizeof(rep);
	assert_int_equal(rocattach_detach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_false(rep.flags & ROCATTACH_REPORT_SELF_DETACHED);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 2);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_own_end_normal_detach_and_no_planned_stop(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++)
		never_by_itself(side);
}

/* Read fd into got until needle appears (true) or timeout_ms passes. */
static bool read_until(int fd, const char *needle, char *got, size_t len, int timeout_ms)
{
	unsigned long long until = realtime_ns() + (unsigned long long)timeout_ms * MS;
	size_t n = strlen(got);

	while (!strstr(got, needle) && realtime_ns() < until && n + 1 < len) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t r;

		if (poll(&p, 1, 50) <= 0)
			continue;
		r = read(fd, got + n, len - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		got[n] = '\0';
	}
	return strstr(got, needle) != NULL;
}

/*
 * rocattach -d 600 --call-timeout 400, stopped (SIGSTOP) once its window is
 * open (it said so: it holds no thread then): the target detaches its tools by the planned stop
 * (the attach's deadline + -d) + the deadline, and stays untraced and working. After SIGCONT the
 * CLI exits 4, saying what happened.
 */
static void cli_stopped(int side)
{
	unsigned long long t0, at, attached;
	char pid[16], said[4096] = "";
	struct victim v;
	pid_t cli;
	int fd;

	start(side, &v);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p",
			      pid,
			      "-t",
			      RA_TOOL_PATH,
			      "-d",
			      "600",
			      "--call-timeout",
			      "400",
			      "--attach-children=false",
			      NULL};
	t0 = realtime_ns();
	cli = cli_spawn(args, 0, &fd);
	assert_true(read_until(fd, "rocattach: attached to process", said, sizeof(said), 5000));
	assert_int_equal(kill(cli, SIGSTOP), 0);
	attached = tool_event_ns(log_of(v.pid), "tool_attach", 1);
	assert_true(attached > 0);
	assert_true(wait_tool_events(test_outdir, v.pid, "tool_detach", 1, 5000));
	at = tool_event_ns(log_of(v.pid), "tool_detach", 1);
	print_message("window %.1f ms; tool_detach %.1f ms after the CLI started (bound %llu)\n",
		      (double)(at - attached) / 1e6, (double)(at - t0) / 1e6, 600ull + 800 + 200);
	/* Never shorter than -d; by the attach's start + 400 + 600 + 400 (+ the spawn). */
	assert_true(at >= attached + 600 * MS);
	assert_true(at <= t0 + (600 + 800 + 200 + SLACK_MS) * MS);
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_unharmed(&v, true);
	assert_int_equal(kill(cli, SIGCONT), 0);
	assert_int_equal(cli_finish(cli, fd, errbuf, sizeof(errbuf)), 4);
	print_message("%s", errbuf);
	assert_non_null(strstr(errbuf, "the target detached its tools itself at"));
	assert_null(strstr(errbuf, "detached from process"));
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_own_end_cli_sigstop_mid_window(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++)
		cli_stopped(side);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_end_self_detach_then_late_detach),
	    cmocka_unit_test(test_own_end_next_attach_says_it),
	    cmocka_unit_test(test_own_end_normal_detach_and_no_planned_stop),
	    cmocka_unit_test(test_own_end_cli_sigstop_mid_window),
	};

	return cmocka_run_group_tests(tests, setup_outdir_with_tool, NULL);
}

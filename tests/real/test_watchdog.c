/* SPDX-License-Identifier: MIT */
/*
 * The agent's watchdog: when the process that attached (ROCP_ATTACH_OWNER)
 * is gone, the agent runs tool_detach itself within about a second; while it
 * lives, or after a normal detach, the watchdog does nothing.
 *
 * Run as "test_watchdog --no-pidfd-exec PROGRAM ARGS..." this binary is a
 * wrapper that makes pidfd_open fail with ENOSYS (seccomp), as on Linux < 5.3,
 * and execs PROGRAM: the agent then falls back to polling /proc.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The watchdog must act within about a second of the owner's death. */
#define DETACH_DEADLINE_NS 1000000000ULL

static char errbuf[8192];

static const struct victim_opts with_agent = {.agent = true, .attach_env = true};

/* The listener still answers: a full window from this process. */
static void assert_attachable(struct victim *v, int windows_before)
{
	const char *logtext;

	assert_int_equal(rocattach_attach(v->pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v->pid), ROCATTACH_STATUS_SUCCESS);
	logtext = log_of(v->pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), windows_before + 1);
	assert_int_equal(tool_count(logtext, "tool_detach"), windows_before + 1);
}

/*
 * A child that attaches pid and waits to be killed. It dies with us too:
 * a failed test must not leave it holding anything (the heavy lock).
 */
static pid_t attacher_child(pid_t pid)
{
	pid_t a = fork();

	if (a == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		rocattach_attach(pid);
		pause();
		_exit(0);
	}
	return a;
}

/* The CLI attaches for a long window, is SIGKILLed once attached; tool_detach follows. */
static void kill_cli_in_window(struct victim *v, unsigned long long *killed_ns)
{
	char pid[16];
	int fd;

	snprintf(pid, sizeof(pid), "%d", v->pid);
	const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, "-d", "60000", NULL};
	pid_t cli = cli_spawn(args, 0, &fd);

	assert_true(wait_tool_events(test_outdir, v->pid, "tool_attach", 1, 10000));
	usleep(100 * 1000);
	assert_int_equal(tool_count(log_of(v->pid), "tool_detach"), 0);
	*killed_ns = realtime_ns();
	kill(cli, SIGKILL);
	assert_int_equal(cli_finish(cli, fd, errbuf, sizeof(errbuf)), 128 + SIGKILL);
}

static void assert_detached_soon(pid_t pid, unsigned long long since_ns)
{
	unsigned long long at;

	assert_true(wait_tool_events(test_outdir, pid, "tool_detach", 1, 3000));
	at = tool_event_ns(log_of(pid), "tool_detach", 1);
	print_message("tool_detach %.1f ms after the attacher died\n",
		      (double)(at - since_ns) / 1e6);
	assert_true(at >= since_ns && at - since_ns < DETACH_DEADLINE_NS);
}

static void test_watchdog_cli_sigkill_while_idle(void **state)
{
	unsigned long long killed;
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	kill_cli_in_window(&v, &killed);
	assert_detached_soon(v.pid, killed);
	assert_true(proc_thread(v.pid, "rocp-watchdog") > 0);
	assert_unharmed(&v, false);
	assert_attachable(&v, 1);
	victim_stop(&v);
}

static void test_watchdog_owner_alive_never_fires(void **state)
{
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	/* A caller's own ROCP_ATTACH_OWNER (pid 1, wrong starttime) never crosses. */
	setenv("ROCP_ATTACH_OWNER", "1:1", 1);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	unsetenv("ROCP_ATTACH_OWNER");
	usleep(1500 * 1000);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 0);
	/* Nor does ours reach the application's environment. */
	char reply[256];
	assert_int_equal(victim_cmd(&v, "env ROCP_ATTACH_OWNER", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_ATTACH_OWNER unset");
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, false);
	victim_stop(&v);
}

static void test_watchdog_disarmed_by_normal_detach(void **state)
{
	struct victim v;
	int status;
	pid_t a;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	a = fork();
	if (a == 0)
		_exit(rocattach_attach(v.pid) || rocattach_detach(v.pid));
	waitpid(a, &status, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	usleep(1200 * 1000);
	/* The owner is gone, but it detached: no second tool_detach. */
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, false);
	assert_attachable(&v, 1);
	victim_stop(&v);
}

static void test_watchdog_attacher_exits_without_detach(void **state)
{
	unsigned long long exited;
	struct victim v;
	pid_t a;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	a = fork();
	if (a == 0)
		_exit(rocattach_attach(v.pid));
	waitpid(a, NULL, 0);
	exited = realtime_ns();
	assert_detached_soon(v.pid, exited - 50000000ULL);
	assert_unharmed(&v, false);
	assert_attachable(&v, 1);
	victim_stop(&v);
}

/*
 * Killed inside the attach call (tool_attach takes 800 ms): the call still
 * completes in the target, then the watchdog sees the owner gone.
 */
static void test_watchdog_attacher_killed_mid_attach(void **state)
{
	unsigned long long attached;
	struct victim v;
	pid_t a;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	setenv("ROCPROF_EXAMPLE_TOOL_ATTACH_MS", "800", 1);
	a = fork();
	if (a == 0)
		_exit(rocattach_attach(v.pid));
	unsetenv("ROCPROF_EXAMPLE_TOOL_ATTACH_MS");
	assert_true(wait_tool_events(test_outdir, v.pid, "initialize", 1, 10000));
	usleep(200 * 1000);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	assert_true(wait_tool_events(test_outdir, v.pid, "tool_attach", 1, 3000));
	attached = tool_event_ns(log_of(v.pid), "tool_attach", 1);
	assert_detached_soon(v.pid, attached);
	assert_unharmed(&v, false);
	assert_attachable(&v, 1);
	victim_stop(&v);
}

static bool untraced(void *arg)
{
	return proc_tracer(*(pid_t *)arg) == 0;
}

/* The child's attach is complete: tool_attach ran and the attacher let go. */
static void wait_window_open(struct victim *v)
{
	assert_true(wait_tool_events(test_outdir, v->pid, "tool_attach", 1, 10000));
	assert_true(wait_until(untraced, &v->pid, 10000));
}

/*
 * A child that attaches pid, holds the window until it reads a byte on *go,
 * then detaches and exits with the detach's status (attach failure: 100 +
 * status). Dies with us.
 */
static pid_t window_child(pid_t pid, int *go)
{
	int p[2];
	pid_t a;
	char c;

	assert_int_equal(pipe(p), 0);
	a = fork();
	if (a == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		if (rocattach_attach(pid) != ROCATTACH_STATUS_SUCCESS)
			_exit(100 + (int)rocattach_attach(pid));
		if (read(p[0], &c, 1) < 0)
			_exit(99);
		_exit((int)rocattach_detach(pid));
	}
	close(p[0]);
	*go = p[1];
	return a;
}

/*
 * One attacher per window: a second one (here, us) is refused with
 * PTRACE_OPERATION_NOT_PERMITTED and the holder named, nothing reaches the
 * tools, no session is left; the first window runs to its normal end.
 */
static void test_watchdog_second_attacher_refused(void **state)
{
	const char *logtext;
	rocattach_report_t rep = {.size = sizeof(rep)};
	char want[128];
	struct victim v;
	int go, status;
	pid_t a;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	a = window_child(v.pid, &go);
	wait_window_open(&v);
	assert_int_equal(rocattach_attach_ex(v.pid, NULL, &rep),
			 ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED);
	print_message("%s\n", rep.message);
	assert_int_equal(rep.agent_status, 7); /* EXCESS_API_INSTANCES */
	snprintf(want, sizeof(want), "process %d is attached by test_watchdog (pid %d, since ",
		 (int)v.pid, (int)a);
	assert_non_null(strstr(rep.message, want));
	assert_non_null(strstr(rep.message, "): wait for its window to end"));
	assert_null(strchr(rep.message, '\n'));
	assert_string_equal(rocattach_last_error(), rep.message);
	assert_false(rocattach_is_attached(v.pid));
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	/* The first window is untouched: no second tool_attach, no detach yet. */
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), 1);
	assert_int_equal(tool_count(logtext, "tool_detach"), 0);
	/* Its owner ends it normally. */
	assert_int_equal(write(go, "x", 1), 1);
	close(go);
	assert_int_equal(waitpid(a, &status, 0), a);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, false);
	/* The window is free again. */
	assert_attachable(&v, 1);
	victim_stop(&v);
}

/*
 * A holder that is gone does not keep the window: the next attacher gets it
 * at once, whether the watchdog detached first or the attach took the open
 * window over (without pidfd_open the watchdog polls, so the attach usually
 * comes first). Either way every tool_attach is matched by a tool_detach.
 */
static void test_watchdog_dead_owner_taken_over(void **state)
{
	const char *logtext;
	struct victim_opts o = with_agent;
	struct victim v;
	pid_t a;

	(void)state;
	o.program = "/proc/self/exe";
	o.argv[0] = "--no-pidfd-exec";
	o.argv[1] = RA_TARGET_PATH;
	assert_int_equal(victim_start(&v, &o), 0);
	a = attacher_child(v.pid);
	wait_window_open(&v);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	if (rocattach_detach(v.pid) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("detach: %s", rocattach_last_error());
	logtext = log_of(v.pid);
	assert_true(tool_count(logtext, "tool_detach") >= 1);
	assert_int_equal(tool_count(logtext, "tool_attach"), tool_count(logtext, "tool_detach"));
	assert_unharmed(&v, false);
	victim_stop(&v);
}

/* Without pidfd_open (seccomp: ENOSYS) the agent polls /proc: still within a second. */
static void test_watchdog_without_pidfd_open(void **state)
{
	struct victim_opts o = with_agent;
	unsigned long long killed;
	struct victim v;

	(void)state;
	o.program = "/proc/self/exe";
	o.argv[0] = "--no-pidfd-exec";
	o.argv[1] = RA_TARGET_PATH;
	assert_int_equal(victim_start(&v, &o), 0);
	kill_cli_in_window(&v, &killed);
	assert_detached_soon(v.pid, killed);
	assert_unharmed(&v, false);
	assert_attachable(&v, 1);
	victim_stop(&v);
}

static int no_pidfd_exec(char **argv)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 126;
	}
	execv(argv[0], argv);
	perror("execv");
	return 127;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watchdog_cli_sigkill_while_idle),
	    cmocka_unit_test(test_watchdog_owner_alive_never_fires),
	    cmocka_unit_test(test_watchdog_disarmed_by_normal_detach),
	    cmocka_unit_test(test_watchdog_attacher_exits_without_detach),
	    cmocka_unit_test(test_watchdog_attacher_killed_mid_attach),
	    cmocka_unit_test(test_watchdog_second_attacher_refused),
	    cmocka_unit_test(test_watchdog_dead_owner_taken_over),
	    cmocka_unit_test(test_watchdog_without_pidfd_open),
	};

	if (argc > 2 && !strcmp(argv[1], "--no-pidfd-exec"))
		return no_pidfd_exec(argv + 2);
	return cmocka_run_group_tests(tests, setup_outdir_with_tool, NULL);
}

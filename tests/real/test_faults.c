/* SPDX-License-Identifier: MIT */
/*
 * The fault matrix of docs/reliability.md, through the `rocattach` CLI as a
 * user runs it: for every fault the exit code, one clear line naming the
 * cause, and a target that keeps running, untraced, with its work intact.
 * The cases that need namespaces are in test_namespaces.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../skip.h"

#include <rocattach/rocattach.h>

#include "testlib.h"

enum { EXIT_OK = 0, EXIT_ATTACH = 1, EXIT_DETACH = 3, EXIT_HARMED = 4 };

static char workdir[256];
static char errbuf[8192];

static const struct victim_opts with_agent = {.agent = true, .attach_env = true};

static int setup(void **state)
{
	(void)state;
	make_outdir(workdir, sizeof(workdir));
	chmod(workdir, 0755);
	return setup_outdir(NULL) == 0 && workdir[0] ? 0 : -1;
}

/*
 * rocattach -p PID -t TOOL -d MS, as uid; exit code, stderr in errbuf. The
 * CLI, not the target, has ROCP_TEST_MARKER: it crosses only with an attach.
 */
static int cli_window(pid_t pid, const char *tool, const char *ms, uid_t uid)
{
	char p[16];
	int ret;

	snprintf(p, sizeof(p), "%d", pid);
	const char *args[] = {"-p", p, "-t", tool, "-d", ms, NULL};
	setenv("ROCP_TEST_MARKER", "crossed", 1);
	ret = cli_run(args, uid, errbuf, sizeof(errbuf));
	unsetenv("ROCP_TEST_MARKER");
	return ret;
}

/* Exactly one line, an error naming the cause. */
static void assert_one_error(const char *cause)
{
	print_message("%s", errbuf);
	assert_int_equal(count_lines(errbuf), 1);
	assert_non_null(strstr(errbuf, "rocattach: error: "));
	assert_non_null(strstr(errbuf, cause));
}

/* A failed attach left nothing in the target: no tool ran, no environment change. */
static void assert_no_trace_of_attach(struct victim *v)
{
	char reply[256];

	assert_string_equal(log_of(v->pid), "");
	assert_int_equal(victim_cmd(v, "env ROCP_TEST_MARKER", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_TEST_MARKER unset");
	assert_unharmed(v, true);
}

/* The attach call has returned: the attacher no longer traces anything in pid. */
static void wait_released(pid_t pid)
{
	for (int i = 0; i < 1000 && proc_tracer(pid); i++)
		usleep(2000);
	assert_int_equal(proc_tracer(pid), 0);
}

/* ------------------------------------------------------------------------ */
/* Target side. */

static void target_dies_during_attach(int sig)
{
	char pid[16];
	struct victim v;
	int fd, status;

	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, "-d", "5000", NULL};
	setenv("ROCPROF_EXAMPLE_TOOL_ATTACH_MS", "2000", 1);
	pid_t cli = cli_spawn(args, 0, &fd);
	unsetenv("ROCPROF_EXAMPLE_TOOL_ATTACH_MS");
	assert_true(wait_tool_events(test_outdir, v.pid, "initialize", 1, 10000));
	usleep(100 * 1000);
	kill(v.pid, sig);
	waitpid(v.pid, &status, 0);
	v.pid = 0;
	/* An exit (the victim ends on SIGTERM) is not a failure; a killing signal is (exit 4). */
	if (sig == SIGKILL) {
		assert_int_equal(cli_finish(cli, fd, errbuf, sizeof(errbuf)), EXIT_HARMED);
		assert_one_error("was killed by SIGKILL during the attach call");
	} else {
		assert_int_equal(cli_finish(cli, fd, errbuf, sizeof(errbuf)), EXIT_ATTACH);
		assert_one_error("exited during a remote call");
	}
	victim_stop(&v);
}

static void test_fault_target_exits_during_attach(void **state)
{
	(void)state;
	target_dies_during_attach(SIGTERM);
}

static void test_fault_target_killed_during_attach(void **state)
{
	(void)state;
	target_dies_during_attach(SIGKILL);
}

static void target_dies_in_window(int sig)
{
	char pid[16];
	struct victim v;
	int fd;

	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, "-d", "1000", NULL};
	pid_t cli = cli_spawn(args, 0, &fd);
	assert_true(wait_tool_events(test_outdir, v.pid, "tool_attach", 1, 10000));
	wait_released(v.pid);
	kill(v.pid, sig);
	waitpid(v.pid, NULL, 0);
	v.pid = 0;
	assert_int_equal(cli_finish(cli, fd, errbuf, sizeof(errbuf)), EXIT_DETACH);
	print_message("%s", errbuf);
	assert_non_null(strstr(errbuf, "rocattach: error: "));
	assert_non_null(strstr(errbuf, "exited during the window"));
	victim_stop(&v);
}

static void test_fault_target_exits_during_window(void **state)
{
	(void)state;
	target_dies_in_window(SIGTERM);
}

static void test_fault_target_killed_during_window(void **state)
{
	(void)state;
	target_dies_in_window(SIGKILL);
}

static void test_fault_target_zombie(void **state)
{
	pid_t z = make_zombie();

	(void)state;
	assert_int_equal(proc_state(z), 'Z');
	assert_int_equal(cli_window(z, RA_TOOL_PATH, "100", 0), EXIT_ATTACH);
	assert_one_error("is a zombie");
	assert_int_equal(rocattach_attach(z), ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	/* We never traced it: it is still ours to reap. */
	assert_int_equal(waitpid(z, NULL, 0), z);
}

/*
 * Decision: a stopped process is attached. ptrace runs the listener alone;
 * the process stays stopped, and continues on SIGCONT with the tool attached.
 */
static void test_fault_target_stopped_before_attach(void **state)
{
	char pid[16], want[160];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	kill(v.pid, SIGSTOP);
	while (proc_state(v.pid) != 'T')
		usleep(1000);
	/* Refused before any ptrace: a stopped rank would hold the launcher (issue 21). */
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "1000", 0), EXIT_HARMED);
	snprintf(want, sizeof(want),
		 "rocattach: error: process %d is stopped (SIGSTOP/SIGTSTP): not attached; resume "
		 "it with kill -CONT\n",
		 v.pid);
	assert_one_error(want);
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_int_equal(proc_state(v.pid), 'T');
	kill(v.pid, SIGCONT);
	assert_no_trace_of_attach(&v);
	/* Resumed, it attaches as any other. */
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "0", 0), EXIT_OK);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* Not a zombie: the leader shows 'Z' but its threads run on. Refused, not misnamed. */
static void test_fault_target_main_thread_exited(void **state)
{
	const struct victim_opts o = {.program = RA_BLOCKED_VICTIM,
				      .agent = true,
				      .attach_env = true,
				      .argv = {"--main-exits"}};
	char reply[64];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &o), 0);
	for (int i = 0; i < 500 && proc_state(v.pid) != 'Z'; i++)
		usleep(2000);
	assert_int_equal(proc_state(v.pid), 'Z');
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "100", 0), EXIT_ATTACH);
	assert_one_error("its main thread has exited while other threads run on");
	assert_int_equal(victim_cmd(&v, "ping", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "pong");
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_int_equal(victim_status(&v, "eintr"), 0);
	victim_stop(&v);
}

static pid_t task_tracer(pid_t pid, pid_t tid)
{
	char path[96], buf[4096], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, "TracerPid:");
	return p ? atoi(p + 10) : -1;
}

static pid_t start_strace(pid_t pid)
{
	char p[16];
	pid_t s;

	snprintf(p, sizeof(p), "%d", pid);
	s = fork();
	if (s == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execlp("strace", "strace", "-f", "-qq", "-o", "/dev/null", "-p", p, (char *)NULL);
		_exit(127);
	}
	return s;
}

static void test_fault_target_already_traced(void **state)
{
	char cause[64];
	struct victim v;
	pid_t s, tid;

	(void)state;
	if (access("/usr/bin/strace", X_OK))
		RA_SKIP("no /usr/bin/strace: the traced-target check needs it (apt-get install "
			"strace)");
	assert_int_equal(victim_start(&v, &with_agent), 0);
	tid = proc_thread(v.pid, "rocp-bg-attach");
	s = start_strace(v.pid);
	for (int i = 0; i < 1000 && task_tracer(v.pid, tid) != s; i++)
		usleep(5000);
	assert_int_equal(task_tracer(v.pid, tid), s);
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "100", 0), EXIT_ATTACH);
	snprintf(cause, sizeof(cause), "already traced by %d (strace)", s);
	assert_one_error(cause);
	assert_non_null(strstr(errbuf, "Operation not permitted"));
	assert_int_equal(rocattach_attach(v.pid),
			 ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED);
	kill(s, SIGTERM);
	waitpid(s, NULL, 0);
	/* strace detached: the target never noticed us, and attaches now. */
	assert_string_equal(log_of(v.pid), "");
	assert_unharmed(&v, true);
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "50", 0), EXIT_OK);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static bool untraced(void *arg)
{
	return proc_tracer(*(pid_t *)arg) == 0;
}

/*
 * Two users, one target: the second rocattach is refused in one line naming
 * the first (PTRACE_OPERATION_NOT_PERMITTED, exit 1) and touches nothing;
 * the first window runs to its end (its detach comes after the second gave
 * up) and exits 0.
 */
static void test_fault_second_attacher_refused(void **state)
{
	const char *logtext;
	char p[16], cause[96];
	unsigned long long refused_ns;
	struct victim v;
	pid_t first;
	int fd;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(p, sizeof(p), "%d", v.pid);
	const char *args[] = {"-p", p, "-t", RA_TOOL_PATH, "-d", "2000", NULL};
	first = cli_spawn(args, 0, &fd);
	assert_true(first > 0);
	assert_true(wait_tool_events(test_outdir, v.pid, "tool_attach", 1, 10000));
	assert_true(wait_until(untraced, &v.pid, 10000));

	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "500", 0), EXIT_ATTACH);
	refused_ns = realtime_ns();
	snprintf(cause, sizeof(cause), "process %d is attached by rocattach (pid %d, since ",
		 (int)v.pid, (int)first);
	assert_one_error(cause);
	assert_non_null(strstr(errbuf, "): wait for its window to end"));
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), 1);
	assert_int_equal(tool_count(logtext, "tool_detach"), 0);
	/* ROCP_TEST_MARKER came with the second attach only: it never crossed. */
	assert_int_equal(victim_cmd(&v, "env ROCP_TEST_MARKER", cause, sizeof(cause)), 0);
	assert_string_equal(cause, "env ROCP_TEST_MARKER unset");

	assert_int_equal(cli_finish(first, fd, errbuf, sizeof(errbuf)), EXIT_OK);
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), 1);
	assert_int_equal(tool_count(logtext, "tool_detach"), 1);
	assert_true(tool_event_ns(logtext, "tool_detach", 1) > refused_ns);
	assert_unharmed(&v, true);
	/* Free again. */
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "50", 0), EXIT_OK);
	victim_stop(&v);
}

/* Its owner killed mid-window, the next attacher gets the target at once. */
static void test_fault_second_attacher_after_owner_killed(void **state)
{
	const char *logtext;
	char p[16];
	struct victim v;
	pid_t first;
	int fd;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(p, sizeof(p), "%d", v.pid);
	const char *args[] = {"-p", p, "-t", RA_TOOL_PATH, "-d", "60000", NULL};
	first = cli_spawn(args, 0, &fd);
	assert_true(first > 0);
	assert_true(wait_tool_events(test_outdir, v.pid, "tool_attach", 1, 10000));
	assert_true(wait_until(untraced, &v.pid, 10000));
	kill(first, SIGKILL);
	assert_int_equal(cli_finish(first, fd, errbuf, sizeof(errbuf)), 128 + SIGKILL);
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "50", 0), EXIT_OK);
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), tool_count(logtext, "tool_detach"));
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_fault_target_of_another_user(void **state)
{
	struct victim v;
	int status;
	pid_t c;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "100", NOBODY_UID), EXIT_ATTACH);
	assert_one_error("owned by uid 0 and this process (uid 65534) lacks CAP_SYS_PTRACE");
	/* The library's status for it: PTRACE_OPERATION_NOT_PERMITTED. */
	c = fork();
	if (c == 0) {
		if (setgid(NOBODY_GID) || setuid(NOBODY_UID))
			_exit(100);
		_exit(rocattach_attach(v.pid));
	}
	waitpid(c, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status),
			 ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED);
	assert_no_trace_of_attach(&v);
	victim_stop(&v);
}

static void test_fault_target_statically_linked(void **state)
{
	const struct victim_opts o = {.program = RA_STATIC_SLEEPER, .attach_env = true};
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &o), 0);
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "100", 0), EXIT_ATTACH);
	assert_one_error("has no attach listener");
	assert_true(proc_alive(v.pid));
	assert_int_equal(proc_tracer(v.pid), 0);
	victim_stop(&v);
}

static void test_fault_target_without_listener(void **state)
{
	const struct victim_opts o = {.agent = true};
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &o), 0);
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "100", 0), EXIT_ATTACH);
	assert_one_error("start it with ROCP_TOOL_ATTACH=1");
	assert_true(proc_alive(v.pid));
	assert_int_equal(proc_tracer(v.pid), 0);
	victim_stop(&v);
}

static void test_fault_tool_not_elf_or_wrong_machine(void **state)
{
	char text[512], arm[512];
	struct victim v;
	int fd;

	(void)state;
	snprintf(text, sizeof(text), "%s/libtext.so", workdir);
	snprintf(arm, sizeof(arm), "%s/libarm.so", workdir);
	fd = open(text, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_int_equal(write(fd, "not a library\n", 14), 14);
	close(fd);
	assert_int_equal(copy_file(RA_TOOL_PATH, arm, 0644), 0);
	fd = open(arm, O_WRONLY | O_CLOEXEC);
	assert_int_equal(pwrite(fd, "\xb7\x00", 2, 18), 2); /* e_machine = EM_AARCH64 */
	close(fd);
	assert_int_equal(victim_start(&v, &with_agent), 0);
	assert_int_equal(cli_window(v.pid, text, "100", 0), EXIT_ATTACH);
	assert_one_error("is not an ELF file");
	assert_int_equal(cli_window(v.pid, arm, "100", 0), EXIT_ATTACH);
	assert_one_error("is built for aarch64 (ELF machine 183), not for x86-64");
	assert_no_trace_of_attach(&v);
	victim_stop(&v);
}

/* A bare name cannot be checked by us: the target's dlopen refuses it, cleanly. */
static void test_fault_tool_not_elf_by_bare_name(void **state)
{
	struct victim_opts o = with_agent;
	char libpath[300], text[512];
	struct victim v;
	int fd;

	(void)state;
	snprintf(text, sizeof(text), "%s/libbare-text.so", workdir);
	fd = open(text, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_int_equal(write(fd, "not a library\n", 14), 14);
	close(fd);
	snprintf(libpath, sizeof(libpath), "LD_LIBRARY_PATH=%s", workdir);
	o.env[0] = libpath;
	assert_int_equal(victim_start(&v, &o), 0);
	assert_int_equal(cli_window(v.pid, "libbare-text.so", "100", 0), EXIT_ATTACH);
	assert_one_error("ROCPROFILER_ERROR");
	assert_non_null(strstr(errbuf, "libbare-text.so"));
	assert_unharmed(&v, true);
	/* A failed first attach pins nothing: a good tool attaches next. */
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "50", 0), EXIT_OK);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void tool_knob_fails(const char *knob, const char *cause)
{
	struct victim v;

	assert_int_equal(victim_start(&v, &with_agent), 0);
	setenv(knob, "1", 1);
	assert_int_equal(cli_window(v.pid, RA_TOOL_PATH, "100", 0), EXIT_ATTACH);
	unsetenv(knob);
	assert_one_error(cause);
	assert_unharmed(&v, true);
	/* The failed attach rolled its environment back. */
	char reply[256], cmd[128];
	snprintf(cmd, sizeof(cmd), "env %s", knob);
	assert_int_equal(victim_cmd(&v, cmd, reply, sizeof(reply)), 0);
	assert_non_null(strstr(reply, "unset"));
	victim_stop(&v);
}

static void test_fault_tool_configure_returns_null(void **state)
{
	(void)state;
	tool_knob_fails("ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL",
			"every tool declined: " RA_TOOL_PATH
			": declined (its rocprofiler_configure returned NULL)");
}

static void test_fault_tool_initialize_fails(void **state)
{
	(void)state;
	tool_knob_fails("ROCPROF_EXAMPLE_TOOL_INIT_FAIL", "initialize failed (returned -1)");
}

static void test_fault_tool_without_configure_attach(void **state)
{
	(void)state;
	tool_knob_fails("ROCPROF_EXAMPLE_TOOL_NO_ATTACH", "no rocprofiler_configure_attach");
}

/* ------------------------------------------------------------------------ */
/* Attacher side (the watchdog cases are in test_watchdog). */

/*
 * An attacher SIGKILLed at random moments of attach and detach calls: at
 * whatever instruction it dies, the target lives on, untraced, and can be
 * attached again; no mapping is left behind.
 */
static char maps_before[1 << 16];

static void maps_snapshot(pid_t pid)
{
	char path[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	n = f ? fread(maps_before, 1, sizeof(maps_before) - 1, f) : 0;
	maps_before[n] = '\0';
	if (f)
		fclose(f);
}

static void maps_diff(pid_t pid)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strstr(maps_before, line))
			print_message("new mapping: %s", line);
	if (f)
		fclose(f);
}

/*
 * How a victim that is no longer alive ended (it is our child): its wait
 * status, or its /proc state and threads if it is not reaped yet.
 */
static const char *how_it_ended(pid_t pid)
{
	static char why[512];
	char cmd[160];
	int st = 0;
	pid_t w = waitpid(pid, &st, WNOHANG | __WALL);

	if (w == pid && WIFSIGNALED(st))
		snprintf(why, sizeof(why), "killed by SIG%s%s", sigabbrev_np(WTERMSIG(st)),
			 WCOREDUMP(st) ? " (core dumped)" : "");
	else if (w == pid && WIFEXITED(st))
		snprintf(why, sizeof(why), "exited with %d", WEXITSTATUS(st));
	else
		snprintf(why, sizeof(why), "not reaped (waitpid %d): see its threads above",
			 (int)w);
	snprintf(cmd, sizeof(cmd), "grep -H . /proc/%d/stat /proc/%d/task/*/stat", pid, pid);
	if (w != pid && system(cmd) < 0)
		print_message("cannot list its threads\n");
	return why;
}

static void test_fault_attacher_killed_at_random_points(void **state)
{
	const char *logtext;
	struct victim v;
	int maps0, fds0;
	unsigned int seed = (unsigned int)getpid();

	(void)state;
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", RA_TOOL_PATH, 1);
	assert_int_equal(victim_start(&v, &with_agent), 0);
	/* Warm up: the tool is loaded and the watchdog started once and for all. */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	usleep(50 * 1000); /* the watchdog closes our pidfd on its own thread */
	maps0 = proc_maps_count(v.pid);
	maps_snapshot(v.pid);
	fds0 = proc_fd_count(v.pid);
	for (int i = 0; i < 60; i++) {
		pid_t a = fork();

		if (a == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;) {
				rocattach_attach(v.pid);
				rocattach_detach(v.pid);
			}
		}
		usleep(1000 + (useconds_t)(rand_r(&seed) % 20000));
		kill(a, SIGKILL);
		waitpid(a, NULL, 0);
		if (!proc_alive(v.pid))
			fail_msg("round %d: the target died after its attacher was killed: %s", i,
				 how_it_ended(v.pid));
	}
	/* The watchdog detaches what the last attacher left attached. */
	usleep(300 * 1000);
	assert_unharmed(&v, true);
	if (rocattach_attach(v.pid) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("attach after the kills: %s", rocattach_last_error());
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_unharmed(&v, true);
	usleep(50 * 1000);
	print_message("target maps %d -> %d, fds %d -> %d\n", maps0, proc_maps_count(v.pid), fds0,
		      proc_fd_count(v.pid));
	assert_int_equal(proc_fd_count(v.pid), fds0);
	maps_diff(v.pid);
	assert_int_equal(proc_maps_count(v.pid), maps0);
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), tool_count(logtext, "tool_detach"));
	print_message("%d windows, all detached\n", tool_count(logtext, "tool_attach"));
	victim_stop(&v);
	unsetenv("ROCPROF_ATTACH_TOOL_LIBRARY");
}

/* This thread is traced or stopped (t/T): 1, else 0. */
static int traced_or_stopped(FILE *f, pid_t pid, const char *tid, void *arg)
{
	char line[256], state;
	int tracer, bad = 0;

	(void)pid, (void)tid, (void)arg;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "TracerPid: %d", &tracer) == 1 && tracer)
			bad = 1;
		if (sscanf(line, "State: %c", &state) == 1 && (state == 't' || state == 'T'))
			bad = 1;
	}
	return bad;
}

/* Every thread of pid: untraced, none stopped (t/T); -1 if one is. */
static int threads_free(pid_t pid)
{
	return proc_each_task(pid, "status", traced_or_stopped, NULL) ? -1 : 0;
}

/* This thread is not ours (no rocp- name) and sleeps in the trampoline's rt_sigsuspend. */
static int app_parked(FILE *f, pid_t pid, const char *tid, void *arg)
{
	char path[320], comm[64];
	long nr;
	FILE *sc;
	int parked;

	(void)arg;
	if (!f || !fgets(comm, sizeof(comm), f) || !strncmp(comm, "rocp-", 5))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", pid, tid);
	sc = fopen(path, "re");
	parked = sc && fscanf(sc, "%ld", &nr) == 1 && nr == SYS_rt_sigsuspend;
	if (sc)
		fclose(sc);
	return parked;
}

/* Threads of pid other than the listener parked in the trampoline's rt_sigsuspend. */
static int app_threads_parked(pid_t pid)
{
	return proc_each_task(pid, "comm", app_parked, NULL);
}

/*
 * --inject's bootstrap (lib/inject.c): the attacher SIGKILLed at random
 * points while it borrows an application thread to create the loader
 * thread, while it drives the loader (dlopen, listener start), or after.
 * Whatever the instant, the process lives on, no thread of it is traced or
 * stopped, its workers go on, and it can be injected and attached again.
 * The one documented cost: killed while the borrowed thread runs its
 * pthread_create, that thread stays parked (counted, not failed); killed
 * during the loader's part, the loader stays parked instead and the
 * application thread is free.
 */
static void test_fault_attacher_killed_during_inject_bootstrap(void **state)
{
	static const rocattach_opts_t inject = {
	    .size = sizeof(rocattach_opts_t),
	    .tool_libraries = RA_TOOL_PATH,
	    .flags = ROCATTACH_F_INJECT,
	    .agent_path = RA_AGENT_PATH,
	};
	const struct victim_opts plain = {0};
	unsigned int seed = (unsigned int)getpid();
	int reader_parked = 0, listener_up = 0, borrowed_parked = 0;
	char reply[256];
	struct victim v;

	(void)state;
	for (int i = 0; i < 24; i++) {
		pid_t a;

		assert_int_equal(victim_start(&v, &plain), 0);
		a = fork();
		if (a == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			/* Killed at a random point; done before, it waits to be killed. */
			if (rocattach_attach_ex(v.pid, &inject, NULL) != ROCATTACH_STATUS_SUCCESS)
				_exit(1);
			for (;;)
				pause();
		}
		usleep((useconds_t)(rand_r(&seed) % 6000));
		kill(a, SIGKILL);
		waitpid(a, NULL, 0);
		usleep(20 * 1000);
		if (!proc_alive(v.pid))
			fail_msg("round %d: the target died after its attacher was killed: %s", i,
				 how_it_ended(v.pid));
		assert_int_equal(threads_free(v.pid), 0);
		listener_up += proc_thread(v.pid, "rocp-bg-attach") > 0;
		/*
		 * Unless the reader was the borrowed thread, caught in its part, it
		 * answers. (The borrowed thread is usually the main one, which takes
		 * SIGTERM: SIGKILL ends every victim here.)
		 */
		reader_parked +=
		    victim_cmd(&v, "ping", reply, sizeof(reply)) || strcmp(reply, "pong");
		borrowed_parked += app_threads_parked(v.pid);
		/* Attachable again: by the listener if it started, else by a new injection. */
		if (rocattach_attach_ex(v.pid, &inject, NULL) != ROCATTACH_STATUS_SUCCESS) {
			char cmd[128];

			snprintf(cmd, sizeof(cmd),
				 "grep -H . /proc/%d/task/*/comm /proc/%d/task/*/syscall", v.pid,
				 v.pid);
			if (system(cmd) < 0)
				print_message("cannot list the threads\n");
			fail_msg("inject after the kill (round %d): %s", i, rocattach_last_error());
		}
		assert_true(proc_thread(v.pid, "rocp-bg-attach") > 0);
		assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
		assert_true(proc_alive(v.pid));
		assert_int_equal(threads_free(v.pid), 0);
		kill(v.pid, SIGKILL);
		victim_stop(&v);
	}
	print_message(
	    "24 kills: listener already up in %d; a thread (borrowed or loader) left parked "
	    "in %d (the reader in %d)\n",
	    listener_up, borrowed_parked, reader_parked);
}

/* ------------------------------------------------------------------------ */

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fault_target_exits_during_attach),
	    cmocka_unit_test(test_fault_target_killed_during_attach),
	    cmocka_unit_test(test_fault_target_exits_during_window),
	    cmocka_unit_test(test_fault_target_killed_during_window),
	    cmocka_unit_test(test_fault_target_zombie),
	    cmocka_unit_test(test_fault_target_main_thread_exited),
	    cmocka_unit_test(test_fault_target_stopped_before_attach),
	    cmocka_unit_test(test_fault_target_already_traced),
	    cmocka_unit_test(test_fault_second_attacher_refused),
	    cmocka_unit_test(test_fault_second_attacher_after_owner_killed),
	    cmocka_unit_test(test_fault_target_of_another_user),
	    cmocka_unit_test(test_fault_target_statically_linked),
	    cmocka_unit_test(test_fault_target_without_listener),
	    cmocka_unit_test(test_fault_tool_not_elf_or_wrong_machine),
	    cmocka_unit_test(test_fault_tool_not_elf_by_bare_name),
	    cmocka_unit_test(test_fault_tool_configure_returns_null),
	    cmocka_unit_test(test_fault_tool_initialize_fails),
	    cmocka_unit_test(test_fault_tool_without_configure_attach),
	    cmocka_unit_test(test_fault_attacher_killed_at_random_points),
	    cmocka_unit_test(test_fault_attacher_killed_during_inject_bootstrap),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, setup, NULL));
}

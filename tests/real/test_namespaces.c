/* SPDX-License-Identifier: MIT */
/*
 * Faults that need namespaces (docs/reliability.md). Namespace work is
 * serialized with the other heavy tests through /tmp/rocattach-heavy.lock,
 * which mpirun and cluster tests may hold for minutes: the whole group
 * waits for it (up to LOCK_WAIT_S, then every test is skipped, saying so).
 *
 * Run as "test_namespaces --hide-dir DIR PROGRAM ARGS..." this binary is a
 * wrapper that puts PROGRAM in a mount namespace of its own where DIR is an
 * empty tmpfs: a path that exists for the attacher but not in the target.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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

#define LOCK_WAIT_S 600

static char workdir[256];
static char errbuf[8192];
static int lock_fd = -1;

static const struct victim_opts with_agent = {.agent = true, .attach_env = true};

static int group_setup(void **state)
{
	(void)state;
	if (setup_outdir(RA_TOOL_PATH) < 0)
		return -1;
	make_outdir(workdir, sizeof(workdir));
	chmod(workdir, 0755);
	lock_fd = open("/tmp/rocattach-heavy.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	for (int i = 0; lock_fd >= 0 && i < LOCK_WAIT_S; i++) {
		if (!flock(lock_fd, LOCK_EX | LOCK_NB))
			return workdir[0] ? 0 : -1;
		sleep(1);
	}
	fprintf(stderr, "test_namespaces: /tmp/rocattach-heavy.lock busy for %d s: skipping\n",
		LOCK_WAIT_S);
	if (lock_fd >= 0)
		close(lock_fd);
	lock_fd = -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (lock_fd >= 0)
		close(lock_fd);
	return 0;
}

/* Every test starts with it: without the lock, no namespace work. */
#define NEED_LOCK()                                                                                \
	do {                                                                                       \
		if (lock_fd < 0)                                                                   \
			RA_SKIP("no /tmp/rocattach-heavy.lock within 600 s");                      \
	} while (0)

/*
 * The tool exists for us but not in the target's mount namespace: refused
 * before any ptrace, the path named as the target sees it, nothing sent.
 */
static void test_ns_tool_missing_in_target_root(void **state)
{
	struct victim_opts o = with_agent;
	char dir[512], tool[600], cause[1500], pid[16], reply[256];
	struct victim v;

	(void)state;
	NEED_LOCK();
	snprintf(dir, sizeof(dir), "%s/hidden", workdir);
	snprintf(tool, sizeof(tool), "%s/libtool.so", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(copy_file(RA_TOOL_PATH, tool, 0644), 0);
	o.program = "/proc/self/exe";
	o.argv[0] = "--hide-dir";
	o.argv[1] = dir;
	o.argv[2] = RA_TARGET_PATH;
	assert_int_equal(victim_start(&v, &o), 0);
	assert_int_equal(access(tool, R_OK), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", tool, "-d", "100", NULL};
	setenv("ROCP_TEST_MARKER", "crossed", 1);
	assert_int_equal(cli_run(args, 0, errbuf, sizeof(errbuf)), 1);
	unsetenv("ROCP_TEST_MARKER");
	print_message("%s", errbuf);
	assert_int_equal(count_lines(errbuf), 1);
	snprintf(cause, sizeof(cause),
		 "rocattach: error: library %s as seen from process %d "
		 "(/proc/%d/root%s): No such file or directory",
		 tool, v.pid, v.pid, tool);
	assert_non_null(strstr(errbuf, cause));
	assert_string_equal(log_of(v.pid), "");
	assert_int_equal(victim_cmd(&v, "env ROCP_TEST_MARKER", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_TEST_MARKER unset");
	assert_int_equal(victim_status(&v, "eintr"), 0);
	assert_true(proc_alive(v.pid));
	assert_int_equal(proc_tracer(v.pid), 0);
	victim_stop(&v);
}

/* A child that attaches pid and waits to be killed; it dies with us too. */
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

/* unshare --fork ignores SIGTERM while it waits: end its child, then it ends. */
static void stop_unshared(struct victim *v, pid_t child)
{
	kill(child, SIGKILL);
	victim_stop(v);
}

/*
 * A target in another pid namespace could not recognise our pid, so no
 * owner is sent: nothing is detached behind the window's back while we
 * live, and (the documented limit) nothing when we die either. The agent
 * starts after unshare: its listener must be found although that /proc is
 * the host's (the thread names itself).
 */
static void test_ns_other_pid_namespace_no_watchdog(void **state)
{
	static char preload[512];
	struct victim_opts o = {.program = "/usr/bin/unshare"};
	struct victim v;
	pid_t target = 0, a;
	char path[64];
	FILE *f;

	(void)state;
	NEED_LOCK();
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", RA_AGENT_PATH);
	o.argv[0] = "--pid";
	o.argv[1] = "--fork";
	o.argv[2] = "--kill-child";
	o.argv[3] = "/usr/bin/env";
	o.argv[4] = "ROCP_TOOL_ATTACH=1";
	o.argv[5] = preload;
	o.argv[6] = RA_TARGET_PATH;
	assert_int_equal(victim_start(&v, &o), 0);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", v.pid, v.pid);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &target), 1);
	fclose(f);
	/* The tool names its log after the pid it sees: 1, the namespace's first. */
	if (rocattach_attach(target) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("attach %d: %s", target, rocattach_last_error());
	assert_int_equal(tool_count(log_of(1), "tool_attach"), 1);
	usleep(1200 * 1000);
	assert_int_equal(tool_count(log_of(1), "tool_detach"), 0);
	assert_int_equal(rocattach_detach(target), ROCATTACH_STATUS_SUCCESS);
	a = attacher_child(target);
	assert_true(wait_tool_events(test_outdir, 1, "tool_attach", 2, 10000));
	usleep(50 * 1000);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	usleep(1200 * 1000);
	assert_int_equal(tool_count(log_of(1), "tool_detach"), 1);
	assert_int_equal(proc_thread(target, "rocp-watchdog"), 0);
	/* Whoever attaches next takes the window over and ends it. */
	assert_int_equal(rocattach_attach(target), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(target), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(tool_count(log_of(1), "tool_detach"), 2);
	assert_int_equal(proc_tracer(target), 0);
	stop_unshared(&v, target);
}

static int hide_dir_exec(char **argv)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", argv[0], "tmpfs", 0, "mode=0755")) {
		perror("hide-dir");
		return 126;
	}
	execv(argv[1], argv + 1);
	perror("execv");
	return 127;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ns_tool_missing_in_target_root),
	    cmocka_unit_test(test_ns_other_pid_namespace_no_watchdog),
	};

	if (argc > 3 && !strcmp(argv[1], "--hide-dir"))
		return hide_dir_exec(argv + 2);
	return ra_test_exit(cmocka_run_group_tests(tests, group_setup, group_teardown));
}

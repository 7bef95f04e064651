/* SPDX-License-Identifier: MIT */
/*
 * The liveness watch of a node's targets (node/watch.c) on real children:
 * a zombie counts as gone (the launcher is never the parent that reaps),
 * gone targets that are not attached become "exited", and an attached one
 * is left to its detach.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "node.h"

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	return pid;
}

/* Until the child is a zombie (killed, not reaped): at most 5 s. */
static void wait_zombie(pid_t pid)
{
	siginfo_t si;

	for (int i = 0; i < 500; i++) {
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == pid)
			return;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	fail_msg("child %d did not exit", (int)pid);
}

static void test_rn_watch_alive_zombie_is_gone(void **state)
{
	struct rn_target t[2] = {{.pid = sleeper(), .state = RN_FOUND},
				 {.pid = sleeper(), .state = RN_ATTACHED}};
	struct rn_watch *w = rn_watch_open(t, 2);

	(void)state;
	assert_non_null(w);
	assert_int_equal(rn_watch_alive(w), 2);
	kill(t[0].pid, SIGTERM);
	wait_zombie(t[0].pid);
	assert_int_equal(rn_watch_mark(w, t, 2), 1);
	assert_true(rn_watch_gone(w, 0));
	assert_false(rn_watch_gone(w, 1));
	assert_int_equal(t[0].state, RN_EXITED);
	assert_non_null(strstr(t[0].message, "exited before its first window"));
	/* Attached: it died with its tools in it, seen now (issue 21). */
	kill(t[1].pid, SIGKILL);
	wait_zombie(t[1].pid);
	assert_int_equal(rn_watch_mark(w, t, 2), 0);
	assert_int_equal(t[1].state, RN_DIED_ATTACHED);
	assert_true(t[1].died_ns > 0);
	assert_non_null(strstr(t[1].message, "died with its tools attached"));
	waitpid(t[0].pid, NULL, 0);
	waitpid(t[1].pid, NULL, 0);
	/* Gone stays gone, even if the pid were used again. */
	assert_int_equal(rn_watch_alive(w), 0);
	rn_watch_close(w);
}

static void test_rn_watch_open_gone_pid(void **state)
{
	pid_t pid = sleeper();
	struct rn_target t = {.pid = pid, .state = RN_DETACHED, .windows = 1};
	struct rn_watch *w;

	(void)state;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	w = rn_watch_open(&t, 1);
	assert_int_equal(rn_watch_mark(w, &t, 1), 0);
	assert_int_equal(t.state, RN_EXITED);
	assert_non_null(strstr(t.message, "exited between windows"));
	rn_watch_close(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_watch_alive_zombie_is_gone),
	    cmocka_unit_test(test_rn_watch_open_gone_pid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

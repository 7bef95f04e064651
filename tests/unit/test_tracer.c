/* SPDX-License-Identifier: MIT */
/*
 * The library's tracer threads (lib/tracer.c): an operation runs on a
 * thread of its own (named rocattach-trace, every signal blocked), joined
 * when it keeps nothing; a thread kept there (seized, interrupted, not
 * stopped: a forked child held in vfork) is released by that thread at its
 * stop, after the call has returned, and the tracer thread then ends.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/clock.h"
#include "tracer.h"

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = f && fgets(buf, (int)len, f) ? 0 : -1;

	if (f)
		fclose(f);
	return ret;
}

/* How many of our threads are named rocattach-trace. */
static int tracer_threads(void)
{
	char path[320], comm[64];
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (e->d_name[0] != '.' && !read_line(path, comm, sizeof(comm)) &&
		    !strcmp(comm, "rocattach-trace\n"))
			n++;
	}
	closedir(d);
	return n;
}

static long field_of(pid_t pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

struct seen {
	pid_t tid;
	char comm[32];
	bool all_blocked;
};

static int observe(void *arg)
{
	struct seen *s = arg;
	char path[64];
	sigset_t mask;

	s->tid = (pid_t)syscall(SYS_gettid);
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", s->tid);
	if (read_line(path, s->comm, sizeof(s->comm)))
		s->comm[0] = '\0';
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	s->all_blocked = sigismember(&mask, SIGINT) && sigismember(&mask, SIGUSR1) &&
			 sigismember(&mask, SIGRTMIN + 1);
	return 42;
}

static void test_ra_tracer_run_on_its_own_thread(void **state)
{
	struct ra_err e = {0};
	struct seen s = {0};
	int ret = 0;

	(void)state;
	assert_int_equal(ra_tracer_run(observe, &s, &ret, &e), 0);
	assert_int_equal(ret, 42);
	assert_int_not_equal(s.tid, (pid_t)syscall(SYS_gettid));
	assert_string_equal(s.comm, "rocattach-trace\n");
	assert_true(s.all_blocked);
	/* Nothing kept: joined, gone. */
	assert_int_equal(tracer_threads(), 0);
	assert_int_equal(ra_tracer_kept_count(), 0);
}

static void test_ra_tracer_keep_refused_outside_a_tracer_thread(void **state)
{
	(void)state;
	assert_false(ra_tracer_keep(getpid(), (pid_t)syscall(SYS_gettid), ra_monotonic_ns()));
	assert_int_equal(ra_tracer_kept_count(), 0);
}

static int grandchild(void *arg)
{
	struct timespec ts = {1, 500 * 1000 * 1000};

	(void)arg;
	while (nanosleep(&ts, &ts))
		;
	syscall(SYS_exit, 0);
	return 0;
}

/*
 * A child that vforks a grandchild sleeping 1.5 s, then says "v" and waits.
 * clone(CLONE_VM | CLONE_VFORK) on a stack of its own, not vfork(): a
 * sanitizer's vfork interceptor forks instead (TSan's does), and then
 * nothing waits.
 */
static pid_t held_child(int *ack)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	int p[2];
	pid_t pid, g;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		g = clone(grandchild, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD,
			  NULL);
		if (g < 0 || waitpid(g, NULL, 0) != g || write(p[1], "v", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	*ack = p[0];
	return pid;
}

/* Seize and interrupt the held child: no stop comes; keep it. */
static int seize_and_keep(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	int status;

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) || ptrace(PTRACE_INTERRUPT, pid, NULL, NULL))
		return -errno;
	usleep(100 * 1000);
	if (waitpid(pid, &status, __WALL | WNOHANG) != 0)
		return -EAGAIN; /* it stopped: not held */
	return ra_tracer_keep(pid, pid, ra_monotonic_ns()) ? 0 : -EINVAL;
}

static void test_ra_tracer_keeps_until_the_stop(void **state)
{
	struct ra_err e = {0};
	char path[64], st[512], v = 0;
	int ack, ret = -1;
	pid_t pid;

	(void)state;
	pid = held_child(&ack);
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 200; i++) {
		if (!read_line(path, st, sizeof(st)) && strstr(st, ") D "))
			break;
		usleep(5000);
	}
	assert_non_null(strstr(st, ") D "));
	assert_int_equal(ra_tracer_run(seize_and_keep, &pid, &ret, &e), 0);
	assert_int_equal(ret, 0);
	assert_int_equal(ra_tracer_kept_count(), 1);
	assert_true(ra_tracer_keeps(pid, pid));
	assert_int_equal(tracer_threads(), 1);
	assert_true(field_of(pid, "TracerPid:") > 0);
	for (int i = 0; i < 500 && ra_tracer_kept_count(); i++)
		usleep(10 * 1000);
	assert_int_equal(ra_tracer_kept_count(), 0);
	assert_false(ra_tracer_keeps(pid, pid));
	assert_int_equal(field_of(pid, "TracerPid:"), 0);
	/* It runs on, released at its stop with nothing pending. */
	assert_int_equal(read(ack, &v, 1), 1);
	assert_int_equal(v, 'v');
	for (int i = 0; i < 100 && tracer_threads(); i++)
		usleep(10 * 1000);
	assert_int_equal(tracer_threads(), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ack);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_tracer_run_on_its_own_thread),
	    cmocka_unit_test(test_ra_tracer_keep_refused_outside_a_tracer_thread),
	    cmocka_unit_test(test_ra_tracer_keeps_until_the_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * librocattach-watchdog's calls, in this process, against a stand-in for
 * ROCm's entry points (attached or not, as rocprofiler-register keeps it):
 * it detaches when the owner dies, never after a detach or a failed attach,
 * detaches a dead owner's window before the next attach, and a fork child
 * has no watchdog; with an end (end_ns) and no detach by then it detaches by
 * itself, noting when, and a detach disarms that. The owners are children of
 * this test.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
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

#include <rocattach/tool.h>

#include "common/protocol.h"

typedef int (*wd_attach_fn)(struct ra_watchdog_call *);
typedef int (*wd_detach_fn)(void);

static wd_attach_fn wd_attach;
static wd_detach_fn wd_detach;

/* ROCm's side as the watchdog sees it: one window, attached or not. */
static atomic_bool attached;
static atomic_int detaches, attach_result;

static int fake_attach(const char *env, const char *path)
{
	(void)env;
	(void)path;
	if (atomic_load(&attach_result))
		return atomic_load(&attach_result);
	atomic_store(&attached, true);
	return ROCATTACH_REGISTER_SUCCESS;
}

static int fake_detach(void)
{
	if (!atomic_exchange(&attached, false))
		return ROCATTACH_REGISTER_INVALID_ARGUMENT;
	atomic_fetch_add(&detaches, 1);
	return ROCATTACH_REGISTER_SUCCESS;
}

/* A child standing for an attacher, and its start time (/proc/PID/stat field 22). */
static pid_t owner_start(unsigned long long *start)
{
	char path[64], buf[1024], *p;
	pid_t pid = fork();
	FILE *f;

	if (pid == 0) {
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	assert_non_null(p);
	*start = strtoull(p + 1, NULL, 10);
	return pid;
}

static void owner_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int attach_as(pid_t owner, unsigned long long start, struct ra_watchdog_call *c)
{
	*c = (struct ra_watchdog_call){.attach_fn = (uintptr_t)fake_attach,
				       .detach_fn = (uintptr_t)fake_detach,
				       .owner_pid = (unsigned long long)owner,
				       .owner_start = start};
	return wd_attach(c);
}

/* Wait up to ms for n detaches; true if reached. */
static bool detaches_reach(int n, int ms)
{
	const struct timespec nap = {0, 1000000};

	for (int i = 0; i < ms && atomic_load(&detaches) < n; i++)
		nanosleep(&nap, NULL);
	return atomic_load(&detaches) >= n;
}

static int reset(void **state)
{
	(void)state;
	if (atomic_load(&attached))
		wd_detach();
	atomic_store(&attached, false);
	atomic_store(&detaches, 0);
	atomic_store(&attach_result, 0);
	return 0;
}

static void test_watchdog_lib_owner_death_detaches(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long start;
	pid_t o = owner_start(&start);

	(void)state;
	assert_int_equal(attach_as(o, start, &c), 0);
	assert_int_equal(c.armed, 1);
	usleep(100 * 1000);
	assert_int_equal(atomic_load(&detaches), 0);
	owner_kill(o);
	assert_true(detaches_reach(1, 2000));
	assert_false(atomic_load(&attached));
}

static void test_watchdog_lib_detach_disarms(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long start;
	pid_t o = owner_start(&start);

	(void)state;
	assert_int_equal(attach_as(o, start, &c), 0);
	assert_int_equal(wd_detach(), 0);
	assert_int_equal(atomic_load(&detaches), 1);
	owner_kill(o);
	usleep(300 * 1000);
	assert_int_equal(atomic_load(&detaches), 1);
}

static void test_watchdog_lib_failed_attach_arms_nothing(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long start;
	pid_t o = owner_start(&start);

	(void)state;
	atomic_store(&attach_result, ROCATTACH_REGISTER_INVALID_ARGUMENT);
	assert_int_equal(attach_as(o, start, &c), ROCATTACH_REGISTER_INVALID_ARGUMENT);
	assert_int_equal(c.armed, 0);
	owner_kill(o);
	usleep(300 * 1000);
	assert_int_equal(atomic_load(&detaches), 0);
}

/* Another process now holds a dead owner's pid: its start time tells them apart. */
static void test_watchdog_lib_wrong_start_time_is_gone(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long start;
	pid_t o = owner_start(&start);

	(void)state;
	assert_int_equal(attach_as(o, start + 1, &c), 0);
	assert_true(detaches_reach(1, 2000));
	owner_kill(o);
}

/* The next attacher right after a death: the dead one's window is closed once, first. */
static void test_watchdog_lib_next_attacher_after_death(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long sa, sb;
	pid_t a = owner_start(&sa), b = owner_start(&sb);

	(void)state;
	for (int round = 0; round < 20; round++) {
		assert_int_equal(attach_as(a, sa, &c), 0);
		owner_kill(a);
		assert_int_equal(attach_as(b, sb, &c), 0);
		assert_int_equal(c.armed, 1);
		assert_int_equal(atomic_load(&detaches), round + 1);
		assert_true(atomic_load(&attached));
		assert_int_equal(wd_detach(), 0);
		atomic_store(&detaches, round + 1);
		a = owner_start(&sa);
	}
	owner_kill(a);
	owner_kill(b);
}

/* A fork child: no watchdog thread, nothing armed, nothing to detach through it. */
static void test_watchdog_lib_fork_child_has_none(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long start;
	pid_t o = owner_start(&start), f;
	int status;

	(void)state;
	assert_int_equal(attach_as(o, start, &c), 0);
	f = fork();
	if (f == 0) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "grep -qx " RA_WATCHDOG_THREAD " /proc/%d/task/*/comm",
			 (int)getpid());
		if (!system(cmd))
			_exit(1); /* a watchdog thread in the child */
		_exit(wd_detach() == ROCATTACH_REGISTER_ATTACHMENT_NOT_AVAILABLE ? 0 : 2);
	}
	assert_int_equal(waitpid(f, &status, 0), f);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's watchdog is untouched. */
	owner_kill(o);
	assert_true(detaches_reach(1, 2000));
}

static _Atomic uint64_t *wd_window;

static uint64_t realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The window's end (end_ns) passes with the owner alive and no detach: the
 * watchdog detaches by itself, once, not before the end, and its record
 * says when; the owner's death later does nothing more.
 */
static void test_watchdog_lib_end_without_detach_detaches(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long start;
	pid_t o = owner_start(&start);
	uint64_t end, seq;

	(void)state;
	seq = atomic_load(&wd_window[0]);
	end = realtime() + 150000000ull;
	c = (struct ra_watchdog_call){.attach_fn = (uintptr_t)fake_attach,
				      .detach_fn = (uintptr_t)fake_detach,
				      .owner_pid = (unsigned long long)o,
				      .owner_start = start,
				      .end_ns = end};
	assert_int_equal(wd_attach(&c), 0);
	assert_int_equal(c.armed, 1);
	assert_true(atomic_load(&wd_window[0]) == seq + 1);
	assert_true(atomic_load(&wd_window[1]) == 0);
	assert_true(detaches_reach(1, 2000));
	assert_true(atomic_load(&wd_window[1]) + 2000000ull >= end);
	assert_true(atomic_load(&wd_window[1]) < end + 1000000000ull);
	owner_kill(o);
	assert_false(detaches_reach(2, 300));
}

/* A detach before the end disarms it: nothing happens at the end. */
static void test_watchdog_lib_end_disarmed_by_detach(void **state)
{
	struct ra_watchdog_call c;
	unsigned long long start;
	pid_t o = owner_start(&start);

	(void)state;
	c = (struct ra_watchdog_call){.attach_fn = (uintptr_t)fake_attach,
				      .detach_fn = (uintptr_t)fake_detach,
				      .owner_pid = (unsigned long long)o,
				      .owner_start = start,
				      .end_ns = realtime() + 100000000ull};
	assert_int_equal(wd_attach(&c), 0);
	assert_int_equal(wd_detach(), 0);
	assert_int_equal(atomic_load(&detaches), 1);
	assert_false(detaches_reach(2, 400));
	assert_true(atomic_load(&wd_window[1]) == 0);
	owner_kill(o);
}

int main(void)
{
	void *h = dlopen(RA_WATCHDOG_PATH, RTLD_NOW);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_watchdog_lib_owner_death_detaches, reset),
	    cmocka_unit_test_setup(test_watchdog_lib_detach_disarms, reset),
	    cmocka_unit_test_setup(test_watchdog_lib_failed_attach_arms_nothing, reset),
	    cmocka_unit_test_setup(test_watchdog_lib_wrong_start_time_is_gone, reset),
	    cmocka_unit_test_setup(test_watchdog_lib_next_attacher_after_death, reset),
	    cmocka_unit_test_setup(test_watchdog_lib_fork_child_has_none, reset),
	    cmocka_unit_test_setup(test_watchdog_lib_end_without_detach_detaches, reset),
	    cmocka_unit_test_setup(test_watchdog_lib_end_disarmed_by_detach, reset),
	};

	if (!h) {
		fprintf(stderr, "dlopen(%s): %s\n", RA_WATCHDOG_PATH, dlerror());
		return 1;
	}
	wd_attach = (wd_attach_fn)dlsym(h, RA_WATCHDOG_ATTACH);
	wd_detach = (wd_detach_fn)dlsym(h, RA_WATCHDOG_DETACH);
	wd_window = (_Atomic uint64_t *)dlsym(h, RA_WATCHDOG_WINDOW);
	if (!wd_attach || !wd_detach || !wd_window) {
		fprintf(stderr, "%s exports no %s, %s or %s\n", RA_WATCHDOG_PATH,
			RA_WATCHDOG_ATTACH, RA_WATCHDOG_DETACH, RA_WATCHDOG_WINDOW);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

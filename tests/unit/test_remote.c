/* SPDX-License-Identifier: MIT */
/*
 * Releasing a thread (ra_remote_end) on a forked child: every step is taken
 * and every failure is kept, after whatever failed before it. The child's
 * second thread unmaps the trampoline's page while its main thread is held,
 * so putting the code back fails after an earlier failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "target_memory.h"
#include "remote.h"

struct child {
	pid_t pid;
	void *page; /* where the trampoline goes, mapped before the fork */
	long page_size;
};

/* To the child's unmapping thread; from it and from the child's main thread. */
static int child_cmd[2], child_ack[2];
static struct child c;

static void on_usr1(int sig)
{
	(void)sig;
	if (write(child_ack[1], "s", 1) != 1)
		_exit(3);
}

/* In the child: on "u", unmap the page; say so. */
static void *unmapper(void *arg)
{
	char cmd;

	(void)arg;
	while (read(child_cmd[0], &cmd, 1) == 1) {
		if (munmap(c.page, (size_t)c.page_size) || write(child_ack[1], "u", 1) != 1)
			_exit(2);
	}
	return NULL;
}

/* Its main thread waits in pause(), answers SIGUSR1 through child_ack. */
static void child_main(void)
{
	pthread_t t;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGUSR1, on_usr1);
	if (pthread_create(&t, NULL, unmapper, NULL) || write(child_ack[1], "r", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static char child_wait(void)
{
	char a = 0;

	assert_int_equal(read(child_ack[0], &a, 1), 1);
	return a;
}

static int setup(void **state)
{
	(void)state;
	c.page_size = sysconf(_SC_PAGESIZE);
	c.page = mmap(NULL, (size_t)c.page_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c.page == MAP_FAILED || pipe(child_cmd) || pipe(child_ack))
		return -1;
	c.pid = fork();
	if (c.pid == 0)
		child_main();
	return c.pid > 0 && child_wait() == 'r' ? 0 : -1;
}

static int teardown(void **state)
{
	int status;

	(void)state;
	kill(c.pid, SIGKILL);
	waitpid(c.pid, &status, 0);
	munmap(c.page, (size_t)c.page_size);
	return 0;
}

/* TracerPid of a thread of pid, -1 if unknown. */
static int tracer_of(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	int tracer = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

static void test_ra_remote_end_failed_restore_after_earlier_failure(void **state)
{
	struct ra_err e = {0};
	struct ra_remote r;
	char want[128];
	uint64_t v;

	(void)state;
	assert_int_equal(ra_remote_begin(&r, c.pid, c.pid, (uintptr_t)c.page, &e), 0);
	assert_int_equal(tracer_of(c.pid, c.pid), getpid());
	/* An earlier failure, while the thread is held. */
	assert_int_equal(ra_mem_read(c.pid, 8, &v, sizeof(v), &e), -EFAULT);
	/* The target unmaps the trampoline's page: its code cannot be put back. */
	assert_int_equal(write(child_cmd[1], "u", 1), 1);
	assert_int_equal(child_wait(), 'u');
	assert_int_equal(ra_remote_end(&r), -EIO);
	print_message("%s\n", e.msg);
	/* The first failure gives the status; the failed restore follows it in the message. */
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
	assert_true(!strncmp(e.msg, "read 8 bytes at 0x8 of ", 23));
	snprintf(want, sizeof(want), "; then restoring the code of thread %d failed: write ",
		 c.pid);
	assert_non_null(strstr(e.msg, want));
	/* The other steps were taken: registers back, released, the thread runs on. */
	assert_int_equal(tracer_of(c.pid, c.pid), 0);
	assert_int_equal(syscall(SYS_tgkill, c.pid, c.pid, SIGUSR1), 0);
	assert_int_equal(child_wait(), 's');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_remote_end_failed_restore_after_earlier_failure),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

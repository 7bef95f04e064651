/* SPDX-License-Identifier: MIT */
/*
 * Target memory (ra_mem_read/ra_mem_write): how each failure of
 * process_vm_readv/writev is sorted, as strace's umoven does, on a forked
 * child (which shares our layout). The fallback to /proc/PID/mem is reached
 * by a seccomp filter that makes process_vm_readv fail in a child reading
 * itself.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
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

#include "ptrace_calls.h"
#include "target_memory.h"

static volatile uint64_t marker = 1;

/* A child that sets marker to 2, says so, and waits to be killed. */
static pid_t child_start(void)
{
	int fds[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		marker = 2;
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	return pid;
}

static void child_stop(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

static void test_ra_mem_read_child_ok(void **state)
{
	struct ra_err e = {0};
	uint64_t v = 0;
	pid_t pid;

	(void)state;
	pid = child_start();
	assert_int_equal(ra_mem_read(pid, (uintptr_t)&marker, &v, sizeof(v), &e), 0);
	assert_int_equal(v, 2);
	v = 3;
	assert_int_equal(ra_mem_write(pid, (uintptr_t)&marker, &v, sizeof(v), &e), 0);
	v = 0;
	assert_int_equal(ra_mem_read(pid, (uintptr_t)&marker, &v, sizeof(v), &e), 0);
	assert_int_equal(v, 3);
	assert_int_equal(e.status, ROCATTACH_STATUS_SUCCESS);
	child_stop(pid);
}

/* EFAULT: an unmapped address is the answer, with no fallback. */
static void test_ra_mem_read_unmapped_is_efault(void **state)
{
	struct ra_err e = {0};
	uint64_t v;
	pid_t pid;

	(void)state;
	pid = child_start();
	assert_int_equal(ra_mem_read(pid, 8, &v, sizeof(v), &e), -EFAULT);
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
	assert_non_null(strstr(e.msg, "read 8 bytes at 0x8 of "));
	assert_non_null(strstr(e.msg, "process_vm_readv: Bad address (not mapped"));
	assert_null(strstr(e.msg, "/mem"));
	ra_err_clear(&e);
	assert_int_equal(ra_mem_write(pid, 8, &v, sizeof(v), &e), -EFAULT);
	assert_non_null(strstr(e.msg, "process_vm_writev: Bad address"));
	child_stop(pid);
}

/* ESRCH: the target is gone, said so, with no fallback. */
static void test_ra_mem_read_gone_is_esrch(void **state)
{
	struct ra_err e = {0};
	int status;
	uint64_t v;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	assert_int_equal(ra_mem_read(pid, (uintptr_t)&marker, &v, sizeof(v), &e), -ESRCH);
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_non_null(strstr(e.msg, "process_vm_readv: No such process (the process is gone)"));
	assert_null(strstr(e.msg, "/mem"));
}

/* A transfer that stops at an inaccessible page is a failure, not a success. */
static void test_ra_mem_read_short_is_reported(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ra_err e = {0};
	char *two, buf[16];
	pid_t pid;

	(void)state;
	two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	assert_true(two != MAP_FAILED);
	assert_int_equal(mprotect(two + page, (size_t)page, PROT_NONE), 0);
	pid = child_start();
	assert_int_equal(ra_mem_read(pid, (uintptr_t)(two + page - 8), buf, sizeof(buf), &e), -EIO);
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
	assert_non_null(strstr(e.msg, "process_vm_readv: short read, 8 of 16 bytes"));
	ra_err_clear(&e);
	assert_int_equal(ra_mem_write(pid, (uintptr_t)(two + page - 8), buf, sizeof(buf), &e),
			 -EIO);
	assert_non_null(strstr(e.msg, "process_vm_writev: short write, 8 of 16 bytes"));
	child_stop(pid);
	munmap(two, 2 * (size_t)page);
}

/* In this process: process_vm_readv fails with err from now on. */
static int refuse_vm_readv(int err)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned int)err & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/*
 * In a child whose process_vm_readv fails with err: its own marker through
 * the fallback, then address 8, whose failure names both ways. Exit status
 * 0, or the number of the check that failed.
 */
static int fallback_child(int err)
{
	struct ra_err e = {0};
	uint64_t v = 0;
	char way[64];

	if (refuse_vm_readv(err))
		return 1;
	marker = 7;
	if (ra_mem_read(getpid(), (uintptr_t)&marker, &v, sizeof(v), &e) || v != 7 || e.status)
		return 2;
	if (ra_mem_read(getpid(), 8, &v, sizeof(v), &e) != -EIO)
		return 3;
	snprintf(way, sizeof(way), "process_vm_readv: %s, then /proc/%d/mem: ", strerror(err),
		 (int)getpid());
	if (!strstr(e.msg, way) || !strstr(e.msg, "Input/output error"))
		return 4;
	return 0;
}

static void fallback_on(int err)
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fallback_child(err));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_ra_mem_read_enosys_falls_back(void **state)
{
	(void)state;
	fallback_on(ENOSYS);
}

static void test_ra_mem_read_eperm_falls_back(void **state)
{
	(void)state;
	fallback_on(EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_mem_read_child_ok),
	    cmocka_unit_test(test_ra_mem_read_unmapped_is_efault),
	    cmocka_unit_test(test_ra_mem_read_gone_is_esrch),
	    cmocka_unit_test(test_ra_mem_read_short_is_reported),
	    cmocka_unit_test(test_ra_mem_read_enosys_falls_back),
	    cmocka_unit_test(test_ra_mem_read_eperm_falls_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "log.h"
#include "ptrace_util.h"
#include "remote.h"

static int gone(struct ra_remote *r, const char *when)
{
	r->gone = true;
	r->seized = false;
	ra_err_set(r->e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND, "process %d exited %s",
		   r->pid, when);
	return -ESRCH;
}

/*
 * Wait for the stop that PTRACE_INTERRUPT asked for. A signal may be
 * reported first: it is not ours, so it goes back to the thread.
 */
static int wait_interrupt_stop(struct ra_remote *r)
{
	int status, ret;

	for (;;) {
		ret = ra_wait(r->tid, &status, r->e);
		if (ret)
			return ret;
		if (!WIFSTOPPED(status))
			return gone(r, "while being stopped");
		if (status >> 16 == PTRACE_EVENT_STOP)
			return 0;
		if (status >> 16 == 0 && WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			r->signals_forwarded++;
			ret = (int)ra_ptrace(PTRACE_CONT, r->tid, NULL,
					     (void *)(uintptr_t)WSTOPSIG(status), r->e);
			if (ret)
				return ret;
		}
	}
}

static int save_and_write_code(struct ra_remote *r)
{
	const struct ra_tramp *t = ra_arch_tramp();
	int ret;

	ret = ra_getregs(r->tid, &r->saved, r->e);
	if (ret)
		return ret;
	ret = ra_mem_read(r->pid, r->tramp, r->orig_code, t->len, r->e);
	if (ret)
		return ret;
	ret = ra_mem_write_code(r->pid, r->tramp, t->code, t->len, r->e);
	if (ret)
		return ret;
	r->code_written = true;
	return 0;
}

int ra_remote_begin(struct ra_remote *r, pid_t pid, pid_t tid, uint64_t tramp, struct ra_err *e)
{
	char why[256];
	long ret;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->tramp = tramp;
	r->e = e;
	ret = ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)PTRACE_O_TRACESYSGOOD);
	if (ret < 0) {
		int err = errno;

		if (err == EPERM)
			ra_explain_eperm(pid, tid, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "%s", strerror(err));
		ra_err_set(e, ra_status_from_ptrace_errno(err), "PTRACE_SEIZE(%d) of pid %d: %s%s%s",
			   tid, pid, strerror(err), err == EPERM ? ": " : "",
			   err == EPERM ? why : "");
		return -err;
	}
	r->seized = true;
	ret = ra_ptrace(PTRACE_INTERRUPT, tid, NULL, NULL, e);
	if (!ret)
		ret = wait_interrupt_stop(r);
	if (!ret)
		ret = save_and_write_code(r);
	if (ret)
		ra_remote_end(r);
	return (int)ret;
}

static int is_park(struct ra_remote *r)
{
	const struct ra_tramp *t = ra_arch_tramp();
	struct __ptrace_syscall_info info;
	long n;

	n = ra_ptrace(PTRACE_GET_SYSCALL_INFO, r->tid, (void *)sizeof(info), &info, r->e);
	if (n < 0)
		return (int)n;
	return info.op == PTRACE_SYSCALL_INFO_ENTRY && (long)info.entry.nr == t->park_nr &&
	       info.instruction_pointer == r->tramp + t->park_pc_off;
}

/*
 * Run until the trampoline parks. Every syscall of the remote code gives
 * an entry and an exit stop that we pass through; signals that are not ours
 * are delivered to the thread on the next restart.
 */
static int run_to_park(struct ra_remote *r)
{
	int status, ret, sig = 0;

	r->parked = false;
	for (;;) {
		ret = (int)ra_ptrace(PTRACE_SYSCALL, r->tid, NULL, (void *)(uintptr_t)sig, r->e);
		if (ret)
			return ret == -ESRCH ? gone(r, "during a remote call") : ret;
		sig = 0;
		ret = ra_wait(r->tid, &status, r->e);
		if (ret)
			return ret;
		if (!WIFSTOPPED(status))
			return gone(r, "during a remote call");
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			ret = is_park(r);
			if (ret < 0)
				return ret;
			if (ret) {
				r->parked = true;
				return 0;
			}
		} else if (status >> 16 == 0) {
			sig = WSTOPSIG(status);
			r->signals_forwarded++;
			ra_debug("pid %d: forwarding signal %d to thread %d", r->pid, sig, r->tid);
		}
		/* PTRACE_EVENT_STOP (group stop, late interrupt): just go on. */
	}
}

static int run(struct ra_remote *r, struct ra_regs *regs, uint64_t *ret)
{
	int err;

	err = ra_setregs(r->tid, regs, r->e);
	if (!err)
		err = run_to_park(r);
	if (!err)
		err = ra_getregs(r->tid, regs, r->e);
	if (!err && ret)
		*ret = ra_arch_park_result(regs);
	return err;
}

int ra_remote_syscall(struct ra_remote *r, long nr, const uint64_t *args, int n, uint64_t *ret)
{
	struct ra_regs regs;

	ra_arch_setup_syscall(&regs, &r->saved, r->tramp, nr, args, n);
	return run(r, &regs, ret);
}

int ra_remote_call(struct ra_remote *r, uint64_t fn, const uint64_t *args, int n, uint64_t *ret)
{
	struct ra_regs regs;

	ra_arch_setup_call(&regs, &r->saved, r->tramp, fn, args, n);
	return run(r, &regs, ret);
}

int ra_remote_end(struct ra_remote *r)
{
	const struct ra_tramp *t = ra_arch_tramp();
	struct ra_regs regs;
	int ret = 0;

	if (!r->seized)
		return r->gone ? -ESRCH : 0;
	/* The thread is stopped and its pc is in the trampoline only while parked. */
	if (r->code_written && ra_mem_write_code(r->pid, r->tramp, r->orig_code, t->len, r->e))
		ret = -EIO;
	r->code_written = false;
	if (r->parked)
		ra_arch_restore_from_park(&regs, &r->saved);
	else
		regs = r->saved;
	if (ra_setregs(r->tid, &regs, r->e))
		ret = -EIO;
	if (ra_ptrace(PTRACE_DETACH, r->tid, NULL, NULL, r->e) == -ESRCH)
		r->gone = true;
	r->seized = false;
	r->parked = false;
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * Stopping a seized thread and letting it go (remote_stop.h).
 *
 * A thread that PTRACE_INTERRUPT cannot stop (held in an uninterruptible
 * or killable sleep: a vfork parent, a FUSE or NFS request) must not get a
 * PTRACE_DETACH: the kernel refuses it on a tracee that is not stopped
 * (ESRCH, which is not "gone" there), and the thread would stay traced with
 * the interrupt pending, to stop for good when it leaves its sleep. So we
 * wait for that stop and detach there: within the operation's deadline in
 * the operation itself, and past it on our tracer thread, which keeps the
 * thread after the caller has its answer (tracer.c says why it must be
 * that same thread).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "common/procfs.h"
#include "log.h"
#include "pace.h"
#include "ptrace_calls.h"
#include "target_memory.h"
#include "remote_stop.h"
#include "tracer.h"

/*
 * The thread exited under us: nothing left to restore or release. Said once.
 * After a signal that kills by default was forwarded to it, or when its
 * exit status says so, the process was killed: a failure, not an exit.
 */
int ra_remote_gone(struct ra_remote *r, const char *when)
{
	const char *abbrev;

	if (!r->killed_sig && r->fatal_sig)
		r->killed_sig = r->fatal_sig;
	abbrev = r->killed_sig ? sigabbrev_np(r->killed_sig) : NULL;
	if (!r->gone && r->killed_sig)
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR, "process %d was killed by SIG%s %s",
			   r->pid, abbrev ? abbrev : "?", when);
	else if (!r->gone)
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
			   "process %d exited %s", r->pid, when);
	r->gone = true;
	r->seized = false;
	r->unstopped = false;
	return -ESRCH;
}

int ra_remote_ended(struct ra_remote *r, int status, const char *when)
{
	if (WIFSIGNALED(status))
		r->killed_sig = WTERMSIG(status);
	return ra_remote_gone(r, when);
}

void ra_remote_read_current(struct ra_remote *r)
{
	struct ra_err ignore = {0};
	char buf[RA_AGENT_CURRENT_MAX];

	if (!r->current_addr || ra_mem_read(r->pid, r->current_addr, buf, sizeof(buf), &ignore))
		return;
	buf[sizeof(buf) - 1] = '\0';
	if (buf[0])
		memcpy(r->current, buf, sizeof(buf));
}

/*
 * While a call runs, what our agent says it runs (RA_AGENT_CURRENT), at
 * most every millisecond: a tool that crashes on a thread we do not trace
 * (a starter thread) takes the process with it before we could look.
 */
void ra_remote_watch_current(struct ra_remote *r, uint64_t *next)
{
	uint64_t now;

	if (!r->current_addr)
		return;
	now = ra_monotonic_ns();
	if (now < *next)
		return;
	*next = now + 1000000;
	ra_remote_read_current(r);
}

int ra_remote_wait(struct ra_remote *r, int *status, uint64_t deadline, long max_nap)
{
	uint64_t next_look = 0;
	struct ra_pace p;
	pid_t w;
	int ret;

	ra_pace_begin(&p, max_nap);
	for (;;) {
		w = waitpid(r->tid, status, __WALL | WNOHANG);
		if (w == r->tid) {
			ret = 1;
			break;
		}
		if (w < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (deadline && ra_monotonic_ns() >= deadline) {
			ret = 0;
			break;
		}
		ra_remote_watch_current(r, &next_look);
		ra_pace_wait(&p);
	}
	ra_pace_end(&p);
	return ret;
}

int ra_remote_lost(struct ra_remote *r, long ret)
{
	if (ret == -ESRCH) {
		r->gone = true;
		r->seized = false;
	}
	return (int)ret;
}

/*
 * "state D (uninterruptible sleep), wchan wait_for_vfork_done" of the
 * thread, from /proc/PID/task/TID/{stat,wchan}; what cannot be read is
 * said unknown.
 */
static void thread_state(const struct ra_remote *r, char *buf, size_t len)
{
	char name[64], wchan[64] = "unknown", *text = NULL;
	struct ra_stat st = {.state = '?'};
	size_t n = 0;

	snprintf(name, sizeof(name), "task/%d/stat", r->tid);
	if (!ra_proc_read(RA_PROCFS, r->pid, name, &text, &n) && ra_stat_parse(text, n, &st))
		st.state = '?';
	free(text);
	text = NULL;
	snprintf(name, sizeof(name), "task/%d/wchan", r->tid);
	/* "0" when the kernel will not say (kptr_restrict, or running). */
	if (!ra_proc_read(RA_PROCFS, r->pid, name, &text, &n) && n && strcmp(text, "0"))
		snprintf(wchan, sizeof(wchan), "%.*s", (int)strcspn(text, "\n"), text);
	free(text);
	snprintf(buf, len, "state %c%s, wchan %s", st.state,
		 st.state == 'D' ? " (uninterruptible sleep)" : "", wchan);
}

int ra_remote_interrupt(struct ra_remote *r)
{
	r->interrupt_mono = ra_monotonic_ns();
	return (int)ra_ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL, r->e);
}

/*
 * Wait for the stop that PTRACE_INTERRUPT asked for. A signal may be
 * reported first: it is not ours, so it goes back to the thread.
 */
int ra_remote_interrupt_stop(struct ra_remote *r)
{
	uint64_t deadline = r->interrupt_mono + RA_INTERRUPT_WAIT_NS;
	int status, ret;

	for (;;) {
		ret = ra_remote_wait(r, &status, deadline, 1000000);
		if (ret == 0) {
			thread_state(r, r->state, sizeof(r->state));
			r->unstopped = true;
			ra_err_set(r->e, ROCATTACH_STATUS_ERROR_PTRACE_ERROR,
				   "thread %d of process %d did not stop within %.1f s of "
				   "PTRACE_INTERRUPT (%s)",
				   r->tid, r->pid, (double)RA_INTERRUPT_WAIT_NS / 1e9, r->state);
			return -ETIMEDOUT;
		}
		if (ret < 0)
			return ra_remote_gone(r, "while being stopped");
		if (!WIFSTOPPED(status))
			return ra_remote_ended(r, status, "while being stopped");
		if (status >> 16 == PTRACE_EVENT_STOP)
			return 0;
		if (status >> 16 == 0 && WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			r->signals_forwarded++;
			ret =
			    ra_remote_lost(r, ra_ptrace(PTRACE_CONT, r->tid, NULL,
							(void *)(uintptr_t)WSTOPSIG(status), r->e));
			if (ret)
				return ret;
		}
	}
}

/*
 * Until deadline, wait for the thread to stop at all, to let it go there:
 * 1 with the signal to detach with in *sig (a signal-delivery stop's;
 * none at the interrupt or a group stop), 0 not stopped yet, -ESRCH gone
 * (said). A thread it created meanwhile (PTRACE_O_TRACECLONE) is traced
 * from birth: our tracer thread keeps it until its first stop.
 */
static int await_stop(struct ra_remote *r, uint64_t deadline, int *sig, const char *when)
{
	unsigned long msg = 0;
	int status, ret;

	*sig = 0;
	ret = ra_remote_wait(r, &status, deadline, 1000000);
	if (ret <= 0)
		return ret < 0 ? ra_remote_gone(r, when) : 0;
	if (!WIFSTOPPED(status))
		return ra_remote_ended(r, status, when);
	if (status >> 16 == PTRACE_EVENT_CLONE &&
	    !ra_ptrace(PTRACE_GETEVENTMSG, r->tid, NULL, &msg, r->e) && msg)
		ra_tracer_keep(r->pid, (pid_t)msg, ra_monotonic_ns());
	if (status >> 16 == 0 && WSTOPSIG(status) != (SIGTRAP | 0x80))
		*sig = WSTOPSIG(status);
	return 1;
}

/*
 * The call outlived its deadline: leave the thread to finish it. It will
 * return to the park and sleep there for good (a pending RA_PARK_SIG is
 * discarded there, as when we die), so neither its registers nor the code
 * are put back: that would pull it out of the tool's code. It is stopped
 * only to be let go untraced; a signal met on the way goes with it. If it
 * does not stop (an uninterruptible sleep in the tool), the release keeps
 * it: the deadline is past.
 */
int ra_remote_abandon(struct ra_remote *r)
{
	double after = (double)r->timeout_ns / 1e9;
	int sig = 0, ret;

	ra_remote_read_current(r);
	r->timed_out = true;
	r->code_written = false;
	r->saved_ok = false;
	ret = ra_remote_lost(r, ra_remote_interrupt(r));
	if (!ret)
		ret = await_stop(r, r->interrupt_mono + RA_INTERRUPT_WAIT_NS, &sig,
				 "during a remote call");
	if (ret == 0) {
		thread_state(r, r->state, sizeof(r->state));
		r->unstopped = true;
		r->stop_by = 0;
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR,
			   "process %d: a remote call did not return within %.1f s, and thread %d "
			   "did not stop within %.1f s of PTRACE_INTERRUPT (%s)",
			   r->pid, after, r->tid, (double)RA_INTERRUPT_WAIT_NS / 1e9, r->state);
		return -ETIMEDOUT;
	}
	if (ret == 1)
		ret = ra_remote_lost(
		    r, ra_ptrace(PTRACE_DETACH, r->tid, NULL, (void *)(uintptr_t)sig, r->e));
	if (ret)
		return r->gone ? ra_remote_gone(r, "during a remote call") : ret;
	r->seized = false;
	r->parked = false;
	ra_err_set(r->e, ROCATTACH_STATUS_ERROR,
		   "process %d: a remote call did not return within %.1f s: thread %d was left "
		   "running it, released",
		   r->pid, after, r->tid);
	return -ETIMEDOUT;
}

/*
 * No stop was seen after our interrupt: wait for it until r->stop_by (the
 * operation's deadline), and detach there; past it, our tracer thread
 * keeps the thread (r->kept) and detaches it when it stops. Nothing is put
 * back: its registers were never changed, or its pc may be in the
 * trampoline (the code stays, as when we die: harmless).
 */
static int release_unstopped(struct ra_remote *r)
{
	uint64_t now = ra_monotonic_ns();
	char state[128];
	int sig, ret;

	r->code_written = false;
	/* A deadline already past: one look, no wait. */
	ret = await_stop(r, r->stop_by > now ? r->stop_by : 1, &sig,
			 "before its thread was released");
	if (ret < 0)
		return ret;
	r->unstopped = false;
	r->parked = false;
	if (ret == 1) {
		ret = ra_remote_lost(
		    r, ra_ptrace(PTRACE_DETACH, r->tid, NULL, (void *)(uintptr_t)sig, r->e));
		if (ret)
			return r->gone ? ra_remote_gone(r, "before its thread was released") : ret;
		r->seized = false;
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR_PTRACE_ERROR,
			   "thread %d stopped %.1f s after PTRACE_INTERRUPT and was released",
			   r->tid, (double)(ra_monotonic_ns() - r->interrupt_mono) / 1e9);
		return 0;
	}
	thread_state(r, state, sizeof(state));
	r->seized = false;
	r->kept = true;
	if (ra_tracer_keep(r->pid, r->tid, r->interrupt_mono))
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR_PTRACE_ERROR,
			   "thread %d is still traced (%s): this library keeps it and releases "
			   "it when it stops",
			   r->tid, state);
	else
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR_PTRACE_ERROR,
			   "thread %d is still traced (%s), by the calling thread, until that "
			   "thread exits",
			   r->tid, state);
	return -EBUSY;
}

/*
 * Put back the code and every register, and let the thread go. A step that
 * fails does not keep the next from being taken (a thread whose code could
 * not be put back still gets its registers back and is released); only a
 * thread found gone has nothing left to restore. Each failure is recorded
 * after whatever failed before.
 */
int ra_remote_release(struct ra_remote *r)
{
	static const char *const step[] = {"restoring the registers", "restoring the code",
					   "releasing"};
	const struct ra_tramp *t = ra_arch_tramp();
	struct ra_err why[3] = {{0}};
	struct ra_regs regs = r->saved;
	int err[3] = {0}, ret = 0;

	if (!r->seized)
		return r->gone ? -ESRCH : r->kept ? -EBUSY : 0;
	if (r->unstopped)
		return release_unstopped(r);
	/*
	 * Registers first, then the code. Every stop we leave from is an
	 * interrupt stop, like the first one: with the saved registers back, the
	 * kernel restarts an interrupted syscall itself on the way out (the
	 * park's own pause() is forgotten with them). While its pc is in the
	 * trampoline (parked), the code must stay: were we killed between the
	 * two steps in the other order, the kernel would let the thread go at
	 * the park with the program's own bytes back under its pc, and restart
	 * the park's syscall into them (the target died of SIGSEGV). In this
	 * order, a death between the steps leaves the trampoline at AT_ENTRY,
	 * code that never runs again. Registers that could not be put back
	 * leave the code too: the thread then sleeps in the park, unharmed.
	 */
	if (r->saved_ok)
		err[0] = ra_setregs(r->tid, &regs, &why[0]);
	if (r->code_written && !err[0])
		err[1] = ra_mem_write_code(r->pid, r->tramp, r->orig_code, t->len, &why[1]);
	r->code_written = false;
	if (err[0] != -ESRCH && err[1] != -ESRCH)
		err[2] = (int)ra_ptrace(PTRACE_DETACH, r->tid, NULL, NULL, &why[2]);
	r->seized = false;
	r->parked = false;
	for (int i = 0; i < 3; i++) {
		if (err[i] == -ESRCH)
			ra_remote_gone(r, "before its thread was released");
		else if (err[i])
			ra_err_set(r->e, why[i].status, "%s of thread %d failed: %s", step[i],
				   r->tid, why[i].msg);
		ret = ret ? ret : err[i];
	}
	return ret;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "log.h"
#include "common/procfs.h"
#include "pace.h"
#include "ptrace_calls.h"
#include "target_memory.h"
#include "remote.h"
#include "remote_stop.h"

#define STACK_GAP 256		   /* below the saved sp: more than any red zone */
#define STACK_PUSH_MAX (64 * 1024) /* larger payloads go to a remote mmap */
#define STACK_KEEP (256 * 1024)	   /* stack left to the remote code below the data */

/* Does sig end a process by default (the signals a fault raises, and abort)? */
static bool kills(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGABRT || sig == SIGSYS || sig == SIGTRAP;
}

static int save_and_write_code(struct ra_remote *r)
{
	const struct ra_tramp *t = ra_arch_tramp();
	int ret;

	ret = ra_getregs(r->tid, &r->saved, r->e);
	if (ret)
		return ret;
	r->saved_ok = true;
	if (r->code_written)
		return 0; /* adopted: the code is in place already */
	ret = ra_mem_read(r->pid, r->tramp, r->orig_code, t->len, r->e);
	if (ret)
		return ret;
	ret = ra_mem_write_code(r->pid, r->tramp, t->code, t->len, r->e);
	if (ret)
		return ret;
	r->code_written = true;
	return 0;
}

/* The driven thread's signal masks (/proc/PID/task/TID/status): 0, or -1. */
static int thread_sigs(const struct ra_remote *r, struct ra_status *st)
{
	char task[64];

	snprintf(task, sizeof(task), "%s/%d/task", RA_PROCFS, r->pid);
	return ra_status_read(task, r->tid, st) || !st->sigs_known ? -1 : 0;
}

/*
 * Can the kernel tell us of the park? Only if the thread blocks RA_PARK_SIG
 * (so it waits, pending, through the remote code, and a leftover one is
 * harmless) and the process leaves it at its default, ignore (so if we die
 * with it pending, the park discards it). Read while the thread is stopped.
 * ROCATTACH_PARK=watch forces the watching way (benchmarks, tests).
 */
static bool sigpark_usable(const struct ra_remote *r)
{
	const uint64_t bit = 1ull << (RA_PARK_SIG - 1);
	const char *how = getenv("ROCATTACH_PARK");
	struct ra_status st;

	if (how && !strcmp(how, "watch"))
		return false;
	if (thread_sigs(r, &st))
		return false;
	return (st.sig_blocked & bit) && !(st.sig_ignored & bit) && !(st.sig_caught & bit);
}

/*
 * The park's mask goes below the saved stack pointer and its red zone, and
 * every remote frame below it: it stays put for the whole operation. With
 * the signal way it lets RA_PARK_SIG alone through; else it blocks all.
 */
static int place_park_mask(struct ra_remote *r)
{
	uint64_t mask = ~0ull, at = ((ra_arch_sp(&r->saved) - STACK_GAP) & ~(uint64_t)15) - 32;
	int ret;

	r->sigpark = sigpark_usable(r);
	if (r->sigpark)
		mask &= ~(1ull << (RA_PARK_SIG - 1));
	ret = ra_mem_write(r->pid, at, &mask, sizeof(mask), r->e);
	if (ret)
		return ret;
	r->park_mask = at;
	r->scratch = at + 16;
	r->sp = at;
	return 0;
}

int ra_remote_begin(struct ra_remote *r, pid_t pid, pid_t tid, uint64_t tramp, struct ra_err *e)
{
	return ra_remote_begin_timed(r, pid, tid, tramp, 0, RA_CALL_TIMEOUT_NS, e);
}

int ra_remote_begin_opts(struct ra_remote *r, pid_t pid, pid_t tid, uint64_t tramp,
			 unsigned long options, struct ra_err *e)
{
	return ra_remote_begin_timed(r, pid, tid, tramp, options, RA_CALL_TIMEOUT_NS, e);
}

int ra_remote_begin_timed(struct ra_remote *r, pid_t pid, pid_t tid, uint64_t tramp,
			  unsigned long options, uint64_t timeout_ns, struct ra_err *e)
{
	long ret;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->tramp = tramp;
	r->e = e;
	r->timeout_ns = timeout_ns;
	/* A thread slow to stop is waited for until then (see release_unstopped). */
	r->stop_by = timeout_ns ? ra_monotonic_ns() + timeout_ns : 0;
	ret = ra_ptrace_seize(pid, tid, options, e);
	if (ret)
		return (int)ret;
	r->seized = true;
	ret = ra_remote_interrupt(r);
	if (!ret)
		ret = ra_remote_interrupt_stop(r);
	if (!ret)
		ret = save_and_write_code(r);
	if (!ret)
		ret = place_park_mask(r);
	if (ret)
		ra_remote_release(r); /* its own failures are recorded after ret's */
	return (int)ret;
}

void ra_remote_adopt(struct ra_remote *n, struct ra_remote *r)
{
	memset(n, 0, sizeof(*n));
	n->pid = r->pid;
	n->tid = r->clone_tid;
	n->tramp = r->tramp;
	n->e = r->e;
	n->timeout_ns = r->timeout_ns;
	/* Traced since its creation: ours to release, whatever happens. */
	n->seized = n->tid > 0;
	memcpy(n->orig_code, r->orig_code, sizeof(n->orig_code));
	n->code_written = r->code_written && n->seized;
	if (n->code_written)
		r->code_written = false;
}

int ra_remote_adopted(struct ra_remote *n)
{
	int ret;

	if (!n->seized)
		return ra_err_set(n->e, ROCATTACH_STATUS_ERROR,
				  "process %d: no new thread to adopt", n->pid);
	/* Its first stop, before its first instruction (owed like an interrupt's). */
	n->interrupt_mono = ra_monotonic_ns();
	n->stop_by = n->timeout_ns ? n->interrupt_mono + n->timeout_ns : 0;
	ret = ra_remote_interrupt_stop(n);
	/* It inherited its creator's options: threads it creates are not ours. */
	if (!ret)
		ret = (int)ra_ptrace(PTRACE_SETOPTIONS, n->tid, NULL, NULL, n->e);
	if (!ret)
		ret = save_and_write_code(n);
	if (!ret)
		ret = place_park_mask(n);
	if (ret)
		ra_remote_release(n); /* its own failures are recorded after ret's */
	return ret;
}

/*
 * Is the thread sitting in the trampoline's park syscall? /proc/PID/task/TID/syscall
 * reads "running", or "NR ARG0..ARG5 SP PC" for a thread blocked in a syscall.
 * 1 parked, 0 not (yet), -ESRCH gone.
 */
int ra_remote_parked_at(pid_t pid, pid_t tid, uint64_t tramp)
{
	const struct ra_tramp *t = ra_arch_tramp();
	unsigned long long pc;
	char path[64], buf[256];
	ssize_t n;
	long nr;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	if (sscanf(buf, "%ld %*s %*s %*s %*s %*s %*s %*s %llx", &nr, &pc) != 2)
		return 0;
	return nr == t->park_nr && pc == tramp + t->park_pc_off;
}

static int parked_now(struct ra_remote *r)
{
	return ra_remote_parked_at(r->pid, r->tid, r->tramp);
}

/* A stop reported while the remote code runs: pass signals on, let it go on. */
static int pass_stop(struct ra_remote *r, int status)
{
	int sig = 0;

	if (!WIFSTOPPED(status))
		return ra_remote_ended(r, status, "during a remote call");
	if (status >> 16 == 0) {
		sig = WSTOPSIG(status);
		r->signals_forwarded++;
		/* It may kill the process: learn now, while it lives, what ran. */
		if (kills(sig)) {
			r->fatal_sig = sig;
			ra_remote_read_current(r);
		}
		ra_debug("pid %d: forwarding signal %d to thread %d", r->pid, sig, r->tid);
	}
	if (status >> 16 == PTRACE_EVENT_CLONE) {
		unsigned long msg = 0;
		long ret = ra_ptrace(PTRACE_GETEVENTMSG, r->tid, NULL, &msg, r->e);

		if (ret)
			return ra_remote_lost(r, ret);
		r->clone_tid = (pid_t)msg;
	}
	/* PTRACE_EVENT_STOP (group stop, late interrupt), a clone: just go on. */
	return ra_remote_lost(r,
			      ra_ptrace(PTRACE_CONT, r->tid, NULL, (void *)(uintptr_t)sig, r->e));
}

/*
 * A timed call sleeps in the target until wake_ns (its CLOCK_REALTIME):
 * nothing to watch before. We wait on CLOCK_MONOTONIC, in naps of at most
 * WAKE_NAP_NS that look whether it parked already: if our wall clock was
 * stepped back, the target's own clock wakes it in time and we follow at
 * once, not seconds later. A stop reported meanwhile (a signal) waits for
 * the watch that follows.
 */
#define WAKE_NAP_NS 10000000ull
static void sleep_to_wake(struct ra_remote *r)
{
	uint64_t until = ra_monotonic_of_realtime(r->wake_ns), now;

	while ((now = ra_monotonic_ns()) < until) {
		ra_sleep_until_monotonic(until - now > WAKE_NAP_NS ? now + WAKE_NAP_NS : until);
		if (parked_now(r))
			break;
	}
}

/* Start the remote code (stopped at its first instruction with its registers set). */
static int start(struct ra_remote *r)
{
	int ret;

	r->parked = false;
	r->call_end_ns = 0;
	r->call_start_ns = ra_realtime_ns();
	r->call_start_mono = ra_monotonic_ns();
	ret = (int)ra_ptrace(PTRACE_CONT, r->tid, NULL, NULL, r->e);
	if (!ret && r->wake_ns > r->call_start_ns) {
		sleep_to_wake(r);
		r->call_start_ns = r->wake_ns;
		r->call_start_mono = ra_monotonic_ns();
	}
	return ret;
}

/*
 * When the running call is late (CLOCK_MONOTONIC): timeout_ns after its
 * start, or after not_before_ns (turned into CLOCK_MONOTONIC here, once).
 */
static uint64_t call_deadline(const struct ra_remote *r)
{
	uint64_t nb = r->not_before_ns ? ra_monotonic_of_realtime(r->not_before_ns) : 0;
	uint64_t from = r->call_start_mono > nb ? r->call_start_mono : nb;

	return r->timeout_ns ? from + r->timeout_ns : 0;
}

/*
 * Watch for the park, yielding then backing off from 20 us to 2 ms between
 * looks (to RA_TIGHT_NAP_NS when r->tight; see ra_pace), then stop the thread in it with
 * PTRACE_INTERRUPT. The way when the kernel cannot tell us (!r->sigpark).
 */
static int watch_park(struct ra_remote *r)
{
	long max_nap = r->tight ? RA_TIGHT_NAP_NS : 2000000;
	uint64_t deadline = call_deadline(r), next_look = 0;
	struct ra_pace p;
	/* why: 1 the thread is gone, 2 the deadline passed; 0 with ret: parked, or failed. */
	int status, ret = 0, why = 0;
	pid_t w;

	ra_pace_begin(&p, max_nap);
	while (!ret && !why) {
		w = waitpid(r->tid, &status, __WALL | WNOHANG);
		if (w == r->tid) {
			ret = pass_stop(r, status);
			continue;
		}
		if (w < 0 && errno != EINTR) {
			why = 1;
			break;
		}
		ret = parked_now(r);
		if (ret == -ESRCH)
			why = 1;
		if (ret)
			break;
		if (deadline && ra_monotonic_ns() >= deadline) {
			why = 2;
		} else {
			/* A tool may crash on a thread we do not trace: know what ran first. */
			ra_remote_watch_current(r, &next_look);
			ra_pace_wait(&p);
		}
	}
	ra_pace_end(&p);
	if (why == 1)
		return ra_remote_gone(r, "during a remote call");
	if (why == 2)
		return ra_remote_abandon(r);
	if (ret < 0)
		return ret;
	r->call_end_ns = ra_realtime_ns();
	r->stop_by = deadline;
	ret = ra_remote_interrupt(r);
	if (!ret)
		ret = ra_remote_interrupt_stop(r);
	r->parked = !ret;
	return ret;
}

static int send_park_sig(const struct ra_remote *r)
{
	return (int)syscall(SYS_tgkill, r->pid, r->tid, RA_PARK_SIG);
}

/*
 * Our signal came before any of the code ran (the pc is still the code's
 * first): the thread left the previous park's stop still under the park's
 * mask, which lets the signal through. The kernel puts the thread's own mask
 * back only once no signal is left to deliver, so a signal sent at once
 * would come early again. Discard this one, let the thread go on, and send
 * it again once the thread's own mask is back (it blocks the signal: the
 * signal then waits for the park) or the thread has parked already.
 * 0: sent; 1: the thread did neither within EARLY_WAIT_NS, watch instead.
 */
#define EARLY_MAX 8
#define EARLY_WAIT_NS 20000000ull

static int left_delivery(const struct ra_remote *r)
{
	const uint64_t bit = 1ull << (RA_PARK_SIG - 1);
	struct ra_status st;

	if (thread_sigs(r, &st))
		return -ESRCH;
	return (st.sig_blocked & bit) ? 1 : parked_now(r);
}

static int resend_park_sig(struct ra_remote *r)
{
	uint64_t until = ra_monotonic_ns() + EARLY_WAIT_NS;
	struct ra_pace p;
	int ret = (int)ra_ptrace(PTRACE_CONT, r->tid, NULL, NULL, r->e);

	if (ret)
		return ret;
	ra_pace_begin(&p, 200000);
	while (!(ret = left_delivery(r)) && ra_monotonic_ns() < until)
		ra_pace_wait(&p);
	ra_pace_end(&p);
	if (ret == -ESRCH)
		return ra_remote_gone(r, "during a remote call");
	if (ret <= 0)
		return 1;
	ra_debug("pid %d: thread %d took signal %d before the code ran: sent again", r->pid, r->tid,
		 RA_PARK_SIG);
	if (send_park_sig(r))
		return errno == ESRCH ? ra_remote_gone(r, "during a remote call") : -errno;
	return 0;
}

/*
 * The kernel tells us: RA_PARK_SIG, sent now, waits blocked through the
 * remote code; the park's rt_sigsuspend lets it through, and its delivery
 * is a signal-delivery stop reported to us, the tracer (no looks at /proc).
 * We leave that stop with no signal: it is discarded. Had we died instead,
 * the park would have discarded it (ignored by default) and slept on. A
 * delivery anywhere else means the remote code let the signal through
 * itself: swallowed, and we watch instead. *regs receives the registers at
 * the park. The wait has the call's deadline: it looks without blocking,
 * backing off as watch_park does.
 */
static int sigpark_wait(struct ra_remote *r, struct ra_regs *regs, bool *have_regs)
{
	long max_nap = r->tight ? RA_TIGHT_NAP_NS : 2000000;
	uint64_t start_pc = ra_arch_pc(regs);
	int status, ret, early = 0;

	if (send_park_sig(r))
		return errno == ESRCH ? ra_remote_gone(r, "during a remote call") : -errno;
	ret = start(r);
	while (!ret) {
		ret = ra_remote_wait(r, &status, call_deadline(r), max_nap);
		if (ret == 0)
			return ra_remote_abandon(r);
		if (ret < 0)
			return ra_remote_gone(r, "during a remote call");
		ret = 0;
		if (!WIFSTOPPED(status))
			return ra_remote_ended(r, status, "during a remote call");
		if (status >> 16 != 0 || WSTOPSIG(status) != RA_PARK_SIG) {
			ret = pass_stop(r, status);
			continue;
		}
		ret = ra_getregs(r->tid, regs, r->e);
		if (ret)
			return ret;
		if (ra_arch_at_park(regs, r->tramp)) {
			r->call_end_ns = ra_realtime_ns();
			r->parked = true;
			*have_regs = true;
			return 0;
		}
		if (ra_arch_pc(regs) == start_pc && early++ < EARLY_MAX) {
			ret = resend_park_sig(r);
			if (ret == 1) {
				r->sigpark = false;
				return watch_park(r);
			}
			continue;
		}
		ra_debug("pid %d: thread %d took signal %d at 0x%llx (trampoline 0x%llx, the code "
			 "began at 0x%llx, %d early), not in the park: watching instead",
			 r->pid, r->tid, RA_PARK_SIG, (unsigned long long)ra_arch_pc(regs),
			 (unsigned long long)r->tramp, (unsigned long long)start_pc, early);
		r->sigpark = false;
		ret = (int)ra_ptrace(PTRACE_CONT, r->tid, NULL, NULL, r->e);
		if (!ret)
			return watch_park(r);
	}
	return ret;
}

static int run_to_park(struct ra_remote *r, struct ra_regs *regs, uint64_t *ret)
{
	bool have_regs = false;
	int err;

	/* Abandoned, not stopped, or gone: its error is said already. */
	if (!r->seized || r->unstopped)
		return r->timed_out || r->unstopped || r->kept ? -ETIMEDOUT : -ESRCH;
	ra_arch_set_park_mask(regs, r->park_mask);
	err = ra_setregs(r->tid, regs, r->e);
	if (!err && r->sigpark)
		err = sigpark_wait(r, regs, &have_regs);
	else if (!err && !(err = start(r)))
		err = watch_park(r);
	if (!err && !have_regs)
		err = ra_getregs(r->tid, regs, r->e);
	if (!err && ret)
		*ret = ra_arch_park_result(regs);
	return err;
}

/* The registers remote code starts from: the saved ones, below what we pushed. */
static const struct ra_regs *base_regs(struct ra_remote *r, struct ra_regs *tmp)
{
	if (!r->sp)
		return &r->saved;
	*tmp = r->saved;
	ra_arch_set_sp(tmp, r->sp);
	return tmp;
}

int ra_remote_syscall(struct ra_remote *r, long nr, const uint64_t *args, int n, uint64_t *ret)
{
	struct ra_regs regs, tmp;

	ra_arch_setup_syscall(&regs, base_regs(r, &tmp), r->tramp, nr, args, n);
	return run_to_park(r, &regs, ret);
}

int ra_remote_call(struct ra_remote *r, uint64_t fn, const uint64_t *args, int n, uint64_t *ret)
{
	struct ra_regs regs, tmp;

	r->wake_ns = 0;
	ra_arch_setup_call(&regs, base_regs(r, &tmp), r->tramp, fn, args, n);
	return run_to_park(r, &regs, ret);
}

int ra_remote_call_at(struct ra_remote *r, uint64_t fn, const uint64_t *args, int n, uint64_t at_ns,
		      uint64_t *ret)
{
	struct timespec ts = ra_timespec_of(at_ns);
	struct ra_regs regs, tmp;
	uint64_t addr;
	int err;

	if (n > 2 || ra_remote_stack_push(r, &ts, sizeof(ts), &addr)) {
		/* No room for the time in the target: wait here, then call. */
		ra_sleep_until_monotonic(ra_monotonic_of_realtime(at_ns));
		return ra_remote_call(r, fn, args, n, ret);
	}
	ra_arch_setup_timed_call(&regs, base_regs(r, &tmp), r->tramp, fn, args, n, addr);
	r->wake_ns = at_ns;
	err = run_to_park(r, &regs, ret);
	r->wake_ns = 0;
	return err;
}

/*
 * Is [at, top) in a private read-write mapping with STACK_KEEP bytes below
 * it? The mapping is read once per thread (r->stack_lo/hi).
 */
static bool stack_room(struct ra_remote *r, uint64_t at, uint64_t top)
{
	struct ra_maps maps = {0};
	const struct ra_map *m;

	if (!r->stack_hi || top > r->stack_hi || top - 1 < r->stack_lo) {
		if (ra_maps_read(RA_PROCFS, r->pid, &maps))
			return false;
		m = ra_maps_find(&maps, top - 1);
		if (m && m->r && m->w && m->p && !m->x) {
			r->stack_lo = m->start;
			r->stack_hi = m->end;
		} else {
			r->stack_lo = r->stack_hi = 0;
		}
		ra_maps_free(&maps);
		if (!r->stack_hi)
			return false;
	}
	return at >= r->stack_lo + STACK_KEEP;
}

int ra_remote_stack_push(struct ra_remote *r, const void *data, size_t len, uint64_t *addr)
{
	uint64_t top = r->sp ? r->sp : ra_arch_sp(&r->saved) - STACK_GAP;
	uint64_t at = (top - len) & ~(uint64_t)15;
	struct ra_err ignore = {0};

	if (len > STACK_PUSH_MAX || top < STACK_KEEP + len || !stack_room(r, at, top))
		return -ENOSPC;
	if (ra_mem_write(r->pid, at, data, len, &ignore))
		return -EIO;
	r->sp = at;
	*addr = at;
	return 0;
}

/* A raw syscall return of the target: -4095..-1 is -errno. */
static int remote_errno(uint64_t ret)
{
	return ret > (uint64_t)-4096 ? (int)-(int64_t)ret : 0;
}

int ra_remote_mmap(struct ra_remote *r, size_t len, uint64_t *addr)
{
	uint64_t a[6] = {0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1,
			 0};
	int ret = ra_remote_syscall(r, SYS_mmap, a, 6, addr);

	if (ret)
		return ret;
	ret = remote_errno(*addr);
	if (ret)
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR, "remote mmap(%zu) in process %d: %s", len,
			   r->pid, strerror(ret));
	return -ret;
}

int ra_remote_munmap(struct ra_remote *r, uint64_t addr, size_t len)
{
	uint64_t a[2] = {addr, len}, res;
	int ret = ra_remote_syscall(r, SYS_munmap, a, 2, &res);

	if (ret)
		return ret;
	ret = remote_errno(res);
	if (ret)
		ra_err_set(r->e, ROCATTACH_STATUS_ERROR,
			   "remote munmap(0x%llx, %zu) in process %d: %s", (unsigned long long)addr,
			   len, r->pid, strerror(ret));
	return -ret;
}

int ra_remote_end(struct ra_remote *r)
{
	return ra_remote_release(r);
}

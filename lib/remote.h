/* SPDX-License-Identifier: MIT */
/*
 * Remote syscalls and calls on one seized thread (see lib/arch/arch.h for
 * the trampoline). Usage:
 *   ra_remote_begin -> ra_remote_syscall / ra_remote_call ... -> ra_remote_end
 * ra_remote_end must be called after a successful begin whatever happened:
 * it puts back the code bytes and every register and releases the thread.
 */
#ifndef RA_REMOTE_H
#define RA_REMOTE_H

#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch/arch.h"
#include "common/protocol.h"
#include "err.h"

struct ra_remote {
	pid_t pid, tid;
	uint64_t tramp; /* where the trampoline is written (AT_ENTRY) */
	uint8_t orig_code[RA_ARCH_TRAMP_MAX];
	struct ra_regs saved; /* registers at the first stop */
	uint64_t sp;	      /* remote code runs below this; 0: below the saved sp */
	bool seized;	      /* we are the tracer */
	bool code_written;    /* trampoline is in place */
	bool parked;	      /* thread sits at the park syscall's entry stop */
	bool gone;	      /* thread or process exited under us */
	/*
	 * The park is reported by the kernel: RA_PARK_SIG, left pending (and
	 * blocked) before each run, is let through by the park's mask only.
	 * false: the park blocks everything and we watch for it.
	 */
	bool sigpark;
	uint64_t park_mask; /* address of the park's signal mask in the target */
	/*
	 * The stack mapping [stack_lo, stack_hi) of the thread, when known: the
	 * caller may set it after begin (a listener's stack never moves) and
	 * keep what stack_push found, to save a read of /proc/PID/maps.
	 */
	uint64_t stack_lo, stack_hi;
	uint64_t scratch; /* RA_SCRATCH bytes in the target for small results */
	bool saved_ok;	  /* saved holds the thread's own registers */
	pid_t clone_tid;  /* a thread it created (PTRACE_O_TRACECLONE), or 0 */
	int signals_forwarded;
	/*
	 * Set by the caller: watch the park closely (looks at most every
	 * RA_TIGHT_NAP_NS instead of backing off to 2 ms), for a call whose end
	 * time is reported.
	 */
	bool tight;
	/* CLOCK_REALTIME of the last call or syscall: released, and seen parked. */
	uint64_t call_start_ns, call_end_ns;
	uint64_t call_start_mono; /* CLOCK_MONOTONIC of its start: its deadline counts from it */
	uint64_t wake_ns;	  /* a timed call: look for the park only from then on */
	/*
	 * The deadline of each remote call or syscall: timeout_ns after it
	 * starts (RA_CALL_TIMEOUT_NS unless the caller sets it; 0: none), or
	 * after not_before_ns when the code waits in the target until then (a
	 * start or stop time our agent keeps itself; CLOCK_REALTIME, turned into
	 * CLOCK_MONOTONIC once per call). A call that outlives it is
	 * abandoned (see ra_remote_abandon in remote_stop.c): timed_out.
	 */
	uint64_t timeout_ns, not_before_ns;
	bool timed_out;
	/*
	 * A PTRACE_INTERRUPT sent at interrupt_mono (CLOCK_MONOTONIC) whose
	 * stop was not seen: the thread runs on, traced (an uninterruptible
	 * sleep). It cannot be detached before it stops: the release waits for
	 * that until stop_by (the operation's deadline; 0: not at all), then
	 * leaves it to our tracer thread (tracer.h), which detaches it when it
	 * stops: kept.
	 */
	bool unstopped, kept;
	uint64_t interrupt_mono, stop_by;
	char state[96]; /* its state then: "state D (uninterruptible sleep), wchan W" */
	int fatal_sig;	/* a signal that kills by default, forwarded to the thread */
	int killed_sig; /* the process was killed by this signal during remote code */
	/* Our agent's RA_AGENT_CURRENT (0: none), and its value read at a fatal signal or deadline.
	 */
	uint64_t current_addr;
	char current[RA_AGENT_CURRENT_MAX];
	struct ra_err *e;
};

#define RA_CALL_TIMEOUT_NS (10ull * 1000000000ull)
/* How long a PTRACE_INTERRUPT may take to stop a thread before we give up on it. */
#define RA_INTERRUPT_WAIT_NS (2ull * 1000000000ull)

#define RA_TIGHT_NAP_NS 100000
/*
 * The park's signal. Its default action is to ignore it, and it is used
 * only on a thread that blocks it and whose process neither catches nor
 * ignores it, so wherever it ends up without a tracer it is discarded.
 */
#define RA_PARK_SIG SIGURG

/*
 * Seize tid of pid, stop it, save its registers and write the trampoline at
 * tramp (its original bytes are saved first). On failure nothing is left:
 * the thread is released and the code untouched.
 */
int ra_remote_begin(struct ra_remote *r, pid_t pid, pid_t tid, uint64_t tramp,
		    struct ra_err *e) RA_MUST_CHECK;

#define RA_SCRATCH 16

/*
 * The same with ptrace options (PTRACE_SEIZE's data). With
 * PTRACE_O_TRACECLONE, a thread the remote code creates is traced from its
 * first instruction on and its tid lands in r->clone_tid.
 */
int ra_remote_begin_opts(struct ra_remote *r, pid_t pid, pid_t tid, uint64_t tramp,
			 unsigned long options, struct ra_err *e) RA_MUST_CHECK;
/*
 * The same with each remote call's deadline (r->timeout_ns; 0: none) set
 * from the start: a thread that does not stop within RA_INTERRUPT_WAIT_NS
 * fails the begin, and is waited for until timeout_ns after the begin to
 * be released; past that it is kept (r->kept, see ra_remote_end).
 */
int ra_remote_begin_timed(struct ra_remote *r, pid_t pid, pid_t tid, uint64_t tramp,
			  unsigned long options, uint64_t timeout_ns,
			  struct ra_err *e) RA_MUST_CHECK;

/*
 * Take over r->clone_tid, stopped before its first instruction, as n: the
 * trampoline passes from r to n (r's end leaves the code for n's end to
 * restore), so r can be released at once, then ra_remote_adopted(n) waits
 * for the new thread's first stop and readies it like a begin. On failure
 * the new thread is released to run on as its creator meant, and the code
 * is restored.
 */
void ra_remote_adopt(struct ra_remote *n, struct ra_remote *r);
int ra_remote_adopted(struct ra_remote *n) RA_MUST_CHECK;

/* nr(args) in the target. *ret is the raw return (-4095..-1 is -errno). */
int ra_remote_syscall(struct ra_remote *r, long nr, const uint64_t *args, int n,
		      uint64_t *ret) RA_MUST_CHECK;

/* fn(args) in the target; signals not caused by us are forwarded to the thread. */
int ra_remote_call(struct ra_remote *r, uint64_t fn, const uint64_t *args, int n,
		   uint64_t *ret) RA_MUST_CHECK;

/*
 * fn(args), n <= 2, begun by the thread itself at at_ns (CLOCK_REALTIME):
 * it sleeps in the target until then (see ra_arch_setup_timed_call), so
 * many targets start together however busy their attachers are; we watch
 * for the park only from at_ns on. call_start_ns is at_ns or later.
 */
int ra_remote_call_at(struct ra_remote *r, uint64_t fn, const uint64_t *args, int n, uint64_t at_ns,
		      uint64_t *ret) RA_MUST_CHECK;

/*
 * Copy len bytes onto the stopped thread's own stack, well below the saved
 * stack pointer and its red zone, and run later remote code below them.
 * *addr is where they are in the target. Nothing to free afterwards, and
 * nothing left behind if we die: the bytes lie in stack the thread is not
 * using. -ENOSPC when len is large or the stack mapping lacks the room (use
 * a remote mmap then).
 */
int ra_remote_stack_push(struct ra_remote *r, const void *data, size_t len,
			 uint64_t *addr) RA_MUST_CHECK;

/*
 * A private anonymous read-write mapping of len bytes in the target, and
 * its removal: 0, or -errno with r->e set (also when the target's own call
 * fails: its errno).
 */
int ra_remote_mmap(struct ra_remote *r, size_t len, uint64_t *addr) RA_MUST_CHECK;
int ra_remote_munmap(struct ra_remote *r, uint64_t addr, size_t len) RA_MUST_CHECK;

/*
 * Is tid of pid sitting in the park of a trampoline at tramp (a call left
 * to run after its deadline has returned)? 1 yes, 0 no, -ESRCH gone.
 */
int ra_remote_parked_at(pid_t pid, pid_t tid, uint64_t tramp);

/*
 * Restore code and registers, PTRACE_DETACH; every step is tried. Safe to
 * call when begin failed. 0, or -errno with each failure recorded in r->e
 * after any earlier one (-ESRCH: the thread is gone). A thread that never
 * answered an interrupt is not detached (the kernel refuses it on a running
 * tracee): waited for until r->stop_by and detached at its stop; else left
 * traced, r->kept, to the calling tracer thread (tracer.h), which releases
 * it when it stops: -EBUSY, and r->e names the thread's state.
 */
int ra_remote_end(struct ra_remote *r) RA_MUST_CHECK;

#endif

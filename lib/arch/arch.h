/* SPDX-License-Identifier: MIT */
/*
 * The per-architecture part of driving a stopped thread: registers, the
 * trampoline code, and syscall-restart rules. One implementation per
 * lib/arch/<arch>/ with the same file names; common code has no #ifdef.
 *
 * The trampoline has no trap instruction. Both remote syscalls and remote
 * calls end in a "park": the result is moved to a register and the thread
 * loops on rt_sigsuspend with a mask the attacher wrote into the target (its
 * address in a register that calls and syscalls keep). The tracer lets the
 * thread run free (PTRACE_CONT) and learns of the park one of two ways (see
 * lib/remote.c): the mask lets through one signal the attacher left pending
 * (blocked until then), whose delivery stop the kernel reports to the
 * tracer; or, when that signal cannot be used, the mask blocks everything,
 * and the tracer recognises the park in /proc/PID/task/TID/syscall and stops
 * it with PTRACE_INTERRUPT. Should the tracer die at any moment, the kernel
 * detaches the thread and it simply stays parked (nothing it does not ignore
 * can wake it): the process never sees a stray SIGTRAP.
 */
#ifndef RA_ARCH_H
#define RA_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch_regs.h" /* struct ra_regs, from lib/arch/<arch>/ */

#define RA_ARCH_TRAMP_MAX 32

struct ra_tramp {
	uint8_t code[RA_ARCH_TRAMP_MAX];
	size_t len;	       /* bytes of code[] to write at the trampoline address */
	size_t syscall_off;    /* start here for a remote syscall */
	size_t call_off;       /* start here for a remote function call */
	size_t timed_call_off; /* start here for a call that first sleeps until a time */
	size_t park_pc_off;    /* instruction pointer while blocked in the park syscall */
	long park_nr;	       /* the park syscall's number */
};

/* This architecture's trampoline. */
const struct ra_tramp *ra_arch_tramp(void);

/* Registers for a remote syscall nr(args[0..n)), n <= 6, from the saved ones. */
void ra_arch_setup_syscall(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp, long nr,
			   const uint64_t *args, int n);
/* Registers for a remote call fn(args[0..n)), n <= 6: stack below the red zone, aligned. */
void ra_arch_setup_call(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp, uint64_t fn,
			const uint64_t *args, int n);
/*
 * Registers for fn(args[0..n)), n <= 2, begun by the thread itself once
 * clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, ts) returns: ts is the
 * address of a struct timespec in the target. The kernel's timer wakes every
 * such thread at the time, with no tracer in the way.
 */
void ra_arch_setup_timed_call(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp,
			      uint64_t fn, const uint64_t *args, int n, uint64_t ts);
/* The result the trampoline left in its register before parking. */
uint64_t ra_arch_park_result(const struct ra_regs *r);
/* Where the park finds its signal mask (an address in the target). */
void ra_arch_set_park_mask(struct ra_regs *r, uint64_t mask);
/* Is a thread stopped with these registers inside the park syscall at tramp? */
bool ra_arch_at_park(const struct ra_regs *r, uint64_t tramp);
uint64_t ra_arch_pc(const struct ra_regs *r);
/* The stack pointer; set it in a register set. */
uint64_t ra_arch_sp(const struct ra_regs *r);
void ra_arch_set_sp(struct ra_regs *r, uint64_t sp);

/* ELF e_machine of code we can call into (EM_X86_64, ...). */
unsigned int ra_arch_elf_machine(void);

/* Register set for PTRACE_GETREGSET / SETREGSET (NT_PRSTATUS). */
void *ra_arch_regs_data(struct ra_regs *r);
size_t ra_arch_regs_size(void);

#endif

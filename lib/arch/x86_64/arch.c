/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "arch/arch.h"

#define X86_EFLAGS_DF 0x400
#define RED_ZONE 128

/*
 *  0: 0f 05           syscall          remote syscall starts here
 *  2: 48 89 c3        mov %rax,%rbx    result -> rbx
 *  5: 48 89 ef        mov %rbp,%rdi    the park's signal mask, in the target (rbp: set
 *  8: 6a 08           push $8            by the attacher, kept by calls and syscalls)
 * 10: 5e              pop %rsi         sigsetsize
 * 11: b8 82 00 00 00  mov $130,%eax    SYS_rt_sigsuspend
 * 16: 0f 05           syscall          park: blocked here, the pc reads 18
 * 18: eb f1           jmp 5            (a handler ran: back to the park)
 * 20: 0f 05           syscall          timed call starts here: clock_nanosleep
 * 22: 4c 89 e7        mov %r12,%rdi    then the call's arguments
 * 25: 4c 89 ee        mov %r13,%rsi
 * 28: ff d3           call *%rbx       remote call starts here
 * 30: eb e2           jmp 2
 * 32 bytes: inside _start (38 bytes in glibc's crt1 on x86-64).
 */
static const struct ra_tramp x86_64_tramp = {
    .code = {0x0f, 0x05, 0x48, 0x89, 0xc3, 0x48, 0x89, 0xef, 0x6a, 0x08, 0x5e,
	     0xb8, 0x82, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xeb, 0xf1, 0x0f, 0x05,
	     0x4c, 0x89, 0xe7, 0x4c, 0x89, 0xee, 0xff, 0xd3, 0xeb, 0xe2},
    .len = 32,
    .syscall_off = 0,
    .call_off = 28,
    .timed_call_off = 20,
    .park_pc_off = 18,
    .park_nr = SYS_rt_sigsuspend,
};

const struct ra_tramp *ra_arch_tramp(void)
{
	return &x86_64_tramp;
}

static void set_args(struct user_regs_struct *u, const uint64_t *a, int n)
{
	unsigned long long *slot[6] = {&u->rdi, &u->rsi, &u->rdx, &u->r10, &u->r8, &u->r9};

	for (int i = 0; i < n && i < 6; i++)
		*slot[i] = a[i];
}

void ra_arch_setup_syscall(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp, long nr,
			   const uint64_t *args, int n)
{
	*r = *saved;
	set_args(&r->r, args, n);
	r->r.rax = (unsigned long long)nr;
	r->r.orig_rax = (unsigned long long)-1; /* not in a syscall: no restart into ours */
	r->r.rip = tramp + x86_64_tramp.syscall_off;
	r->r.rsp = ((saved->r.rsp - RED_ZONE) & ~0xfULL);
}

void ra_arch_setup_call(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp, uint64_t fn,
			const uint64_t *args, int n)
{
	unsigned long long rcx = 0;

	*r = *saved;
	/* The SysV ABI uses rcx for the 4th argument, the syscall ABI r10. */
	if (n > 3)
		rcx = args[3];
	set_args(&r->r, args, n);
	r->r.rcx = rcx;
	r->r.rbx = fn;
	r->r.orig_rax = (unsigned long long)-1;
	r->r.rip = tramp + x86_64_tramp.call_off;
	/* 16-aligned before the call pushes the return address, as the ABI wants. */
	r->r.rsp = ((saved->r.rsp - RED_ZONE) & ~0xfULL);
	r->r.eflags &= ~(unsigned long long)X86_EFLAGS_DF;
}

void ra_arch_setup_timed_call(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp,
			      uint64_t fn, const uint64_t *args, int n, uint64_t ts)
{
	ra_arch_setup_call(r, saved, tramp, fn, NULL, 0);
	r->r.r12 = n > 0 ? args[0] : 0;
	r->r.r13 = n > 1 ? args[1] : 0;
	r->r.rax = SYS_clock_nanosleep;
	r->r.rdi = 0; /* CLOCK_REALTIME */
	r->r.rsi = 1; /* TIMER_ABSTIME */
	r->r.rdx = ts;
	r->r.r10 = 0;
	r->r.rip = tramp + x86_64_tramp.timed_call_off;
}

uint64_t ra_arch_park_result(const struct ra_regs *r)
{
	return r->r.rbx;
}

void ra_arch_set_park_mask(struct ra_regs *r, uint64_t mask)
{
	r->r.rbp = mask;
}

bool ra_arch_at_park(const struct ra_regs *r, uint64_t tramp)
{
	return r->r.rip == tramp + x86_64_tramp.park_pc_off &&
	       r->r.orig_rax == (unsigned long long)x86_64_tramp.park_nr;
}

uint64_t ra_arch_pc(const struct ra_regs *r)
{
	return r->r.rip;
}

uint64_t ra_arch_sp(const struct ra_regs *r)
{
	return r->r.rsp;
}

void ra_arch_set_sp(struct ra_regs *r, uint64_t sp)
{
	r->r.rsp = sp;
}

void *ra_arch_regs_data(struct ra_regs *r)
{
	return &r->r;
}

size_t ra_arch_regs_size(void)
{
	return sizeof(struct user_regs_struct);
}

unsigned int ra_arch_elf_machine(void)
{
	return EM_X86_64;
}

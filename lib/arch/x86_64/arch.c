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
 *  2: 48 89 c7        mov %rax,%rdi    result -> rdi
 *  5: b8 22 00 00 00  mov $34,%eax     SYS_pause
 * 10: 0f 05           syscall          park: blocked here, the pc reads 12
 * 12: eb f7           jmp 5
 * 14: 0f 05           syscall          timed call starts here: clock_nanosleep
 * 16: 4c 89 e7        mov %r12,%rdi    then the call's arguments and function
 * 19: 4c 89 ee        mov %r13,%rsi
 * 22: 48 89 d8        mov %rbx,%rax
 * 25: ff d0           call *%rax       remote call starts here
 * 27: eb e5           jmp 2
 * 29 bytes: well inside _start (38 bytes in glibc's crt1 on x86-64).
 */
static const struct ra_tramp x86_64_tramp = {
	.code = {0x0f, 0x05, 0x48, 0x89, 0xc7, 0xb8, 0x22, 0x00, 0x00, 0x00,
		 0x0f, 0x05, 0xeb, 0xf7, 0x0f, 0x05, 0x4c, 0x89, 0xe7, 0x4c,
		 0x89, 0xee, 0x48, 0x89, 0xd8, 0xff, 0xd0, 0xeb, 0xe5},
	.len = 29,
	.syscall_off = 0,
	.call_off = 25,
	.timed_call_off = 14,
	.park_pc_off = 12,
	.park_nr = SYS_pause,
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

void ra_arch_setup_syscall(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp,
			   long nr, const uint64_t *args, int n)
{
	*r = *saved;
	set_args(&r->r, args, n);
	r->r.rax = (unsigned long long)nr;
	r->r.orig_rax = (unsigned long long)-1; /* not in a syscall: no restart into ours */
	r->r.rip = tramp + x86_64_tramp.syscall_off;
	r->r.rsp = ((saved->r.rsp - RED_ZONE) & ~0xfULL);
}

void ra_arch_setup_call(struct ra_regs *r, const struct ra_regs *saved, uint64_t tramp,
			uint64_t fn, const uint64_t *args, int n)
{
	unsigned long long rcx = 0;

	*r = *saved;
	/* The SysV ABI uses rcx for the 4th argument, the syscall ABI r10. */
	if (n > 3)
		rcx = args[3];
	set_args(&r->r, args, n);
	r->r.rcx = rcx;
	r->r.rax = fn;
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
	r->r.rbx = fn;
	r->r.rax = SYS_clock_nanosleep;
	r->r.rdi = 0; /* CLOCK_REALTIME */
	r->r.rsi = 1; /* TIMER_ABSTIME */
	r->r.rdx = ts;
	r->r.r10 = 0;
	r->r.rip = tramp + x86_64_tramp.timed_call_off;
}

uint64_t ra_arch_park_result(const struct ra_regs *r)
{
	return r->r.rdi;
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

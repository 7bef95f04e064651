/* SPDX-License-Identifier: MIT */
/*
 * The one choke point for ptrace requests: every failure names the request,
 * the tid and the cause, and maps errno to a status (EPERM 5, ESRCH 6,
 * other 4); why a seize was refused (EPERM's causes); registers.
 */
#ifndef RA_PTRACE_CALLS_H
#define RA_PTRACE_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>

#include "arch/arch.h"
#include "err.h"

/* ptrace(req, tid, addr, data); on failure sets e and returns -errno. */
long ra_ptrace(int req, pid_t tid, void *addr, void *data, struct ra_err *e) RA_MUST_CHECK;
/*
 * PTRACE_SEIZE of tid in pid with options, through ra_ptrace; an EPERM is
 * explained (ra_explain_eperm). 0, or -errno with e set.
 */
int ra_ptrace_seize(pid_t pid, pid_t tid, unsigned long options, struct ra_err *e) RA_MUST_CHECK;

/*
 * Why PTRACE_SEIZE of tid in pid failed with EPERM, as a phrase for the
 * message: "process already traced by 998 (gdb)", "owned by uid 1000 and we
 * lack CAP_SYS_PTRACE", "Yama ptrace_scope is 3", "not dumpable", ...
 */
void ra_explain_eperm(pid_t pid, pid_t tid, char *buf, size_t len);
/* Why /proc/PID/root, maps or mem of pid are not accessible (EACCES): other user, not dumpable, ...
 */
void ra_explain_eacces(pid_t pid, char *buf, size_t len);

int ra_getregs(pid_t tid, struct ra_regs *r, struct ra_err *e) RA_MUST_CHECK;
int ra_setregs(pid_t tid, struct ra_regs *r, struct ra_err *e) RA_MUST_CHECK;

#endif

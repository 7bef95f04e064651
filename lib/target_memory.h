/* SPDX-License-Identifier: MIT */
/* A target's memory: process_vm_readv/writev, or /proc/PID/mem (target_memory.c). */
#ifndef RA_TARGET_MEMORY_H
#define RA_TARGET_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * Bulk memory of a stopped or running target: process_vm_writev/readv, its
 * errno sorted as strace's umoven does: ENOSYS and EPERM fall back to
 * /proc/PID/mem; ESRCH is a gone target (-ESRCH, status
 * PTRACE_PROCESS_NOT_FOUND); EFAULT and EIO an address not mapped or not
 * accessible (that errno, no fallback); a partial transfer fails (-EIO,
 * "short read"). The message names the first way's cause, and the
 * fallback's when that failed too. ra_mem_write_code writes through
 * /proc/PID/mem alone (which may write read-only text, like POKETEXT) and
 * needs the caller to be the tracer. 0, or -errno with e set.
 */
int ra_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len,
		 struct ra_err *e) RA_MUST_CHECK;
int ra_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len, struct ra_err *e) RA_MUST_CHECK;
int ra_mem_write_code(pid_t pid, uint64_t addr, const void *buf, size_t len,
		      struct ra_err *e) RA_MUST_CHECK;

#endif

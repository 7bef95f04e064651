/* SPDX-License-Identifier: MIT */
/*
 * An attacher's liveness, as the target-side watchdogs watch it (our agent's
 * and librocattach-watchdog's): a process named by its pid and its start
 * time (clock ticks since boot, /proc/PID/stat field 22), watched with a
 * pidfd, else by polling /proc. libc only.
 */
#ifndef RA_COMMON_OWNER_H
#define RA_COMMON_OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RA_OWNER_POLL_MS 250 /* liveness poll where pidfd_open is missing (Linux < 5.3) */

/*
 * 1: pid runs and started at start; 0: it is gone, a zombie, or another
 * process now has its pid; -1: cannot tell (no /proc in our root).
 */
int ra_owner_alive_proc(pid_t pid, unsigned long long start);
/* The same, falling back to kill(pid, 0) when /proc cannot tell. */
bool ra_owner_alive(pid_t pid, unsigned long long start);
/*
 * A pidfd on pid, or -1 (no pidfd_open: poll /proc). *dead: pid is gone
 * already, or is another process than the one started at start.
 */
int ra_owner_open(pid_t pid, unsigned long long start, bool *dead);
/*
 * Wait until the owner (pid 0: nobody; fd from ra_owner_open, dead as it
 * said) ends: 1, or until the eventfd wake is readable (drained): 0, or
 * until end (CLOCK_MONOTONIC ns; 0: none) has come: 2, or an error: -1.
 */
int ra_owner_wait(int wake, pid_t pid, unsigned long long start, int fd, bool dead, uint64_t end);

#endif

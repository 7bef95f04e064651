/* SPDX-License-Identifier: MIT */
/*
 * The agent's rooms (libc only: it lives in someone else's process), each
 * with its own header; all hidden symbols:
 *   agent_base.c      the lock, debug lines, the call's error and notes
 *   agent.c           the entry points: attach, detach (at a time), their
 *                     arguments, starter threads, messages
 *   agent_args.c      the pointer arguments, copied from memory we may
 *                     read (no /proc/self/maps parse on 6.11 and later)
 *   agent_env.c       the environment buffer: read once, applied to
 *                     environ (a reattach's checks its variables in place),
 *                     undone when the attach fails
 *   agent_tools.c     the tool lifecycle: load, configure, initialize,
 *                     hand over and back, finalize
 *   agent_watchdog.c  the attacher's liveness (ROCP_ATTACH_OWNER), the
 *                     window's own end (ROCP_ATTACH_END_NS), the watchdog
 *                     thread, one attacher per window
 *   agent_listener.c  the rocp-bg-attach listener: started at load or by
 *                     --inject, standing aside for ROCm's, gone in a fork
 */
#ifndef RA_AGENT_H
#define RA_AGENT_H

/* Under agent_lock: tool_detach now (the watchdog's, for a dead attacher). */
int detach_locked(void);

#endif

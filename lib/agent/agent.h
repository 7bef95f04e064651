/* SPDX-License-Identifier: MIT */
/*
 * The agent's rooms (libc only: it lives in someone else's process) and
 * what they share, all hidden symbols:
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

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RA_EXPORT __attribute__((visibility("default")))
#define RA_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* agent.c */
/* Every entry point runs under it; a tool calling back from inside one is refused. */
extern pthread_mutex_t agent_lock;
extern bool agent_attached; /* the window is open (under agent_lock) */
/* "This thread is in one of our calls" (it holds agent_lock, or is a starter). */
void in_agent_set(bool yes);
bool in_agent(void);
/* One line on stderr, only under ROCP_AGENT_DEBUG=1. */
void dbg(const char *fmt, ...) RA_PRINTF(1, 2);
/* The current call's message (rocattach_agent_last_error); returns code. */
int fail(int code, const char *fmt, ...) RA_PRINTF(2, 3);
/* Why one library cannot attach, for the "no tool can attach" message. */
void note(const char *lib, const char *why);
/* Name the calling thread. */
void thread_name(const char *name);
/* Under agent_lock: tool_detach now (the watchdog's, for a dead attacher). */
int detach_locked(void);

/* agent_args.c */
/*
 * Copy the string at s up to its NUL (*out malloc'd): 0, -EFAULT if it is
 * not a string in memory we may read, -ENOMEM.
 */
int arg_copy_string(const char *s, char **out);
/*
 * Copy the environment buffer at env up to its last pair, or as far as we
 * may read (env_scan then finds it malformed): 0, -EFAULT if not one byte
 * may be read, -ENOMEM.
 */
int arg_copy_envbuf(const char *env, char **out, size_t *len);
/* After the copies of one call: closes what they kept open (one maps fd). */
void arg_copy_end(void);

/* agent_env.c */
/* A checked environment buffer: our private variables, and the pairs the tools see. */
struct env_scan {
	const char *owner, *start, *end; /* values of ROCP_ATTACH_OWNER, _START_NS, _END_NS */
	const char **pair;		 /* [2k] name, [2k+1] value, pointing into the buffer */
	size_t n, cap;
};
/* What an attach changed in environ, to undo it if the attach fails. */
struct env_undo {
	struct env_prev *v;
	size_t n, cap;
};
/* Check the buffer (len readable bytes) and read it: 0, -EINVAL if malformed, -ENOMEM. */
int env_scan(const char *env, size_t len, struct env_scan *sc);
void env_scan_free(struct env_scan *sc);
/* Under agent_lock: set every pair that has not its value yet (the code, fail() set). */
int env_apply(const struct env_scan *sc, struct env_undo *u);
void env_rollback(struct env_undo *u);
void env_undo_free(struct env_undo *u);

/* agent_tools.c */
/*
 * dlopen lib and make a tool of it, once per library; why it cannot attach
 * goes to note(). Returns its enum rocattach_tool_outcome.
 */
int tool_load(const char *lib);
unsigned int tools_usable(void);
/* The window opens (tool_attach of every usable tool) and closes (tool_detach). */
void tools_hand_over(void);
void tools_hand_back(void);
/* CLOCK_REALTIME of the last hand-over [0] and hand-back [1], read by attachers. */
RA_EXPORT extern _Atomic uint64_t rocattach_agent_tool_event_ns[2];

/* agent_watchdog.c */
/* An attacher, as the watchdog watches it. */
struct owner {
	pid_t pid; /* 0: nobody to watch */
	unsigned long long start;
	int fd;	   /* pidfd, or -1: poll /proc */
	bool dead; /* already gone when the attach arrived */
	/* CLOCK_MONOTONIC by which a detach must come (ROCP_ATTACH_END_NS), 0: none. */
	uint64_t end;
};

/*
 * The attacher named by ROCP_ATTACH_OWNER's value v (nobody if NULL), its
 * pidfd opened, and the end by which its detach must come (ROCP_ATTACH_END_NS's
 * value end, NULL: none).
 */
void owner_from_value(const char *v, const char *end, struct owner *o);
void owner_drop(struct owner *o);
/* Under agent_lock: from now on the watchdog watches o (o->pid 0: nobody); takes o's fd. */
void owner_set(struct owner *o);
void owner_clear(void);
/* Under agent_lock: the attacher holding the window, refusing any other while it lives. */
void holder_set(const struct owner *o);
int holder_check(const struct owner *o);
void holder_clear(void);
/*
 * rocattach_agent_window (protocol.h): [0] the number of the last window
 * opened, [1] when the watchdog closed it by itself (its end passed), or 0.
 */
RA_EXPORT extern _Atomic uint64_t rocattach_agent_window[2];
/* Under agent_lock: a window opens (its number moves on). */
void window_opened(void);
/* In a fork child: no watchdog, its descriptors closed. */
void watchdog_atfork_child(void);

/* agent_listener.c */
extern atomic_bool listening; /* set once the listener is parked */
/* Is the calling thread our listener? */
bool on_listener(void);
/* Start the listener once: 0 if it runs (now or already), else -errno. */
int agent_enable(void);

#endif

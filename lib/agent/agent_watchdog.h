/* SPDX-License-Identifier: MIT */
/* The attacher's liveness and the watchdog (agent_watchdog.c). */
#ifndef RA_AGENT_WATCHDOG_H
#define RA_AGENT_WATCHDOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent_base.h"

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
/* Under agent_lock: tool_detach now (the watchdog's, for a dead attacher; agent.c's detach). */
int detach_locked(void);
/* Under agent_lock: the window is closed (its tools handed back): nobody holds it. */
void window_closed(void);
/* In a fork child: no watchdog, its descriptors closed. */
void watchdog_atfork_child(void);

#endif

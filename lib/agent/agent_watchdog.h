/* SPDX-License-Identifier: MIT */
/* The attacher's liveness and the watchdog (agent_watchdog.c). */
#ifndef RA_AGENT_WATCHDOG_H
#define RA_AGENT_WATCHDOG_H

#include <stdbool.h>
#include <sys/types.h>

/* An attacher, as the watchdog watches it. */
struct owner {
	pid_t pid; /* 0: nobody to watch */
	unsigned long long start;
	int fd;	   /* pidfd, or -1: poll /proc */
	bool dead; /* already gone when the attach arrived */
};

/* The attacher named by ROCP_ATTACH_OWNER's value v (nobody if NULL); its pidfd opened. */
void owner_from_value(const char *v, struct owner *o);
void owner_drop(struct owner *o);
/* Under agent_lock: from now on the watchdog watches o (o->pid 0: nobody); takes o's fd. */
void owner_set(struct owner *o);
void owner_clear(void);
/* Under agent_lock: the attacher holding the window, refusing any other while it lives. */
void holder_set(const struct owner *o);
int holder_check(const struct owner *o);
void holder_clear(void);
/* In a fork child: no watchdog, its descriptors closed. */
void watchdog_atfork_child(void);

#endif

/* SPDX-License-Identifier: MIT */
/* The rocp-bg-attach listener (agent_listener.c). */
#ifndef RA_AGENT_LISTENER_H
#define RA_AGENT_LISTENER_H

#include <stdatomic.h>
#include <stdbool.h>

extern atomic_bool listening; /* set once the listener is parked */
/* Is the calling thread our listener? */
bool on_listener(void);
/* Start the listener once: 0 if it runs (now or already), else -errno. */
int agent_enable(void);

#endif

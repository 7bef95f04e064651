/* SPDX-License-Identifier: MIT */
/* The tool lifecycle: load, configure, initialize, hand over and back (agent_tools.c). */
#ifndef RA_AGENT_TOOLS_H
#define RA_AGENT_TOOLS_H

#include <stdatomic.h>
#include <stdint.h>

#include "agent/agent_base.h"

/*
 * dlopen lib and make a tool of it, once per library, and choose it for the
 * window; why it cannot attach goes to note(). Returns its enum
 * rocattach_tool_outcome.
 */
int tool_load(const char *lib);
/* Another tool list: none chosen until tool_load (only while not attached). */
void tools_choose_none(void);
/* How many chosen tools can take the window. */
unsigned int tools_usable(void);
/* The window opens (tool_attach of every usable tool) and closes (tool_detach). */
void tools_hand_over(void);
void tools_hand_back(void);
/* What a starter thread will run ("tool_attach", "tool_detach"), said ahead; NULL clears. */
void tools_current_next(const char *what);
/* CLOCK_REALTIME of the last hand-over [0] and hand-back [1], read by attachers. */
RA_EXPORT extern _Atomic uint64_t rocattach_agent_tool_event_ns[2];

#endif

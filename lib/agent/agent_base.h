/* SPDX-License-Identifier: MIT */
/* What every room of the agent uses (agent_base.c): its lock, its debug lines, the
 * current call's error and notes, thread names. Hidden symbols, libc only. */
#ifndef RA_AGENT_BASE_H
#define RA_AGENT_BASE_H

#include <pthread.h>
#include <stdbool.h>

#define RA_EXPORT __attribute__((visibility("default")))
#define RA_PRINTF(a, b) __attribute__((format(printf, a, b)))

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
/* A new call: its message and notes empty. */
void agent_messages_clear(void);
/* The notes so far ("lib: why; ..."), and the call's message, as buffers. */
const char *agent_notes(void);
char *agent_err_text(size_t *size);
/* Name the calling thread. */
void thread_name(const char *name);

#endif

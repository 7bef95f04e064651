/* SPDX-License-Identifier: MIT */
/*
 * What every room of the agent uses (agent_base.h): the lock every entry
 * point runs under, "this thread is in one of our calls", the debug lines,
 * the current call's message and notes, thread names.
 *
 * Nothing is printed unless ROCP_AGENT_DEBUG=1 (read at each message, so an
 * attacher can switch it on through the environment buffer).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_base.h"

#define ERR_MAX 4096

pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * "This thread is in one of our calls" (it holds agent_lock, or is a starter
 * the holder waits for): a tool calling back from its callback is refused,
 * not deadlocked. A thread-specific value, not a _Thread_local: this library
 * is often dlopen'd (--inject, test programs), where thread-locals are
 * dynamic TLS, which LeakSanitizer's thread walk misreads (a crash at exit).
 */
static pthread_key_t in_agent_key;
static pthread_once_t in_agent_once = PTHREAD_ONCE_INIT;
static bool in_agent_keyed; /* false if the process had no key left: no re-entry check */

static void in_agent_key_create(void)
{
	in_agent_keyed = pthread_key_create(&in_agent_key, NULL) == 0;
}

void in_agent_set(bool yes)
{
	pthread_once(&in_agent_once, in_agent_key_create);
	if (in_agent_keyed)
		pthread_setspecific(in_agent_key, yes ? &in_agent_key : NULL);
}

bool in_agent(void)
{
	pthread_once(&in_agent_once, in_agent_key_create);
	return in_agent_keyed && pthread_getspecific(in_agent_key) != NULL;
}

bool agent_attached;

static char err_text[ERR_MAX];
static char notes[ERR_MAX - 128]; /* leaves room for a prefix in err_text */

static bool debug_on(void)
{
	const char *v = getenv("ROCP_AGENT_DEBUG");

	return v && !strcmp(v, "1");
}

/* One write(2) per message, so lines from several processes do not mix. */
void dbg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n, m;

	if (!debug_on())
		return;
	n = snprintf(line, sizeof(line), "rocattach-agent[%d]: ", (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

int fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_text, sizeof(err_text), fmt, ap);
	va_end(ap);
	dbg("error %d: %s", code, err_text);
	return code;
}

/* Per-library reasons, joined with "; ", for the "no tool can attach" message. */
void note(const char *lib, const char *why)
{
	size_t len = strlen(notes);

	snprintf(notes + len, sizeof(notes) - len, "%s%s: %s", len ? "; " : "", lib, why);
	dbg("%s: %s", lib, why);
}

void agent_messages_clear(void)
{
	err_text[0] = '\0';
	notes[0] = '\0';
}

const char *agent_notes(void)
{
	return notes;
}

char *agent_err_text(size_t *size)
{
	*size = sizeof(err_text);
	return err_text;
}

/*
 * A thread names itself: glibc then uses prctl(PR_SET_NAME). Naming another
 * thread goes through /proc/self/task/TID/comm, which misses in a pid
 * namespace whose /proc is the host's (unshare --pid without --mount-proc):
 * the attacher would find no listener.
 */
void thread_name(const char *name)
{
	pthread_setname_np(pthread_self(), name);
}

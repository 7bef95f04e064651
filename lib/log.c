/* SPDX-License-Identifier: MIT */
/*
 * Messages go to the callback the program installs. Until it installs one
 * (rocattach_set_log_callback, even with NULL), errors and warnings go to
 * stderr, one line each with a "rocattach: <level>: " prefix, as AMD's
 * library does: its front-ends (rocprof-attach) install no callback, and
 * without this a failure would be silent.
 * ROCATTACH_LOG_LEVEL in the environment (none, error, warning, info, debug,
 * trace or 0-4) sets the level of that stderr output; with a callback it can
 * only raise the program's level.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

#define LOG_NONE (-1)
#define LOG_UNSET (-2)

static const char *const level_names[] = {"error", "warning", "info", "debug", "trace"};
#define N_LEVELS (int)(sizeof(level_names) / sizeof(level_names[0]))

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static rocattach_log_fn log_fn;
static void *log_user;
static bool log_set; /* the program chose where messages go */
static int log_level = ROCATTACH_LOG_WARNING;
static int env_level = LOG_UNSET;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env_level(void)
{
	const char *v = getenv("ROCATTACH_LOG_LEVEL");

	if (!v || !*v)
		return;
	if (!strcasecmp(v, "none"))
		env_level = LOG_NONE;
	for (int i = 0; i < N_LEVELS; i++) {
		if (!strcasecmp(v, level_names[i]) || (v[0] == '0' + i && !v[1]))
			env_level = i;
	}
}

void rocattach_set_log_callback(rocattach_log_fn fn, void *user)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_user = user;
	log_set = true;
	pthread_mutex_unlock(&log_lock);
}

void rocattach_set_log_level(int level)
{
	pthread_mutex_lock(&log_lock);
	log_level = level;
	pthread_mutex_unlock(&log_lock);
}

/* Most verbose level that goes anywhere. Under log_lock. */
static int max_level_locked(void)
{
	if (log_set && !log_fn)
		return LOG_NONE;
	if (log_set)
		return log_level > env_level ? log_level : env_level;
	/* stderr: the user's variable decides, else the program's level. */
	return env_level != LOG_UNSET ? env_level : log_level;
}

static int log_enabled(int level)
{
	int max;

	pthread_once(&env_once, read_env_level);
	pthread_mutex_lock(&log_lock);
	max = max_level_locked();
	pthread_mutex_unlock(&log_lock);
	return level <= max;
}

/* One write(2) per line, so lines of concurrent callers (and processes) never mix. */
static void log_to_stderr(int level, const char *msg)
{
	char line[1200];
	int n, saved = errno;

	if (level < 0)
		level = 0;
	if (level >= N_LEVELS)
		level = N_LEVELS - 1;
	n = snprintf(line, sizeof(line), "rocattach: %s: %s", level_names[level], msg);
	if (n < 0)
		goto out;
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	for (int i = 0; i < n; i++)
		if (line[i] == '\n')
			line[i] = ' ';
	line[n++] = '\n';
	while (write(STDERR_FILENO, line, (size_t)n) < 0 && errno == EINTR)
		;
out:
	errno = saved;
}

void ra_log(int level, const char *fmt, ...)
{
	char buf[1024];
	rocattach_log_fn fn;
	void *user;
	bool set;
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	user = log_user;
	set = log_set;
	pthread_mutex_unlock(&log_lock);
	if (fn)
		fn(level, buf, user);
	else if (!set)
		log_to_stderr(level, buf);
}

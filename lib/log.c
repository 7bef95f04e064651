/* SPDX-License-Identifier: MIT */
/*
 * The library never prints: messages go to the callback the program installs.
 * ROCATTACH_LOG_LEVEL in the environment can only raise the level.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static rocattach_log_fn log_fn;
static void *log_user;
static int log_level = ROCATTACH_LOG_WARNING;
static int env_level = -1;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env_level(void)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	const char *v = getenv("ROCATTACH_LOG_LEVEL");

	if (!v || !*v)
		return;
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, names[i]) || (v[0] == '0' + i && !v[1]))
			env_level = i;
	}
}

void rocattach_set_log_callback(rocattach_log_fn fn, void *user)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_user = user;
	pthread_mutex_unlock(&log_lock);
}

void rocattach_set_log_level(int level)
{
	pthread_mutex_lock(&log_lock);
	log_level = level;
	pthread_mutex_unlock(&log_lock);
}

int ra_log_enabled(int level)
{
	int max;

	pthread_once(&env_once, read_env_level);
	pthread_mutex_lock(&log_lock);
	max = log_level > env_level ? log_level : env_level;
	if (!log_fn)
		max = -1;
	pthread_mutex_unlock(&log_lock);
	return level <= max;
}

void ra_log(int level, const char *fmt, ...)
{
	char buf[1024];
	rocattach_log_fn fn;
	void *user;
	va_list ap;

	if (!ra_log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	user = log_user;
	pthread_mutex_unlock(&log_lock);
	if (fn)
		fn(level, buf, user);
}

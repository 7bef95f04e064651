/* SPDX-License-Identifier: MIT */
/*
 * librocattach-late.so: the target side of --late-start. Loaded by a remote
 * dlopen on a loader thread (lib/inject.c), its start function copies what
 * it is given, starts a thread of its own with every signal blocked and
 * returns at once. That thread sets the variables, loads the SDK and the
 * tools, calls rocprofiler_register_invoke_all_registrations in each copy
 * of rocprofiler-register, then asks the SDK whether it initialized: the
 * entry point returns success even when it handed nothing over, so its
 * return value proves nothing. The result lands in rocattach_late_status,
 * read by the attacher. libc only; never unloaded (-z nodelete).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/late.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT struct ra_late_status rocattach_late_status = {.magic = RA_LATE_MAGIC, .initialized = -2};

static pthread_mutex_t begin_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fail(int stage, const char *what, const char *path)
{
	const char *why = dlerror();

	rocattach_late_status.stage = stage;
	snprintf(rocattach_late_status.message, sizeof(rocattach_late_status.message), "%s %s%s%s",
		 what, path, why ? ": " : "", why ? why : "");
	return -1;
}

static void set_vars(const char *buf)
{
	for (const char *s = buf; *s; s += strlen(s) + 1) {
		const char *eq = strchr(s + 1, '=');
		char name[256];
		size_t n;

		if (s[0] != 'E' || !eq || (n = (size_t)(eq - s - 1)) == 0 || n >= sizeof(name))
			continue;
		memcpy(name, s + 1, n);
		name[n] = '\0';
		setenv(name, eq + 1, 1);
	}
}

/* dlopen every string of this kind; the SDK's handle in *sdk. */
static int load(const char *buf, char kind, void **sdk)
{
	for (const char *s = buf; *s; s += strlen(s) + 1) {
		void *h;

		if (s[0] != kind)
			continue;
		h = dlopen(s + 1, RTLD_NOW | RTLD_GLOBAL);
		if (!h)
			return fail(kind == 'S' ? RA_LATE_STAGE_SDK : RA_LATE_STAGE_TOOL, "dlopen",
				    s + 1);
		if (kind == 'S')
			*sdk = h;
	}
	return 0;
}

typedef int (*invoke_fn)(void);

/* Each copy, by its path, as it is loaded already (RTLD_NOLOAD): never a new copy. */
static int invoke_copies(const char *buf)
{
	struct ra_late_status *st = &rocattach_late_status;

	for (const char *s = buf; *s; s += strlen(s) + 1) {
		invoke_fn fn;
		void *h;

		if (s[0] != 'R' || st->copies >= RA_LATE_COPIES_MAX)
			continue;
		h = dlopen(s + 1, RTLD_NOW | RTLD_NOLOAD);
		fn = h ? (invoke_fn)(uintptr_t)dlsym(h, RA_LATE_INVOKE) : NULL;
		if (!fn)
			return fail(RA_LATE_STAGE_COPY, "no " RA_LATE_INVOKE " in", s + 1);
		st->invoke_rc[st->copies] = fn();
		if (st->invoke_rc[st->copies++] != 0 && !st->stage) {
			st->stage = RA_LATE_STAGE_INVOKE;
			snprintf(st->message, sizeof(st->message), "%s in %s returned %d",
				 RA_LATE_INVOKE, s + 1, st->invoke_rc[st->copies - 1]);
		}
	}
	return 0;
}

typedef int (*is_init_fn)(int *);

static void query(void *sdk)
{
	is_init_fn fn = sdk ? (is_init_fn)(uintptr_t)dlsym(sdk, RA_LATE_IS_INITIALIZED) : NULL;
	int status = 0;

	if (!fn) {
		fail(RA_LATE_STAGE_QUERY, "no " RA_LATE_IS_INITIALIZED " in the SDK", "");
		return;
	}
	if (fn(&status) == 0)
		rocattach_late_status.initialized = status;
}

static void *start(void *arg)
{
	char *buf = arg;
	void *sdk = NULL;

	set_vars(buf);
	if (!load(buf, 'S', &sdk) && !load(buf, 'T', &sdk))
		invoke_copies(buf);
	query(sdk);
	free(buf);
	rocattach_late_status.end_ns = now_ns();
	__atomic_store_n(&rocattach_late_status.state, RA_LATE_DONE, __ATOMIC_RELEASE);
	return NULL;
}

/* A thread with every signal blocked, detached; 0 or an errno. */
static int spawn(char *copy)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t th;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &at, start, copy);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		pthread_setname_np(th, "rocattach-late");
	return ret;
}

/*
 * The start: buf (len bytes, see common/late.h) is copied, the thread
 * started. 0; -EALREADY (a start ran in this process already), -EINVAL,
 * -ENOMEM, or pthread_create's error, negated.
 */
EXPORT int rocattach_late_begin(const char *buf, uint64_t len)
{
	char *copy = NULL;
	int ret = 0;

	if (!buf || len < 2 || len > RA_LATE_BUF_MAX || buf[len - 1] || buf[len - 2])
		return -EINVAL;
	pthread_mutex_lock(&begin_lock);
	if (rocattach_late_status.state != RA_LATE_IDLE) {
		ret = -EALREADY;
		goto out;
	}
	copy = malloc(len);
	if (!copy) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(copy, buf, len);
	rocattach_late_status.begin_ns = now_ns();
	rocattach_late_status.state = RA_LATE_RUNNING;
	ret = -spawn(copy);
	if (ret) {
		rocattach_late_status.state = RA_LATE_IDLE;
		free(copy);
	}
out:
	pthread_mutex_unlock(&begin_lock);
	return ret;
}

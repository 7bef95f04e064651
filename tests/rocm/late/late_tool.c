/* SPDX-License-Identifier: MIT */
/*
 * liblate_tool.so: a tool for the late start, linked against the double SDK
 * (DT_NEEDED librocprofiler-sdk.so.1, RUNPATH $ORIGIN/sdk) as a real tool is
 * linked against rocprofiler-sdk. It exports rocprofiler_configure
 * (registration.h's shape, see late_abi.h) and writes what it saw, one line
 * each, to the file named by $LATE_TOOL_LOG (appended; nothing when unset):
 *
 *   configure pid=P version=V runtime=S priority=N
 *   initialize pid=P sdk=M.m.p status=S      (S: rocprofiler_is_initialized)
 *   first-call pid=P function=F ns=T         (once per function; T: CLOCK_REALTIME)
 *   finalize pid=P calls=N
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "late_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* The double SDK's calls, resolved through DT_NEEDED. */
int rocprofiler_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch);
int rocprofiler_is_initialized(int *status);
int late_sdk_double_set_api_callback(late_sdk_api_cb cb, void *data);

static const char *const functions[] = {"get_device_count", "mix", "add"};
static atomic_ullong calls;
static atomic_bool first[3];

static void say(const char *fmt, ...)
{
	const char *path = getenv("LATE_TOOL_LOG");
	char line[256];
	va_list ap;
	int fd, n;

	if (!path || !*path)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	(void)!write(fd, line, (size_t)n);
	close(fd);
}

static unsigned long long realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void on_call(const char *function, void *data)
{
	(void)data;
	atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	for (int i = 0; i < 3; i++)
		if (!strcmp(function, functions[i]) && !atomic_exchange(&first[i], true))
			say("first-call pid=%d function=%s ns=%llu", (int)getpid(), function,
			    realtime_ns());
}

static int tool_init(late_sdk_client_fini fini, void *data)
{
	uint32_t major = 0, minor = 0, patch = 0;
	int status = 0;

	(void)fini;
	(void)data;
	rocprofiler_get_version(&major, &minor, &patch);
	rocprofiler_is_initialized(&status);
	say("initialize pid=%d sdk=%u.%u.%u status=%d", (int)getpid(), major, minor, patch, status);
	late_sdk_double_set_api_callback(on_call, NULL);
	return 0;
}

static void tool_fini(void *data)
{
	(void)data;
	late_sdk_double_set_api_callback(NULL, NULL);
	say("finalize pid=%d calls=%llu", (int)getpid(), (unsigned long long)atomic_load(&calls));
}

EXPORT late_sdk_configure_result *rocprofiler_configure(uint32_t version, const char *runtime,
							uint32_t priority, late_sdk_client_id *id)
{
	static late_sdk_configure_result result = {sizeof(result), tool_init, tool_fini, NULL};

	id->name = "late-tool";
	say("configure pid=%d version=%u runtime=%s priority=%u", (int)getpid(), version,
	    runtime ? runtime : "(null)", priority);
	return &result;
}

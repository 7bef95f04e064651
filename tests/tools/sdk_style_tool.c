/* SPDX-License-Identifier: MIT */
/*
 * A tool written the way AMD's rocprofiler-sdk samples write one, in C,
 * against our include/rocattach/tool.h: it keeps a copy of its client id,
 * sets client_id->name, works out major/minor/patch from version and
 * declines an SDK it was not built for, and later finalizes itself with its
 * copy of the id (the fini function). If our types were not the SDK's, the
 * write to name would land elsewhere and the loader would misread it.
 *
 * Built twice (SDK_TOOL_NAME differs) so that a list can hold two of it.
 * Records one line per call in $ROCPROF_OUTPUT_PATH/sdk-tool.<name>.<pid>.log:
 *   <event> [key=value ...]
 * Test knobs, read in rocprofiler_configure:
 *   ROCP_TEST_SDK_DECLINE=<name>  that tool's rocprofiler_configure returns NULL
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rocattach/tool.h>

#ifndef SDK_TOOL_NAME
#define SDK_TOOL_NAME "sdk-c"
#endif
#define EXPORT __attribute__((visibility("default")))

static rocprofiler_client_id_t my_id;
static rocprofiler_client_finalize_t my_fini;
static int my_data = 1234;

static void record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record(const char *fmt, ...)
{
	const char *dir = getenv("ROCPROF_OUTPUT_PATH");
	char path[PATH_MAX], line[512];
	va_list ap;
	int fd, n;

	snprintf(path, sizeof(path), "%s/sdk-tool.%s.%d.log", dir && *dir ? dir : ".",
		 SDK_TOOL_NAME, (int)getpid());
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	mkdir(dir && *dir ? dir : ".", 0755); /* its parent is the test's */
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

static int tool_init(rocprofiler_client_finalize_t fini, void *data)
{
	my_fini = fini;
	record("initialize data_ok=%d", data == &my_data && *(int *)data == 1234);
	return 0;
}

static void tool_fini(void *data)
{
	record("finalize data_ok=%d", data == &my_data);
}

static int tool_attach(rocprofiler_client_detach_t detach, rocprofiler_context_id_t *ctx,
		       uint64_t n, void *data)
{
	(void)detach;
	(void)ctx;
	record("tool_attach contexts=%llu data_ok=%d", (unsigned long long)n, data == &my_data);
	return 0;
}

static void tool_detach(void *data)
{
	record("tool_detach data_ok=%d", data == &my_data);
}

/* Exported for tests: finalize now, through the loader, with our copy of the id. */
EXPORT void sdk_tool_finalize_now(void)
{
	if (my_fini)
		my_fini(my_id);
}

EXPORT rocprofiler_tool_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
		      rocprofiler_client_id_t *client_id)
{
	static rocprofiler_tool_configure_result_t cfg = {
	    sizeof(rocprofiler_tool_configure_result_t), tool_init, tool_fini, &my_data};
	const char *decline = getenv("ROCP_TEST_SDK_DECLINE");
	uint32_t major = version / 10000, minor = (version % 10000) / 100, patch = version % 100;

	client_id->name = SDK_TOOL_NAME;
	memcpy(&my_id, client_id, sizeof(my_id)); /* its handle is const: no assignment */
	record("configure version=%u.%u.%u runtime=%s priority=%u id_size=%zu name=%s", major,
	       minor, patch, runtime_version ? runtime_version : "(null)", priority,
	       client_id->size, client_id->name);
	/* Built for the attach interface (1.2.0 and later, major 1): decline any other. */
	if (major != 1 || version < 10200)
		return NULL;
	if (decline && !strcmp(decline, SDK_TOOL_NAME))
		return NULL;
	return &cfg;
}

EXPORT rocprofiler_tool_configure_attach_result_t *
rocprofiler_configure_attach(uint32_t version, const char *runtime_version, uint32_t priority,
			     rocprofiler_client_id_t *client_id)
{
	static rocprofiler_tool_configure_attach_result_t cfg = {
	    sizeof(rocprofiler_tool_configure_attach_result_t), tool_attach, tool_detach, &my_data};

	(void)runtime_version;
	record("configure_attach version=%u priority=%u name_kept=%d", version, priority,
	       client_id->name && !strcmp(client_id->name, SDK_TOOL_NAME));
	return &cfg;
}

/* SPDX-License-Identifier: MIT */
/*
 * The attach half of liblate_tool_attach.so: tests/rocm/late/late_tool.c
 * (the late start's tool, rocprofiler_configure) built with this file, which
 * adds rocprofiler_configure_attach (include/rocattach/tool.h), so that one
 * tool list serves both routes of rocattach-mpi --late-start: the late start
 * of a process without a listener, and the normal attach of one with a
 * listener. It appends one line per call to $LATE_TOOL_LOG:
 *   attach pid=P ns=T        (tool_attach; T: CLOCK_REALTIME)
 *   detach pid=P ns=T        (tool_detach)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>

#define EXPORT __attribute__((visibility("default")))

static void note(const char *what)
{
	const char *path = getenv("LATE_TOOL_LOG");
	struct timespec ts;
	char line[128];
	int fd, n;

	if (!path || !*path)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "%s pid=%d ns=%llu\n", what, (int)getpid(),
		     (unsigned long long)ts.tv_sec * 1000000000ull +
			 (unsigned long long)ts.tv_nsec);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (n > 0 && write(fd, line, (size_t)n) < 0) {
		/* Nothing to do: the test sees the line missing. */
	}
	close(fd);
}

static int tool_attach(rocprofiler_client_detach_t detach_func,
		       rocprofiler_context_id_t *context_ids, uint64_t n, void *data)
{
	(void)detach_func;
	(void)context_ids;
	(void)n;
	(void)data;
	note("attach");
	return 0;
}

static void tool_detach(void *data)
{
	(void)data;
	note("detach");
}

EXPORT rocprofiler_tool_configure_attach_result_t *
rocprofiler_configure_attach(uint32_t version, const char *runtime_version, uint32_t priority,
			     rocprofiler_client_id_t *client_id)
{
	static rocprofiler_tool_configure_attach_result_t r = {sizeof(r), tool_attach, tool_detach,
							       NULL};

	(void)version;
	(void)runtime_version;
	(void)priority;
	(void)client_id;
	return &r;
}

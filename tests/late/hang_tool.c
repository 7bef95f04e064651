/* SPDX-License-Identifier: MIT */
/*
 * libra_late_hang_tool.so: a rocprofiler-sdk tool (DT_NEEDED the double SDK of
 * tests/rocm/late/, RUNPATH its directory) whose rocprofiler_configure
 * sleeps $LATE_HANG_MS (default 3000) and then declines (NULL): a start that
 * does not end by --call-timeout.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

int rocprofiler_is_initialized(int *status);

__attribute__((visibility("default"))) void *
rocprofiler_configure(uint32_t version, const char *runtime, uint32_t priority, void *id)
{
	const char *v = getenv("LATE_HANG_MS");
	long ms = v ? atol(v) : 3000;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	int status = 0;

	(void)version;
	(void)runtime;
	(void)priority;
	(void)id;
	/* A call into the SDK keeps the DT_NEEDED link. */
	rocprofiler_is_initialized(&status);
	nanosleep(&ts, NULL);
	return NULL;
}

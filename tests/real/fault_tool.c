/* SPDX-License-Identifier: MIT */
/*
 * A tool that harms its target on purpose, as the knob in its environment
 * says (it arrives with the attach's environment buffer, before the tool
 * runs): ROCP_FAULT_TOOL=
 *   configure-segv   rocprofiler_configure writes through a NULL pointer
 *   attach-segv      tool_attach does
 *   configure-hang   rocprofiler_configure never returns
 *   attach-hang      tool_attach never returns
 *   detach-hang      tool_detach never returns
 *   attach-slow      tool_attach returns after 2 s (a late attach)
 *   attach-vfork     tool_attach calls vfork() and its child sleeps 5 s before
 *                    _exit: the listener waits that long in a killable sleep
 *                    (state D), which PTRACE_INTERRUPT does not break
 * A real fault, not raise(): the listener blocks every signal, and a fault
 * is delivered anyway, as a crashing tool's would be.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>

#define TOOL_EXPORT __attribute__((visibility("default")))

/* The child shares the tool's memory until it exits: only syscalls there. */
static void held_in_vfork(void)
{
	struct timespec ts = {5, 0};
	pid_t child = vfork();

	if (child == 0) {
		while (nanosleep(&ts, &ts))
			;
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
}

static void harm(const char *where)
{
	const char *mode = getenv("ROCP_FAULT_TOOL");
	size_t n = strlen(where);

	if (!mode || strncmp(mode, where, n) || mode[n] != '-')
		return;
	if (!strcmp(mode + n + 1, "segv"))
		*(volatile int *)(uintptr_t)0 = 1;
	if (!strcmp(mode + n + 1, "vfork"))
		held_in_vfork();
	if (!strcmp(mode + n + 1, "hang"))
		for (;;)
			sleep(60);
	if (!strcmp(mode + n + 1, "slow"))
		sleep(2);
}

static int tool_init(rocprofiler_client_finalize_t fini, void *data)
{
	(void)fini;
	(void)data;
	return 0;
}

static void tool_fini(void *data)
{
	(void)data;
}

static int tool_attach(rocprofiler_client_detach_t detach_func,
		       rocprofiler_context_id_t *context_ids, uint64_t n_contexts, void *data)
{
	(void)detach_func;
	(void)context_ids;
	(void)n_contexts;
	(void)data;
	harm("attach");
	return 0;
}

static void tool_detach(void *data)
{
	(void)data;
	harm("detach");
}

static rocprofiler_tool_configure_result_t configure_result = {
    .size = sizeof(rocprofiler_tool_configure_result_t),
    .initialize = tool_init,
    .finalize = tool_fini,
};

static rocprofiler_tool_configure_attach_result_t attach_result = {
    .size = sizeof(rocprofiler_tool_configure_attach_result_t),
    .tool_attach = tool_attach,
    .tool_detach = tool_detach,
};

TOOL_EXPORT rocprofiler_tool_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
		      rocprofiler_client_id_t *client_id)
{
	(void)version;
	(void)runtime_version;
	(void)priority;
	(void)client_id;
	harm("configure");
	return &configure_result;
}

TOOL_EXPORT rocprofiler_tool_configure_attach_result_t *
rocprofiler_configure_attach(uint32_t version, const char *runtime_version, uint32_t priority,
			     rocprofiler_client_id_t *client_id)
{
	(void)version;
	(void)runtime_version;
	(void)priority;
	(void)client_id;
	return &attach_result;
}

/* SPDX-License-Identifier: MIT */
/*
 * librocattach-stacks.so: the stacks of every thread of the process it is
 * attached to (docs/stacks.md). At tool_attach it takes one snapshot of all
 * threads; with ROCPROF_STACKS_HZ > 0 it also samples every thread on its CPU
 * time until tool_detach. At tool_detach it stops, puts back what it changed
 * and writes one file (stacks_format.h).
 *
 * This file is the lifecycle: the entry points, attach, detach, exit and
 * fork, and the signal's disposition. The others are named in stacks_state.h.
 * The signal is a real-time one the process does not use (no handler,
 * blocked in no thread, named by no timer); the file says which.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rocattach/tool.h>

#include "stacks_file.h"
#include "stacks_handler.h"
#include "stacks_proc.h"
#include "stacks_python.h"
#include "stacks_threads.h"

#define TOOL_EXPORT __attribute__((visibility("default")))
#define TOOL_NAME "rocattach-stacks"

static int install_handler(void)
{
	struct sigaction sa = {0};

	st.sig = pick_signal();
	if (!st.sig) {
		snprintf(st.note, sizeof(st.note), "no free real-time signal");
		return -1;
	}
	sa.sa_sigaction = stacks_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	st.our_handler = stacks_handler;
	if (sigaction(st.sig, &sa, &st.old_action)) {
		snprintf(st.note, sizeof(st.note), "sigaction(%d): %s", st.sig, strerror(errno));
		return -1;
	}
	st.installed = true;
	return 0;
}

/*
 * Put the old disposition back, if the handler is still ours: a handler the
 * program set in the window is its own and stays (the file says so).
 */
static void restore_signal(void)
{
	struct sigaction cur;

	if (!st.installed)
		return;
	st.installed = false;
	if (sigaction(st.sig, NULL, &cur) || !(cur.sa_flags & SA_SIGINFO) ||
	    cur.sa_sigaction != stacks_handler) {
		if (!st.taken_note[0])
			snprintf(st.taken_note, sizeof(st.taken_note),
				 "signal %d was given a handler by the program in the window: it "
				 "stays as the program set it",
				 st.sig);
		return;
	}
	/*
	 * SIG_IGN first: it discards the signal where it is still pending
	 * (a thread that had it blocked), which the default action would turn
	 * into the death of the process.
	 */
	signal(st.sig, SIG_IGN);
	sigaction(st.sig, &st.old_action, NULL);
}

/* Disarm, then put the old action back once no handler runs. */
static void stop_all(void)
{
	threads_stop();
	restore_signal();
	for (int i = 0; i < 1000 && atomic_load(&st.in_handler); i++)
		sleep_ms(1);
}

static void stacks_atexit(void);

/*
 * A fork child inherits the handler and the buffer but no timer, no helper
 * thread and no window: it gets its disposition back and the buffer goes.
 */
static void stacks_atfork_child(void)
{
	if (st.installed)
		sigaction(st.sig, &st.old_action, NULL);
	st.installed = false;
	/* No other thread is here: no handler runs in the child's copy. */
	atomic_store(&st.in_handler, 0);
	pool_free();
	threads_atfork_child();
}

/* ROCPROF_STACKS_SAMPLE_PART: only for measuring the parts of a sample's cost. */
static int sample_part(void)
{
	const char *v = getenv("ROCPROF_STACKS_SAMPLE_PART");

	if (v && !strcmp(v, "signal"))
		return SAMPLE_SIGNAL;
	if (v && !strcmp(v, "record"))
		return SAMPLE_RECORD;
	return SAMPLE_ALL;
}

/* A fresh window's state; the table is emptied by threads_reset. */
static void begin_window(void)
{
	st.attach_seq++;
	if (!st.atexit_set) {
		atexit(stacks_atexit);
		pthread_atfork(NULL, NULL, stacks_atfork_child);
		st.atexit_set = true;
	}
	st.pid = getpid();
	st.attach_ns = now_ns();
	st.detach_ns = 0;
	st.note[0] = '\0';
	st.hz = env_long("ROCPROF_STACKS_HZ", 0, 0, MAX_HZ);
	st.unwind = env_long("ROCPROF_STACKS_UNWIND", 1, 0, 1);
	st.sample_part = sample_part();
	st.poll_ms = env_long("ROCPROF_STACKS_POLL_MS", DEFAULT_POLL_MS, 1, 1000);
	st.self_tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&st.sampling, 0);
	threads_reset();
}

/*
 * The snapshot, then sampling: the scan that arms the threads there are
 * ends before the poller starts, and every later scan is the poller's.
 */
static int tool_attach(rocprofiler_client_detach_t detach_func,
		       rocprofiler_context_id_t *context_ids, uint64_t n_contexts, void *data)
{
	long timeout = env_long("ROCPROF_STACKS_SNAPSHOT_MS", DEFAULT_SNAPSHOT_MS, 1, 60000);

	(void)detach_func;
	(void)context_ids;
	(void)n_contexts;
	(void)data;
	begin_window();
	py_attach(); /* before the pool: a record holds its Python frames */
	if (pool_alloc())
		return -1;
	snapshot_self(); /* also the first unwind: libunwind sets itself up outside a handler */
	if (install_handler())
		return 0; /* nothing sent; the file says why */
	threads_scan(false);
	snapshot(timeout);
	if (!st.hz)
		return 0;
	atomic_store(&st.sampling, 1);
	threads_scan(true);
	threads_start_poller();
	return 0;
}

static void tool_detach(void *data)
{
	(void)data;
	stop_all();
	st.detach_ns = now_ns();
	write_file();
	/* A handler still running after a second keeps its pool: leaked, never freed under it. */
	pool_free();
	st.sig = 0;
}

static int tool_initialize(rocprofiler_client_finalize_t fini, void *data)
{
	(void)fini;
	(void)data;
	return 0;
}

/* The process exits while attached: the window ends here, and the file is still written. */
static void tool_finalize(void *data)
{
	if (st.pool)
		tool_detach(data);
}

/*
 * Our own exit hook as well: finalize is the loader's to call, and a loader
 * may not call it at exit. The tool is never unloaded (tools stay mapped).
 */
static void stacks_atexit(void)
{
	if (st.pool && getpid() == st.pid)
		tool_detach(NULL);
}

static rocprofiler_tool_configure_result_t configure_result = {
    .size = sizeof(rocprofiler_tool_configure_result_t),
    .initialize = tool_initialize,
    .finalize = tool_finalize,
    .tool_data = &st,
};

static rocprofiler_tool_configure_attach_result_t attach_result = {
    .size = sizeof(rocprofiler_tool_configure_attach_result_t),
    .tool_attach = tool_attach,
    .tool_detach = tool_detach,
    .tool_data = &st,
};

TOOL_EXPORT rocprofiler_tool_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
		      rocprofiler_client_id_t *client_id)
{
	(void)version;
	(void)runtime_version;
	(void)priority;
	if (client_id)
		client_id->name = TOOL_NAME;
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

/* SPDX-License-Identifier: MIT */
/*
 * The attach protocol's names, in one place (docs/protocol.md). Shared by
 * the attacher, the agent and the node layer: plain macros, libc only.
 */
#ifndef RA_COMMON_PROTOCOL_H
#define RA_COMMON_PROTOCOL_H

/* The listener thread's name (/proc/PID/task/TID/comm), ROCm's and ours. */
#define RA_LISTENER_COMM "rocp-bg-attach"

/* Entry points, exported by ROCm's rocprofiler-register and by our agent. */
#define RA_ENTRY_ATTACH "rocprofiler_register_attach"
#define RA_ENTRY_DETACH "rocprofiler_register_detach"

/* ROCm's target-side library; AMD's attacher looks only for this file name. */
#define RA_ROCM_REGISTER_PREFIX "librocprofiler-register.so"
/* Our agent's file name. */
#define RA_AGENT_PREFIX "librocattach-agent.so"
#define RA_AGENT_SONAME "librocattach-agent.so.0"

/*
 * Ours only. The marker: an object exporting the entry points and this
 * function is our agent, whatever its file name; anything else exporting
 * the entry points is ROCm's. It returns RA_AGENT_ABI.
 */
#define RA_AGENT_MARKER "rocattach_agent_abi"
#define RA_AGENT_ABI 2u /* 2: start and stop times (ROCP_ATTACH_START_NS, detach_at) */
#define RA_AGENT_TOOL_NS "rocattach_agent_tool_ns" /* uint64_t (int which) */
/* The same times as a variable, read from the target's memory (optional: newer agents). */
#define RA_AGENT_TOOL_EVENT_NS "rocattach_agent_tool_event_ns" /* uint64_t[2] */
#define RA_AGENT_LAST_ERROR "rocattach_agent_last_error"       /* const char *(void) */
#define RA_AGENT_DETACH_AT "rocattach_agent_detach_at"	       /* int (uint64_t stop_ns) */
#define RA_AGENT_ENABLE "rocattach_agent_enable"	       /* int (void), for --inject */
/*
 * char[RA_AGENT_CURRENT_MAX]: what the agent is running now on behalf of an
 * entry point, "" when nothing ("<library>: rocprofiler_configure",
 * "<library>: tool_attach", ...). Read by the attacher, without stopping the
 * target, when a call outlives its deadline, when the thread it drives gets
 * a fatal signal, and while the call runs. Starting with
 * RA_AGENT_CURRENT_NEXT, it is what a starter thread will run at the start
 * or stop time: a crash then is in it, but a call that does not return may
 * not have got there.
 */
#define RA_AGENT_CURRENT "rocattach_agent_current"
#define RA_AGENT_CURRENT_MAX 256
#define RA_AGENT_CURRENT_NEXT '>'
/*
 * uint8_t[1 + RA_TOOLLIST_MAX]: [0] the number of libraries in the list the
 * last attach was given, then one enum rocattach_tool_outcome each, in order.
 * Written before the attach entry point returns.
 */
#define RA_AGENT_TOOL_OUTCOME "rocattach_agent_tool_outcome"
/*
 * int: 1 while the listener thread is inside one of our entry points, 0
 * otherwise. An attacher that finds the listener stopped there (its
 * attacher died during the call) must not run a call on top of it.
 */
#define RA_AGENT_LISTENER_BUSY "rocattach_agent_listener_busy"

/*
 * uint64_t[2], our agent's (RA_AGENT_WINDOW) and librocattach-watchdog's
 * (RA_WATCHDOG_WINDOW): [0] the number of the last window opened (every
 * attach that opens one adds 1), [1] CLOCK_REALTIME at which the target side
 * closed that window by itself, because no detach came by its end
 * (RA_ENV_END_NS, ra_watchdog_call.end_ns), 0 if it did not. Read by the
 * attacher from the target's memory, without a call: after its attach ([0]),
 * and at its detach and its next attach (both).
 */
#define RA_AGENT_WINDOW "rocattach_agent_window"
#define RA_WATCHDOG_WINDOW "rocattach_watchdog_window"

/*
 * Ours: the watchdog for ROCm's target side (librocattach-watchdog), loaded
 * into such a process on its listener by the attacher. Instead of ROCm's
 * entry points the attacher calls these on the listener; they call ROCm's
 * and watch the attacher meanwhile:
 *   int RA_WATCHDOG_ATTACH(struct ra_watchdog_call *c): c->attach_fn(c->env,
 *   c->path) and, if that returns 0, from then on watch the owner: when it
 *   ends while armed, c->detach_fn() is called on the watchdog's thread;
 *   int RA_WATCHDOG_DETACH(void): the detach_fn of the last attach, and the
 *   watch ends.
 * Both return the entry point's value unchanged.
 */
#define RA_WATCHDOG_PREFIX "librocattach-watchdog.so"
#define RA_WATCHDOG_SONAME "librocattach-watchdog.so.0"
#define RA_WATCHDOG_ATTACH "rocattach_watchdog_attach"
#define RA_WATCHDOG_DETACH "rocattach_watchdog_detach"
#define RA_WATCHDOG_THREAD "rocattach-wd" /* its thread's name */
/*
 * char[RA_WATCHDOG_TOOL_PATH_MAX]: the tool path of the first attach that
 * succeeded through the watchdog, "" before (or if it did not fit). ROCm's
 * side keeps its first attach's path for good and refuses any other
 * (docs/protocol.md section 2b), so this is the only path it takes. Read by
 * the attacher from the target's memory, before it touches the process.
 */
#define RA_WATCHDOG_TOOL_PATH "rocattach_watchdog_tool_path"
#define RA_WATCHDOG_TOOL_PATH_MAX 4096

/* The attach call's argument, in the target's memory (written by the attacher). */
struct ra_watchdog_call {
	unsigned long long env, path;		   /* rocprofiler_register_attach's arguments */
	unsigned long long attach_fn, detach_fn;   /* ROCm's entry points */
	unsigned long long owner_pid, owner_start; /* the attacher (ROCP_ATTACH_OWNER's two) */
	int armed;				   /* out: 1 if the owner is watched now */
	int err; /* out: why not (errno), 0 if armed or the attach failed */
	/*
	 * CLOCK_REALTIME by which a detach must come (the planned stop plus
	 * the call deadline), else the watchdog detaches by itself; 0: none.
	 * Added last: a watchdog and its attacher come from one install.
	 */
	unsigned long long end_ns;
};

/*
 * Variables the attacher adds to the environment buffer for our agent only
 * (never sent to ROCm's side, which would keep them in the application's
 * environment); our agent reads them from the buffer and never sets them.
 */
#define RA_ENV_OWNER "ROCP_ATTACH_OWNER"       /* <pid>:<starttime> of the attacher */
#define RA_ENV_START_NS "ROCP_ATTACH_START_NS" /* CLOCK_REALTIME ns to call tool_attach at */
/*
 * CLOCK_REALTIME ns by which a detach must come (the window's planned stop
 * plus the call deadline); if none has by then, the agent detaches the tools
 * by itself.
 */
#define RA_ENV_END_NS "ROCP_ATTACH_END_NS"

/* 1 if "NAME" or "NAME=..." (len bytes of name) is one of the private variables above. */
static inline int ra_env_is_private(const char *name, unsigned long len)
{
	static const char *const priv[] = {RA_ENV_OWNER, RA_ENV_START_NS, RA_ENV_END_NS};

	for (unsigned long i = 0; i < sizeof(priv) / sizeof(priv[0]); i++) {
		unsigned long k = 0;

		while (priv[i][k] && k < len && priv[i][k] == name[k])
			k++;
		if (!priv[i][k] && (k == len || name[k] == '='))
			return 1;
	}
	return 0;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * librocattach-agent: the target side of an attach (protocol.md sections 2,
 * 3), libc only; its rooms are listed below. This one holds the entry
 * points: rocprofiler_register_attach/_detach and ours (detach at a time,
 * the last error, the tools' times, enable in agent_listener.c).
 *
 * An attacher calls them on the rocp-bg-attach listener (agent_listener.c);
 * any thread may call them directly too. Calls serialize on agent_lock.
 * With a start or stop time, a starter thread hands over at that time.
 *
 * Nothing is printed unless ROCP_AGENT_DEBUG=1 (read at each message, so an
 * attacher can switch it on through the environment buffer).
 */
/*
 * The agent's rooms (libc only: it lives in someone else's process), each
 * with its own header; all hidden symbols:
 *   agent_base.c      the lock, debug lines, the call's error and notes
 *   agent.c           the entry points: attach, detach (at a time), their
 *                     arguments, starter threads, messages
 *   agent_args.c      the pointer arguments, copied from memory we may
 *                     read (no /proc/self/maps parse on 6.11 and later)
 *   agent_env.c       the environment buffer: read once, applied to
 *                     environ (a reattach's checks its variables in place),
 *                     undone when the attach fails
 *   agent_tools.c     the tool lifecycle: load, configure, initialize,
 *                     hand over and back, finalize
 *   agent_watchdog.c  the attacher's liveness (ROCP_ATTACH_OWNER), the
 *                     window's own end (ROCP_ATTACH_END_NS), the watchdog
 *                     thread, one attacher per window
 *   agent_listener.c  the rocp-bg-attach listener: started at load or by
 *                     --inject, standing aside for ROCm's, gone in a fork
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rocattach/rocattach.h>
#include <rocattach/tool.h>
#include <rocattach/version.h>

#include "agent/agent_base.h"
#include "agent/agent_args.h"
#include "agent/agent_env.h"
#include "agent/agent_listener.h"
#include "agent/agent_tools.h"
#include "agent/agent_watchdog.h"
#include "common/clock.h"
#include "common/protocol.h"
#include "common/toollist.h"

#define ERR_MAX 4096 /* rocattach_agent_last_error's copy (agent_base.c's message) */
#define START_HINT_MAX_NS (10 * RA_NS_PER_SEC)

/*
 * 1 while the listener runs one of our entry points (RA_AGENT_LISTENER_BUSY):
 * an attacher killed during the call leaves the thread to finish it, and
 * the next attacher, finding it stopped in here, must not call on top.
 */
RA_EXPORT _Atomic int rocattach_agent_listener_busy;

static void agent_enter(void)
{
	pthread_mutex_lock(&agent_lock);
	in_agent_set(true);
	if (on_listener())
		atomic_store(&rocattach_agent_listener_busy, 1);
	agent_messages_clear();
}

static void agent_leave(void)
{
	if (on_listener())
		atomic_store(&rocattach_agent_listener_busy, 0);
	in_agent_set(false);
	pthread_mutex_unlock(&agent_lock);
}

/*
 * What became of each library of the tool list when it was chosen, for
 * the attacher (RA_AGENT_TOOL_OUTCOME): [0] how many, then one enum
 * rocattach_tool_outcome each. Written before the entry point returns.
 */
RA_EXPORT uint8_t rocattach_agent_tool_outcome[1 + RA_TOOLLIST_MAX];

/*
 * tool_lib_path of the last successful choice of tools. Unlike ROCm's side
 * (which keeps its first attach's path for good: protocol.md section 2b),
 * an attach between windows may name another list: the tools are chosen
 * again (agent_tools.c), so --stacks works after another tool.
 */
static char *tool_path;
static char err_copy[ERR_MAX];

static int choose_tools(const char *path)
{
	struct ra_toollist tl;
	size_t i, declined;
	char *copy;
	int err;

	copy = strdup(path);
	if (!copy)
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
	err = ra_toollist_parse(path, &tl);
	if (err) {
		free(copy);
		if (err == -ENOMEM)
			return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT, "tool_lib_path \"%s\": %s", path,
			    err == -E2BIG ? "more than 64 libraries" : "names no library");
	}
	declined = 0;
	free(tool_path);
	tool_path = NULL;
	tools_choose_none();
	for (i = 0; i < tl.n; i++) {
		rocattach_agent_tool_outcome[1 + i] = (uint8_t)tool_load(tl.v[i]);
		declined += rocattach_agent_tool_outcome[1 + i] == ROCATTACH_TOOL_DECLINED;
	}
	rocattach_agent_tool_outcome[0] = (uint8_t)tl.n;
	ra_toollist_free(&tl);
	if (!tools_usable()) {
		free(copy);
		/* Declining is no error, but with nothing left there is no tool to attach. */
		if (declined == i)
			return fail(ROCATTACH_REGISTER_NO_TOOLS, "every tool declined: %s",
				    agent_notes());
		/* As ROCm: a tool that fails to load or configure is ROCPROFILER_ERROR. */
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "no tool can attach: %s",
			    agent_notes());
	}
	if (agent_notes()[0]) {
		size_t size;
		char *text = agent_err_text(&size);

		snprintf(text, size, "attached; skipped: %s", agent_notes());
	}
	tool_path = copy;
	return ROCATTACH_REGISTER_SUCCESS;
}

/* A time the attacher asked for (CLOCK_REALTIME ns), if still ahead (and not absurdly far). */
static bool time_ahead(uint64_t ns)
{
	uint64_t now;

	if (!ns)
		return false;
	now = ra_realtime_ns();
	if (ns <= now || ns - now > START_HINT_MAX_NS) {
		dbg("ignoring the time %llu (now %llu)", (unsigned long long)ns,
		    (unsigned long long)now);
		return false;
	}
	return true;
}

/*
 * The start time in the environment buffer's value v (never in environ: it
 * is ours, not the tools'), if still ahead; else 0.
 */
static uint64_t start_hint(const char *v)
{
	unsigned long long ns;
	char *end;

	if (!v || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	ns = strtoull(v, &end, 10);
	return !errno && !*end && time_ahead(ns) ? ns : 0;
}

/*
 * With a start time, a starter thread sleeps until it and hands the attach
 * over, not the thread running rocprofiler_register_attach: that one is
 * the attacher's, which watches it and interrupts, restores and releases it
 * as soon as it returns, and on a node with many targets that work for the
 * first windows to open delays the others. With 32 targets on 2 CPUs,
 * tool_attach spread over 5-8 ms from the listener and over 1.3-2.5 ms from
 * starter threads, which is the floor there (32 processes merely waking at
 * one instant spread over about 2 ms). The call still returns only after
 * tool_attach. A tool calling us back from tool_attach gets DEADLOCK, as on
 * the listener: the caller holds agent_lock while it waits.
 */
struct starter {
	uint64_t at_ns;
	void (*hand_over)(void);
};

static void *starter_main(void *arg)
{
	struct starter *st = arg;

	ra_sleep_until_realtime(st->at_ns);
	in_agent_set(true);
	st->hand_over();
	return NULL;
}

/*
 * 0 once a starter thread has run fn at at_ns (the stop time uses the same
 * way: tool_detach spreads as little as tool_attach); -1 if none could start.
 */
static int run_at(uint64_t at_ns, void (*fn)(void))
{
	struct starter st = {at_ns, fn};
	sigset_t all, old;
	pthread_t th;
	int err;

	/* Like the listener, it never takes a signal meant for the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, NULL, starter_main, &st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		dbg("cannot start a starter thread: %s", strerror(err));
		return -1;
	}
	pthread_setname_np(th, "rocp-starter");
	pthread_join(th, NULL);
	return 0;
}

static int tools_attach(const char *start)
{
	uint64_t at;

	if (!tools_usable())
		return fail(ROCATTACH_REGISTER_NO_TOOLS, "every tool has finalized itself");
	at = start_hint(start);
	if (at)
		tools_current_next("tool_attach");
	if (!at || run_at(at, tools_hand_over)) {
		if (at)
			ra_sleep_until_realtime(at);
		tools_hand_over();
	}
	tools_current_next(NULL);
	agent_attached = true;
	return ROCATTACH_REGISTER_SUCCESS;
}

/*
 * The buffer copied (agent_args.c), checked and read in one pass: each
 * later use reads sc, which points into *copy.
 */
static int check_env_buffer(const char *env, struct env_scan *sc, char **copy)
{
	size_t len;
	int err;

	if (!env)
		return 0;
	err = arg_copy_envbuf(env, copy, &len);
	if (err == -EFAULT)
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
			    "environment_buffer %p is not in readable memory", (const void *)env);
	if (!err)
		err = env_scan(*copy, len, sc);
	if (err == -ENOMEM)
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
	if (err)
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
			    "environment_buffer %p is malformed", (const void *)env);
	return 0;
}

static int no_listener(void)
{
	return fail(ROCATTACH_REGISTER_ATTACHMENT_NOT_AVAILABLE,
		    "no attach support in this process: start it with ROCP_TOOL_ATTACH=1"
		    " (a child forked without exec has none)");
}

/* Our copies of the caller's arguments: nothing reads the caller's memory twice. */
struct attach_args {
	char *path, *env;
};

static int check_attach_args(const char *env, const char *path, struct env_scan *sc,
			     struct attach_args *a)
{
	int ret;

	if (!listening)
		return no_listener();
	ret = arg_copy_string(path, &a->path);
	if (ret)
		arg_copy_end();
	if (ret == -ENOMEM)
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
	if (ret)
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
			    "tool_lib_path %p is not a string in readable memory",
			    (const void *)path);
	ret = check_env_buffer(env, sc, &a->env);
	arg_copy_end();
	if (ret)
		return ret;
	return 0;
}

static int attach_locked(const char *env, const char *path)
{
	struct attach_args args = {0};
	struct env_scan sc = {0};
	struct env_undo undo = {0};
	struct owner o;
	int ret;

	ret = check_attach_args(env, path, &sc, &args);
	if (ret)
		goto out;
	owner_from_value(sc.owner, sc.end, &o);
	if (agent_attached) {
		ret = holder_check(&o);
		if (ret) {
			owner_drop(&o);
			goto out;
		}
		if (strcmp(tool_path, args.path)) {
			owner_drop(&o);
			ret = fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
				   "attached with \"%s\": detach before attaching \"%s\"",
				   tool_path, args.path);
			goto out;
		}
		dbg("already attached");
		holder_set(&o);
		owner_set(&o);
		goto out;
	}
	ret = env_apply(&sc, &undo);
	if (!ret && (!tool_path || strcmp(tool_path, args.path)))
		ret = choose_tools(args.path);
	if (!ret)
		ret = tools_attach(sc.start);
	if (ret) {
		env_rollback(&undo);
		owner_drop(&o);
	} else {
		window_opened();
		holder_set(&o);
		owner_set(&o);
	}
	env_undo_free(&undo);
out:
	env_scan_free(&sc);
	free(args.path);
	free(args.env);
	return ret;
}

RA_EXPORT int rocprofiler_register_attach(const char *environment_buffer, const char *tool_lib_path)
{
	int ret;

	if (in_agent()) {
		/* A tool calling back from its callback: this thread holds agent_lock. */
		note(RA_ENTRY_ATTACH, "called from inside a tool callback");
		return tool_lib_path ? ROCATTACH_REGISTER_DEADLOCK
				     : ROCATTACH_REGISTER_INVALID_ARGUMENT;
	}
	agent_enter();
	if (tool_lib_path)
		ret = attach_locked(environment_buffer, tool_lib_path);
	else
		ret = fail(ROCATTACH_REGISTER_INVALID_ARGUMENT, "tool_lib_path is NULL");
	dbg("attach(%s) = %d", tool_lib_path ? "path" : "NULL", ret);
	agent_leave();
	return ret;
}

/* Detach now (at_ns 0: agent_watchdog.c's), or at at_ns (a starter thread, as for the start). */
static int detach_locked_at(uint64_t at_ns)
{
	if (!listening)
		return no_listener();
	if (!at_ns)
		return detach_locked();
	if (!agent_attached)
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT, "not attached");
	tools_current_next("tool_detach");
	if (run_at(at_ns, tools_hand_back)) {
		ra_sleep_until_realtime(at_ns);
		tools_hand_back();
	}
	tools_current_next(NULL);
	window_closed();
	return ROCATTACH_REGISTER_SUCCESS;
}

RA_EXPORT int rocprofiler_register_detach(void)
{
	int ret;

	if (in_agent()) {
		note(RA_ENTRY_DETACH, "called from inside a tool callback");
		return ROCATTACH_REGISTER_DEADLOCK;
	}
	agent_enter();
	ret = detach_locked_at(0);
	dbg("detach = %d", ret);
	agent_leave();
	return ret;
}

/*
 * Ours: rocprofiler_register_detach, with tool_detach called at stop_ns
 * (CLOCK_REALTIME; at once if it is past or more than 10 s ahead). It
 * returns after tool_detach, like the attach with a start time.
 */
RA_EXPORT int rocattach_agent_detach_at(uint64_t stop_ns)
{
	int ret;

	if (in_agent()) {
		note(RA_AGENT_DETACH_AT, "called from inside a tool callback");
		return ROCATTACH_REGISTER_DEADLOCK;
	}
	agent_enter();
	ret = detach_locked_at(time_ahead(stop_ns) ? stop_ns : 0);
	dbg("detach_at(%llu) = %d", (unsigned long long)stop_ns, ret);
	agent_leave();
	return ret;
}

/* Ours: the marker that tells an attacher this is our agent (protocol.h), whatever our file name.
 */
RA_EXPORT unsigned int rocattach_agent_abi(void)
{
	return RA_AGENT_ABI;
}

static void copy_error(void)
{
	size_t size;
	const char *text = agent_err_text(&size);

	snprintf(err_copy, sizeof(err_copy), "%s", text);
}

RA_EXPORT const char *rocattach_agent_last_error(void)
{
	if (in_agent()) {
		copy_error();
		return err_copy;
	}
	pthread_mutex_lock(&agent_lock);
	copy_error();
	pthread_mutex_unlock(&agent_lock);
	return err_copy;
}

/* Ours: when the last attach (which 0) or detach (1) called the tools, 0 if never. */
RA_EXPORT uint64_t rocattach_agent_tool_ns(int which)
{
	return which == 0 || which == 1 ? atomic_load(&rocattach_agent_tool_event_ns[which]) : 0;
}

RA_EXPORT unsigned int rocattach_agent_version(void)
{
	return ROCATTACH_VERSION;
}

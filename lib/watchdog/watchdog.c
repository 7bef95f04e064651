/* SPDX-License-Identifier: MIT */
/*
 * librocattach-watchdog: the watchdog our agent has, for processes whose
 * listener is ROCm's (librocprofiler-register). The attacher loads it on the
 * listener (a remote dlopen) and then calls RA_WATCHDOG_ATTACH and
 * RA_WATCHDOG_DETACH there instead of ROCm's entry points (common/protocol.h);
 * they call ROCm's, unchanged: ROCm gets the same environment buffer and
 * tool path as without us. After a successful attach the thread
 * rocattach-wd watches the attacher (pidfd, else /proc); if it ends before
 * its detach, the thread calls that process's own rocprofiler_register_detach;
 * so it does when no detach has come by the window's end (the call's end_ns:
 * the planned stop plus the call deadline), noting when in
 * rocattach_watchdog_window, so that a stopped or hung attacher holds no tool.
 * libc only: it lives in someone else's process.
 *
 * Races, and why they are safe:
 *  - The attacher dies in one of our calls: the kernel detaches the listener,
 *    which finishes the call (arming included: both happen in one call) and
 *    parks; the watch then sees the attacher gone.
 *  - A new attacher of ours while the dead one's window is open: its attach
 *    call runs under wd_lock, as does the thread's detach, so they never
 *    overlap; if the thread has not detached yet, the attach call does it
 *    first, then attaches and watches the new attacher.
 *  - Another attacher that does not use us (rocprofv3) drives the listener
 *    after our attacher died: its window is its own. The thread does not
 *    detach while the listener is traced by a live process other than the
 *    owner, and gives the window up once it was.
 *  - A fork child has no watchdog thread and nothing armed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>

#include "common/clock.h"
#include "common/owner.h"
#include "common/procfs.h"
#include "common/protocol.h"

#define EXPORT __attribute__((visibility("default")))
#define NAP_NS 5000000L	    /* between looks while the listener is driven */
#define DEADLOCK_TRIES 6000 /* ROCm busy: 30 s at NAP_NS, then give up */
typedef int (*attach_fn_t)(const char *, const char *);
typedef int (*detach_fn_t)(void);

/* Under wd_lock, but wake and the thread's own fd. */
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static bool armed;  /* an attach of owner is open, not yet detached */
static pid_t owner; /* the attacher of the last successful attach */
static unsigned long long owner_start;
static unsigned int gen;      /* every attach and detach call moves it on */
static detach_fn_t detach_fn; /* ROCm's, from the last attach */
static pid_t listener;	      /* the thread our calls come on */
static int wake = -1;	      /* eventfd: gen moved */
static int watch_fd = -1;     /* the thread's pidfd on owner */
static int start_err = -1;    /* 0: the thread runs; else errno */
static bool named;	      /* the thread has its name: the loader may return */
static pthread_cond_t named_cond = PTHREAD_COND_INITIALIZER;
static bool debug;
static uint64_t end; /* CLOCK_MONOTONIC by which the owner's detach must come, 0: none */

/* RA_WATCHDOG_WINDOW (protocol.h): the last window's number, and when we closed it ourselves. */
EXPORT _Atomic uint64_t rocattach_watchdog_window[2];
/* RA_WATCHDOG_TOOL_PATH (protocol.h): written once, by the first attach that succeeds. */
EXPORT char rocattach_watchdog_tool_path[RA_WATCHDOG_TOOL_PATH_MAX];

static void keep_tool_path(const char *path)
{
	/* A call without a path (ROCm's side takes the variables' tools) keeps nothing. */
	if (!path)
		return;
	if (!rocattach_watchdog_tool_path[0] && strlen(path) < sizeof(rocattach_watchdog_tool_path))
		strcpy(rocattach_watchdog_tool_path, path);
}

static void dbg(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!debug)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rocattach-watchdog[%d]: %s\n", (int)getpid(), line);
}

static void nap(long ns)
{
	struct timespec t = {0, ns};

	nanosleep(&t, NULL);
}

/* Is the listener traced by a live process other than the (dead) owner? */
static bool driven_by_other(pid_t dead)
{
	struct ra_status st, tr;

	if (!listener || ra_status_read(RA_PROCFS, listener, &st) || st.tracer_pid <= 0)
		return false;
	return !ra_status_read(RA_PROCFS, st.tracer_pid, &tr) && tr.tgid != dead;
}

static void gen_next(void)
{
	uint64_t one = 1;

	gen++;
	if (wake >= 0 && write(wake, &one, sizeof(one)) < 0)
		dbg("eventfd write: %s", strerror(errno));
}

/*
 * The owner of generation g is gone, or (ended) its window's end passed with
 * no detach: detach, unless an attach or detach came since (g moved on) or
 * another attacher drove the listener meanwhile.
 */
static void owner_gone(unsigned int g, pid_t dead, bool ended)
{
	bool other = false;
	int r, tries = 0;

	for (;;) {
		pthread_mutex_lock(&wd_lock);
		if (g != gen || !armed)
			break;
		if (driven_by_other(dead)) {
			pthread_mutex_unlock(&wd_lock);
			other = true;
			nap(NAP_NS);
			continue;
		}
		if (other) {
			dbg("attacher %d is gone, another drove the listener since: its window",
			    (int)dead);
			armed = false;
			break;
		}
		r = detach_fn();
		if (r != ROCATTACH_REGISTER_DEADLOCK || ++tries == DEADLOCK_TRIES) {
			dbg("attacher %d %s: rocprofiler_register_detach returned %d", (int)dead,
			    ended ? "sent no detach by the window's end" : "is gone", r);
			if (ended && r == ROCATTACH_REGISTER_SUCCESS)
				atomic_store(&rocattach_watchdog_window[1], ra_realtime_ns());
			armed = false;
			break;
		}
		pthread_mutex_unlock(&wd_lock);
		nap(NAP_NS);
	}
	pthread_mutex_unlock(&wd_lock);
}

static void *watchdog_main(void *arg)
{
	unsigned long long start = 0;
	unsigned int seen = 0, g;
	bool dead = false, moved;
	uint64_t by = 0;
	pid_t pid = 0, next;
	int r;

	(void)arg;
	pthread_setname_np(pthread_self(), RA_WATCHDOG_THREAD);
	pthread_mutex_lock(&wd_lock);
	named = true;
	pthread_cond_signal(&named_cond);
	pthread_mutex_unlock(&wd_lock);
	for (;;) {
		pthread_mutex_lock(&wd_lock);
		g = gen;
		moved = g != seen;
		next = armed ? owner : 0;
		if (moved) {
			start = owner_start;
			by = armed ? end : 0;
		}
		pthread_mutex_unlock(&wd_lock);
		if (moved) {
			if (watch_fd >= 0)
				close(watch_fd);
			pid = next;
			watch_fd = pid ? ra_owner_open(pid, start, &dead) : -1;
			seen = g;
		}
		r = ra_owner_wait(wake, pid, start, watch_fd, dead, by);
		if (r == 1 || r == 2) {
			owner_gone(seen, pid, r == 2);
			if (watch_fd >= 0)
				close(watch_fd);
			watch_fd = -1;
			pid = 0;
			by = 0;
		} else if (r < 0 && errno != EINTR) {
			nap(100 * NAP_NS);
		}
	}
	return NULL;
}

/* Under wd_lock: the last attach's owner is gone and its window still open. */
static void detach_dead_owner(pid_t next, unsigned long long next_start)
{
	int r;

	if (!armed || (owner == next && owner_start == next_start) ||
	    ra_owner_alive(owner, owner_start))
		return;
	r = detach_fn();
	dbg("attacher %d is gone, %d attaches: detached first (%d)", (int)owner, (int)next, r);
	armed = false;
}

EXPORT int rocattach_watchdog_attach(struct ra_watchdog_call *c)
{
	attach_fn_t attach = (attach_fn_t)(uintptr_t)c->attach_fn;
	int ret;

	pthread_mutex_lock(&wd_lock);
	listener = (pid_t)syscall(SYS_gettid);
	if (detach_fn)
		detach_dead_owner((pid_t)c->owner_pid, c->owner_start);
	detach_fn = (detach_fn_t)(uintptr_t)c->detach_fn;
	c->armed = 0;
	c->err = 0;
	ret = attach((const char *)(uintptr_t)c->env, (const char *)(uintptr_t)c->path);
	if (!ret) {
		keep_tool_path((const char *)(uintptr_t)c->path);
		atomic_store(&rocattach_watchdog_window[1], 0);
		atomic_fetch_add(&rocattach_watchdog_window[0], 1);
	}
	if (!ret && c->owner_pid && !start_err) {
		owner = (pid_t)c->owner_pid;
		owner_start = c->owner_start;
		end = c->end_ns ? ra_monotonic_of_realtime(c->end_ns) : 0;
		end += c->end_ns && !end;
		armed = true;
		c->armed = 1;
	} else if (!ret) {
		c->err = c->owner_pid ? start_err : EINVAL;
	}
	gen_next();
	pthread_mutex_unlock(&wd_lock);
	return ret;
}

EXPORT int rocattach_watchdog_detach(void)
{
	int ret;

	pthread_mutex_lock(&wd_lock);
	listener = (pid_t)syscall(SYS_gettid);
	ret = detach_fn ? detach_fn() : ROCATTACH_REGISTER_ATTACHMENT_NOT_AVAILABLE;
	/* Detached, or nothing was attached: nothing left to watch. */
	if (ret == ROCATTACH_REGISTER_SUCCESS || ret == ROCATTACH_REGISTER_INVALID_ARGUMENT)
		armed = false;
	gen_next();
	pthread_mutex_unlock(&wd_lock);
	return ret;
}

/* A fork child: no thread, nothing armed, the copied descriptors closed. */
static void atfork_child(void)
{
	pthread_mutex_init(&wd_lock, NULL);
	armed = false;
	detach_fn = NULL;
	listener = 0;
	if (wake >= 0)
		close(wake);
	if (watch_fd >= 0)
		close(watch_fd);
	wake = watch_fd = -1;
	start_err = ENOENT;
}

/*
 * Loaded on the listener: the thread starts now, ahead of any timed call,
 * every signal blocked. It needs no loader lock, so waiting for it here is safe.
 */
__attribute__((constructor)) static void watchdog_init(void)
{
	const char *d = getenv("ROCP_AGENT_DEBUG");
	sigset_t all, old;
	pthread_t th;

	debug = d && !strcmp(d, "1");
	wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake < 0) {
		start_err = errno;
		return;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	start_err = pthread_create(&th, NULL, watchdog_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (start_err) {
		close(wake);
		wake = -1;
		return;
	}
	pthread_detach(th);
	pthread_atfork(NULL, NULL, atfork_child);
	/* Whoever loaded us finds the thread named (the attacher's tests look for it). */
	pthread_mutex_lock(&wd_lock);
	while (!named)
		pthread_cond_wait(&named_cond, &wd_lock);
	pthread_mutex_unlock(&wd_lock);
	dbg("started");
}

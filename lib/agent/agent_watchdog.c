/* SPDX-License-Identifier: MIT */
/*
 * The attacher's liveness. The attacher names itself in
 * ROCP_ATTACH_OWNER=<pid>:<starttime>. After a successful attach a watchdog
 * thread (rocp-watchdog) waits for that process to end (pidfd, else a /proc
 * poll) and then runs tool_detach itself, as rocprofiler_register_detach
 * would: a dead launcher never leaves a tool attached. The same thread keeps
 * the window's own end (ROCP_ATTACH_END_NS: the planned stop plus the call
 * deadline): if no detach has come by then it detaches too, and notes when in
 * rocattach_agent_window, so that a stopped, hung or cut-off launcher holds no
 * tool either. The watch follows the latest attach and ends with a detach. One attacher per window:
 * while that owner lives, an attach from any other attacher is refused with EXCESS_API_INSTANCES
 * and a message naming the owner (the owner itself may attach again; a dead owner is taken over).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>

#include "agent/agent_base.h"
#include "agent/agent_tools.h"
#include "agent/agent_watchdog.h"
#include "common/clock.h"
#include "common/owner.h"
#include "common/protocol.h"

/*
 * The attacher of the current attach. owner_next is what the watchdog must
 * watch from generation owner_gen on; the watchdog takes its fd over (sets
 * it to -1), so an fd is closed by the agent only while nobody polls it.
 * All under agent_lock.
 */
static struct owner owner_next = {.fd = -1};
static unsigned int owner_gen;
static int wd_wake = -1; /* eventfd: owner_next changed */
static bool wd_started;
static struct owner wd_cur = {.fd = -1}; /* the watchdog's own copy */

/* Our agent's view of an attacher (agent.h) over the shared liveness checks. */
static bool owner_alive(const struct owner *o)
{
	return ra_owner_alive(o->pid, o->start);
}

/* ROCP_ATTACH_END_NS's value (CLOCK_REALTIME ns) as CLOCK_MONOTONIC; 0: none. */
static uint64_t end_of_value(const char *v)
{
	unsigned long long ns;
	uint64_t end;
	char tail;

	if (!v)
		return 0;
	if (sscanf(v, "%llu%c", &ns, &tail) != 1 || !ns) {
		dbg("ignoring %s=%s", RA_ENV_END_NS, v);
		return 0;
	}
	end = ra_monotonic_of_realtime(ns);
	return end ? end : 1;
}

/*
 * The attacher named by the environment buffer (nobody if absent). Its
 * pidfd is opened now, during its own call; the starttime check then rules
 * out a pid that was reused after it died.
 */
void owner_from_value(const char *v, const char *end, struct owner *o)
{
	unsigned long long pid, start;
	char tail;

	*o = (struct owner){.fd = -1, .end = end_of_value(end)};
	if (!v)
		return;
	if (sscanf(v, "%llu:%llu%c", &pid, &start, &tail) != 2 || !pid || pid > INT32_MAX) {
		dbg("ignoring %s=%s", RA_ENV_OWNER, v);
		return;
	}
	o->pid = (pid_t)pid;
	o->start = start;
	o->fd = ra_owner_open(o->pid, start, &o->dead);
	dbg("attacher %d (start %llu)%s", (int)o->pid, start, o->dead ? " is already gone" : "");
}

void owner_drop(struct owner *o)
{
	if (o->fd >= 0)
		close(o->fd);
	*o = (struct owner){.fd = -1};
}

/* Take over what owner_set published, if newer than what we watch. */
static unsigned int wd_adopt(unsigned int gen)
{
	pthread_mutex_lock(&agent_lock);
	if (gen != owner_gen) {
		owner_drop(&wd_cur);
		wd_cur = owner_next;
		owner_next.fd = -1;
		gen = owner_gen;
	}
	pthread_mutex_unlock(&agent_lock);
	return gen;
}

/*
 * Wait until the owner ends (1), its end passes with no detach (2), or
 * owner_set changes it (0).
 */
static int wd_wait(void)
{
	return ra_owner_wait(wd_wake, wd_cur.pid, wd_cur.start, wd_cur.fd, wd_cur.dead, wd_cur.end);
}

/* rocattach_agent_window: see agent.h. */
RA_EXPORT _Atomic uint64_t rocattach_agent_window[2];

void window_opened(void)
{
	atomic_store(&rocattach_agent_window[1], 0);
	atomic_fetch_add(&rocattach_agent_window[0], 1);
}

/*
 * The owner is gone (why 1), or its end passed with no detach (why 2):
 * detach unless an attach or detach came in since we adopted it (gen moved
 * on). Not through agent_enter: err_text belongs to the last remote call. A
 * remote call in progress holds agent_lock, so we never run tool_detach at
 * the same time as one; a detach that waits in the target for its stop
 * time holds it too, and then finds nothing to do here.
 */
static void wd_fire(unsigned int gen, int why)
{
	pthread_mutex_lock(&agent_lock);
	in_agent_set(true);
	if (gen == owner_gen && agent_attached) {
		if (why == 2)
			dbg("no detach came by the window's end: detaching the tools");
		else
			dbg("attacher %d is gone: detaching the tools", (int)wd_cur.pid);
		/* When the tools were handed back (agent_tools.c stamps it). */
		if (!detach_locked() && why == 2)
			atomic_store(&rocattach_agent_window[1],
				     atomic_load(&rocattach_agent_tool_event_ns[1]));
	}
	in_agent_set(false);
	pthread_mutex_unlock(&agent_lock);
	owner_drop(&wd_cur);
}

static void *watchdog_main(void *arg)
{
	unsigned int gen = 0;
	int r;

	(void)arg;
	thread_name("rocp-watchdog");
	for (;;) {
		gen = wd_adopt(gen);
		r = wd_wait();
		if (r == 1 || r == 2)
			wd_fire(gen, r);
	}
	return NULL;
}

/* Under agent_lock. Every signal blocked: it must never take the application's. */
static int watchdog_start(void)
{
	sigset_t all, old;
	pthread_t th;
	int err;

	wd_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wd_wake < 0)
		return -errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, NULL, watchdog_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(wd_wake);
		wd_wake = -1;
		return -err;
	}
	pthread_detach(th);
	wd_started = true;
	return 0;
}

/* Under agent_lock: from now on watch o (o->pid == 0: nobody). Takes o's fd. */
void owner_set(struct owner *o)
{
	uint64_t one = 1;
	int err;

	if ((o->pid || o->end) && !wd_started) {
		err = watchdog_start();
		if (err) {
			dbg("cannot start the watchdog: %s", strerror(-err));
			owner_drop(o);
		}
	}
	if (!wd_started)
		return;
	owner_drop(&owner_next);
	owner_next = *o;
	owner_gen++;
	if (write(wd_wake, &one, sizeof(one)) < 0)
		dbg("watchdog: eventfd write: %s", strerror(errno));
}

void owner_clear(void)
{
	struct owner none = {.fd = -1};

	owner_set(&none);
}

/*
 * One attacher per window. holder is the owner of the attach that opened the
 * window (pid 0: none named itself); since is when it did. Under agent_lock.
 */
static struct {
	pid_t pid;
	unsigned long long start;
	time_t since;
} holder;

void holder_set(const struct owner *o)
{
	if (o->pid != holder.pid || o->start != holder.start)
		holder.since = time(NULL);
	holder.pid = o->pid;
	holder.start = o->start;
}

/*
 * An attach while attached: the holder itself again (it lost its session),
 * a holder that is gone, or a window nobody named itself for is taken over,
 * as before. Any other attacher is refused while the holder lives, with
 * EXCESS_API_INSTANCES (ours: only for this) and the holder named.
 */
int holder_check(const struct owner *o)
{
	struct owner h = {.pid = holder.pid, .start = holder.start, .fd = -1};
	char comm[32] = "", when[16] = "?";
	struct tm tm;
	ssize_t n;
	int fd;

	if (!h.pid || (o->pid == h.pid && o->start == h.start) || !owner_alive(&h))
		return 0;
	snprintf(comm, sizeof(comm), "/proc/%d/comm", (int)h.pid);
	fd = open(comm, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, comm, sizeof(comm) - 1);
	if (fd >= 0)
		close(fd);
	comm[n > 0 ? n : 0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	if (localtime_r(&holder.since, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	return fail(ROCATTACH_REGISTER_EXCESS_API_INSTANCES,
		    "process %d is attached by %s (pid %d, since %s): wait for its window to end",
		    (int)getpid(), comm[0] ? comm : "another attacher", (int)h.pid, when);
}

/* The window is closed: nobody holds it. */
void holder_clear(void)
{
	holder.pid = 0;
}

/* A fork child has no watchdog: its descriptors are copies it does not need. */
void watchdog_atfork_child(void)
{
	if (wd_wake >= 0)
		close(wd_wake);
	wd_wake = -1;
	wd_started = false;
	owner_drop(&owner_next);
	owner_drop(&wd_cur);
}

/* Under agent_lock: the window is closed (its tools handed back). */
void window_closed(void)
{
	agent_attached = false;
	holder_clear();
	owner_clear();
}

int detach_locked(void)
{
	if (!agent_attached)
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT, "not attached");
	tools_hand_back();
	window_closed();
	return ROCATTACH_REGISTER_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * The rocp-bg-attach listener: with ROCP_TOOL_ATTACH=1 at start, a
 * constructor parks one thread of that name in a condition wait (or
 * --inject's rocattach_agent_enable does, later). An attacher stops that
 * thread with ptrace and calls rocprofiler_register_attach/_detach on it,
 * so the calls run on a thread that holds no application lock. Where ROCm's
 * rocprofiler-register has its own listener, we stand aside.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent/agent_base.h"
#include "agent/agent_listener.h"
#include "agent/agent_watchdog.h"
#include "common/protocol.h"

atomic_bool listening;

/* The listener parks on park_cond; nothing ever signals it. */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t parked_cond = PTHREAD_COND_INITIALIZER;
static bool parked;

/*
 * The attacher stops this thread inside the futex wait and runs our entry
 * points on it. pthread_cond_wait has released park_lock by then, so the
 * thread holds no lock anyone else wants; a remote call may end the wait
 * early, hence the loop.
 */
static pthread_t listener_thread;
static atomic_bool listener_known;

bool on_listener(void)
{
	return atomic_load(&listener_known) && pthread_equal(pthread_self(), listener_thread);
}

static void *listener_main(void *arg)
{
	(void)arg;
	listener_thread = pthread_self();
	atomic_store(&listener_known, true);
	thread_name(RA_LISTENER_COMM);
	pthread_mutex_lock(&park_lock);
	parked = true;
	pthread_cond_signal(&parked_cond);
	for (;;)
		pthread_cond_wait(&park_cond, &park_lock);
	return NULL;
}

/*
 * Only the forking thread survives: there is no listener any more, and a
 * thread that held agent_lock is gone. If the forking thread itself is in
 * one of our calls (a tool forked), it holds the lock and will release it.
 */
static void agent_atfork_child(void)
{
	listening = false;
	if (!in_agent())
		pthread_mutex_init(&agent_lock, NULL);
	watchdog_atfork_child();
}

/*
 * The listener runs our code forever: if the host dlopen'ed us, a dlclose
 * must not unmap it.
 */
static void pin_self(void)
{
	Dl_info info;

	if (!dladdr((void *)listener_main, &info) || !info.dli_fname)
		return;
	if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
		dbg("cannot pin %s: %s", info.dli_fname, dlerror());
}

/*
 * glibc starts a thread with every signal blocked and installs the inherited
 * mask only once it runs. The listener gives park_lock up only by entering
 * its wait, so once we get it back, an attacher arriving right after start
 * finds the thread settled and parked.
 */
static void listener_wait_parked(void)
{
	pthread_mutex_lock(&park_lock);
	while (!parked)
		pthread_cond_wait(&parked_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

/*
 * The new thread inherits the creator's signal mask, so block everything
 * around pthread_create: the listener never takes a signal meant for the
 * application. (glibc keeps its internal cancel/setxid signals unblocked.)
 */
static int listener_start(void)
{
	sigset_t all, old;
	pthread_t th;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, NULL, listener_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_detach(th);
	listener_wait_parked();
	return 0;
}

static bool env_true(const char *name)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	const char *v = getenv(name);
	size_t i;

	for (i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(v, yes[i]))
			return true;
	return false;
}

/* Start the listener once; 0 if it runs (now or already), else -errno. */
int agent_enable(void)
{
	static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;
	int err = 0;

	pthread_mutex_lock(&enable_lock);
	if (listening)
		goto out;
	err = listener_start();
	if (err) {
		dbg("cannot start the attach listener: %s", strerror(-err));
		goto out;
	}
	pin_self();
	pthread_atfork(NULL, NULL, agent_atfork_child);
	listening = true;
	dbg("attach listener " RA_LISTENER_COMM " started");
out:
	pthread_mutex_unlock(&enable_lock);
	return err;
}

/*
 * Ours: start the listener in a process that did not have ROCP_TOOL_ATTACH=1
 * at start. The attacher calls it remotely after loading us with dlopen
 * (--inject); it returns once the listener is parked.
 */
RA_EXPORT int rocattach_agent_enable(void)
{
	return agent_enable();
}

/*
 * ROCm's rocprofiler-register starts its own rocp-bg-attach listener under
 * ROCP_TOOL_ATTACH=1 (a HIP program, with our agent added by a site policy
 * such as the Slurm plugin). One listener per process: we stand aside, and
 * attachers (ours prefer librocprofiler-register.so*) drive ROCm's.
 *
 * Called from our constructor, when every object loaded at start (preloads,
 * DT_NEEDED) is mapped and relocated, whatever their order; an object
 * dlopen'ed later is not seen. No dlopen(RTLD_NOLOAD) here: at start it would
 * run the other object's constructor early. The first definition in the
 * global scope is ROCm's when it comes before us, else the next one after
 * us is. Objects are compared by load base, never by symbol address: our own
 * exported entry point may be interposed by ROCm's. A copy of this agent
 * built under ROCm's file name is another object too, and keeps the listener.
 */
static bool rocm_register_loaded(void)
{
	static const char entry[] = RA_ENTRY_ATTACH;
	static const char prefix[] = RA_ROCM_REGISTER_PREFIX;
	Dl_info self, other;
	const char *base;
	void *sym;

	if (!dladdr((void *)rocm_register_loaded, &self))
		return false;
	sym = dlsym(RTLD_DEFAULT, entry);
	if (!sym || !dladdr(sym, &other) || other.dli_fbase == self.dli_fbase) {
		sym = dlsym(RTLD_NEXT, entry);
		if (!sym || !dladdr(sym, &other) || other.dli_fbase == self.dli_fbase)
			return false;
	}
	base = other.dli_fname ? strrchr(other.dli_fname, '/') : NULL;
	base = base ? base + 1 : other.dli_fname;
	if (!base || strncmp(base, prefix, sizeof(prefix) - 1))
		return false;
	dbg("%s is loaded and has its own attach listener: standing aside", other.dli_fname);
	return true;
}

__attribute__((constructor)) static void agent_init(void)
{
	if (env_true("ROCP_TOOL_ATTACH") && !rocm_register_loaded())
		agent_enable();
}

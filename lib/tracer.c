/* SPDX-License-Identifier: MIT */
/*
 * The library's tracer threads (see tracer.h).
 *
 * Why a thread per operation, and not a hand-over: every ptrace request on
 * a tracee must come from the thread that attached it, and a tracee that is
 * not stopped can be neither detached (PTRACE_DETACH gives ESRCH) nor
 * handed to another thread (that needs a detach, then a new seize). The
 * thread left unstopped is one held in a sleep that PTRACE_INTERRUPT does
 * not break (TASK_UNINTERRUPTIBLE or TASK_KILLABLE: a vfork parent, a FUSE
 * or NFS request). Its only tracer can be the thread that seized it, so that
 * thread must be ours from the start: each operation runs whole on a new
 * thread of this library, which the caller waits for. A thread that could
 * not be stopped is kept by it after the caller has its answer: it waits
 * (blocking waitpid on that tid alone, so no CPU) for the interrupt stop
 * the thread owes, detaches it there, and exits. If the process exits
 * first, the kernel detaches the thread (exit_ptrace clears the pending
 * interrupt): nothing is left either way. The library is linked with
 * -z nodelete, so a lingering tracer's code is never unmapped under it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "log.h"
#include "ptrace_calls.h"
#include "tracer.h"

/* As the node pool's workers: the operations run the same code. */
#define TRACER_STACK_BYTES (512 * 1024)

struct kept {
	pid_t pid, tid;
	uint64_t since;
	struct kept *next;     /* every kept thread (kept_list) */
	struct kept *next_own; /* its tracer's, in order */
};

struct tracer {
	int (*fn)(void *);
	void *arg;
	int ret;
	bool done;    /* fn returned: the caller may go (fn and arg are the caller's) */
	bool lingers; /* ...and the thread stays on, keeping threads: not joined */
	int refs;     /* the caller and the thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct kept *own, **own_tail; /* only the tracer thread touches these */
};

static __thread struct tracer *current;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept *kept_list;

static void tracer_put(struct tracer *t)
{
	bool last;

	pthread_mutex_lock(&t->lock);
	last = --t->refs == 0;
	pthread_mutex_unlock(&t->lock);
	if (!last)
		return;
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static void kept_drop(struct kept *k)
{
	struct kept **pp;

	pthread_mutex_lock(&kept_lock);
	for (pp = &kept_list; *pp; pp = &(*pp)->next) {
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	}
	pthread_mutex_unlock(&kept_lock);
}

bool ra_tracer_keep(pid_t pid, pid_t tid, uint64_t since)
{
	struct tracer *t = current;
	struct kept *k;

	if (!t)
		return false;
	k = calloc(1, sizeof(*k));
	if (!k)
		return false;
	k->pid = pid;
	k->tid = tid;
	k->since = since;
	*t->own_tail = k;
	t->own_tail = &k->next_own;
	pthread_mutex_lock(&kept_lock);
	k->next = kept_list;
	kept_list = k;
	pthread_mutex_unlock(&kept_lock);
	return true;
}

bool ra_tracer_keeps(pid_t pid, pid_t tid)
{
	bool found = false;

	pthread_mutex_lock(&kept_lock);
	for (struct kept *k = kept_list; k && !found; k = k->next)
		found = k->pid == pid && k->tid == tid;
	pthread_mutex_unlock(&kept_lock);
	return found;
}

int ra_tracer_kept_count(void)
{
	int n = 0;

	pthread_mutex_lock(&kept_lock);
	for (struct kept *k = kept_list; k; k = k->next)
		n++;
	pthread_mutex_unlock(&kept_lock);
	return n;
}

/*
 * A stop of a kept thread: what to detach it with. The interrupt stop and a
 * group stop go with no signal (a group stop stays in force after the
 * detach); a signal-delivery stop passes its signal on. A thread it
 * created (were PTRACE_O_TRACECLONE set) is traced from birth: kept too.
 */
static int stop_signal(struct kept *k, int status)
{
	unsigned long msg = 0;
	struct ra_err ignore = {0};

	if (status >> 16 == PTRACE_EVENT_CLONE) {
		if (!ra_ptrace(PTRACE_GETEVENTMSG, k->tid, NULL, &msg, &ignore) && msg)
			ra_tracer_keep(k->pid, (pid_t)msg, ra_monotonic_ns());
		return 0;
	}
	if (status >> 16 == 0 && WSTOPSIG(status) != (SIGTRAP | 0x80))
		return WSTOPSIG(status);
	return 0;
}

/* Wait, without end, for the stop k's thread owes, and release it there. */
static void keep_one(struct kept *k)
{
	struct ra_err e = {0};
	int status, sig;
	pid_t w;

	do
		w = waitpid(k->tid, &status, __WALL);
	while (w < 0 && errno == EINTR);
	if (w != k->tid || !WIFSTOPPED(status)) {
		ra_info("process %d: kept thread %d ended before it stopped: no longer traced",
			k->pid, k->tid);
		return;
	}
	sig = stop_signal(k, status);
	if (ra_ptrace(PTRACE_DETACH, k->tid, NULL, (void *)(uintptr_t)sig, &e)) {
		ra_info("process %d: kept thread %d: %s", k->pid, k->tid, e.msg);
		return;
	}
	ra_info("process %d: thread %d stopped %.1f s after PTRACE_INTERRUPT and was released",
		k->pid, k->tid, (double)(ra_monotonic_ns() - k->since) / 1e9);
}

static void *tracer_main(void *arg)
{
	struct tracer *t = arg;
	struct kept *k;
	int ret;

	pthread_setname_np(pthread_self(), "rocattach-trace");
	current = t;
	ret = t->fn(t->arg);
	pthread_mutex_lock(&t->lock);
	t->ret = ret;
	t->done = true;
	t->lingers = t->own != NULL;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	/* The caller has its answer; what could not be released is released now. */
	while ((k = t->own)) {
		keep_one(k);
		t->own = k->next_own;
		if (!t->own)
			t->own_tail = &t->own;
		kept_drop(k);
		free(k);
	}
	current = NULL;
	tracer_put(t);
	return NULL;
}

static int start_thread(struct tracer *t, pthread_t *th)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int err;

	err = pthread_attr_init(&attr);
	if (err)
		return err;
	pthread_attr_setstacksize(&attr, TRACER_STACK_BYTES);
	/* It takes none of the program's signals: it inherits a full mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(th, &attr, tracer_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err;
}

/*
 * The caller waits for fn, then joins the thread, which ends at once,
 * unless it keeps threads: then it is detached and lingers. Joined, no
 * thread of ours outlives a call that left nothing behind, and the next
 * call finds its stack and malloc arena free for reuse.
 */
int ra_tracer_run(int (*fn)(void *), void *arg, int *ret, struct ra_err *e)
{
	struct tracer *t = calloc(1, sizeof(*t));
	bool lingers;
	pthread_t th;
	int err;

	if (!t)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR, "out of memory"), -ENOMEM;
	t->fn = fn;
	t->arg = arg;
	t->refs = 2;
	t->own_tail = &t->own;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	err = start_thread(t, &th);
	if (err) {
		pthread_cond_destroy(&t->cond);
		pthread_mutex_destroy(&t->lock);
		free(t);
		ra_err_set(e, ROCATTACH_STATUS_ERROR,
			   "could not start a tracer thread (pthread_create: %s): nothing was done",
			   strerror(err));
		return -err;
	}
	pthread_mutex_lock(&t->lock);
	while (!t->done)
		pthread_cond_wait(&t->cond, &t->lock);
	*ret = t->ret;
	lingers = t->lingers;
	pthread_mutex_unlock(&t->lock);
	if (lingers)
		pthread_detach(th);
	else
		pthread_join(th, NULL);
	tracer_put(t);
	return 0;
}

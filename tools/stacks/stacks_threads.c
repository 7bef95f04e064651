/* SPDX-License-Identifier: MIT */
/* The stack tool's thread table, its scans and its sampling timers (stacks_threads.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stacks_proc.h"
#include "stacks_threads.h"

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

/* The poller's wait, cut short by threads_stop. */
static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t poll_cond;

/*
 * Under the scan lock: each tid's newest entry (its index + 1, 0 free), so that
 * a scan finds a thread in constant time at any thread count. The handler does
 * not use it (thread_of).
 */
#define TID_SLOTS 4096 /* over 2 x MAX_THREADS: open addressing stays short */
static int tid_slot[TID_SLOTS];
static unsigned scan_gen;

/* What one scan has checked already, and what it found. */
struct scan {
	bool arm;
	bool timers_checked;
	bool busy; /* a thread new, ended, armed, or to be looked at again */
	unsigned gen;
};

static unsigned slot_of(pid_t tid)
{
	return ((unsigned)tid * 2654435761u) % TID_SLOTS;
}

static struct thread *lookup(pid_t tid)
{
	for (unsigned h = slot_of(tid); tid_slot[h]; h = (h + 1) % TID_SLOTS)
		if (st.threads[tid_slot[h] - 1].tid == tid)
			return &st.threads[tid_slot[h] - 1];
	return NULL;
}

static void remember(int i)
{
	unsigned h = slot_of(st.threads[i].tid);

	while (tid_slot[h] && st.threads[tid_slot[h] - 1].tid != st.threads[i].tid)
		h = (h + 1) % TID_SLOTS;
	tid_slot[h] = i + 1;
}

struct thread *thread_of(pid_t tid)
{
	int n = atomic_load(&st.n_threads);

	for (int i = n - 1; i >= 0; i--)
		if (st.threads[i].tid == tid)
			return &st.threads[i];
	return NULL;
}

void threads_reset(void)
{
	pthread_mutex_lock(&scan_lock);
	atomic_store(&st.n_threads, 0);
	memset(tid_slot, 0, sizeof(tid_slot));
	st.n_armed = 0;
	st.too_many = false;
	atomic_store(&st.taken, TAKEN_NO);
	st.taken_note[0] = '\0';
	pthread_mutex_unlock(&scan_lock);
}

/* Under the lock. */
static struct thread *add_thread(pid_t tid)
{
	int n = atomic_load(&st.n_threads);
	struct thread *t;

	if (n == MAX_THREADS) {
		st.too_many = true;
		return NULL;
	}
	t = &st.threads[n];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->cpu_ns = -1;
	atomic_store(&t->snap_record, -1);
	read_name(tid, t->name, sizeof(t->name));
	remember(n);
	/* Published last: the handler reads the table without a lock. */
	atomic_store(&st.n_threads, n + 1);
	return t;
}

struct thread *threads_add(pid_t tid)
{
	struct thread *t;

	pthread_mutex_lock(&scan_lock);
	t = add_thread(tid);
	pthread_mutex_unlock(&scan_lock);
	return t;
}

/* The CPU time of a thread while it was sampled; a thread that ended has no clock left. */
static void cpu_used(struct thread *t)
{
	struct timespec ts;

	if (clock_gettime(t->clock, &ts))
		return;
	t->cpu_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - t->cpu0;
}

/* Under the lock. */
static void disarm(struct thread *t)
{
	if (!t->has_timer)
		return;
	if (!t->ended)
		cpu_used(t);
	timer_delete(t->timer);
	t->has_timer = false;
	st.n_armed--;
}

static void disarm_all(void)
{
	int n = atomic_load(&st.n_threads);

	for (int i = 0; i < n; i++)
		disarm(&st.threads[i]);
}

/* A per-thread timer on tid's CPU time (the clock id glibc's pthread_getcpuclockid makes). */
static void arm_timer(struct thread *t)
{
	clockid_t clk = (clockid_t)((~(unsigned)t->tid << 3) | 6);
	struct sigevent ev = {0};
	struct itimerspec its = {0};
	long ns = 1000000000L / st.hz;
	struct timespec ts;

	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = st.sig;
	ev._sigev_un._tid = t->tid;
	if (timer_create(clk, &ev, &t->timer))
		return;
	its.it_interval.tv_sec = ns / 1000000000L;
	its.it_interval.tv_nsec = ns % 1000000000L;
	its.it_value = its.it_interval;
	if (clock_gettime(clk, &ts) || timer_settime(t->timer, 0, &its, NULL)) {
		timer_delete(t->timer);
		return;
	}
	t->clock = clk;
	t->cpu0 = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	t->has_timer = true;
	st.n_armed++;
}

/* Is the signal's disposition still our handler? */
static bool signal_ours(void)
{
	struct sigaction sa;

	if (sigaction(st.sig, NULL, &sa))
		return false;
	return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == st.our_handler;
}

/* The program took the signal: every timer of ours goes now, and no other is made. */
static void give_up(int kind)
{
	unsigned long long ms = (now_ns() - st.attach_ns) / 1000000ULL;

	atomic_store(&st.sampling, 0);
	disarm_all();
	snprintf(st.taken_note, sizeof(st.taken_note),
		 "signal %d was taken by the program %llu ms into the window (%s): sampling "
		 "stopped there, every timer of the tool deleted",
		 st.sig, ms, kind == TAKEN_HANDLER ? "a handler of its own" : "a timer of its own");
	atomic_store(&st.taken, kind);
}

/*
 * Before a timer is made: the disposition is still ours, and (once a scan)
 * no timer but ours names the signal.
 */
static bool may_arm(struct scan *sc)
{
	int n;

	if (!signal_ours()) {
		give_up(TAKEN_HANDLER);
		return false;
	}
	if (sc->timers_checked)
		return true;
	sc->timers_checked = true;
	n = timers_with_signal(st.sig);
	if (n > st.n_armed) {
		give_up(TAKEN_TIMER);
		return false;
	}
	return true;
}

static bool may_sample(void)
{
	return st.hz && atomic_load(&st.sampling) && atomic_load(&st.taken) == TAKEN_NO;
}

/* Under the lock. */
static int see_task(pid_t tid, void *arg)
{
	struct scan *sc = arg;
	struct thread *t = lookup(tid);

	/* A tid seen ended and here again is a new thread. */
	if (!t || t->ended) {
		t = add_thread(tid);
		sc->busy |= t != NULL;
	}
	if (!t)
		return 0;
	t->seen = sc->gen;
	if (!sc->arm || t->timer_tried || !may_sample())
		return 0;
	/*
	 * A thread that blocks the signal would only collect it pending. But a new
	 * thread starts with every signal blocked until glibc's start routine
	 * restores its mask: look again on the next scans (BLOCKED_SCANS, about
	 * 200 ms) before taking it for one that blocks the signal. Only scans after
	 * it first ran count: on a loaded machine a new thread can wait longer
	 * than that for its first turn on a CPU.
	 */
	sc->busy = true;
	if (sig_in_mask(status_mask(tid, "SigBlk:"), st.sig)) {
		if (has_run(tid) && ++t->blocked_scans >= BLOCKED_SCANS)
			t->timer_tried = true;
		return 0;
	}
	if (!may_arm(sc))
		return 1;
	t->timer_tried = true;
	arm_timer(t);
	return 0;
}

static bool task_gone(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	return access(path, F_OK) != 0;
}

static void end(struct thread *t)
{
	t->ended = true;
	disarm(t);
}

/*
 * Under the lock: a thread the scan's listing did not show has ended if
 * /proc says so (the listing leaves out the scanning thread itself); the
 * others cost no system call.
 */
static bool end_unseen(unsigned gen)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	int n = atomic_load(&st.n_threads);
	bool any = false;

	for (int i = 0; i < n; i++) {
		struct thread *t = &st.threads[i];

		if (t->ended || t->seen == gen || t->tid == self || !task_gone(t->tid))
			continue;
		end(t);
		any = true;
	}
	return any;
}

/* Under the lock: threads gone from /proc/self/task are ended, their timers deleted. */
static void mark_ended(void)
{
	int n = atomic_load(&st.n_threads);

	for (int i = 0; i < n; i++)
		if (!st.threads[i].ended && task_gone(st.threads[i].tid))
			end(&st.threads[i]);
}

bool threads_scan(bool arm)
{
	struct scan sc = {.arm = arm};

	pthread_mutex_lock(&scan_lock);
	sc.gen = ++scan_gen;
	if (arm && may_sample() && !signal_ours())
		give_up(TAKEN_HANDLER);
	each_task(see_task, &sc);
	sc.busy |= end_unseen(sc.gen);
	pthread_mutex_unlock(&scan_lock);
	return sc.busy;
}

/* Wait ms, or less if threads_stop comes. */
static void poll_wait(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&poll_lock);
	while (!atomic_load(&st.stop_poller))
		if (pthread_cond_timedwait(&poll_cond, &poll_lock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&poll_lock);
}

/*
 * Arms timers for threads created during the window; it takes no signal
 * itself. It looks every poll_ms while threads come, go or wait to be armed,
 * and less often, up to MAX_POLL_MS, while none does (stacks_state.h).
 */
static void *poller_main(void *arg)
{
	long base = st.poll_ms > 0 ? st.poll_ms : DEFAULT_POLL_MS, ms = base;

	(void)arg;
	/* Its own name: its CPU time is the tool's, apart from the program's threads'. */
	pthread_setname_np(pthread_self(), "rocattach-poll");
	while (!atomic_load(&st.stop_poller)) {
		if (threads_scan(true))
			ms = base;
		else if (ms < MAX_POLL_MS)
			ms = ms * 2 < MAX_POLL_MS ? ms * 2 : MAX_POLL_MS;
		poll_wait(ms);
	}
	return NULL;
}

int threads_start_poller(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	/* The new thread inherits a full mask: no signal of the process lands in it. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&poll_cond, &ca);
	pthread_condattr_destroy(&ca);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&st.stop_poller, 0);
	rc = pthread_create(&st.poller, NULL, poller_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&poll_cond);
		snprintf(st.note, sizeof(st.note), "pthread_create: %s", strerror(rc));
		return -1;
	}
	st.poller_running = true;
	return 0;
}

void threads_stop(void)
{
	pthread_mutex_lock(&poll_lock);
	atomic_store(&st.stop_poller, 1);
	if (st.poller_running)
		pthread_cond_broadcast(&poll_cond);
	pthread_mutex_unlock(&poll_lock);
	if (st.poller_running) {
		pthread_join(st.poller, NULL);
		pthread_cond_destroy(&poll_cond);
	}
	st.poller_running = false;
	pthread_mutex_lock(&scan_lock);
	atomic_store(&st.sampling, 0);
	mark_ended();
	disarm_all();
	pthread_mutex_unlock(&scan_lock);
}

void threads_atfork_child(void)
{
	/* The lock may have been held by the poller, which the child does not have. */
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	memcpy(&scan_lock, &fresh, sizeof(fresh));
	memcpy(&poll_lock, &fresh, sizeof(fresh));
	st.poller_running = false;
	st.n_armed = 0;
	atomic_store(&st.n_threads, 0);
}

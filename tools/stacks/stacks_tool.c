/* SPDX-License-Identifier: MIT */
/*
 * librocattach-stacks.so: the stacks of every thread of the process it is
 * attached to (docs/stacks.md). At tool_attach it takes one snapshot of all
 * threads; with ROCPROF_STACKS_HZ > 0 it also samples every thread on its CPU
 * time until tool_detach. At tool_detach it stops, puts back what it changed
 * and writes one file (stacks_format.h).
 *
 * The signal handler unwinds with libunwind (local only) into records
 * allocated at attach: no malloc, no locks, only atomics. The signal is a
 * real-time one the process does not use (no handler, blocked in no thread,
 * named by no timer); the file says which.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <rocattach/tool.h>

#include "stacks_format.h"

#define TOOL_EXPORT __attribute__((visibility("default")))
#define TOOL_NAME "rocattach-stacks"

_Static_assert(sizeof(unw_context_t) >= sizeof(ucontext_t), "libunwind's context is the ucontext");

#define MAX_THREADS 1024
#define DEFAULT_FRAMES 64
#define MAX_FRAMES 256
#define DEFAULT_BUFFER_MB 16
#define DEFAULT_SNAPSHOT_MS 500
#define MAX_HZ 10000

enum slot_state { SLOT_FREE, SLOT_ASKED, SLOT_BUSY, SLOT_DONE };

/* One record: a snapshot or a sample of one thread. */
struct record {
	int32_t tid;
	uint8_t kind; /* RS_KIND_* */
	uint8_t pad[3];
	uint64_t ns;
	uint64_t handler_ns; /* CLOCK_MONOTONIC from the handler's first read to after the unwind */
	uint64_t entry_mono; /* snapshots: CLOCK_MONOTONIC at the handler's entry */
	uint32_t nframes;
	uint32_t truncated;
	uint64_t frames[]; /* max_frames of them */
};

enum { RS_KIND_SNAPSHOT = 1, RS_KIND_SAMPLE = 2 };

/* Scans of the poller (10 ms apart) a thread may show the signal blocked before it is
 * taken for one that blocks it (see see_task). */
#define BLOCKED_SCANS 20

/* A thread the tool knows: its snapshot slot and its sampling timer. */
struct thread {
	pid_t tid;
	char name[16];
	bool has_timer, timer_tried;
	int blocked_scans; /* poller scans that found the signal blocked in it */
	bool ended;	   /* gone from /proc/self/task during the window */
	timer_t timer;
	clockid_t clock;	/* its CPU-time clock */
	long long cpu0, cpu_ns; /* CPU time at the timer's start; used while sampled, or -1 */
	/* The snapshot: the state, then the record the handler filled. */
	_Atomic int snap;
	_Atomic long snap_record;	     /* index in the pool, -1 none */
	unsigned long long sent_mono;	     /* CLOCK_MONOTONIC read just before its tgkill */
	_Atomic unsigned long long ret_mono; /* read at the end of its handler, 0 none */
	const char *snap_status;
};

struct stacks {
	int sig;
	long hz;
	unsigned max_frames;
	size_t record_size;
	size_t n_records;
	char *pool;
	_Atomic size_t next_record;
	_Atomic unsigned long dropped;
	_Atomic unsigned long overruns; /* timer expiries while its signal was pending */
	_Atomic int in_handler;
	_Atomic int sampling; /* the handler takes samples only while set */
	bool unwind;	      /* ROCPROF_STACKS_UNWIND=0: snapshots answer without frames */
	struct sigaction old_action;
	bool installed;
	struct thread threads[MAX_THREADS];
	_Atomic int n_threads;
	pthread_t poller;
	bool poller_running;
	_Atomic int stop_poller;
	pid_t self_tid;
	unsigned long long attach_ns, detach_ns;
	unsigned attach_seq;
	bool atexit_set;
	bool too_many;	/* more than MAX_THREADS threads: the others are not seen */
	pid_t pid;	/* a fork child inherits st: its exit is not ours to write */
	char note[256]; /* why something did not happen, for the file */
};

static struct stacks st;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static long env_long(const char *name, long def, long min, long max)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || n < min || n > max)
		return def;
	return n;
}

static struct record *record_at(size_t i)
{
	return (struct record *)(st.pool + i * st.record_size);
}

static struct thread *thread_of(pid_t tid)
{
	int n = atomic_load(&st.n_threads);

	for (int i = 0; i < n; i++)
		if (st.threads[i].tid == tid)
			return &st.threads[i];
	return NULL;
}

/*
 * Unwind from uc, the interrupted context the kernel handed the handler
 * (libunwind's context is the ucontext on Linux), or from here when uc is
 * NULL. Frames are instruction pointers: the first one exact, the others
 * return addresses.
 */
static void unwind_into(struct record *r, void *uc)
{
	unw_context_t here;
	unw_cursor_t cur;
	unw_word_t ip;
	int rc;

	r->nframes = 0;
	r->truncated = 0;
	if (uc)
		rc = unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME);
	else
		rc = unw_getcontext(&here) || unw_init_local(&cur, &here);
	if (rc)
		return;
	do {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) || !ip)
			break;
		if (r->nframes == st.max_frames) {
			r->truncated = 1;
			break;
		}
		r->frames[r->nframes++] = (uint64_t)ip;
	} while (unw_step(&cur) > 0);
}

static long claim_record(void)
{
	size_t i = atomic_fetch_add(&st.next_record, 1);

	if (i >= st.n_records) {
		atomic_fetch_add(&st.dropped, 1);
		return -1;
	}
	return (long)i;
}

static void handler(int sig, siginfo_t *si, void *uc)
{
	unsigned long long entry = mono_ns();
	int saved = errno;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	struct thread *t;
	struct record *r;
	int expected;
	long i;

	(void)sig;
	atomic_fetch_add(&st.in_handler, 1);
	if (si->si_code == SI_TIMER) {
		if (!atomic_load(&st.sampling))
			goto out;
		if (si->si_overrun > 0)
			atomic_fetch_add(&st.overruns, (unsigned long)si->si_overrun);
		i = claim_record();
		if (i < 0)
			goto out;
		r = record_at((size_t)i);
		r->tid = tid;
		r->kind = RS_KIND_SAMPLE;
		r->ns = now_ns();
		unwind_into(r, uc);
		goto out;
	}
	/* A snapshot request (tgkill): answer only if asked, once. */
	t = thread_of(tid);
	expected = SLOT_ASKED;
	if (!t || !atomic_compare_exchange_strong(&t->snap, &expected, SLOT_BUSY))
		goto out;
	i = claim_record();
	if (i >= 0) {
		r = record_at((size_t)i);
		r->tid = tid;
		r->kind = RS_KIND_SNAPSHOT;
		r->ns = now_ns();
		r->entry_mono = entry;
		if (st.unwind)
			unwind_into(r, uc);
		else
			r->nframes = r->truncated = 0;
		r->handler_ns = mono_ns() - entry;
	}
	atomic_store(&t->snap_record, i);
	/* The last read: the snapshot's hold ends with this handler's return. */
	atomic_store(&t->ret_mono, mono_ns());
	atomic_store(&t->snap, SLOT_DONE);
out:
	atomic_fetch_sub(&st.in_handler, 1);
	errno = saved;
}

/* A line of /proc/self/task/TID/status, e.g. "SigBlk:", as a mask; 0 if unreadable. */
static unsigned long long status_mask(pid_t tid, const char *key)
{
	char path[64], line[256];
	unsigned long long m = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			m = strtoull(line + strlen(key), NULL, 16);
			break;
		}
	fclose(f);
	return m;
}

static bool sig_in_mask(unsigned long long mask, int sig)
{
	return (mask >> (sig - 1)) & 1;
}

/* Signals named by the process's POSIX timers (/proc/self/timers, "signal: N/..."). */
static unsigned long long timer_signals(void)
{
	unsigned long long m = 0;
	char line[256];
	FILE *f = fopen("/proc/self/timers", "re");
	int s;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "signal: %d/", &s) == 1 && s > 0 && s <= 64)
			m |= 1ULL << (s - 1);
	fclose(f);
	return m;
}

/* Call fn for every thread of the process but this one; stops early when fn returns nonzero. */
static void each_task(int (*fn)(pid_t tid, void *arg), void *arg)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t self = (pid_t)syscall(SYS_gettid);

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != self && fn(atoi(e->d_name), arg))
			break;
	closedir(d);
}

/* The real-time signals, SIGRTMIN to SIGRTMAX, as a mask of /proc's kind. */
static unsigned long long rt_mask(void)
{
	unsigned long long m = 0;

	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		m |= 1ULL << (s - 1);
	return m;
}

/*
 * A thread that blocks every real-time signal (a helper thread that takes
 * no signals: ROCm's, the agent's) says nothing about one signal; a thread
 * that blocks some of them may wait for those (sigwait, signalfd).
 */
static int or_blocked(pid_t tid, void *arg)
{
	unsigned long long blk = status_mask(tid, "SigBlk:"), rt = rt_mask();

	if ((blk & rt) != rt)
		*(unsigned long long *)arg |= blk;
	return 0;
}

/*
 * The highest real-time signal with the default action, blocked by no
 * thread that takes real-time signals, and named by no timer: programs that
 * take one usually take the lowest. 0 if none is free.
 */
static int pick_signal(void)
{
	unsigned long long busy = timer_signals();
	struct sigaction sa;

	each_task(or_blocked, &busy);
	for (int s = SIGRTMAX; s >= SIGRTMIN; s--) {
		if (sig_in_mask(busy, s) || sigaction(s, NULL, &sa))
			continue;
		if (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL)
			return s;
	}
	return 0;
}

static void read_name(struct thread *t)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)t->tid);
	strcpy(t->name, "?");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, t->name, sizeof(t->name) - 1);
	close(fd);
	if (n <= 0) {
		strcpy(t->name, "?");
		return;
	}
	t->name[n] = '\0';
	t->name[strcspn(t->name, "\n")] = '\0';
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
}

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
	read_name(t);
	/* Published last: the handler reads the table without a lock. */
	atomic_store(&st.n_threads, n + 1);
	return t;
}

static int see_task(pid_t tid, void *arg)
{
	struct thread *t = thread_of(tid);

	(void)arg;
	if (!t)
		t = add_thread(tid);
	if (!t || !st.hz || t->timer_tried || t->ended || atomic_load(&st.stop_poller))
		return 0;
	/*
	 * A thread that blocks the signal would only collect it pending. But a new
	 * thread starts with every signal blocked until glibc's start routine
	 * restores its mask: look again on the next scans (BLOCKED_SCANS, about
	 * 200 ms) before taking it for one that blocks the signal.
	 */
	if (sig_in_mask(status_mask(tid, "SigBlk:"), st.sig)) {
		if (++t->blocked_scans >= BLOCKED_SCANS)
			t->timer_tried = true;
		return 0;
	}
	t->timer_tried = true;
	arm_timer(t);
	return 0;
}

static void mark_ended(void)
{
	char path[64];
	int n = atomic_load(&st.n_threads);

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/self/task/%d", (int)st.threads[i].tid);
		if (!st.threads[i].ended && access(path, F_OK))
			st.threads[i].ended = true;
	}
}

/* Arms timers for threads created during the window; it takes no signal itself. */
static void *poller_main(void *arg)
{
	struct timespec ts = {0, 10000000L};

	(void)arg;
	while (!atomic_load(&st.stop_poller)) {
		each_task(see_task, NULL);
		mark_ended();
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Ask every known thread, then wait for the answers until the deadline. */
static void snapshot(long timeout_ms)
{
	unsigned long long deadline = now_ns() + (unsigned long long)timeout_ms * 1000000ULL;
	int n = atomic_load(&st.n_threads);
	pid_t pid = getpid();
	bool waiting;

	for (int i = 0; i < n; i++) {
		struct thread *t = &st.threads[i];

		if (t->tid == st.self_tid)
			continue;
		if (sig_in_mask(status_mask(t->tid, "SigBlk:"), st.sig)) {
			t->snap_status = RS_SNAP_BLOCKED;
			continue;
		}
		atomic_store(&t->snap, SLOT_ASKED);
		t->sent_mono = mono_ns();
		if (syscall(SYS_tgkill, pid, t->tid, st.sig)) {
			atomic_store(&t->snap, SLOT_FREE);
			t->snap_status = errno == ESRCH ? RS_SNAP_GONE : RS_SNAP_NOANSWER;
		}
	}
	do {
		waiting = false;
		for (int i = 0; i < n; i++)
			waiting |= atomic_load(&st.threads[i].snap) == SLOT_ASKED;
		if (waiting)
			sleep_ms(1);
	} while (waiting && now_ns() < deadline);
	for (int i = 0; i < n; i++) {
		struct thread *t = &st.threads[i];
		int expected = SLOT_ASKED;

		if (t->tid == st.self_tid)
			continue;
		/* Too late: the handler will not answer an unasked slot. */
		if (atomic_compare_exchange_strong(&t->snap, &expected, SLOT_FREE)) {
			t->snap_status = RS_SNAP_NOANSWER;
			continue;
		}
		/* Answering now: an unwind is short, give it a last 100 ms. */
		for (int k = 0; k < 100 && atomic_load(&t->snap) == SLOT_BUSY; k++)
			sleep_ms(1);
		if (atomic_load(&t->snap) == SLOT_DONE)
			t->snap_status =
			    atomic_load(&t->snap_record) < 0 ? RS_SNAP_NOROOM : RS_SNAP_OK;
		else if (atomic_load(&t->snap) == SLOT_BUSY)
			t->snap_status = RS_SNAP_NOANSWER;
	}
}

/* The calling thread (the loader's) is unwound in place. */
static void snapshot_self(void)
{
	struct thread *t = add_thread(st.self_tid);
	long i;

	if (!t)
		return;
	i = claim_record();
	if (i >= 0) {
		struct record *r = record_at((size_t)i);

		r->tid = st.self_tid;
		r->kind = RS_KIND_SNAPSHOT;
		r->ns = now_ns();
		unwind_into(r, NULL);
	}
	atomic_store(&t->snap_record, i);
	t->snap_status = i < 0 ? RS_SNAP_NOROOM : RS_SNAP_SELF;
}

static int alloc_pool(void)
{
	size_t mb = (size_t)env_long("ROCPROF_STACKS_BUFFER_MB", DEFAULT_BUFFER_MB, 1, 4096);

	st.max_frames =
	    (unsigned)env_long("ROCPROF_STACKS_MAX_FRAMES", DEFAULT_FRAMES, 1, MAX_FRAMES);
	st.record_size = sizeof(struct record) + st.max_frames * sizeof(uint64_t);
	st.n_records = mb * 1024 * 1024 / st.record_size;
	/* Touched now: the handler must never fault in fresh pages of a lazy mapping. */
	st.pool = mmap(NULL, st.n_records * st.record_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (st.pool == MAP_FAILED) {
		st.pool = NULL;
		return -1;
	}
	atomic_store(&st.next_record, 0);
	atomic_store(&st.dropped, 0);
	atomic_store(&st.overruns, 0);
	return 0;
}

static int install_handler(void)
{
	struct sigaction sa = {0};

	st.sig = pick_signal();
	if (!st.sig) {
		snprintf(st.note, sizeof(st.note), "no free real-time signal");
		return -1;
	}
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(st.sig, &sa, &st.old_action)) {
		snprintf(st.note, sizeof(st.note), "sigaction(%d): %s", st.sig, strerror(errno));
		return -1;
	}
	st.installed = true;
	return 0;
}

static int start_poller(void)
{
	sigset_t all, old;
	int rc;

	/* The new thread inherits a full mask: no signal of the process lands in it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&st.stop_poller, 0);
	rc = pthread_create(&st.poller, NULL, poller_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		snprintf(st.note, sizeof(st.note), "pthread_create: %s", strerror(rc));
		return -1;
	}
	st.poller_running = true;
	return 0;
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
	if (st.pool)
		munmap(st.pool, st.n_records * st.record_size);
	st.pool = NULL;
	st.poller_running = false;
	atomic_store(&st.n_threads, 0);
}

static int tool_attach(rocprofiler_client_detach_t detach_func,
		       rocprofiler_context_id_t *context_ids, uint64_t n_contexts, void *data)
{
	long timeout = env_long("ROCPROF_STACKS_SNAPSHOT_MS", DEFAULT_SNAPSHOT_MS, 1, 60000);

	(void)detach_func;
	(void)context_ids;
	(void)n_contexts;
	(void)data;
	st.attach_seq++;
	if (!st.atexit_set) {
		atexit(stacks_atexit);
		pthread_atfork(NULL, NULL, stacks_atfork_child);
		st.atexit_set = true;
	}
	st.too_many = false;
	st.pid = getpid();
	st.attach_ns = now_ns();
	st.detach_ns = 0;
	st.note[0] = '\0';
	st.hz = env_long("ROCPROF_STACKS_HZ", 0, 0, MAX_HZ);
	st.unwind = env_long("ROCPROF_STACKS_UNWIND", 1, 0, 1);
	st.self_tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&st.n_threads, 0);
	atomic_store(&st.sampling, 0);
	if (alloc_pool())
		return -1;
	snapshot_self(); /* also the first unwind: libunwind sets itself up outside a handler */
	if (install_handler())
		return 0; /* nothing sent; the file says why */
	each_task(see_task, NULL);
	snapshot(timeout);
	if (!st.hz)
		return 0;
	atomic_store(&st.sampling, 1);
	if (start_poller())
		return 0;
	each_task(see_task, NULL);
	return 0;
}

/* The CPU time of a thread while it was sampled; a thread that ended has no clock left. */
static void cpu_used(struct thread *t)
{
	struct timespec ts;

	if (clock_gettime(t->clock, &ts))
		return;
	t->cpu_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - t->cpu0;
}

/* Disarm, then put the old action back once no handler runs. */
static void stop_all(void)
{
	int n;

	atomic_store(&st.stop_poller, 1);
	if (st.poller_running)
		pthread_join(st.poller, NULL);
	st.poller_running = false;
	mark_ended();
	n = atomic_load(&st.n_threads);
	for (int i = 0; i < n; i++)
		if (st.threads[i].has_timer) {
			timer_delete(st.threads[i].timer);
			st.threads[i].has_timer = false;
			if (!st.threads[i].ended)
				cpu_used(&st.threads[i]);
		}
	atomic_store(&st.sampling, 0);
	if (!st.installed)
		return;
	/*
	 * SIG_IGN first: it discards the signal where it is still pending
	 * (a thread that had it blocked), which the default action would turn
	 * into the death of the process.
	 */
	signal(st.sig, SIG_IGN);
	sigaction(st.sig, &st.old_action, NULL);
	st.installed = false;
	for (int i = 0; i < 1000 && atomic_load(&st.in_handler); i++)
		sleep_ms(1);
}

static void write_header(FILE *f)
{
	char host[HOST_NAME_MAX + 1] = "unknown";

	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	fprintf(f, "%s\npid %d\nhost %s\n", RS_MAGIC, (int)getpid(), host);
	if (st.sig)
		fprintf(f, "signal %d SIGRTMIN+%d\n", st.sig, st.sig - SIGRTMIN);
	else
		fprintf(f, "signal 0 none\n");
	fprintf(f, "hz %ld\nmax_frames %u\nattach_ns %llu\ndetach_ns %llu\n", st.hz, st.max_frames,
		st.attach_ns, st.detach_ns);
	fprintf(f, "dropped %lu\noverruns %lu\n", atomic_load(&st.dropped),
		atomic_load(&st.overruns));
	if (st.note[0])
		fprintf(f, "note %s\n", st.note);
	if (!st.unwind)
		fprintf(f, "note ROCPROF_STACKS_UNWIND=0: snapshots answered without frames\n");
	if (st.too_many)
		fprintf(f, "note more than %d threads: the others were not seen\n", MAX_THREADS);
}

static void write_record(FILE *f, const struct record *r)
{
	for (uint32_t k = 0; k < r->nframes; k++)
		fprintf(f, " %llx", (unsigned long long)r->frames[k]);
	fprintf(f, "%s\n", r->truncated ? " ..." : "");
}

static void write_body(FILE *f)
{
	int n = atomic_load(&st.n_threads);
	size_t used = atomic_load(&st.next_record);

	if (used > st.n_records)
		used = st.n_records;
	for (int i = 0; i < n; i++) {
		const struct thread *t = &st.threads[i];

		fprintf(f, "thread %d %s ", (int)t->tid, t->ended ? "ended" : "live");
		if (t->cpu_ns >= 0)
			fprintf(f, "%lld %s\n", t->cpu_ns, t->name);
		else
			fprintf(f, "- %s\n", t->name);
	}
	for (int i = 0; i < n; i++) {
		const struct thread *t = &st.threads[i];
		long ri = atomic_load(&t->snap_record);
		const char *s = t->snap_status ? t->snap_status : RS_SNAP_NOANSWER;

		if (!t->snap_status && ri < 0)
			continue; /* created after the snapshot */
		/* Frames only from an answer: a late one is never shown as one. */
		if (ri < 0 || (strcmp(s, RS_SNAP_OK) && strcmp(s, RS_SNAP_SELF))) {
			fprintf(f, "snapshot %d %s 0\n", (int)t->tid, s);
			continue;
		}
		fprintf(f, "snapshot %d %s %llu", (int)t->tid, s,
			(unsigned long long)record_at((size_t)ri)->ns);
		write_record(f, record_at((size_t)ri));
		if (!strcmp(s, RS_SNAP_OK)) {
			const struct record *r = record_at((size_t)ri);

			fprintf(f, "handler %d %llu\n", (int)t->tid,
				(unsigned long long)r->handler_ns);
			fprintf(f, "hold %d %llu %llu %llu\n", (int)t->tid, t->sent_mono,
				(unsigned long long)r->entry_mono, atomic_load(&t->ret_mono));
		}
	}
	for (size_t i = 0; i < used; i++) {
		const struct record *r = record_at(i);

		if (r->kind != RS_KIND_SAMPLE)
			continue;
		fprintf(f, "sample %d %llu", (int)r->tid, (unsigned long long)r->ns);
		write_record(f, r);
	}
}

static void copy_maps(FILE *f)
{
	char buf[4096];
	size_t n;
	FILE *m = fopen("/proc/self/maps", "re");

	fprintf(f, "maps\n");
	if (m) {
		while ((n = fread(buf, 1, sizeof(buf), m)) > 0)
			fwrite(buf, 1, n, f);
		fclose(m);
	}
	fprintf(f, "end\n");
}

/* mkdir -p */
static void make_dirs(const char *dir)
{
	char path[PATH_MAX], *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return;
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

/* Written under a temporary name and renamed: a reader never sees half a file. */
static void write_file(void)
{
	const char *dir = getenv("ROCPROF_OUTPUT_PATH");
	char host[HOST_NAME_MAX + 1] = "unknown", path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	if (!dir || !*dir)
		dir = ".";
	make_dirs(dir);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	if (snprintf(path, sizeof(path), "%s/" RS_FILE_PREFIX "%s.%d.%u.txt", dir, host,
		     (int)getpid(), st.attach_seq) >= (int)sizeof(path))
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return;
	write_header(f);
	if (st.pool)
		write_body(f);
	copy_maps(f);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

static void tool_detach(void *data)
{
	(void)data;
	stop_all();
	st.detach_ns = now_ns();
	write_file();
	/* A handler still running after a second keeps its pool: leaked, never freed under it. */
	if (st.pool && !atomic_load(&st.in_handler))
		munmap(st.pool, st.n_records * st.record_size);
	st.pool = NULL;
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

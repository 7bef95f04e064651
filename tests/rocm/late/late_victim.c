/* SPDX-License-Identifier: MIT */
/*
 * late_victim: a HIP-like program for the late start. At start, as HIP does
 * through rocprofiler-register, it registers a "hip" table of three functions
 * (late_abi.h) with librocprofiler-register.so.0 (linked, RUNPATH $ORIGIN),
 * then N threads call through the table all the time and check every answer
 * (the device count, a mix whose value it computes itself, a sum).
 *
 *   late_victim [--threads N] [--churn] [--two-copies] [--with-sdk]
 *               [--seconds S] [--self-start]
 *
 *   --threads N   busy threads (default 4, at most 64)
 *   --churn       threads come and go (each lives about 20 ms)
 *   --two-copies  also load wheel/librocprofiler-register-5f3a9c1e.so.0 (a
 *                 second copy under another name, as a Python wheel bundles
 *                 it) and register a second table with it
 *   --with-sdk    map sdk/librocprofiler-sdk.so.1 at start (RTLD_GLOBAL)
 *   --seconds S   stop after S seconds (default: at SIGTERM or SIGINT)
 *   --self-start  on SIGUSR1, a thread of its own sets every LATE_START_X=V
 *                 of its environment as X=V, calls
 *                 rocprofiler_register_invoke_all_registrations in each copy
 *                 and asks rocprofiler_is_initialized (no ptrace: for tests
 *                 of the doubles alone)
 *
 * Output, one line each: "registered copy=C rc=R handle=H", "ready pid=P
 * copies=C threads=N", then every second "tick t=T calls=N wrapped=W
 * copies_wrapped=K bad=B", and at the end "done ..." the same. wrapped counts
 * the calls that reached the double SDK's wrappers (0 while no SDK is
 * mapped). Exit 0 when every answer was right, 1 when any was wrong, 2 on bad
 * usage or a setup failure.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "late_abi.h"
#include "late_victim.h"

#define MAX_THREADS 64

int rocprofiler_register_library_api_table(const char *name, late_reg_import_fn import,
					   uint32_t version, void **tables, uint64_t count,
					   late_reg_id *id);

static struct victim_opts opts = {.threads = 4};
static struct late_hip_table tables[2];
static void *copies[2];
static int n_copies;
static atomic_ullong total_calls, total_bad;
static volatile sig_atomic_t stop, start_asked;

static uint32_t import_hip(void)
{
	return LATE_HIP_VERSION;
}

static int do_register(void *copy, struct late_hip_table *t, int index)
{
	int (*reg)(const char *, late_reg_import_fn, uint32_t, void **, uint64_t, late_reg_id *);
	late_reg_id id = {0};
	void *list[1] = {t};
	int rc;

	/* The first copy as HIP calls it (linked), the second as found in it. */
	reg = rocprofiler_register_library_api_table;
	if (index > 0)
		*(void **)&reg = dlsym(copy, "rocprofiler_register_library_api_table");
	if (!reg) {
		fprintf(stderr, "late_victim: copy %d has no registration call\n", index);
		return -1;
	}
	rc = reg("hip", import_hip, LATE_HIP_VERSION, list, 1, &id);
	printf("registered copy=%d rc=%d handle=%llu\n", index, rc, (unsigned long long)id.handle);
	return 0;
}

static int setup_tables(const char *dir)
{
	char path[PATH_MAX + 64];

	for (int i = 0; i < 2; i++)
		victim_fill_table(&tables[i]);
	copies[0] = dlopen("librocprofiler-register.so.0", RTLD_NOLOAD | RTLD_LAZY);
	n_copies = 1;
	if (opts.two_copies) {
		snprintf(path, sizeof(path), "%s/wheel/librocprofiler-register-5f3a9c1e.so.0", dir);
		copies[1] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!copies[1]) {
			fprintf(stderr, "late_victim: cannot load %s: %s\n", path, dlerror());
			return -1;
		}
		n_copies = 2;
	}
	for (int i = 0; i < n_copies; i++)
		if (!copies[i] || do_register(copies[i], &tables[i], i))
			return -1;
	return 0;
}

/* One pass over every table: 3 calls each. */
static unsigned long long one_pass(uint64_t i)
{
	unsigned long long bad = 0;

	for (int c = 0; c < n_copies; c++) {
		struct late_hip_table *t = &tables[c];
		int (*devices)(int *) = __atomic_load_n(&t->get_device_count, __ATOMIC_ACQUIRE);
		uint64_t (*mix)(uint64_t) = __atomic_load_n(&t->mix, __ATOMIC_ACQUIRE);
		int64_t (*add)(int64_t, int64_t) = __atomic_load_n(&t->add, __ATOMIC_ACQUIRE);
		int count = 0;

		bad += devices(&count) != 0 || count != LATE_HIP_DEVICES;
		bad += mix(i) != victim_mix_ref(i);
		bad += add((int64_t)i, 7) != (int64_t)i + 7;
	}
	return bad;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	unsigned long long calls = 0, bad = 0;
	uint64_t i = (uint64_t)(uintptr_t)arg << 32;
	double end = opts.churn ? now() + 0.02 : 0;

	while (!stop) {
		bad += one_pass(i++);
		calls += 3u * (unsigned int)n_copies;
		if ((i & 255) == 0) {
			atomic_fetch_add(&total_calls, calls);
			atomic_fetch_add(&total_bad, bad);
			calls = bad = 0;
			if (opts.churn && now() > end)
				break;
		}
	}
	atomic_fetch_add(&total_calls, calls);
	atomic_fetch_add(&total_bad, bad);
	return NULL;
}

/* A slot keeps one worker alive: with --churn, a new one each time one ends. */
static void *slot(void *arg)
{
	pthread_t th;

	do {
		if (pthread_create(&th, NULL, worker, arg))
			break;
		pthread_join(th, NULL);
	} while (opts.churn && !stop);
	return NULL;
}

/* Thread creation with every signal blocked: signals are the main thread's. */
static int spawn(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void report(const char *what, int t)
{
	late_sdk_wrapped_calls_fn wrapped_fn;
	unsigned long long wrapped = 0;
	int wrapped_copies = 0;

	*(void **)&wrapped_fn = dlsym(RTLD_DEFAULT, "late_sdk_double_wrapped_calls");
	for (int c = 0; wrapped_fn && c < n_copies; c++) {
		uint64_t w = wrapped_fn(&tables[c]);

		wrapped += w;
		wrapped_copies += w > 0;
	}
	printf("%s t=%d calls=%llu wrapped=%llu copies_wrapped=%d bad=%llu\n", what, t,
	       (unsigned long long)atomic_load(&total_calls), wrapped, wrapped_copies,
	       (unsigned long long)atomic_load(&total_bad));
	fflush(stdout);
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		start_asked = 1;
	else
		stop = 1;
}

static void *self_start(void *arg)
{
	(void)arg;
	victim_self_start(copies, n_copies);
	return NULL;
}

static void run(void)
{
	double t0 = now(), next = t0 + 1;
	struct timespec step = {0, 20 * 1000 * 1000};
	pthread_t th;

	while (!stop && (!opts.seconds || now() - t0 < opts.seconds)) {
		nanosleep(&step, NULL);
		if (start_asked) {
			start_asked = 0;
			if (!spawn(&th, self_start, NULL))
				pthread_join(th, NULL);
		}
		if (now() >= next) {
			report("tick", (int)(next - t0));
			next += 1;
		}
	}
	stop = 1;
}

int main(int argc, char **argv)
{
	pthread_t slots[MAX_THREADS];
	struct sigaction sa = {.sa_handler = on_signal};
	char dir[PATH_MAX];
	int i;

	if (victim_parse(argc, argv, &opts) || victim_dir(dir, sizeof(dir)))
		return 2;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (opts.self_start)
		sigaction(SIGUSR1, &sa, NULL);
	if (opts.with_sdk && victim_map_sdk(dir))
		return 2;
	if (setup_tables(dir))
		return 2;
	for (i = 0; i < opts.threads; i++)
		if (spawn(&slots[i], slot, (void *)(uintptr_t)(i + 1)))
			break;
	printf("ready pid=%d copies=%d threads=%d\n", (int)getpid(), n_copies, i);
	fflush(stdout);
	run();
	while (i-- > 0)
		pthread_join(slots[i], NULL);
	report("done", -1);
	return atomic_load(&total_bad) ? 1 : 0;
}

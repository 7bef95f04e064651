/* SPDX-License-Identifier: MIT */
/*
 * rocattach-bench-sample-work: a fixed amount of busy work split over N
 * threads, for bench/sample_cost.sh (the cost of sampling, bench/README.md).
 *
 *   rocattach-bench-sample-work THREADS UNITS
 *
 * It starts THREADS threads, each waiting, and prints "ready". On a line on
 * standard input it lets them go: each does UNITS / THREADS units of work
 * (a hash chain at the bottom of a few nested calls, so that an unwinder has
 * real frames to walk). When all are done it prints "done WALL_NS CPU_NS"
 * (CLOCK_MONOTONIC from the go to the last thread's end, and the process's
 * CPU time over the same span), then exits at the end of its standard input.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT_ITERS 100000 /* one unit: about 0.1 ms of CPU here */
#define DEPTH 6		  /* nested calls above the hash chain */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go;
static long units_per_thread;
static volatile uint64_t sink;

static unsigned long long clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static __attribute__((noinline)) uint64_t chain(uint64_t h, long n)
{
	for (long i = 0; i < n; i++)
		h = (h ^ (uint64_t)i) * 0x100000001b3ULL;
	return h;
}

/* DEPTH frames of its own above the chain: a stack deep enough to be unwound. */
static __attribute__((noinline)) uint64_t nest(uint64_t h, int depth)
{
	uint64_t r;

	if (depth == 0)
		return chain(h, UNIT_ITERS);
	r = nest(h + (uint64_t)depth, depth - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
	return r;
}

static void *worker(void *arg)
{
	uint64_t h = (uint64_t)(uintptr_t)arg;

	pthread_mutex_lock(&lock);
	while (!go)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (long u = 0; u < units_per_thread; u++)
		h = nest(h, DEPTH);
	sink += h;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? strtol(argv[1], NULL, 10) : 0;
	long units = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
	unsigned long long w0, c0;
	pthread_t *tids;
	char line[64];

	if (n < 1 || n > 4096 || units < n) {
		fprintf(stderr, "usage: %s THREADS(1-4096) UNITS(>= THREADS)\n", argv[0]);
		return 2;
	}
	units_per_thread = units / n;
	tids = calloc((size_t)n, sizeof(*tids));
	for (long i = 0; tids && i < n; i++)
		if (pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)(i + 1))) {
			fprintf(stderr, "sample_work: pthread_create failed at thread %ld\n", i);
			return 1;
		}
	if (!tids)
		return 1;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	w0 = clock_ns(CLOCK_MONOTONIC);
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	pthread_mutex_lock(&lock);
	go = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	printf("done %llu %llu\n", clock_ns(CLOCK_MONOTONIC) - w0,
	       clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	free(tids);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * ra_stacks_churn: a program whose threads come and go all the time, for the
 * stack tool's sampled windows (tests/stacks/test_sample_churn.sh).
 *
 * The main thread starts a short thread every 4 ms (it lives 1 to 20 ms) and
 * a long one every 300 ms (it lives 1.5 s). Each thread works in chunks: a
 * hash chain whose result was computed once at the start, before anything
 * was attached, then a short sleep. A chunk that gives another result is
 * counted bad. A sleep cut short (EINTR) is slept to its end.
 *
 * At the start it keeps every signal's disposition and its mask; "quit" on
 * standard input stops the threads, waits for them and compares.
 *
 * Standard input, one command a line; one answer line each:
 *   status   "status threads N chunks N bad N alive N"
 *   quit     "done threads N chunks N bad N signals intact|changed <list>", then
 *            exit 0 if nothing was bad and the signals are intact, else 1
 * "ready" is printed once it runs.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEEDS 16
#define CHAIN 20000 /* hash steps per chunk: tens of us */
#define MAX_SHORT 8
#define MAX_LONG 8
#define LONG_MS 1500

static uint64_t expected[SEEDS];
static _Atomic unsigned long n_threads, n_chunks, n_bad;
static _Atomic int n_short, n_long, alive, stopping;
static struct sigaction old_act[65];
static sigset_t old_mask;

static uint64_t chain(uint64_t x, int n)
{
	for (int i = 0; i < n; i++) {
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdULL;
		x ^= x >> 29;
		x += (uint64_t)i;
	}
	return x;
}

static unsigned long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

/* Sleep us microseconds to the end, through any EINTR. */
static void nap_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One chunk of work, checked against the value computed at the start. */
static void chunk(unsigned seed)
{
	if (chain(seed, CHAIN) != expected[seed % SEEDS])
		atomic_fetch_add(&n_bad, 1);
	atomic_fetch_add(&n_chunks, 1);
}

struct life {
	unsigned seed;
	long ms;     /* how long it lives */
	long nap_us; /* the sleep after each chunk */
	bool is_long;
};

static void *worker(void *arg)
{
	struct life l = *(struct life *)arg;
	unsigned long long end = mono_ms() + (unsigned long long)l.ms;

	free(arg);
	do {
		chunk(l.seed);
		nap_us(l.nap_us);
	} while (mono_ms() < end && !atomic_load(&stopping));
	atomic_fetch_sub(l.is_long ? &n_long : &n_short, 1);
	atomic_fetch_sub(&alive, 1);
	return NULL;
}

static void start(unsigned seed, bool is_long)
{
	struct life *l = malloc(sizeof(*l));
	pthread_attr_t a;
	pthread_t t;

	if (!l)
		return;
	l->seed = seed % SEEDS;
	l->is_long = is_long;
	l->ms = is_long ? LONG_MS : 1 + (long)(seed % 20);
	l->nap_us = is_long ? 2000 : 200;
	atomic_fetch_add(is_long ? &n_long : &n_short, 1);
	atomic_fetch_add(&alive, 1);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, worker, l)) {
		atomic_fetch_sub(is_long ? &n_long : &n_short, 1);
		atomic_fetch_sub(&alive, 1);
		free(l);
	} else {
		atomic_fetch_add(&n_threads, 1);
	}
	pthread_attr_destroy(&a);
}

static void *spawner(void *arg)
{
	unsigned seed = 0, tick = 0;

	(void)arg;
	while (!atomic_load(&stopping)) {
		if (atomic_load(&n_short) < MAX_SHORT)
			start(seed++, false);
		if (tick++ % 75 == 0 && atomic_load(&n_long) < MAX_LONG)
			start(seed++, true);
		nap_us(4000);
	}
	return NULL;
}

/* The signals whose disposition or mask is not as at the start, into buf. */
static bool signals_intact(char *buf, size_t len)
{
	struct sigaction sa;
	sigset_t mask;
	bool same = true;
	size_t used = 0;

	buf[0] = '\0';
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	for (int s = 1; s <= 64; s++) {
		if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &sa))
			continue;
		if (sa.sa_handler == old_act[s].sa_handler &&
		    (sa.sa_flags & SA_SIGINFO) == (old_act[s].sa_flags & SA_SIGINFO) &&
		    sigismember(&mask, s) == sigismember(&old_mask, s))
			continue;
		same = false;
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, " %d", s);
	}
	return same;
}

int main(void)
{
	char line[64], diff[256];
	pthread_t sp;
	bool intact;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int s = 1; s <= 64; s++)
		sigaction(s, NULL, &old_act[s]);
	pthread_sigmask(SIG_SETMASK, NULL, &old_mask);
	for (unsigned s = 0; s < SEEDS; s++)
		expected[s] = chain(s, CHAIN);
	if (pthread_create(&sp, NULL, spawner, NULL))
		return 1;
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "status\n")) {
			printf("status threads %lu chunks %lu bad %lu alive %d\n",
			       atomic_load(&n_threads), atomic_load(&n_chunks), atomic_load(&n_bad),
			       atomic_load(&alive));
		} else if (!strcmp(line, "quit\n")) {
			break;
		}
	}
	atomic_store(&stopping, 1);
	pthread_join(sp, NULL);
	while (atomic_load(&alive))
		nap_us(1000);
	intact = signals_intact(diff, sizeof(diff));
	printf("done threads %lu chunks %lu bad %lu signals %s%s\n", atomic_load(&n_threads),
	       atomic_load(&n_chunks), atomic_load(&n_bad), intact ? "intact" : "changed", diff);
	return atomic_load(&n_bad) || !intact;
}

/* SPDX-License-Identifier: MIT */
/*
 * A target for the transparency test: threads blocked in read, nanosleep,
 * a futex (pthread_cond_timedwait), epoll_wait and poll, fed by a producer
 * thread. Each one counts what an attach must never cause: an EINTR, a
 * sleep or timeout that ends early, a lost or reordered message.
 *
 * The main thread answers line commands on stdin (ping, status, quit); it
 * alone takes SIGUSR1 and SIGRTMIN+1 (handlers with SA_RESTART), counting
 * them and summing the real-time signals' values, so a test can check that
 * each signal sent arrived exactly once. Every other thread blocks them.
 * It prints "ready pid=<pid>" once every thread runs. With --main-exits the
 * commands are served by another thread and the main thread calls
 * pthread_exit: /proc/PID then shows a zombie leader while the process runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 1000000L   /* producer period */
#define FUTEX_EVERY 29	   /* ticks between condition signals */
#define WAKE_EVERY 30	   /* ticks between messages to the epoll and poll threads */
#define SLEEP_NS 10000000L /* nanosleep period */
#define TIMEOUT_MS 20	   /* futex, epoll and poll timeouts: shorter than WAKE_EVERY */

enum { P_READ, P_EPOLL, P_POLL, P_COUNT };

static int pipes[P_COUNT][2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static unsigned long pending;

static atomic_ulong eintr, early, lost, errors, shorts;
static atomic_ulong reads, sleeps, waits, timeouts, epolls, polls;
static atomic_ulong usr1, rt;
static atomic_ullong rtsum;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void block_test_signals(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}

/* One 8-byte message: the next sequence number of that pipe, or a loss. */
static void take(int fd, uint64_t *expect)
{
	uint64_t v;
	ssize_t n;

	do {
		n = read(fd, &v, sizeof(v));
		if (n < 0 && errno == EINTR)
			atomic_fetch_add(&eintr, 1);
	} while (n < 0 && errno == EINTR);
	if (n != sizeof(v)) {
		atomic_fetch_add(&errors, 1);
		return;
	}
	if (v != (*expect)++)
		atomic_fetch_add(&lost, 1);
	*expect = v + 1;
}

static void *producer_main(void *arg)
{
	struct timespec tick = {0, TICK_NS};
	uint64_t seq[P_COUNT] = {0};

	(void)arg;
	for (unsigned long t = 1;; t++) {
		nanosleep(&tick, NULL);
		if (write(pipes[P_READ][1], &seq[P_READ], 8) == 8)
			seq[P_READ]++;
		if (t % WAKE_EVERY == 0) {
			for (int p = P_EPOLL; p < P_COUNT; p++)
				if (write(pipes[p][1], &seq[p], 8) == 8)
					seq[p]++;
		}
		if (t % FUTEX_EVERY == 0) {
			pthread_mutex_lock(&lock);
			pending++;
			pthread_cond_signal(&cond);
			pthread_mutex_unlock(&lock);
		}
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	uint64_t expect = 0;

	(void)arg;
	for (;;) {
		take(pipes[P_READ][0], &expect);
		atomic_fetch_add(&reads, 1);
	}
	return NULL;
}

/* nanosleep must sleep its full time, and never say EINTR. */
static void *sleeper_main(void *arg)
{
	struct timespec ts = {0, SLEEP_NS};
	long long t0;

	(void)arg;
	for (;;) {
		t0 = now_ns();
		if (nanosleep(&ts, NULL))
			atomic_fetch_add(&eintr, 1);
		if (now_ns() - t0 < SLEEP_NS)
			atomic_fetch_add(&shorts, 1);
		atomic_fetch_add(&sleeps, 1);
	}
	return NULL;
}

static void deadline_in(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_nsec += ms * 1000000L;
	ts->tv_sec += ts->tv_nsec / 1000000000L;
	ts->tv_nsec %= 1000000000L;
}

/* A futex wait with a timeout: a timeout must not come before its deadline. */
static void *futex_main(void *arg)
{
	struct timespec dl;
	int r;

	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		deadline_in(&dl, TIMEOUT_MS);
		while (!pending) {
			r = pthread_cond_timedwait(&cond, &lock, &dl);
			if (r == ETIMEDOUT) {
				if (now_ns() < dl.tv_sec * 1000000000LL + dl.tv_nsec)
					atomic_fetch_add(&early, 1);
				atomic_fetch_add(&timeouts, 1);
				break;
			}
			if (r)
				atomic_fetch_add(&errors, 1);
		}
		if (pending) {
			pending = 0;
			atomic_fetch_add(&waits, 1);
		}
	}
	return NULL;
}

/* A wait that returned: -1 EINTR, 0 a timeout (not before TIMEOUT_MS), else a message. */
static void waited(int n, long long t0, int fd, uint64_t *expect, atomic_ulong *count)
{
	if (n < 0) {
		atomic_fetch_add(errno == EINTR ? &eintr : &errors, 1);
		return;
	}
	if (n == 0 && now_ns() - t0 < TIMEOUT_MS * 1000000LL)
		atomic_fetch_add(&early, 1);
	if (n > 0)
		take(fd, expect);
	atomic_fetch_add(count, 1);
}

static void *epoll_main(void *arg)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t expect = 0;
	long long t0;

	(void)arg;
	epoll_ctl(ep, EPOLL_CTL_ADD, pipes[P_EPOLL][0], &ev);
	for (;;) {
		t0 = now_ns();
		waited(epoll_wait(ep, &ev, 1, TIMEOUT_MS), t0, pipes[P_EPOLL][0], &expect, &epolls);
	}
	return NULL;
}

static void *poll_main(void *arg)
{
	struct pollfd p = {pipes[P_POLL][0], POLLIN, 0};
	uint64_t expect = 0;
	long long t0;

	(void)arg;
	for (;;) {
		t0 = now_ns();
		waited(poll(&p, 1, TIMEOUT_MS), t0, p.fd, &expect, &polls);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&usr1, 1);
}

static void on_rt(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	atomic_fetch_add(&rt, 1);
	atomic_fetch_add(&rtsum, (unsigned long long)si->si_value.sival_int);
}

static void handlers(void)
{
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigaction(SIGRTMIN + 1, &sa, NULL);
}

static int start_threads(void)
{
	void *(*const fns[])(void *) = {reader_main, sleeper_main, futex_main,
					epoll_main,  poll_main,	   producer_main};
	pthread_condattr_t ca;
	sigset_t old;
	pthread_t th;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	for (int p = 0; p < P_COUNT; p++)
		if (pipe2(pipes[p], O_CLOEXEC))
			return -1;
	pthread_sigmask(SIG_SETMASK, NULL, &old);
	block_test_signals();
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (pthread_create(&th, NULL, fns[i], NULL))
			return -1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

static void status(void)
{
	printf("status eintr=%lu short=%lu early=%lu lost=%lu err=%lu reads=%lu sleeps=%lu "
	       "waits=%lu timeouts=%lu epolls=%lu polls=%lu usr1=%lu rt=%lu rtsum=%llu\n",
	       atomic_load(&eintr), atomic_load(&shorts), atomic_load(&early), atomic_load(&lost),
	       atomic_load(&errors), atomic_load(&reads), atomic_load(&sleeps), atomic_load(&waits),
	       atomic_load(&timeouts), atomic_load(&epolls), atomic_load(&polls),
	       atomic_load(&usr1), atomic_load(&rt), (unsigned long long)atomic_load(&rtsum));
}

static void command(const char *line)
{
	if (!strcmp(line, "ping"))
		printf("pong\n");
	else if (!strcmp(line, "status"))
		status();
	else if (!strcmp(line, "quit"))
		exit(0);
	else
		printf("error unknown command\n");
	fflush(stdout);
}

/* stdin, byte by byte through read(2): the thread sits in a blocking read. */
static void *commands_main(void *arg)
{
	char line[256];
	size_t len = 0;
	ssize_t n;
	char c;

	(void)arg;
	for (;;) {
		n = read(STDIN_FILENO, &c, 1);
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr, 1);
			continue;
		}
		if (n <= 0)
			exit(0);
		if (c != '\n' && len < sizeof(line) - 1) {
			line[len++] = c;
			continue;
		}
		line[len] = '\0';
		len = 0;
		command(line);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;

	handlers();
	if (start_threads()) {
		perror("blocked_victim");
		return 1;
	}
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "--main-exits")) {
		if (pthread_create(&th, NULL, commands_main, NULL))
			return 1;
		pthread_exit(NULL);
	}
	commands_main(NULL);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * A target for the stack tool's tests (test_stacks.sh). Its threads sit in
 * known functions: "stuck" spins in stuck_here, two "waiter" threads block
 * in read(2) in wait_in_read, and the main thread reads commands from stdin,
 * one a line, answering one line each on stdout:
 *   ticks     "ticks N handler=same|changed itimer=armed|off": SIGPROF ticks
 *             (with --sigprof: ITIMER_PROF at 100 Hz and a SIGPROF handler)
 *   spin      "spin N": how far stuck_here has counted
 *   eintr     "eintr N": reads the waiters saw fail with EINTR
 *   spawn MS  "spawned": a thread "short" spins in short_lived for MS ms of its
 *             CPU time, then ends
 *   fork      "child handlers N": a child counts the real-time signals it has a
 *             handler for, answers, and exits
 *   take N    "taken N": the program gives signal N a handler of its own
 *   taken N   "taken N calls C handler=own|other": its calls, and whether signal N's
 *             disposition is still that handler
 *   exit      exits (exit(3): atexit handlers run), without an answer
 * It prints "ready" once its threads run. Options:
 *   --sigprof      ITIMER_PROF at 100 Hz and a SIGPROF handler counting ticks
 *   --own-signals  a handler on SIGRTMAX, a POSIX timer (never armed) naming
 *                  SIGRTMAX-1, SIGRTMAX-2 blocked in every thread: the stack
 *                  tool must take none of them
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned long spins, ticks, eintrs, own_calls;
static int block_pipe[2];

static void on_prof(int sig)
{
	(void)sig;
	atomic_fetch_add(&ticks, 1);
}

__attribute__((noinline)) void stuck_here(void)
{
	for (;;) {
		atomic_fetch_add(&spins, 1);
		__asm__ volatile("" ::: "memory");
	}
}

static void *stuck_main(void *arg)
{
	(void)arg;
	stuck_here();
	return NULL;
}

__attribute__((noinline)) void wait_in_read(void)
{
	char c;

	for (;;) {
		if (read(block_pipe[0], &c, 1) < 0 && errno == EINTR)
			atomic_fetch_add(&eintrs, 1);
	}
}

static void *waiter_main(void *arg)
{
	(void)arg;
	wait_in_read();
	return NULL;
}

/* Spins for ms of its own CPU time: on a busy machine, wall time would give it little. */
__attribute__((noinline)) void short_lived(long ms)
{
	struct timespec t;

	do {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while (t.tv_sec * 1000 + t.tv_nsec / 1000000 < ms);
}

static void *short_main(void *arg)
{
	short_lived((long)(intptr_t)arg);
	return NULL;
}

static void start(const char *name, void *(*fn)(void *), void *arg)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, arg)) {
		fprintf(stderr, "stacks_target: pthread_create failed\n");
		exit(1);
	}
	pthread_setname_np(t, name);
	pthread_detach(t);
}

static void answer_ticks(void)
{
	struct sigaction sa;
	struct itimerval it;

	sigaction(SIGPROF, NULL, &sa);
	getitimer(ITIMER_PROF, &it);
	printf("ticks %lu handler=%s itimer=%s\n", atomic_load(&ticks),
	       sa.sa_handler == on_prof ? "same" : "changed",
	       it.it_interval.tv_usec || it.it_interval.tv_sec ? "armed" : "off");
}

static void sigprof_setup(void)
{
	struct sigaction sa = {0};
	struct itimerval it = {{0, 10000}, {0, 10000}};

	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
}

static void fork_child(void)
{
	struct sigaction sa;
	pid_t pid;
	int n = 0;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		printf("fork failed\n");
		return;
	}
	if (pid) {
		waitpid(pid, NULL, 0);
		return;
	}
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		if (!sigaction(s, NULL, &sa) && sa.sa_handler != SIG_DFL)
			n++;
	printf("child handlers %d\n", n);
	fflush(stdout);
	_exit(0);
}

static void on_rt(int sig)
{
	(void)sig;
}

static void on_own(int sig)
{
	(void)sig;
	atomic_fetch_add(&own_calls, 1);
}

/* The program takes signal sig for itself (in the stack tool's window). */
static void take_signal(int sig)
{
	struct sigaction sa = {0};

	sa.sa_handler = on_own;
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
	printf("taken %d\n", sig);
}

static void answer_taken(int sig)
{
	struct sigaction sa;

	sigaction(sig, NULL, &sa);
	printf("taken %d calls %lu handler=%s\n", sig, atomic_load(&own_calls),
	       sa.sa_handler == on_own ? "own" : "other");
}

/* Signals the process uses in the three ways the tool must see. */
static void own_signals_setup(void)
{
	struct sigaction sa = {0};
	struct sigevent ev = {0};
	timer_t timer;
	sigset_t block;

	sa.sa_handler = on_rt;
	sigaction(SIGRTMAX, &sa, NULL);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGRTMAX - 1;
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer))
		exit(1);
	/* Before the threads start: they inherit the mask. */
	sigemptyset(&block);
	sigaddset(&block, SIGRTMAX - 2);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
}

int main(int argc, char **argv)
{
	char line[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(block_pipe))
		return 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sigprof"))
			sigprof_setup();
		else if (!strcmp(argv[i], "--own-signals"))
			own_signals_setup();
	}
	start("stuck", stuck_main, NULL);
	start("waiter", waiter_main, NULL);
	start("waiter", waiter_main, NULL);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "ticks", 5))
			answer_ticks();
		else if (!strncmp(line, "spin", 4))
			printf("spin %lu\n", atomic_load(&spins));
		else if (!strncmp(line, "eintr", 5))
			printf("eintr %lu\n", atomic_load(&eintrs));
		else if (!strncmp(line, "spawn ", 6)) {
			start("short", short_main, (void *)(intptr_t)atol(line + 6));
			printf("spawned\n");
		} else if (!strncmp(line, "fork", 4)) {
			fork_child();
		} else if (!strncmp(line, "take ", 5)) {
			take_signal(atoi(line + 5));
		} else if (!strncmp(line, "taken ", 6)) {
			answer_taken(atoi(line + 6));
		} else if (!strncmp(line, "exit", 4))
			exit(0);
		else
			printf("unknown\n");
	}
	return 0;
}

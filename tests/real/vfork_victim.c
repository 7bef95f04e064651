/* SPDX-License-Identifier: MIT */
/*
 * A target whose thread named rocp-bg-attach can be held where
 * PTRACE_INTERRUPT cannot stop it: told "vfork MS", that thread calls
 * vfork() and its child sleeps MS ms before _exit. Until then the thread
 * waits for the child in a killable sleep (TASK_KILLABLE, state D), which
 * only a fatal signal ends. The entry points come from a preloaded target
 * side started without ROCP_TOOL_ATTACH (our agent or ROCm's double: no
 * listener of theirs), so the attacher takes this thread for the listener.
 *
 * Line commands on stdin, one reply line each:
 *   ping       pong
 *   vfork MS   "vforking" (written by the vfork child, so the thread is in vfork)
 *   status     "status work=N eintr=0 vforks=N": a worker's count, and how
 *              many vforks the thread came back from
 * It prints "ready pid=<pid>" once both threads run.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmd_pipe[2];
static atomic_ulong work, vforks;

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

/* The child shares our memory until it exits: only syscalls here. */
static void held(long ms)
{
	pid_t child = vfork();

	if (child == 0) {
		if (write(STDOUT_FILENO, "vforking\n", 9) != 9)
			_exit(1);
		nap_ms(ms);
		_exit(0);
	}
	if (child > 0 && waitpid(child, NULL, 0) == child)
		atomic_fetch_add(&vforks, 1);
}

/* Blocks every signal, as a real listener does; waits on a pipe for orders. */
static void *listener(void *arg)
{
	sigset_t all;
	long ms;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	while (read(cmd_pipe[0], &ms, sizeof(ms)) == sizeof(ms))
		held(ms);
	return NULL;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		atomic_fetch_add(&work, 1);
		nap_ms(1);
	}
	return NULL;
}

static void serve(const char *line)
{
	long ms;

	if (!strcmp(line, "ping")) {
		printf("pong\n");
	} else if (sscanf(line, "vfork %ld", &ms) == 1) {
		if (write(cmd_pipe[1], &ms, sizeof(ms)) != sizeof(ms))
			printf("error\n");
		return; /* the child answers */
	} else if (!strcmp(line, "status")) {
		printf("status work=%lu eintr=0 vforks=%lu\n", atomic_load(&work),
		       atomic_load(&vforks));
	} else {
		printf("unknown\n");
	}
}

int main(void)
{
	pthread_t l, w;
	char line[128];

	setvbuf(stdout, NULL, _IONBF, 0);
	/* Named before "ready": a test looks it up at once. */
	if (pipe(cmd_pipe) || pthread_create(&l, NULL, listener, NULL) ||
	    pthread_setname_np(l, "rocp-bg-attach") || pthread_create(&w, NULL, worker, NULL))
		return 1;
	printf("ready pid=%d\n", getpid());
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		serve(line);
	}
	return 0;
}

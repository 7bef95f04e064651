/* SPDX-License-Identifier: MIT */
/*
 * Example target: worker threads doing visible work, plus one thread blocked
 * in read(2) on stdin answering line commands on stdout. Run it with
 * ROCP_TOOL_ATTACH=1 and the agent preloaded, attach and detach, and see that
 * it never noticed: the work goes on, no read was interrupted (eintr=0).
 * The tests drive it over pipes.
 *
 * Commands (one reply line each): ping, echo TEXT, status, env NAME, quit.
 * It prints "ready pid=<pid>" once its threads and its whole tree of
 * children are up, and "done work=<n>" on SIGTERM/SIGINT or at --seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_LEN 4096
#define CHUNK 4096
#define CHILD_READY_TIMEOUT_MS 30000

struct opts {
	long threads;
	long depth;
	long seconds;
	bool fork_only_child;
};

static atomic_ullong work;
static atomic_ullong hash_sink;
static atomic_ulong lines_read;
static atomic_ulong eintr_count;
static atomic_ulong sigusr1_count;

static __attribute__((format(printf, 1, 2))) void reply(const char *fmt, ...)
{
	va_list ap;

	flockfile(stdout);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	funlockfile(stdout);
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(
	    f,
	    "usage: %s [--threads N] [--depth D] [--fork-only-child] [--seconds S]\n"
	    "  --threads N        worker threads (default 3)\n"
	    "  --depth D          process tree depth: D > 1 execs a child with D-1 (default 1)\n"
	    "  --fork-only-child  also fork a child that does not exec (it has no attach\n"
	    "                     listener) and just sleeps\n"
	    "  --seconds S        exit 0 after S seconds (default: until SIGTERM/SIGINT/quit)\n"
	    "stdin commands: ping, echo TEXT, status, env NAME, quit\n",
	    argv0);
}

static int parse_long(const char *s, long min, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return -1;
	*out = v;
	return 0;
}

/* 0: run; 1: --help was served; -1: bad usage. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
	    {"threads", required_argument, NULL, 't'},
	    {"depth", required_argument, NULL, 'd'},
	    {"fork-only-child", no_argument, NULL, 'f'},
	    {"seconds", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, bad = 0;

	*o = (struct opts){.threads = 3, .depth = 1};
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 't')
			bad |= parse_long(optarg, 0, &o->threads);
		else if (c == 'd')
			bad |= parse_long(optarg, 1, &o->depth);
		else if (c == 's')
			bad |= parse_long(optarg, 0, &o->seconds);
		else if (c == 'f')
			o->fork_only_child = true;
		else if (c == 'h')
			return 1;
		else
			bad = -1;
	}
	if (optind < argc)
		bad = -1;
	return bad ? -1 : 0;
}

/*
 * PR_SET_PDEATHSIG fires when the thread that forked us exits, so children
 * are forked from the main thread, which lives as long as the process. If the
 * parent died before prctl, the signal never comes: check getppid.
 */
static void child_setup(pid_t parent)
{
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		dup2(fd, STDIN_FILENO);
}

static void fork_only_child(void)
{
	pid_t parent = getpid(), pid;

	pid = fork();
	if (pid < 0) {
		perror("busy_target: fork");
		return;
	}
	if (pid > 0)
		return;
	child_setup(parent);
	for (;;)
		sleep(1);
}

static void exec_child(const struct opts *o, const char *argv0, int out_fd)
{
	char depth[24], threads[24], self[PATH_MAX];
	char *const args[] = {(char *)argv0, "--depth", depth, "--threads", threads, NULL};
	ssize_t n;

	snprintf(depth, sizeof(depth), "%ld", o->depth - 1);
	snprintf(threads, sizeof(threads), "%ld", o->threads);
	dup2(out_fd, STDOUT_FILENO);
	/* Not /proc/self/exe itself: the child's comm would read "exe". */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	if (n > 0 && !strstr(self, " (deleted)"))
		execv(self, args);
	execv("/proc/self/exe", args);
	perror("busy_target: execv");
	_exit(127);
}

/* Wait for the child's "ready" line: then its whole subtree is up. */
static void wait_child_ready(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char buf[256];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(buf) - 1 && !memchr(buf, '\n', len)) {
		if (poll(&pfd, 1, CHILD_READY_TIMEOUT_MS) <= 0)
			break;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (strncmp(buf, "ready", 5))
		fprintf(stderr, "busy_target: child did not report ready\n");
}

/*
 * The child's stdout is a pipe we keep open but no longer read: it only
 * writes "ready" and "done", far below the pipe's capacity, and our stdout
 * stays ours alone.
 */
static void spawn_exec_child(const struct opts *o, const char *argv0)
{
	pid_t parent = getpid(), pid;
	int fds[2];

	if (pipe2(fds, O_CLOEXEC)) {
		perror("busy_target: pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		child_setup(parent);
		exec_child(o, argv0, fds[1]);
	}
	close(fds[1]);
	if (pid < 0) {
		perror("busy_target: fork");
		close(fds[0]);
		return;
	}
	wait_child_ready(fds[0]);
}

static void *worker_main(void *arg)
{
	const struct timespec nap = {0, 1000000};
	uint64_t h = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	unsigned int i;

	for (;;) {
		/* A hash chain: each step needs the previous one, nothing to optimize away. */
		for (i = 0; i < CHUNK; i++) {
			h ^= h >> 33;
			h *= 0xff51afd7ed558ccdULL;
			h += i;
		}
		atomic_store_explicit(&hash_sink, h, memory_order_relaxed);
		atomic_fetch_add(&work, CHUNK);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static void do_status(void)
{
	reply("status pid=%d work=%llu lines=%lu eintr=%lu sigusr1=%lu", (int)getpid(),
	      (unsigned long long)atomic_load(&work), atomic_load(&lines_read),
	      atomic_load(&eintr_count), atomic_load(&sigusr1_count));
}

static void do_env(const char *name)
{
	const char *v = getenv(name);

	if (v)
		reply("env %s=%s", name, v);
	else
		reply("env %s unset", name);
}

static void handle_line(char *line, size_t len)
{
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	atomic_fetch_add(&lines_read, 1);
	if (!strcmp(line, "ping")) {
		reply("pong");
	} else if (!strcmp(line, "echo") || !strncmp(line, "echo ", 5)) {
		reply("%s", line);
	} else if (!strcmp(line, "status")) {
		do_status();
	} else if (!strncmp(line, "env ", 4) && line[4]) {
		do_env(line + 4);
	} else if (!strcmp(line, "quit")) {
		reply("bye");
		exit(0);
	} else {
		reply("error unknown command");
	}
}

struct line_buf {
	char text[LINE_MAX_LEN + 1];
	size_t len;
	bool too_long;
};

static void line_end(struct line_buf *lb)
{
	lb->text[lb->len] = '\0';
	if (lb->too_long) {
		atomic_fetch_add(&lines_read, 1);
		reply("error line too long");
	} else {
		handle_line(lb->text, lb->len);
	}
	lb->len = 0;
	lb->too_long = false;
}

static void line_feed(struct line_buf *lb, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] == '\n')
			line_end(lb);
		else if (lb->len < LINE_MAX_LEN)
			lb->text[lb->len++] = p[i];
		else
			lb->too_long = true;
	}
}

/*
 * SIGUSR1 is unblocked in this thread only, so it always lands here, on a
 * blocked read. Its handler has SA_RESTART: an EINTR seen here came from
 * something else (a ptrace stop mishandled by an attacher).
 */
static void *reader_main(void *arg)
{
	static struct line_buf lb;
	char chunk[4096];
	sigset_t usr1;
	ssize_t n;

	(void)arg;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	for (;;) {
		n = read(STDIN_FILENO, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_count, 1);
			continue;
		}
		if (n <= 0)
			break;
		line_feed(&lb, chunk, (size_t)n);
	}
	if (lb.len || lb.too_long)
		line_end(&lb);
	/* Stay around to keep counting SIGUSR1. */
	for (;;)
		pause();
	return NULL;
}

static void on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigusr1_count, 1);
}

/* Workers and main block these; main takes SIGTERM/SIGINT with sigtimedwait. */
static void setup_signals(sigset_t *ends)
{
	struct sigaction sa = {.sa_handler = on_sigusr1, .sa_flags = SA_RESTART};
	sigset_t blocked;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(ends);
	sigaddset(ends, SIGTERM);
	sigaddset(ends, SIGINT);
	blocked = *ends;
	sigaddset(&blocked, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &blocked, NULL);
}

static int start_threads(long n)
{
	pthread_t th;
	long i;
	int err;

	for (i = 0; i < n; i++) {
		err = pthread_create(&th, NULL, worker_main, (void *)(uintptr_t)i);
		if (err)
			return err;
		pthread_detach(th);
	}
	err = pthread_create(&th, NULL, reader_main, NULL);
	if (!err)
		pthread_detach(th);
	return err;
}

static void wait_for_end(const sigset_t *ends, long seconds)
{
	struct timespec deadline, now, left;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;
	for (;;) {
		if (!seconds) {
			if (sigwaitinfo(ends, NULL) > 0)
				return;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = deadline.tv_sec - now.tv_sec;
		left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0 || sigtimedwait(ends, NULL, &left) > 0)
			return;
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	sigset_t ends;
	int err;

	err = parse_args(argc, argv, &o);
	if (err) {
		usage(err > 0 ? stdout : stderr, argv[0]);
		return err > 0 ? 0 : 2;
	}
	/* Children first, with default signal dispositions and mask. */
	if (o.depth > 1)
		spawn_exec_child(&o, argv[0]);
	if (o.fork_only_child)
		fork_only_child();
	setup_signals(&ends);
	err = start_threads(o.threads);
	if (err) {
		fprintf(stderr, "busy_target: pthread_create: %s\n", strerror(err));
		return 1;
	}
	reply("ready pid=%d", (int)getpid());
	wait_for_end(&ends, o.seconds);
	reply("done work=%llu", (unsigned long long)atomic_load(&work));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* What /proc/self says, for the stack tool (stacks_proc.h). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stacks_proc.h"

unsigned long long status_mask(pid_t tid, const char *key)
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

/*
 * Whether thread tid has been on a CPU yet: the first field of its schedstat
 * (ns run). A thread made but not yet run still has the all-blocked mask that
 * pthread_create gives it. Unreadable (no schedstat): taken as run.
 */
bool has_run(pid_t tid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10) > 0;
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

int timers_with_signal(int sig)
{
	char line[256];
	FILE *f = fopen("/proc/self/timers", "re");
	int s, n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "signal: %d/", &s) == 1 && s == sig)
			n++;
	fclose(f);
	return n;
}

void each_task(int (*fn)(pid_t tid, void *arg), void *arg)
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

/* Programs that take a real-time signal usually take the lowest: the search starts high. */
int pick_signal(void)
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

void read_name(pid_t tid, char *name, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	snprintf(name, len, "?");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, name, len - 1);
	close(fd);
	if (n <= 0) {
		snprintf(name, len, "?");
		return;
	}
	name[n] = '\0';
	name[strcspn(name, "\n")] = '\0';
}

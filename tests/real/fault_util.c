/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_util.h"
#include "victim.h"

static void drop_to(uid_t uid)
{
	if (!uid)
		return;
	if (setgroups(0, NULL) || setgid(NOBODY_GID) || setuid(uid))
		_exit(126);
	/* Changing credentials cleared the parent-death signal: set it again. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

pid_t cli_spawn(const char *const *args, uid_t uid, int *errfd)
{
	const char *argv[24] = {RA_CLI_PATH};
	int p[2], n = 1;
	pid_t pid;

	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(devnull, 0);
		dup2(p[1], 2);
		drop_to(uid);
		execv(RA_CLI_PATH, (char **)argv);
		_exit(127);
	}
	close(p[1]);
	*errfd = p[0];
	return pid;
}

int cli_finish(pid_t pid, int errfd, char *err, size_t len)
{
	size_t used = 0;
	ssize_t n;
	int status;

	while (used + 1 < len && (n = read(errfd, err + used, len - 1 - used)) > 0)
		used += (size_t)n;
	err[used] = '\0';
	close(errfd);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cli_run(const char *const *args, uid_t uid, char *err, size_t len)
{
	int fd;
	pid_t pid = cli_spawn(args, uid, &fd);

	if (pid < 0)
		return -1;
	return cli_finish(pid, fd, err, len);
}

int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

bool wait_tool_events(const char *dir, pid_t pid, const char *event, int n, int timeout_ms)
{
	static char log[65536];
	struct timespec ts = {0, 5 * 1000 * 1000};

	for (int waited = 0; waited <= timeout_ms; waited += 5) {
		tool_log(dir, pid, log, sizeof(log));
		if (tool_count(log, event) >= n)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

unsigned long long tool_event_ns(const char *log, const char *event, int nth)
{
	size_t n = strlen(event);
	const char *ns;

	for (const char *p = log; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, event, n) || p[n] != ' ' || --nth > 0)
			continue;
		ns = strstr(p, " ns=");
		return ns ? strtoull(ns + 4, NULL, 10) : 0;
	}
	return 0;
}

unsigned long long realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static int count_dir(const char *path)
{
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir(path);

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

int proc_fd_count(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	return count_dir(path);
}

int proc_thread_count(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	return count_dir(path);
}

int proc_each_task(pid_t pid, const char *name,
		   int (*fn)(FILE *f, pid_t pid, const char *tid, void *arg), void *arg)
{
	char path[320];
	struct dirent *d;
	DIR *dir;
	FILE *f;
	int sum = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/%s", pid, d->d_name, name);
		f = fopen(path, "re");
		sum += fn(f, pid, d->d_name, arg);
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
	return sum;
}

int proc_maps_count(pid_t pid)
{
	char path[64], buf[4096];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		n += strchr(buf, '\n') != NULL;
	fclose(f);
	return n;
}

long proc_rss_kb(pid_t pid)
{
	char path[64], buf[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

pid_t make_zombie(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	for (int i = 0; i < 500 && proc_state(pid) != 'Z'; i++)
		usleep(2000);
	return pid;
}

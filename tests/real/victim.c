/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

#define REPLY_TIMEOUT_MS 10000

static void child_exec(const struct victim_opts *o, int in, int out)
{
	const char *argv[16] = {o->program ? o->program : RA_TARGET_PATH};
	int n = 1;

	/* A test that dies takes its victims along. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	dup2(in, 0);
	dup2(out, 1);
	unsetenv("ROCP_TOOL_ATTACH");
	unsetenv("LD_PRELOAD");
	if (o->attach_env)
		setenv("ROCP_TOOL_ATTACH", "1", 1);
	if (o->agent)
		setenv("LD_PRELOAD", RA_AGENT_PATH, 1);
	for (int i = 0; i < 8 && o->env[i]; i++)
		putenv((char *)o->env[i]);
	for (int i = 0; i < 8 && o->argv[i]; i++)
		argv[n++] = o->argv[i];
	execv(argv[0], (char **)argv);
	_exit(127);
}

int victim_start(struct victim *v, const struct victim_opts *o)
{
	int in[2], out[2];
	char line[256];

	memset(v, 0, sizeof(*v));
	v->to = v->from = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	v->pid = fork();
	if (v->pid < 0)
		return -1;
	if (v->pid == 0)
		child_exec(o, in[0], out[1]);
	close(in[0]);
	close(out[1]);
	v->to = in[1];
	v->from = out[0];
	if (victim_readline(v, line, sizeof(line), REPLY_TIMEOUT_MS) || strncmp(line, "ready", 5))
		return -1;
	return 0;
}

int victim_readline(struct victim *v, char *line, size_t len, int timeout_ms)
{
	struct pollfd p = {v->from, POLLIN, 0};
	char *nl;
	ssize_t n;

	while (!(nl = memchr(v->buf, '\n', v->len))) {
		if (v->len == sizeof(v->buf) || poll(&p, 1, timeout_ms) <= 0)
			return -1;
		n = read(v->from, v->buf + v->len, sizeof(v->buf) - v->len);
		if (n <= 0)
			return -1;
		v->len += (size_t)n;
	}
	*nl = '\0';
	snprintf(line, len, "%s", v->buf);
	v->len -= (size_t)(nl + 1 - v->buf);
	memmove(v->buf, nl + 1, v->len);
	return 0;
}

int victim_cmd(struct victim *v, const char *cmd, char *reply, size_t len)
{
	size_t n = strlen(cmd);

	if (write(v->to, cmd, n) != (ssize_t)n || write(v->to, "\n", 1) != 1)
		return -1;
	return victim_readline(v, reply, len, REPLY_TIMEOUT_MS);
}

long long victim_status(struct victim *v, const char *key)
{
	char reply[512], pat[64], *p;

	if (victim_cmd(v, "status", reply, sizeof(reply)))
		return -1;
	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(reply, pat);
	return p ? atoll(p + strlen(pat)) : -1;
}

int victim_unharmed(struct victim *v, bool listener, char *why, size_t len)
{
	struct timespec nap = {0, 30 * 1000 * 1000};
	char reply[256];
	long long w1, w2;

	if (!proc_alive(v->pid))
		return snprintf(why, len, "not alive"), -1;
	if (proc_tracer(v->pid))
		return snprintf(why, len, "traced by %d", proc_tracer(v->pid)), -1;
	if (listener && !proc_thread(v->pid, "rocp-bg-attach"))
		return snprintf(why, len, "its rocp-bg-attach thread is gone"), -1;
	if (victim_cmd(v, "ping", reply, sizeof(reply)) || strcmp(reply, "pong"))
		return snprintf(why, len, "does not answer ping"), -1;
	w1 = victim_status(v, "work");
	nanosleep(&nap, NULL);
	w2 = victim_status(v, "work");
	if (w1 < 0 || w2 <= w1)
		return snprintf(why, len, "its workers stopped (%lld, then %lld)", w1, w2), -1;
	if (victim_status(v, "eintr"))
		return snprintf(why, len, "its reader saw EINTR"), -1;
	return 0;
}

int victim_stop(struct victim *v)
{
	int status = -1;

	if (v->pid > 0) {
		kill(v->pid, SIGTERM);
		waitpid(v->pid, &status, 0);
		v->pid = 0;
	}
	if (v->to >= 0)
		close(v->to);
	if (v->from >= 0)
		close(v->from);
	v->to = v->from = -1;
	return status;
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

bool proc_alive(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_small(path, buf, sizeof(buf)))
		return false;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

pid_t proc_tracer(pid_t pid)
{
	char path[512], buf[4096], *p;
	struct dirent *d;
	pid_t max = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", pid, d->d_name);
		if (!read_small(path, buf, sizeof(buf)) && (p = strstr(buf, "TracerPid:")) &&
		    atoi(p + 10) > max)
			max = atoi(p + 10);
	}
	closedir(dir);
	return max;
}

pid_t proc_thread(pid_t pid, const char *comm)
{
	char path[512], buf[64];
	struct dirent *d;
	pid_t tid = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!tid && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", pid, d->d_name);
		if (!read_small(path, buf, sizeof(buf))) {
			buf[strcspn(buf, "\n")] = '\0';
			if (!strcmp(buf, comm))
				tid = atoi(d->d_name);
		}
	}
	closedir(dir);
	return tid;
}

void make_outdir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/rocattach-test.XXXXXX");
	if (!mkdtemp(dir))
		dir[0] = '\0';
}

size_t tool_log(const char *dir, pid_t pid, char *buf, size_t len)
{
	char host[256], path[512];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if (gethostname(host, sizeof(host)))
		return 0;
	snprintf(path, sizeof(path), "%s/rocattach-tool.%s.%d.log", dir, host, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? (size_t)n : 0;
}

int tool_count(const char *log, const char *event)
{
	size_t n = strlen(event);
	int count = 0;

	for (const char *p = log; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, event, n) && p[n] == ' ')
			count++;
	return count;
}

void tool_events(const char *log, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (const char *p = log; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		size_t w = strcspn(p, " \n");

		if (used + w + 2 > len)
			break;
		if (used)
			out[used++] = ' ';
		memcpy(out + used, p, w);
		used += w;
		out[used] = '\0';
	}
}

bool wait_until(bool (*cond)(void *), void *arg, int timeout_ms)
{
	struct timespec ts = {0, 10 * 1000 * 1000};

	for (int waited = 0; waited <= timeout_ms; waited += 10) {
		if (cond(arg))
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

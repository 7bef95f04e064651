/* SPDX-License-Identifier: MIT */
/* An attacher's liveness (owner.h), shared by the target-side watchdogs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/owner.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

int ra_owner_alive_proc(pid_t pid, unsigned long long start)
{
	unsigned long long st;
	char path[64], buf[1024], *p;
	int fd, field;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && !access("/proc/self/stat", F_OK) ? 0 : -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n == 0 || errno == ESRCH ? 0 : -1;
	buf[n] = '\0';
	/* comm may hold spaces and ')': count fields from the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return p ? 0 : -1;
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &st) != 1)
		return -1;
	return st == start;
}

bool ra_owner_alive(pid_t pid, unsigned long long start)
{
	int r = ra_owner_alive_proc(pid, start);

	if (r >= 0)
		return r;
	return !(kill(pid, 0) && errno == ESRCH);
}

/* Opened first, then checked: a pid reused after that check cannot fool the pidfd. */
int ra_owner_open(pid_t pid, unsigned long long start, bool *dead)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		*dead = errno == ESRCH || !ra_owner_alive(pid, start);
	else
		*dead = ra_owner_alive_proc(pid, start) == 0;
	return fd;
}

/* The poll's timeout (ms, -1: none): the /proc poll's period, and no later than end. */
static int wait_ms(pid_t pid, int fd, uint64_t end)
{
	int ms = pid && fd < 0 ? RA_OWNER_POLL_MS : -1;
	uint64_t now, left;

	if (!end)
		return ms;
	now = ra_monotonic_ns();
	left = end > now ? (end - now + RA_NS_PER_MS - 1) / RA_NS_PER_MS : 0;
	if (left > INT32_MAX)
		left = INT32_MAX;
	return ms >= 0 && (uint64_t)ms < left ? ms : (int)left;
}

int ra_owner_wait(int wake, pid_t pid, unsigned long long start, int fd, bool dead, uint64_t end)
{
	struct pollfd p[2] = {{wake, POLLIN, 0}, {fd, POLLIN, 0}};
	uint64_t v;
	int n;

	if (pid && dead)
		return 1;
	n = poll(p, pid ? 2 : 1, wait_ms(pid, fd, end));
	if (n < 0)
		return -1;
	if (p[0].revents) {
		if (read(wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return -1;
		return 0;
	}
	if (p[1].revents)
		return 1;
	if (n == 0 && pid && fd < 0 && !ra_owner_alive(pid, start))
		return 1;
	return n == 0 && end && ra_monotonic_ns() >= end ? 2 : 0;
}

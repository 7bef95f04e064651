/* SPDX-License-Identifier: MIT */
/*
 * Is a node's job still there? The launcher is not its targets' parent, so
 * it cannot wait for them: it holds a pidfd per target (readable once the
 * process has exited, zombie included, and immune to pid reuse) and polls
 * them. Where pidfd_open fails (kernel before 5.3, no fds left), it reads
 * /proc/PID/stat and compares the start time read when the watch opened.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/procfs.h"
#include "node.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct rn_watch {
	size_t n;
	pid_t *pid;
	int *fd;	 /* pidfd, -1: watched through /proc */
	uint64_t *start; /* /proc start time (fallback), 0: unknown */
	bool *gone;
};

/* Gone: no such process, a zombie, or another process under the same pid. */
static bool stat_gone(pid_t pid, uint64_t start)
{
	struct ra_stat st;

	if (ra_stat_read(NULL, pid, &st) < 0)
		return true;
	return st.state == 'Z' || st.state == 'X' || (start && st.starttime != start);
}

static bool pidfd_gone(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};

	return poll(&p, 1, 0) > 0;
}

void rn_watch_close(struct rn_watch *w)
{
	if (!w)
		return;
	for (size_t i = 0; w->fd && i < w->n; i++)
		if (w->fd[i] >= 0)
			close(w->fd[i]);
	free(w->pid);
	free(w->fd);
	free(w->start);
	free(w->gone);
	free(w);
}

static void watch_one(struct rn_watch *w, size_t i, pid_t pid)
{
	struct ra_stat st;

	w->pid[i] = pid;
	w->fd[i] = (int)syscall(SYS_pidfd_open, pid, 0);
	if (w->fd[i] >= 0)
		return;
	if (errno == ESRCH || ra_stat_read(NULL, pid, &st) < 0 || st.state == 'Z' ||
	    st.state == 'X')
		w->gone[i] = true;
	else
		w->start[i] = st.starttime;
}

struct rn_watch *rn_watch_open(const struct rn_target *t, size_t n)
{
	struct rn_watch *w = calloc(1, sizeof(*w));
	size_t k = n ? n : 1;

	if (!w)
		return NULL;
	w->n = n;
	w->pid = calloc(k, sizeof(*w->pid));
	w->fd = malloc(k * sizeof(*w->fd));
	w->start = calloc(k, sizeof(*w->start));
	w->gone = calloc(k, sizeof(*w->gone));
	if (!w->pid || !w->fd || !w->start || !w->gone) {
		free(w->fd);
		w->fd = NULL;
		rn_watch_close(w);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		w->fd[i] = -1;
	for (size_t i = 0; i < n; i++)
		watch_one(w, i, t[i].pid);
	return w;
}

size_t rn_watch_alive(struct rn_watch *w)
{
	size_t alive = 0;

	for (size_t i = 0; w && i < w->n; i++) {
		if (!w->gone[i]) {
			w->gone[i] = w->fd[i] >= 0 ? pidfd_gone(w->fd[i])
						   : stat_gone(w->pid[i], w->start[i]);
			if (w->gone[i] && w->fd[i] >= 0) {
				close(w->fd[i]);
				w->fd[i] = -1;
			}
		}
		alive += !w->gone[i];
	}
	return alive;
}

bool rn_watch_gone(const struct rn_watch *w, size_t i)
{
	return w && i < w->n && w->gone[i];
}

/*
 * An attached target that is gone died with its tools in it: when it was
 * seen gone is the closest we know of its death. Its session is dropped by
 * the detach (rn_detach_all), which keeps this state.
 */
static void died_attached(struct rn_target *t)
{
	t->state = RN_DIED_ATTACHED;
	t->status = ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND;
	t->died_ns = ra_realtime_ns();
	snprintf(t->message, sizeof(t->message), "process %d died with its tools attached",
		 (int)t->pid);
}

/*
 * Targets that are gone and not attached (found, or detached after an
 * earlier window) are not attached again: they become RN_EXITED here. An
 * attached one becomes RN_DIED_ATTACHED.
 */
size_t rn_watch_mark(struct rn_watch *w, struct rn_target *t, size_t n)
{
	size_t alive = rn_watch_alive(w);

	for (size_t i = 0; w && i < n && i < w->n; i++) {
		if (w->gone[i] && t[i].state == RN_ATTACHED)
			died_attached(&t[i]);
		if (!w->gone[i] || (t[i].state != RN_FOUND && t[i].state != RN_DETACHED))
			continue;
		t[i].state = RN_EXITED;
		t[i].status = ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND;
		snprintf(t[i].message, sizeof(t[i].message), "process %d exited %s", (int)t[i].pid,
			 t[i].windows ? "between windows" : "before its first window");
	}
	return alive;
}

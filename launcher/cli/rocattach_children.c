/* SPDX-License-Identifier: MIT */
/*
 * rocattach's descendants, each on its own clock (see rocattach_children.h).
 * The stop detaches every descendant whose attach returned; one still in
 * its call is detached by its worker as soon as the call returns: at once,
 * and late if after the stop. Each call ends by its deadline
 * (--call-timeout), so the end waits for a stuck one at most that long.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include "cli_opts.h"
#include "common/clock.h"
#include "common/procfs.h"
#include "common/protocol.h"
#include "node.h"
#include "rocattach_children.h"

struct rc_children {
	struct rn_target *t;
	size_t n;
	struct rn_pool_opts o;
	struct rn_window *w; /* NULL: attached here already (out of memory) */
	uint64_t stop_ns;    /* the stop (CLOCK_REALTIME, 0: now) */
	pthread_t stopper;
	bool stopping; /* stopper runs */
};

/* As the library's tree attach: a descendant without a listener is skipped, unless injected. */
static bool skipped(pid_t root, pid_t pid, bool inject, bool *listener)
{
	pid_t tid;
	int r = ra_find_thread_by_comm(RA_PROCFS, pid, RA_LISTENER_COMM, &tid);

	*listener = r == 0;
	if (inject || r != -ENOENT)
		return false;
	fprintf(stderr,
		"rocattach: warning: attach tree %d: skipping process %d: no attach listener "
		"(a child forked without exec?)\n",
		(int)root, (int)pid);
	return true;
}

/* root's descendants to attach, as records of the node layer; 0 when none. */
static size_t descendants(struct rc_children *c, pid_t root, bool inject)
{
	pid_t *pids = NULL;
	size_t n = 0;
	bool listener;

	if (ra_tree(RA_PROCFS, root, &pids, &n) || n < 2)
		goto out;
	c->t = calloc(n - 1, sizeof(*c->t));
	for (size_t i = 1; c->t && i < n; i++) {
		struct rn_target *t = &c->t[c->n];

		if (skipped(root, pids[i], inject, &listener))
			continue;
		t->pid = t->nspid = pids[i];
		t->rank = -1;
		t->listener = listener;
		t->state = RN_FOUND;
		c->n++;
	}
out:
	free(pids);
	return c->n;
}

struct rc_children *rc_children_open(pid_t root, const char *tools, bool inject,
				     unsigned call_timeout_ms, uint64_t start_ns,
				     uint64_t planned_stop_ns)
{
	struct rc_children *c = calloc(1, sizeof(*c));
	int short_by = 0;

	if (!c)
		return NULL;
	if (!descendants(c, root, inject)) {
		free(c->t);
		free(c);
		return NULL;
	}
	c->o = (struct rn_pool_opts){.tools = tools,
				     .inject = inject,
				     .call_timeout_ms = call_timeout_ms,
				     .start_ns = start_ns,
				     .planned_stop_ns = planned_stop_ns};
	/* One worker per descendant: a stuck call takes none from the others. */
	c->o.jobs = (int)c->n;
	c->w = rn_window_open(c->t, c->n, &c->o, &short_by);
	if (!c->w)
		rn_attach_all(c->t, c->n, &c->o);
	else if (short_by)
		fprintf(stderr,
			"rocattach: warning: %d of %zu attach threads could not be created "
			"(thread limits): fewer descendants attach at once\n",
			short_by, c->n);
	return c;
}

void rc_children_wait(struct rc_children *c, int sfd, long long until_ms, int *sig)
{
	struct pollfd p = {sfd, POLLIN, 0};
	struct signalfd_siginfo si;

	*sig = 0;
	while (c && c->w && rn_window_pending(c->w) &&
	       (long long)(ra_monotonic_ns() / RA_NS_PER_MS) < until_ms) {
		if (poll(&p, 1, 5) > 0 && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			*sig = (int)si.ssi_signo;
			return;
		}
	}
}

static void *stopper_run(void *arg)
{
	struct rc_children *c = arg;
	struct rn_pool_opts d = c->o;

	d.stop_ns = c->stop_ns;
	rn_window_stop(c->w, &d);
	return NULL;
}

void rc_children_stop(struct rc_children *c, uint64_t stop_ns)
{
	if (!c)
		return;
	c->stop_ns = stop_ns;
	if (!c->w) {
		struct rn_pool_opts d = c->o;

		d.stop_ns = stop_ns;
		rn_detach_all(c->t, c->n, &d);
		return;
	}
	c->stopping = !pthread_create(&c->stopper, NULL, stopper_run, c);
	if (!c->stopping)
		stopper_run(c);
}

/* One descendant's outcome after the end: its exit code, and a line if the library said none. */
static int outcome(const struct rn_target *t)
{
	switch (t->state) {
	case RN_DETACHED:
		if (t->late_ns)
			fprintf(stderr,
				"rocattach: warning: process %d: its attach returned %.1f ms after "
				"the window's stop: its tools were detached at once (late)\n",
				(int)t->pid, (double)t->late_ns / 1e6);
		if (!rn_some_tool_failed(t))
			return CLI_EXIT_OK;
		fprintf(stderr,
			"rocattach: error: process %d: a tool of the list failed, the others "
			"attached: %s\n",
			(int)t->pid, t->message);
		return CLI_EXIT_PARTIAL;
	case RN_DETACH_FAILED:
		return CLI_EXIT_DETACH;
	case RN_DECLINED:
		/* Every tool chose not to profile it (our agent tells): no failure. */
		fprintf(stderr, "rocattach: process %d: every tool declined it: not attached\n",
			(int)t->pid);
		return CLI_EXIT_OK;
	case RN_DIED_ATTACHED:
		/* The library logs a target gone at its detach as news only: said here. */
		fprintf(stderr, "rocattach: error: %s\n", t->message);
		return CLI_EXIT_DETACH;
	default:
		/* Not attached (the library said why), or stopped with its tools attached. */
		return CLI_EXIT_PARTIAL;
	}
}

int rc_children_end(struct rc_children *c)
{
	size_t pending;
	int code = CLI_EXIT_OK, k;

	if (!c)
		return CLI_EXIT_OK;
	if (c->stopping)
		pthread_join(c->stopper, NULL);
	if (c->w) {
		pending = rn_window_pending(c->w);
		if (pending)
			fprintf(stderr,
				"rocattach: %zu attach %s of descendants still running after the "
				"stop: each ends by its deadline (--call-timeout %u ms); no other "
				"process waits for %s\n",
				pending, pending == 1 ? "call" : "calls", c->o.call_timeout_ms,
				pending == 1 ? "it" : "them");
		rn_window_close(c->w);
	}
	for (size_t i = 0; i < c->n; i++) {
		k = outcome(&c->t[i]);
		if (k == CLI_EXIT_DETACH || (k && code == CLI_EXIT_OK))
			code = k;
	}
	free(c->t);
	free(c);
	return code;
}

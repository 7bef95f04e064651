/* SPDX-License-Identifier: MIT */
/*
 * A node's calls in one window, each target on its own clock (rn_window_*,
 * node/pool.c; window.h):
 *
 *   attaches  sent at the send time; this rank waits for them until they
 *             have all returned, a signal comes, or the start time plus
 *             ATTACH_WAIT_NS (never past the planned stop's margin), and
 *             goes on to the hold with any still in their call: their
 *             targets count as pending in the word of the attaches
 *   detaches  at the stop, every target whose attach returned; one still
 *             in its attach call is detached by its worker when the call
 *             returns: at once, and late if after the stop
 *   end       the calls still running end by their deadlines
 *             (--call-timeout); this rank answers its tree meanwhile, and
 *             its records follow
 *
 * So a call that is stuck, slow or stopped on one target moves no other
 * target's start or stop, and this node answers its parent on time.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "window.h"

/*
 * How long after the start time this rank waits for attach calls that have
 * not returned before it goes on to the hold without them: a healthy
 * tool_attach returns within it. Only their word of the attaches waits.
 */
#define ATTACH_WAIT_NS 500000000ull
/*
 * --late-start: each call runs the pre-checks and the start in the target,
 * up to --call-timeout: this rank waits for them all (rank 0 ends the window
 * on their word), but never past the parent's wait for the word (10 s).
 */
#define LATE_WAIT_MAX_NS 9000000000ull

/*
 * The detaches run on a helper thread while this one answers signals: each
 * call has its deadline (--call-timeout), but a signal is said at once and
 * kept for the window loop (rm_take_signal gives it first).
 */
struct pool_job {
	struct rm_win *w;
	struct rn_pool_opts *p;
	int done[2];
};

static void detach_pool(struct rm_win *w, struct rn_pool_opts *p)
{
	if (w->self->win)
		rn_window_stop(w->self->win, p);
	else
		rn_detach_all(w->self->t, w->self->n, p);
}

static void *pool_job_run(void *arg)
{
	struct pool_job *j = arg;

	detach_pool(j->w, j->p);
	if (write(j->done[1], "x", 1) < 0) {
		/* The joiner still joins: it only waits longer. */
	}
	return NULL;
}

/* A signal during the calls: kept for the window loop, said once. */
static void held_signal(struct rm_win *w, int sig, const char *during)
{
	w->self->held_sig = sig;
	rm_say(w->self,
	       "SIG%s received during the %s: the window ends as soon as they return "
	       "(each within --call-timeout %lld ms)",
	       sigabbrev_np(sig), during, (long long)w->o->call_timeout_ms);
}

void rm_detaches(struct rm_win *w, struct rn_pool_opts *p)
{
	struct pool_job j = {w, p, {-1, -1}};
	struct pollfd f[2];
	int nfds = w->self->sfd >= 0 ? 2 : 1, sig;
	pthread_t th;

	if (pipe(j.done))
		return detach_pool(w, p);
	if (pthread_create(&th, NULL, pool_job_run, &j)) {
		close(j.done[0]);
		close(j.done[1]);
		return detach_pool(w, p);
	}
	f[0] = (struct pollfd){j.done[0], POLLIN, 0};
	f[1] = (struct pollfd){w->self->sfd, POLLIN, 0};
	while (poll(f, (nfds_t)nfds, 25) >= 0 && !(f[0].revents & POLLIN)) {
		if (nfds < 2 || !(f[1].revents & POLLIN) || !(sig = rm_take_signal(w->self)))
			continue;
		/* One is enough: the window stops; later ones wait in the signalfd. */
		held_signal(w, sig, "detaches");
		nfds = 1;
	}
	pthread_join(th, NULL);
	close(j.done[0]);
	close(j.done[1]);
}

/*
 * Until every attach returned, a signal came (kept for the hold, which
 * stops the window at once), or until_mono.
 */
static void attach_wait(struct rm_win *w, uint64_t until_mono)
{
	struct pollfd f = {w->self->sfd, POLLIN, 0};
	int sig;

	while (rn_window_pending(w->self->win) && ra_monotonic_ns() < until_mono) {
		if (w->self->sfd < 0 || poll(&f, 1, 5) <= 0) {
			if (w->self->sfd < 0)
				rm_flow_nap(w->flow, 5000);
			continue;
		}
		if ((sig = rm_take_signal(w->self))) {
			w->self->held_sig = sig;
			return;
		}
	}
}

int rm_attaches(struct rm_win *w, struct rn_pool_opts *p, uint64_t start_mono, uint64_t stop_mono)
{
	uint64_t until = start_mono + ATTACH_WAIT_NS;
	uint64_t late = (uint64_t)w->o->call_timeout_ms * RA_NS_PER_MS + ATTACH_WAIT_NS;
	int short_by = 0;

	if (w->o->late_start)
		until = start_mono + (late < LATE_WAIT_MAX_NS ? late : LATE_WAIT_MAX_NS);
	if (stop_mono && until > stop_mono)
		until = stop_mono;
	w->self->win = rn_window_open(w->self->t, w->self->n, p, &short_by);
	if (!w->self->win)
		return rn_attach_all(w->self->t, w->self->n,
				     p); /* out of memory: every call here */
	attach_wait(w, until);
	return short_by;
}

bool rm_attach_returned(const struct rm_win *w, size_t i)
{
	return !w->self->win || rn_window_returned(w->self->win, i);
}

size_t rm_attach_pending(const struct rm_win *w)
{
	return w->self->win ? rn_window_pending(w->self->win) : 0;
}

void rm_window_calls_end(struct rm_win *w)
{
	size_t pending;
	int sig;

	if (!w->self->win)
		return;
	pending = rn_window_pending(w->self->win);
	if (pending)
		rm_say(w->self,
		       "%zu attach %s still running after the stop: %s by %s deadline "
		       "(--call-timeout %lld ms); no other target waits for %s",
		       pending, pending == 1 ? "call" : "calls",
		       pending == 1 ? "it ends" : "they end", pending == 1 ? "its" : "their",
		       (long long)w->o->call_timeout_ms, pending == 1 ? "it" : "them");
	/*
	 * This rank answers its tree (clock pings, STOP and GONE up) while they
	 * end; rank 0 hears a signal at once (its provisional report), and the
	 * run ends after this window.
	 */
	while (rn_window_pending(w->self->win)) {
		if (w->self->rank != 0)
			rm_flow_service(w->flow);
		else if ((sig = rm_take_signal(w->self)) && sig != SIGUSR1 && !w->interrupted)
			w->interrupted = sig;
		rm_flow_nap(w->flow, 5000);
	}
	rn_window_close(w->self->win);
	w->self->win = NULL;
}

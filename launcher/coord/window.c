/* SPDX-License-Identifier: MIT */
/*
 * One window, on rank 0 (rm_run_windows) and on the other ranks
 * (rm_follow_windows):
 *
 *   clocks  rank 0 estimates each live rank's clock offset (mpi_link.c)
 *   order   rank 0 sends each rank a start time T a little ahead, and when
 *           to send the attaches (a lead before T), in rank 0's clock with
 *           that rank's offset; workers attach with T, in their own clock,
 *           as the library's start time: our agent calls tool_attach at T,
 *           ROCm's side gets its call at T
 *   ready   each rank tells rank 0 how its attaches went
 *   hold    rank 0 decides the stop (duration, Enter, a signal on any rank,
 *           the job's end, a tool that nothing could attach) and sends
 *           every rank a stop time S; every worker detaches with S as the
 *           library's stop time, so tool_detach runs at S on both sides
 *   records each rank sends its records; rank 0 keeps them for the report
 *
 * The job's end: each worker watches its targets (node/watch.c) and, once
 * all of them are gone, tells rank 0 once (a GONE message); rank 0 counts
 * the nodes that still have a live target and ends the window and the run
 * when none has.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "ctx.h"
#include "tree.h"

/*
 * A stop rank 0 decides lies STOP_MARGIN_NS ahead, time enough for every
 * rank to hear of it first.
 */
#define STOP_MARGIN_NS 100000000ull
/*
 * The automatic start lead: the first window's is a base plus a cost per
 * target on the busiest node (nothing is measured yet); later windows take
 * the time the last one's attaches needed to be ready in every target
 * (measured), with room: LEAD_ROOM times it plus LEAD_MARGIN_NS, never less
 * than LEAD_MIN_NS nor more than the first window's.
 */
#define LEAD_BASE_NS 150000000ull
#define LEAD_PER_TARGET_NS 3000000ull
#define LEAD_ROOM 3
#define LEAD_MARGIN_NS 30000000ull
#define LEAD_MIN_NS 50000000ull

/* A time of rank 0's clock in this rank's. */
static uint64_t local_ns(const struct ctx *c, uint64_t root_ns)
{
	return (uint64_t)((int64_t)root_ns + c->clock.applied_ns);
}

/*
 * The window's frame (mpi_ctx.h): a CLOCK_REALTIME time of this window as
 * CLOCK_MONOTONIC, and back. Unsigned wrap-around keeps times before the
 * frame's start right.
 */
static uint64_t mono_of(const struct ctx *c, uint64_t rt_ns)
{
	return c->frame_mono + (rt_ns - c->frame_rt);
}

static uint64_t rt_of(const struct ctx *c, uint64_t mono_ns)
{
	return c->frame_rt + (mono_ns - c->frame_mono);
}

/* Take the frame at the start time rt_ns (once per window, on its start's receipt). */
static void set_frame(struct ctx *c, uint64_t rt_ns)
{
	c->frame_rt = rt_ns;
	c->frame_mono = ra_monotonic_of_realtime(rt_ns);
}

/* How long before the start the attaches are sent (the start lead). */
static uint64_t start_lead(const struct ctx *c)
{
	uint64_t first = LEAD_BASE_NS + LEAD_PER_TARGET_NS * c->max_targets, lead;

	if (c->o.start_lead_ms >= 0)
		return (uint64_t)c->o.start_lead_ms * RA_NS_PER_MS;
	if (!c->ready_ns)
		return first;
	lead = LEAD_ROOM * c->ready_ns + LEAD_MARGIN_NS;
	return lead < LEAD_MIN_NS ? LEAD_MIN_NS : lead > first ? first : lead;
}

/*
 * when[0]: the start time, a lead from now or the earliest allowed (a next
 * window's); when[1]: when to send the attaches, a lead before it, so that
 * no attach call waits in a target through the gap between windows.
 */
static void pick_start(struct ctx *c, uint64_t earliest, uint64_t when[2])
{
	uint64_t lead = start_lead(c), t = ra_realtime_ns() + lead;

	when[0] = t > earliest ? t : earliest;
	when[1] = when[0] - lead;
	set_frame(c, when[0]);
}

static struct rn_pool_opts pool_opts(const struct ctx *c)
{
	struct rn_pool_opts p = {.tools = c->o.tools,
				 .inject = c->o.inject,
				 .call_timeout_ms = (unsigned)c->o.call_timeout_ms};

	if (rm_stacks_on(&c->o) && c->stacks.dir[0])
		p.env = c->stacks.env;
	/* For a common start, every attach must be in flight before T: one worker per target. */
	p.jobs = c->o.jobs ? c->o.jobs : (int)(c->n ? c->n : 1);
	return p;
}

/*
 * The attaches or detaches run on a helper thread while this one answers
 * signals: each call has its deadline (--call-timeout), but a signal is
 * said at once and kept for the window loop (rm_take_signal gives it
 * first), which then stops the window. Without a thread, the pool runs here.
 */
struct pool_job {
	struct ctx *c;
	struct rn_pool_opts *p;
	bool attach;
	int done[2];
	int short_by; /* workers that could not be created (rn_attach_all) */
};

static void *pool_job_run(void *arg)
{
	struct pool_job *j = arg;

	if (j->attach)
		j->short_by = rn_attach_all(j->c->t, j->c->n, j->p);
	else
		rn_detach_all(j->c->t, j->c->n, j->p);
	if (write(j->done[1], "x", 1) < 0) {
		/* The joiner still joins: it only waits longer. */
	}
	return NULL;
}

static int pool_inline(struct ctx *c, struct rn_pool_opts *p, bool attach)
{
	if (attach)
		return rn_attach_all(c->t, c->n, p);
	rn_detach_all(c->t, c->n, p);
	return 0;
}

/* Returns the attach workers that could not be created (0 for the detaches). */
static int pool_answering(struct ctx *c, struct rn_pool_opts *p, bool attach)
{
	struct pool_job j = {c, p, attach, {-1, -1}, 0};
	struct pollfd f[2];
	int nfds = c->sfd >= 0 ? 2 : 1, sig;
	pthread_t th;

	if (pipe(j.done))
		return pool_inline(c, p, attach);
	if (pthread_create(&th, NULL, pool_job_run, &j)) {
		close(j.done[0]);
		close(j.done[1]);
		return pool_inline(c, p, attach);
	}
	f[0] = (struct pollfd){j.done[0], POLLIN, 0};
	f[1] = (struct pollfd){c->sfd, POLLIN, 0};
	while (poll(f, (nfds_t)nfds, 25) >= 0 && !(f[0].revents & POLLIN)) {
		if (nfds < 2 || !(f[1].revents & POLLIN) || !(sig = rm_take_signal(c)))
			continue;
		/* One is enough: the window stops; later ones wait in the signalfd. */
		c->held_sig = sig;
		nfds = 1;
		rm_say(c,
		       "SIG%s received during the %s: the window ends as soon as they return "
		       "(each within --call-timeout %lld ms)",
		       sigabbrev_np(sig), attach ? "attaches" : "detaches",
		       (long long)c->o.call_timeout_ms);
	}
	pthread_join(th, NULL);
	close(j.done[0]);
	close(j.done[1]);
	return j.short_by;
}

/*
 * --stacks without a directory for the tool's files: nothing is attached
 * (the tool would write into each target's working directory); each
 * target fails with the reason.
 */
static struct rm_ready stacks_unattached(struct ctx *c)
{
	struct rm_ready r = {0, 0, 0, 0};

	for (size_t i = 0; i < c->n; i++) {
		struct rn_target *t = &c->t[i];

		if (t->state != RN_FOUND && t->state != RN_DETACHED)
			continue;
		t->state = RN_ATTACH_FAILED;
		t->status = ROCATTACH_STATUS_ERROR;
		snprintf(t->message, sizeof(t->message), "not attached: %s", c->stacks_error);
	}
	return r;
}

/* The window's planned end: its start + the duration; 0 without one (until a stop). */
static uint64_t planned_end(const struct ctx *c, uint64_t start_ns)
{
	return c->o.duration_ms >= 0 ? start_ns + (uint64_t)c->o.duration_ms * RA_NS_PER_MS : 0;
}

/* Other ranks: is the window's planned end (else its --max-window) past already? */
static bool window_over(const struct ctx *c)
{
	uint64_t end = planned_end(c, c->frame_mono);

	if (!end)
		end = c->frame_mono + (uint64_t)c->o.max_window_ms * RA_NS_PER_MS;
	return ra_monotonic_ns() > end;
}

/*
 * Other ranks: the window's planned end passed before its attaches went
 * out (this rank was stopped, SIGSTOP, or starved past it; its parent has
 * lost it, or will). Attaching now would put the tool in after the window.
 */
__attribute__((noreturn)) static void too_late(struct ctx *c)
{
	rn_detach_all(c->t, c->n, NULL);
	rm_rank_error(c,
		      "window %d's planned end passed before its attaches were due to go out "
		      "(this rank was stopped or starved): nothing attached; ending (exit %d)",
		      c->tree.window, RM_EXIT_LOST);
	fflush(NULL);
	_exit(RM_EXIT_LOST);
}

/* when: the start and the send time, in this rank's clock. Returns how the attaches went. */
static struct rm_ready attach_phase(struct ctx *c, const uint64_t when[2])
{
	struct rm_ready r = {0, 0, 0, 0};
	struct rn_pool_opts p;
	int short_by;

	if (rm_stacks_on(&c->o) && c->worker && c->n && !c->stacks.dir[0] && !c->stacks_error[0] &&
	    rm_stacks_prepare(&c->stacks, c->o.sample_hz, c->stacks_error, sizeof(c->stacks_error)))
		rm_rank_error(c, "%s", c->stacks_error);
	ra_sleep_until_monotonic(mono_of(c, when[1]));
	if (c->rank != 0 && window_over(c))
		too_late(c);
	if (!c->worker || !c->n)
		return r;
	if (rm_stacks_on(&c->o) && c->stacks_error[0])
		return stacks_unattached(c);
	/* Who went since the last look is not attached again (and its GONE is due). */
	rn_watch_mark(c->watch, c->t, c->n);
	p = pool_opts(c);
	p.start_ns = when[0];
	short_by = pool_answering(c, &p, true);
	if (short_by)
		fprintf(stderr,
			"rocattach-mpi[%s:%d] warning: %d of the %d attach workers could not be "
			"started (thread limits: ulimit -u, kernel.threads-max): fewer attaches "
			"were in flight at once, and some may have begun after the start time\n",
			c->host, c->rank, short_by, rn_pool_jobs(&p, c->n));
	for (size_t i = 0; i < c->n; i++) {
		const struct rn_target *t = &c->t[i];

		if (t->attach_ready_ns > when[1] && t->attach_ready_ns - when[1] > r.ready_ns)
			r.ready_ns = t->attach_ready_ns - when[1];
		r.attached += t->state == RN_ATTACHED;
		r.tool_failed += t->attach_start_ns >= when[1] && rn_tool_failed(t);
		/* Without --inject a target without a listener can never attach. */
		r.no_listener += t->attach_start_ns >= when[1] && t->state == RN_ATTACH_FAILED &&
				 !t->listener && !c->o.inject;
	}
	return r;
}

/* --stacks: this node's files, read and named, become its folded lines; then removed. */
static void stacks_fold(struct ctx *c)
{
	if (!rm_stacks_on(&c->o) || !c->worker)
		return;
	rm_stacks_fold(&c->stacks, c->host, c->t, c->n, c->stacks_error, c->o.stacks,
		       c->o.sample_hz > 0, c->o.sample_hz > 0 && c->o.trace);
	rm_stacks_cleanup(&c->stacks);
}

/* The detach calls go out at once; the library keeps every hand-back to stop_ns. */

static void detach_phase(struct ctx *c, uint64_t stop_ns)
{
	struct rn_pool_opts p;

	if (!c->worker || !c->n) {
		ra_sleep_until_monotonic(mono_of(c, stop_ns));
		return;
	}
	p = pool_opts(c);
	p.stop_ns = stop_ns;
	(void)pool_answering(c, &p, false);
}

/*
 * Workers: once every target of the node is gone, rank 0 hears it once
 * (rank 0 counts its own node directly).
 */
static void watch_job(struct ctx *c)
{
	int32_t one = 1;

	if (!c->watch || c->gone_told || rn_watch_mark(c->watch, c->t, c->n))
		return;
	c->gone_told = true;
	if (c->rank == 0) {
		c->nodes_alive--;
		return;
	}
	rm_send_up(c, TAG_GONE, c->rank, one);
	c->gones_sent++;
}

/* ------------------------------------------------------------------------ */
/* Rank 0. */

/* The attaches of the window: counts, the tool's verdict, the next lead. */
static void attach_outcome(struct ctx *c, int w, uint64_t since)
{
	long long attached = 0, tool_failed = 0, no_listener = 0;
	uint64_t worst = 0;
	char line[128];

	for (int r = 0; r < c->size; r++) {
		const struct rm_peer *p = &c->peers[r];

		if (p->lost || !p->got_ready)
			continue;
		attached += p->ready.attached;
		tool_failed += p->ready.tool_failed;
		no_listener += p->ready.no_listener;
		worst = p->ready.ready_ns > worst ? p->ready.ready_ns : worst;
	}
	c->tool_stop = !attached && tool_failed;
	c->listener_stop = !attached && !tool_failed && no_listener;
	rm_progress_attached(line, sizeof(line), w, attached, c->total_targets, mono_of(c, since),
			     ra_monotonic_ns());
	rm_say(c, "%s", line);
	if (!worst)
		return;
	c->ready_ns = worst;
	if (c->o.verbose && w < c->o.windows)
		rm_say(c,
		       "window %d: attaches ready %.1f ms after they were sent; next start "
		       "lead %.1f ms",
		       w, (double)worst / 1e6, (double)start_lead(c) / 1e6);
}

/* GONE messages in; each is a node whose targets are all gone. */
static void take_gones(struct ctx *c)
{
	struct rm_up m;

	while (rm_tree_take_up(c, TAG_GONE, &m)) {
		c->peers[m.origin].gones++;
		c->nodes_alive--;
	}
}

/*
 * A stop that ends the run, not only the window: nothing left to profile,
 * nothing could attach the tool, or no target has a listener (and no
 * --inject brings one). Nothing runs on any target then, so the stop is now.
 */
static bool run_over(struct ctx *c, struct rm_halt *m)
{
	take_gones(c);
	if (c->tool_stop)
		c->run_stop = "tool failed";
	else if (c->listener_stop)
		c->run_stop = "nothing attachable";
	else if (c->nodes_alive <= 0)
		c->run_stop = "job ended";
	else
		return false;
	snprintf(m->reason, sizeof(m->reason), "%s", c->run_stop);
	m->last = 1;
	m->stop_ns = rt_of(c, ra_monotonic_ns());
	return true;
}

/* A STOP message from a rank (a signal there), or 0. */
static int take_stop(struct ctx *c, int *from)
{
	struct rm_up m;

	if (!rm_tree_take_up(c, TAG_STOP, &m))
		return 0;
	c->peers[m.origin].stops++;
	*from = m.origin;
	return m.value;
}

/*
 * Has the window ended? Fills m when it has. Decided on CLOCK_MONOTONIC
 * through the window's frame; the stop time sent is CLOCK_REALTIME.
 */
static bool root_decides(struct ctx *c, uint64_t start_ns, struct rm_halt *m)
{
	uint64_t now = ra_monotonic_ns(), start = mono_of(c, start_ns);
	uint64_t planned = planned_end(c, start_ns), planned_mono = planned_end(c, start);
	int sig, from = 0;

	if (run_over(c, m))
		return true;
	if (planned && now + STOP_MARGIN_NS >= planned_mono) {
		m->stop_ns = planned;
		snprintf(m->reason, sizeof(m->reason), "duration");
		return true;
	}
	if (now >= start + (uint64_t)c->o.max_window_ms * RA_NS_PER_MS) {
		snprintf(m->reason, sizeof(m->reason), "max-window");
	} else if ((sig = rm_take_signal(c))) {
		m->signo = sig;
		/* Open MPI and Slurm end a job with SIGTERM, then SIGKILL: be quick. */
		c->root_signalled = sig == SIGTERM;
		snprintf(m->reason, sizeof(m->reason), "SIG%s on rank 0", sigabbrev_np(sig));
	} else if (rm_took_enter(c)) {
		snprintf(m->reason, sizeof(m->reason), "enter");
	} else if ((sig = take_stop(c, &from))) {
		m->signo = sig;
		snprintf(m->reason, sizeof(m->reason), "SIG%s on rank %d", sigabbrev_np(sig), from);
	} else {
		return false;
	}
	m->stop_ns = rt_of(c, now + STOP_MARGIN_NS);
	/*
	 * Close to the planned end the ranks may be stopping there by
	 * themselves already (STOP_MARGIN_NS ahead): a stop between would reach
	 * them too late to agree. The planned end it is, for the same reason.
	 */
	if (planned && m->stop_ns + STOP_MARGIN_NS > planned)
		m->stop_ns = planned;
	return true;
}

/*
 * SIGTERM on rank 0 (Open MPI and Slurm end a job with it, SIGKILL follows
 * about a second later with Open MPI): the report is written now, before
 * anything that can block. Alone, rank 0 gathers only its own records and
 * nothing blocks: no provisional report then. A send to the dead rank waits inside
 * Open MPI until the SIGKILL (docs/reliability.md), and which rank died is
 * not known yet. This window's records are not gathered: every node shows
 * its last known ones as lost for that reason. The final report replaces
 * this one if rank 0 gets that far.
 */
static void write_provisional(struct ctx *c, int w, uint64_t start_ns, const struct rm_halt *m)
{
	struct rm_run r = c->run; /* the run so far, and this window: c->run stays as it is */
	struct rm_window *win;
	char err[512], why[160];

	if (!c->o.report || c->size < 2 || !(r.w = calloc(c->run.n_w + 1, sizeof(*r.w))))
		return;
	if (c->run.n_w)
		memcpy(r.w, c->run.w, c->run.n_w * sizeof(*r.w));
	snprintf(why, sizeof(why), "not gathered: %s, and this report was written at once",
		 m->reason);
	win = &r.w[r.n_w++];
	*win = (struct rm_window){
	    .index = w, .start_ns = start_ns, .stop_ns = m->stop_ns, .stop_reason = m->reason};
	rm_window_nodes(c, &win->nodes, &win->n_nodes, why);
	r.exit_code = RM_EXIT_INTERRUPTED;
	r.exit_reason = "interrupted";
	r.stop_reason = "interrupted";
	r.ended_ns = ra_realtime_ns();
	r.provisional = "written at a SIGTERM on rank 0 (the job may be being ended, SIGKILL "
			"may follow), before the last window's records were gathered: its nodes "
			"show their last known records; replaced by the final report if rank 0 "
			"got that far";
	if (rm_write_report(c->o.report, &r, err, sizeof(err)))
		rm_say(c, "%s", err);
	else
		rm_say(c,
		       "provisional report written to %s (%s: written before the records are "
		       "gathered, in case a SIGKILL follows)",
		       c->o.report, m->reason);
	rm_free_nodes(win->nodes, win->n_nodes);
	free(r.w);
}

/*
 * Rank 0: the children's READY is all in (or the silent ones are lost):
 * the window's attach counts. partial: the stop came first; the counts
 * leave out the subtrees still silent, and decide no end of the run.
 */
static void ready_outcome(struct ctx *c, int w, uint64_t since, bool partial)
{
	/* Deadlines scale with the worst round trip measured anywhere in the tree. */
	if (c->tree.ready_sum.rtt_sub_ns > c->rtt_worst_ns)
		c->rtt_worst_ns = c->tree.ready_sum.rtt_sub_ns;
	attach_outcome(c, w, since);
	if (partial)
		c->tool_stop = c->listener_stop = false;
}

/* The next look of a hold: sooner while READYs are owed (they are taken then). */
static uint64_t hold_wake(const struct ctx *c, uint64_t wake)
{
	uint64_t soon = ra_monotonic_ns() + 5 * RA_NS_PER_MS;

	if (!c->tree.ready_open)
		return wake;
	return wake && wake < soon ? wake : soon;
}

static void hold_root(struct ctx *c, int w, const uint64_t when[2], struct rm_halt *m)
{
	uint64_t start_ns = when[0], wake = planned_end(c, mono_of(c, start_ns));
	bool ready = false;
	int owed;

	if (wake)
		wake -= STOP_MARGIN_NS;
	else if (w == 1)
		rm_say(c,
		       "window 1 has no duration (-d): press Enter to end it (mpirun passes its "
		       "input to rank 0), or send SIGUSR1 to mpirun; it ends by itself after "
		       "--max-window %lld ms",
		       c->o.max_window_ms);
	memset(m, 0, sizeof(*m));
	for (;;) {
		watch_job(c);
		if (!ready && rm_tree_ready_poll(c)) {
			ready = true;
			ready_outcome(c, w, when[1], c->tree.ready_sum.owed > 0);
		}
		if (root_decides(c, start_ns, m))
			break;
		rm_wait_until(c, hold_wake(c, wake));
	}
	if (c->root_signalled)
		write_provisional(c, w, start_ns, m);
	rm_tree_halts(c, m);
	/* The stop went down first; then what word of the attaches came, and what did not. */
	if (!ready) {
		owed = rm_tree_ready_poll(c) ? 0 : rm_tree_ready_close(c);
		owed += c->tree.ready_sum.owed;
		ready_outcome(c, w, when[1], owed > 0);
	} else {
		owed = c->tree.ready_sum.owed;
	}
	if (owed)
		rm_say(c,
		       "window %d: %d %s still owed word of %s attaches at the stop (%s): the "
		       "counts leave %s out; the records say how it went",
		       w, owed, owed == 1 ? "rank" : "ranks", owed == 1 ? "its" : "their",
		       m->reason, owed == 1 ? "its subtree" : "their subtrees");
	if (m->signo && m->signo != SIGUSR1 && !(m->signo == SIGINT && c->o.duration_ms < 0))
		c->interrupted = m->signo;
	c->last |= m->last;
}

/* Nodes with a target not known gone, and not lost. */
static int count_alive(const struct ctx *c)
{
	int alive = 0;

	for (int r = 0; r < c->size; r++) {
		const struct rm_peer *p = &c->peers[r];

		alive += p->worker && !p->lost && rm_found(&p->last) && !p->all_gone;
	}
	return alive;
}

/*
 * With rocprofv3's synchronous output (--attach-sync-output), each tool
 * writes its output inside tool_detach, so a node's detach calls, and its
 * records, come up to --call-timeout later than without: the user raises
 * --call-timeout for big outputs. The waits on a node's records (rank 0's
 * after the stop, the other ranks' for rank 0's next order) grow by that much.
 */
static uint64_t output_wait(const struct ctx *c)
{
	return rp3_sync_output() ? (uint64_t)c->o.call_timeout_ms * RA_NS_PER_MS : 0;
}

/* The window's records, kept for the report. */
static void keep_window(struct ctx *c, int w, uint64_t start, const struct rm_halt *m)
{
	uint64_t grace = c->root_signalled ? GRACE_SIGNALLED_NS
					   : rm_budget(c, GRACE_RECORDS_NS) + output_wait(c);
	struct rm_window *win, *grown;
	long long detached = 0;
	char line[128];

	grown = realloc(c->run.w, (c->run.n_w + 1) * sizeof(*grown));
	if (!grown)
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	c->run.w = grown;
	win = &c->run.w[c->run.n_w++];
	memset(win, 0, sizeof(*win));
	win->index = w;
	win->start_ns = start;
	win->stop_ns = m->stop_ns;
	win->stop_reason = strdup(m->reason);
	rm_collect_records(c, &win->nodes, &win->n_nodes, mono_of(c, m->stop_ns), grace,
			   "after the stop");
	win->coord = (struct rm_coord){.known = true,
				       .messages_sent = c->coord.sent,
				       .messages_received = c->coord.received,
				       .bytes_sent = c->coord.bytes_sent,
				       .bytes_received = c->coord.bytes_received,
				       .fanout = c->tree.k,
				       .height = c->tree.height};
	for (int r = 0; r < c->size; r++)
		detached += c->peers[r].lost ? 0 : c->peers[r].detached;
	rm_progress_detached(line, sizeof(line), w, detached, c->total_targets,
			     mono_of(c, m->stop_ns), ra_monotonic_ns());
	rm_say(c, "%s", line);
}

void rm_run_windows(struct ctx *c)
{
	uint64_t when[2], earliest = 0;
	struct rm_halt m;

	for (int w = 1; w <= c->o.windows && !c->interrupted && !c->last; w++) {
		struct rm_order o = {.window = w};

		/* Rank 0's messages from here to the window's records: the window's. */
		memset(&c->coord, 0, sizeof(c->coord));
		rm_tree_window(c, w);
		/* Only children whose drift check disagreed: the clocks were measured at the start.
		 */
		rm_tree_measure(c, false);
		pick_start(c, earliest, when);
		o.start_ns = when[0];
		o.send_ns = when[1];
		o.rtt_worst_ns = c->rtt_worst_ns;
		o.detail = c->run.cut.level;
		c->cut_level = o.detail;
		/* Rank 0 has the order as it sends it (its node's order_received_ns). */
		c->tree.order_t1 = ra_realtime_ns();
		rm_tree_orders(c, &o);
		for (int r = 0; r < c->size; r++)
			c->peers[r].got_ready = false;
		c->peers[0].ready = attach_phase(c, when);
		c->peers[0].got_ready = true;
		/* The children's READY is waited for inside the hold: none delays the stop. */
		c->tool_stop = c->listener_stop = false;
		rm_tree_ready_begin(c, w, mono_of(c, when[0]), &c->peers[0].ready);
		hold_root(c, w, when, &m);
		detach_phase(c, m.stop_ns);
		stacks_fold(c);
		keep_window(c, w, when[0], &m);
		earliest = m.stop_ns + (uint64_t)c->o.delay_ms * RA_NS_PER_MS;
		c->nodes_alive = count_alive(c);
		if (!c->last && !c->nodes_alive) {
			c->run_stop = c->lost_count ? "nodes lost" : "job ended";
			c->last = true;
		}
		if (c->last && w < c->o.windows)
			rm_say(c, "%s: no further window", c->run_stop);
		else if (w < c->o.windows && c->o.delay_ms && !c->interrupted)
			rm_say(c, "next window in %lld ms", c->o.delay_ms);
	}
}

/* ------------------------------------------------------------------------ */
/* The other ranks. */

/*
 * A local signal is sent to rank 0, which stops everyone. After a SIGTERM
 * (Open MPI or Slurm ending the job: SIGKILL follows, after about a second
 * with Open MPI) this rank waits only ORPHAN_ENDING_NS for rank 0's stop
 * before detaching its targets itself: rank 0 may be stuck sending to a
 * dead rank.
 */
#define ORPHAN_ENDING_NS 600000000ull
static void watch_local(struct ctx *c, uint64_t *orphan_deadline)
{
	int32_t sig = rm_take_signal(c);
	uint64_t wait = sig == SIGTERM ? ORPHAN_ENDING_NS
				       : ORPHAN_TIMEOUT_NS + (uint64_t)c->tree.depth * 2 *
								 rm_budget(c, LEVEL_STEP_NS);

	if (!sig)
		return;
	rm_send_up(c, TAG_STOP, c->rank, sig);
	c->stops_sent++;
	if (!*orphan_deadline || ra_monotonic_ns() + wait < *orphan_deadline)
		*orphan_deadline = ra_monotonic_ns() + wait;
}

/*
 * When a rank gives up waiting for rank 0's stop (rank 0 dead or cut off):
 * the window's planned end (its duration, else --max-window) plus a grace;
 * start_ns and the result on CLOCK_MONOTONIC.
 */
static uint64_t lost_root_deadline(const struct ctx *c, uint64_t start_ns)
{
	uint64_t end = planned_end(c, start_ns);

	if (!end)
		end = start_ns + (uint64_t)c->o.max_window_ms * RA_NS_PER_MS;
	return end + rm_budget(c, GRACE_LOST_ROOT_NS) +
	       (uint64_t)c->tree.height * rm_budget(c, LEVEL_STEP_NS);
}

/*
 * Other ranks: the subtree's READY goes up once the children's is in (or
 * the silent ones are lost), from inside the hold.
 */
static void ready_step(struct ctx *c)
{
	if (c->tree.ready_up_sent || !rm_tree_ready_poll(c))
		return;
	rm_tree_ready_up(c, &c->tree.ready_sum);
	c->tree.ready_up_sent = true;
}

/*
 * The stop came with READYs still owed: what this subtree has goes up now,
 * the silent children left out (their records, or their loss, say it).
 */
static void ready_at_stop(struct ctx *c)
{
	if (c->tree.ready_up_sent)
		return;
	c->tree.ready_sum.owed += rm_tree_ready_close(c);
	rm_tree_ready_up(c, &c->tree.ready_sum);
	c->tree.ready_up_sent = true;
}

/*
 * Until rank 0's stop. A window with a duration ends at a time every rank
 * knows: rank 0 stops it there once it is STOP_MARGIN_NS away, and so does
 * each rank by itself, without waiting to hear it (rank 0's word follows).
 * Returns true when it stopped by itself (m->stop_ns set, the rest to come).
 */
static bool hold_other(struct ctx *c, uint64_t start_ns, struct rm_halt *m)
{
	uint64_t orphan_deadline = 0, lost = lost_root_deadline(c, mono_of(c, start_ns));
	uint64_t planned = planned_end(c, mono_of(c, start_ns));

	for (;;) {
		int flag = 0;
		uint64_t now;

		watch_job(c);
		rm_tree_service(c);
		ready_step(c);
		if (rm_tree_adopted_halt(c, m)) {
			rm_tree_halts(c, m);
			return false;
		}
		/* RM_MPI with the parent returns only on success here. */
		RM_MPI(c, c->tree.parent, "from", MPI_Iprobe, c->tree.parent, TAG_HALT,
		       MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		if (flag) {
			RM_MPI(c, c->tree.parent, "from", MPI_Recv, m, sizeof(*m), MPI_BYTE,
			       c->tree.parent, TAG_HALT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			rm_tree_halts(c, m);
			return false;
		}
		now = ra_monotonic_ns();
		if (planned && now + STOP_MARGIN_NS >= planned) {
			memset(m, 0, sizeof(*m));
			m->stop_ns = planned_end(c, start_ns);
			return true;
		}
		watch_local(c, &orphan_deadline);
		if (orphan_deadline && now > orphan_deadline)
			rm_cut_off(c, "stop after a signal here");
		if (now > lost)
			rm_cut_off(c, "stop by the window's planned end");
		if (ra_monotonic_ns() > c->tree.awake_until)
			rm_wait_until(c, hold_wake(c, planned ? planned - STOP_MARGIN_NS : 0));
	}
}

/* Other ranks: when the parent's next order is due, from now (the records just sent). */
static uint64_t next_order_due(struct ctx *c)
{
	const struct rm_tree *t = &c->tree;
	int root_kids = rm_tree_children(0, t->k, c->size);

	/* Rank 0 gathers (the levels' steps), retries, may measure clocks again, and more. */
	return ra_monotonic_ns() + (uint64_t)c->o.delay_ms * RA_NS_PER_MS +
	       rm_budget(c, GRACE_RECORDS_NS) + rm_budget(c, LATE_RETRY_NS) +
	       rm_budget(c, CLOCK_LOST_NS) + rm_budget(c, GRACE_NEXT_NS) + output_wait(c) +
	       (uint64_t)t->height * rm_budget(c, LEVEL_STEP_NS) +
	       (uint64_t)root_kids * 2 * RA_NS_PER_MS;
}

int rm_follow_windows(struct ctx *c, bool *lost)
{
	struct rm_order o;
	struct rm_halt m;
	uint64_t mine[2];

	for (;;) {
		struct rm_ready r;
		bool stopped;

		if (rm_await_parent(c, TAG_ORDER, &o, sizeof(o), c->next_deadline))
			rm_cut_off(c, "order");
		c->tree.order_t1 = ra_realtime_ns();
		if (o.end) {
			rm_tree_orders(c, &o);
			*lost = o.lost;
			return o.code;
		}
		rm_tree_window(c, o.window);
		/* From here on this rank's clock: rank 0's times turned into it. */
		c->clock = o.clock;
		c->rtt_worst_ns = o.rtt_worst_ns;
		c->cut_level = o.detail;
		rm_tree_orders(c, &o);
		mine[0] = local_ns(c, o.start_ns);
		mine[1] = local_ns(c, o.send_ns);
		/* Converted once, on receipt: a later step of this node's clock moves no wait. */
		set_frame(c, mine[0]);
		r = attach_phase(c, mine);
		r.window = o.window;
		/* The children's READY is waited for inside the hold: none delays the stop. */
		rm_tree_ready_begin(c, o.window, c->frame_mono, &r);
		c->tree.ready_up_sent = false;
		stopped = hold_other(c, mine[0], &m);
		ready_at_stop(c);
		if (stopped) {
			detach_phase(c, m.stop_ns);
			/* The parent's word on the same stop, for its reason and what follows. */
			if (rm_await_parent(c, TAG_HALT, &m, sizeof(m),
					    lost_root_deadline(c, c->frame_mono)))
				rm_cut_off(c, "stop");
			c->tree.halt_t1 = m.sent_rt ? ra_realtime_ns() : 0;
			rm_tree_halts(c, &m);
		} else {
			c->tree.halt_t1 = m.sent_rt ? ra_realtime_ns() : 0;
			detach_phase(c, local_ns(c, m.stop_ns));
		}
		stacks_fold(c);
		rm_records_up(c, o.window, mono_of(c, local_ns(c, m.stop_ns)),
			      rm_budget(c, GRACE_RECORDS_NS) + output_wait(c));
		/* Children whose drift check disagreed, measured again before the next order. */
		rm_tree_measure(c, false);
		c->next_deadline = next_order_due(c);
	}
}

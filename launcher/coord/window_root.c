/* SPDX-License-Identifier: MIT */
/*
 * Rank 0's windows (window.h): the start picked, the orders down, the
 * hold that decides the stop, the records kept for the report.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "tree.h"
#include "window.h"

/*
 * when[0]: the start time, a lead from now or the earliest allowed (a next
 * window's); when[1]: when to send the attaches, a lead before it, so that
 * no attach call waits in a target through the gap between windows.
 */
static void pick_start(struct rm_win *w, uint64_t earliest, uint64_t when[2])
{
	uint64_t lead = rm_win_start_lead(w, w->lead_why, sizeof(w->lead_why));
	uint64_t t = ra_realtime_ns() + lead;

	w->lead_ns = lead;
	if (w->o->verbose)
		rm_say(w->self, "start lead %.1f ms: %s", (double)lead / 1e6, w->lead_why);

	when[0] = t > earliest ? t : earliest;
	when[1] = when[0] - lead;
	rm_win_set_frame(w, when[0]);
}

/* The attaches of the window: counts, the tool's verdict, the next lead. */
/*
 * Nothing attached in window wi, and no call runs on: the window ends at
 * once, and says why, a count per cause (its sum is the targets tried).
 */
static void say_empty(struct rm_win *w, int wi, const struct rm_ready *s)
{
	char why[256];
	size_t k = 0;
	const struct {
		int64_t n;
		const char *what;
	} c[] = {{s->held, "held by another attacher"},
		 {s->differ, "the tool or rocprofv3's options differ from the first attach's"},
		 {s->declined, "every tool declined"},
		 {s->other, "failed (see the failures)"},
		 {s->gone, "ended before or during the attach"}};

	why[0] = '\0';
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (c[i].n && k < sizeof(why))
			k += (size_t)snprintf(why + k, sizeof(why) - k, "%s%lld %s", k ? ", " : "",
					      (long long)c[i].n, c[i].what);
	rm_say(w->self, "window %d: nothing attached (%s): the window ends now%s", wi,
	       k ? why : "no target left to try: each failed or ended in an earlier window",
	       wi < w->o->windows && !w->tool_stop && !w->listener_stop
		   ? "; the next one starts as planned"
		   : "");
}

/*
 * --late-start's word: what started (the tools stay: the summary has each
 * node's figures), and what had a listener and was attached on the normal
 * path: the window then holds until it is ended, and detaches those.
 */
static void say_late(struct rm_win *w, const struct rm_ready *s, long long pending)
{
	long long not =
	    s->held + s->differ + s->declined + s->other + s->gone + pending + s->attached;
	long long all = (long long)w->total_targets;

	rm_say(w->self,
	       "late start: %lld of %lld targets started (%lld failed or refused, %lld ended, "
	       "%lld still in their call); the tools stay until each process exits",
	       all > not ? all - not : 0, all, s->held + s->differ + s->declined + s->other,
	       s->gone, pending);
	if (s->attached)
		rm_say(w->self,
		       "late start: %lld %s a listener and %s attached on the normal path: "
		       "press Enter to end the window and detach %s (mpirun passes its input "
		       "to rank 0), or send SIGUSR1 to mpirun; it ends by itself after "
		       "--max-window %lld ms",
		       (long long)s->attached, s->attached == 1 ? "target has" : "targets have",
		       s->attached == 1 ? "was" : "were", s->attached == 1 ? "it" : "them",
		       w->o->max_window_ms);
}

static void attach_outcome(struct rm_win *w, int wi, uint64_t since, bool partial)
{
	struct rm_ready s = {0};
	long long pending = 0;
	uint64_t worst = 0;
	char line[128];

	for (int r = 0; r < w->self->size; r++) {
		const struct rm_peer *p = &w->roster->peers[r];

		if (p->lost || !p->got_ready)
			continue;
		s.attached += p->ready.attached;
		s.tool_failed += p->ready.tool_failed;
		s.no_listener += p->ready.no_listener;
		s.declined += p->ready.declined;
		s.held += p->ready.held;
		s.differ += p->ready.differ;
		s.other += p->ready.other;
		s.gone += p->ready.gone;
		pending += p->ready.pending;
		worst = p->ready.ready_ns > worst ? p->ready.ready_ns : worst;
	}
	/*
	 * A call still running may yet attach: no verdict then. The tool
	 * failed (or declined) on every target tried: the run ends.
	 */
	w->tool_stop = !s.attached && !pending &&
		       (s.tool_failed || (s.declined && !s.held && !s.differ && !s.other));
	w->listener_stop = !s.attached && !pending && !w->tool_stop && s.no_listener;
	/* Late starts have no end: once their word is in, the window ends (a call left runs on). */
	w->empty_stop = !s.attached && (!pending || w->o->late_start) && !partial;
	if (partial)
		w->tool_stop = w->listener_stop = false;
	rm_progress_attached(line, sizeof(line), wi, s.attached, w->total_targets,
			     rm_win_mono(w, since), ra_monotonic_ns());
	if (w->o->late_start)
		say_late(w, &s, pending);
	else
		rm_say(w->self, "%s", line);
	if (w->empty_stop && !w->o->late_start)
		say_empty(w, wi, &s);
	if (pending)
		rm_say(w->self,
		       "window %d: %lld attach %s still running at the start (each ends by "
		       "--call-timeout); no other target waits for %s",
		       wi, pending, pending == 1 ? "call" : "calls", pending == 1 ? "it" : "them");
	if (!worst)
		return;
	w->ready_ns = worst;
	if (w->o->verbose && wi < w->o->windows)
		rm_say(w->self,
		       "window %d: attaches ready %.1f ms after they were sent; next start "
		       "lead %.1f ms",
		       wi, (double)worst / 1e6, (double)rm_win_start_lead(w, NULL, 0) / 1e6);
}

/* GONE messages in; each is a node whose targets are all gone. */
static void take_gones(struct rm_win *w)
{
	struct rm_up m;

	while (rm_flow_take_up(w->flow, TAG_GONE, &m)) {
		w->roster->peers[m.origin].gones++;
		w->nodes_alive--;
	}
}

/*
 * A stop that ends the run, not only the window: nothing left to profile,
 * nothing could attach the tool, or no target has a listener (and no
 * --inject brings one). Nothing runs on any target then, so the stop is now.
 */
static bool run_over(struct rm_win *w, struct rm_halt *m)
{
	take_gones(w);
	if (w->tool_stop)
		w->run_stop = "tool failed";
	else if (w->listener_stop)
		w->run_stop = "nothing attachable";
	else if (w->nodes_alive <= 0)
		w->run_stop = "job ended";
	else
		return false;
	snprintf(m->reason, sizeof(m->reason), "%s", w->run_stop);
	m->last = 1;
	m->stop_ns = rm_win_rt(w, ra_monotonic_ns());
	return true;
}

/* A STOP message from a rank (a signal there), or 0. */
static int take_stop(struct rm_win *w, int *from)
{
	struct rm_up m;

	if (!rm_flow_take_up(w->flow, TAG_STOP, &m))
		return 0;
	w->roster->peers[m.origin].stops++;
	*from = m.origin;
	return m.value;
}

/*
 * Has the window ended? Fills m when it has. Decided on CLOCK_MONOTONIC
 * through the window's frame; the stop time sent is CLOCK_REALTIME.
 */
static bool root_decides(struct rm_win *w, uint64_t start_ns, struct rm_halt *m)
{
	uint64_t now = ra_monotonic_ns(), start = rm_win_mono(w, start_ns);
	uint64_t planned = rm_win_planned_end(w, start_ns),
		 planned_mono = rm_win_planned_end(w, start);
	int sig, from = 0;

	if (run_over(w, m))
		return true;
	if (w->empty_stop) {
		/* Nothing attached: no tool runs anywhere, so the stop is now (window.h). */
		w->empty_stop = false;
		snprintf(m->reason, sizeof(m->reason), "%s",
			 w->o->late_start ? "late starts done" : "nothing attached");
		/* Not before the start: the window's length stays known. */
		m->stop_ns =
		    rm_win_rt(w, now + STOP_MARGIN_NS > start ? now + STOP_MARGIN_NS : start);
		if (planned && m->stop_ns + STOP_MARGIN_NS > planned)
			m->stop_ns = planned;
		return true;
	}
	if (planned && now + STOP_MARGIN_NS >= planned_mono) {
		m->stop_ns = planned;
		snprintf(m->reason, sizeof(m->reason), "duration");
		return true;
	}
	if (now >= start + (uint64_t)w->o->max_window_ms * RA_NS_PER_MS) {
		snprintf(m->reason, sizeof(m->reason), "max-window");
	} else if ((sig = rm_take_signal(w->self))) {
		m->signo = sig;
		/* Open MPI and Slurm end a job with SIGTERM, then SIGKILL: be quick. */
		w->root_signalled = sig == SIGTERM;
		snprintf(m->reason, sizeof(m->reason), "SIG%s on rank 0", sigabbrev_np(sig));
	} else if (rm_took_enter(w->self)) {
		snprintf(m->reason, sizeof(m->reason), "enter");
	} else if ((sig = take_stop(w, &from))) {
		m->signo = sig;
		snprintf(m->reason, sizeof(m->reason), "SIG%s on rank %d", sigabbrev_np(sig), from);
	} else {
		return false;
	}
	m->stop_ns = rm_win_rt(w, now + STOP_MARGIN_NS);
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
 * SIGTERM or SIGINT on rank 0 (Open MPI ends a job, a Ctrl-C at mpirun
 * included, with SIGTERM, and SIGKILL about a second later; Slurm after
 * KillWait): the report and the summary are written now, wherever rank 0
 * waits, before anything that can block or take long: a send to a dead
 * rank (it waits inside Open MPI until the SIGKILL, docs/reliability.md),
 * or a tool's call in flight (it may run until --call-timeout). The window
 * open is not gathered: every node shows its last known records as lost
 * for that reason, rank 0's own naming its calls still in flight, and none
 * counts in any figure. The final report replaces this one (renamed over
 * it) if rank 0 gets that far; the summary is printed again then.
 */
#define PROVISIONAL                                                                                \
	"written at once at a SIGTERM or SIGINT on rank 0 (the job may be being ended, "           \
	"SIGKILL may follow), before the last window's records were gathered: its nodes show "     \
	"their last known records, counted in no figure; replaced by the final report if rank "    \
	"0 got that far"

/* Rank 0's own node: its calls in flight named, if any (nodes[0] is its node then). */
static void name_calls_in_flight(struct rm_win *w, struct rm_window *win, const char *sig)
{
	size_t pending = rm_attach_pending(w);
	char why[200];

	if (!pending || !win->n_nodes || !w->roster->peers[0].worker ||
	    !w->roster->peers[0].last.host[0])
		return;
	snprintf(why, sizeof(why),
		 "not gathered: %s on rank 0 with %zu attach %s in flight (%s by "
		 "--call-timeout), and this report was written at once",
		 sig, pending, pending == 1 ? "call" : "calls",
		 pending == 1 ? "it ends" : "they end");
	free((char *)win->nodes[0].lost_reason);
	win->nodes[0].lost_reason = strdup(why);
}

static void write_provisional(struct rm_win *w, int signo)
{
	struct rm_run r = w->roster->run; /* the run so far, and this window */
	struct rm_window *win;
	char err[512], why[160], sig[48], stop[64];

	snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(signo));
	snprintf(stop, sizeof(stop), "%s on rank 0", sig);
	if (!(r.w = calloc(w->prov.n_w + 1, sizeof(*r.w))))
		return;
	if (w->prov.n_w)
		memcpy(r.w, w->roster->run.w, w->prov.n_w * sizeof(*r.w));
	r.n_w = w->prov.n_w;
	snprintf(why, sizeof(why),
		 "not gathered: %s on rank 0, and this report was written at once", sig);
	win = &r.w[r.n_w++];
	*win = (struct rm_window){.index = w->prov.wi,
				  .start_ns = w->prov.start_ns,
				  .stop_ns = w->prov.stop_ns ? w->prov.stop_ns : ra_realtime_ns(),
				  .stop_reason = stop};
	rm_window_nodes(w->roster, &win->nodes, &win->n_nodes, why);
	name_calls_in_flight(w, win, sig);
	r.exit_code = RM_EXIT_INTERRUPTED;
	r.exit_reason = "interrupted (provisional: written at once at the signal)";
	r.stop_reason = "interrupted";
	r.ended_ns = ra_realtime_ns();
	r.provisional = PROVISIONAL;
	if (w->o->report && rm_write_report(w->o->report, &r, err, sizeof(err)))
		rm_say(w->self, "%s", err);
	else if (w->o->report)
		rm_say(w->self,
		       "provisional report written to %s (%s: written at once, in case a "
		       "SIGKILL follows; the final one replaces it)",
		       w->o->report, sig);
	rm_say(w->self, "provisional summary (%s: the final one follows if there is time):", sig);
	rm_print_summary(stdout, &r);
	fflush(stdout);
	rm_free_nodes(win->nodes, win->n_nodes);
	free(r.w);
}

/* rm_self's on_signal on rank 0: the first SIGTERM or SIGINT in a window writes it. */
static void provisional_at(struct rm_self *s, int signo)
{
	struct rm_win *w = s->on_signal_arg;

	if (!w->prov.wi || w->prov.written || (signo != SIGTERM && signo != SIGINT))
		return;
	w->prov.written = true;
	write_provisional(w, signo);
}

/*
 * Rank 0: the children's READY is all in (or the silent ones are lost):
 * the window's attach counts. partial: the stop came first; the counts
 * leave out the subtrees still silent, and decide no end of the run.
 */
static void ready_outcome(struct rm_win *w, int wi, uint64_t since, bool partial)
{
	/* Deadlines scale with the worst round trip measured anywhere in the tree. */
	if (w->flow->ready_sum.rtt_sub_ns > w->link->rtt_worst_ns)
		w->link->rtt_worst_ns = w->flow->ready_sum.rtt_sub_ns;
	attach_outcome(w, wi, since, partial);
}

static void hold_root(struct rm_win *w, int wi, const uint64_t when[2], struct rm_halt *m)
{
	uint64_t start_ns = when[0], wake = rm_win_planned_end(w, rm_win_mono(w, start_ns));
	bool ready = false;
	int owed;

	if (wake)
		wake -= STOP_MARGIN_NS;
	else if (wi == 1 && !w->o->late_start)
		rm_say(w->self,
		       "window 1 has no duration (-d): press Enter to end it (mpirun passes its "
		       "input to rank 0), or send SIGUSR1 to mpirun; it ends by itself after "
		       "--max-window %lld ms",
		       w->o->max_window_ms);
	memset(m, 0, sizeof(*m));
	for (;;) {
		rm_win_watch_job(w);
		if (!ready && rm_ready_poll(w->flow)) {
			ready = true;
			ready_outcome(w, wi, when[1], w->flow->ready_sum.owed > 0);
		}
		if (root_decides(w, start_ns, m))
			break;
		rm_wait_until(w->self, rm_win_hold_wake(w, wake));
	}
	w->prov.stop_ns = m->stop_ns;
	rm_flow_halts(w->flow, m);
	/* The stop went down first; then what word of the attaches came, and what did not. */
	if (!ready) {
		owed = rm_ready_poll(w->flow) ? 0 : rm_ready_close(w->flow);
		owed += w->flow->ready_sum.owed;
		/* Their word may yet say calls run on: the records' wait counts them (calls_wait).
		 */
		w->flow->ready_sum.owed = owed;
		ready_outcome(w, wi, when[1], owed > 0);
	} else {
		owed = w->flow->ready_sum.owed;
	}
	if (owed)
		rm_say(w->self,
		       "window %d: %d %s still owed word of %s attaches at the stop (%s): the "
		       "counts leave %s out; the records say how it went",
		       wi, owed, owed == 1 ? "rank" : "ranks", owed == 1 ? "its" : "their",
		       m->reason, owed == 1 ? "its subtree" : "their subtrees");
	if (m->signo && m->signo != SIGUSR1 && !(m->signo == SIGINT && w->o->duration_ms < 0))
		w->interrupted = m->signo;
	w->last |= m->last;
}

/* Nodes with a target not known gone, and not lost. */
static int count_alive(const struct rm_win *w)
{
	int alive = 0;

	for (int r = 0; r < w->self->size; r++) {
		const struct rm_peer *p = &w->roster->peers[r];

		alive += p->worker && !p->lost && rm_found(&p->last) && !p->all_gone;
	}
	return alive;
}

/* The window's records, kept for the report. */
static void keep_window(struct rm_win *w, int wi, uint64_t start, const struct rm_halt *m)
{
	uint64_t grace = w->root_signalled ? GRACE_SIGNALLED_NS
					   : rm_budget(w->link, GRACE_RECORDS_NS) +
						 rm_win_output_wait(w) + rm_win_calls_wait(w);
	struct rm_window *win, *grown;
	long long detached = 0;
	char line[128];

	grown = realloc(w->roster->run.w, (w->roster->run.n_w + 1) * sizeof(*grown));
	if (!grown)
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	w->roster->run.w = grown;
	win = &w->roster->run.w[w->roster->run.n_w++];
	memset(win, 0, sizeof(*win));
	win->index = wi;
	win->start_ns = start;
	win->stop_ns = m->stop_ns;
	win->stop_reason = strdup(m->reason);
	win->lead_ns = w->lead_ns;
	snprintf(win->lead_why, sizeof(win->lead_why), "%s", w->lead_why);
	rm_window_calls_end(w);
	rm_win_stacks_fold(w);
	rm_collect_records(w->flow, (int32_t)w->roster->run.n_w, &win->nodes, &win->n_nodes,
			   rm_win_mono(w, m->stop_ns), grace, "after the stop");
	rm_win_take_cut(w);
	w->prov.wi = 0; /* kept: a signal from here on cuts no window */
	win->coord = (struct rm_coord){.known = true,
				       .messages_sent = w->link->coord.sent,
				       .messages_received = w->link->coord.received,
				       .bytes_sent = w->link->coord.bytes_sent,
				       .bytes_received = w->link->coord.bytes_received,
				       .fanout = w->flow->k,
				       .height = w->flow->height};
	for (int r = 0; r < w->self->size; r++)
		detached += w->roster->peers[r].lost ? 0 : w->roster->peers[r].detached;
	rm_progress_detached(line, sizeof(line), wi, detached, w->total_targets,
			     rm_win_mono(w, m->stop_ns), ra_monotonic_ns());
	/* Late starts: nothing to detach but the targets attached on the normal path. */
	if (!w->o->late_start || detached)
		rm_say(w->self, "%s", line);
}

void rm_run_windows(struct rm_win *w)
{
	uint64_t when[2], earliest = 0;
	struct rm_halt m;

	for (int wi = 1; wi <= w->o->windows && !w->interrupted && !w->last; wi++) {
		struct rm_order o = {.window = wi};

		/* Rank 0's messages from here to the window's records: the window's. */
		memset(&w->link->coord, 0, sizeof(w->link->coord));
		rm_flow_window(w->flow, wi);
		/* Only children whose drift check disagreed: the clocks were measured at the start.
		 */
		rm_flow_measure(w->flow, false);
		pick_start(w, earliest, when);
		o.start_ns = when[0];
		o.send_ns = when[1];
		o.rtt_worst_ns = w->link->rtt_worst_ns;
		o.detail = w->roster->run.cut.level;
		w->part->cut_level = o.detail;
		/* Rank 0 has the order as it sends it (its node's order_received_ns). */
		w->flow->order_t1 = ra_realtime_ns();
		rm_flow_orders(w->flow, &o);
		w->prov.wi = wi;
		w->prov.start_ns = when[0];
		w->prov.stop_ns = 0;
		w->prov.n_w = w->roster->run.n_w;
		w->self->on_signal = provisional_at;
		w->self->on_signal_arg = w;
		for (int r = 0; r < w->self->size; r++)
			w->roster->peers[r].got_ready = false;
		w->roster->peers[0].ready = rm_win_attach(w, when);
		w->roster->peers[0].got_ready = true;
		/* The children's READY is waited for inside the hold: none delays the stop. */
		w->tool_stop = w->listener_stop = w->empty_stop = false;
		rm_ready_begin(w->flow, wi, rm_win_mono(w, when[0]), &w->roster->peers[0].ready);
		hold_root(w, wi, when, &m);
		rm_win_detach(w, m.stop_ns);
		keep_window(w, wi, when[0], &m);
		earliest = m.stop_ns + (uint64_t)w->o->delay_ms * RA_NS_PER_MS;
		w->nodes_alive = count_alive(w);
		if (!w->last && !w->nodes_alive) {
			w->run_stop = w->roster->lost_count ? "nodes lost" : "job ended";
			w->last = true;
		}
		if (w->last && wi < w->o->windows)
			rm_say(w->self, "%s: no further window", w->run_stop);
		else if (wi < w->o->windows && w->o->delay_ms && !w->interrupted)
			rm_say(w->self, "next window in %lld ms", w->o->delay_ms);
	}
}

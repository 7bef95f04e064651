/* SPDX-License-Identifier: MIT */
/*
 * One window, on rank 0 (rm_run_windows, window_root.c) and on the other
 * ranks (rm_follow_windows, window_other.c); what both do is window.c's:
 *
 *   clocks  each parent measures its children's clocks again where the
 *           drift check disagreed (flow_clock.c)
 *   order   rank 0 sends each rank a start time T a little ahead, and when
 *           to send the attaches (a lead before T), in rank 0's clock with
 *           that rank's offset, down the tree; workers attach with T, in
 *           their own clock, as the library's start time: our agent calls
 *           tool_attach at T, ROCm's side gets its call at T
 *   ready   each subtree tells its parent how its attaches went (READY)
 *   hold    rank 0 decides the stop (duration, Enter, a signal on any rank,
 *           the job's end, a tool that nothing could attach) and sends
 *           every rank a stop time S; every worker detaches with S as the
 *           library's stop time, so tool_detach runs at S on both sides
 *   records each subtree sends its records up; rank 0 keeps them for the
 *           report
 *
 * The job's end: each worker watches its targets (node/watch.c) and, once
 * all of them are gone, tells rank 0 once (a GONE message); rank 0 counts
 * the nodes that still have a live target and ends the window and the run
 * when none has.
 */
#ifndef RM_WINDOW_H
#define RM_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "flow.h"
#include "mpi_opts.h"

/*
 * A stop rank 0 decides lies STOP_MARGIN_NS ahead, time enough for every
 * rank to hear of it first.
 */
#define STOP_MARGIN_NS 100000000ull

struct rm_win {
	struct rm_self *self;
	struct rm_link *link;
	struct rm_flow *flow;
	struct rm_roster *roster; /* rank 0's; NULL on the other ranks */
	struct rm_part *part;
	const struct rm_opts *o;
	/*
	 * The window's frame: its start as CLOCK_REALTIME (rank 0's pick, or
	 * the order's start in this rank's clock) and as CLOCK_MONOTONIC, taken
	 * once when the start is set. Every wait of the window runs on
	 * CLOCK_MONOTONIC through it, so a step of this node's wall clock moves
	 * none; the library still gets the CLOCK_REALTIME times, which the
	 * targets read.
	 */
	uint64_t frame_rt, frame_mono;
	size_t max_targets;   /* rank 0: on the busiest node */
	size_t total_targets; /* rank 0: on all nodes */
	uint64_t ready_ns;    /* rank 0: the last window's attaches were ready this long after
			       * they were sent, on the slowest node (0: not measured) */
	/* rank 0: the start-up survey's slowest node's side probes of its targets (ns) */
	uint64_t survey_probe_ns;
	/* rank 0: the lead of the window being run, and in words why that one */
	uint64_t lead_ns;
	char lead_why[160];
	uint64_t next_deadline; /* other ranks: the next order is due by then (monotonic) */
	int nodes_alive;	/* rank 0: nodes with a target not known gone, not lost */
	int interrupted;	/* signal that cut a window short, 0 if none */
	bool root_signalled;	/* rank 0: SIGTERM ended the window here (the job may be ending) */
	bool last;		/* no window after this one (job ended, tool failed) */
	bool tool_stop;		/* rank 0: nothing attached, the tool failed */
	bool listener_stop;	/* rank 0: nothing attached, no target has a listener */
	bool empty_stop;	/* rank 0: nothing attached in this window: it ends at once */
	bool gone_told;		/* rank 0 knows this node's targets are all gone */
	const char *run_stop;	/* rank 0: why the run stopped early, NULL if it did not */
	/*
	 * Rank 0: the window a signal may cut, for the provisional report
	 * (window_root.c): its index (0: none open), start, decided stop (0: not
	 * yet), and the windows kept before it; written: once per run.
	 */
	struct {
		int wi;
		uint64_t start_ns, stop_ns;
		size_t n_w;
		bool written;
	} prov;
};

/* Rank 0: every window, until the last. */
void rm_run_windows(struct rm_win *w);
/* The other ranks' side, until rank 0's end order: its exit code, *lost as it says. */
int rm_follow_windows(struct rm_win *w, bool *lost);
/* A signal that cut a records wait short (flow.h) ends the run as interrupted. */
void rm_win_take_cut(struct rm_win *w);

/* What both sides do (window.c), for window_root.c and window_other.c. */
uint64_t rm_win_local_ns(const struct rm_win *w, uint64_t root_ns);
/* A CLOCK_REALTIME time of this window as CLOCK_MONOTONIC, and back. */
uint64_t rm_win_mono(const struct rm_win *w, uint64_t rt_ns);
uint64_t rm_win_rt(const struct rm_win *w, uint64_t mono_ns);
void rm_win_set_frame(struct rm_win *w, uint64_t rt_ns);
/* The start lead (rank 0), and into why (may be NULL) what it is made of. */
uint64_t rm_win_start_lead(const struct rm_win *w, char *why, size_t len);
/* The window's planned end: its start + the duration; 0 without one (until a stop). */
uint64_t rm_win_planned_end(const struct rm_win *w, uint64_t start_ns);
/* when: the start and the send time, in this rank's clock. Returns how the attaches went. */
struct rm_ready rm_win_attach(struct rm_win *w, const uint64_t when[2]);
void rm_win_detach(struct rm_win *w, uint64_t stop_ns);
void rm_win_stacks_fold(struct rm_win *w);
void rm_win_watch_job(struct rm_win *w);
uint64_t rm_win_hold_wake(const struct rm_win *w, uint64_t wake);
uint64_t rm_win_output_wait(const struct rm_win *w);
/* The records' waits grow by --call-timeout when attach calls ran on (or may have). */
uint64_t rm_win_calls_wait(const struct rm_win *w);

/*
 * window_calls.c: this node's calls in a window, each target on its own
 * clock. The attaches, with p->start_ns: returns when they have all
 * returned, a signal came (kept in held_sig), or the start time
 * (start_mono) plus a short wait, never past stop_mono (0: none); the rest
 * run on. Returns the workers that could not be created.
 */
int rm_attaches(struct rm_win *w, struct rn_pool_opts *p, uint64_t start_mono, uint64_t stop_mono);
/* Has target i's attach returned (its record may be read until the stop)? */
bool rm_attach_returned(const struct rm_win *w, size_t i);
/* Attach calls not returned yet. */
size_t rm_attach_pending(const struct rm_win *w);
/* The detaches at p->stop_ns: every target whose attach returned; the others when it does. */
void rm_detaches(struct rm_win *w, struct rn_pool_opts *p);
/* After the detaches: until the calls still running end (by their deadlines), answering. */
void rm_window_calls_end(struct rm_win *w);

#endif

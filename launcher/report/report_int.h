/* SPDX-License-Identifier: MIT */
/*
 * Inside the report (report.h), what its rooms share:
 *   launcher/report/model.c   which targets count, the figures, failures once, the files
 *   launcher/report/summary.c  the summary table and the --dry-run listing (text)
 *   launcher/report/json.c     the JSON report
 *   launcher/report/svg.c      the SVG timeline
 *   launcher/report/trace.c    the Chrome/Perfetto trace
 * Not for other rooms: the program and the tests use report.h.
 */
#ifndef RM_REPORT_INT_H
#define RM_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/clock.h"
#include "report.h"

/*
 * Longer than any window (--max-window is at most 7 days) or any call in it
 * (--call-timeout at most 1 day): a span above it comes from a clock gone
 * wrong, and is not a duration.
 */
#define RM_LONGEST_WINDOW_NS (7ull * 24 * 3600 * RA_NS_PER_SEC)

#define NS_PER_MS 1e6

/* ---- which targets count ---- */

/*
 * Attached: its attach call returned and did not fail. A target that exited
 * during its attach call (RN_EXITED with no detach) never was attached.
 */
bool rm_attached(const struct rn_target *t);
/* Attached in the window that started at since (0: any); see launcher/report/model.c. */
bool rm_attached_since(const struct rn_target *t, uint64_t since);
/* When a target detached this window handed back (0: not detached). */
uint64_t rm_hand_back(const struct rn_target *t);
/*
 * Its attach or detach failed (killed by a signal during a call, a call that
 * did not return in time included), or it is stopped; an exit is no failure
 * (its job ended under it), nor is a death with its tools attached (counted
 * apart: see rm_died_attached).
 */
bool rm_failed(const struct rn_target *t);

/* ---- figures ---- */

struct rm_spread {
	uint64_t lo, hi;
	size_t n;
};

void rm_spread_add(struct rm_spread *s, uint64_t v);
uint64_t rm_spread_ns(const struct rm_spread *s);
/*
 * The node functions take the node and its targets as rm_targets read them
 * (t; NULL: none could be read, nothing is counted), so that a caller reads
 * a node once for all of them.
 */
/* Spread of the hand-over times within one node; n = 0 when nothing attached there. */
struct rm_spread rm_node_attach_spread(const struct rm_node *n, const struct rn_target *t,
				       uint64_t since);
/* The spread of the tools' windows (rn_window_ns) there, and how many were on bounds. */
void rm_node_len_spread(const struct rm_node *n, const struct rn_target *t, uint64_t since,
			struct rm_spread *len, size_t *bounds);
/*
 * The earliest lower edges of a node's skew intervals (attach, detach: 0
 * where none) and how many targets' lower edges are unknown (rm_skew).
 */
void rm_node_skew_lo(const struct rm_node *n, const struct rn_target *t, uint64_t since,
		     uint64_t lo[2], size_t *est);
/* Median and maximum attach time of a window (from its start, since); 0 when none. */
void rm_node_times(const struct rm_node *n, const struct rn_target *t, uint64_t since,
		   uint64_t *p50, uint64_t *max);

struct rm_counts {
	size_t found, attached, failed, exited;
	size_t
	    detached; /* detached with nothing failed (a tool of the list that failed: in failed) */
	size_t died;  /* died with their tools attached (RN_DIED_ATTACHED) */
	size_t exited_after; /* in exited: completed a window first, nothing failed */
	size_t stopped;	     /* RN_STOPPED (also in failed) */
	size_t late;	 /* attach returned after the stop, detached at once (rn_target.late_ns) */
	size_t declined; /* every tool declined (RN_DECLINED): not attached, not failed */
	size_t late_started; /* --late-start, the SDK initialized: the tools stay, no detach */
	/* In failed: attached and detached, but a library of the tool list failed there. */
	size_t partial;
	size_t lost_nodes, lost; /* lost nodes, and their targets (in found, nothing else) */
	/* Nodes whose records could not be read back, and their targets (in found only). */
	size_t unreadable_nodes, unreadable;
};

/*
 * A node that cut its records: those it left out, as its block counts them
 * less the records kept (kept: rm_targets' read of them; NULL: none could
 * be read, all its counts are left out); found is how many. All 0 for a
 * node that cut nothing, or is lost. rank 0 checked that they add up
 * (rm_take_sum), so none is below 0.
 */
struct rm_counts rm_left_counts(const struct rm_node *n, const struct rn_target *kept);
/*
 * Failures of the run left out on the nodes (--detail none), each once: in
 * a node's window, those beyond the failures it had in the window before.
 */
size_t rm_failures_left_out(const struct rm_run *r);
/* Adds a node's targets to c; a run's counts are those of its last window. */
void rm_count_node(const struct rm_node *n, const struct rn_target *t, struct rm_counts *c);
struct rm_counts rm_count_window(const struct rm_window *w);
/* NULL when no window ran. */
const struct rm_window *rm_last_window(const struct rm_run *r);

/* ---- per-node figures, kept at every --detail level ---- */

/*
 * Histogram bins, fixed, log2 in us: bin 0 is [0, 1 us), bin i (1..24) is
 * [2^(i-1), 2^i) us, bin 25 is 2^24 us (16.8 s) and more.
 */
#define RM_HIST_BINS 26
unsigned rm_hist_bin(uint64_t ns);

/* Minimum, median (as rm_node_times) and maximum of n values; all 0 when n is 0. */
struct rm_fig3 {
	uint64_t min, p50, max;
	size_t n;
};

/*
 * A node's targets attached in the window that started at since: their
 * attach times (from the later of the call's start and since, as
 * rm_node_times) and detach call times, their hand-overs (tool_attach or its
 * bound) and hand-backs as instants, the calls' extent, and histograms of
 * the attach times and of the hand-overs' lateness after since (a hand-over
 * before it, after a clock correction, is in bin 0 and counted in early).
 * Nothing of a lost node.
 */
struct rm_node_fig {
	struct rm_fig3 attach, detach, over, back;
	uint64_t calls_lo, calls_hi; /* first attach call's start, last detach call's end */
	uint32_t attach_hist[RM_HIST_BINS], skew_hist[RM_HIST_BINS];
	size_t early;
};
/* --late-start's counts (the ls_* fields of sum) of t[0..n), added to sum (figures.c). */
void rm_late_sum(const struct rn_target *t, size_t n, struct rm_node_sum *sum);
void rm_node_figures(const struct rm_node *n, const struct rn_target *t, uint64_t since,
		     struct rm_node_fig *f);

/* --detail: whether t's record (of node n) is kept at level d (never RM_DETAIL_AUTO). */
bool rm_clean(const struct rn_target *t);
bool rm_detail_keeps(enum rm_detail d, const struct rm_node *n, const struct rn_target *t);

/* A node's CPU or NUMA lists (numa) as one range list, and its GPUs each once (topology.c). */
json_t *rm_list_union_json(const struct rm_node *n, const struct rn_target *v, bool numa);
json_t *rm_gpus_union_json(const struct rm_node *n, const struct rn_target *v);

/* The union of t[0..n)'s CPU and NUMA lists and GPUs into s; 0, or -1 if it does not fit. */
int rm_topo_union(const struct rn_target *t, size_t n, struct rm_node_sum *s);

/* ---- nodes in groups (RM_GROUP_ABOVE) ---- */

enum rm_outcome {
	RM_OUT_CLEAN, /* targets found, each attached and detached */
	RM_OUT_EMPTY, /* no target found (or selection failed) */
	RM_OUT_FAILED,
	RM_OUT_OTHER, /* exited, died attached, not completed */
	RM_OUT_LOST,
	RM_OUT_UNREADABLE,
	RM_OUT_N,
};
const char *rm_outcome_name(enum rm_outcome o);
enum rm_outcome rm_node_outcome(const struct rm_node *n, const struct rn_target *t);

/* The last window's nodes: each one's outcome, and whether it is shown alone. */
struct rm_grouping {
	size_t n;
	bool grouped; /* n > RM_GROUP_ABOVE; else every node is alone */
	unsigned char *outcome;
	bool *alone;
	size_t members[RM_OUT_N]; /* nodes in each group (not alone) */
};
/* 0, or -1 out of memory. w may be NULL (no nodes). */
int rm_group_nodes(const struct rm_window *w, struct rm_grouping *g);
void rm_grouping_free(struct rm_grouping *g);
/*
 * The hosts of group o as Slurm writes a hostlist ("node[001-128,130],gpu7"),
 * at most max bytes (then cut with "..."); malloc'd, NULL out of memory.
 */
char *rm_group_hosts(const struct rm_window *w, const struct rm_grouping *g, enum rm_outcome o,
		     size_t max);
/* hosts[0..n) as a hostlist (sorted, repeats once); malloc'd, NULL out of memory. */
char *rm_hostlist(const char *const *hosts, size_t n);

/* ---- a target in another window, each failure once, lost nodes ---- */

/* By host (hint: its index there, tried first); NULL if absent. */
const struct rm_node *rm_find_node(const struct rm_window *w, size_t hint, const char *host);
/* Among t[0..n) by pid (hint: its index there, tried first); NULL if absent or t is NULL. */
const struct rn_target *rm_find_target(const struct rn_target *t, size_t n, size_t hint, pid_t pid);
/*
 * The targets of the node of host (hint: its index) in the window before
 * window wi, read into h, their count in *n; NULL (*n = 0) in window 0 or
 * where that window has no such node.
 */
const struct rn_target *rm_prev_targets(const struct rm_run *r, size_t wi, size_t hint,
					const char *host, struct rm_hold *h, size_t *n);
/*
 * t (index hint in its node) failed, and not already in the window before,
 * whose targets of that node are prev[0..n_prev) (NULL: none, or window 0).
 */
bool rm_new_failure(const struct rn_target *prev, size_t n_prev, const struct rn_target *t,
		    size_t hint);

/* t NULL: the node's records could not be read back (rm_unreadable_reason). */
typedef int (*rm_failure_fn)(const struct rm_window *w, const struct rm_node *n,
			     const struct rn_target *t, void *arg);
/*
 * fn on every failure once, in window order; stops at (and returns) fn's first non-zero.
 * A node whose records cannot be read back from the store is a failure with t NULL.
 */
int rm_for_each_failure(const struct rm_run *r, rm_failure_fn fn, void *arg);

/*
 * The first window in which the node named host (hint: its index in a
 * window, tried first) was lost, and its record there in *node; NULL when
 * it never was.
 */
/* Why node n's records could not be read back, and what that leaves unknown. */
void rm_unreadable_reason(const struct rm_node *n, char *buf, size_t len);

const struct rm_window *rm_lost_in(const struct rm_run *r, const char *host, size_t hint,
				   const struct rm_node **node);
/* Why a lost node was lost, never NULL. */
const char *rm_lost_reason(const struct rm_node *n);

/* ---- text ---- */

/* CLOCK_REALTIME ns as ISO-8601 UTC with milliseconds; "-" for 0. */
void rm_fmt_time(uint64_t ns, char *buf, size_t len);

/* ---- files, written whole or not at all: PATH.tmp, then renamed over PATH ---- */

struct rm_out {
	FILE *f;
	char *tmp;
	const char *path, *what;
};

/* 0, or -1 with "cannot write WHAT PATH: reason" in err. */
int rm_out_open(struct rm_out *o, const char *path, const char *what, char *err, size_t len);
int rm_out_close(struct rm_out *o, char *err, size_t len);
/*
 * rm_out_close, unless the records could not all be read back from s (see
 * rm_store_check): then the file is given up, with that reason in err.
 */
int rm_out_done(struct rm_out *o, const struct rm_store *s, char *err, size_t len);
/* Give up: the temporary file goes, PATH is untouched; -1 with the reason (errno e) in err. */
int rm_out_abort(struct rm_out *o, int e, char *err, size_t len);

/* A JSON string of s (at most width bytes; any length), '?' for non-ASCII if not UTF-8. */
json_t *rm_jstr(const char *s, size_t width);
json_t *rm_jstr_or_null(const char *s);
/* The --stacks tree as JSON, an array of {frame, ranks, threads, children}; null without. */
json_t *rm_stacks_json(const struct rm_run *r);

/* Left over after the records kept: the block's count less theirs (never below 0). */
static inline uint64_t rm_left_of(uint64_t block, size_t kept)
{
	return block > kept ? block - kept : 0;
}

/* --late-start: per node, started / initialized / failed (summary_late.c); nothing if none. */
void rm_print_late_starts(FILE *f, const struct rm_run *r);

#endif

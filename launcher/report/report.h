/* SPDX-License-Identifier: MIT */
/*
 * What rocattach-mpi's rank 0 shows and writes at the end of a run: the
 * summary table, the JSON report (schema in docs/report.md), the SVG timeline,
 * the Chrome/Perfetto trace and the --dry-run listing (launcher/report_*.c,
 * see report_int.h). Pure functions of the gathered data: no MPI.
 */
#ifndef RM_REPORT_H
#define RM_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mpi_opts.h"
#include "node.h"

struct rm_store;
struct ra_stack_tree;

/*
 * --detail below all cuts the records on each node, before the wire: the
 * node sends the records its level keeps, and this block beside them,
 * computed there from all its targets. Raw bytes between ranks of one
 * binary, like the rest of the record head (launcher/coord/link.c); checked
 * on arrival by rm_take_node. Times: the node's clock on the wire, rank 0's
 * once taken.
 */
#define RM_SUM_HIST_BINS 26
#define RM_SUM_TOPO 256
#define RM_SUM_TOOLS 16
struct rm_sum_fig3 {
	uint64_t min, p50, max, n;
};
struct rm_node_sum {
	int32_t level;	 /* the --detail level the node cut at (RM_DETAIL_FAILURES, NONE) */
	int32_t outcome; /* enum rm_outcome (report_int.h) of all its targets */
	uint64_t found;	 /* its targets, all of them */
	uint64_t left_out;
	/* rm_count_node's counts of all its targets */
	uint64_t attached, failed, exited, detached, died, exited_after, stopped, late;
	uint64_t declined, partial;
	/*
	 * --late-start (rn_target.ls) of all its targets: tried, the start ran,
	 * initialized (RN_LATE_STARTED, the headline's late-started), failed
	 * (rm_failed), and those with a listener that took the normal attach:
	 * not failed (attached, detached at the window's end), and failed.
	 * 32 bits each: the block stays within its bound below.
	 */
	uint32_t ls_tried, ls_ran, ls_init, ls_failed, ls_listener, ls_listener_failed;
	/* The window's figures (rm_node_figures from the window's start). */
	struct rm_sum_fig3 attach, detach, over, back;
	uint64_t calls_lo, calls_hi, early;
	uint32_t attach_hist[RM_SUM_HIST_BINS], skew_hist[RM_SUM_HIST_BINS];
	/* For the window's skew: the tools' windows (rn_window_ns), and those on bounds. */
	uint64_t len_lo, len_hi, len_n, bounds;
	/* The skew's lower edges (rm_node_skew_lo): attach, detach (0: none), and the unknown. */
	uint64_t over_lo, back_lo, est;
	/*
	 * Of the records left out: each library's outcomes by list position
	 * (rn_target.tools; a list longer than RM_SUM_TOOLS: nothing cut), and
	 * those on ROCm's side without our watchdog.
	 */
	uint32_t tools_left[RM_SUM_TOOLS][4];
	uint64_t unwatched_left;
	/* The union of its targets' CPU and NUMA lists and GPUs, as the report has it. */
	char cpus[RM_SUM_TOPO], numa[RM_SUM_TOPO / 4], gpus[RM_SUM_TOPO];
};
_Static_assert(sizeof(struct rm_node_sum) <= 1400, "the block stays near one record's size");

/* One node's records as gathered after a window (or after selection, for --dry-run). */
struct rm_node {
	char host[256];
	/*
	 * Its n targets: in memory (t), or kept in a store (t NULL, store and
	 * at set: rank 0 at scale, see rm_store_put). Read them through
	 * rm_targets, which handles both.
	 */
	struct rn_target *t;
	size_t n;
	struct rm_store *store;
	uint64_t at;
	const char *error; /* why this node could not select targets, NULL if it could */
	/*
	 * The node's CLOCK_REALTIME minus rank 0's, estimated over MPI before the
	 * window (the exchange with the shortest round trip; the true offset lies
	 * within clock_rtt_ns / 2 of it). clock_applied: the estimate shows the
	 * clocks differ (|offset| > rtt / 2), so the node was given the times in
	 * its own clock and its targets' times here are corrected to rank 0's;
	 * else nothing was changed. clock_known: false when not estimated.
	 */
	int64_t clock_offset_ns;
	uint64_t clock_rtt_ns;
	/*
	 * Composed down the launcher's tree: the true offset lies within
	 * clock_bound_ns of clock_offset_ns (the sum of rtt / 2 over the links
	 * from rank 0), and clock_rtt_ns is the round trip to the node's parent.
	 */
	uint64_t clock_bound_ns;
	bool clock_known, clock_applied;
	/*
	 * When the window's order reached the node's launcher rank (rank 0's
	 * clock; rank 0's own: when it sent the orders). 0: not known (a lost
	 * node, the survey).
	 */
	uint64_t order_ns;
	/* CLOCK_REALTIME - CLOCK_BOOTTIME on that node when gathered, 0 if unknown. */
	int64_t boot_offset_ns;
	/*
	 * Lost: its launcher rank did not answer in time (it died, or the
	 * network to it failed); lost_reason says which wait ran out, e.g. "no
	 * records within 5.0 s after the stop". Its targets (t, n) are then the
	 * last known ones (an earlier window's, or the survey's); the agents'
	 * watchdogs or the node's own deadline detach them.
	 */
	bool lost;
	const char *lost_reason; /* NULL when not lost */
	/*
	 * Cut on the node (--detail below all): t and n are the records it
	 * kept, sum its figures from all of them (rm_found: how many it found).
	 */
	bool cut;
	const struct rm_node_sum *sum; /* malloc'd with cut (rm_take_sum), else NULL */
};

/* The targets node n found: n->n, or with a cut on the node, all of them. */
size_t rm_found(const struct rm_node *n);
/* Records node n left out on the node (0 unless it cut them there). */
size_t rm_left_out(const struct rm_node *n);

/* Rank 0's share of one window's coordination (counted by rank 0). */
struct rm_coord {
	bool known;
	uint64_t messages_sent, messages_received, bytes_sent, bytes_received;
	int fanout, height;
};

/* One profiling window across all nodes. */
struct rm_window {
	int index;		 /* 1-based */
	uint64_t start_ns;	 /* the start time rank 0 broadcast (CLOCK_REALTIME) */
	uint64_t stop_ns;	 /* the stop time rank 0 broadcast */
	const char *stop_reason; /* "duration", "enter", "SIGINT", "SIGTERM", "max-window", ... */
	struct rm_node *nodes;
	size_t n_nodes;
	struct rm_coord coord;
	/* The start lead it was scheduled with, and in words why that one ("": unknown). */
	uint64_t lead_ns;
	char lead_why[160];
};

/* "all", "failures", "none" into *d; 0, or -1 for anything else. */
int rm_detail_parse(const char *s, enum rm_detail *d);
const char *rm_detail_name(enum rm_detail d);

/* The configuration as run, for the report. */
struct rm_config {
	int argc;
	char **argv; /* the command line as rank 0 validated it */
	const char *tools;
	long long duration_ms; /* -1: until Enter/SIGINT */
	long long delay_ms;    /* --windows DELAY */
	int windows;	       /* --windows COUNT (1 without) */
	int jobs;
	int inject;
	int ranks;	       /* MPI ranks of the launcher */
	enum rm_detail detail; /* --detail as given (RM_DETAIL_AUTO: not given) */
};

/*
 * The level the records were cut at on the nodes, decided once before
 * window 1 (RM_DETAIL_AUTO: none decided there, e.g. a report made from
 * records alone: rm_detail_of decides), and the targets found then.
 */
struct rm_cut {
	enum rm_detail level;
	size_t survey_targets;
};

struct rm_run {
	struct rm_config cfg;
	struct rm_cut cut;
	struct rm_store *store; /* where the nodes' targets are kept; NULL: all in memory */
	struct rm_window *w;
	size_t n_w;
	uint64_t started_ns, ended_ns; /* CLOCK_REALTIME of the launcher run */
	int exit_code;
	const char *exit_reason; /* e.g. "ok", "job ended", "3 targets failed", "interrupted" */
	/*
	 * Why the run stopped: "completed" (every window ran), "job ended"
	 * (every target exited), "tool failed" (nothing could attach the tool),
	 * "interrupted" (a signal); NULL: not said.
	 */
	const char *stop_reason;
	/*
	 * Why this report may not be the run's last word (written early, the
	 * job being ended: see rocattach-mpi's hold_root), NULL: it is.
	 */
	const char *provisional;
	/* --stacks: every node's stacks merged (NULL without --stacks). */
	struct ra_stack_tree *stacks;
	size_t stacks_refused; /* folded lines the tree refused */
	size_t stacks_no_rank; /* targets left out of it: no rank in their environment */
	/* --sample: every node's samples merged, and as folded lines (NULL without). */
	struct ra_stack_tree *samples;
	char *samples_text;
	size_t samples_len, samples_cap;
	size_t samples_refused; /* folded lines the tree refused */
	size_t samples_missing; /* targets whose samples are missing (no file) */
	int sample_hz;
	bool flame_per_rank;
	/*
	 * With --trace, --pprof or --speedscope: "host\trank\tpid\ttid\tns\tframes"
	 * a sample, ns in rank 0's clock.
	 */
	char *timed_text;
	size_t timed_len, timed_cap;
};

/*
 * The store (launcher/report/store.c): the gathered targets in an unlinked
 * temporary file in dir, so that rank 0's memory holds one node's at a
 * time, not every target of every window. NULL, with the reason in err,
 * if no file can be made there.
 */
struct rm_store *rm_store_open(const char *dir, char *err, size_t len);
void rm_store_close(struct rm_store *s);
/* Bytes kept so far. */
uint64_t rm_store_bytes(const struct rm_store *s);
/*
 * A node's records as its rank packed them (rn_pack) into n (zeroed first),
 * every time turned into rank 0's clock (less applied_ns, the node's clock
 * offset where it is applied; clock_applied set then); the other clock
 * figures are the caller's. 0, or -1 if they do not unpack.
 */
int rm_take_node(const void *buf, size_t len, int64_t applied_ns, struct rm_node *n);
/*
 * The node's block (sum, NULL: none, nothing cut) into n after
 * rm_take_node: checked against the records kept, and its times turned
 * into rank 0's clock as the records'. It holds when: its level and
 * outcome are defined, and the outcome is the one its counts give;
 * left_out = found - kept; each count is within found, and the states
 * (detached, exited, died, stopped) sum to at most found; no count is
 * below the records kept of that kind (failures, deaths, exits ...) and
 * what is left over fits in left_out; at failures, the records left out
 * are clean ones; each record kept is one its level keeps; the figures
 * are in order and the histograms add up; strings are terminated. 0, or
 * -1 with the first claim that does not hold in why (n unchanged).
 */
int rm_take_sum(const struct rm_node_sum *sum, int64_t applied_ns, struct rm_node *n, char *why,
		size_t len);
/*
 * Of the records n left out on its node (kept: as rm_targets read the
 * records kept), those not known to be clean: at --detail none, all but
 * the ones its block counts as cleanly detached; 0 when it cut nothing.
 */
size_t rm_left_unsure(const struct rm_node *n, const struct rn_target *kept);
/*
 * n's targets in state detached: those of the records kept (kept, as
 * rm_targets read them), and for a node that cut its records those its
 * block counts as cleanly detached beyond them.
 */
size_t rm_node_detached(const struct rm_node *n, const struct rn_target *kept);
/* n's block, freed (n->sum NULL, n->cut false). */
void rm_node_sum_free(struct rm_node *n);
/*
 * The block of a node's targets t[0..n) (all of them) for level d in the
 * window that started at since (its clock). 0, or -1 when it cannot be
 * made (a topology union too long for the block, a tool list longer than
 * RM_SUM_TOOLS, out of memory): then the node cuts nothing.
 */
int rm_node_summary(const struct rn_target *t, size_t n, enum rm_detail d, uint64_t since,
		    struct rm_node_sum *sum);
/* Whether level d (never RM_DETAIL_AUTO) keeps the record of t, on a node that is not lost. */
bool rm_detail_keeps_target(enum rm_detail d, const struct rn_target *t);
/* Move n's targets (n->t, freed) into s; 0, or -1 with the reason in err (n unchanged). */
int rm_store_put(struct rm_store *s, struct rm_node *n, char *err, size_t len);
/* A read failed since s was opened: -1 with "cannot read the gathered records back ..." */
int rm_store_check(const struct rm_store *s, char *err, size_t len);

/* Room for one node's targets read back, reused node after node; zero it to start. */
struct rm_hold {
	struct rn_target *buf;
	size_t cap;
};
/*
 * n's n targets: n->t, or read from its store into h (valid until h's next
 * use). NULL when they cannot be read (rm_store_check then says why).
 */
const struct rn_target *rm_targets(const struct rm_node *n, struct rm_hold *h);
void rm_hold_free(struct rm_hold *h);

/*
 * Spread (max - min) over every attached target of a window of the moment it
 * handed over to the tools (tool_attach / tool_detach, as our agent measures
 * it; on ROCm's side the bound the library gives: the call's end), and the
 * window each target's tools got (rn_window_ns: on ROCm's side a lower
 * bound), against the planned one (stop - start). A lost node's targets are
 * not counted: their records are the last known, not this window's.
 */
struct rm_skew {
	uint64_t attach_ns, detach_ns;
	size_t n;	 /* targets counted (attached in this window) */
	size_t n_detach; /* of which with a hand-back time */
	size_t bounds;	 /* of which with a bound rather than a measured time */
	/*
	 * On bounds, each target counts as the interval its tools ran in (the
	 * entry point's call: start to end), so attach_ns / detach_ns bound the
	 * true skew from above. estimate: targets (or a cut node's bounds)
	 * whose call start is unknown, counted at the call's end only: then the
	 * figure is an estimate, not a bound.
	 */
	size_t estimate;
	uint64_t len_min_ns, len_max_ns; /* the targets' windows, n_len of them */
	size_t n_len;
	bool len_off; /* a target's window is off the planned one by > 1% + 5 ms */
};
struct rm_skew rm_window_skew(const struct rm_window *w);
/* "measured", "bound" or "estimate" (see rm_skew); NULL with nothing attached. */
const char *rm_skew_kind(const struct rm_skew *s);

/*
 * Late starts: targets attached in the window whose tools got it more than
 * the tolerance (rm_length_tolerance_ns of the planned length; 5 ms without
 * one) after the window's start (hand-over - start: measured by our agent,
 * on ROCm's side from the call's start, so at least that late: `bound`).
 * p50 and max of those late. A cut node sent no per-target times: `unknown` counts its
 * targets whose hand-over may be late (its latest was), and p50 is then
 * not known (p50_known false).
 */
struct rm_late {
	size_t n, of; /* late, of the targets attached in the window */
	uint64_t p50_ns, max_ns, tolerance_ns;
	size_t unknown; /* cut nodes' targets that may be late */
	bool bound, p50_known;
};
struct rm_late rm_window_late(const struct rm_window *w);
/* A window shown off its plan: a late start, or a tools' window off the tolerance. */
bool rm_window_off(const struct rm_window *w);

/*
 * A window's planned length, start to stop, in ns (signed, checked:
 * common/clock.h), or RA_NS_UNKNOWN; then why it is unknown, in words:
 * "unknown: no start time", "unknown: no stop time", "unknown: stopped
 * before its start" (the run ended before the window opened), "unknown:
 * longer than any window can be".
 */
int64_t rm_window_length_ns(const struct rm_window *w);
const char *rm_window_length_why(const struct rm_window *w);

/* Allowed difference between a target's window and the planned one: 1% + 5 ms. */
uint64_t rm_length_tolerance_ns(uint64_t planned_ns);

/*
 * Median and maximum attach call duration (end - start) of a node's attached
 * targets, in ns. (The summary and the report count a window's attach time
 * from the window's start when the call began earlier: see launcher/report/model.c.)
 * 0 and 0 for a lost node: nothing of it was measured.
 */
void rm_node_attach_times(const struct rm_node *n, uint64_t *p50, uint64_t *max);

/*
 * The --detail level in effect for r (never RM_DETAIL_AUTO), and in chosen
 * (if not NULL) why: "--detail failures", or "default: 12800 targets >
 * 10000". The run's targets: those found at the start (r->cut, when the
 * level was decided there), else the most found in one window.
 */
enum rm_detail rm_detail_of(const struct rm_run *r, char *chosen, size_t len);
/* The default level for a run of that many targets (RM_DETAIL_AUTO_MAX). */
enum rm_detail rm_detail_default(size_t targets);

/*
 * Nodes are grouped in the summary and the timeline above this many: the
 * clean ones (every target attached and detached) as one group, at most
 * RM_GROUP_ALONE others shown one by one, the rest grouped by outcome.
 */
#define RM_GROUP_ABOVE 32
#define RM_GROUP_ALONE 16

/*
 * Summary table: one row per node (host, found, attached, failed, attach
 * p50/max, window start skew of that node; "lost" for a lost node, then a
 * line per lost node: "node HOST lost in window W: REASON" and its last
 * known targets), then one line per window with the skew figures, then
 * every failure with its message.
 */
void rm_print_summary(FILE *f, const struct rm_run *r);

/*
 * rank 0's progress lines, made here so that the fuzz harness drives them:
 * "window W: attached A/T targets (X ms)", X from since (the attaches sent)
 * to now; "window W: detached D/T targets (X ms after the stop)", or
 * "before the stop" when the records were in before it. A time that is not
 * known (missing, or a span longer than any window) says so in words, never
 * as a number. buf: about 96 bytes.
 */
void rm_progress_attached(char *buf, size_t len, int w, long long attached, size_t total,
			  uint64_t since, uint64_t now);
void rm_progress_detached(char *buf, size_t len, int w, long long detached, size_t total,
			  uint64_t stop_ns, uint64_t now);

/* --dry-run: per node, the processes that would be attached (a lost node's: last known). */
void rm_print_dry_run(FILE *f, const struct rm_node *nodes, size_t n_nodes);

/*
 * Failures (attach-failed, detach-failed) of the run, each counted once;
 * exits are not, nor a lost node's last known records. Those a node left
 * out (--detail none) are counted from its block (rm_failures_left_out).
 */
size_t rm_count_failures(const struct rm_run *r);

/*
 * Targets of the last window that died with their tools attached; *lived
 * (if not NULL): those that neither died nor exited (a lost node's not
 * counted). *first_ns / *last_ns (if not NULL): the earliest and latest
 * time one was seen gone, 0 if unknown.
 */
size_t rm_died_attached(const struct rm_run *r, size_t *lived, uint64_t *first_ns,
			uint64_t *last_ns);

/*
 * Write the JSON report / SVG timeline / Chrome trace-event JSON (--trace:
 * a process per node, two tracks per target, times in us of CLOCK_REALTIME
 * since the epoch); 0, or -1 with a one-line reason in err.
 */
int rm_write_report(const char *path, const struct rm_run *r, char *err, size_t len);
int rm_write_timeline(const char *path, const struct rm_run *r, char *err, size_t len);
/* --stacks: the tree as indented text (after the summary), and as SVG (--stacks-svg). */
void rm_print_stacks(FILE *f, const struct rm_run *r);
int rm_write_stacks_svg(const char *path, const struct rm_run *r, char *err, size_t len);
/* --sample: keep a node's folded lines (0, or -1 out of memory); --folded; --flamegraph. */
int rm_samples_keep(struct rm_run *r, const char *lines, size_t len);
/* --sample with --trace: a node's timed samples, its clock corrected by applied_ns. */
int rm_timed_keep(struct rm_run *r, const char *lines, size_t len, int64_t applied_ns);
int rm_write_folded(const char *path, const struct rm_run *r, char *err, size_t len);
int rm_write_flamegraph(const char *path, const struct rm_run *r, char *err, size_t len);
int rm_write_trace(const char *path, const struct rm_run *r, char *err, size_t len);

#endif

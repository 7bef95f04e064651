/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi's shared state, between its three rooms:
 *   mpi_main.c    start-up (plan, election, selection), signals, the end
 *   mpi_link.c    checked MPI calls, sends, lost ranks, records packed
 *                 and taken into rank 0's view
 *   mpi_tree.c    the tree (--fanout K, tree.h): clocks measured by each
 *                 parent, orders and stops down, READY and records up,
 *                 aggregated, every wait with a deadline
 *   mpi_window.c  one window: start time, attach, hold, stop, detach
 *
 * After the start-up no collective operation is used: a collective waits
 * for every rank, and one dead rank or cut link would hang all of them.
 * The ranks form a k-ary tree in heap order; each rank talks only to its
 * parent and its children, point to point. A child that does not answer its
 * parent by its deadline is lost with its whole subtree (the report says
 * why) and left out from then on; a rank whose parent falls silent detaches
 * its targets and ends (rm_cut_off).
 */
#ifndef RM_MPI_CTX_H
#define RM_MPI_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "mpi_opts.h"
#include "stacks.h"
#include "node.h"
#include "plan.h"
#include "report.h"

/*
 * Message tags. Up the tree (child -> parent): STOP, GONE, READY, RECORDS,
 * CLOCK answers; down (parent -> child): ORDER, HALT, CLOCK pings.
 */
enum {
	TAG_STOP = 17,	  /* a signal on the origin's node (struct rm_up), forwarded up */
	TAG_CLOCK = 18,	  /* clock ping-pong (uint64 time) */
	TAG_GONE = 19,	  /* every target of the origin's node is gone (struct rm_up) */
	TAG_ORDER = 20,	  /* a window's start, or the end of the run (struct rm_order) */
	TAG_HALT = 21,	  /* the window's stop (struct rm_halt) */
	TAG_READY = 22,	  /* the sender's subtree's attaches are done (struct rm_ready, notes) */
	TAG_RECORDS = 23, /* the sender's subtree's records (a bundle, mpi_tree.c) */
	TAG_ADOPT = 24,	  /* the sender (an ancestor) is this rank's parent now (struct rm_adopt) */
};

/* STOP and GONE up the tree: the rank where it happened, and the signal (GONE: 1). */
struct rm_up {
	int32_t origin;
	int32_t value;
};

/*
 * Deadlines (docs/reliability.md). Rank 0 waits for a rank's attaches READY
 * GRACE_READY_NS after the start time, for its records GRACE_RECORDS_NS
 * after the stop (GRACE_SIGNALLED_NS when a signal ended the window on rank
 * 0: Open MPI sends SIGKILL 1 s after the SIGTERM with which it ends a
 * job), for each answer of the clock exchange CLOCK_ANSWER_NS. A rank that
 * misses one of these is late, not lost: rank 0 takes what the others send
 * and retries it, waiting LATE_RETRY_NS more for its READY or records (both
 * come unasked, or were asked already: MPI loses no message, so asking
 * again would only leave a stale request), and for a clock answer until
 * CLOCK_LOST_NS after the ping, after the other ranks' exchanges. Only a
 * rank still silent then is lost. A busy rank, sharing its CPUs with the
 * job, answers in that time.
 *
 * Each of these is a floor: the deadline is the floor or RTT_BUDGET times
 * the worst round trip of the last clock exchange (the longest of the
 * ranks' round trips, each rank's being its shortest round), whichever is
 * larger (rm_budget). Slow links and loaded nodes get longer
 * deadlines; a killed rank is lost by the floor's deadline on a quick one.
 *
 * In the tree every parent holds these deadlines on its children, and
 * each level waits LEVEL_STEP_NS (rm_budget) longer than the level below
 * it: a rank at depth d waits (H - 1 - d) steps more, H the tree's height,
 * so a parent's deadline comes after its children's by a step (time to
 * send up what they gathered), and rank 0 waits longest. Up to 32 ranks
 * (H = 1 with the default fanout) rank 0's deadlines are the floors above.
 *
 * The other ranks wait for their parent's stop until the window's planned
 * end plus GRACE_LOST_ROOT_NS plus a step per level, and for its next
 * order until the stop plus the delay plus GRACE_RECORDS_NS +
 * LATE_RETRY_NS + CLOCK_LOST_NS + GRACE_NEXT_NS, a step per level and
 * 2 ms per child of rank 0 (a clock exchange that may run again), each
 * scaled the same way with the worst round trip rank 0 knows (sent in
 * every order); one that waits in vain detaches its targets and ends.
 */
#define GRACE_READY_NS 10000000000ull
#define GRACE_RECORDS_NS 5000000000ull
#define GRACE_SIGNALLED_NS 500000000ull
#define GRACE_SURVEY_NS 15000000000ull
#define GRACE_LOST_ROOT_NS 10000000000ull
#define GRACE_NEXT_NS 10000000000ull
#define CLOCK_ANSWER_NS 1000000000ull
#define CLOCK_LOST_NS 5000000000ull
#define LATE_RETRY_NS 2000000000ull
#define RTT_BUDGET 50
#define CLOCK_ROUNDS 8	    /* ping-pongs per rank; the shortest round trip's is kept */
#define CLOCK_ROUNDS_MAX 64 /* ... or more, while none was shorter than: */
#define CLOCK_RTT_GOOD_NS 100000ull
#define ORPHAN_TIMEOUT_NS 10000000000ull /* a rank with a signal waits this long (+ levels) */
#define LEVEL_STEP_NS 1000000000ull
/*
 * The drift check (mpi_tree.c): a child's clock may have moved this much
 * (parts per million of the time since it was measured) before a check
 * that disagrees with it calls for a new exchange.
 */
#define CLOCK_DRIFT_PPM 100
/*
 * A parent that loses a child adopts the child's children (mpi_tree.c): it
 * waits ADOPT_WAIT_NS (rm_budget) more for what they owe (their READY or
 * records, sent again), half a level's step: its own parent waits one step
 * longer than it.
 */
#define ADOPT_WAIT_NS 500000000ull
#define STARTUP_TIMEOUT_NS 60000000000ull /* for the plan's broadcast at the start */

/*
 * A rank's CLOCK_REALTIME minus rank 0's (estimated), the round trip it was
 * measured over, and whether it is applied: only when it shows the clocks
 * differ (|offset| > rtt / 2, 0 lying outside what the exchange allows);
 * else the clocks may well agree, and a correction would only add the
 * estimate's own error.
 */
struct rm_clock {
	int64_t offset_ns;
	uint64_t rtt_ns;
	int64_t applied_ns; /* offset_ns, or 0 */
	bool known;
	/*
	 * Composed down the tree: the offset to rank 0 is the parent's plus the
	 * child's, and the truth lies within bound_ns of it (the sum of rtt / 2
	 * along the path). rtt_ns is the last link's. Applied when |offset| > bound.
	 */
	uint64_t bound_ns;
};

/* Rank 0 -> each rank: open window `window` at start_ns, or end the run. */
struct rm_order {
	uint64_t start_ns, send_ns; /* rank 0's clock; send_ns: when to send the attaches */
	struct rm_clock clock;	    /* this rank's, from the exchange just before */
	int32_t window;
	int32_t end; /* the run is over: no window; leave with `code` */
	int32_t code;
	int32_t lost; /* a rank was lost: leave without MPI_Finalize (it would wait for it) */
	uint64_t rtt_worst_ns; /* the worst round trip rank 0 knows: what rm_budget scales with */
	uint64_t sent_rt; /* the sender's CLOCK_REALTIME as it sent it (the drift check's t0) */
	/*
	 * The --detail level the window's records are cut at on each node
	 * (enum rm_detail; RM_DETAIL_ALL: none cut), decided by rank 0 once,
	 * from the survey, before window 1.
	 */
	int32_t detail;
};

/* Rank 0 -> each rank: the window's stop. */
struct rm_halt {
	uint64_t stop_ns;
	int32_t signo; /* the signal that caused it, 0 if none */
	int32_t last;  /* no window after this one */
	char reason[48];
	uint64_t sent_rt; /* the sender's CLOCK_REALTIME as it sent it (the drift check's t0) */
};

/*
 * Each rank -> its parent, after its attaches and its children's READY: the
 * counts summed over its subtree, the slowest ready time, then n_lost
 * struct rm_lost_note (its subtree's ranks it lost).
 */
struct rm_ready {
	uint64_t ready_ns;   /* slowest target's attach ready, after the attaches were sent */
	int64_t attached;    /* targets attached now */
	int64_t tool_failed; /* this window's attaches that failed in the tool */
	int64_t no_listener; /* this window's attaches that failed: no listener, no --inject */
	int32_t window;
	int32_t n_lost;
	uint64_t t1, t2;     /* the order's receipt and this message's send (sender's clock) */
	uint64_t rtt_sub_ns; /* the worst round trip measured in the sender's subtree */
	int32_t owed;	     /* ranks below whose READY was still owed at the stop (left out) */
	int32_t pad;
};

/*
 * A rank lost below the sender, with why: rank 0 loses it, and its subtree
 * unless its children were adopted.
 */
struct rm_lost_note {
	int32_t rank;
	int32_t adopted; /* its children were adopted: they answer for themselves */
	char reason[320];
};

/* An ancestor to the children of a lost rank: it is their parent now. */
struct rm_adopt {
	int32_t window;	     /* the window it is in (0: the start-up) */
	int32_t lost;	     /* the rank that was lost (their parent) */
	int32_t has_halt;    /* the window's stop, if the adopter has it */
	struct rm_halt halt; /* ... which they may not have had */
};

/* A child, as its parent sees it (any rank with children). */
struct rm_kid {
	int rank;
	bool lost;
	bool adopted;	  /* a lost child's child, adopted */
	int adopted_from; /* ... that child */
	char lost_reason[320];
	bool got_ready, got_records;
	bool ready_owed;       /* its READY was still owed at the window's stop */
	struct rm_ready ready; /* its subtree's, this window */
	struct rm_clock clock; /* its clock minus this rank's (measured here) */
	bool clock_stale;      /* the drift check disagreed: measured again before the next order */
	uint64_t measured_mono; /* when it was measured */
	uint64_t order_rt;	/* this rank's clock when the last order went to it (t0) */
	uint64_t halt_rt;	/* ... and the last stop */
	uint64_t ping_t0;	/* a late clock ping: its time (CLOCK_REALTIME), 0: none */
	uint64_t ping_sent;	/* ... and when it was sent (CLOCK_MONOTONIC) */
	int stops_in, gones_in; /* STOP and GONE messages taken from it */
	char *bundle;		/* its records bundle, this window (not rank 0) */
	size_t bundle_len;
};

/* This rank's place in the tree (tree.h) and its link state. */
struct rm_tree {
	int k, height, depth, parent, first;
	int n_heap;	      /* children by the tree's arithmetic: kids[0 .. n_heap - 1] */
	int n_kids, cap_kids; /* ... then adopted ones (a lost child's children) */
	struct rm_kid **kids;
	int up_stops, up_gones;	    /* STOP and GONE messages sent to the parent, all along */
	struct rm_lost_note *notes; /* lost below, not told up yet */
	size_t n_notes, cap_notes;
	uint64_t awake_until; /* answering clock pings: no naps until then */
	uint64_t order_t1;    /* the last order's receipt (CLOCK_REALTIME) */
	uint64_t halt_t1;     /* this window's stop's receipt (CLOCK_REALTIME), 0: none yet */
	uint64_t rtt_sub_ns;  /* the worst round trip measured in this subtree */
	int32_t window;	      /* the window it is in (0: the start-up) */
	bool have_halt;	      /* this window's stop was sent down (halt) */
	struct rm_halt halt;
	bool adopt_halt; /* an adopter sent this window's stop: taken as the parent's */
	struct rm_halt adopted_halt;
	uint64_t adopt_until; /* adopted children owe their messages until then (monotonic) */
	/* What was last sent up, for an adopter: sent again (not rank 0). */
	char *last_ready, *last_bundle;
	size_t last_ready_len, last_bundle_len;
	int32_t last_ready_window, last_bundle_window;
	/* The wait for the children's READY (rm_tree_ready_begin), open during the hold. */
	bool ready_open, ready_retried;
	bool ready_up_sent; /* this window's READY went up (other ranks) */
	int32_t ready_window;
	int ready_fresh; /* kids from here on were adopted during the wait */
	uint64_t ready_deadline, ready_grace, ready_retry; /* monotonic, ns */
	struct rm_ready ready_sum;
};

/* Rank 0's messages and bytes in one window (sent and received). */
struct rm_coord_count {
	uint64_t sent, received, bytes_sent, bytes_received;
};

/* Rank 0's view of each rank. */
struct rm_peer {
	bool worker; /* sends a node's records */
	bool lost;
	char lost_reason[320];
	int stops, gones;      /* STOP and GONE messages received from it */
	bool all_gone;	       /* its node's targets are all gone (as of its last records) */
	struct rm_node last;   /* its last records (host, targets): what a lost node shows */
	size_t detached;       /* of which detached */
	struct rm_clock clock; /* this window's estimate */
	struct rm_ready ready;
	bool got_ready, got_records;
};

/* Sends in flight: each owns a copy of its data until MPI is done with it. */
struct rm_outbox {
	MPI_Request *req;
	void **buf;
	int *dest;
	size_t n, cap;
};

struct ctx {
	int rank, size;
	bool worker; /* does this node's work */
	char host[256];
	struct rm_opts o;
	char **argv;	     /* the command line (rank 0's, for the report) */
	struct rm_plan plan; /* what the options' strings live in (other ranks) */
	int argc;
	struct rn_target *t; /* this node's targets */
	size_t n;
	char node_error[256]; /* selection failure on this node */
	int sfd;	      /* signalfd of the window-ending signals, -1 if it failed */
	int sfd_errno;	      /* why it failed */
	int held_sig; /* taken while the attaches or detaches ran: rm_take_signal gives it first */
	bool stdin_open;
	int stops_sent;		/* STOP messages this rank sent to rank 0 (all along) */
	int gones_sent;		/* GONE messages */
	struct rn_watch *watch; /* liveness of this node's targets (NULL: none, or no memory) */
	bool gone_told;		/* rank 0 knows this node's targets are all gone */
	int interrupted;	/* signal that cut a window short, 0 if none */
	bool root_signalled;	/* rank 0: SIGTERM ended the window here (the job may be ending) */
	bool last;		/* no window after this one (job ended, tool failed) */
	int nodes_alive;	/* rank 0: nodes with a target not known gone, not lost */
	bool tool_stop;		/* rank 0: nothing attached, the tool failed */
	bool listener_stop;	/* rank 0: nothing attached, no target has a listener */
	const char *run_stop;	/* rank 0: why the run stopped early, NULL if it did not */
	struct rm_run run;	/* rank 0 */
	bool store_full;	/* rank 0: run.store could not take more: keep in memory */
	struct rm_clock clock;	/* this rank's clock against rank 0's (composed) */
	struct rm_peer *peers;	/* rank 0: by rank */
	size_t lost_count;	/* rank 0: ranks lost so far */
	struct rm_outbox out;
	size_t max_targets;	/* on the busiest node, rank 0 */
	uint64_t ready_ns;	/* rank 0: the last window's attaches were ready this long after
				 * they were sent, on the slowest node (0: not measured) */
	uint64_t next_deadline; /* other ranks: rank 0's next order is due by then (monotonic) */
	/*
	 * The window's frame: its start as CLOCK_REALTIME (rank 0's pick, or
	 * the order's start in this rank's clock) and as CLOCK_MONOTONIC, taken
	 * once when the start is set. Every wait of the window runs on
	 * CLOCK_MONOTONIC through it (mpi_window.c), so a step of this node's
	 * wall clock moves none; the library still gets the CLOCK_REALTIME
	 * times, which the targets read.
	 */
	uint64_t frame_rt, frame_mono;
	/* The level this window's records are cut at here (its order's; 0: none, the survey). */
	int32_t cut_level;
	struct rm_tree tree;
	struct rm_coord_count coord; /* rank 0, this window */
	/* Start-up, CLOCK_MONOTONIC ns: [0] main, then after MPI_Init, the plan, the election. */
	uint64_t setup_at[4];
	uint64_t node_ns[3];	   /* this node's selection, topology, side probes (ns) */
	uint64_t worst_node_ns[3]; /* rank 0: the slowest node's */
	size_t total_targets;	   /* on all nodes, rank 0 */
	uint64_t rtt_worst_ns;	   /* rank 0: the longest of the ranks' round trips (each
				    * rank's shortest) in the last clock exchange; others:
				    * rank 0's, from its last order */
	bool mpi_any_said;	   /* rank 0: a failed look at any rank was said once */
	struct rm_stacks stacks;   /* --stacks: this node's part */
	char stacks_error[300];	   /* --stacks: why this node has no directory for them */
};

/* mpi_main.c */
void rm_say(const struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* This rank's error line, prefixed host:rank (any rank). */
void rm_rank_error(const struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A pending window-ending signal, or 0 (SIGCONT is never one). */
int rm_take_signal(struct ctx *c);
bool rm_took_enter(struct ctx *c);
/* Up to POLL_MS for a signal, less if until_ns (CLOCK_MONOTONIC, 0: none) comes sooner. */
void rm_wait_until(const struct ctx *c, uint64_t until_ns);

/* mpi_link.c */
/*
 * Every MPI call goes through RM_MPI, which names the call and the peer
 * when it fails ("MPI_Recv from rank 3 failed: <MPI's text>") and handles
 * it: 0 when the call succeeded, else -1 and nothing it returned may be
 * used. peer is a rank, RM_ANY (any rank) or RM_ALL (a collective). A
 * failure with a child marks it lost (its children adopted); a failure
 * with the parent detaches this node's targets and ends it (exit 6, as
 * when the parent falls silent); a collective's (start-up only, before any target
 * is touched) ends every rank (exit 1); a look at any rank that fails is
 * said once and taken as nothing there: the deadlines then act on whoever
 * stays silent.
 */
enum { RM_ANY = -1, RM_ALL = -2 };
#define RM_MPI(c, peer, dir, fn, ...) rm_mpi_check((c), fn(__VA_ARGS__), #fn, (dir), (peer))
int rm_mpi_check(struct ctx *c, int ret, const char *call, const char *dir, int peer);
void rm_post(struct ctx *c, int dest, int tag, const void *data, size_t len);
/* Rank 0: a message of len bytes received (the window's coordination count). */
void rm_count_in(struct ctx *c, size_t len);
void rm_outbox_reap(struct ctx *c, bool all);
__attribute__((noreturn)) void rm_out_of_memory(void);
void rm_mark_lost(struct ctx *c, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A deadline's length: floor_ns, or RTT_BUDGET times the worst round trip measured, if longer. */
uint64_t rm_budget(const struct ctx *c, uint64_t floor_ns);
/* Other ranks: the parent is gone or cut off: detach this node's targets, say why, end. */
__attribute__((noreturn)) void rm_cut_off(struct ctx *c, const char *waiting_for);
/* This node's records, packed (struct rm_rec_head, then rn_pack and the stacks). */
void *rm_pack_records(struct ctx *c, size_t *len);
/* Rank 0: one rank's records (as rm_pack_records made them) into its peer entry. */
void rm_take_records(struct ctx *c, int r, const char *buf, size_t len);
/* Rank 0: r lost, and every rank below it "under rank r, lost: <why>". */
void rm_lose_subtree(struct ctx *c, int r, const char *why);

/* mpi_tree.c */
void rm_tree_init(struct ctx *c);
/* Answer the parent's clock pings, forward the children's STOP and GONE up (other ranks). */
void rm_tree_service(struct ctx *c);
/* A short nap in a wait loop, none while clock pings are being answered. */
void rm_tree_nap(struct ctx *c, unsigned us);
/* The next message of `tag` from the parent; 0, or -1 once deadline (monotonic) passed. */
int rm_await_parent(struct ctx *c, int tag, void *buf, size_t len, uint64_t deadline);
/* Rank 0: a STOP or GONE (tag) from a child, counted: 1, or 0 if none is there. */
int rm_tree_take_up(struct ctx *c, int tag, struct rm_up *m);
/* STOP or GONE (tag) of this rank's node, up to the parent. */
void rm_send_up(struct ctx *c, int tag, int32_t origin, int32_t value);
/* A child lost (any rank with children): said up, or on rank 0 lost with its subtree. */
void rm_kid_lost(struct ctx *c, struct rm_kid *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct rm_kid *rm_kid_of(struct ctx *c, int r);
/* A new window (0: the start-up): its stop not sent down yet. */
void rm_tree_window(struct ctx *c, int32_t window);
/* An adopter's stop for this window, taken once: true, and *m. */
bool rm_tree_adopted_halt(struct ctx *c, struct rm_halt *m);
/* Measure the children's clocks: all of them (start-up), or those the drift check flagged. */
void rm_tree_measure(struct ctx *c, bool all);
/* The order (ORDER) or stop (HALT) to each live child, an order with the child's clock. */
void rm_tree_orders(struct ctx *c, const struct rm_order *o);
void rm_tree_halts(struct ctx *c, const struct rm_halt *m);
/*
 * Every live child's READY until start_mono + the grace + this level's
 * steps, late ones retried once, summed into tree.ready_sum (which starts
 * as own, this rank's). The wait runs inside the window's hold: begin it,
 * poll it on each turn of the hold (true once nothing is owed: all came or
 * the silent ones are lost), and close it when the stop comes first (the
 * number of children that still owed their READY; their records say it).
 */
void rm_tree_ready_begin(struct ctx *c, int32_t window, uint64_t start_mono,
			 const struct rm_ready *own);
bool rm_tree_ready_poll(struct ctx *c);
int rm_tree_ready_close(struct ctx *c);
/* Other ranks: the subtree's READY (sum) up to the parent. */
void rm_tree_ready_up(struct ctx *c, struct rm_ready *sum);
/*
 * Every live child's records bundle until since + grace + this level's
 * steps (CLOCK_MONOTONIC), late ones retried once. Rank 0 takes them into
 * peers[] and returns the window's nodes (a lost node with its last known
 * records); the other ranks send their subtree's bundle up. after: what
 * the lost reason says the wait came after ("after the stop").
 */
void rm_collect_records(struct ctx *c, struct rm_node **nodes, size_t *n_nodes, uint64_t since,
			uint64_t grace, const char *after);
void rm_records_up(struct ctx *c, int32_t window, uint64_t since, uint64_t grace);
/* This rank's level steps: LEVEL_STEP_NS (rm_budget) per level below its children's. */
uint64_t rm_level_wait(const struct ctx *c);
/*
 * Rank 0: the nodes of a window as rank 0 knows them now (each rank's last
 * records; a lost node lost). unknown: every node is shown lost for that
 * reason (its records not gathered yet), NULL: none.
 */
void rm_window_nodes(struct ctx *c, struct rm_node **nodes, size_t *n_nodes, const char *unknown);
void rm_free_nodes(struct rm_node *nodes, size_t n);

/* mpi_window.c */
void rm_run_windows(struct ctx *c);
/* The other ranks' side, until rank 0's end order: its exit code, *lost as it says. */
int rm_follow_windows(struct ctx *c, bool *lost);

#endif

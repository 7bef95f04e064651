/* SPDX-License-Identifier: MIT */
/*
 * The flow of messages through the tree (tree.h, --fanout K): each rank
 * talks to its parent and its children only, point to point, every wait
 * with a deadline.
 *
 *   down    ORDER and HALT: a rank forwards what its parent sent to its
 *           live children, each order with that child's composed clock.
 *   up      READY: one per subtree, counts summed (flow_ready.c); RECORDS:
 *           one bundle per subtree (flow_records.c); STOP and GONE: each
 *           forwarded at once with its origin rank.
 *   clocks  each parent measures its children (flow_clock.c).
 *   lost    a child silent past its deadline is late (retried once), then
 *           lost with the reason; so is a child whose MPI call failed (the
 *           link records it, the service loop acts on it). Its children
 *           are adopted: they answer to this rank from then on; rank 0
 *           loses the whole subtree when there are none.
 *
 * flow.c holds the children and the service loop; flow_clock.c,
 * flow_ready.c and flow_records.c each call into it, never the reverse.
 */
#ifndef RM_FLOW_H
#define RM_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "link.h"
#include "messages.h"
#include "roster.h"

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

struct rm_flow {
	struct rm_self *self;
	struct rm_link *link;
	struct rm_roster *roster; /* rank 0's; NULL on the other ranks */
	struct rm_part *part;	  /* this node's records, packed by the flow */
	bool verbose;
	struct rm_clock clock;	     /* this rank's clock against rank 0's (composed) */
	int cut_signal;		     /* rank 0: the signal that cut a records wait short, 0: none */
	int k, height, depth, first; /* the parent: link->parent */
	int n_heap;		     /* children by the tree's arithmetic: kids[0 .. n_heap - 1] */
	int n_kids, cap_kids;	     /* ... then adopted ones (a lost child's children) */
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

/*
 * RM_MPI (link.h) inside the flow: a call that failed with a child makes it
 * lost at once (rm_flow_settle), as before the next step looks at it.
 */
#define FLOW_MPI(f, peer, dir, fn, ...)                                                            \
	rm_flow_checked((f), RM_MPI((f)->link, (peer), (dir), fn, __VA_ARGS__))

/* flow.c */
/* The link's failed peers: each child among them lost, with the failed call's line. */
void rm_flow_settle(struct rm_flow *f);
static inline int rm_flow_checked(struct rm_flow *f, int ret)
{
	if (ret)
		rm_flow_settle(f);
	return ret;
}
void rm_flow_init(struct rm_flow *f, int fanout);
void rm_flow_free(struct rm_flow *f);
/*
 * The service loop's step: failed peers made lost children, an adoption
 * taken; other ranks answer the parent's clock pings and forward the
 * children's STOP and GONE up.
 */
void rm_flow_service(struct rm_flow *f);
/* A short nap in a wait loop, none while clock pings are being answered. */
void rm_flow_nap(struct rm_flow *f, unsigned us);
/* The next message of `tag` from the parent; 0, or -1 once deadline (monotonic) passed. */
int rm_await_parent(struct rm_flow *f, int tag, void *buf, size_t len, uint64_t deadline);
/* Rank 0: a STOP or GONE (tag) from a child, counted: 1, or 0 if none is there. */
int rm_flow_take_up(struct rm_flow *f, int tag, struct rm_up *m);
/* One STOP or GONE from child k, counted; forwarded up (other ranks). 0, or -1. */
int rm_take_up(struct rm_flow *f, struct rm_kid *k, int tag, struct rm_up *m);
/* STOP or GONE (tag) of this rank's node, up to the parent. */
void rm_send_up(struct rm_flow *f, int tag, int32_t origin, int32_t value);
/* A child lost (any rank with children): said up, or on rank 0 lost with its subtree. */
void rm_kid_lost(struct rm_flow *f, struct rm_kid *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A lost rank r below child k, as k said: rank 0 loses it, others tell it up. */
void rm_take_note(struct rm_flow *f, const struct rm_kid *k, int r, const char *why, bool adopted);
struct rm_kid *rm_kid_of(struct rm_flow *f, int r);
/* A message of tag from any rank, whole, into a new buffer: its child, or NULL. */
struct rm_kid *rm_take_message(struct rm_flow *f, int tag, char **buf, size_t *len);
/* Children still owing their READY (records: their records). */
size_t rm_kids_missing(const struct rm_flow *f, bool records);
void rm_say_late(struct rm_flow *f, bool records, const char *what, uint64_t retry);
/* A copy of what went up last (buf, len), for an adopter. */
void rm_keep_sent(char **keep, size_t *keep_len, int32_t *keep_w, const void *buf, size_t len,
		  int32_t window);
/* The drift check on child k's message pair (clock.h); a disagreeing one: measured again. */
void rm_flow_drift(struct rm_flow *f, struct rm_kid *k, uint64_t t0, uint64_t t1, uint64_t t2,
		   uint64_t t3);
/* A new window (0: the start-up): its stop not sent down yet. */
void rm_flow_window(struct rm_flow *f, int32_t window);
/* An adopter's stop for this window, taken once: true, and *m. */
bool rm_flow_adopted_halt(struct rm_flow *f, struct rm_halt *m);
/* The order (ORDER) or stop (HALT) to each live child, an order with the child's clock. */
void rm_flow_orders(struct rm_flow *f, const struct rm_order *o);
void rm_flow_halts(struct rm_flow *f, const struct rm_halt *m);
/* This rank's level steps: LEVEL_STEP_NS (rm_budget) per level below its children's. */
uint64_t rm_level_wait(const struct rm_flow *f);

/* flow_clock.c: measure the children's clocks: all (start-up), or those the drift check flagged. */
void rm_flow_measure(struct rm_flow *f, bool all);

/*
 * flow_ready.c: every live child's READY until start_mono + the grace +
 * this level's steps, late ones retried once, summed into ready_sum (which
 * starts as own, this rank's). The wait runs inside the window's hold:
 * begin it, poll it on each turn of the hold (true once nothing is owed:
 * all came or the silent ones are lost), and close it when the stop comes
 * first (the number of children that still owed their READY; their
 * records say it).
 */
void rm_ready_begin(struct rm_flow *f, int32_t window, uint64_t start_mono,
		    const struct rm_ready *own);
bool rm_ready_poll(struct rm_flow *f);
int rm_ready_close(struct rm_flow *f);
/* Other ranks: the subtree's READY (sum) up to the parent. */
void rm_ready_up(struct rm_flow *f, struct rm_ready *sum);

/*
 * flow_records.c: every live child's records bundle until since + grace +
 * this level's steps (CLOCK_MONOTONIC), late ones retried once. Rank 0
 * takes them into its roster and returns the window's nodes (a lost node
 * with its last known records); the other ranks send their subtree's
 * bundle up. after: what the lost reason says the wait came after ("after
 * the stop"). window: the window's number (0: the start-up's survey).
 */
void rm_collect_records(struct rm_flow *f, int32_t window, struct rm_node **nodes, size_t *n_nodes,
			uint64_t since, uint64_t grace, const char *after);
void rm_records_up(struct rm_flow *f, int32_t window, uint64_t since, uint64_t grace);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * What coord's ranks say to each other, and when they give up waiting: the
 * message tags and their bodies, and the deadlines (docs/reliability.md).
 *
 * After the start-up no collective operation is used: a collective waits
 * for every rank, and one dead rank or cut link would hang all of them.
 * The ranks form a k-ary tree in heap order (tree.h); each rank talks only
 * to its parent and its children, point to point. A child that does not
 * answer its parent by its deadline is lost with its whole subtree (the
 * report says why) unless its children are adopted; a rank whose parent
 * falls silent detaches its targets and ends (rm_cut_off, link.h).
 */
#ifndef RM_MESSAGES_H
#define RM_MESSAGES_H

#include <stdint.h>

#include "clock.h"

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
	TAG_RECORDS = 23, /* the sender's subtree's records (a bundle, flow_records.c) */
	TAG_ADOPT = 24,	  /* the sender (an ancestor) is this rank's parent now (struct rm_adopt) */
	TAG_USER_ENV = 30, /* start-up: mpirun's node's variables to rank 0 (user_env.c) */
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
 * larger (rm_budget, link.h). Slow links and loaded nodes get longer
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
#define ORPHAN_TIMEOUT_NS 10000000000ull /* a rank with a signal waits this long (+ levels) */
#define LEVEL_STEP_NS 1000000000ull
/*
 * A parent that loses a child adopts the child's children (flow.c): it
 * waits ADOPT_WAIT_NS (rm_budget) more for what they owe (their READY or
 * records, sent again), half a level's step: its own parent waits one step
 * longer than it.
 */
#define ADOPT_WAIT_NS 500000000ull
#define STARTUP_TIMEOUT_NS 60000000000ull /* for the plan's broadcast at the start */

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
	int32_t pending;     /* targets whose attach call had not returned (window_calls.c) */
	/*
	 * This window's attaches that were refused or failed, by cause (a
	 * window where nothing attached ends at once, and says why):
	 * declined: every tool's rocprofiler_configure returned NULL (our
	 * agent); held: another attacher holds the target; differ: the tool or
	 * rocprofv3's options differ from the first attach's; other: any
	 * other failure (tool_failed and no_listener are in it too); gone: it
	 * ended before or during its attach.
	 */
	int64_t declined, held, differ, other, gone;
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

/* A bundle: this head, then n entries, each a struct rm_entry and its bytes. */
struct rm_bundle_head {
	int32_t window;
	int32_t n;
	int32_t stops_sent, gones_sent; /* on the sender's link to its parent, all along */
	uint64_t t1, t2; /* the stop's receipt and this bundle's send (the drift check) */
};

struct rm_entry {
	int32_t rank;
	int32_t lost; /* the bytes are why it was lost (a string), else its records */
	uint64_t len;
};

#endif

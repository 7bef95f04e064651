/* SPDX-License-Identifier: MIT */
/*
 * Rank 0's view of the ranks (the roster): each rank's last records, its
 * lost mark and why, its READY; the run's report model, into which every
 * node's records are taken. And this node's part of the records, packed
 * on every rank (records.c): one file owns their wire format both ways.
 */
#ifndef RM_ROSTER_H
#define RM_ROSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "messages.h"
#include "report.h"
#include "say.h"
#include "stacks.h"

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

struct rm_roster {
	struct rm_self *self;
	int k;			   /* the tree's fanout: whose subtree a rank is in */
	struct rm_peer *peers;	   /* by rank */
	size_t lost_count;	   /* ranks lost so far */
	struct rm_run run;	   /* the report's model of the run */
	bool store_full;	   /* run.store could not take more: keep in memory */
	uint64_t worst_node_ns[3]; /* the slowest node's selection, topology, side probes */
};

/* Rank r lost, with why (said once, on rank 0's stream). */
void rm_mark_lost(struct rm_roster *ro, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* r lost, and every rank below it "under rank r, lost: <why>". */
void rm_lose_subtree(struct rm_roster *ro, int r, const char *why);
/*
 * The nodes of a window as rank 0 knows them now (each rank's last
 * records; a lost node lost). unknown: every node is shown lost for that
 * reason (its records not gathered yet), NULL: none.
 */
void rm_window_nodes(struct rm_roster *ro, struct rm_node **nodes, size_t *n_nodes,
		     const char *unknown);
void rm_free_nodes(struct rm_node *nodes, size_t n);
void rm_roster_free(struct rm_roster *ro);

/* This node's part of the records, as every rank packs it (records.c). */
struct rm_part {
	bool worker;		 /* does this node's work */
	char node_error[256];	 /* selection failure on this node */
	uint64_t node_ns[3];	 /* this node's selection, topology, side probes (ns) */
	struct rn_watch *watch;	 /* liveness of this node's targets (NULL: none, or no memory) */
	int stops_sent;		 /* STOP messages this rank sent up (all along) */
	int gones_sent;		 /* GONE messages */
	int32_t cut_level;	 /* the level this window's records are cut at here (0: none) */
	uint64_t frame_rt;	 /* this window's start (CLOCK_REALTIME, this rank's) */
	struct rm_stacks stacks; /* --stacks: this node's part */
	char stacks_error[300];	 /* --stacks: why this node has no directory for them */
};

/*
 * This node's records, packed: a head, the records (cut at the part's
 * level), the stacks. clock: this rank's against rank 0's; order_rt: when
 * this window's order came (0: none).
 */
void *rm_pack_records(const struct rm_self *s, const struct rm_part *p,
		      const struct rm_clock *clock, uint64_t order_rt, size_t *len);
/*
 * Rank 0: one rank's records (as rm_pack_records made them) into its peer
 * entry and the store. Its STOP and GONE messages sent before them came up
 * the same links first and were counted by then.
 */
void rm_take_records(struct rm_roster *ro, int r, const char *buf, size_t len);

#endif

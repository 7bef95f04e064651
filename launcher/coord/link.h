/* SPDX-License-Identifier: MIT */
/*
 * This rank's links: every MPI call checked, sends that never block (the
 * outbox), the deadlines' budget, and the peers whose calls failed. The
 * link never acts on a failed child: it records it, and the flow's service
 * loop (flow.h) makes it a lost child, outside any pass over the outbox.
 */
#ifndef RM_LINK_H
#define RM_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "say.h"

/* Sends in flight: each owns a copy of its data until MPI is done with it. */
struct rm_outbox {
	MPI_Request *req;
	void **buf;
	int *dest;
	size_t n, cap;
};

/* Rank 0's messages and bytes in one window (sent and received). */
struct rm_coord_count {
	uint64_t sent, received, bytes_sent, bytes_received;
};

/* A peer whose MPI call failed, and the line that says so. */
struct rm_failed {
	int rank;
	char msg[MPI_MAX_ERROR_STRING + 64];
};

struct rm_link {
	struct rm_self *self;
	int parent; /* -1 on rank 0; an adoption changes it (flow.c) */
	struct rm_outbox out;
	struct rm_coord_count coord; /* rank 0, this window */
	/*
	 * Rank 0: the longest of the ranks' round trips (each rank's shortest)
	 * in the last clock exchange; others: rank 0's, from its last order.
	 */
	uint64_t rtt_worst_ns;
	bool any_said;		  /* a failed look at any rank was said once */
	struct rm_failed *failed; /* not taken yet (rm_link_failed) */
	size_t n_failed, cap_failed;
};

/*
 * Every MPI call goes through RM_MPI, which names the call and the peer
 * when it fails ("MPI_Recv from rank 3 failed: <MPI's text>"): 0 when the
 * call succeeded, else -1 and nothing it returned may be used. peer is a
 * rank, RM_ANY (any rank) or RM_ALL (a collective). A failure with the
 * parent detaches this node's targets and ends it (exit 6, as when the
 * parent falls silent); a collective's (start-up only, before any target
 * is touched) ends every rank (exit 1); a failure with another rank is
 * recorded (rm_link_failed), once per rank; a look at any rank that fails
 * is said once and taken as nothing there: the deadlines then act on
 * whoever stays silent.
 */
enum { RM_ANY = -1, RM_ALL = -2 };
#define RM_MPI(l, peer, dir, fn, ...) rm_mpi_check((l), fn(__VA_ARGS__), #fn, (dir), (peer))
int rm_mpi_check(struct rm_link *l, int ret, const char *call, const char *dir, int peer);
/* A failed peer not taken yet: true, its rank and line (each failed rank once). */
bool rm_link_failed(struct rm_link *l, int *rank, char *msg, size_t len);

void rm_post(struct rm_link *l, int dest, int tag, const void *data, size_t len);
/* Free what was sent. */
void rm_outbox_reap(struct rm_link *l);
/*
 * At the end, every rank alive: what is still in flight completes; sends
 * still pending (to a lost rank) are released to MPI and their copies kept.
 */
void rm_outbox_end(struct rm_link *l);
/* Rank 0: a message of len bytes received (the window's coordination count). */
void rm_count_in(struct rm_link *l, size_t len);
#define RTT_BUDGET 50 /* messages.h: each deadline scales with the worst round trip */
/* A deadline's length: floor_ns, or RTT_BUDGET times the worst round trip measured, if longer. */
uint64_t rm_budget(const struct rm_link *l, uint64_t floor_ns);
/* Other ranks: the parent is gone or cut off: detach this node's targets, say why, end. */
__attribute__((noreturn)) void rm_cut_off(struct rm_link *l, const char *waiting_for);

#endif

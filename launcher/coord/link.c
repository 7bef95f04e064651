/* SPDX-License-Identifier: MIT */
/*
 * This rank's links (link.h): checked MPI calls, sends that never block,
 * receives that never wait past a deadline (their callers'), the budget
 * of those deadlines, and the peers whose calls failed, recorded for the
 * flow to act on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link.h"
#include "mpi_opts.h"

/* ------------------------------------------------------------------------ */
/* Checked MPI calls (RM_MPI). */

/* Recorded once per rank: the flow takes it (rm_link_failed). */
static void record_failed(struct rm_link *l, int peer, const char *msg)
{
	for (size_t i = 0; i < l->n_failed; i++)
		if (l->failed[i].rank == peer)
			return;
	if (l->n_failed == l->cap_failed) {
		size_t cap = l->cap_failed ? 2 * l->cap_failed : 8;
		struct rm_failed *f = realloc(l->failed, cap * sizeof(*f));

		if (!f)
			rm_out_of_memory();
		l->failed = f;
		l->cap_failed = cap;
	}
	l->failed[l->n_failed].rank = peer;
	snprintf(l->failed[l->n_failed].msg, sizeof(l->failed[0].msg), "%s", msg);
	l->n_failed++;
}

int rm_mpi_check(struct rm_link *l, int ret, const char *call, const char *dir, int peer)
{
	char text[MPI_MAX_ERROR_STRING], msg[MPI_MAX_ERROR_STRING + 64];
	int len = 0;

	if (ret == MPI_SUCCESS)
		return 0;
	if (MPI_Error_string(ret, text, &len) != MPI_SUCCESS || len <= 0)
		snprintf(text, sizeof(text), "MPI error %d", ret);
	if (peer >= 0)
		snprintf(msg, sizeof(msg), "%s %s rank %d failed: %s", call, dir, peer, text);
	else if (peer == RM_ANY)
		snprintf(msg, sizeof(msg), "%s %s any rank failed: %s", call, dir, text);
	else
		snprintf(msg, sizeof(msg), "%s failed: %s", call, text);
	/* Another rank lost its link to its parent: as if the parent fell silent, with the cause.
	 */
	if (peer >= 0 && peer == l->parent)
		rm_leave(l->self, "%s: detached this node's targets, ending (exit %d)", msg,
			 RM_EXIT_LOST);
	if (peer >= 0) {
		record_failed(l, peer, msg);
		return -1;
	}
	if (peer == RM_ALL) {
		/* Only the start-up uses collectives: no target is touched yet. */
		rm_rank_error(l->self, "%s: stopping every rank (exit %d)", msg, RM_EXIT_ERROR);
		fflush(NULL);
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
		_exit(RM_EXIT_ERROR);
	}
	if (!l->any_said)
		rm_rank_error(l->self, "%s (said once; ranks that stay silent are lost)", msg);
	l->any_said = true;
	return -1;
}

bool rm_link_failed(struct rm_link *l, int *rank, char *msg, size_t len)
{
	if (!l->n_failed)
		return false;
	*rank = l->failed[0].rank;
	snprintf(msg, len, "%s", l->failed[0].msg);
	/* Taken in the order they failed; a rank that fails again is recorded again. */
	memmove(l->failed, l->failed + 1, --l->n_failed * sizeof(*l->failed));
	return true;
}

/* ------------------------------------------------------------------------ */
/* Sends: a copy of the data lives until MPI has sent it. */

static void outbox_grow(struct rm_outbox *o)
{
	size_t cap = o->cap ? 2 * o->cap : 64;
	MPI_Request *req = realloc(o->req, cap * sizeof(*req));

	if (req)
		o->req = req;
	void **buf = req ? realloc(o->buf, cap * sizeof(*buf)) : NULL;

	if (buf)
		o->buf = buf;
	int *to = buf ? realloc(o->dest, cap * sizeof(*to)) : NULL;

	if (!to)
		rm_out_of_memory();
	o->dest = to;
	o->cap = cap;
}

void rm_post(struct rm_link *l, int dest, int tag, const void *data, size_t len)
{
	struct rm_outbox *o = &l->out;
	void *copy;

	rm_outbox_reap(l);
	if (l->self->rank == 0) {
		l->coord.sent++;
		l->coord.bytes_sent += len;
	}
	if (o->n == o->cap)
		outbox_grow(o);
	copy = malloc(len ? len : 1);
	if (!copy || len > INT32_MAX)
		rm_out_of_memory();
	memcpy(copy, data, len);
	if (RM_MPI(l, dest, "to", MPI_Isend, copy, (int)len, MPI_BYTE, dest, tag, MPI_COMM_WORLD,
		   &o->req[o->n])) {
		free(copy);
		return; /* dest failed: recorded */
	}
	o->dest[o->n] = dest;
	o->buf[o->n++] = copy;
}

/*
 * One pass, compacting in place. A failed send is only recorded (RM_MPI):
 * nothing here calls out of the link, so no other pass runs inside this one.
 */
static void reap(struct rm_link *l, bool all)
{
	struct rm_outbox *o = &l->out;
	size_t k = 0;

	for (size_t i = 0; i < o->n; i++) {
		int done = 0, d = o->dest[i];

		if (RM_MPI(l, d, "to", MPI_Test, &o->req[i], &done, MPI_STATUS_IGNORE)) {
			/* The send failed (its peer lost): MPI may still hold the copy. */
		} else if (done) {
			free(o->buf[i]);
		} else if (all) {
			RM_MPI(l, d, "to", MPI_Request_free, &o->req[i]);
		} else {
			o->req[k] = o->req[i];
			o->dest[k] = d;
			o->buf[k++] = o->buf[i];
		}
	}
	o->n = k;
}

void rm_outbox_reap(struct rm_link *l)
{
	reap(l, false);
}

void rm_outbox_end(struct rm_link *l)
{
	struct rm_outbox *o = &l->out;

	if (RM_MPI(l, RM_ANY, "to", MPI_Waitall, (int)o->n, o->req, MPI_STATUSES_IGNORE))
		o->n = 0; /* their copies stay: MPI may hold them */
	reap(l, true);
	free(o->req);
	free(o->buf);
	free(o->dest);
	free(l->failed);
}

void rm_count_in(struct rm_link *l, size_t len)
{
	if (l->self->rank != 0)
		return;
	l->coord.received++;
	l->coord.bytes_received += len;
}

uint64_t rm_budget(const struct rm_link *l, uint64_t floor_ns)
{
	uint64_t scaled = l->rtt_worst_ns * RTT_BUDGET;

	return scaled > floor_ns ? scaled : floor_ns;
}

void rm_cut_off(struct rm_link *l, const char *waiting_for)
{
	int p = l->parent;

	rm_leave(l->self,
		 "no %s from rank %d%s in time: rank %d is gone or this node is cut off "
		 "from it; detached this node's targets, ending (exit %d)",
		 waiting_for, p, p ? " (this rank's parent in the tree)" : "", p, RM_EXIT_LOST);
}

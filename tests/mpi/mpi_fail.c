/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim (PMPI) for tests/mpi/test_checked.sh: MPI calls of one
 * rank fail with MPI_ERR_OTHER, as a dead or cut-off peer makes them fail.
 * Without RA_MPI_FAIL_TAG or RA_MPI_FAIL_PEER nothing fails.
 *
 * RA_MPI_FAIL_TAG=T, RA_MPI_FAIL_NTH=N (default 1): the Nth MPI_Recv of tag T
 * fails after receiving (the message is taken, its buffer filled: only a
 * checked result keeps it from being used).
 *
 * RA_MPI_FAIL_PEER=P with RA_MPI_FAIL_OP:
 *   test    sends to P stay pending (MPI_Test says not done) until
 *           RA_MPI_FAIL_HOLD (default 3) of them are outstanding at once;
 *           from then on MPI_Test, MPI_Wait, MPI_Waitany and MPI_Waitall
 *           fail on each of them (several failures in one pass)
 *   isend   the Nth MPI_Isend to P fails, nothing sent
 *   iprobe  the Nth MPI_Iprobe of P fails
 *   claim   the Nth records bundle sent to P (tag 23, TAG_RECORDS) claims
 *           one STOP message more than was sent before it: its head's
 *           stops_sent (the third int32, coord/messages.h) plus one
 *
 * RA_MPI_FAIL_LOG=FILE: a line per send and per completed one, for the test
 * to read: "isend REQ DEST TAG", "done REQ", and "stale REQ" when a request
 * that completed already (MPI freed it) is tested or waited for again.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define HELD_MAX 256

static int recv_seen, isend_seen, iprobe_seen;
static MPI_Request held[HELD_MAX]; /* sends to the peer kept pending (op test) */
static int n_held;
static bool tripped; /* the held sends fail from now on */

/* Our sends' requests (MPI_Isend): in flight, and completed (MPI freed them). */
static uintptr_t issued[HELD_MAX], completed[HELD_MAX];
static int n_issued, n_completed;

static void log_line(const char *what, MPI_Request r, int dest, int tag)
{
	const char *path = getenv("RA_MPI_FAIL_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;

	if (!f)
		return;
	if (dest >= 0)
		fprintf(f, "%s %#jx %d %d\n", what, (uintmax_t)(uintptr_t)r, dest, tag);
	else
		fprintf(f, "%s %#jx\n", what, (uintmax_t)(uintptr_t)r);
	fclose(f);
}

static int find(const uintptr_t *set, int n, MPI_Request r)
{
	for (int i = 0; i < n; i++)
		if (set[i] == (uintptr_t)r)
			return i;
	return -1;
}

static void set_del(uintptr_t *set, int *n, MPI_Request r)
{
	int at = find(set, *n, r);

	if (at >= 0)
		set[at] = set[--*n];
}

static void set_add(uintptr_t *set, int *n, MPI_Request r)
{
	if (find(set, *n, r) < 0 && *n < HELD_MAX)
		set[(*n)++] = (uintptr_t)r;
}

/* A send MPI handed out (a freed request's handle may come back: a new request then). */
static void note_issued(MPI_Request r, int dest, int tag)
{
	set_del(completed, &n_completed, r);
	set_add(issued, &n_issued, r);
	log_line("isend", r, dest, tag);
}

/* One of our sends completed: MPI freed its request. */
static void note_done(MPI_Request r)
{
	if (find(issued, n_issued, r) < 0)
		return; /* not a send (a collective's request) */
	set_del(issued, &n_issued, r);
	set_add(completed, &n_completed, r);
	log_line("done", r, -1, 0);
}

/* One of our sends' requests, tested or waited for again after it completed. */
static void check_stale(MPI_Request r)
{
	if (r != MPI_REQUEST_NULL && find(completed, n_completed, r) >= 0)
		log_line("stale", r, -1, 0);
}

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

/* The failing peer for op, or -2 (no rank is -2) when op is not the one asked for. */
static int peer_for(const char *op)
{
	const char *o = getenv("RA_MPI_FAIL_OP"), *p = getenv("RA_MPI_FAIL_PEER");

	if (!o || !p || strcmp(o, op))
		return -2;
	return atoi(p);
}

static int held_at(MPI_Request r)
{
	for (int i = 0; i < n_held; i++)
		if (held[i] == r && r != MPI_REQUEST_NULL)
			return i;
	return -1;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
	     MPI_Status *st)
{
	const char *t = getenv("RA_MPI_FAIL_TAG");
	int ret = PMPI_Recv(buf, count, type, src, tag, comm, st);

	if (ret != MPI_SUCCESS || !t || atoi(t) != tag)
		return ret;
	return ++recv_seen == env_int("RA_MPI_FAIL_NTH", 1) ? MPI_ERR_OTHER : ret;
}

/* TAG_RECORDS and the offset of stops_sent in struct rm_bundle_head (coord/messages.h). */
#define TAG_RECORDS 23
#define STOPS_SENT_AT 8

static int claim_seen;

/* A copy of a bundle whose head claims one STOP more (kept: MPI reads it until done). */
static const void *claimed(const void *buf, int count)
{
	char *copy;
	int32_t stops;

	if (count < STOPS_SENT_AT + (int)sizeof(stops) || !(copy = malloc((size_t)count)))
		return buf;
	memcpy(copy, buf, (size_t)count);
	memcpy(&stops, copy + STOPS_SENT_AT, sizeof(stops));
	stops++;
	memcpy(copy + STOPS_SENT_AT, &stops, sizeof(stops));
	return copy;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	int ret;

	if (tag == TAG_RECORDS && dest == peer_for("claim") &&
	    ++claim_seen == env_int("RA_MPI_FAIL_NTH", 1))
		buf = claimed(buf, count);

	if (dest == peer_for("isend") && ++isend_seen == env_int("RA_MPI_FAIL_NTH", 1)) {
		*req = MPI_REQUEST_NULL;
		return MPI_ERR_OTHER;
	}
	ret = PMPI_Isend(buf, count, type, dest, tag, comm, req);
	if (ret == MPI_SUCCESS)
		note_issued(*req, dest, tag);
	if (ret == MPI_SUCCESS && dest == peer_for("test") && n_held < HELD_MAX) {
		held[n_held++] = *req;
		tripped |= n_held >= env_int("RA_MPI_FAIL_HOLD", 3);
	}
	return ret;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
	MPI_Request r = *req;
	int ret;

	check_stale(r);
	if (held_at(r) >= 0) {
		*flag = 0;
		return tripped ? MPI_ERR_OTHER : MPI_SUCCESS;
	}
	ret = PMPI_Test(req, flag, st);
	if (ret == MPI_SUCCESS && *flag && r != MPI_REQUEST_NULL)
		note_done(r);
	return ret;
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
	MPI_Request r = *req;
	int ret;

	check_stale(r);
	if (held_at(r) >= 0 && tripped)
		return MPI_ERR_OTHER;
	ret = PMPI_Wait(req, st);
	if (ret == MPI_SUCCESS && r != MPI_REQUEST_NULL)
		note_done(r);
	return ret;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
	for (int i = 0; i < n && tripped; i++)
		if (held_at(reqs[i]) >= 0) {
			*index = i;
			return MPI_ERR_OTHER;
		}
	return PMPI_Waitany(n, reqs, index, st);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
	for (int i = 0; i < n; i++)
		check_stale(reqs[i]);
	for (int i = 0; i < n && tripped; i++)
		if (held_at(reqs[i]) >= 0)
			return MPI_ERR_OTHER;
	return PMPI_Waitall(n, reqs, sts);
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
	if (src == peer_for("iprobe") && ++iprobe_seen == env_int("RA_MPI_FAIL_NTH", 1)) {
		*flag = 0;
		return MPI_ERR_OTHER;
	}
	return PMPI_Iprobe(src, tag, comm, flag, st);
}

/* SPDX-License-Identifier: MIT */
/*
 * The MPI floor under the launcher's coordination, on the same ranks: how
 * long a broadcast of a start time takes to reach the last rank, and a gather
 * of BYTES per rank at rank 0 (the size of one node's records). Also the
 * point-to-point costs the model in bench/README.md starts from: rank 0
 * sending 8 bytes to every rank and taking an 8-byte answer from each (the
 * launcher's pattern, without its work), and one 8-byte ping-pong between
 * rank 0 and the last rank while the others wait.
 *
 *   mpirun -np N rocattach-bench-mpi-floor [BYTES]
 *
 * Rank 0 prints one JSON line: {"ranks", "bytes", "bcast_us", "gather_us",
 * "fanout_us", "pingpong_us"} (medians over REPS) and "p2p_ms", the time of
 * the point-to-point part, which is not in the bcast+gather program's wall.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#define REPS 41

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Rank 0: an 8-byte message to every rank, then an answer from each (us). */
static double fan_out(int rank, int size)
{
	MPI_Request req[2];
	uint64_t t0, word = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank) {
		MPI_Recv(&word, 1, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(&word, 1, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD);
		return 0;
	}
	t0 = now_ns();
	for (int r = 1; r < size; r++) {
		MPI_Isend(&t0, 1, MPI_UINT64_T, r, 1, MPI_COMM_WORLD, &req[0]);
		MPI_Wait(&req[0], MPI_STATUS_IGNORE);
	}
	for (int r = 1; r < size; r++) {
		MPI_Irecv(&word, 1, MPI_UINT64_T, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &req[1]);
		MPI_Wait(&req[1], MPI_STATUS_IGNORE);
	}
	return (double)(now_ns() - t0) / 1e3;
}

/* One 8-byte round trip between rank 0 and the last rank (us; 0 elsewhere). */
static double ping_pong(int rank, int size)
{
	uint64_t t0 = 0, word = 0;
	int peer = size - 1;

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0 && peer > 0) {
		t0 = now_ns();
		MPI_Send(&t0, 1, MPI_UINT64_T, peer, 3, MPI_COMM_WORLD);
		MPI_Recv(&word, 1, MPI_UINT64_T, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		return (double)(now_ns() - t0) / 1e3;
	}
	if (rank == peer && peer > 0) {
		MPI_Recv(&word, 1, MPI_UINT64_T, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(&word, 1, MPI_UINT64_T, 0, 4, MPI_COMM_WORLD);
	}
	return 0;
}

int main(int argc, char **argv)
{
	double bcast[REPS], gather[REPS], fan[REPS], pp[REPS];
	uint64_t p2p_ns;
	int rank, size, bytes;
	char *mine, *all = NULL;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	bytes = argc > 1 ? atoi(argv[1]) : 512;
	mine = calloc((size_t)bytes, 1);
	if (rank == 0)
		all = malloc((size_t)bytes * (size_t)size);
	for (int r = 0; r < REPS; r++) {
		uint64_t sent = 0, late, worst = 0, t0;

		/* Every rank shares the machine's clock: lateness is receipt - send. */
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0)
			sent = now_ns();
		MPI_Bcast(&sent, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
		late = now_ns() - sent;
		MPI_Reduce(&late, &worst, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
		bcast[r] = (double)worst / 1e3;
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = now_ns();
		MPI_Gather(mine, bytes, MPI_CHAR, all, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
		gather[r] = (double)(now_ns() - t0) / 1e3;
	}
	/* Apart, and timed whole, so that bench_coord can take this part out of mpirun's wall. */
	MPI_Barrier(MPI_COMM_WORLD);
	p2p_ns = now_ns();
	for (int r = 0; r < REPS; r++) {
		fan[r] = fan_out(rank, size);
		pp[r] = ping_pong(rank, size);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	p2p_ns = now_ns() - p2p_ns;
	if (rank == 0) {
		qsort(bcast, REPS, sizeof(double), cmp);
		qsort(gather, REPS, sizeof(double), cmp);
		qsort(fan, REPS, sizeof(double), cmp);
		qsort(pp, REPS, sizeof(double), cmp);
		printf("{\"ranks\": %d, \"bytes\": %d, \"bcast_us\": %.1f, \"gather_us\": %.1f, "
		       "\"fanout_us\": %.1f, \"pingpong_us\": %.1f, \"p2p_ms\": %.1f}\n",
		       size, bytes, bcast[REPS / 2], gather[REPS / 2], fan[REPS / 2], pp[REPS / 2],
		       (double)p2p_ns / 1e6);
	}
	free(mine);
	free(all);
	MPI_Finalize();
	return 0;
}

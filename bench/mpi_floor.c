/* SPDX-License-Identifier: MIT */
/*
 * The MPI floor under the launcher's coordination, on the same ranks: how
 * long a broadcast of a start time takes to reach the last rank, and a gather
 * of BYTES per rank at rank 0 (the size of one node's records).
 *
 *   mpirun -np N rocattach-bench-mpi-floor [BYTES]
 *
 * Rank 0 prints one JSON line: {"ranks", "bcast_us", "gather_us"} (medians).
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

int main(int argc, char **argv)
{
	double bcast[REPS], gather[REPS];
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
	if (rank == 0) {
		qsort(bcast, REPS, sizeof(double), cmp);
		qsort(gather, REPS, sizeof(double), cmp);
		printf("{\"ranks\": %d, \"bytes\": %d, \"bcast_us\": %.1f, \"gather_us\": %.1f}\n",
		       size, bytes, bcast[REPS / 2], gather[REPS / 2]);
	}
	free(mine);
	free(all);
	MPI_Finalize();
	return 0;
}

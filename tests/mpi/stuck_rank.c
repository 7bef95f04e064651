/* SPDX-License-Identifier: MIT */
/*
 * A hung MPI job for rocattach-mpi --stacks: the last rank spins in
 * stuck_here() and never reaches the barrier in which every other rank
 * waits. Each rank prints "ready" once it is where it stays. SIGTERM ends it.
 */
#include <mpi.h>
#include <stdio.h>

static volatile unsigned long spins;

__attribute__((noinline)) static void stuck_here(void)
{
	for (;;)
		spins++;
}

__attribute__((noinline)) static void compute(void)
{
	stuck_here();
}

int main(int argc, char **argv)
{
	int rank, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	printf("ready %d\n", rank);
	fflush(stdout);
	if (rank == size - 1)
		compute();
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * rocattach-example-mpi-target: a small MPI job to attach to. Every rank
 * computes and joins an allreduce every few milliseconds, so a rank that
 * was disturbed would slow the whole job down and show in the iteration
 * rate. The waits sleep instead of spinning (MPI_Iallreduce + MPI_Test), so
 * many ranks can share a few cores, as on a test machine. Runs until
 * SIGTERM/SIGINT (or --seconds S), then prints per rank
 * "done rank=R iterations=N" and exits 0.
 *
 *   ROCP_TOOL_ATTACH=1 mpirun -np 4 -x ROCP_TOOL_ATTACH \
 *       -x LD_PRELOAD=/path/librocattach-agent.so.0 rocattach-example-mpi-target
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* A reduction that waits by sleeping: Open MPI's blocking calls spin. */
static void reduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op)
{
	struct timespec nap = {0, 100 * 1000};
	MPI_Request req;
	int done = 0;

	MPI_Iallreduce(in, out, count, type, op, MPI_COMM_WORLD, &req);
	for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done;
	     MPI_Test(&req, &done, MPI_STATUS_IGNORE))
		nanosleep(&nap, NULL);
}

static double work(double x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct timespec nap = {0, 2 * 1000 * 1000};
	long long iterations = 0;
	double seconds = 0, x = 1, sum;
	int rank, size, local_stop, any_stop;
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--help")) {
			if (!rank)
				printf("Usage: rocattach-example-mpi-target [--seconds S]\n");
			MPI_Finalize();
			return 0;
		}
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("ready rank=%d size=%d\n", rank, size);
	fflush(stdout);
	t0 = MPI_Wtime();
	do {
		x = work(x);
		reduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM);
		iterations++;
		nanosleep(&nap, NULL);
		local_stop = stop || (seconds > 0 && MPI_Wtime() - t0 >= seconds);
		/* Everyone stops in the same iteration, so no rank waits on a gone peer. */
		reduce(&local_stop, &any_stop, 1, MPI_INT, MPI_MAX);
	} while (!any_stop);
	printf("done rank=%d iterations=%lld\n", rank, iterations);
	fflush(stdout);
	MPI_Finalize();
	return 0;
}

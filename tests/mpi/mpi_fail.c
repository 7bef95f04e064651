/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim (PMPI) for tests/mpi/test_checked.sh: the Nth MPI_Recv
 * of tag T returns MPI_ERR_OTHER, after receiving (the message is taken,
 * its buffer filled: only a checked result keeps it from being used).
 * RA_MPI_FAIL_TAG=T, RA_MPI_FAIL_NTH=N (default 1); without T, nothing fails.
 */
#include <stdlib.h>

#include <mpi.h>

static int seen;

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
	     MPI_Status *st)
{
	const char *t = getenv("RA_MPI_FAIL_TAG"), *n = getenv("RA_MPI_FAIL_NTH");
	int ret = PMPI_Recv(buf, count, type, src, tag, comm, st);

	if (ret != MPI_SUCCESS || !t || atoi(t) != tag)
		return ret;
	return ++seen == (n ? atoi(n) : 1) ? MPI_ERR_OTHER : ret;
}

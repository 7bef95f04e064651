/* SPDX-License-Identifier: MIT */
/* The start-up's waits: see startup.h. */
#include <stdio.h>
#include <unistd.h>

#include "common/clock.h"
#include "messages.h"
#include "mpi_opts.h"
#include "startup.h"

void rm_startup_wait(const struct rm_startup *s, MPI_Request *req)
{
	int done = 0;

	/* A failure ends every rank (RM_ALL): RM_MPI does not return then. */
	while (!RM_MPI(s->link, RM_ALL, "", MPI_Test, req, &done, MPI_STATUS_IGNORE) && !done) {
		if (ra_monotonic_ns() > s->deadline) {
			rm_rank_error(s->self,
				      "not every rank took part in the start-up within %.0f s: "
				      "ending (exit %d)",
				      (double)STARTUP_TIMEOUT_NS / 1e9, RM_EXIT_LOST);
			fflush(NULL);
			_exit(RM_EXIT_LOST);
		}
		usleep(100);
	}
}

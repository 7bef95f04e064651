/* SPDX-License-Identifier: MIT */
/*
 * The start-up's waits (startup.c): a collective or message of the start-up,
 * waited for until STARTUP_TIMEOUT_NS after MPI_Init. Used by main.c and
 * by user_env.c, which sit above it.
 */
#ifndef RM_STARTUP_H
#define RM_STARTUP_H

#include <stdint.h>

#include <mpi.h>

#include "link.h"
#include "say.h"

/* What a start-up wait needs: who says, through which link, until when. */
struct rm_startup {
	struct rm_self *self;
	struct rm_link *link;
	uint64_t deadline; /* CLOCK_MONOTONIC ns */
};

/*
 * Wait for req. A failed MPI call ends every rank (RM_ALL); past the
 * deadline this rank says so and exits RM_EXIT_LOST.
 */
void rm_startup_wait(const struct rm_startup *s, MPI_Request *req);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi's top room: the rooms below put together (main.c: the
 * start-up, the survey, the windows), and rank 0's end of the run (end.c).
 * Private to main.c and end.c.
 */
#ifndef RM_MAIN_H
#define RM_MAIN_H

#include <stdint.h>

#include "plan.h"
#include "window.h"

struct ctx {
	struct rm_self self;
	struct rm_link link;
	struct rm_flow flow;
	struct rm_roster roster; /* rank 0 */
	struct rm_part part;
	struct rm_win win;
	struct rm_opts o;
	char **argv;	     /* the command line (rank 0's, for the report) */
	struct rm_plan plan; /* what the options' strings live in (other ranks) */
	int argc;
	/* Start-up, CLOCK_MONOTONIC ns: [0] main, then after MPI_Init, the plan, the election. */
	uint64_t setup_at[4];
};

/* A start-up collective or message, waited for until STARTUP_TIMEOUT_NS after MPI_Init. */
void startup_wait(struct ctx *c, MPI_Request *req);
/* Rank 0: the end of the run to every live rank, with the exit code. */
void rm_send_end(struct ctx *c, int code);
/* Rank 0: the end order, the files, then the summary: it is the last thing printed. */
int rm_finish(struct ctx *c);

#endif

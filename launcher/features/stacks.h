/* SPDX-License-Identifier: MIT */
/* rocattach-mpi --stacks: the tool, each node's files folded, rank 0's tree. */
#ifndef RM_MPI_STACKS_H
#define RM_MPI_STACKS_H

#include <limits.h>
#include <stdbool.h>
#include <stdbool.h>
#include <stddef.h>

#include "mpi_opts.h"
#include "node.h"

struct ra_stack_tree;

struct rm_stacks {
	char dir[PATH_MAX]; /* this node's directory for the tool's files, "" if none */
	char var[2][PATH_MAX + 32];
	const char *env[3];	/* ROCPROF_OUTPUT_PATH, ROCPROF_STACKS_HZ, NULL */
	char *text;		/* this window's snapshot as folded lines, NULL if none */
	char *samples;		/* its samples as folded lines (count: samples), NULL if none */
	char *timed;		/* its samples one a line with their time (--trace), NULL if none */
	size_t no_rank;		/* targets left out: no rank in their environment */
	size_t samples_missing; /* targets with a rank and no file */
};

/* Rank 0: the tool into o->tools; 0, or -1 with the cause and the fix in err. */
int rm_stacks_find_tool(struct rm_opts *o, char *err, size_t len);
/* A worker, before the attach: the directory and the tool's variables. */
int rm_stacks_prepare(struct rm_stacks *s, int hz, char *err, size_t len);
/*
 * A worker, after the detach: the targets' stacks as folded lines into
 * s->text; node_error: why the node has none ("" if it may have).
 */
void rm_stacks_fold(struct rm_stacks *s, const char *host, const struct rn_target *t, size_t n,
		    const char *node_error, bool snapshot, bool samples, bool timed);
/* The tool's files and the directory, once read (s->text stays). */
void rm_stacks_cleanup(struct rm_stacks *s);
/* Rank 0: a node's lines into the tree; returns how many were refused. */
size_t rm_stacks_merge(struct ra_stack_tree *tree, const char *text, size_t len);

#endif

/* SPDX-License-Identifier: MIT */
/* rocattach-mpi --stacks: the tool, each node's files folded, rank 0's tree. */
#ifndef RM_MPI_STACKS_H
#define RM_MPI_STACKS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "mpi_opts.h"
#include "node.h"

struct ra_stack_tree;

/* One target user's folder in this node's directory, and its tool's variables. */
struct rm_stacks_user {
	uid_t uid;
	char dir[PATH_MAX + 16];
	char var[2][PATH_MAX + 48];
	const char *env[3];	    /* ROCPROF_OUTPUT_PATH (dir), ROCPROF_STACKS_HZ, NULL */
	char error[PATH_MAX + 128]; /* why it has no folder, "" if it has */
};

struct rm_stacks {
	/*
	 * This node's directory for the tool's files, "" if none: the
	 * launcher's, not writable by others, with a folder in it per target
	 * user (users, n_users), owned by that user and private to it.
	 */
	char dir[PATH_MAX];
	struct rm_stacks_user *users;
	size_t n_users;
	char *text;		/* this window's snapshot as folded lines, NULL if none */
	char *samples;		/* its samples as folded lines (count: samples), NULL if none */
	char *timed;		/* its samples one a line with their time (--trace), NULL if none */
	size_t no_rank;		/* targets left out: no rank in their environment */
	size_t samples_missing; /* targets with a rank and no file */
};

/* Rank 0: the tool into o->tools; 0, or -1 with the cause and the fix in err. */
int rm_stacks_find_tool(struct rm_opts *o, char *err, size_t len);
/*
 * A worker, before the attach: the directory, a folder in it for each user
 * of the targets t[0..n) and the tool's variables. 0, or -1 with the cause
 * and the fix in err when the directory cannot be made; a user whose
 * folder cannot be made has the reason in its error (its targets' stacks
 * are missing, saying why).
 */
int rm_stacks_prepare(struct rm_stacks *s, int hz, const struct rn_target *t, size_t n, char *err,
		      size_t len);
/* The tool's variables for target t (rn_pool_opts.env_of; arg: the struct rm_stacks). */
const char *const *rm_stacks_env_of(const struct rn_target *t, void *arg);
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

/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi --diff A B [--top N] [--flamegraph OUT.svg]: two folded
 * files (--folded's) compared, no MPI, no process touched: the functions
 * whose share of the samples changed most, by self and by total share, in
 * points (docs/stacks.md).
 */
#ifndef RM_DIFF_H
#define RM_DIFF_H

#include <stdio.h>

#include "profiles.h"

/* Exit codes of --diff: printed; bad usage or input (one line: cause and fix); SVG not written. */
#define RM_DIFF_OK 0
#define RM_DIFF_NOT_WRITTEN 1
#define RM_DIFF_BAD 2

/* One function: its samples as the innermost frame (self) and anywhere in a stack (total). */
struct rm_diff_row {
	const char *frame;
	unsigned long long self[2], total[2]; /* A's, B's */
};

struct rm_diff {
	struct rm_strtab names; /* the rows' frames */
	struct rm_diff_row *v;	/* one per name, in its order */
	unsigned long long samples[2];
};

/* A folded file into p; 0, or -1 with one line (cause and fix) in err. */
int rm_diff_load(const char *path, struct rm_prof *p, char *err, size_t len);
/* The rows of a and b (host and rank frames are not functions: left out); 0 or -1. */
int rm_diff_build(const struct rm_prof *a, const struct rm_prof *b, struct rm_diff *d);
void rm_diff_free(struct rm_diff *d);
/* A row's change in points (B's share - A's), self or total. */
double rm_diff_change(const struct rm_diff *d, const struct rm_diff_row *r, int total);
/* The top n rows by self, then by total change, as text. */
void rm_diff_print(FILE *out, const struct rm_diff *d, size_t top, const char *a, const char *b);

/* The whole mode: argv[1] is "--diff". Returns the exit code. */
int rm_diff_main(int argc, char **argv);

#endif

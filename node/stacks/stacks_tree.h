/* SPDX-License-Identifier: MIT */
/*
 * Stacks of many ranks merged into one call-prefix tree (STAT's view of a
 * job), for rocattach-mpi --stacks (issue 23 item 3; the launcher does not
 * use it yet).
 *
 * The seam between the nodes and rank 0 is the folded-stack line, the flame
 * graph tools' format, with the host and the rank as the first two frames:
 *
 *   <host>;rank <rank>;<outermost frame>;...;<innermost frame> <count>
 *
 * A node turns its stack files into such lines (ra_stackfile_fold), sends
 * them to rank 0 as text, and rank 0 adds them to a tree
 * (ra_stack_tree_add_folded). A frame never holds ';' (written as ',').
 * Threads with no stack are one frame in brackets: "[noanswer]",
 * "[blocked]", "[gone]", "[noroom]"; the thread that ran tool_attach is
 * "[attach thread]". Nothing is invented.
 */
#ifndef RA_STACKS_TREE_H
#define RA_STACKS_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "stackfile.h"
#include "symbolize.h"

struct ra_stack_tree;

struct ra_stack_tree *ra_stack_tree_new(void);
void ra_stack_tree_free(struct ra_stack_tree *t);

/* One stack of one rank, outermost frame first, seen count times (threads or samples). */
int ra_stack_tree_add(struct ra_stack_tree *t, long rank, const char *const *frames, size_t n,
		      unsigned long count);

/* One folded line (above); 0, or -1 with the reason in err (the tree is unchanged). */
int ra_stack_tree_add_folded(struct ra_stack_tree *t, const char *line, char *err, size_t errlen);

/*
 * The tree as indented text. One line per run of frames that the same
 * ranks and threads share, so ranks with one whole stack make one line and
 * the odd rank out stands out:
 *   [0-3] 4 threads: _start > __libc_start_main > main
 *     [0-2] 3 threads: MPI_Barrier > ... > poll
 *     [3] 1 thread: compute > stuck_here
 * Children go by thread count (most first), then by frame.
 */
void ra_stack_tree_print(const struct ra_stack_tree *t, FILE *out);

/* The tree as JSON: an array of {frame, ranks ("0-1,3"), threads, children}. NULL: no memory. */
json_t *ra_stack_tree_json(const struct ra_stack_tree *t);

/* Ranks as in --ranks: sorted, runs as "lo-hi", e.g. "0-1,3". Returns snprintf's result. */
int ra_ranks_format(const long *ranks, size_t n, char *buf, size_t len);

/*
 * A node's part: the snapshots (samples = false) or the samples (true) of
 * one stack file as folded lines for host and rank, named by s, written to
 * out. Identical sample stacks are counted together. Returns lines written,
 * or -1 on a write error.
 */
long ra_stackfile_fold(const struct ra_stackfile *f, struct ra_symbolizer *s, const char *host,
		       long rank, bool samples, FILE *out);

/*
 * The samples of one stack file, one line each with its time, for a trace:
 * "<prefix>\t<tid>\t<ns>\t<outermost>;...;<innermost>", ns CLOCK_REALTIME
 * of the process's node. Returns lines written, or -1.
 */
long ra_stackfile_timed(const struct ra_stackfile *f, struct ra_symbolizer *s, const char *prefix,
			FILE *out);

#endif

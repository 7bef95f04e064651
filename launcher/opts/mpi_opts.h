/* SPDX-License-Identifier: MIT */
/* Options of rocattach-mpi. Rank 0 parses and validates; every rank parses the same argv. */
#ifndef RM_OPTS_H
#define RM_OPTS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "node.h"
#include "rocprofv3_opts.h"

/* Exit codes of rocattach-mpi, documented in docs/ and --help. */
enum rm_exit {
	RM_EXIT_OK = 0,		 /* every selected target attached and detached */
	RM_EXIT_ERROR = 1,	 /* internal or MPI error */
	RM_EXIT_USAGE = 2,	 /* bad command line */
	RM_EXIT_NO_TARGETS = 3,	 /* no node found a target */
	RM_EXIT_FAILED = 4,	 /* some targets failed (see the summary) */
	RM_EXIT_INTERRUPTED = 5, /* a signal cut a window short (targets were detached) */
	RM_EXIT_LOST = 6,	 /* a node was lost; its targets were detached by their agents
				  * or at the window's end */
	RM_EXIT_LATE = 7,	 /* a window was off: tools started late, or a tools' window
				  * off the planned length by more than its tolerance */
};

#define RM_MAX_PIDS 4096
#define RM_MAX_JOBS 65536     /* --jobs 1..RM_MAX_JOBS */
#define RM_MAX_WINDOWS 100000 /* --windows D:L:COUNT, COUNT 1..RM_MAX_WINDOWS */
#define RM_MAX_PID INT_MAX    /* --pid and --pid-tree: 1..RM_MAX_PID */

/*
 * --detail: the per-target records the JSON report and the trace keep.
 * Auto (the default): all up to RM_DETAIL_AUTO_MAX targets in the run,
 * failures beyond. The per-node counts and figures are kept at every level.
 */
enum rm_detail {
	RM_DETAIL_AUTO = 0,
	RM_DETAIL_ALL,
	RM_DETAIL_FAILURES, /* every record that is not a clean attach and detach */
	RM_DETAIL_NONE,	    /* per-node counts and figures only */
};
#define RM_DETAIL_AUTO_MAX 10000

/* --fanout: the tree of ranks' width (coord/tree.h). */
#define RM_FANOUT_DEFAULT 32
#define RM_FANOUT_MIN 2
#define RM_FANOUT_MAX 1024

struct rm_opts {
	struct rn_selector sel;
	pid_t pids[RM_MAX_PIDS];
	pid_t trees[RM_MAX_PIDS];
	struct rn_ranks ranks;
	bool have_ranks;
	const char *tools;	   /* NULL: ROCPROF_ATTACH_TOOL_LIBRARY or the default */
	long long duration_ms;	   /* -1: until Enter / SIGINT on rank 0 */
	long long delay_ms;	   /* --windows DELAY */
	int windows;		   /* --windows COUNT, 1 without */
	long long max_window_ms;   /* upper bound of any window */
	long long start_lead_ms;   /* how far ahead rank 0 sets the start; -1 = automatic */
	int jobs;		   /* 0 = automatic */
	long long call_timeout_ms; /* --call-timeout: the longest one remote call may take */
	int fanout;		   /* --fanout: children per rank in the launcher's tree */
	bool inject, dry_run, one_node_per_rank;
	const char *report, *timeline, *trace;
	enum rm_detail detail;	/* --detail; RM_DETAIL_AUTO when not given */
	bool stacks;		/* --stacks: one snapshot of every thread, merged on rank 0 */
	const char *stacks_svg; /* --stacks-svg: the merged tree as SVG (rank 0) */
	int sample_hz;		/* --sample: every thread sampled at this rate, 0: off */
	const char *folded;	/* --folded: the samples as folded lines (rank 0) */
	const char *flamegraph; /* --flamegraph: the samples merged, as SVG (rank 0) */
	bool flame_per_rank;	/* --flamegraph-per-rank: and one SVG per rank */
	const char *pprof;	/* --pprof: the samples as a gzipped pprof profile (rank 0) */
	const char *speedscope; /* --speedscope: the samples as speedscope JSON (rank 0) */
	/*
	 * --late-start: one window with no end; every worker late-starts its
	 * targets at the planned start (rocattach_late_start) and never detaches.
	 */
	bool late_start;
	int verbose;
	bool help, version;
	struct rp3_opts rp3; /* rocprofv3's options, by its names (rank 0 only) */
};

/* Parse; 0, or -1 with a one-line reason (cause and fix) in err. */
int rm_opts_parse(int argc, char **argv, struct rm_opts *o, char *err, size_t len);
void rm_opts_free(struct rm_opts *o);
/*
 * Every output (--report, --timeline, --trace) can be written (ra_outpath_check):
 * rank 0 only, before any target is touched (the paths are rank 0's).
 */
int rm_opts_check_outputs(const struct rm_opts *o, char *err, size_t len);

/* --stacks or --sample: the stack tool is attached. */
static inline bool rm_stacks_on(const struct rm_opts *o)
{
	return o->stacks || o->sample_hz;
}

extern const char rm_usage[];

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The node layer: everything one node does for a cluster-wide attach, with
 * no MPI in it. Find the job's local processes (selectors), read their
 * topology (hwloc), attach and detach them in parallel, and keep one record
 * per target that serializes compactly (for gathering) and to JSON.
 */
#ifndef RN_NODE_H
#define RN_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rocattach/rocattach.h>

#define RN_ERR_MAX 512

/* ------------------------------------------------------------------------ */
/* Rank lists: "0-3,8,10-11". */

struct rn_range {
	long lo, hi;
};

struct rn_ranks {
	struct rn_range *v;
	size_t n;
};

/* The highest rank a list or a process's environment may give. */
#define RN_RANK_MAX INT32_MAX

/* Parse a rank list; 0, or -1 with a one-line reason in err. Ranks are 0..RN_RANK_MAX. */
int rn_ranks_parse(const char *s, struct rn_ranks *out, char *err, size_t errlen);
bool rn_ranks_contains(const struct rn_ranks *r, long rank);
void rn_ranks_free(struct rn_ranks *r);

/* ------------------------------------------------------------------------ */
/* Selectors. */

struct rn_selector {
	/* Sources (their matches are united). */
	pid_t *pids; /* --pid */
	size_t n_pids;
	pid_t *trees; /* --pid-tree: the pid and its descendants */
	size_t n_trees;
	const char *slurm_step; /* --slurm-step JOBID[.STEP]; bare JOBID = every step but ours */
	pid_t mpirun_pid;	/* --mpirun-pid: ranks among its descendants */
	const char
	    *mpi_job; /* --mpi-job ID (PMIX_NAMESPACE or OMPI job id); "" = any MPI job but ours */
	/* Filters (all must hold). Alone, --exe and --uid are also a source over all processes. */
	const char *exe;	      /* --exe NAME: basename of the executable */
	long uid;		      /* --uid, -1 = any */
	const struct rn_ranks *ranks; /* --ranks, NULL = all */
	const char *rank_var;	      /* --rank-var NAME, NULL = the usual ones */
	bool children;		      /* --attach-children: expand each match to its tree */
	/*
	 * Whose processes the sources that name no job or pid reach (--mpi-job
	 * without ID, --exe or --uid alone) and the descendants --attach-children
	 * adds: uid if set, else everyone's with all_users, else the caller's
	 * (the real uid of self). A descendant of the match's own user is kept too.
	 */
	bool all_users; /* --all-users */
	/* Roots for tests on captured trees; NULL = "/proc", "/sys/fs/cgroup". */
	const char *procfs;
	const char *cgroupfs;
	/* Who we are (our own processes and job step are never selected); 0 = getpid(). */
	pid_t self;
};

/* What is known of a target before anything is attached. */
struct rn_topo {
	char cpus[64];	/* CPU binding as a list, "0-3,8"; "" if unknown */
	char numa[32];	/* NUMA nodes of those CPUs, "0" or "0-1" */
	char gpus[128]; /* closest GPUs, comma-separated ("card0(0000:c1:00.0)"), "" if none */
	int n_cpus;
};

enum rn_state {
	RN_FOUND = 0, /* selected, nothing done yet */
	RN_ATTACHED,  /* attached, window open */
	RN_ATTACH_FAILED,
	RN_DETACHED, /* attached then detached: the full success */
	RN_DETACH_FAILED,
	RN_EXITED,	  /* gone before its attach, or between windows */
	RN_STOPPED,	  /* stopped (State T): not attached, or still attached and stopped */
	RN_DIED_ATTACHED, /* ceased to exist with its tools in it (died_ns says when seen) */
	/*
	 * Not attached: every tool of the list declined (its
	 * rocprofiler_configure returned NULL, our agent's NO_TOOLS). No
	 * failure: the tool chose not to profile this process. ROCm's side
	 * cannot tell it from a failure (docs/report.md).
	 */
	RN_DECLINED,
	/*
	 * --late-start: the start ran and the SDK says it initialized. The
	 * tools stay until the process exits: never detached (rn_late).
	 */
	RN_LATE_STARTED,
};

/* --late-start's word of one target (rocattach_late_report_t, cut to the wire). */
struct rn_late {
	bool tried;	     /* rocattach_late_start was called */
	int8_t route;	     /* enum rocattach_late_route */
	int8_t initialized;  /* the SDK's rocprofiler_is_initialized: 1, 0, -1; -2 unknown */
	uint32_t copies;     /* copies of rocprofiler-register mapped */
	uint32_t started;    /* copies whose entry point was called */
	uint64_t planned_ns; /* the planned start (CLOCK_REALTIME), 0: at once */
	uint64_t start_ns;   /* the call: its start and end */
	uint64_t end_ns;
	uint64_t begin_ns; /* the target's start thread: its start and end, 0: unknown */
	uint64_t done_ns;
	uint64_t pause_ns; /* how long one application thread was stopped */
	char sdk[256];	   /* the SDK pinned, "" if none (cut to 255 bytes) */
};

/* Tool outcomes kept per target (enum rocattach_tool_outcome), one per library of the list. */
#define RN_TOOLS_MAX ROCATTACH_TOOLS_MAX

struct rn_target {
	pid_t pid;   /* as this node's launcher sees it */
	pid_t nspid; /* innermost pid namespace's view (containers); == pid if none */
	long rank;   /* job rank from the environment, -1 if none */
	uid_t uid;
	pid_t ppid;
	char exe[64];  /* basename of the executable */
	char job[64];  /* its MPI job's id, as --mpi-job takes it ("" if none) */
	bool listener; /* has a rocp-bg-attach thread */
	int side;      /* enum rocattach_target_side: whose listener (0: unknown) */
	struct rn_topo topo;
	/* Results, filled by the pool. */
	enum rn_state state;
	rocattach_status_t status; /* of the failed step, SUCCESS otherwise */
	int agent_status;
	int windows;				 /* windows completed (attach + detach) */
	uint64_t attach_start_ns, attach_end_ns; /* CLOCK_REALTIME, of the last window */
	uint64_t detach_start_ns, detach_end_ns;
	/*
	 * When the target handed over to the tools (0: unknown). Our agent
	 * measures it; on ROCm's side it is an upper bound (attach_tool_bound,
	 * detach_tool_bound): the end of the entry point's call. See
	 * rocattach_report_t.tool_ns. detach_call_ns: when the detach call
	 * began (the tools surely ran until then).
	 */
	uint64_t attach_tool_ns, detach_tool_ns, detach_call_ns;
	bool attach_tool_bound, detach_tool_bound;
	/*
	 * When the attach's entry point call began (0: unknown). On ROCm's side
	 * the tools ran between it and attach_tool_ns: the lower edge.
	 */
	uint64_t attach_call_ns;
	/* When the attach call was ready to go in: the steps before the call done (not sent). */
	uint64_t attach_ready_ns;
	char message[ROCATTACH_MESSAGE_MAX]; /* the error, "" if none: the library's whole */
	int signal;	  /* the signal that killed it during a call, 0 if none */
	uint64_t died_ns; /* RN_DIED_ATTACHED: CLOCK_REALTIME when it was seen gone */
	bool watchdog;	  /* a watchdog would detach its tools if the launcher died */
	bool timed_out;	  /* a remote call outlived --call-timeout */
	/*
	 * No detach reached it by the planned stop + --call-timeout: it
	 * detached its tools itself, at detach_tool_ns (RN_DETACH_FAILED).
	 */
	bool self_detached;
	uint8_t tool_n; /* libraries in the tool list with an outcome below, 0: unknown */
	uint8_t tools[RN_TOOLS_MAX];
	/*
	 * Late: its attach call returned this long after the window's stop
	 * (CLOCK_REALTIME ns, attach_end_ns - stop), and its tools were detached
	 * at once (rn_window_stop). 0: not late.
	 */
	uint64_t late_ns;
	struct rn_late ls; /* --late-start's word (ls.tried) */
};

/*
 * Find the targets on this node. *out is malloc'd (sorted by pid, no
 * duplicates); 0 targets is not an error. Returns 0, or -1 with a one-line
 * reason (cause and fix) in err, e.g. a selector that cannot be parsed.
 */
int rn_select(const struct rn_selector *sel, struct rn_target **out, size_t *n, char *err,
	      size_t errlen);

/* Fill in each target's topology with hwloc. Returns 0, or -1 with err. */
int rn_topology(struct rn_target *t, size_t n, char *err, size_t errlen);
/*
 * rn_topology on a captured machine, nothing read from this one (tests): the
 * topology an hwloc XML file describes (lstopo --of xml) and each target's
 * binding from the Cpus_allowed_list of procfs/PID/status.
 */
int rn_topology_at(const char *xml, const char *procfs, struct rn_target *t, size_t n, char *err,
		   size_t errlen);

/*
 * Bind the calling thread to CPUs that no target is bound to, if there are
 * any (else leave it alone). Returns the number of CPUs used, 0 if unchanged.
 */
int rn_bind_away(const struct rn_target *t, size_t n);

/* ------------------------------------------------------------------------ */
/* Parallel attach and detach. */

struct rn_pool_opts {
	int jobs;		/* workers; 0 = from the number of targets and cores */
	const char *tools;	/* colon-separated tool libraries (NULL: env/default) */
	const char *const *env; /* extra ROCP* "NAME=VALUE" for the environment buffer */
	/* If set, target t's instead of env (from worker threads: it must only read). */
	const char *const *(*env_of)(const struct rn_target *t, void *arg);
	void *env_arg;
	/*
	 * Add ROCPROF_ATTACH_PID=<t's pid> to each target's extras: the variable
	 * rocprofv3 --attach PID sends (rocprofv3.py, ROCm/rocm-systems 01610ac2),
	 * which must name each target itself.
	 */
	bool attach_pid_env;
	/*
	 * CLOCK_REALTIME at which the tools are handed over (0 = at once):
	 * start_ns for rn_attach_all, stop_ns for rn_detach_all. Every call is
	 * made at once (one worker per target for a common start); the library
	 * keeps each target's hand-over to the time.
	 */
	uint64_t start_ns, stop_ns;
	/*
	 * rn_attach_all: the window's planned stop (CLOCK_REALTIME, 0: none).
	 * A target that gets no detach by then + call_timeout_ms detaches its
	 * tools itself (rocattach_opts_t.planned_stop_ns).
	 */
	uint64_t planned_stop_ns;
	bool inject; /* load the agent into targets without a listener */
	/*
	 * --late-start: each worker waits for start_ns, then calls
	 * rocattach_late_start (no detach ever: RN_LATE_STARTED, or a failure).
	 */
	bool late_start;
	/*
	 * The longest one remote call into a target may take (ms; 0: the
	 * library's default, 10000). rn_detach_all also retries a stopped target
	 * until it resumes, up to this long after stop_ns.
	 */
	unsigned call_timeout_ms;
	/* Progress callback (done so far, total), from worker threads, may be NULL. */
	void (*progress)(size_t done, size_t total, void *user);
	void *user;
};

/*
 * Attach every target in state RN_FOUND (or RN_DETACHED for a next window).
 * Returns how many of the workers wanted could not be created (thread
 * limits): that many fewer attaches were in flight at once. 0: all were.
 */
int rn_attach_all(struct rn_target *t, size_t n, const struct rn_pool_opts *o);
/*
 * Detach every target in state RN_ATTACHED. One found gone is
 * RN_DIED_ATTACHED; one that is stopped is tried again (the others are not
 * held up) until it resumes or until the call timeout after stop_ns, then
 * left RN_STOPPED with its tools attached.
 */
void rn_detach_all(struct rn_target *t, size_t n, const struct rn_pool_opts *o);
/*
 * Fill in the side of each target with a listener (our agent or ROCm's), by
 * reading its objects without stopping it; the lookup is kept for the attach.
 */
void rn_probe_sides(struct rn_target *t, size_t n);
/*
 * A window on its own clock per target: the attaches run on worker threads
 * while the caller goes on (answers its peers, decides the stop). A target
 * whose attach call is stuck, slow or refused holds no other target's
 * start or stop: rn_window_stop detaches every target whose attach has
 * returned, at the stop; one still in its attach call is detached by its
 * worker as soon as the call returns (each call ends by its deadline,
 * call_timeout_ms): at once, and `late` (late_ns) if after the stop.
 *
 * While the window is open, the caller reads a target's record only once
 * rn_window_returned says its attach returned, and only until
 * rn_window_stop; rn_window_close joins every worker, after which every
 * record is the caller's again.
 */
struct rn_window;
/*
 * Attach every target as rn_attach_all does, on worker threads. *short_by:
 * the workers wanted that could not be created (none at all: the attaches
 * ran in this thread before the return). NULL when out of memory: nothing
 * was done (use rn_attach_all).
 */
struct rn_window *rn_window_open(struct rn_target *t, size_t n, const struct rn_pool_opts *o,
				 int *short_by);
/* Has target i's attach call returned (or was it never made)? */
bool rn_window_returned(struct rn_window *w, size_t i);
/* Targets whose attach call has not returned yet. */
size_t rn_window_pending(struct rn_window *w);
/*
 * The stop: o->stop_ns (0: now). Detaches every target whose attach
 * returned, as rn_detach_all does, and returns when those are done; the
 * ones still in their attach call are detached by their workers when it
 * returns. A second stop does nothing.
 */
void rn_window_stop(struct rn_window *w, const struct rn_pool_opts *o);
/*
 * Join every worker (each call ends by its deadline), then retry the
 * stopped ones as rn_detach_all does, and free w. After rn_window_stop.
 */
void rn_window_close(struct rn_window *w);
/* Worker count that rn_*_all will use for n targets. */
int rn_pool_jobs(const struct rn_pool_opts *o, size_t n);

/* ------------------------------------------------------------------------ */
/* Liveness: is the job still there? (watch.c) */

/*
 * A watch over a node's targets (one pidfd each, /proc where pidfd_open
 * fails), so the launcher learns when its job has ended: it is not the
 * targets' parent and cannot wait for them, nor learn how they ended. NULL
 * when out of memory (then everything counts as alive).
 */
struct rn_watch;
struct rn_watch *rn_watch_open(const struct rn_target *t, size_t n);
void rn_watch_close(struct rn_watch *w);
/* How many of the watched targets are still running (a zombie is gone). */
size_t rn_watch_alive(struct rn_watch *w);
bool rn_watch_gone(const struct rn_watch *w, size_t i);
/*
 * rn_watch_alive, and every gone target that is not attached (found, or
 * detached after a window) becomes RN_EXITED with a message, so that it is
 * not attached again; an attached one becomes RN_DIED_ATTACHED, died_ns
 * now. t is the array the watch was opened on.
 */
size_t rn_watch_mark(struct rn_watch *w, struct rn_target *t, size_t n);

/* ------------------------------------------------------------------------ */
/* Records. */

/*
 * Compact binary form of a node's records for MPI gathering: fixed-size,
 * little-endian-independent only within one cluster (native order), with a
 * header carrying a magic and version. rn_pack returns the bytes needed
 * (call with buf NULL to size it).
 */
size_t rn_pack(const char *host, const struct rn_target *t, size_t n, void *buf, size_t len);
/* Unpack; 0 or -1 if malformed. *t is malloc'd. host must hold 256 bytes. */
int rn_unpack(const void *buf, size_t len, char *host, struct rn_target **t, size_t *n);

const char *rn_state_name(enum rn_state s);
/*
 * Did this attach fail because of the tool, which no later window can
 * change? The target's entry point set up no tool (agent status 6,
 * ROCPROFILER_ERROR: a library that does not load, has no
 * rocprofiler_configure, fails initialize; or 1, NO_TOOLS: every tool
 * declined, or every tool finalized itself), or the library's
 * checks refused the tool path before any ptrace (missing, not a shared
 * object for this machine, replaceable by others, an empty list).
 */
bool rn_tool_failed(const struct rn_target *t);
/* An attach that failed because every tool of the list declined (our agent says so). */
bool rn_all_declined(const struct rn_target *t);
/* Did a library of the tool list fail in this target (its tools[]), whatever its state? */
bool rn_some_tool_failed(const struct rn_target *t);
/*
 * The window a target's tools got, hand-over to hand-back; on ROCm's side
 * (*bound set) a lower bound: the attach call's end to the detach call's
 * start. 0 if it did not get both ends.
 */
uint64_t rn_window_ns(const struct rn_target *t, bool *bound);
/* "SIGSEGV" (or "signal 70"), written into buf. */
const char *rn_signal_name(int sig, char *buf, size_t len);
/* "loaded", "declined", "failed", "unknown" (enum rocattach_tool_outcome). */
const char *rn_tool_outcome_name(int outcome);
/* "agent", "rocm", or NULL for an unknown side. */
const char *rn_side_name(int side);

/* One target as a JSON object (jansson; the caller owns the reference). */
struct json_t;
struct json_t *rn_target_to_json(const struct rn_target *t);
/*
 * A JSON string of text from another process (an exe name, a message): its
 * first width bytes at most ((size_t)-1: up to its NUL), any length. jansson
 * refuses what is not UTF-8: then every non-ASCII byte becomes '?'. NULL when
 * out of memory.
 */
struct json_t *rn_json_str(const char *s, size_t width);

#endif

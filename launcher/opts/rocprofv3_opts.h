/* SPDX-License-Identifier: MIT */
/*
 * rocprofv3's collection and output options, by rocprofv3's names, shared by
 * rocattach and rocattach-mpi (rocattach-slurm passes them through). Each
 * option becomes the ROCP* variables rocprofv3 --attach sends for it; the
 * table is data in rocprofv3_opts.c, with the upstream file and commit read.
 */
#ifndef RA_ROCPROFV3_OPTS_H
#define RA_ROCPROFV3_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* getopt_long values of these options start here (the programs' own stay below). */
#define RP3_OPT_BASE 0x1000
/* Short options of rocprofv3 the programs take as well (none clashes with theirs). */
#define RP3_SHORT_OPTS "o:f:u:A:P:TSDsrM"

#define RP3_TEXT_MAX 4096
#define RP3_ENV_MAX 64

/* The boolean options that feed a variable or expand to others (rocprofv3's names). */
enum rp3_flag {
	RP3_HIP_COMPILER_TRACE,
	RP3_HIP_RUNTIME_TRACE,
	RP3_HSA_CORE_TRACE,
	RP3_HSA_AMD_TRACE,
	RP3_HSA_IMAGE_TRACE,
	RP3_HSA_FINALIZER_TRACE,
	RP3_MARKER_TRACE,
	RP3_RCCL_TRACE,
	RP3_ROCDECODE_TRACE,
	RP3_ROCJPEG_TRACE,
	RP3_KERNEL_TRACE,
	RP3_MEMORY_COPY_TRACE,
	RP3_MEMORY_ALLOCATION_TRACE,
	RP3_KFD_PAGE_MIGRATION_TRACE,
	RP3_KFD_PAGE_MAPPING_TRACE,
	RP3_KFD_QUEUE_TRACE,
	RP3_KFD_DROPPED_EVENTS_TRACE,
	RP3_SCRATCH_MEMORY_TRACE,
	RP3_GROUP_BY_QUEUE,
	RP3_HIP_GRAPH_TRACE,
	RP3_HIP_EVENT_TRACE,
	RP3_OMPT_TRACE, /* its categories, if any, in RP3_OMPT_OPERATIONS */
	RP3_ROCSHMEM_TRACE,
	RP3_HIPFILE_TRACE,
	/* Aggregates: no variable of their own (--hip-runtime-trace has one, and covers two). */
	RP3_SYS_TRACE,
	RP3_RUNTIME_TRACE,
	RP3_HIP_TRACE,
	RP3_HSA_TRACE,
	RP3_KFD_TRACE,
	/* Other switches. */
	RP3_STATS,
	RP3_SUMMARY,
	RP3_SUMMARY_PER_DOMAIN,
	RP3_MANGLED_KERNELS,
	RP3_TRUNCATE_KERNELS,
	RP3_KERNEL_RENAME,
	RP3_SELECTED_REGIONS,
	RP3_SELECTED_REGIONS_REF_COUNT,
	RP3_OUTPUT_CONFIG,
	RP3_PC_SAMPLING_BETA_ENABLED,
	RP3_DISABLE_SIGNAL_HANDLERS,
	RP3_PROCESS_SYNC,
	RP3_ATTACH_SYNC_OUTPUT, /* rocprofv3 >= ROCm/rocm-systems#3179, see rocprofv3_opts.c */
	RP3_NFLAGS
};

/* Valued options (one value, or several words for the ones rocprofv3 takes as nargs='+'). */
enum rp3_value {
	RP3_OUTPUT_FILE,
	RP3_OUTPUT_DIRECTORY,
	RP3_OUTPUT_FORMAT, /* several, joined with ',' */
	RP3_LOG_LEVEL,
	RP3_PMC,	    /* the words of one --pmc, joined with ' ' */
	RP3_SUMMARY_GROUPS, /* several, joined with "##@@##" */
	RP3_SUMMARY_OUTPUT_FILE,
	RP3_SUMMARY_UNITS,
	RP3_KERNEL_INCLUDE_REGEX,
	RP3_KERNEL_EXCLUDE_REGEX,
	RP3_KERNEL_ITERATION_RANGE, /* several, joined with ", " */
	RP3_PC_SAMPLING_UNIT,
	RP3_PC_SAMPLING_METHOD,
	RP3_PC_SAMPLING_INTERVAL,
	RP3_AGENT_INDEX,
	RP3_MINIMUM_OUTPUT_DATA,
	RP3_PERFETTO_BACKEND,
	RP3_PERFETTO_BUFFER_SIZE,
	RP3_PERFETTO_SHMEM_SIZE_HINT,
	RP3_ROCM_ROOT,	     /* where its tool is looked for (not sent) */
	RP3_OMPT_OPERATIONS, /* --ompt-trace's categories, joined with ',' */
	RP3_NVALUES
};

struct rp3_opts {
	signed char flag[RP3_NFLAGS]; /* -1 not given, 0 false, 1 true */
	char value[RP3_NVALUES][RP3_TEXT_MAX];
	bool has[RP3_NVALUES];
	int pmc_count;	     /* how many --pmc were given (more than one is multi-pass) */
	bool any;	     /* a rocprofv3 option was given */
	const char *refused; /* the first option attach mode refuses, for the message */
};

/* Where the options' variables come from besides the options (tests pass their own). */
struct rp3_ctx {
	const char *(*getenv)(const char *name, void *arg); /* the launcher's environment */
	void *arg;
	const char *cwd;	 /* rocprofv3's default output directory */
	const char *tool;	 /* the resolved path of librocprofiler-sdk-tool.so */
	bool per_process_layout; /* no -o: ask for %hostname%/%pid% (rocattach-mpi) */
	int pid;	       /* > 0: ROCPROF_ATTACH_PID (rocattach; rocattach-mpi: per target) */
	long long duration_ms; /* >= 0: ROCPROF_ATTACH_DURATION */
	int children;	       /* >= 0: ROCPROF_ATTACH_CHILDREN ("1" or "0") */
};

/* The variables to send, "NAME=VALUE", in rocprofv3's order (free with rp3_env_free). */
struct rp3_env {
	size_t n;
	char *kv[RP3_ENV_MAX];
};

void rp3_init(struct rp3_opts *r);

/*
 * `own` followed by rocprofv3's long options, NULL-terminated (free()). NULL
 * when out of memory.
 */
struct option *rp3_long_options(const struct option *own);

/*
 * One getopt_long result c (optarg, optind as getopt left them). 1 if c is
 * not one of these options; 0 taken; -1 with a one-line reason in err. Words
 * that follow an option taking several (--pmc A B, --output-format csv json)
 * or a switch's BOOL (--kernel-trace false) are taken by moving optind.
 */
int rp3_parse(int c, int argc, char **argv, struct rp3_opts *r, char *err, size_t len);

/*
 * After parsing: what attach mode refuses (rocprofv3's reasons), and the
 * values rocprofv3 checks. 0, or -1 with the reason in err.
 * pc_beta_env: ROCPROFILER_PC_SAMPLING_BETA_ENABLED is set in the launcher's environment.
 */
int rp3_check(const struct rp3_opts *r, bool pc_beta_env, char *err, size_t len);

/* rocprofv3's variables for r (rocprofv3's defaults with no option given). 0, or -1 (ENOMEM). */
int rp3_env_build(const struct rp3_opts *r, const struct rp3_ctx *ctx, struct rp3_env *out);
void rp3_env_free(struct rp3_env *e);

/*
 * The options rocprofv3 keeps from the first attach (those its reattach
 * check compares), as a canonical string: "" when none. Two runs with
 * different strings cannot share a process.
 */
void rp3_collection_key(const struct rp3_opts *r, char *out, size_t len);

/*
 * Find librocprofiler-sdk-tool.so as rocprofv3 does: under ROOT/lib/rocprofiler-sdk/
 * (ROOT: --rocm-root, else ROCM_PATH, else /opt/rocm), the name, then .so.1.
 * 0 and the path; -1 and, in err, a line naming every place looked at.
 */
int rp3_find_tool(const struct rp3_opts *r, const char *rocm_path, char *path, size_t plen,
		  char *err, size_t elen);

/* The tool list names rocprofv3's tool (a library named librocprofiler-sdk-tool.so*). */
bool rp3_is_sdk_tool(const char *list);

/*
 * A word that argparse takes for an option, not a value: it starts with '-'
 * and is neither "-" nor a negative number (rocprofv3 has no option that
 * looks like one).
 */
bool rp3_optlike(const char *s);

/*
 * An option given, as a separate word, a value that looks like an option
 * (--pmc -d 300, -d --foo): true and the line in err (exit 2). opt is the
 * option as written ("--pmc", "-d").
 */
bool rp3_value_is_option(const char *opt, const char *v, char *err, size_t len);

/*
 * -d given a value that is not whole milliseconds but looks like a path: the
 * line pointing to --output-directory. false when it does not look like one.
 */
bool rp3_d_is_path(const char *v, const char *prog, char *err, size_t len);

/*
 * The launcher's side (rocprofv3_env.c): whether rocprofv3's variables go,
 * and which. They go when its tool is used (no -t and no
 * ROCPROF_ATTACH_TOOL_LIBRARY, or a list naming it) or any of its options is
 * given; then without a tool named, the tool is looked for (rp3_find_tool).
 * tools: the -t list or NULL. On success *tools_out is the list to attach
 * (tools, the environment's, or tool_buf with the found path) and env holds
 * the variables (empty when none go). -1: err says why (the tool is missing).
 */
/*
 * Where rp3_prepare leaves the run's collection options (rp3_collection_key)
 * for the reattach check of every node (node/rp3_state.h); not sent to targets.
 */
#define RP3_OPTIONS_ENV "ROCATTACH_ROCPROFV3_OPTIONS"

/*
 * The variable --attach-sync-output sends: with it "1", rocprofv3's tool
 * writes its output before tool_detach returns, so the detach call holds
 * until the output is written (ROCm/rocm-systems#3179).
 */
#define RP3_SYNC_OUTPUT_ENV "ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC"

/*
 * The tools' output is written within the detach calls: this process sends
 * RP3_SYNC_OUTPUT_ENV=1 (given by --attach-sync-output, by hand, or in the
 * plan rank 0 sent), as the tool reads it.
 */
bool rp3_sync_output(void);

struct rp3_setup {
	const char *tools;	 /* -t, or NULL */
	bool per_process_layout; /* see struct rp3_ctx */
	int pid;
	long long duration_ms;
	bool children; /* --attach-children */
	const char *prog;
};
int rp3_prepare(const struct rp3_opts *r, const struct rp3_setup *s, char *tool_buf, size_t tlen,
		const char **tools_out, struct rp3_env *env, char *err, size_t len);

/*
 * ROCP_TOOL_LIBRARIES never crosses in attach mode, as in AMD's rocprof-attach:
 * if set here, prog says so once on stderr and it is unset (so neither the
 * plan nor this process's ROCP* variables carry it).
 */
void rp3_drop_tool_libraries(const char *prog);

/* setenv every variable of env here (the library sends this process's ROCP* ones). */
int rp3_apply(const struct rp3_env *env);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The variables rocprofv3 --attach sends for its options (rocprofv3_opts.h).
 *
 * Read from ROCm/rocm-systems, projects/rocprofiler-sdk/source/bin/rocprofv3.py
 * at commit 01610ac2 (the newest stored; 210d1ace before), function run(), with
 * --pid set. Written from what it does, not copied:
 * - ROCPROFILER_LIBRARY_CTOR=1 always; ROCPROF_OUTPUT_FILE_NAME only with -o
 *   (or its variable set); ROCPROF_OUTPUT_PATH (--output-directory, its
 *   variable, else the working directory); ROCPROF_OUTPUT_CONFIG_FILE=1 with
 *   --output-config; ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC "1" or "0" when
 *   --attach-sync-output is given (true or false), nothing when not;
 *   ROCPROF_OUTPUT_FORMAT: the formats joined with ',' ("rocpd" by
 *   default), appended with ',' to a value already set.
 * - Aggregates, in this order, each turning on what was not given:
 *   --sys-trace: --hip-trace, --hsa-trace, marker, kernel, --kfd-trace,
 *   memory copy, memory allocation, scratch memory, rccl, ompt, rocdecode,
 *   rocjpeg, rocshmem, hipfile and hip event; --runtime-trace: the same with
 *   --hip-runtime-trace in place of --hip-trace and --hsa-trace; then
 *   --hip-trace: the compiler and runtime APIs; --hip-runtime-trace: hip
 *   graph and hip event ("HIP graphs and HIP events are part of the HIP
 *   runtime"); --hsa-trace: its four APIs; --kfd-trace: its four events.
 * - Every tracing switch true sends ROCPROF_<VAR>=1 (trace_vars below, in
 *   rocprofv3's order); false or absent sends nothing. --ompt-trace with
 *   categories also sends ROCPROF_OMPT_TRACE_OPERATIONS (joined with ',').
 * - --stats, --summary, --summary-per-domain, --truncate-kernels,
 *   --selected-regions(-ref-count): "1" when true; --mangled-kernels:
 *   ROCPROF_DEMANGLE_KERNELS=0; --summary without --summary-output-file:
 *   ROCPROF_STATS_SUMMARY_OUTPUT=stderr (stdout/stderr lowercased);
 *   --summary-groups joined with "##@@##".
 * - ROCPROF_ATTACH_TOOL_LIBRARY (the tool); --log-level L (not env or
 *   config): ROCPROF_, ROCPROFILER_ and ROCTX_LOG_LEVEL; --kernel-rename:
 *   "1" when true; --perfetto-buffer-size, --perfetto-shmem-size-hint
 *   (_KB) and --perfetto-backend as given. (--perfetto-buffer-fill-policy
 *   is read there under another name, perfetto_fill_policy, so it sends
 *   nothing: we do not take it.)
 * - With --pid: ROCPROF_ATTACH_PID (the pid given), ROCPROF_ATTACH_DURATION
 *   (only with --attach-duration-msec), ROCPROF_ATTACH_CHILDREN ("1" unless
 *   --attach-children=false). rocprof-attach reads the last two
 *   (rocprof-attach.py at 55ab7830: children choose rocattach_attach_tree);
 *   all three cross into the target with the rest. rocattach-mpi sends
 *   ROCPROF_ATTACH_PID per target, each target's own pid (node/pool.c):
 *   rocprofv3 gives each process of a tree the root's.
 * - Kernel filters: include and exclude regex, the iteration ranges joined
 *   with ", ", --agent-index.
 * - --pmc A B: ROCPROF_COUNTER_COLLECTION=1, ROCPROF_COUNTERS="pmc: A B".
 * - PC sampling: ROCPROFILER_PC_SAMPLING_BETA_ENABLED=1 with its switch,
 *   then unit, method and interval.
 * - --disable-signal-handlers: ROCPROF_SIGNAL_HANDLERS the opposite, "0"/"1";
 *   --process-sync "1"/"0"; --minimum-output-data KB: _BYTES, times 1024.
 * ROCP_TOOL_LIBRARIES, which rocprofv3 appends the tool to, is not sent:
 * rocprof-attach (55ab7830) removes it before attaching ("ignoring
 * ROCP_TOOL_LIBRARIES=... in attach mode"), and so do we
 * (rp3_drop_tool_libraries). LD_LIBRARY_PATH does not start with ROCP, so
 * it never crosses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rocprofv3_opts.h"

/* Switch -> the variable its tool reads, in rocprofv3's order (01610ac2). */
static const struct {
	int flag;
	const char *var;
} trace_vars[] = {
    {RP3_HIP_COMPILER_TRACE, "ROCPROF_HIP_COMPILER_API_TRACE"},
    {RP3_HIP_RUNTIME_TRACE, "ROCPROF_HIP_RUNTIME_API_TRACE"},
    {RP3_HSA_CORE_TRACE, "ROCPROF_HSA_CORE_API_TRACE"},
    {RP3_HSA_AMD_TRACE, "ROCPROF_HSA_AMD_EXT_API_TRACE"},
    {RP3_HSA_IMAGE_TRACE, "ROCPROF_HSA_IMAGE_EXT_API_TRACE"},
    {RP3_HSA_FINALIZER_TRACE, "ROCPROF_HSA_FINALIZER_EXT_API_TRACE"},
    {RP3_MARKER_TRACE, "ROCPROF_MARKER_API_TRACE"},
    {RP3_RCCL_TRACE, "ROCPROF_RCCL_API_TRACE"},
    {RP3_OMPT_TRACE, "ROCPROF_OMPT_TRACE"},
    {RP3_ROCDECODE_TRACE, "ROCPROF_ROCDECODE_API_TRACE"},
    {RP3_ROCJPEG_TRACE, "ROCPROF_ROCJPEG_API_TRACE"},
    {RP3_ROCSHMEM_TRACE, "ROCPROF_ROCSHMEM_API_TRACE"},
    {RP3_HIPFILE_TRACE, "ROCPROF_HIPFILE_API_TRACE"},
    {RP3_KERNEL_TRACE, "ROCPROF_KERNEL_TRACE"},
    {RP3_HIP_GRAPH_TRACE, "ROCPROF_HIP_GRAPH_TRACE"},
    {RP3_MEMORY_COPY_TRACE, "ROCPROF_MEMORY_COPY_TRACE"},
    {RP3_MEMORY_ALLOCATION_TRACE, "ROCPROF_MEMORY_ALLOCATION_TRACE"},
    {RP3_KFD_PAGE_MIGRATION_TRACE, "ROCPROF_KFD_PAGE_MIGRATION_TRACE"},
    {RP3_KFD_PAGE_MAPPING_TRACE, "ROCPROF_KFD_PAGE_MAPPING_TRACE"},
    {RP3_KFD_QUEUE_TRACE, "ROCPROF_KFD_QUEUE_TRACE"},
    {RP3_KFD_DROPPED_EVENTS_TRACE, "ROCPROF_KFD_DROPPED_EVENTS_TRACE"},
    {RP3_SCRATCH_MEMORY_TRACE, "ROCPROF_SCRATCH_MEMORY_TRACE"},
    {RP3_HIP_EVENT_TRACE, "ROCPROF_HIP_EVENT_TRACE"},
    {RP3_GROUP_BY_QUEUE, "ROCPROF_GROUP_BY_QUEUE"},
};

/* What each aggregate turns on when not given, applied in this order (01610ac2). */
#define RUNTIME_COMMON                                                                             \
	RP3_MARKER_TRACE, RP3_KERNEL_TRACE, RP3_KFD_TRACE, RP3_MEMORY_COPY_TRACE,                  \
	    RP3_MEMORY_ALLOCATION_TRACE, RP3_SCRATCH_MEMORY_TRACE, RP3_RCCL_TRACE, RP3_OMPT_TRACE, \
	    RP3_ROCDECODE_TRACE, RP3_ROCJPEG_TRACE, RP3_ROCSHMEM_TRACE, RP3_HIPFILE_TRACE,         \
	    RP3_HIP_EVENT_TRACE
static const struct {
	int agg;
	int covers[16];
} aggregates[] = {
    {RP3_SYS_TRACE, {RP3_HIP_TRACE, RP3_HSA_TRACE, RUNTIME_COMMON, -1}},
    {RP3_RUNTIME_TRACE, {RP3_HIP_RUNTIME_TRACE, RUNTIME_COMMON, -1}},
    {RP3_HIP_TRACE, {RP3_HIP_COMPILER_TRACE, RP3_HIP_RUNTIME_TRACE, -1}},
    {RP3_HIP_RUNTIME_TRACE, {RP3_HIP_GRAPH_TRACE, RP3_HIP_EVENT_TRACE, -1}},
    {RP3_HSA_TRACE,
     {RP3_HSA_CORE_TRACE, RP3_HSA_AMD_TRACE, RP3_HSA_IMAGE_TRACE, RP3_HSA_FINALIZER_TRACE, -1}},
    {RP3_KFD_TRACE,
     {RP3_KFD_PAGE_MIGRATION_TRACE, RP3_KFD_PAGE_MAPPING_TRACE, RP3_KFD_QUEUE_TRACE,
      RP3_KFD_DROPPED_EVENTS_TRACE, -1}},
};

static bool positive(const char *s, long long *v)
{
	char *end;

	*v = 0;
	if (!s || *s < '0' || *s > '9')
		return false;
	*v = strtoll(s, &end, 10);
	return !*end;
}

static int put(struct rp3_env *e, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 2;

	for (size_t i = 0; i < e->n; i++) {
		/* A name set twice keeps its first place and takes the last value. */
		if (!strncmp(e->kv[i], name, strlen(name)) && e->kv[i][strlen(name)] == '=') {
			char *s = malloc(n);

			if (!s)
				return -1;
			snprintf(s, n, "%s=%s", name, value);
			free(e->kv[i]);
			e->kv[i] = s;
			return 0;
		}
	}
	if (e->n >= RP3_ENV_MAX || !(e->kv[e->n] = malloc(n)))
		return -1;
	snprintf(e->kv[e->n++], n, "%s=%s", name, value);
	return 0;
}

static const char *env_of(const struct rp3_ctx *ctx, const char *name)
{
	const char *v = ctx->getenv ? ctx->getenv(name, ctx->arg) : NULL;

	return v && *v ? v : NULL;
}

/* A value appended with sep to the one already set (ROCPROF_OUTPUT_FORMAT). */
static int put_appended(struct rp3_env *e, const struct rp3_ctx *ctx, const char *name,
			const char *value, char sep)
{
	const char *cur = env_of(ctx, name);
	char buf[2 * RP3_TEXT_MAX];

	if (!cur)
		return put(e, name, value);
	snprintf(buf, sizeof(buf), "%s%c%s", cur, sep, value);
	return put(e, name, buf);
}

static void expand(const struct rp3_opts *r, signed char *f)
{
	memcpy(f, r->flag, RP3_NFLAGS);
	for (size_t a = 0; a < sizeof(aggregates) / sizeof(aggregates[0]); a++) {
		if (f[aggregates[a].agg] != 1)
			continue;
		for (const int *c = aggregates[a].covers; *c >= 0; c++)
			if (f[*c] < 0)
				f[*c] = 1;
	}
}

static int put_output(const struct rp3_opts *r, const struct rp3_ctx *ctx, struct rp3_env *e)
{
	const char *file = r->has[RP3_OUTPUT_FILE] ? r->value[RP3_OUTPUT_FILE]
						   : env_of(ctx, "ROCPROF_OUTPUT_FILE_NAME");
	const char *dir = r->has[RP3_OUTPUT_DIRECTORY] ? r->value[RP3_OUTPUT_DIRECTORY]
						       : env_of(ctx, "ROCPROF_OUTPUT_PATH");

	if (!file && ctx->per_process_layout)
		file = "%hostname%/%pid%";
	if (file && put(e, "ROCPROF_OUTPUT_FILE_NAME", file))
		return -1;
	if (put(e, "ROCPROF_OUTPUT_PATH", dir ? dir : ctx->cwd ? ctx->cwd : "."))
		return -1;
	if (r->flag[RP3_OUTPUT_CONFIG] == 1 && put(e, "ROCPROF_OUTPUT_CONFIG_FILE", "1"))
		return -1;
	/* Given, it is sent either way: "1" or "0" (01610ac2). */
	if (r->flag[RP3_ATTACH_SYNC_OUTPUT] >= 0 &&
	    put(e, RP3_SYNC_OUTPUT_ENV, r->flag[RP3_ATTACH_SYNC_OUTPUT] ? "1" : "0"))
		return -1;
	return put_appended(e, ctx, "ROCPROF_OUTPUT_FORMAT",
			    r->has[RP3_OUTPUT_FORMAT] ? r->value[RP3_OUTPUT_FORMAT] : "rocpd", ',');
}

static int put_stats(const struct rp3_opts *r, struct rp3_env *e)
{
	const char *out =
	    r->has[RP3_SUMMARY_OUTPUT_FILE] ? r->value[RP3_SUMMARY_OUTPUT_FILE] : NULL;
	int bad = 0;

	if (r->flag[RP3_SUMMARY] == 1 && !out)
		out = "stderr";
	else if (r->flag[RP3_SUMMARY] == 1 && !strcasecmp(out, "stdout"))
		out = "stdout";
	else if (r->flag[RP3_SUMMARY] == 1 && !strcasecmp(out, "stderr"))
		out = "stderr";
	if (r->flag[RP3_STATS] == 1)
		bad |= put(e, "ROCPROF_STATS", "1");
	if (r->flag[RP3_SUMMARY] == 1)
		bad |= put(e, "ROCPROF_STATS_SUMMARY", "1");
	if (r->has[RP3_SUMMARY_UNITS])
		bad |= put(e, "ROCPROF_STATS_SUMMARY_UNITS", r->value[RP3_SUMMARY_UNITS]);
	if (out)
		bad |= put(e, "ROCPROF_STATS_SUMMARY_OUTPUT", out);
	if (r->has[RP3_SUMMARY_GROUPS])
		bad |= put(e, "ROCPROF_STATS_SUMMARY_GROUPS", r->value[RP3_SUMMARY_GROUPS]);
	if (r->flag[RP3_SUMMARY_PER_DOMAIN] == 1)
		bad |= put(e, "ROCPROF_STATS_SUMMARY_PER_DOMAIN", "1");
	if (r->flag[RP3_MANGLED_KERNELS] == 1)
		bad |= put(e, "ROCPROF_DEMANGLE_KERNELS", "0");
	if (r->flag[RP3_TRUNCATE_KERNELS] == 1)
		bad |= put(e, "ROCPROF_TRUNCATE_KERNELS", "1");
	if (r->flag[RP3_SELECTED_REGIONS] == 1)
		bad |= put(e, "ROCPROF_SELECTED_REGIONS", "1");
	if (r->flag[RP3_SELECTED_REGIONS_REF_COUNT] == 1)
		bad |= put(e, "ROCPROF_SELECTED_REGIONS_REF_COUNT", "1");
	return bad;
}

static int put_attach(const struct rp3_opts *r, const struct rp3_ctx *ctx, struct rp3_env *e)
{
	static const char *const log_vars[] = {"ROCPROF_LOG_LEVEL", "ROCPROFILER_LOG_LEVEL",
					       "ROCTX_LOG_LEVEL"};
	const char *lvl = r->value[RP3_LOG_LEVEL];
	char num[32];
	int bad = 0;

	if (ctx->tool)
		bad |= put(e, "ROCPROF_ATTACH_TOOL_LIBRARY", ctx->tool);
	for (int i = 0;
	     r->has[RP3_LOG_LEVEL] && strcmp(lvl, "env") && strcmp(lvl, "config") && i < 3; i++)
		bad |= put(e, log_vars[i], lvl);
	if (r->flag[RP3_KERNEL_RENAME] == 1)
		bad |= put(e, "ROCPROF_KERNEL_RENAME", "1");
	if (r->has[RP3_PERFETTO_BUFFER_SIZE])
		bad |=
		    put(e, "ROCPROF_PERFETTO_BUFFER_SIZE_KB", r->value[RP3_PERFETTO_BUFFER_SIZE]);
	if (r->has[RP3_PERFETTO_SHMEM_SIZE_HINT])
		bad |= put(e, "ROCPROF_PERFETTO_SHMEM_SIZE_HINT_KB",
			   r->value[RP3_PERFETTO_SHMEM_SIZE_HINT]);
	if (r->has[RP3_PERFETTO_BACKEND])
		bad |= put(e, "ROCPROF_PERFETTO_BACKEND", r->value[RP3_PERFETTO_BACKEND]);
	if (ctx->pid > 0) {
		snprintf(num, sizeof(num), "%d", ctx->pid);
		bad |= put(e, "ROCPROF_ATTACH_PID", num);
	}
	if (ctx->duration_ms >= 0) {
		snprintf(num, sizeof(num), "%lld", ctx->duration_ms);
		bad |= put(e, "ROCPROF_ATTACH_DURATION", num);
	}
	if (ctx->children >= 0)
		bad |= put(e, "ROCPROF_ATTACH_CHILDREN", ctx->children ? "1" : "0");
	return bad;
}

static int put_filters(const struct rp3_opts *r, struct rp3_env *e)
{
	int bad = 0;

	if (r->value[RP3_KERNEL_INCLUDE_REGEX][0])
		bad |= put(e, "ROCPROF_KERNEL_FILTER_INCLUDE_REGEX",
			   r->value[RP3_KERNEL_INCLUDE_REGEX]);
	if (r->value[RP3_KERNEL_EXCLUDE_REGEX][0])
		bad |= put(e, "ROCPROF_KERNEL_FILTER_EXCLUDE_REGEX",
			   r->value[RP3_KERNEL_EXCLUDE_REGEX]);
	if (r->has[RP3_KERNEL_ITERATION_RANGE])
		bad |= put(e, "ROCPROF_KERNEL_FILTER_RANGE", r->value[RP3_KERNEL_ITERATION_RANGE]);
	if (r->has[RP3_AGENT_INDEX])
		bad |= put(e, "ROCPROF_AGENT_INDEX", r->value[RP3_AGENT_INDEX]);
	return bad;
}

static int put_pmc_pc(const struct rp3_opts *r, struct rp3_env *e)
{
	char counters[RP3_TEXT_MAX + 8], num[32];
	long long v;
	int bad = 0;

	if (r->has[RP3_PMC] && r->value[RP3_PMC][0]) {
		snprintf(counters, sizeof(counters), "pmc: %s", r->value[RP3_PMC]);
		bad |= put(e, "ROCPROF_COUNTER_COLLECTION", "1");
		bad |= put(e, "ROCPROF_COUNTERS", counters);
	}
	if (r->has[RP3_PC_SAMPLING_UNIT] || r->has[RP3_PC_SAMPLING_METHOD] ||
	    r->has[RP3_PC_SAMPLING_INTERVAL]) {
		if (r->flag[RP3_PC_SAMPLING_BETA_ENABLED] == 1)
			bad |= put(e, "ROCPROFILER_PC_SAMPLING_BETA_ENABLED", "1");
		bad |= put(e, "ROCPROF_PC_SAMPLING_UNIT", r->value[RP3_PC_SAMPLING_UNIT]);
		bad |= put(e, "ROCPROF_PC_SAMPLING_METHOD", r->value[RP3_PC_SAMPLING_METHOD]);
		positive(r->value[RP3_PC_SAMPLING_INTERVAL], &v);
		snprintf(num, sizeof(num), "%lld", v);
		bad |= put(e, "ROCPROF_PC_SAMPLING_INTERVAL", num);
	}
	if (r->flag[RP3_DISABLE_SIGNAL_HANDLERS] >= 0)
		bad |= put(e, "ROCPROF_SIGNAL_HANDLERS",
			   r->flag[RP3_DISABLE_SIGNAL_HANDLERS] ? "0" : "1");
	if (r->flag[RP3_PROCESS_SYNC] >= 0)
		bad |= put(e, "ROCPROF_PROCESS_SYNC", r->flag[RP3_PROCESS_SYNC] ? "1" : "0");
	if (r->has[RP3_MINIMUM_OUTPUT_DATA] && positive(r->value[RP3_MINIMUM_OUTPUT_DATA], &v) &&
	    v > 0) {
		snprintf(num, sizeof(num), "%lld", v * 1024);
		bad |= put(e, "ROCPROF_MINIMUM_OUTPUT_BYTES", num);
	}
	return bad;
}

int rp3_env_build(const struct rp3_opts *r, const struct rp3_ctx *ctx, struct rp3_env *e)
{
	signed char f[RP3_NFLAGS];
	int bad = 0;

	memset(e, 0, sizeof(*e));
	expand(r, f);
	bad |= put(e, "ROCPROFILER_LIBRARY_CTOR", "1");
	bad |= put_output(r, ctx, e);
	for (size_t i = 0; i < sizeof(trace_vars) / sizeof(trace_vars[0]); i++)
		if (f[trace_vars[i].flag] == 1)
			bad |= put(e, trace_vars[i].var, "1");
	if (f[RP3_OMPT_TRACE] == 1 && r->value[RP3_OMPT_OPERATIONS][0])
		bad |= put(e, "ROCPROF_OMPT_TRACE_OPERATIONS", r->value[RP3_OMPT_OPERATIONS]);
	bad |= put_stats(r, e);
	bad |= put_attach(r, ctx, e);
	bad |= put_filters(r, e);
	bad |= put_pmc_pc(r, e);
	if (bad) {
		rp3_env_free(e);
		return -1;
	}
	return 0;
}

void rp3_env_free(struct rp3_env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->kv[i]);
	e->n = 0;
}
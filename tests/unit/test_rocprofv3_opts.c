/* SPDX-License-Identifier: MIT */
/*
 * rocprofv3's options -> the variables its tool sees. The expected lists are
 * written from rocprofv3.py (ROCm/rocm-systems, projects/rocprofiler-sdk/
 * source/bin/rocprofv3.py, commit 01610ac2, function run()) as
 * rocprofv3 --attach 42 would send them, not from our table. No
 * ROCP_TOOL_LIBRARIES: rocprof-attach.py (55ab7830) removes it in attach mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cli_opts.h"
#include "rocprofv3_opts.h"

#define T "/r/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so"
#define MAXV 48

/* What rocprofv3 --attach 42 sends with no option (tool T, run from /w). */
#define BASE                                                                                       \
	"ROCPROFILER_LIBRARY_CTOR=1", "ROCPROF_OUTPUT_PATH=/w", "ROCPROF_OUTPUT_FORMAT=rocpd",     \
	    "ROCPROF_ATTACH_TOOL_LIBRARY=" T, "ROCPROF_ATTACH_PID=42", "ROCPROF_ATTACH_CHILDREN=1"
#define NO_FORMAT                                                                                  \
	"ROCPROFILER_LIBRARY_CTOR=1", "ROCPROF_OUTPUT_PATH=/w", "ROCPROF_ATTACH_TOOL_LIBRARY=" T,  \
	    "ROCPROF_ATTACH_PID=42", "ROCPROF_ATTACH_CHILDREN=1"
#define KFD4                                                                                       \
	"ROCPROF_KFD_PAGE_MIGRATION_TRACE=1", "ROCPROF_KFD_PAGE_MAPPING_TRACE=1",                  \
	    "ROCPROF_KFD_QUEUE_TRACE=1", "ROCPROF_KFD_DROPPED_EVENTS_TRACE=1"
#define HSA4                                                                                       \
	"ROCPROF_HSA_CORE_API_TRACE=1", "ROCPROF_HSA_AMD_EXT_API_TRACE=1",                         \
	    "ROCPROF_HSA_IMAGE_EXT_API_TRACE=1", "ROCPROF_HSA_FINALIZER_EXT_API_TRACE=1"
/* --hip-runtime-trace's own, and the two it turns on (01610ac2). */
#define HIP_RUNTIME                                                                                \
	"ROCPROF_HIP_RUNTIME_API_TRACE=1", "ROCPROF_HIP_GRAPH_TRACE=1", "ROCPROF_HIP_EVENT_TRACE=1"
/* Covered by both --sys-trace and --runtime-trace, besides the HIP and HSA APIs (and HIP events).
 */
#define RUNTIME_COMMON                                                                             \
	"ROCPROF_MARKER_API_TRACE=1", "ROCPROF_KERNEL_TRACE=1", KFD4,                              \
	    "ROCPROF_MEMORY_COPY_TRACE=1", "ROCPROF_MEMORY_ALLOCATION_TRACE=1",                    \
	    "ROCPROF_SCRATCH_MEMORY_TRACE=1", "ROCPROF_RCCL_API_TRACE=1", "ROCPROF_OMPT_TRACE=1",  \
	    "ROCPROF_ROCDECODE_API_TRACE=1", "ROCPROF_ROCJPEG_API_TRACE=1",                        \
	    "ROCPROF_ROCSHMEM_API_TRACE=1", "ROCPROF_HIPFILE_API_TRACE=1"

struct env_case {
	const char *args[12];
	const char *env[MAXV];
	const char *preset[4]; /* the launcher's environment before: NAME=VALUE */
};

static const struct env_case cases[] = {
    {{NULL}, {BASE}, {NULL}},
    {{"--kernel-trace"}, {BASE, "ROCPROF_KERNEL_TRACE=1"}, {NULL}},
    {{"--kernel-trace=yes"}, {BASE, "ROCPROF_KERNEL_TRACE=1"}, {NULL}},
    {{"--kernel-trace", "false"}, {BASE}, {NULL}},
    {{"--kernel-trace=off"}, {BASE}, {NULL}},
    {{"--hip-trace"}, {BASE, "ROCPROF_HIP_COMPILER_API_TRACE=1", HIP_RUNTIME}, {NULL}},
    {{"--hip-runtime-trace"}, {BASE, HIP_RUNTIME}, {NULL}},
    {{"--hip-runtime-trace", "--hip-graph-trace=false"},
     {BASE, "ROCPROF_HIP_RUNTIME_API_TRACE=1", "ROCPROF_HIP_EVENT_TRACE=1"},
     {NULL}},
    {{"--hip-graph-trace"}, {BASE, "ROCPROF_HIP_GRAPH_TRACE=1"}, {NULL}},
    {{"--hip-event-trace"}, {BASE, "ROCPROF_HIP_EVENT_TRACE=1"}, {NULL}},
    {{"--rocshmem-trace"}, {BASE, "ROCPROF_ROCSHMEM_API_TRACE=1"}, {NULL}},
    {{"--hipfile-trace"}, {BASE, "ROCPROF_HIPFILE_API_TRACE=1"}, {NULL}},
    {{"--rocdecode-trace", "--rocjpeg-trace"},
     {BASE, "ROCPROF_ROCDECODE_API_TRACE=1", "ROCPROF_ROCJPEG_API_TRACE=1"},
     {NULL}},
    {{"--group-by-queue"}, {BASE, "ROCPROF_GROUP_BY_QUEUE=1"}, {NULL}},
    {{"--ompt-trace"}, {BASE, "ROCPROF_OMPT_TRACE=1"}, {NULL}},
    {{"--ompt-trace", "true"}, {BASE, "ROCPROF_OMPT_TRACE=1"}, {NULL}},
    {{"--ompt-trace=off"}, {BASE}, {NULL}},
    {{"--ompt-trace", "parallel", "TASK", "target", "--kernel-trace"},
     {BASE, "ROCPROF_OMPT_TRACE=1", "ROCPROF_KERNEL_TRACE=1",
      "ROCPROF_OMPT_TRACE_OPERATIONS=parallel,task,target"},
     {NULL}},
    {{"--ompt-trace", "all", "thread"}, {BASE, "ROCPROF_OMPT_TRACE=1"}, {NULL}},
    {{"--attach-children=false", "--kernel-trace"},
     {"ROCPROFILER_LIBRARY_CTOR=1", "ROCPROF_OUTPUT_PATH=/w", "ROCPROF_OUTPUT_FORMAT=rocpd",
      "ROCPROF_ATTACH_TOOL_LIBRARY=" T, "ROCPROF_ATTACH_PID=42", "ROCPROF_ATTACH_CHILDREN=0",
      "ROCPROF_KERNEL_TRACE=1"},
     {NULL}},
    {{"--hip-compiler-trace"}, {BASE, "ROCPROF_HIP_COMPILER_API_TRACE=1"}, {NULL}},
    {{"--hsa-trace"}, {BASE, HSA4}, {NULL}},
    {{"--hsa-core-trace"}, {BASE, "ROCPROF_HSA_CORE_API_TRACE=1"}, {NULL}},
    {{"--hsa-amd-trace"}, {BASE, "ROCPROF_HSA_AMD_EXT_API_TRACE=1"}, {NULL}},
    {{"--hsa-image-trace"}, {BASE, "ROCPROF_HSA_IMAGE_EXT_API_TRACE=1"}, {NULL}},
    {{"--hsa-finalizer-trace"}, {BASE, "ROCPROF_HSA_FINALIZER_EXT_API_TRACE=1"}, {NULL}},
    {{"--hsa-trace", "--hsa-amd-trace=false"},
     {BASE, "ROCPROF_HSA_CORE_API_TRACE=1", "ROCPROF_HSA_IMAGE_EXT_API_TRACE=1",
      "ROCPROF_HSA_FINALIZER_EXT_API_TRACE=1"},
     {NULL}},
    {{"--memory-copy-trace"}, {BASE, "ROCPROF_MEMORY_COPY_TRACE=1"}, {NULL}},
    {{"--memory-allocation-trace"}, {BASE, "ROCPROF_MEMORY_ALLOCATION_TRACE=1"}, {NULL}},
    {{"--scratch-memory-trace"}, {BASE, "ROCPROF_SCRATCH_MEMORY_TRACE=1"}, {NULL}},
    {{"--marker-trace"}, {BASE, "ROCPROF_MARKER_API_TRACE=1"}, {NULL}},
    {{"--rccl-trace"}, {BASE, "ROCPROF_RCCL_API_TRACE=1"}, {NULL}},
    {{"--kfd-trace"}, {BASE, KFD4}, {NULL}},
    {{"--sys-trace"},
     {BASE, "ROCPROF_HIP_COMPILER_API_TRACE=1", HIP_RUNTIME, HSA4, RUNTIME_COMMON},
     {NULL}},
    {{"-s"}, {BASE, "ROCPROF_HIP_COMPILER_API_TRACE=1", HIP_RUNTIME, HSA4, RUNTIME_COMMON}, {NULL}},
    {{"--runtime-trace"}, {BASE, HIP_RUNTIME, RUNTIME_COMMON}, {NULL}},
    {{"-r"}, {BASE, HIP_RUNTIME, RUNTIME_COMMON}, {NULL}},
    /* --hip-trace=false: no HIP API, no graph; HIP events come from --sys-trace itself. */
    {{"--sys-trace", "--hip-trace=false", "--kfd-queue-trace=0", "--ompt-trace=no"},
     {BASE, HSA4, "ROCPROF_MARKER_API_TRACE=1", "ROCPROF_KERNEL_TRACE=1",
      "ROCPROF_KFD_PAGE_MIGRATION_TRACE=1", "ROCPROF_KFD_PAGE_MAPPING_TRACE=1",
      "ROCPROF_KFD_DROPPED_EVENTS_TRACE=1", "ROCPROF_MEMORY_COPY_TRACE=1",
      "ROCPROF_MEMORY_ALLOCATION_TRACE=1", "ROCPROF_SCRATCH_MEMORY_TRACE=1",
      "ROCPROF_RCCL_API_TRACE=1", "ROCPROF_ROCDECODE_API_TRACE=1", "ROCPROF_ROCJPEG_API_TRACE=1",
      "ROCPROF_ROCSHMEM_API_TRACE=1", "ROCPROF_HIPFILE_API_TRACE=1", "ROCPROF_HIP_EVENT_TRACE=1"},
     {NULL}},
    {{"--pmc", "SQ_WAVES"},
     {BASE, "ROCPROF_COUNTER_COLLECTION=1", "ROCPROF_COUNTERS=pmc: SQ_WAVES"},
     {NULL}},
    {{"--pmc", "SQ_WAVES", "GRBM_COUNT", "--kernel-trace"},
     {BASE, "ROCPROF_KERNEL_TRACE=1", "ROCPROF_COUNTER_COLLECTION=1",
      "ROCPROF_COUNTERS=pmc: SQ_WAVES GRBM_COUNT"},
     {NULL}},
    {{"--stats", "--kernel-trace"}, {BASE, "ROCPROF_KERNEL_TRACE=1", "ROCPROF_STATS=1"}, {NULL}},
    {{"--summary"},
     {BASE, "ROCPROF_STATS_SUMMARY=1", "ROCPROF_STATS_SUMMARY_OUTPUT=stderr"},
     {NULL}},
    {{"-S", "--summary-output-file", "STDOUT"},
     {BASE, "ROCPROF_STATS_SUMMARY=1", "ROCPROF_STATS_SUMMARY_OUTPUT=stdout"},
     {NULL}},
    {{"--summary-output-file", "sum.txt"}, {BASE, "ROCPROF_STATS_SUMMARY_OUTPUT=sum.txt"}, {NULL}},
    {{"-S", "-u", "msec", "--summary-groups", "KERNEL_DISPATCH|MEMORY_COPY", ".*_API", "-D"},
     {BASE, "ROCPROF_STATS_SUMMARY=1", "ROCPROF_STATS_SUMMARY_UNITS=msec",
      "ROCPROF_STATS_SUMMARY_OUTPUT=stderr",
      "ROCPROF_STATS_SUMMARY_GROUPS=KERNEL_DISPATCH|MEMORY_COPY##@@##.*_API",
      "ROCPROF_STATS_SUMMARY_PER_DOMAIN=1"},
     {NULL}},
    {{"--kernel-include-regex", "gemm", "--kernel-exclude-regex", "copy",
      "--kernel-iteration-range", "[1-3]", "[5]"},
     {BASE, "ROCPROF_KERNEL_FILTER_INCLUDE_REGEX=gemm", "ROCPROF_KERNEL_FILTER_EXCLUDE_REGEX=copy",
      "ROCPROF_KERNEL_FILTER_RANGE=[1-3], [5]"},
     {NULL}},
    {{"--truncate-kernels"}, {BASE, "ROCPROF_TRUNCATE_KERNELS=1"}, {NULL}},
    {{"-T", "-M"}, {BASE, "ROCPROF_DEMANGLE_KERNELS=0", "ROCPROF_TRUNCATE_KERNELS=1"}, {NULL}},
    {{"--pc-sampling-beta-enabled", "--pc-sampling-unit", "TIME", "--pc-sampling-method",
      "host_trap", "--pc-sampling-interval", "1"},
     {BASE, "ROCPROFILER_PC_SAMPLING_BETA_ENABLED=1", "ROCPROF_PC_SAMPLING_UNIT=time",
      "ROCPROF_PC_SAMPLING_METHOD=host_trap", "ROCPROF_PC_SAMPLING_INTERVAL=1"},
     {NULL}},
    {{"--pc-sampling-unit", "cycles", "--pc-sampling-method", "stochastic",
      "--pc-sampling-interval", "1048576"},
     {BASE, "ROCPROF_PC_SAMPLING_UNIT=cycles", "ROCPROF_PC_SAMPLING_METHOD=stochastic",
      "ROCPROF_PC_SAMPLING_INTERVAL=1048576"},
     {"ROCPROFILER_PC_SAMPLING_BETA_ENABLED=on"}},
    {{"--output-format", "csv", "JSON", "pftrace"},
     {NO_FORMAT, "ROCPROF_OUTPUT_FORMAT=csv,json,pftrace"},
     {NULL}},
    {{"-f", "json", "pftrace", "rocpd"},
     {NO_FORMAT, "ROCPROF_OUTPUT_FORMAT=json,pftrace,rocpd"},
     {NULL}},
    {{"-f", "json"}, {NO_FORMAT, "ROCPROF_OUTPUT_FORMAT=csv,json"}, {"ROCPROF_OUTPUT_FORMAT=csv"}},
    {{"--output-directory", "/out/%hostname%", "-o", "run_%pid%"},
     {"ROCPROFILER_LIBRARY_CTOR=1", "ROCPROF_OUTPUT_FILE_NAME=run_%pid%",
      "ROCPROF_OUTPUT_PATH=/out/%hostname%", "ROCPROF_OUTPUT_FORMAT=rocpd",
      "ROCPROF_ATTACH_TOOL_LIBRARY=" T, "ROCPROF_ATTACH_PID=42", "ROCPROF_ATTACH_CHILDREN=1"},
     {NULL}},
    {{"--output-file", "%q{SLURM_PROCID}%"},
     {BASE, "ROCPROF_OUTPUT_FILE_NAME=%q{SLURM_PROCID}%"},
     {NULL}},
    {{NULL}, {BASE, "ROCPROF_OUTPUT_FILE_NAME=mine"}, {"ROCPROF_OUTPUT_FILE_NAME=mine"}},
    /* The user's ROCP_TOOL_LIBRARIES is not extended, nor sent (rocprof-attach drops it). */
    {{NULL},
     {"ROCPROFILER_LIBRARY_CTOR=1", "ROCPROF_OUTPUT_PATH=/o", "ROCPROF_OUTPUT_FORMAT=rocpd",
      "ROCPROF_ATTACH_TOOL_LIBRARY=" T, "ROCPROF_ATTACH_PID=42", "ROCPROF_ATTACH_CHILDREN=1"},
     {"ROCP_TOOL_LIBRARIES=/a.so", "ROCPROF_OUTPUT_PATH=/o"}},
    {{"--output-config"}, {BASE, "ROCPROF_OUTPUT_CONFIG_FILE=1"}, {NULL}},
    {{"--log-level", "INFO"},
     {BASE, "ROCPROF_LOG_LEVEL=info", "ROCPROFILER_LOG_LEVEL=info", "ROCTX_LOG_LEVEL=info"},
     {NULL}},
    {{"--log-level", "env"}, {BASE}, {NULL}},
    {{"-d", "500"}, {BASE, "ROCPROF_ATTACH_DURATION=500"}, {NULL}},
    {{"--kernel-rename", "--selected-regions", "--selected-regions-ref-count"},
     {BASE, "ROCPROF_SELECTED_REGIONS=1", "ROCPROF_SELECTED_REGIONS_REF_COUNT=1",
      "ROCPROF_KERNEL_RENAME=1"},
     {NULL}},
    {{"-A", "absolute", "--minimum-output-data", "4"},
     {BASE, "ROCPROF_AGENT_INDEX=absolute", "ROCPROF_MINIMUM_OUTPUT_BYTES=4096"},
     {NULL}},
    {{"--disable-signal-handlers", "--process-sync=false"},
     {BASE, "ROCPROF_SIGNAL_HANDLERS=0", "ROCPROF_PROCESS_SYNC=0"},
     {NULL}},
    /* 01610ac2: update_env(..., args.attach_sync_output): a bool sends "1" or "0". */
    {{"--attach-sync-output"}, {BASE, "ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC=1"}, {NULL}},
    {{"--attach-sync-output=false", "--kernel-trace"},
     {BASE, "ROCPROF_KERNEL_TRACE=1", "ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC=0"},
     {NULL}},
    {{"--perfetto-buffer-size=4194303"}, {BASE, "ROCPROF_PERFETTO_BUFFER_SIZE_KB=4194303"}, {NULL}},
    /* A list stops at the next option; "=" gives a value that looks like one. */
    {{"--pmc", "SQ_WAVES", "-d", "300"},
     {BASE, "ROCPROF_ATTACH_DURATION=300", "ROCPROF_COUNTER_COLLECTION=1",
      "ROCPROF_COUNTERS=pmc: SQ_WAVES"},
     {NULL}},
    {{"--kernel-include-regex=-x"}, {BASE, "ROCPROF_KERNEL_FILTER_INCLUDE_REGEX=-x"}, {NULL}},
    {{"--perfetto-backend", "system", "--perfetto-buffer-size", "2048",
      "--perfetto-shmem-size-hint", "128"},
     {BASE, "ROCPROF_PERFETTO_BUFFER_SIZE_KB=2048", "ROCPROF_PERFETTO_SHMEM_SIZE_HINT_KB=128",
      "ROCPROF_PERFETTO_BACKEND=system"},
     {NULL}},
    {{"--sys-trace", "--pmc", "SQ_WAVES", "-f", "json", "pftrace", "rocpd", "-d", "10000"},
     {NO_FORMAT, "ROCPROF_OUTPUT_FORMAT=json,pftrace,rocpd", "ROCPROF_HIP_COMPILER_API_TRACE=1",
      HIP_RUNTIME, HSA4, RUNTIME_COMMON, "ROCPROF_ATTACH_DURATION=10000",
      "ROCPROF_COUNTER_COLLECTION=1", "ROCPROF_COUNTERS=pmc: SQ_WAVES"},
     {NULL}},
};

static const char *preset_env(const char *name, void *arg)
{
	const char *const *preset = arg;
	size_t n = strlen(name);

	for (int i = 0; i < 4 && preset[i]; i++)
		if (!strncmp(preset[i], name, n) && preset[i][n] == '=')
			return preset[i] + n + 1;
	return NULL;
}

static int parse(const char *const *extra, struct cli_opts *o, char *err, size_t len)
{
	const char *argv[24] = {"rocattach", "-p", "42"};
	int argc = 3;

	for (int i = 0; extra[i]; i++)
		argv[argc++] = extra[i];
	return cli_opts_parse(argc, (char **)argv, o, err, len);
}

static void run_case(const struct env_case *c)
{
	struct cli_opts o;
	struct rp3_env env;
	char err[1024] = "";
	struct rp3_ctx ctx = {
	    .getenv = preset_env, .arg = (void *)c->preset, .cwd = "/w", .tool = T};
	size_t want = 0;
	bool beta = preset_env("ROCPROFILER_PC_SAMPLING_BETA_ENABLED", (void *)c->preset);

	if (beta)
		setenv("ROCPROFILER_PC_SAMPLING_BETA_ENABLED", "on", 1);
	if (parse(c->args, &o, err, sizeof(err)))
		fail_msg("%s: %s", c->args[0] ? c->args[0] : "(none)", err);
	unsetenv("ROCPROFILER_PC_SAMPLING_BETA_ENABLED");
	ctx.pid = o.pid;
	ctx.duration_ms = o.duration_ms;
	ctx.children = o.children;
	assert_int_equal(rp3_env_build(&o.rp3, &ctx, &env), 0);
	while (want < MAXV && c->env[want])
		want++;
	for (size_t i = 0; i < want; i++) {
		bool found = false;

		for (size_t k = 0; k < env.n; k++)
			found |= !strcmp(env.kv[k], c->env[i]);
		if (!found)
			fail_msg("%s: %s not sent", c->args[0] ? c->args[0] : "(none)", c->env[i]);
	}
	for (size_t k = 0; k < env.n; k++) {
		bool expected = false;

		for (size_t i = 0; i < want; i++)
			expected |= !strcmp(env.kv[k], c->env[i]);
		if (!expected)
			fail_msg("%s: %s sent, not rocprofv3's", c->args[0] ? c->args[0] : "(none)",
				 env.kv[k]);
	}
	assert_int_equal(env.n, want);
	rp3_env_free(&env);
}

static void test_rp3_env_build_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

struct refusal {
	const char *args[10];
	const char *says;
};

static const struct refusal refusals[] = {
    {{"--pmc", "SQ_WAVES", "--pmc", "GRBM_COUNT"},
     "multi-pass counter collection (multiple --pmc flags) is not compatible with attach mode"},
    {{"--collection-period", "1:2:0"}, "--collection-period is not compatible with attach mode"},
    {{"-P", "1:2:0", "--kernel-trace"}, "--collection-period is not compatible with attach mode"},
    {{"--pc-sampling-unit", "time", "--pc-sampling-method", "host_trap", "--pc-sampling-interval",
      "1"},
     "PC sampling unavailable"},
    {{"--pc-sampling-beta-enabled", "--pc-sampling-unit", "time"},
     "all three PC sampling configurations need to be set"},
    {{"--pc-sampling-beta-enabled", "--pc-sampling-unit", "time", "--pc-sampling-method",
      "host_trap", "--pc-sampling-interval", "0"},
     "PC sampling interval must be a positive number"},
    {{"-d", "out"}, "--output-directory"},
    {{"-d", "/tmp/prof"}, "--output-directory"},
    {{"--output-format", "xml"}, "invalid --output-format 'xml'"},
    {{"--log-level", "loud"}, "invalid --log-level"},
    {{"--kernel-trace=maybe"}, "invalid --kernel-trace value"},
    {{"--pmc"}, "--pmc needs at least one counter"},
    {{"--pmc", "-d", "300"}, "--pmc: '-d' is an option, not a value"},
    {{"-d", "--foo"}, "-d: '--foo' is an option"},
    {{"--output-directory", "--kernel-trace"}, "--output-directory: '--kernel-trace' is an option"},
    {{"-o", "-s"}, "--output-file: '-s' is an option"},
    {{"-f", "-d", "300"}, "-f: '-d' is an option"},
    {{"--output-format", "--kernel-trace"}, "--output-format: '--kernel-trace' is an option"},
    {{"--ompt-trace", "parallel,task"}, "separated by spaces, not commas"},
    {{"--ompt-trace", "parallel", "bogus"}, "unknown category 'bogus'"},
    {{"--perfetto-buffer-size", "4194304"}, "must be between 1 and 4194303 KB"},
    {{"--perfetto-buffer-size", "0"}, "must be between 1 and 4194303 KB"},
};

static void test_rp3_check_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		struct cli_opts o;
		char err[1024] = "";

		assert_int_equal(parse(refusals[i].args, &o, err, sizeof(err)), -1);
		if (!strstr(err, refusals[i].says))
			fail_msg("%s: '%s' does not say '%s'", refusals[i].args[0], err,
				 refusals[i].says);
	}
}

/* The launcher waits for the output when the variable the tools read says so. */
static void test_rp3_sync_output_from_the_variable(void **state)
{
	(void)state;
	unsetenv("ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC");
	assert_false(rp3_sync_output());
	setenv("ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC", "1", 1);
	assert_true(rp3_sync_output());
	setenv("ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC", "0", 1);
	assert_false(rp3_sync_output());
	setenv("ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC", "", 1);
	assert_false(rp3_sync_output());
	unsetenv("ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC");
}

/* A tool of one's own and none of rocprofv3's options: nothing of rocprofv3's goes. */
static void test_rp3_prepare_custom_tool_alone(void **state)
{
	struct rp3_opts r;
	struct rp3_setup s = {.tools = "/x/libmine.so", .duration_ms = -1};
	struct rp3_env env;
	const char *tools;
	char buf[256], err[512];

	(void)state;
	unsetenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	rp3_init(&r);
	assert_int_equal(rp3_prepare(&r, &s, buf, sizeof(buf), &tools, &env, err, sizeof(err)), 0);
	assert_int_equal(env.n, 0);
	assert_string_equal(tools, "/x/libmine.so");
	/* With one of its options, its variables go, naming the tool given. */
	r.any = true;
	r.flag[RP3_KERNEL_TRACE] = 1;
	assert_int_equal(rp3_prepare(&r, &s, buf, sizeof(buf), &tools, &env, err, sizeof(err)), 0);
	assert_true(env.n > 0);
	{
		bool named = false;

		for (size_t k = 0; k < env.n; k++) {
			named |= !strcmp(env.kv[k], "ROCPROF_ATTACH_TOOL_LIBRARY=/x/libmine.so");
			assert_null(strstr(env.kv[k], "ROCP_TOOL_LIBRARIES"));
		}
		assert_true(named);
	}
	rp3_env_free(&env);
	/* Its own tool named with -t: its defaults go. */
	rp3_init(&r);
	s.tools = "/opt/rocm/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so.1";
	assert_int_equal(rp3_prepare(&r, &s, buf, sizeof(buf), &tools, &env, err, sizeof(err)), 0);
	assert_true(env.n > 0);
	rp3_env_free(&env);
}

static void test_rp3_find_tool_where_rocprofv3_looks(void **state)
{
	char root[] = "/tmp/rp3rootXXXXXX", dir[256], file[300], path[512], err[1024];
	struct rp3_opts r;
	FILE *f;

	(void)state;
	rp3_init(&r);
	assert_non_null(mkdtemp(root));
	assert_int_equal(rp3_find_tool(&r, root, path, sizeof(path), err, sizeof(err)), -1);
	assert_non_null(strstr(err, root));
	assert_non_null(strstr(err, "/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so"));
	assert_non_null(strstr(err, "(ROCM_PATH)"));
	snprintf(dir, sizeof(dir), "%s/lib", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/lib/rocprofiler-sdk", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/librocprofiler-sdk-tool.so.1", dir);
	assert_non_null(f = fopen(file, "w"));
	fclose(f);
	assert_int_equal(rp3_find_tool(&r, root, path, sizeof(path), err, sizeof(err)), 0);
	assert_string_equal(path, file);
	/* --rocm-root wins over ROCM_PATH. */
	r.has[RP3_ROCM_ROOT] = true;
	snprintf(r.value[RP3_ROCM_ROOT], sizeof(r.value[0]), "/nonexistent");
	assert_int_equal(rp3_find_tool(&r, root, path, sizeof(path), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/lib/rocprofiler-sdk/"));
	assert_non_null(strstr(err, "(--rocm-root)"));
	unlink(file);
	rmdir(dir);
	snprintf(dir, sizeof(dir), "%s/lib", root);
	rmdir(dir);
	rmdir(root);
}

/* What rocprofv3 compares on reattach: collection options, not output ones. */
static void test_rp3_collection_key(void **state)
{
	const char *a[] = {"--kernel-trace", "-f", "csv", "--output-directory", "/o", NULL};
	const char *b[] = {"--kernel-trace", NULL};
	const char *c[] = {"--kernel-trace", "--pmc", "SQ_WAVES", NULL};
	char ka[512], kb[512], kc[512], err[512];
	struct cli_opts o;

	(void)state;
	assert_int_equal(parse(a, &o, err, sizeof(err)), 0);
	rp3_collection_key(&o.rp3, ka, sizeof(ka));
	assert_int_equal(parse(b, &o, err, sizeof(err)), 0);
	rp3_collection_key(&o.rp3, kb, sizeof(kb));
	assert_int_equal(parse(c, &o, err, sizeof(err)), 0);
	rp3_collection_key(&o.rp3, kc, sizeof(kc));
	assert_string_equal(ka, "--kernel-trace");
	assert_string_equal(ka, kb);
	assert_string_equal(kc, "--kernel-trace --pmc SQ_WAVES");
	{
		const char *d[] = {"--ompt-trace", "task", "--hip-event-trace", NULL};
		const char *e[] = {"--ompt-trace", NULL};
		char kd[512], ke[512];

		assert_int_equal(parse(d, &o, err, sizeof(err)), 0);
		rp3_collection_key(&o.rp3, kd, sizeof(kd));
		assert_string_equal(kd, "--hip-event-trace --ompt-trace task");
		assert_int_equal(parse(e, &o, err, sizeof(err)), 0);
		rp3_collection_key(&o.rp3, ke, sizeof(ke));
		assert_string_equal(ke, "--ompt-trace");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rp3_env_build_table),
	    cmocka_unit_test(test_rp3_check_refusals),
	    cmocka_unit_test(test_rp3_sync_output_from_the_variable),
	    cmocka_unit_test(test_rp3_prepare_custom_tool_alone),
	    cmocka_unit_test(test_rp3_find_tool_where_rocprofv3_looks),
	    cmocka_unit_test(test_rp3_collection_key),
	};

	unsetenv("ROCPROF_ATTACH_DURATION");
	unsetenv("ROCPROF_ATTACH_PID");
	return cmocka_run_group_tests(tests, NULL, NULL);
}

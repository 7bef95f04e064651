/* SPDX-License-Identifier: MIT */
/*
 * rocprofv3's options and the variables its tool reads for them.
 *
 * Read from ROCm/rocm-systems, projects/rocprofiler-sdk/source/bin/rocprofv3.py
 * at commit 210d1acecc9350243a715e99eeba0f31aa2ec4b4 (the newest stored), and
 * its attach guide source/docs/how-to/using-rocprofv3-process-attachment.rst.
 * Written from what that file does in attach mode (--pid), not copied:
 * - a switch is "--name[=BOOL]" or "--name BOOL" (y/yes/t/true/on/1, n/no/f/false/off/0);
 *   a true switch sets its variable to "1", a false or absent one sets nothing;
 * - --sys-trace, --runtime-trace, --hip-trace, --hsa-trace and --kfd-trace turn
 *   on, in that order, the switches they cover that were not given;
 * - always: ROCPROFILER_LIBRARY_CTOR=1, ROCP_TOOL_LIBRARIES gets the tool
 *   (appended with ':'), ROCPROF_OUTPUT_PATH (--output-directory, else its
 *   variable, else the working directory), ROCPROF_OUTPUT_FORMAT (the
 *   formats joined with ',', "rocpd" by default, appended to a value already
 *   set), ROCPROF_ATTACH_TOOL_LIBRARY (the tool), ROCPROF_ATTACH_PID and
 *   ROCPROF_ATTACH_DURATION (the attacher's; they cross with the rest);
 * - --pmc A B: ROCPROF_COUNTER_COLLECTION=1 and ROCPROF_COUNTERS="pmc: A B";
 *   several --pmc are multi-pass, refused with --pid; so is --collection-period;
 * - --summary without --summary-output-file sends ROCPROF_STATS_SUMMARY_OUTPUT=stderr;
 * - --log-level L (not env or config) sets ROCPROF_, ROCPROFILER_ and ROCTX_LOG_LEVEL;
 * - PC sampling needs its beta switch (or ROCPROFILER_PC_SAMPLING_BETA_ENABLED
 *   set) and all three of unit, method and a positive interval.
 * The upstream tool is $ROCM/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so,
 * else that name with ".1" (its SOVERSION) appended; $ROCM is the prefix
 * rocprofv3 is installed in, or --rocm-root. We have no install prefix of
 * ROCm's, so ROCM_PATH, else /opt/rocm, stand for it.
 * --attach-sync-output came after that commit: ROCm/rocm-systems pull request
 * #3179 (merged) moved the tool's output in tool_detach onto a thread, so that
 * tool_detach returns at once, and made synchronous output (written before
 * tool_detach returns) the choice of the flag --attach-sync-output or of the
 * tool's variable ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC=1 (internal, not in
 * the user docs); pull request #7406 (merged, rocprof-compute) sets that
 * variable to "1" for live attach with its SDK backend, and passes the flag
 * with its rocprofv3 backend. So the flag sends that variable as "1". The
 * rocprofv3.py that reads the flag was not read here.
 * Those texts show only the bare flag; it takes a BOOL as the other switches
 * do, and false sends nothing (the asynchronous default).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rocprofv3_opts.h"

enum kind { SWITCH, ONE, SEVERAL, REFUSE };

struct rp3_entry {
	const char *name;
	int shortopt; /* 0: none */
	enum kind kind;
	int index;	     /* enum rp3_flag or enum rp3_value */
	const char *choices; /* space-separated, or NULL */
	bool lower;	     /* rocprofv3 lowercases the value (type=str.lower) */
};

/* The options, as rocprofv3 names them. */
static const struct rp3_entry entries[] = {
    {"sys-trace", 's', SWITCH, RP3_SYS_TRACE, NULL, false},
    {"runtime-trace", 'r', SWITCH, RP3_RUNTIME_TRACE, NULL, false},
    {"hip-trace", 0, SWITCH, RP3_HIP_TRACE, NULL, false},
    {"hip-runtime-trace", 0, SWITCH, RP3_HIP_RUNTIME_TRACE, NULL, false},
    {"hip-compiler-trace", 0, SWITCH, RP3_HIP_COMPILER_TRACE, NULL, false},
    {"hsa-trace", 0, SWITCH, RP3_HSA_TRACE, NULL, false},
    {"hsa-core-trace", 0, SWITCH, RP3_HSA_CORE_TRACE, NULL, false},
    {"hsa-amd-trace", 0, SWITCH, RP3_HSA_AMD_TRACE, NULL, false},
    {"hsa-image-trace", 0, SWITCH, RP3_HSA_IMAGE_TRACE, NULL, false},
    {"hsa-finalizer-trace", 0, SWITCH, RP3_HSA_FINALIZER_TRACE, NULL, false},
    {"marker-trace", 0, SWITCH, RP3_MARKER_TRACE, NULL, false},
    {"kernel-trace", 0, SWITCH, RP3_KERNEL_TRACE, NULL, false},
    {"memory-copy-trace", 0, SWITCH, RP3_MEMORY_COPY_TRACE, NULL, false},
    {"memory-allocation-trace", 0, SWITCH, RP3_MEMORY_ALLOCATION_TRACE, NULL, false},
    {"scratch-memory-trace", 0, SWITCH, RP3_SCRATCH_MEMORY_TRACE, NULL, false},
    {"rccl-trace", 0, SWITCH, RP3_RCCL_TRACE, NULL, false},
    {"rocdecode-trace", 0, SWITCH, RP3_ROCDECODE_TRACE, NULL, false},
    {"rocjpeg-trace", 0, SWITCH, RP3_ROCJPEG_TRACE, NULL, false},
    {"kfd-trace", 0, SWITCH, RP3_KFD_TRACE, NULL, false},
    {"kfd-page-migration-trace", 0, SWITCH, RP3_KFD_PAGE_MIGRATION_TRACE, NULL, false},
    {"kfd-page-mapping-trace", 0, SWITCH, RP3_KFD_PAGE_MAPPING_TRACE, NULL, false},
    {"kfd-queue-trace", 0, SWITCH, RP3_KFD_QUEUE_TRACE, NULL, false},
    {"kfd-dropped-events-trace", 0, SWITCH, RP3_KFD_DROPPED_EVENTS_TRACE, NULL, false},
    {"group-by-queue", 0, SWITCH, RP3_GROUP_BY_QUEUE, NULL, false},
    {"pmc", 0, SEVERAL, RP3_PMC, NULL, false},
    {"stats", 0, SWITCH, RP3_STATS, NULL, false},
    {"summary", 'S', SWITCH, RP3_SUMMARY, NULL, false},
    {"summary-per-domain", 'D', SWITCH, RP3_SUMMARY_PER_DOMAIN, NULL, false},
    {"summary-groups", 0, SEVERAL, RP3_SUMMARY_GROUPS, NULL, false},
    {"summary-output-file", 0, ONE, RP3_SUMMARY_OUTPUT_FILE, NULL, false},
    {"summary-units", 'u', ONE, RP3_SUMMARY_UNITS, "sec msec usec nsec", false},
    {"mangled-kernels", 'M', SWITCH, RP3_MANGLED_KERNELS, NULL, false},
    {"truncate-kernels", 'T', SWITCH, RP3_TRUNCATE_KERNELS, NULL, false},
    {"kernel-rename", 0, SWITCH, RP3_KERNEL_RENAME, NULL, false},
    {"kernel-include-regex", 0, ONE, RP3_KERNEL_INCLUDE_REGEX, NULL, false},
    {"kernel-exclude-regex", 0, ONE, RP3_KERNEL_EXCLUDE_REGEX, NULL, false},
    {"kernel-iteration-range", 0, SEVERAL, RP3_KERNEL_ITERATION_RANGE, NULL, false},
    {"selected-regions", 0, SWITCH, RP3_SELECTED_REGIONS, NULL, false},
    {"selected-regions-ref-count", 0, SWITCH, RP3_SELECTED_REGIONS_REF_COUNT, NULL, false},
    {"pc-sampling-beta-enabled", 0, SWITCH, RP3_PC_SAMPLING_BETA_ENABLED, NULL, false},
    {"pc-sampling-unit", 0, ONE, RP3_PC_SAMPLING_UNIT, "instructions cycles time", true},
    {"pc-sampling-method", 0, ONE, RP3_PC_SAMPLING_METHOD, "stochastic host_trap", true},
    {"pc-sampling-interval", 0, ONE, RP3_PC_SAMPLING_INTERVAL, NULL, false},
    {"output-file", 'o', ONE, RP3_OUTPUT_FILE, NULL, false},
    {"output-directory", 0, ONE, RP3_OUTPUT_DIRECTORY, NULL, false},
    {"output-format", 'f', SEVERAL, RP3_OUTPUT_FORMAT, "csv json pftrace otf2 rocpd", true},
    {"output-config", 0, SWITCH, RP3_OUTPUT_CONFIG, NULL, false},
    {"log-level", 0, ONE, RP3_LOG_LEVEL, "fatal error warning info trace env config", true},
    {"agent-index", 'A', ONE, RP3_AGENT_INDEX, "absolute relative type-relative", false},
    {"minimum-output-data", 0, ONE, RP3_MINIMUM_OUTPUT_DATA, NULL, false},
    {"disable-signal-handlers", 0, SWITCH, RP3_DISABLE_SIGNAL_HANDLERS, NULL, false},
    {"process-sync", 0, SWITCH, RP3_PROCESS_SYNC, NULL, false},
    {"attach-sync-output", 0, SWITCH, RP3_ATTACH_SYNC_OUTPUT, NULL, false},
    {"perfetto-backend", 0, ONE, RP3_PERFETTO_BACKEND, "inprocess system", false},
    {"perfetto-buffer-size", 0, ONE, RP3_PERFETTO_BUFFER_SIZE, NULL, false},
    {"perfetto-shmem-size-hint", 0, ONE, RP3_PERFETTO_SHMEM_SIZE_HINT, NULL, false},
    {"rocm-root", 0, ONE, RP3_ROCM_ROOT, NULL, false},
    {"collection-period", 'P', REFUSE, 0, NULL, false},
};
#define N_ENTRIES (sizeof(entries) / sizeof(entries[0]))

/* Switch -> the variable its tool reads (ROCPROF_ + this), in rocprofv3's order. */
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
    {RP3_ROCDECODE_TRACE, "ROCPROF_ROCDECODE_API_TRACE"},
    {RP3_ROCJPEG_TRACE, "ROCPROF_ROCJPEG_API_TRACE"},
    {RP3_KERNEL_TRACE, "ROCPROF_KERNEL_TRACE"},
    {RP3_MEMORY_COPY_TRACE, "ROCPROF_MEMORY_COPY_TRACE"},
    {RP3_MEMORY_ALLOCATION_TRACE, "ROCPROF_MEMORY_ALLOCATION_TRACE"},
    {RP3_KFD_PAGE_MIGRATION_TRACE, "ROCPROF_KFD_PAGE_MIGRATION_TRACE"},
    {RP3_KFD_PAGE_MAPPING_TRACE, "ROCPROF_KFD_PAGE_MAPPING_TRACE"},
    {RP3_KFD_QUEUE_TRACE, "ROCPROF_KFD_QUEUE_TRACE"},
    {RP3_KFD_DROPPED_EVENTS_TRACE, "ROCPROF_KFD_DROPPED_EVENTS_TRACE"},
    {RP3_SCRATCH_MEMORY_TRACE, "ROCPROF_SCRATCH_MEMORY_TRACE"},
    {RP3_GROUP_BY_QUEUE, "ROCPROF_GROUP_BY_QUEUE"},
};

/* What each aggregate turns on when not given, applied in this order. */
static const struct {
	int agg;
	int covers[12];
} aggregates[] = {
    {RP3_SYS_TRACE,
     {RP3_HIP_TRACE, RP3_HSA_TRACE, RP3_MARKER_TRACE, RP3_KERNEL_TRACE, RP3_KFD_TRACE,
      RP3_MEMORY_COPY_TRACE, RP3_MEMORY_ALLOCATION_TRACE, RP3_SCRATCH_MEMORY_TRACE, RP3_RCCL_TRACE,
      RP3_ROCDECODE_TRACE, RP3_ROCJPEG_TRACE, -1}},
    {RP3_RUNTIME_TRACE,
     {RP3_HIP_RUNTIME_TRACE, RP3_MARKER_TRACE, RP3_KERNEL_TRACE, RP3_KFD_TRACE,
      RP3_MEMORY_COPY_TRACE, RP3_MEMORY_ALLOCATION_TRACE, RP3_SCRATCH_MEMORY_TRACE, RP3_RCCL_TRACE,
      RP3_ROCDECODE_TRACE, RP3_ROCJPEG_TRACE, -1}},
    {RP3_HIP_TRACE, {RP3_HIP_COMPILER_TRACE, RP3_HIP_RUNTIME_TRACE, -1}},
    {RP3_HSA_TRACE,
     {RP3_HSA_CORE_TRACE, RP3_HSA_AMD_TRACE, RP3_HSA_IMAGE_TRACE, RP3_HSA_FINALIZER_TRACE, -1}},
    {RP3_KFD_TRACE,
     {RP3_KFD_PAGE_MIGRATION_TRACE, RP3_KFD_PAGE_MAPPING_TRACE, RP3_KFD_QUEUE_TRACE,
      RP3_KFD_DROPPED_EVENTS_TRACE, -1}},
};

void rp3_init(struct rp3_opts *r)
{
	memset(r, 0, sizeof(*r));
	memset(r->flag, -1, sizeof(r->flag));
}

struct option *rp3_long_options(const struct option *own)
{
	size_t n = 0, k;
	struct option *all;

	while (own[n].name)
		n++;
	all = calloc(n + N_ENTRIES + 1, sizeof(*all));
	if (!all)
		return NULL;
	memcpy(all, own, n * sizeof(*own));
	for (k = 0; k < N_ENTRIES; k++) {
		all[n + k].name = entries[k].name;
		all[n + k].has_arg = entries[k].kind == SWITCH	 ? optional_argument
				     : entries[k].kind == REFUSE ? optional_argument
								 : required_argument;
		all[n + k].val = RP3_OPT_BASE + (int)k;
	}
	return all;
}

/* rocprofv3's strtobool: 1, 0, or -1. */
static int rp3_bool(const char *s)
{
	static const char *const yes[] = {"y", "yes", "t", "true", "on", "1"};
	static const char *const no[] = {"n", "no", "f", "false", "off", "0"};

	for (size_t i = 0; s && i < 6; i++) {
		if (!strcasecmp(s, yes[i]))
			return 1;
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	return -1;
}

static const struct rp3_entry *entry_of(int c)
{
	if (c >= RP3_OPT_BASE && c < RP3_OPT_BASE + (int)N_ENTRIES)
		return &entries[c - RP3_OPT_BASE];
	for (size_t k = 0; c > 0 && c < 128 && k < N_ENTRIES; k++)
		if (entries[k].shortopt == c)
			return &entries[k];
	return NULL;
}

static bool in_choices(const char *v, const char *choices)
{
	size_t n = strlen(v);

	for (const char *p = choices; *p;) {
		size_t w = strcspn(p, " ");

		if (w == n && !strncmp(p, v, n))
			return true;
		p += w + (p[w] == ' ');
	}
	return false;
}

static int add_word(const struct rp3_entry *e, struct rp3_opts *r, const char *w, char *err,
		    size_t len)
{
	static const char *const sep[RP3_NVALUES] = {
	    [RP3_OUTPUT_FORMAT] = ",",
	    [RP3_PMC] = " ",
	    [RP3_SUMMARY_GROUPS] = "##@@##",
	    [RP3_KERNEL_ITERATION_RANGE] = ", ",
	};
	char word[RP3_TEXT_MAX], *dst = r->value[e->index];
	size_t have = strlen(dst);

	snprintf(word, sizeof(word), "%s", w);
	for (char *p = word; e->lower && *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	if (e->choices && !in_choices(word, e->choices)) {
		snprintf(err, len, "invalid --%s '%s': choose from %s (rocprofv3's choices)",
			 e->name, w, e->choices);
		return -1;
	}
	if (e->kind == SEVERAL && have && e->index != RP3_PMC)
		have += (size_t)snprintf(dst + have, RP3_TEXT_MAX - have, "%s", sep[e->index]);
	else if (e->kind == SEVERAL && have)
		have += (size_t)snprintf(dst + have, RP3_TEXT_MAX - have, " ");
	else if (e->kind == ONE)
		have = 0;
	if (have + strlen(word) >= RP3_TEXT_MAX) {
		snprintf(err, len, "--%s: the values are longer than %d bytes", e->name,
			 RP3_TEXT_MAX - 1);
		return -1;
	}
	snprintf(dst + have, RP3_TEXT_MAX - have, "%s", word);
	r->has[e->index] = true;
	return 0;
}

static bool is_word(const char *s)
{
	return s && s[0] != '-';
}

static int parse_several(const struct rp3_entry *e, int argc, char **argv, struct rp3_opts *r,
			 char *err, size_t len)
{
	if (e->index == RP3_PMC) {
		/* Each --pmc is one group; the words of a group join with ' '. */
		if (r->pmc_count++ == 1)
			r->refused = "pmc";
		if (r->pmc_count > 1)
			return 0;
		r->has[RP3_PMC] = true;
	} else if (e->index == RP3_OUTPUT_FORMAT || e->index == RP3_KERNEL_ITERATION_RANGE ||
		   e->index == RP3_SUMMARY_GROUPS) {
		/* argparse keeps the last one given (nargs='+' without append). */
		r->value[e->index][0] = '\0';
	}
	if (optarg && *optarg && add_word(e, r, optarg, err, len))
		return -1;
	while (optind < argc && is_word(argv[optind]))
		if (add_word(e, r, argv[optind++], err, len))
			return -1;
	if (e->index != RP3_PMC && !r->value[e->index][0]) {
		snprintf(err, len, "--%s needs a value", e->name);
		return -1;
	}
	return 0;
}

int rp3_parse(int c, int argc, char **argv, struct rp3_opts *r, char *err, size_t len)
{
	const struct rp3_entry *e = entry_of(c);
	int b = 1;

	if (!e)
		return 1;
	r->any = true;
	switch (e->kind) {
	case REFUSE:
		if (!r->refused)
			r->refused = e->name;
		while (optind < argc && is_word(argv[optind]))
			optind++;
		return 0;
	case SWITCH:
		if (optarg)
			b = rp3_bool(optarg);
		else if (optind < argc && rp3_bool(argv[optind]) >= 0)
			b = rp3_bool(argv[optind++]);
		if (b < 0) {
			snprintf(err, len,
				 "invalid --%s value '%s': use true/false, yes/no, on/off, 1/0",
				 e->name, optarg);
			return -1;
		}
		r->flag[e->index] = (signed char)b;
		return 0;
	case SEVERAL:
		return parse_several(e, argc, argv, r, err, len);
	case ONE:
		return add_word(e, r, optarg, err, len);
	}
	return 1;
}

static bool positive(const char *s, long long *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return !errno && !*end;
}

static int check_numbers(const struct rp3_opts *r, char *err, size_t len)
{
	static const int num[] = {RP3_PC_SAMPLING_INTERVAL, RP3_MINIMUM_OUTPUT_DATA,
				  RP3_PERFETTO_BUFFER_SIZE, RP3_PERFETTO_SHMEM_SIZE_HINT};
	long long v;

	for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++) {
		if (!r->has[num[i]] || positive(r->value[num[i]], &v))
			continue;
		for (size_t k = 0; k < N_ENTRIES; k++)
			if (entries[k].kind == ONE && entries[k].index == num[i])
				snprintf(err, len, "invalid --%s '%s': give a whole number",
					 entries[k].name, r->value[num[i]]);
		return -1;
	}
	return 0;
}

static int check_pc_sampling(const struct rp3_opts *r, bool pc_beta_env, char *err, size_t len)
{
	bool unit = r->has[RP3_PC_SAMPLING_UNIT], method = r->has[RP3_PC_SAMPLING_METHOD];
	bool interval = r->has[RP3_PC_SAMPLING_INTERVAL];
	long long v = 0;

	if (!unit && !method && !interval)
		return 0;
	if (r->flag[RP3_PC_SAMPLING_BETA_ENABLED] != 1 && !pc_beta_env) {
		snprintf(
		    err, len,
		    "PC sampling unavailable (rocprofv3): it is disabled unless enabled: add "
		    "--pc-sampling-beta-enabled or set ROCPROFILER_PC_SAMPLING_BETA_ENABLED=ON");
		return -1;
	}
	if (!unit || !method || !interval) {
		snprintf(err, len,
			 "all three PC sampling configurations need to be set (rocprofv3): give "
			 "--pc-sampling-unit, --pc-sampling-method and --pc-sampling-interval");
		return -1;
	}
	positive(r->value[RP3_PC_SAMPLING_INTERVAL], &v);
	if (v <= 0) {
		snprintf(err, len,
			 "PC sampling interval must be a positive number (rocprofv3): give "
			 "--pc-sampling-interval N, N > 0");
		return -1;
	}
	return 0;
}

int rp3_check(const struct rp3_opts *r, bool pc_beta_env, char *err, size_t len)
{
	if (r->refused && !strcmp(r->refused, "pmc")) {
		snprintf(
		    err, len,
		    "multi-pass counter collection (multiple --pmc flags) is not compatible "
		    "with attach mode (rocprofv3): give one --pmc with the counters of one pass");
		return -1;
	}
	if (r->refused && !strcmp(r->refused, "collection-period")) {
		snprintf(err, len,
			 "--collection-period is not compatible with attach mode (rocprofv3): give "
			 "the window with -d instead");
		return -1;
	}
	if (r->has[RP3_PMC] && !r->value[RP3_PMC][0]) {
		snprintf(err, len, "--pmc needs at least one counter: e.g. --pmc SQ_WAVES");
		return -1;
	}
	if (check_numbers(r, err, len))
		return -1;
	return check_pc_sampling(r, pc_beta_env, err, len);
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

/* A value appended to the one already set (ROCP_TOOL_LIBRARIES, ROCPROF_OUTPUT_FORMAT). */
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
	if (r->flag[RP3_ATTACH_SYNC_OUTPUT] == 1)
		bad |= put(e, RP3_SYNC_OUTPUT_ENV, "1");
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
	if (ctx->tool)
		bad |= put_appended(e, ctx, "ROCP_TOOL_LIBRARIES", ctx->tool, ':');
	bad |= put_output(r, ctx, e);
	for (size_t i = 0; i < sizeof(trace_vars) / sizeof(trace_vars[0]); i++)
		if (f[trace_vars[i].flag] == 1)
			bad |= put(e, trace_vars[i].var, "1");
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

/*
 * rocprofv3 compares, on reattach, every option ending in "trace", those
 * starting with pc_sampling or att, pmc, pmc_groups, output_config,
 * extra_counters and the three kernel filters, as they were given (before
 * the aggregates expand).
 */
void rp3_collection_key(const struct rp3_opts *r, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t k = 0; k < N_ENTRIES && n < len; k++) {
		const struct rp3_entry *e = &entries[k];
		size_t nl = strlen(e->name);
		bool kept = (nl > 5 && !strcmp(e->name + nl - 5, "trace")) ||
			    !strncmp(e->name, "pc-sampling", 11) || !strcmp(e->name, "pmc") ||
			    !strcmp(e->name, "output-config") || !strncmp(e->name, "kernel-i", 8) ||
			    !strncmp(e->name, "kernel-e", 8);

		if (!kept)
			continue;
		if (e->kind == SWITCH && r->flag[e->index] >= 0)
			n += (size_t)snprintf(out + n, len - n, "%s--%s%s", n ? " " : "", e->name,
					      r->flag[e->index] ? "" : "=false");
		else if (e->kind != SWITCH && r->has[e->index])
			n += (size_t)snprintf(out + n, len - n, "%s--%s %s", n ? " " : "", e->name,
					      r->value[e->index]);
	}
}

int rp3_find_tool(const struct rp3_opts *r, const char *rocm_path, char *path, size_t plen,
		  char *err, size_t elen)
{
	const char *root = r->has[RP3_ROCM_ROOT]     ? r->value[RP3_ROCM_ROOT]
			   : rocm_path && *rocm_path ? rocm_path
						     : "/opt/rocm";
	const char *from = r->has[RP3_ROCM_ROOT]     ? "--rocm-root"
			   : rocm_path && *rocm_path ? "ROCM_PATH"
						     : "ROCM_PATH unset: /opt/rocm";
	static const char *const suffix[] = {"", ".1"};

	for (int i = 0; i < 2; i++) {
		snprintf(path, plen, "%s/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so%s", root,
			 suffix[i]);
		if (!access(path, R_OK))
			return 0;
	}
	snprintf(err, elen,
		 "rocprofv3's tool is not installed: looked for "
		 "%s/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so and .so.1 (%s): set ROCM_PATH "
		 "or --rocm-root to ROCm's prefix, or give the tool with -t /path/to/libtool.so",
		 root, from);
	return -1;
}

bool rp3_is_sdk_tool(const char *list)
{
	for (const char *p = list; p && *p;) {
		size_t w = strcspn(p, ":");
		const char *base = p;

		for (const char *q = p; q < p + w; q++)
			if (*q == '/')
				base = q + 1;
		if (!strncmp(base, "librocprofiler-sdk-tool.so", 26))
			return true;
		p += w + (p[w] == ':');
	}
	return false;
}

bool rp3_d_is_path(const char *v, const char *prog, char *err, size_t len)
{
	if (!v || strspn(v, "0123456789") == strlen(v) ||
	    (v[0] == '-' && v[1] >= '0' && v[1] <= '9'))
		return false;
	snprintf(err, len,
		 "-d '%s' is not a duration: -d is the window in milliseconds here (as in "
		 "rocprof-attach); rocprofv3's output directory is --output-directory DIR (see %s "
		 "--help)",
		 v, prog);
	return true;
}

bool rp3_sync_output(void)
{
	const char *v = getenv(RP3_SYNC_OUTPUT_ENV);

	/* "1" is what rocprofv3 sends; a true word set by hand is taken as true too. */
	return v && rp3_bool(v) == 1;
}

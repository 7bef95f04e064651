/* SPDX-License-Identifier: MIT */
/*
 * rocprofv3's options: the table, the parsing and what attach mode refuses.
 * The variables each sends are in rocprofv3_vars.c.
 *
 * Read from ROCm/rocm-systems, projects/rocprofiler-sdk/source/bin/rocprofv3.py
 * at commit 01610ac2 (the newest stored; the table followed 210d1ace before),
 * function parse_arguments(), and its attach guide
 * source/docs/how-to/using-rocprofv3-process-attachment.rst. Written from
 * what that file does in attach mode (--pid), not copied:
 * - argparse, allow_abbrev=False: a switch is "--name[=BOOL]" or "--name
 *   BOOL" (y/yes/t/true/on/1, n/no/f/false/off/0, any case); an option
 *   taking several words (nargs '+' or '*': --pmc, --output-format,
 *   --summary-groups, --kernel-iteration-range, --ompt-trace) takes those
 *   that follow it up to the next word that looks like an option; one whose
 *   value looks like an option (-d --foo) is an error ("expected one
 *   argument"), unless written --name=VALUE;
 * - --pmc is action="append": several --pmc are multi-pass, refused with
 *   --pid; so is --collection-period;
 * - --ompt-trace [CATEGORY ...]: bare, or one BOOL, or categories from all
 *   thread parallel task sync mutex target device error ("all": no filter);
 *   a token holding ',' is an error;
 * - --perfetto-buffer-size is 1 to 4194303 (KB);
 * - PC sampling needs its beta switch (or ROCPROFILER_PC_SAMPLING_BETA_ENABLED
 *   set) and all three of unit, method and a positive interval.
 * Not taken (no effect in attach mode, or upstream sends nothing for them):
 * --kokkos-trace (KOKKOS_TOOLS_LIBS is read at the application's start),
 * --perfetto-buffer-fill-policy (run() reads perfetto_fill_policy, a name
 * the option does not set), -i/--input, -E/--extra-counters, --preload,
 * --profile-mpi-ranks, kernel replay, SPM and thread trace (ATT) options.
 * The upstream tool is $ROCM/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so,
 * else that name with ".1" (its SOVERSION) appended; $ROCM is the prefix
 * rocprofv3 is installed in, or --rocm-root. We have no install prefix of
 * ROCm's, so ROCM_PATH, else /opt/rocm, stand for it.
 * --attach-sync-output: ROCm/rocm-systems pull request #3179 (merged) moved
 * the tool's output in tool_detach onto a thread, and made synchronous
 * output the choice of this flag, which sends
 * ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC (01610ac2: "1" or "0" as given).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rocprofv3_opts.h"

/* (2^32 - 1) / 1024: Perfetto's size_kb times 1024 must fit 32 bits. */
#define RP3_PERFETTO_KB_MAX 4194303

enum kind { SWITCH, ONE, SEVERAL, REFUSE, OMPT };

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
    {"hip-graph-trace", 0, SWITCH, RP3_HIP_GRAPH_TRACE, NULL, false},
    {"hip-event-trace", 0, SWITCH, RP3_HIP_EVENT_TRACE, NULL, false},
    {"ompt-trace", 0, OMPT, RP3_OMPT_TRACE, NULL, false},
    {"rocshmem-trace", 0, SWITCH, RP3_ROCSHMEM_TRACE, NULL, false},
    {"hipfile-trace", 0, SWITCH, RP3_HIPFILE_TRACE, NULL, false},
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
		/* Several words: getopt takes only --name=WORD; rp3_parse takes the rest. */
		all[n + k].has_arg = entries[k].kind == ONE ? required_argument : optional_argument;
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

bool rp3_optlike(const char *s)
{
	char *end;

	if (!s || s[0] != '-' || !s[1])
		return false;
	strtod(s, &end);
	return *end != '\0';
}

bool rp3_value_is_option(const char *opt, const char *v, char *err, size_t len)
{
	if (!rp3_optlike(v))
		return false;
	snprintf(err, len,
		 "%s: '%s' is an option, not %s's value (as rocprofv3 reads it): give the "
		 "value first, or write %s=%s if it is the value",
		 opt, v, opt, opt, v);
	return true;
}

/* Each --pmc is one group; the words of a group join with ' '; a second is multi-pass. */
static void several_begin(const struct rp3_entry *e, struct rp3_opts *r)
{
	if (e->index == RP3_PMC && ++r->pmc_count == 2)
		r->refused = "pmc";
	/* argparse keeps the last one given (nargs '+' or '*' without append). */
	if (e->index != RP3_PMC || r->pmc_count == 1)
		r->value[e->index][0] = '\0';
	r->has[e->index] |= e->index == RP3_PMC;
}

/* The words after the option (argv[optind...]) up to the next option. */
static int several_words(const struct rp3_entry *e, int argc, char **argv, struct rp3_opts *r,
			 char *err, size_t len)
{
	bool keep = e->index != RP3_PMC || r->pmc_count == 1;
	int first = optind;
	char opt[64];

	/* A short option (-f) has its first word from getopt. */
	snprintf(opt, sizeof(opt), "-%c", e->shortopt);
	if (optarg && optind > 0 && optarg == argv[optind - 1] &&
	    rp3_value_is_option(opt, optarg, err, len))
		return -1;

	if (optarg && keep && add_word(e, r, optarg, err, len))
		return -1;
	while (optind < argc && !rp3_optlike(argv[optind]))
		if (keep && add_word(e, r, argv[optind++], err, len))
			return -1;
		else if (!keep)
			optind++;
	if (optarg || optind > first)
		return 0;
	if (optind < argc && strcmp(argv[optind], "--")) {
		snprintf(err, len,
			 "--%s: '%s' is an option, not a value: --%s takes the words after it, up "
			 "to the next option (e.g. --%s %s %s)",
			 e->name, argv[optind], e->name, e->name,
			 e->index == RP3_PMC ? "SQ_WAVES" : "VALUE", argv[optind]);
		return -1;
	}
	if (e->index == RP3_PMC)
		return 0; /* rp3_check says a counter is needed */
	snprintf(err, len, "--%s needs a value", e->name);
	return -1;
}

static const char *const ompt_categories =
    "all thread parallel task sync mutex target device error";

/* One category of --ompt-trace, lowercased, added to ops; *all when "all". */
static int ompt_word(const char *w, char *ops, bool *all, char *err, size_t len)
{
	char word[64];
	size_t have = strlen(ops);

	snprintf(word, sizeof(word), "%s", w);
	for (char *p = word; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	if (strchr(w, ',')) {
		snprintf(err, len,
			 "--ompt-trace: categories are separated by spaces, not commas: e.g. "
			 "--ompt-trace parallel task target (got '%s')",
			 w);
		return -1;
	}
	if (!in_choices(word, ompt_categories)) {
		snprintf(err, len, "--ompt-trace: unknown category '%s': choose from %s", w,
			 ompt_categories);
		return -1;
	}
	*all |= !strcmp(word, "all");
	snprintf(ops + have, RP3_TEXT_MAX - have, "%s%s", have ? "," : "", word);
	return 0;
}

/*
 * --ompt-trace [CATEGORY ...] (omptTraceArgAction, rocprofv3.py 01610ac2):
 * bare is true; one word that is a BOOL is that; else categories ("all":
 * every one, no filter).
 */
static int parse_ompt(int argc, char **argv, struct rp3_opts *r, char *err, size_t len)
{
	char *ops = r->value[RP3_OMPT_OPERATIONS];
	int first = optind;
	bool all = false;

	ops[0] = '\0';
	r->flag[RP3_OMPT_TRACE] = 1;
	while (optind < argc && !rp3_optlike(argv[optind]))
		optind++;
	if (!!optarg + (optind - first) == 1 && rp3_bool(optarg ? optarg : argv[first]) >= 0) {
		r->flag[RP3_OMPT_TRACE] = (signed char)rp3_bool(optarg ? optarg : argv[first]);
		return 0;
	}
	if (optarg && ompt_word(optarg, ops, &all, err, len))
		return -1;
	for (int i = first; i < optind; i++)
		if (ompt_word(argv[i], ops, &all, err, len))
			return -1;
	if (all)
		ops[0] = '\0';
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
		while (optind < argc && !rp3_optlike(argv[optind]))
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
	case OMPT:
		return parse_ompt(argc, argv, r, err, len);
	case SEVERAL:
		several_begin(e, r);
		return several_words(e, argc, argv, r, err, len);
	case ONE:
		break;
	}
	/* A separate word that looks like an option is no value (argparse). */
	if (optind > 0 && optarg == argv[optind - 1]) {
		char opt[64];

		snprintf(opt, sizeof(opt), "--%s", e->name);
		if (rp3_value_is_option(opt, optarg, err, len))
			return -1;
	}
	return add_word(e, r, optarg, err, len);
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
		if (!r->has[num[i]])
			continue;
		if (positive(r->value[num[i]], &v) && num[i] != RP3_PERFETTO_BUFFER_SIZE)
			continue;
		/* rocprofv3.py 01610ac2: PERFETTO_BUFFER_SIZE_KB_MIN/_MAX. */
		if (positive(r->value[num[i]], &v) && v >= 1 && v <= RP3_PERFETTO_KB_MAX)
			continue;
		if (num[i] == RP3_PERFETTO_BUFFER_SIZE) {
			snprintf(err, len,
				 "invalid --perfetto-buffer-size '%s': must be between 1 and %d KB "
				 "(rocprofv3)",
				 r->value[num[i]], RP3_PERFETTO_KB_MAX);
			return -1;
		}
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
		if (e->kind == OMPT && r->flag[e->index] >= 0)
			n += (size_t)snprintf(out + n, len - n, "%s--%s%s%s", n ? " " : "", e->name,
					      !r->flag[e->index]		 ? "=false"
					      : r->value[RP3_OMPT_OPERATIONS][0] ? " "
										 : "",
					      r->flag[e->index] ? r->value[RP3_OMPT_OPERATIONS]
								: "");
		else if (e->kind == SWITCH && r->flag[e->index] >= 0)
			n += (size_t)snprintf(out + n, len - n, "%s--%s%s", n ? " " : "", e->name,
					      r->flag[e->index] ? "" : "=false");
		else if (e->kind != SWITCH && e->kind != OMPT && r->has[e->index])
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

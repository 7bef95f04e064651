/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_opts.h"
#include "common/outpath.h"
#include "mpi_opts.h"
#include "launcher_help/rocattach-mpi.h"

#define DAY_MS (24LL * 3600 * 1000)

/* launcher/cli/help/rocattach-mpi.txt, also the source of the man page rocattach-mpi(1). */
const char rm_usage[] = RA_HELP_ROCATTACH_MPI;

enum {
	OPT_PID = 256,
	OPT_PID_TREE,
	OPT_SLURM_STEP,
	OPT_MPIRUN_PID,
	OPT_MPI_JOB,
	OPT_EXE,
	OPT_UID,
	OPT_RANKS,
	OPT_RANK_VAR,
	OPT_CHILDREN,
	OPT_WINDOWS,
	OPT_MAX_WINDOW,
	OPT_START_LEAD,
	OPT_CALL_TIMEOUT,
	OPT_JOBS,
	OPT_GATHER_SLOTS,
	OPT_FANOUT,
	OPT_INJECT,
	OPT_DRY_RUN,
	OPT_REPORT,
	OPT_TIMELINE,
	OPT_ONE_NODE,
	OPT_VERSION,
	OPT_ALL_USERS,
	OPT_TRACE,
	OPT_STACKS,
	OPT_STACKS_SVG,
	OPT_SAMPLE,
	OPT_FOLDED,
	OPT_FLAMEGRAPH,
	OPT_FLAME_PER_RANK,
	OPT_PPROF,
	OPT_SPEEDSCOPE,
	OPT_DETAIL,
	OPT_LATE_START,
};

static const struct option long_opts[] = {
    {"pid", required_argument, NULL, OPT_PID},
    {"pid-tree", required_argument, NULL, OPT_PID_TREE},
    {"slurm-step", required_argument, NULL, OPT_SLURM_STEP},
    {"mpirun-pid", required_argument, NULL, OPT_MPIRUN_PID},
    {"mpi-job", optional_argument, NULL, OPT_MPI_JOB},
    {"exe", required_argument, NULL, OPT_EXE},
    {"uid", required_argument, NULL, OPT_UID},
    {"all-users", no_argument, NULL, OPT_ALL_USERS},
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"rank-var", required_argument, NULL, OPT_RANK_VAR},
    {"attach-children", required_argument, NULL, OPT_CHILDREN},
    {"attach-tool-library", required_argument, NULL, 't'},
    {"attach-duration-msec", required_argument, NULL, 'd'},
    {"windows", required_argument, NULL, OPT_WINDOWS},
    {"max-window", required_argument, NULL, OPT_MAX_WINDOW},
    {"start-lead", required_argument, NULL, OPT_START_LEAD},
    {"call-timeout", required_argument, NULL, OPT_CALL_TIMEOUT},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"gather-slots", required_argument, NULL, OPT_GATHER_SLOTS},
    {"fanout", required_argument, NULL, OPT_FANOUT},
    {"inject", no_argument, NULL, OPT_INJECT},
    {"late-start", no_argument, NULL, OPT_LATE_START},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"report", required_argument, NULL, OPT_REPORT},
    {"timeline", required_argument, NULL, OPT_TIMELINE},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"detail", required_argument, NULL, OPT_DETAIL},
    {"stacks", no_argument, NULL, OPT_STACKS},
    {"stacks-svg", required_argument, NULL, OPT_STACKS_SVG},
    {"sample", required_argument, NULL, OPT_SAMPLE},
    {"folded", required_argument, NULL, OPT_FOLDED},
    {"flamegraph", required_argument, NULL, OPT_FLAMEGRAPH},
    {"flamegraph-per-rank", no_argument, NULL, OPT_FLAME_PER_RANK},
    {"pprof", required_argument, NULL, OPT_PPROF},
    {"speedscope", required_argument, NULL, OPT_SPEEDSCOPE},
    {"one-node-per-rank", no_argument, NULL, OPT_ONE_NODE},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int bad(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* "1,2,3" appended to list[*n]. */
static int add_pids(const char *s, pid_t *list, size_t *n, const char *opt, char *err, size_t len)
{
	char buf[64];
	long long v;

	for (const char *p = s;; p++) {
		size_t w = strcspn(p, ",");

		if (w == 0 || w >= sizeof(buf) || *n >= RM_MAX_PIDS)
			return bad(err, len, "invalid %s list: give PID[,PID...] of positive ids",
				   opt);
		memcpy(buf, p, w);
		buf[w] = '\0';
		if (cli_parse_ll(buf, 1, RM_MAX_PID, &v)) {
			snprintf(err, len, "invalid PID '%s' in %s: give positive process ids", buf,
				 opt);
			return -1;
		}
		list[(*n)++] = (pid_t)v;
		p += w;
		if (!*p)
			return 0;
	}
}

static int parse_uid(const char *s, long *uid, char *err, size_t len)
{
	struct passwd *pw;
	long long v;

	if (!cli_parse_ll(s, 0, UINT_MAX - 1, &v)) {
		*uid = (long)v;
		return 0;
	}
	pw = getpwnam(s);
	if (!pw)
		return bad(err, len, "unknown user '%s' for --uid: give a user name or a number",
			   s);
	*uid = (long)pw->pw_uid;
	return 0;
}

/* DELAY:DURATION:COUNT, three plain numbers ("%s" in a sscanf let "1:2:3 junk" pass). */
static int parse_windows(struct rm_opts *o, const char *s, char *err, size_t len)
{
	char buf[96], *b = NULL, *c = NULL;
	long long count;

	if (strlen(s) < sizeof(buf)) {
		strcpy(buf, s);
		b = strchr(buf, ':');
		c = b ? strchr(b + 1, ':') : NULL;
	}
	if (c) {
		*b++ = '\0';
		*c++ = '\0';
	}
	if (!c || cli_parse_ll(buf, 0, CLI_MAX_DURATION_MS, &o->delay_ms) ||
	    cli_parse_ll(b, 1, CLI_MAX_DURATION_MS, &o->duration_ms) ||
	    cli_parse_ll(c, 1, RM_MAX_WINDOWS, &count))
		return bad(
		    err, len,
		    "invalid --windows '%s': give DELAY:DURATION:COUNT in ms, e.g. 5000:1000:3 "
		    "(duration >= 1, count 1..%d)",
		    s, RM_MAX_WINDOWS);
	o->windows = (int)count;
	return 0;
}

static int one_selector(int c, struct rm_opts *o, char *err, size_t len)
{
	long long v;

	switch (c) {
	case OPT_PID:
		return add_pids(optarg, o->pids, &o->sel.n_pids, "--pid", err, len);
	case OPT_PID_TREE:
		return add_pids(optarg, o->trees, &o->sel.n_trees, "--pid-tree", err, len);
	case OPT_SLURM_STEP:
		o->sel.slurm_step = optarg;
		return 0;
	case OPT_MPIRUN_PID:
		if (cli_parse_ll(optarg, 1, INT_MAX, &v))
			return bad(err, len, "invalid --mpirun-pid '%s': give mpirun's process id",
				   optarg);
		o->sel.mpirun_pid = (pid_t)v;
		return 0;
	case OPT_MPI_JOB:
		/* --mpi-job alone: any MPI job but ours; --mpi-job= names nothing. */
		if (optarg && !*optarg)
			return bad(
			    err, len,
			    "--mpi-job= names no job: give --mpi-job=ID (its PMIX_NAMESPACE "
			    "or Open MPI job id), or --mpi-job alone for every MPI job but ours");
		o->sel.mpi_job = optarg ? optarg : "";
		return 0;
	case OPT_EXE:
		if (!*optarg || strchr(optarg, '/'))
			return bad(err, len, "invalid --exe '%s': give an executable's basename",
				   optarg);
		o->sel.exe = optarg;
		return 0;
	case OPT_UID:
		return parse_uid(optarg, &o->sel.uid, err, len);
	case OPT_ALL_USERS:
		o->sel.all_users = true;
		return 0;
	case OPT_RANKS:
		rn_ranks_free(&o->ranks);
		if (rn_ranks_parse(optarg, &o->ranks, err, len))
			return -1;
		o->have_ranks = true;
		return 0;
	case OPT_RANK_VAR:
		if (!*optarg || strchr(optarg, '='))
			return bad(err, len, "invalid --rank-var '%s': give a variable name",
				   optarg);
		o->sel.rank_var = optarg;
		return 0;
	case OPT_CHILDREN:
		v = cli_parse_bool(optarg);
		if (v < 0)
			return bad(err, len, "invalid --attach-children '%s': use true/false",
				   optarg);
		o->sel.children = v;
		return 0;
	}
	return 1; /* not a selector */
}

static int one_opt(int c, struct rm_opts *o, char *err, size_t len)
{
	long long v;
	int ret = one_selector(c, o, err, len);

	if (ret <= 0)
		return ret;
	switch (c) {
	case 't':
		return cli_take_tools(optarg, &o->tools, err, len);
	case 'd':
		if (cli_check_d_value(optarg, "rocattach-mpi", err, len))
			return -1;
		return cli_parse_ms(optarg, 0, CLI_MAX_DURATION_MS, "--attach-duration-msec",
				    &o->duration_ms, err, len);
	case OPT_WINDOWS:
		return parse_windows(o, optarg, err, len);
	case OPT_MAX_WINDOW:
		return cli_parse_ms(optarg, 1, CLI_MAX_DURATION_MS, "--max-window",
				    &o->max_window_ms, err, len);
	case OPT_START_LEAD:
		return cli_parse_ms(optarg, 0, DAY_MS, "--start-lead", &o->start_lead_ms, err, len);
	case OPT_CALL_TIMEOUT:
		return cli_parse_ms(optarg, 1, CLI_MAX_CALL_TIMEOUT_MS, "--call-timeout",
				    &o->call_timeout_ms, err, len);
	case OPT_GATHER_SLOTS:
		return bad(err, len,
			   "--gather-slots is gone: the records now come up the launcher's tree, "
			   "whose --fanout K (default %d) replaced it; drop --gather-slots",
			   RM_FANOUT_DEFAULT);
	case OPT_FANOUT:
		if (cli_parse_ll(optarg, RM_FANOUT_MIN, RM_FANOUT_MAX, &v))
			return bad(err, len, "invalid --fanout '%s': give %d to %d", optarg,
				   RM_FANOUT_MIN, RM_FANOUT_MAX);
		o->fanout = (int)v;
		return 0;
	case OPT_JOBS:
		if (cli_parse_ll(optarg, 1, RM_MAX_JOBS, &v))
			return bad(err, len, "invalid --jobs '%s': give 1 to %d", optarg,
				   RM_MAX_JOBS);
		o->jobs = (int)v;
		return 0;
	case OPT_INJECT:
		o->inject = true;
		return 0;
	case OPT_LATE_START:
		o->late_start = true;
		return 0;
	case OPT_DRY_RUN:
		o->dry_run = true;
		return 0;
	case OPT_REPORT:
		o->report = optarg;
		return 0;
	case OPT_TIMELINE:
		o->timeline = optarg;
		return 0;
	case OPT_TRACE:
		o->trace = optarg;
		return 0;
	case OPT_DETAIL:
		/* The names of report/figures.c's rm_detail_parse, which this library does not
		 * link.
		 */
		if (!strcmp(optarg, "all"))
			o->detail = RM_DETAIL_ALL;
		else if (!strcmp(optarg, "failures"))
			o->detail = RM_DETAIL_FAILURES;
		else if (!strcmp(optarg, "none"))
			o->detail = RM_DETAIL_NONE;
		else
			return bad(err, len,
				   "invalid --detail '%s': give all, failures or none (the "
				   "per-target records the report and the trace keep)",
				   optarg);
		return 0;
	case OPT_STACKS:
		o->stacks = true;
		return 0;
	case OPT_STACKS_SVG:
		o->stacks_svg = optarg;
		return 0;
	case OPT_SAMPLE:
		if (cli_parse_ll(optarg, 1, 10000, &v))
			return bad(err, len,
				   "invalid --sample '%s': give samples per second of each "
				   "thread's CPU time, 1 to 10000",
				   optarg);
		o->sample_hz = (int)v;
		return 0;
	case OPT_FOLDED:
		o->folded = optarg;
		return 0;
	case OPT_FLAMEGRAPH:
		o->flamegraph = optarg;
		return 0;
	case OPT_FLAME_PER_RANK:
		o->flame_per_rank = true;
		return 0;
	case OPT_PPROF:
		o->pprof = optarg;
		return 0;
	case OPT_SPEEDSCOPE:
		o->speedscope = optarg;
		return 0;
	case OPT_ONE_NODE:
		o->one_node_per_rank = true;
		return 0;
	case 'v':
		o->verbose++;
		return 0;
	case 'h':
		o->help = true;
		return 0;
	case OPT_VERSION:
		o->version = true;
		return 0;
	}
	return 1; /* '?' or ':': cli_bad_option says which */
}

static void defaults(struct rm_opts *o)
{
	const char *v;
	long long d;

	memset(o, 0, sizeof(*o));
	o->sel.uid = -1;
	o->sel.children = true;
	o->sel.pids = o->pids;
	o->sel.trees = o->trees;
	o->duration_ms = -1;
	o->windows = 1;
	o->max_window_ms = DAY_MS;
	o->start_lead_ms = -1;
	o->call_timeout_ms = CLI_CALL_TIMEOUT_MS;
	o->fanout = RM_FANOUT_DEFAULT;
	v = getenv("ROCPROF_ATTACH_DURATION");
	if (v && *v && !cli_parse_ll(v, 0, CLI_MAX_DURATION_MS, &d))
		o->duration_ms = d;
}

/* JOBID or JOBID.STEP, STEP a number or one of Slurm's named steps. */
static bool valid_step(const char *s)
{
	static const char *const named[] = {"batch", "extern", "interactive"};
	size_t digits = strspn(s, "0123456789");

	if (!digits || (s[digits] && s[digits] != '.'))
		return false;
	if (!s[digits])
		return true;
	s += digits + 1;
	if (*s && strspn(s, "0123456789") == strlen(s))
		return true;
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (!strcmp(s, named[i]))
			return true;
	return false;
}

static int validate(struct rm_opts *o, char *err, size_t len)
{
	const struct rn_selector *s = &o->sel;
	const char *env = getenv("ROCPROF_ATTACH_DURATION");
	long long d;

	if (env && *env &&
	    cli_parse_ms(env, 0, CLI_MAX_DURATION_MS, "ROCPROF_ATTACH_DURATION", &d, err, len))
		return -1;
	if (!s->n_pids && !s->n_trees && !s->slurm_step && !s->mpirun_pid && !s->mpi_job &&
	    !s->exe && s->uid < 0)
		return bad(err, len,
			   "no selector given: name the job with --slurm-step, --mpi-job, "
			   "--mpirun-pid, --exe, --pid or --pid-tree");
	if (s->all_users && s->uid >= 0)
		return bad(err, len,
			   "give --uid or --all-users, not both: --uid names one user, "
			   "--all-users every user");
	if (o->duration_ms > o->max_window_ms)
		return bad(err, len, "the window is longer than --max-window: raise --max-window");
	if (s->slurm_step && !valid_step(s->slurm_step))
		return bad(err, len,
			   "invalid --slurm-step '%s': use JOBID or JOBID.STEP (e.g. 1234.0)",
			   s->slurm_step);
	if (o->have_ranks)
		o->sel.ranks = &o->ranks;
	return 0;
}

/*
 * --stacks and --sample attach their own tool, in one window: no -t, no
 * --windows, no rocprofv3 options. --sample needs -d (or
 * ROCPROF_ATTACH_DURATION); --stacks alone has a 0 ms window without it:
 * the snapshot is taken at the attach.
 */
static int check_stacks(struct rm_opts *o, bool d_given, bool windows_given, char *err, size_t len)
{
	const char *opt = o->stacks ? "--stacks" : "--sample";

	if (o->stacks_svg && !o->stacks)
		return bad(err, len, "--stacks-svg draws the tree of --stacks: add --stacks");
	if ((o->folded || o->flamegraph || o->flame_per_rank || o->pprof || o->speedscope) &&
	    !o->sample_hz)
		return bad(
		    err, len,
		    "--folded, --flamegraph, --flamegraph-per-rank, --pprof and --speedscope "
		    "show the samples of --sample: add --sample HZ");
	if (o->flame_per_rank && !o->flamegraph)
		return bad(err, len,
			   "--flamegraph-per-rank names its files after --flamegraph FILE.svg: add "
			   "--flamegraph");
	if (!o->stacks && !o->sample_hz)
		return 0;
	if (o->tools)
		return bad(err, len,
			   "%s attaches its own tool (librocattach-stacks.so): give %s without -t",
			   opt, opt);
	if (windows_given)
		return bad(err, len, "%s has one window: give %s without --windows", opt, opt);
	if (o->rp3.any)
		return bad(err, len,
			   "%s attaches its own tool, not rocprofv3's: give %s without "
			   "rocprofv3's options",
			   opt, opt);
	if (o->sample_hz && o->duration_ms < 0)
		return bad(err, len,
			   "--sample needs a window to sample: give its length with -d MS");
	if (!d_given && o->duration_ms < 0)
		o->duration_ms = 0;
	return 0;
}

/*
 * --late-start is one window with no end: the tools stay until each process
 * exits (ROCPROF_ATTACH_DURATION is ignored). Nothing that ends a window, or
 * loads another tool, goes with it.
 */
static int check_late(struct rm_opts *o, bool d_given, bool windows_given, char *err, size_t len)
{
	const char *with = d_given	   ? "-d"
			   : windows_given ? "--windows"
			   : o->stacks	   ? "--stacks"
			   : o->sample_hz  ? "--sample"
			   : o->inject	   ? "--inject"
					   : NULL;

	if (!o->late_start)
		return 0;
	if (!with) {
		o->duration_ms = -1; /* ROCPROF_ATTACH_DURATION has nothing to end */
		return 0;
	}
	return bad(err, len,
		   "--late-start cannot go with %s: a late start has no end and loads the tool "
		   "given with -t (or rocprofv3's); drop %s",
		   with, with);
}

int rm_opts_check_outputs(const struct rm_opts *o, char *err, size_t len)
{
	if (ra_outpath_check(o->report, "--report", err, len) ||
	    ra_outpath_check(o->timeline, "--timeline", err, len) ||
	    ra_outpath_check(o->trace, "--trace", err, len) ||
	    ra_outpath_check(o->stacks_svg, "--stacks-svg", err, len) ||
	    ra_outpath_check(o->folded, "--folded", err, len) ||
	    ra_outpath_check(o->flamegraph, "--flamegraph", err, len) ||
	    ra_outpath_check(o->pprof, "--pprof", err, len) ||
	    ra_outpath_check(o->speedscope, "--speedscope", err, len))
		return -1;
	return 0;
}

int rm_opts_parse(int argc, char **argv, struct rm_opts *o, char *err, size_t len)
{
	bool windows_given = false, d_given = false;
	struct option *all;
	int c, ret = 0;

	defaults(o);
	rp3_init(&o->rp3);
	err[0] = '\0';
	optind = 0; /* reset getopt, so the parser can run more than once */
	opterr = 0;
	all = rp3_long_options(long_opts);
	if (!all)
		return bad(err, len, "out of memory");
	while (!ret && (c = getopt_long(argc, argv, "+:t:d:vh" RP3_SHORT_OPTS, all, NULL)) != -1) {
		ret = one_opt(c, o, err, len);
		windows_given |= c == OPT_WINDOWS;
		d_given |= c == 'd';
		if (ret > 0)
			ret = rp3_parse(c, argc, argv, &o->rp3, err, len);
		if (ret > 0)
			cli_bad_option("rocattach-mpi", c, argv, all, err, len);
	}
	free(all);
	if (ret)
		return -1;
	if (windows_given && d_given)
		return bad(err, len, "give either -d or --windows, not both");
	if (optind < argc)
		return bad(err, len, "unexpected argument '%s': see rocattach-mpi --help",
			   argv[optind]);
	if (o->help || o->version)
		return 0;
	if (rp3_check(&o->rp3, getenv("ROCPROFILER_PC_SAMPLING_BETA_ENABLED") != NULL, err, len))
		return -1;
	if (check_late(o, d_given, windows_given, err, len) ||
	    check_stacks(o, d_given, windows_given, err, len))
		return -1;
	return validate(o, err, len);
}

void rm_opts_free(struct rm_opts *o)
{
	rn_ranks_free(&o->ranks);
}

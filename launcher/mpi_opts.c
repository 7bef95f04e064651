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
#include "mpi_opts.h"

#define DAY_MS (24LL * 3600 * 1000)
#define MAX_WINDOWS 100000

const char rm_usage[] =
	"Usage: mpirun --map-by ppr:1:node rocattach-mpi [SELECTORS] [-t LIBS] [-d MS] [OPTIONS]\n"
	"       srun --overlap --jobid=J --ntasks-per-node=1 rocattach-mpi --slurm-step J.S ...\n"
	"\n"
	"Attach profiling tool libraries to a parallel job's processes on every node at\n"
	"once, hold a synchronized window, detach, and report per node and per process.\n"
	"One rank per node does the work (extra ranks on a node only take part).\n"
	"\n"
	"Selectors (sources are united, filters intersect; at least one is needed):\n"
	"  --pid PID[,PID...]        these processes\n"
	"  --pid-tree PID            this process and its descendants\n"
	"  --slurm-step J[.S]        tasks of Slurm step J.S on each node (J alone: every\n"
	"                            step of job J except the launcher's own)\n"
	"  --mpirun-pid PID          MPI ranks among the descendants of this mpirun\n"
	"  --mpi-job[=ID]            ranks of the MPI job ID (PMIX_NAMESPACE or OMPI job id);\n"
	"                            without ID: your ranks of any MPI job but the launcher's\n"
	"  --exe NAME                filter: executable basename (alone: your such processes)\n"
	"  --uid UID|USER            filter: owner (alone: that user's processes); also what\n"
	"                            the selectors that name nothing reach instead of yours\n"
	"  --all-users               the selectors that name nothing reach every user's\n"
	"                            processes (an administrator's option)\n"
	"  --ranks LIST              filter: job ranks, e.g. 0-3,8\n"
	"  --rank-var NAME           read the job rank from NAME (default: OMPI_COMM_WORLD_RANK,\n"
	"                            PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK, SLURM_PROCID)\n"
	"  --attach-children=BOOL    also attach descendants of each match (default true)\n"
	"\n"
	"Whose processes: --pid, --pid-tree, --slurm-step, --mpirun-pid and --mpi-job=ID take\n"
	"exactly what they name. The selectors that name nothing (--mpi-job without ID, --exe\n"
	"alone) and the descendants --attach-children adds reach only your own processes (your\n"
	"real uid, even as root; descendants of the match's own user too), unless --uid or\n"
	"--all-users says otherwise.\n"
	"\n"
	"Window:\n"
	"  -t, --attach-tool-library LIST  colon-separated tools (env ROCPROF_ATTACH_TOOL_LIBRARY)\n"
	"  -d, --attach-duration-msec MS   window length (env ROCPROF_ATTACH_DURATION); without\n"
	"                            it the window ends on Enter or SIGINT at rank 0\n"
	"  --windows DELAY:DURATION:COUNT  COUNT windows of DURATION ms, DELAY ms apart\n"
	"  --max-window MS           detach after MS even if nobody says stop (default 1 day)\n"
	"  --start-lead MS           how far ahead rank 0 schedules the start (default: auto)\n"
	"\n"
	"Other:\n"
	"  --jobs N                  parallel attaches per node (default: from targets and cores)\n"
	"  --inject                  load the agent into targets started without attach support\n"
	"  --dry-run                 list, per node, what would be attached; attach nothing\n"
	"  --report FILE.json        write the whole run as JSON (schema in the README)\n"
	"  --timeline FILE.svg       draw the windows, one lane per node and target\n"
	"  --trace FILE.json         the windows as a Chrome/Perfetto trace (ui.perfetto.dev):\n"
	"                            a process per node, a track per target (calls, tools'\n"
	"                            window, failures); CLOCK_REALTIME of each node, in us\n"
	"  --one-node-per-rank       treat every rank as its own node (benchmarks, tests)\n"
	"  -v, --verbose             more messages;  -h, --help\n"
	"  --version                 this version and the rocprofiler-sdk rocattach API's\n"
	"\n"
	"The run ends when every window ran, when every target of every node has exited\n"
	"(stop reason 'job ended': targets that exit are 'exited', not failed), when no\n"
	"target could attach the tool (at the first attach: 'tool failed'), or on a signal.\n"
	"\n"
	"Exit codes: 0 all attached and detached (targets that exited meanwhile included),\n"
	"1 internal/MPI error, 2 bad usage, 3 no targets found, 4 some targets failed (or\n"
	"the tool failed on every target), 5 interrupted by a signal.\n";

enum {
	OPT_PID = 256, OPT_PID_TREE, OPT_SLURM_STEP, OPT_MPIRUN_PID, OPT_MPI_JOB, OPT_EXE,
	OPT_UID, OPT_RANKS, OPT_RANK_VAR, OPT_CHILDREN, OPT_WINDOWS, OPT_MAX_WINDOW,
	OPT_START_LEAD, OPT_JOBS, OPT_INJECT, OPT_DRY_RUN, OPT_REPORT, OPT_TIMELINE,
	OPT_ONE_NODE, OPT_VERSION, OPT_ALL_USERS, OPT_TRACE,
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
	{"jobs", required_argument, NULL, OPT_JOBS},
	{"inject", no_argument, NULL, OPT_INJECT},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"report", required_argument, NULL, OPT_REPORT},
	{"timeline", required_argument, NULL, OPT_TIMELINE},
	{"trace", required_argument, NULL, OPT_TRACE},
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
			return bad(err, len, "invalid %s list: give PID[,PID...] of positive ids", opt);
		memcpy(buf, p, w);
		buf[w] = '\0';
		if (cli_parse_ll(buf, 1, INT_MAX, &v)) {
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
		return bad(err, len, "unknown user '%s' for --uid: give a user name or a number", s);
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
	if (!c || cli_parse_ll(buf, 0, DAY_MS, &o->delay_ms) ||
	    cli_parse_ll(b, 1, DAY_MS, &o->duration_ms) || cli_parse_ll(c, 1, MAX_WINDOWS, &count))
		return bad(err, len,
			   "invalid --windows '%s': give DELAY:DURATION:COUNT in ms, e.g. 5000:1000:3 "
			   "(duration >= 1, count 1..100000)", s);
	o->windows = (int)count;
	return 0;
}

static int parse_ms(const char *s, long long min, long long *out, const char *opt, char *err,
		    size_t len)
{
	if (cli_parse_ll(s, min, DAY_MS, out)) {
		snprintf(err, len, "invalid %s '%s': give whole milliseconds from %lld to %lld", opt, s,
			 min, DAY_MS);
		return -1;
	}
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
			return bad(err, len, "invalid --rank-var '%s': give a variable name", optarg);
		o->sel.rank_var = optarg;
		return 0;
	case OPT_CHILDREN:
		v = cli_parse_bool(optarg);
		if (v < 0)
			return bad(err, len, "invalid --attach-children '%s': use true/false", optarg);
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
		if (cli_check_tools(optarg, err, len))
			return -1;
		o->tools = optarg;
		return 0;
	case 'd':
		return parse_ms(optarg, 0, &o->duration_ms, "--attach-duration-msec", err, len);
	case OPT_WINDOWS:
		return parse_windows(o, optarg, err, len);
	case OPT_MAX_WINDOW:
		return parse_ms(optarg, 1, &o->max_window_ms, "--max-window", err, len);
	case OPT_START_LEAD:
		return parse_ms(optarg, 0, &o->start_lead_ms, "--start-lead", err, len);
	case OPT_JOBS:
		if (cli_parse_ll(optarg, 1, 256, &v))
			return bad(err, len, "invalid --jobs '%s': give 1 to 256", optarg);
		o->jobs = (int)v;
		return 0;
	case OPT_INJECT:
		o->inject = true;
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
	default:
		return bad(err, len, "unknown or incomplete option: see rocattach-mpi --help");
	}
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
	v = getenv("ROCPROF_ATTACH_DURATION");
	if (v && *v && !cli_parse_ll(v, 0, DAY_MS, &d))
		o->duration_ms = d;
}

/* An output file must be creatable: say so before any target is touched. */
static int check_output(const char *path, const char *opt, char *err, size_t len)
{
	char dir[4096], *slash;

	if (!path)
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (!*path || access(dir, W_OK)) {
		snprintf(err, len, "cannot write %s '%s': directory '%s' %s", opt, path, dir,
			 *path ? strerror(errno) : "is not given");
		return -1;
	}
	return 0;
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

	if (env && *env && cli_parse_ll(env, 0, DAY_MS, &d))
		return bad(err, len, "invalid ROCPROF_ATTACH_DURATION '%s': give whole milliseconds",
			   env);
	if (!s->n_pids && !s->n_trees && !s->slurm_step && !s->mpirun_pid && !s->mpi_job &&
	    !s->exe && s->uid < 0)
		return bad(err, len, "no selector given: name the job with --slurm-step, --mpi-job, "
				     "--mpirun-pid, --exe, --pid or --pid-tree");
	if (s->all_users && s->uid >= 0)
		return bad(err, len, "give --uid or --all-users, not both: --uid names one user, "
				     "--all-users every user");
	if (o->duration_ms > o->max_window_ms)
		return bad(err, len, "the window is longer than --max-window: raise --max-window");
	if (s->slurm_step && !valid_step(s->slurm_step))
		return bad(err, len, "invalid --slurm-step '%s': use JOBID or JOBID.STEP (e.g. 1234.0)",
			   s->slurm_step);
	if (o->have_ranks)
		o->sel.ranks = &o->ranks;
	return 0;
}

int rm_opts_check_outputs(const struct rm_opts *o, char *err, size_t len)
{
	if (check_output(o->report, "--report", err, len) ||
	    check_output(o->timeline, "--timeline", err, len) ||
	    check_output(o->trace, "--trace", err, len))
		return -1;
	return 0;
}

int rm_opts_parse(int argc, char **argv, struct rm_opts *o, char *err, size_t len)
{
	bool windows_given = false, d_given = false;
	int c;

	defaults(o);
	err[0] = '\0';
	optind = 0; /* reset getopt, so the parser can run more than once */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+t:d:vh", long_opts, NULL)) != -1) {
		windows_given |= c == OPT_WINDOWS;
		d_given |= c == 'd';
		if (one_opt(c, o, err, len))
			return -1;
	}
	if (windows_given && d_given)
		return bad(err, len, "give either -d or --windows, not both");
	if (optind < argc)
		return bad(err, len, "unexpected argument '%s': see rocattach-mpi --help",
			   argv[optind]);
	if (o->help || o->version)
		return 0;
	return validate(o, err, len);
}

void rm_opts_free(struct rm_opts *o)
{
	rn_ranks_free(&o->ranks);
}

/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi: one rank per node; rank 0 coordinates synchronized
 * profiling windows and gathers every node's records.
 *
 *   config   rank 0 parses argv into a plan (options resolved, its ROCP*
 *            variables) and broadcasts it; the others take it as it is
 *   select   the worker of each node finds its targets (no MPI)
 *   survey   each rank's records go up the tree to rank 0 (found / dry-run)
 *   windows  window.h: per window, clocks, start, attach, hold, stop,
 *            detach, records, all point to point with deadlines (flow.h)
 *   report   rank 0 tells every rank the exit code, writes JSON, SVG and the
 *            trace, then prints the summary (last, on its progress stream)
 *
 * Errors are data (records), never a reason to leave the sequence. A rank
 * that dies or stops answering is lost: rank 0 reports it and goes on
 * without it (exit 6); a rank that no longer hears its parent detaches its
 * own targets and ends.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "diff.h"
#include "main.h"
#include "rocprofv3.h"
#include "stacks_tree.h"
#include "startup.h"
#include "tree.h"
#include "user_env.h"

/* The library's messages, prefixed host:rank so thousands of ranks stay readable. */
static void log_cb(int level, const char *msg, void *user)
{
	const struct ctx *c = user;
	static const char *const lv[] = {"error", "warning", "info", "debug", "trace"};

	if (level < ROCATTACH_LOG_ERROR || level > ROCATTACH_LOG_TRACE)
		level = ROCATTACH_LOG_TRACE;
	fprintf(stderr, "rocattach-mpi[%s:%d] %s: %s\n", c->self.host, c->self.rank, lv[level],
		msg);
}

/* ------------------------------------------------------------------------ */
/*
 * Configuration: one plan on every rank. Rank 0 alone parses the command
 * line and resolves what could differ between nodes (user names, the
 * environment's defaults) into a plan (plan.h); every other rank takes that
 * plan and rank 0's ROCP* and ROCATTACH_* variables, and derives nothing
 * itself. A rank that cannot take the plan stops every rank.
 */

/*
 * The start-up's collectives, each waited for until STARTUP_TIMEOUT_NS
 * after MPI_Init: a rank that never joins (dead, or its node cut off)
 * ends the run rather than hanging it.
 */
static struct rm_startup startup_of(struct ctx *c)
{
	return (struct rm_startup){&c->self, &c->link, c->setup_at[1] + STARTUP_TIMEOUT_NS};
}

void startup_wait(struct ctx *c, MPI_Request *req)
{
	struct rm_startup s = startup_of(c);

	rm_startup_wait(&s, req);
}

static void bcast(struct ctx *c, void *buf, int count, MPI_Datatype type)
{
	MPI_Request req;

	RM_MPI(&c->link, RM_ALL, "", MPI_Ibcast, buf, count, type, 0, MPI_COMM_WORLD, &req);
	startup_wait(c, &req);
}

static void bcast_plan(struct ctx *c, char **text)
{
	uint64_t len = c->self.rank == 0 ? strlen(*text) + 1 : 0;

	bcast(c, &len, 1, MPI_UINT64_T);
	if (len > RM_PLAN_MAX) {
		rm_rank_error(&c->self, "rank 0's plan takes %llu bytes, more than %d: ending",
			      (unsigned long long)len, RM_PLAN_MAX);
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	}
	if (c->self.rank != 0)
		*text = malloc(len ? len : 1);
	if (!*text)
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	bcast(c, *text, (int)len, MPI_CHAR);
}

/*
 * --stacks, --sample: rank 0 finds the stack tool. A dry run attaches
 * nothing: it says what a run would stop on, and goes on.
 */
static int stacks_setup(struct ctx *c, char *err, size_t len)
{
	if (!rm_stacks_on(&c->o) || !rm_stacks_find_tool(&c->o, err, len))
		return 0;
	if (!c->o.dry_run)
		return RM_EXIT_FAILED;
	fprintf(stderr, "rocattach-mpi: warning: %s (a run would stop here, exit 4)\n", err);
	return 0;
}

/* 0 to go on, else the exit code every rank uses (-1: done, nothing to attach). */
static int configure(struct ctx *c, int argc, char **argv)
{
	char err[512], *text = NULL;
	int code = 0, bad = 0, any = 0;
	struct rm_startup su = startup_of(c);

	rm_user_env_gather(&su);
	if (c->self.rank == 0) {
		/* What the user set, before the options add theirs. */
		rm_plan_keep_user_env();
		c->argc = argc;
		c->argv = argv;
		if (c->self.sfd < 0) {
			code = RM_EXIT_ERROR;
			rm_say_to(&c->self, stderr,
				  "rank 0 cannot read its signals (signalfd: %s): a stop by "
				  "signal would be lost; stopping every rank",
				  strerror(c->self.sfd_errno));
		} else if (rm_opts_parse(argc, argv, &c->o, err, sizeof(err)) ||
			   rm_opts_check_outputs(&c->o, err, sizeof(err))) {
			code = RM_EXIT_USAGE;
			rm_say_to(&c->self, stderr, "%s", err);
		} else if (c->o.help || c->o.version) {
			if (c->o.help)
				fputs(rm_usage, stdout);
			if (c->o.version)
				printf("rocattach-mpi %s (rocprofiler-sdk rocattach API %s)\n",
				       ROCATTACH_VERSION_STRING, ROCATTACH_SDK_VERSION_STRING);
			code = -1;
		} else if ((code = stacks_setup(c, err, sizeof(err)))) {
			rm_say_to(&c->self, stderr, "%s", err);
		} else if ((code = rm_rocprofv3_setup(
				&c->o, c->o.verbose ? (c->o.dry_run ? stdout : stderr) : NULL, err,
				sizeof(err)))) {
			rm_say_to(&c->self, stderr, "%s", err);
		} else if (rm_plan_env_bytes() > RM_PLAN_ENV_MAX) {
			code = RM_EXIT_USAGE;
			rm_say_to(&c->self, stderr,
				  "the ROCP* and ROCATTACH_* variables take more than %d bytes, "
				  "too many to send to every node: unset some, or give options",
				  RM_PLAN_ENV_MAX);
		} else if (!(text = rm_plan_encode(&c->o))) {
			rm_say_to(&c->self, stderr, "cannot encode the plan: out of memory");
			code = RM_EXIT_ERROR;
		}
	}
	/* Rank 0's verdict counts, so all ranks leave or stay together. */
	bcast(c, &code, 1, MPI_INT);
	if (code)
		return code;
	bcast_plan(c, &text);
	if (c->self.rank != 0) {
		bad = rm_plan_decode(text, &c->o, &c->plan, err, sizeof(err));
		if (!bad && c->self.sfd < 0)
			bad = snprintf(err, sizeof(err),
				       "cannot read its signals (signalfd: %s): a "
				       "stop by signal would be lost",
				       strerror(c->self.sfd_errno)) > 0;
		if (!bad)
			rm_user_env_note(&c->plan);
		if (!bad && rm_plan_apply_env(&c->plan))
			bad =
			    snprintf(err, sizeof(err), "cannot set rank 0's environment here") > 0;
		if (!bad) {
			err[0] = '\0';
			bad = rm_rocprofv3_check_tool(&c->o, err, sizeof(err));
			if (!bad && err[0])
				fprintf(stderr, "rocattach-mpi[%s:%d] warning: %s\n", c->self.host,
					c->self.rank, err);
		}
		if (bad)
			fprintf(stderr, "rocattach-mpi[%s:%d] error: %s\n", c->self.host,
				c->self.rank, err);
	}
	free(text);
	MPI_Request req;

	RM_MPI(&c->link, RM_ALL, "", MPI_Iallreduce, &bad, &any, 1, MPI_INT, MPI_MAX,
	       MPI_COMM_WORLD, &req);
	startup_wait(c, &req);
	if (any)
		rm_say_to(&c->self, stderr,
			  "a rank could not start (see its error): "
			  "stopping every rank");
	return any == RM_EXIT_FAILED ? RM_EXIT_FAILED : any ? RM_EXIT_ERROR : 0;
}

/* ------------------------------------------------------------------------ */
/* Who works: the lowest rank of each node (or every rank, for tests). */

static void elect(struct ctx *c)
{
	MPI_Comm node;
	int local;

	if (c->o.one_node_per_rank) {
		c->part.worker = true;
		return;
	}
	/* Failures end every rank (RM_ALL): no target is touched yet. */
	RM_MPI(&c->link, RM_ALL, "", MPI_Comm_split_type, MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
	       c->self.rank, MPI_INFO_NULL, &node);
	RM_MPI(&c->link, RM_ALL, "", MPI_Comm_rank, node, &local);
	c->part.worker = local == 0;
	RM_MPI(&c->link, RM_ALL, "", MPI_Comm_free, &node);
}

static void select_targets(struct ctx *c)
{
	uint64_t t0 = ra_monotonic_ns(), t1, t2;
	char err[512];

	if (!c->part.worker)
		return;
	c->o.sel.self = getpid();
	if (rn_select(&c->o.sel, &c->self.t, &c->self.n, err, sizeof(err))) {
		snprintf(c->part.node_error, sizeof(c->part.node_error), "%.*s",
			 (int)sizeof(c->part.node_error) - 1, err);
		c->self.t = NULL;
		c->self.n = 0;
		return;
	}
	t1 = ra_monotonic_ns();
	if (c->self.n && rn_topology(c->self.t, c->self.n, err, sizeof(err)))
		fprintf(stderr, "rocattach-mpi[%s:%d] warning: topology: %s\n", c->self.host,
			c->self.rank, err);
	t2 = ra_monotonic_ns();
	rn_probe_sides(c->self.t, c->self.n);
	rn_bind_away(c->self.t, c->self.n);
	c->part.node_ns[0] = t1 - t0;
	c->part.node_ns[1] = t2 - t1;
	c->part.node_ns[2] = ra_monotonic_ns() - t2;
	if (c->self.n)
		c->part.watch = rn_watch_open(c->self.t, c->self.n);
}

/*
 * With -v, where the start-up went, before any attach: rank 0's MPI_Init,
 * plan and election, and the slowest node's selection, topology and probes
 * of each target's side (from the survey's records), to the survey's end.
 */
static void say_setup(struct ctx *c)
{
	const uint64_t *a = c->setup_at, *worst = c->roster.worst_node_ns;

	if (c->o.verbose)
		rm_say(&c->self,
		       "setup: MPI_Init %.1f ms, plan %.1f ms, election %.1f ms; slowest node: "
		       "selection %.1f ms, topology %.1f ms, target sides %.1f ms; to here %.1f ms",
		       (double)(a[1] - a[0]) / 1e6, (double)(a[2] - a[1]) / 1e6,
		       (double)(a[3] - a[2]) / 1e6, (double)worst[0] / 1e6, (double)worst[1] / 1e6,
		       (double)worst[2] / 1e6, (double)(ra_monotonic_ns() - a[0]) / 1e6);
}

static const char mine_only[] = "; --mpi-job without ID and --exe alone select only your own "
				"processes: name the job, or add --uid USER or --all-users";

/* Only the caller's processes were looked at: no source named a job or pid, no user given. */
static bool unnamed_scope(const struct rn_selector *s)
{
	bool named = s->n_pids || s->n_trees || s->slurm_step || s->mpirun_pid ||
		     (s->mpi_job && *s->mpi_job);

	return !named && s->uid < 0 && !s->all_users;
}

static size_t count_targets(const struct rm_node *nodes, size_t n, size_t *max)
{
	size_t total = 0;

	*max = 0;
	for (size_t i = 0; i < n; i++) {
		total += rm_found(&nodes[i]);
		if (rm_found(&nodes[i]) > *max)
			*max = rm_found(&nodes[i]);
	}
	return total;
}

/* Rank 0: found targets, or the dry-run listing. 0 to go on, else the exit code. */
static int survey(struct ctx *c)
{
	struct rm_node *nodes = NULL;
	size_t n_nodes = 0, empty = 0;
	int code = 0;

	rm_collect_records(&c->flow, 0, &nodes, &n_nodes, ra_monotonic_ns(), GRACE_SURVEY_NS,
			   "of the start");
	rm_win_take_cut(&c->win);
	say_setup(c);
	c->win.total_targets = count_targets(nodes, n_nodes, &c->win.max_targets);
	c->win.survey_probe_ns = c->roster.worst_node_ns[2];
	/* Decided once, before window 1: each node cuts every window's records at it. */
	c->roster.run.cut.survey_targets = c->win.total_targets;
	c->roster.run.cut.level =
	    c->o.detail != RM_DETAIL_AUTO ? c->o.detail : rm_detail_default(c->win.total_targets);
	for (size_t i = 0; i < n_nodes; i++)
		empty += rm_found(&nodes[i]) == 0;
	c->win.nodes_alive = (int)(n_nodes - empty);
	rm_say(&c->self, "found %zu target%s on %zu node%s (%zu without targets)",
	       c->win.total_targets, c->win.total_targets == 1 ? "" : "s", n_nodes,
	       n_nodes == 1 ? "" : "s", empty);
	for (size_t i = 0; i < n_nodes; i++)
		if (nodes[i].error)
			rm_say(&c->self, "%s: %s", nodes[i].host, nodes[i].error);
	if (c->o.dry_run)
		rm_print_dry_run(stdout, nodes, n_nodes);
	if (!c->win.total_targets) {
		rm_say(&c->self,
		       "no targets found on any node: check the selector (try --dry-run, "
		       "--attach-children, or run where the job runs)%s",
		       unnamed_scope(&c->o.sel) ? mine_only : "");
		code = RM_EXIT_NO_TARGETS;
	} else if (c->o.dry_run) {
		code = -1;
	}
	rm_free_nodes(nodes, n_nodes);
	return code;
}

/*
 * Where rank 0 keeps the gathered records (launcher/report/store.c): a temporary
 * file in TMPDIR, else /var/tmp (on disk where /tmp is in memory), else
 * /tmp. Without one they stay in memory, as said.
 */
static void open_store(struct ctx *c)
{
	const char *dirs[] = {getenv("TMPDIR"), "/var/tmp", "/tmp"};
	char err[600] = "";

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !c->roster.run.store; i++)
		if (dirs[i] && *dirs[i])
			c->roster.run.store = rm_store_open(dirs[i], err, sizeof(err));
	if (!c->roster.run.store)
		rm_say(&c->self, "warning: %s; the records are kept in memory instead", err);
}

static void init_run(struct ctx *c)
{
	struct rm_config *cfg = &c->roster.run.cfg;

	c->roster.run.started_ns = ra_realtime_ns();
	cfg->argc = c->argc;
	cfg->argv = c->argv;
	cfg->tools = c->o.tools ? c->o.tools : getenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	cfg->duration_ms = c->o.duration_ms;
	cfg->delay_ms = c->o.delay_ms;
	cfg->windows = c->o.windows;
	cfg->jobs = c->o.jobs;
	cfg->inject = c->o.inject;
	cfg->ranks = c->self.size;
	cfg->detail = c->o.detail;
	c->roster.run.sample_hz = c->o.sample_hz;
	c->roster.run.flame_per_rank = c->o.flame_per_rank;
	if ((c->o.stacks && !(c->roster.run.stacks = ra_stack_tree_new())) ||
	    (c->o.sample_hz && !(c->roster.run.samples = ra_stack_tree_new()))) {
		rm_rank_error(&c->self, "--stacks: out of memory for the tree");
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	}
}

/* Rank 0's records: the windows' and each rank's last ones. */
static void free_run(struct ctx *c)
{
	rm_roster_free(&c->roster);
	rm_flow_free(&c->flow);
	free(c->self.t);
	rm_store_close(c->roster.run.store);
	ra_stack_tree_free(c->roster.run.stacks);
	ra_stack_tree_free(c->roster.run.samples);
	free(c->roster.run.samples_text);
	free(c->part.stacks.samples);
	free(c->part.stacks.timed);
	free(c->roster.run.timed_text);
	free(c->part.stacks.text);
	rm_stacks_cleanup(&c->part.stacks);
}

/*
 * rocattach-mpi --check-options OPTIONS...: parse them as a run would, with
 * no MPI and nothing touched, and say what is wrong in one line (exit 2).
 * rocattach-slurm asks this before it asks Slurm anything.
 */
static int check_options(int argc, char **argv)
{
	struct rm_opts o = {0};
	char err[512];
	int bad;

	argv[1] = argv[0];
	bad = rm_opts_parse(argc - 1, argv + 1, &o, err, sizeof(err));
	if (bad)
		fprintf(stderr, "rocattach-mpi: %s\n", err);
	rm_opts_free(&o);
	return bad ? RM_EXIT_USAGE : RM_EXIT_OK;
}

/* The rooms wired together: each holds its own state and the rooms below it. */
static void wire(struct ctx *c)
{
	c->self.sfd = -1;
	c->self.stdin_open = true;
	c->link.self = &c->self;
	c->link.parent = -1;
	c->roster.self = &c->self;
	c->flow.self = &c->self;
	c->flow.link = &c->link;
	c->flow.part = &c->part;
	c->win = (struct rm_win){
	    .self = &c->self, .link = &c->link, .flow = &c->flow, .part = &c->part, .o = &c->o};
}

/* After the plan: rank 0's roster, the tree, this rank's options where the rooms read them. */
static void wire_plan(struct ctx *c)
{
	c->self.enter_ends = c->o.duration_ms < 0;
	c->self.call_timeout_ms = (unsigned)c->o.call_timeout_ms;
	c->flow.verbose = c->o.verbose;
	rm_flow_init(&c->flow, c->o.fanout);
	if (c->self.rank != 0)
		return;
	c->roster.k = c->flow.k;
	c->flow.roster = &c->roster;
	c->win.roster = &c->roster;
	if (!(c->roster.peers = calloc((size_t)c->self.size, sizeof(*c->roster.peers))))
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
}

/* Rank 0: the survey, the windows, the end. Returns the exit code; *lost: a rank was lost. */
static int run_root(struct ctx *c, bool *lost)
{
	int code;

	open_store(c);
	code = survey(c);
	if (code) {
		rm_send_end(c, code);
	} else {
		rm_run_windows(&c->win);
		code = rm_finish(c);
	}
	*lost = c->roster.lost_count > 0;
	return code;
}

/* The other ranks: the survey's records up, then each window as rank 0 orders it. */
static int run_other(struct ctx *c, bool *lost)
{
	const struct rm_flow *f = &c->flow;

	rm_records_up(&c->flow, 0, ra_monotonic_ns(), GRACE_SURVEY_NS);
	c->win.next_deadline = ra_monotonic_ns() + GRACE_SURVEY_NS + LATE_RETRY_NS + CLOCK_LOST_NS +
			       GRACE_NEXT_NS + (uint64_t)f->height * LEVEL_STEP_NS +
			       (uint64_t)rm_tree_children(0, f->k, c->self.size) * 2 * RA_NS_PER_MS;
	return rm_follow_windows(&c->win, lost);
}

/* Every rank lives: what is still in flight completes; then MPI ends. */
static void end_mpi(struct ctx *c)
{
	rm_outbox_end(&c->link);
	free_run(c);
	if (MPI_Finalize() != MPI_SUCCESS)
		rm_rank_error(&c->self, "MPI_Finalize failed");
}

int main(int argc, char **argv)
{
	static struct ctx c;
	bool lost = false;
	sigset_t set;
	int code;

	if (argc > 1 && !strcmp(argv[1], "--check-options"))
		return check_options(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--diff"))
		return rm_diff_main(argc, argv);
	wire(&c);
	c.setup_at[0] = ra_monotonic_ns();
	/* Before MPI_Init: the threads it starts inherit the mask. */
	rm_block_signals(&set);
	c.self.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	c.self.sfd_errno = errno;
	gethostname(c.self.host, sizeof(c.self.host) - 1);
	c.self.rank = -1;
	if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
		rm_rank_error(&c.self, "MPI_Init failed: ending (exit %d)", RM_EXIT_ERROR);
		return RM_EXIT_ERROR;
	}
	c.setup_at[1] = ra_monotonic_ns();
	/*
	 * Errors are returned, not fatal: a send to a rank that died fails (Open
	 * MPI's TCP transport cannot reconnect). Every call is checked (RM_MPI):
	 * a failure with a rank makes it lost, and so does a rank's silence past
	 * its deadline.
	 */
	RM_MPI(&c.link, RM_ALL, "", MPI_Comm_set_errhandler, MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	RM_MPI(&c.link, RM_ALL, "", MPI_Comm_rank, MPI_COMM_WORLD, &c.self.rank);
	RM_MPI(&c.link, RM_ALL, "", MPI_Comm_size, MPI_COMM_WORLD, &c.self.size);
	rocattach_set_log_callback(log_cb, &c);
	code = configure(&c, argc, argv);
	if (code)
		goto out;
	if (c.o.verbose)
		rocattach_set_log_level(c.o.verbose > 1 ? ROCATTACH_LOG_DEBUG : ROCATTACH_LOG_INFO);
	c.setup_at[2] = ra_monotonic_ns();
	init_run(&c);
	elect(&c);
	rm_user_env_say(&c.self, c.part.worker);
	c.setup_at[3] = ra_monotonic_ns();
	wire_plan(&c);
	select_targets(&c);
	/* Every parent measures its children's clocks, all parents at once. */
	rm_flow_measure(&c.flow, true);
	code = c.self.rank == 0 ? run_root(&c, &lost) : run_other(&c, &lost);
	rn_watch_close(c.part.watch);
out:
	rm_plan_free(&c.plan);
	code = code < 0 ? RM_EXIT_OK : code;
	if (lost) {
		/* MPI_Finalize would wait for the lost rank: leave without it. */
		fflush(NULL);
		_exit(code);
	}
	end_mpi(&c);
	return code;
}

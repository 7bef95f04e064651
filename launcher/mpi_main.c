/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi: one rank per node; rank 0 coordinates synchronized
 * profiling windows and gathers every node's records.
 *
 * Every rank runs the same sequence of collectives whatever happens on its
 * node: errors are data (records), never a reason to leave the sequence, so
 * one bad node cannot hang the others.
 *
 *   config   rank 0 parses argv into a plan (options resolved, its ROCP*
 *            variables) and broadcasts it; the others take it as it is
 *   select   the worker of each node finds its targets (no MPI)
 *   gather   records -> rank 0 (found / dry-run)
 *   per window:
 *     start  rank 0 broadcasts a start time T a little ahead (and when to
 *            send the attaches, a lead before T); workers attach with T as
 *            the library's start time: our agent loads the tools early and
 *            calls tool_attach exactly at T, ROCm's side gets its call at T
 *            (and whether to start at all: not once every target is gone)
 *     hold   rank 0 decides the stop (duration, Enter, a signal on any rank,
 *            the job's end, a tool that nothing could attach) and broadcasts
 *            a stop time S (non-blocking, so every rank keeps watching its
 *            own signals and targets); every worker detaches with S as the
 *            library's stop time, so tool_detach runs at S on both sides
 *     drain  STOP and GONE messages rank 0 has not read (a reduction of
 *            counts), and the nodes whose targets all went since
 *     gather records -> rank 0
 *   report   rank 0 writes JSON, SVG and the trace, then prints the summary
 *            (last, on the same stream as its progress); exit code broadcast
 *
 * The job's end: each worker watches its targets (node/watch.c) and, once
 * all of them are gone, tells rank 0 once (a GONE message, as a STOP is
 * sent); rank 0 counts the nodes that still have a live target and ends the
 * window and the run when none has.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "mpi_opts.h"
#include "node.h"
#include "plan.h"
#include "report.h"

#define TAG_STOP 17
#define TAG_CLOCK 18
#define CLOCK_ROUNDS 8 /* ping-pongs per rank; the shortest round trip's estimate is kept */
#define TAG_GONE 19 /* every target of the sender's node is gone */
/*
 * The window loop looks around every POLL_MS (signals wake it at once); a
 * stop rank 0 decides lies STOP_MARGIN_NS ahead, time enough for every rank
 * to hear of it first. Looking 40 times a second keeps an open window near
 * zero CPU.
 */
#define POLL_MS 25
#define STOP_MARGIN_NS 100000000ull
/*
 * The automatic start lead: the first window's is a base plus a cost per
 * target on the busiest node (nothing is measured yet); later windows take
 * the time the last one's attaches needed to be ready in every target
 * (measured), with room: LEAD_ROOM times it plus LEAD_MARGIN_NS, never less
 * than LEAD_MIN_NS nor more than the first window's.
 */
#define LEAD_BASE_NS 150000000ull
#define LEAD_PER_TARGET_NS 3000000ull
#define LEAD_ROOM 3
#define LEAD_MARGIN_NS 30000000ull
#define LEAD_MIN_NS 50000000ull
#define ORPHAN_TIMEOUT_NS 10000000000ull /* a rank with a signal waits this long for rank 0 */
/* A rank that hears no stop this long after the window's end detaches on its own. */
#define LOST_ROOT_GRACE_NS 10000000000ull

/*
 * A rank's CLOCK_REALTIME minus rank 0's (estimated), the round trip it was
 * measured over, and whether it is applied: only when it shows the clocks
 * differ (|offset| > rtt / 2, 0 lying outside what the exchange allows);
 * else the clocks may well agree, and a correction would only add the
 * estimate's own error.
 */
struct rm_clock {
	int64_t offset_ns;
	uint64_t rtt_ns;
	int64_t applied_ns; /* offset_ns, or 0 */
};

struct ctx {
	int rank, size;
	bool worker;		/* does this node's work */
	char host[256];
	struct rm_opts o;
	char **argv;		/* the command line (rank 0's, for the report) */
	struct rm_plan plan;	/* what the options' strings live in (other ranks) */
	int argc;
	struct rn_target *t;	/* this node's targets */
	size_t n;
	char node_error[256];	/* selection failure on this node */
	int sfd;		/* signalfd of the window-ending signals */
	bool stdin_open;
	int stops_sent;		/* STOP messages this rank sent to rank 0 */
	int gones_sent;		/* GONE messages (rank 0: minus those received) */
	struct rn_watch *watch;	/* liveness of this node's targets (NULL: none, or no memory) */
	bool gone_told;		/* rank 0 knows this node's targets are all gone */
	int interrupted;	/* signal that cut a window short, 0 if none */
	bool last;		/* no window after this one (job ended, tool failed) */
	int nodes_alive;	/* rank 0: nodes with a target not known gone */
	bool tool_stop;		/* rank 0: nothing attached, the tool failed */
	const char *run_stop;	/* rank 0: why the run stopped early, NULL if it did not */
	struct rm_run run;	/* rank 0 */
	struct rm_clock clock;	/* this rank's clock against rank 0's */
	struct rm_clock *clocks; /* rank 0: every rank's, by rank */
	size_t max_targets;	/* on the busiest node, rank 0 */
	uint64_t ready_ns;	/* rank 0: the last window's attaches were ready this long after
				 * they were sent, on the slowest node (0: not measured) */
	/* Start-up, CLOCK_MONOTONIC ns: [0] main, then after MPI_Init, the plan, the election. */
	uint64_t setup_at[4];
	uint64_t node_ns[3];	/* this node's selection, topology, side probes (ns) */
	size_t total_targets;	/* on all nodes, rank 0 */
};

struct stop_msg {
	uint64_t stop_ns;
	int32_t signo;		/* the signal that caused it, 0 if none */
	int32_t last;		/* no window after this one */
	char reason[48];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME - CLOCK_BOOTTIME now: how to move our times onto a boot-time clock. */
static int64_t boot_offset_ns(void)
{
	struct timespec b;

	clock_gettime(CLOCK_BOOTTIME, &b);
	return (int64_t)(now_ns() - ((uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec));
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * Rank 0's progress goes to standard output, the summary's stream, flushed
 * line by line: mpirun forwards a rank's stdout and stderr separately, so
 * only one stream keeps them in order (and the summary last). Errors of the
 * command line, before anything runs, go to stderr (say_to).
 */
static void vsay(const struct ctx *c, FILE *f, const char *fmt, va_list ap)
{
	if (c->rank != 0)
		return;
	fputs("rocattach-mpi: ", f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fflush(f);
}

static void say(const struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(c, stdout, fmt, ap);
	va_end(ap);
}

static void say_to(const struct ctx *c, FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say_to(const struct ctx *c, FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(c, f, fmt, ap);
	va_end(ap);
}

/* The library's messages, prefixed host:rank so thousands of ranks stay readable. */
static void log_cb(int level, const char *msg, void *user)
{
	const struct ctx *c = user;
	static const char *const lv[] = {"error", "warning", "info", "debug", "trace"};

	if (level < ROCATTACH_LOG_ERROR || level > ROCATTACH_LOG_TRACE)
		level = ROCATTACH_LOG_TRACE;
	fprintf(stderr, "rocattach-mpi[%s:%d] %s: %s\n", c->host, c->rank, lv[level], msg);
}

/* ------------------------------------------------------------------------ */
/*
 * Configuration: one plan on every rank. Rank 0 alone parses the command
 * line and resolves what could differ between nodes (user names, the
 * environment's defaults) into a plan (plan.h); every other rank takes that
 * plan and rank 0's ROCP* and ROCATTACH_* variables, and derives nothing
 * itself. A rank that cannot take the plan stops every rank.
 */

static int bcast_plan(struct ctx *c, char **text)
{
	uint64_t len = c->rank == 0 ? strlen(*text) + 1 : 0;

	MPI_Bcast(&len, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (c->rank != 0)
		*text = malloc(len ? len : 1);
	if (!*text || len > INT_MAX)
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	return MPI_Bcast(*text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

/* 0 to go on, else the exit code every rank uses (-1: done, nothing to attach). */
static int configure(struct ctx *c, int argc, char **argv)
{
	char err[512], *text = NULL;
	int code = 0, bad = 0, any = 0;

	if (c->rank == 0) {
		c->argc = argc;
		c->argv = argv;
		if (rm_opts_parse(argc, argv, &c->o, err, sizeof(err)) ||
		    rm_opts_check_outputs(&c->o, err, sizeof(err))) {
			code = RM_EXIT_USAGE;
			say_to(c, stderr, "%s", err);
		} else if (c->o.help || c->o.version) {
			if (c->o.help)
				fputs(rm_usage, stdout);
			if (c->o.version)
				printf("rocattach-mpi %s (rocprofiler-sdk rocattach API %s)\n",
				       ROCATTACH_VERSION_STRING, ROCATTACH_SDK_VERSION_STRING);
			code = -1;
		} else if (!(text = rm_plan_encode(&c->o))) {
			say_to(c, stderr, "cannot encode the plan: out of memory");
			code = RM_EXIT_ERROR;
		}
	}
	/* Rank 0's verdict counts, so all ranks leave or stay together. */
	MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (code)
		return code;
	bad = bcast_plan(c, &text);
	if (!bad && c->rank != 0) {
		bad = rm_plan_decode(text, &c->o, &c->plan, err, sizeof(err));
		if (!bad && rm_plan_apply_env(&c->plan))
			bad = snprintf(err, sizeof(err), "cannot set rank 0's environment here") > 0;
		if (bad)
			fprintf(stderr, "rocattach-mpi[%s:%d] error: %s\n", c->host, c->rank, err);
	}
	free(text);
	MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (any)
		say_to(c, stderr, "a rank could not take rank 0's plan (see its error): "
				  "stopping every rank");
	return any ? RM_EXIT_ERROR : 0;
}

/* ------------------------------------------------------------------------ */
/* Who works: the lowest rank of each node (or every rank, for tests). */

static void elect(struct ctx *c)
{
	MPI_Comm node;
	int local;

	if (c->o.one_node_per_rank) {
		c->worker = true;
		return;
	}
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &local);
	c->worker = local == 0;
	MPI_Comm_free(&node);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void select_targets(struct ctx *c)
{
	uint64_t t0 = mono_ns(), t1, t2;
	char err[512];

	if (!c->worker)
		return;
	c->o.sel.self = getpid();
	if (rn_select(&c->o.sel, &c->t, &c->n, err, sizeof(err))) {
		snprintf(c->node_error, sizeof(c->node_error), "%.*s",
			 (int)sizeof(c->node_error) - 1, err);
		c->t = NULL;
		c->n = 0;
		return;
	}
	t1 = mono_ns();
	if (c->n && rn_topology(c->t, c->n, err, sizeof(err)))
		fprintf(stderr, "rocattach-mpi[%s:%d] warning: topology: %s\n", c->host, c->rank,
			err);
	t2 = mono_ns();
	rn_probe_sides(c->t, c->n);
	rn_bind_away(c->t, c->n);
	c->node_ns[0] = t1 - t0;
	c->node_ns[1] = t2 - t1;
	c->node_ns[2] = mono_ns() - t2;
	if (c->n)
		c->watch = rn_watch_open(c->t, c->n);
}

/*
 * With -v, where the start-up went, before any attach: rank 0's MPI_Init,
 * plan and election, and the slowest node's selection, topology and probes
 * of each target's side (the survey then gathers what every node found).
 */
static void say_setup(struct ctx *c)
{
	uint64_t worst[3] = {0};
	const uint64_t *a = c->setup_at;

	MPI_Reduce(c->node_ns, worst, 3, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
	if (c->o.verbose)
		say(c, "setup: MPI_Init %.1f ms, plan %.1f ms, election %.1f ms; slowest node: "
		       "selection %.1f ms, topology %.1f ms, target sides %.1f ms; to here %.1f ms",
		    (double)(a[1] - a[0]) / 1e6, (double)(a[2] - a[1]) / 1e6,
		    (double)(a[3] - a[2]) / 1e6, (double)worst[0] / 1e6, (double)worst[1] / 1e6,
		    (double)worst[2] / 1e6, (double)(mono_ns() - a[0]) / 1e6);
}

/* ------------------------------------------------------------------------ */
/* Gathering records at rank 0. */

/* A node's records, in rank 0's clock: every known time less the node's offset. */
static void to_root_clock(struct rm_node *nd, const struct rm_clock *k)
{
	for (size_t i = 0; i < nd->n; i++) {
		struct rn_target *t = &nd->t[i];
		uint64_t *v[] = {&t->attach_start_ns, &t->attach_end_ns, &t->attach_tool_ns,
				 &t->detach_start_ns, &t->detach_end_ns, &t->detach_tool_ns,
				 &t->detach_call_ns};

		for (size_t j = 0; j < sizeof(v) / sizeof(v[0]); j++)
			if (*v[j])
				*v[j] = (uint64_t)((int64_t)*v[j] - k->applied_ns);
	}
	nd->clock_offset_ns = k->offset_ns;
	nd->clock_applied = k->applied_ns != 0;
	nd->clock_rtt_ns = k->rtt_ns;
	nd->clock_known = true;
}

static int gather(struct ctx *c, struct rm_node **nodes, size_t *n_nodes)
{
	int len = 0, *lens = NULL, *displs = NULL, total = 0, ret = 0;
	char *buf = NULL, *all = NULL;
	int64_t offset = boot_offset_ns(), *offsets = NULL;
	char errs[256];

	if (c->worker) {
		len = (int)rn_pack(c->host, c->t, c->n, NULL, 0);
		buf = malloc((size_t)len);
		if (!buf)
			MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
		rn_pack(c->host, c->t, c->n, buf, (size_t)len);
	}
	if (c->rank == 0) {
		lens = calloc((size_t)c->size, sizeof(int));
		displs = calloc((size_t)c->size, sizeof(int));
	}
	MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
	for (int i = 0; c->rank == 0 && i < c->size; i++) {
		displs[i] = total;
		total += lens[i];
	}
	if (c->rank == 0)
		all = malloc(total ? (size_t)total : 1);
	MPI_Gatherv(buf, len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
	snprintf(errs, sizeof(errs), "%s", c->node_error);
	char *errs_all = c->rank == 0 ? calloc((size_t)c->size, sizeof(errs)) : NULL;

	MPI_Gather(errs, sizeof(errs), MPI_CHAR, errs_all, sizeof(errs), MPI_CHAR, 0,
		   MPI_COMM_WORLD);
	if (c->rank == 0)
		offsets = calloc((size_t)c->size, sizeof(*offsets));
	MPI_Gather(&offset, 1, MPI_INT64_T, offsets, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
	if (c->rank == 0) {
		*nodes = calloc((size_t)c->size, sizeof(**nodes));
		*n_nodes = 0;
		for (int i = 0; *nodes && i < c->size; i++) {
			struct rm_node *nd = &(*nodes)[*n_nodes];

			if (!lens[i])
				continue;
			if (rn_unpack(all + displs[i], (size_t)lens[i], nd->host, &nd->t, &nd->n)) {
				ret = -1;
				continue;
			}
			nd->error = errs_all[i * sizeof(errs)] ? strdup(errs_all + i * sizeof(errs))
							       : NULL;
			if (c->clocks)
				to_root_clock(nd, &c->clocks[i]);
			nd->boot_offset_ns = offsets ? offsets[i] : 0;
			(*n_nodes)++;
		}
	}
	free(errs_all);
	free(offsets);
	free(buf);
	free(all);
	free(lens);
	free(displs);
	return ret;
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
		total += nodes[i].n;
		if (nodes[i].n > *max)
			*max = nodes[i].n;
	}
	return total;
}

static void free_nodes(struct rm_node *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(nodes[i].t);
		free((char *)nodes[i].error);
	}
	free(nodes);
}

/* ------------------------------------------------------------------------ */
/* Signals: blocked from the start (so MPI's own threads never take them) and read from a signalfd. */

/*
 * Every signal whose default action would end the launcher and that it can
 * catch ends the window instead, so targets are always detached: on ROCm's
 * side no watchdog would detach them after us. SIGUSR1 is the quiet stop;
 * SIGPIPE is ignored (a closed output must not kill us mid-window).
 */
static void block_signals(sigset_t *set)
{
	static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGUSR1,	 SIGUSR2, SIGQUIT,
				   SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGPWR};

	sigemptyset(set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(set, sigs[i]);
	sigprocmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* A pending window-ending signal, or 0. */
static int take_signal(struct ctx *c)
{
	struct signalfd_siginfo si;

	if (read(c->sfd, &si, sizeof(si)) == sizeof(si))
		return (int)si.ssi_signo;
	return 0;
}

/* Enter on rank 0's standard input (mpirun forwards it); end of input stops only that. */
static bool took_enter(struct ctx *c)
{
	struct pollfd p = {STDIN_FILENO, POLLIN, 0};
	char buf[256];
	ssize_t n;

	if (!c->stdin_open || poll(&p, 1, 0) <= 0)
		return false;
	n = read(STDIN_FILENO, buf, sizeof(buf));
	if (n <= 0) {
		c->stdin_open = false;
		return false;
	}
	return memchr(buf, '\n', (size_t)n) != NULL;
}

static void wait_a_little(struct ctx *c)
{
	struct pollfd p = {c->sfd, POLLIN, 0};

	poll(&p, 1, POLL_MS);
}

/* ------------------------------------------------------------------------ */
/* One window. */

/*
 * Every rank's clock against rank 0's, before each window: rank 0 and each
 * rank in turn exchange CLOCK_ROUNDS ping-pongs (rank 0 sends its time t0,
 * the rank answers its own t1, rank 0 reads t2); the estimate with the
 * shortest round trip is kept: offset = t1 - (t0 + t2) / 2, within rtt / 2
 * of the truth. Each rank is told its own, and turns rank 0's start and
 * stop times into its own clock; rank 0 turns the records back (gather).
 */
static void clock_sync(struct ctx *c)
{
	uint64_t t[2];

	if (c->rank != 0) {
		for (int k = 0; k < CLOCK_ROUNDS; k++) {
			MPI_Recv(t, 1, MPI_UINT64_T, 0, TAG_CLOCK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			t[1] = now_ns();
			MPI_Send(&t[1], 1, MPI_UINT64_T, 0, TAG_CLOCK, MPI_COMM_WORLD);
		}
	} else {
		if (!c->clocks)
			c->clocks = calloc((size_t)c->size, sizeof(*c->clocks));
		if (!c->clocks)
			MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
		for (int r = 1; r < c->size; r++) {
			struct rm_clock best = {0, UINT64_MAX, 0};

			for (int k = 0; k < CLOCK_ROUNDS; k++) {
				uint64_t t0 = now_ns(), t2, rtt;

				MPI_Send(&t0, 1, MPI_UINT64_T, r, TAG_CLOCK, MPI_COMM_WORLD);
				MPI_Recv(&t[1], 1, MPI_UINT64_T, r, TAG_CLOCK, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				t2 = now_ns();
				rtt = t2 - t0;
				if (rtt < best.rtt_ns) {
					best.rtt_ns = rtt;
					best.offset_ns = (int64_t)(t[1] - t0) - (int64_t)(rtt / 2);
				}
			}
			if ((uint64_t)llabs(best.offset_ns) > best.rtt_ns / 2)
				best.applied_ns = best.offset_ns;
			c->clocks[r] = best;
		}
	}
	MPI_Scatter(c->clocks, sizeof(struct rm_clock), MPI_BYTE, &c->clock,
		    sizeof(struct rm_clock), MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* A time of rank 0's clock in this rank's. */
static uint64_t local_ns(const struct ctx *c, uint64_t root_ns)
{
	return (uint64_t)((int64_t)root_ns + c->clock.applied_ns);
}

/* How long before the start the attaches are sent (the start lead). */
static uint64_t start_lead(const struct ctx *c)
{
	uint64_t first = LEAD_BASE_NS + LEAD_PER_TARGET_NS * c->max_targets, lead;

	if (c->o.start_lead_ms >= 0)
		return (uint64_t)c->o.start_lead_ms * 1000000u;
	if (!c->ready_ns)
		return first;
	lead = LEAD_ROOM * c->ready_ns + LEAD_MARGIN_NS;
	return lead < LEAD_MIN_NS ? LEAD_MIN_NS : lead > first ? first : lead;
}

/* How long after sent_ns this window's attaches were ready in their targets, slowest node. */
static void measure_ready(struct ctx *c, int w, uint64_t sent_ns)
{
	uint64_t mine = 0, worst = 0;

	for (size_t i = 0; c->worker && i < c->n; i++)
		if (c->t[i].attach_ready_ns > sent_ns && c->t[i].attach_ready_ns - sent_ns > mine)
			mine = c->t[i].attach_ready_ns - sent_ns;
	MPI_Reduce(&mine, &worst, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
	if (c->rank != 0 || !worst)
		return;
	c->ready_ns = worst;
	if (c->o.verbose && w < c->o.windows)
		say(c, "window %d: attaches ready %.1f ms after they were sent; next start lead "
		       "%.1f ms", w, (double)worst / 1e6, (double)start_lead(c) / 1e6);
}

/*
 * when[0]: the start time, a lead from now or the earliest allowed (a next
 * window's); when[1]: when to send the attaches, a lead before it, so that
 * no attach call waits in a target through the gap between windows.
 */
static void pick_start(struct ctx *c, uint64_t earliest, uint64_t when[2])
{
	uint64_t lead = start_lead(c), t = now_ns() + lead;

	when[0] = t > earliest ? t : earliest;
	when[1] = when[0] - lead;
}

static struct rn_pool_opts pool_opts(const struct ctx *c)
{
	struct rn_pool_opts p = {.tools = c->o.tools, .inject = c->o.inject};

	/* For a common start, every attach must be in flight before T: one worker per target. */
	p.jobs = c->o.jobs ? c->o.jobs : (int)(c->n ? c->n : 1);
	return p;
}

static void attach_phase(struct ctx *c, const uint64_t when[2])
{
	struct rn_pool_opts p;

	sleep_until(when[1]);
	if (!c->worker || !c->n)
		return;
	/* Who went since the last look is not attached again (and its GONE is due). */
	rn_watch_mark(c->watch, c->t, c->n);
	p = pool_opts(c);
	p.start_ns = when[0];
	rn_attach_all(c->t, c->n, &p);
}

static void count_states(const struct ctx *c, long long out[2])
{
	out[0] = out[1] = 0;
	for (size_t i = 0; i < c->n; i++) {
		out[0] += c->t[i].state == RN_ATTACHED;
		out[1] += c->t[i].state == RN_DETACHED;
	}
}

/* Rank 0: GONE messages in; each is a node whose targets are all gone. */
static void take_gones(struct ctx *c)
{
	int flag = 1, one;
	MPI_Status st;

	while (flag) {
		MPI_Iprobe(MPI_ANY_SOURCE, TAG_GONE, MPI_COMM_WORLD, &flag, &st);
		if (!flag)
			break;
		MPI_Recv(&one, 1, MPI_INT, st.MPI_SOURCE, TAG_GONE, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		c->gones_sent--; /* as for STOP: received against the total sent */
		c->nodes_alive--;
	}
}

/*
 * Rank 0: a stop that ends the run, not only the window: nothing left to
 * profile, or nothing could attach the tool. Nothing runs on any target
 * then, so the stop is now.
 */
static bool run_over(struct ctx *c, struct stop_msg *m)
{
	take_gones(c);
	if (c->tool_stop)
		snprintf(m->reason, sizeof(m->reason), "tool failed");
	else if (c->nodes_alive <= 0)
		snprintf(m->reason, sizeof(m->reason), "job ended");
	else
		return false;
	c->run_stop = c->tool_stop ? "tool failed" : "job ended";
	m->last = 1;
	m->stop_ns = now_ns();
	return true;
}

/* Rank 0: has the window ended? Fills m when it has. */
static bool root_decides(struct ctx *c, uint64_t start_ns, struct stop_msg *m)
{
	uint64_t now = now_ns(), planned = 0;
	int flag = 0, sig;
	MPI_Status st;

	if (run_over(c, m))
		return true;
	if (c->o.duration_ms >= 0)
		planned = start_ns + (uint64_t)c->o.duration_ms * 1000000u;
	if (planned && now + STOP_MARGIN_NS >= planned) {
		m->stop_ns = planned;
		snprintf(m->reason, sizeof(m->reason), "duration");
		return true;
	}
	if (now >= start_ns + (uint64_t)c->o.max_window_ms * 1000000u) {
		snprintf(m->reason, sizeof(m->reason), "max-window");
	} else if ((sig = take_signal(c))) {
		m->signo = sig;
		snprintf(m->reason, sizeof(m->reason), "SIG%s on rank 0", sigabbrev_np(sig));
	} else if (took_enter(c)) {
		snprintf(m->reason, sizeof(m->reason), "enter");
	} else {
		MPI_Iprobe(MPI_ANY_SOURCE, TAG_STOP, MPI_COMM_WORLD, &flag, &st);
		if (!flag)
			return false;
		MPI_Recv(&sig, 1, MPI_INT, st.MPI_SOURCE, TAG_STOP, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		c->stops_sent--; /* rank 0 counts what it has received against the total */
		m->signo = sig;
		snprintf(m->reason, sizeof(m->reason), "SIG%s on rank %d", sigabbrev_np(sig),
			 st.MPI_SOURCE);
	}
	m->stop_ns = now + STOP_MARGIN_NS;
	return true;
}

/* Other ranks: a local signal is sent to rank 0, which stops everyone. */
static void watch_local(struct ctx *c, uint64_t *orphan_deadline)
{
	int sig = take_signal(c);
	MPI_Request req;

	if (!sig)
		return;
	MPI_Isend(&sig, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, &req);
	MPI_Request_free(&req);
	c->stops_sent++;
	if (!*orphan_deadline)
		*orphan_deadline = now_ns() + ORPHAN_TIMEOUT_NS;
}

/*
 * Workers: once every target of the node is gone, rank 0 hears it once
 * (rank 0 counts its own node directly).
 */
static void watch_job(struct ctx *c)
{
	static int one = 1; /* the send buffer outlives this call: the request is freed */
	MPI_Request req;

	if (!c->watch || c->gone_told || rn_watch_alive(c->watch))
		return;
	c->gone_told = true;
	if (c->rank == 0) {
		c->nodes_alive--;
		return;
	}
	MPI_Isend(&one, 1, MPI_INT, 0, TAG_GONE, MPI_COMM_WORLD, &req);
	MPI_Request_free(&req);
	c->gones_sent++;
}

/*
 * When a rank gives up waiting for rank 0's stop (network or MPI failure):
 * the window's planned end (its duration, else --max-window) plus a grace.
 */
static uint64_t lost_root_deadline(const struct ctx *c, uint64_t start_ns)
{
	long long ms = c->o.duration_ms >= 0 ? c->o.duration_ms : c->o.max_window_ms;

	return start_ns + (uint64_t)ms * 1000000u + LOST_ROOT_GRACE_NS;
}

static void hold_window(struct ctx *c, uint64_t start_ns, struct stop_msg *m)
{
	uint64_t orphan_deadline = 0, lost = lost_root_deadline(c, start_ns);
	MPI_Request req = MPI_REQUEST_NULL;
	int done = 0;

	memset(m, 0, sizeof(*m));
	if (c->rank != 0)
		MPI_Ibcast(m, sizeof(*m), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
	while (!done) {
		watch_job(c);
		if (c->rank == 0) {
			if (root_decides(c, start_ns, m)) {
				MPI_Ibcast(m, sizeof(*m), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
				MPI_Wait(&req, MPI_STATUS_IGNORE);
				break;
			}
		} else {
			MPI_Test(&req, &done, MPI_STATUS_IGNORE);
			if (done)
				break;
			watch_local(c, &orphan_deadline);
			/* Rank 0 is gone, stuck or cut off: never leave targets attached. */
			if ((orphan_deadline && now_ns() > orphan_deadline) || now_ns() > lost) {
				rn_detach_all(c->t, c->n, NULL);
				fprintf(stderr, "rocattach-mpi[%s:%d] error: no stop from rank 0 %s: "
						"detached this node's targets, aborting\n",
					c->host, c->rank,
					orphan_deadline ? "after a signal" : "by the window's end");
				MPI_Abort(MPI_COMM_WORLD, orphan_deadline ? RM_EXIT_INTERRUPTED
									  : RM_EXIT_ERROR);
			}
		}
		wait_a_little(c);
	}
	if (m->signo && m->signo != SIGUSR1 && !(m->signo == SIGINT && c->o.duration_ms < 0))
		c->interrupted = m->signo;
	c->last |= m->last;
}

/* The detach calls go out at once; the library keeps every hand-back to stop_ns. */
static void detach_phase(struct ctx *c, uint64_t stop_ns)
{
	struct rn_pool_opts p;

	if (!c->worker || !c->n) {
		sleep_until(stop_ns);
		return;
	}
	p = pool_opts(c);
	p.stop_ns = stop_ns;
	rn_detach_all(c->t, c->n, &p);
}

/*
 * STOP and GONE messages rank 0 did not read while deciding: receive them
 * so none is left pending. A node whose targets went after the hold (during
 * the detach) is counted here instead of by message.
 */
static void drain_messages(struct ctx *c)
{
	int mine[3], total[3] = {0}, v;
	bool gone_now = c->watch && !c->gone_told && !rn_watch_alive(c->watch);

	c->gone_told |= gone_now;
	mine[0] = c->stops_sent;
	mine[1] = c->gones_sent;
	mine[2] = gone_now;
	MPI_Reduce(mine, total, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	for (int i = 0; c->rank == 0 && i < total[0]; i++)
		MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_STOP, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	for (int i = 0; c->rank == 0 && i < total[1]; i++)
		MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_GONE, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	if (c->rank == 0)
		c->nodes_alive -= total[1] + total[2];
	c->stops_sent = c->gones_sent = 0;
}

/*
 * After the attaches: if nothing attached anywhere and the tool is what
 * failed (rn_tool_failed), no later window can do better: rank 0 stops at
 * once. Counts only the attaches of this window (sent at or after since).
 */
static void attach_outcome(struct ctx *c, int w, uint64_t since)
{
	long long mine[2] = {0, 0}, sum[2] = {0, 0};

	for (size_t i = 0; i < c->n; i++) {
		mine[0] += c->t[i].state == RN_ATTACHED;
		mine[1] += c->t[i].attach_start_ns >= since && rn_tool_failed(&c->t[i]);
	}
	MPI_Reduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (c->rank == 0)
		c->tool_stop = !sum[0] && sum[1];
	say(c, "window %d: attached %lld/%zu targets (%.1f ms)", w, sum[0], c->total_targets,
	    (double)(now_ns() - since) / 1e6);
}

static void progress(struct ctx *c, int w, const char *what, int idx, uint64_t since)
{
	long long mine[2], sum[2];

	count_states(c, mine);
	MPI_Reduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	say(c, "window %d: %s %lld/%zu targets (%.1f ms)", w, what, sum[idx], c->total_targets,
	    (double)(now_ns() - since) / 1e6);
}

/* Rank 0 keeps each window's gathered records for the report. */
static void keep_window(struct ctx *c, int w, uint64_t start, const struct stop_msg *m)
{
	struct rm_window *win, *grown;

	grown = realloc(c->run.w, (c->run.n_w + 1) * sizeof(*grown));
	if (!grown)
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	c->run.w = grown;
	win = &c->run.w[c->run.n_w];
	memset(win, 0, sizeof(*win));
	win->index = w;
	win->start_ns = start;
	win->stop_ns = m->stop_ns;
	win->stop_reason = strdup(m->reason);
	gather(c, &win->nodes, &win->n_nodes);
	if (c->rank == 0)
		c->run.n_w++;
}

static void run_windows(struct ctx *c)
{
	uint64_t when[2], mine[2], earliest = 0, t0;
	struct stop_msg m;

	for (int w = 1; w <= c->o.windows && !c->interrupted && !c->last; w++) {
		clock_sync(c);
		if (c->rank == 0)
			pick_start(c, earliest, when);
		MPI_Bcast(when, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
		/* From here on this rank's clock: rank 0's times turned into it. */
		mine[0] = local_ns(c, when[0]);
		mine[1] = local_ns(c, when[1]);
		attach_phase(c, mine);
		measure_ready(c, w, mine[1]);
		attach_outcome(c, w, mine[1]);
		hold_window(c, mine[0], &m);
		t0 = now_ns();
		detach_phase(c, local_ns(c, m.stop_ns));
		progress(c, w, "detached", 1, t0);
		drain_messages(c);
		keep_window(c, w, when[0], &m);
		earliest = m.stop_ns + (uint64_t)c->o.delay_ms * 1000000u;
		if (c->rank == 0 && !c->last && !c->nodes_alive) {
			c->run_stop = "job ended";
			c->last = true;
		}
		/* Rank 0's verdict, so that every rank leaves the loop together. */
		MPI_Bcast(&c->last, 1, MPI_C_BOOL, 0, MPI_COMM_WORLD);
		if (c->last && w < c->o.windows)
			say(c, "%s: no further window", c->run_stop);
		else if (w < c->o.windows && c->o.delay_ms && !c->interrupted)
			say(c, "next window in %lld ms", c->o.delay_ms);
	}
}

/* ------------------------------------------------------------------------ */
/* The end: summary, files, one exit code for all. */

/* The first tool failure of the last window, for the line that ends the run. */
static const struct rn_target *first_tool_failure(const struct rm_run *r)
{
	const struct rm_window *w = r->n_w ? &r->w[r->n_w - 1] : NULL;

	for (size_t i = 0; w && i < w->n_nodes; i++)
		for (size_t k = 0; k < w->nodes[i].n; k++)
			if (rn_tool_failed(&w->nodes[i].t[k]))
				return &w->nodes[i].t[k];
	return NULL;
}

static int exit_code(struct ctx *c, char *reason, size_t len)
{
	size_t failed = rm_count_failures(&c->run);

	c->run.stop_reason = c->run_stop ? c->run_stop
			   : c->interrupted ? "interrupted" : "completed";
	if (c->interrupted) {
		snprintf(reason, len, "interrupted by SIG%s", sigabbrev_np(c->interrupted));
		return RM_EXIT_INTERRUPTED;
	}
	if (c->run_stop && !strcmp(c->run_stop, "tool failed")) {
		snprintf(reason, len, "the tool failed: nothing attached");
		return RM_EXIT_FAILED;
	}
	if (failed) {
		snprintf(reason, len, "%zu target%s failed", failed, failed == 1 ? "" : "s");
		return RM_EXIT_FAILED;
	}
	snprintf(reason, len, "%s", c->run_stop ? c->run_stop : "ok");
	return RM_EXIT_OK;
}

/* One file: 0, or the exit code of a write error (said on rank 0's stream). */
static int write_out(struct ctx *c, const char *path, const char *what,
		     int (*fn)(const char *, const struct rm_run *, char *, size_t))
{
	char err[512];

	if (!path)
		return 0;
	if (fn(path, &c->run, err, sizeof(err))) {
		say(c, "%s", err);
		return RM_EXIT_ERROR;
	}
	say(c, "%s written to %s", what, path);
	return 0;
}

/* Files first, then the summary: it is the last thing printed. */
static int finish(struct ctx *c)
{
	const struct rn_target *t;
	char reason[64];
	int code = RM_EXIT_OK, e;

	if (c->rank == 0) {
		code = exit_code(c, reason, sizeof(reason));
		c->run.exit_code = code;
		c->run.exit_reason = reason;
		c->run.ended_ns = now_ns();
		t = c->run_stop && !strcmp(c->run_stop, "tool failed") ? first_tool_failure(&c->run)
								       : NULL;
		if (t)
			say(c, "error: the tool (%s) could not be attached to any target, so no "
			       "window can profile: stopped at the first attach: %.*s",
			    c->run.cfg.tools ? c->run.cfg.tools : "default", (int)sizeof(t->message),
			    t->message);
		e = write_out(c, c->o.report, "report", rm_write_report);
		e |= write_out(c, c->o.timeline, "timeline", rm_write_timeline);
		e |= write_out(c, c->o.trace, "trace", rm_write_trace);
		code = code ? code : e;
		fflush(stderr);
		rm_print_summary(stdout, &c->run);
		fflush(stdout);
	}
	MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return code;
}

/* Found targets, or the dry-run listing. 0 to go on, else the exit code. */
static int survey(struct ctx *c)
{
	struct rm_node *nodes = NULL;
	size_t n_nodes = 0, empty = 0;
	int code = 0;

	gather(c, &nodes, &n_nodes);
	if (c->rank == 0) {
		c->total_targets = count_targets(nodes, n_nodes, &c->max_targets);
		for (size_t i = 0; i < n_nodes; i++)
			empty += nodes[i].n == 0;
		c->nodes_alive = (int)(n_nodes - empty);
		say(c, "found %zu target%s on %zu node%s (%zu without targets)", c->total_targets,
		    c->total_targets == 1 ? "" : "s", n_nodes, n_nodes == 1 ? "" : "s", empty);
		for (size_t i = 0; i < n_nodes; i++)
			if (nodes[i].error)
				say(c, "%s: %s", nodes[i].host, nodes[i].error);
		if (c->o.dry_run)
			rm_print_dry_run(stdout, nodes, n_nodes);
		if (!c->total_targets) {
			say(c, "no targets found on any node: check the selector (try --dry-run, "
			       "--attach-children, or run where the job runs)%s",
			    unnamed_scope(&c->o.sel) ? mine_only : "");
			code = RM_EXIT_NO_TARGETS;
		} else if (c->o.dry_run) {
			code = -1;
		}
		free_nodes(nodes, n_nodes);
	}
	MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return code;
}

static void init_run(struct ctx *c)
{
	struct rm_config *cfg = &c->run.cfg;

	c->run.started_ns = now_ns();
	cfg->argc = c->argc;
	cfg->argv = c->argv;
	cfg->tools = c->o.tools ? c->o.tools : getenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	cfg->duration_ms = c->o.duration_ms;
	cfg->delay_ms = c->o.delay_ms;
	cfg->windows = c->o.windows;
	cfg->jobs = c->o.jobs;
	cfg->inject = c->o.inject;
	cfg->ranks = c->size;
}

int main(int argc, char **argv)
{
	struct ctx c = {.sfd = -1, .stdin_open = true};
	sigset_t set;
	int code;

	c.setup_at[0] = mono_ns();
	/* Before MPI_Init: the threads it starts inherit the mask. */
	block_signals(&set);
	c.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	MPI_Init(&argc, &argv);
	c.setup_at[1] = mono_ns();
	MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &c.size);
	gethostname(c.host, sizeof(c.host) - 1);
	rocattach_set_log_callback(log_cb, &c);
	code = configure(&c, argc, argv);
	if (code)
		goto out;
	if (c.o.verbose)
		rocattach_set_log_level(c.o.verbose > 1 ? ROCATTACH_LOG_DEBUG : ROCATTACH_LOG_INFO);
	c.setup_at[2] = mono_ns();
	init_run(&c);
	elect(&c);
	c.setup_at[3] = mono_ns();
	select_targets(&c);
	say_setup(&c);
	code = survey(&c);
	if (code)
		goto out;
	run_windows(&c);
	code = finish(&c);
	rn_watch_close(c.watch);
out:
	free(c.clocks);
	rm_plan_free(&c.plan);
	MPI_Finalize();
	return code < 0 ? RM_EXIT_OK : code;
}

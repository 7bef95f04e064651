/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi: one rank per node; rank 0 coordinates synchronized
 * profiling windows and gathers every node's records.
 *
 *   config   rank 0 parses argv into a plan (options resolved, its ROCP*
 *            variables) and broadcasts it; the others take it as it is
 *   select   the worker of each node finds its targets (no MPI)
 *   survey   each rank sends rank 0 what it found (found / dry-run)
 *   windows  mpi_window.c: per window, clocks, start, attach, hold, stop,
 *            detach, records, all point to point with deadlines (mpi_link.c)
 *   report   rank 0 tells every rank the exit code, writes JSON, SVG and the
 *            trace, then prints the summary (last, on its progress stream)
 *
 * Errors are data (records), never a reason to leave the sequence. A rank
 * that dies or stops answering is lost: rank 0 reports it and goes on
 * without it (exit 6); a rank that no longer hears rank 0 detaches its own
 * targets and ends.
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

#include "common/clock.h"
#include "ctx.h"
#include "rocprofv3.h"
#include "stacks_tree.h"
#include "tree.h"

/* The window loop looks around every POLL_MS (signals wake it at once): near zero CPU. */
#define POLL_MS 25

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

void rm_say(const struct ctx *c, const char *fmt, ...)
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

void rm_rank_error(const struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rocattach-mpi[%s:%d] error: ", c->host, c->rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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

/*
 * The start-up's collectives, each waited for until STARTUP_TIMEOUT_NS
 * after MPI_Init: a rank that never joins (dead, or its node cut off)
 * ends the run rather than hanging it.
 */
static void startup_wait(struct ctx *c, MPI_Request *req)
{
	uint64_t deadline = c->setup_at[1] + STARTUP_TIMEOUT_NS;
	int done = 0;

	/* A failure ends every rank (RM_ALL): RM_MPI does not return then. */
	while (!RM_MPI(c, RM_ALL, "", MPI_Test, req, &done, MPI_STATUS_IGNORE) && !done) {
		if (ra_monotonic_ns() > deadline) {
			rm_rank_error(c,
				      "not every rank took part in the start-up within %.0f s: "
				      "ending (exit %d)",
				      (double)STARTUP_TIMEOUT_NS / 1e9, RM_EXIT_LOST);
			fflush(NULL);
			_exit(RM_EXIT_LOST);
		}
		usleep(100);
	}
}

static void bcast(struct ctx *c, void *buf, int count, MPI_Datatype type)
{
	MPI_Request req;

	RM_MPI(c, RM_ALL, "", MPI_Ibcast, buf, count, type, 0, MPI_COMM_WORLD, &req);
	startup_wait(c, &req);
}

static void bcast_plan(struct ctx *c, char **text)
{
	uint64_t len = c->rank == 0 ? strlen(*text) + 1 : 0;

	bcast(c, &len, 1, MPI_UINT64_T);
	if (c->rank != 0)
		*text = malloc(len ? len : 1);
	if (!*text || len > INT_MAX)
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

	if (c->rank == 0) {
		c->argc = argc;
		c->argv = argv;
		if (c->sfd < 0) {
			code = RM_EXIT_ERROR;
			say_to(c, stderr,
			       "rank 0 cannot read its signals (signalfd: %s): a stop by "
			       "signal would be lost; stopping every rank",
			       strerror(c->sfd_errno));
		} else if (rm_opts_parse(argc, argv, &c->o, err, sizeof(err)) ||
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
		} else if ((code = stacks_setup(c, err, sizeof(err)))) {
			say_to(c, stderr, "%s", err);
		} else if ((code = rm_rocprofv3_setup(
				&c->o, c->o.verbose ? (c->o.dry_run ? stdout : stderr) : NULL, err,
				sizeof(err)))) {
			say_to(c, stderr, "%s", err);
		} else if (!(text = rm_plan_encode(&c->o))) {
			say_to(c, stderr, "cannot encode the plan: out of memory");
			code = RM_EXIT_ERROR;
		}
	}
	/* Rank 0's verdict counts, so all ranks leave or stay together. */
	bcast(c, &code, 1, MPI_INT);
	if (code)
		return code;
	bcast_plan(c, &text);
	if (c->rank != 0) {
		bad = rm_plan_decode(text, &c->o, &c->plan, err, sizeof(err));
		if (!bad && c->sfd < 0)
			bad = snprintf(err, sizeof(err),
				       "cannot read its signals (signalfd: %s): a "
				       "stop by signal would be lost",
				       strerror(c->sfd_errno)) > 0;
		if (!bad && rm_plan_apply_env(&c->plan))
			bad =
			    snprintf(err, sizeof(err), "cannot set rank 0's environment here") > 0;
		if (!bad) {
			err[0] = '\0';
			bad = rm_rocprofv3_check_tool(&c->o, err, sizeof(err));
			if (!bad && err[0])
				fprintf(stderr, "rocattach-mpi[%s:%d] warning: %s\n", c->host,
					c->rank, err);
		}
		if (bad)
			fprintf(stderr, "rocattach-mpi[%s:%d] error: %s\n", c->host, c->rank, err);
	}
	free(text);
	MPI_Request req;

	RM_MPI(c, RM_ALL, "", MPI_Iallreduce, &bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
	       &req);
	startup_wait(c, &req);
	if (any)
		say_to(c, stderr,
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
		c->worker = true;
		return;
	}
	/* Failures end every rank (RM_ALL): no target is touched yet. */
	RM_MPI(c, RM_ALL, "", MPI_Comm_split_type, MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank,
	       MPI_INFO_NULL, &node);
	RM_MPI(c, RM_ALL, "", MPI_Comm_rank, node, &local);
	c->worker = local == 0;
	RM_MPI(c, RM_ALL, "", MPI_Comm_free, &node);
}

static void select_targets(struct ctx *c)
{
	uint64_t t0 = ra_monotonic_ns(), t1, t2;
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
	t1 = ra_monotonic_ns();
	if (c->n && rn_topology(c->t, c->n, err, sizeof(err)))
		fprintf(stderr, "rocattach-mpi[%s:%d] warning: topology: %s\n", c->host, c->rank,
			err);
	t2 = ra_monotonic_ns();
	rn_probe_sides(c->t, c->n);
	rn_bind_away(c->t, c->n);
	c->node_ns[0] = t1 - t0;
	c->node_ns[1] = t2 - t1;
	c->node_ns[2] = ra_monotonic_ns() - t2;
	if (c->n)
		c->watch = rn_watch_open(c->t, c->n);
}

/*
 * With -v, where the start-up went, before any attach: rank 0's MPI_Init,
 * plan and election, and the slowest node's selection, topology and probes
 * of each target's side (from the survey's records), to the survey's end.
 */
static void say_setup(struct ctx *c)
{
	const uint64_t *a = c->setup_at, *worst = c->worst_node_ns;

	if (c->o.verbose)
		rm_say(c,
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

/* ------------------------------------------------------------------------ */
/* Signals: blocked from the start (so MPI's own threads never take them) and read from a signalfd.
 */

/*
 * Every signal whose default action would end the launcher and that it can
 * catch ends the window instead, so targets are always detached: on ROCm's
 * side no watchdog would detach them after us. SIGUSR1 is the quiet stop;
 * SIGPIPE is ignored (a closed output must not kill us mid-window).
 *
 * SIGCONT is none of them: it is not blocked, and never ends or names a
 * window. Open MPI ends a job (a Ctrl-C at mpirun, a rank that died) by
 * sending each rank SIGCONT, SIGTERM 1 s later and SIGKILL about 1 s after
 * that (measured with 4.1.4); Slurm sends SIGCONT and SIGTERM together, and
 * SIGKILL after KillWait; mpirun also forwards the SIGCONT of a job resumed
 * after Ctrl-Z. The SIGTERM is the one that ends the window and is named;
 * it leaves time enough to detach and write the report.
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
int rm_take_signal(struct ctx *c)
{
	struct signalfd_siginfo si;
	int held = c->held_sig;

	c->held_sig = 0;
	if (held)
		return held;
	if (read(c->sfd, &si, sizeof(si)) == sizeof(si))
		return (int)si.ssi_signo;
	return 0;
}

/* Enter on rank 0's standard input (mpirun forwards it); end of input stops only that. */
bool rm_took_enter(struct ctx *c)
{
	struct pollfd p = {STDIN_FILENO, POLLIN, 0};
	char buf[256];
	ssize_t n;

	if (!c->stdin_open || poll(&p, 1, 0) <= 0)
		return false;
	n = read(STDIN_FILENO, buf, sizeof(buf));
	if (n <= 0) {
		c->stdin_open = false;
		if (c->o.duration_ms < 0)
			rm_say(c, "standard input closed: Enter cannot end the window; send "
				  "SIGUSR1 to mpirun instead");
		return false;
	}
	return memchr(buf, '\n', (size_t)n) != NULL;
}

void rm_wait_until(const struct ctx *c, uint64_t until_ns)
{
	struct pollfd p = {c->sfd, POLLIN, 0};
	uint64_t now = ra_monotonic_ns();
	int ms = POLL_MS;

	if (until_ns > now && until_ns - now < (uint64_t)POLL_MS * RA_NS_PER_MS)
		ms = (int)((until_ns - now + RA_NS_PER_MS - 1) / RA_NS_PER_MS);
	else if (until_ns && until_ns <= now)
		ms = 0;
	poll(&p, 1, ms);
}

/* ------------------------------------------------------------------------ */
/* The end: summary, files, one exit code for all. */

/* A target whose attach failed for want of a listener (no --inject). */
static bool no_listener(const struct rn_target *t)
{
	return t->state == RN_ATTACH_FAILED && !t->listener;
}

/* Targets of the last window for which fails holds; *all (if not NULL): every target. */
static size_t count_last(const struct rm_run *r, bool (*fails)(const struct rn_target *),
			 size_t *all)
{
	const struct rm_window *w = r->n_w ? &r->w[r->n_w - 1] : NULL;
	const struct rn_target *t;
	struct rm_hold h = {0};
	size_t n = 0, total = 0;

	for (size_t i = 0; w && i < w->n_nodes; i++) {
		t = w->nodes[i].lost ? NULL : rm_targets(&w->nodes[i], &h);
		/* Records a node left out are clean ones: no failure among them. */
		total += w->nodes[i].lost ? 0 : rm_left_out(&w->nodes[i]);
		for (size_t k = 0; t && k < w->nodes[i].n; k++, total++)
			n += fails(&t[k]);
	}
	rm_hold_free(&h);
	if (all)
		*all = total;
	return n;
}

/* The first failure of the last window into *out, for the line that ends the run. */
static bool first_failure(const struct rm_run *r, bool (*fails)(const struct rn_target *),
			  struct rn_target *out)
{
	const struct rm_window *w = r->n_w ? &r->w[r->n_w - 1] : NULL;
	const struct rn_target *t;
	struct rm_hold h = {0};
	bool found = false;

	for (size_t i = 0; w && i < w->n_nodes && !found; i++) {
		t = rm_targets(&w->nodes[i], &h);
		for (size_t k = 0; t && k < w->nodes[i].n && !found; k++)
			if ((found = fails(&t[k])))
				*out = t[k];
	}
	rm_hold_free(&h);
	return found;
}

static int exit_code(struct ctx *c, char *reason, size_t len)
{
	size_t failed = rm_count_failures(&c->run), lived;
	size_t died = rm_died_attached(&c->run, &lived, NULL, NULL);
	char store_err[600];

	/*
	 * A signal that came with the job's end (Slurm or mpirun ending it:
	 * the targets got their SIGTERM too) found every target gone by the
	 * detach: the job ended, nothing was cut short.
	 */
	if (c->interrupted && !c->lost_count && c->total_targets && !lived && !failed) {
		rm_say(c, "SIG%s received, and every target ended: the job ended",
		       sigabbrev_np(c->interrupted));
		c->interrupted = 0;
		c->run_stop = "job ended";
	}
	c->run.stop_reason = c->run_stop      ? c->run_stop
			     : c->interrupted ? "interrupted"
					      : "completed";
	if (c->lost_count) {
		snprintf(reason, len, "%zu node%s lost", c->lost_count,
			 c->lost_count == 1 ? "" : "s");
		return RM_EXIT_LOST;
	}
	if (c->interrupted) {
		snprintf(reason, len, "interrupted by SIG%s", sigabbrev_np(c->interrupted));
		return RM_EXIT_INTERRUPTED;
	}
	if (c->run_stop && !strcmp(c->run_stop, "tool failed")) {
		snprintf(reason, len, "the tool failed: nothing attached");
		return RM_EXIT_FAILED;
	}
	if (c->run_stop && !strcmp(c->run_stop, "nothing attachable")) {
		size_t all, none = count_last(&c->run, no_listener, &all);

		if (none == all)
			snprintf(reason, len, "nothing attachable: no target has a listener");
		else
			snprintf(reason, len, "nothing attachable: %zu of %zu without a listener",
				 none, all);
		return RM_EXIT_FAILED;
	}
	if (failed && rm_store_check(c->run.store, store_err, sizeof(store_err))) {
		/* Nodes whose records cannot be read back count as failed (rm_for_each_failure). */
		snprintf(reason, len, "%zu failed: records unreadable", failed);
		return RM_EXIT_FAILED;
	}
	if (failed) {
		snprintf(reason, len, "%zu target%s failed", failed, failed == 1 ? "" : "s");
		return RM_EXIT_FAILED;
	}
	/* Some died with a tool in them while others lived on: never "ok". */
	if (died && lived) {
		snprintf(reason, len, "%zu target%s died with %s tools attached", died,
			 died == 1 ? "" : "s", died == 1 ? "its" : "their");
		return RM_EXIT_FAILED;
	}
	snprintf(reason, len, "%s", c->run_stop ? c->run_stop : "ok");
	return RM_EXIT_OK;
}

/* The outputs, each written whole or not at all (report_common.c). */
struct output {
	const char *path, *what;
	int (*fn)(const char *, const struct rm_run *, char *, size_t);
	bool written;
	char err[512];
};

/*
 * The reason the summary and the files give, with the outputs that failed:
 * "ok" becomes "the report was not written" (exit 1); another reason keeps
 * its code, with the same words added.
 */
static void failed_outputs(struct ctx *c, const struct output *out, size_t n, int code,
			   const char *reason, char *buf, size_t len)
{
	size_t k = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		if (!out[i].path || out[i].written)
			continue;
		k += (size_t)snprintf(buf + k, k < len ? len - k : 0, "%sthe %s",
				      failed ? " and " : "", out[i].what);
		failed++;
	}
	if (!failed)
		return;
	snprintf(buf + k, k < len ? len - k : 0, " %s not written", failed == 1 ? "was" : "were");
	if (code) {
		char *done = NULL;

		if (asprintf(&done, "%s; %s", reason, buf) >= 0) {
			snprintf(buf, len, "%s", done);
			free(done);
		}
	}
	c->run.exit_code = code ? code : RM_EXIT_ERROR;
	c->run.exit_reason = buf;
}

/*
 * The trace and the timeline, then the report, each stating the run's exit
 * code: one that fails changes that code (exit 1 unless it was already an
 * error), so the ones written before it are written again with the final
 * code. The report goes last: it says what became of the others. Returns the
 * final code; what failed is said on rank 0's stream.
 */
static int write_outputs(struct ctx *c, int code, const char *reason)
{
	static char why[512];
	struct output out[] = {
	    {c->o.trace, "trace", rm_write_trace, false, ""},
	    {c->o.timeline, "timeline", rm_write_timeline, false, ""},
	    {c->o.stacks_svg, "stacks' SVG", rm_write_stacks_svg, false, ""},
	    {c->o.folded, "folded samples", rm_write_folded, false, ""},
	    {c->o.flamegraph, "flame graph", rm_write_flamegraph, false, ""},
	    {c->o.report, "report", rm_write_report, false, ""},
	};
	size_t n = sizeof(out) / sizeof(out[0]), failed = 0, before;

	do {
		before = failed;
		failed = 0;
		for (size_t i = 0; i < n; i++) {
			if (!out[i].path || (out[i].err[0] && !out[i].written))
				continue;
			out[i].written =
			    !out[i].fn(out[i].path, &c->run, out[i].err, sizeof(out[i].err));
			if (!out[i].written)
				rm_say(c, "%s", out[i].err);
		}
		for (size_t i = 0; i < n; i++)
			failed += out[i].path && !out[i].written;
		failed_outputs(c, out, n, code, reason, why, sizeof(why));
	} while (failed != before);
	for (size_t i = 0; i < n; i++)
		if (out[i].written)
			rm_say(c, "%s written to %s", out[i].what, out[i].path);
	return c->run.exit_code;
}

/* Rank 0: the end of the run to every live rank, with the exit code. */
static void send_end(struct ctx *c, int code)
{
	struct rm_order o = {.end = 1, .code = code, .lost = c->lost_count > 0};

	rm_tree_orders(c, &o);
}

/* The line that says why the run stopped at its first attach, if it did. */
static void say_run_stop(struct ctx *c)
{
	const char *stop = c->run_stop ? c->run_stop : "";
	struct rn_target t;
	size_t all, none;

	if (!strcmp(stop, "tool failed") && first_failure(&c->run, rn_tool_failed, &t))
		rm_say(c,
		       "error: the tool (%s) could not be attached to any target, so no "
		       "window can profile: stopped at the first attach: %.*s",
		       c->run.cfg.tools ? c->run.cfg.tools : "default", (int)sizeof(t.message),
		       t.message);
	if (strcmp(stop, "nothing attachable") || !first_failure(&c->run, no_listener, &t))
		return;
	none = count_last(&c->run, no_listener, &all);
	if (none < all)
		rm_say(c,
		       "error: nothing attached, and %zu of %zu targets have no attach listener "
		       "and --inject was not given: stopped after the first attach: %.*s",
		       none, all, (int)sizeof(t.message), t.message);
	else
		rm_say(c,
		       "error: no target has an attach listener and --inject was not given, so "
		       "no window can profile: stopped after the first attach: %.*s",
		       (int)sizeof(t.message), t.message);
}

/* Rank 0: the end order, the files, then the summary: it is the last thing printed. */
static int finish(struct ctx *c)
{
	char reason[128];
	int code;

	code = exit_code(c, reason, sizeof(reason));
	send_end(c, code);
	c->run.exit_code = code;
	c->run.exit_reason = reason;
	c->run.ended_ns = ra_realtime_ns();
	say_run_stop(c);
	code = write_outputs(c, code, reason);
	fflush(stderr);
	rm_print_summary(stdout, &c->run);
	rm_print_stacks(stdout, &c->run);
	fflush(stdout);
	return code;
}

/* Rank 0: found targets, or the dry-run listing. 0 to go on, else the exit code. */
static int survey(struct ctx *c)
{
	struct rm_node *nodes = NULL;
	size_t n_nodes = 0, empty = 0;
	int code = 0;

	rm_collect_records(c, &nodes, &n_nodes, ra_monotonic_ns(), GRACE_SURVEY_NS, "of the start");
	say_setup(c);
	c->total_targets = count_targets(nodes, n_nodes, &c->max_targets);
	/* Decided once, before window 1: each node cuts every window's records at it. */
	c->run.cut.survey_targets = c->total_targets;
	c->run.cut.level =
	    c->o.detail != RM_DETAIL_AUTO ? c->o.detail : rm_detail_default(c->total_targets);
	for (size_t i = 0; i < n_nodes; i++)
		empty += rm_found(&nodes[i]) == 0;
	c->nodes_alive = (int)(n_nodes - empty);
	rm_say(c, "found %zu target%s on %zu node%s (%zu without targets)", c->total_targets,
	       c->total_targets == 1 ? "" : "s", n_nodes, n_nodes == 1 ? "" : "s", empty);
	for (size_t i = 0; i < n_nodes; i++)
		if (nodes[i].error)
			rm_say(c, "%s: %s", nodes[i].host, nodes[i].error);
	if (c->o.dry_run)
		rm_print_dry_run(stdout, nodes, n_nodes);
	if (!c->total_targets) {
		rm_say(c,
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
 * Where rank 0 keeps the gathered records (report_store.c): a temporary
 * file in TMPDIR, else /var/tmp (on disk where /tmp is in memory), else
 * /tmp. Without one they stay in memory, as said.
 */
static void open_store(struct ctx *c)
{
	const char *dirs[] = {getenv("TMPDIR"), "/var/tmp", "/tmp"};
	char err[600] = "";

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !c->run.store; i++)
		if (dirs[i] && *dirs[i])
			c->run.store = rm_store_open(dirs[i], err, sizeof(err));
	if (!c->run.store)
		rm_say(c, "warning: %s; the records are kept in memory instead", err);
}

static void init_run(struct ctx *c)
{
	struct rm_config *cfg = &c->run.cfg;

	c->run.started_ns = ra_realtime_ns();
	cfg->argc = c->argc;
	cfg->argv = c->argv;
	cfg->tools = c->o.tools ? c->o.tools : getenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	cfg->duration_ms = c->o.duration_ms;
	cfg->delay_ms = c->o.delay_ms;
	cfg->windows = c->o.windows;
	cfg->jobs = c->o.jobs;
	cfg->inject = c->o.inject;
	cfg->ranks = c->size;
	cfg->detail = c->o.detail;
	c->run.sample_hz = c->o.sample_hz;
	c->run.flame_per_rank = c->o.flame_per_rank;
	if ((c->o.stacks && !(c->run.stacks = ra_stack_tree_new())) ||
	    (c->o.sample_hz && !(c->run.samples = ra_stack_tree_new()))) {
		rm_rank_error(c, "--stacks: out of memory for the tree");
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	}
}

/* Rank 0's records: the windows' and each rank's last ones. */
static void free_run(struct ctx *c)
{
	for (size_t i = 0; i < c->run.n_w; i++) {
		rm_free_nodes(c->run.w[i].nodes, c->run.w[i].n_nodes);
		free((char *)c->run.w[i].stop_reason);
	}
	free(c->run.w);
	for (int r = 0; c->peers && r < c->size; r++) {
		free(c->peers[r].last.t);
		free((char *)c->peers[r].last.error);
		rm_node_sum_free(&c->peers[r].last);
	}
	free(c->peers);
	for (int i = 0; i < c->tree.n_kids; i++)
		free(c->tree.kids[i]);
	free(c->tree.kids);
	free(c->tree.last_ready);
	free(c->tree.last_bundle);
	free(c->tree.notes);
	free(c->t);
	rm_store_close(c->run.store);
	ra_stack_tree_free(c->run.stacks);
	ra_stack_tree_free(c->run.samples);
	free(c->run.samples_text);
	free(c->stacks.samples);
	free(c->stacks.timed);
	free(c->run.timed_text);
	free(c->stacks.text);
	rm_stacks_cleanup(&c->stacks);
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

int main(int argc, char **argv)
{
	struct ctx c = {.sfd = -1, .stdin_open = true};
	bool lost = false;
	sigset_t set;
	int code;

	if (argc > 1 && !strcmp(argv[1], "--check-options"))
		return check_options(argc, argv);
	c.setup_at[0] = ra_monotonic_ns();
	/* Before MPI_Init: the threads it starts inherit the mask. */
	block_signals(&set);
	c.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	c.sfd_errno = errno;
	gethostname(c.host, sizeof(c.host) - 1);
	c.rank = -1;
	if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
		rm_rank_error(&c, "MPI_Init failed: ending (exit %d)", RM_EXIT_ERROR);
		return RM_EXIT_ERROR;
	}
	c.setup_at[1] = ra_monotonic_ns();
	/*
	 * Errors are returned, not fatal: a send to a rank that died fails (Open
	 * MPI's TCP transport cannot reconnect). Every call is checked (RM_MPI):
	 * a failure with a rank makes it lost, and so does a rank's silence past
	 * its deadline.
	 */
	RM_MPI(&c, RM_ALL, "", MPI_Comm_set_errhandler, MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	RM_MPI(&c, RM_ALL, "", MPI_Comm_rank, MPI_COMM_WORLD, &c.rank);
	RM_MPI(&c, RM_ALL, "", MPI_Comm_size, MPI_COMM_WORLD, &c.size);
	rocattach_set_log_callback(log_cb, &c);
	code = configure(&c, argc, argv);
	if (code)
		goto out;
	if (c.o.verbose)
		rocattach_set_log_level(c.o.verbose > 1 ? ROCATTACH_LOG_DEBUG : ROCATTACH_LOG_INFO);
	c.setup_at[2] = ra_monotonic_ns();
	init_run(&c);
	elect(&c);
	c.setup_at[3] = ra_monotonic_ns();
	if (c.rank == 0 && !(c.peers = calloc((size_t)c.size, sizeof(*c.peers))))
		MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	rm_tree_init(&c);
	select_targets(&c);
	/* Every parent measures its children's clocks, all parents at once. */
	rm_tree_measure(&c, true);
	if (c.rank == 0) {
		open_store(&c);
		code = survey(&c);
		if (code) {
			send_end(&c, code);
		} else {
			rm_run_windows(&c);
			code = finish(&c);
		}
		lost = c.lost_count > 0;
	} else {
		rm_records_up(&c, 0, ra_monotonic_ns(), GRACE_SURVEY_NS);
		c.next_deadline =
		    ra_monotonic_ns() + GRACE_SURVEY_NS + LATE_RETRY_NS + CLOCK_LOST_NS +
		    GRACE_NEXT_NS + (uint64_t)c.tree.height * LEVEL_STEP_NS +
		    (uint64_t)rm_tree_children(0, c.tree.k, c.size) * 2 * RA_NS_PER_MS;
		code = rm_follow_windows(&c, &lost);
	}
	rn_watch_close(c.watch);
out:
	rm_plan_free(&c.plan);
	code = code < 0 ? RM_EXIT_OK : code;
	if (lost) {
		/* MPI_Finalize would wait for the lost rank: leave without it. */
		fflush(NULL);
		_exit(code);
	}
	/* Every rank lives: what is still in flight completes. */
	if (RM_MPI(&c, RM_ANY, "to", MPI_Waitall, (int)c.out.n, c.out.req, MPI_STATUSES_IGNORE))
		c.out.n = 0; /* their copies stay: MPI may hold them */
	rm_outbox_reap(&c, true);
	free(c.out.req);
	free(c.out.buf);
	free(c.out.dest);
	free_run(&c);
	if (MPI_Finalize() != MPI_SUCCESS)
		rm_rank_error(&c, "MPI_Finalize failed");
	return code;
}

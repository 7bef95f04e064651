/* SPDX-License-Identifier: MIT */
/*
 * Rank 0's end of the run (main.h): one exit code for all, sent down the
 * tree; the trace, the timeline, the stacks and the report, each written
 * whole or not at all; the summary last, on rank 0's stream.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "main.h"
#include "profiles.h"

/* A target whose attach failed for want of a listener (no --inject). */
static bool no_listener(const struct rn_target *t)
{
	return t->state == RN_ATTACH_FAILED && !t->listener;
}

static bool declined(const struct rn_target *t)
{
	return t->state == RN_DECLINED;
}

/* The tool failed, or every tool declined, there. */
static bool tool_out(const struct rn_target *t)
{
	return rn_tool_failed(t) || declined(t);
}

/*
 * Targets of the last window for which fails holds; *all: every target;
 * *unsure: those left out on their nodes that may fail it too (--detail none).
 */
static size_t count_last(const struct rm_run *r, bool (*fails)(const struct rn_target *),
			 size_t *all, size_t *unsure)
{
	const struct rm_window *w = r->n_w ? &r->w[r->n_w - 1] : NULL;
	const struct rn_target *t;
	struct rm_hold h = {0};
	size_t n = 0, total = 0;

	*unsure = 0;
	for (size_t i = 0; w && i < w->n_nodes; i++) {
		t = w->nodes[i].lost ? NULL : rm_targets(&w->nodes[i], &h);
		/* Records a node left out: the clean ones have no failure, the rest are unsure. */
		total += w->nodes[i].lost ? 0 : rm_left_out(&w->nodes[i]);
		*unsure += w->nodes[i].lost ? 0 : rm_left_unsure(&w->nodes[i], t);
		for (size_t k = 0; t && k < w->nodes[i].n; k++, total++)
			n += fails(&t[k]);
	}
	rm_hold_free(&h);
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

/*
 * Windows off their plan (rm_window_off): a late start, or a tools' window
 * off the planned length by more than its tolerance. Never ok: the reason
 * names how many and the first.
 */
static bool late_windows(const struct rm_run *r, char *reason, size_t len)
{
	size_t off = 0, first = 0;
	struct rm_late l = {0};

	for (size_t i = 0; i < r->n_w; i++) {
		if (!rm_window_off(&r->w[i]))
			continue;
		if (!off++) {
			first = i;
			l = rm_window_late(&r->w[i]);
		}
	}
	if (!off)
		return false;
	if (l.n || l.unknown)
		snprintf(reason, len,
			 "%zu window%s late (window %d: %zu of %zu targets' tools "
			 "started up to %.1f ms late)",
			 off, off == 1 ? "" : "s", r->w[first].index, l.n + l.unknown, l.of,
			 (double)l.max_ns / 1e6);
	else
		snprintf(reason, len,
			 "%zu window%s off (window %d: a tools' window off the "
			 "planned length)",
			 off, off == 1 ? "" : "s", r->w[first].index);
	return true;
}

static int exit_code(struct ctx *c, char *reason, size_t len)
{
	size_t failed = rm_count_failures(&c->roster.run), lived;
	size_t died = rm_died_attached(&c->roster.run, &lived, NULL, NULL);
	char store_err[600];

	/*
	 * A signal that came with the job's end (Slurm or mpirun ending it:
	 * the targets got their SIGTERM too) found every target gone by the
	 * detach: the job ended, nothing was cut short.
	 */
	if (c->win.interrupted && !c->roster.lost_count && c->win.total_targets && !lived &&
	    !failed) {
		rm_say(&c->self, "SIG%s received, and every target ended: the job ended",
		       sigabbrev_np(c->win.interrupted));
		c->win.interrupted = 0;
		c->win.run_stop = "job ended";
	}
	c->roster.run.stop_reason = c->win.run_stop	 ? c->win.run_stop
				    : c->win.interrupted ? "interrupted"
							 : "completed";
	if (c->roster.lost_count) {
		snprintf(reason, len, "%zu node%s lost", c->roster.lost_count,
			 c->roster.lost_count == 1 ? "" : "s");
		return RM_EXIT_LOST;
	}
	if (c->win.interrupted) {
		snprintf(reason, len, "interrupted by SIG%s", sigabbrev_np(c->win.interrupted));
		return RM_EXIT_INTERRUPTED;
	}
	if (c->win.run_stop && !strcmp(c->win.run_stop, "tool failed")) {
		size_t all, unsure, none = count_last(&c->roster.run, declined, &all, &unsure);

		/* Declining is no failure, but with every target declined nothing ran. */
		if (none && none == all && !unsure)
			snprintf(reason, len,
				 "the tool declined on every target: nothing attached");
		else
			snprintf(reason, len, "the tool failed: nothing attached");
		return RM_EXIT_FAILED;
	}
	if (c->win.run_stop && !strcmp(c->win.run_stop, "nothing attachable")) {
		size_t all, unsure, none = count_last(&c->roster.run, no_listener, &all, &unsure);

		if (unsure)
			snprintf(reason, len,
				 "nothing attachable: %zu of %zu without a listener, %zu more "
				 "unknown (left out by --detail none)",
				 none, all, unsure);
		else if (none == all)
			snprintf(reason, len, "nothing attachable: no target has a listener");
		else
			snprintf(reason, len, "nothing attachable: %zu of %zu without a listener",
				 none, all);
		return RM_EXIT_FAILED;
	}
	if (failed && rm_store_check(c->roster.run.store, store_err, sizeof(store_err))) {
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
	if (late_windows(&c->roster.run, reason, len))
		return RM_EXIT_LATE;
	snprintf(reason, len, "%s", c->win.run_stop ? c->win.run_stop : "ok");
	return RM_EXIT_OK;
}

/* The outputs, each written whole or not at all (launcher/report/model.c). */
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
	c->roster.run.exit_code = code ? code : RM_EXIT_ERROR;
	c->roster.run.exit_reason = buf;
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
	    {c->o.pprof, "pprof profile", rm_write_pprof, false, ""},
	    {c->o.speedscope, "speedscope file", rm_write_speedscope, false, ""},
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
			    !out[i].fn(out[i].path, &c->roster.run, out[i].err, sizeof(out[i].err));
			if (!out[i].written)
				rm_say(&c->self, "%s", out[i].err);
		}
		for (size_t i = 0; i < n; i++)
			failed += out[i].path && !out[i].written;
		failed_outputs(c, out, n, code, reason, why, sizeof(why));
	} while (failed != before);
	for (size_t i = 0; i < n; i++)
		if (out[i].written)
			rm_say(&c->self, "%s written to %s", out[i].what, out[i].path);
	return c->roster.run.exit_code;
}

/* Rank 0: the end of the run to every live rank, with the exit code. */
void rm_send_end(struct ctx *c, int code)
{
	struct rm_order o = {.end = 1, .code = code, .lost = c->roster.lost_count > 0};

	rm_flow_orders(&c->flow, &o);
}

/* The line that says why the run stopped at its first attach, if it did. */
static void say_run_stop(struct ctx *c)
{
	const char *stop = c->win.run_stop ? c->win.run_stop : "";
	struct rn_target t;
	size_t all, none, unsure;

	if (!strcmp(stop, "tool failed") && first_failure(&c->roster.run, tool_out, &t))
		rm_say(&c->self,
		       "error: the tool (%s) could not be attached to any target, so no "
		       "window can profile: stopped at the first attach: %.*s",
		       c->roster.run.cfg.tools ? c->roster.run.cfg.tools : "default",
		       (int)sizeof(t.message), t.message);
	if (strcmp(stop, "nothing attachable") || !first_failure(&c->roster.run, no_listener, &t))
		return;
	/* A record of one is kept: first_failure found it. */
	none = count_last(&c->roster.run, no_listener, &all, &unsure);
	if (none < all)
		rm_say(&c->self,
		       "error: nothing attached, and %zu of %zu targets have no attach listener "
		       "and --inject was not given: stopped after the first attach: %.*s",
		       none, all, (int)sizeof(t.message), t.message);
	else
		rm_say(&c->self,
		       "error: no target has an attach listener and --inject was not given, so "
		       "no window can profile: stopped after the first attach: %.*s",
		       (int)sizeof(t.message), t.message);
}

/* Rank 0: the end order, the files, then the summary: it is the last thing printed. */
int rm_finish(struct ctx *c)
{
	char reason[128];
	int code;

	code = exit_code(c, reason, sizeof(reason));
	rm_send_end(c, code);
	c->roster.run.exit_code = code;
	c->roster.run.exit_reason = reason;
	c->roster.run.ended_ns = ra_realtime_ns();
	say_run_stop(c);
	code = write_outputs(c, code, reason);
	fflush(stderr);
	rm_print_summary(stdout, &c->roster.run);
	rm_print_stacks(stdout, &c->roster.run);
	fflush(stdout);
	return code;
}

/* SPDX-License-Identifier: MIT */
/*
 * Chrome/Perfetto trace-event JSON (--trace). Process 1 holds the windows;
 * node i (of the last window, as the timeline's lanes) is process i + 2,
 * named by its host. Each target has two tracks (threads): tid = its pid
 * for the tools' window, tid = pid + TRACE_CALLS_TID for its attach and
 * detach calls: our agent hands over inside the calls, so a call and the
 * tools' window overlap without nesting, which one track cannot show.
 * Timestamps: CLOCK_REALTIME of the node that took them, in us since the
 * epoch (a double: to about 0.25 us). Written as it is made, an event a
 * line, and read a node at a time: the trace of 10,000 nodes x 128 targets
 * never is in memory whole.
 *
 * Below --detail all, each node has two tracks of its own instead: its
 * targets' tools' windows as one span per window (first hand-over to last
 * hand-back) and their calls as one (first attach call's start to last
 * detach call's end), with the node's figures in the args; the targets the
 * level keeps (failures: every one not cleanly attached and detached) keep
 * their own two tracks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocattach/version.h>

#include "report_int.h"

#define TRACE_CALLS_TID 4194304 /* PID_MAX_LIMIT: above any pid */
#define TRACE_WINDOWS_PID 1
/* Below --detail all, a node's own two tracks: above any pid + TRACE_CALLS_TID. */
#define TRACE_NODE_TID (2 * TRACE_CALLS_TID)
#define TRACE_NODE_CALLS_TID (2 * TRACE_CALLS_TID + 1)

struct trace {
	FILE *f;
	const struct rm_run *r;
	enum rm_detail d;
	bool any;
	int err; /* errno of the first failure, 0 if none */
};

/* ns since the epoch to us, split so that the division keeps the ns digits. */
static double trace_us(uint64_t ns)
{
	return (double)(ns / 1000u) + (double)(ns % 1000u) / 1000.0;
}

/* One event (e released; NULL: out of memory) into the traceEvents array. */
static void trace_add(struct trace *tr, json_t *e)
{
	if (!e) {
		tr->err = tr->err ? tr->err : ENOMEM;
		return;
	}
	if (!tr->err) {
		if (tr->any)
			fputs(",\n", tr->f);
		if (json_dumpf(e, tr->f, JSON_COMPACT | JSON_PRESERVE_ORDER))
			tr->err = errno ? errno : EIO;
		tr->any = true;
	}
	json_decref(e);
}

/* A metadata event: process_name, thread_name, *_sort_index. */
static void trace_meta(struct trace *tr, const char *what, int pid, long long tid, json_t *args)
{
	json_t *e = json_pack("{s:s, s:s, s:i, s:I}", "name", what, "ph", "M", "pid", pid, "tid",
			      (json_int_t)tid);

	if (e && json_object_set_new(e, "args", args))
		json_decref(e), e = NULL;
	else if (!e)
		json_decref(args);
	trace_add(tr, e);
}

static void trace_span(struct trace *tr, const char *name, const char *cat, int pid, long long tid,
		       uint64_t from, uint64_t to, json_t *args)
{
	json_t *e = json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:f}", "name", name, "cat", cat, "ph",
			      "X", "pid", pid, "tid", (json_int_t)tid, "ts", trace_us(from), "dur",
			      to > from ? (double)(to - from) / 1000.0 : 0.0);

	if (e && json_object_set_new(e, "args", args ? args : json_object()))
		json_decref(e), e = NULL;
	else if (!e)
		json_decref(args);
	trace_add(tr, e);
}

static void trace_instant(struct trace *tr, const char *name, const char *cat, int pid,
			  long long tid, uint64_t at, json_t *args)
{
	json_t *e =
	    json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:f}", "name", name, "cat", cat, "ph", "i",
		      "s", "t", "pid", pid, "tid", (json_int_t)tid, "ts", trace_us(at));

	if (e && json_object_set_new(e, "args", args ? args : json_object()))
		json_decref(e), e = NULL;
	else if (!e)
		json_decref(args);
	trace_add(tr, e);
}

static json_t *trace_name(const char *s, size_t width)
{
	return json_pack("{s:o}", "name", rm_jstr(s, width));
}

static json_t *trace_sort(long long i)
{
	return json_pack("{s:I}", "sort_index", (json_int_t)i);
}

static void trace_windows(struct trace *tr)
{
	const struct rm_window *w;

	trace_meta(tr, "process_name", TRACE_WINDOWS_PID, 0,
		   trace_name("rocattach-mpi windows", (size_t)-1));
	trace_meta(tr, "process_sort_index", TRACE_WINDOWS_PID, 0, trace_sort(0));
	trace_meta(tr, "thread_name", TRACE_WINDOWS_PID, 1, trace_name("windows", (size_t)-1));
	for (size_t i = 0; i < tr->r->n_w; i++) {
		char name[32];

		w = &tr->r->w[i];
		if (!w->start_ns || w->stop_ns < w->start_ns)
			continue;
		snprintf(name, sizeof(name), "window %d", w->index);
		trace_span(tr, name, "window", TRACE_WINDOWS_PID, 1, w->start_ns, w->stop_ns,
			   json_pack("{s:I, s:I, s:o}", "start_ns", (json_int_t)w->start_ns,
				     "stop_ns", (json_int_t)w->stop_ns, "stop_reason",
				     rm_jstr_or_null(w->stop_reason)));
	}
}

/* A node's name: its host, and "(lost in window W: REASON)" if it was lost. */
static json_t *trace_node_name(struct trace *tr, const struct rm_node *n, size_t ni)
{
	const struct rm_node *ln;
	const struct rm_window *lw = rm_lost_in(tr->r, n->host, ni, &ln);
	char *name;
	json_t *j;

	if (!lw || asprintf(&name, "%.*s (lost in window %d: %s)", (int)sizeof(n->host), n->host,
			    lw->index, rm_lost_reason(ln)) < 0)
		return trace_name(n->host, sizeof(n->host));
	j = trace_name(name, (size_t)-1);
	free(name);
	return j;
}

/* A node's process and its targets' two tracks each, named and in order. */
static void trace_node_meta(struct trace *tr, const struct rm_node *n, size_t ni, struct rm_hold *h)
{
	const struct rn_target *v = rm_targets(n, h);
	int pid = (int)ni + 2;
	char label[160];

	trace_meta(tr, "process_name", pid, 0, trace_node_name(tr, n, ni));
	trace_meta(tr, "process_sort_index", pid, 0, trace_sort(pid));
	if (tr->d != RM_DETAIL_ALL) {
		snprintf(label, sizeof(label), "node: %zu targets' tools", rm_found(n));
		trace_meta(tr, "thread_name", pid, TRACE_NODE_TID, trace_name(label, (size_t)-1));
		trace_meta(tr, "thread_sort_index", pid, TRACE_NODE_TID, trace_sort(-2));
		trace_meta(tr, "thread_name", pid, TRACE_NODE_CALLS_TID,
			   trace_name("node: calls", (size_t)-1));
		trace_meta(tr, "thread_sort_index", pid, TRACE_NODE_CALLS_TID, trace_sort(-1));
	}
	/* Sorted in the records' order, numbered among those drawn (a node's cut or not). */
	for (size_t k = 0, drawn = 0; v && k < n->n; k++) {
		const struct rn_target *t = &v[k];
		long long at = 2 * (long long)drawn;
		int len;

		if (!rm_detail_keeps(tr->d, n, t))
			continue;
		drawn++;
		len = snprintf(label, sizeof(label), "pid %d", (int)t->pid);

		if (t->rank >= 0)
			len += snprintf(label + len, sizeof(label) - (size_t)len, " rank %ld",
					t->rank);
		snprintf(label + len, sizeof(label) - (size_t)len, " (%.*s)", (int)sizeof(t->exe),
			 t->exe);
		trace_meta(tr, "thread_name", pid, t->pid, trace_name(label, sizeof(label)));
		trace_meta(tr, "thread_sort_index", pid, t->pid, trace_sort(at));
		snprintf(label + len, sizeof(label) - (size_t)len, " calls");
		trace_meta(tr, "thread_name", pid, (long long)t->pid + TRACE_CALLS_TID,
			   trace_name(label, sizeof(label)));
		trace_meta(tr, "thread_sort_index", pid, (long long)t->pid + TRACE_CALLS_TID,
			   trace_sort(at + 1));
	}
}

/*
 * st: the status of the call drawn. A record keeps only the last status, so
 * an attach that succeeded before the target died or failed its detach is
 * given as a success here.
 */
static json_t *trace_call_args(const struct rn_target *t, int window, rocattach_status_t st)
{
	const char *status = rocattach_get_status_name(st);

	return json_pack("{s:i, s:o, s:o, s:o}", "window", window, "target_side",
			 rn_side_name(t->side) ? json_string(rn_side_name(t->side)) : json_null(),
			 "status", status ? json_string(status) : json_null(), "agent_status",
			 t->agent_status == -1 ? json_null() : json_integer(t->agent_status));
}

/*
 * The tools' window: from the hand-over to the hand-back as the report's
 * tool_ns give them; on ROCm's side both are bounds (each call's end), and
 * the args say so with the window's lower bound. A target that died
 * attached has no hand-back: its span ends when it was seen gone, else at
 * the window's stop.
 */
static void trace_tools(struct trace *tr, const struct rm_window *w, const struct rn_target *t,
			int pid)
{
	bool bound = t->attach_tool_bound || t->detach_tool_bound;
	uint64_t from = t->attach_tool_ns, to = t->detach_tool_ns, lower = rn_window_ns(t, &bound);
	json_t *args;

	if (!from)
		return;
	bound = t->attach_tool_bound || t->detach_tool_bound;
	args = json_pack("{s:i, s:s, s:I, s:o, s:o}", "window", w->index, "tool_ns_kind",
			 bound ? "bound" : "measured", "attach_tool_ns", (json_int_t)from,
			 "detach_tool_ns", to ? json_integer((json_int_t)to) : json_null(),
			 "window_ns", lower ? json_integer((json_int_t)lower) : json_null());
	if (args && bound)
		json_object_set_new(
		    args, "note",
		    json_string(
			"ROCm's side: the tools ran inside the calls, which end at these times "
			"(bounds); window_ns is a lower bound: the attach call's end to the "
			"detach call's start"));
	if (args && !to)
		json_object_set_new(
		    args, "end",
		    json_string(t->state == RN_DIED_ATTACHED && t->died_ns
				    ? "no hand-back (the target died with its tools "
				      "attached): drawn to when it was seen gone"
				    : "no hand-back (the target exited): "
				      "drawn to the window's stop"));
	if (!to && t->state == RN_DIED_ATTACHED && t->died_ns > from)
		to = t->died_ns;
	if (!to)
		to = w->stop_ns > from ? w->stop_ns : from;
	trace_span(tr, bound ? "tools attached (bounds)" : "tools attached", "tools", pid, t->pid,
		   from, to, args);
}

/* A failure or an exit: an instant on the target's calls track, with the message. */
static void trace_mark(struct trace *tr, const struct rm_window *w, const struct rn_target *t,
		       int pid, bool new_call)
{
	uint64_t at = t->state == RN_DETACH_FAILED || (t->state == RN_EXITED && t->detach_start_ns)
			  ? (t->detach_end_ns ? t->detach_end_ns : t->detach_start_ns)
			  : (t->attach_end_ns ? t->attach_end_ns : t->attach_start_ns);
	const char *cat = rm_failed(t)			 ? "failure"
			  : t->state == RN_DIED_ATTACHED ? "died_attached"
							 : "exit";

	/* A death with the tools in: when it was seen gone. */
	if (t->state == RN_DIED_ATTACHED && t->died_ns)
		at = t->died_ns;
	json_t *args = trace_call_args(t, w->index, t->status);

	if ((!new_call && t->state != RN_DIED_ATTACHED) || !at)
		at = w->start_ns; /* found gone before this window's attach */
	if (args)
		json_object_set_new(args, "message",
				    t->message[0] ? rm_jstr(t->message, sizeof(t->message))
						  : json_null());
	trace_instant(tr, rn_state_name(t->state), cat, pid, (long long)t->pid + TRACE_CALLS_TID,
		      at, args);
}

/* A detach call's status: the record's, unless the target only exited after it. */
static rocattach_status_t detach_status(const struct rn_target *t)
{
	if (t->state == RN_EXITED && t->windows > 0)
		return ROCATTACH_STATUS_SUCCESS;
	return t->status;
}

/*
 * One target in one window. Its record is gathered again after every
 * window, attached or not: only what changed since the previous window's
 * record (a new attach call, a new state) is this window's.
 */
static void trace_target(struct trace *tr, const struct rm_window *w, const struct rn_target *t,
			 const struct rn_target *prev, size_t n_prev, size_t ti, int pid)
{
	const struct rn_target *p = rm_find_target(prev, n_prev, ti, t->pid);
	bool new_call, new_state;

	new_call = t->attach_start_ns && (!p || p->attach_start_ns != t->attach_start_ns);
	new_state = !p || p->state != t->state || new_call;
	if (new_call) {
		trace_span(tr, "attach call", "call", pid, (long long)t->pid + TRACE_CALLS_TID,
			   t->attach_start_ns, t->attach_end_ns,
			   trace_call_args(t, w->index,
					   rm_attached(t) ? ROCATTACH_STATUS_SUCCESS : t->status));
		if (rm_attached(t))
			trace_tools(tr, w, t, pid);
		if (t->detach_start_ns)
			trace_span(tr, "detach call", "call", pid,
				   (long long)t->pid + TRACE_CALLS_TID, t->detach_start_ns,
				   t->detach_end_ns,
				   trace_call_args(t, w->index, detach_status(t)));
	}
	if (new_state && (rm_failed(t) || t->state == RN_EXITED || t->state == RN_DIED_ATTACHED))
		trace_mark(tr, w, t, pid, new_call);
}

static json_t *trace_fig3(const struct rm_fig3 *f)
{
	if (!f->n)
		return json_null();
	return json_pack("{s:I, s:I, s:I}", "min", (json_int_t)f->min, "p50", (json_int_t)f->p50,
			 "max", (json_int_t)f->max);
}

/* Below --detail all: a node's targets in one window, as two spans on its own tracks. */
static void trace_node_spans(struct trace *tr, const struct rm_window *w, const struct rm_node *n,
			     const struct rn_target *t, int pid)
{
	struct rm_node_fig f;
	struct rm_counts c = {0};
	uint64_t to;
	char name[64];

	rm_node_figures(n, t, w->start_ns, &f);
	if (!f.attach.n)
		return;
	rm_count_node(n, t, &c);
	to = f.back.n ? f.back.max : w->stop_ns;
	snprintf(name, sizeof(name), "tools attached (%zu targets)", f.attach.n);
	trace_span(tr, name, "tools", pid, TRACE_NODE_TID, f.over.min,
		   to > f.over.min ? to : f.over.min,
		   json_pack("{s:i, s:I, s:I, s:I, s:o, s:o, s:o, s:o}", "window", w->index,
			     "found", (json_int_t)c.found, "attached", (json_int_t)f.attach.n,
			     "failed", (json_int_t)c.failed, "hand_over_ns", trace_fig3(&f.over),
			     "hand_back_ns", trace_fig3(&f.back), "attach_time_ns",
			     trace_fig3(&f.attach), "detach_time_ns", trace_fig3(&f.detach)));
	if (f.calls_lo && f.calls_hi >= f.calls_lo)
		trace_span(tr, "calls", "call", pid, TRACE_NODE_CALLS_TID, f.calls_lo, f.calls_hi,
			   json_pack("{s:i, s:s}", "window", w->index, "extent",
				     "the first attach call's start to the last call's end"));
}

/*
 * Nodes are those of the last window (as the timeline's); earlier ones are
 * found by host. Two nodes' targets are in memory at a time: one window's
 * and the window before's.
 */
static void trace_nodes(struct trace *tr)
{
	const struct rm_window *last = rm_last_window(tr->r);
	struct rm_hold h = {0}, hp = {0};

	for (size_t ni = 0; last && ni < last->n_nodes; ni++)
		trace_node_meta(tr, &last->nodes[ni], ni, &h);
	for (size_t wi = 0; last && wi < tr->r->n_w; wi++) {
		const struct rm_window *w = &tr->r->w[wi];

		for (size_t ni = 0; ni < w->n_nodes; ni++) {
			const struct rm_node *n = &w->nodes[ni];
			const struct rm_node *ln = rm_find_node(last, ni, n->host);
			/* A lost node's records are the last known: not this window's. */
			const struct rn_target *t = ln && !n->lost ? rm_targets(n, &h) : NULL;
			const struct rn_target *p = NULL;
			size_t np = 0;

			if (t)
				p = rm_prev_targets(tr->r, wi, ni, n->host, &hp, &np);
			/* A node that cut its records sent its figures: spans with no record. */
			if ((t || (ln && !n->lost && n->cut)) && tr->d != RM_DETAIL_ALL)
				trace_node_spans(tr, w, n, t, (int)(ln - last->nodes) + 2);
			for (size_t ti = 0; t && ti < n->n; ti++)
				if (rm_detail_keeps(tr->d, n, &t[ti]))
					trace_target(tr, w, &t[ti], p, np, ti,
						     (int)(ln - last->nodes) + 2);
		}
	}
	rm_hold_free(&h);
	rm_hold_free(&hp);
}

/*
 * --sample: each sample an instant event on its thread's track (tid: the
 * thread's id, on the node's process), named by its innermost frame, with
 * the whole stack and the rank in its args.
 */
static void trace_samples(struct trace *tr)
{
	const struct rm_window *last = rm_last_window(tr->r);
	char *copy, *save = NULL;
	size_t hint = 0;

	if (!last || !tr->r->timed_len)
		return;
	copy = strndup(tr->r->timed_text, tr->r->timed_len);
	if (!copy) {
		tr->err = tr->err ? tr->err : ENOMEM;
		return;
	}
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *f[6], *leaf;
		const struct rm_node *n;
		int k = 0;

		/* host, rank, pid, tid, ns, stack */
		for (char *p = l; p && k < 6; k++) {
			f[k] = p;
			p = k < 5 ? strchr(p, '\t') : NULL;
			if (p)
				*p++ = '\0';
		}
		if (k < 6)
			continue;
		n = rm_find_node(last, hint, f[0]);
		if (!n)
			continue;
		hint = (size_t)(n - last->nodes);
		leaf = strrchr(f[5], ';');
		trace_instant(tr, leaf ? leaf + 1 : f[5], "sample", (int)hint + 2,
			      strtoll(f[3], NULL, 10), strtoull(f[4], NULL, 10),
			      json_pack("{s:I, s:I, s:s}", "rank",
					(json_int_t)strtoll(f[1], NULL, 10), "pid",
					(json_int_t)strtoll(f[2], NULL, 10), "stack", f[5]));
	}
	free(copy);
}

/*
 * The clock, and per node its CLOCK_REALTIME - CLOCK_BOOTTIME and its clock's
 * offset to rank 0's, to line up with other traces taken on that node.
 */
static json_t *trace_other(const struct rm_run *r)
{
	const struct rm_window *last = rm_last_window(r);
	json_t *o =
	    json_pack("{s:s, s:s, s:s, s:i, s:o, s:o}", "producer", "rocattach-mpi", "version",
		      ROCATTACH_VERSION_STRING, "clock",
		      "rank 0's CLOCK_REALTIME (each node's times corrected by its "
		      "clock_offset_ns), us since the Unix epoch",
		      "exit_code", r->exit_code, "exit_reason", rm_jstr_or_null(r->exit_reason),
		      "stop_reason", rm_jstr_or_null(r->stop_reason));
	json_t *offs = json_object(), *clocks = json_object();

	for (size_t i = 0; o && offs && clocks && last && i < last->n_nodes; i++) {
		const struct rm_node *n = &last->nodes[i];
		json_t *host = rm_jstr(n->host, sizeof(n->host));

		/* Keys must be UTF-8 too: the host as rm_jstr made it. */
		if (host && n->boot_offset_ns)
			json_object_set_new(offs, json_string_value(host),
					    json_integer(n->boot_offset_ns));
		if (host && n->clock_known) /* the correction made: 0 where none was */
			json_object_set_new(
			    clocks, json_string_value(host),
			    json_integer(n->clock_applied ? n->clock_offset_ns : 0));
		json_decref(host);
	}
	if (!o || !offs || !clocks || json_object_set_new(o, "realtime_minus_boottime_ns", offs) ||
	    json_object_set_new(o, "clock_offset_ns", clocks)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int rm_write_trace(const char *path, const struct rm_run *r, char *err, size_t len)
{
	struct trace tr = {.r = r};
	struct rm_out out;
	json_t *other;
	char chosen[192];

	tr.d = rm_detail_of(r, chosen, sizeof(chosen));
	if (rm_out_open(&out, path, "trace", err, len))
		return -1;
	tr.f = out.f;
	fputs("{\"traceEvents\":[\n", tr.f);
	trace_windows(&tr);
	trace_nodes(&tr);
	trace_samples(&tr);
	fputs("],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":", tr.f);
	other = trace_other(r);
	if (other)
		json_object_set_new(
		    other, "detail",
		    json_pack("{s:s, s:s}", "level", rm_detail_name(tr.d), "chosen", chosen));
	if (!other)
		tr.err = tr.err ? tr.err : ENOMEM;
	else if (!tr.err && json_dumpf(other, tr.f, JSON_COMPACT | JSON_PRESERVE_ORDER))
		tr.err = errno ? errno : EIO;
	json_decref(other);
	fputs("}\n", tr.f);
	if (tr.err)
		return rm_out_abort(&out, tr.err, err, len);
	return rm_out_done(&out, r->store, err, len);
}

/* SPDX-License-Identifier: MIT */
/*
 * The JSON report (--report; its schema is in docs/report.md): the run, its
 * configuration, a summary, per window its skews and nodes with their
 * targets' records, and every failure once.
 * json_object_set_new() takes (and on failure frees) the value.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocattach/version.h>

#include "report_int.h"
#include "json_rocprofv3.h"

/* Timestamps and durations in ns fit: CLOCK_REALTIME stays below 2^63 ns until 2262. */
static json_t *jint_or_null(uint64_t v, bool known)
{
	return known ? json_integer((json_int_t)v) : json_null();
}

static json_t *argv_json(const struct rm_config *c)
{
	json_t *a = json_array();
	int i;

	for (i = 0; a && c->argv && i < c->argc; i++) {
		if (json_array_append_new(a, rm_jstr_or_null(c->argv[i]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *config_json(const struct rm_config *c)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "argv", argv_json(c));
	rc |= json_object_set_new(o, "tools", rm_jstr_or_null(c->tools));
	rc |= json_object_set_new(o, "duration_ms",
				  jint_or_null((uint64_t)c->duration_ms, c->duration_ms != -1));
	rc |= json_object_set_new(o, "delay_ms", json_integer(c->delay_ms));
	rc |= json_object_set_new(o, "windows", json_integer(c->windows));
	rc |= json_object_set_new(o, "jobs", json_integer(c->jobs));
	rc |= json_object_set_new(o, "inject", json_boolean(c->inject));
	rc |= json_object_set_new(o, "ranks", json_integer(c->ranks));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* found is "found" in a node, "targets" in the run's summary. */
static json_t *counts_json(json_t *o, const struct rm_counts *c, const char *found)
{
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, found, json_integer((json_int_t)c->found));
	rc |= json_object_set_new(o, "attached", json_integer((json_int_t)c->attached));
	rc |= json_object_set_new(o, "failed", json_integer((json_int_t)c->failed));
	rc |= json_object_set_new(o, "exited", json_integer((json_int_t)c->exited));
	rc |= json_object_set_new(o, "died_attached", json_integer((json_int_t)c->died));
	rc |= json_object_set_new(o, "stopped", json_integer((json_int_t)c->stopped));
	rc |= json_object_set_new(o, "late", json_integer((json_int_t)c->late));
	rc |= json_object_set_new(o, "declined", json_integer((json_int_t)c->declined));
	/* --late-start: the SDK initialized (a cut node's block counts them too). */
	rc |= json_object_set_new(o, "late_started", json_integer((json_int_t)c->late_started));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *summary_json(const struct rm_run *r)
{
	const struct rm_window *w = rm_last_window(r);
	struct rm_counts c = rm_count_window(w);
	json_t *o = json_object();

	if (o && json_object_set_new(o, "nodes", json_integer(w ? (json_int_t)w->n_nodes : 0))) {
		json_decref(o);
		return NULL;
	}
	o = counts_json(o, &c, "targets");
	if (o && json_object_set_new(o, "lost_nodes", json_integer((json_int_t)c.lost_nodes))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *topology_json(const struct rm_node *n, const struct rn_target *t)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "cpus", rm_list_union_json(n, t, false));
	rc |= json_object_set_new(o, "numa", rm_list_union_json(n, t, true));
	rc |= json_object_set_new(o, "gpus", rm_gpus_union_json(n, t));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The records --detail keeps; *left: how many it leaves out. */
static json_t *targets_json(const struct rm_node *n, const struct rn_target *t, enum rm_detail d,
			    size_t *left)
{
	json_t *a = json_array();
	size_t k;

	*left = 0;
	if (!t && n->n) { /* not read back: rm_store_check fails the report */
		json_decref(a);
		return NULL;
	}
	*left = rm_left_out(n);
	for (k = 0; a && k < n->n; k++) {
		if (!rm_detail_keeps(d, n, &t[k])) {
			(*left)++;
			continue;
		}
		json_t *j = rn_target_to_json(&t[k]);

		rm_rp3_output_add(j, n->host, &t[k]);
		if (json_array_append_new(a, j)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *fig3_json(const struct rm_fig3 *f)
{
	if (!f->n)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I}", "min", (json_int_t)f->min, "p50",
			 (json_int_t)f->p50, "max", (json_int_t)f->max, "targets",
			 (json_int_t)f->n);
}

static json_t *hist_json(const uint32_t *v, bool known)
{
	json_t *a = known ? json_array() : json_null();

	for (size_t i = 0; known && a && i < RM_HIST_BINS; i++)
		if (json_array_append_new(a, json_integer(v[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* Kept at every --detail level: times, histograms (bins: the report's "detail"). */
static int figures_json(json_t *o, const struct rm_node *n, const struct rn_target *t,
			uint64_t since)
{
	struct rm_node_fig f;
	int rc = 0;

	rm_node_figures(n, t, since, &f);
	rc |= json_object_set_new(o, "attach_time_ns", fig3_json(&f.attach));
	rc |= json_object_set_new(o, "detach_time_ns", fig3_json(&f.detach));
	rc |= json_object_set_new(o, "attach_time_hist", hist_json(f.attach_hist, f.attach.n));
	rc |=
	    json_object_set_new(o, "attach_skew_hist", hist_json(f.skew_hist, f.attach.n && since));
	rc |=
	    json_object_set_new(o, "attach_skew_early", jint_or_null(f.early, f.attach.n && since));
	return rc;
}

/*
 * A lost node ("state": "lost") is found with its last known targets and
 * nothing else: its counts, times and skew are of nothing measured.
 */
static json_t *node_json(const struct rm_node *n, uint64_t since, struct rm_hold *h,
			 enum rm_detail d, size_t *left)
{
	const struct rn_target *t = rm_targets(n, h);
	struct rm_spread a = rm_node_attach_spread(n, t, since);
	struct rm_counts c = {0};
	json_t *o = json_object();
	uint64_t p50, max;
	int rc = 0;

	*left = 0;
	if (!o)
		return NULL;
	rm_count_node(n, t, &c);
	rm_node_times(n, t, since, &p50, &max);
	rc |= json_object_set_new(o, "host", rm_jstr(n->host, sizeof(n->host)));
	rc |= json_object_set_new(o, "state", json_string(n->lost ? "lost" : "ok"));
	rc |= json_object_set_new(o, "lost_reason",
				  n->lost ? rm_jstr(rm_lost_reason(n), (size_t)-1) : json_null());
	rc |= json_object_set_new(o, "error", rm_jstr_or_null(n->error));
	rc |=
	    json_object_set_new(o, "realtime_minus_boottime_ns",
				n->boot_offset_ns ? json_integer(n->boot_offset_ns) : json_null());
	rc |= json_object_set_new(o, "order_received_ns", jint_or_null(n->order_ns, n->order_ns));
	rc |= json_object_set_new(o, "topology", topology_json(n, t));
	if (rc || !(o = counts_json(o, &c, "found"))) {
		json_decref(o);
		return NULL;
	}
	rc |= json_object_set_new(o, "attach_p50_ns", jint_or_null(p50, a.n));
	rc |= json_object_set_new(o, "attach_max_ns", jint_or_null(max, a.n));
	rc |= json_object_set_new(o, "attach_skew_ns", jint_or_null(rm_spread_ns(&a), a.n));
	rc |= json_object_set_new(o, "clock_offset_ns",
				  n->clock_known ? json_integer((json_int_t)n->clock_offset_ns)
						 : json_null());
	rc |= json_object_set_new(o, "clock_rtt_ns", jint_or_null(n->clock_rtt_ns, n->clock_known));
	rc |= json_object_set_new(o, "clock_bound_ns",
				  jint_or_null(n->clock_bound_ns, n->clock_known));
	rc |= json_object_set_new(o, "clock_corrected",
				  n->clock_known ? json_boolean(n->clock_applied) : json_null());
	rc |= figures_json(o, n, t, since);
	rc |= json_object_set_new(o, "targets", targets_json(n, t, d, left));
	rc |= json_object_set_new(o, "records_left_out", json_integer((json_int_t)*left));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Measured when every figure came from our agent's clock, else from bounds (or mixed). */
static json_t *basis_json(const struct rm_skew *s)
{
	if (!s->n)
		return json_null();
	return json_string(!s->bounds ? "measured" : s->bounds == s->n ? "bounds" : "mixed");
}

/* What the skew figures are made of, in words. */
static const char *skew_parts(const struct rm_skew *s)
{
	if (!s->n)
		return NULL;
	if (s->estimate)
		return "the calls' ends where their starts are unknown (ROCm's side): "
		       "an estimate, the true skew may be larger";
	if (s->bounds)
		return "each target's tools time, or on ROCm's side the entry point's call "
		       "from its start to its end (the tools ran inside it): latest end "
		       "minus earliest start, an upper bound";
	return "the tools' hand-over times as our agent measured them";
}

/* The late starts (rm_late): null figures where none was late or nothing attached. */
static json_t *late_json(const struct rm_window *w)
{
	struct rm_late l = rm_window_late(w);
	bool any = l.n || l.unknown;

	return json_pack("{s:I, s:I, s:I, s:o, s:o, s:I, s:o, s:o}", "targets", (json_int_t)l.n,
			 "of", (json_int_t)l.of, "unknown", (json_int_t)l.unknown, "p50_ns",
			 jint_or_null(l.p50_ns, l.n && l.p50_known), "max_ns",
			 jint_or_null(l.max_ns, any), "tolerance_ns", (json_int_t)l.tolerance_ns,
			 "kind",
			 !any ? json_null() : json_string(l.bound ? "lower-bound" : "measured"),
			 "off", json_boolean(rm_window_off(w)));
}

/* The start lead the window was scheduled with, and why that one. */
static json_t *lead_json(const struct rm_window *w)
{
	if (!w->lead_why[0])
		return json_null();
	return json_pack("{s:I, s:s}", "ns", (json_int_t)w->lead_ns, "why", w->lead_why);
}

/* Null (never 0) where no target was attached. */
static json_t *skew_json(const struct rm_skew s)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "attach_ns", jint_or_null(s.attach_ns, s.n));
	rc |= json_object_set_new(o, "detach_ns", jint_or_null(s.detach_ns, s.n_detach));
	rc |= json_object_set_new(o, "targets", json_integer((json_int_t)s.n));
	rc |= json_object_set_new(o, "detach_targets", json_integer((json_int_t)s.n_detach));
	rc |= json_object_set_new(o, "basis", basis_json(&s));
	rc |= json_object_set_new(o, "skew_kind", rm_jstr_or_null(rm_skew_kind(&s)));
	rc |= json_object_set_new(o, "made_of", rm_jstr_or_null(skew_parts(&s)));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The tools' windows of the targets against the planned one. */
static json_t *length_json(const struct rm_window *w, const struct rm_skew s)
{
	int64_t length = rm_window_length_ns(w);
	uint64_t planned = ra_ns_known(length) ? (uint64_t)length : 0;
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "planned_ns", jint_or_null(planned, ra_ns_known(length)));
	rc |= json_object_set_new(o, "planned_unknown", rm_jstr_or_null(rm_window_length_why(w)));
	rc |= json_object_set_new(o, "min_ns", jint_or_null(s.len_min_ns, s.n_len));
	rc |= json_object_set_new(o, "max_ns", jint_or_null(s.len_max_ns, s.n_len));
	rc |= json_object_set_new(
	    o, "kind", !s.n_len ? json_null() : json_string(s.bounds ? "lower-bound" : "measured"));
	rc |= json_object_set_new(
	    o, "tolerance_ns", jint_or_null(rm_length_tolerance_ns(planned), ra_ns_known(length)));
	rc |= json_object_set_new(o, "off",
				  s.n_len && planned ? json_boolean(s.len_off) : json_null());
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * --detail as in effect; the cut is made here, as the report is written:
 * the nodes sent rank 0 every record.
 */
/* Where the records left out were cut: on the nodes (before the wire), on rank 0, or both. */
static const char *cut_where(const struct rm_run *r, enum rm_detail d)
{
	size_t on_node = 0, here = 0;

	if (d == RM_DETAIL_ALL)
		return "nothing cut: every record is in the report";
	for (size_t wi = 0; wi < r->n_w; wi++)
		for (size_t i = 0; i < r->w[wi].n_nodes; i++) {
			const struct rm_node *n = &r->w[wi].nodes[i];

			if (n->lost || !rm_found(n))
				continue;
			on_node += n->cut;
			here += !n->cut;
		}
	if (on_node && !here)
		return "on each node: the records left out never crossed the wire; the counts and "
		       "figures were computed there from all of them";
	if (on_node)
		return "on each node where the figures could be sent (the records left out there "
		       "never crossed the wire), else on rank 0 as the report was written; the "
		       "counts and figures are of all the records";
	return "on rank 0, as the report is written: every record came over the wire, "
	       "the counts and figures are of them all";
}

static json_t *detail_json(const struct rm_run *r, enum rm_detail d, const char *chosen)
{
	json_t *bins = json_array();
	json_t *o;

	/* Each bin's lower edge: 0, then 1, 2, 4 ... 2^24 us; the last has no upper one. */
	for (unsigned i = 0; bins && i < RM_HIST_BINS; i++)
		if (json_array_append_new(bins, json_integer(i ? 1ll << (i - 1) : 0))) {
			json_decref(bins);
			return NULL;
		}
	o = json_pack("{s:s, s:s, s:s, s:o*}", "level", rm_detail_name(d), "chosen", chosen, "cut",
		      cut_where(r, d), "hist_bins_us", bins);
	return o;
}

/*
 * The report is written as it is made, a node at a time: only one node's
 * JSON is ever in memory (at 10,000 nodes x 128 targets the whole tree
 * would take gigabytes; bench/README.md, "Rank 0 at scale"). One key and
 * value a line at the top and in each window, one node a line.
 */
struct json_out {
	FILE *f;
	int err; /* errno of the first failure, 0 if none */
};

/* "KEY": VALUE (compact), after a comma unless first; v is released; NULL: out of memory. */
static void put(struct json_out *o, const char *key, json_t *v, bool first)
{
	if (!v) {
		o->err = o->err ? o->err : ENOMEM;
		return;
	}
	if (!o->err) {
		if (!first)
			fputs(",\n", o->f);
		if (key) {
			json_t *k = json_string(key);

			json_dumpf(k, o->f, JSON_ENCODE_ANY);
			json_decref(k);
			fputs(": ", o->f);
		}
		if (json_dumpf(v, o->f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY))
			o->err = errno ? errno : EIO;
	}
	json_decref(v);
}

/* Rank 0's messages and bytes in the window (null for a window not counted). */
static json_t *coord_json(const struct rm_coord *c)
{
	if (!c->known)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I, s:i, s:i}", "messages_sent",
			 (json_int_t)c->messages_sent, "messages_received",
			 (json_int_t)c->messages_received, "bytes_sent", (json_int_t)c->bytes_sent,
			 "bytes_received", (json_int_t)c->bytes_received, "fanout", c->fanout,
			 "height", c->height);
}

static void put_window(struct json_out *o, const struct rm_window *w, enum rm_detail d)
{
	struct rm_skew s = rm_window_skew(w);
	struct rm_hold h = {0};
	size_t left, all = 0;

	fputs("{", o->f);
	put(o, "index", json_integer(w->index), true);
	put(o, "start_ns", jint_or_null(w->start_ns, w->start_ns), false);
	put(o, "stop_ns", jint_or_null(w->stop_ns, w->stop_ns), false);
	put(o, "stop_reason", rm_jstr_or_null(w->stop_reason), false);
	put(o, "skew", skew_json(s), false);
	put(o, "length", length_json(w, s), false);
	put(o, "late", late_json(w), false);
	put(o, "lead", lead_json(w), false);
	put(o, "coordination", coord_json(&w->coord), false);
	fputs(",\n\"nodes\": [\n", o->f);
	for (size_t i = 0; i < w->n_nodes && !o->err; i++) {
		put(o, NULL, node_json(&w->nodes[i], w->start_ns, &h, d, &left), i == 0);
		all += left;
	}
	fputs("]", o->f);
	put(o, "records_left_out", json_integer((json_int_t)all), false);
	fputs("}", o->f);
	rm_hold_free(&h);
}

static json_t *error_json(const struct rm_window *w, const struct rm_node *n,
			  const struct rn_target *t)
{
	json_t *o = json_object();
	char why[800];
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "window", json_integer(w->index));
	rc |= json_object_set_new(o, "host", rm_jstr(n->host, sizeof(n->host)));
	if (!t) {
		/* The node's records could not be read back: one error for the node. */
		rm_unreadable_reason(n, why, sizeof(why));
		rc |= json_object_set_new(o, "pid", json_null());
		rc |= json_object_set_new(o, "rank", json_null());
		rc |= json_object_set_new(o, "state", json_string("unreadable"));
		rc |= json_object_set_new(o, "message", rm_jstr(why, sizeof(why)));
		goto out;
	}
	rc |= json_object_set_new(o, "pid", json_integer(t->pid));
	rc |= json_object_set_new(o, "rank", t->rank >= 0 ? json_integer(t->rank) : json_null());
	rc |= json_object_set_new(o, "state", json_string(rn_state_name(t->state)));
	rc |= json_object_set_new(
	    o, "message", t->message[0] ? rm_jstr(t->message, sizeof(t->message)) : json_null());
out:
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* One failure a line, as it is found: a run where every target failed has as many. */
struct errors_out {
	struct json_out *o;
	bool first;
};

static int put_error(const struct rm_window *w, const struct rm_node *n, const struct rn_target *t,
		     void *arg)
{
	struct errors_out *e = arg;

	put(e->o, NULL, error_json(w, n, t), e->first);
	e->first = false;
	return e->o->err;
}

/* Every failure once, in the first window that has it (see rm_new_failure). */
static void put_errors(struct json_out *o, const struct rm_run *r, enum rm_detail d)
{
	struct errors_out e = {.o = o, .first = true};

	if (d == RM_DETAIL_NONE) { /* counted, not listed: never an empty list */
		put(o, "errors", json_null(), false);
		put(o, "errors_left_out", json_integer((json_int_t)rm_count_failures(r)), false);
		return;
	}
	fputs(",\n\"errors\": [\n", o->f);
	rm_for_each_failure(r, put_error, &e);
	fputs("]", o->f);
}

int rm_write_report(const char *path, const struct rm_run *r, char *err, size_t len)
{
	struct json_out o = {0};
	struct rm_out out;
	char chosen[192];
	enum rm_detail d = rm_detail_of(r, chosen, sizeof(chosen));

	if (rm_out_open(&out, path, "report", err, len))
		return -1;
	o.f = out.f;
	fputs("{", o.f);
	put(&o, "schema", json_string("rocattach-mpi-report/1"), true);
	put(&o, "version", json_string(ROCATTACH_VERSION_STRING), false);
	put(&o, "started_ns", json_integer((json_int_t)r->started_ns), false);
	put(&o, "ended_ns", json_integer((json_int_t)r->ended_ns), false);
	put(&o, "exit_code", json_integer(r->exit_code), false);
	put(&o, "exit_reason", rm_jstr_or_null(r->exit_reason), false);
	put(&o, "stop_reason", rm_jstr_or_null(r->stop_reason), false);
	put(&o, "provisional", rm_jstr_or_null(r->provisional), false);
	put(&o, "config", config_json(&r->cfg), false);
	put(&o, "summary", summary_json(r), false);
	put(&o, "detail", detail_json(r, d, chosen), false);
	fputs(",\n\"windows\": [\n", o.f);
	for (size_t i = 0; i < r->n_w && !o.err; i++) {
		if (i)
			fputs(",\n", o.f);
		put_window(&o, &r->w[i], d);
	}
	fputs("]", o.f);
	if (r->stacks)
		put(&o, "stacks", rm_stacks_json(r), false);
	put_errors(&o, r, d);
	fputs("}\n", o.f);
	if (o.err)
		return rm_out_abort(&out, o.err, err, len);
	return rm_out_done(&out, r->store, err, len);
}

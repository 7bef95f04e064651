/* SPDX-License-Identifier: MIT */
/*
 * 1. Attach and detach latency per process, with the example tool, broken
 * down by step (rocattach_report_t.step_ns).
 *
 *   bench_latency [--json PATH] [--quick] [--targets K] [--cycles C]
 *
 * K example targets (agent preloaded, one busy worker each) are attached and
 * detached C times each, round-robin: the first attach of each target is
 * cold (the agent loads and initializes the tool), the rest are warm (what a
 * repeated window costs). Latency is the wall time of the call, from entry
 * to return with tool_attach done. Before every attach, the same run times a
 * bare ptrace round trip on the same listener thread (PTRACE_SEIZE,
 * PTRACE_INTERRUPT, wait for the stop, PTRACE_DETACH): the floor any ptrace
 * attacher pays on this machine at this moment, our baseline.
 *
 * Every warm cycle also attaches each target with rocprofv3's variables for a
 * broad set of its options (--sys-trace --pmc SQ_WAVES GRBM_COUNT -f csv json
 * pftrace rocpd --stats -S --kernel-include-regex ... --output-directory ...,
 * built by launcher/opts/rocprofv3_opts.c as the launchers build them), in turn
 * with the plain warm attach (which goes first alternates): what the options
 * cost an attach, beside the same run's figure without them. Each such pair
 * (same target, same cycle) gives a difference; the medians of the two
 * orders, averaged, are set beside the baseline's own drift (the plain
 * attaches' p50 in the first half of the cycles against the second), the
 * noise a difference must stand out of.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rocattach/rocattach.h>

#include "bench.h"
#include "cli_opts.h"

static const char *const step_names[ROCATTACH_STEP_COUNT] = {
    "prepare", "seize", "mmap", "write", "call", "munmap", "release", "inject"};

struct steps {
	struct bt_vec s[ROCATTACH_STEP_COUNT];
	struct bt_vec total;
};

static void steps_add(struct steps *st, const rocattach_report_t *rep, uint64_t wall_ns)
{
	for (int i = 0; i < ROCATTACH_STEP_COUNT; i++)
		bt_vec_push(&st->s[i], (double)rep->step_ns[i]);
	bt_vec_push(&st->total, (double)wall_ns);
}

static json_t *steps_json(const struct steps *st)
{
	json_t *o = json_object();

	json_object_set_new(o, "wall_us", bt_vec_summary(&st->total, 1e-3));
	for (int i = 0; i < ROCATTACH_STEP_COUNT; i++)
		json_object_set_new(o, step_names[i], bt_vec_summary(&st->s[i], 1e-3));
	return o;
}

static double pct_us(const struct bt_vec *v, double q)
{
	double *c = malloc((v->n ? v->n : 1) * sizeof(*c));
	double r;

	memcpy(c, v->v, v->n * sizeof(*c));
	r = bt_pct(c, v->n, q) / 1000.0;
	free(c);
	return r;
}

/* SEIZE + INTERRUPT + wait + DETACH of one thread: what any ptrace attach costs at least. */
static int bare_ptrace(pid_t tid, uint64_t *ns)
{
	uint64_t t0 = bt_mono_ns();
	int status;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return -1;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) || waitpid(tid, &status, __WALL) != tid) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return -1;
	}
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	*ns = bt_mono_ns() - t0;
	return 0;
}

struct run {
	size_t k, cycles;
	struct bt_proc *t;
	pid_t *listener;
	struct steps cold, warm, detach, warm_rp3;
	size_t rp3_vars;
	/* Per [cycle * k + target], ns (NAN: failed): wall and CALL step, plain and with the
	 * options. */
	double *pw, *pc, *ow, *oc;
	struct bt_vec bare;
	size_t failures;
	char first_error[ROCATTACH_MESSAGE_MAX + 64];
};

static void fail_once(struct run *r, const char *what, pid_t pid, const char *msg)
{
	if (!r->failures++)
		snprintf(r->first_error, sizeof(r->first_error), "%s %d: %s", what, (int)pid, msg);
}

/* wall and call (if not NULL) get the attach's wall time and CALL step, ns; NAN if it failed. */
static void one_cycle_into(struct run *r, size_t i, struct steps *into, const rocattach_opts_t *o,
			   double *wall, double *call)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	pid_t pid = r->t[i].pid;
	uint64_t t0, ns;

	if (wall)
		*wall = *call = NAN;
	if (!bare_ptrace(r->listener[i], &ns))
		bt_vec_push(&r->bare, (double)ns);
	t0 = bt_mono_ns();
	if (rocattach_attach_ex(pid, o, &rep) != ROCATTACH_STATUS_SUCCESS) {
		fail_once(r, "attach", pid, rep.message);
		return;
	}
	ns = bt_mono_ns() - t0;
	steps_add(into, &rep, ns);
	if (wall) {
		*wall = (double)ns;
		*call = (double)rep.step_ns[ROCATTACH_STEP_CALL];
	}
	memset(&rep, 0, sizeof(rep));
	rep.size = sizeof(rep);
	t0 = bt_mono_ns();
	if (rocattach_detach_ex(pid, NULL, &rep) != ROCATTACH_STATUS_SUCCESS) {
		fail_once(r, "detach", pid, rep.message);
		return;
	}
	steps_add(&r->detach, &rep, bt_mono_ns() - t0);
}

static void one_cycle(struct run *r, size_t i, bool cold, const rocattach_opts_t *o, double *wall,
		      double *call)
{
	one_cycle_into(r, i, cold ? &r->cold : &r->warm, o, wall, call);
}

/* The variables rocattach sends for a broad set of rocprofv3's options (in o3, env kept in e). */
static int rp3_options(const char *dir, struct rp3_env *e, const char ***env)
{
	const char *argv[] = {"rocattach",
			      "-p",
			      "1",
			      "--sys-trace",
			      "--pmc",
			      "SQ_WAVES",
			      "GRBM_COUNT",
			      "-f",
			      "csv",
			      "json",
			      "pftrace",
			      "rocpd",
			      "--stats",
			      "-S",
			      "--kernel-include-regex",
			      "gemm.*",
			      "--output-directory",
			      dir,
			      "-d",
			      "1000"};
	struct rp3_ctx ctx = {.cwd = dir, .tool = BT_TOOL, .pid = 1, .duration_ms = 1000};
	struct cli_opts o;
	char err[512];

	if (cli_opts_parse(sizeof(argv) / sizeof(argv[0]), (char **)argv, &o, err, sizeof(err)) ||
	    rp3_env_build(&o.rp3, &ctx, e))
		return -1;
	*env = calloc(e->n + 1, sizeof(**env));
	for (size_t i = 0; *env && i < e->n; i++)
		(*env)[i] = e->kv[i];
	return *env ? 0 : -1;
}

/*
 * p50 of v[j] (or of v[j] - base[j] with base) over the warm cycles [c0, c1)
 * of one parity (odd 0 or 1; 2: every cycle), skipping NAN.
 */
static double p50_cycles(const struct run *r, const double *v, const double *base, size_t c0,
			 size_t c1, int odd)
{
	size_t n = 0, j;
	double *c, x;

	c = malloc((r->cycles * r->k + 1) * sizeof(*c));
	if (!c)
		return NAN;
	for (j = (c0 ? c0 : 1) * r->k; j < c1 * r->k; j++) {
		if (odd != 2 && (int)(j / r->k % 2) != odd)
			continue;
		x = base ? v[j] - base[j] : v[j];
		if (!isnan(x))
			c[n++] = x;
	}
	x = n ? bt_pct(c, n, 0.5) : NAN;
	free(c);
	return x;
}

/*
 * The options' cost over cycles [c0, c1), us: the median difference of the
 * pairs (same target, same cycle) where the options went first and of those
 * where they went second, averaged. Which attach of a pair goes first
 * matters more than the options (the target's thread and caches are colder),
 * and the average cancels that; *order gets half the gap between the two.
 */
static double cost(const struct run *r, const double *with, const double *without, size_t c0,
		   size_t c1, double *order)
{
	double first = p50_cycles(r, with, without, c0, c1, 1);
	double second = p50_cycles(r, with, without, c0, c1, 0);

	if (order)
		*order = (first - second) / 2000.0;
	return (first + second) / 2000.0;
}

/*
 * A half's cost for the note, us. Each order (options first, options
 * second) takes every other cycle, so a half of fewer than 4 warm cycles
 * leaves an order with one cycle or none: its median is noise or NaN.
 */
static void half_text(char *buf, size_t len, const struct run *r, const double *with,
		      const double *without, size_t c0, size_t c1)
{
	size_t first = c0 ? c0 : 1, warm = c1 > first ? c1 - first : 0;
	double x = cost(r, with, without, c0, c1, NULL);

	if (warm < 4 || isnan(x))
		snprintf(buf, len, "too few cycles (%zu)", warm);
	else
		snprintf(buf, len, "%+.1f us", x);
}

/*
 * The options' cost beside the noise it must stand out of: how far the
 * plain attaches' own p50 moved between the two halves of the run.
 */
static void add_paired_row(struct bt_results *res, const struct run *r, bool call)
{
	const double *with = call ? r->oc : r->ow, *without = call ? r->pc : r->pw;
	size_t h = (r->cycles + 1) / 2, c = r->cycles;
	char first[48], second[48], going[48];
	double d, order, noise;
	json_t *row;

	d = cost(r, with, without, 0, c, &order);
	noise =
	    fabs(p50_cycles(r, without, NULL, 0, h, 2) - p50_cycles(r, without, NULL, h, c, 2)) /
	    1000.0;
	row = bt_row(res, call ? "attach.rocprofv3.paired_call" : "attach.rocprofv3.paired",
		     call ? "rocprofv3's options: paired difference, CALL step"
			  : "rocprofv3's options: paired difference (warm attach)",
		     d, "us", noise,
		     call ? "the plain CALL step's p50, first half of the cycles against the second"
			  : "the plain warm attach's p50, first half of the cycles against the "
			    "second, same run",
		     NULL, 0, false);
	half_text(first, sizeof(first), r, with, without, 0, h);
	half_text(second, sizeof(second), r, with, without, h, c);
	if (isnan(order))
		snprintf(going, sizeof(going), "too few cycles");
	else
		snprintf(going, sizeof(going), "%.1f us", order);
	bt_row_note(row,
		    "with - without, same target and cycle, both orders averaged; first half "
		    "%s, second %s; going first costs %s",
		    first, second, going);
}

/* v[cycle * k + target] as [cycle][target], ns, null where the attach failed. */
static json_t *pairs_json(const struct run *r, const double *v)
{
	json_t *a = json_array(), *row;

	for (size_t cy = 0; cy < r->cycles; cy++) {
		row = json_array();
		for (size_t k = 0; k < r->k; k++) {
			double x = v[cy * r->k + k];

			json_array_append_new(row, isnan(x) ? json_null() : json_real(x));
		}
		json_array_append_new(a, row);
	}
	return a;
}

static void add_rows(struct bt_results *res, struct run *r)
{
	double bare50 = pct_us(&r->bare, 0.5) / 1000.0, bare99 = pct_us(&r->bare, 0.99) / 1000.0;
	double call_cold = pct_us(&r->cold.s[ROCATTACH_STEP_CALL], 0.5) / 1000.0;
	double call_warm = pct_us(&r->warm.s[ROCATTACH_STEP_CALL], 0.5) / 1000.0;
	const char *bw = "bare ptrace SEIZE+INTERRUPT+DETACH, same thread, same run";
	json_t *row;

	row = bt_row(res, "attach.p50", "attach latency p50 (warm)",
		     pct_us(&r->warm.total, 0.5) / 1000.0, "ms", bare50, bw, "<=", 1.0, false);
	bt_row_note(row, "%zu warm attaches on %zu targets", r->warm.total.n, r->k);
	bt_row(res, "attach.p99", "attach latency p99 (warm)",
	       pct_us(&r->warm.total, 0.99) / 1000.0, "ms", bare99, bw, "<=", 5.0, false);
	row = bt_row(res, "attach.cold.p50", "attach latency p50 (first, loads the tool)",
		     pct_us(&r->cold.total, 0.5) / 1000.0, "ms", bare50, bw, "<=", 1.0, false);
	bt_row_note(row, "%zu first attaches", r->cold.total.n);
	bt_row(res, "attach.cold.p99", "attach latency p99 (first, loads the tool)",
	       pct_us(&r->cold.total, 0.99) / 1000.0, "ms", bare99, bw, "<=", 5.0, false);
	bt_row(res, "detach.p50", "detach latency p50", pct_us(&r->detach.total, 0.5) / 1000.0,
	       "ms", bare50, bw, NULL, 0, false);
	bt_row(res, "detach.p99", "detach latency p99", pct_us(&r->detach.total, 0.99) / 1000.0,
	       "ms", bare99, bw, NULL, 0, false);
	row = bt_row(res, "attach.tool_load", "tool load (first CALL - warm CALL, p50)",
		     call_cold - call_warm, "ms", NAN, NULL, NULL, 0, false);
	bt_row_note(row, "cold CALL p50 %.3f ms, warm CALL p50 %.3f ms", call_cold, call_warm);
	/* The slowest step of a warm attach, so it is visible in the table. */
	int top = 0;
	char fig[96];

	for (int s = 1; s < ROCATTACH_STEP_COUNT; s++)
		if (pct_us(&r->warm.s[s], 0.5) > pct_us(&r->warm.s[top], 0.5))
			top = s;
	row = bt_row(res, "attach.rocprofv3.p50", "attach latency p50 (warm), rocprofv3's options",
		     pct_us(&r->warm_rp3.total, 0.5) / 1000.0, "ms",
		     pct_us(&r->warm.total, 0.5) / 1000.0,
		     "the same warm attaches without them, alternating, same run", NULL, 0, false);
	bt_row_note(row, "%zu attaches sending %zu of rocprofv3's variables", r->warm_rp3.total.n,
		    r->rp3_vars);
	bt_row(res, "attach.rocprofv3.p99", "attach latency p99 (warm), rocprofv3's options",
	       pct_us(&r->warm_rp3.total, 0.99) / 1000.0, "ms",
	       pct_us(&r->warm.total, 0.99) / 1000.0,
	       "the same warm attaches without them, alternating, same run", NULL, 0, false);
	add_paired_row(res, r, false);
	add_paired_row(res, r, true);
	snprintf(fig, sizeof(fig), "slowest warm attach step: %s (p50)", step_names[top]);
	bt_row(res, "attach.top_step", fig, pct_us(&r->warm.s[top], 0.5) / 1000.0, "ms", NAN, NULL,
	       NULL, 0, false);
}

int main(int argc, char **argv)
{
	struct bt_common c;
	struct bt_results res;
	struct run r = {0};
	rocattach_opts_t o = {.size = sizeof(o), .tool_libraries = BT_TOOL}, o3;
	struct rp3_env e3 = {0};
	const char **env3 = NULL;
	const char *args[] = {"--threads", "1", NULL};
	char dir[256], env_out[300];
	const char *env[] = {env_out, NULL};
	int i, ret = 1;

	bt_init();
	argc = bt_parse_common(argc, argv, &c);
	r.k = c.quick ? 4 : 20;
	r.cycles = c.quick ? 15 : 12;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--targets") && i + 1 < argc)
			r.k = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--cycles") && i + 1 < argc)
			r.cycles = strtoul(argv[++i], NULL, 10);
		else
			return fprintf(stderr,
				       "usage: %s [--json PATH] [--quick] [--targets K] "
				       "[--cycles C]\n",
				       argv[0]),
			       2;
	}
	if (bt_mkdtemp("/tmp", dir, sizeof(dir)))
		return 1;
	snprintf(env_out, sizeof(env_out), "ROCPROF_OUTPUT_PATH=%s", dir);
	o.env = env;
	r.t = calloc(r.k, sizeof(*r.t));
	r.listener = calloc(r.k, sizeof(*r.listener));
	if (bt_start_targets(r.t, r.k, args, true))
		goto out;
	for (size_t k = 0; k < r.k; k++)
		r.listener[k] = bt_thread(r.t[k].pid, "rocp-bg-attach");
	if (rp3_options(dir, &e3, &env3))
		goto out;
	r.rp3_vars = e3.n;
	o3 = o;
	o3.env = env3;
	r.pw = calloc(r.cycles * r.k, sizeof(double));
	r.pc = calloc(r.cycles * r.k, sizeof(double));
	r.ow = calloc(r.cycles * r.k, sizeof(double));
	r.oc = calloc(r.cycles * r.k, sizeof(double));
	if (!r.pw || !r.pc || !r.ow || !r.oc)
		goto out;
	for (size_t cy = 0; cy < r.cycles; cy++) {
		for (size_t k = 0, j = cy * r.k; k < r.k; k++, j++) {
			r.ow[j] = r.oc[j] = NAN;
			if (cy && cy % 2)
				one_cycle_into(&r, k, &r.warm_rp3, &o3, &r.ow[j], &r.oc[j]);
			one_cycle(&r, k, cy == 0, &o, &r.pw[j], &r.pc[j]);
			if (cy && !(cy % 2))
				one_cycle_into(&r, k, &r.warm_rp3, &o3, &r.ow[j], &r.oc[j]);
		}
	}
	bt_stop_targets(r.t, r.k);

	bt_results_init(&res, "latency");
	add_rows(&res, &r);
	json_object_set_new(res.details, "targets", json_integer((json_int_t)r.k));
	json_object_set_new(res.details, "cycles", json_integer((json_int_t)r.cycles));
	json_object_set_new(res.details, "failures", json_integer((json_int_t)r.failures));
	if (r.failures)
		json_object_set_new(res.details, "first_error", json_string(r.first_error));
	json_object_set_new(res.details, "attach_warm", steps_json(&r.warm));
	json_object_set_new(res.details, "attach_cold", steps_json(&r.cold));
	json_object_set_new(res.details, "detach", steps_json(&r.detach));
	json_object_set_new(res.details, "attach_warm_rocprofv3", steps_json(&r.warm_rp3));
	json_object_set_new(res.details, "bare_ptrace_us", bt_vec_summary(&r.bare, 1e-3));
	/* Raw pairs (cycle 0 is the first attach; odd cycles send the options first). */
	json_object_set_new(res.details, "pairs_ns",
			    json_pack("{s:o,s:o,s:o,s:o}", "plain_wall", pairs_json(&r, r.pw),
				      "plain_call", pairs_json(&r, r.pc), "rocprofv3_wall",
				      pairs_json(&r, r.ow), "rocprofv3_call",
				      pairs_json(&r, r.oc)));
	ret = bt_results_write(&res, c.json) ? 1 : 0;
	if (r.failures)
		bt_log("%zu failures, first: %s", r.failures, r.first_error);
out:
	free(r.pw);
	free(r.pc);
	free(r.ow);
	free(r.oc);
	rp3_env_free(&e3);
	free(env3);
	bt_rmdir_files(dir);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * 3. Scaling on one node: wall time to attach and detach n processes with the
 * node layer's parallel pool, against the same work with one worker
 * (--jobs 1: one after another, the way ROCm's rocprof-attach does it).
 *
 *   bench_scaling [--json PATH] [--quick] [--sizes 1,8,32,128,256]
 *   (bench/run.sh adds 1024; the <= 1 s target applies to the largest size)
 *
 * For each n: n independent example targets (agent preloaded, no busy
 * threads) and a process tree of n (a chain: the example target's --depth).
 * "cold" is the first window of fresh processes (the agent loads the tool),
 * on a fresh set for each mode, as a launcher meets them; "warm" is the
 * median of three more windows on the same processes. Pool = one worker per
 * target, as rocattach-mpi runs it; the node layer's own default (4 per CPU)
 * is in the details. The tree is found by the --pid-tree selector (timed
 * with the attach) or, sequentially, by rocattach_attach_tree().
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "node.h"

#define MAX_SIZES 16
#define WARM_REPS 3

struct ctx {
	const char *env[2];
	pid_t stand_in; /* plays the launcher: the targets are our children, not its */
	size_t failures;
	char first_error[300];
};

static void note_failures(struct ctx *c, const struct rn_target *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i].state == RN_DETACHED)
			continue;
		if (!c->failures++)
			snprintf(c->first_error, sizeof(c->first_error), "pid %d %s: %.200s",
				 (int)t[i].pid, rn_state_name(t[i].state), t[i].message);
	}
}

/* CPU seconds this process (the attacher, all its threads) has used. */
static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* One window over t: attach all, detach all. Returns the wall time in seconds. */
static double window(struct ctx *c, struct rn_target *t, size_t n, int jobs, double *cpu_s)
{
	struct rn_pool_opts o = {.jobs = jobs, .tools = BT_TOOL, .env = c->env};
	uint64_t t0 = bt_mono_ns();
	double c0 = self_cpu_s();

	rn_attach_all(t, n, &o);
	rn_detach_all(t, n, &o);
	if (cpu_s)
		*cpu_s = self_cpu_s() - c0;
	note_failures(c, t, n);
	return (double)(bt_mono_ns() - t0) / 1e9;
}

static struct rn_target *targets_of(const struct bt_proc *p, size_t n)
{
	struct rn_target *t = calloc(n, sizeof(*t));

	for (size_t i = 0; t && i < n; i++) {
		t[i].pid = t[i].nspid = p[i].pid;
		t[i].rank = -1;
		t[i].listener = true;
		t[i].state = RN_FOUND;
	}
	return t;
}

struct flat {
	double pool_cold, seq_cold, pool_warm, seq_warm, node_default_warm;
	double pool_cpu, seq_cpu; /* attacher CPU seconds of the cold windows */
};

static int run_flat(struct ctx *c, size_t n, struct flat *f)
{
	const char *args[] = {"--threads", "0", NULL};
	struct bt_proc *a = calloc(n, sizeof(*a)), *b = calloc(n, sizeof(*b));
	struct rn_target *ta = NULL, *tb = NULL;
	double w[3][WARM_REPS];
	int ret = -1;

	if (bt_start_targets(a, n, args, true))
		goto out;
	if (bt_start_targets(b, n, args, true)) {
		bt_stop_targets(a, n);
		goto out;
	}
	ta = targets_of(a, n);
	tb = targets_of(b, n);
	f->pool_cold = window(c, ta, n, (int)n, &f->pool_cpu);
	f->seq_cold = window(c, tb, n, 1, &f->seq_cpu);
	for (int r = 0; r < WARM_REPS; r++) {
		w[0][r] = window(c, ta, n, (int)n, NULL);
		w[1][r] = window(c, tb, n, 1, NULL);
		w[2][r] = window(c, ta, n, 0, NULL);
	}
	f->pool_warm = bt_median3(w[0][0], w[0][1], w[0][2]);
	f->seq_warm = bt_median3(w[1][0], w[1][1], w[1][2]);
	f->node_default_warm = bt_median3(w[2][0], w[2][1], w[2][2]);
	bt_stop_targets(a, n);
	bt_stop_targets(b, n);
	ret = 0;
out:
	free(ta);
	free(tb);
	free(a);
	free(b);
	return ret;
}

/* A chain of n example targets; the root's "ready" comes once all are up. */
static int start_tree(struct bt_proc *root, size_t n)
{
	char depth[24];
	const char *argv[] = {BT_EXAMPLE_TARGET, "--threads", "0", "--depth", depth, NULL};
	const struct bt_spawn_opts o = {.agent = true};

	snprintf(depth, sizeof(depth), "%zu", n);
	if (bt_room_for(n) || bt_spawn(root, argv, &o))
		return -1;
	if (bt_wait_ready(root, 120000)) {
		bt_log("tree of %zu did not start", n);
		bt_stop(root);
		return -1;
	}
	return 0;
}

/* The whole tree dies with its root (each level has PR_SET_PDEATHSIG). */
static void stop_tree(struct bt_proc *root)
{
	bt_stop(root);
	for (int i = 0; i < 50; i++) {
		bt_sleep_ns(2000000);
		bt_reap();
	}
}

struct tree {
	double pool_cold, seq_cold, select_s;
	size_t found;
};

static double tree_pool(struct ctx *c, pid_t root, size_t n, struct tree *tr)
{
	struct rn_selector sel = {
	    .trees = &root, .n_trees = 1, .uid = -1, .children = true, .self = c->stand_in};
	struct rn_target *t = NULL;
	uint64_t t0 = bt_mono_ns();
	char err[512];
	size_t found = 0;
	double wall;

	if (rn_select(&sel, &t, &found, err, sizeof(err))) {
		bt_log("select tree %d: %s", (int)root, err);
		return NAN;
	}
	tr->select_s = (double)(bt_mono_ns() - t0) / 1e9;
	tr->found = found;
	if (found != n)
		bt_log("tree of %zu: selected %zu", n, found);
	window(c, t, found, (int)found, NULL);
	wall = (double)(bt_mono_ns() - t0) / 1e9;
	free(t);
	return wall;
}

static double tree_seq(struct ctx *c, pid_t root)
{
	uint64_t t0 = bt_mono_ns();

	if (rocattach_attach_tree(root) != ROCATTACH_STATUS_SUCCESS && !c->failures++)
		snprintf(c->first_error, sizeof(c->first_error), "attach_tree %d: %.250s",
			 (int)root, rocattach_last_error());
	if (rocattach_detach_tree(root) != ROCATTACH_STATUS_SUCCESS && !c->failures++)
		snprintf(c->first_error, sizeof(c->first_error), "detach_tree %d: %.250s",
			 (int)root, rocattach_last_error());
	return (double)(bt_mono_ns() - t0) / 1e9;
}

static int run_tree(struct ctx *c, size_t n, struct tree *tr)
{
	struct bt_proc a, b;

	if (start_tree(&a, n))
		return -1;
	tr->pool_cold = tree_pool(c, a.pid, n, tr);
	stop_tree(&a);
	if (start_tree(&b, n))
		return -1;
	tr->seq_cold = tree_seq(c, b.pid);
	stop_tree(&b);
	return 0;
}

static int parse_sizes(const char *s, size_t *v, size_t max)
{
	size_t k = 0;

	for (char *end; *s && k < max; s = *end ? end + 1 : end) {
		v[k] = strtoul(s, &end, 10);
		if (end == s || !v[k])
			return -1;
		k++;
	}
	return (int)k;
}

static void add_rows(struct bt_results *res, const size_t *sizes, int ns, const struct flat *f,
		     const struct tree *tr)
{
	json_t *arr = json_array(), *row;
	char id[64], fig[128];
	size_t big = sizes[ns - 1];
	const struct flat *fb = &f[ns - 1];

	for (int i = 0; i < ns; i++) {
		json_array_append_new(
		    arr,
		    json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "n",
			      (json_int_t)sizes[i], "pool_cold_s", f[i].pool_cold, "seq_cold_s",
			      f[i].seq_cold, "pool_cold_attacher_cpu_s", f[i].pool_cpu,
			      "seq_cold_attacher_cpu_s", f[i].seq_cpu, "pool_warm_s",
			      f[i].pool_warm, "seq_warm_s", f[i].seq_warm, "node_default_warm_s",
			      f[i].node_default_warm, "tree_pool_cold_s", tr[i].pool_cold,
			      "tree_seq_cold_s", tr[i].seq_cold, "tree_select_s", tr[i].select_s,
			      "tree_found", (json_int_t)tr[i].found));
		snprintf(id, sizeof(id), "scaling.%zu", sizes[i]);
		snprintf(fig, sizeof(fig), "attach+detach %zu processes, pool (first window)",
			 sizes[i]);
		row = bt_row(res, id, fig, f[i].pool_cold * 1e3, "ms", f[i].seq_cold * 1e3,
			     "--jobs 1 (sequential), same run",
			     i == ns - 1 && sizes[i] >= 256 ? "<=" : NULL, 1000, false);
		bt_row_note(row,
			    "%.1fx faster; attacher CPU %.2f ms per process; warm: pool %.1f ms, "
			    "--jobs 1 %.1f ms; tree: pool %.1f ms, attach_tree %.1f ms",
			    f[i].seq_cold / f[i].pool_cold, f[i].pool_cpu * 1e3 / (double)sizes[i],
			    f[i].pool_warm * 1e3, f[i].seq_warm * 1e3, tr[i].pool_cold * 1e3,
			    tr[i].seq_cold * 1e3);
	}
	snprintf(fig, sizeof(fig), "speed-up vs --jobs 1 at %zu processes (first window)", big);
	bt_row(res, "scaling.speedup", fig, fb->seq_cold / fb->pool_cold, "x", 1.0,
	       "--jobs 1 itself", big >= 256 ? ">=" : NULL, 4.0, false);
	snprintf(fig, sizeof(fig), "speed-up vs attach_tree, tree of %zu (first window)", big);
	bt_row(res, "scaling.tree_speedup", fig, tr[ns - 1].seq_cold / tr[ns - 1].pool_cold, "x",
	       1.0, "rocattach_attach_tree itself", NULL, 0, false);
	json_object_set_new(res->details, "sizes", arr);
}

int main(int argc, char **argv)
{
	size_t sizes[MAX_SIZES] = {1, 8, 32, 128, 256};
	struct flat f[MAX_SIZES] = {0};
	struct tree tr[MAX_SIZES] = {0};
	struct ctx c = {0};
	struct bt_results res;
	struct bt_common com;
	char dir[256], env_out[300];
	int i, ns = 5, ret = 1;

	bt_init();
	argc = bt_parse_common(argc, argv, &com);
	if (com.quick)
		ns = 3;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sizes") && i + 1 < argc &&
		    (ns = parse_sizes(argv[++i], sizes, MAX_SIZES)) > 0)
			continue;
		return fprintf(stderr, "usage: %s [--json PATH] [--quick] [--sizes N,N,...]\n",
			       argv[0]),
		       2;
	}
	if (bt_mkdtemp("/tmp", dir, sizeof(dir)))
		return 1;
	snprintf(env_out, sizeof(env_out), "ROCPROF_OUTPUT_PATH=%s", dir);
	c.env[0] = env_out;
	setenv("ROCPROF_OUTPUT_PATH", dir, 1);
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", BT_TOOL, 1);
	c.stand_in = fork();
	if (c.stand_in == 0) {
		pause();
		_exit(0);
	}
	for (int k = 0; k < ns; k++) {
		if (run_flat(&c, sizes[k], &f[k]) || run_tree(&c, sizes[k], &tr[k]))
			goto out;
		bt_log(
		    "n=%zu: pool %.1f ms, --jobs 1 %.1f ms, tree pool %.1f ms, attach_tree %.1f ms",
		    sizes[k], f[k].pool_cold * 1e3, f[k].seq_cold * 1e3, tr[k].pool_cold * 1e3,
		    tr[k].seq_cold * 1e3);
	}
	bt_results_init(&res, "scaling");
	add_rows(&res, sizes, ns, f, tr);
	json_object_set_new(res.details, "cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
	json_object_set_new(res.details, "failures", json_integer((json_int_t)c.failures));
	if (c.failures) {
		json_object_set_new(res.details, "first_error", json_string(c.first_error));
		bt_log("%zu failures, first: %s", c.failures, c.first_error);
	}
	ret = bt_results_write(&res, com.json) ? 1 : 0;
out:
	kill(c.stand_in, SIGKILL);
	waitpid(c.stand_in, NULL, 0);
	bt_rmdir_files(dir);
	return ret;
}

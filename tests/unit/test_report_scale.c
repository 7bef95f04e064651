/* SPDX-License-Identifier: MIT */
/*
 * The report at scale, through the real writers on runs built by hand:
 * --detail all / failures / none (which per-target records the report and
 * the trace keep, the per-node figures kept at every level), the default
 * level, the histograms' bins, hostlists, and a run of 1,000 nodes whose
 * summary and timeline group the clean nodes and show the odd ones alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "report.h"
#include "report_int.h"

#define MS 1000000ull
#define US 1000ull
#define T0 1795246201123000000ull /* 2026-11-21T07:30:01.123Z */
#define STOP (T0 + 1000 * MS)

static char dir[] = "/tmp/test_report_scale.XXXXXX";

/*
 * A clean target k of a node: its attach call from T0 - 2 ms to T0 + k us,
 * its hand-over at T0 + 10 k us, hand-back at STOP + k us, its detach call
 * 500 + k us long.
 */
static void clean(struct rn_target *t, pid_t pid, long k)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->nspid = pid;
	t->rank = pid;
	t->listener = true;
	t->state = RN_DETACHED;
	t->windows = 1;
	t->side = ROCATTACH_SIDE_AGENT;
	snprintf(t->exe, sizeof(t->exe), "solver");
	t->attach_start_ns = T0 - 2 * MS;
	t->attach_end_ns = T0 + (uint64_t)k * US;
	t->attach_tool_ns = T0 + 10 * (uint64_t)k * US;
	t->detach_start_ns = STOP - MS;
	t->detach_tool_ns = STOP + (uint64_t)k * US;
	t->detach_end_ns = t->detach_start_ns + (500 + (uint64_t)k) * US;
}

static void failed(struct rn_target *t, pid_t pid)
{
	clean(t, pid, 0);
	t->state = RN_ATTACH_FAILED;
	t->windows = 0;
	t->attach_tool_ns = t->detach_start_ns = t->detach_tool_ns = t->detach_end_ns = 0;
	snprintf(t->message, sizeof(t->message), "PTRACE_SEIZE(%d): Operation not permitted",
		 (int)pid);
}

/* A run of one window over n nodes (hosts node0000...), k targets each, in memory. */
struct big {
	struct rn_target *t;
	struct rm_node *nodes;
	struct rm_window w;
	struct rm_run r;
};

static void big_run(struct big *b, size_t n, size_t k)
{
	memset(b, 0, sizeof(*b));
	b->t = calloc(n * k, sizeof(*b->t));
	b->nodes = calloc(n, sizeof(*b->nodes));
	assert_non_null(b->t);
	assert_non_null(b->nodes);
	for (size_t i = 0; i < n; i++) {
		snprintf(b->nodes[i].host, sizeof(b->nodes[i].host), "node%04zu", i);
		b->nodes[i].t = &b->t[i * k];
		b->nodes[i].n = k;
		for (size_t j = 0; j < k; j++)
			clean(&b->t[i * k + j], (pid_t)(1000 + j), (long)j);
	}
	b->w = (struct rm_window){1, T0, STOP, "duration", b->nodes, n};
	b->r = (struct rm_run){.w = &b->w,
			       .n_w = 1,
			       .cfg = {.windows = 1, .duration_ms = 1000, .ranks = (int)n},
			       .started_ns = T0 - 3000 * MS,
			       .ended_ns = STOP + 100 * MS,
			       .exit_code = 4,
			       .exit_reason = "1 target failed",
			       .stop_reason = "completed"};
}

static void big_free(struct big *b)
{
	free(b->t);
	free(b->nodes);
}

/*
 * The small run: node a, 4 clean targets; node b, a failed one, an exited
 * one, 2 clean; node c lost (2 last known targets, clean ones).
 */
static struct big small;

static void small_run(void)
{
	big_run(&small, 3, 4);
	snprintf(small.nodes[0].host, sizeof(small.nodes[0].host), "a");
	snprintf(small.nodes[1].host, sizeof(small.nodes[1].host), "b");
	snprintf(small.nodes[2].host, sizeof(small.nodes[2].host), "c");
	failed(&small.t[4], 2000);
	small.t[5].state = RN_EXITED;
	small.t[5].pid = 2001;
	small.nodes[2].n = 2;
	small.nodes[2].lost = true;
	small.nodes[2].lost_reason = "no records within 5.0 s after the stop";
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static json_t *report_at(const struct rm_run *r, enum rm_detail d)
{
	struct rm_run c = *r;
	char path[256], err[512];
	json_error_t je;
	json_t *j;

	c.cfg.detail = d;
	snprintf(path, sizeof(path), "%s/report.json", dir);
	assert_int_equal(rm_write_report(path, &c, err, sizeof(err)), 0);
	j = json_load_file(path, 0, &je);
	assert_non_null(j);
	return j;
}

static json_t *node_of(json_t *j, size_t i)
{
	return json_array_get(
	    json_object_get(json_array_get(json_object_get(j, "windows"), 0), "nodes"), i);
}

static json_int_t ival(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static size_t n_targets(json_t *node)
{
	return json_array_size(json_object_get(node, "targets"));
}

/* What every level keeps: counts that add up, the figures, the level said. */
static void check_kept_always(json_t *j, const char *level)
{
	json_t *a = node_of(j, 0), *b = node_of(j, 1), *c = node_of(j, 2), *f, *h;
	json_int_t sum = 0;
	size_t i;

	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(j, "detail"), "level")), level);
	assert_int_equal(ival(json_object_get(j, "summary"), "targets"), 10);
	assert_int_equal(ival(json_object_get(j, "summary"), "failed"), 1);
	assert_int_equal(ival(a, "found"), 4);
	assert_int_equal(ival(b, "found"), 4);
	assert_int_equal(ival(b, "failed"), 1);
	assert_int_equal(ival(b, "exited"), 1);
	assert_int_equal(ival(c, "found"), 2);
	/* Node a: attach times 0..3 us from the start (p50 of 0,1,2,3 = 1.5 -> 1 us). */
	f = json_object_get(a, "attach_time_ns");
	assert_int_equal(ival(f, "min"), 0);
	assert_int_equal(ival(f, "p50"), 1500);
	assert_int_equal(ival(f, "max"), 3000);
	f = json_object_get(a, "detach_time_ns");
	assert_int_equal(ival(f, "min"), 500000);
	assert_int_equal(ival(f, "max"), 503000);
	/* Attach times 0, 1, 2, 3 us: bins 0, 1, 2, 2. */
	h = json_object_get(a, "attach_time_hist");
	assert_int_equal(json_array_size(h), RM_HIST_BINS);
	assert_int_equal(json_integer_value(json_array_get(h, 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(h, 1)), 1);
	assert_int_equal(json_integer_value(json_array_get(h, 2)), 2);
	/* Hand-overs 0, 10, 20, 30 us after the start: bins 0, 4, 5, 5. */
	h = json_object_get(a, "attach_skew_hist");
	for (i = 0; i < RM_HIST_BINS; i++)
		sum += json_integer_value(json_array_get(h, i));
	assert_int_equal(sum, 4);
	assert_int_equal(json_integer_value(json_array_get(h, 4)), 1);
	assert_int_equal(json_integer_value(json_array_get(h, 5)), 2);
	/* A lost node's figures are of nothing measured: null, never 0. */
	assert_true(json_is_null(json_object_get(c, "attach_time_ns")));
	assert_true(json_is_null(json_object_get(c, "attach_time_hist")));
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(j, "detail"), "hist_bins_us")),
	    RM_HIST_BINS);
}

static void test_rm_write_report_detail_all(void **state)
{
	json_t *j;

	(void)state;
	small_run();
	j = report_at(&small.r, RM_DETAIL_ALL);
	check_kept_always(j, "all");
	assert_int_equal(n_targets(node_of(j, 0)), 4);
	assert_int_equal(n_targets(node_of(j, 1)), 4);
	assert_int_equal(n_targets(node_of(j, 2)), 2);
	assert_int_equal(ival(node_of(j, 1), "records_left_out"), 0);
	assert_int_equal(ival(json_array_get(json_object_get(j, "windows"), 0), "records_left_out"),
			 0);
	assert_int_equal(json_array_size(json_object_get(j, "errors")), 1);
	json_decref(j);
	big_free(&small);
}

/* Failures: the failed, the exited and the lost node's records; none of the clean ones. */
static void test_rm_write_report_detail_failures(void **state)
{
	json_t *j, *b;

	(void)state;
	small_run();
	j = report_at(&small.r, RM_DETAIL_FAILURES);
	check_kept_always(j, "failures");
	assert_int_equal(n_targets(node_of(j, 0)), 0);
	assert_int_equal(ival(node_of(j, 0), "records_left_out"), 4);
	b = node_of(j, 1);
	assert_int_equal(n_targets(b), 2);
	assert_int_equal(ival(json_array_get(json_object_get(b, "targets"), 0), "pid"), 2000);
	assert_int_equal(ival(json_array_get(json_object_get(b, "targets"), 1), "pid"), 2001);
	assert_int_equal(ival(b, "records_left_out"), 2);
	assert_int_equal(n_targets(node_of(j, 2)), 2);
	assert_int_equal(ival(json_array_get(json_object_get(j, "windows"), 0), "records_left_out"),
			 6);
	assert_int_equal(json_array_size(json_object_get(j, "errors")), 1);
	json_decref(j);
	big_free(&small);
}

/* None: no record, the failures counted, not listed (never an empty list). */
static void test_rm_write_report_detail_none(void **state)
{
	json_t *j;

	(void)state;
	small_run();
	j = report_at(&small.r, RM_DETAIL_NONE);
	check_kept_always(j, "none");
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(n_targets(node_of(j, i)), 0);
	assert_int_equal(ival(node_of(j, 1), "records_left_out"), 4);
	assert_int_equal(ival(json_array_get(json_object_get(j, "windows"), 0), "records_left_out"),
			 10);
	assert_true(json_is_null(json_object_get(j, "errors")));
	assert_int_equal(ival(j, "errors_left_out"), 1);
	json_decref(j);
	big_free(&small);
}

static void test_rm_detail_of_default(void **state)
{
	struct big b;
	char why[96];

	(void)state;
	big_run(&b, 100, 100);
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_string_equal(why, "default: 10000 targets <= 10000");
	b.nodes[0].n = 101;
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_FAILURES);
	assert_string_equal(why, "default: 10001 targets > 10000");
	b.r.cfg.detail = RM_DETAIL_ALL;
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_string_equal(why, "--detail all");
	big_free(&b);
}

/* Decided from the survey before window 1: a window that finds more keeps it, and says so. */
static void test_rm_detail_of_decided_at_start(void **state)
{
	struct big b;
	char why[192];

	(void)state;
	big_run(&b, 100, 100);
	b.r.cut = (struct rm_cut){rm_detail_default(9990), 9990};
	assert_int_equal(b.r.cut.level, RM_DETAIL_ALL);
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_string_equal(why, "default: 9990 targets found at the start <= 10000; a later "
				 "window found 10000, the level chosen at the start was kept");
	b.nodes[0].n = 101; /* past the limit now: still all, as the nodes cut at */
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_ALL);
	assert_non_null(strstr(why, "a later window found 10001"));
	b.r.cut = (struct rm_cut){rm_detail_default(10001), 10001};
	assert_int_equal(rm_detail_of(&b.r, why, sizeof(why)), RM_DETAIL_FAILURES);
	assert_string_equal(why, "default: 10001 targets found at the start > 10000");
	big_free(&b);
}

static void test_rm_detail_parse_names(void **state)
{
	enum rm_detail d;

	(void)state;
	assert_int_equal(rm_detail_parse("failures", &d), 0);
	assert_int_equal(d, RM_DETAIL_FAILURES);
	assert_int_equal(rm_detail_parse("none", &d), 0);
	assert_int_equal(d, RM_DETAIL_NONE);
	assert_int_equal(rm_detail_parse("All", &d), -1);
	assert_string_equal(rm_detail_name(RM_DETAIL_ALL), "all");
}

static void test_rm_hist_bin_edges(void **state)
{
	(void)state;
	assert_int_equal(rm_hist_bin(0), 0);
	assert_int_equal(rm_hist_bin(999), 0);
	assert_int_equal(rm_hist_bin(1000), 1);
	assert_int_equal(rm_hist_bin(1999), 1);
	assert_int_equal(rm_hist_bin(2000), 2);
	assert_int_equal(rm_hist_bin(1023999), 10);
	assert_int_equal(rm_hist_bin(1024000), 11);
	assert_int_equal(rm_hist_bin((1ull << 23) * 1000 - 1), 23);
	assert_int_equal(rm_hist_bin((1ull << 24) * 1000 - 1), 24);
	assert_int_equal(rm_hist_bin((1ull << 24) * 1000), 25);
	assert_int_equal(rm_hist_bin(UINT64_MAX), 25);
}

static void test_rm_hostlist_ranges(void **state)
{
	const char *h[] = {"node003", "node001", "node002", "node010", "gpu7",
			   "login",   "node002", "n9",	    "n10",     "n11"};
	char *s;

	(void)state;
	s = rm_hostlist(h, sizeof(h) / sizeof(h[0]));
	assert_non_null(s);
	assert_string_equal(s, "gpu7,login,n9,n[10-11],node[001-003,010]");
	free(s);
	s = rm_hostlist(h, 0);
	assert_string_equal(s, "");
	free(s);
}

/* 1,000 nodes: node 7 has a failed target, node 500 is lost, node 900 found none. */
static void odd_run(struct big *b)
{
	big_run(b, 1000, 8);
	failed(&b->nodes[7].t[3], 5003);
	b->nodes[500].lost = true;
	b->nodes[500].lost_reason = "no records within 5.0 s after the stop";
	b->nodes[900].n = 0;
}

static char *summary_of(const struct rm_run *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rm_print_summary(f, r);
	fclose(f);
	return buf;
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_rm_print_summary_groups_1000_nodes(void **state)
{
	struct big b;
	char *s;

	(void)state;
	odd_run(&b);
	s = summary_of(&b.r);
	assert_true(lines(s) < 40);
	assert_non_null(strstr(s, "ok (997 nodes)"));
	assert_non_null(strstr(s, "  hosts: node[0000-0006,0008-0499,0501-0899,0901-0999]\n"));
	/* The odd ones alone, in their own rows. */
	assert_non_null(strstr(s, "\nnode0007 "));
	assert_non_null(strstr(s, "\nnode0500 "));
	assert_non_null(strstr(s, "\nnode0900 "));
	assert_non_null(strstr(s, "node node0500 lost in window 1"));
	assert_non_null(strstr(s, "node0007 pid 5003"));
	assert_null(strstr(s, "\nnode0008 "));
	free(s);
	big_free(&b);
}

/* Over RM_GROUP_ALONE odd nodes: the rest grouped by outcome, the lists cut with a count. */
static void test_rm_print_summary_many_odd_nodes(void **state)
{
	struct big b;
	char *s;

	(void)state;
	big_run(&b, 1000, 8);
	for (size_t i = 0; i < 40; i++)
		failed(&b.nodes[i * 10].t[0], 9000);
	s = summary_of(&b.r);
	assert_true(lines(s) < 60);
	assert_non_null(strstr(s, "failed (24 nodes)"));
	assert_non_null(strstr(s, "ok (960 nodes)"));
	assert_non_null(strstr(s, "... and 24 more failures"));
	free(s);
	big_free(&b);
}

static char *slurp(const char *path, size_t *size)
{
	struct stat st;
	FILE *f = fopen(path, "r");
	char *buf;

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	buf = calloc(1, (size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	*size = (size_t)st.st_size;
	return buf;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/*
 * 1,000 nodes in the timeline: one band for the clean ones (997 - the lost
 * and empty rows have no band), node 7's eight lanes drawn alone; the file
 * stays small (about 11 KB, most of it node 7's lanes; bounded at 40 KB).
 * At --detail failures node 7 has one lane, its failed target's; the lost
 * node keeps its eight.
 */
static void test_rm_write_timeline_groups_1000_nodes(void **state)
{
	char path[256], err[512], *s;
	struct big b;
	size_t size;

	(void)state;
	odd_run(&b);
	snprintf(path, sizeof(path), "%s/timeline.svg", dir);
	assert_int_equal(rm_write_timeline(path, &b.r, err, sizeof(err)), 0);
	s = slurp(path, &size);
	assert_true(size < 40000);
	assert_int_equal(count(s, "<rect class=\"group\""), 1);
	assert_non_null(strstr(s, ">ok: 997 nodes</text>"));
	assert_non_null(strstr(s, "node[0000-0006,0008-0499,0501-0899,0901-0999]"));
	/* Node 7 alone: a bar per target (7 tools, 1 failed). */
	assert_int_equal(count(s, "<rect class=\"tools\""), 7);
	assert_int_equal(count(s, "<rect class=\"failed\""), 1);
	assert_non_null(strstr(s, ">node0500</text>"));
	free(s);
	/* Below --detail all, a node alone has lanes for the records kept only. */
	b.r.cfg.detail = RM_DETAIL_FAILURES;
	assert_int_equal(rm_write_timeline(path, &b.r, err, sizeof(err)), 0);
	s = slurp(path, &size);
	assert_int_equal(count(s, "<rect class=\"tools\""), 0);
	assert_int_equal(count(s, "<rect class=\"failed\""), 1);
	assert_int_equal(count(s, "<tspan class=\"dim\">solver</tspan>"), 1 + 8);
	assert_non_null(strstr(s, "8 found, 7 attached, 1 failed; 7 clean not drawn (--detail "
				  "failures)"));
	free(s);
	big_free(&b);
}

static json_t *trace_at(const struct rm_run *r, enum rm_detail d, size_t *size)
{
	struct rm_run c = *r;
	char path[256], err[512];
	json_error_t je;
	json_t *j;

	c.cfg.detail = d;
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	assert_int_equal(rm_write_trace(path, &c, err, sizeof(err)), 0);
	free(slurp(path, size));
	j = json_load_file(path, 0, &je);
	assert_non_null(j);
	return j;
}

/* Thread names of the targets' tracks ("pid ..."), and of the nodes' ("node: ..."). */
static void thread_names(json_t *j, size_t *pids, size_t *nodes)
{
	json_t *e;
	size_t i;

	*pids = *nodes = 0;
	json_array_foreach (json_object_get(j, "traceEvents"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *arg =
		    json_string_value(json_object_get(json_object_get(e, "args"), "name"));

		if (strcmp(name, "thread_name") || !arg)
			continue;
		*pids += !strncmp(arg, "pid ", 4);
		*nodes += !strncmp(arg, "node: ", 6);
	}
}

static void test_rm_write_trace_detail_levels(void **state)
{
	size_t all, fail, none, pids, nodes;
	struct big b;
	json_t *j;

	(void)state;
	odd_run(&b);
	j = trace_at(&b.r, RM_DETAIL_ALL, &all);
	thread_names(j, &pids, &nodes);
	assert_int_equal(pids, 2 * (998 * 8 + 8)); /* two tracks a target; the empty node none */
	assert_int_equal(nodes, 0);
	json_decref(j);
	j = trace_at(&b.r, RM_DETAIL_FAILURES, &fail);
	thread_names(j, &pids, &nodes);
	assert_int_equal(pids, 2 * (1 + 8)); /* the failed target, the lost node's eight */
	assert_int_equal(nodes, 2 * 1000);   /* every node, the empty one too */
	assert_string_equal(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(j, "otherData"), "detail"), "level")),
	    "failures");
	json_decref(j);
	j = trace_at(&b.r, RM_DETAIL_NONE, &none);
	thread_names(j, &pids, &nodes);
	assert_int_equal(pids, 0);
	assert_int_equal(nodes, 2 * 1000); /* every node, the empty one too */
	json_decref(j);
	assert_true(fail * 5 < all);
	assert_true(none <= fail);
	big_free(&b);
}

/*
 * A node with every outcome: clean ones (on both sides, one whose tools'
 * window is on bounds), an attach that failed, a detach that failed, one
 * where a library of the list failed, a stopped one, one that died with
 * its tools attached, one that exited before the window and one after it,
 * with CPU, NUMA and GPU lists, in rank 0's clock.
 */
#define EVERY 12
static void every_outcome(struct rn_target *t)
{
	for (int k = 0; k < EVERY; k++) {
		clean(&t[k], (pid_t)(3000 + k), 3 * k + 1);
		snprintf(t[k].topo.cpus, sizeof(t[k].topo.cpus), "%d-%d", 4 * k, 4 * k + 3);
		snprintf(t[k].topo.numa, sizeof(t[k].topo.numa), "%d", k / 4);
		snprintf(t[k].topo.gpus, sizeof(t[k].topo.gpus), "0000:%02x:00.0", k / 3);
		t[k].tool_n = 2;
		t[k].tools[0] = ROCATTACH_TOOL_LOADED;
		t[k].tools[1] = ROCATTACH_TOOL_DECLINED;
	}
	t[1].side = ROCATTACH_SIDE_ROCM; /* clean, on bounds, no watchdog */
	t[1].attach_tool_ns = t[1].attach_end_ns;
	t[1].attach_tool_bound = t[1].detach_tool_bound = true;
	t[1].detach_call_ns = t[1].detach_end_ns;
	failed(&t[2], 3002);
	t[3].state = RN_DETACH_FAILED;
	t[4].tools[1] = ROCATTACH_TOOL_FAILED; /* detached, a library of the list failed */
	t[5].state = RN_STOPPED;
	t[6].state = RN_DIED_ATTACHED;
	t[6].died_ns = STOP - 5 * MS;
	t[6].detach_start_ns = t[6].detach_end_ns = t[6].detach_tool_ns = 0;
	t[7].state = RN_EXITED; /* before the window: never attached */
	t[7].windows = 0;
	t[7].attach_end_ns = t[7].attach_tool_ns = 0;
	t[7].detach_start_ns = t[7].detach_end_ns = t[7].detach_tool_ns = 0;
	t[8].state = RN_EXITED;		  /* after the window */
	t[9].attach_end_ns = T0 + 3 * MS; /* a slow one, for the histograms */
}

/*
 * What a node of that clock (offset applied_ns) sends at level d, taken by
 * rank 0 as rm_take_records does: the records the level keeps (rn_pack)
 * and the block beside them.
 */
static void cut_on_node(const struct rn_target *root, size_t n, enum rm_detail d,
			int64_t applied_ns, struct rm_node *out)
{
	struct rn_target *t = calloc(n, sizeof(*t)), *kept = calloc(n, sizeof(*t));
	struct rm_node_sum *sum = calloc(1, sizeof(*sum));
	uint64_t *v[7];
	size_t m = 0, len;
	char *buf;

	assert_non_null(t);
	assert_non_null(kept);
	assert_non_null(sum);
	memcpy(t, root, n * sizeof(*t));
	for (size_t k = 0; k < n; k++) { /* into the node's clock */
		v[0] = &t[k].attach_start_ns, v[1] = &t[k].attach_end_ns;
		v[2] = &t[k].attach_tool_ns, v[3] = &t[k].detach_start_ns;
		v[4] = &t[k].detach_end_ns, v[5] = &t[k].detach_tool_ns;
		v[6] = &t[k].detach_call_ns;
		for (size_t j = 0; j < 7; j++)
			if (*v[j])
				*v[j] = (uint64_t)((int64_t)*v[j] + applied_ns);
	}
	assert_int_equal(rm_node_summary(t, n, d, (uint64_t)((int64_t)T0 + applied_ns), sum), 0);
	for (size_t k = 0; k < n; k++)
		if (rm_detail_keeps_target(d, &t[k]))
			kept[m++] = t[k];
	len = rn_pack("every", kept, m, NULL, 0);
	buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(rn_pack("every", kept, m, buf, len), len);
	assert_int_equal(rm_take_node(buf, len, applied_ns, out), 0);
	assert_int_equal(rm_take_sum(sum, applied_ns, out), 0);
	free(buf);
	free(sum);
	free(kept);
	free(t);
}

/* The node's figures are rank 0's computation from all the records, number for number. */
static void test_rm_node_summary_equals_rank0(void **state)
{
	static const enum rm_detail levels[] = {RM_DETAIL_FAILURES, RM_DETAIL_NONE};
	static const int64_t offsets[] = {0, 2500 * (int64_t)US, -7 * (int64_t)MS};
	struct rn_target all[EVERY];
	struct rm_node full = {.host = "every", .t = all, .n = EVERY};
	struct rm_counts ca = {0}, cb = {0};
	struct rm_node_fig fa, fb;
	struct rm_spread sa, sb, la = {0}, lb = {0};
	size_t ba = 0, bb = 0, clean_n = 0;
	uint64_t pa, ma, pb, mb;

	(void)state;
	every_outcome(all);
	for (size_t k = 0; k < EVERY; k++)
		clean_n += rm_clean(&all[k]);
	assert_int_equal(clean_n, 5); /* 0, 1, 9, 10 and 11 */
	for (size_t li = 0; li < 2; li++)
		for (size_t oi = 0; oi < 3; oi++) {
			struct rm_node cut = {0};

			cut_on_node(all, EVERY, levels[li], offsets[oi], &cut);
			assert_true(cut.cut);
			assert_int_equal(rm_found(&cut), EVERY);
			assert_int_equal(rm_left_out(&cut),
					 levels[li] == RM_DETAIL_NONE ? EVERY : clean_n);
			assert_int_equal(cut.n + rm_left_out(&cut), EVERY);
			memset(&ca, 0, sizeof(ca));
			memset(&cb, 0, sizeof(cb));
			rm_count_node(&full, all, &ca);
			rm_count_node(&cut, cut.t, &cb);
			assert_memory_equal(&ca, &cb, sizeof(ca));
			rm_node_figures(&full, all, T0, &fa);
			rm_node_figures(&cut, cut.t, T0, &fb);
			assert_memory_equal(&fa, &fb, sizeof(fa));
			assert_true(fa.attach.n > 0 && fa.early == 0);
			rm_node_times(&full, all, T0, &pa, &ma);
			rm_node_times(&cut, cut.t, T0, &pb, &mb);
			assert_int_equal(pa, pb);
			assert_int_equal(ma, mb);
			sa = rm_node_attach_spread(&full, all, T0);
			sb = rm_node_attach_spread(&cut, cut.t, T0);
			assert_memory_equal(&sa, &sb, sizeof(sa));
			la = lb = (struct rm_spread){0};
			ba = bb = 0;
			rm_node_len_spread(&full, all, T0, &la, &ba);
			rm_node_len_spread(&cut, cut.t, T0, &lb, &bb);
			assert_memory_equal(&la, &lb, sizeof(la));
			assert_int_equal(ba, bb);
			assert_int_equal(rm_node_outcome(&full, all), rm_node_outcome(&cut, cut.t));
			free(cut.t);
			rm_node_sum_free(&cut);
		}
}

/* A run of one node: the report, summary and timeline as rank 0 made them from all records. */
static void one_node_run(struct big *b, struct rm_node *node)
{
	big_run(b, 1, 1);
	b->w.nodes = node;
	b->r.cfg.ranks = 1;
}

static char *file_text(const char *path)
{
	size_t size;

	return slurp(path, &size);
}

/* The line of s that holds what, taken out of s. */
static void drop_line(char *s, const char *what)
{
	char *at = strstr(s, what), *end;

	assert_non_null(at);
	while (at > s && at[-1] != '\n')
		at--;
	end = strchr(at, '\n');
	end = end ? end + 1 : at + strlen(at);
	memmove(at, end, strlen(end) + 1);
}

static void test_rm_write_report_cut_on_node_same_content(void **state)
{
	struct rn_target all[EVERY];
	struct rm_node full = {.host = "every", .t = all, .n = EVERY}, cut = {0};
	struct big bf, bc;
	json_t *jf, *jc, *wf, *wc;
	char path[256], err[512], *sf, *sc, *tf, *tc;

	(void)state;
	every_outcome(all);
	cut_on_node(all, EVERY, RM_DETAIL_FAILURES, 1500 * (int64_t)US, &cut);
	snprintf(cut.host, sizeof(cut.host), "every");
	one_node_run(&bf, &full);
	one_node_run(&bc, &cut);
	bc.r.cut = (struct rm_cut){RM_DETAIL_FAILURES, EVERY};
	bf.r.cut = (struct rm_cut){RM_DETAIL_FAILURES, EVERY};
	jf = report_at(&bf.r, RM_DETAIL_AUTO);
	jc = report_at(&bc.r, RM_DETAIL_AUTO);
	wf = json_object_get(jf, "windows");
	wc = json_object_get(jc, "windows");
	assert_true(json_equal(wf, wc));
	assert_true(json_equal(json_object_get(jf, "summary"), json_object_get(jc, "summary")));
	assert_true(json_equal(json_object_get(jf, "errors"), json_object_get(jc, "errors")));
	assert_int_equal(ival(node_of(jc, 0), "records_left_out"), 5);
	assert_int_equal(n_targets(node_of(jc, 0)), EVERY - 5);
	assert_non_null(
	    strstr(json_string_value(json_object_get(json_object_get(jc, "detail"), "cut")),
		   "on each node: the records left out never crossed the wire"));
	assert_non_null(strstr(
	    json_string_value(json_object_get(json_object_get(jf, "detail"), "cut")), "on rank 0"));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(jc, "detail"), "chosen")),
	    "default: 12 targets found at the start <= 10000");
	sf = summary_of(&bf.r);
	sc = summary_of(&bc.r);
	/* The same, but a target left out on its node is counted, not named. */
	assert_non_null(strstr(sf, "without a watchdog: if this launcher is killed with SIGKILL, "
				   "their tools stay attached until they exit (every other signal "
				   "detaches them): every:3001\n"));
	assert_non_null(strstr(sc, "detaches them): (1 not named: their records were left out on "
				   "their nodes)\n"));
	drop_line(sf, "without a watchdog");
	drop_line(sc, "without a watchdog");
	assert_string_equal(sf, sc);
	snprintf(path, sizeof(path), "%s/full.svg", dir);
	bf.r.cfg.detail = RM_DETAIL_FAILURES;
	bc.r.cfg.detail = RM_DETAIL_FAILURES;
	assert_int_equal(rm_write_timeline(path, &bf.r, err, sizeof(err)), 0);
	tf = file_text(path);
	snprintf(path, sizeof(path), "%s/cut.svg", dir);
	assert_int_equal(rm_write_timeline(path, &bc.r, err, sizeof(err)), 0);
	tc = file_text(path);
	assert_string_equal(tf, tc);
	assert_non_null(strstr(tc, "5 clean not drawn"));
	{ /* the trace: the same events */
		size_t size;
		json_t *xf = trace_at(&bf.r, RM_DETAIL_FAILURES, &size);
		json_t *xc = trace_at(&bc.r, RM_DETAIL_FAILURES, &size);

		assert_true(json_equal(json_object_get(xf, "traceEvents"),
				       json_object_get(xc, "traceEvents")));
		json_decref(xf);
		json_decref(xc);
	}
	free(tf);
	free(tc);
	free(sf);
	free(sc);
	json_decref(jf);
	json_decref(jc);
	free(cut.t);
	rm_node_sum_free(&cut);
	big_free(&bf);
	big_free(&bc);
}

/* A block that does not hold against its records is refused, the node left as it was. */
static void test_rm_take_sum_refuses_what_does_not_hold(void **state)
{
	struct rn_target all[EVERY];
	struct rm_node_sum *sum = calloc(1, sizeof(*sum)), *bad = calloc(1, sizeof(*bad));
	struct rm_node n = {.host = "every"};
	size_t m = 0;

	(void)state;
	assert_non_null(sum);
	assert_non_null(bad);
	every_outcome(all);
	assert_int_equal(rm_node_summary(all, EVERY, RM_DETAIL_FAILURES, T0, sum), 0);
	for (size_t k = 0; k < EVERY; k++)
		if (rm_detail_keeps_target(RM_DETAIL_FAILURES, &all[k]))
			all[m++] = all[k];
	n.t = all;
	n.n = m;
#define REFUSED(change)                                                                            \
	do {                                                                                       \
		*bad = *sum;                                                                       \
		change;                                                                            \
		assert_int_equal(rm_take_sum(bad, 0, &n), -1);                                     \
		assert_false(n.cut);                                                               \
	} while (0)
	REFUSED(bad->left_out++);
	REFUSED(bad->found--);
	REFUSED(bad->level = RM_DETAIL_ALL);
	REFUSED(bad->outcome = RM_OUT_N);
	REFUSED(bad->outcome = RM_OUT_EMPTY);
	REFUSED(bad->failed = bad->found + 1);
	REFUSED(bad->attach_hist[3]++);
	REFUSED(bad->attach.min = bad->attach.max + 1);
	REFUSED(bad->unwatched_left = bad->left_out + 1);
	REFUSED(bad->tools_left[0][1] = (uint32_t)bad->left_out + 1);
	/* A clean record among those kept: the level would have left it out. */
	n.n = m + 1;
	all[m] = all[0];
	all[m].state = RN_DETACHED;
	all[m].tools[1] = ROCATTACH_TOOL_LOADED;
	REFUSED((void)0);
	n.n = m;
	assert_int_equal(rm_take_sum(sum, 0, &n), 0);
	assert_true(n.cut);
	rm_node_sum_free(&n);
#undef REFUSED
	free(sum);
	free(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_detail_parse_names),
	    cmocka_unit_test(test_rm_detail_of_default),
	    cmocka_unit_test(test_rm_detail_of_decided_at_start),
	    cmocka_unit_test(test_rm_hist_bin_edges),
	    cmocka_unit_test(test_rm_hostlist_ranges),
	    cmocka_unit_test(test_rm_write_report_detail_all),
	    cmocka_unit_test(test_rm_write_report_detail_failures),
	    cmocka_unit_test(test_rm_write_report_detail_none),
	    cmocka_unit_test(test_rm_print_summary_groups_1000_nodes),
	    cmocka_unit_test(test_rm_print_summary_many_odd_nodes),
	    cmocka_unit_test(test_rm_write_timeline_groups_1000_nodes),
	    cmocka_unit_test(test_rm_write_trace_detail_levels),
	    cmocka_unit_test(test_rm_node_summary_equals_rank0),
	    cmocka_unit_test(test_rm_write_report_cut_on_node_same_content),
	    cmocka_unit_test(test_rm_take_sum_refuses_what_does_not_hold),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: MIT */
/*
 * The end-of-run outputs of rocattach-mpi on a run built by hand: two
 * windows over three nodes (one without targets), a target whose attach
 * failed with a message full of characters to escape, and one that exited
 * during the second window. Then runs with a lost node (its launcher rank
 * did not answer: its records are the last known ones), and strings of
 * every length in the report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include <rocattach/version.h>

#include "common/clock.h"
#include "report.h"

#define MS 1000000ull
/* 2026-11-21T07:30:01.123Z */
#define T1 1795246201123000000ull
#define S1 (T1 + 1000 * MS)
#define T2 (S1 + 500 * MS)
#define S2 (T2 + 1000 * MS)

#define BAD_MESSAGE "PTRACE_SEIZE(201): \"denied\"\n<&> 'x'"

static struct rn_target w1_node1[2], w1_node2[2], w2_node1[2], w2_node2[2];
static struct rm_node w1_nodes[3], w2_nodes[3];
static struct rm_window windows[2];
static struct rm_run run;
static char *argv_run[] = {"rocattach-mpi", "--slurm-step", "42.0"};
static char dir[] = "/tmp/test_report.XXXXXX";

static struct rn_target target(pid_t pid, long rank, const char *exe, enum rn_state state)
{
	struct rn_target t = {.pid = pid,
			      .nspid = pid,
			      .rank = rank,
			      .uid = 1000,
			      .ppid = 1,
			      .listener = true,
			      .state = state};

	snprintf(t.exe, sizeof(t.exe), "%s", exe);
	return t;
}

static void times(struct rn_target *t, uint64_t as, uint64_t ae, uint64_t ds, uint64_t de)
{
	t->attach_start_ns = as;
	t->attach_end_ns = ae;
	t->detach_start_ns = ds;
	t->detach_end_ns = de;
}

static void topo(struct rn_target *t, const char *cpus, const char *numa, const char *gpus)
{
	snprintf(t->topo.cpus, sizeof(t->topo.cpus), "%s", cpus);
	snprintf(t->topo.numa, sizeof(t->topo.numa), "%s", numa);
	snprintf(t->topo.gpus, sizeof(t->topo.gpus), "%s", gpus);
}

static void build_window1(void)
{
	struct rn_target *a = w1_node1, *b = w1_node2;

	a[0] = target(100, 0, "app", RN_DETACHED);
	times(&a[0], T1 + 100000, T1 + 900000, S1 + 50000, S1 + 300000);
	topo(&a[0], "0-3", "0", "card0(0000:c1:00.0)");
	a[1] = target(101, 1, "app", RN_DETACHED);
	a[1].nspid = 7;
	times(&a[1], T1 + 120000, T1 + 1320000, S1 + 250000, S1 + 600000);
	topo(&a[1], "4-7,16", "0", "card0(0000:c1:00.0),card1(0000:c2:00.0)");
	a[0].windows = a[1].windows = 1;

	b[0] = target(200, 2, "a<b&c", RN_DETACHED);
	times(&b[0], T1 + 50000, T1 + 650000, S1 + 400000, S1 + 700000);
	b[0].windows = 1;
	b[1] = target(201, -1, "app", RN_ATTACH_FAILED);
	times(&b[1], T1 + 60000, T1 + 2060000, 0, 0);
	b[1].status = ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED;
	b[1].agent_status = -1;
	snprintf(b[1].message, sizeof(b[1].message), "%s", BAD_MESSAGE);
}

/* The same targets gathered again: 200 exits during the window, 201 stays failed. */
static void build_window2(void)
{
	struct rn_target *a = w2_node1, *b = w2_node2;

	memcpy(a, w1_node1, sizeof(w1_node1));
	memcpy(b, w1_node2, sizeof(w1_node2));
	times(&a[0], T2 + 100000, T2 + 400000, S2 + 10000, S2 + 20000);
	times(&a[1], T2 + 200000, T2 + 700000, S2 + 30000, S2 + 40000);
	a[0].windows = a[1].windows = 2;
	times(&b[0], T2 + 150000, T2 + 250000, S2 + 90000, S2 + 95000);
	b[0].state = RN_EXITED;
	b[0].status = ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND;
	snprintf(b[0].message, sizeof(b[0].message), "process exited");
}

static void node(struct rm_node *n, const char *host, struct rn_target *t, size_t count)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->t = t;
	n->n = count;
}

static void nodes(struct rm_node *n, struct rn_target *t1, struct rn_target *t2)
{
	node(&n[0], "node1", t1, 2);
	node(&n[1], "node2", t2, 2);
	node(&n[2], "node3", NULL, 0);
}

static int setup(void **state)
{
	(void)state;
	build_window1();
	build_window2();
	nodes(w1_nodes, w1_node1, w1_node2);
	nodes(w2_nodes, w2_node1, w2_node2);
	windows[0] = (struct rm_window){1, T1, S1, "duration", w1_nodes, 3};
	windows[1] = (struct rm_window){2, T2, S2, "duration", w2_nodes, 3};
	run = (struct rm_run){
	    .cfg = {.argc = 3,
		    .argv = argv_run,
		    .tools = "libtool.so",
		    .duration_ms = -1,
		    .delay_ms = 500,
		    .windows = 2,
		    .jobs = 4,
		    .inject = 1,
		    .ranks = 3},
	    .w = windows,
	    .n_w = 2,
	    .started_ns = T1 - 2000 * MS,
	    .ended_ns = S2 + 100 * MS,
	    .exit_code = 4,
	    .exit_reason = "2 targets failed",
	    .stop_reason = "completed",
	};
	w1_nodes[0].boot_offset_ns = w2_nodes[0].boot_offset_ns = 5 * MS;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 20);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	assert_true(n < (1 << 20) - 1);
	fclose(f);
	return buf;
}

/*
 * What rm_print_summary / rm_print_dry_run print, in a string to free. Not
 * inlined: gcc 12 then takes the result for a pointer to the local buf.
 */
static __attribute__((noinline)) char *summary_of(const struct rm_run *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rm_print_summary(f, r);
	fclose(f);
	return buf;
}

static __attribute__((noinline)) char *dry_run_of(const struct rm_node *nodes, size_t n_nodes)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rm_print_dry_run(f, nodes, n_nodes);
	fclose(f);
	return buf;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

static void test_rm_window_skew_attached_targets(void **state)
{
	struct rm_skew s1 = rm_window_skew(&windows[0]), s2 = rm_window_skew(&windows[1]);

	(void)state;
	/* Window 1: attach ends 0.90, 1.32, 0.65 ms; detach starts +0.05, +0.25, +0.40 ms. */
	assert_int_equal(s1.attach_ns, 670000);
	assert_int_equal(s1.detach_ns, 350000);
	assert_int_equal(s1.n, 3);
	/* Window 2: 200 exited during the window: it was attached, so it counts. */
	assert_int_equal(s2.attach_ns, 450000);
	assert_int_equal(s2.detach_ns, 80000);
	assert_int_equal(s2.n, 3);
}

static void test_rm_window_skew_exited_during_attach(void **state)
{
	struct rn_target t[2] = {target(1, 0, "x", RN_DETACHED), target(2, 1, "x", RN_EXITED)};
	struct rm_node n = {.host = "h", .t = t, .n = 2};
	struct rm_window w = {.index = 1, .nodes = &n, .n_nodes = 1};
	struct rm_skew s;

	(void)state;
	times(&t[0], 10, 20, 100, 110);
	times(&t[1], 10, 500, 0, 0);
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.attach_ns, 0);
	assert_int_equal(s.detach_ns, 0);
}

/* A target whose detach failed in window 1 is not attached again: window 2 has its old record. */
static void test_rm_window_skew_ignores_earlier_windows(void **state)
{
	struct rn_target t[2] = {target(1, 0, "x", RN_DETACHED),
				 target(2, 1, "x", RN_DETACH_FAILED)};
	struct rm_node n = {.host = "h", .t = t, .n = 2};
	struct rm_window w = {.index = 2, .start_ns = T2, .nodes = &n, .n_nodes = 1};
	struct rm_skew s;

	(void)state;
	times(&t[0], T2 + 10, T2 + 20, S2 + 100, S2 + 110);
	times(&t[1], T1 + 10, T1 + 50, S1 + 100, S1 + 110);
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.attach_ns, 0);
	assert_int_equal(s.detach_ns, 0);
	w.start_ns = 0; /* "now": no way to tell, every record counts */
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.attach_ns, T2 + 20 - (T1 + 50));
}

/*
 * ROCm's side: tool times are the library's bounds; our agent's measured.
 * A window whose targets' windows miss the plan by more than 1% + 5 ms is
 * flagged; the skew counts both kinds and says so.
 */
static void test_rm_window_skew_bounds_and_length(void **state)
{
	struct rn_target t[2] = {target(1, 0, "hip", RN_DETACHED),
				 target(2, 1, "app", RN_DETACHED)};
	struct rm_node n = {.host = "n1", .t = t, .n = 2};
	struct rm_window w = {1, T1, T1 + 500 * MS, "duration", &n, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_reason = "ok"};
	struct rm_skew s;
	char *buf;

	(void)state;
	times(&t[0], T1 - 150 * MS, T1 + 300000, T1 + 400 * MS, T1 + 500 * MS + 200000);
	t[0].side = ROCATTACH_SIDE_ROCM;
	t[0].attach_tool_ns = T1 + 300000;
	t[0].detach_call_ns = T1 + 500 * MS;
	t[0].detach_tool_ns = T1 + 500 * MS + 10000;
	t[0].attach_tool_bound = t[0].detach_tool_bound = true;
	times(&t[1], T1 - 150 * MS, T1 + 100000, T1 + 400 * MS, T1 + 500 * MS + 300000);
	t[1].side = ROCATTACH_SIDE_AGENT;
	t[1].attach_tool_ns = T1 + 20000;
	t[1].detach_tool_ns = T1 + 500 * MS + 40000;
	s = rm_window_skew(&w);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.bounds, 1);
	assert_int_equal(s.attach_ns, 280000);
	assert_int_equal(s.detach_ns, 30000);
	assert_int_equal(s.len_min_ns, 500 * MS - 300000);
	assert_int_equal(s.len_max_ns, 500 * MS + 20000);
	assert_false(s.len_off);
	/* 650 ms for a 500 ms plan: the window started at the attach call, long before. */
	t[0].attach_tool_ns = T1 - 150 * MS;
	s = rm_window_skew(&w);
	assert_true(s.len_off);
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "(2 targets, 1 from call bounds)"));
	assert_non_null(strstr(buf, "OFF the planned length by more than 1% + 5 ms"));
	assert_non_null(strstr(buf, "note: 1 target runs ROCm's target side without a "
				    "watchdog"));
	assert_non_null(strstr(buf, " n1:1\n"));
	free(buf);
}

static void test_rm_node_attach_times_median(void **state)
{
	uint64_t p50, max;

	(void)state;
	rm_node_attach_times(&w1_nodes[0], &p50, &max);
	assert_int_equal(p50, 1000000); /* mean of 0.8 and 1.2 ms */
	assert_int_equal(max, 1200000);
	rm_node_attach_times(&w1_nodes[1], &p50, &max); /* the failed attach does not count */
	assert_int_equal(p50, 600000);
	assert_int_equal(max, 600000);
	rm_node_attach_times(&w1_nodes[2], &p50, &max);
	assert_int_equal(p50, 0);
	assert_int_equal(max, 0);
}

static void test_rm_print_summary_rows_and_failures(void **state)
{
	char *buf = summary_of(&run);

	(void)state;
	/*
	 * 200 exited: its job ended under it, not a failure; it completed
	 * window 1 first, so it was attached and detached.
	 */
	assert_non_null(strstr(buf,
			       "rocattach-mpi: 3 nodes, 4 targets, 2 windows: 3 attached and "
			       "detached (1 exited after), 1 failed (exit 4: 2 targets failed)\n"));
	assert_non_null(strstr(buf, "node            found attached failed exited  attach p50  "
				    "attach max  start skew\n"));
	assert_non_null(strstr(buf,
			       "\nnode1               2        2      0      0     0.400ms     "
			       "0.500ms     0.300ms\n"));
	assert_non_null(strstr(buf,
			       "\nnode2               2        1      1      1     0.100ms     "
			       "0.100ms     0.000ms\n"));
	assert_non_null(strstr(buf, "\nnode3               0  no targets found\n"));
	assert_non_null(strstr(buf, "window 1: start 2026-11-21T07:30:01.123Z, 1000.0 ms, stop "
				    "reason duration, attach skew 0.670 ms, detach skew 0.350 ms "
				    "(3 targets, 3 from call bounds)\n"));
	/* No hand-over times at all: the tools' windows are unknown, so not shown. */
	assert_null(strstr(buf, "tools' window"));
	assert_non_null(strstr(buf, "window 2: start 2026-11-21T07:30:02.623Z"));
	/* Each failure once, on one line, in the window where it happened. */
	assert_non_null(strstr(buf, "failures:\n  node2 pid 201 (app), window 1: attach-failed: "
				    "PTRACE_SEIZE(201): \"denied\" <&> 'x'\n"));
	assert_null(strstr(buf, "pid 200"));
	assert_int_equal(count(buf, "pid 201"), 1);
	free(buf);
}

static void test_rm_print_summary_long_host(void **state)
{
	struct rm_node n[2] = {{.t = w1_node1, .n = 2}, {.t = NULL, .n = 0}};
	struct rm_window w = {1, T1, S1, "enter", n, 2};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 0, .exit_reason = "ok"};
	char *buf, *line, want[128];

	(void)state;
	memset(n[0].host, 'h', sizeof(n[0].host) - 1);
	snprintf(n[1].host, sizeof(n[1].host), "short");
	buf = summary_of(&r);
	/* Cut to 32 columns with a '~', the columns after it aligned. */
	line = strstr(buf, "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh~     2        2      0 ");
	assert_non_null(line);
	assert_true(strchr(line, '\n') - line < 100);
	snprintf(want, sizeof(want), "\n%-32s %5d  no targets found\n", "short", 0);
	assert_non_null(strstr(buf, want));
	assert_null(strstr(buf, "failures:"));
	free(buf);
}

/* A window whose length is not known says why, in words (it printed "? ms"). */
static void test_rm_print_summary_length_unknown(void **state)
{
	struct rm_node n = {.host = "n1", .t = NULL, .n = 0};
	struct rm_window w = {1, T1, 0, "SIGTERM on rank 0", &n, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 5, .exit_reason = "x"};
	char *buf;

	(void)state;
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "length unknown: no stop time, stop reason"));
	assert_null(strstr(buf, "?"));
	free(buf);
	w.stop_ns = T1 - 1;
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "length unknown: stopped before its start"));
	free(buf);
}

static void test_rm_print_dry_run_lists_targets(void **state)
{
	char *buf = dry_run_of(w1_nodes, 3);

	(void)state;
	assert_non_null(strstr(buf, "node1: 2 processes\n"));
	assert_non_null(strstr(buf, "  100                  0   1000  app              yes       "
				    "0-3           0     card0(0000:c1:00.0)\n"));
	assert_non_null(strstr(buf, "  101 (7)              1   1000  app"));
	assert_non_null(strstr(buf, "card0(0000:c1:00.0),card1(0000:c2:00.0)\n"));
	assert_non_null(strstr(buf, "  201                  -   1000  app              yes       "
				    "-             -     -\n"));
	assert_non_null(strstr(buf, "node3: 0 processes\n  (no matching processes)\n"));
	assert_non_null(strstr(buf, "dry run: 4 processes on 3 nodes would be attached"));
	free(buf);
}

static char *path_in_dir(const char *name)
{
	static char path[2][256];
	static int i;

	i = !i;
	snprintf(path[i], sizeof(path[i]), "%s/%s", dir, name);
	return path[i];
}

static json_t *load_report(void)
{
	char err[256] = "";
	json_error_t jerr;
	json_t *j;

	assert_int_equal(rm_write_report(path_in_dir("run.json"), &run, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(access(path_in_dir("run.json.tmp"), F_OK), -1);
	j = json_load_file(path_in_dir("run.json"), 0, &jerr);
	if (!j)
		fail_msg("%s:%d: %s", jerr.source, jerr.line, jerr.text);
	return j;
}

static json_int_t jint(json_t *o, const char *path)
{
	json_t *v = o;
	char key[64], *k, *save;

	snprintf(key, sizeof(key), "%s", path);
	for (k = strtok_r(key, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		if (json_is_array(v))
			v = json_array_get(v, (size_t)atoi(k));
		else
			v = json_object_get(v, k);
	}
	if (!json_is_integer(v))
		fail_msg("%s is not an integer", path);
	return json_integer_value(v);
}

static json_t *jget(json_t *o, const char *path)
{
	char key[64], *k, *save;

	snprintf(key, sizeof(key), "%s", path);
	for (k = strtok_r(key, ".", &save); o && k; k = strtok_r(NULL, ".", &save))
		o = json_is_array(o) ? json_array_get(o, (size_t)atoi(k)) : json_object_get(o, k);
	if (!o)
		fail_msg("%s is missing", path);
	return o;
}

/* The counts of a node (found: "found") or of the summary ("targets"). */
static void check_counts(json_t *o, const char *found, json_int_t n, json_int_t attached,
			 json_int_t failed, json_int_t exited)
{
	assert_int_equal(jint(o, found), n);
	assert_int_equal(jint(o, "attached"), attached);
	assert_int_equal(jint(o, "failed"), failed);
	assert_int_equal(jint(o, "exited"), exited);
}

static void test_rm_write_report_top_and_config(void **state)
{
	json_t *j = load_report();

	(void)state;
	assert_string_equal(json_string_value(jget(j, "schema")), "rocattach-mpi-report/1");
	assert_string_equal(json_string_value(jget(j, "version")), ROCATTACH_VERSION_STRING);
	assert_int_equal(jint(j, "started_ns"), T1 - 2000 * MS);
	assert_int_equal(jint(j, "ended_ns"), S2 + 100 * MS);
	assert_int_equal(jint(j, "exit_code"), 4);
	assert_string_equal(json_string_value(jget(j, "exit_reason")), "2 targets failed");
	assert_int_equal(json_array_size(jget(j, "config.argv")), 3);
	assert_string_equal(json_string_value(jget(j, "config.argv.2")), "42.0");
	assert_string_equal(json_string_value(jget(j, "config.tools")), "libtool.so");
	assert_true(json_is_null(jget(j, "config.duration_ms")));
	assert_int_equal(jint(j, "config.delay_ms"), 500);
	assert_int_equal(jint(j, "config.windows"), 2);
	assert_int_equal(jint(j, "config.jobs"), 4);
	assert_true(json_is_true(jget(j, "config.inject")));
	assert_int_equal(jint(j, "config.ranks"), 3);
	assert_int_equal(jint(j, "summary.nodes"), 3);
	check_counts(jget(j, "summary"), "targets", 4, 3, 1, 1);
	assert_string_equal(json_string_value(jget(j, "stop_reason")), "completed");
	json_decref(j);
}

static void check_window(json_t *j, size_t i)
{
	struct rm_skew s = rm_window_skew(&windows[i]);
	json_t *w = json_array_get(jget(j, "windows"), i);

	assert_int_equal(jint(w, "index"), (json_int_t)i + 1);
	assert_int_equal(jint(w, "start_ns"), windows[i].start_ns);
	assert_int_equal(jint(w, "stop_ns"), windows[i].stop_ns);
	assert_string_equal(json_string_value(jget(w, "stop_reason")), "duration");
	assert_int_equal(jint(w, "skew.attach_ns"), s.attach_ns);
	assert_int_equal(jint(w, "skew.detach_ns"), s.detach_ns);
	assert_int_equal(jint(w, "skew.targets"), s.n);
	assert_int_equal(json_array_size(jget(w, "nodes")), 3);
	assert_string_equal(json_string_value(jget(w, "nodes.2.host")), "node3");
	assert_int_equal(jint(w, "nodes.2.found"), 0);
	assert_true(json_is_null(jget(w, "nodes.2.attach_p50_ns")));
	assert_int_equal(json_array_size(jget(w, "nodes.2.targets")), 0);
}

static void test_rm_write_report_windows(void **state)
{
	json_t *j = load_report(), *t;

	(void)state;
	assert_int_equal(json_array_size(jget(j, "windows")), 2);
	check_window(j, 0);
	check_window(j, 1);
	assert_int_equal(jint(j, "windows.0.nodes.0.attach_p50_ns"), 1000000);
	assert_int_equal(jint(j, "windows.0.nodes.0.attach_max_ns"), 1200000);
	assert_int_equal(jint(j, "windows.1.nodes.0.attach_skew_ns"), 300000);
	check_counts(jget(j, "windows.1.nodes.1"), "found", 2, 1, 1, 1);
	assert_int_equal(jint(j, "windows.0.nodes.0.realtime_minus_boottime_ns"), 5 * MS);
	assert_true(json_is_null(jget(j, "windows.0.nodes.1.realtime_minus_boottime_ns")));
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.cpus")),
			    "0-7,16");
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.numa")), "0");
	assert_int_equal(json_array_size(jget(j, "windows.0.nodes.0.topology.gpus")), 2);
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.gpus.1")),
			    "card1(0000:c2:00.0)");
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.2.topology.cpus")), "");
	/* The records as rn_target_to_json writes them, nulls included. */
	t = jget(j, "windows.0.nodes.1.targets.1");
	assert_int_equal(jint(t, "pid"), 201);
	assert_true(json_is_null(jget(t, "rank")));
	assert_string_equal(json_string_value(jget(t, "state")), "attach-failed");
	assert_true(json_is_null(jget(t, "detach")));
	assert_string_equal(json_string_value(jget(t, "message")), BAD_MESSAGE);
	t = jget(j, "windows.0.nodes.0.targets.0");
	assert_true(json_is_null(jget(t, "message")));
	assert_int_equal(jint(t, "attach.end_ns"), T1 + 900000);
	json_decref(j);
}

static void test_rm_write_report_errors_once(void **state)
{
	json_t *j = load_report(), *e;

	(void)state;
	e = jget(j, "errors");
	/* 201's failure once; 200 exited, which is no error. */
	assert_int_equal(json_array_size(e), 1);
	assert_int_equal(jint(e, "0.window"), 1);
	assert_string_equal(json_string_value(jget(e, "0.host")), "node2");
	assert_int_equal(jint(e, "0.pid"), 201);
	assert_true(json_is_null(jget(e, "0.rank")));
	assert_string_equal(json_string_value(jget(e, "0.state")), "attach-failed");
	assert_string_equal(json_string_value(jget(e, "0.message")), BAD_MESSAGE);
	assert_int_equal(rm_count_failures(&run), 1);
	json_decref(j);
}

/* Every '<' opens a tag and every '&' an entity: what a parser would choke on first. */
static void assert_xml_text_escaped(const char *s)
{
	const char *p;

	for (p = s; (p = strchr(p, '<')); p++)
		assert_true(p[1] == '/' || (p[1] >= 'a' && p[1] <= 'z'));
	for (p = s; (p = strchr(p, '&')); p++)
		assert_true(!strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) ||
			    !strncmp(p, "&gt;", 4) || !strncmp(p, "&quot;", 6) ||
			    !strncmp(p, "&apos;", 6));
}

static void test_rm_write_timeline_svg(void **state)
{
	char err[256] = "", *svg;

	(void)state;
	assert_int_equal(rm_write_timeline(path_in_dir("run.svg"), &run, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(access(path_in_dir("run.svg.tmp"), F_OK), -1);
	svg = slurp(path_in_dir("run.svg"));
	assert_int_equal(strncmp(svg, "<svg", 4), 0);
	assert_int_equal(count(svg, "<svg"), 1);
	assert_non_null(strstr(svg, "</svg>\n"));
	/*
	 * Bars: window 1 has 3 green and 1 red (201's attach); window 2 has 2
	 * green and 1 grey (200 exited while attached: not a failure); 201's
	 * failure is not drawn twice.
	 */
	assert_int_equal(count(svg, "<rect"), 7);
	assert_int_equal(count(svg, "</rect>"), 7);
	assert_int_equal(count(svg, "fill=\"#d64541\""), 1);
	assert_int_equal(count(svg, "fill=\"#9aa5b1\""), 1);
	assert_int_equal(count(svg, "<title>"), count(svg, "</title>"));
	assert_null(strstr(svg, "<&"));
	assert_xml_text_escaped(svg);
	assert_non_null(strstr(svg, "a&lt;b&amp;c"));
	assert_non_null(strstr(svg, "attach-failed: PTRACE_SEIZE(201): &quot;denied&quot;?&lt;&amp;"
				    "&gt; &apos;x&apos;</title>"));
	assert_non_null(strstr(svg, ">node3</text>"));
	assert_non_null(strstr(svg, "no targets found"));
	assert_non_null(strstr(svg, ">201 <tspan"));
	assert_non_null(strstr(svg, ">100 (rank 0) <tspan"));
	/* 2 windows x 2 lines, each a mark over the labels and one line per node with targets. */
	assert_int_equal(count(svg, "class=\"wline\""), 2 * 2 * 3);
	free(svg);
}

static void test_rm_write_missing_dir(void **state)
{
	char err[256] = "";

	(void)state;
	assert_int_equal(rm_write_report("/nonexistent-dir/x/y.json", &run, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot write report /nonexistent-dir/x/y.json: No such file or "
				 "directory");
	assert_int_equal(rm_write_timeline("/nonexistent-dir/t.svg", &run, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot write timeline /nonexistent-dir/t.svg: No such file or "
				 "directory");
}

/* Rank 0 may be root writing into a shared directory. */
static void test_rm_write_report_refuses_tmp_symlink(void **state)
{
	char err[256] = "", *target = strdup(path_in_dir("victim"));

	(void)state;
	assert_int_equal(symlink(target, path_in_dir("link.json.tmp")), 0);
	assert_int_equal(rm_write_report(path_in_dir("link.json"), &run, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "link.json: Too many levels of symbolic links"));
	assert_int_equal(access(target, F_OK), -1);
	assert_int_equal(access(path_in_dir("link.json"), F_OK), -1);
	free(target);
}

static void test_rm_write_timeline_no_window(void **state)
{
	struct rm_run r = {.exit_code = 3, .exit_reason = "no targets found"};
	char err[256] = "", *svg;

	(void)state;
	assert_int_equal(rm_write_timeline(path_in_dir("none.svg"), &r, err, sizeof(err)), 0);
	svg = slurp(path_in_dir("none.svg"));
	assert_non_null(strstr(svg, "no window ran"));
	assert_int_equal(count(svg, "<rect"), 0);
	free(svg);
	assert_int_equal(rm_write_report(path_in_dir("none.json"), &r, err, sizeof(err)), 0);
}

/* Found by fuzz_report: a node's CPU list with a number past LONG_MAX overflowed the merge. */
static void test_rm_write_report_huge_cpu_numbers(void **state)
{
	struct rn_target t[2] = {{.pid = 1, .state = RN_DETACHED},
				 {.pid = 2, .state = RN_DETACHED}};
	struct rm_node n = {.host = "node1", .t = t, .n = 2};
	struct rm_window w = {.index = 1,
			      .start_ns = T1,
			      .stop_ns = T1 + MS,
			      .stop_reason = "duration",
			      .nodes = &n,
			      .n_nodes = 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_reason = "ok"};
	char err[256] = "";
	json_t *j;

	(void)state;
	topo(&t[0], "0-99999999999999999999,5", "0", "");
	topo(&t[1], "2147483648,3", "0", "");
	assert_int_equal(rm_write_report(path_in_dir("huge.json"), &r, err, sizeof(err)), 0);
	j = json_load_file(path_in_dir("huge.json"), 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(jget(j, "windows.0.nodes.0.topology.cpus")), "3,5");
	json_decref(j);
}

/*
 * Issue 21: a target that died with its tools attached is counted apart
 * from exits, with when it was seen gone; a stopped one is a failure; when
 * none lived on, one line says so plainly.
 */
/*
 * A line for each library of the list that declined or failed somewhere,
 * named as the agent split the list (empty entries dropped), and a target
 * where one failed among the failures though it detached.
 */
static void test_rm_print_summary_tool_outcomes(void **state)
{
	struct rn_target t[2];
	struct rm_node node = {.host = "nodeA", .t = t, .n = 2};
	struct rm_window w = {1, T1, S1, "duration", &node, 1};
	struct rm_run r = {.cfg = {.tools = "liba.so::libb.so:libc.so"},
			   .w = &w,
			   .n_w = 1,
			   .exit_code = 4,
			   .exit_reason = "1 target failed"};
	char *buf;

	(void)state;
	for (int i = 0; i < 2; i++) {
		t[i] = target(500 + i, i, "app", RN_DETACHED);
		times(&t[i], T1 - 10 * MS, T1 + MS, S1, S1 + MS);
		t[i].tool_n = 3;
		t[i].tools[0] = ROCATTACH_TOOL_LOADED;
		t[i].tools[1] = ROCATTACH_TOOL_DECLINED;
		t[i].tools[2] = ROCATTACH_TOOL_LOADED;
	}
	t[1].tools[2] = ROCATTACH_TOOL_FAILED;
	snprintf(t[1].message, sizeof(t[1].message), "attached; skipped: libc.so: gone");
	assert_int_equal(rm_count_failures(&r), 1);
	buf = summary_of(&r);
	print_message("%s", buf);
	/* The two counts partition: no target is both, and none is left over. */
	assert_non_null(strstr(buf, ": 1 attached and detached, 1 failed (exit 4"));
	assert_null(strstr(buf, "not completed"));
	assert_null(strstr(buf, "tool liba.so"));
	assert_non_null(
	    strstr(buf, "tool libb.so: loaded on 0, declined on 2, failed on 0 targets\n"));
	assert_non_null(
	    strstr(buf, "tool libc.so: loaded on 1, declined on 0, failed on 1 targets\n"));
	assert_non_null(
	    strstr(buf, "pid 501 rank 1 (app): tool failed: attached; skipped: libc.so: gone"));
	free(buf);
}

static void test_rm_print_summary_died_attached_and_stopped(void **state)
{
	struct rn_target t[3];
	struct rm_node node = {.host = "nodeA", .t = t, .n = 3};
	struct rm_window w = {1, T1, S1, "duration", &node, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 4, .exit_reason = "1 target failed"};
	size_t lived;
	uint64_t first, last;
	char *buf, why[256];
	json_t *j;

	(void)state;
	t[0] = target(400, 0, "app", RN_DIED_ATTACHED);
	times(&t[0], T1 - 10 * MS, T1 + MS, 0, 0);
	t[0].died_ns = T1 + 2500 * MS;
	t[1] = target(401, 1, "app", RN_STOPPED);
	times(&t[1], T1 - 10 * MS, T1 + MS, S1, S1 + MS);
	snprintf(t[1].message, sizeof(t[1].message), "process 401 is stopped");
	t[2] = target(402, 2, "app", RN_DETACHED);
	times(&t[2], T1 - 10 * MS, T1 + MS, S1, S1 + MS);
	/* The stopped one is the one failure; the death is not one. */
	assert_int_equal(rm_count_failures(&r), 1);
	assert_int_equal(rm_died_attached(&r, &lived, &first, &last), 1);
	assert_int_equal(lived, 2);
	assert_true(first == T1 + 2500 * MS && last == first);
	buf = summary_of(&r);
	print_message("%s", buf);
	assert_non_null(strstr(buf, ", 1 died with tools attached"));
	assert_non_null(strstr(buf, "stopped: process 401 is stopped\n"));
	assert_non_null(strstr(buf,
			       "died with their tools attached:\n  nodeA pid 400 rank 0 (app): "
			       "seen gone 2.5 s after the start of window 1\n"));
	assert_null(strstr(buf, "all 1 target"));
	free(buf);
	assert_int_equal(rm_write_report(path_in_dir("died.json"), &r, why, sizeof(why)), 0);
	j = json_load_file(path_in_dir("died.json"), 0, NULL);
	assert_non_null(j);
	assert_int_equal(jint(j, "summary.died_attached"), 1);
	assert_int_equal(jint(j, "summary.stopped"), 1);
	json_decref(j);
	/* Every target died with its tools in: the run ended, and the summary says so plainly. */
	t[1] = t[0];
	t[1].pid = 401;
	t[1].died_ns = T1 + 2700 * MS;
	node.n = 2;
	r.exit_code = 0;
	r.exit_reason = "job ended";
	assert_int_equal(rm_died_attached(&r, &lived, NULL, NULL), 2);
	assert_int_equal(lived, 0);
	buf = summary_of(&r);
	print_message("%s", buf);
	assert_non_null(strstr(buf, "all 2 targets died while attached: 2.5 s after the start of "
				    "window 1 to 2.7 s after the start of window 1\n"));
	free(buf);
}

static json_t *write_trace(const struct rm_run *r, const char *name)
{
	char path[256], err[256] = "";
	json_error_t je;
	json_t *j;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(rm_write_trace(path, r, err, sizeof(err)), 0);
	j = json_load_file(path, 0, &je);
	if (!j)
		fail_msg("trace is not JSON: %s (line %d)", je.text, je.line);
	assert_string_equal(json_string_value(json_object_get(j, "displayTimeUnit")), "ns");
	assert_true(json_is_array(json_object_get(j, "traceEvents")));
	return j;
}

/* The events named name (any phase if ph is NULL) of track tid, and the first of them. */
static size_t events_of(json_t *j, const char *name, const char *ph, json_int_t tid, json_t **first)
{
	json_t *ev = json_object_get(j, "traceEvents"), *e;
	size_t i, n = 0;

	*first = NULL;
	json_array_foreach (ev, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "name")), name) ||
		    (ph && strcmp(json_string_value(json_object_get(e, "ph")), ph)) ||
		    (tid >= 0 && json_integer_value(json_object_get(e, "tid")) != tid))
			continue;
		if (!n++)
			*first = e;
	}
	return n;
}

static double absd(double v)
{
	return v < 0 ? -v : v;
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	assert_true(json_is_number(v));
	return json_number_value(v);
}

#define CALLS(pid) ((json_int_t)(pid) + 4194304)

/* One window: our agent (measured), ROCm's side (bounds), a failed attach, an exit. */
static void test_rm_write_trace_both_sides(void **state)
{
	struct rn_target t[4];
	struct rm_node node = {.host = "nodeA", .t = t, .n = 4, .boot_offset_ns = 42};
	struct rm_window w = {1, T1, S1, "job ended", &node, 1};
	struct rm_run r = {.w = &w,
			   .n_w = 1,
			   .exit_code = 0,
			   .exit_reason = "job ended",
			   .stop_reason = "job ended"};
	json_t *j, *e;

	(void)state;
	t[0] = target(300, 0, "app", RN_DETACHED);
	times(&t[0], T1 - 50 * MS, T1 + 123456, S1 - 50 * MS, S1 + 654321);
	t[0].attach_tool_ns = T1 + 1001;
	t[0].detach_tool_ns = S1 + 2002;
	t[0].side = ROCATTACH_SIDE_AGENT;
	t[1] = target(301, 1, "app", RN_DETACHED);
	times(&t[1], T1 - 10 * MS, T1 + 2 * MS, S1, S1 + 3 * MS);
	t[1].attach_tool_ns = T1 + 2 * MS;
	t[1].detach_tool_ns = S1 + 3 * MS;
	t[1].detach_call_ns = S1 + MS;
	t[1].attach_tool_bound = t[1].detach_tool_bound = true;
	t[1].side = ROCATTACH_SIDE_ROCM;
	t[2] = target(302, 2, "app", RN_ATTACH_FAILED);
	times(&t[2], T1 - 10 * MS, T1 - 9 * MS, 0, 0);
	t[2].agent_status = 6;
	snprintf(t[2].message, sizeof(t[2].message), "tool said no");
	t[3] = target(303, 3, "app", RN_EXITED);
	times(&t[3], T1 - 10 * MS, T1 - 8 * MS, 0, 0);
	j = write_trace(&r, "both.json");

	assert_int_equal(events_of(j, "window 1", "X", 1, &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)T1) < 300);
	assert_true(absd(num(e, "dur") * 1000 - (double)(S1 - T1)) < 1);
	/* Our agent: measured hand-over to hand-back, to within a quarter us. */
	assert_int_equal(events_of(j, "tools attached", "X", 300, &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)(T1 + 1001)) < 250);
	assert_true(absd(num(e, "dur") * 1000 - (double)(S1 + 2002 - T1 - 1001)) < 1);
	assert_string_equal(json_string_value(jget(e, "args.tool_ns_kind")), "measured");
	assert_int_equal(jint(e, "args.attach_tool_ns"), T1 + 1001);
	/* ROCm's side: labelled bounds, with the lower bound of its window. */
	assert_int_equal(events_of(j, "tools attached (bounds)", "X", 301, &e), 1);
	assert_string_equal(json_string_value(jget(e, "args.tool_ns_kind")), "bound");
	assert_int_equal(jint(e, "args.window_ns"), S1 + MS - T1 - 2 * MS);
	/* Calls on their own track, beside the tools' one. */
	assert_int_equal(events_of(j, "attach call", "X", CALLS(300), &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)(T1 - 50 * MS)) < 250);
	assert_int_equal(events_of(j, "detach call", "X", CALLS(301), &e), 1);
	/* A failure and an exit: instants, told apart. */
	assert_int_equal(events_of(j, "attach-failed", "i", CALLS(302), &e), 1);
	assert_string_equal(json_string_value(jget(e, "cat")), "failure");
	assert_string_equal(json_string_value(jget(e, "args.message")), "tool said no");
	assert_int_equal(jint(e, "args.agent_status"), 6);
	assert_int_equal(events_of(j, "tools attached", "X", 302, &e), 0);
	assert_int_equal(events_of(j, "exited", "i", CALLS(303), &e), 1);
	assert_string_equal(json_string_value(jget(e, "cat")), "exit");
	/* Names: the node is process 2, each target a named track. */
	assert_int_equal(events_of(j, "process_name", "M", -1, &e), 2);
	assert_int_equal(events_of(j, "thread_name", "M", 301, &e), 1);
	assert_string_equal(json_string_value(jget(e, "args.name")), "pid 301 rank 1 (app)");
	assert_int_equal(jint(j, "otherData.realtime_minus_boottime_ns.nodeA"), 42);
	assert_string_equal(json_string_value(jget(j, "otherData.stop_reason")), "job ended");
	json_decref(j);
}

/* Records gathered again after each window: a failure or exit is in the trace once. */
static void test_rm_write_trace_once_per_change(void **state)
{
	json_t *j, *e;

	(void)state;
	strcpy(w1_nodes[0].host, "nod\xff"
				 "1");
	strcpy(w2_nodes[0].host, "nod\xff"
				 "1");
	j = write_trace(&run, "run.json");
	strcpy(w1_nodes[0].host, "node1");
	strcpy(w2_nodes[0].host, "node1");
	assert_int_equal(events_of(j, "attach-failed", "i", CALLS(201), &e), 1);
	assert_int_equal(events_of(j, "exited", "i", CALLS(200), &e), 1);
	assert_true(absd(num(e, "ts") * 1000 - (double)(S2 + 95000)) < 250);
	/* 100 and 101 attached in both windows: two attach calls each. */
	assert_int_equal(events_of(j, "attach call", "X", CALLS(100), &e), 2);
	assert_int_equal(events_of(j, "window 2", "X", 1, &e), 1);
	json_decref(j);
}

/* ------------------------------------------------------------------------ */
/* A lost node: its last known records are shown as such and measure nothing. */

#define LOST_REASON "no records within 5.0 s after the stop"

static struct rn_target lost_a[2], lost_b[2];
static struct rm_node lost_nodes[2];
static struct rm_window lost_window;
static struct rm_run lost_run;

/*
 * One window over nodeA (two targets attached) and nodeB, lost. nodeB's
 * last known records have times inside the window and a failure: were they
 * counted, the skew, the counts and the failures would all show it.
 */
static void build_lost_run(void)
{
	lost_a[0] = target(300, 0, "app", RN_DETACHED);
	times(&lost_a[0], T1 + 100000, T1 + 300000, S1 + 10000, S1 + 20000);
	lost_a[1] = target(301, 1, "app", RN_DETACHED);
	times(&lost_a[1], T1 + 100000, T1 + 500000, S1 + 30000, S1 + 40000);
	lost_a[0].windows = lost_a[1].windows = 1;
	lost_b[0] = target(400, 2, "app", RN_DETACHED);
	times(&lost_b[0], T1 + 100000, T1 + 9000000, S1 + 10000, S1 + 7000000);
	lost_b[0].windows = 1;
	lost_b[1] = target(401, 3, "app", RN_ATTACH_FAILED);
	times(&lost_b[1], T1 + 100000, T1 + 8000000, 0, 0);
	snprintf(lost_b[1].message, sizeof(lost_b[1].message), "stale failure");
	node(&lost_nodes[0], "nodeA", lost_a, 2);
	node(&lost_nodes[1], "nodeB", lost_b, 2);
	lost_nodes[1].lost = true;
	lost_nodes[1].lost_reason = LOST_REASON;
	lost_window = (struct rm_window){1, T1, S1, "duration", lost_nodes, 2};
	lost_run = (struct rm_run){.w = &lost_window,
				   .n_w = 1,
				   .exit_code = 6,
				   .exit_reason = "1 node lost",
				   .stop_reason = "completed"};
}

static void test_rm_window_skew_lost_node(void **state)
{
	struct rm_skew s;
	uint64_t p50, max;

	(void)state;
	build_lost_run();
	s = rm_window_skew(&lost_window);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.attach_ns, 200000); /* nodeA's attach ends only */
	assert_int_equal(s.n_detach, 2);
	assert_int_equal(s.detach_ns, 20000);
	assert_int_equal(rm_count_failures(&lost_run), 0);
	rm_node_attach_times(&lost_nodes[1], &p50, &max);
	assert_int_equal(p50, 0);
	assert_int_equal(max, 0);
}

static void test_rm_write_report_lost_node(void **state)
{
	char err[256] = "";
	json_t *j, *n;

	(void)state;
	build_lost_run();
	assert_int_equal(rm_write_report(path_in_dir("lost.json"), &lost_run, err, sizeof(err)), 0);
	j = json_load_file(path_in_dir("lost.json"), 0, NULL);
	assert_non_null(j);
	n = jget(j, "windows.0.nodes.0");
	assert_string_equal(json_string_value(jget(n, "state")), "ok");
	assert_true(json_is_null(jget(n, "lost_reason")));
	check_counts(n, "found", 2, 2, 0, 0);
	n = jget(j, "windows.0.nodes.1");
	assert_string_equal(json_string_value(jget(n, "state")), "lost");
	assert_string_equal(json_string_value(jget(n, "lost_reason")), LOST_REASON);
	/* Found: the last known targets, listed; nothing of them counted or timed. */
	check_counts(n, "found", 2, 0, 0, 0);
	assert_true(json_is_null(jget(n, "attach_p50_ns")));
	assert_true(json_is_null(jget(n, "attach_skew_ns")));
	assert_int_equal(json_array_size(jget(n, "targets")), 2);
	assert_int_equal(jint(n, "targets.1.pid"), 401);
	assert_int_equal(jint(j, "windows.0.skew.targets"), 2);
	assert_int_equal(jint(j, "windows.0.skew.attach_ns"), 200000);
	check_counts(jget(j, "summary"), "targets", 4, 2, 0, 0);
	assert_int_equal(jint(j, "summary.lost_nodes"), 1);
	assert_int_equal(json_array_size(jget(j, "errors")), 0);
	assert_int_equal(jint(j, "exit_code"), 6);
	json_decref(j);
}

static void test_rm_print_summary_lost_node(void **state)
{
	char *buf;

	(void)state;
	build_lost_run();
	buf = summary_of(&lost_run);
	assert_non_null(strstr(buf, "rocattach-mpi: 2 nodes, 4 targets: 2 attached and detached, 0 "
				    "failed, 1 node lost (2 targets, last known) (exit 6: 1 node "
				    "lost)\n"));
	assert_non_null(strstr(buf,
			       "\nnodeA               2        2      0      0     0.300ms     "
			       "0.400ms     0.200ms\n"));
	assert_non_null(strstr(buf,
			       "\nnodeB               2     lost      -      -           -     "
			       "      -           -\n"));
	assert_non_null(strstr(buf, "\nnode nodeB lost in window 1: " LOST_REASON "\n  its targets "
				    "(last known): pid 400 rank 2 (app), pid 401 rank 3 (app)\n"));
	assert_non_null(strstr(buf, "attach skew 0.200 ms, detach skew 0.020 ms (2 targets, 2 from "
				    "call bounds, 1 node lost)\n"));
	assert_null(strstr(buf, "failures:"));
	assert_null(strstr(buf, "stale failure"));
	free(buf);
}

/* The name of trace process pid (its process_name metadata). */
static const char *process_name(json_t *j, json_int_t pid)
{
	json_t *ev = json_object_get(j, "traceEvents"), *e;
	size_t i;

	json_array_foreach (ev, i, e) {
		if (!strcmp(json_string_value(json_object_get(e, "name")), "process_name") &&
		    json_integer_value(json_object_get(e, "pid")) == pid)
			return json_string_value(jget(e, "args.name"));
	}
	fail_msg("no process_name for pid %d", (int)pid);
	return NULL;
}

/* The timeline and the trace draw nothing of a lost node's last known records. */
static void test_rm_write_timeline_lost_node(void **state)
{
	char err[256] = "", *svg;
	json_t *j, *e;

	(void)state;
	build_lost_run();
	assert_int_equal(rm_write_timeline(path_in_dir("lost.svg"), &lost_run, err, sizeof(err)),
			 0);
	svg = slurp(path_in_dir("lost.svg"));
	assert_int_equal(count(svg, "<rect"), 2); /* nodeA's */
	assert_int_equal(count(svg, "fill=\"#d64541\">"), 0);
	assert_int_equal(count(svg, "<text class=\"host bad\""), 1);
	assert_non_null(strstr(svg, "\"><title>nodeB</title>nodeB</text>"));
	assert_non_null(
	    strstr(svg, ">2 found (last known), lost in window 1: " LOST_REASON "</text>"));
	assert_non_null(strstr(svg, ">2 found, 2 attached, 0 failed</text>"));
	assert_xml_text_escaped(svg);
	free(svg);

	j = write_trace(&lost_run, "lost.json");
	assert_string_equal(process_name(j, 2), "nodeA");
	assert_string_equal(process_name(j, 3), "nodeB (lost in window 1: " LOST_REASON ")");
	assert_int_equal(events_of(j, "attach call", "X", CALLS(300), &e), 1);
	assert_int_equal(events_of(j, "attach call", "X", CALLS(400), &e), 0);
	assert_int_equal(events_of(j, "tools attached", NULL, 400, &e), 0);
	assert_int_equal(events_of(j, "attach-failed", NULL, CALLS(401), &e), 0);
	assert_int_equal(events_of(j, "thread_name", "M", 401, &e), 1); /* still listed */
	json_decref(j);
}

/*
 * Lost from window 2 on: said once, for window 2; window 1's failure is
 * counted once, in window 1; nodeB's bars and calls are window 1's only.
 */
static void test_rm_print_summary_lost_from_window_2(void **state)
{
	struct rn_target a[3][2];
	struct rm_node n[3][2];
	struct rm_window w[3];
	struct rm_run r;
	char err[256] = "", *buf, *svg;
	uint64_t shift;
	json_t *j, *e;
	size_t i, k;

	(void)state;
	build_lost_run();
	for (i = 0; i < 3; i++) {
		shift = i * 2000 * MS;
		memcpy(a[i], lost_a, sizeof(lost_a));
		for (k = 0; k < 2; k++)
			times(&a[i][k], lost_a[k].attach_start_ns + shift,
			      lost_a[k].attach_end_ns + shift, lost_a[k].detach_start_ns + shift,
			      lost_a[k].detach_end_ns + shift);
		memcpy(n[i], lost_nodes, sizeof(lost_nodes));
		n[i][0].t = a[i];
		n[i][1].lost = i > 0;
		w[i] = (struct rm_window){(int)i + 1, T1 + shift, S1 + shift, "duration", n[i], 2};
	}
	r = lost_run;
	r.w = w;
	r.n_w = 3;
	buf = summary_of(&r);
	assert_int_equal(count(buf, " lost in window "), 1);
	assert_non_null(strstr(buf, "\nnode nodeB lost in window 2: " LOST_REASON "\n"));
	assert_int_equal(count(buf, "stale failure"), 1);
	assert_non_null(strstr(buf, "  nodeB pid 401 rank 3 (app), window 1: attach-failed: stale "
				    "failure\n"));
	assert_int_equal(rm_count_failures(&r), 1);
	free(buf);

	assert_int_equal(rm_write_timeline(path_in_dir("lost3.svg"), &r, err, sizeof(err)), 0);
	svg = slurp(path_in_dir("lost3.svg"));
	/* nodeA: 2 bars in each window; nodeB: window 1's 2 (one red), no more. */
	assert_int_equal(count(svg, "<rect"), 8);
	assert_int_equal(count(svg, "fill=\"#d64541\">"), 1);
	assert_non_null(
	    strstr(svg, ">2 found (last known), lost in window 2: " LOST_REASON "</text>"));
	free(svg);

	j = write_trace(&r, "lost3.json");
	assert_string_equal(process_name(j, 3), "nodeB (lost in window 2: " LOST_REASON ")");
	assert_int_equal(events_of(j, "attach call", "X", CALLS(300), &e), 3);
	assert_int_equal(events_of(j, "attach call", "X", CALLS(400), &e), 1);
	assert_int_equal(events_of(j, "attach-failed", "i", CALLS(401), &e), 1);
	json_decref(j);
}

/* A lost node in the --dry-run listing: its processes (last known), none to attach. */
static void test_rm_print_dry_run_lost_node(void **state)
{
	char *buf;

	(void)state;
	build_lost_run();
	buf = dry_run_of(lost_nodes, 2);
	assert_non_null(strstr(buf, "nodeB: lost: " LOST_REASON "; 2 processes (last known)\n"));
	assert_non_null(strstr(buf, "dry run: 2 processes on 1 node would be attached (1 node "
				    "lost); nothing was attached\n"));
	free(buf);
}

/*
 * Strings from other hosts and processes, of any length, not UTF-8: every
 * byte kept, non-ASCII ones as '?', none cut (around the 512 bytes where
 * node/'s escaper once stopped, and far past them).
 */
static void test_rm_write_report_any_string_length(void **state)
{
	static const size_t lens[] = {511, 512, 513, 100000};
	char *argv[4], *want, err[256] = "";
	struct rm_run r = {.exit_reason = "ok"};
	struct rm_node node = {.host = "n", .lost = true};
	struct rm_window w = {.index = 1, .nodes = &node, .n_nodes = 1};
	json_t *j, *v;
	size_t i, k;

	(void)state;
	for (i = 0; i < 4; i++) {
		argv[i] = malloc(lens[i] + 1);
		assert_non_null(argv[i]);
		for (k = 0; k < lens[i]; k++)
			argv[i][k] = k % 3 ? 'a' : '\xff';
		argv[i][lens[i]] = '\0';
	}
	r.cfg = (struct rm_config){.argc = 4, .argv = argv};
	node.lost_reason = argv[3];
	r.w = &w;
	r.n_w = 1;
	assert_int_equal(rm_write_report(path_in_dir("long.json"), &r, err, sizeof(err)), 0);
	j = json_load_file(path_in_dir("long.json"), 0, NULL);
	assert_non_null(j);
	for (i = 0; i < 4; i++) {
		want = strdup(argv[i]);
		for (k = 0; k < lens[i]; k += 3)
			want[k] = '?';
		v = json_array_get(jget(j, "config.argv"), i);
		assert_int_equal(json_string_length(v), lens[i]);
		assert_string_equal(json_string_value(v), want);
		if (i == 3)
			assert_string_equal(
			    json_string_value(jget(j, "windows.0.nodes.0.lost_reason")), want);
		free(want);
		free(argv[i]);
	}
	json_decref(j);
}

/* A bar's hover text is whole however long the host and the message (once cut at 512 bytes). */
static void test_rm_write_timeline_long_title(void **state)
{
	struct rn_target t = target(7, 0, "app", RN_ATTACH_FAILED);
	struct rm_node n = {.t = &t, .n = 1};
	struct rm_window w = {1, T1, S1, "duration", &n, 1};
	struct rm_run r = {.w = &w, .n_w = 1, .exit_code = 4, .exit_reason = "1 target failed"};
	char err[256] = "", *svg, want[sizeof(t.message) + 32];

	(void)state;
	memset(n.host, 'h', sizeof(n.host) - 1);
	times(&t, T1 + 10, T1 + 20, 0, 0);
	memset(t.message, 'm', sizeof(t.message) - 2);
	t.message[sizeof(t.message) - 2] = 'Z';
	assert_int_equal(rm_write_timeline(path_in_dir("long.svg"), &r, err, sizeof(err)), 0);
	svg = slurp(path_in_dir("long.svg"));
	snprintf(want, sizeof(want), ": %s</title></rect>", t.message);
	assert_non_null(strstr(svg, want));
	free(svg);
}

/* ---- the same run with its targets kept in a store (rank 0 at scale) ---- */

/* The file at path, whole (what slurp reads), after writing it with fn. */
static char *written(int (*fn)(const char *, const struct rm_run *, char *, size_t),
		     const struct rm_run *r, const char *name)
{
	char err[512] = "";

	assert_int_equal(fn(path_in_dir(name), r, err, sizeof(err)), 0);
	return slurp(path_in_dir(name));
}

/* Every output of r, as text: summary, report, timeline, trace, dry run of its last window. */
static void outputs(const struct rm_run *r, char *out[5])
{
	const struct rm_window *w = &r->w[r->n_w - 1];

	out[0] = summary_of(r);
	out[1] = written(rm_write_report, r, "store.json");
	out[2] = written(rm_write_timeline, r, "store.svg");
	out[3] = written(rm_write_trace, r, "store-trace.json");
	out[4] = dry_run_of(w->nodes, w->n_nodes);
}

/*
 * A copy of r whose nodes' targets are all in store s (t NULL), as rank 0
 * keeps them; *bytes: what that takes there.
 */
static struct rm_run stored_copy(const struct rm_run *r, struct rm_store *s, size_t *bytes)
{
	struct rm_run c = *r;
	struct rm_window *w = calloc(r->n_w, sizeof(*w));
	char err[512] = "";

	assert_non_null(w);
	*bytes = 0;
	for (size_t wi = 0; wi < r->n_w; wi++) {
		w[wi] = r->w[wi];
		w[wi].nodes = calloc(r->w[wi].n_nodes, sizeof(*w[wi].nodes));
		assert_non_null(w[wi].nodes);
		for (size_t ni = 0; ni < r->w[wi].n_nodes; ni++) {
			struct rm_node *n = &w[wi].nodes[ni];

			*n = r->w[wi].nodes[ni];
			n->t = NULL;
			if (n->n) {
				n->t = malloc(n->n * sizeof(*n->t));
				assert_non_null(n->t);
				memcpy(n->t, r->w[wi].nodes[ni].t, n->n * sizeof(*n->t));
			}
			assert_int_equal(rm_store_put(s, n, err, sizeof(err)), 0);
			assert_null(n->t);
			assert_ptr_equal(n->store, n->n ? s : NULL);
			*bytes += n->n * sizeof(struct rn_target);
		}
	}
	c.w = w;
	c.store = s;
	return c;
}

static void free_copy(struct rm_run *c)
{
	for (size_t wi = 0; wi < c->n_w; wi++)
		free(c->w[wi].nodes);
	free(c->w);
}

/* Stored or in memory, every output is the same to the byte. */
static void check_same_outputs(const struct rm_run *r)
{
	char err[512] = "", *mem[5], *kept[5];
	struct rm_store *s = rm_store_open(dir, err, sizeof(err));
	struct rm_run c;
	size_t bytes;

	assert_non_null(s);
	outputs(r, mem);
	c = stored_copy(r, s, &bytes);
	assert_true(bytes > 0);
	assert_int_equal(rm_store_bytes(s), bytes);
	outputs(&c, kept);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(kept[i], mem[i]);
		free(mem[i]);
		free(kept[i]);
	}
	assert_int_equal(rm_store_check(s, err, sizeof(err)), 0);
	free_copy(&c);
	rm_store_close(s);
}

static void test_store_same_outputs(void **state)
{
	(void)state;
	check_same_outputs(&run);
	build_lost_run();
	check_same_outputs(&lost_run);
}

/* The store's file is unlinked from the start: nothing of it is left in its directory. */
static void test_store_leaves_no_file(void **state)
{
	char err[512] = "", cmd[600];
	struct rm_store *s;
	size_t bytes;
	struct rm_run c;

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/store-dir && mkdir '%s'/store-dir", dir, dir);
	assert_int_equal(system(cmd), 0);
	s = rm_store_open(path_in_dir("store-dir"), err, sizeof(err));
	assert_non_null(s);
	c = stored_copy(&run, s, &bytes);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s'/store-dir)\"", dir);
	assert_int_equal(system(cmd), 0);
	free_copy(&c);
	rm_store_close(s);
}

/*
 * A node whose records cannot be read back from the store (here: where it
 * says they are, the store's file has nothing, a short read) is a failure:
 * counted, so the run cannot end 0, and named in the summary with the
 * reason; the report is given up, not written without it.
 */
static void test_rm_count_failures_store_read_error(void **state)
{
	char err[512] = "", *text;
	struct rm_store *s = rm_store_open(dir, err, sizeof(err));
	struct rm_run c;
	size_t bytes;

	(void)state;
	assert_non_null(s);
	build_lost_run();
	c = stored_copy(&lost_run, s, &bytes);
	assert_int_equal(rm_count_failures(&c), 0);
	assert_int_equal(rm_store_check(s, err, sizeof(err)), 0);
	c.w[0].nodes[0].at = rm_store_bytes(s) + 4096; /* nodeA, not lost */
	assert_int_equal(rm_count_failures(&c), 1);
	assert_int_equal(rm_store_check(s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot read the gathered records back"));
	text = summary_of(&c);
	assert_non_null(strstr(text, "nodeA: records unreadable: cannot read the gathered "
				     "records back from"));
	assert_non_null(strstr(text, "the outcome of its 2 targets is unknown"));
	/* The headline says so too, and counts them nowhere else. */
	assert_non_null(strstr(text, ", 1 node unreadable (2 targets, not counted)"));
	assert_null(strstr(text, "not completed"));
	free(text);
	assert_int_not_equal(rm_write_report(path_in_dir("unreadable.json"), &c, err, sizeof(err)),
			     0);
	free_copy(&c);
	rm_store_close(s);
}

static void test_store_open_missing_dir(void **state)
{
	char err[512] = "";

	(void)state;
	assert_null(rm_store_open("/nonexistent-rocattach-dir", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent-rocattach-dir"));
	assert_non_null(strstr(err, "No such file or directory"));
	assert_non_null(strstr(err, "TMPDIR"));
	assert_null(strchr(err, '\n'));
}

/* Differences of times: signed, checked, unknown when a time is missing. */
static void test_ra_ns_diff_signed_and_checked(void **state)
{
	(void)state;
	assert_int_equal(ra_ns_diff(S1, T1), 1000 * MS);
	assert_int_equal(ra_ns_diff(T1, S1), -(int64_t)(1000 * MS));
	assert_false(ra_ns_known(ra_ns_diff(0, T1)));
	assert_false(ra_ns_known(ra_ns_diff(T1, 0)));
	assert_false(ra_ns_known(ra_ns_diff(UINT64_MAX, 1)));
	assert_int_equal(ra_ns_span(S1, T1, 2000 * MS), 1000 * MS);
	assert_false(ra_ns_known(ra_ns_span(T1, S1, 2000 * MS)));
	assert_false(ra_ns_known(ra_ns_span(S1, T1, 999 * MS)));
}

/* The progress lines: a stop after the records is "before the stop", never a wrapped figure. */
static void test_rm_progress_lines(void **state)
{
	char buf[128];

	(void)state;
	rm_progress_attached(buf, sizeof(buf), 1, 2, 2, T1, T1 + 1200000);
	assert_string_equal(buf, "window 1: attached 2/2 targets (1.2 ms)");
	rm_progress_detached(buf, sizeof(buf), 1, 2, 2, S1, S1 + 50400000);
	assert_string_equal(buf, "window 1: detached 2/2 targets (50.4 ms after the stop)");
	rm_progress_detached(buf, sizeof(buf), 1, 0, 2, S1, S1 - 99300000);
	assert_string_equal(buf, "window 1: detached 0/2 targets (99.3 ms before the stop)");
	rm_progress_detached(buf, sizeof(buf), 2, 0, 0, 0, S1);
	assert_string_equal(buf, "window 2: detached 0/0 targets (time unknown)");
	rm_progress_attached(buf, sizeof(buf), 3, -1, 0, 0, T1);
	assert_string_equal(buf, "window 3: attached 0/0 targets (time unknown)");
}

/* A window stopped before its start (nothing attachable): its length in words, null in JSON. */
static void test_rm_window_length_unknown(void **state)
{
	struct rm_window w = {.index = 1, .start_ns = S1, .stop_ns = T1, .stop_reason = "x"};
	struct rm_run r = {.exit_code = 4, .exit_reason = "nothing attachable", .w = &w, .n_w = 1};
	char path[] = "/tmp/test_report_length.XXXXXX", err[256], *buf;
	json_t *j, *len;
	int fd;

	(void)state;
	assert_false(ra_ns_known(rm_window_length_ns(&w)));
	assert_string_equal(rm_window_length_why(&w), "unknown: stopped before its start");
	buf = summary_of(&r);
	assert_non_null(strstr(buf, "length unknown: stopped before its start"));
	assert_null(strstr(buf, "? ms"));
	assert_null(strstr(buf, "18446744"));
	free(buf);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rm_write_report(path, &r, err, sizeof(err)), 0);
	j = json_load_file(path, 0, NULL);
	unlink(path);
	assert_non_null(j);
	len = json_object_get(json_array_get(json_object_get(j, "windows"), 0), "length");
	assert_true(json_is_null(json_object_get(len, "planned_ns")));
	assert_string_equal(json_string_value(json_object_get(len, "planned_unknown")),
			    "unknown: stopped before its start");
	json_decref(j);
	w.stop_ns = 0;
	assert_string_equal(rm_window_length_why(&w), "unknown: no stop time");
	w.stop_ns = S1 + 8 * 24 * 3600 * 1000 * MS;
	assert_string_equal(rm_window_length_why(&w), "unknown: longer than any window can be");
	w.stop_ns = S1;
	assert_int_equal(rm_window_length_ns(&w), 0);
	assert_null(rm_window_length_why(&w));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_ns_diff_signed_and_checked),
	    cmocka_unit_test(test_rm_progress_lines),
	    cmocka_unit_test(test_rm_window_length_unknown),
	    cmocka_unit_test(test_rm_window_skew_attached_targets),
	    cmocka_unit_test(test_rm_window_skew_exited_during_attach),
	    cmocka_unit_test(test_rm_window_skew_ignores_earlier_windows),
	    cmocka_unit_test(test_rm_window_skew_bounds_and_length),
	    cmocka_unit_test(test_rm_node_attach_times_median),
	    cmocka_unit_test(test_rm_print_summary_rows_and_failures),
	    cmocka_unit_test(test_rm_print_summary_length_unknown),
	    cmocka_unit_test(test_rm_print_summary_tool_outcomes),
	    cmocka_unit_test(test_rm_print_summary_died_attached_and_stopped),
	    cmocka_unit_test(test_rm_print_summary_long_host),
	    cmocka_unit_test(test_rm_print_dry_run_lists_targets),
	    cmocka_unit_test(test_rm_write_report_top_and_config),
	    cmocka_unit_test(test_rm_write_report_windows),
	    cmocka_unit_test(test_rm_write_report_errors_once),
	    cmocka_unit_test(test_rm_write_timeline_svg),
	    cmocka_unit_test(test_rm_write_missing_dir),
	    cmocka_unit_test(test_rm_write_report_refuses_tmp_symlink),
	    cmocka_unit_test(test_rm_write_timeline_no_window),
	    cmocka_unit_test(test_rm_write_report_huge_cpu_numbers),
	    cmocka_unit_test(test_rm_write_trace_both_sides),
	    cmocka_unit_test(test_rm_write_trace_once_per_change),
	    cmocka_unit_test(test_rm_window_skew_lost_node),
	    cmocka_unit_test(test_rm_write_report_lost_node),
	    cmocka_unit_test(test_rm_print_summary_lost_node),
	    cmocka_unit_test(test_rm_write_timeline_lost_node),
	    cmocka_unit_test(test_rm_print_summary_lost_from_window_2),
	    cmocka_unit_test(test_rm_print_dry_run_lost_node),
	    cmocka_unit_test(test_rm_write_report_any_string_length),
	    cmocka_unit_test(test_rm_write_timeline_long_title),
	    cmocka_unit_test(test_store_same_outputs),
	    cmocka_unit_test(test_store_leaves_no_file),
	    cmocka_unit_test(test_store_open_missing_dir),
	    cmocka_unit_test(test_rm_count_failures_store_read_error),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

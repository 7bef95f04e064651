/* SPDX-License-Identifier: MIT */
/* A run of rocattach-mpi built by hand, and readers of its outputs, for the report tests
 * (report_sample.h). */
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
#include "report_sample.h"

struct rn_target w1_node1[2], w1_node2[2], w2_node1[2], w2_node2[2];
struct rm_node w1_nodes[3], w2_nodes[3];
struct rm_window windows[2];
struct rm_run run;
char *argv_run[] = {"rocattach-mpi", "--slurm-step", "42.0"};
char dir[] = "/tmp/test_report.XXXXXX";
struct rn_target target(pid_t pid, long rank, const char *exe, enum rn_state state)
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

void target_times(struct rn_target *t, uint64_t as, uint64_t ae, uint64_t ds, uint64_t de)
{
	t->attach_start_ns = as;
	t->attach_end_ns = ae;
	t->detach_start_ns = ds;
	t->detach_end_ns = de;
}

void topo(struct rn_target *t, const char *cpus, const char *numa, const char *gpus)
{
	snprintf(t->topo.cpus, sizeof(t->topo.cpus), "%s", cpus);
	snprintf(t->topo.numa, sizeof(t->topo.numa), "%s", numa);
	snprintf(t->topo.gpus, sizeof(t->topo.gpus), "%s", gpus);
}

void build_window1(void)
{
	struct rn_target *a = w1_node1, *b = w1_node2;

	a[0] = target(100, 0, "app", RN_DETACHED);
	target_times(&a[0], T1 + 100000, T1 + 900000, S1 + 50000, S1 + 300000);
	topo(&a[0], "0-3", "0", "card0(0000:c1:00.0)");
	a[1] = target(101, 1, "app", RN_DETACHED);
	a[1].nspid = 7;
	target_times(&a[1], T1 + 120000, T1 + 1320000, S1 + 250000, S1 + 600000);
	topo(&a[1], "4-7,16", "0", "card0(0000:c1:00.0),card1(0000:c2:00.0)");
	a[0].windows = a[1].windows = 1;

	b[0] = target(200, 2, "a<b&c", RN_DETACHED);
	target_times(&b[0], T1 + 50000, T1 + 650000, S1 + 400000, S1 + 700000);
	b[0].windows = 1;
	b[1] = target(201, -1, "app", RN_ATTACH_FAILED);
	target_times(&b[1], T1 + 60000, T1 + 2060000, 0, 0);
	b[1].status = ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED;
	b[1].agent_status = -1;
	snprintf(b[1].message, sizeof(b[1].message), "%s", BAD_MESSAGE);
}

/* The same targets gathered again: 200 exits during the window, 201 stays failed. */
void build_window2(void)
{
	struct rn_target *a = w2_node1, *b = w2_node2;

	memcpy(a, w1_node1, sizeof(w1_node1));
	memcpy(b, w1_node2, sizeof(w1_node2));
	target_times(&a[0], T2 + 100000, T2 + 400000, S2 + 10000, S2 + 20000);
	target_times(&a[1], T2 + 200000, T2 + 700000, S2 + 30000, S2 + 40000);
	a[0].windows = a[1].windows = 2;
	target_times(&b[0], T2 + 150000, T2 + 250000, S2 + 90000, S2 + 95000);
	b[0].state = RN_EXITED;
	b[0].status = ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND;
	snprintf(b[0].message, sizeof(b[0].message), "process exited");
}

void node(struct rm_node *n, const char *host, struct rn_target *t, size_t count)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->t = t;
	n->n = count;
}

void nodes(struct rm_node *n, struct rn_target *t1, struct rn_target *t2)
{
	node(&n[0], "node1", t1, 2);
	node(&n[1], "node2", t2, 2);
	node(&n[2], "node3", NULL, 0);
}

int setup(void **state)
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

int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

char *slurp(const char *path)
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

size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

char *path_in_dir(const char *name)
{
	static char path[2][256];
	static int i;

	i = !i;
	snprintf(path[i], sizeof(path[i]), "%s/%s", dir, name);
	return path[i];
}

json_int_t jint(json_t *o, const char *path)
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

json_t *jget(json_t *o, const char *path)
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
void check_counts(json_t *o, const char *found, json_int_t n, json_int_t attached,
		  json_int_t failed, json_int_t exited)
{
	assert_int_equal(jint(o, found), n);
	assert_int_equal(jint(o, "attached"), attached);
	assert_int_equal(jint(o, "failed"), failed);
	assert_int_equal(jint(o, "exited"), exited);
}

json_t *write_trace(const struct rm_run *r, const char *name)
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
size_t events_of(json_t *j, const char *name, const char *ph, json_int_t tid, json_t **first)
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

/* The name of trace process pid (its process_name metadata). */
const char *process_name(json_t *j, json_int_t pid)
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

/*
 * The summary as text. Not inlined: gcc 12 then takes the result for a
 * pointer to the local buf.
 */
__attribute__((noinline)) char *summary_of(const struct rm_run *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rm_print_summary(f, r);
	fclose(f);
	return buf;
}

/* The --dry-run listing as text. */
__attribute__((noinline)) char *dry_run_of(const struct rm_node *nodes, size_t n_nodes)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rm_print_dry_run(f, nodes, n_nodes);
	fclose(f);
	return buf;
}

/* A lost node: its last known records are shown as such and measure nothing. */
struct rn_target lost_a[2], lost_b[2];
struct rm_node lost_nodes[2];
struct rm_window lost_window;
struct rm_run lost_run;

/*
 * One window over nodeA (two targets attached) and nodeB, lost. nodeB's
 * last known records have times inside the window and a failure: were they
 * counted, the skew, the counts and the failures would all show it.
 */
void build_lost_run(void)
{
	lost_a[0] = target(300, 0, "app", RN_DETACHED);
	target_times(&lost_a[0], T1 + 100000, T1 + 300000, S1 + 10000, S1 + 20000);
	lost_a[1] = target(301, 1, "app", RN_DETACHED);
	target_times(&lost_a[1], T1 + 100000, T1 + 500000, S1 + 30000, S1 + 40000);
	lost_a[0].windows = lost_a[1].windows = 1;
	lost_b[0] = target(400, 2, "app", RN_DETACHED);
	target_times(&lost_b[0], T1 + 100000, T1 + 9000000, S1 + 10000, S1 + 7000000);
	lost_b[0].windows = 1;
	lost_b[1] = target(401, 3, "app", RN_ATTACH_FAILED);
	target_times(&lost_b[1], T1 + 100000, T1 + 8000000, 0, 0);
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

/* Every '<' opens a tag and every '&' an entity: what a parser would choke on first. */
void assert_xml_text_escaped(const char *s)
{
	const char *p;

	for (p = s; (p = strchr(p, '<')); p++)
		assert_true(p[1] == '/' || (p[1] >= 'a' && p[1] <= 'z'));
	for (p = s; (p = strchr(p, '&')); p++)
		assert_true(!strncmp(p, "&amp;", 5) || !strncmp(p, "&lt;", 4) ||
			    !strncmp(p, "&gt;", 4) || !strncmp(p, "&quot;", 6) ||
			    !strncmp(p, "&apos;", 6));
}

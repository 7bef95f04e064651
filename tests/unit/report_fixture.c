/* SPDX-License-Identifier: MIT */
/* Runs built by hand for the report's tests at scale (report_fixture.h). */
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

#include "report_fixture.h"

char dir[] = "/tmp/test_report.XXXXXX";

/*
 * A clean target k of a node: its attach call from T0 - 2 ms to T0 + k us,
 * its hand-over at T0 + 10 k us, hand-back at STOP + k us, its detach call
 * 500 + k us long.
 */
void clean(struct rn_target *t, pid_t pid, long k)
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

void failed(struct rn_target *t, pid_t pid)
{
	clean(t, pid, 0);
	t->state = RN_ATTACH_FAILED;
	t->windows = 0;
	t->attach_tool_ns = t->detach_start_ns = t->detach_tool_ns = t->detach_end_ns = 0;
	snprintf(t->message, sizeof(t->message), "PTRACE_SEIZE(%d): Operation not permitted",
		 (int)pid);
}

void big_run(struct big *b, size_t n, size_t k)
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

void big_free(struct big *b)
{
	free(b->t);
	free(b->nodes);
}

int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

json_t *report_at(const struct rm_run *r, enum rm_detail d)
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

json_t *node_of(json_t *j, size_t i)
{
	return json_array_get(
	    json_object_get(json_array_get(json_object_get(j, "windows"), 0), "nodes"), i);
}

json_int_t ival(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

size_t n_targets(json_t *node)
{
	return json_array_size(json_object_get(node, "targets"));
}

char *summary_of(const struct rm_run *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rm_print_summary(f, r);
	fclose(f);
	return buf;
}

char *slurp(const char *path, size_t *size)
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

json_t *trace_at(const struct rm_run *r, enum rm_detail d, size_t *size)
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

void every_outcome(struct rn_target *t)
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
void cut_on_node(const struct rn_target *root, size_t n, enum rm_detail d, int64_t applied_ns,
		 struct rm_node *out)
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
	assert_int_equal(rm_take_sum(sum, applied_ns, out, NULL, 0), 0);
	free(buf);
	free(sum);
	free(kept);
	free(t);
}

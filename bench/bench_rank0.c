/* SPDX-License-Identifier: MIT */
/*
 * 7. Rank 0 at scale, without a cluster: what its records path costs for
 * NODES x TARGETS synthetic targets, through the real wire format and the
 * real report code. Each node's records are packed (rn_pack, as a rank
 * sends them), taken in (rm_take_node: unpacked and turned into rank 0's
 * clock, as rank 0 does with each node's message) and put into
 * the store (rm_store_put, as rank 0 keeps them: launcher/report/store.c),
 * as one window's nodes; then the report (JSON), the summary, the timeline
 * and the trace are written. The same-run baseline keeps every target in
 * memory instead (what rank 0 did before the store). Each size and way
 * runs in a child of its own, so its peak memory (ru_maxrss) is its own.
 * One target of node 7 failed its attach, so that --detail failures keeps
 * one record and the summary and the timeline show one node apart. The
 * report and the trace are written at the default --detail (failures above
 * 10,000 targets) and at --detail all. The bytes on the wire are measured
 * at --detail all (every record) and as the nodes cut them at --detail
 * failures (each node with one failed target: its one record and its block,
 * struct rm_node_sum, made by rm_node_summary and taken by rm_take_sum as
 * rank 0 does); neither counts the record head (launcher/coord/link.c) nor the bundles'.
 *
 *   bench_rank0 [--json PATH] [--quick: 1000x128 only] [--sizes 100x128,1000x128,10000x128]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "common/clock.h"
#include "node.h"
#include "report.h"

#define MAX_SIZES 8

struct size_run {
	long nodes, targets;
	bool store; /* kept in the store, else in memory (the baseline) */
	bool ok;
	double unpack_ms, report_ms, summary_ms, timeline_ms, trace_ms, peak_mb, wire_mb, json_mb,
	    trace_mb, store_mb;
	/* At --detail all (the others: the default level, level_name). */
	double report_all_ms, json_all_mb, trace_all_ms, trace_all_mb, svg_kb;
	/* On the wire cut on each node at --detail failures (one failed target a node). */
	double wire_cut_mb, cut_ms;
	long summary_lines;
	char level[16];
};

/* A target as a node would report it after a window (times around t0, a message). */
static void fake_target(struct rn_target *t, long node, long k, uint64_t t0)
{
	memset(t, 0, sizeof(*t));
	t->pid = (int)(1000 + k);
	t->nspid = t->pid;
	t->rank = node * 128 + k;
	t->state = RN_DETACHED;
	t->listener = true;
	t->side = 1;
	t->attach_start_ns = t0 - 2000000 + (uint64_t)k * 1000;
	t->attach_end_ns = t->attach_start_ns + 700000;
	t->attach_tool_ns = t0 + (uint64_t)(k % 97) * 1000;
	t->detach_start_ns = t0 + 900000000;
	t->detach_end_ns = t->detach_start_ns + 500000;
	t->detach_tool_ns = t0 + 1000000000 + (uint64_t)(k % 89) * 1000;
	snprintf(t->exe, sizeof(t->exe), "/opt/app/bin/solver");
	snprintf(t->topo.cpus, sizeof(t->topo.cpus), "%ld-%ld", k % 64, k % 64 + 1);
	snprintf(t->topo.numa, sizeof(t->topo.numa), "%ld", k % 8);
	snprintf(t->topo.gpus, sizeof(t->topo.gpus), "0000:%02lx:00.0", k % 8);
	t->topo.n_cpus = 2;
	if (node == 7 && k == 3) {
		t->state = RN_ATTACH_FAILED;
		t->attach_tool_ns = t->detach_start_ns = t->detach_end_ns = t->detach_tool_ns = 0;
		snprintf(t->message, sizeof(t->message),
			 "PTRACE_SEIZE(%d): Operation not permitted", (int)t->pid);
	}
}

static double ms_since(uint64_t t)
{
	return (double)(ra_monotonic_ns() - t) / 1e6;
}

static off_t file_size(const char *p)
{
	FILE *f = fopen(p, "r");
	long n = -1;

	if (f && !fseek(f, 0, SEEK_END))
		n = ftell(f);
	if (f)
		fclose(f);
	return n;
}

/* Write one output at one --detail level: its time, and its size in MB. */
static int timed(int (*fn)(const char *, const struct rm_run *, char *, size_t), struct rm_run *run,
		 enum rm_detail d, const char *path, double *ms, double *mb)
{
	char err[512];
	uint64_t t;

	run->cfg.detail = d;
	t = ra_monotonic_ns();
	if (fn(path, run, err, sizeof(err)))
		return bt_log("%s", err), -1;
	*ms = ms_since(t);
	*mb = (double)file_size(path) / 1e6;
	unlink(path);
	return 0;
}

static long lines_of_summary(const struct rm_run *run)
{
	char *buf = NULL;
	size_t len = 0;
	long n = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -1;
	rm_print_summary(f, run);
	fclose(f);
	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\n';
	free(buf);
	return n;
}

/*
 * A node's records as it sends them at --detail failures, with target 3
 * failed: the block and the record kept; taken as rank 0 takes them. The
 * bytes, or -1.
 */
static double cut_bytes(const char *host, struct rn_target *one, long targets, uint64_t t0)
{
	struct rm_node_sum *sum = calloc(1, sizeof(*sum));
	struct rm_node nd = {0};
	size_t m = 0, len;
	double bytes = -1;
	char *buf = NULL;

	one[3 % targets].state = RN_ATTACH_FAILED;
	if (!sum || rm_node_summary(one, (size_t)targets, RM_DETAIL_FAILURES, t0, sum))
		goto out;
	for (long k = 0; k < targets; k++)
		if (rm_detail_keeps_target(RM_DETAIL_FAILURES, &one[k]))
			one[m++] = one[k];
	len = rn_pack(host, one, m, NULL, 0);
	if (!(buf = malloc(len)) || rn_pack(host, one, m, buf, len) != len)
		goto out;
	if (!rm_take_node(buf, len, 1500, &nd) && !rm_take_sum(sum, 1500, &nd, NULL, 0) &&
	    rm_found(&nd) == (size_t)targets)
		bytes = (double)(len + sizeof(*sum));
out:
	free(nd.t);
	rm_node_sum_free(&nd);
	free(buf);
	free(sum);
	return bytes;
}

/* In the child: one size, the figures written to fd as one line. */
static int measure(struct size_run *s, const char *dir, int fd)
{
	uint64_t t0 = ra_realtime_ns(), t;
	struct rn_target *one = calloc((size_t)s->targets, sizeof(*one));
	struct rm_run run = {0};
	struct rm_window w = {
	    .index = 1, .start_ns = t0, .stop_ns = t0 + 1000000000, .stop_reason = "duration"};
	char path[512], err[512], *buf;
	size_t len;
	double wire = 0;
	FILE *devnull;

	w.nodes = calloc((size_t)s->nodes, sizeof(*w.nodes));
	if (!one || !w.nodes)
		return -1;
	if (s->store && !(run.store = rm_store_open(dir, err, sizeof(err))))
		return bt_log("%s", err), -1;
	t = ra_monotonic_ns();
	for (long n = 0; n < s->nodes; n++) {
		char host[64];

		snprintf(host, sizeof(host), "node%05ld", n);
		for (long k = 0; k < s->targets; k++)
			fake_target(&one[k], n, k, t0);
		len = rn_pack(host, one, (size_t)s->targets, NULL, 0);
		buf = malloc(len);
		if (!buf)
			return -1;
		rn_pack(host, one, (size_t)s->targets, buf, len);
		wire += (double)len;
		/* As rank 0 takes a node in, with a clock offset to correct (1.5 us). */
		if (rm_take_node(buf, len, 1500, &w.nodes[n]))
			return -1;
		w.nodes[n].clock_known = true;
		free(buf);
		if (run.store && rm_store_put(run.store, &w.nodes[n], err, sizeof(err)))
			return bt_log("%s", err), -1;
	}
	s->unpack_ms = ms_since(t);
	t = ra_monotonic_ns();
	for (long n = 0; n < s->nodes; n++) {
		char host[64];
		double b;

		snprintf(host, sizeof(host), "node%05ld", n);
		for (long k = 0; k < s->targets; k++)
			fake_target(&one[k], n, k, t0);
		if ((b = cut_bytes(host, one, s->targets, t0)) < 0)
			return bt_log("the cut on node %ld failed", n), -1;
		s->wire_cut_mb += b / 1e6;
	}
	s->cut_ms = ms_since(t);
	s->store_mb = (double)rm_store_bytes(run.store) / 1e6;
	w.n_nodes = (size_t)s->nodes;
	run.w = &w;
	run.n_w = 1;
	run.cfg.windows = 1;
	run.cfg.duration_ms = 1000;
	run.cfg.ranks = (int)s->nodes;
	run.started_ns = t0 - 3000000000ull;
	run.ended_ns = t0 + 2000000000ull;
	run.exit_reason = "ok";
	run.stop_reason = "completed";
	snprintf(path, sizeof(path), "%s/report.json", dir);
	if (timed(rm_write_report, &run, RM_DETAIL_AUTO, path, &s->report_ms, &s->json_mb) ||
	    timed(rm_write_report, &run, RM_DETAIL_ALL, path, &s->report_all_ms, &s->json_all_mb))
		return -1;
	run.cfg.detail = RM_DETAIL_AUTO;
	snprintf(s->level, sizeof(s->level), "%s", rm_detail_name(rm_detail_of(&run, NULL, 0)));
	devnull = fopen("/dev/null", "w");
	t = ra_monotonic_ns();
	rm_print_summary(devnull, &run);
	s->summary_ms = ms_since(t);
	fclose(devnull);
	s->summary_lines = lines_of_summary(&run);
	snprintf(path, sizeof(path), "%s/timeline.svg", dir);
	if (timed(rm_write_timeline, &run, RM_DETAIL_AUTO, path, &s->timeline_ms, &s->svg_kb))
		return -1;
	s->svg_kb *= 1000;
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	if (timed(rm_write_trace, &run, RM_DETAIL_AUTO, path, &s->trace_ms, &s->trace_mb) ||
	    timed(rm_write_trace, &run, RM_DETAIL_ALL, path, &s->trace_all_ms, &s->trace_all_mb))
		return -1;
	s->wire_mb = wire / 1e6;
	{
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		s->peak_mb = (double)ru.ru_maxrss / 1024.0;
	}
	s->ok = true;
	return write(fd, s, sizeof(*s)) == (ssize_t)sizeof(*s) ? 0 : -1;
}

static void run_size(struct size_run *s, const char *dir)
{
	int p[2], st = 0;
	pid_t pid;

	if (pipe(p))
		return;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		_exit(measure(s, dir, p[1]) ? 1 : 0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], s, sizeof(*s)) != (ssize_t)sizeof(*s))
		s->ok = false;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
}

int main(int argc, char **argv)
{
	struct size_run s[MAX_SIZES] = {{100, 128}, {1000, 128}, {10000, 128}};
	int ns = 3;
	struct bt_results res;
	struct bt_common com;
	char dir[256];

	bt_init();
	argc = bt_parse_common(argc, argv, &com);
	if (com.quick) { /* the size of issue 24's figures: 1,000 nodes */
		s[0] = s[1];
		ns = 1;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
			char *p = argv[++i], *end;

			for (ns = 0; *p && ns < MAX_SIZES; p = *end ? end + 1 : end) {
				s[ns].nodes = strtol(p, &end, 10);
				s[ns].targets = *end == 'x' ? strtol(end + 1, &end, 10) : 128;
				ns++;
			}
		} else {
			return fprintf(stderr,
				       "usage: %s [--json PATH] [--quick] [--sizes NxT,...]\n",
				       argv[0]),
			       2;
		}
	}
	if (bt_mkdtemp("/tmp", dir, sizeof(dir)))
		return 1;
	bt_results_init(&res, "rank0");
	for (int i = 0; i < ns; i++) {
		struct size_run mem = s[i];
		char id[64], fig[160];
		json_t *row;

		s[i].store = true;
		run_size(&s[i], dir);
		run_size(&mem, dir);
		snprintf(id, sizeof(id), "rank0.%ldx%ld", s[i].nodes, s[i].targets);
		snprintf(fig, sizeof(fig),
			 "rank 0 peak memory, %ld nodes x %ld targets, one window (records in the "
			 "store)",
			 s[i].nodes, s[i].targets);
		if (!s[i].ok || !mem.ok) {
			bt_row_na(&res, id, fig, "the run failed (out of memory?)");
			continue;
		}
		bt_log("%ld x %ld: unpack+store %.0f ms, report (--detail %s) %.0f ms (%.2f MB), "
		       "all %.0f ms (%.1f MB), summary %.0f ms (%ld lines), timeline %.0f ms (%.0f "
		       "KB), trace (%s) %.0f ms (%.2f MB), all %.0f ms (%.1f MB), wire %.1f MB, "
		       "store %.1f MB, peak %.1f MB; in memory: peak %.1f MB, report %.0f ms",
		       s[i].nodes, s[i].targets, s[i].unpack_ms, s[i].level, s[i].report_ms,
		       s[i].json_mb, s[i].report_all_ms, s[i].json_all_mb, s[i].summary_ms,
		       s[i].summary_lines, s[i].timeline_ms, s[i].svg_kb, s[i].level, s[i].trace_ms,
		       s[i].trace_mb, s[i].trace_all_ms, s[i].trace_all_mb, s[i].wire_mb,
		       s[i].store_mb, s[i].peak_mb, mem.peak_mb, mem.report_ms);
		row = bt_row(&res, id, fig, s[i].peak_mb, "MB", mem.peak_mb,
			     "every target's record in memory (rank 0 before the store), same run",
			     NULL, 0, false);
		bt_row_note(
		    row,
		    "unpack+store %.0f ms; default --detail %s: JSON report %.0f ms (%.2f "
		    "MB), trace %.0f ms (%.2f MB); --detail all: report %.0f ms (%.1f MB), "
		    "trace %.0f ms (%.1f MB); summary %.0f ms (%ld lines), SVG timeline %.0f "
		    "ms (%.0f KB); %.1f MB on the wire, %.1f MB in the store file; in "
		    "memory: report %.0f ms",
		    s[i].unpack_ms, s[i].level, s[i].report_ms, s[i].json_mb, s[i].trace_ms,
		    s[i].trace_mb, s[i].report_all_ms, s[i].json_all_mb, s[i].trace_all_ms,
		    s[i].trace_all_mb, s[i].summary_ms, s[i].summary_lines, s[i].timeline_ms,
		    s[i].svg_kb, s[i].wire_mb, s[i].store_mb, mem.report_ms);
		snprintf(id, sizeof(id), "rank0.trace.%ldx%ld", s[i].nodes, s[i].targets);
		snprintf(fig, sizeof(fig), "trace size, %ld x %ld, --detail %s (the default)",
			 s[i].nodes, s[i].targets, s[i].level);
		row = bt_row(&res, id, fig, s[i].trace_mb, "MB", s[i].trace_all_mb,
			     "--detail all (a track per target), same run", NULL, 0, false);
		bt_row_note(row, "written in %.0f ms; --detail all in %.0f ms", s[i].trace_ms,
			    s[i].trace_all_ms);
		snprintf(id, sizeof(id), "rank0.wire.%ldx%ld", s[i].nodes, s[i].targets);
		snprintf(fig, sizeof(fig),
			 "records on the wire, %ld x %ld, one window, --detail failures (cut on "
			 "each node, one failed target a node)",
			 s[i].nodes, s[i].targets);
		row = bt_row(&res, id, fig, s[i].wire_cut_mb, "MB", s[i].wire_mb,
			     "--detail all (every record), same run", NULL, 0, false);
		bt_row_note(row,
			    "rn_pack bytes plus the nodes' blocks (%zu B each), no record head; "
			    "%.1fx less; the cut and rank 0's take of it: %.0f ms for all nodes",
			    sizeof(struct rm_node_sum), s[i].wire_mb / s[i].wire_cut_mb,
			    s[i].cut_ms);
	}
	rmdir(dir);
	return bt_results_write(&res, com.json) ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * 6. Coordination cost against node count: rocattach-mpi under mpirun with R
 * ranks (oversubscribed), each acting as its own node (--one-node-per-rank)
 * in its own PID namespace holding one example target, so every "node" sees
 * and attaches only its own process. MPI runs over TCP (self,tcp), as
 * between real nodes (and Open MPI's shared-memory transport does not work
 * across PID namespaces).
 *
 *   bench_coord [--json PATH] [--quick] [--ranks 16,64,128]
 *
 * Sizes 16, 64 and 128 ranks (--quick: 16 and 64). From the report of
 * WINDOWS windows (--windows 0:300:N, so no delay, and --start-lead 0, so the
 * start is not hidden by a lead; medians over the windows):
 *   setup  time to the first window: from the launcher's start (after
 *          MPI_Init and the option check) to window 1's start time
 *   start  from the start time rank 0 broadcasts to the last node's first
 *          attach call: the broadcast and every node's wake-up
 *   gap    per-window coordination: window w+1's start time - window w's
 *          stop time, everything between two windows (detach, records,
 *          clocks, orders)
 *   msgs   rank 0's messages and bytes per window, from each window's
 *          "coordination" object (the tree's launcher writes it; before the
 *          tree it is absent and the rows say so, null, never 0)
 *   stop   from the stop time to the last node's first detach call (the stop
 *          is decided 100 ms ahead, so this is negative when on time)
 *   gather from the last detach's end to the end of the run
 *   wall   mpirun's wall time minus the windows' lengths (from the report)
 * Baselines on the same ranks, same transport (mpi_floor.c): an 8-byte
 * MPI_Bcast's lateness, an MPI_Gather of one node's record size, rank 0's
 * point-to-point fan-out and a ping-pong (for the model, model_coord.c), and
 * the wall time of mpirun running that program.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "node.h"

#define MAX_R 8
#define WINDOW_MS 300
#define WINDOWS 5 /* windows per run: each gives a start and a stop, 4 gaps */
/* 128 ranks on 2 CPUs took 24 s before the tree (16 s of it not windows). */
#define RUN_TIMEOUT_S 300
#define MAX_W 64	 /* windows read from a report */
#define TARGET_RANKS 128 /* the targets are set at this size */
#define NO_COORD "not in the report: launcher before the tree"

/*
 * One rank: PID 1 of a fresh PID namespace (the namespace's reaper), with
 * the target and the launcher as its children: the launcher never selects
 * its ancestors or descendants, and sees only this namespace's processes.
 */
static const char rank_script[] =
    "t=$1 a=$2; shift 2\n"
    "ROCP_TOOL_ATTACH=1 LD_PRELOAD=$a \"$t\" --threads 0 </dev/null >/dev/null 2>&1 &\n"
    "i=0\n"
    "while ! grep -qs rocp-bg-attach /proc/$!/task/*/comm && [ $i -lt 2000 ]; do\n"
    "	sleep 0.005; i=$((i+1))\n"
    "done\n"
    "\"$@\"\n";

/* Rank 0's share of a window's coordination, medians over the windows. */
struct coord {
	bool known;
	double sent, received, bytes_sent, bytes_received;
	int fanout, height;
	size_t windows; /* windows that had the object */
};

struct run {
	int ranks;
	bool ok;
	int windows;
	double wall_ms, start_ms, stop_ms, gather_ms, setup_ms, windows_ms;
	double start_max_ms, stop_max_ms; /* start_ms, stop_ms: medians over the windows */
	double gap_ms, gap_max_ms;	  /* window w+1's start - window w's stop */
	double order_ms, order_max_ms;	  /* the orders' delivery to every node */
	size_t order_windows;		  /* windows whose nodes all had order_received_ns */
	double floor_wall_ms, floor_bcast_ms, floor_gather_ms, floor_fanout_ms, floor_pingpong_ms;
	double floor_p2p_ms; /* taken out of floor_wall_ms */
	double json_bytes_per_node;
	int attached;
	struct coord co;
};

/* Run argv with stdout+stderr to out_path; its wall time in ms, or NAN on failure/timeout. */
static double run_timed(const char *const *argv, const char *out_path, int *code)
{
	uint64_t t0 = bt_mono_ns();
	int status = 0;
	pid_t pid, w = 0;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		FILE *f = freopen(out_path, "w", stdout);

		(void)f;
		dup2(STDOUT_FILENO, STDERR_FILENO);
		setpgid(0, 0);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0)
		return NAN;
	for (int i = 0; i < RUN_TIMEOUT_S * 100; i++) {
		w = waitpid(pid, &status, WNOHANG);
		if (w)
			break;
		bt_sleep_ns(10000000);
	}
	if (!w) {
		bt_log("%s timed out after %d s: killed", argv[0], RUN_TIMEOUT_S);
		kill(-pid, SIGKILL);
		waitpid(pid, &status, 0);
		return NAN;
	}
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return (double)(bt_mono_ns() - t0) / 1e6;
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Latest first attach and first detach over the nodes of one window (ns). */
static void window_edges(json_t *w, double *attach, double *detach, double *end)
{
	json_t *node, *t;
	size_t i, k;

	*attach = *detach = *end = 0;
	json_array_foreach (json_object_get(w, "nodes"), i, node) {
		double fa = 0, fd = 0;

		json_array_foreach (json_object_get(node, "targets"), k, t) {
			double a = num(json_object_get(t, "attach"), "start_ns");
			double d = num(json_object_get(t, "detach"), "start_ns");
			double e = num(json_object_get(t, "detach"), "end_ns");

			if (!isnan(a) && (!fa || a < fa))
				fa = a;
			if (!isnan(d) && (!fd || d < fd))
				fd = d;
			if (!isnan(e) && e > *end)
				*end = e;
		}
		if (fa > *attach)
			*attach = fa;
		if (fd > *detach)
			*detach = fd;
	}
}

/*
 * The orders' delivery in one window (ms): the last node's order_received_ns
 * minus the first's (rank 0's own: when it sent them). NAN when a node has
 * none (a launcher before the field, a lost node).
 */
static double window_orders(json_t *w)
{
	double lo = NAN, hi = NAN;
	json_t *node;
	size_t i;

	json_array_foreach (json_object_get(w, "nodes"), i, node) {
		double o = num(node, "order_received_ns");

		if (isnan(o))
			return NAN;
		lo = isnan(lo) || o < lo ? o : lo;
		hi = isnan(hi) || o > hi ? o : hi;
	}
	return (hi - lo) / 1e6;
}

/*
 * Rank 0's messages and bytes per window from each window's "coordination"
 * (medians over the windows that have it). Absent: not known, never 0.
 */
static void parse_coord(json_t *wins, struct coord *co)
{
	double sent[MAX_W], recv[MAX_W], bs[MAX_W], br[MAX_W];
	json_t *w, *o;
	size_t i, n = 0;

	memset(co, 0, sizeof(*co));
	json_array_foreach (wins, i, w) {
		o = json_object_get(w, "coordination");
		if (n == MAX_W || !json_is_object(o))
			continue;
		sent[n] = num(o, "messages_sent");
		recv[n] = num(o, "messages_received");
		bs[n] = num(o, "bytes_sent");
		br[n] = num(o, "bytes_received");
		co->fanout = (int)json_integer_value(json_object_get(o, "fanout"));
		co->height = (int)json_integer_value(json_object_get(o, "height"));
		n++;
	}
	co->windows = n;
	co->known = n > 0;
	co->sent = n ? bt_pct(sent, n, 0.5) : NAN;
	co->received = n ? bt_pct(recv, n, 0.5) : NAN;
	co->bytes_sent = n ? bt_pct(bs, n, 0.5) : NAN;
	co->bytes_received = n ? bt_pct(br, n, 0.5) : NAN;
}

/* Per window: start, stop lateness and the gap before the next window (ms). */
static size_t parse_windows(json_t *wins, struct run *r)
{
	double start[MAX_W], stop[MAX_W], gap[MAX_W], ord[MAX_W], a, d, e, prev_stop = NAN;
	json_t *w;
	size_t i, nw = 0, ng = 0, no = 0;

	r->windows_ms = 0;
	json_array_foreach (wins, i, w) {
		double t0 = num(w, "start_ns"), t1 = num(w, "stop_ns");

		if (nw == MAX_W)
			break;
		window_edges(w, &a, &d, &e);
		ord[no] = window_orders(w);
		no += !isnan(ord[no]);
		start[nw] = a ? (a - t0) / 1e6 : NAN;
		stop[nw++] = d ? (d - t1) / 1e6 : NAN;
		r->windows_ms += (t1 - t0) / 1e6;
		if (!isnan(prev_stop) && !isnan(t0))
			gap[ng++] = (t0 - prev_stop) / 1e6;
		prev_stop = t1;
	}
	r->windows = (int)nw;
	r->start_max_ms = bt_max(start, nw);
	r->stop_max_ms = bt_max(stop, nw);
	r->start_ms = bt_pct(start, nw, 0.5);
	r->stop_ms = bt_pct(stop, nw, 0.5);
	r->gap_max_ms = ng ? bt_max(gap, ng) : NAN;
	r->gap_ms = ng ? bt_pct(gap, ng, 0.5) : NAN;
	r->order_windows = no;
	r->order_ms = no ? bt_pct(ord, no, 0.5) : NAN;
	r->order_max_ms = no ? bt_max(ord, no) : NAN;
	return nw;
}

/* Phase times from the report (medians and maxima over its windows); 0 or -1. */
static int parse_report(const char *path, struct run *r)
{
	json_t *rep = json_load_file(path, 0, NULL), *w, *node, *t, *wins;
	double a, d, e = 0, json_bytes = 0;
	size_t i, k;

	wins = rep ? json_object_get(rep, "windows") : NULL;
	if (!json_array_size(wins)) {
		json_decref(rep);
		return -1;
	}
	parse_windows(wins, r);
	parse_coord(wins, &r->co);
	/* The last window's records and the end of the run. */
	w = json_array_get(wins, json_array_size(wins) - 1);
	window_edges(w, &a, &d, &e);
	r->gather_ms = e ? (num(rep, "ended_ns") - e) / 1e6 : NAN;
	r->setup_ms = (num(json_array_get(wins, 0), "start_ns") - num(rep, "started_ns")) / 1e6;
	json_array_foreach (json_object_get(w, "nodes"), i, node) {
		char *s = json_dumps(node, JSON_COMPACT);

		json_bytes += s ? (double)strlen(s) : 0;
		free(s);
		json_array_foreach (json_object_get(node, "targets"), k, t)
			r->attached += !strcmp(json_string_value(json_object_get(t, "state"))
						   ? json_string_value(json_object_get(t, "state"))
						   : "",
					       "detached");
	}
	r->json_bytes_per_node =
	    json_array_size(json_object_get(w, "nodes"))
		? json_bytes / (double)json_array_size(json_object_get(w, "nodes"))
		: NAN;
	json_decref(rep);
	return 0;
}

static void run_floor(struct run *r, const char *dir, size_t bytes)
{
	char np[16], nb[32], out[512], line[512];
	const char *argv[] = {BT_MPIRUN, "-np", np, "--bind-to", "none", BT_MPI_FLOOR, nb, NULL};
	FILE *f;
	int code = -1;
	json_t *j;

	snprintf(np, sizeof(np), "%d", r->ranks);
	snprintf(nb, sizeof(nb), "%zu", bytes);
	snprintf(out, sizeof(out), "%s/floor-%d.out", dir, r->ranks);
	r->floor_wall_ms = run_timed(argv, out, &code);
	r->floor_bcast_ms = r->floor_gather_ms = r->floor_fanout_ms = r->floor_pingpong_ms = NAN;
	r->floor_p2p_ms = NAN;
	f = fopen(out, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (line[0] != '{' || !(j = json_loads(line, 0, NULL)))
			continue;
		r->floor_bcast_ms = num(j, "bcast_us") / 1e3;
		r->floor_gather_ms = num(j, "gather_us") / 1e3;
		r->floor_fanout_ms = num(j, "fanout_us") / 1e3;
		r->floor_pingpong_ms = num(j, "pingpong_us") / 1e3;
		r->floor_p2p_ms = num(j, "p2p_ms");
		json_decref(j);
	}
	if (f)
		fclose(f);
	unlink(out);
	/* The bcast+gather program's wall: without the part the model's figures took. */
	r->floor_wall_ms = code ? NAN : r->floor_wall_ms - r->floor_p2p_ms;
}

/*
 * Stop lateness over many windows: per window, how long after the stop time
 * the last target handed back (tool_detach, our agent's measured time), and
 * how late the last detach call went out (negative: ahead, as planned).
 */
#define STOP_WINDOWS 50
#define STOP_WINDOW_MS 100
struct stops {
	int ranks;
	bool ok;
	size_t n;
	double late[STOP_WINDOWS], call[STOP_WINDOWS];
};

static int parse_stops(const char *path, struct stops *s)
{
	json_t *rep = json_load_file(path, 0, NULL), *w, *node, *t;
	size_t i, j, k;

	s->n = 0;
	json_array_foreach (rep ? json_object_get(rep, "windows") : NULL, i, w) {
		double stop = num(w, "stop_ns"), late = -INFINITY, call = -INFINITY;

		if (s->n == STOP_WINDOWS)
			break;
		json_array_foreach (json_object_get(w, "nodes"), j, node)
			json_array_foreach (json_object_get(node, "targets"), k, t) {
				json_t *d = json_object_get(t, "detach");
				double tool = num(d, "tool_ns"), st = num(d, "start_ns");

				if (!isnan(tool) && tool - stop > late)
					late = tool - stop;
				if (!isnan(st) && st - stop > call)
					call = st - stop;
			}
		if (isinf(late))
			continue;
		s->late[s->n] = late / 1e6;
		s->call[s->n++] = call / 1e6;
	}
	json_decref(rep);
	return s->n ? 0 : -1;
}

static double run_launcher_argv(int ranks, const char *dir, const char *windows, const char *report,
				const char *out, int *code)
{
	char np[16], env_out[300];
	const char *argv[] = {BT_MPIRUN,
			      "-np",
			      np,
			      "--bind-to",
			      "none",
			      "-x",
			      env_out,
			      "unshare",
			      "--pid",
			      "--fork",
			      "--mount-proc",
			      "/bin/sh",
			      "-c",
			      rank_script,
			      "sh",
			      BT_EXAMPLE_TARGET,
			      BT_AGENT,
			      BT_LAUNCHER,
			      "--one-node-per-rank",
			      "--exe",
			      "rocattach-example-target",
			      "-t",
			      BT_TOOL,
			      "--windows",
			      windows,
			      "--start-lead",
			      "0",
			      "--report",
			      report,
			      NULL};

	snprintf(np, sizeof(np), "%d", ranks);
	snprintf(env_out, sizeof(env_out), "ROCPROF_OUTPUT_PATH=%s/tool", dir);
	return run_timed(argv, out, code);
}

static void run_stops(struct stops *s, const char *dir)
{
	char windows[32], report[400], out[400];
	int code = -1;

	snprintf(windows, sizeof(windows), "0:%d:%d", STOP_WINDOW_MS, STOP_WINDOWS);
	snprintf(report, sizeof(report), "%s/report-stops.json", dir);
	snprintf(out, sizeof(out), "%s/launcher-stops.out", dir);
	run_launcher_argv(s->ranks, dir, windows, report, out, &code);
	s->ok = !code && !parse_stops(report, s);
	if (!s->ok)
		bt_log("stop lateness run failed (exit %d): see %s", code, out);
	unlink(report);
	if (s->ok)
		unlink(out);
}

static void add_stop_rows(struct bt_results *res, struct stops *s, double floor_bcast_ms)
{
	json_t *row;
	double p50, p99, mx, c99;

	if (!s->ok) {
		bt_row_na(res, "coord.stop_late", "stop lateness", "the launcher run failed");
		return;
	}
	mx = bt_max(s->late, s->n);
	p50 = bt_pct(s->late, s->n, 0.5);
	p99 = bt_pct(s->late, s->n, 0.99);
	c99 = bt_pct(s->call, s->n, 0.99);
	row = bt_row(res, "coord.stop_late.p99",
		     "stop lateness p99 (last tool_detach after the "
		     "stop time), one node, per window",
		     p99, "ms", floor_bcast_ms, "MPI_Bcast 8 B lateness, same ranks (median)",
		     "<=", 5.0, false);
	bt_row_note(row,
		    "%zu windows of %d ms on %d ranks: p50 %.3f ms, max %.3f ms; the last "
		    "detach call went out %.1f ms before the stop (p99 of the latest)",
		    s->n, STOP_WINDOW_MS, s->ranks, p50, mx, -c99);
	json_object_set_new(res->details, "stop_late_ms",
			    json_pack("{s:f, s:f, s:f, s:i}", "p50", p50, "p99", p99, "max", mx,
				      "windows", (int)s->n));
}

static void run_launcher(struct run *r, const char *dir)
{
	char report[400], out[400], windows[32];
	int code = -1;

	snprintf(windows, sizeof(windows), "0:%d:%d", WINDOW_MS, WINDOWS);
	snprintf(report, sizeof(report), "%s/report-%d.json", dir, r->ranks);
	snprintf(out, sizeof(out), "%s/launcher-%d.out", dir, r->ranks);
	r->wall_ms = run_launcher_argv(r->ranks, dir, windows, report, out, &code);
	if (code || parse_report(report, r)) {
		bt_log("%d ranks: the launcher run failed (exit %d); its output:", r->ranks, code);
		fflush(stderr);
		if (fork() == 0) {
			execlp("tail", "tail", "-n", "15", out, (char *)NULL);
			_exit(127);
		}
		wait(NULL);
		return;
	}
	r->ok = true;
	unlink(report);
	unlink(out);
}

/* Bytes of one node's packed records, as rank 0 gathers them, for n targets. */
static size_t wire_bytes(size_t n)
{
	struct rn_target *t = calloc(n, sizeof(*t));
	size_t len = rn_pack("node0001", t, n, NULL, 0);

	free(t);
	return len;
}

static json_t *jnum(double x)
{
	return isnan(x) || isinf(x) ? json_null() : json_real(x);
}

/* One run's figures for the details (and model_coord): null for an unknown. */
static json_t *run_json(const struct run *r)
{
	json_t *o = json_object(), *co = json_object();

	json_object_set_new(o, "ranks", json_integer(r->ranks));
	json_object_set_new(o, "ok", json_boolean(r->ok));
	json_object_set_new(o, "windows", json_integer(r->windows));
	json_object_set_new(o, "targets_detached", json_integer(r->attached));
	json_object_set_new(o, "wall_ms", jnum(r->wall_ms));
	json_object_set_new(o, "windows_ms", jnum(r->windows_ms));
	json_object_set_new(o, "setup_ms", jnum(r->setup_ms));
	json_object_set_new(o, "start_ms", jnum(r->start_ms));
	json_object_set_new(o, "start_max_ms", jnum(r->start_max_ms));
	json_object_set_new(o, "orders_ms", jnum(r->order_ms));
	json_object_set_new(o, "orders_max_ms", jnum(r->order_max_ms));
	json_object_set_new(o, "gap_ms", jnum(r->gap_ms));
	json_object_set_new(o, "gap_max_ms", jnum(r->gap_max_ms));
	json_object_set_new(o, "stop_late_ms", jnum(r->stop_ms));
	json_object_set_new(o, "stop_late_max_ms", jnum(r->stop_max_ms));
	json_object_set_new(o, "gather_ms", jnum(r->gather_ms));
	json_object_set_new(o, "floor_wall_ms", jnum(r->floor_wall_ms));
	json_object_set_new(o, "floor_bcast_ms", jnum(r->floor_bcast_ms));
	json_object_set_new(o, "floor_gather_ms", jnum(r->floor_gather_ms));
	json_object_set_new(o, "floor_fanout_ms", jnum(r->floor_fanout_ms));
	json_object_set_new(o, "floor_pingpong_ms", jnum(r->floor_pingpong_ms));
	json_object_set_new(o, "floor_p2p_ms", jnum(r->floor_p2p_ms));
	json_object_set_new(o, "json_bytes_per_node", jnum(r->json_bytes_per_node));
	if (r->co.known) {
		json_object_set_new(co, "messages_sent", jnum(r->co.sent));
		json_object_set_new(co, "messages_received", jnum(r->co.received));
		json_object_set_new(co, "bytes_sent", jnum(r->co.bytes_sent));
		json_object_set_new(co, "bytes_received", jnum(r->co.bytes_received));
		json_object_set_new(co, "fanout", json_integer(r->co.fanout));
		json_object_set_new(co, "height", json_integer(r->co.height));
		json_object_set_new(co, "windows", json_integer((json_int_t)r->co.windows));
		json_object_set_new(o, "coordination", co);
	} else {
		json_decref(co);
		json_object_set_new(o, "coordination", json_null());
		json_object_set_new(o, "coordination_unknown", json_string(NO_COORD));
	}
	return o;
}

/* Rank 0's messages and bytes per window, against 2 x fanout; null before the tree. */
static void add_coord_rows(struct bt_results *res, const struct run *r)
{
	static const char *const dir[2] = {"sent", "received"};
	const double msgs[2] = {r->co.sent, r->co.received};
	const double bytes[2] = {r->co.bytes_sent, r->co.bytes_received};
	char id[64], fig[128];
	json_t *row;

	for (int i = 0; i < 2; i++) {
		snprintf(id, sizeof(id), "coord.%d.msgs_%s", r->ranks, dir[i]);
		snprintf(fig, sizeof(fig), "rank 0's messages %s per window, %d nodes (median)",
			 dir[i], r->ranks);
		if (r->co.known) {
			row = bt_row(res, id, fig, msgs[i], "msgs", 2.0 * r->co.fanout,
				     "2 x fanout (the report's)", "<=", 2.0 * r->co.fanout, false);
			bt_row_note(row, "fanout %d, height %d; %zu of %d windows had the figures",
				    r->co.fanout, r->co.height, r->co.windows, r->windows);
		} else {
			bt_row_na(res, id, fig, NO_COORD);
		}
		snprintf(id, sizeof(id), "coord.%d.bytes_%s", r->ranks, dir[i]);
		snprintf(fig, sizeof(fig), "rank 0's bytes %s per window, %d nodes (median)",
			 dir[i], r->ranks);
		if (r->co.known)
			bt_row(res, id, fig, bytes[i], "B", NAN, NULL, NULL, 0, false);
		else
			bt_row_na(res, id, fig, NO_COORD);
	}
}

static void add_size_rows(struct bt_results *res, const struct run *r)
{
	bool t = r->ranks == TARGET_RANKS;
	char id[64], fig[128];
	json_t *row;

	snprintf(id, sizeof(id), "coord.%d.first", r->ranks);
	snprintf(fig, sizeof(fig), "time to the first window, %d nodes", r->ranks);
	bt_row(res, id, fig, r->setup_ms, "ms", r->floor_bcast_ms + r->floor_gather_ms,
	       "8-byte MPI_Bcast + MPI_Gather of one node's records, same ranks", NULL, 0, false);
	snprintf(id, sizeof(id), "coord.%d.start", r->ranks);
	snprintf(fig, sizeof(fig), "start barrier, %d nodes (median of %d windows)", r->ranks,
		 r->windows);
	if (t)
		row = bt_row_ratio(res, id, fig, r->start_ms, "ms", r->floor_bcast_ms,
				   "MPI_Bcast 8 B lateness, same ranks (median)", "<=", 2.0);
	else
		row = bt_row(res, id, fig, r->start_ms, "ms", r->floor_bcast_ms,
			     "MPI_Bcast 8 B lateness, same ranks (median)", NULL, 0, false);
	bt_row_note(row,
		    "max %.3f ms; stop lateness median %.3f max %.3f ms (the stop is "
		    "decided 100 ms ahead)",
		    r->start_max_ms, r->stop_ms, r->stop_max_ms);
	snprintf(id, sizeof(id), "coord.%d.orders", r->ranks);
	snprintf(fig, sizeof(fig), "orders delivered to every node, %d nodes (median)", r->ranks);
	if (r->order_windows) {
		row = bt_row(res, id, fig, r->order_ms, "ms", r->floor_bcast_ms,
			     "MPI_Bcast 8 B lateness, same ranks (median)", NULL, 0, false);
		bt_row_note(row,
			    "the last node's order_received_ns - rank 0's send, %zu windows, max "
			    "%.3f ms: the start barrier without the attaches",
			    r->order_windows, r->order_max_ms);
	} else {
		bt_row_na(res, id, fig,
			  "not in the report: launcher before order_received_ns, or a node lost");
	}
	snprintf(id, sizeof(id), "coord.%d.gap", r->ranks);
	snprintf(fig, sizeof(fig), "per-window coordination, %d nodes (median)", r->ranks);
	row = bt_row(res, id, fig, r->gap_ms, "ms", r->floor_gather_ms + r->floor_bcast_ms,
		     "MPI_Gather of one node's records + 8-byte MPI_Bcast, same ranks", NULL, 0,
		     false);
	bt_row_note(row,
		    "window w+1's start time - window w's stop time with --delay 0 "
		    "--start-lead 0, %d gaps, max %.1f ms: detach, records, clocks, orders",
		    r->windows - 1, r->gap_max_ms);
	add_coord_rows(res, r);
	snprintf(id, sizeof(id), "coord.%d.gather", r->ranks);
	snprintf(fig, sizeof(fig), "gather and end, %d nodes", r->ranks);
	bt_row(res, id, fig, r->gather_ms, "ms", r->floor_gather_ms,
	       "MPI_Gather of one node's records, same ranks", NULL, 0, false);
	snprintf(id, sizeof(id), "coord.%d.wall", r->ranks);
	snprintf(fig, sizeof(fig), "mpirun wall minus windows, %d nodes", r->ranks);
	if (t)
		row = bt_row_ratio(res, id, fig, r->wall_ms - r->windows_ms, "ms", r->floor_wall_ms,
				   "mpirun of a bcast+gather program, same ranks", "<=", 1.25);
	else
		row = bt_row(res, id, fig, r->wall_ms - r->windows_ms, "ms", r->floor_wall_ms,
			     "mpirun of a bcast+gather program, same ranks", NULL, 0, false);
	bt_row_note(row, "wall %.0f ms, %d windows of %.0f ms in all (the report's)", r->wall_ms,
		    r->windows, r->windows_ms);
}

static void add_rows(struct bt_results *res, struct run *r, int nr)
{
	json_t *arr = json_array(), *row;
	char id[64], fig[128];

	for (int i = 0; i < nr; i++) {
		json_array_append_new(arr, run_json(&r[i]));
		if (!r[i].ok) {
			snprintf(id, sizeof(id), "coord.%d", r[i].ranks);
			snprintf(fig, sizeof(fig), "coordination with %d nodes", r[i].ranks);
			bt_row_na(res, id, fig, "the launcher run failed (see the log)");
			continue;
		}
		add_size_rows(res, &r[i]);
	}
	row = bt_row(res, "coord.report_size", "report per node (1 target): JSON bytes",
		     nr && r[nr - 1].ok ? r[nr - 1].json_bytes_per_node : NAN, "B", NAN, NULL, NULL,
		     0, false);
	bt_row_note(row, "gathered wire form: %zu B per node with 1 target, +%zu B per target",
		    wire_bytes(1), wire_bytes(2) - wire_bytes(1));
	json_object_set_new(res->details, "runs", arr);
	json_object_set_new(res->details, "windows_per_run", json_integer(WINDOWS));
	json_object_set_new(res->details, "window_ms", json_integer(WINDOW_MS));
	json_object_set_new(res->details, "wire_bytes_1_target",
			    json_integer((json_int_t)wire_bytes(1)));
	json_object_set_new(res->details, "wire_bytes_per_target",
			    json_integer((json_int_t)(wire_bytes(2) - wire_bytes(1))));
	json_object_set_new(res->details, "wire_bytes_0_targets",
			    json_integer((json_int_t)wire_bytes(0)));
}

int main(int argc, char **argv)
{
	int ranks[MAX_R] = {16, 64, 128}, nr = 3, i;
	struct run r[MAX_R] = {0};
	struct stops stops = {0};
	struct bt_results res;
	struct bt_common com;
	char dir[256], tool[300];

	bt_init();
	argc = bt_parse_common(argc, argv, &com);
	if (com.quick)
		nr = 2;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
			char *p = argv[++i], *end;

			for (nr = 0; *p && nr < MAX_R; p = *end ? end + 1 : end) {
				ranks[nr++] = (int)strtol(p, &end, 10);
				if (ranks[nr - 1] < 2 || (*end && *end != ','))
					return fprintf(stderr,
						       "%s: --ranks takes sizes of 2 or more, "
						       "comma-separated (e.g. 16,64,128)\n",
						       argv[0]),
					       2;
			}
		} else {
			return fprintf(stderr,
				       "usage: %s [--json PATH] [--quick] [--ranks N,...] (default "
				       "16,64,128)\n",
				       argv[0]),
			       2;
		}
	}
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
	setenv("OMPI_MCA_btl", "self,tcp", 1);
	if (bt_mkdtemp("/tmp", dir, sizeof(dir)))
		return 1;
	snprintf(tool, sizeof(tool), "%s/tool", dir);
	for (int k = 0; k < nr; k++) {
		r[k].ranks = ranks[k];
		run_launcher(&r[k], dir);
		run_floor(&r[k], dir, wire_bytes(1));
		bt_log("%d nodes: start %.3f ms, gap %.1f ms, stop late %.3f ms, gather %.3f ms, "
		       "setup %.1f ms, wall %.0f ms (floor %.0f ms)",
		       r[k].ranks, r[k].start_ms, r[k].gap_ms, r[k].stop_ms, r[k].gather_ms,
		       r[k].setup_ms, r[k].wall_ms, r[k].floor_wall_ms);
	}
	stops.ranks = 2;
	run_stops(&stops, dir);
	if (stops.ok)
		bt_log("stop lateness over %zu windows: p50 %.3f ms, p99 %.3f ms, max %.3f ms",
		       stops.n, bt_pct(stops.late, stops.n, 0.5), bt_pct(stops.late, stops.n, 0.99),
		       bt_max(stops.late, stops.n));
	bt_results_init(&res, "coord");
	add_rows(&res, r, nr);
	add_stop_rows(&res, &stops, r[0].floor_bcast_ms);
	bt_rmdir_files(tool);
	rmdir(dir);
	return bt_results_write(&res, com.json) ? 1 : 0;
}

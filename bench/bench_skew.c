/* SPDX-License-Identifier: MIT */
/*
 * 5. Window skew: the spread between the earliest and the latest tool_attach
 * (and tool_detach) over every target, from the example tool's own records
 * (CLOCK_REALTIME ns per call, one file per process).
 *
 *   bench_skew [--json PATH] [--quick] [--targets N]
 *       one node: rocattach-mpi (singleton) over N example targets for a 1 s
 *       window; the baseline is the same run the ROCm way (--jobs 1
 *       --start-lead 0: one attach after another, tool_attach as each arrives).
 *       Then the same N targets carrying ROCm's target side (the test double
 *       tests/rocm/, tool_attach inside the attach call): start spread, and
 *       for both sides the window length error (each target's tools' window
 *       by its own clock against the 1000 ms planned).
 *   bench_skew --json PATH --from-logs WHERE DIR REPORT BASE_DIR BASE_REPORT
 *       the same figures from runs made elsewhere (bench/cluster_skew.sh)
 *   bench_skew --json PATH --not-available WHY
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define WINDOW_MS 1000.0
#define FLOOR_CHUNK 4096 /* as examples/targets/busy_target.c's CHUNK */

struct spread {
	size_t n_attach, n_detach;
	double attach_ms, detach_ms;
	double len_err_ms; /* max |tool_detach - tool_attach - 1000 ms| over the targets */
	double report_attach_ms, report_detach_ms; /* the launcher's own figures, NAN if none */
};

static void minmax(uint64_t v, uint64_t *lo, uint64_t *hi, size_t *n)
{
	if (!*n || v < *lo)
		*lo = v;
	if (!*n || v > *hi)
		*hi = v;
	(*n)++;
}

/* Spread of tool_attach and tool_detach over every rocattach-tool.*.log in dir. */
static int tool_spread(const char *dir, struct spread *s)
{
	uint64_t alo = 0, ahi = 0, dlo = 0, dhi = 0;
	char path[4096], line[1024];
	struct dirent *d;
	DIR *dp = opendir(dir);

	if (!dp)
		return -1;
	s->n_attach = s->n_detach = 0;
	s->len_err_ms = NAN;
	while ((d = readdir(dp))) {
		uint64_t at = 0, dt = 0;
		FILE *f;

		if (strncmp(d->d_name, "rocattach-tool.", 15))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			char *ns = strstr(line, " ns=");
			uint64_t v = ns ? strtoull(ns + 4, NULL, 10) : 0;

			if (!strncmp(line, "tool_attach ", 12))
				minmax(at = v, &alo, &ahi, &s->n_attach);
			else if (!strncmp(line, "tool_detach ", 12))
				minmax(dt = v, &dlo, &dhi, &s->n_detach);
		}
		if (f)
			fclose(f);
		if (at && dt >= at) {
			double err = fabs((double)(dt - at) / 1e6 - WINDOW_MS);

			if (isnan(s->len_err_ms) || err > s->len_err_ms)
				s->len_err_ms = err;
		}
	}
	closedir(dp);
	s->attach_ms = s->n_attach ? (double)(ahi - alo) / 1e6 : NAN;
	s->detach_ms = s->n_detach ? (double)(dhi - dlo) / 1e6 : NAN;
	return 0;
}

static void report_skew(const char *path, struct spread *s)
{
	json_t *r = json_load_file(path, 0, NULL), *sk;

	s->report_attach_ms = s->report_detach_ms = NAN;
	sk = r ? json_object_get(json_array_get(json_object_get(r, "windows"), 0), "skew") : NULL;
	if (sk) {
		s->report_attach_ms = json_number_value(json_object_get(sk, "attach_ns")) / 1e6;
		s->report_detach_ms = json_number_value(json_object_get(sk, "detach_ns")) / 1e6;
	}
	json_decref(r);
}

static void add_rows(struct bt_results *res, const char *label, const char *where,
		     const struct spread *s, const struct spread *b)
{
	char id[64], fig[160];
	json_t *row;

	snprintf(id, sizeof(id), "skew.%s.attach", label);
	snprintf(fig, sizeof(fig), "tool_attach spread, %s", where);
	row = bt_row(res, id, fig, s->attach_ms, "ms", b->attach_ms,
		     "ROCm way: --jobs 1 --start-lead 0", "<=", 1.0, false);
	bt_row_note(row, "%zu targets on %ld CPUs; launcher's report: attach skew %.3f ms",
		    s->n_attach, sysconf(_SC_NPROCESSORS_ONLN), s->report_attach_ms);
	snprintf(id, sizeof(id), "skew.%s.detach", label);
	snprintf(fig, sizeof(fig), "tool_detach spread, %s", where);
	row = bt_row(res, id, fig, s->detach_ms, "ms", b->detach_ms,
		     "ROCm way: --jobs 1 --start-lead 0", NULL, 0, false);
	bt_row_note(row, "launcher's report: detach skew %.3f ms", s->report_detach_ms);
	json_object_set_new(res->details, label,
			    json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "targets",
				      (json_int_t)s->n_attach, "tool_attach_ms", s->attach_ms,
				      "tool_detach_ms", s->detach_ms, "report_attach_ms",
				      s->report_attach_ms, "report_detach_ms", s->report_detach_ms,
				      "baseline_tool_attach_ms", b->attach_ms,
				      "baseline_tool_detach_ms", b->detach_ms));
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static atomic_bool floor_done;
static _Atomic uint64_t floor_sink;

/* The example target's worker (--threads 1): a hash chain, then a 1 ms nap. */
static void *floor_spin(void *arg)
{
	const struct timespec nap = {0, 1000000};
	uint64_t h = (uintptr_t)arg + 1;

	while (!atomic_load_explicit(&floor_done, memory_order_relaxed)) {
		for (unsigned int i = 0; i < FLOOR_CHUNK; i++) {
			h ^= h >> 33;
			h *= 0xff51afd7ed558ccdULL;
			h += i;
		}
		atomic_store_explicit(&floor_sink, h, memory_order_relaxed);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

/*
 * The floor of a synchronized start on this machine, under the same load as
 * the targets: n processes, each with one worker thread doing what the
 * example target's does (a hash chain, then a 1 ms nap; --threads 1) and one thread asleep until
 * one common CLOCK_REALTIME instant (as our agent's starter threads sleep until the start time).
 * The spread of their wake-ups bounds from below what any in-process start can reach here; NAN if
 * it could not run.
 */
static double wake_floor_ms(size_t n)
{
	uint64_t *at =
	    mmap(NULL, sizeof(*at), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t lo = 0, hi = 0, v;
	size_t got = 0, ready = 0;
	int fd[2], go[2], up[2];
	char b;

	if (at == MAP_FAILED || pipe(fd) || pipe(go) || pipe(up))
		return NAN;
	for (size_t i = 0; i < n; i++) {
		if (fork() == 0) {
			struct timespec ts;
			pthread_t th;

			close(fd[0]);
			if (pthread_create(&th, NULL, floor_spin, NULL) ||
			    write(up[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
				_exit(1);
			ts.tv_sec = (time_t)(*at / 1000000000u);
			ts.tv_nsec = (long)(*at % 1000000000u);
			while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			v = realtime_ns();
			atomic_store(&floor_done, true);
			_exit(write(fd[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
		}
	}
	close(fd[1]);
	close(up[1]);
	/* Every process set up (its busy thread running) before the instant is set. */
	while (ready < n && read(up[0], &b, 1) == 1)
		ready++;
	*at = realtime_ns() + 200000000u;
	for (size_t i = 0; i < ready; i++)
		if (write(go[1], "g", 1) != 1)
			break;
	while (read(fd[0], &v, sizeof(v)) == sizeof(v)) {
		lo = !got || v < lo ? v : lo;
		hi = !got || v > hi ? v : hi;
		got++;
	}
	close(fd[0]);
	close(go[0]);
	close(go[1]);
	close(up[0]);
	while (wait(NULL) > 0)
		;
	munmap(at, sizeof(*at));
	return got == n ? (double)(hi - lo) / 1e6 : NAN;
}

/* One launcher run over pids; tool logs go to dir, the report to dir/../NAME.json. */
static int launch(const char *pids, const char *dir, const char *report, bool rocm_way)
{
	char env_out[640];
	const char *env[] = {env_out, NULL};
	const char *argv[] = {"/bin/sh",
			      "-c",
			      "exec \"$0\" \"$@\" 2>&1",
			      BT_LAUNCHER,
			      "--pid",
			      pids,
			      "-t",
			      BT_TOOL,
			      "-d",
			      "1000",
			      "--report",
			      report,
			      rocm_way ? "--jobs" : NULL,
			      "1",
			      "--start-lead",
			      "0",
			      NULL};
	const struct bt_spawn_opts o = {.env = env};
	struct bt_proc l;
	char line[512];
	int status;

	snprintf(env_out, sizeof(env_out), "ROCPROF_OUTPUT_PATH=%s", dir);
	if (bt_spawn(&l, argv, &o))
		return -1;
	while (!bt_readline(&l, line, sizeof(line), 60000))
		;
	waitpid(l.pid, &status, 0);
	l.pid = 0;
	bt_stop(&l);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		bt_log("launcher exited with status %d",
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -1;
	}
	return 0;
}

/* ROCm's side: the same targets with the double preloaded instead of our agent. */
static int rocm_side(size_t n, struct bt_results *res, const struct spread *ours)
{
	const char *args[] = {"--threads", "1", NULL};
	const char *env[] = {"LD_PRELOAD=" BT_ROCM_REGISTER, NULL};
	const struct bt_spawn_opts o = {.agent = true, .env = env};
	struct bt_proc *t = calloc(n, sizeof(*t));
	char base[256], dir[300], rep[300], *pids = calloc(n, 16);
	struct spread s;
	json_t *row;
	int ret = -1;

	if (access(BT_ROCM_REGISTER, R_OK)) {
		bt_row_na(res, "skew.rocm.attach", "tool_attach spread, one node, ROCm's side",
			  "the ROCm double is not built (configure with the tests)");
		free(t);
		free(pids);
		return 0;
	}
	if (!t || !pids || bt_mkdtemp("/tmp", base, sizeof(base)) ||
	    bt_start_targets_with(t, n, args, &o))
		goto out;
	for (size_t i = 0; i < n; i++)
		sprintf(pids + strlen(pids), "%s%d", i ? "," : "", (int)t[i].pid);
	snprintf(dir, sizeof(dir), "%s/rocm", base);
	snprintf(rep, sizeof(rep), "%s/report-rocm.json", base);
	if (launch(pids, dir, rep, false) || tool_spread(dir, &s))
		goto out_t;
	report_skew(rep, &s);
	row = bt_row(res, "skew.rocm.attach", "tool_attach spread, one node, ROCm's side",
		     s.attach_ms, "ms", ours->attach_ms, "our agent, same run", "<=", 2.0, false);
	bt_row_note(row, "%zu targets; launcher's report (from call bounds): %.3f ms", s.n_attach,
		    s.report_attach_ms);
	row = bt_row(res, "skew.rocm.detach", "tool_detach spread, one node, ROCm's side",
		     s.detach_ms, "ms", ours->detach_ms, "our agent, same run", NULL, 0, false);
	bt_row_note(row, "launcher's report (from call bounds): %.3f ms", s.report_detach_ms);
	bt_row(res, "window.rocm.error",
	       "tools' window length error, ROCm's side (max over targets)", s.len_err_ms, "ms",
	       ours->len_err_ms, "our agent, same run", "<=", 15.0, false);
	ret = 0;
out_t:
	bt_stop_targets(t, n);
	bt_rmdir_files(dir);
	unlink(rep);
	rmdir(base);
out:
	free(t);
	free(pids);
	return ret;
}

static int one_node(size_t n, struct bt_results *res)
{
	const char *args[] = {"--threads", "1", NULL};
	struct bt_proc *t = calloc(n, sizeof(*t));
	char base[256], dir[2][300], rep[2][300], *pids = calloc(n, 16);
	struct spread s[2];
	bool n_stopped = false;
	double floor_ms;
	json_t *row;
	int ret = -1;

	if (bt_mkdtemp("/tmp", base, sizeof(base)) || bt_start_targets(t, n, args, true))
		goto out;
	for (size_t i = 0; i < n; i++)
		sprintf(pids + strlen(pids), "%s%d", i ? "," : "", (int)t[i].pid);
	for (int k = 0; k < 2; k++) {
		snprintf(dir[k], sizeof(dir[k]), "%s/%s", base, k ? "rocm-way" : "ours");
		snprintf(rep[k], sizeof(rep[k]), "%s/report-%d.json", base, k);
		if (launch(pids, dir[k], rep[k], k == 1) || tool_spread(dir[k], &s[k]))
			goto out_t;
		report_skew(rep[k], &s[k]);
	}
	add_rows(res, "node", "one node", &s[0], &s[1]);
	bt_row(res, "window.agent.error",
	       "tools' window length error, our agent (max over targets)", s[0].len_err_ms, "ms",
	       s[1].len_err_ms, "ROCm way: --jobs 1 --start-lead 0", "<=", 15.0, false);
	ret = 0;
	bt_stop_targets(t, n);
	n_stopped = true;
	/* With the targets gone: the same load (n busy threads) as during the window. */
	floor_ms = wake_floor_ms(n);
	row = bt_row(res, "skew.node.floor", "wake-up spread floor, one node (no attach)", floor_ms,
		     "ms", s[0].attach_ms, "our agent's tool_attach spread, same run", NULL, 0,
		     false);
	bt_row_note(row,
		    "%zu processes, each with a worker like the targets' and a thread asleep "
		    "until one CLOCK_REALTIME instant: no in-process start spreads less here",
		    n);
	if (rocm_side(n, res, &s[0]))
		bt_row_na(res, "skew.rocm.attach", "tool_attach spread, one node, ROCm's side",
			  "the launcher run failed (see the log)");
out_t:
	if (!n_stopped)
		bt_stop_targets(t, n);
	for (int k = 0; k < 2; k++) {
		bt_rmdir_files(dir[k]);
		unlink(rep[k]);
	}
	rmdir(base);
out:
	free(t);
	free(pids);
	return ret;
}

int main(int argc, char **argv)
{
	struct bt_results res;
	struct bt_common com;
	size_t n = 32;
	int i;

	bt_init();
	argc = bt_parse_common(argc, argv, &com);
	i = 1;
	bt_results_init(&res, "skew");
	if (i + 1 == argc - 1 && !strcmp(argv[i], "--not-available")) {
		bt_row_na(&res, "skew.cluster.attach", "tool_attach spread, virtual cluster",
			  argv[i + 1]);
		return bt_results_write(&res, com.json) ? 1 : 0;
	}
	if (i + 5 == argc - 1 && !strcmp(argv[i], "--from-logs")) {
		struct spread s, b;
		char where[128];

		if (tool_spread(argv[i + 2], &s) || tool_spread(argv[i + 4], &b))
			return bt_log("cannot read the tool logs"), 1;
		report_skew(argv[i + 3], &s);
		report_skew(argv[i + 5], &b);
		snprintf(where, sizeof(where), "%s", argv[i + 1]);
		add_rows(&res, "cluster", where, &s, &b);
		return bt_results_write(&res, com.json) ? 1 : 0;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--targets") && i + 1 < argc)
			n = strtoul(argv[++i], NULL, 10);
		else
			return fprintf(stderr,
				       "usage: %s [--json PATH] [--quick] [--targets N]\n"
				       "       %s --json PATH --from-logs WHERE DIR REPORT "
				       "BASE_DIR BASE_REPORT\n"
				       "       %s --json PATH --not-available WHY\n",
				       argv[0], argv[0], argv[0]),
			       2;
	}
	if (one_node(n, &res))
		bt_row_na(&res, "skew.node.attach", "tool_attach spread, one node",
			  "the launcher run failed (see the log)");
	return bt_results_write(&res, com.json) ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * 4. Attacher CPU while a window is open: CPU time of rocattach-mpi (run as
 * an MPI singleton, with the orted it starts) while it holds N targets
 * attached, against an idle process (sleep) over the same interval.
 *
 *   bench_cpu [--json PATH] [--quick] [--counts 1,32,128] [--window-ms MS]
 *
 * CPU time is the sum of /proc/PID/task/TID/schedstat (nanoseconds on CPU)
 * over the launcher's process tree, sampled once the launcher reports every
 * target attached and again HOLD later, before the window's stop. ROCm's
 * attacher keeps one busy-polling thread per session, so its line is
 * N x 100% of a core.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define MAX_COUNTS 8
#define MARGIN_MS 700 /* between the end of sampling and the window's stop */

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Nanoseconds on CPU of every thread of pid and (depth < max_depth) of its descendants. */
static uint64_t tree_cpu_ns(pid_t pid, int depth, int max_depth)
{
	char path[320], buf[4096];
	uint64_t sum = 0;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir || depth > max_depth)
		return dir ? (closedir(dir), 0) : 0;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, d->d_name);
		if (!read_small(path, buf, sizeof(buf)))
			sum += strtoull(buf, NULL, 10);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, d->d_name);
		if (depth == max_depth || read_small(path, buf, sizeof(buf)))
			continue;
		for (char *p = buf, *end; *p; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			sum += tree_cpu_ns((pid_t)c, depth + 1, max_depth);
		}
	}
	closedir(dir);
	return sum;
}

struct sample {
	size_t n;
	double launcher_pct, idle_pct, hold_s, total_cpu_s;
	double self_pct; /* the launcher process alone, without the orted it started */
	int exit_code;
	bool ok;
};

/* Read the launcher's stderr until the "attached N/N" progress line. */
static int wait_attached(struct bt_proc *l, size_t n, int timeout_ms)
{
	char line[512], want[64];
	uint64_t end = bt_mono_ns() + (uint64_t)timeout_ms * 1000000u;

	snprintf(want, sizeof(want), "attached %zu/%zu", n, n);
	while (bt_mono_ns() < end) {
		if (bt_readline(l, line, sizeof(line), timeout_ms))
			return -1;
		if (strstr(line, want))
			return 0;
		if (strstr(line, "attached"))
			bt_log("launcher: %s", line);
	}
	return -1;
}

static int measure(size_t n, long window_ms, const char *outdir, struct sample *s)
{
	const char *args[] = {"--threads", "0", NULL};
	const char *sleep_argv[] = {"/bin/sleep", "1000", NULL};
	char dur[32], env_out[300], *pids = calloc(n, 16);
	const char *env[] = {env_out, NULL};
	const char *argv[] = {"/bin/sh",   "-c",    "exec \"$0\" \"$@\" 2>&1",
			      BT_LAUNCHER, "--pid", pids,
			      "-t",	   BT_TOOL, "-d",
			      dur,	   NULL};
	const struct bt_spawn_opts lo = {.env = env};
	struct bt_proc *t = calloc(n, sizeof(*t)), idle, l;
	uint64_t c0, c1, s0, s1, i0, i1, w0, w1;
	int ret = -1, status;

	memset(s, 0, sizeof(*s));
	s->n = n;
	snprintf(dur, sizeof(dur), "%ld", window_ms);
	snprintf(env_out, sizeof(env_out), "ROCPROF_OUTPUT_PATH=%s", outdir);
	if (bt_start_targets(t, n, args, true))
		goto out;
	for (size_t i = 0; i < n; i++)
		sprintf(pids + strlen(pids), "%s%d", i ? "," : "", (int)t[i].pid);
	if (bt_spawn(&idle, sleep_argv, NULL))
		goto out_t;
	if (bt_spawn(&l, argv, &lo))
		goto out_idle;
	if (wait_attached(&l, n, 60000)) {
		bt_log("launcher did not report %zu targets attached", n);
		goto out_l;
	}
	w0 = bt_mono_ns();
	c0 = tree_cpu_ns(l.pid, 0, 8);
	s0 = tree_cpu_ns(l.pid, 0, 0);
	i0 = tree_cpu_ns(idle.pid, 0, 8);
	bt_sleep_ns((uint64_t)(window_ms - MARGIN_MS) * 1000000u);
	c1 = tree_cpu_ns(l.pid, 0, 8);
	s1 = tree_cpu_ns(l.pid, 0, 0);
	i1 = tree_cpu_ns(idle.pid, 0, 8);
	w1 = bt_mono_ns();
	s->hold_s = (double)(w1 - w0) / 1e9;
	s->launcher_pct = 100.0 * (double)(c1 - c0) / (double)(w1 - w0);
	s->idle_pct = 100.0 * (double)(i1 - i0) / (double)(w1 - w0);
	s->self_pct = 100.0 * (double)(s1 - s0) / (double)(w1 - w0);
	s->total_cpu_s = (double)c1 / 1e9;
	ret = 0;
out_l:
	/* Let the window end by itself: the launcher detaches and exits. */
	for (int i = 0; i < 3000 && waitpid(l.pid, &status, WNOHANG) == 0; i++)
		bt_sleep_ns(10000000);
	if (waitpid(l.pid, &status, WNOHANG) == 0)
		bt_stop(&l);
	else
		s->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	l.pid = 0;
	bt_stop(&l);
	s->ok = !ret && s->exit_code == 0;
out_idle:
	bt_stop(&idle);
out_t:
	bt_stop_targets(t, n);
out:
	free(t);
	free(pids);
	return ret;
}

int main(int argc, char **argv)
{
	size_t counts[MAX_COUNTS] = {1, 32, 128};
	struct sample s[MAX_COUNTS];
	long window_ms = 5000;
	struct bt_results res;
	struct bt_common com;
	json_t *arr, *row;
	char dir[256], id[32], fig[128];
	int i, nc = 3;

	bt_init();
	argc = bt_parse_common(argc, argv, &com);
	if (com.quick) {
		nc = 2;
		window_ms = 1500;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--counts") && i + 1 < argc) {
			char *p = argv[++i], *end;

			for (nc = 0; *p && nc < MAX_COUNTS; p = *end ? end + 1 : end)
				counts[nc++] = strtoul(p, &end, 10);
		} else if (!strcmp(argv[i], "--window-ms") && i + 1 < argc) {
			window_ms = strtol(argv[++i], NULL, 10);
		} else {
			return fprintf(stderr,
				       "usage: %s [--json PATH] [--quick] [--counts N,...] "
				       "[--window-ms MS]\n",
				       argv[0]),
			       2;
		}
	}
	if (window_ms < 2 * MARGIN_MS)
		window_ms = 2 * MARGIN_MS;
	if (bt_mkdtemp("/tmp", dir, sizeof(dir)))
		return 1;
	bt_results_init(&res, "cpu");
	arr = json_array();
	for (int k = 0; k < nc; k++) {
		snprintf(id, sizeof(id), "cpu.%zu", counts[k]);
		snprintf(fig, sizeof(fig), "launcher CPU holding %zu target%s (%% of one core)",
			 counts[k], counts[k] == 1 ? "" : "s");
		if (measure(counts[k], window_ms, dir, &s[k])) {
			bt_row_na(&res, id, fig, "the launcher run failed (see the log)");
			continue;
		}
		row = bt_row(&res, id, fig, s[k].launcher_pct, "%", s[k].idle_pct,
			     "idle process (sleep), same interval", counts[k] >= 128 ? "<=" : NULL,
			     1.0, false);
		bt_row_note(row,
			    "%.2f s held; rocattach-mpi alone %.2f%%, its orted the rest; "
			    "ROCm's design: %zu busy threads = %zu%%",
			    s[k].hold_s, s[k].self_pct, counts[k], counts[k] * 100);
		json_array_append_new(
		    arr, json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:i, s:f}", "n",
				   (json_int_t)counts[k], "launcher_pct", s[k].launcher_pct,
				   "launcher_self_pct", s[k].self_pct, "idle_pct", s[k].idle_pct,
				   "hold_s", s[k].hold_s, "rocm_design_pct",
				   100.0 * (double)counts[k], "exit_code", s[k].exit_code,
				   "launcher_cpu_s_so_far", s[k].total_cpu_s));
	}
	json_object_set_new(res.details, "window_ms", json_integer(window_ms));
	json_object_set_new(res.details, "runs", arr);
	bt_rmdir_files(dir);
	return bt_results_write(&res, com.json) ? 1 : 0;
}

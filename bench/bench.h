/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the benchmarks: clocks, statistics, starting and
 * stopping target processes, and the result file every benchmark writes.
 *
 * A result file is one JSON object:
 *   { "bench": NAME, "rows": [ROW...], "details": {...} }
 * and a row is one figure with its baseline and target:
 *   { "id", "figure", "value", "unit", "baseline", "baseline_what",
 *     "target_op" ("<=" or ">="), "target", "checked" (what the target is
 *     compared with: the value, value - baseline or value / baseline, then
 *     also "ratio"), "met" (bool or null),
 *     "note" }
 * bench_report merges the files into results/latest.json and prints the table.
 * Benchmarks never fail for being slow: "met" is information, not a verdict.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* Paths of the built programs, from the build (see bench/CMakeLists.txt). */
#ifndef BT_AGENT
#error "BT_AGENT must be defined by the build"
#endif

uint64_t bt_mono_ns(void);
uint64_t bt_real_ns(void);
void bt_sleep_ns(uint64_t ns);

/* ---- statistics ---- */

/* Nearest-rank percentile (q in 0..1) of v[0..n) after sorting it in place; 0 if n == 0. */
double bt_pct(double *v, size_t n, double q);
double bt_max(const double *v, size_t n);
double bt_mean(const double *v, size_t n);
double bt_median3(double a, double b, double c);

/* A growing array of doubles. */
struct bt_vec {
	double *v;
	size_t n, cap;
};
void bt_vec_push(struct bt_vec *s, double x);
void bt_vec_free(struct bt_vec *s);
/* {"n", "p50", "p99", "max", "mean"} of a copy of s, in s's unit times scale. */
json_t *bt_vec_summary(const struct bt_vec *s, double scale);

/* ---- processes ---- */

struct bt_proc {
	pid_t pid;
	int to;	  /* its stdin (write end), -1 if not a pipe */
	int from; /* its stdout (read end), -1 once closed */
	char buf[1024];
	size_t len;
};

struct bt_spawn_opts {
	bool agent;		/* LD_PRELOAD the agent and set ROCP_TOOL_ATTACH=1 */
	bool stdin_pipe;	/* stdin from a pipe we hold (else /dev/null) */
	const char *const *env; /* extra NAME=VALUE, NULL-terminated */
};

/*
 * Become a child subreaper (so the children of our targets are ours to
 * reap: PID 1 here may not be an init) and ignore SIGPIPE. Call first.
 */
void bt_init(void);
/* Start argv (argv[0] a path) with stdout on a pipe. 0 or -1. Does not wait. */
int bt_spawn(struct bt_proc *p, const char *const *argv, const struct bt_spawn_opts *o);
/* Read one line of its stdout. 0, or -1 on timeout or end of file. */
int bt_readline(struct bt_proc *p, char *line, size_t len, int timeout_ms);
/* Wait for a line starting with "ready". 0 or -1. */
int bt_wait_ready(struct bt_proc *p, int timeout_ms);
/* SIGTERM (then SIGKILL after 2 s), reap it and any orphans; close its pipes. */
void bt_stop(struct bt_proc *p);
/* Reap whatever children have exited (orphans of stopped trees). */
void bt_reap(void);
/* Raise RLIMIT_NPROC / RLIMIT_NOFILE for n more processes; 0, or -1 with a reason on stderr. */
int bt_room_for(size_t n);

/* Start n example targets (agent on), waiting until all are ready. 0 or -1 (all stopped). */
int bt_start_targets(struct bt_proc *p, size_t n, const char *const *args, bool agent);
/* The same with spawn options (e.g. another library preloaded through o->env). */
int bt_start_targets_with(struct bt_proc *p, size_t n, const char *const *args,
			  const struct bt_spawn_opts *o);
void bt_stop_targets(struct bt_proc *p, size_t n);

/* TID of pid's thread named comm, or 0. */
pid_t bt_thread(pid_t pid, const char *comm);
/* utime + stime of a process (all its threads), in seconds; < 0 if gone. */
double bt_proc_cpu_s(pid_t pid);

/* A fresh directory under base (e.g. "/tmp"), path in buf. 0 or -1. */
int bt_mkdtemp(const char *base, char *buf, size_t len);
/* rm -r of a directory of plain files (one level). */
void bt_rmdir_files(const char *dir);

/* ---- results ---- */

struct bt_results {
	const char *bench;
	json_t *rows, *details;
};

void bt_results_init(struct bt_results *r, const char *bench);
/*
 * Add a figure. target_op "<=" / ">=" / NULL (no target); diff: compare
 * value - baseline with the target (the baseline is the same run's noise
 * floor) instead of the value. NAN baseline: none.
 */
json_t *bt_row(struct bt_results *r, const char *id, const char *figure, double value,
	       const char *unit, double baseline, const char *baseline_what, const char *target_op,
	       double target, bool diff);
/*
 * The same with a target on value / baseline (the baseline a same-run floor):
 * "checked" is "value/baseline", "ratio" the quotient; "met" is null when
 * either is unknown.
 */
json_t *bt_row_ratio(struct bt_results *r, const char *id, const char *figure, double value,
		     const char *unit, double baseline, const char *baseline_what,
		     const char *target_op, double target);
/* A row that could not be measured, with the reason. */
json_t *bt_row_na(struct bt_results *r, const char *id, const char *figure, const char *why);
void bt_row_note(json_t *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write to path (atomically); 0 or -1. Frees r. */
int bt_results_write(struct bt_results *r, const char *path);

/*
 * Common options, anywhere on the command line: --json PATH (default: stdout),
 * --quick. They are removed from argv; returns the new argc (the others stay
 * in order from argv[1]).
 */
struct bt_common {
	const char *json;
	bool quick;
};
int bt_parse_common(int argc, char **argv, struct bt_common *c);

/* Messages to stderr, prefixed with the program name. */
void bt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

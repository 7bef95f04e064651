/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

static const char *prog = "bench";

void bt_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bt_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t bt_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void bt_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------------------ */
/* Statistics. */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bt_pct(double *v, size_t n, double q)
{
	size_t k;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	k = (size_t)ceil(q * (double)n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

double bt_max(const double *v, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++)
		if (i == 0 || v[i] > m)
			m = v[i];
	return m;
}

double bt_mean(const double *v, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : 0;
}

double bt_median3(double a, double b, double c)
{
	double v[3] = {a, b, c};

	return bt_pct(v, 3, 0.5);
}

void bt_vec_push(struct bt_vec *s, double x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		double *v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			bt_log("out of memory");
			exit(1);
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
}

void bt_vec_free(struct bt_vec *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* Rounded to 3 significant decimals in the unit: enough for any figure here. */
static double round3(double x)
{
	return round(x * 1000.0) / 1000.0;
}

json_t *bt_vec_summary(const struct bt_vec *s, double scale)
{
	double *c = malloc((s->n ? s->n : 1) * sizeof(*c));
	json_t *o;

	if (!c)
		return json_null();
	for (size_t i = 0; i < s->n; i++)
		c[i] = s->v[i] * scale;
	o = json_pack("{s:I, s:f, s:f, s:f, s:f}", "n", (json_int_t)s->n, "p50",
		      round3(bt_pct(c, s->n, 0.5)), "p99", round3(bt_pct(c, s->n, 0.99)), "max",
		      round3(bt_max(c, s->n)), "mean", round3(bt_mean(c, s->n)));
	free(c);
	return o;
}

/* ------------------------------------------------------------------------ */
/* Processes. */

void bt_init(void)
{
	char path[256];
	ssize_t n;

	n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = '\0';
		prog = strdup(strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static void child_exec(const char *const *argv, const struct bt_spawn_opts *o, int in, int out)
{
	int null;

	/* A benchmark that dies takes its targets along. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (in < 0) {
		null = open("/dev/null", O_RDONLY);
		in = null;
	}
	dup2(in, 0);
	dup2(out, 1);
	unsetenv("ROCP_TOOL_ATTACH");
	unsetenv("LD_PRELOAD");
	if (o && o->agent) {
		setenv("ROCP_TOOL_ATTACH", "1", 1);
		setenv("LD_PRELOAD", BT_AGENT, 1);
	}
	for (size_t i = 0; o && o->env && o->env[i]; i++)
		putenv((char *)o->env[i]);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

int bt_spawn(struct bt_proc *p, const char *const *argv, const struct bt_spawn_opts *o)
{
	int in[2] = {-1, -1}, out[2];

	memset(p, 0, sizeof(*p));
	p->to = p->from = -1;
	if (pipe2(out, O_CLOEXEC))
		return -1;
	if (o && o->stdin_pipe && pipe2(in, O_CLOEXEC)) {
		close(out[0]);
		close(out[1]);
		return -1;
	}
	fflush(NULL);
	p->pid = fork();
	if (p->pid < 0) {
		close(out[0]);
		close(out[1]);
		return -1;
	}
	if (p->pid == 0)
		child_exec(argv, o, in[0], out[1]);
	close(out[1]);
	if (in[0] >= 0)
		close(in[0]);
	p->to = in[1];
	p->from = out[0];
	return 0;
}

int bt_readline(struct bt_proc *p, char *line, size_t len, int timeout_ms)
{
	struct pollfd pf = {p->from, POLLIN, 0};
	char *nl;
	ssize_t n;

	while (!(nl = memchr(p->buf, '\n', p->len))) {
		if (p->from < 0 || p->len == sizeof(p->buf) || poll(&pf, 1, timeout_ms) <= 0)
			return -1;
		n = read(p->from, p->buf + p->len, sizeof(p->buf) - p->len);
		if (n <= 0)
			return -1;
		p->len += (size_t)n;
	}
	*nl = '\0';
	snprintf(line, len, "%s", p->buf);
	p->len -= (size_t)(nl + 1 - p->buf);
	memmove(p->buf, nl + 1, p->len);
	return 0;
}

int bt_wait_ready(struct bt_proc *p, int timeout_ms)
{
	char line[512];
	uint64_t end = bt_mono_ns() + (uint64_t)timeout_ms * 1000000u;

	while (bt_mono_ns() < end) {
		if (bt_readline(p, line, sizeof(line), timeout_ms))
			return -1;
		if (!strncmp(line, "ready", 5))
			return 0;
	}
	return -1;
}

void bt_reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

void bt_stop(struct bt_proc *p)
{
	int status;

	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		for (int i = 0; i < 200; i++) {
			if (waitpid(p->pid, &status, WNOHANG) != 0)
				goto reaped;
			bt_sleep_ns(10000000);
		}
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
	}
reaped:
	p->pid = 0;
	if (p->to >= 0)
		close(p->to);
	if (p->from >= 0)
		close(p->from);
	p->to = p->from = -1;
	bt_reap();
}

int bt_room_for(size_t n)
{
	struct rlimit rl;

	/* Each target holds a pipe end here; raise the soft limits to the hard ones. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < n * 2 + 64) {
		bt_log("open file limit %llu is too low for %zu targets (ulimit -n)",
		       (unsigned long long)rl.rlim_cur, n);
		return -1;
	}
	if (!getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NPROC, &rl);
	}
	/* Root is not bound by RLIMIT_NPROC; others need one process per target plus threads. */
	if (geteuid() != 0 && !getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < n * 4 + 256) {
		bt_log("process limit %llu is too low for %zu targets (ulimit -u)",
		       (unsigned long long)rl.rlim_cur, n);
		return -1;
	}
	return 0;
}

int bt_start_targets(struct bt_proc *p, size_t n, const char *const *args, bool agent)
{
	const struct bt_spawn_opts o = {.agent = agent};

	return bt_start_targets_with(p, n, args, &o);
}

int bt_start_targets_with(struct bt_proc *p, size_t n, const char *const *args,
			  const struct bt_spawn_opts *o)
{
	const char *argv[16] = {BT_EXAMPLE_TARGET};
	size_t k = 1, i;

	for (size_t j = 0; args && args[j] && k < 15; j++)
		argv[k++] = args[j];
	argv[k] = NULL;
	if (bt_room_for(n))
		return -1;
	/* All at once: they start in parallel, then we collect the ready lines. */
	for (i = 0; i < n; i++)
		if (bt_spawn(&p[i], argv, o))
			goto fail;
	for (i = 0; i < n; i++) {
		if (bt_wait_ready(&p[i], 60000)) {
			bt_log("target %zu (pid %d) did not start", i, (int)p[i].pid);
			i = n;
			goto fail;
		}
		/* It writes only "done" after this; SIGPIPE is ignored in it. */
		close(p[i].from);
		p[i].from = -1;
	}
	return 0;
fail:
	for (size_t j = 0; j < i; j++)
		bt_stop(&p[j]);
	return -1;
}

void bt_stop_targets(struct bt_proc *p, size_t n)
{
	/* TERM them all first, so they exit in parallel. */
	for (size_t i = 0; i < n; i++)
		if (p[i].pid > 0)
			kill(p[i].pid, SIGTERM);
	for (size_t i = 0; i < n; i++)
		bt_stop(&p[i]);
}

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

pid_t bt_thread(pid_t pid, const char *comm)
{
	char path[512], buf[64];
	struct dirent *d;
	pid_t tid = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!tid && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", pid, d->d_name);
		if (!read_small(path, buf, sizeof(buf))) {
			buf[strcspn(buf, "\n")] = '\0';
			if (!strcmp(buf, comm))
				tid = atoi(d->d_name);
		}
	}
	closedir(dir);
	return tid;
}

double bt_proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_small(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');
	/* After ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
	 * stime */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int bt_mkdtemp(const char *base, char *buf, size_t len)
{
	snprintf(buf, len, "%s/rocattach-bench.XXXXXX", base);
	return mkdtemp(buf) ? 0 : -1;
}

void bt_rmdir_files(const char *dir)
{
	char path[4096];
	struct dirent *d;
	DIR *dp = opendir(dir);

	if (!dp)
		return;
	while ((d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		unlink(path);
	}
	closedir(dp);
	rmdir(dir);
}

/* ------------------------------------------------------------------------ */
/* Results. */

void bt_results_init(struct bt_results *r, const char *bench)
{
	r->bench = bench;
	r->rows = json_array();
	r->details = json_object();
}

static json_t *num_or_null(double x)
{
	return isnan(x) ? json_null() : json_real(round3(x));
}

json_t *bt_row(struct bt_results *r, const char *id, const char *figure, double value,
	       const char *unit, double baseline, const char *baseline_what, const char *target_op,
	       double target, bool diff)
{
	json_t *row = json_object();
	double checked = diff && !isnan(baseline) ? value - baseline : value;

	json_object_set_new(row, "id", json_string(id));
	json_object_set_new(row, "figure", json_string(figure));
	json_object_set_new(row, "value", num_or_null(value));
	json_object_set_new(row, "unit", json_string(unit));
	json_object_set_new(row, "baseline", num_or_null(baseline));
	json_object_set_new(row, "baseline_what",
			    baseline_what ? json_string(baseline_what) : json_null());
	if (target_op) {
		bool met = !strcmp(target_op, "<=") ? checked <= target : checked >= target;

		json_object_set_new(row, "target_op", json_string(target_op));
		json_object_set_new(row, "target", json_real(target));
		json_object_set_new(row, "checked", json_string(diff ? "value-baseline" : "value"));
		json_object_set_new(row, "met", isnan(value) ? json_null() : json_boolean(met));
	} else {
		json_object_set_new(row, "target_op", json_null());
		json_object_set_new(row, "met", json_null());
	}
	json_array_append_new(r->rows, row);
	return row;
}

json_t *bt_row_ratio(struct bt_results *r, const char *id, const char *figure, double value,
		     const char *unit, double baseline, const char *baseline_what,
		     const char *target_op, double target)
{
	json_t *row = bt_row(r, id, figure, value, unit, baseline, baseline_what, NULL, 0, false);
	double q = value / baseline;
	bool known = !isnan(q) && !isinf(q) && baseline > 0;
	bool met = !strcmp(target_op, "<=") ? q <= target : q >= target;

	json_object_set_new(row, "target_op", json_string(target_op));
	json_object_set_new(row, "target", json_real(target));
	json_object_set_new(row, "checked", json_string("value/baseline"));
	json_object_set_new(row, "ratio", known ? json_real(q) : json_null());
	json_object_set_new(row, "met", known ? json_boolean(met) : json_null());
	return row;
}

json_t *bt_row_na(struct bt_results *r, const char *id, const char *figure, const char *why)
{
	json_t *row = bt_row(r, id, figure, NAN, "", NAN, NULL, NULL, 0, false);

	json_object_set_new(row, "na", json_string(why));
	return row;
}

void bt_row_note(json_t *row, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_set_new(row, "note", json_string(buf));
}

int bt_results_write(struct bt_results *r, const char *path)
{
	json_t *o =
	    json_pack("{s:s, s:o, s:o}", "bench", r->bench, "rows", r->rows, "details", r->details);
	char tmp[4096];
	int ret = 0;

	r->rows = r->details = NULL;
	if (!path) {
		ret = json_dumpf(o, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
		fputc('\n', stdout);
	} else {
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		ret = json_dump_file(o, tmp, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
		if (!ret && rename(tmp, path))
			ret = -1;
		if (ret)
			bt_log("cannot write %s: %s", path, strerror(errno));
	}
	json_decref(o);
	return ret ? -1 : 0;
}

int bt_parse_common(int argc, char **argv, struct bt_common *c)
{
	int i, k = 1;

	memset(c, 0, sizeof(*c));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc)
			c->json = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			c->quick = true;
		else
			argv[k++] = argv[i];
	}
	argv[k] = NULL;
	return k;
}

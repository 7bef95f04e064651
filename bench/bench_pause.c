/* SPDX-License-Identifier: MIT */
/*
 * 2. Application pause: how long a target's own threads are kept from
 * running by an attach or a detach.
 *
 *   bench_pause [--json PATH] [--quick] [--busy N] [--cycles M] [--pairs P]
 *
 * The watched target (pause_target) has N busy threads that record every gap
 * in their CLOCK_MONOTONIC loop, and a main thread blocked in read(2) that
 * records how late it reads the timestamps we write to it every TICK_US.
 * Each attach or detach call is a window [call start, call end]; the pause in
 * a window is the longest recorded gap that overlaps it (busy threads) or the
 * latest tick (the sleeper).
 *
 * Agent-enabled: M cycles alternate attach+detach of a decoy (another
 * agent-enabled process: the same attacher work and CPU load, but the
 * watched process is not touched: our baseline) and of the watched target,
 * plus an idle window of the same length (nothing attached at all).
 * Only the listener thread is ever stopped, so the watched figures should
 * equal the decoy figures: the difference is our cost.
 *
 * --inject: P fresh pairs started without the agent; the decoy is injected
 * first (baseline), then the watched target. The borrowed thread is one
 * sleeping in a syscall: the main thread, blocked in read(2), whose lateness
 * shows the stop; the library's own figure (step_ns INJECT) is reported too.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rocattach/rocattach.h>

#include "bench.h"
#include "pause_shm.h"

#define TICK_US 200
#define SETTLE_MS 200
#define GAP_MS 1

/* ---- the ticker: writes CLOCK_MONOTONIC to the watched target's stdin ---- */

static _Atomic int tick_fd = -1;
static atomic_bool tick_stop;

/* Point the ticker at fd (-1: stop); once it returns, the old fd is no longer written. */
static void tick_to(int fd)
{
	atomic_store(&tick_fd, fd);
	if (fd < 0)
		bt_sleep_ns(3 * TICK_US * 1000u);
}

static void *ticker(void *arg)
{
	(void)arg;
	while (!atomic_load(&tick_stop)) {
		int fd = atomic_load(&tick_fd);
		uint64_t t = bt_mono_ns();

		if (fd >= 0 && write(fd, &t, sizeof(t)) < 0 && errno != EAGAIN)
			atomic_store(&tick_fd, -1);
		bt_sleep_ns(TICK_US * 1000u);
	}
	return NULL;
}

/* ---- the watched target's record ---- */

struct shm_file {
	char path[128];
	struct pt_shm *m;
};

static int shm_open_file(struct shm_file *f)
{
	int fd;

	snprintf(f->path, sizeof(f->path), "/dev/shm/rocattach-bench-pause.%d", (int)getpid());
	fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct pt_shm))) {
		bt_log("%s: %s", f->path, strerror(errno));
		return -1;
	}
	f->m = mmap(NULL, sizeof(struct pt_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return f->m == MAP_FAILED ? -1 : 0;
}

struct window {
	uint64_t a, b;
};

/* Pauses seen in each window: busy threads (max over them) and the sleeper. */
static void measure(const struct pt_shm *m, const struct window *w, size_t n, struct bt_vec *busy,
		    struct bt_vec *sleeper)
{
	for (size_t i = 0; i < n; i++) {
		double best = 0;

		for (unsigned int k = 0; k < m->n_busy; k++) {
			double v = pt_ring_max(&m->ring[k], w[i].a, w[i].b);

			if (v > best)
				best = v;
		}
		bt_vec_push(busy, best);
		bt_vec_push(sleeper, pt_ring_max(&m->ring[PT_SLEEPER], w[i].a, w[i].b));
	}
}

/* ---- starting the two processes ---- */

static int start_pause_target(struct bt_proc *p, bool agent, unsigned int busy, const char *shm)
{
	char nbuf[16];
	const char *argv[] = {BT_PAUSE_TARGET, "--busy", nbuf, shm ? "--shm" : NULL, shm, NULL};
	const struct bt_spawn_opts o = {.agent = agent, .stdin_pipe = true};

	snprintf(nbuf, sizeof(nbuf), "%u", busy);
	if (bt_spawn(p, argv, &o) || bt_wait_ready(p, 20000)) {
		bt_log("pause target did not start");
		bt_stop(p);
		return -1;
	}
	/* Non-blocking writes: a stopped reader must never stop the ticker. */
	fcntl(p->to, F_SETFL, O_NONBLOCK);
	return 0;
}

struct ctx {
	rocattach_opts_t opts;
	size_t failures;
	char first_error[ROCATTACH_MESSAGE_MAX + 64];
};

static int op(struct ctx *c, pid_t pid, bool attach, struct window *w, rocattach_report_t *rep)
{
	rocattach_status_t st;

	memset(rep, 0, sizeof(*rep));
	rep->size = sizeof(*rep);
	w->a = bt_mono_ns();
	st = attach ? rocattach_attach_ex(pid, &c->opts, rep) : rocattach_detach_ex(pid, NULL, rep);
	w->b = bt_mono_ns();
	if (st != ROCATTACH_STATUS_SUCCESS) {
		if (!c->failures++)
			snprintf(c->first_error, sizeof(c->first_error), "%s %d: %s",
				 attach ? "attach" : "detach", (int)pid, rep->message);
		return -1;
	}
	return 0;
}

struct figures {
	struct bt_vec busy, sleeper;
};

static json_t *figures_json(const struct figures *f)
{
	return json_pack("{s:o, s:o}", "busy_us", bt_vec_summary(&f->busy, 1e-3), "sleeper_us",
			 bt_vec_summary(&f->sleeper, 1e-3));
}

static double p99_us(const struct bt_vec *v)
{
	double *c = malloc((v->n ? v->n : 1) * sizeof(*c)), r;

	memcpy(c, v->v, v->n * sizeof(*c));
	r = bt_pct(c, v->n, 0.99) / 1000.0;
	free(c);
	return r;
}

/* ---- agent-enabled targets ---- */

static int run_agent(struct ctx *c, struct shm_file *f, unsigned int busy, size_t cycles,
		     struct bt_results *res)
{
	struct window *ww = calloc(2 * cycles, sizeof(*ww)), *wd = calloc(2 * cycles, sizeof(*wd));
	struct window *wi = calloc(2 * cycles, sizeof(*wi));
	struct figures fw = {0}, fd = {0}, fi = {0};
	struct bt_proc w, d;
	rocattach_report_t rep;
	size_t nw = 0, nd = 0, ni = 0;
	json_t *row;

	if (start_pause_target(&w, true, busy, f->path))
		return -1;
	if (start_pause_target(&d, true, 0, NULL)) {
		bt_stop(&w);
		return -1;
	}
	tick_to(w.to);
	bt_sleep_ns(SETTLE_MS * 1000000ull);
	for (size_t i = 0; i < cycles; i++) {
		for (int attach = 1; attach >= 0; attach--) {
			op(c, d.pid, attach, &wd[nd++], &rep);
			bt_sleep_ns(GAP_MS * 1000000ull);
			if (!op(c, w.pid, attach, &ww[nw], &rep)) {
				/* Idle: a window as long as the last watched one, nothing done. */
				bt_sleep_ns(GAP_MS * 1000000ull);
				wi[ni].a = bt_mono_ns();
				bt_sleep_ns(ww[nw].b - ww[nw].a);
				wi[ni++].b = bt_mono_ns();
				nw++;
			}
			bt_sleep_ns(GAP_MS * 1000000ull);
		}
	}
	bt_sleep_ns(10 * 1000000ull);
	tick_to(-1);
	measure(f->m, ww, nw, &fw.busy, &fw.sleeper);
	measure(f->m, wd, nd, &fd.busy, &fd.sleeper);
	measure(f->m, wi, ni, &fi.busy, &fi.sleeper);
	bt_stop(&w);
	bt_stop(&d);

	row = bt_row(res, "pause.agent.busy.p99", "app pause p99, busy threads (agent)",
		     p99_us(&fw.busy), "us", p99_us(&fd.busy), "same, attaching a decoy process",
		     "<=", 100, true);
	bt_row_note(row, "%zu attach/detach windows, %u busy thread(s); idle p99 %.1f us", nw, busy,
		    p99_us(&fi.busy));
	row = bt_row(res, "pause.agent.sleeper.p99", "app pause p99, thread asleep in read (agent)",
		     p99_us(&fw.sleeper), "us", p99_us(&fd.sleeper),
		     "same, attaching a decoy process", "<=", 100, true);
	bt_row_note(row, "wakeup lateness of %d us ticks; idle p99 %.1f us", TICK_US,
		    p99_us(&fi.sleeper));
	json_object_set_new(res->details, "agent",
			    json_pack("{s:I, s:I, s:o, s:o, s:o}", "windows", (json_int_t)nw,
				      "busy_threads", (json_int_t)busy, "watched",
				      figures_json(&fw), "decoy", figures_json(&fd), "idle",
				      figures_json(&fi)));
	free(ww);
	free(wd);
	free(wi);
	return 0;
}

/* ---- --inject ---- */

static int inject_pair(struct ctx *c, struct shm_file *f, unsigned int busy, struct figures *fw,
		       struct figures *fd, struct bt_vec *lib_ns)
{
	struct bt_proc w, d;
	struct window win[2];
	rocattach_report_t rep;
	int ret = -1;

	if (start_pause_target(&w, false, busy, f->path))
		return -1;
	if (start_pause_target(&d, false, 0, NULL))
		goto out_w;
	tick_to(w.to);
	bt_sleep_ns(30 * 1000000ull);
	if (op(c, d.pid, true, &win[0], &rep))
		goto out;
	bt_sleep_ns(2 * GAP_MS * 1000000ull);
	if (op(c, w.pid, true, &win[1], &rep))
		goto out;
	bt_vec_push(lib_ns, (double)rep.step_ns[ROCATTACH_STEP_INJECT]);
	bt_sleep_ns(5 * 1000000ull);
	measure(f->m, &win[0], 1, &fd->busy, &fd->sleeper);
	measure(f->m, &win[1], 1, &fw->busy, &fw->sleeper);
	ret = 0;
out:
	tick_to(-1);
	if (rocattach_is_attached(d.pid))
		rocattach_detach(d.pid);
	if (rocattach_is_attached(w.pid))
		rocattach_detach(w.pid);
	bt_stop(&d);
out_w:
	bt_stop(&w);
	return ret;
}

static void run_inject(struct ctx *c, struct shm_file *f, unsigned int busy, size_t pairs,
		       struct bt_results *res)
{
	struct figures fw = {0}, fd = {0};
	struct bt_vec lib = {0};
	json_t *row;

	c->opts.flags |= ROCATTACH_F_INJECT;
	c->opts.agent_path = BT_AGENT;
	for (size_t i = 0; i < pairs; i++)
		inject_pair(c, f, busy, &fw, &fd, &lib);
	c->opts.flags &= ~ROCATTACH_F_INJECT;

	row = bt_row(res, "pause.inject.borrowed.p99",
		     "--inject pause p99, borrowed thread (asleep in read)",
		     p99_us(&fw.sleeper) / 1e3, "ms", p99_us(&fd.sleeper) / 1e3,
		     "same, injecting a decoy process", "<=", 2.0, true);
	bt_row_note(row, "%zu injections; library's INJECT step p99 %.3f ms", fw.sleeper.n,
		    p99_us(&lib) / 1e3);
	bt_row(res, "pause.inject.step.p99", "--inject: thread stop time (step INJECT) p99",
	       p99_us(&lib) / 1e3, "ms", NAN, NULL, "<=", 2.0, false);
	bt_row(res, "pause.inject.busy.p99", "--inject pause p99, busy threads", p99_us(&fw.busy),
	       "us", p99_us(&fd.busy), "same, injecting a decoy process", "<=", 100, true);
	json_object_set_new(res->details, "inject",
			    json_pack("{s:I, s:o, s:o, s:o}", "pairs", (json_int_t)fw.busy.n,
				      "watched", figures_json(&fw), "decoy", figures_json(&fd),
				      "inject_step_us", bt_vec_summary(&lib, 1e-3)));
}

int main(int argc, char **argv)
{
	struct ctx c = {.opts = {.size = sizeof(c.opts), .tool_libraries = BT_TOOL}};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int busy = cpus > 1 ? (unsigned int)cpus - 1 : 1;
	char dir[256], env_out[300];
	const char *env[] = {env_out, NULL};
	struct bt_results res;
	struct bt_common com;
	struct shm_file f;
	size_t cycles, pairs;
	pthread_t th;
	int i, ret = 1;

	bt_init();
	argc = bt_parse_common(argc, argv, &com);
	cycles = com.quick ? 40 : 200;
	pairs = com.quick ? 8 : 40;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--busy") && i + 1 < argc)
			busy = (unsigned int)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--cycles") && i + 1 < argc)
			cycles = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
			pairs = strtoul(argv[++i], NULL, 10);
		else
			return fprintf(stderr,
				       "usage: %s [--json PATH] [--quick] [--busy N] "
				       "[--cycles M] [--pairs P]\n",
				       argv[0]),
			       2;
	}
	if (busy > PT_MAX_BUSY)
		busy = PT_MAX_BUSY;
	if (bt_mkdtemp("/tmp", dir, sizeof(dir)) || shm_open_file(&f))
		return 1;
	snprintf(env_out, sizeof(env_out), "ROCPROF_OUTPUT_PATH=%s", dir);
	c.opts.env = env;
	pthread_create(&th, NULL, ticker, NULL);
	bt_results_init(&res, "pause");
	if (run_agent(&c, &f, busy, cycles, &res))
		goto out;
	run_inject(&c, &f, busy, pairs, &res);
	json_object_set_new(res.details, "tick_us", json_integer(TICK_US));
	json_object_set_new(res.details, "failures", json_integer((json_int_t)c.failures));
	if (c.failures) {
		json_object_set_new(res.details, "first_error", json_string(c.first_error));
		bt_log("%zu failures, first: %s", c.failures, c.first_error);
	}
	ret = bt_results_write(&res, com.json) ? 1 : 0;
out:
	atomic_store(&tick_stop, true);
	pthread_join(th, NULL);
	unlink(f.path);
	bt_rmdir_files(dir);
	return ret;
}

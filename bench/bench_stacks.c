/* SPDX-License-Identifier: MIT */
/*
 * The stack tool's costs (issue 23, docs/stacks.md), each beside a baseline
 * of the same run:
 *
 *   hold    how long a snapshot holds a running thread: pause_target's busy
 *           thread records every gap of its CLOCK_MONOTONIC loop over 2 us;
 *           the gap that contains its handler's entry (the tool's "hold"
 *           line) is that snapshot's hold, when the thread was running at
 *           the tgkill; for every snapshot, that gap's part from the entry
 *           on. Also, from the tool's file, the tgkill-to-handler-end time
 *           and the handler's own time. Baseline:
 *           the same signal and handler without the unwind
 *           (ROCPROF_STACKS_UNWIND=0), in alternate cycles of the same run.
 *   sample  the throughput cost of sampling at 99 Hz: two pause_targets with
 *           one busy thread each, run together; one is sampled, the other
 *           not (the tool attached with no rate: its snapshot only), then
 *           the other way round.
 *           Throughput = loop iterations per CPU second of the process
 *           (utime + stime: the handler's time counts against it).
 *   merge   rank 0's merge of 1,000 ranks x 10 threads x 64 frames: folded
 *           lines as the nodes send them, through rm_stacks_merge (the
 *           launcher's code), then the printed tree and its JSON. Baseline:
 *           reading the same lines once (strtok). Two shapes: ranks sharing
 *           most stacks (a job), and every rank's deep frames distinct (the
 *           worst case for the tree's size).
 *
 *   bench_stacks [--quick] [--json FILE]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rocattach/rocattach.h>

#include "bench.h"
#include "stacks.h"
#include "pause_shm.h"
#include "stacks_tree.h"

struct shm_file {
	char path[128];
	struct pt_shm *m;
};

static int shm_open_file(struct shm_file *f, int k)
{
	int fd;

	snprintf(f->path, sizeof(f->path), "/dev/shm/rocattach-bench-stacks.%d.%d", (int)getpid(),
		 k);
	fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(struct pt_shm))) {
		bt_log("%s: %s", f->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	f->m = mmap(NULL, sizeof(struct pt_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return f->m == MAP_FAILED ? -1 : 0;
}

static void shm_close(struct shm_file *f)
{
	if (f->m && f->m != MAP_FAILED)
		munmap(f->m, sizeof(struct pt_shm));
	unlink(f->path);
}

static int start_target(struct bt_proc *p, unsigned int busy, unsigned int thresh_us,
			const char *shm)
{
	char nbuf[16], tbuf[16];
	const char *argv[] = {BT_PAUSE_TARGET, "--busy", nbuf, "--shm", shm,
			      "--thresh-us",   tbuf,	 NULL};
	const struct bt_spawn_opts o = {.agent = true, .stdin_pipe = true};

	snprintf(nbuf, sizeof(nbuf), "%u", busy);
	snprintf(tbuf, sizeof(tbuf), "%u", thresh_us);
	if (bt_spawn(p, argv, &o) || bt_wait_ready(p, 20000)) {
		bt_log("pause target did not start");
		bt_stop(p);
		return -1;
	}
	return 0;
}

static char stacks_tool[PATH_MAX], out_var[PATH_MAX + 32], hz_var[64],
    unwind_var[64] = "ROCPROF_STACKS_UNWIND=1";

static int attach(pid_t pid, const char *tool, bool stacks, int hz, char *err, size_t len)
{
	const char *env[] = {out_var, hz_var, unwind_var, NULL};
	rocattach_opts_t o = {
	    .size = sizeof(o), .tool_libraries = tool, .env = stacks ? env : NULL};
	rocattach_report_t rep = {.size = sizeof(rep)};

	snprintf(hz_var, sizeof(hz_var), "ROCPROF_STACKS_HZ=%d", hz);
	if (rocattach_attach_ex(pid, &o, &rep) == ROCATTACH_STATUS_SUCCESS)
		return 0;
	snprintf(err, len, "attach %d: %s", (int)pid, rep.message);
	return -1;
}

static double p99(const struct bt_vec *v)
{
	double *c = malloc((v->n ? v->n : 1) * sizeof(*c)), r;

	if (!c || !v->n) {
		free(c);
		return NAN; /* none measured: unknown, not 0 */
	}
	memcpy(c, v->v, v->n * sizeof(*c));
	r = bt_pct(c, v->n, 0.99);
	free(c);
	return r;
}

/* ---- hold ---- */

/* Longest gap of any busy thread of f in [a, b]. */
static double busy_max(const struct shm_file *f, uint64_t a, uint64_t b)
{
	double best = 0;

	for (unsigned int k = 0; k < f->m->n_busy; k++) {
		double v = pt_ring_max(&f->m->ring[k], a, b);

		if (v > best)
			best = v;
	}
	return best;
}

/* The gap of busy ring r that contains t (ns), or NULL if none was recorded there. */
static const struct pt_event *gap_at(const struct pt_ring *r, uint64_t t)
{
	uint64_t n = atomic_load_explicit(&r->n, memory_order_acquire);

	if (n > PT_CAP)
		n = PT_CAP;
	for (uint64_t i = n; i-- > 0;)
		if (r->ev[i].start_ns <= t && t <= r->ev[i].start_ns + r->ev[i].len_ns)
			return &r->ev[i];
	return NULL;
}

/* What one kind of snapshot (with the unwind, or without) held, over the cycles. */
struct hold {
	struct bt_vec handler; /* "handler" lines: entry to after the unwind, every thread */
	struct bt_vec trip;    /* tgkill to the handler's end, the busy thread */
	struct bt_vec gap;     /* the busy thread's gap that holds its handler's entry, if it ran */
	struct bt_vec tail;    /* every such gap's part from the handler's entry to its end */
	size_t below;	       /* entries in no recorded gap: held less than the threshold */
	size_t off_cpu;	       /* the thread was not running when signalled */
};

static void hold_free(struct hold *h)
{
	bt_vec_free(&h->handler);
	bt_vec_free(&h->trip);
	bt_vec_free(&h->gap);
	bt_vec_free(&h->tail);
}

/* Slack for the busy loop's last clock read before the tool's own read of "sent". */
#define RUNNING_SLACK_NS 1000

/*
 * One busy thread's snapshot. If its gap began after the tgkill, the thread
 * was running and the whole gap is the hold. If it began before, the thread
 * was already off its CPU (preempted, often by the attaching thread itself
 * on 2 CPUs): the gap is the scheduler's, and only the part from the
 * handler's entry to the gap's end (the handler and sigreturn) is the
 * snapshot's for sure. That part is kept for every snapshot.
 */
static void add_hold(struct hold *h, const struct shm_file *f, double thresh_ns,
		     unsigned long long sent, unsigned long long entry)
{
	const struct pt_event *e = gap_at(&f->m->ring[0], entry);

	if (!e) {
		h->below++;
		bt_vec_push(&h->gap, thresh_ns); /* a bound: no gap over the threshold held it */
		return;
	}
	bt_vec_push(&h->tail, (double)(e->start_ns + e->len_ns - entry));
	if (e->start_ns + RUNNING_SLACK_NS >= sent)
		bt_vec_push(&h->gap, (double)e->len_ns);
	else
		h->off_cpu++;
}

/*
 * The "handler" and "hold" lines of every file in dir into h, then the files go.
 * The busy thread is the one that is not the main thread (the tool's own
 * attach thread answers "self", with no such lines).
 */
static void take_holds(const char *dir, pid_t pid, const struct shm_file *f, double thresh_ns,
		       struct hold *h)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX + 300], line[4096];

	while (d && (e = readdir(d))) {
		unsigned long long ns, sent, entry, ret;
		FILE *fp;
		int tid;

		if (strncmp(e->d_name, "rocattach-stacks.", 17))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fp = fopen(path, "r");
		while (fp && fgets(line, sizeof(line), fp)) {
			if (sscanf(line, "handler %d %llu", &tid, &ns) == 2)
				bt_vec_push(&h->handler, (double)ns);
			if (sscanf(line, "hold %d %llu %llu %llu", &tid, &sent, &entry, &ret) !=
				4 ||
			    tid == pid || !ret)
				continue;
			bt_vec_push(&h->trip, (double)(ret - sent));
			add_hold(h, f, thresh_ns, sent, entry);
		}
		if (fp)
			fclose(fp);
		unlink(path);
	}
	if (d)
		closedir(d);
}

#define HOLD_THRESH_US 2

static void hold_rows(struct bt_results *res, struct hold h[2], size_t cycles)
{
	bt_row_note(
	    bt_row(res, "stacks.hold_p99",
		   "snapshot: hold of a running thread (its gap around the handler), p99",
		   p99(&h[1].gap) / 1e3, "us", p99(&h[0].gap) / 1e3,
		   "the same signal and handler without the unwind, alternate cycles", "<=", 100,
		   false),
	    "the busy thread's own CLOCK_MONOTONIC gap that contains its handler's entry, when it "
	    "was running at the tgkill: kernel entry, the handler, sigreturn (and any preemption "
	    "in that gap); %zu + %zu snapshots, p50 %.1f / %.1f us, max %.1f / %.1f us; %zu + %zu "
	    "in no gap over %d us (counted as %d us, a bound). Off its CPU at the tgkill (its gap "
	    "is the scheduler's, not counted here): %zu + %zu",
	    h[1].gap.n, h[0].gap.n, bt_pct(h[1].gap.v, h[1].gap.n, 0.5) / 1e3,
	    bt_pct(h[0].gap.v, h[0].gap.n, 0.5) / 1e3, bt_max(h[1].gap.v, h[1].gap.n) / 1e3,
	    bt_max(h[0].gap.v, h[0].gap.n) / 1e3, h[1].below, h[0].below, HOLD_THRESH_US,
	    HOLD_THRESH_US, h[1].off_cpu, h[0].off_cpu);
	bt_row_note(
	    bt_row(res, "stacks.hold_tail_p99",
		   "snapshot: its handler's entry to the thread's next own clock read, p99",
		   p99(&h[1].tail) / 1e3, "us", p99(&h[0].tail) / 1e3,
		   "the same without the unwind", "<=", 100, false),
	    "every snapshot of the busy thread (%zu + %zu), running or not at the tgkill: the "
	    "handler, sigreturn and the loop's next read, as the thread saw them (the "
	    "signal's delivery before the entry is not in it); p50 %.1f / %.1f us",
	    h[1].tail.n, h[0].tail.n, bt_pct(h[1].tail.v, h[1].tail.n, 0.5) / 1e3,
	    bt_pct(h[0].tail.v, h[0].tail.n, 0.5) / 1e3);
	bt_row_note(bt_row(res, "stacks.trip_p99",
			   "snapshot: tgkill to the handler's end, busy thread, p99",
			   p99(&h[1].trip) / 1e3, "us", p99(&h[0].trip) / 1e3,
			   "the same without the unwind", NULL, 0, false),
		    "the tool's clock just before its tgkill and at the handler's end (sigreturn "
		    "not included); p50 %.1f / %.1f us",
		    bt_pct(h[1].trip.v, h[1].trip.n, 0.5) / 1e3,
		    bt_pct(h[0].trip.v, h[0].trip.n, 0.5) / 1e3);
	bt_row_note(bt_row(res, "stacks.handler_p99",
			   "snapshot: its handler per thread (entry to after the unwind), p99",
			   p99(&h[1].handler) / 1e3, "us", p99(&h[0].handler) / 1e3,
			   "the same handler without the unwind", "<=", 100, false),
		    "every answering thread (%zu + %zu): a lower bound of the hold", h[1].handler.n,
		    h[0].handler.n);
	json_object_set_new(res->details, "hold",
			    json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:i}",
				      "gap_us", bt_vec_summary(&h[1].gap, 1e-3), "gap_no_unwind_us",
				      bt_vec_summary(&h[0].gap, 1e-3), "tail_us",
				      bt_vec_summary(&h[1].tail, 1e-3), "tail_no_unwind_us",
				      bt_vec_summary(&h[0].tail, 1e-3), "trip_us",
				      bt_vec_summary(&h[1].trip, 1e-3), "trip_no_unwind_us",
				      bt_vec_summary(&h[0].trip, 1e-3), "handler_us",
				      bt_vec_summary(&h[1].handler, 1e-3), "handler_no_unwind_us",
				      bt_vec_summary(&h[0].handler, 1e-3), "cycles",
				      (json_int_t)cycles, "gap_threshold_us", HOLD_THRESH_US));
}

/*
 * One target with one busy thread, attached and detached with the stack
 * tool (a snapshot each time), by turns with ROCPROF_STACKS_UNWIND=0: the
 * same signal and handler without the unwind, so the difference is what
 * the unwind adds. The busy thread records every gap of its loop over
 * HOLD_THRESH_US; the one holding a handler's entry is that snapshot's hold.
 * The longest gap anywhere in the attach+detach (the figure before, mostly
 * the scheduler's) stays in the details.
 */
static int run_hold(size_t cycles, const char *dir, struct bt_results *res)
{
	struct bt_vec v = {0};
	struct hold h[2] = {{{0}}};
	struct shm_file f = {0};
	struct bt_proc p = {0};
	char err[600] = "";
	int ret = -1;

	if (shm_open_file(&f, 0) || start_target(&p, 1, HOLD_THRESH_US, f.path))
		goto out;
	for (size_t i = 0; i < 2 * cycles; i++) {
		int unwind = (int)(i % 2);
		uint64_t a = bt_mono_ns(), b;

		snprintf(unwind_var, sizeof(unwind_var), "ROCPROF_STACKS_UNWIND=%d", unwind);
		if (attach(p.pid, stacks_tool, true, 0, err, sizeof(err)))
			goto out;
		rocattach_detach(p.pid);
		b = bt_mono_ns();
		bt_sleep_ns(20000000); /* the gaps are read after the ring settles */
		take_holds(dir, p.pid, &f, HOLD_THRESH_US * 1e3, &h[unwind]);
		if (unwind)
			bt_vec_push(&v, busy_max(&f, a, b));
	}
	snprintf(unwind_var, sizeof(unwind_var), "ROCPROF_STACKS_UNWIND=1");
	hold_rows(res, h, cycles);
	/* The figure before: the longest gap anywhere in the attach+detach. */
	json_object_set_new(json_object_get(res->details, "hold"), "attach_detach_max_gap_us",
			    bt_vec_summary(&v, 1e-3));
	ret = 0;
out:
	if (ret)
		bt_row_na(res, "stacks.hold_p99", "snapshot: hold of a running thread, p99",
			  err[0] ? err : "the target did not start");
	bt_stop(&p);
	shm_close(&f);
	bt_vec_free(&v);
	hold_free(&h[0]);
	hold_free(&h[1]);
	return ret;
}

/* ---- sampling's cost ---- */

struct tput {
	uint64_t iters;
	double cpu;
};

static struct tput tput_now(const struct shm_file *f, pid_t pid)
{
	return (struct tput){atomic_load(&f->m->ring[0].iters), bt_proc_cpu_s(pid)};
}

static double rate(struct tput a, struct tput b)
{
	return b.cpu > a.cpu ? (double)(b.iters - a.iters) / (b.cpu - a.cpu) : NAN;
}

/*
 * One round: target s sampled at 99 Hz, target u not (the same tool, its
 * snapshot only: a process keeps its first attach's tool); sampled /
 * unsampled throughput.
 */
static double round_ratio(struct bt_proc *p, struct shm_file *f, int s, double secs, char *err,
			  size_t len, double r[2])
{
	int u = 1 - s;
	struct tput a[2], b[2];

	if (attach(p[s].pid, stacks_tool, true, 99, err, len) ||
	    attach(p[u].pid, stacks_tool, true, 0, err, len))
		return NAN;
	a[0] = tput_now(&f[s], p[s].pid);
	a[1] = tput_now(&f[u], p[u].pid);
	bt_sleep_ns((uint64_t)(secs * 1e9));
	b[0] = tput_now(&f[s], p[s].pid);
	b[1] = tput_now(&f[u], p[u].pid);
	rocattach_detach(p[s].pid);
	rocattach_detach(p[u].pid);
	r[0] = rate(a[0], b[0]);
	r[1] = rate(a[1], b[1]);
	return r[0] / r[1];
}

static int run_sample(int rounds, double secs, struct bt_results *res)
{
	struct shm_file f[2] = {{{0}}};
	struct bt_proc p[2] = {{0}};
	struct bt_vec ratios = {0};
	json_t *per = json_array();
	char err[600] = "";
	double logsum = 0, r[2];
	int ret = -1;

	for (int k = 0; k < 2; k++)
		if (shm_open_file(&f[k], k + 1) || start_target(&p[k], 1, 5, f[k].path))
			goto out;
	bt_sleep_ns(500000000);
	/* Each target sampled in turn: placement and frequency differences cancel out. */
	for (int i = 0; i < rounds; i++) {
		double q = round_ratio(p, f, i % 2, secs, err, sizeof(err), r);

		if (isnan(q))
			goto out;
		bt_vec_push(&ratios, q);
		logsum += log(q);
		json_array_append_new(per, json_pack("[f, f]", r[0], r[1]));
	}
	bt_row_note(bt_row(res, "stacks.sample_cost", "sampling at 99 Hz: throughput lost",
			   100.0 * (1.0 - exp(logsum / rounds)), "%", 0.0,
			   "the same program unsampled, same run (each sampled in turn)", "<=", 1.0,
			   false),
		    "iterations per CPU second, sampled / unsampled, %d rounds of %.0f s: "
		    "geometric mean %.4f, min %.4f, max %.4f",
		    rounds, secs, exp(logsum / rounds), bt_pct(ratios.v, ratios.n, 0.0),
		    bt_max(ratios.v, ratios.n));
	json_object_set_new(res->details, "sample",
			    json_pack("{s:f, s:i, s:o, s:f}", "seconds", secs, "rounds", rounds,
				      "iters_per_cpu_s_sampled_unsampled", per, "hz", 99.0));
	per = NULL;
	ret = 0;
out:
	if (ret)
		bt_row_na(res, "stacks.sample_cost", "sampling at 99 Hz: throughput lost",
			  err[0] ? err : "the targets did not start");
	json_decref(per);
	bt_vec_free(&ratios);
	for (int k = 0; k < 2; k++) {
		bt_stop(&p[k]);
		shm_close(&f[k]);
	}
	return ret;
}

/* ---- rank 0's merge ---- */

/*
 * One rank's lines: 10 threads of 64 frames. distinct: frames 8 and deeper
 * name the rank (every rank's own subtree); else only the 4 innermost frames
 * of 2 threads vary, with rank % 16.
 */
static char *rank_lines(long rank, bool distinct, size_t *len)
{
	size_t size = 0;
	char *text = NULL;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	for (int t = 0; t < 10; t++) {
		fprintf(f, "node%ld;rank %ld", rank / 8, rank);
		for (int d = 0; d < 64; d++) {
			if (distinct && d >= 8)
				fprintf(f, ";r%ld_t%d_f%d", rank, t, d);
			else if (t >= 8 && d >= 60)
				fprintf(f, ";v%ld_t%d_f%d", rank % 16, t, d);
			else
				fprintf(f, ";thread%d_frame%d", t, d);
		}
		fputs(" 1\n", f);
	}
	if (fclose(f))
		return NULL;
	*len = size;
	return text;
}

static void run_merge(long ranks, bool distinct, struct bt_results *res)
{
	const char *id = distinct ? "stacks.merge_distinct" : "stacks.merge_shared";
	char **msg = calloc((size_t)ranks, sizeof(*msg));
	size_t *len = calloc((size_t)ranks, sizeof(*len)), refused = 0, lines = 0;
	struct ra_stack_tree *t = ra_stack_tree_new();
	uint64_t t0, t1, t2, t3, f0, f1;
	FILE *null = fopen("/dev/null", "w");
	json_t *j;
	char *s;

	for (long r = 0; msg && len && r < ranks; r++)
		if (!(msg[r] = rank_lines(r, distinct, &len[r])))
			break;
	if (!msg || !len || !t || !null || !msg[ranks - 1]) {
		bt_row_na(res, id, "rank 0 merges 1,000 ranks x 10 threads x 64 frames",
			  "out of memory");
		goto out;
	}
	f0 = bt_mono_ns();
	for (long r = 0; r < ranks; r++) {
		char *copy = strndup(msg[r], len[r]), *save = NULL;

		for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			lines++;
		free(copy);
	}
	f1 = bt_mono_ns();
	t0 = bt_mono_ns();
	for (long r = 0; r < ranks; r++)
		refused += rm_stacks_merge(t, msg[r], len[r]);
	t1 = bt_mono_ns();
	ra_stack_tree_print(t, null);
	t2 = bt_mono_ns();
	j = ra_stack_tree_json(t);
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	t3 = bt_mono_ns();
	bt_row_note(bt_row(res, id,
			   distinct ? "rank 0 merges 1,000 ranks x 10 x 64 (distinct deep frames)"
				    : "rank 0 merges 1,000 ranks x 10 x 64 (a job's shared stacks)",
			   (double)(t2 - t0) / 1e6, "ms", (double)(f1 - f0) / 1e6,
			   "reading the same lines once", "<=", 1000, false),
		    "merge %.1f ms + printed tree %.1f ms; %zu lines, %zu refused",
		    (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6, lines, refused);
	bt_row_note(bt_row(res, distinct ? "stacks.json_distinct" : "stacks.json_shared",
			   distinct ? "  and its JSON for the report (distinct)"
				    : "  and its JSON for the report (shared)",
			   (double)(t3 - t2) / 1e6, "ms", NAN, NULL, NULL, 0, false),
		    "%zu bytes", s ? strlen(s) : 0);
	free(s);
	json_decref(j);
out:
	for (long r = 0; msg && r < ranks; r++)
		free(msg[r]);
	free(msg);
	free(len);
	ra_stack_tree_free(t);
	if (null)
		fclose(null);
}

int main(int argc, char **argv)
{
	struct bt_common c = {0};
	struct bt_results res;
	struct rm_opts o = {0};
	char dir[PATH_MAX], err[600];

	argc = bt_parse_common(argc, argv, &c);
	(void)argc;
	bt_init();
	bt_results_init(&res, "stacks");
	setenv("ROCATTACH_AGENT", BT_AGENT, 0);
	if (rm_stacks_find_tool(&o, err, sizeof(err)) || bt_mkdtemp("/tmp", dir, sizeof(dir))) {
		bt_log("%s", err);
		return 1;
	}
	snprintf(stacks_tool, sizeof(stacks_tool), "%s", o.tools);
	snprintf(out_var, sizeof(out_var), "ROCPROF_OUTPUT_PATH=%s", dir);
	run_hold(c.quick ? 100 : 300, dir, &res);
	run_sample(c.quick ? 2 : 6, c.quick ? 2.0 : 5.0, &res);
	run_merge(1000, false, &res);
	run_merge(1000, true, &res);
	bt_rmdir_files(dir);
	return bt_results_write(&res, c.json) ? 1 : 0;
}

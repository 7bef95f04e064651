/* SPDX-License-Identifier: MIT */
/*
 * Parallel attach and detach over a node's targets.
 *
 * The attach library holds ptrace only for the duration of one operation and
 * releases the thread before returning, so a target never belongs to one
 * worker: any worker may attach a target and any other detach it. Workers
 * take the next target from a shared counter, so a slow target never holds
 * up the others. Workers inherit the caller's CPU affinity (see rn_bind_away).
 * A window (rn_window_open) runs its attaches beside the caller, each
 * target on its own clock: see node.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/procfs.h"
#include "node.h"
#include "rp3_state.h"

/* The work is mostly waiting for targets to run the remote calls: oversubscribe. */
#define JOBS_PER_CPU 4
/*
 * A worker's stack. An attach or detach with a start or stop time waits in
 * the call until the tools are handed over, so a common start needs one
 * worker per target: no cap on their number. Their stacks are bounded
 * instead (glibc's default is 8 MB of address space each): the deepest
 * path through the library holds a few 4 KB buffers. Measured on 300
 * targets (tests/mpi/test_many.sh): 303 threads at once, about 32 KB of
 * resident memory per worker; the address space grew 0.9 GB, mostly glibc's
 * per-thread malloc arenas (reserved, not used), where default stacks would
 * have added 2.4 GB more.
 * What bounds the workers is the kernel's thread limits (ulimit -u, which
 * counts threads, and kernel.threads-max); a worker that cannot be created
 * means fewer attaches in flight, said by the caller.
 */
#define POOL_STACK_BYTES (256 * 1024)

struct pool {
	struct rn_target *t;
	size_t n;
	const struct rn_pool_opts *o;
	bool attach;
	atomic_size_t next;
	atomic_size_t done;
	size_t todo;
	const bool *only;      /* detach: only these targets (NULL: all) */
	struct rn_window *win; /* attach: a window's, on its own clock per target */
};

/* A target's attach in a window: in its call, returned, then taken for its detach. */
enum { CALL_IN = 0, CALL_RETURNED, CALL_TAKEN };

struct rn_window {
	struct pool p;
	struct rn_pool_opts o; /* the attaches' */
	struct rn_pool_opts d; /* the detaches': o with the stop */
	atomic_int *phase;     /* per target */
	atomic_size_t pending;
	atomic_bool stopped; /* rn_window_stop was called: d holds the stop */
	bool *taken;	     /* rn_window_stop's share of the detaches */
	pthread_t *th;
	int started;
};

int rn_pool_jobs(const struct rn_pool_opts *o, size_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long jobs = o && o->jobs > 0 ? o->jobs : (cpus > 0 ? cpus : 1) * JOBS_PER_CPU;

	if ((size_t)jobs > n)
		jobs = (long)n;
	return jobs > 0 ? (int)jobs : 1;
}

static bool wanted(const struct rn_target *t, bool attach)
{
	if (attach)
		return t->state == RN_FOUND || t->state == RN_DETACHED;
	/* One the watch saw die attached: its detach only drops the library's session. */
	return t->state == RN_ATTACHED ||
	       (t->state == RN_DIED_ATTACHED && rocattach_is_attached(t->pid));
}

/* Messages are cut to the record's size: the start names the step and the cause. */
static void copy_message(struct rn_target *t, const char *msg)
{
	snprintf(t->message, sizeof(t->message), "%.*s", (int)sizeof(t->message) - 1, msg);
}

/*
 * An attach that succeeded with a library of the list failed, and no
 * message: a reattach (the first attach's outcomes stand, and it says
 * nothing), or ROCm's side, where a library not mapped after the call is
 * all that can be seen. The record names the library, so that every failure
 * line has its cause.
 */
static void reattach_note(struct rn_target *t, const char *tools)
{
	size_t k = 0, len = sizeof(t->message);
	const char *p = tools;

	if (t->windows)
		k += (size_t)snprintf(t->message, len,
				      "reattached; not in this process since its first attach "
				      "(which failed to load it; a reattach loads no library):");
	else
		k += (size_t)snprintf(t->message, len,
				      "attached; not in this process after the attach:");
	for (size_t i = 0; i < t->tool_n && i < RN_TOOLS_MAX && k < len; i++) {
		size_t n = p ? strcspn(p, ":") : 0;

		if (t->tools[i] == ROCATTACH_TOOL_FAILED && n)
			k += (size_t)snprintf(t->message + k, len - k, " %.*s", (int)n, p);
		else if (t->tools[i] == ROCATTACH_TOOL_FAILED)
			k += (size_t)snprintf(t->message + k, len - k,
					      " library %zu of the tool list", i + 1);
		p = p && p[n] ? p + n + 1 : NULL;
	}
}

/* What the report says of harm: killed by a signal (never an exit), a call that stuck. */
static void harm(struct rn_target *t, const rocattach_report_t *rep)
{
	t->signal = rep->flags & ROCATTACH_REPORT_KILLED ? rep->signal : 0;
	t->timed_out = (rep->flags & ROCATTACH_REPORT_TIMED_OUT) != 0;
}

/*
 * The detach came late: the target had detached its tools itself (a failure
 * of the window, never ok). They were handed back at self_detach_ns (our
 * agent's own clock; on ROCm's side a bound: when the watchdog's call
 * returned), 0 if the target could not tell.
 */
static void self_detached(struct rn_target *t, const rocattach_report_t *rep)
{
	t->self_detached = true;
	t->detach_tool_ns = rep->self_detach_ns;
	t->detach_tool_bound = rep->self_detach_ns && t->side == ROCATTACH_SIDE_ROCM;
	t->detach_call_ns = 0;
	t->state = RN_DETACH_FAILED;
}

#define TARGET_ENV_MAX 16

/* Target t's extras (env_of or env), and ROCPROF_ATTACH_PID with attach_pid_env. */
static const char *const *target_env(const struct rn_target *t, const struct rn_pool_opts *o,
				     const char **buf, char *pid_kv, size_t len)
{
	const char *const *base = o->env_of ? o->env_of(t, o->env_arg) : o->env;
	size_t n = 0;

	if (!o->attach_pid_env)
		return base;
	while (base && base[n] && n < TARGET_ENV_MAX - 2) {
		buf[n] = base[n];
		n++;
	}
	snprintf(pid_kv, len, "ROCPROF_ATTACH_PID=%d", (int)t->pid);
	buf[n++] = pid_kv;
	buf[n] = NULL;
	return buf;
}

static void pool_attach(struct rn_target *t, const struct rn_pool_opts *o)
{
	const char *env_buf[TARGET_ENV_MAX];
	char pid_kv[48];
	rocattach_opts_t ro = {.size = sizeof(ro),
			       .tool_libraries = o->tools,
			       .env = target_env(t, o, env_buf, pid_kv, sizeof(pid_kv)),
			       .start_ns = o->start_ns,
			       .call_timeout_ms = o->call_timeout_ms,
			       .planned_stop_ns = o->planned_stop_ns};
	rocattach_report_t rep = {.size = sizeof(rep)};
	rocattach_status_t st;

	if (o->inject)
		ro.flags |= ROCATTACH_F_INJECT;
	if (rn_rp3_refused(t->pid, t->message, sizeof(t->message))) {
		/* Not sent: the tool would end in an exception. */
		t->status = ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT;
		t->state = RN_ATTACH_FAILED;
		return;
	}
	st = rocattach_attach_ex(t->pid, &ro, &rep);
	t->self_detached = false;
	t->status = st;
	t->agent_status = rep.agent_status;
	if (rep.target_side)
		t->side = rep.target_side;
	t->attach_start_ns = rep.start_ns;
	t->attach_end_ns = rep.end_ns;
	t->attach_tool_ns = rep.tool_ns;
	t->attach_tool_bound = rep.tool_ns_bound;
	t->attach_call_ns = rep.call_start_ns;
	t->attach_ready_ns = 0;
	if (rep.step_ns[ROCATTACH_STEP_CALL]) {
		static const int before_call[] = {ROCATTACH_STEP_PREPARE, ROCATTACH_STEP_INJECT,
						  ROCATTACH_STEP_SEIZE, ROCATTACH_STEP_MMAP,
						  ROCATTACH_STEP_WRITE};

		t->attach_ready_ns = rep.start_ns;
		for (size_t i = 0; i < sizeof(before_call) / sizeof(before_call[0]); i++)
			t->attach_ready_ns += rep.step_ns[before_call[i]];
	}
	t->detach_start_ns = t->detach_end_ns = t->detach_tool_ns = t->detach_call_ns = 0;
	t->detach_tool_bound = false;
	t->late_ns = 0;
	/* A reattach gives no news of the tools: the first attach's outcomes stand. */
	if (rep.tool_count && rep.tool_count <= RN_TOOLS_MAX) {
		t->tool_n = (uint8_t)rep.tool_count;
		memcpy(t->tools, rep.tool_outcome, rep.tool_count);
	}
	copy_message(t, rep.message);
	if (st == ROCATTACH_STATUS_SUCCESS && !t->message[0] && rn_some_tool_failed(t))
		reattach_note(t, o->tools);
	t->watchdog = st == ROCATTACH_STATUS_SUCCESS && (rep.flags & ROCATTACH_REPORT_WATCHDOG);
	harm(t, &rep);
	if (st == ROCATTACH_STATUS_SUCCESS) {
		t->state = RN_ATTACHED;
		t->listener = true;
		rn_rp3_remember(t->pid);
	} else if (rep.flags & ROCATTACH_REPORT_STOPPED) {
		t->state = RN_STOPPED;
	} else if (st == ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND) {
		t->state = RN_EXITED;
	} else {
		/* Every tool declined (our agent tells it): not attached, and no failure. */
		t->state = rn_all_declined(t) ? RN_DECLINED : RN_ATTACH_FAILED;
	}
}

static bool still_stopped(pid_t pid);

/* A late start's report into t's record (the wire's widths). */
static void late_record(struct rn_target *t, const rocattach_late_report_t *r)
{
	t->ls.route = (int8_t)r->route;
	t->ls.initialized = (int8_t)r->initialized;
	t->ls.copies = r->register_copies;
	t->ls.started = r->register_started;
	t->ls.start_ns = r->start_ns;
	t->ls.end_ns = r->end_ns;
	t->ls.begin_ns = r->begin_ns;
	t->ls.done_ns = r->done_ns;
	t->ls.pause_ns = r->pause_ns;
	snprintf(t->ls.sdk, sizeof(t->ls.sdk), "%.*s", (int)sizeof(t->ls.sdk) - 1, r->sdk);
	copy_message(t, r->message);
}

/*
 * --late-start: at the planned start, the pre-checks and the start. ok only
 * when the SDK says it initialized. A process with a listener takes the
 * normal attach instead (as rocattach --late-start does): ls.route says
 * ROCATTACH_LATE_ATTACHABLE, and the window's end detaches it.
 */
static void pool_late(struct rn_target *t, const struct rn_pool_opts *o)
{
	const char *env_buf[TARGET_ENV_MAX];
	char pid_kv[48];
	rocattach_opts_t ro = {.size = sizeof(ro),
			       .tool_libraries = o->tools,
			       .env = target_env(t, o, env_buf, pid_kv, sizeof(pid_kv)),
			       .call_timeout_ms = o->call_timeout_ms};
	rocattach_late_report_t rep = {.size = sizeof(rep)};
	rocattach_status_t st;

	memset(&t->ls, 0, sizeof(t->ls));
	t->ls.tried = true;
	t->ls.planned_ns = o->start_ns;
	t->ls.initialized = -2; /* not asked: no SDK was loaded */
	/* A listener seen at the selection: sent now, its tool held to the start as a window's. */
	if (t->listener) {
		t->ls.route = ROCATTACH_LATE_ATTACHABLE;
		pool_attach(t, o);
		return;
	}
	if (o->start_ns)
		ra_sleep_until_monotonic(ra_monotonic_of_realtime(o->start_ns));
	st = rocattach_late_start(t->pid, &ro, &rep);
	if (rep.route == ROCATTACH_LATE_ATTACHABLE) {
		/* One that came since: the pre-checks only read; its attach starts late. */
		t->ls.route = ROCATTACH_LATE_ATTACHABLE;
		pool_attach(t, o);
		return;
	}
	late_record(t, &rep);
	t->status = st;
	if (st == ROCATTACH_STATUS_SUCCESS && rep.route == ROCATTACH_LATE_STARTED &&
	    rep.initialized == 1)
		t->state = RN_LATE_STARTED;
	else if (st == ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND)
		t->state = RN_EXITED;
	else if (rep.route == ROCATTACH_LATE_REFUSED && still_stopped(t->pid))
		t->state = RN_STOPPED; /* refused, nothing touched: left stopped */
	else
		t->state = RN_ATTACH_FAILED;
	if (t->state != RN_LATE_STARTED && !t->status)
		t->status = ROCATTACH_STATUS_ERROR;
}

static void pool_detach(struct rn_target *t, const struct rn_pool_opts *o)
{
	rocattach_opts_t ro = {
	    .size = sizeof(ro), .stop_ns = o->stop_ns, .call_timeout_ms = o->call_timeout_ms};
	rocattach_report_t rep = {.size = sizeof(rep)};
	rocattach_status_t st;

	if (t->state == RN_DIED_ATTACHED) {
		/* Only its session goes: the process is gone, as the library says (NOT_FOUND). */
		st = rocattach_detach_ex(t->pid, &ro, &rep);
		if (st != ROCATTACH_STATUS_SUCCESS &&
		    st != ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND)
			copy_message(t, rep.message);
		return;
	}
	st = rocattach_detach_ex(t->pid, &ro, &rep);
	t->status = st;
	t->agent_status = rep.agent_status;
	t->detach_start_ns = rep.start_ns;
	t->detach_end_ns = rep.end_ns;
	t->detach_tool_ns = rep.tool_ns;
	t->detach_tool_bound = rep.tool_ns_bound;
	t->detach_call_ns = rep.call_start_ns;
	/* A clean detach keeps the attach's word on a tool of the list that failed. */
	if (st != ROCATTACH_STATUS_SUCCESS || !rn_some_tool_failed(t))
		copy_message(t, rep.message);
	harm(t, &rep);
	if (st == ROCATTACH_STATUS_SUCCESS) {
		t->state = RN_DETACHED;
		t->windows++;
	} else if (rep.flags & ROCATTACH_REPORT_SELF_DETACHED) {
		self_detached(t, &rep);
	} else if (rep.flags & ROCATTACH_REPORT_STOPPED) {
		t->state = RN_STOPPED; /* still attached: rn_detach_all tries again */
	} else if (st == ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND) {
		/* Gone before its tools were handed back. */
		t->state = RN_DIED_ATTACHED;
		t->died_ns = rep.start_ns;
		snprintf(t->message, sizeof(t->message),
			 "process %d died with its tools attached (found gone at the detach)",
			 (int)t->pid);
	} else {
		t->state = RN_DETACH_FAILED;
	}
}

static void window_returned(struct rn_window *w, size_t i);
static void detach_some(struct rn_target *t, size_t n, const struct rn_pool_opts *o,
			const bool *only);

static void *pool_worker(void *arg)
{
	struct pool *p = arg;
	size_t i, done;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		if ((p->only && !p->only[i]) || !wanted(&p->t[i], p->attach))
			continue;
		if (p->attach && p->o->late_start)
			pool_late(&p->t[i], p->o);
		else if (p->attach)
			pool_attach(&p->t[i], p->o);
		else
			pool_detach(&p->t[i], p->o);
		if (p->win)
			window_returned(p->win, i);
		done = atomic_fetch_add(&p->done, 1) + 1;
		if (p->o->progress)
			p->o->progress(done, p->todo, p->o->user);
	}
	return NULL;
}

/* Targets the pool will call (wanted, and among only). */
static size_t pool_todo(const struct pool *p)
{
	size_t todo = 0;

	for (size_t i = 0; i < p->n; i++)
		todo += (!p->only || p->only[i]) && wanted(&p->t[i], p->attach);
	return todo;
}

/*
 * Start up to jobs workers on p, stack-bounded (POOL_STACK_BYTES); th holds
 * room for jobs. Returns how many started.
 */
static int pool_spawn(struct pool *p, pthread_t *th, int jobs)
{
	pthread_attr_t attr;
	int started = 0;
	bool sized = !pthread_attr_init(&attr);

	if (sized && pthread_attr_setstacksize(&attr, POOL_STACK_BYTES))
		pthread_attr_destroy(&attr), sized = false;
	/* A failed create just means fewer workers. */
	for (int k = 0; th && k < jobs; k++)
		if (!pthread_create(&th[started], sized ? &attr : NULL, pool_worker, p))
			started++;
	if (sized)
		pthread_attr_destroy(&attr);
	return started;
}

static const struct rn_pool_opts pool_defaults;

/* Returns how many of the workers wanted could not be created (0: all ran). */
static int pool_run(struct rn_target *t, size_t n, const struct rn_pool_opts *o, bool attach,
		    const bool *only)
{
	struct pool p = {
	    .t = t, .n = n, .o = o ? o : &pool_defaults, .attach = attach, .only = only};
	pthread_t *th;
	int jobs, started;

	p.todo = pool_todo(&p);
	if (!p.todo)
		return 0;
	jobs = rn_pool_jobs(p.o, p.todo);
	th = jobs > 1 ? calloc((size_t)jobs - 1, sizeof(*th)) : NULL;
	/* The calling thread is one of the workers. */
	started = pool_spawn(&p, th, jobs - 1);
	pool_worker(&p);
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	free(th);
	return jobs - 1 - started;
}

int rn_attach_all(struct rn_target *t, size_t n, const struct rn_pool_opts *o)
{
	return pool_run(t, n, o, true, NULL);
}

/* ------------------------------------------------------------------------ */
/* A window on its own clock per target. */

/*
 * A target taken for its detach by the worker whose attach returned once
 * the stop was known: at the stop if that is still ahead; else at once, and
 * late by how long after the stop its attach returned.
 */
static void detach_late(struct rn_target *t, const struct rn_pool_opts *d)
{
	struct rn_pool_opts now = *d;

	if (t->state != RN_ATTACHED)
		return;
	if (t->attach_end_ns > d->stop_ns) {
		t->late_ns = t->attach_end_ns - d->stop_ns;
		now.stop_ns = 0;
	}
	pool_detach(t, &now);
}

/*
 * A target's attach returned (or was never made). If the stop is known, its
 * worker detaches it. Sequentially consistent on both sides: the phase is
 * stored here before the stop is read, and rn_window_stop stores the stop
 * before it reads the phases, so at least one side sees the other; the
 * exchange gives the detach to exactly one of them.
 */
static void window_returned(struct rn_window *w, size_t i)
{
	int returned = CALL_RETURNED;

	atomic_store(&w->phase[i], CALL_RETURNED);
	atomic_fetch_sub(&w->pending, 1);
	if (!atomic_load(&w->stopped) ||
	    !atomic_compare_exchange_strong(&w->phase[i], &returned, CALL_TAKEN))
		return;
	detach_late(&w->p.t[i], &w->d);
}

static void window_free(struct rn_window *w)
{
	free(w->phase);
	free(w->taken);
	free(w->th);
	free(w);
}

static struct rn_window *window_alloc(struct rn_target *t, size_t n, const struct rn_pool_opts *o)
{
	struct rn_window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->o = o ? *o : pool_defaults;
	w->p = (struct pool){.t = t, .n = n, .o = &w->o, .attach = true, .win = w};
	w->phase = calloc(n ? n : 1, sizeof(*w->phase));
	w->taken = calloc(n ? n : 1, sizeof(*w->taken));
	if (!w->phase || !w->taken) {
		window_free(w);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		bool call = wanted(&t[i], true);

		atomic_init(&w->phase[i], call ? CALL_IN : CALL_RETURNED);
		w->p.todo += call;
	}
	atomic_init(&w->pending, w->p.todo);
	return w;
}

struct rn_window *rn_window_open(struct rn_target *t, size_t n, const struct rn_pool_opts *o,
				 int *short_by)
{
	struct rn_window *w = window_alloc(t, n, o);
	int jobs;

	*short_by = 0;
	if (!w || !w->p.todo)
		return w;
	jobs = rn_pool_jobs(&w->o, w->p.todo);
	w->th = calloc((size_t)jobs, sizeof(*w->th));
	/* Every worker runs beside the caller, which goes on to the hold. */
	w->started = pool_spawn(&w->p, w->th, jobs);
	*short_by = jobs - w->started;
	if (!w->started)
		pool_worker(&w->p); /* no thread at all: here, before the hold */
	return w;
}

bool rn_window_returned(struct rn_window *w, size_t i)
{
	return atomic_load(&w->phase[i]) != CALL_IN;
}

size_t rn_window_pending(struct rn_window *w)
{
	return atomic_load(&w->pending);
}

void rn_window_stop(struct rn_window *w, const struct rn_pool_opts *o)
{
	if (atomic_load(&w->stopped))
		return; /* stopped already (a node cut off after its stop): done */
	w->d = o ? *o : pool_defaults;
	/* A stop of now: lateness is measured from it. */
	if (!w->d.stop_ns)
		w->d.stop_ns = ra_realtime_ns();
	atomic_store(&w->stopped, true);
	for (size_t i = 0; i < w->p.n; i++) {
		int returned = CALL_RETURNED;

		w->taken[i] = atomic_compare_exchange_strong(&w->phase[i], &returned, CALL_TAKEN);
	}
	detach_some(w->p.t, w->p.n, &w->d, w->taken);
}

void rn_window_close(struct rn_window *w)
{
	if (!w)
		return;
	for (int k = 0; k < w->started; k++)
		pthread_join(w->th[k], NULL);
	/*
	 * Every record is ours again: one its worker detached late and found
	 * stopped is retried as rn_window_stop retried its own share.
	 */
	if (atomic_load(&w->stopped)) {
		for (size_t i = 0; i < w->p.n; i++)
			w->taken[i] = !w->taken[i];
		detach_some(w->p.t, w->p.n, &w->d, w->taken);
	}
	window_free(w);
}

static bool still_stopped(pid_t pid)
{
	struct ra_stat st;

	return !ra_stat_read(NULL, pid, &st) && st.state == 'T';
}

/* Stopped targets whose tools are still attached: back to RN_ATTACHED for another try. */
static size_t retry_stopped(struct rn_target *t, size_t n, bool mark, const bool *only)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (only && !only[i])
			continue;
		if (t[i].state == RN_STOPPED && rocattach_is_attached(t[i].pid)) {
			/* Tried again once it runs: the library would only say it is stopped. */
			if (mark && !still_stopped(t[i].pid))
				t[i].state = RN_ATTACHED;
			k++;
		}
	}
	return k;
}

/*
 * The healthy targets are detached in the first pass, on time and in
 * parallel; a stopped one (refused by the library before any ptrace, its
 * session kept) is tried again every 20 ms until it resumes or until the
 * call timeout after the stop time. Still stopped then: RN_STOPPED, its
 * message saying its tools are still attached.
 */
static void detach_some(struct rn_target *t, size_t n, const struct rn_pool_opts *o,
			const bool *only)
{
	uint64_t ms = o && o->call_timeout_ms ? o->call_timeout_ms : 10000;
	uint64_t stop = o && o->stop_ns ? ra_monotonic_of_realtime(o->stop_ns) : 0;
	uint64_t now = ra_monotonic_ns(), from = stop > now ? stop : now;
	uint64_t deadline = from + ms * RA_NS_PER_MS;
	struct timespec nap = {0, 20 * 1000000};

	pool_run(t, n, o, false, only);
	while (retry_stopped(t, n, false, only) && ra_monotonic_ns() < deadline) {
		nanosleep(&nap, NULL);
		retry_stopped(t, n, true, only);
		pool_run(t, n, o, false, only);
	}
}

void rn_detach_all(struct rn_target *t, size_t n, const struct rn_pool_opts *o)
{
	detach_some(t, n, o, NULL);
}

void rn_probe_sides(struct rn_target *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].listener)
			t[i].side = rocattach_target_side(t[i].pid);
}

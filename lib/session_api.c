/* SPDX-License-Identifier: MIT */
/*
 * Sessions and the public attach/detach API (the other rooms: session.h).
 *
 * A session records that a process is attached. Unlike ROCm's attacher we do
 * not stay the tracer between attach and detach: ptrace is held only while an
 * operation runs. So an open window costs the attacher no thread and no CPU,
 * any thread may detach what another attached, a debugger may attach during
 * the window, and an attacher that dies leaves no tracee behind.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/protocol.h"
#include "log.h"
#include "common/procfs.h"
#include "session.h"

static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct session *sessions;
static __thread char last_error[ROCATTACH_MESSAGE_MAX];

static void op_init(struct op *op)
{
	memset(op, 0, sizeof(*op));
	op->rep.size = sizeof(op->rep);
	op->rep.agent_status = -1;
	op->rep.start_ns = ra_realtime_ns();
	op->t_step = ra_monotonic_ns();
}

/* Where a field ends (libbpf's offsetofend). */
#define FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define REPORT_END(field) FIELD_END(rocattach_report_t, field)

/*
 * The last field this library knows of each struct. A caller's struct is
 * read, and written, up to the end of that field, not up to sizeof: a field
 * added later in what is padding here would otherwise be taken for ours.
 * Tied to the structs: a field added after the last one, or padding left
 * after it, stops the build until the new last field is named here (and,
 * for the report, its end added to report_copy's list).
 */
#define OPTS_LAST planned_stop_ns
#define REPORT_LAST self_detach_ns
_Static_assert(FIELD_END(rocattach_opts_t, OPTS_LAST) == sizeof(rocattach_opts_t),
	       "rocattach_opts_t has a field or padding after OPTS_LAST: name the last field");
_Static_assert(REPORT_END(REPORT_LAST) == sizeof(rocattach_report_t),
	       "rocattach_report_t has a field or padding after REPORT_LAST: name the last field");

/*
 * Into the caller's report, as libbpf's OPTS_SET does: only the fields its
 * size covers whole, and never size itself (an older, smaller struct keeps
 * saying what it is, and nothing past its end is written).
 */
static void report_copy(rocattach_report_t *out, const rocattach_report_t *rep)
{
	/* Where each version of the struct ended: the first had fields up to message. */
	static const size_t ends[] = {REPORT_END(message),	 REPORT_END(target_side),
				      REPORT_END(tool_ns_bound), REPORT_END(call_start_ns),
				      REPORT_END(call_end_ns),	 REPORT_END(flags),
				      REPORT_END(signal),	 REPORT_END(tool_count),
				      REPORT_END(tool_outcome),	 REPORT_END(REPORT_LAST)};
	size_t from = offsetof(rocattach_report_t, status), to = 0;

	if (!out)
		return;
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]) && ends[i] <= out->size; i++)
		to = ends[i];
	if (to)
		memcpy((char *)out + from, (const char *)rep + from, to - from);
}

/* level: how a failure is logged (the status and message are the caller's either way). */
static rocattach_status_t op_finish_at(struct op *op, rocattach_report_t *out, int level)
{
	op->rep.status = op->e.status;
	op->rep.end_ns = ra_realtime_ns();
	snprintf(op->rep.message, sizeof(op->rep.message), "%s", op->e.msg);
	if (op->e.status != ROCATTACH_STATUS_SUCCESS) {
		snprintf(last_error, sizeof(last_error), "%s", op->e.msg);
		ra_log(level, "%s", op->e.msg);
	}
	report_copy(out, &op->rep);
	return op->e.status;
}

static rocattach_status_t op_finish(struct op *op, rocattach_report_t *out)
{
	return op_finish_at(op, out, ROCATTACH_LOG_ERROR);
}

static struct session *find_locked(pid_t pid)
{
	for (struct session *s = sessions; s; s = s->next)
		if (s->pid == pid)
			return s;
	return NULL;
}

/* A new busy session for pid, or NULL (e set) if pid already has one. */
static struct session *claim_new(pid_t pid, struct ra_err *e)
{
	struct session *s = NULL;

	pthread_mutex_lock(&sessions_lock);
	if (find_locked(pid)) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d already has an attach session: detach it first", pid);
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "out of memory");
		goto out;
	}
	s->pid = pid;
	s->busy = true;
	s->next = sessions;
	sessions = s;
out:
	pthread_mutex_unlock(&sessions_lock);
	return s;
}

/* The attached session of pid, marked busy, or NULL (e set). */
static struct session *claim_existing(pid_t pid, struct ra_err *e)
{
	struct session *s;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(pid);
	if (!s || !s->attached) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d has no attach session", pid);
		s = NULL;
	} else if (s->busy) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d: another attach or detach is in progress", pid);
		s = NULL;
	} else {
		s->busy = true;
	}
	pthread_mutex_unlock(&sessions_lock);
	return s;
}

/* End an operation on s: keep it (attached) or drop it. */
static void claim_end(struct session *s, bool keep)
{
	struct session **pp;

	pthread_mutex_lock(&sessions_lock);
	s->busy = false;
	s->attached = keep;
	if (!keep) {
		for (pp = &sessions; *pp; pp = &(*pp)->next) {
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		}
	}
	pthread_mutex_unlock(&sessions_lock);
	if (!keep) {
		free(s->tree);
		free(s);
	}
}

/*
 * The caller's options as this library knows them, libbpf's way (OPTS_VALID
 * in tools/lib/bpf/libbpf_internal.h, torvalds/linux 5577f24cb04a): a
 * smaller (older) struct is read as far as its size goes, the rest is zero;
 * a larger one only if every byte from the end of our last field to its
 * size is zero, so that an option this library does not know is refused,
 * never silently ignored, even one that a newer header put where our struct
 * has padding.
 */
static int copy_opts(rocattach_opts_t *dst, const rocattach_opts_t *src, struct ra_err *e)
{
	const size_t known = FIELD_END(rocattach_opts_t, OPTS_LAST);
	const unsigned char *bytes = (const unsigned char *)src;

	memset(dst, 0, sizeof(*dst));
	dst->size = sizeof(*dst);
	if (!src)
		return 0;
	for (size_t i = known; i < src->size; i++)
		if (bytes[i])
			return ra_err_set(
			    e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			    "rocattach_opts_t of %zu bytes, this library knows its first %zu: byte "
			    "%zu is set, an option this library does not know (built against a "
			    "newer rocattach.h?): zero it, or use a library as new as the header",
			    src->size, known, i);
	memcpy(dst, src, src->size < known ? src->size : known);
	dst->size = sizeof(*dst);
	return 0;
}

/* A call begins: its op, and the caller's options in o. false: refused (op->e set). */
static bool call_begin(struct op *op, rocattach_opts_t *o, const rocattach_opts_t *opts)
{
	op_init(op);
	last_error[0] = '\0';
	return copy_opts(o, opts, &op->e) == 0;
}

static rocattach_status_t api_attach(int pid, const rocattach_opts_t *opts,
				     rocattach_report_t *report)
{
	rocattach_opts_t o;
	struct session *s;
	struct op op;

	if (!call_begin(&op, &o, opts))
		return op_finish(&op, report);
	if (pid <= 0 || pid == getpid()) {
		ra_err_set(&op.e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   pid <= 0 ? "invalid pid %d" : "process %d is the caller itself", pid);
		return op_finish(&op, report);
	}
	s = claim_new(pid, &op.e);
	if (s) {
		s->attached_ns = ra_realtime_ns();
		claim_end(s, ra_session_attach(s, &o, &op) == 0);
	}
	return op_finish(&op, report);
}

static rocattach_status_t api_detach(int pid, const rocattach_opts_t *opts,
				     rocattach_report_t *report)
{
	rocattach_opts_t o;
	struct session *s;
	struct op op;

	if (!call_begin(&op, &o, opts))
		return op_finish(&op, report);
	if (pid <= 0) {
		ra_err_set(&op.e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT, "invalid pid %d", pid);
		return op_finish(&op, report);
	}
	if (ra_check_ahead(pid, "stop", o.stop_ns, &op.e))
		return op_finish(&op, report);
	s = claim_existing(pid, &op.e);
	if (s) {
		int err = ra_session_detach(s, &o, &op);

		claim_end(s, err == -EPERM || err == -EAGAIN);
	}
	/*
	 * A target gone at its detach ended under its tools: news, not an
	 * error of ours (the status says it; a launcher reports it as exited).
	 */
	return op_finish_at(&op, report,
			    op.e.status == ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND
				? ROCATTACH_LOG_INFO
				: ROCATTACH_LOG_ERROR);
}

rocattach_status_t rocattach_attach_ex(int pid, const rocattach_opts_t *opts,
				       rocattach_report_t *report)
{
	return api_attach(pid, opts, report);
}

rocattach_status_t rocattach_detach_ex(int pid, const rocattach_opts_t *opts,
				       rocattach_report_t *report)
{
	return api_detach(pid, opts, report);
}

int rocattach_target_side(int pid)
{
	struct ra_err ignore = {0};
	struct ra_stat st;
	struct lookup l;

	if (pid <= 0 || ra_stat_read(RA_PROCFS, pid, &st) || ra_check_alive(pid, &st, &ignore) ||
	    ra_lookup(pid, st.starttime, &l, &ignore))
		return ROCATTACH_SIDE_UNKNOWN;
	return l.ep.side;
}

rocattach_status_t rocattach_attach(int pid)
{
	return api_attach(pid, NULL, NULL);
}

/*
 * The outcome of a call over many processes (a tree, or every session):
 * each process's call clears last_error, so the failures are kept here and
 * told at the end (rocattach.h: the worst status; the first message, with
 * the count when more failed).
 */
struct many {
	rocattach_status_t worst;
	size_t failed, total;
	char first[ROCATTACH_MESSAGE_MAX];
};

/* How bad a status is: a process that went away least, an unexplained error most. */
static int badness(rocattach_status_t st)
{
	switch (st) {
	case ROCATTACH_STATUS_SUCCESS:
		return 0;
	case ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND:
		return 1;
	case ROCATTACH_STATUS_ERROR_NOT_SUPPORTED:
		return 2;
	case ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT:
		return 3;
	case ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED:
		return 4;
	case ROCATTACH_STATUS_ERROR_PTRACE_ERROR:
		return 5;
	default:
		return 6;
	}
}

static void many_add(struct many *m, rocattach_status_t st)
{
	m->total++;
	if (st == ROCATTACH_STATUS_SUCCESS)
		return;
	if (!m->failed++)
		snprintf(m->first, sizeof(m->first), "%s", last_error);
	if (badness(st) > badness(m->worst))
		m->worst = st;
}

/* The worst status; last_error the first failure's message, with the count if more failed. */
static rocattach_status_t many_end(const struct many *m, const char *verb)
{
	if (m->failed == 1)
		snprintf(last_error, sizeof(last_error), "%s", m->first);
	else if (m->failed > 1)
		snprintf(last_error, sizeof(last_error),
			 "%zu of %zu processes failed to %s; the first: %.400s", m->failed,
			 m->total, verb, m->first);
	else
		last_error[0] = '\0';
	return m->worst;
}

static void record_tree(pid_t root, pid_t *pids, size_t n)
{
	struct session *s;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(root);
	if (s && s->attached) {
		free(s->tree);
		s->tree = pids;
		s->tree_n = n;
		s->has_tree = true;
		pids = NULL;
	}
	pthread_mutex_unlock(&sessions_lock);
	free(pids);
}

/*
 * A descendant without a listener (a child forked without exec) is skipped,
 * unless the caller injects: then it gets the agent like the root.
 */
static bool tree_skips(pid_t root, pid_t pid, const rocattach_opts_t *o)
{
	pid_t tid;

	if (o->flags & ROCATTACH_F_INJECT)
		return false;
	if (ra_find_thread_by_comm(RA_PROCFS, pid, RA_LISTENER_COMM, &tid) != -ENOENT)
		return false;
	ra_warn("attach tree %d: skipping process %d: no attach listener "
		"(a child forked without exec?)",
		root, pid);
	return true;
}

rocattach_status_t rocattach_attach_tree_ex(int pid, const rocattach_opts_t *opts,
					    rocattach_report_t *report)
{
	struct many m = {ROCATTACH_STATUS_SUCCESS, 0, 0, ""};
	rocattach_status_t st;
	pid_t *pids = NULL;
	size_t n = 0, done = 0;
	rocattach_opts_t o;
	struct op op;
	int ret;

	if (!call_begin(&op, &o, opts))
		return op_finish(&op, report);
	if (pid <= 0)
		return api_attach(pid, &o, report);
	ret = ra_tree(RA_PROCFS, pid, &pids, &n);
	if (ret) {
		ra_no_process(pid, ret, &op.e);
		return op_finish(&op, report);
	}
	st = api_attach(pid, &o, report);
	if (st != ROCATTACH_STATUS_SUCCESS)
		goto out;
	many_add(&m, st);
	pids[done++] = pid;
	for (size_t i = 1; i < n; i++) {
		if (tree_skips(pid, pids[i], &o))
			continue;
		st = api_attach(pids[i], &o, NULL);
		many_add(&m, st);
		if (st == ROCATTACH_STATUS_SUCCESS)
			pids[done++] = pids[i];
	}
	record_tree(pid, pids, done);
	return many_end(&m, "attach");
out:
	free(pids);
	return st;
}

rocattach_status_t rocattach_attach_tree(int pid)
{
	return rocattach_attach_tree_ex(pid, NULL, NULL);
}

rocattach_status_t rocattach_detach_tree(int pid)
{
	struct many m = {ROCATTACH_STATUS_SUCCESS, 0, 0, ""};
	struct session *s;
	pid_t *pids = NULL;
	size_t n = 0;
	struct op op;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(pid);
	if (s && s->has_tree) {
		pids = s->tree;
		n = s->tree_n;
		s->tree = NULL;
		s->tree_n = 0;
		s->has_tree = false;
	}
	pthread_mutex_unlock(&sessions_lock);
	if (!pids) {
		op_init(&op);
		ra_err_set(&op.e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d has no tree attach session", pid);
		return op_finish(&op, NULL);
	}
	for (size_t i = 0; i < n; i++)
		many_add(&m, api_detach(pids[i], NULL, NULL));
	free(pids);
	return many_end(&m, "detach");
}

rocattach_status_t rocattach_detach(int pid)
{
	struct many m = {ROCATTACH_STATUS_SUCCESS, 0, 0, ""};
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct op op;

	if (pid != 0)
		return api_detach(pid, NULL, NULL);
	pthread_mutex_lock(&sessions_lock);
	for (struct session *s = sessions; s; s = s->next)
		cap++;
	pids = calloc(cap ? cap : 1, sizeof(*pids));
	for (struct session *s = sessions; s && pids; s = s->next)
		if (s->attached && !s->busy)
			pids[n++] = s->pid;
	pthread_mutex_unlock(&sessions_lock);
	if (!pids) {
		op_init(&op);
		ra_err_set(&op.e, ROCATTACH_STATUS_ERROR, "detach of every session: out of memory");
		return op_finish(&op, NULL);
	}
	for (size_t i = 0; i < n; i++)
		many_add(&m, api_detach(pids[i], NULL, NULL));
	free(pids);
	return many_end(&m, "detach");
}

int rocattach_is_attached(int pid)
{
	struct session *s;
	int ret;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(pid);
	ret = s && s->attached;
	pthread_mutex_unlock(&sessions_lock);
	return ret;
}

const char *rocattach_last_error(void)
{
	return last_error;
}

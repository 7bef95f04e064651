/* SPDX-License-Identifier: MIT */
/*
 * Where a target's listener, side and entry points are, read from /proc and
 * its mapped objects without stopping it, and kept per process: reading
 * every mapped object's ELF is most of an attach's preparation.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "common/protocol.h"
#include "common/procfs.h"
#include "late_check.h"
#include "session.h"
#include "symbols.h"

const char *const ra_entry_names[2] = {RA_ENTRY_ATTACH, RA_ENTRY_DETACH};
static const char *const entry_objects[] = {RA_ROCM_REGISTER_PREFIX, RA_AGENT_PREFIX, NULL};
static const char *const agent_names[AGENT_SYMS] = {
    RA_AGENT_MARKER,	 RA_AGENT_TOOL_NS,	 RA_AGENT_DETACH_AT,
    RA_AGENT_LAST_ERROR, RA_AGENT_TOOL_EVENT_NS, RA_AGENT_TOOL_OUTCOME,
    RA_AGENT_CURRENT,	 RA_AGENT_LISTENER_BUSY, RA_AGENT_WINDOW};

rocattach_status_t ra_no_process(pid_t pid, int err, struct ra_err *e)
{
	if (err == -ESRCH || err == -ENOENT)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				  "process %d does not exist", pid);
	return ra_err_set(e, ROCATTACH_STATUS_ERROR, "reading /proc/%d: %s", pid, strerror(-err));
}

static int find_listener(pid_t pid, pid_t *tid, struct ra_err *e)
{
	int ret = ra_find_thread_by_comm(RA_PROCFS, pid, RA_LISTENER_COMM, tid);

	if (ret == -ENOENT && ra_late_maps_register(RA_PROCFS, pid))
		return ra_err_set(
		    e, ROCATTACH_STATUS_ERROR,
		    "process %d runs ROCm but was not started with ROCP_TOOL_ATTACH=1 "
		    "(no listener): --late-start can load the tool into it for the "
		    "rest of its life (API tracing from the next call, dispatches on "
		    "queues created from then on; no detach), or --inject",
		    pid);
	if (ret == -ENOENT)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d has no attach listener (no thread named '%s'): start "
				  "it with ROCP_TOOL_ATTACH=1 (and LD_PRELOAD=" RA_AGENT_PREFIX " "
				  "if it does not use ROCm), or attach with --inject",
				  pid, RA_LISTENER_COMM);
	if (ret)
		return ra_no_process(pid, ret, e);
	return 0;
}

/*
 * Our agent is known by its marker, looked up in the object that exports
 * the entry points only (whatever its file name: it may be installed as
 * librocprofiler-register.so.0); anything else is ROCm's side.
 */
static void find_side(pid_t pid, const struct ra_maps *maps, const char *object, struct entry *ep)
{
	const char *slash = strrchr(object, '/');
	const char *only[] = {slash ? slash + 1 : object, NULL};
	struct ra_err ignore = {0};

	if (ra_symbols_find_only(RA_PROCFS, pid, maps, agent_names, AGENT_SYMS, AGENT_FNS, only,
				 ep->agent, &ignore)) {
		memset(ep->agent, 0, sizeof(ep->agent));
		ep->side = ROCATTACH_SIDE_ROCM;
		return;
	}
	ep->side = ROCATTACH_SIDE_AGENT;
}

static int find_entry_points(pid_t pid, struct entry *ep, char *object, size_t objlen,
			     struct ra_err *e)
{
	struct ra_maps maps = {0};
	uint64_t addrs[2];
	int ret;

	ret = ra_maps_read(RA_PROCFS, pid, &maps);
	if (ret)
		return ra_no_process(pid, ret, e);
	ret = ra_symbols_find(RA_PROCFS, pid, &maps, ra_entry_names, 2, entry_objects, addrs,
			      object, objlen, e);
	if (!ret)
		find_side(pid, &maps, object, ep);
	ra_maps_free(&maps);
	if (ret == -ENOENT)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d has a '%s' thread but no loaded object exports %s "
				  "and %s",
				  pid, RA_LISTENER_COMM, ra_entry_names[0], ra_entry_names[1]);
	if (ret)
		return ret; /* e set by the lookup */
	ep->fn_attach = addrs[0];
	ep->fn_detach = addrs[1];
	return 0;
}

static int proc_threads(pid_t pid)
{
	char path[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/%d/task", RA_PROCFS, pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * A zombie has exited. A process whose main thread alone has exited shows
 * the same 'Z' but runs on; its maps and memory are gone from /proc/PID.
 */
int ra_check_alive(pid_t pid, const struct ra_stat *st, struct ra_err *e)
{
	if (st->state != 'Z' && st->state != 'X')
		return 0;
	if (st->state == 'Z' && proc_threads(pid) > 1)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
				  "process %d: its main thread has exited while other threads "
				  "run on: attaching such a process is not supported",
				  pid);
	return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
			  "process %d is a zombie (exited, not yet reaped)", pid);
}

int ra_check_stopped(pid_t pid, const struct ra_stat *st, bool attaching, struct ra_err *e)
{
	if (st->state != 'T')
		return 0;
	if (attaching)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d is stopped (SIGSTOP/SIGTSTP): not attached; resume "
				  "it with kill -CONT",
				  pid);
	return ra_err_set(e, ROCATTACH_STATUS_ERROR,
			  "process %d is stopped (SIGSTOP/SIGTSTP) with its tools still attached: "
			  "resume it with kill -CONT, then detach",
			  pid);
}

/*
 * The kept lookups. An entry is used only for the same process (pid and
 * start time) while the same listener thread lives in it: an exec replaces
 * the image and the addresses, but it also ends every thread but the main one.
 */
#define LOOKUPS 256 /* direct-mapped by pid */
static struct lookup lookups[LOOKUPS];
static pthread_mutex_t lookups_lock = PTHREAD_MUTEX_INITIALIZER;

bool ra_listener_lives(pid_t pid, pid_t tid)
{
	char path[64], *comm = NULL;
	size_t len;
	bool ok;

	snprintf(path, sizeof(path), "%s/%d/task/%d/comm", RA_PROCFS, pid, tid);
	if (ra_read_file(path, &comm, &len))
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	ok = !strcmp(comm, RA_LISTENER_COMM);
	free(comm);
	return ok;
}

/* The kept lookup of pid started at starttime, if its listener still lives. */
static bool lookup_get(pid_t pid, uint64_t starttime, struct lookup *out)
{
	pthread_mutex_lock(&lookups_lock);
	*out = lookups[pid % LOOKUPS];
	pthread_mutex_unlock(&lookups_lock);
	return out->pid == pid && out->starttime == starttime && ra_listener_lives(pid, out->tid);
}

static void lookup_put(const struct lookup *l)
{
	pthread_mutex_lock(&lookups_lock);
	lookups[l->pid % LOOKUPS] = *l;
	pthread_mutex_unlock(&lookups_lock);
}

/* What a remote operation on s's listener learnt of its stack, kept for the next. */
void ra_keep_stack(struct session *s, const struct ra_remote *r)
{
	struct lookup *l = &lookups[s->pid % LOOKUPS];

	s->stack_lo = r->stack_lo;
	s->stack_hi = r->stack_hi;
	pthread_mutex_lock(&lookups_lock);
	if (l->pid == s->pid && l->starttime == s->starttime && l->tid == s->tid) {
		l->stack_lo = r->stack_lo;
		l->stack_hi = r->stack_hi;
	}
	pthread_mutex_unlock(&lookups_lock);
}

void ra_lookup_mark_stuck(pid_t pid, uint64_t starttime, const char *what)
{
	struct lookup *l = &lookups[pid % LOOKUPS];

	pthread_mutex_lock(&lookups_lock);
	if (l->pid == pid && l->starttime == starttime)
		snprintf(l->stuck, sizeof(l->stuck), "%s", what);
	pthread_mutex_unlock(&lookups_lock);
}

/*
 * A listener left in a call that outlived its deadline is not driven again
 * until it is back in the park: seizing it in the tool's code would run the
 * entry point on top of the stuck call.
 */
int ra_check_stuck(const struct session *s, struct ra_err *e)
{
	struct lookup *l = &lookups[s->pid % LOOKUPS];
	char what[sizeof(l->stuck)] = "";

	pthread_mutex_lock(&lookups_lock);
	if (l->pid == s->pid && l->starttime == s->starttime && l->tid == s->tid)
		memcpy(what, l->stuck, sizeof(what));
	pthread_mutex_unlock(&lookups_lock);
	if (!what[0])
		return 0;
	if (ra_remote_parked_at(s->pid, s->tid, s->tramp) == 1) {
		ra_lookup_mark_stuck(s->pid, s->starttime, "");
		return 0;
	}
	return ra_err_set(e, ROCATTACH_STATUS_ERROR,
			  "process %d: its attach listener (thread %d) is still inside %s, an "
			  "earlier call that did not return in time: not driven again until it "
			  "returns (the process runs on)",
			  s->pid, s->tid, what);
}

bool ra_lookup_told_window(pid_t pid, uint64_t starttime, uint64_t v)
{
	struct lookup *l = &lookups[pid % LOOKUPS];
	bool first = true;

	pthread_mutex_lock(&lookups_lock);
	if (l->pid == pid && l->starttime == starttime) {
		first = l->told_window != v;
		l->told_window = v;
	}
	pthread_mutex_unlock(&lookups_lock);
	return first;
}

/* What an attach learnt of pid's target side, kept for its next windows. */
void ra_lookup_keep_entry(pid_t pid, uint64_t starttime, const struct entry *ep)
{
	struct lookup *l = &lookups[pid % LOOKUPS];

	pthread_mutex_lock(&lookups_lock);
	if (l->pid == pid && l->starttime == starttime) {
		l->ep.preloaded = ep->preloaded;
		l->ep.wd_attach = ep->wd_attach;
		l->ep.wd_detach = ep->wd_detach;
		l->ep.wd_window = ep->wd_window;
	}
	pthread_mutex_unlock(&lookups_lock);
}

/* Listener, side, entry points and trampoline address: kept, else looked up. */
int ra_lookup(pid_t pid, uint64_t starttime, struct lookup *l, struct ra_err *e)
{
	int ret;

	if (lookup_get(pid, starttime, l))
		return 0;
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->starttime = starttime;
	if (find_listener(pid, &l->tid, e) ||
	    find_entry_points(pid, &l->ep, l->object, sizeof(l->object), e))
		return -1;
	ret = ra_auxv_read(RA_PROCFS, pid, AT_ENTRY, &l->tramp);
	if (ret)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d: no AT_ENTRY in /proc/%d/auxv: %s", pid, pid,
				  strerror(-ret));
	lookup_put(l);
	return 0;
}

int ra_find_target(struct session *s, struct prepared *p, struct ra_err *e)
{
	struct lookup l;

	if (ra_lookup(s->pid, s->starttime, &l, e))
		return -1;
	s->tid = l.tid;
	s->tramp = l.tramp;
	s->ep = l.ep;
	s->stack_lo = l.stack_lo;
	s->stack_hi = l.stack_hi;
	snprintf(p->object, sizeof(p->object), "%s", l.object);
	return 0;
}

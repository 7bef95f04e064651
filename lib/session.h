/* SPDX-License-Identifier: MIT */
/*
 * The public API's rooms and what they share (hidden inside librocattach):
 *   session_api.c      the API: the session table, one operation's report,
 *                      the options, trees of processes
 *   session_prepare.c  everything slow and fallible before any ptrace: the
 *                      tool libraries' trust checks, --inject, the payload
 *   session_lookup.c   where a target's listener, side and entry points are,
 *                      kept per process for its next windows
 *   session_drive.c    the seized listener: the payload in place, the entry
 *                      point's (timed) call and its answer, the release
 *   session_end.c      the target's own end: its window record read, a
 *                      window it closed itself reported
 */
#ifndef RA_SESSION_H
#define RA_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <rocattach/rocattach.h>

#include "common/toollist.h"
#include "err.h"
#include "common/procfs.h"
#include "remote.h"

#define RA_DEFAULT_TOOL "librocprofiler-sdk-tool.so.1"

/*
 * What our agent exports beyond the entry points (protocol.h); its marker
 * first; then what only newer agents have (optional, may be variables).
 */
enum {
	AGENT_MARKER,
	AGENT_TOOL_NS,
	AGENT_DETACH_AT,
	AGENT_LAST_ERROR,
	AGENT_FNS,
	AGENT_TOOL_EVENT_NS = AGENT_FNS,
	AGENT_TOOL_OUTCOME,
	AGENT_CURRENT,
	AGENT_LISTENER_BUSY,
	AGENT_WINDOW,
	AGENT_SYMS
};

/* Where a target's side and entry points are: looked up once per process and listener. */
struct entry {
	int side; /* enum rocattach_target_side */
	uint64_t fn_attach, fn_detach;
	uint64_t agent[AGENT_SYMS]; /* our agent's symbols, all 0 on ROCm's side */
	bool preloaded; /* ROCm's side: the tools were loaded ahead (see drive_attach) */
	/* ROCm's side: librocattach-watchdog's calls, once it is loaded (0: not yet) */
	uint64_t wd_attach, wd_detach;
	uint64_t wd_window; /* its RA_WATCHDOG_WINDOW, 0: an older watchdog without it */
};

struct session {
	struct session *next;
	pid_t pid;
	uint64_t stack_lo, stack_hi; /* the listener's stack mapping, once known */
	bool busy;		     /* an attach or detach is running on it */
	bool attached;
	bool watched;	      /* attached through librocattach-watchdog: detach through it too */
	uint64_t attached_ns; /* CLOCK_REALTIME when its attach returned */
	uint64_t starttime;   /* with pid, identifies the process */
	pid_t tid;	      /* listener thread */
	uint64_t tramp;	      /* AT_ENTRY */
	struct entry ep;
	/*
	 * The window this session opened: its number on the target side
	 * (RA_AGENT_WINDOW, RA_WATCHDOG_WINDOW; 0: the side does not tell),
	 * and its planned stop (rocattach_opts_t.planned_stop_ns, 0: none).
	 */
	uint64_t window, planned_stop_ns;
	pid_t *tree; /* recorded by attach_tree on its root */
	size_t tree_n;
	bool has_tree;
};

/* One operation's error, timings and report. */
struct op {
	struct ra_err e;
	rocattach_report_t rep;
	uint64_t t_step;
	uint64_t starttime; /* of the target, once known */
};

/* rocattach_opts_t.call_timeout_ms 0 means this. */
#define RA_CALL_TIMEOUT_MS 10000u

/* A remote call's deadline under o (ns). */
static inline uint64_t ra_call_timeout_ns(const rocattach_opts_t *o)
{
	return (uint64_t)(o->call_timeout_ms ? o->call_timeout_ms : RA_CALL_TIMEOUT_MS) *
	       1000000ull;
}

/*
 * CLOCK_REALTIME by which the target side must get a detach, else it
 * detaches its tools by itself: the planned stop plus the call deadline
 * (0: no planned stop, no such end).
 */
static inline uint64_t ra_self_detach_by(const rocattach_opts_t *o)
{
	return o->planned_stop_ns ? o->planned_stop_ns + ra_call_timeout_ns(o) : 0;
}

struct prepared {
	struct ra_toollist tools;
	const char *tool_path;
	char *payload; /* env buffer, then the tool path */
	size_t env_len, payload_len;
	char object[512];
	/* The attacher as the target sees it (owner_ok: the same pid and time namespace). */
	bool owner_ok;
	pid_t owner_pid;
	unsigned long long owner_start;
	/* ROCm's side: librocattach-watchdog to load, "" for none. */
	char watchdog[4096];
};

/*
 * What the lookup of a process found, kept for its next windows: reading
 * every mapped object's ELF is most of an attach's preparation. An entry is
 * used only for the same process (pid and start time) while the same
 * listener thread lives in it: an exec replaces the image and the
 * addresses, but it also ends every thread but the main one.
 */
struct lookup {
	pid_t pid, tid;
	uint64_t starttime, tramp;
	uint64_t stack_lo, stack_hi; /* the listener's stack mapping, once known */
	struct entry ep;
	char object[512];
	char stuck[160];      /* a call left running after its deadline, "" if none */
	uint64_t told_window; /* the last window closed by the target itself that was said */
};

/* session_drive.c: close the running step of op; its time goes to step_ns[step]. */
void ra_op_step(struct op *op, enum rocattach_step step);

/* session_prepare.c */
/* The default tool list, one object: p->tool_path == ra_default_tool when nobody named one. */
extern const char ra_default_tool[];
/* The caller's tool list: o's, else ROCPROF_ATTACH_TOOL_LIBRARY (unless secure), else the default.
 */
const char *ra_tool_list_for(const rocattach_opts_t *o);
/* A start or stop time: 0 (none) or not too far ahead. 0, or non-zero with e set. */
int ra_check_ahead(pid_t pid, const char *what, uint64_t at, struct ra_err *e) RA_MUST_CHECK;
/* Checks, the target's lookup and the payload of an attach to s: 0, or non-zero, op->e set. */
int ra_prepare(struct session *s, const rocattach_opts_t *o, struct prepared *p,
	       struct op *op) RA_MUST_CHECK;
void ra_prepared_free(struct prepared *p);

/* session_lookup.c */
extern const char *const ra_entry_names[2]; /* attach, detach */
/* e for a failed read of /proc/PID (err: -errno): gone, or why not. Returns e's status. */
rocattach_status_t ra_no_process(pid_t pid, int err, struct ra_err *e);
/* A zombie, or a process whose main thread alone has exited: non-zero with e set; else 0. */
int ra_check_alive(pid_t pid, const struct ra_stat *st, struct ra_err *e) RA_MUST_CHECK;
/* Is tid of pid still the listener thread? */
bool ra_listener_lives(pid_t pid, pid_t tid);
/* Listener, side, entry points and trampoline of pid: kept, else looked up (0, or e set). */
int ra_lookup(pid_t pid, uint64_t starttime, struct lookup *l, struct ra_err *e) RA_MUST_CHECK;
/* The same into s (and p->object). */
int ra_find_target(struct session *s, struct prepared *p, struct ra_err *e) RA_MUST_CHECK;
/* What a remote operation on s's listener learnt of its stack, kept for the next. */
void ra_keep_stack(struct session *s, const struct ra_remote *r);
/* ROCm's side of pid: what an attach learnt (tools loaded ahead, the watchdog's calls). */
void ra_lookup_keep_entry(pid_t pid, uint64_t starttime, const struct entry *ep);
/*
 * A call into pid's listener outlived its deadline and was left running
 * (what: the call, as said in the error). Until the listener is seen back in
 * the park, ra_check_stuck refuses it: non-zero with e set.
 */
void ra_lookup_mark_stuck(pid_t pid, uint64_t starttime, const char *what);
int ra_check_stuck(const struct session *s, struct ra_err *e) RA_MUST_CHECK;
/* Stopped (group-stop, State T)? Non-zero with e set; attaching: before it, else during the window.
 */
int ra_check_stopped(pid_t pid, const struct ra_stat *st, bool attaching,
		     struct ra_err *e) RA_MUST_CHECK;

/*
 * Window v of pid (started at starttime) was closed by its target side
 * itself: true the first time this is asked for v (say it), false after.
 */
bool ra_lookup_told_window(pid_t pid, uint64_t starttime, uint64_t v);

/*
 * session_end.c: the target's own end (planned_stop_ns), read from its
 * window record without stopping it.
 */
/* After a successful attach: the window's number and planned stop, kept in s. */
void ra_end_after_attach(struct session *s, const rocattach_opts_t *o);
/* Before an attach call: a previous window closed by the target itself is said once (op->rep). */
void ra_end_before_attach(struct session *s, struct op *op);
/*
 * Before a detach: -ECANCELED with op->e and op->rep set if s's window was
 * closed by the target itself (make no call), else 0. After a detach call
 * that failed: the same, to explain it.
 */
int ra_end_before_detach(struct session *s, struct op *op) RA_MUST_CHECK;
int ra_end_after_failed_detach(struct session *s, struct op *op) RA_MUST_CHECK;

/*
 * session_drive.c: one attach or detach of s, prepared and driven. 0, or
 * non-zero with op->e set; a detach returns -EPERM only when the listener
 * could not be seized (a debugger holds it, say): nothing was done, the
 * caller may retry.
 */
int ra_session_attach(struct session *s, const rocattach_opts_t *o, struct op *op) RA_MUST_CHECK;
int ra_session_detach(struct session *s, const rocattach_opts_t *o, struct op *op) RA_MUST_CHECK;

#endif

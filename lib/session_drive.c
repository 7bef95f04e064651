/* SPDX-License-Identifier: MIT */
/*
 * Driving the target: on the seized listener, the payload goes in place,
 * the entry point is called (at the start or stop time on ROCm's side), its
 * answer is read (and our agent's explanation), and the thread is released.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rocattach/tool.h>

#include "common/clock.h"
#include "inject.h"
#include "log.h"
#include "common/procfs.h"
#include "common/protocol.h"
#include "ptrace_calls.h"
#include "target_memory.h"
#include "remote.h"
#include "session.h"
#include "symbols.h"
#include "tracer.h"

/* Close the running step: its time goes to step_ns[step]. */
void ra_op_step(struct op *op, enum rocattach_step step)
{
	uint64_t now = ra_monotonic_ns();

	op->rep.step_ns[step] += now - op->t_step;
	op->t_step = now;
}

/*
 * CLOCK_REALTIME when the target's agent called the tools (which 0: attach,
 * 1: detach): read from its memory, or from an older agent by a call.
 */
static uint64_t tool_clock(struct ra_remote *r, const struct entry *ep, int which)
{
	uint64_t arg = (uint64_t)which, ns = 0;
	struct ra_err ignore = {0};

	if (ep->agent[AGENT_TOOL_EVENT_NS]) {
		if (ra_mem_read(r->pid, ep->agent[AGENT_TOOL_EVENT_NS] + 8 * (uint64_t)which, &ns,
				sizeof(ns), &ignore))
			ns = 0;
		return ns;
	}
	if (!ep->agent[AGENT_TOOL_NS] || ra_remote_call(r, ep->agent[AGENT_TOOL_NS], &arg, 1, &ns))
		ns = 0;
	return ns;
}

static const char *register_error_name(int v)
{
	static const char *const names[] = {"SUCCESS",		 "NO_TOOLS",
					    "DEADLOCK",		 "BAD_API_TABLE_LENGTH",
					    "UNSUPPORTED_API",	 "INVALID_API_ADDRESS",
					    "ROCPROFILER_ERROR", "EXCESS_API_INSTANCES",
					    "INVALID_ARGUMENT",	 "ATTACHMENT_NOT_AVAILABLE"};

	if (v < 0 || v >= (int)(sizeof(names) / sizeof(names[0])))
		return "unknown error";
	return names[v];
}

/* Our agent explains its failures; ask it (ROCm's rocprofiler-register has no such call). */
static void agent_message(struct ra_remote *r, const struct entry *ep, char *buf, size_t len)
{
	struct ra_err ignore = {0};
	uint64_t str;

	buf[0] = '\0';
	if (ep->agent[AGENT_LAST_ERROR] &&
	    !ra_remote_call(r, ep->agent[AGENT_LAST_ERROR], NULL, 0, &str) && str &&
	    !ra_mem_read(r->pid, str, buf, len - 1, &ignore))
		buf[len - 1] = '\0';
	else
		buf[0] = '\0';
}

/*
 * Our agent answers EXCESS_API_INSTANCES only when another live attacher
 * holds the window; its message names that one. Taken, as a second tracer
 * of ROCm's attacher would be: PTRACE_OPERATION_NOT_PERMITTED. The target
 * is named by our pid for it (the agent's getpid() differs in a container).
 */
static void agent_failed(struct ra_remote *r, const struct entry *ep, const char *fn, int v,
			 struct ra_err *e)
{
	const char *held;
	char why[256];

	agent_message(r, ep, why, sizeof(why));
	held = strstr(why, " is attached by ");
	if (v == ROCATTACH_REGISTER_EXCESS_API_INSTANCES && held) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED, "process %d%s",
			   r->pid, held);
		return;
	}
	if (ep->side == ROCATTACH_SIDE_ROCM && v == ROCATTACH_REGISTER_INVALID_ARGUMENT &&
	    fn == ra_entry_names[0]) {
		/* ROCm's one refusal of a valid call (session_prepare.c, rocm_kept_path). */
		ra_err_set(e, ROCATTACH_STATUS_ERROR,
			   "%s in process %d returned 8 (INVALID_ARGUMENT): ROCm's side keeps the "
			   "tool path of its first attach and refuses another: attach with that "
			   "tool, or start a new process for another",
			   fn, r->pid);
		return;
	}
	ra_err_set(e, ROCATTACH_STATUS_ERROR, "%s in process %d returned %d (%s)%s%s", fn, r->pid,
		   v, register_error_name(v), why[0] ? ": " : "", why);
}

/* Is lib (a name or path of the tool list) the object at path (a maps line's)? */
static bool same_object(const char *lib, const char *path)
{
	const char *base = strrchr(lib, '/');

	if (base)
		return !strcmp(lib, path);
	base = strrchr(path, '/');
	return base && !strcmp(base + 1, lib);
}

/*
 * ROCm's side does not tell what became of each tool. What can be seen:
 * a library of the list that is not mapped in the target did not load
 * (failed); one that is mapped loaded, but whether it declined or took
 * part is unknown. Paths are as the target sees them, so compare the
 * maps' paths with the list's (a bare name by file name).
 */
static void rocm_tool_outcomes(pid_t pid, const struct ra_toollist *tl, rocattach_report_t *rep)
{
	struct ra_maps maps = {0};
	size_t i, k;

	if (ra_maps_read(RA_PROCFS, pid, &maps))
		return;
	for (i = 0; i < tl->n && i < ROCATTACH_TOOLS_MAX; i++) {
		rep->tool_outcome[i] = ROCATTACH_TOOL_FAILED;
		for (k = 0; k < maps.n; k++)
			if (same_object(tl->v[i], maps.v[k].path)) {
				rep->tool_outcome[i] = ROCATTACH_TOOL_UNKNOWN;
				break;
			}
	}
	rep->tool_count = (uint32_t)i;
	ra_maps_free(&maps);
}

/* Our agent keeps what became of each tool of the list (RA_AGENT_TOOL_OUTCOME). */
static void agent_tool_outcomes(struct ra_remote *r, const struct entry *ep,
				rocattach_report_t *rep)
{
	uint8_t v[1 + ROCATTACH_TOOLS_MAX];
	struct ra_err ignore = {0};

	if (!ep->agent[AGENT_TOOL_OUTCOME] ||
	    ra_mem_read(r->pid, ep->agent[AGENT_TOOL_OUTCOME], v, sizeof(v), &ignore) ||
	    v[0] > ROCATTACH_TOOLS_MAX)
		return;
	rep->tool_count = v[0];
	memcpy(rep->tool_outcome, v + 1, v[0]);
}

/*
 * What became of each tool after an attach call. On our agent, a tool that
 * failed while others attached leaves the attach a success: its reason
 * ("attached; skipped: <lib>: <why>") goes into the report's message.
 */
static void tool_outcomes(struct ra_remote *r, const struct entry *ep, const struct ra_toollist *tl,
			  struct op *op)
{
	unsigned int not_loaded = 0;
	bool failed = false;

	if (ep->side != ROCATTACH_SIDE_AGENT) {
		rocm_tool_outcomes(r->pid, tl, &op->rep);
		/* ROCm's side gives no reason: name what did not load. */
		for (uint32_t i = 0; op->rep.agent_status && i < op->rep.tool_count; i++)
			if (op->rep.tool_outcome[i] == ROCATTACH_TOOL_FAILED)
				ra_err_note(&op->e,
					    not_loaded++ ? ", %s"
							 : "; not loaded in the target: %s",
					    tl->v[i]);
		return;
	}
	agent_tool_outcomes(r, ep, &op->rep);
	for (uint32_t i = 0; i < op->rep.tool_count; i++)
		failed |= op->rep.tool_outcome[i] == ROCATTACH_TOOL_FAILED;
	if (failed && !op->rep.agent_status)
		agent_message(r, ep, op->e.msg, sizeof(op->e.msg));
}

/*
 * "the tool's rocprofiler_configure", from our agent's "libx.so:
 * rocprofiler_configure". What a starter thread was to run (marked ahead)
 * names a crash only (ahead_ok): a call that did not return may not have
 * got there.
 */
static const char *current_call(const struct ra_remote *r, const char *fallback, bool ahead_ok,
				char *buf, size_t len, const char **lib)
{
	const char *cur = r->current, *sep;

	*lib = "";
	if (*cur == RA_AGENT_CURRENT_NEXT && !ahead_ok)
		return fallback;
	cur += *cur == RA_AGENT_CURRENT_NEXT;
	if (!*cur)
		return fallback;
	sep = strstr(cur, ": ");
	if (!sep) {
		snprintf(buf, len, "the tool's %s", cur);
		return buf;
	}
	snprintf(buf, len, "the tool's %s", sep + 2);
	*lib = cur;
	return buf;
}

/*
 * A call into the target that did not end in the park: the process was
 * killed during it, or it outlived its deadline (left running, released).
 * The message says which call, and which tool function our agent was in
 * when it could tell. Other failures keep the remote layer's message.
 */
static void call_harmed(struct ra_remote *r, const char *fn, int which, struct op *op)
{
	static const char *const kind[2] = {"attach", "detach"};
	const char *lib, *what;
	char buf[RA_AGENT_CURRENT_MAX + 16], left[160] = "not traced";
	int liblen;

	what = current_call(r, fn, !r->timed_out, buf, sizeof(buf), &lib);
	liblen = *lib ? (int)(strstr(lib, ": ") - lib) : 0;
	if (r->unstopped)
		snprintf(left, sizeof(left),
			 "and did not stop within %.1f s of PTRACE_INTERRUPT (%s)",
			 (double)RA_INTERRUPT_WAIT_NS / 1e9, r->state);
	if (r->timed_out) {
		op->rep.flags |= ROCATTACH_REPORT_TIMED_OUT;
		ra_err_reset(&op->e, ROCATTACH_STATUS_ERROR,
			     "process %d: %s did not return within %.1f s%s%.*s%s; its attach "
			     "listener (thread %d) is left in it, %s: the %s failed",
			     r->pid, what, (double)r->timeout_ns / 1e9, liblen ? " (" : "", liblen,
			     lib, liblen ? ")" : "", r->tid, left, kind[which]);
		ra_lookup_mark_stuck(r->pid, op->starttime, what);
	} else if (r->killed_sig) {
		const char *abbrev = sigabbrev_np(r->killed_sig);

		op->rep.flags |= ROCATTACH_REPORT_KILLED;
		op->rep.signal = r->killed_sig;
		ra_err_reset(&op->e, ROCATTACH_STATUS_ERROR,
			     "process %d was killed by SIG%s during the %s call, in %s%s%.*s%s",
			     r->pid, abbrev ? abbrev : "?", kind[which], what, liblen ? " (" : "",
			     liblen, lib, liblen ? ")" : "");
	}
}

/*
 * The entry point's call, timed for the report. ROCm's side calls the
 * tools inside it and knows no start or stop time, so on that side the call
 * itself begins at the time (everything else is done by now, the listener
 * is stopped in our hands: the thread sleeps in the target until the time
 * and makes the call itself), and the report's tool time is its bound: the
 * call's end (the tools ran inside the call).
 */
static int call_entry(struct ra_remote *r, const struct entry *ep, uint64_t fn, uint64_t at,
		      const uint64_t *args, int n, struct op *op, int which)
{
	uint64_t ret;
	int err;

	/*
	 * Only ROCm's call edges are reported as times, and that call is short
	 * (begun at the time). Our agent's call waits in the target for the
	 * time: watching it closely would burn the CPUs the hand-over needs.
	 */
	r->tight = ep->side == ROCATTACH_SIDE_ROCM;
	/* Our agent waits in the target for the time: the deadline counts from then. */
	if (at > r->not_before_ns)
		r->not_before_ns = at;
	if (ep->side == ROCATTACH_SIDE_ROCM && at)
		err = ra_remote_call_at(r, fn, args, n, at, &ret);
	else
		err = ra_remote_call(r, fn, args, n, &ret);
	r->not_before_ns = 0;
	if (err) {
		/* Only our agent's detach goes through another call (through the watchdog: its
		 * own). */
		call_harmed(r,
			    ep->agent[AGENT_DETACH_AT] && fn == ep->agent[AGENT_DETACH_AT]
				? RA_AGENT_DETACH_AT
				: ra_entry_names[which],
			    which, op);
		return -1;
	}
	op->rep.call_start_ns = r->call_start_ns;
	op->rep.call_end_ns = r->call_end_ns;
	op->rep.agent_status = (int)(int32_t)ret;
	if (op->rep.agent_status) {
		agent_failed(r, ep, ra_entry_names[which], op->rep.agent_status, &op->e);
		return 0;
	}
	if (ep->side == ROCATTACH_SIDE_AGENT) {
		op->rep.tool_ns = tool_clock(r, ep, which);
	} else {
		op->rep.tool_ns = r->call_end_ns;
		op->rep.tool_ns_bound = 1;
	}
	return 0;
}

/*
 * The payload goes onto the listener's own stack when it fits: nothing to
 * unmap, and nothing left behind if we die during the call. Else into a
 * temporary mapping (*mapped), which such a death would leak.
 */
static int place_payload(struct prepared *p, struct ra_remote *r, struct op *op, uint64_t *addr,
			 bool *mapped)
{
	*mapped = false;
	if (!ra_remote_stack_push(r, p->payload, p->payload_len, addr)) {
		ra_op_step(op, ROCATTACH_STEP_WRITE);
		return 0;
	}
	if (ra_remote_mmap(r, p->payload_len, addr))
		return -1;
	*mapped = true;
	ra_op_step(op, ROCATTACH_STEP_MMAP);
	if (ra_mem_write(r->pid, *addr, p->payload, p->payload_len, &op->e))
		return -1;
	ra_op_step(op, ROCATTACH_STEP_WRITE);
	return 0;
}

/*
 * ROCm's side loads the tools inside the attach call, at the start time:
 * a first window would open late and spread by each target's load time.
 * So with a start time, the tools are loaded ahead on the listener we
 * hold; ROCm's own dlopen at the start time then finds them loaded.
 */
static int preload_tools(struct session *s, const rocattach_opts_t *o, struct prepared *p,
			 struct ra_remote *r)
{
	if (s->ep.side != ROCATTACH_SIDE_ROCM || !o->start_ns || s->ep.preloaded)
		return 0;
	if (ra_preload(r, p->tools.v, p->tools.n))
		return -1;
	s->ep.preloaded = true;
	ra_lookup_keep_entry(s->pid, s->starttime, &s->ep);
	return 0;
}

/*
 * Nobody named a tool and the default one (ROCm's rocprofiler-sdk tool, absent
 * off ROCm) could not attach: say once which tool was tried, why, and to name
 * one. The agent's reason reads "no tool can attach: <lib>: <why>".
 */
static void default_tool_failed(pid_t pid, struct op *op)
{
	const char *why = strstr(op->e.msg, RA_DEFAULT_TOOL ": ");
	char cause[ROCATTACH_MESSAGE_MAX];

	snprintf(cause, sizeof(cause), "%s", why ? why + strlen(RA_DEFAULT_TOOL ": ") : "");
	/* The fix before the cause: the cause can be long, and a message is cut at its end. */
	ra_err_reset(&op->e, op->e.status,
		     "process %d: the default tool %s cannot attach (no tool list given; "
		     "rocprofiler_register_attach returned %d): give the tool with -t "
		     "/path/to/libtool.so or ROCPROF_ATTACH_TOOL_LIBRARY%s%s",
		     pid, RA_DEFAULT_TOOL, op->rep.agent_status, cause[0] ? "; cause: " : "",
		     cause);
}

/*
 * ROCm's side: librocattach-watchdog loaded on the listener we hold (once
 * per process) and its calls found. false: no watchdog (warned): the entry
 * point is called as it is.
 */
static bool load_watchdog(struct session *s, struct prepared *p, struct ra_remote *r)
{
	static const char *const names[] = {RA_WATCHDOG_ATTACH, RA_WATCHDOG_DETACH,
					    RA_WATCHDOG_WINDOW};
	const char *slash = strrchr(p->watchdog, '/');
	const char *only[] = {slash ? slash + 1 : p->watchdog, RA_WATCHDOG_PREFIX, NULL};
	struct ra_maps maps = {0};
	struct ra_err e = {0};
	uint64_t a[3];
	int ret;

	if (!p->watchdog[0] || s->ep.wd_attach)
		return p->watchdog[0] && s->ep.wd_attach;
	ret = ra_remote_dlopen(r, p->watchdog, &e);
	if (!ret)
		ret = ra_maps_read(RA_PROCFS, s->pid, &maps);
	if (!ret)
		ret = ra_symbols_find_only(RA_PROCFS, s->pid, &maps, names, 3, 2, only, a, &e);
	ra_maps_free(&maps);
	if (ret) {
		ra_warn("process %d: no watchdog: %s", s->pid,
			e.msg[0] ? e.msg : "librocattach-watchdog's calls not found");
		return false;
	}
	s->ep.wd_attach = a[0];
	s->ep.wd_detach = a[1];
	s->ep.wd_window = a[2];
	ra_lookup_keep_entry(s->pid, s->starttime, &s->ep);
	return true;
}

/*
 * The attach call through the watchdog: it calls the entry point with the
 * same arguments and, if that succeeds, watches us, and the window's end
 * (the planned stop plus the call deadline). The call's argument goes onto
 * the listener's stack; *args becomes its address. false: no room, call
 * the entry point as it is.
 */
static bool watchdog_call(struct session *s, const rocattach_opts_t *o, struct prepared *p,
			  struct ra_remote *r, uint64_t *args, struct ra_watchdog_call *c)
{
	*c = (struct ra_watchdog_call){.env = args[0],
				       .path = args[1],
				       .attach_fn = s->ep.fn_attach,
				       .detach_fn = s->ep.fn_detach,
				       .owner_pid = (unsigned long long)p->owner_pid,
				       .owner_start = p->owner_start,
				       .end_ns = ra_self_detach_by(o)};
	if (!ra_remote_stack_push(r, c, sizeof(*c), &args[0]))
		return true;
	ra_warn("process %d: no watchdog: no room on its listener's stack", s->pid);
	return false;
}

/* What the watchdog's attach said: armed (the report says so), or why not. */
static void watchdog_armed(struct session *s, struct ra_remote *r, uint64_t addr, struct op *op)
{
	struct ra_watchdog_call c = {0};
	struct ra_err ignore = {0};

	if (op->rep.agent_status)
		return;
	s->watched = true;
	if (ra_mem_read(r->pid, addr, &c, sizeof(c), &ignore))
		c.err = EIO;
	if (c.armed)
		op->rep.flags |= ROCATTACH_REPORT_WATCHDOG;
	else
		ra_warn("process %d: its watchdog is not armed: %s", s->pid, strerror(c.err));
}

/* Call the attach entry point with the payload in the target (through the watchdog). */
static void drive_attach(struct session *s, const rocattach_opts_t *o, struct prepared *p,
			 struct ra_remote *r, struct op *op)
{
	uint64_t addr = 0, args[2], fn = s->ep.fn_attach;
	struct ra_watchdog_call c;
	bool mapped, wd;
	int n = 2;

	if (place_payload(p, r, op, &addr, &mapped))
		goto unmap;
	args[0] = addr;
	args[1] = addr + p->env_len;
	if (preload_tools(s, o, p, r))
		return;
	wd = load_watchdog(s, p, r) && watchdog_call(s, o, p, r, args, &c);
	/* The previous window (the watchdog's record is known once it is loaded). */
	ra_end_before_attach(s, op);
	if (wd) {
		fn = s->ep.wd_attach;
		n = 1;
	}
	if (call_entry(r, &s->ep, fn, o->start_ns, args, n, op, 0))
		return; /* the thread may be anywhere: leave the mapping */
	tool_outcomes(r, &s->ep, &p->tools, op);
	if (wd)
		watchdog_armed(s, r, args[0], op);
	if (p->tool_path == ra_default_tool &&
	    op->rep.agent_status == ROCATTACH_REGISTER_ROCPROFILER_ERROR)
		default_tool_failed(s->pid, op);
	ra_op_step(op, ROCATTACH_STEP_CALL);
unmap:
	/* A failed munmap is in op->e: the attach fails with it. */
	if (mapped && !ra_remote_munmap(r, addr, p->payload_len))
		ra_op_step(op, ROCATTACH_STEP_MUNMAP);
}

/* Any other remote call (a preload, a munmap) the process was killed in, or that stuck. */
static void harm_flags(const struct ra_remote *r, struct op *op)
{
	if (r->killed_sig) {
		op->rep.flags |= ROCATTACH_REPORT_KILLED;
		op->rep.signal = r->killed_sig;
	}
	if (r->timed_out && !(op->rep.flags & ROCATTACH_REPORT_TIMED_OUT)) {
		op->rep.flags |= ROCATTACH_REPORT_TIMED_OUT;
		ra_lookup_mark_stuck(r->pid, op->starttime, "a remote call");
	}
}

/* Each remote call's deadline, and where our agent says what it runs. */
static void drive_limits(struct ra_remote *r, const struct session *s, const rocattach_opts_t *o)
{
	r->timeout_ns = ra_call_timeout_ns(o);
	r->current_addr = s->ep.agent[AGENT_CURRENT];
}

/*
 * Seize and stop the listener. A listener that could not be stopped to be
 * released is still traced, kept by our tracer thread: flagged. One kept
 * from an earlier operation is not seized again (that would fail with
 * EPERM, "traced by" ourselves): said plainly.
 */
static int begin(struct ra_remote *r, const struct session *s, const rocattach_opts_t *o,
		 struct op *op)
{
	int err;

	if (ra_tracer_keeps(s->pid, s->tid)) {
		ra_err_set(&op->e, ROCATTACH_STATUS_ERROR_PTRACE_ERROR,
			   "process %d: its attach listener (thread %d) is still traced by this "
			   "library, which could not stop it to release it (an uninterruptible "
			   "sleep); it is released when it stops: try again",
			   s->pid, s->tid);
		op->rep.flags |= ROCATTACH_REPORT_TRACED;
		return -ETIMEDOUT;
	}
	err = ra_remote_begin_timed(r, s->pid, s->tid, s->tramp, 0, ra_call_timeout_ns(o), &op->e);
	if (err && r->kept)
		op->rep.flags |= ROCATTACH_REPORT_TRACED;
	return err;
}

/* The release; a thread left traced (kept) is flagged. */
static int end(struct ra_remote *r, struct op *op)
{
	int ret = ra_remote_end(r);

	if (r->kept)
		op->rep.flags |= ROCATTACH_REPORT_TRACED;
	return ret;
}

/*
 * Our agent's listener stopped inside an entry point: an earlier attacher
 * died during its call and the thread is finishing it. A call on top of it
 * would run inside that one (and, were we to die too, leave it unfinished
 * for good, the agent's lock held): not now. Non-zero with op->e set.
 */
static int listener_busy(const struct session *s, const struct ra_remote *r, struct op *op)
{
	struct ra_err ignore = {0};
	int32_t busy = 0;

	if (s->ep.side != ROCATTACH_SIDE_AGENT || !s->ep.agent[AGENT_LISTENER_BUSY] ||
	    ra_mem_read(r->pid, s->ep.agent[AGENT_LISTENER_BUSY], &busy, sizeof(busy), &ignore) ||
	    !busy)
		return 0;
	return ra_err_set(&op->e, ROCATTACH_STATUS_ERROR,
			  "process %d: its attach listener (thread %d) is still inside an earlier "
			  "call (its attacher may have died during it): not driven until it "
			  "returns; try again",
			  s->pid, s->tid);
}

/* 0 once attached, else -1 with op->e set. */
static int attach_here(struct session *s, const rocattach_opts_t *o, struct op *op)
{
	struct prepared p = {0};
	struct ra_remote r;
	int ret = -1;

	if (ra_prepare(s, o, &p, op))
		goto out;
	op->rep.tid = s->tid;
	op->rep.target_side = s->ep.side;
	s->watched = false;
	op->starttime = s->starttime;
	if (ra_check_stuck(s, &op->e))
		goto out;
	ra_op_step(op, ROCATTACH_STEP_PREPARE);
	ra_debug("attach %d: listener %d, entry points in %s (%s), tools %s", s->pid, s->tid,
		 p.object, s->ep.side == ROCATTACH_SIDE_AGENT ? "our agent" : "ROCm's side",
		 p.tool_path);
	if (begin(&r, s, o, op))
		goto out;
	drive_limits(&r, s, o);
	r.stack_lo = s->stack_lo;
	r.stack_hi = s->stack_hi;
	ra_op_step(op, ROCATTACH_STEP_SEIZE);
	if (!listener_busy(s, &r, op))
		drive_attach(s, o, &p, &r, op);
	harm_flags(&r, op);
	ra_keep_stack(s, &r);
	ret = end(&r, op);
	ra_op_step(op, ROCATTACH_STEP_RELEASE);
	/* Our agent watches the attacher named in the buffer (ROCP_ATTACH_OWNER). */
	if (!ret && op->e.status == ROCATTACH_STATUS_SUCCESS &&
	    s->ep.side == ROCATTACH_SIDE_AGENT && p.owner_ok)
		op->rep.flags |= ROCATTACH_REPORT_WATCHDOG;
	if (!ret && op->e.status == ROCATTACH_STATUS_SUCCESS)
		ra_end_after_attach(s, o);
out:
	ra_prepared_free(&p);
	return ret || op->e.status != ROCATTACH_STATUS_SUCCESS ? -1 : 0;
}

/* Is s still the same process with the same listener thread? */
static int still_there(struct session *s, struct op *op)
{
	struct ra_err *e = &op->e;
	struct ra_stat st;

	if (ra_stat_read(RA_PROCFS, s->pid, &st) || st.starttime != s->starttime ||
	    st.state == 'Z' || st.state == 'X')
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				  "process %d exited during the window: it died with its tools "
				  "attached, within %.1f s of the attach",
				  s->pid, (double)(ra_realtime_ns() - s->attached_ns) / 1e9);
	if (ra_check_stopped(s->pid, &st, false, e)) {
		op->rep.flags |= ROCATTACH_REPORT_STOPPED;
		return -EAGAIN;
	}
	/* The listener dies with an exec; a new image means new addresses. */
	if (!ra_listener_lives(s->pid, s->tid))
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d lost its attach listener thread %d during the "
				  "window (exec?)",
				  s->pid, s->tid);
	return 0;
}

/*
 * With a stop time, our agent gets it with the call (detach_at) and hands
 * over at it; ROCm's side gets the plain call, begun at the stop time.
 */
static void drive_detach(struct session *s, uint64_t stop_ns, struct ra_remote *r, struct op *op)
{
	uint64_t fn = s->watched && s->ep.wd_detach ? s->ep.wd_detach : s->ep.fn_detach;

	if (stop_ns && s->ep.side == ROCATTACH_SIDE_AGENT) {
		r->not_before_ns = stop_ns;
		call_entry(r, &s->ep, s->ep.agent[AGENT_DETACH_AT], 0, &stop_ns, 1, op, 1);
		return;
	}
	call_entry(r, &s->ep, fn, stop_ns, NULL, 0, op, 1);
}

/*
 * 0, or -errno with op->e set. -EPERM only when the listener could not be
 * seized (a debugger holds it, say), -EAGAIN when the process is stopped or
 * its listener still in a call left running: nothing was done, the caller
 * may retry.
 */
static int detach_here(struct session *s, const rocattach_opts_t *o, struct op *op)
{
	struct ra_remote r;
	int err;

	op->rep.tid = s->tid;
	op->rep.target_side = s->ep.side;
	op->starttime = s->starttime;
	err = still_there(s, op);
	if (err)
		return err == -EAGAIN ? err : -ESRCH;
	if (ra_check_stuck(s, &op->e))
		return -EAGAIN;
	/* Closed by the target itself: no call (another attacher's window may be open). */
	if (ra_end_before_detach(s, op))
		return -ECANCELED;
	ra_op_step(op, ROCATTACH_STEP_PREPARE);
	err = begin(&r, s, o, op);
	ra_op_step(op, ROCATTACH_STEP_SEIZE);
	/* Not stopped: nothing was done, the tools are still attached. */
	if (err)
		return err == -ETIMEDOUT ? -EAGAIN : err;
	drive_limits(&r, s, o);
	if (listener_busy(s, &r, op)) {
		err = end(&r, op) ? -EIO : -EAGAIN;
		ra_op_step(op, ROCATTACH_STEP_RELEASE);
		return err;
	}
	drive_detach(s, o->stop_ns, &r, op);
	/* Refused: the target may have closed the window itself meanwhile. */
	if (ra_end_after_failed_detach(s, op))
		ra_debug("process %d: detach refused, the target had detached itself", s->pid);
	harm_flags(&r, op);
	ra_op_step(op, ROCATTACH_STEP_CALL);
	err = end(&r, op) ? -EIO : 0;
	ra_op_step(op, ROCATTACH_STEP_RELEASE);
	return err;
}

/* One operation, run whole on a tracer thread of ours (tracer.h says why). */
struct drive_job {
	struct session *s;
	const rocattach_opts_t *o;
	struct op *op;
	bool attach;
};

static int drive_job_run(void *arg)
{
	struct drive_job *j = arg;

	return j->attach ? attach_here(j->s, j->o, j->op) : detach_here(j->s, j->o, j->op);
}

int ra_session_attach(struct session *s, const rocattach_opts_t *o, struct op *op)
{
	struct drive_job j = {s, o, op, true};
	int ret;

	return ra_tracer_run(drive_job_run, &j, &ret, &op->e) ? -1 : ret;
}

int ra_session_detach(struct session *s, const rocattach_opts_t *o, struct op *op)
{
	struct drive_job j = {s, o, op, false};
	int ret;

	/* Nothing was done: the session stays, a retry may do better. */
	return ra_tracer_run(drive_job_run, &j, &ret, &op->e) ? -EAGAIN : ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * Per-target records in words: state, side, signal and tool outcome names,
 * the failure predicates, and JSON for the report (record_wire.c has the
 * wire form).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rocattach/tool.h>

#include "late_json.h"
#include "node.h"

static const char *const state_names[] = {
    [RN_FOUND] = "found",
    [RN_ATTACHED] = "attached",
    [RN_ATTACH_FAILED] = "attach-failed",
    [RN_DETACHED] = "detached",
    [RN_DETACH_FAILED] = "detach-failed",
    [RN_EXITED] = "exited",
    [RN_STOPPED] = "stopped",
    [RN_DIED_ATTACHED] = "died_attached",
    [RN_DECLINED] = "declined",
    [RN_LATE_STARTED] = "late_started",
};

const char *rn_state_name(enum rn_state s)
{
	if ((unsigned)s >= sizeof(state_names) / sizeof(state_names[0]))
		return "unknown";
	return state_names[s];
}

/*
 * The library's tool checks (lib/session_prepare.c: check_file, check_node, the
 * tool list) fail with INVALID_ARGUMENT, before the entry point is called,
 * and their messages start with one of these.
 */
static const char *const tool_check_prefixes[] = {"library ", "refusing library ",
						  "tool library list "};

bool rn_all_declined(const struct rn_target *t)
{
	if (t->agent_status != ROCATTACH_REGISTER_NO_TOOLS || !t->tool_n)
		return false;
	for (size_t i = 0; i < t->tool_n && i < RN_TOOLS_MAX; i++)
		if (t->tools[i] != ROCATTACH_TOOL_DECLINED)
			return false;
	return true;
}

bool rn_tool_failed(const struct rn_target *t)
{
	if (t->state != RN_ATTACH_FAILED)
		return false;
	if (t->agent_status == ROCATTACH_REGISTER_ROCPROFILER_ERROR ||
	    t->agent_status == ROCATTACH_REGISTER_NO_TOOLS)
		return true;
	if (t->status != ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT || t->agent_status != -1)
		return false;
	for (size_t i = 0; i < sizeof(tool_check_prefixes) / sizeof(tool_check_prefixes[0]); i++)
		if (!strncmp(t->message, tool_check_prefixes[i], strlen(tool_check_prefixes[i])))
			return true;
	return false;
}

bool rn_some_tool_failed(const struct rn_target *t)
{
	for (size_t i = 0; i < t->tool_n && i < RN_TOOLS_MAX; i++)
		if (t->tools[i] == ROCATTACH_TOOL_FAILED)
			return true;
	return false;
}

/* ------------------------------------------------------------------------ */
/* JSON. */

static json_t *gpus_json(const struct rn_topo *topo)
{
	size_t len = strnlen(topo->gpus, sizeof(topo->gpus)), i = 0, k;
	json_t *a = json_array();

	while (a && i < len) {
		for (k = i; k < len && topo->gpus[k] != ','; k++)
			;
		if (k > i && json_array_append_new(a, rn_json_str(topo->gpus + i, k - i)) < 0) {
			json_decref(a);
			return NULL;
		}
		i = k + 1;
	}
	return a;
}

/* json_object_set_new takes the value even on failure, NULL included. */
static json_t *topo_json(const struct rn_topo *topo)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "cpus", rn_json_str(topo->cpus, sizeof(topo->cpus)));
	rc |= json_object_set_new(o, "numa", rn_json_str(topo->numa, sizeof(topo->numa)));
	rc |= json_object_set_new(o, "gpus", gpus_json(topo));
	rc |= json_object_set_new(o, "n_cpus", json_integer(topo->n_cpus));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * null when the step never started; end and duration null if it never ended.
 * tool: when the target handed over to the tools (0: unknown, null), with
 * tool_ns_kind "measured" (our agent's clock) or "bound" (ROCm's side: the
 * entry point's call's end, an upper bound: the tools ran inside the call).
 * call_start_ns: when the entry point's call began (null: unknown).
 */
static json_t *step_json(uint64_t start, uint64_t end, uint64_t tool, bool bound, uint64_t call)
{
	bool ended = end >= start;
	json_t *o;
	int rc = 0;

	if (start == 0)
		return json_null();
	o = json_object();
	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "start_ns", json_integer((json_int_t)start));
	rc |= json_object_set_new(o, "end_ns", ended ? json_integer((json_int_t)end) : json_null());
	rc |= json_object_set_new(o, "duration_ns",
				  ended ? json_integer((json_int_t)(end - start)) : json_null());
	rc |=
	    json_object_set_new(o, "tool_ns", tool ? json_integer((json_int_t)tool) : json_null());
	rc |= json_object_set_new(o, "tool_ns_kind",
				  !tool ? json_null() : json_string(bound ? "bound" : "measured"));
	rc |= json_object_set_new(o, "call_start_ns",
				  call ? json_integer((json_int_t)call) : json_null());
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *int_or_null(long long v)
{
	return v == -1 ? json_null() : json_integer(v);
}

const char *rn_side_name(int side)
{
	return side == ROCATTACH_SIDE_AGENT ? "agent" : side == ROCATTACH_SIDE_ROCM ? "rocm" : NULL;
}

uint64_t rn_window_ns(const struct rn_target *t, bool *bound)
{
	uint64_t end = t->detach_tool_ns;

	*bound = t->attach_tool_bound || t->detach_tool_bound;
	if (*bound)
		end = t->detach_call_ns;
	if (!t->attach_tool_ns || !end || end < t->attach_tool_ns)
		return 0;
	return end - t->attach_tool_ns;
}

/*
 * The window the tools got (rn_window_ns): "measured" from our agent's
 * clock, a "lower-bound" on ROCm's side; null when the target did not get
 * both ends.
 */
static json_t *window_json(const struct rn_target *t)
{
	bool bound;
	uint64_t ns = rn_window_ns(t, &bound);

	if (!ns)
		return json_null();
	return json_pack("{s:I, s:s}", "duration_ns", (json_int_t)ns, "kind",
			 bound ? "lower-bound" : "measured");
}

const char *rn_signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

static json_t *signal_json(int sig)
{
	char name[32];

	return sig ? json_string(rn_signal_name(sig, name, sizeof(name))) : json_null();
}

const char *rn_tool_outcome_name(int outcome)
{
	static const char *const names[] = {
	    [ROCATTACH_TOOL_UNKNOWN] = "unknown",
	    [ROCATTACH_TOOL_LOADED] = "loaded",
	    [ROCATTACH_TOOL_DECLINED] = "declined",
	    [ROCATTACH_TOOL_FAILED] = "failed",
	};

	if (outcome < 0 || outcome > ROCATTACH_TOOL_FAILED)
		return "unknown";
	return names[outcome];
}

/* One outcome name per library of the list, in its order; null when not known. */
static json_t *tools_json(const struct rn_target *t)
{
	json_t *a;

	if (!t->tool_n)
		return json_null();
	a = json_array();
	for (size_t i = 0; a && i < t->tool_n; i++)
		if (json_array_append_new(a, json_string(rn_tool_outcome_name(t->tools[i]))) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/*
 * rocattach-mpi --late-start on a process with a listener: not late-started,
 * attached on the normal path (the record's state and steps say how that
 * went), and detached at the window's end.
 */
static json_t *late_attached_json(const struct rn_target *t)
{
	return json_pack(
	    "{s:s, s:b, s:o, s:s}", "outcome", "attached", "stays_until_exit", 0,
	    "planned_start_ns",
	    t->ls.planned_ns ? json_integer((json_int_t)t->ls.planned_ns) : json_null(), "route",
	    "it has an attach listener (started with ROCP_TOOL_ATTACH=1, or given one by "
	    "--inject): attached on the normal path, detached at the window's end");
}

static int set_results(json_t *o, const struct rn_target *t)
{
	const char *status = rocattach_get_status_name(t->status);
	int rc = 0;

	rc |= json_object_set_new(o, "state", json_string(rn_state_name(t->state)));
	rc |= json_object_set_new(o, "status", status ? json_string(status) : json_null());
	rc |= json_object_set_new(o, "agent_status", int_or_null(t->agent_status));
	rc |= json_object_set_new(o, "windows", json_integer(t->windows));
	rc |= json_object_set_new(o, "attach",
				  step_json(t->attach_start_ns, t->attach_end_ns, t->attach_tool_ns,
					    t->attach_tool_bound, t->attach_call_ns));
	rc |= json_object_set_new(o, "detach",
				  step_json(t->detach_start_ns, t->detach_end_ns, t->detach_tool_ns,
					    t->detach_tool_bound, t->detach_call_ns));
	rc |= json_object_set_new(o, "window", window_json(t));
	rc |= json_object_set_new(o, "message",
				  t->message[0] ? rn_json_str(t->message, sizeof(t->message))
						: json_null());
	rc |= json_object_set_new(o, "signal", signal_json(t->signal));
	rc |= json_object_set_new(o, "died_ns",
				  t->died_ns ? json_integer((json_int_t)t->died_ns) : json_null());
	rc |= json_object_set_new(o, "timed_out", json_boolean(t->timed_out));
	rc |= json_object_set_new(o, "self_detached", json_boolean(t->self_detached));
	/* Its attach returned after the window's stop: detached at once, this late. */
	rc |= json_object_set_new(o, "late", json_boolean(t->late_ns != 0));
	rc |= json_object_set_new(o, "late_ns",
				  t->late_ns ? json_integer((json_int_t)t->late_ns) : json_null());
	rc |= json_object_set_new(o, "watchdog", json_boolean(t->watchdog));
	rc |= json_object_set_new(o, "tools", tools_json(t));
	if (t->ls.tried && t->ls.route == ROCATTACH_LATE_ATTACHABLE)
		rc |= json_object_set_new(o, "late_start", late_attached_json(t));
	else if (t->ls.tried)
		rc |= json_object_set_new(o, "late_start", rn_target_late_json(t));
	return rc;
}

struct json_t *rn_target_to_json(const struct rn_target *t)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "pid", json_integer(t->pid));
	rc |= json_object_set_new(o, "nspid", json_integer(t->nspid));
	rc |= json_object_set_new(o, "rank", int_or_null(t->rank));
	rc |= json_object_set_new(o, "uid", json_integer(t->uid));
	rc |= json_object_set_new(o, "ppid", json_integer(t->ppid));
	rc |= json_object_set_new(o, "exe", rn_json_str(t->exe, sizeof(t->exe)));
	rc |= json_object_set_new(o, "listener", json_boolean(t->listener));
	rc |= json_object_set_new(o, "target_side",
				  rn_side_name(t->side) ? json_string(rn_side_name(t->side))
							: json_null());
	rc |= json_object_set_new(o, "topology", topo_json(&t->topo));
	rc |= set_results(o, t);
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

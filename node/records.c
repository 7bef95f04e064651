/* SPDX-License-Identifier: MIT */
/*
 * Per-target records: state names, the compact wire form gathered over MPI,
 * and JSON for the report.
 *
 * Wire form (native byte order, no padding, no pointers):
 *   header: char magic[8] "RNREC1\0\0", uint32 version (REC_VERSION), uint32 count,
 *           char host[256]
 *   count entries, each field by field:
 *     int64 pid, nspid, rank, uid, ppid; char exe[64]; int32 listener, side;
 *     char cpus[64], numa[32], gpus[128]; int32 n_cpus;
 *     int32 state, status, agent_status, windows;
 *     uint64 attach_start_ns, attach_end_ns, detach_start_ns, detach_end_ns;
 *     uint64 attach_tool_ns, detach_tool_ns, detach_call_ns;
 *     int32 bounds (bit 0 attach, 1 detach);
 *     char message[512];
 *     int32 signal; uint64 died_ns;
 *     int32 flags (bit 0 watchdog, 1 timed_out, 2 self_detached);
 *     uint8 tool_n; uint8 tools[64]; uint64 late_ns
 * Strings are NUL-padded to their width. Changing any of this means a new
 * version.
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rocattach/tool.h>

#include "node.h"

#define REC_MAGIC "RNREC1\0\0"
#define REC_VERSION 6u
#define REC_HOST 256
#define REC_HDR_SIZE (8 + 4 + 4 + REC_HOST)
#define REC_ENTRY_SIZE                                                                             \
	(5 * 8 + 64 + 4 + 4 + 64 + 32 + 128 + 4 + 4 * 4 + 7 * 8 + 4 + 512 + 4 + 8 + 4 + 1 +        \
	 RN_TOOLS_MAX + 8)

/* The wire widths are fixed; a header change must come with a new version. */
_Static_assert(sizeof(((struct rn_target *)0)->exe) == 64, "exe width is on the wire");
_Static_assert(sizeof(((struct rn_topo *)0)->cpus) == 64, "cpus width is on the wire");
_Static_assert(sizeof(((struct rn_topo *)0)->numa) == 32, "numa width is on the wire");
_Static_assert(sizeof(((struct rn_topo *)0)->gpus) == 128, "gpus width is on the wire");
_Static_assert(sizeof(((struct rn_target *)0)->message) == 512, "message width is on the wire");

static const char *const state_names[] = {
    [RN_FOUND] = "found",
    [RN_ATTACHED] = "attached",
    [RN_ATTACH_FAILED] = "attach-failed",
    [RN_DETACHED] = "detached",
    [RN_DETACH_FAILED] = "detach-failed",
    [RN_EXITED] = "exited",
    [RN_STOPPED] = "stopped",
    [RN_DIED_ATTACHED] = "died_attached",
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
/* Packing. */

static unsigned char *put(unsigned char *p, const void *v, size_t len)
{
	memcpy(p, v, len);
	return p + len;
}

static unsigned char *put_i64(unsigned char *p, int64_t v)
{
	return put(p, &v, sizeof(v));
}

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
	return put(p, &v, sizeof(v));
}

static unsigned char *put_i32(unsigned char *p, int32_t v)
{
	return put(p, &v, sizeof(v));
}

/* Up to the first NUL, zero-padded: no stale bytes after it go on the wire. */
static unsigned char *put_str(unsigned char *p, const char *s, size_t width)
{
	size_t len = s ? strnlen(s, width - 1) : 0;

	if (len)
		memcpy(p, s, len);
	memset(p + len, 0, width - len);
	return p + width;
}

static unsigned char *pack_target(unsigned char *p, const struct rn_target *t)
{
	p = put_i64(p, t->pid);
	p = put_i64(p, t->nspid);
	p = put_i64(p, t->rank);
	p = put_i64(p, t->uid);
	p = put_i64(p, t->ppid);
	p = put_str(p, t->exe, sizeof(t->exe));
	p = put_i32(p, t->listener);
	p = put_i32(p, t->side);
	p = put_str(p, t->topo.cpus, sizeof(t->topo.cpus));
	p = put_str(p, t->topo.numa, sizeof(t->topo.numa));
	p = put_str(p, t->topo.gpus, sizeof(t->topo.gpus));
	p = put_i32(p, t->topo.n_cpus);
	p = put_i32(p, t->state);
	p = put_i32(p, t->status);
	p = put_i32(p, t->agent_status);
	p = put_i32(p, t->windows);
	p = put_u64(p, t->attach_start_ns);
	p = put_u64(p, t->attach_end_ns);
	p = put_u64(p, t->detach_start_ns);
	p = put_u64(p, t->detach_end_ns);
	p = put_u64(p, t->attach_tool_ns);
	p = put_u64(p, t->detach_tool_ns);
	p = put_u64(p, t->detach_call_ns);
	p = put_i32(p, t->attach_tool_bound | t->detach_tool_bound << 1);
	p = put_str(p, t->message, sizeof(t->message));
	p = put_i32(p, t->signal);
	p = put_u64(p, t->died_ns);
	p = put_i32(p, t->watchdog | t->timed_out << 1 | t->self_detached << 2);
	p = put(p, &t->tool_n, 1);
	p = put(p, t->tools, sizeof(t->tools));
	return put_u64(p, t->late_ns);
}

/* Returns 0 when n cannot be represented (count is 32 bits). */
size_t rn_pack(const char *host, const struct rn_target *t, size_t n, void *buf, size_t len)
{
	uint32_t version = REC_VERSION, count = (uint32_t)n;
	unsigned char *p = buf;
	size_t need, i;

	if (n > UINT32_MAX || n > (SIZE_MAX - REC_HDR_SIZE) / REC_ENTRY_SIZE)
		return 0;
	need = REC_HDR_SIZE + n * REC_ENTRY_SIZE;
	if (!buf || len < need)
		return need;
	p = put(p, REC_MAGIC, 8);
	p = put(p, &version, sizeof(version));
	p = put(p, &count, sizeof(count));
	p = put_str(p, host, REC_HOST);
	for (i = 0; i < n; i++)
		p = pack_target(p, &t[i]);
	return need;
}

/* ------------------------------------------------------------------------ */
/* Unpacking: the length was checked against count before any of this runs. */

static const unsigned char *get(const unsigned char *p, void *v, size_t len)
{
	memcpy(v, p, len);
	return p + len;
}

static const unsigned char *get_str(const unsigned char *p, char *s, size_t width)
{
	memcpy(s, p, width);
	s[width - 1] = '\0';
	return p + width;
}

static const unsigned char *unpack_ids(const unsigned char *p, struct rn_target *t)
{
	int64_t v[5];

	p = get(p, v, sizeof(v));
	t->pid = (pid_t)v[0];
	t->nspid = (pid_t)v[1];
	t->rank = (long)v[2];
	t->uid = (uid_t)v[3];
	t->ppid = (pid_t)v[4];
	return p;
}

/* Enums and the bool must hold a value this version defines. */
static int unpack_target(const unsigned char *p, struct rn_target *t)
{
	int32_t listener, side, n_cpus, state, status, agent, windows, bounds, sig, flags;

	p = unpack_ids(p, t);
	p = get_str(p, t->exe, sizeof(t->exe));
	p = get(p, &listener, sizeof(listener));
	p = get(p, &side, sizeof(side));
	p = get_str(p, t->topo.cpus, sizeof(t->topo.cpus));
	p = get_str(p, t->topo.numa, sizeof(t->topo.numa));
	p = get_str(p, t->topo.gpus, sizeof(t->topo.gpus));
	p = get(p, &n_cpus, sizeof(n_cpus));
	p = get(p, &state, sizeof(state));
	p = get(p, &status, sizeof(status));
	p = get(p, &agent, sizeof(agent));
	p = get(p, &windows, sizeof(windows));
	p = get(p, &t->attach_start_ns, sizeof(uint64_t));
	p = get(p, &t->attach_end_ns, sizeof(uint64_t));
	p = get(p, &t->detach_start_ns, sizeof(uint64_t));
	p = get(p, &t->detach_end_ns, sizeof(uint64_t));
	p = get(p, &t->attach_tool_ns, sizeof(uint64_t));
	p = get(p, &t->detach_tool_ns, sizeof(uint64_t));
	p = get(p, &t->detach_call_ns, sizeof(uint64_t));
	p = get(p, &bounds, sizeof(bounds));
	p = get_str(p, t->message, sizeof(t->message));
	p = get(p, &sig, sizeof(sig));
	p = get(p, &t->died_ns, sizeof(uint64_t));
	p = get(p, &flags, sizeof(flags));
	p = get(p, &t->tool_n, 1);
	p = get(p, t->tools, sizeof(t->tools));
	get(p, &t->late_ns, sizeof(uint64_t));
	if ((listener != 0 && listener != 1) || state < RN_FOUND || state > RN_DIED_ATTACHED ||
	    status < 0 || status >= ROCATTACH_STATUS_LAST || side < ROCATTACH_SIDE_UNKNOWN ||
	    side > ROCATTACH_SIDE_ROCM || bounds < 0 || bounds > 3 || sig < 0 || sig >= 65 ||
	    flags < 0 || flags > 7 || t->tool_n > RN_TOOLS_MAX)
		return -1;
	for (size_t i = 0; i < t->tool_n; i++)
		if (t->tools[i] > ROCATTACH_TOOL_FAILED)
			return -1;
	t->signal = sig;
	t->watchdog = flags & 1;
	t->timed_out = (flags >> 1) & 1;
	t->self_detached = flags >> 2;
	t->listener = listener;
	t->side = side;
	t->attach_tool_bound = bounds & 1;
	t->detach_tool_bound = bounds >> 1;
	t->topo.n_cpus = n_cpus;
	t->state = (enum rn_state)state;
	t->status = (rocattach_status_t)status;
	t->agent_status = agent;
	t->windows = windows;
	return 0;
}

/* The count that len holds exactly, or -1. */
static int64_t check_header(const unsigned char *p, size_t len)
{
	uint32_t version, count;

	if (len < REC_HDR_SIZE || memcmp(p, REC_MAGIC, 8) != 0)
		return -1;
	memcpy(&version, p + 8, sizeof(version));
	memcpy(&count, p + 12, sizeof(count));
	if (version != REC_VERSION)
		return -1;
	len -= REC_HDR_SIZE;
	if (len % REC_ENTRY_SIZE != 0 || len / REC_ENTRY_SIZE != count)
		return -1;
	return count;
}

int rn_unpack(const void *buf, size_t len, char *host, struct rn_target **t, size_t *n)
{
	const unsigned char *p = buf;
	struct rn_target *v;
	int64_t count;
	size_t i;

	if (!buf || !t || !n)
		return -1;
	count = check_header(p, len);
	if (count < 0)
		return -1;
	v = calloc(count ? (size_t)count : 1, sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; i < (size_t)count; i++) {
		if (unpack_target(p + REC_HDR_SIZE + i * REC_ENTRY_SIZE, &v[i]) < 0) {
			free(v);
			return -1;
		}
	}
	if (host)
		get_str(p + 16, host, REC_HOST);
	*t = v;
	*n = (size_t)count;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* JSON. */

struct json_t *rn_json_str(const char *s, size_t width)
{
	size_t len = strnlen(s, width), i;
	json_t *j = json_stringn(s, len);
	char *copy;

	if (j || !(copy = malloc(len ? len : 1)))
		return j;
	for (i = 0; i < len; i++)
		copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	j = json_stringn(copy, len);
	free(copy);
	return j;
}

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
 */
static json_t *step_json(uint64_t start, uint64_t end, uint64_t tool, bool bound)
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
					    t->attach_tool_bound));
	rc |= json_object_set_new(o, "detach",
				  step_json(t->detach_start_ns, t->detach_end_ns, t->detach_tool_ns,
					    t->detach_tool_bound));
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

/* SPDX-License-Identifier: MIT */
/*
 * Per-target records on the wire: the compact form gathered over MPI
 * (record_json.c has their names and JSON).
 *
 * Wire form (native byte order, no padding, no pointers):
 *   header: char magic[8] "RNREC1\0\0", uint32 version (REC_VERSION), uint32 count,
 *           char host[256]
 *   count entries, each field by field:
 *     int64 pid, nspid, rank, uid, ppid; char exe[64], job[64]; int32 listener, side;
 *     char cpus[64], numa[32], gpus[128]; int32 n_cpus;
 *     int32 state, status, agent_status, windows;
 *     uint64 attach_start_ns, attach_end_ns, detach_start_ns, detach_end_ns;
 *     uint64 attach_tool_ns, detach_tool_ns, detach_call_ns;
 *     int32 bounds (bit 0 attach, 1 detach);
 *     char message[512];
 *     int32 signal; uint64 died_ns;
 *     int32 flags (bit 0 watchdog, 1 timed_out, 2 self_detached);
 *     uint8 tool_n; uint8 tools[64]; uint64 late_ns; uint64 attach_call_ns;
 *     --late-start (struct rn_late): int32 tried, route, initialized;
 *     uint32 copies, started; uint64 planned_ns, start_ns, end_ns, begin_ns,
 *     done_ns, pause_ns; char sdk[256]
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
#define REC_VERSION 9u
#define REC_HOST 256
#define REC_HDR_SIZE (8 + 4 + 4 + REC_HOST)
#define REC_ENTRY_SIZE                                                                             \
	(5 * 8 + 64 + 64 + 4 + 4 + 64 + 32 + 128 + 4 + 4 * 4 + 7 * 8 + 4 + 512 + 4 + 8 + 4 + 1 +   \
	 RN_TOOLS_MAX + 8 + 8 + REC_LATE_SIZE)
#define REC_LATE_SIZE (5 * 4 + 6 * 8 + 256)

/* The wire widths are fixed; a header change must come with a new version. */
_Static_assert(sizeof(((struct rn_target *)0)->exe) == 64, "exe width is on the wire");
_Static_assert(sizeof(((struct rn_target *)0)->job) == 64, "job width is on the wire");
_Static_assert(sizeof(((struct rn_topo *)0)->cpus) == 64, "cpus width is on the wire");
_Static_assert(sizeof(((struct rn_topo *)0)->numa) == 32, "numa width is on the wire");
_Static_assert(sizeof(((struct rn_topo *)0)->gpus) == 128, "gpus width is on the wire");
_Static_assert(sizeof(((struct rn_target *)0)->message) == 512, "message width is on the wire");
_Static_assert(sizeof(((struct rn_late *)0)->sdk) == 256, "sdk width is on the wire");

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

static unsigned char *pack_late(unsigned char *p, const struct rn_late *l)
{
	p = put_i32(p, l->tried);
	p = put_i32(p, l->route);
	p = put_i32(p, l->initialized);
	p = put(p, &l->copies, sizeof(l->copies));
	p = put(p, &l->started, sizeof(l->started));
	p = put_u64(p, l->planned_ns);
	p = put_u64(p, l->start_ns);
	p = put_u64(p, l->end_ns);
	p = put_u64(p, l->begin_ns);
	p = put_u64(p, l->done_ns);
	p = put_u64(p, l->pause_ns);
	return put_str(p, l->sdk, sizeof(l->sdk));
}

static unsigned char *pack_target(unsigned char *p, const struct rn_target *t)
{
	p = put_i64(p, t->pid);
	p = put_i64(p, t->nspid);
	p = put_i64(p, t->rank);
	p = put_i64(p, t->uid);
	p = put_i64(p, t->ppid);
	p = put_str(p, t->exe, sizeof(t->exe));
	p = put_str(p, t->job, sizeof(t->job));
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
	p = put_u64(p, t->late_ns);
	p = put_u64(p, t->attach_call_ns);
	return pack_late(p, &t->ls);
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

/* --late-start's word: its values must be the library's (rocattach.h). */
static int unpack_late(const unsigned char *p, struct rn_late *l)
{
	int32_t tried, route, init;

	p = get(p, &tried, sizeof(tried));
	p = get(p, &route, sizeof(route));
	p = get(p, &init, sizeof(init));
	p = get(p, &l->copies, sizeof(l->copies));
	p = get(p, &l->started, sizeof(l->started));
	p = get(p, &l->planned_ns, sizeof(uint64_t));
	p = get(p, &l->start_ns, sizeof(uint64_t));
	p = get(p, &l->end_ns, sizeof(uint64_t));
	p = get(p, &l->begin_ns, sizeof(uint64_t));
	p = get(p, &l->done_ns, sizeof(uint64_t));
	p = get(p, &l->pause_ns, sizeof(uint64_t));
	get_str(p, l->sdk, sizeof(l->sdk));
	if (tried < 0 || tried > 1 || route < ROCATTACH_LATE_REFUSED ||
	    route > ROCATTACH_LATE_FAILED || init < -2 || init > 1)
		return -1;
	l->tried = tried;
	l->route = (int8_t)route;
	l->initialized = (int8_t)init;
	return 0;
}

/* Enums and the bool must hold a value this version defines. */
static int unpack_target(const unsigned char *p, struct rn_target *t)
{
	int32_t listener, side, n_cpus, state, status, agent, windows, bounds, sig, flags;

	p = unpack_ids(p, t);
	p = get_str(p, t->exe, sizeof(t->exe));
	p = get_str(p, t->job, sizeof(t->job));
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
	p = get(p, &t->late_ns, sizeof(uint64_t));
	p = get(p, &t->attach_call_ns, sizeof(uint64_t));
	if (unpack_late(p, &t->ls))
		return -1;
	if ((listener != 0 && listener != 1) || state < RN_FOUND || state > RN_LATE_STARTED ||
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

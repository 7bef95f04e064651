/* SPDX-License-Identifier: MIT */
/*
 * A target's record on the wire (node/record_wire.c): packed, unpacked,
 * refused when malformed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "node.h"
#include "record_fixture.h"

#define HDR 272	   /* magic 8 + version 4 + count 4 + host 256 */
#define ENTRY 1413 /* see the wire layout in node/record_wire.c */

static void assert_target_equal(const struct rn_target *a, const struct rn_target *b)
{
	assert_int_equal(a->pid, b->pid);
	assert_int_equal(a->nspid, b->nspid);
	assert_int_equal(a->rank, b->rank);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->ppid, b->ppid);
	assert_string_equal(a->exe, b->exe);
	assert_string_equal(a->job, b->job);
	assert_int_equal(a->listener, b->listener);
	assert_int_equal(a->side, b->side);
	assert_int_equal(a->attach_tool_bound, b->attach_tool_bound);
	assert_int_equal(a->detach_tool_bound, b->detach_tool_bound);
	assert_string_equal(a->topo.cpus, b->topo.cpus);
	assert_string_equal(a->topo.numa, b->topo.numa);
	assert_string_equal(a->topo.gpus, b->topo.gpus);
	assert_int_equal(a->topo.n_cpus, b->topo.n_cpus);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->agent_status, b->agent_status);
	assert_int_equal(a->windows, b->windows);
	assert_true(a->attach_start_ns == b->attach_start_ns);
	assert_true(a->attach_end_ns == b->attach_end_ns);
	assert_true(a->detach_start_ns == b->detach_start_ns);
	assert_true(a->detach_end_ns == b->detach_end_ns);
	assert_true(a->attach_tool_ns == b->attach_tool_ns);
	assert_true(a->detach_tool_ns == b->detach_tool_ns);
	assert_true(a->detach_call_ns == b->detach_call_ns);
	assert_string_equal(a->message, b->message);
	assert_int_equal(a->signal, b->signal);
	assert_true(a->died_ns == b->died_ns);
	assert_int_equal(a->watchdog, b->watchdog);
	assert_int_equal(a->timed_out, b->timed_out);
	assert_int_equal(a->self_detached, b->self_detached);
	assert_int_equal(a->tool_n, b->tool_n);
	assert_memory_equal(a->tools, b->tools, sizeof(a->tools));
	assert_true(a->late_ns == b->late_ns);
	assert_true(a->attach_call_ns == b->attach_call_ns);
	assert_int_equal(a->ls.tried, b->ls.tried);
	assert_int_equal(a->ls.route, b->ls.route);
	assert_int_equal(a->ls.initialized, b->ls.initialized);
	assert_int_equal(a->ls.copies, b->ls.copies);
	assert_int_equal(a->ls.started, b->ls.started);
	assert_true(a->ls.planned_ns == b->ls.planned_ns);
	assert_true(a->ls.start_ns == b->ls.start_ns);
	assert_true(a->ls.end_ns == b->ls.end_ns);
	assert_true(a->ls.begin_ns == b->ls.begin_ns);
	assert_true(a->ls.done_ns == b->ls.done_ns);
	assert_true(a->ls.pause_ns == b->ls.pause_ns);
	assert_string_equal(a->ls.sdk, b->ls.sdk);
}

static void round_trip(size_t n, bool long_strings)
{
	struct rn_target *in = calloc(n ? n : 1, sizeof(*in)), *out = NULL;
	char host[256], long_host[300];
	size_t size, got = 99, i;
	void *buf;

	assert_non_null(in);
	for (i = 0; i < n; i++)
		make_target(&in[i], i, long_strings);
	fill_str(long_host, sizeof(long_host), "node-\"01\".example\n", 0);
	size = rn_pack(long_host, in, n, NULL, 0);
	assert_int_equal(size, HDR + n * ENTRY);
	buf = malloc(size);
	assert_non_null(buf);
	assert_int_equal(rn_pack(long_host, in, n, buf, size), size);
	assert_int_equal(rn_unpack(buf, size, host, &out, &got), 0);
	assert_int_equal(got, n);
	/* The host is cut to 255 bytes and terminated. */
	assert_int_equal(strlen(host), 255);
	assert_memory_equal(host, long_host, 255);
	for (i = 0; i < n; i++)
		assert_target_equal(&in[i], &out[i]);
	free(out);
	free(buf);
	free(in);
}

static void test_rn_pack_round_trip_empty(void **state)
{
	(void)state;
	round_trip(0, false);
}

static void test_rn_pack_round_trip_one(void **state)
{
	(void)state;
	round_trip(1, false);
	round_trip(1, true);
}

static void test_rn_pack_round_trip_hundred(void **state)
{
	(void)state;
	round_trip(100, false);
	round_trip(100, true);
}

static void test_rn_pack_short_buffer_writes_nothing(void **state)
{
	struct rn_target t;
	unsigned char buf[HDR + ENTRY];
	size_t i;

	(void)state;
	make_target(&t, 1, true);
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(rn_pack("h", &t, 1, buf, sizeof(buf) - 1), sizeof(buf));
	for (i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xa5);
	assert_int_equal(rn_pack(NULL, &t, 1, NULL, 12345), sizeof(buf));
	/* A bigger buffer is fine and only the needed bytes are written. */
	assert_int_equal(rn_pack(NULL, NULL, 0, buf, sizeof(buf)), HDR);
	assert_int_equal(buf[HDR], 0xa5);
}

/* Bytes after a string's NUL never reach the wire. */
static void test_rn_pack_pads_strings_with_zeros(void **state)
{
	struct rn_target a, b;
	unsigned char ba[HDR + ENTRY], bb[HDR + ENTRY];

	(void)state;
	make_target(&a, 2, false);
	b = a;
	memset(a.message, 'A', sizeof(a.message));
	memset(b.message, 'B', sizeof(b.message));
	strcpy(a.message, "same");
	strcpy(b.message, "same");
	assert_int_equal(rn_pack("h", &a, 1, ba, sizeof(ba)), sizeof(ba));
	assert_int_equal(rn_pack("h", &b, 1, bb, sizeof(bb)), sizeof(bb));
	assert_memory_equal(ba, bb, sizeof(ba));
}

/* Pack n targets into a malloc'd buffer. */
static unsigned char *packed(size_t n, size_t *size)
{
	struct rn_target t[3];
	unsigned char *buf;
	size_t i;

	for (i = 0; i < n; i++)
		make_target(&t[i], i + 1, true);
	*size = rn_pack("host", t, n, NULL, 0);
	buf = malloc(*size);
	assert_non_null(buf);
	assert_int_equal(rn_pack("host", t, n, buf, *size), *size);
	return buf;
}

/* A copy of exactly len bytes, so any over-read shows up under ASan. */
static int unpack_copy(const unsigned char *buf, size_t len)
{
	unsigned char *copy = malloc(len ? len : 1);
	struct rn_target *t = NULL;
	char host[256];
	size_t n = 0;
	int ret;

	assert_non_null(copy);
	memcpy(copy, buf, len);
	ret = rn_unpack(copy, len, host, &t, &n);
	if (ret == 0)
		free(t);
	free(copy);
	return ret;
}

static void test_rn_unpack_bad_header(void **state)
{
	size_t size;
	unsigned char *buf = packed(2, &size);
	uint32_t v;

	(void)state;
	assert_int_equal(unpack_copy(buf, size), 0);
	buf[0] ^= 1;
	assert_int_equal(unpack_copy(buf, size), -1);
	buf[0] ^= 1;
	buf[7] = 'x';
	assert_int_equal(unpack_copy(buf, size), -1);
	buf[7] = 0;
	v = 2; /* the version before the target sides: refused, not misread */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 3; /* the version before the tool outcomes */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 4; /* the version with 256-byte messages */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 5; /* the version before late_ns */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 6; /* the version before the job id */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 7; /* the version before attach_call_ns */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 8; /* the version before the late start's word */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 10; /* a version from the future */
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	v = 0;
	memcpy(buf + 8, &v, 4);
	assert_int_equal(unpack_copy(buf, size), -1);
	free(buf);
}

static void test_rn_unpack_count_mismatch(void **state)
{
	uint32_t counts[] = {0, 1, 3, 100, UINT32_MAX, UINT32_MAX / ENTRY + 1};
	size_t size, i;
	unsigned char *buf = packed(2, &size);

	(void)state;
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		memcpy(buf + 12, &counts[i], 4);
		assert_int_equal(unpack_copy(buf, size), -1);
	}
	free(buf);
}

static void test_rn_unpack_truncated_or_extra(void **state)
{
	size_t size, len;
	unsigned char *buf = packed(2, &size), *big;

	(void)state;
	/* Every shorter length, including inside the header and zero. */
	for (len = 0; len < size; len++)
		assert_int_equal(unpack_copy(buf, len), -1);
	big = calloc(1, size + ENTRY + 1);
	assert_non_null(big);
	memcpy(big, buf, size);
	assert_int_equal(unpack_copy(big, size + 1), -1);
	assert_int_equal(unpack_copy(big, size + ENTRY), -1);
	assert_int_equal(unpack_copy(big, size + ENTRY + 1), -1);
	free(big);
	free(buf);
}

/* The late start's tried (0/1), route (0..3) and initialized (-2..1), at the entry's end. */
static void bad_late(unsigned char *buf, size_t size)
{
	size_t late = HDR + ENTRY - 324;
	const struct {
		size_t off;
		int32_t v;
	} bad[] = {{0, 2}, {0, -1}, {4, -1}, {4, ROCATTACH_LATE_FAILED + 1}, {8, -3}, {8, 2}};
	unsigned char save[12];

	memcpy(save, buf + late, 12);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(buf + late + bad[i].off, &bad[i].v, 4);
		assert_int_equal(unpack_copy(buf, size), -1);
		memcpy(buf + late, save, 12);
	}
	assert_int_equal(unpack_copy(buf, size), 0);
}

static void test_rn_unpack_bad_enum(void **state)
{
	size_t size;
	unsigned char *buf = packed(1, &size);
	/* listener, side, state, status, bounds offsets inside the entry. */
	size_t listener = HDR + 40 + 64 + 64, side = listener + 4,
	       st = side + 4 + 64 + 32 + 128 + 4;
	size_t bounds = st + 4 * 4 + 7 * 8;
	int32_t bad[] = {-1, 2, 99, INT32_MIN};
	int32_t badside[] = {-1, ROCATTACH_SIDE_ROCM + 1}, badbounds[] = {-1, 4};
	int32_t badstate[] = {-1, RN_LATE_STARTED + 1, INT32_MAX};
	int32_t badstatus[] = {-1, ROCATTACH_STATUS_LAST};
	unsigned char save[12];
	size_t i;

	(void)state;
	memcpy(save, buf + st, 12);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(buf + listener, &bad[i], 4);
		assert_int_equal(unpack_copy(buf, size), -1);
	}
	memset(buf + listener, 0, 4);
	assert_int_equal(unpack_copy(buf, size), 0);
	for (i = 0; i < 2; i++) {
		memcpy(buf + side, &badside[i], 4);
		assert_int_equal(unpack_copy(buf, size), -1);
		memset(buf + side, 0, 4);
		memcpy(buf + bounds, &badbounds[i], 4);
		assert_int_equal(unpack_copy(buf, size), -1);
		memset(buf + bounds, 0, 4);
	}
	assert_int_equal(unpack_copy(buf, size), 0);
	for (i = 0; i < sizeof(badstate) / sizeof(badstate[0]); i++) {
		memcpy(buf + st, &badstate[i], 4);
		assert_int_equal(unpack_copy(buf, size), -1);
	}
	memcpy(buf + st, save, 12);
	for (i = 0; i < sizeof(badstatus) / sizeof(badstatus[0]); i++) {
		memcpy(buf + st + 4, &badstatus[i], 4);
		assert_int_equal(unpack_copy(buf, size), -1);
	}
	memcpy(buf + st, save, 12);
	assert_int_equal(unpack_copy(buf, size), 0);
	bad_late(buf, size);
	free(buf);
}

/* Strings without a NUL on the wire come back terminated, not overrun. */
static void test_rn_unpack_forces_nul(void **state)
{
	size_t size;
	unsigned char *buf = packed(1, &size);
	struct rn_target *t = NULL;
	char host[256];
	size_t n;

	(void)state;
	memset(buf + 16, 'h', 256);
	memset(buf + HDR + 40, 'e', 64);
	memset(buf + HDR + 40 + 64, 'j', 64);
	memset(buf + HDR + 40 + 64 + 64 + 4 + 4, 'c', 64 + 32 + 128);
	memset(buf + HDR + 480, 'm', 512); /* the message */
	assert_int_equal(rn_unpack(buf, size, host, &t, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(strlen(host), 255);
	assert_int_equal(strlen(t->exe), 63);
	assert_int_equal(strlen(t->job), 63);
	assert_int_equal(strlen(t->topo.cpus), 63);
	assert_int_equal(strlen(t->topo.numa), 31);
	assert_int_equal(strlen(t->topo.gpus), 127);
	assert_int_equal(strlen(t->message), 511);
	free(t);
	free(buf);
}

/* Offsets of the fields in an entry (the wire layout in node/record_wire.c). */
enum {
	E_NSPID = 8,
	E_RANK = 16,
	E_UID = 24,
	E_PPID = 32,
	E_EXE = 40,
	E_JOB = 104,
	E_LISTENER = 168,
	E_SIDE = 172,
	E_CPUS = 176,
	E_NUMA = 240,
	E_GPUS = 272,
	E_NCPUS = 400,
	E_STATE = 404,
	E_STATUS = 408,
	E_AGENT = 412,
	E_WINDOWS = 416,
	E_TIMES = 420,
	E_BOUNDS = 476,
	E_MESSAGE = 480,
	E_SIGNAL = 992,
	E_DIED = 996,
	E_FLAGS = 1004,
	E_TOOL_N = 1008,
	E_TOOLS = 1009,
	E_LATE = 1073,
	E_CALL = 1081,
	/* --late-start's word: tried, route, initialized, copies, started, 6 times, sdk */
	E_LS_TRIED = 1089,
	E_LS_ROUTE = 1093,
	E_LS_INIT = 1097,
	E_LS_COPIES = 1101,
	E_LS_STARTED = 1105,
	E_LS_TIMES = 1109,
	E_LS_SDK = 1157,
};

static int32_t i32_at(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int64_t i64_at(const unsigned char *p)
{
	int64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put_i32_at(unsigned char *p, int32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* What rn_unpack accepts: the enums and the bool hold values this version defines. */
static bool entry_defined(const unsigned char *e)
{
	int32_t listener = i32_at(e + E_LISTENER), side = i32_at(e + E_SIDE);
	int32_t st = i32_at(e + E_STATE), status = i32_at(e + E_STATUS), b = i32_at(e + E_BOUNDS);
	int32_t sig = i32_at(e + E_SIGNAL), flags = i32_at(e + E_FLAGS);
	int32_t tried = i32_at(e + E_LS_TRIED), route = i32_at(e + E_LS_ROUTE);
	int32_t init = i32_at(e + E_LS_INIT);
	bool tools_ok = e[E_TOOL_N] <= RN_TOOLS_MAX;
	bool late_ok = (tried == 0 || tried == 1) && route >= ROCATTACH_LATE_REFUSED &&
		       route <= ROCATTACH_LATE_FAILED && init >= -2 && init <= 1;

	for (size_t k = 0; tools_ok && k < e[E_TOOL_N]; k++)
		tools_ok = e[E_TOOLS + k] <= ROCATTACH_TOOL_FAILED;
	return (listener == 0 || listener == 1) && side >= ROCATTACH_SIDE_UNKNOWN &&
	       side <= ROCATTACH_SIDE_ROCM && st >= RN_FOUND && st <= RN_LATE_STARTED &&
	       status >= 0 && status < ROCATTACH_STATUS_LAST && b >= 0 && b <= 3 && sig >= 0 &&
	       sig < 65 && flags >= 0 && flags <= 7 && tools_ok && late_ok;
}

static void define_entry(unsigned char *e)
{
	put_i32_at(e + E_LISTENER, rand() % 2);
	put_i32_at(e + E_SIDE, rand() % (ROCATTACH_SIDE_ROCM + 1));
	put_i32_at(e + E_STATE, rand() % (RN_LATE_STARTED + 1));
	put_i32_at(e + E_STATUS, rand() % ROCATTACH_STATUS_LAST);
	put_i32_at(e + E_BOUNDS, rand() % 4);
	put_i32_at(e + E_SIGNAL, rand() % 65);
	put_i32_at(e + E_FLAGS, rand() % 8);
	put_i32_at(e + E_LS_TRIED, rand() % 2);
	put_i32_at(e + E_LS_ROUTE, rand() % (ROCATTACH_LATE_FAILED + 1));
	put_i32_at(e + E_LS_INIT, rand() % 4 - 2);
	e[E_TOOL_N] = (unsigned char)(rand() % (RN_TOOLS_MAX + 1));
	for (size_t k = 0; k < e[E_TOOL_N]; k++)
		e[E_TOOLS + k] = (unsigned char)(rand() % (ROCATTACH_TOOL_FAILED + 1));
}

/* A wire string comes back up to its first NUL, at most width - 1 bytes, terminated. */
static void assert_wire_str(const char *got, const unsigned char *wire, size_t width)
{
	size_t len = strnlen((const char *)wire, width - 1);

	assert_int_equal(strnlen(got, width), len);
	assert_memory_equal(got, wire, len);
}

/* Every field of t is what entry e says. */
static void assert_entry(const struct rn_target *t, const unsigned char *e)
{
	uint64_t times[7];
	int32_t bounds = i32_at(e + E_BOUNDS);

	assert_int_equal(t->pid, (pid_t)i64_at(e));
	assert_int_equal(t->nspid, (pid_t)i64_at(e + E_NSPID));
	assert_int_equal(t->rank, (long)i64_at(e + E_RANK));
	assert_int_equal(t->uid, (uid_t)i64_at(e + E_UID));
	assert_int_equal(t->ppid, (pid_t)i64_at(e + E_PPID));
	assert_wire_str(t->exe, e + E_EXE, sizeof(t->exe));
	assert_wire_str(t->job, e + E_JOB, sizeof(t->job));
	assert_int_equal(t->listener, i32_at(e + E_LISTENER));
	assert_int_equal(t->side, i32_at(e + E_SIDE));
	assert_wire_str(t->topo.cpus, e + E_CPUS, sizeof(t->topo.cpus));
	assert_wire_str(t->topo.numa, e + E_NUMA, sizeof(t->topo.numa));
	assert_wire_str(t->topo.gpus, e + E_GPUS, sizeof(t->topo.gpus));
	assert_int_equal(t->topo.n_cpus, i32_at(e + E_NCPUS));
	assert_int_equal(t->state, i32_at(e + E_STATE));
	assert_int_equal(t->status, i32_at(e + E_STATUS));
	assert_int_equal(t->agent_status, i32_at(e + E_AGENT));
	assert_int_equal(t->windows, i32_at(e + E_WINDOWS));
	memcpy(times, e + E_TIMES, sizeof(times));
	assert_true(t->attach_start_ns == times[0] && t->attach_end_ns == times[1] &&
		    t->detach_start_ns == times[2] && t->detach_end_ns == times[3] &&
		    t->attach_tool_ns == times[4] && t->detach_tool_ns == times[5] &&
		    t->detach_call_ns == times[6]);
	assert_int_equal(t->attach_tool_bound, bounds & 1);
	assert_int_equal(t->detach_tool_bound, bounds >> 1);
	assert_wire_str(t->message, e + E_MESSAGE, sizeof(t->message));
	assert_int_equal(t->signal, i32_at(e + E_SIGNAL));
	assert_true(t->died_ns == (uint64_t)i64_at(e + E_DIED));
	assert_int_equal(t->watchdog, i32_at(e + E_FLAGS) & 1);
	assert_int_equal(t->timed_out, (i32_at(e + E_FLAGS) >> 1) & 1);
	assert_int_equal(t->self_detached, i32_at(e + E_FLAGS) >> 2);
	assert_int_equal(t->tool_n, e[E_TOOL_N]);
	assert_memory_equal(t->tools, e + E_TOOLS, RN_TOOLS_MAX);
	assert_true(t->late_ns == (uint64_t)i64_at(e + E_LATE));
	assert_true(t->attach_call_ns == (uint64_t)i64_at(e + E_CALL));
	assert_int_equal(t->ls.tried, i32_at(e + E_LS_TRIED));
	assert_int_equal(t->ls.route, i32_at(e + E_LS_ROUTE));
	assert_int_equal(t->ls.initialized, i32_at(e + E_LS_INIT));
	assert_int_equal(t->ls.copies, (uint32_t)i32_at(e + E_LS_COPIES));
	assert_int_equal(t->ls.started, (uint32_t)i32_at(e + E_LS_STARTED));
	memcpy(times, e + E_LS_TIMES, 6 * sizeof(times[0]));
	assert_true(t->ls.planned_ns == times[0] && t->ls.start_ns == times[1] &&
		    t->ls.end_ns == times[2] && t->ls.begin_ns == times[3] &&
		    t->ls.done_ns == times[4] && t->ls.pause_ns == times[5]);
	assert_wire_str(t->ls.sdk, e + E_LS_SDK, sizeof(t->ls.sdk));
}

/*
 * Random bytes behind a valid header and length, every other round with
 * defined enums: rn_unpack refuses exactly the records with an undefined
 * one, and gives back every field of the others as the bytes say.
 */
static void test_rn_unpack_random_bytes(void **state)
{
	size_t size, i, k, n, accepted = 0;
	unsigned char *buf = packed(3, &size), *copy = malloc(size);
	struct rn_target *t;
	char host[256];
	bool defined;
	int ret;

	(void)state;
	assert_non_null(copy);
	srand(42);
	for (i = 0; i < 2000; i++) {
		for (k = 16; k < size; k++)
			buf[k] = (unsigned char)rand();
		for (k = 0; i % 2 && k < 3; k++)
			define_entry(buf + HDR + k * ENTRY);
		defined = true;
		for (k = 0; k < 3; k++)
			defined &= entry_defined(buf + HDR + k * ENTRY);
		/* An exact-size copy: an over-read shows up under ASan. */
		memcpy(copy, buf, size);
		t = NULL;
		ret = rn_unpack(copy, size, host, &t, &n);
		assert_int_equal(ret, defined ? 0 : -1);
		if (ret < 0)
			continue;
		accepted++;
		assert_int_equal(n, 3);
		assert_wire_str(host, buf + 16, sizeof(host));
		for (k = 0; k < 3; k++)
			assert_entry(&t[k], buf + HDR + k * ENTRY);
		free(t);
	}
	/* The rounds with defined enums, and none of the others (4 billion to one). */
	assert_int_equal(accepted, 1000);
	free(copy);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_pack_round_trip_empty),
	    cmocka_unit_test(test_rn_pack_round_trip_one),
	    cmocka_unit_test(test_rn_pack_round_trip_hundred),
	    cmocka_unit_test(test_rn_pack_short_buffer_writes_nothing),
	    cmocka_unit_test(test_rn_pack_pads_strings_with_zeros),
	    cmocka_unit_test(test_rn_unpack_bad_header),
	    cmocka_unit_test(test_rn_unpack_count_mismatch),
	    cmocka_unit_test(test_rn_unpack_truncated_or_extra),
	    cmocka_unit_test(test_rn_unpack_bad_enum),
	    cmocka_unit_test(test_rn_unpack_forces_nul),
	    cmocka_unit_test(test_rn_unpack_random_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
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

#define HDR 272	   /* magic 8 + version 4 + count 4 + host 256 */
#define ENTRY 1017 /* see the wire layout in node/record_wire.c */

static void fill_str(char *dst, size_t size, const char *pattern, size_t i)
{
	size_t plen = strlen(pattern), k;

	for (k = 0; k + 1 < size; k++)
		dst[k] = pattern[(k + i) % plen];
	dst[size - 1] = '\0';
}

/* Every field distinct per index, strings filled to the last byte. */
static void make_target(struct rn_target *t, size_t i, bool long_strings)
{
	memset(t, 0, sizeof(*t));
	t->pid = (pid_t)(1000 + i);
	t->nspid = (pid_t)(10 + i);
	t->rank = i % 3 == 0 ? -1 : (long)(i * 7);
	t->uid = (uid_t)(500 + i);
	t->ppid = (pid_t)(900 + i);
	t->listener = i % 2;
	t->side = (int)(i % 3);
	t->topo.n_cpus = (int)i;
	t->state = (enum rn_state)(i % (RN_DIED_ATTACHED + 1));
	t->status = (rocattach_status_t)(i % ROCATTACH_STATUS_LAST);
	t->agent_status = i % 4 == 0 ? -1 : (int)i;
	t->windows = (int)(i * 2);
	t->attach_start_ns = 1700000000000000000ull + i;
	t->attach_end_ns = t->attach_start_ns + 1000 + i;
	t->detach_start_ns = i % 5 ? t->attach_end_ns + 5 : 0;
	t->detach_end_ns = t->detach_start_ns ? t->detach_start_ns + 7 : 0;
	t->attach_tool_ns = i % 3 ? t->attach_end_ns - 3 : 0;
	t->detach_tool_ns = t->detach_start_ns ? t->detach_start_ns + 2 : 0;
	t->detach_call_ns = t->detach_start_ns ? t->detach_start_ns + 1 : 0;
	t->attach_tool_bound = t->side == ROCATTACH_SIDE_ROCM;
	t->detach_tool_bound = t->side == ROCATTACH_SIDE_ROCM && i % 2;
	t->signal = (int)(i % 65);
	t->died_ns = i % 4 ? t->attach_end_ns + 11 : 0;
	t->watchdog = i % 3 == 1;
	t->timed_out = i % 5 == 2;
	t->self_detached = i % 7 == 3;
	t->late_ns = i % 3 == 2 ? 1000000000ull + i : 0;
	t->tool_n = (uint8_t)(i % (RN_TOOLS_MAX + 1));
	for (size_t k = 0; k < t->tool_n; k++)
		t->tools[k] = (uint8_t)((i + k) % (ROCATTACH_TOOL_FAILED + 1));
	if (long_strings) {
		fill_str(t->exe, sizeof(t->exe), "x\"\n\\\xc3\xa9", i);
		fill_str(t->topo.cpus, sizeof(t->topo.cpus), "0-3,", i);
		fill_str(t->topo.numa, sizeof(t->topo.numa), "0,1", i);
		fill_str(t->topo.gpus, sizeof(t->topo.gpus), "card0(0000:c1:00.0),", i);
		fill_str(t->message, sizeof(t->message), "err \"q\"\t\x01\n\xe2\x82\xac ", i);
	} else {
		snprintf(t->exe, sizeof(t->exe), "app_%zu", i);
		snprintf(t->topo.cpus, sizeof(t->topo.cpus), "%zu", i % 2);
		snprintf(t->topo.numa, sizeof(t->topo.numa), "0");
		snprintf(t->message, sizeof(t->message), "%s", i % 2 ? "" : "ptrace: \"EPERM\"\n");
	}
}

static void assert_target_equal(const struct rn_target *a, const struct rn_target *b)
{
	assert_int_equal(a->pid, b->pid);
	assert_int_equal(a->nspid, b->nspid);
	assert_int_equal(a->rank, b->rank);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->ppid, b->ppid);
	assert_string_equal(a->exe, b->exe);
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
	v = 7;
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

static void test_rn_unpack_bad_enum(void **state)
{
	size_t size;
	unsigned char *buf = packed(1, &size);
	/* listener, side, state, status, bounds offsets inside the entry. */
	size_t listener = HDR + 40 + 64, side = listener + 4, st = side + 4 + 64 + 32 + 128 + 4;
	size_t bounds = st + 4 * 4 + 7 * 8;
	int32_t bad[] = {-1, 2, 99, INT32_MIN};
	int32_t badside[] = {-1, ROCATTACH_SIDE_ROCM + 1}, badbounds[] = {-1, 4};
	int32_t badstate[] = {-1, RN_DIED_ATTACHED + 1, INT32_MAX};
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
	memset(buf + HDR + 40 + 64 + 4 + 4, 'c', 64 + 32 + 128);
	memset(buf + HDR + 416, 'm', 512); /* the message */
	assert_int_equal(rn_unpack(buf, size, host, &t, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(strlen(host), 255);
	assert_int_equal(strlen(t->exe), 63);
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
	E_LISTENER = 104,
	E_SIDE = 108,
	E_CPUS = 112,
	E_NUMA = 176,
	E_GPUS = 208,
	E_NCPUS = 336,
	E_STATE = 340,
	E_STATUS = 344,
	E_AGENT = 348,
	E_WINDOWS = 352,
	E_TIMES = 356,
	E_BOUNDS = 412,
	E_MESSAGE = 416,
	E_SIGNAL = 928,
	E_DIED = 932,
	E_FLAGS = 940,
	E_TOOL_N = 944,
	E_TOOLS = 945,
	E_LATE = 1009,
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
	bool tools_ok = e[E_TOOL_N] <= RN_TOOLS_MAX;

	for (size_t k = 0; tools_ok && k < e[E_TOOL_N]; k++)
		tools_ok = e[E_TOOLS + k] <= ROCATTACH_TOOL_FAILED;
	return (listener == 0 || listener == 1) && side >= ROCATTACH_SIDE_UNKNOWN &&
	       side <= ROCATTACH_SIDE_ROCM && st >= RN_FOUND && st <= RN_DIED_ATTACHED &&
	       status >= 0 && status < ROCATTACH_STATUS_LAST && b >= 0 && b <= 3 && sig >= 0 &&
	       sig < 65 && flags >= 0 && flags <= 7 && tools_ok;
}

static void define_entry(unsigned char *e)
{
	put_i32_at(e + E_LISTENER, rand() % 2);
	put_i32_at(e + E_SIDE, rand() % (ROCATTACH_SIDE_ROCM + 1));
	put_i32_at(e + E_STATE, rand() % (RN_DIED_ATTACHED + 1));
	put_i32_at(e + E_STATUS, rand() % ROCATTACH_STATUS_LAST);
	put_i32_at(e + E_BOUNDS, rand() % 4);
	put_i32_at(e + E_SIGNAL, rand() % 65);
	put_i32_at(e + E_FLAGS, rand() % 8);
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

static void test_rn_state_name_every_state(void **state)
{
	(void)state;
	assert_string_equal(rn_state_name(RN_FOUND), "found");
	assert_string_equal(rn_state_name(RN_ATTACHED), "attached");
	assert_string_equal(rn_state_name(RN_ATTACH_FAILED), "attach-failed");
	assert_string_equal(rn_state_name(RN_DETACHED), "detached");
	assert_string_equal(rn_state_name(RN_DETACH_FAILED), "detach-failed");
	assert_string_equal(rn_state_name(RN_EXITED), "exited");
	assert_string_equal(rn_state_name(RN_STOPPED), "stopped");
	assert_string_equal(rn_state_name(RN_DIED_ATTACHED), "died_attached");
	assert_string_equal(rn_state_name((enum rn_state)(RN_DIED_ATTACHED + 1)), "unknown");
	assert_string_equal(rn_state_name((enum rn_state) - 1), "unknown");
}

/* Dump with jansson and parse back, as the report reader would. */
static json_t *through_text(const struct rn_target *t)
{
	json_t *j = rn_target_to_json(t), *back;
	json_error_t err;
	char *text;

	assert_non_null(j);
	text = json_dumps(j, JSON_COMPACT);
	assert_non_null(text);
	back = json_loads(text, 0, &err);
	if (!back)
		fail_msg("json_loads: %s in %s", err.text, text);
	json_decref(j);
	free(text);
	return back;
}

static void test_rn_target_to_json_all_keys(void **state)
{
	const char *keys[] = {
	    "pid",	"nspid",	"rank",	       "uid",	   "ppid",
	    "exe",	"listener",	"target_side", "topology", "state",
	    "status",	"agent_status", "windows",     "attach",   "detach",
	    "window",	"message",	"signal",      "died_ns",  "timed_out",
	    "watchdog", "tools",	"late",	       "late_ns",  "self_detached"};
	struct rn_target t;
	json_t *j, *topo, *att;
	size_t i;

	(void)state;
	make_target(&t, 1, false);
	snprintf(t.topo.gpus, sizeof(t.topo.gpus), "card0(0000:c1:00.0),renderD128(0000:c1:00.0)");
	j = through_text(&t);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(json_object_get(j, keys[i]));
	assert_int_equal(json_object_size(j), sizeof(keys) / sizeof(keys[0]));
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 1001);
	assert_int_equal(json_integer_value(json_object_get(j, "rank")), 7);
	assert_int_equal(json_integer_value(json_object_get(j, "agent_status")), 1);
	assert_true(json_is_boolean(json_object_get(j, "listener")));
	assert_true(json_is_true(json_object_get(j, "listener")));
	assert_string_equal(json_string_value(json_object_get(j, "state")), "attached");
	assert_string_equal(json_string_value(json_object_get(j, "status")),
			    "ROCATTACH_STATUS_ERROR");
	topo = json_object_get(j, "topology");
	assert_string_equal(json_string_value(json_object_get(topo, "cpus")), "1");
	assert_string_equal(json_string_value(json_object_get(topo, "numa")), "0");
	assert_int_equal(json_integer_value(json_object_get(topo, "n_cpus")), 1);
	assert_int_equal(json_array_size(json_object_get(topo, "gpus")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(topo, "gpus"), 1)),
			    "renderD128(0000:c1:00.0)");
	att = json_object_get(j, "attach");
	assert_true(json_integer_value(json_object_get(att, "start_ns")) ==
		    (json_int_t)1700000000000000001ll);
	assert_int_equal(json_integer_value(json_object_get(att, "duration_ns")), 1001);
	assert_true(json_is_object(json_object_get(j, "detach")));
	assert_string_equal(json_string_value(json_object_get(j, "signal")), "SIGHUP");
	assert_true(json_integer_value(json_object_get(j, "died_ns")) ==
		    (json_int_t)(t.attach_end_ns + 11));
	assert_true(json_is_true(json_object_get(j, "watchdog")));
	assert_true(json_is_false(json_object_get(j, "timed_out")));
	assert_true(json_is_false(json_object_get(j, "self_detached")));
	assert_true(json_is_false(json_object_get(j, "late")));
	assert_true(json_is_null(json_object_get(j, "late_ns")));
	assert_int_equal(json_array_size(json_object_get(j, "tools")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "tools"), 0)),
			    "loaded");
	json_decref(j);
}

static void test_rn_target_to_json_nulls(void **state)
{
	struct rn_target t;
	json_t *j, *topo;

	(void)state;
	make_target(&t, 0, false);
	t.message[0] = '\0';
	t.attach_start_ns = t.attach_end_ns = 0;
	t.detach_start_ns = t.detach_end_ns = 0;
	t.topo.gpus[0] = '\0';
	j = through_text(&t);
	assert_true(json_is_null(json_object_get(j, "rank")));
	assert_true(json_is_null(json_object_get(j, "agent_status")));
	assert_true(json_is_null(json_object_get(j, "attach")));
	assert_true(json_is_null(json_object_get(j, "detach")));
	assert_true(json_is_null(json_object_get(j, "message")));
	assert_true(json_is_false(json_object_get(j, "listener")));
	assert_string_equal(json_string_value(json_object_get(j, "state")), "found");
	assert_string_equal(json_string_value(json_object_get(j, "status")),
			    "ROCATTACH_STATUS_SUCCESS");
	topo = json_object_get(j, "topology");
	assert_true(json_is_array(json_object_get(topo, "gpus")));
	assert_int_equal(json_array_size(json_object_get(topo, "gpus")), 0);
	json_decref(j);
}

/* An attach that started but has no end yet: no negative duration. */
static void test_rn_target_to_json_unfinished_step(void **state)
{
	struct rn_target t;
	json_t *j, *att;

	(void)state;
	make_target(&t, 1, false);
	t.attach_end_ns = 0;
	j = through_text(&t);
	att = json_object_get(j, "attach");
	assert_true(json_is_object(att));
	assert_true(json_is_integer(json_object_get(att, "start_ns")));
	assert_true(json_is_null(json_object_get(att, "end_ns")));
	assert_true(json_is_null(json_object_get(att, "duration_ns")));
	json_decref(j);
}

static void test_rn_target_to_json_escapes_strings(void **state)
{
	const char *msg =
	    "PTRACE_SEIZE(12): \"quoted\"\nline2\ttab\x01\x1f back\\slash \xe2\x82\xac";
	const char *exe = "we\"ird\n\xc3\xa9xe";
	struct rn_target t;
	json_t *j;

	(void)state;
	make_target(&t, 1, false);
	snprintf(t.message, sizeof(t.message), "%s", msg);
	snprintf(t.exe, sizeof(t.exe), "%s", exe);
	j = through_text(&t);
	assert_string_equal(json_string_value(json_object_get(j, "message")), msg);
	assert_string_equal(json_string_value(json_object_get(j, "exe")), exe);
	json_decref(j);
}

/* Bytes that are not UTF-8 still give a string, with '?' for non-ASCII. */
static void test_rn_target_to_json_invalid_utf8(void **state)
{
	struct rn_target t;
	json_t *j;

	(void)state;
	make_target(&t, 1, false);
	snprintf(t.exe, sizeof(t.exe), "bad\xff\xfe");
	snprintf(t.message, sizeof(t.message), "half \xe2\x82 \xc3\xa9");
	j = through_text(&t);
	assert_string_equal(json_string_value(json_object_get(j, "exe")), "bad??");
	assert_string_equal(json_string_value(json_object_get(j, "message")), "half ?? ??");
	json_decref(j);
}

/* Fields filled to the last byte without a NUL are read within bounds. */
static void test_rn_target_to_json_unterminated_fields(void **state)
{
	struct rn_target t;
	json_t *j, *topo;

	(void)state;
	make_target(&t, 1, false);
	memset(t.exe, 'e', sizeof(t.exe));
	memset(t.topo.gpus, 'g', sizeof(t.topo.gpus));
	memset(t.message, 'm', sizeof(t.message));
	j = through_text(&t);
	assert_int_equal(strlen(json_string_value(json_object_get(j, "exe"))), sizeof(t.exe));
	assert_int_equal(strlen(json_string_value(json_object_get(j, "message"))),
			 sizeof(t.message));
	topo = json_object_get(j, "topology");
	assert_int_equal(
	    strlen(json_string_value(json_array_get(json_object_get(topo, "gpus"), 0))),
	    sizeof(t.topo.gpus));
	json_decref(j);
}

/*
 * rn_json_str at any length: around 512 bytes (where the report's strings
 * once went another way than the records') and far beyond, valid UTF-8 kept
 * as it is, anything else with '?' for every non-ASCII byte.
 */
static void test_rn_json_str_any_length(void **state)
{
	static const size_t lens[] = {1, 255, 511, 512, 513, 4096, 1 << 20};
	char *s, *want;
	json_t *j;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		len = lens[i];
		s = malloc(len + 1);
		want = malloc(len + 1);
		assert_non_null(s);
		assert_non_null(want);
		memset(s, 'a', len);
		s[len] = '\0';
		/* Valid: a two-byte character at the end. */
		if (len >= 2)
			memcpy(s + len - 2, "\xc3\xa9", 2);
		j = rn_json_str(s, (size_t)-1);
		assert_non_null(j);
		assert_int_equal(json_string_length(j), len);
		assert_memory_equal(json_string_value(j), s, len);
		json_decref(j);
		/* Not UTF-8: a lone continuation byte at the end, another in front. */
		s[len - 1] = '\x80';
		s[0] = '\xff';
		memcpy(want, s, len + 1);
		for (size_t k = 0; k < len; k++)
			if ((unsigned char)want[k] >= 0x80)
				want[k] = '?';
		j = rn_json_str(s, (size_t)-1);
		assert_non_null(j);
		assert_int_equal(json_string_length(j), len);
		assert_memory_equal(json_string_value(j), want, len);
		json_decref(j);
		/* Cut at width, whatever follows. */
		j = rn_json_str(s, len / 2);
		assert_non_null(j);
		assert_int_equal(json_string_length(j), len / 2);
		json_decref(j);
		free(s);
		free(want);
	}
	j = rn_json_str("", 0);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "");
	json_decref(j);
}

/* The tool is the cause: the agent's status 6, or the library's checks of the path. */
static void test_rn_tool_failed_causes(void **state)
{
	struct rn_target t = {
	    .state = RN_ATTACH_FAILED, .agent_status = 6, .status = ROCATTACH_STATUS_ERROR};

	(void)state;
	assert_true(rn_tool_failed(&t));
	t.state = RN_EXITED;
	assert_false(rn_tool_failed(&t));
	t = (struct rn_target){.state = RN_ATTACH_FAILED,
			       .agent_status = -1,
			       .status = ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT};
	snprintf(t.message, sizeof(t.message),
		 "library /x/t.so as seen from process 4 "
		 "(/proc/4/root/x/t.so): No such file or directory");
	assert_true(rn_tool_failed(&t));
	snprintf(t.message, sizeof(t.message), "refusing library /x/t.so for process 4: ...");
	assert_true(rn_tool_failed(&t));
	/* Not the tool: a pid of our own, another attacher, no listener. */
	snprintf(t.message, sizeof(t.message), "process 4 is the caller itself");
	assert_false(rn_tool_failed(&t));
	t.status = ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED;
	t.agent_status = 7;
	assert_false(rn_tool_failed(&t));
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
	    cmocka_unit_test(test_rn_state_name_every_state),
	    cmocka_unit_test(test_rn_target_to_json_all_keys),
	    cmocka_unit_test(test_rn_target_to_json_nulls),
	    cmocka_unit_test(test_rn_target_to_json_unfinished_step),
	    cmocka_unit_test(test_rn_target_to_json_escapes_strings),
	    cmocka_unit_test(test_rn_target_to_json_invalid_utf8),
	    cmocka_unit_test(test_rn_target_to_json_unterminated_fields),
	    cmocka_unit_test(test_rn_json_str_any_length),
	    cmocka_unit_test(test_rn_tool_failed_causes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

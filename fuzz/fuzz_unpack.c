/* SPDX-License-Identifier: MIT */
/*
 * The packed records every node sends to rank 0 (node/record_wire.c).
 *
 * The input is used twice. As is, it is a buffer to unpack. Then, so that
 * the seeds survive changes of the wire format, as a recipe: targets filled
 * field by field from its bytes, packed with rn_pack, then some bytes of the
 * packed form flipped (offset, xor pairs from the rest of the input), and
 * unpacked. Properties: an accepted buffer holds terminated strings and
 * defined enum values, packs back to its own length and unpacks again to
 * the same, and every target converts to JSON (its strings come from other
 * processes and need not be UTF-8); unflipped, valid targets come back.
 */
#include <jansson.h>

#include "fuzz.h"
#include "node.h"

#define HOST_MAX 256
#define TARGETS_MAX 3

struct reader {
	const uint8_t *p, *end;
};

static void take(struct reader *r, void *out, size_t n)
{
	size_t have = (size_t)(r->end - r->p) < n ? (size_t)(r->end - r->p) : n;

	memcpy(out, r->p, have);
	memset((char *)out + have, 0, n - have);
	r->p += have;
}

static uint64_t take_u64(struct reader *r)
{
	uint64_t v;

	take(r, &v, sizeof(v));
	return v;
}

/* A target from the recipe; enums may be out of range (unpack must refuse those). */
static void fill_target(struct reader *r, struct rn_target *t)
{
	memset(t, 0, sizeof(*t));
	t->pid = (pid_t)take_u64(r);
	t->nspid = (pid_t)take_u64(r);
	t->rank = (long)take_u64(r);
	t->uid = (uid_t)take_u64(r);
	t->ppid = (pid_t)take_u64(r);
	take(r, t->exe, sizeof(t->exe) / 4); /* not always terminated: pack must cope */
	t->listener = take_u64(r) & 1;
	take(r, t->topo.cpus, 8);
	take(r, t->topo.gpus, 24);
	t->topo.n_cpus = (int)take_u64(r);
	t->state = (enum rn_state)(take_u64(r) % (RN_LATE_STARTED + 3));
	t->status = (rocattach_status_t)(take_u64(r) % (ROCATTACH_STATUS_LAST + 2));
	t->agent_status = (int)take_u64(r);
	t->windows = (int)take_u64(r);
	t->attach_start_ns = take_u64(r);
	t->attach_end_ns = take_u64(r);
	t->detach_tool_ns = take_u64(r);
	take(r, t->message, 40);
	t->signal = (int)(take_u64(r) % 70);
	t->died_ns = take_u64(r);
	t->watchdog = take_u64(r) & 1;
	t->timed_out = take_u64(r) & 1;
	t->tool_n = (uint8_t)(take_u64(r) % (RN_TOOLS_MAX + 3));
	take(r, t->tools, 8); /* outcomes past 3 are undefined: unpack must refuse them */
	/* --late-start's word: route and initialized may be out of range too. */
	t->ls.tried = take_u64(r) & 1;
	t->ls.route = (int8_t)(take_u64(r) % 6);
	t->ls.initialized = (int8_t)((int)(take_u64(r) % 5) - 2);
	t->ls.copies = (uint32_t)take_u64(r);
	t->ls.begin_ns = take_u64(r);
	take(r, t->ls.sdk, 16);
}

static void check_target(const struct rn_target *t)
{
	json_t *j;
	char *s;

	FUZZ_CHECK(strnlen(t->exe, sizeof(t->exe)) < sizeof(t->exe));
	FUZZ_CHECK(strnlen(t->message, sizeof(t->message)) < sizeof(t->message));
	FUZZ_CHECK(strnlen(t->topo.cpus, sizeof(t->topo.cpus)) < sizeof(t->topo.cpus));
	FUZZ_CHECK(strnlen(t->topo.numa, sizeof(t->topo.numa)) < sizeof(t->topo.numa));
	FUZZ_CHECK(strnlen(t->topo.gpus, sizeof(t->topo.gpus)) < sizeof(t->topo.gpus));
	FUZZ_CHECK(strnlen(t->ls.sdk, sizeof(t->ls.sdk)) < sizeof(t->ls.sdk));
	FUZZ_CHECK(strcmp(rn_state_name(t->state), "unknown"));
	j = rn_target_to_json(t);
	FUZZ_CHECK(j);
	s = json_dumps(j, JSON_COMPACT);
	FUZZ_CHECK(s);
	free(s);
	json_decref(j);
}

static bool same(const struct rn_target *a, const struct rn_target *b)
{
	return a->pid == b->pid && a->rank == b->rank && a->state == b->state &&
	       a->status == b->status && a->listener == b->listener && a->signal == b->signal &&
	       a->died_ns == b->died_ns && a->watchdog == b->watchdog &&
	       a->timed_out == b->timed_out && a->tool_n == b->tool_n &&
	       !memcmp(a->tools, b->tools, sizeof(a->tools)) &&
	       a->attach_end_ns == b->attach_end_ns && a->detach_tool_ns == b->detach_tool_ns &&
	       !strcmp(a->exe, b->exe) && !strcmp(a->message, b->message) &&
	       !strcmp(a->topo.gpus, b->topo.gpus) && a->ls.tried == b->ls.tried &&
	       a->ls.route == b->ls.route && a->ls.initialized == b->ls.initialized &&
	       a->ls.copies == b->ls.copies && a->ls.begin_ns == b->ls.begin_ns &&
	       !strcmp(a->ls.sdk, b->ls.sdk);
}

/* Unpack buf; if accepted, check it and that it packs back the same. 0 if accepted. */
static int unpack_checked(const void *buf, size_t len)
{
	char host[HOST_MAX], host2[HOST_MAX];
	struct rn_target *t, *t2;
	size_t n, n2, need, i;
	unsigned char *again;

	if (rn_unpack(buf, len, host, &t, &n) < 0)
		return -1;
	FUZZ_CHECK(strnlen(host, sizeof(host)) < sizeof(host));
	for (i = 0; i < n; i++)
		check_target(&t[i]);
	need = rn_pack(host, t, n, NULL, 0);
	FUZZ_CHECK(need == len);
	again = malloc(need);
	FUZZ_CHECK(again && rn_pack(host, t, n, again, need) == need);
	FUZZ_CHECK(rn_unpack(again, need, host2, &t2, &n2) == 0 && n2 == n);
	FUZZ_CHECK(!strcmp(host, host2));
	for (i = 0; i < n; i++)
		FUZZ_CHECK(same(&t[i], &t2[i]));
	free(t2);
	free(again);
	free(t);
	return 0;
}

static bool valid(const struct rn_target *t)
{
	bool tools_ok = t->tool_n <= RN_TOOLS_MAX;

	for (size_t i = 0; tools_ok && i < t->tool_n; i++)
		tools_ok = t->tools[i] <= ROCATTACH_TOOL_FAILED;
	return t->state <= RN_LATE_STARTED && t->status < ROCATTACH_STATUS_LAST && t->signal >= 0 &&
	       t->signal < 65 && tools_ok && t->ls.route <= ROCATTACH_LATE_FAILED &&
	       t->ls.initialized <= 1;
}

static void recipe(const uint8_t *data, size_t size)
{
	struct reader r = {data, data + size};
	struct rn_target t[TARGETS_MAX], *back;
	char host[HOST_MAX] = "", host2[HOST_MAX];
	size_t n = 0, i, len, flips = 0, back_n;
	bool all_valid = true;
	unsigned char *buf;
	uint16_t off;
	uint8_t x;

	take(&r, &n, 1);
	n %= TARGETS_MAX + 1;
	take(&r, host, 16);
	for (i = 0; i < n; i++) {
		fill_target(&r, &t[i]);
		all_valid &= valid(&t[i]);
	}
	len = rn_pack(host, t, n, NULL, 0);
	buf = malloc(len);
	FUZZ_CHECK(buf && rn_pack(host, t, n, buf, len) == len);
	while (r.p + 3 <= r.end) {
		take(&r, &off, sizeof(off));
		take(&r, &x, 1);
		buf[off % len] ^= x;
		flips += x != 0;
	}
	if (!flips) {
		FUZZ_CHECK(!rn_unpack(buf, len, host2, &back, &back_n) == all_valid);
		for (i = 0; all_valid && i < n; i++) {
			/* The recipe's strings may lack a NUL: compare what was sent. */
			t[i].exe[sizeof(t[i].exe) - 1] = '\0';
			t[i].message[sizeof(t[i].message) - 1] = '\0';
			t[i].topo.gpus[sizeof(t[i].topo.gpus) - 1] = '\0';
			t[i].ls.sdk[sizeof(t[i].ls.sdk) - 1] = '\0';
			FUZZ_CHECK(same(&t[i], &back[i]));
		}
		if (all_valid)
			free(back);
	}
	unpack_checked(buf, len);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unpack_checked(data, size);
	recipe(data, size);
	return 0;
}

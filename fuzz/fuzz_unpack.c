/* SPDX-License-Identifier: MIT */
/*
 * The packed records every node sends to rank 0 (node/records.c). An
 * accepted buffer holds terminated strings and defined enum values; packed
 * again it unpacks to the same, and every target converts to JSON (its
 * strings come from other processes and need not be UTF-8).
 */
#include <jansson.h>

#include "fuzz.h"
#include "node.h"

#define HOST_MAX 256

static void check_target(const struct rn_target *t)
{
	json_t *j;
	char *s;

	FUZZ_CHECK(strnlen(t->exe, sizeof(t->exe)) < sizeof(t->exe));
	FUZZ_CHECK(strnlen(t->message, sizeof(t->message)) < sizeof(t->message));
	FUZZ_CHECK(strnlen(t->topo.cpus, sizeof(t->topo.cpus)) < sizeof(t->topo.cpus));
	FUZZ_CHECK(strnlen(t->topo.numa, sizeof(t->topo.numa)) < sizeof(t->topo.numa));
	FUZZ_CHECK(strnlen(t->topo.gpus, sizeof(t->topo.gpus)) < sizeof(t->topo.gpus));
	FUZZ_CHECK(strcmp(rn_state_name(t->state), "unknown"));
	j = rn_target_to_json(t);
	FUZZ_CHECK(j);
	s = json_dumps(j, JSON_COMPACT);
	FUZZ_CHECK(s);
	free(s);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[HOST_MAX], host2[HOST_MAX];
	struct rn_target *t, *t2;
	size_t n, n2, need, i;
	unsigned char *buf;

	if (rn_unpack(data, size, host, &t, &n) < 0)
		return 0;
	FUZZ_CHECK(strnlen(host, sizeof(host)) < sizeof(host));
	/* Fixed-size entries: a small input cannot claim many. */
	FUZZ_CHECK(n <= size / 256);
	for (i = 0; i < n; i++)
		check_target(&t[i]);
	need = rn_pack(host, t, n, NULL, 0);
	FUZZ_CHECK(need == size);
	buf = malloc(need);
	FUZZ_CHECK(buf && rn_pack(host, t, n, buf, need) == need);
	FUZZ_CHECK(rn_unpack(buf, need, host2, &t2, &n2) == 0 && n2 == n);
	FUZZ_CHECK(!strcmp(host, host2));
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(t2[i].pid == t[i].pid && t2[i].state == t[i].state);
		FUZZ_CHECK(!strcmp(t2[i].exe, t[i].exe) && !strcmp(t2[i].message, t[i].message));
		FUZZ_CHECK(t2[i].attach_end_ns == t[i].attach_end_ns);
	}
	free(t2);
	free(buf);
	free(t);
	return 0;
}

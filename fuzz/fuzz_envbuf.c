/* SPDX-License-Identifier: MIT */
/*
 * The environment buffer decoder, which the agent runs on memory an
 * attacher wrote into its process. Properties: a malformed buffer never
 * reaches the callback; a valid one gives non-empty names without '=';
 * a callback's non-zero return stops decoding and is returned; the pairs
 * whose names may cross encode and decode back to themselves.
 */
#include <errno.h>

#include "common/envbuf.h"
#include "fuzz.h"

#define PAIRS_MAX 256

struct pairs {
	char *entry[PAIRS_MAX]; /* "NAME=VALUE" */
	size_t n, calls, stop_after;
};

static int collect(const char *name, const char *value, void *arg)
{
	struct pairs *p = arg;
	size_t nl = strlen(name), vl = strlen(value);

	FUZZ_CHECK(nl > 0 && !memchr(name, '=', nl));
	p->calls++;
	if (p->stop_after && p->calls == p->stop_after)
		return 7;
	if (p->n == PAIRS_MAX)
		return 0;
	p->entry[p->n] = malloc(nl + vl + 2);
	FUZZ_CHECK(p->entry[p->n]);
	memcpy(p->entry[p->n], name, nl);
	p->entry[p->n][nl] = '=';
	memcpy(p->entry[p->n] + nl + 1, value, vl + 1);
	p->n++;
	return 0;
}

static void pairs_free(struct pairs *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->entry[i]);
	memset(p, 0, sizeof(*p));
}

/* The allowed pairs, encoded again, decode to exactly those pairs. */
static void check_round_trip(const struct pairs *p)
{
	const char *allowed[PAIRS_MAX];
	struct pairs again = {0};
	size_t i, n = 0, skipped, len;
	char *buf;

	for (i = 0; i < p->n; i++)
		if (ra_envbuf_name_allowed(p->entry[i], strcspn(p->entry[i], "=")))
			allowed[n++] = p->entry[i];
	FUZZ_CHECK(ra_envbuf_encode((const char *const *)p->entry, p->n, &buf, &len, &skipped) ==
		   0);
	FUZZ_CHECK(skipped == p->n - n);
	FUZZ_CHECK(ra_envbuf_decode(buf, len, collect, &again) == 0);
	FUZZ_CHECK(again.n == n);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(!strcmp(again.entry[i], allowed[i]));
	pairs_free(&again);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct pairs p = {0};
	int r, valid;

	valid = ra_envbuf_decode(buf, size, NULL, NULL);
	FUZZ_CHECK(valid == 0 || valid == -EINVAL);
	r = ra_envbuf_decode(buf, size, collect, &p);
	FUZZ_CHECK(r == valid);
	if (r) {
		FUZZ_CHECK(p.calls == 0);
		return 0;
	}
	if (p.n < PAIRS_MAX && p.calls == p.n)
		check_round_trip(&p);
	if (p.calls > 0) {
		/* Stop at the last pair: the callback's value comes back. */
		struct pairs stop = {.stop_after = p.calls};

		FUZZ_CHECK(ra_envbuf_decode(buf, size, collect, &stop) == 7);
		FUZZ_CHECK(stop.calls == p.calls);
		pairs_free(&stop);
	}
	pairs_free(&p);
	return 0;
}

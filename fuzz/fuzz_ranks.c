/* SPDX-License-Identifier: MIT */
/*
 * --ranks lists. An accepted list is normalized: sorted, disjoint and
 * non-adjacent ranges within 0..2^31-1, and lookups agree with the ranges.
 * A refused one has a reason.
 */
#include "fuzz.h"
#include "node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strdup(data, size), err[160] = "";
	struct rn_ranks r;
	size_t i;

	if (rn_ranks_parse(s, &r, err, sizeof(err)) < 0) {
		FUZZ_CHECK(!r.v && r.n == 0 && err[0]);
		free(s);
		return 0;
	}
	FUZZ_CHECK(r.n >= 1);
	for (i = 0; i < r.n; i++) {
		FUZZ_CHECK(r.v[i].lo >= 0 && r.v[i].lo <= r.v[i].hi && r.v[i].hi <= RN_RANK_MAX);
		if (i)
			FUZZ_CHECK(r.v[i].lo > r.v[i - 1].hi + 1);
		FUZZ_CHECK(rn_ranks_contains(&r, r.v[i].lo) && rn_ranks_contains(&r, r.v[i].hi));
		FUZZ_CHECK(!rn_ranks_contains(&r, r.v[i].hi + 1));
		if (r.v[i].lo > 0)
			FUZZ_CHECK(!rn_ranks_contains(&r, r.v[i].lo - 1));
	}
	FUZZ_CHECK(!rn_ranks_contains(&r, -1));
	rn_ranks_free(&r);
	free(s);
	return 0;
}

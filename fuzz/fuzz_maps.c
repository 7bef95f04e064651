/* SPDX-License-Identifier: MIT */
/* /proc/PID/maps: every accepted line is a non-empty range with a path string. */
#include "fuzz.h"
#include "common/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ra_maps m;
	size_t i;

	if (ra_maps_parse((const char *)data, size, &m) < 0) {
		FUZZ_CHECK(!m.v && m.n == 0);
		return 0;
	}
	for (i = 0; i < m.n; i++) {
		FUZZ_CHECK(m.v[i].start < m.v[i].end);
		FUZZ_CHECK(m.v[i].path && strlen(m.v[i].path) <= size);
		FUZZ_CHECK(ra_maps_find(&m, m.v[i].end - 1) != NULL);
	}
	ra_maps_free(&m);
	FUZZ_CHECK(!m.v && m.n == 0);
	return 0;
}

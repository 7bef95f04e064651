/* SPDX-License-Identifier: MIT */
/* /proc/PID/task/TID/children: positive pids, in order, without duplicates. */
#include "fuzz.h"
#include "common/procfs.h"

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pid_t *pids, *sorted;
	size_t i, n;

	if (ra_children_parse((const char *)data, size, &pids, &n) < 0) {
		FUZZ_CHECK(!pids && n == 0);
		return 0;
	}
	FUZZ_CHECK((pids == NULL) == (n == 0));
	/* Every pid takes at least one digit and one separator (but the last). */
	FUZZ_CHECK(n <= size / 2 + 1);
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	FUZZ_CHECK(sorted);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(pids[i] > 0);
		sorted[i] = pids[i];
	}
	qsort(sorted, n, sizeof(*sorted), cmp_pid);
	for (i = 1; i < n; i++)
		FUZZ_CHECK(sorted[i] != sorted[i - 1]);
	free(sorted);
	free(pids);
	return 0;
}

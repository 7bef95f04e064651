/* SPDX-License-Identifier: MIT */
/*
 * The skip contract (cmocka's skip() alone exits 0, which CTest counts as a
 * pass): a test that cannot run its checks says why and calls RA_SKIP; its
 * program then ends with ra_test_exit, which turns a run with skips and no
 * failures into exit 77. CTest (SKIP_RETURN_CODE 77) reports it skipped, and
 * scripts/test.sh fails a CI run for any skip not in tests/skips-allowed.txt.
 * Include after <cmocka.h>.
 */
#ifndef RA_TEST_SKIP_H
#define RA_TEST_SKIP_H

#include <stdio.h>

static int ra_skipped;

#define RA_SKIP(...)                                                                               \
	do {                                                                                       \
		printf("SKIP: " __VA_ARGS__);                                                      \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
		ra_skipped++;                                                                      \
		skip();                                                                            \
	} while (0)

/* main's result: the failures cmocka counted, else 77 if anything was skipped. */
static inline int ra_test_exit(int failed)
{
	if (failed)
		return failed;
	if (ra_skipped)
		printf("%d check%s skipped: exit 77\n", ra_skipped, ra_skipped == 1 ? "" : "s");
	return ra_skipped ? 77 : 0;
}

#endif

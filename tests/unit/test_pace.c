/* SPDX-License-Identifier: MIT */
/*
 * The pace of the library's waits (lib/pace.c): yields first, then naps
 * that double to their cap, with the thread's timer slack at 1 ns during the
 * naps and the thread's own value put back at the end.
 */
#include <sys/prctl.h>
#include <time.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/clock.h"
#include "pace.h"

static long slack(void)
{
	return prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
}

static void set_slack(long ns)
{
	assert_int_equal(prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0), 0);
	assert_int_equal(slack(), ns);
}

/*
 * Lets the yields' time pass without looking (a wait that starts before
 * their end and checks the clock after it would nap already).
 */
static void past_yields(struct ra_pace *p, long before)
{
	while (ra_monotonic_ns() < p->yield_until)
		;
	assert_int_equal(slack(), before);
	assert_int_equal(p->nap.tv_nsec, 20000);
}

/*
 * Before yield_until a wait yields: nothing else changes. Whether a wait right
 * after begin still falls in the 100 us of yields depends on the scheduler, so
 * the test moves yield_until an hour ahead (the struct's own state): a wait
 * then yields however long this thread is kept off a CPU.
 */
static void test_ra_pace_wait_yields_first(void **state)
{
	struct ra_pace p;
	uint64_t t0, t1;

	(void)state;
	set_slack(50000);
	t0 = ra_monotonic_ns();
	ra_pace_begin(&p, 2000000);
	t1 = ra_monotonic_ns();
	assert_true(p.yield_until >= t0 + RA_PACE_YIELD_NS);
	assert_true(p.yield_until <= t1 + RA_PACE_YIELD_NS);
	p.yield_until = t1 + 3600ull * 1000000000;
	for (int i = 0; i < 3; i++) {
		ra_pace_wait(&p);
		assert_int_equal(slack(), 50000);
		assert_int_equal(p.nap.tv_nsec, 20000);
		assert_int_equal(p.slack, -1);
	}
	ra_pace_end(&p);
	assert_int_equal(slack(), 50000);
}

static void test_ra_pace_end_restores_slack(void **state)
{
	struct ra_pace p;

	(void)state;
	set_slack(123456);
	ra_pace_begin(&p, 2000000);
	past_yields(&p, 123456);
	ra_pace_wait(&p);
	assert_int_equal(slack(), 1);
	ra_pace_wait(&p);
	assert_int_equal(slack(), 1);
	ra_pace_end(&p);
	assert_int_equal(slack(), 123456);
	/* A second end changes nothing. */
	ra_pace_end(&p);
	assert_int_equal(slack(), 123456);
}

static void test_ra_pace_wait_naps_double_to_cap(void **state)
{
	static const long want[] = {40000, 80000, 100000, 100000};
	struct ra_pace p;

	(void)state;
	set_slack(50000);
	ra_pace_begin(&p, 100000);
	past_yields(&p, 50000);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ra_pace_wait(&p);
		assert_int_equal(p.nap.tv_nsec, want[i]);
	}
	ra_pace_end(&p);
	assert_int_equal(slack(), 50000);
}

static void test_ra_pace_end_slack_of_one_kept(void **state)
{
	struct ra_pace p;

	(void)state;
	set_slack(1);
	ra_pace_begin(&p, 2000000);
	past_yields(&p, 1);
	ra_pace_wait(&p);
	ra_pace_end(&p);
	assert_int_equal(slack(), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_pace_wait_yields_first),
	    cmocka_unit_test(test_ra_pace_end_restores_slack),
	    cmocka_unit_test(test_ra_pace_wait_naps_double_to_cap),
	    cmocka_unit_test(test_ra_pace_end_slack_of_one_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Rank lists for --ranks: parsing, rejects with their reasons, lookups. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

static void parse_ok(const char *s, struct rn_ranks *r)
{
	char err[RN_ERR_MAX] = "";

	if (rn_ranks_parse(s, r, err, sizeof(err)) != 0)
		fail_msg("'%s' rejected: %s", s, err);
}

static void parse_fails(const char *s, const char *why)
{
	char err[RN_ERR_MAX] = "";
	struct rn_ranks r;

	assert_int_equal(rn_ranks_parse(s, &r, err, sizeof(err)), -1);
	assert_null(r.v);
	assert_int_equal(r.n, 0);
	if (!strstr(err, "invalid --ranks") || !strstr(err, why))
		fail_msg("'%s': message '%s' lacks '%s'", s ? s : "(null)", err, why);
}

static void test_rn_ranks_parse_list(void **state)
{
	struct rn_ranks r;
	long i;

	(void)state;
	parse_ok("0-3,8", &r);
	for (i = 0; i <= 3; i++)
		assert_true(rn_ranks_contains(&r, i));
	assert_true(rn_ranks_contains(&r, 8));
	assert_false(rn_ranks_contains(&r, 4));
	assert_false(rn_ranks_contains(&r, 7));
	assert_false(rn_ranks_contains(&r, 9));
	assert_false(rn_ranks_contains(&r, -1));
	rn_ranks_free(&r);
}

static void test_rn_ranks_parse_merges_out_of_order(void **state)
{
	struct rn_ranks r;

	(void)state;
	parse_ok("9,5,1-3,2-6,7", &r);
	/* 1-3 and 2-6 overlap, 7 touches them: one range 1-7, then 9. */
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].lo, 1);
	assert_int_equal(r.v[0].hi, 7);
	assert_int_equal(r.v[1].lo, 9);
	assert_int_equal(r.v[1].hi, 9);
	assert_false(rn_ranks_contains(&r, 0));
	assert_false(rn_ranks_contains(&r, 8));
	assert_true(rn_ranks_contains(&r, 9));
	rn_ranks_free(&r);
}

static void test_rn_ranks_parse_limits(void **state)
{
	struct rn_ranks r;

	(void)state;
	parse_ok("2147483647", &r);
	assert_true(rn_ranks_contains(&r, 2147483647L));
	assert_false(rn_ranks_contains(&r, 2147483646L));
	rn_ranks_free(&r);
	parse_ok("0-2147483647", &r);
	assert_true(rn_ranks_contains(&r, 0));
	assert_true(rn_ranks_contains(&r, 1234567));
	rn_ranks_free(&r);
	parse_ok("007", &r);
	assert_true(rn_ranks_contains(&r, 7));
	rn_ranks_free(&r);
}

static void test_rn_ranks_parse_rejects(void **state)
{
	static const char *const bad[] = {
	    "-1",
	    "a",
	    "1,,2",
	    "1,",
	    ",1",
	    "1-",
	    "-",
	    "1-2-3",
	    "1 ,2",
	    " 1",
	    "1 ",
	    "+1",
	    "0x10",
	    "1.5",
	    "2147483648",
	    "0-2147483648",
	    "99999999999999999999",
	};
	size_t i;

	(void)state;
	parse_fails(NULL, "empty");
	parse_fails("", "empty");
	parse_fails("3-1", "low to high");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		parse_fails(bad[i], "expected a rank");
}

static char *many_ranges(size_t n)
{
	char *s = malloc(n * 8 + 1), *p = s;
	size_t i;

	for (i = 0; i < n; i++)
		p += sprintf(p, "%s%zu", i ? "," : "", i * 2);
	return s;
}

static void test_rn_ranks_parse_range_count(void **state)
{
	struct rn_ranks r;
	char *s;

	(void)state;
	s = many_ranges(65536);
	parse_ok(s, &r);
	assert_int_equal(r.n, 65536);
	assert_true(rn_ranks_contains(&r, 131070));
	assert_false(rn_ranks_contains(&r, 131069));
	rn_ranks_free(&r);
	free(s);
	s = many_ranges(65537);
	parse_fails(s, "more than 65536 ranges");
	free(s);
}

static void test_rn_ranks_contains_and_free_edges(void **state)
{
	struct rn_ranks r = {NULL, 0};

	(void)state;
	assert_false(rn_ranks_contains(NULL, 0));
	assert_false(rn_ranks_contains(&r, 0));
	rn_ranks_free(&r);
	rn_ranks_free(NULL);
	parse_ok("4", &r);
	rn_ranks_free(&r);
	assert_null(r.v);
	assert_int_equal(r.n, 0);
	rn_ranks_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_ranks_parse_list),
	    cmocka_unit_test(test_rn_ranks_parse_merges_out_of_order),
	    cmocka_unit_test(test_rn_ranks_parse_limits),
	    cmocka_unit_test(test_rn_ranks_parse_rejects),
	    cmocka_unit_test(test_rn_ranks_parse_range_count),
	    cmocka_unit_test(test_rn_ranks_contains_and_free_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

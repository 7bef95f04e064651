/* SPDX-License-Identifier: MIT */
/* Colon-separated tool library lists. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/toollist.h"

static void test_ra_toollist_parse_single(void **state)
{
	struct ra_toollist tl;

	(void)state;
	assert_int_equal(ra_toollist_parse("libtool.so.1", &tl), 0);
	assert_int_equal(tl.n, 1);
	assert_string_equal(tl.v[0], "libtool.so.1");
	ra_toollist_free(&tl);
	assert_null(tl.buf);
	assert_int_equal(tl.n, 0);
}

static void test_ra_toollist_parse_several(void **state)
{
	struct ra_toollist tl;

	(void)state;
	assert_int_equal(ra_toollist_parse("/a/liba.so:libb.so:/c/libc.so", &tl), 0);
	assert_int_equal(tl.n, 3);
	assert_string_equal(tl.v[0], "/a/liba.so");
	assert_string_equal(tl.v[1], "libb.so");
	assert_string_equal(tl.v[2], "/c/libc.so");
	ra_toollist_free(&tl);
}

static void test_ra_toollist_parse_drops_empty_entries(void **state)
{
	struct ra_toollist tl;

	(void)state;
	assert_int_equal(ra_toollist_parse("::liba.so:::libb.so:", &tl), 0);
	assert_int_equal(tl.n, 2);
	assert_string_equal(tl.v[0], "liba.so");
	assert_string_equal(tl.v[1], "libb.so");
	ra_toollist_free(&tl);
}

static void test_ra_toollist_parse_all_empty(void **state)
{
	struct ra_toollist tl;

	(void)state;
	assert_int_equal(ra_toollist_parse("", &tl), -EINVAL);
	assert_null(tl.buf);
	assert_int_equal(ra_toollist_parse(":::", &tl), -EINVAL);
	assert_null(tl.buf);
	assert_int_equal(ra_toollist_parse(NULL, &tl), -EINVAL);
	assert_int_equal(ra_toollist_parse("x.so", NULL), -EINVAL);
}

static void build_list(char *buf, size_t len, int n)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, len - off, "%slib%d.so", i ? ":" : "", i);
}

static void test_ra_toollist_parse_too_many(void **state)
{
	struct ra_toollist tl;
	char list[2048];

	(void)state;
	build_list(list, sizeof(list), RA_TOOLLIST_MAX);
	assert_int_equal(ra_toollist_parse(list, &tl), 0);
	assert_int_equal(tl.n, RA_TOOLLIST_MAX);
	assert_string_equal(tl.v[RA_TOOLLIST_MAX - 1], "lib63.so");
	ra_toollist_free(&tl);

	build_list(list, sizeof(list), RA_TOOLLIST_MAX + 1);
	assert_int_equal(ra_toollist_parse(list, &tl), -E2BIG);
	assert_null(tl.buf);
	assert_int_equal(tl.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_toollist_parse_single),
	    cmocka_unit_test(test_ra_toollist_parse_several),
	    cmocka_unit_test(test_ra_toollist_parse_drops_empty_entries),
	    cmocka_unit_test(test_ra_toollist_parse_all_empty),
	    cmocka_unit_test(test_ra_toollist_parse_too_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

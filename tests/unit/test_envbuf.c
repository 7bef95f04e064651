/* SPDX-License-Identifier: MIT */
/* The environment buffer: round trips, the name filter, hostile buffers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/envbuf.h"

struct collected {
	char names[16][64];
	char values[16][8192];
	int n;
	int stop_at; /* return 1 from the callback at this index, -1: never */
};

static int collect(const char *name, const char *value, void *arg)
{
	struct collected *c = arg;

	if (c->n == c->stop_at)
		return 1;
	assert_true(c->n < 16);
	snprintf(c->names[c->n], sizeof(c->names[0]), "%s", name);
	snprintf(c->values[c->n], sizeof(c->values[0]), "%s", value);
	c->n++;
	return 0;
}

static struct collected *collected_new(void)
{
	struct collected *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->stop_at = -1;
	return c;
}

static uint32_t buf_count(const char *buf)
{
	uint32_t count;

	memcpy(&count, buf, sizeof(count));
	return count;
}

/* count, then the given raw bytes. */
static size_t make_raw(char *out, uint32_t count, const char *bytes, size_t n)
{
	memcpy(out, &count, sizeof(count));
	memcpy(out + sizeof(count), bytes, n);
	return sizeof(count) + n;
}

static void test_ra_envbuf_encode_empty(void **state)
{
	struct collected *c = collected_new();
	size_t len, skipped = 99;
	char *buf = NULL;

	(void)state;
	assert_int_equal(ra_envbuf_encode(NULL, 0, &buf, &len, &skipped), 0);
	assert_int_equal(len, 4);
	assert_int_equal(skipped, 0);
	assert_int_equal(buf_count(buf), 0);
	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), 0);
	assert_int_equal(c->n, 0);
	free(buf);
	free(c);
}

static void test_ra_envbuf_encode_one(void **state)
{
	const char *env[] = {"ROCP_A=1"};
	struct collected *c = collected_new();
	char *buf;
	size_t len;

	(void)state;
	assert_int_equal(ra_envbuf_encode(env, 1, &buf, &len, NULL), 0);
	assert_int_equal(len, 4 + sizeof("ROCP_A\0001"));
	assert_memory_equal(buf + 4, "ROCP_A\0001", sizeof("ROCP_A\0001"));
	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), 0);
	assert_int_equal(c->n, 1);
	assert_string_equal(c->names[0], "ROCP_A");
	assert_string_equal(c->values[0], "1");
	free(buf);
	free(c);
}

static void test_ra_envbuf_encode_many(void **state)
{
	const char *env[] = {"ROCP_A=1", "ROCPROF_OUTPUT_PATH=/tmp/x",
			     "ROCP_EMPTY=", "ROCP_EQ=a=b=c", "ROCP_TOOL_ATTACH=1"};
	struct collected *c = collected_new();
	char *buf;
	size_t len;
	int i;

	(void)state;
	assert_int_equal(ra_envbuf_encode(env, 5, &buf, &len, NULL), 0);
	assert_int_equal(buf_count(buf), 5);
	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), 0);
	assert_int_equal(c->n, 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(strncmp(env[i], c->names[i], strlen(c->names[i])), 0);
	assert_string_equal(c->values[1], "/tmp/x");
	assert_string_equal(c->values[2], "");
	assert_string_equal(c->values[3], "a=b=c");
	free(buf);
	free(c);
}

static void test_ra_envbuf_encode_long_value(void **state)
{
	struct collected *c = collected_new();
	char *entry = malloc(8000), *buf;
	const char *env[1] = {entry};
	size_t len;

	(void)state;
	assert_non_null(entry);
	memcpy(entry, "ROCP_LONG=", 10);
	memset(entry + 10, 'v', 7000);
	entry[7010] = '\0';
	assert_int_equal(ra_envbuf_encode(env, 1, &buf, &len, NULL), 0);
	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), 0);
	assert_int_equal(strlen(c->values[0]), 7000);
	assert_string_equal(c->values[0], entry + 10);
	free(buf);
	free(entry);
	free(c);
}

static void test_ra_envbuf_encode_filters_names(void **state)
{
	const char *env[] = {
	    "ROCP_OK=1", "rocp_lower=1", "XROCP=1",   "ROCPROFILER_REGISTER_LIBRARY=/x.so",
	    "ROC=1",	 "ROCP_NOEQ",	 "PATH=/bin", "ROCPROFILER_REGISTER_LIBRARYX=1",
	    NULL,	 "ROCP=bare"};
	struct collected *c = collected_new();
	size_t len, skipped;
	char *buf;

	(void)state;
	assert_int_equal(ra_envbuf_encode(env, 10, &buf, &len, &skipped), 0);
	assert_int_equal(skipped, 7);
	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), 0);
	assert_int_equal(c->n, 3);
	assert_string_equal(c->names[0], "ROCP_OK");
	assert_string_equal(c->names[1], "ROCPROFILER_REGISTER_LIBRARYX");
	assert_string_equal(c->names[2], "ROCP");
	free(buf);
	free(c);
}

static void test_ra_envbuf_name_allowed_rules(void **state)
{
	(void)state;
	assert_true(ra_envbuf_name_allowed("ROCP", 4));
	assert_true(ra_envbuf_name_allowed("ROCP_TOOL_ATTACH", 16));
	assert_true(ra_envbuf_name_allowed("ROCP_A=1", 6));
	assert_false(ra_envbuf_name_allowed("ROCP_A=1", 8));
	assert_false(ra_envbuf_name_allowed("Rocp_x", 6));
	assert_false(ra_envbuf_name_allowed("ROC", 3));
	assert_false(ra_envbuf_name_allowed("ROCPROFILER_REGISTER_LIBRARY", 28));
	assert_false(ra_envbuf_name_allowed(NULL, 4));
}

static void test_ra_envbuf_encode_bad_args(void **state)
{
	const char *env[] = {"ROCP_A=1"};
	size_t len;
	char *buf;

	(void)state;
	assert_int_equal(ra_envbuf_encode(NULL, 1, &buf, &len, NULL), -EINVAL);
	assert_int_equal(ra_envbuf_encode(env, 1, NULL, &len, NULL), -EINVAL);
	assert_int_equal(ra_envbuf_encode(env, 1, &buf, NULL, NULL), -EINVAL);
}

static void test_ra_envbuf_decode_count_zero(void **state)
{
	struct collected *c = collected_new();
	char buf[16];
	size_t len = make_raw(buf, 0, "junk", 4);

	(void)state;
	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), 0);
	assert_int_equal(ra_envbuf_decode(buf, 4, collect, c), 0);
	assert_int_equal(c->n, 0);
	free(c);
}

static void test_ra_envbuf_decode_unaligned(void **state)
{
	struct collected *c = collected_new();
	char raw[64];

	(void)state;
	make_raw(raw + 1, 1, "ROCP_U\0x", 9);
	assert_int_equal(ra_envbuf_decode(raw + 1, 13, collect, c), 0);
	assert_int_equal(c->n, 1);
	assert_string_equal(c->values[0], "x");
	free(c);
}

static void expect_malformed(const char *buf, size_t len)
{
	struct collected *c = collected_new();

	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), -EINVAL);
	assert_int_equal(c->n, 0);
	free(c);
}

static void test_ra_envbuf_decode_truncated_count(void **state)
{
	char buf[4] = {1, 0, 0, 0};

	(void)state;
	expect_malformed(buf, 0);
	expect_malformed(buf, 3);
	expect_malformed(NULL, 16);
}

static void test_ra_envbuf_decode_count_too_large(void **state)
{
	char buf[64];
	size_t len = make_raw(buf, 3, "ROCP_A\0001\0ROCP_B\0002", 18);

	(void)state;
	expect_malformed(buf, len);
	len = make_raw(buf, UINT32_MAX, "ROCP_A\0001", 9);
	expect_malformed(buf, len);
}

static void test_ra_envbuf_decode_missing_final_nul(void **state)
{
	char buf[64];
	size_t len = make_raw(buf, 2, "ROCP_A\0001\0ROCP_B\0002", 17);

	(void)state;
	expect_malformed(buf, len);
	len = make_raw(buf, 1, "ROCP_A", 6);
	expect_malformed(buf, len);
}

static void test_ra_envbuf_decode_empty_name(void **state)
{
	char buf[64];
	size_t len = make_raw(buf, 2, "ROCP_A\0001\0\0002", 12);

	(void)state;
	expect_malformed(buf, len);
}

static void test_ra_envbuf_decode_name_with_equals(void **state)
{
	char buf[64];
	size_t len = make_raw(buf, 2, "ROCP_A\0001\0ROCP=B\0002", 18);

	(void)state;
	expect_malformed(buf, len);
}

static void test_ra_envbuf_decode_callback_stops(void **state)
{
	const char *env[] = {"ROCP_A=1", "ROCP_B=2", "ROCP_C=3"};
	struct collected *c = collected_new();
	size_t len;
	char *buf;

	(void)state;
	c->stop_at = 1;
	assert_int_equal(ra_envbuf_encode(env, 3, &buf, &len, NULL), 0);
	assert_int_equal(ra_envbuf_decode(buf, len, collect, c), 1);
	assert_int_equal(c->n, 1);
	free(buf);
	free(c);
}

/*
 * The buffer ends exactly at a page followed by a PROT_NONE page: reading
 * one byte past len faults, so passing means decode stayed inside.
 */
static char *edge_place(const char *bytes, size_t n, char **map, size_t *maplen)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *m;

	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + page, page, PROT_NONE), 0);
	memcpy(m + page - n, bytes, n);
	*map = m;
	*maplen = 2 * page;
	return m + page - n;
}

static void test_ra_envbuf_decode_stays_within_len(void **state)
{
	char raw[64], *map, *p;
	size_t n, maplen;
	struct collected *c = collected_new();

	(void)state;
	n = make_raw(raw, 1, "ROCP_A\0001", 8);
	p = edge_place(raw, n, &map, &maplen);
	expect_malformed(p, n);
	munmap(map, maplen);

	n = make_raw(raw, 1, "ROCP_A\0001", 9);
	p = edge_place(raw, n, &map, &maplen);
	assert_int_equal(ra_envbuf_decode(p, n, collect, c), 0);
	assert_int_equal(c->n, 1);
	munmap(map, maplen);

	n = make_raw(raw, 7, "ROCP_A\0001\0ROCP_B", 16);
	p = edge_place(raw, n, &map, &maplen);
	expect_malformed(p, n);
	munmap(map, maplen);

	p = edge_place(raw, 2, &map, &maplen);
	expect_malformed(p, 2);
	munmap(map, maplen);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_envbuf_encode_empty),
	    cmocka_unit_test(test_ra_envbuf_encode_one),
	    cmocka_unit_test(test_ra_envbuf_encode_many),
	    cmocka_unit_test(test_ra_envbuf_encode_long_value),
	    cmocka_unit_test(test_ra_envbuf_encode_filters_names),
	    cmocka_unit_test(test_ra_envbuf_name_allowed_rules),
	    cmocka_unit_test(test_ra_envbuf_encode_bad_args),
	    cmocka_unit_test(test_ra_envbuf_decode_count_zero),
	    cmocka_unit_test(test_ra_envbuf_decode_unaligned),
	    cmocka_unit_test(test_ra_envbuf_decode_truncated_count),
	    cmocka_unit_test(test_ra_envbuf_decode_count_too_large),
	    cmocka_unit_test(test_ra_envbuf_decode_missing_final_nul),
	    cmocka_unit_test(test_ra_envbuf_decode_empty_name),
	    cmocka_unit_test(test_ra_envbuf_decode_name_with_equals),
	    cmocka_unit_test(test_ra_envbuf_decode_callback_stops),
	    cmocka_unit_test(test_ra_envbuf_decode_stays_within_len),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

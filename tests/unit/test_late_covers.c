/* SPDX-License-Identifier: MIT */
/*
 * What a late start covers per rocprofiler-sdk version (node/late_covers.c),
 * pinned to the upstream text in ROCm/rocm-systems: rocprofiler-sdk's
 * CHANGELOG.md @ 0029a62d (late start from 1.3.0, ROCm 7.13; 1.3.2 is ROCm
 * 7.14, whose release notes bring queue interposition and
 * ROCPROFILER_QUEUE_INTERPOSITION) and hsa/queue_interposition.cpp @ 008d68a8
 * (queues not seen at creation are found on first use outside attach mode).
 * Then the version read from real files named as the SDK's build names them.
 */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "late_covers.h"

static bool has(const char *const *v, size_t n, const char *needle)
{
	for (size_t i = 0; i < n; i++)
		if (strstr(v[i], needle))
			return true;
	return false;
}

#define COVERS(c, s) has((c)->covers, (c)->ncovers, s)
#define NOT(c, s) has((c)->not_covered, (c)->nnot_covered, s)

static void always(const struct rn_late_covers *c)
{
	assert_true(COVERS(c, "API tracing, from each thread's next call"));
	assert_true(NOT(c, "in flight"));
	assert_true(NOT(c, "names of code objects loaded before the start"));
	assert_true(NOT(c, "detach"));
}

static void newest_has_interposition(void **state)
{
	static const unsigned int vs[][3] = {{1, 3, 2}, {1, 3, 5}, {1, 4, 0}, {2, 0, 0}};
	struct rn_late_covers c;

	(void)state;
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		rn_late_covers_for(vs[i], NULL, &c);
		always(&c);
		assert_true(c.queue_interposition);
		assert_true(COVERS(&c, "queues created after the start"));
		assert_true(COVERS(&c, "queues created before the start"));
		assert_true(COVERS(&c, "experimental"));
		assert_true(COVERS(&c, "ROCPROFILER_QUEUE_INTERPOSITION=0"));
		assert_false(NOT(&c, "queues created before"));
		assert_non_null(strstr(c.basis, "rocprofiler-sdk "));
	}
}

static void late_start_without_interposition(void **state)
{
	static const unsigned int vs[][3] = {{1, 3, 0}, {1, 3, 1}};
	struct rn_late_covers c;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		rn_late_covers_for(vs[i], NULL, &c);
		always(&c);
		assert_false(c.queue_interposition);
		assert_true(COVERS(&c, "queues created after the start"));
		assert_false(COVERS(&c, "queues created before"));
		assert_true(NOT(&c, "queues created before the start"));
	}
}

static void older_and_unknown_are_conservative(void **state)
{
	static const unsigned int old[3] = {1, 2, 0};
	struct rn_late_covers c;

	(void)state;
	rn_late_covers_for(old, NULL, &c);
	always(&c);
	assert_int_equal(c.ncovers, 1);
	assert_true(NOT(&c, "kernel dispatches: not claimed"));
	assert_non_null(strstr(c.basis, "1.2.0 predates upstream's late start (1.3.0)"));
	rn_late_covers_for(NULL, "a reason", &c);
	always(&c);
	assert_int_equal(c.ncovers, 1);
	assert_false(c.queue_interposition);
	assert_non_null(strstr(c.basis, "cannot be read (a reason)"));
}

/* name: a file created in a fresh dir, link: a symlink to it (or ""). */
static void version_of(const char *name, const char *link, int want, const char *text)
{
	char dir[] = "/tmp/rocattach-covers.XXXXXX", file[PATH_MAX], ln[PATH_MAX];
	unsigned int v[3] = {0};
	struct rn_late_covers c;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/%s", dir, name);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(ln, sizeof(ln), "%s/%s", dir, link[0] ? link : name);
	if (link[0])
		assert_int_equal(symlink(name, ln), 0);
	assert_int_equal(rn_late_sdk_version(ln, v), want);
	rn_late_covers_of(ln, &c);
	assert_non_null(strstr(c.basis, text));
	unlink(ln);
	unlink(file);
	rmdir(dir);
}

static void version_from_the_file_name(void **state)
{
	(void)state;
	version_of("librocprofiler-sdk.so.1.3.5", "librocprofiler-sdk.so.1", 0,
		   "rocprofiler-sdk 1.3.5");
	version_of("librocprofiler-sdk.so.1.3.0", "", 0, "rocprofiler-sdk 1.3.0");
	version_of("librocprofiler-sdk.so.1", "", -1, "cannot be read");
	version_of("librocprofiler-sdk.so.1.3", "librocprofiler-sdk.so", -1, "cannot be read");
	version_of("librocprofiler-sdk.so.1.3.5x", "", -1, "cannot be read");
	assert_int_equal(rn_late_sdk_version("/nonexistent/librocprofiler-sdk.so.1.3.5", NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(newest_has_interposition),
	    cmocka_unit_test(late_start_without_interposition),
	    cmocka_unit_test(older_and_unknown_are_conservative),
	    cmocka_unit_test(version_from_the_file_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

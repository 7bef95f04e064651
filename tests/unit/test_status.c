/* SPDX-License-Identifier: MIT */
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "err.h"

static void test_status_values_frozen(void **state)
{
	(void)state;
	/* ROCm ABI: order and values never change. */
	assert_int_equal(ROCATTACH_STATUS_SUCCESS, 0);
	assert_int_equal(ROCATTACH_STATUS_ERROR, 1);
	assert_int_equal(ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT, 2);
	assert_int_equal(ROCATTACH_STATUS_ERROR_NOT_SUPPORTED, 3);
	assert_int_equal(ROCATTACH_STATUS_ERROR_PTRACE_ERROR, 4);
	assert_int_equal(ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED, 5);
	assert_int_equal(ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND, 6);
	assert_int_equal(ROCATTACH_STATUS_LAST, 7);
	assert_int_equal(sizeof(rocattach_status_t), sizeof(int));
}

static void test_get_status_name_and_string(void **state)
{
	(void)state;
	assert_string_equal(rocattach_get_status_name(ROCATTACH_STATUS_SUCCESS),
			    "ROCATTACH_STATUS_SUCCESS");
	assert_string_equal(rocattach_get_status_string(ROCATTACH_STATUS_SUCCESS), "Success");
	assert_string_equal(rocattach_get_status_string(ROCATTACH_STATUS_ERROR), "General error");
	assert_string_equal(
	    rocattach_get_status_name(ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND),
	    "ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND");
	assert_string_equal(
	    rocattach_get_status_string(ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED),
	    "ptrace returned EPERM, operation not permitted");
	for (int s = 0; s < ROCATTACH_STATUS_LAST; s++) {
		assert_non_null(rocattach_get_status_name((rocattach_status_t)s));
		assert_non_null(rocattach_get_status_string((rocattach_status_t)s));
	}
	assert_null(rocattach_get_status_name(ROCATTACH_STATUS_LAST));
	assert_null(rocattach_get_status_string((rocattach_status_t)-1));
	assert_null(rocattach_get_status_string((rocattach_status_t)1000));
}

static void test_get_version_matches_header(void **state)
{
	rocattach_version_triplet_t t;
	uint32_t major, minor, patch;

	(void)state;
	assert_int_equal(rocattach_get_version(&major, &minor, &patch), ROCATTACH_STATUS_SUCCESS);
	/* The SDK's version, as AMD's library reports it: major 1, not the project's. */
	assert_int_equal(major, ROCATTACH_SDK_VERSION_MAJOR);
	assert_int_equal(minor, ROCATTACH_SDK_VERSION_MINOR);
	assert_int_equal(patch, ROCATTACH_SDK_VERSION_PATCH);
	assert_int_equal(major, 1);
	assert_int_equal(ROCATTACH_SDK_VERSION, 10000 * major + 100 * minor + patch);
	assert_int_equal(rocattach_get_version(NULL, NULL, NULL), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_get_version_triplet(&t), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(t.major, major);
	assert_int_equal(t.minor, minor);
	assert_int_equal(t.patch, patch);
}

static void test_status_from_ptrace_errno_mapping(void **state)
{
	(void)state;
	assert_int_equal(ra_status_from_ptrace_errno(1 /* EPERM */),
			 ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED);
	assert_int_equal(ra_status_from_ptrace_errno(3 /* ESRCH */),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_int_equal(ra_status_from_ptrace_errno(5 /* EIO */),
			 ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
}

static void test_err_set_appends_later_failures(void **state)
{
	struct ra_err e = {0};

	(void)state;
	ra_err_set(&e, ROCATTACH_STATUS_ERROR, "first %d", 1);
	ra_err_set(&e, ROCATTACH_STATUS_ERROR_PTRACE_ERROR, "restore %s", "failed");
	/* The first failure gives the status; the later one is kept in the message. */
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR);
	assert_string_equal(e.msg, "first 1; then restore failed");
	ra_err_reset(&e, ROCATTACH_STATUS_ERROR_PTRACE_ERROR, "third");
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
	assert_string_equal(e.msg, "third");
	ra_err_clear(&e);
	assert_int_equal(e.status, ROCATTACH_STATUS_SUCCESS);
	assert_string_equal(e.msg, "");
}

static void test_err_set_full_message_ends_cut(void **state)
{
	struct ra_err e = {0};
	char big[ROCATTACH_MESSAGE_MAX - 20];
	size_t len;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ra_err_set(&e, ROCATTACH_STATUS_ERROR, "%s", big);
	ra_err_set(&e, ROCATTACH_STATUS_ERROR, "a later failure with a long message");
	len = strlen(e.msg);
	assert_int_equal(len, sizeof(e.msg) - 1);
	assert_non_null(strstr(e.msg, "; then a later"));
	assert_string_equal(e.msg + len - 3, "...");
	/* No room left: still cut, never overflowing. */
	ra_err_set(&e, ROCATTACH_STATUS_ERROR, "more");
	assert_int_equal(strlen(e.msg), len);
	assert_string_equal(e.msg + len - 3, "...");
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_status_values_frozen),
	    cmocka_unit_test(test_get_status_name_and_string),
	    cmocka_unit_test(test_get_version_matches_header),
	    cmocka_unit_test(test_status_from_ptrace_errno_mapping),
	    cmocka_unit_test(test_err_set_appends_later_failures),
	    cmocka_unit_test(test_err_set_full_message_ends_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

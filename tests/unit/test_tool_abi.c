/* SPDX-License-Identifier: MIT */
/*
 * include/rocattach/tool.h against rocprofiler-sdk's own declarations, on
 * x86-64 (LP64). The figures below are read off the SDK's headers in
 * ROCm/rocm-systems, projects/rocprofiler-sdk/source/include/rocprofiler-sdk/:
 *   registration.h @ 1803c2273abdb5c1bdb8617d06fd1650ee674e6a:
 *     rocprofiler_client_id_t { size_t size; const char *name; const uint32_t handle; }
 *     rocprofiler_tool_configure_result_t { size_t size; initialize; finalize; void *tool_data; }
 *   experimental/registration.h @ 410f315dd17c897d67d9864b413d4630bb3cf85a:
 *     rocprofiler_tool_configure_attach_result_t { size_t size; tool_attach; tool_detach;
 *                                                  void *tool_data; }
 *   fwd.h @ 04098322519e300d7f8462e9d21d8792a6cd4f50:
 *     rocprofiler_context_id_t { uint64_t handle; }
 * and the version: projects/rocprofiler-sdk/CHANGELOG.md @
 * 0029a62d9e7ccac1224c103807d7b22a64acf421, "ROCprofiler-SDK 1.3.5", the
 * newest release. rocprofiler-register's error codes: docs/protocol.md.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/tool.h>
#include <rocattach/version.h>

static void test_client_id_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(rocprofiler_client_id_t), 24);
	assert_int_equal(offsetof(rocprofiler_client_id_t, size), 0);
	assert_int_equal(offsetof(rocprofiler_client_id_t, name), 8);
	assert_int_equal(offsetof(rocprofiler_client_id_t, handle), 16);
	assert_int_equal(sizeof(((rocprofiler_client_id_t *)0)->handle), 4);
}

static void test_configure_result_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(rocprofiler_tool_configure_result_t), 32);
	assert_int_equal(offsetof(rocprofiler_tool_configure_result_t, size), 0);
	assert_int_equal(offsetof(rocprofiler_tool_configure_result_t, initialize), 8);
	assert_int_equal(offsetof(rocprofiler_tool_configure_result_t, finalize), 16);
	assert_int_equal(offsetof(rocprofiler_tool_configure_result_t, tool_data), 24);
}

static void test_configure_attach_result_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(rocprofiler_tool_configure_attach_result_t), 32);
	assert_int_equal(offsetof(rocprofiler_tool_configure_attach_result_t, size), 0);
	assert_int_equal(offsetof(rocprofiler_tool_configure_attach_result_t, tool_attach), 8);
	assert_int_equal(offsetof(rocprofiler_tool_configure_attach_result_t, tool_detach), 16);
	assert_int_equal(offsetof(rocprofiler_tool_configure_attach_result_t, tool_data), 24);
}

static void test_context_id_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(rocprofiler_context_id_t), 8);
	assert_int_equal(offsetof(rocprofiler_context_id_t, handle), 0);
}

static void test_sdk_version(void **state)
{
	(void)state;
	assert_int_equal(ROCATTACH_SDK_VERSION, 10305);
	assert_string_equal(ROCATTACH_SDK_VERSION_STRING, "1.3.5");
	/* Tools offer rocprofiler_configure_attach from 1.2.0 on. */
	assert_true(ROCATTACH_SDK_VERSION >= 10200);
}

static void test_register_error_values(void **state)
{
	(void)state;
	assert_int_equal(ROCATTACH_REGISTER_SUCCESS, 0);
	assert_int_equal(ROCATTACH_REGISTER_NO_TOOLS, 1);
	assert_int_equal(ROCATTACH_REGISTER_DEADLOCK, 2);
	assert_int_equal(ROCATTACH_REGISTER_BAD_API_TABLE_LENGTH, 3);
	assert_int_equal(ROCATTACH_REGISTER_UNSUPPORTED_API, 4);
	assert_int_equal(ROCATTACH_REGISTER_INVALID_API_ADDRESS, 5);
	assert_int_equal(ROCATTACH_REGISTER_ROCPROFILER_ERROR, 6);
	assert_int_equal(ROCATTACH_REGISTER_EXCESS_API_INSTANCES, 7);
	assert_int_equal(ROCATTACH_REGISTER_INVALID_ARGUMENT, 8);
	assert_int_equal(ROCATTACH_REGISTER_ATTACHMENT_NOT_AVAILABLE, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_client_id_layout),
	    cmocka_unit_test(test_configure_result_layout),
	    cmocka_unit_test(test_configure_attach_result_layout),
	    cmocka_unit_test(test_context_id_layout),
	    cmocka_unit_test(test_sdk_version),
	    cmocka_unit_test(test_register_error_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

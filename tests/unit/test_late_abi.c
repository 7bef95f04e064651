/* SPDX-License-Identifier: MIT */
/*
 * The late-start doubles (tests/rocm/late/) pinned to the upstream text they
 * were written from (ROCm/rocm-systems; late_abi.h names files and commits):
 *  - rocprofiler-register.h @ 04e1fbc5: the error codes 0..9 in their order,
 *    the identifier {uint64_t handle}, the registration info {size_t size;
 *    const char *common_name; uint32_t lib_version; uint64_t
 *    api_table_length}, versions 10000 * major + 100 * minor + patch;
 *  - rocprofiler_register.cpp @ 04e1fbc5: the supported names (hip is index
 *    1, hsa 0), 8 instances a name, handle = 8 * index + instance, the
 *    exported calls, the default SDK name librocprofiler-sdk.so;
 *  - rocprofiler-sdk fwd.h @ 04098322: CONFIGURATION_LOCKED 16,
 *    INVALID_ARGUMENT 19; registration.cpp @ 0028ad56: the client id and
 *    configure result shapes, rocprofiler_is_initialized's statuses.
 * Then the register double itself, loaded here with no tool asked for: what
 * each call returns, what it keeps, and that nothing loads an SDK.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../rocm/late/late_abi.h"

#define LATE(file) RA_LATE_DIR "/" file

typedef int (*register_fn)(const char *, late_reg_import_fn, uint32_t, void **, uint64_t,
			   late_reg_id *);

static void test_register_values(void **state)
{
	(void)state;
	assert_int_equal(LATE_REG_SUCCESS, 0);
	assert_int_equal(LATE_REG_NO_TOOLS, 1);
	assert_int_equal(LATE_REG_DEADLOCK, 2);
	assert_int_equal(LATE_REG_BAD_API_TABLE_LENGTH, 3);
	assert_int_equal(LATE_REG_UNSUPPORTED_API, 4);
	assert_int_equal(LATE_REG_INVALID_API_ADDRESS, 5);
	assert_int_equal(LATE_REG_ROCPROFILER_ERROR, 6);
	assert_int_equal(LATE_REG_EXCESS_API_INSTANCES, 7);
	assert_int_equal(LATE_REG_INVALID_ARGUMENT, 8);
	assert_int_equal(LATE_REG_ATTACHMENT_NOT_AVAILABLE, 9);
	assert_int_equal(LATE_REG_ERROR_CODE_END, 10);
	assert_int_equal(sizeof(late_reg_id), 8);
	assert_int_equal(offsetof(late_reg_info, common_name), 8);
	assert_int_equal(offsetof(late_reg_info, lib_version), 16);
	assert_int_equal(offsetof(late_reg_info, api_table_length), 24);
	assert_int_equal(sizeof(late_reg_info), 32);
	assert_int_equal(LATE_REG_VERSION(7, 2, 0), 70200);
	assert_int_equal(LATE_REG_INSTANCES_PER_NAME * LATE_REG_NAMES, 64);
}

static void test_sdk_values(void **state)
{
	(void)state;
	assert_int_equal(LATE_SDK_STATUS_ERROR_CONFIGURATION_LOCKED, 16);
	assert_int_equal(LATE_SDK_STATUS_ERROR_INVALID_ARGUMENT, 19);
	assert_int_equal(sizeof(late_sdk_client_id), 24);
	assert_int_equal(offsetof(late_sdk_client_id, handle), 16);
	assert_int_equal(sizeof(late_sdk_configure_result), 32);
	assert_int_equal(offsetof(late_sdk_configure_result, tool_data), 24);
	assert_int_equal(offsetof(struct late_hip_table, get_device_count), 8);
}

static void *open_local(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		fail_msg("%s: %s", path, dlerror());
	return h;
}

static void test_exported_names(void **state)
{
	static const char *const reg[] = {
	    "rocprofiler_register_library_api_table",
	    "rocprofiler_register_error_string",
	    "rocprofiler_register_iterate_registration_info",
	    "rocprofiler_register_invoke_all_registrations",
	    "rocprofiler_register_invoke_nonpropagated_registrations",
	    "rocprofiler_register_attach",
	    "rocprofiler_register_detach",
	};
	static const char *const sdk[] = {"rocprofiler_set_api_table", "rocprofiler_is_initialized",
					  "rocprofiler_is_finalized", "rocprofiler_get_version"};
	void *r = open_local(LATE("librocprofiler-register.so.0"));
	void *w = open_local(LATE("wheel/librocprofiler-register-5f3a9c1e.so.0"));
	void *s = open_local(LATE("sdk/librocprofiler-sdk.so.1"));

	(void)state;
	for (size_t i = 0; i < sizeof(reg) / sizeof(reg[0]); i++) {
		assert_non_null(dlsym(r, reg[i]));
		assert_non_null(dlsym(w, reg[i]));
	}
	for (size_t i = 0; i < sizeof(sdk) / sizeof(sdk[0]); i++)
		assert_non_null(dlsym(s, sdk[i]));
	/* Internal names stay hidden. */
	assert_null(dlsym(r, "scan_for_tools"));
	dlclose(s);
	dlclose(w);
	dlclose(r);
}

static void test_sdk_versions(void **state)
{
	static const struct {
		const char *path;
		uint32_t v[3];
	} want[] = {{LATE("sdk/librocprofiler-sdk.so.1"), {1, 3, 5}},
		    {LATE("sdk-old/librocprofiler-sdk.so.1"), {1, 2, 0}}};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		void *h = open_local(want[i].path);
		int (*get)(uint32_t *, uint32_t *, uint32_t *);
		int (*is_init)(int *);
		uint32_t v[3] = {9, 9, 9};
		int status = 7;

		*(void **)&get = dlsym(h, "rocprofiler_get_version");
		*(void **)&is_init = dlsym(h, "rocprofiler_is_initialized");
		assert_int_equal(get(&v[0], &v[1], &v[2]), 0);
		assert_memory_equal(v, want[i].v, sizeof(v));
		/* Mapped but never given a table: not initialized. */
		assert_int_equal(is_init(&status), 0);
		assert_int_equal(status, 0);
		dlclose(h);
	}
}

static uint32_t import(void)
{
	return LATE_HIP_VERSION;
}

static int count_kept(late_reg_info *info, void *data)
{
	int *n = data;

	assert_int_equal(info->size, sizeof(*info));
	assert_int_equal(info->api_table_length, 1);
	n[strcmp(info->common_name, "hip") ? 1 : 0]++;
	return 0;
}

/* With no tool asked for: every table kept, NO_TOOLS, nothing loaded. */
static void test_store_without_tool(void **state)
{
	void *r = open_local(LATE("librocprofiler-register.so.0"));
	register_fn reg;
	int (*iterate)(late_reg_info_cb, void *);
	int (*invoke_all)(void);
	int (*attach)(const char *, const char *);
	const char *(*message)(int);
	struct late_hip_table t = {sizeof(t), NULL, NULL, NULL};
	void *tables[1] = {&t};
	late_reg_id id = {77};
	int kept[2] = {0, 0};

	(void)state;
	unsetenv("ROCP_TOOL_LIBRARIES");
	unsetenv("ROCPROFILER_REGISTER_LIBRARY");
	unsetenv("ROCPROFILER_REGISTER_FORCE_LOAD");
	*(void **)&reg = dlsym(r, "rocprofiler_register_library_api_table");
	*(void **)&iterate = dlsym(r, "rocprofiler_register_iterate_registration_info");
	*(void **)&invoke_all = dlsym(r, "rocprofiler_register_invoke_all_registrations");
	*(void **)&attach = dlsym(r, "rocprofiler_register_attach");
	*(void **)&message = dlsym(r, "rocprofiler_register_error_string");

	assert_int_equal(reg("hip", import, LATE_HIP_VERSION, tables, 0, &id), 3);
	assert_int_equal(reg("cuda", import, LATE_HIP_VERSION, tables, 1, &id), 4);
	assert_int_equal(reg("hsa", import, 10000, tables, 1, &id), 1);
	assert_int_equal(id.handle, 0);
	for (uint64_t i = 0; i < 8; i++) {
		assert_int_equal(reg("hip", import, LATE_HIP_VERSION, tables, 1, &id), 1);
		assert_int_equal(id.handle, 8 * LATE_REG_HIP_INDEX + i);
	}
	assert_int_equal(reg("hip", import, LATE_HIP_VERSION, tables, 1, &id), 7);
	assert_int_equal(iterate(count_kept, kept), 0);
	assert_int_equal(kept[0], 8);
	assert_int_equal(kept[1], 1);
	/* Nothing asked for: nothing handed, success, no SDK mapped, the table untouched. */
	assert_int_equal(invoke_all(), 0);
	assert_null(dlopen("librocprofiler-sdk.so.1", RTLD_NOLOAD | RTLD_LAZY));
	assert_null(t.mix);
	assert_int_equal(attach("", "tool.so"), 9);
	assert_string_equal(message(1), "rocprofiler-register found no tools");
	assert_string_equal(message(42), "rocprofiler_register_unknown_error");
	dlclose(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_register_values),    cmocka_unit_test(test_sdk_values),
	    cmocka_unit_test(test_exported_names),     cmocka_unit_test(test_sdk_versions),
	    cmocka_unit_test(test_store_without_tool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

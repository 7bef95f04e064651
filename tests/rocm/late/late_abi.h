/* SPDX-License-Identifier: MIT */
/*
 * What the late-start doubles share (tests/rocm/late/): rocprofiler-register's
 * and rocprofiler-sdk's types and values as their upstream text has them, and
 * the HIP-like table the victim registers. Written from the upstream text in
 * ROCm/rocm-systems, never copied:
 *
 *  - projects/rocprofiler-register/source/include/rocprofiler-register/
 *    rocprofiler-register.h (commit 04e1fbc5338585ecd4d2db5b4ebd89da34a0f78e):
 *    the identifier {uint64_t handle}, the error codes in their order, the
 *    registration info struct, lib_version = 10000 * major + 100 * minor +
 *    patch (ROCPROFILER_REGISTER_COMPUTE_VERSION_3);
 *  - .../rocprofiler-register/rocprofiler_register.cpp (same commit): the
 *    supported names in their order (hsa = 0, hip = 1, ...), 8 instances per
 *    name (offset_factor = 64 / max(ROCP_REG_LAST, 8)) and the identifier's
 *    handle = 8 * name index + instance;
 *  - projects/rocprofiler-sdk/source/include/rocprofiler-sdk/fwd.h (commit
 *    04098322519e300d7f8462e9d21d8792a6cd4f50): rocprofiler_status_t;
 *  - projects/rocprofiler-sdk/source/lib/rocprofiler-sdk/registration.cpp
 *    (commit 0028ad56a4c9542c4d93c85e88ea552679b347c1): the client id
 *    {size, name, handle}, rocprofiler_configure's and the configure
 *    result's shapes, rocprofiler_set_api_table's signature.
 */
#ifndef LATE_ABI_H
#define LATE_ABI_H

#include <stddef.h>
#include <stdint.h>

/* rocprofiler-register.h */
typedef uint32_t (*late_reg_import_fn)(void);

typedef struct {
	uint64_t handle;
} late_reg_id;

enum late_reg_error {
	LATE_REG_SUCCESS = 0,
	LATE_REG_NO_TOOLS,
	LATE_REG_DEADLOCK,
	LATE_REG_BAD_API_TABLE_LENGTH,
	LATE_REG_UNSUPPORTED_API,
	LATE_REG_INVALID_API_ADDRESS,
	LATE_REG_ROCPROFILER_ERROR,
	LATE_REG_EXCESS_API_INSTANCES,
	LATE_REG_INVALID_ARGUMENT,
	LATE_REG_ATTACHMENT_NOT_AVAILABLE,
	LATE_REG_ERROR_CODE_END,
};

typedef struct {
	size_t size;
	const char *common_name;
	uint32_t lib_version;
	uint64_t api_table_length;
} late_reg_info;

typedef int (*late_reg_info_cb)(late_reg_info *info, void *data);

#define LATE_REG_VERSION(major, minor, patch) (10000u * (major) + 100u * (minor) + (patch))
#define LATE_REG_INSTANCES_PER_NAME 8u
#define LATE_REG_NAMES 8u /* hsa hip roctx hip_compiler rccl rocdecode rocjpeg rocattach */
#define LATE_REG_HIP_INDEX 1u

/* rocprofiler-sdk: fwd.h and registration.h */
enum {
	LATE_SDK_STATUS_SUCCESS = 0,
	LATE_SDK_STATUS_ERROR = 1,
	LATE_SDK_STATUS_ERROR_CONFIGURATION_LOCKED = 16,
	LATE_SDK_STATUS_ERROR_INVALID_ARGUMENT = 19,
};

typedef struct {
	size_t size;
	const char *name;
	const uint32_t handle;
} late_sdk_client_id;

typedef void (*late_sdk_client_fini)(late_sdk_client_id id);

typedef struct {
	size_t size;
	int (*initialize)(late_sdk_client_fini fini, void *tool_data);
	void (*finalize)(void *tool_data);
	void *tool_data;
} late_sdk_configure_result;

typedef late_sdk_configure_result *(*late_sdk_configure_fn)(uint32_t version,
							    const char *runtime_version,
							    uint32_t priority,
							    late_sdk_client_id *id);

typedef int (*late_sdk_set_api_table_fn)(const char *name, uint64_t lib_version,
					 uint64_t lib_instance, void **tables, uint64_t num_tables);

/*
 * The HIP-like table (ours): as HIP's dispatch table, its first member is its
 * size, then function pointers. The victim and the double SDK both know it,
 * as HIP and rocprofiler-sdk both know HipDispatchTable.
 */
struct late_hip_table {
	uint64_t size;
	int (*get_device_count)(int *count);
	uint64_t (*mix)(uint64_t seed);
	int64_t (*add)(int64_t a, int64_t b);
};

#define LATE_HIP_VERSION LATE_REG_VERSION(7, 2, 0)
#define LATE_HIP_DEVICES 4

/* The double SDK's own calls (not upstream): what a test asks it. */
typedef void (*late_sdk_api_cb)(const char *function, void *data);
/* Calls that reached the wrappers of this table since the start (0: not wrapped). */
typedef uint64_t (*late_sdk_wrapped_calls_fn)(const void *table);
/* A tool's callback on each wrapped call (a stand-in for callback tracing). */
typedef int (*late_sdk_set_api_callback_fn)(late_sdk_api_cb cb, void *data);

#endif

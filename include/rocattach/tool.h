/* SPDX-License-Identifier: MIT */
/*
 * What a tool library implements to be loaded by an attach.
 *
 * The types are rocprofiler-sdk's, byte for byte, so a tool built against
 * rocprofiler-sdk's own headers loads under librocattach-agent, and a tool
 * built against this header loads under ROCm's rocprofiler-register. Read
 * from ROCm/rocm-systems, projects/rocprofiler-sdk/source/include/:
 *   rocprofiler-sdk/registration.h, commit 1803c2273abdb5c1bdb8617d06fd1650ee674e6a
 *     (rocprofiler_client_id_t, the configure result and its callbacks);
 *   rocprofiler-sdk/experimental/registration.h, commit 410f315dd17c897d67d9864b413d4630bb3cf85a
 *     (the attach result, tool_attach and tool_detach);
 *   rocprofiler-sdk/fwd.h, commit 04098322519e300d7f8462e9d21d8792a6cd4f50
 *     (rocprofiler_context_id_t).
 * tests/unit/test_tool_abi.c pins every size and offset to those files.
 * If rocprofiler-sdk's headers were included first, theirs are used.
 *
 * How the loader uses them (projects/rocprofiler-sdk/source/lib/rocprofiler-sdk/
 * registration.cpp, commit d379662d51e6d70c96ef4591be3f9796146a8a05):
 *  - the client id a tool gets has size = sizeof(rocprofiler_client_id_t),
 *    name = NULL and a handle of the loader's; the tool may set name; the
 *    loader keeps its own copy of the handle and never trusts the tool's;
 *  - priority is how many tools were configured before this one;
 *  - a NULL result from rocprofiler_configure declines: that tool is not
 *    activated, and that is not an error; rocprofiler_configure_attach is
 *    asked only when rocprofiler_configure did not decline;
 *  - the results are copied when they are returned.
 *
 * Lifecycle, run by the agent inside the target:
 *   first attach:  rocprofiler_configure -> rocprofiler_configure_attach
 *                  -> initialize (once) -> tool_attach
 *   every detach:  tool_detach
 *   re-attach:     tool_attach
 *   process exit:  finalize (once), unless the tool called its fini function
 * A tool must not call into the profiled runtime from initialize.
 */
#ifndef ROCATTACH_TOOL_H
#define ROCATTACH_TOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rocprofiler-sdk's headers use #pragma once: their defines.h macro tells they were read. */
#if !defined(ROCPROFILER_REGISTRATION_H_TYPES_DEFINED) && !defined(ROCPROFILER_EXTERN_C_INIT)
#define ROCPROFILER_REGISTRATION_H_TYPES_DEFINED

typedef struct rocprofiler_client_id_t {
	size_t size;	       /* sizeof(rocprofiler_client_id_t), set by the loader */
	const char *name;      /* the tool may set it in rocprofiler_configure */
	const uint32_t handle; /* set by the loader; a tool's write to it is never read */
} rocprofiler_client_id_t;

typedef struct {
	uint64_t handle;
} rocprofiler_context_id_t;

typedef void (*rocprofiler_client_finalize_t)(rocprofiler_client_id_t);
typedef void (*rocprofiler_client_detach_t)(rocprofiler_client_id_t);

typedef int (*rocprofiler_tool_initialize_t)(rocprofiler_client_finalize_t finalize_func,
					     void *tool_data);
typedef void (*rocprofiler_tool_finalize_t)(void *tool_data);

typedef struct rocprofiler_tool_configure_result_t {
	size_t size; /* sizeof(rocprofiler_tool_configure_result_t) */
	rocprofiler_tool_initialize_t initialize;
	rocprofiler_tool_finalize_t finalize;
	void *tool_data;
} rocprofiler_tool_configure_result_t;

typedef int (*rocprofiler_tool_attach_t)(rocprofiler_client_detach_t detach_func,
					 rocprofiler_context_id_t *context_ids,
					 uint64_t context_ids_length, void *tool_data);
typedef void (*rocprofiler_tool_detach_t)(void *tool_data);

typedef struct rocprofiler_tool_configure_attach_result_t {
	size_t size; /* sizeof(rocprofiler_tool_configure_attach_result_t) */
	rocprofiler_tool_attach_t tool_attach;
	rocprofiler_tool_detach_t tool_detach;
	void *tool_data;
} rocprofiler_tool_configure_attach_result_t;

#endif /* ROCPROFILER_REGISTRATION_H_TYPES_DEFINED */

/*
 * Exported by a tool (both with default visibility). version =
 * 10000*major + 100*minor + patch of the SDK the loader stands for
 * (ROCATTACH_SDK_VERSION for our agent); priority = how many tools were
 * configured before this one. NULL declines.
 */
rocprofiler_tool_configure_result_t *rocprofiler_configure(uint32_t version,
							   const char *runtime_version,
							   uint32_t priority,
							   rocprofiler_client_id_t *client_id);
rocprofiler_tool_configure_attach_result_t *
rocprofiler_configure_attach(uint32_t version, const char *runtime_version, uint32_t priority,
			     rocprofiler_client_id_t *client_id);

/* The agent's entry points (rocprofiler-register's names); 0 is success. */
enum rocattach_register_error {
	ROCATTACH_REGISTER_SUCCESS = 0,
	ROCATTACH_REGISTER_NO_TOOLS,
	ROCATTACH_REGISTER_DEADLOCK,
	ROCATTACH_REGISTER_BAD_API_TABLE_LENGTH,
	ROCATTACH_REGISTER_UNSUPPORTED_API,
	ROCATTACH_REGISTER_INVALID_API_ADDRESS,
	ROCATTACH_REGISTER_ROCPROFILER_ERROR,
	ROCATTACH_REGISTER_EXCESS_API_INSTANCES, /* ours: another live attacher holds the window */
	ROCATTACH_REGISTER_INVALID_ARGUMENT,
	ROCATTACH_REGISTER_ATTACHMENT_NOT_AVAILABLE,
	ROCATTACH_REGISTER_LAST,
};

int rocprofiler_register_attach(const char *environment_buffer, const char *tool_lib_path);
int rocprofiler_register_detach(void);

#ifdef __cplusplus
}
#endif

#endif /* ROCATTACH_TOOL_H */

/* SPDX-License-Identifier: MIT */
/*
 * What a tool library implements to be loaded by an attach.
 *
 * Layout-compatible with rocprofiler-sdk's registration types, so a tool
 * built against this header also loads under ROCm's rocprofiler-register, and
 * a rocprofiler-sdk tool loads under librocattach-agent. If rocprofiler-sdk's
 * <rocprofiler-sdk/registration.h> was included first, its definitions are used.
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

#ifndef ROCPROFILER_REGISTRATION_H_TYPES_DEFINED
#define ROCPROFILER_REGISTRATION_H_TYPES_DEFINED

typedef struct rocprofiler_client_id_t {
	const char *name;      /* the tool may set it in rocprofiler_configure */
	const uint32_t handle; /* set by the loader, read-only */
} rocprofiler_client_id_t;

typedef struct rocprofiler_context_id_t {
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
 * 10000*major + 100*minor + patch of the loader; priority = how many tools
 * were configured before this one. NULL declines.
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

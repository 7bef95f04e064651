/* SPDX-License-Identifier: MIT */
#include <rocattach/rocattach.h>

static const struct {
	const char *name;
	const char *message;
} status_table[ROCATTACH_STATUS_LAST] = {
    [ROCATTACH_STATUS_SUCCESS] = {"ROCATTACH_STATUS_SUCCESS", "Success"},
    [ROCATTACH_STATUS_ERROR] = {"ROCATTACH_STATUS_ERROR", "General error"},
    [ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT] = {"ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT",
						 "Invalid function argument"},
    [ROCATTACH_STATUS_ERROR_NOT_SUPPORTED] = {"ROCATTACH_STATUS_ERROR_NOT_SUPPORTED",
					      "Attachment not supported on this platform"},
    [ROCATTACH_STATUS_ERROR_PTRACE_ERROR] = {"ROCATTACH_STATUS_ERROR_PTRACE_ERROR",
					     "General ptrace error"},
    [ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED] =
	{"ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED",
	 "ptrace returned EPERM, operation not permitted"},
    [ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND] =
	{"ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND",
	 "ptrace returned ESRCH, no such process"},
};

const char *rocattach_get_status_name(rocattach_status_t status)
{
	if ((unsigned int)status >= ROCATTACH_STATUS_LAST)
		return NULL;
	return status_table[status].name;
}

const char *rocattach_get_status_string(rocattach_status_t status)
{
	if ((unsigned int)status >= ROCATTACH_STATUS_LAST)
		return NULL;
	return status_table[status].message;
}

/* The SDK version, as AMD's library reports it: callers compare majors. */
rocattach_status_t rocattach_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch)
{
	if (major)
		*major = ROCATTACH_SDK_VERSION_MAJOR;
	if (minor)
		*minor = ROCATTACH_SDK_VERSION_MINOR;
	if (patch)
		*patch = ROCATTACH_SDK_VERSION_PATCH;
	return ROCATTACH_STATUS_SUCCESS;
}

rocattach_status_t rocattach_get_version_triplet(rocattach_version_triplet_t *info)
{
	return rocattach_get_version(&info->major, &info->minor, &info->patch);
}

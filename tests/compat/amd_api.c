/* SPDX-License-Identifier: MIT */
/*
 * Code written against AMD's <rocprofiler-sdk-rocattach/rocattach.h> builds
 * and links against librocattach unchanged: same names, signatures, values.
 * Links the shared library only, so every symbol must be exported.
 */
#include <rocprofiler-sdk-rocattach/rocattach.h>
#include <rocprofiler-sdk-rocattach/types.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
	rocattach_status_t (*attach)(int) = rocattach_attach;
	rocattach_status_t (*attach_tree)(int) = rocattach_attach_tree;
	rocattach_status_t (*detach)(int) = rocattach_detach;
	rocattach_status_t (*detach_tree)(int) = rocattach_detach_tree;
	rocattach_status_t (*version)(uint32_t *, uint32_t *, uint32_t *) = rocattach_get_version;
	rocattach_status_t (*triplet)(rocattach_version_triplet_t *) =
	    rocattach_get_version_triplet;
	const char *(*name)(rocattach_status_t) = rocattach_get_status_name;
	const char *(*string)(rocattach_status_t) = rocattach_get_status_string;
	rocattach_version_triplet_t t = {0};
	int fails = 0;

	fails += attach(-1) != ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT;
	fails += attach_tree(-1) != ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT;
	fails += detach(12345678) != ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT;
	fails += detach_tree(12345678) != ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT;
	fails += detach(0) != ROCATTACH_STATUS_SUCCESS;
	fails += version(NULL, NULL, NULL) != ROCATTACH_STATUS_SUCCESS;
	fails += triplet(&t) != ROCATTACH_STATUS_SUCCESS;
	/* AMD's header: versions are compatible when majors match; the SDK is 1.x. */
	fails += t.major != 1;
	fails += strcmp(name(ROCATTACH_STATUS_ERROR_NOT_SUPPORTED),
			"ROCATTACH_STATUS_ERROR_NOT_SUPPORTED") != 0;
	fails += strcmp(string(ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT),
			"Invalid function argument") != 0;
	fails += name(ROCATTACH_STATUS_LAST) != NULL;
	printf("%d passed, %d failed\n", 11 - fails, fails);
	return fails != 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/auxv (binary, 64-bit pairs, any alignment). The entry looked up
 * is the one the library needs (AT_ENTRY, AT_SECURE) or the first pair's type.
 */
#include <elf.h>
#include <errno.h>

#include "fuzz.h"
#include "common/procfs.h"

static void lookup(const uint8_t *data, size_t size, uint64_t type)
{
	uint64_t val = 0;
	int r = ra_auxv_parse(data, size, type, &val);

	FUZZ_CHECK(r == 0 || r == -ENOENT || (r == -EINVAL && type == AT_NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t first = 0;

	lookup(data, size, AT_ENTRY);
	lookup(data, size, AT_SECURE);
	if (size >= sizeof(first)) {
		memcpy(&first, data, sizeof(first));
		lookup(data, size, first);
		/* Unaligned: the same bytes one further on. */
		lookup(data + 1, size - 1, first);
	}
	return 0;
}

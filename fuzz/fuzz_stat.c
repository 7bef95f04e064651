/* SPDX-License-Identifier: MIT */
/* /proc/PID/stat: comm may hold anything, the fields after it are numbers. */
#include "fuzz.h"
#include "common/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ra_stat st;

	if (ra_stat_parse((const char *)data, size, &st) < 0)
		return 0;
	FUZZ_CHECK(st.state != ' ' && st.state != '\n' && st.ppid >= 0);
	return 0;
}

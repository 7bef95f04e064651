/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/status: the fields the library needs, bounded and terminated;
 * one key's value (the node layer's Cpus_allowed_list) within the line it is on.
 */
#include "fuzz.h"
#include "common/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ra_status st;
	char *v;
	int i;

	if (ra_status_value_parse((const char *)data, size, "Cpus_allowed_list", &v) == 0) {
		FUZZ_CHECK(strlen(v) < size && !memchr(v, '\n', strlen(v)));
		free(v);
	}
	if (ra_status_parse((const char *)data, size, &st) < 0)
		return 0;
	FUZZ_CHECK(strnlen(st.name, sizeof(st.name)) < sizeof(st.name));
	FUZZ_CHECK(st.nspid_n >= 1 && st.nspid_n <= 8);
	FUZZ_CHECK(st.tgid >= 0 && st.ppid >= 0 && st.tracer_pid >= 0);
	for (i = 0; i < st.nspid_n; i++)
		FUZZ_CHECK(st.nspid[i] >= 0);
	return 0;
}

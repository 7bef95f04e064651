/* SPDX-License-Identifier: MIT */
/*
 * bench_syscalls PID TOOL N: one attach+detach of PID with TOOL (the first:
 * lookups, tool load), then N more (warm). Run under `strace -f -c` with N
 * and with 0: the difference over N is the system calls of one warm
 * attach+detach (bench/README.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include <rocattach/rocattach.h>

int main(int argc, char **argv)
{
	rocattach_opts_t o = {.size = sizeof(o)};
	int pid, n;

	if (argc != 4) {
		fprintf(stderr, "usage: bench_syscalls PID TOOL N\n");
		return 2;
	}
	pid = atoi(argv[1]);
	n = atoi(argv[3]);
	o.tool_libraries = argv[2];
	for (int i = 0; i <= n; i++) {
		if (rocattach_attach_ex(pid, &o, NULL) != ROCATTACH_STATUS_SUCCESS ||
		    rocattach_detach_ex(pid, &o, NULL) != ROCATTACH_STATUS_SUCCESS) {
			fprintf(stderr, "bench_syscalls: %s\n", rocattach_last_error());
			return 1;
		}
	}
	return 0;
}

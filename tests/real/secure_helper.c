/* SPDX-License-Identifier: MIT */
/*
 * An attacher for test_security: a copy of it is made setuid root and run
 * by nobody, so the kernel starts it with AT_SECURE=1 (secure execution),
 * as an installed privileged attacher would be. It attaches PID with the
 * library's defaults and prints what happened, one "key=value" per line:
 *   at_secure=<0|1> status=<rocattach_status_t> agent=<agent status>
 *   message=<the report's message>
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include <rocattach/rocattach.h>

int main(int argc, char **argv)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	rocattach_status_t st;

	printf("at_secure=%lu\n", getauxval(AT_SECURE));
	if (argc < 2)
		return 0;
	st = rocattach_attach_ex(atoi(argv[1]), NULL, &rep);
	printf("status=%d\nagent=%d\nmessage=%s\n", (int)st, rep.agent_status, rep.message);
	if (st == ROCATTACH_STATUS_SUCCESS)
		rocattach_detach(atoi(argv[1]));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * A program linking librocattach as AMD's front-ends do, for test_log:
 *   ra_log_helper MODE PID
 * attaches PID with rocattach_attach() and exits with its status. MODE:
 * "none" installs no log callback (the library's default output), "cb" a
 * callback that prints "cb <level> <message>" on stdout, "null" the NULL
 * callback (discard).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocattach/rocattach.h>

static void to_stdout(int level, const char *msg, void *user)
{
	(void)user;
	printf("cb %d %s\n", level, msg);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 100;
	if (!strcmp(argv[1], "cb"))
		rocattach_set_log_callback(to_stdout, NULL);
	else if (!strcmp(argv[1], "null"))
		rocattach_set_log_callback(NULL, NULL);
	else if (strcmp(argv[1], "none"))
		return 100;
	return (int)rocattach_attach(atoi(argv[2]));
}

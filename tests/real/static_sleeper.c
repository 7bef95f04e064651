/* SPDX-License-Identifier: MIT */
/* A statically linked process: --inject must refuse it cleanly. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}

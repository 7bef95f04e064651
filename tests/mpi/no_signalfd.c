/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for tests/mpi/test_plan.sh: signalfd fails (EMFILE, as
 * when the process is out of descriptors), to test that the launcher says
 * so and stops instead of running on deaf to its signals.
 */
#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>

int signalfd(int fd, const sigset_t *mask, int flags)
{
	(void)fd;
	(void)mask;
	(void)flags;
	errno = EMFILE;
	return -1;
}

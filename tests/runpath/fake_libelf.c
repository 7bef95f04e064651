/* SPDX-License-Identifier: MIT */
/*
 * A fake libelf.so.1 for test_runpath.sh: if a program loads it, its
 * constructor leaves a marker file ($RA_FAKE_MARKER). It defines the version
 * nodes our libraries need from libelf, so that the loader would accept it
 * rather than fail before constructors run.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void fake_libelf_loaded(void)
{
	const char *marker = getenv("RA_FAKE_MARKER");
	int fd;

	if (!marker)
		return;
	fd = open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

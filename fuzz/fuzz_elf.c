/* SPDX-License-Identifier: MIT */
/*
 * Symbol lookup on ELF files (lib/symbols.c), as the attacher does on every
 * object a target maps: here the file is a memfd holding the input, so
 * libelf reads it as it reads a real file (mmap first). Properties: the
 * result counts exactly the names given a (non-zero) address, and a file
 * that is not a usable ELF object is -ENOEXEC, never a crash.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "symbols.h"

static const char *const names[] = {
    "rocprofiler_register_attach",
    "rocprofiler_register_detach",
    "rocattach_agent_enable",
    "rocprofiler_configure",
    "dlopen",
    "malloc",
    "free",
    "__libc_dlopen_mode",
    "main",
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

static int fd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t vaddr[N_NAMES], base = 0, off = 0;
	size_t i, found = 0;
	int r;

	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
	r = ra_elf_lookup_fd(fd, names, N_NAMES, vaddr, &base, &off);
	if (r < 0) {
		FUZZ_CHECK(r == -ENOEXEC);
		return 0;
	}
	for (i = 0; i < N_NAMES; i++)
		found += vaddr[i] != 0;
	FUZZ_CHECK((size_t)r == found);
	/* Page-rounded, and congruent as ld.so requires. */
	FUZZ_CHECK(base % 4096 == 0 && off % 4096 == 0);
	/* Looking up nothing still parses the file, with the same verdict. */
	FUZZ_CHECK(ra_elf_lookup_fd(fd, NULL, 0, NULL, NULL, NULL) == 0);
	return 0;
}

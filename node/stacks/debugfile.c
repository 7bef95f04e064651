/* SPDX-License-Identifier: MIT */
/*
 * Separate debug files (debugfile.h), read with libdw's dwelf helpers: the
 * file's build-id and .gnu_debuglink, and the paths every debugger tries
 * (elfutils' dwfl_standard_find_debuginfo, gdb). Every file read is
 * untrusted: one that does not match is no debug file.
 */
#include "debugfile.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef RA_HAVE_LIBDW
#include <elfutils/libdwelf.h>
#include <zlib.h>

#define DEBUG_DIR "/usr/lib/debug"

/* A regular file's descriptor, or -1. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd;
}

/* Does the ELF file on fd have this build-id? */
static bool same_build_id(int fd, const void *id, ssize_t n)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *other = NULL;
	ssize_t m = elf ? dwelf_elf_gnu_build_id(elf, &other) : -1;
	bool same = m == n && other && !memcmp(other, id, (size_t)n);

	if (elf)
		elf_end(elf);
	return same;
}

/* The CRC-32 of the whole file on fd, as .gnu_debuglink records it. */
static bool crc_is(int fd, GElf_Word want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	ssize_t r;

	if (lseek(fd, 0, SEEK_SET))
		return false;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)r);
	return r == 0 && (GElf_Word)crc == want;
}

static int by_build_id(const char *root, const unsigned char *id, ssize_t n)
{
	char path[PATH_MAX + 256];
	int len, fd;

	if (n < 2 || n > 64)
		return -1;
	len = snprintf(path, sizeof(path), "%s" DEBUG_DIR "/.build-id/%02x/", root, id[0]);
	for (ssize_t i = 1; i < n && len > 0 && (size_t)len < sizeof(path) - 3; i++)
		len += snprintf(path + len, sizeof(path) - (size_t)len, "%02x", id[i]);
	if (len <= 0 || (size_t)len >= sizeof(path) - 7)
		return -1;
	strcat(path, ".debug");
	fd = open_regular(path);
	if (fd >= 0 && !same_build_id(fd, id, n)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* One .gnu_debuglink candidate: not the file itself, and the right one. */
static int link_candidate(const char *cand, const struct stat *self, const void *id, ssize_t n,
			  GElf_Word crc)
{
	struct stat st;
	int fd = open_regular(cand);

	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && (st.st_ino != self->st_ino || st.st_dev != self->st_dev) &&
	    (n > 0 ? same_build_id(fd, id, n) : crc_is(fd, crc)))
		return fd;
	close(fd);
	return -1;
}

static int by_debuglink(const char *root, const char *path, Elf *elf, const void *id, ssize_t n)
{
	static const char *const forms[] = {"%s/%s", "%s/.debug/%s"};
	char dir[PATH_MAX], cand[3 * PATH_MAX];
	const char *link, *slash = strrchr(path, '/');
	struct stat self;
	GElf_Word crc = 0;
	int fd = -1;

	link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (!link || !*link || strchr(link, '/') || !slash || path[0] != '/')
		return -1;
	snprintf(dir, sizeof(dir), "%s%.*s", root, (int)(slash - path), path);
	snprintf(cand, sizeof(cand), "%s%s", root, path);
	if (stat(cand, &self))
		return -1;
	for (int i = 0; i < 2 && fd < 0; i++) {
		snprintf(cand, sizeof(cand), forms[i], dir, link);
		fd = link_candidate(cand, &self, id, n, crc);
	}
	if (fd < 0) {
		snprintf(cand, sizeof(cand), "%s" DEBUG_DIR "%.*s/%s", root, (int)(slash - path),
			 path, link);
		fd = link_candidate(cand, &self, id, n, crc);
	}
	return fd;
}

int ra_debugfile_open(const char *root, const char *path, Elf *elf)
{
	const void *id = NULL;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
	int fd = -1;

	if (n > 0 && id)
		fd = by_build_id(root, id, n);
	else
		n = 0;
	if (fd < 0)
		fd = by_debuglink(root, path, elf, id, n);
	return fd;
}
#else
int ra_debugfile_open(const char *root, const char *path, Elf *elf)
{
	(void)root;
	(void)path;
	(void)elf;
	return -1;
}
#endif

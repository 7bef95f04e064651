/* SPDX-License-Identifier: MIT */
/*
 * Paths and whole files of one pid under a proc root. The readers here and
 * in the other proc_*.c files accept exactly what the kernel writes and
 * reject anything else with -EINVAL: they also run on captured trees and
 * under a fuzzer, so no length or number is trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc_internal.h"

#define RA_READ_MAX (256u << 20) /* /proc/PID/maps of a huge JVM is tens of MB */

const char *ra_proc_root(const char *procfs)
{
	return procfs ? procfs : RA_PROCFS;
}

int ra_proc_path(char *buf, size_t len, const char *procfs, pid_t pid, const char *rest)
{
	int r;

	if (rest)
		r = snprintf(buf, len, "%s/%d/%s", ra_proc_root(procfs), (int)pid, rest);
	else
		r = snprintf(buf, len, "%s/%d", ra_proc_root(procfs), (int)pid);
	if (r < 0 || (size_t)r >= len)
		return -ENAMETOOLONG;
	return 0;
}

int ra_proc_exists(const char *procfs, pid_t pid)
{
	char path[PATH_MAX];
	struct stat sb;
	int r;

	r = ra_proc_path(path, sizeof(path), procfs, pid, NULL);
	if (r < 0)
		return r;
	return stat(path, &sb) < 0 ? -errno : 0;
}

int ra_proc_gone_or(const char *procfs, pid_t pid, int err)
{
	if (err == -ENOENT && ra_proc_exists(procfs, pid) == -ENOENT)
		return -ESRCH;
	return err;
}

int ra_read_file(const char *path, char **out, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	ssize_t got;
	int fd, r = 0;

	*out = NULL;
	if (len)
		*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	for (;;) {
		/* Keep one byte for the NUL; stat's st_size is 0 here, so grow as we go. */
		if (cap - n < 2) {
			r = cap >= RA_READ_MAX ? -EFBIG : ra_grow((void **)&buf, &cap, 1, 4096);
			if (r < 0)
				goto out;
		}
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*out = buf;
	buf = NULL;
	if (len)
		*len = n;
out:
	free(buf);
	close(fd);
	return r;
}

int ra_proc_read(const char *procfs, pid_t pid, const char *name, char **out, size_t *len)
{
	char path[PATH_MAX];
	int r;

	*out = NULL;
	if (pid <= 0)
		return -EINVAL;
	r = ra_proc_path(path, sizeof(path), procfs, pid, name);
	if (r < 0)
		return r;
	return ra_proc_gone_or(procfs, pid, ra_read_file(path, out, len));
}

int ra_proc_exe(const char *procfs, pid_t pid, char *buf, size_t size)
{
	static const char del[] = " (deleted)";
	const size_t dl = sizeof(del) - 1;
	char path[PATH_MAX];
	ssize_t n;
	int r;

	if (!size)
		return -EINVAL;
	r = ra_proc_path(path, sizeof(path), procfs, pid, "exe");
	if (r < 0)
		return r;
	n = readlink(path, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if ((size_t)n > dl && !strcmp(buf + n - dl, del))
		buf[n - dl] = '\0';
	return 0;
}

int ra_proc_comm(const char *procfs, pid_t pid, char *buf, size_t size)
{
	char *text;
	size_t len;
	int r;

	if (!size)
		return -EINVAL;
	r = ra_proc_read(procfs, pid, "comm", &text, &len);
	if (r < 0)
		return r;
	if (len && text[len - 1] == '\n')
		text[len - 1] = '\0';
	snprintf(buf, size, "%s", text);
	free(text);
	return 0;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "outpath.h"

#define PROC_MAGIC 0x9fa0
#define SYSFS_MAGIC 0x62656572

static int bad(char *err, size_t len, const char *opt, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int bad(char *err, size_t len, const char *opt, const char *path, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(err, len, "cannot write %s '%s': ", opt, path);

	if (k >= 0 && (size_t)k < len) {
		va_start(ap, fmt);
		vsnprintf(err + k, len - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Is s p itself or below it? */
static bool below(const char *s, const char *p)
{
	size_t n = strlen(p);

	return !strncmp(s, p, n) && (s[n] == '/' || !s[n]);
}

/*
 * The kernel's file systems: /proc, /sys, /dev, by name or by mount type.
 * /dev/shm is a plain tmpfs directory, where a rename works: allowed.
 */
static const char *kernel_fs(const char *s, bool mounts)
{
	static const char *const roots[] = {"/proc", "/sys", "/dev"};
	struct statfs fs;

	if (below(s, "/dev/shm"))
		return NULL;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (below(s, roots[i]))
			return roots[i];
	if (mounts && !statfs(s, &fs) && (fs.f_type == PROC_MAGIC || fs.f_type == SYSFS_MAGIC))
		return fs.f_type == PROC_MAGIC ? "a proc mount" : "a sysfs mount";
	return NULL;
}

/* The directory part of path into dir ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t len)
{
	char *slash;

	snprintf(dir, len, "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

static int check_dir(const char *path, const char *opt, const char *dir, char *err, size_t len)
{
	char real[PATH_MAX];
	const char *kfs = kernel_fs(dir, false);
	struct stat st;
	int e;

	if (kfs)
		goto kernel;
	e = stat(dir, &st) ? errno : 0;
	if (e == ENOENT)
		return bad(err, len, opt, path, "directory '%s' does not exist: create it first",
			   dir);
	if (e == ENOTDIR)
		return bad(err, len, opt, path,
			   "a part of '%s' is a file, not a directory: choose a directory", dir);
	if (e)
		return bad(err, len, opt, path, "directory '%s': %s: choose another directory", dir,
			   strerror(e));
	if (!S_ISDIR(st.st_mode))
		return bad(err, len, opt, path, "'%s' is not a directory: choose a directory", dir);
	if (!realpath(dir, real))
		return bad(err, len, opt, path, "directory '%s': %s: choose another directory", dir,
			   strerror(errno));
	kfs = kernel_fs(real, true);
	if (kfs)
		goto kernel;
	if (access(dir, W_OK | X_OK))
		return bad(err, len, opt, path,
			   "directory '%s': %s: choose a directory you can write", dir,
			   strerror(errno));
	return 0;
kernel:
	return bad(err, len, opt, path,
		   "it is in %s, which takes no files: write it to a plain directory "
		   "(e.g. the current one)",
		   kfs);
}

int ra_outpath_check(const char *path, const char *opt, char *err, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;
	size_t n;

	if (!path)
		return 0;
	n = strlen(path);
	if (!n)
		return bad(err, len, opt, path, "no file name given: name a file, e.g. run.json");
	if (n >= sizeof(dir) - 8)
		return bad(err, len, opt, path, "the path is too long: choose a shorter one");
	dir_of(path, dir, sizeof(dir));
	if (check_dir(path, opt, dir, err, len))
		return -1;
	if (path[n - 1] == '/' || (!stat(path, &st) && S_ISDIR(st.st_mode)))
		return bad(err, len, opt, path,
			   "it is a directory: name a file in it, e.g. '%s%srun.json'", path,
			   path[n - 1] == '/' ? "" : "/");
	if (!lstat(path, &st) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return bad(err, len, opt, path,
			   "it exists and is not a regular file: choose a new file name");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Paths as a target sees them. The normal attach and --inject check each
 * library as the target sees it (/proc/PID/root), so what they check is what
 * it loads. The late start reads its library, tool and SDK here: in another
 * mount namespace the same path may name another file, or none.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/procfs.h"
#include "target_path.h"

/*
 * An absolute path is resolved in the target's root (RESOLVE_IN_ROOT keeps
 * absolute symlinks inside a container root; before Linux 5.6, without
 * openat2, they would resolve in ours), a relative one from base.
 */
int ra_open_in_target(int base, const char *path, int flags, bool in_root)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve = in_root ? RESOLVE_IN_ROOT : 0};
	int fd = (int)syscall(SYS_openat2, base, path, &how, sizeof(how));

	if (fd >= 0 || errno != ENOSYS)
		return fd;
	while (in_root && *path == '/')
		path++;
	return openat(base, *path ? path : ".", flags | O_CLOEXEC);
}

/* 1: pid is in our mount namespace; 0: another, or it cannot be read. */
static int our_mount_ns(pid_t pid)
{
	struct stat ours, theirs;
	char path[64];

	snprintf(path, sizeof(path), "%s/%d/ns/mnt", RA_PROCFS, pid);
	if (stat(RA_PROCFS "/self/ns/mnt", &ours) || stat(path, &theirs))
		return 0;
	return ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
}

/* The file at path in pid's root: 0 and *sb, or an errno. */
static int stat_in_target(pid_t pid, const char *path, struct stat *sb)
{
	char root[64];
	int base, fd, err = 0;

	snprintf(root, sizeof(root), "%s/%d/root", RA_PROCFS, pid);
	base = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (base < 0)
		return errno == ENOENT ? ESRCH : errno;
	fd = ra_open_in_target(base, path, O_PATH, true);
	if (fd < 0 || fstat(fd, sb))
		err = errno;
	if (fd >= 0)
		close(fd);
	close(base);
	return err;
}

int ra_target_same_file(pid_t pid, const char *what, const char *path, struct ra_err *e)
{
	struct stat here, there;
	char how[128];
	int err;

	if (our_mount_ns(pid))
		return 0;
	if (stat(path, &here))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT, "%s %s: %s", what,
				 path, strerror(errno));
	err = stat_in_target(pid, path, &there);
	if (err == ESRCH)
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				 "process %d does not exist", pid);
	if (!err && here.st_dev == there.st_dev && here.st_ino == there.st_ino)
		return 0;
	if (err)
		snprintf(how, sizeof(how), "cannot be opened (%s)", strerror(err));
	else
		snprintf(how, sizeof(how), "is another file");
	return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			 "process %d is in another mount namespace (a container?), where %s %s %s: "
			 "it would not load the file checked here; mount the same file at that "
			 "path in its namespace, or run the attacher inside it; nothing was "
			 "touched",
			 pid, what, path, how);
}

/* SPDX-License-Identifier: MIT */
/*
 * Paths as a target sees them (target_path.c). A process in another mount
 * namespace (a container) may see another file, or none, at a path that was
 * checked here.
 */
#ifndef RA_TARGET_PATH_H
#define RA_TARGET_PATH_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

/*
 * Open path as the target sees it, from base (its /proc/PID/root with
 * in_root, else its /proc/PID/cwd). An fd, or -1 with errno.
 */
int ra_open_in_target(int base, const char *path, int flags, bool in_root);

/*
 * Does the absolute path name, for process pid, the very file it names here?
 * Always so in our own mount namespace. 0: the same file; -1 with e set (one
 * line naming the process, the path, and the fix): another file, none, or
 * the process is gone.
 */
int ra_target_same_file(pid_t pid, const char *what, const char *path, struct ra_err *e);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Who may own and write code we make a process load (trust.c): the normal
 * attach (session_prepare.c) and the late start (late_check.c) hold tools to
 * the same rule.
 */
#ifndef RA_TRUST_H
#define RA_TRUST_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Owners trusted besides root: the target's real and effective user, and us. */
struct ra_trust {
	uid_t ruid, euid, self;
};

/* The target's users, from procfs's status, and ours: 0, or -1 (no such process). */
int ra_trust_read(const char *procfs, pid_t pid, struct ra_trust *tr);

/*
 * What makes sb unsafe to load from, in buf (ending with the fix), or NULL:
 * writable by its group or everyone (a sticky directory aside), or owned by
 * someone not trusted.
 */
const char *ra_trust_problem(const struct stat *sb, const struct ra_trust *tr, char *buf,
			     size_t len);

/*
 * path's directories from the top down, then path itself, as we see them:
 * NULL, or the problem of the first unsafe one, whose path is put in which.
 * A part that cannot be stat'ed is not a trust problem (the caller reports
 * it); a symbolic link is not followed: check the real path too.
 */
const char *ra_trust_path(const char *path, const struct ra_trust *tr, char *which, size_t wlen,
			  char *buf, size_t len);

#endif

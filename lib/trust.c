/* SPDX-License-Identifier: MIT */
/* Who may own and write code we make a process load: see trust.h. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/procfs.h"
#include "trust.h"

int ra_trust_read(const char *procfs, pid_t pid, struct ra_trust *tr)
{
	struct ra_status st;

	if (ra_status_read(procfs, pid, &st))
		return -1;
	tr->ruid = st.uid_real;
	tr->euid = st.uid_effective;
	tr->self = geteuid();
	return 0;
}

const char *ra_trust_problem(const struct stat *sb, const struct ra_trust *tr, char *buf,
			     size_t len)
{
	bool dir = S_ISDIR(sb->st_mode);

	if ((sb->st_mode & (S_IWGRP | S_IWOTH)) && !(dir && (sb->st_mode & S_ISVTX))) {
		snprintf(buf, len,
			 "is writable by %s (mode %04o), so others could replace it: "
			 "fix with chmod go-w",
			 sb->st_mode & S_IWOTH ? "everyone" : "its group",
			 (unsigned int)(sb->st_mode & 07777));
		return buf;
	}
	if (sb->st_uid && sb->st_uid != tr->ruid && sb->st_uid != tr->euid &&
	    sb->st_uid != tr->self) {
		snprintf(buf, len,
			 "is owned by uid %u, neither root, the target's user (uid %u) "
			 "nor us (uid %u): fix with chown, or copy the library to a directory "
			 "you own",
			 (unsigned int)sb->st_uid, (unsigned int)tr->ruid, (unsigned int)tr->self);
		return buf;
	}
	return NULL;
}

static const char *one(const char *path, const struct ra_trust *tr, char *which, size_t wlen,
		       char *buf, size_t len)
{
	struct stat sb;

	/* A symbolic link's own mode means nothing: its target is checked on its real path. */
	if (lstat(path, &sb) || S_ISLNK(sb.st_mode) || !ra_trust_problem(&sb, tr, buf, len))
		return NULL;
	snprintf(which, wlen, "%s", path);
	return buf;
}

const char *ra_trust_path(const char *path, const struct ra_trust *tr, char *which, size_t wlen,
			  char *buf, size_t len)
{
	char prefix[4096];
	const char *p, *problem = NULL;

	if (path[0] == '/')
		problem = one("/", tr, which, wlen, buf, len);
	for (p = strchr(path + 1, '/'); !problem && p; p = strchr(p + 1, '/')) {
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(p - path), path);
		problem = one(prefix, tr, which, wlen, buf, len);
	}
	return problem ? problem : one(path, tr, which, wlen, buf, len);
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/procfs.h"
#include "rp3_state.h"

#define KEY_MAX 8192

/* The file of pid (this start of it); false when there is none to use. */
static bool state_path(pid_t pid, char *path, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	struct ra_stat st;
	struct stat sb;
	char dir[PATH_MAX];

	if (ra_stat_read(NULL, pid, &st))
		return false;
	snprintf(dir, sizeof(dir), "%s/rocattach-rocprofv3-%u", tmp && *tmp ? tmp : "/tmp",
		 (unsigned)getuid());
	if (mkdir(dir, 0700) && errno != EEXIST)
		return false;
	/* Only a directory of ours, which nobody else can write to, is trusted. */
	if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != getuid() || (sb.st_mode & 022))
		return false;
	snprintf(path, len, "%s/%d.%llu", dir, (int)pid, (unsigned long long)st.starttime);
	return true;
}

bool rn_rp3_refused(pid_t pid, char *msg, size_t len)
{
	const char *mine = getenv(RN_RP3_ENV);
	char path[PATH_MAX], first[KEY_MAX];
	ssize_t n;
	int fd;

	if (!mine || !state_path(pid, path, sizeof(path)))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, first, sizeof(first) - 1);
	close(fd);
	if (n < 0)
		return false;
	first[n] = '\0';
	if (!strcmp(first, mine))
		return false;
	snprintf(msg, len,
		 "process %d was first attached with %s; rocprofv3's tool cannot change "
		 "collection options on reattach",
		 (int)pid, first[0] ? first : "no collection option");
	return true;
}

void rn_rp3_remember(pid_t pid)
{
	const char *mine = getenv(RN_RP3_ENV);
	char path[PATH_MAX];
	int fd;

	if (!mine || !state_path(pid, path, sizeof(path)))
		return;
	/* O_EXCL: the first attach's options stay. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	if (write(fd, mine, strlen(mine)) < 0)
		unlink(path);
	close(fd);
}

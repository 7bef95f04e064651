/* SPDX-License-Identifier: MIT */
/* Colon-separated tool library lists. Shared by the attacher and the agent: libc only. */
#ifndef RA_COMMON_TOOLLIST_H
#define RA_COMMON_TOOLLIST_H

#include <stddef.h>

#define RA_TOOLLIST_MAX 64

struct ra_toollist {
	char *buf;			/* owned copy of the list, split in place */
	const char *v[RA_TOOLLIST_MAX]; /* entries, in order, never empty */
	size_t n;
};

/*
 * Split list on ':'; empty entries are dropped. Returns 0, -EINVAL if no
 * entry is left, -E2BIG over RA_TOOLLIST_MAX entries, -ENOMEM.
 */
int ra_toollist_parse(const char *list, struct ra_toollist *out);
void ra_toollist_free(struct ra_toollist *tl);

#endif

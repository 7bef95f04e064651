/* SPDX-License-Identifier: MIT */
/* Colon-separated tool library lists (see toollist.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "toollist.h"

int ra_toollist_parse(const char *list, struct ra_toollist *out)
{
	char *p, *colon;
	int err = -EINVAL;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!list)
		return -EINVAL;
	out->buf = strdup(list);
	if (!out->buf)
		return -ENOMEM;
	for (p = out->buf; p; p = colon ? colon + 1 : NULL) {
		colon = strchr(p, ':');
		if (colon)
			*colon = '\0';
		if (!*p)
			continue;
		if (out->n == RA_TOOLLIST_MAX) {
			err = -E2BIG;
			goto out;
		}
		out->v[out->n++] = p;
	}
	if (out->n)
		return 0;
out:
	ra_toollist_free(out);
	return err;
}

void ra_toollist_free(struct ra_toollist *tl)
{
	if (!tl)
		return;
	free(tl->buf);
	memset(tl, 0, sizeof(*tl));
}

/* SPDX-License-Identifier: MIT */
/*
 * The tool list parser (attacher and agent). Checked against a second,
 * obvious split: the entries are exactly the non-empty ':'-separated
 * pieces, in order; none left is -EINVAL, more than RA_TOOLLIST_MAX -E2BIG.
 */
#include <errno.h>

#include "common/toollist.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *list = fuzz_strdup(data, size);
	const char *p = list, *colon;
	struct ra_toollist tl;
	size_t want = 0, len;
	int r;

	r = ra_toollist_parse(list, &tl);
	for (;; p = colon + 1) {
		colon = strchr(p, ':');
		len = colon ? (size_t)(colon - p) : strlen(p);
		if (len) {
			if (r == 0 && want < tl.n)
				FUZZ_CHECK(strlen(tl.v[want]) == len &&
					   !memcmp(tl.v[want], p, len));
			want++;
		}
		if (!colon)
			break;
	}
	if (want == 0)
		FUZZ_CHECK(r == -EINVAL);
	else if (want > RA_TOOLLIST_MAX)
		FUZZ_CHECK(r == -E2BIG);
	else
		FUZZ_CHECK(r == 0 && tl.n == want);
	if (r)
		FUZZ_CHECK(!tl.buf && tl.n == 0);
	ra_toollist_free(&tl);
	free(list);
	return 0;
}

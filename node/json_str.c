/* SPDX-License-Identifier: MIT */
/* A record's fixed-width text as a JSON string (node.h), for record_json.c and late_json.c. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

/* At most width bytes; a byte past ASCII, where the text is not UTF-8, becomes '?'. */
struct json_t *rn_json_str(const char *s, size_t width)
{
	size_t len = strnlen(s, width), i;
	json_t *j = json_stringn(s, len);
	char *copy;

	if (j || !(copy = malloc(len ? len : 1)))
		return j;
	for (i = 0; i < len; i++)
		copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	j = json_stringn(copy, len);
	free(copy);
	return j;
}

/* SPDX-License-Identifier: MIT */
/* The SVG timeline's marks and measures (svg.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

/*
 * Text into XML: escaped, control characters (not allowed in XML 1.0 even
 * escaped) and non-ASCII bytes (maybe not UTF-8) as '?', cut at max
 * characters with a '~'.
 */
void svg_xml_put(FILE *f, const char *s, size_t width, size_t max)
{
	size_t len = strnlen(s, width), i;
	bool cut = len > max;
	unsigned char c;

	for (i = 0; i < (cut ? max - 1 : len); i++) {
		c = (unsigned char)s[i];
		switch (c) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fputc(c < 0x20 || c >= 0x7f ? '?' : c, f);
		}
	}
	if (cut)
		fputc('~', f);
}

int svg_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

double svg_x(const struct svg *s, uint64_t ns)
{
	return SVG_LABEL_W + (double)(int64_t)(ns - s->lo) * s->px_per_ns;
}

double svg_rel_ms(const struct svg *s, uint64_t ns)
{
	return (double)(int64_t)(ns - s->t0) / NS_PER_MS;
}

/* The groups first (clean, then the others), then every node shown alone. */
/*
 * The lanes of node n: its targets (of the last window, t) that s->d keeps;
 * every one at all, or when they cannot be read (empty lanes, as before).
 */
size_t svg_lanes(const struct svg *s, const struct rm_node *n, const struct rn_target *t)
{
	size_t lanes = 0;

	if (s->d == RM_DETAIL_ALL || !t || n->cut)
		return n->n; /* a node that cut its records sent only those it keeps */
	for (size_t k = 0; k < n->n; k++)
		lanes += rm_detail_keeps(s->d, n, &t[k]);
	return lanes;
}

void svg_title(struct svg *s, const char *text)
{
	fputs("<title>", s->f);
	svg_xml_put(s->f, text, (size_t)-1, (size_t)-1);
	fputs("</title>", s->f);
}

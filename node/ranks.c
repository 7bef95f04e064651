/* SPDX-License-Identifier: MIT */
/*
 * Rank lists for --ranks: "0-3,8,10-11". The list is a set: after parsing,
 * ranges are sorted and merged so that lookups are a binary search, which
 * matters when a node holds hundreds of ranks and the list is long.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

#define RANKS_MAX_RANGES 65536

/* Decimal rank at *p: digits only, 0..RN_RANK_MAX. Advances *p; 0 or -1. */
static int rank_number(const char **p, long *v)
{
	const char *s = *p;
	long x = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		x = x * 10 + (*s - '0');
		if (x > RN_RANK_MAX)
			return -1;
	}
	*p = s;
	*v = x;
	return 0;
}

/* One element, "N" or "N-M", ending at ',' or the end. */
static int rank_range(const char **p, struct rn_range *r, const char **why)
{
	*why = "expected a rank (0 to 2147483647) or a range LOW-HIGH";
	if (rank_number(p, &r->lo) < 0)
		return -1;
	r->hi = r->lo;
	if (**p == '-') {
		(*p)++;
		if (rank_number(p, &r->hi) < 0)
			return -1;
		if (r->hi < r->lo) {
			*why = "a range must go from low to high (e.g. 1-3)";
			return -1;
		}
	}
	if (**p != ',' && **p != '\0')
		return -1;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct rn_range *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Sort and merge overlapping or adjacent ranges. */
static void ranks_normalize(struct rn_ranks *r)
{
	size_t i, n = 0;

	qsort(r->v, r->n, sizeof(*r->v), cmp_range);
	for (i = 0; i < r->n; i++) {
		if (n && r->v[i].lo <= r->v[n - 1].hi + 1) {
			if (r->v[i].hi > r->v[n - 1].hi)
				r->v[n - 1].hi = r->v[i].hi;
			continue;
		}
		r->v[n++] = r->v[i];
	}
	r->n = n;
}

static size_t count_ranges(const char *s)
{
	size_t n = 1;

	for (; *s; s++)
		n += *s == ',';
	return n;
}

int rn_ranks_parse(const char *s, struct rn_ranks *out, char *err, size_t errlen)
{
	struct rn_ranks r = {NULL, 0};
	const char *p = s, *why = "the list is empty: give ranks like 0-3,8";
	size_t cap;

	out->v = NULL;
	out->n = 0;
	if (!s || !*s)
		goto fail;
	cap = count_ranges(s);
	why = "more than 65536 ranges: merge them into fewer, wider ones";
	if (cap > RANKS_MAX_RANGES)
		goto fail;
	r.v = calloc(cap, sizeof(*r.v));
	why = "out of memory";
	if (!r.v)
		goto fail;
	for (;;) {
		if (rank_range(&p, &r.v[r.n], &why) < 0)
			goto fail;
		r.n++;
		if (!*p)
			break;
		p++;
	}
	ranks_normalize(&r);
	*out = r;
	return 0;
fail:
	free(r.v);
	/* Quote a long list only in part, so that the reason fits. */
	snprintf(err, errlen, "invalid --ranks '%.40s%s': %s", s ? s : "",
		 s && strlen(s) > 40 ? "..." : "", why);
	return -1;
}

bool rn_ranks_contains(const struct rn_ranks *r, long rank)
{
	size_t lo = 0, hi, mid;

	if (!r || rank < 0)
		return false;
	hi = r->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (rank < r->v[mid].lo)
			hi = mid;
		else if (rank > r->v[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

void rn_ranks_free(struct rn_ranks *r)
{
	if (!r)
		return;
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

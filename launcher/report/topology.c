/* SPDX-License-Identifier: MIT */
/*
 * A node's topology as one union over its targets: CPU and NUMA lists as
 * ranges, the GPUs each once. The JSON writer shows it per node; a node that
 * cuts its records sends it in its block (rm_topo_union, figures.c).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

/* A node's topology: the union of its targets' CPU and NUMA lists. */
struct ranges {
	struct rn_range *v;
	size_t n, cap;
};

static int ranges_push(struct ranges *r, long lo, long hi)
{
	struct rn_range *v;

	if (r->n == r->cap) {
		v = realloc(r->v, (r->cap ? 2 * r->cap : 16) * sizeof(*v));
		if (!v)
			return -1;
		r->v = v;
		r->cap = r->cap ? 2 * r->cap : 16;
	}
	r->v[r->n++] = (struct rn_range){lo, hi};
	return 0;
}

/*
 * "0-3,8" into r; what does not parse is skipped, and so are numbers past
 * INT_MAX (strtol gives LONG_MAX for any longer one, and merging adds 1).
 */
static int ranges_parse(struct ranges *r, const char *s, size_t width)
{
	char buf[RM_SUM_TOPO], *p, *end;
	long lo, hi;

	snprintf(buf, sizeof(buf), "%.*s", (int)strnlen(s, width), s);
	for (p = buf; *p; p = *end ? end + 1 : end) {
		lo = hi = strtol(p, &end, 10);
		if (end != p && *end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p)
				hi = -1;
		}
		if (end != p && lo >= 0 && hi >= lo && hi <= INT_MAX && ranges_push(r, lo, hi))
			return -1;
		end = strchrnul(end, ',');
	}
	return 0;
}

static int ranges_cmp(const void *a, const void *b)
{
	const struct rn_range *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Sorted and merged, as a list ("0-5,8"); NULL if out of memory. */
static json_t *ranges_json(struct ranges *r)
{
	char *s = NULL;
	size_t len = 0, i, k;
	FILE *f = open_memstream(&s, &len);
	json_t *j = NULL;

	if (!f)
		return NULL;
	/* qsort's array must not be NULL, even when empty. */
	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), ranges_cmp);
	for (i = 0; i < r->n; i = k) {
		long hi = r->v[i].hi;

		for (k = i + 1; k < r->n && r->v[k].lo <= hi + 1; k++)
			hi = r->v[k].hi > hi ? r->v[k].hi : hi;
		fprintf(f, i ? ",%ld" : "%ld", r->v[i].lo);
		if (hi > r->v[i].lo)
			fprintf(f, "-%ld", hi);
	}
	if (!fclose(f))
		j = json_string(s);
	free(s);
	return j;
}

/* A node that cut its records sent the union of all its targets' (rm_topo_union). */
json_t *rm_list_union_json(const struct rm_node *n, const struct rn_target *v, bool numa)
{
	struct ranges r = {0};
	json_t *j = NULL;
	size_t k;

	if (n->cut && (numa ? ranges_parse(&r, n->sum->numa, sizeof(n->sum->numa))
			    : ranges_parse(&r, n->sum->cpus, sizeof(n->sum->cpus))))
		goto out;
	for (k = 0; v && !n->cut && k < n->n; k++) {
		const struct rn_topo *t = &v[k].topo;

		if (numa ? ranges_parse(&r, t->numa, sizeof(t->numa))
			 : ranges_parse(&r, t->cpus, sizeof(t->cpus)))
			goto out;
	}
	j = ranges_json(&r);
out:
	free(r.v);
	return j;
}

static bool has_string(json_t *a, const char *s, size_t len)
{
	size_t i;
	json_t *v;

	json_array_foreach (a, i, v) {
		if (json_string_length(v) == len && !memcmp(json_string_value(v), s, len))
			return true;
	}
	return false;
}

/* The GPUs of a comma list not yet in a, appended; -1 out of memory. */
static int gpus_add(json_t *a, const char *g, size_t width)
{
	size_t i, e, len = strnlen(g, width);

	for (i = 0; i < len; i = e + 1) {
		for (e = i; e < len && g[e] != ','; e++)
			;
		if (e == i || has_string(a, g + i, e - i))
			continue;
		if (json_array_append_new(a, rn_json_str(g + i, e - i)))
			return -1;
	}
	return 0;
}

/*
 * The GPUs near any target of the node, each once, in order of appearance
 * (a node that cut its records sent them all as one list).
 */
json_t *rm_gpus_union_json(const struct rm_node *n, const struct rn_target *v)
{
	json_t *a = json_array();
	size_t k;

	if (a && n->cut && gpus_add(a, n->sum->gpus, sizeof(n->sum->gpus))) {
		json_decref(a);
		return NULL;
	}
	for (k = 0; a && v && !n->cut && k < n->n; k++) {
		if (gpus_add(a, v[k].topo.gpus, sizeof(v[k].topo.gpus))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static int topo_put(char *dst, size_t width, const char *s)
{
	if (strlen(s) >= width)
		return -1;
	snprintf(dst, width, "%s", s);
	return 0;
}

int rm_topo_union(const struct rn_target *t, size_t n, struct rm_node_sum *s)
{
	struct rm_node node = {.t = (struct rn_target *)t, .n = n};
	json_t *cpus = rm_list_union_json(&node, t, false),
	       *numa = rm_list_union_json(&node, t, true);
	json_t *gpus = rm_gpus_union_json(&node, t), *g;
	char *p = s->gpus, *end = s->gpus + sizeof(s->gpus);
	int rc = -1;
	size_t i;

	if (!cpus || !numa || !gpus ||
	    topo_put(s->cpus, sizeof(s->cpus), json_string_value(cpus)) ||
	    topo_put(s->numa, sizeof(s->numa), json_string_value(numa)))
		goto out;
	*p = '\0';
	json_array_foreach (gpus, i, g) {
		size_t len = json_string_length(g);

		if (len + 2 > (size_t)(end - p))
			goto out;
		if (i)
			*p++ = ',';
		memcpy(p, json_string_value(g), len);
		p += len;
		*p = '\0';
	}
	rc = 0;
out:
	json_decref(cpus);
	json_decref(numa);
	json_decref(gpus);
	return rc;
}

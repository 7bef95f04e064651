/* SPDX-License-Identifier: MIT */
/*
 * The report at scale: --detail (which per-target records are kept), the
 * per-node figures kept at every level (times, histograms), and nodes in
 * groups for the summary and the timeline, named by a Slurm-style hostlist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

static const char *const detail_names[] = {
    [RM_DETAIL_ALL] = "all", [RM_DETAIL_FAILURES] = "failures", [RM_DETAIL_NONE] = "none"};

int rm_detail_parse(const char *s, enum rm_detail *d)
{
	for (int i = RM_DETAIL_ALL; i <= RM_DETAIL_NONE; i++)
		if (!strcmp(s, detail_names[i])) {
			*d = (enum rm_detail)i;
			return 0;
		}
	return -1;
}

const char *rm_detail_name(enum rm_detail d)
{
	return d >= RM_DETAIL_ALL && d <= RM_DETAIL_NONE ? detail_names[d] : "auto";
}

/* Flags and counts only: no target is read. */
enum rm_detail rm_detail_of(const struct rm_run *r, char *chosen, size_t len)
{
	size_t most = 0, sum;

	if (r->cfg.detail != RM_DETAIL_AUTO) {
		if (chosen)
			snprintf(chosen, len, "--detail %s", rm_detail_name(r->cfg.detail));
		return r->cfg.detail;
	}
	for (size_t wi = 0; wi < r->n_w; wi++) {
		sum = 0;
		for (size_t i = 0; i < r->w[wi].n_nodes; i++)
			sum += r->w[wi].nodes[i].n;
		most = sum > most ? sum : most;
	}
	if (chosen)
		snprintf(chosen, len, "default: %zu target%s %s %d", most, most == 1 ? "" : "s",
			 most > RM_DETAIL_AUTO_MAX ? ">" : "<=", RM_DETAIL_AUTO_MAX);
	return most > RM_DETAIL_AUTO_MAX ? RM_DETAIL_FAILURES : RM_DETAIL_ALL;
}

/* Clean: attached, then detached, nothing failed. An exit, even after a window, is kept. */
bool rm_clean(const struct rn_target *t)
{
	return t->state == RN_DETACHED && !rm_failed(t);
}

bool rm_detail_keeps(enum rm_detail d, const struct rm_node *n, const struct rn_target *t)
{
	if (d == RM_DETAIL_NONE)
		return false;
	return d != RM_DETAIL_FAILURES || n->lost || !rm_clean(t);
}

/* ------------------------------------------------------------------------ */
/* Figures. */

unsigned rm_hist_bin(uint64_t ns)
{
	uint64_t us = ns / 1000u;
	unsigned b;

	if (!us)
		return 0;
	b = 64u - (unsigned)__builtin_clzll(us);
	return b < RM_HIST_BINS ? b : RM_HIST_BINS - 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* v sorted in place; the median of an even count as rm_node_times has it. */
static struct rm_fig3 fig3_of(uint64_t *v, size_t m)
{
	struct rm_fig3 f = {.n = m};

	if (!m)
		return f;
	qsort(v, m, sizeof(*v), cmp_u64);
	f.min = v[0];
	f.max = v[m - 1];
	f.p50 = m % 2 ? v[m / 2] : v[m / 2 - 1] + (v[m / 2] - v[m / 2 - 1]) / 2;
	return f;
}

static uint64_t over_of(const struct rn_target *t)
{
	return t->attach_tool_ns ? t->attach_tool_ns : t->attach_end_ns;
}

static uint64_t back_of(const struct rn_target *t)
{
	return t->detach_tool_ns ? t->detach_tool_ns : t->detach_start_ns;
}

static void hist_fill(struct rm_node_fig *f, const struct rn_target *t, uint64_t since)
{
	uint64_t from = t->attach_start_ns > since ? t->attach_start_ns : since;
	uint64_t over = over_of(t);

	f->attach_hist[rm_hist_bin(t->attach_end_ns > from ? t->attach_end_ns - from : 0)]++;
	if (!since)
		return;
	if (over < since)
		f->early++;
	f->skew_hist[rm_hist_bin(over > since ? over - since : 0)]++;
}

void rm_node_figures(const struct rm_node *n, const struct rn_target *all, uint64_t since,
		     struct rm_node_fig *f)
{
	uint64_t *v[4], from;
	size_t m[4] = {0}, k;
	const struct rn_target *t;

	memset(f, 0, sizeof(*f));
	if (n->lost || !n->n || !all)
		return;
	v[0] = malloc(4 * n->n * sizeof(uint64_t));
	if (!v[0])
		return;
	for (k = 1; k < 4; k++)
		v[k] = v[0] + k * n->n;
	for (k = 0; k < n->n; k++) {
		t = &all[k];
		if (!rm_attached_since(t, since))
			continue;
		from = t->attach_start_ns > since ? t->attach_start_ns : since;
		v[0][m[0]++] = t->attach_end_ns > from ? t->attach_end_ns - from : 0;
		v[2][m[2]++] = over_of(t);
		if (t->detach_start_ns && t->detach_end_ns >= t->detach_start_ns)
			v[1][m[1]++] = t->detach_end_ns - t->detach_start_ns;
		if (back_of(t))
			v[3][m[3]++] = back_of(t);
		if (!f->calls_lo || (t->attach_start_ns && t->attach_start_ns < f->calls_lo))
			f->calls_lo = t->attach_start_ns;
		if (t->detach_end_ns > f->calls_hi)
			f->calls_hi = t->detach_end_ns;
		if (t->attach_end_ns > f->calls_hi)
			f->calls_hi = t->attach_end_ns;
		hist_fill(f, t, since);
	}
	f->attach = fig3_of(v[0], m[0]);
	f->detach = fig3_of(v[1], m[1]);
	f->over = fig3_of(v[2], m[2]);
	f->back = fig3_of(v[3], m[3]);
	free(v[0]);
}

/* ------------------------------------------------------------------------ */
/* Groups. */

static const char *const outcome_names[RM_OUT_N] = {
    [RM_OUT_CLEAN] = "ok",    [RM_OUT_EMPTY] = "no targets", [RM_OUT_FAILED] = "failed",
    [RM_OUT_OTHER] = "other", [RM_OUT_LOST] = "lost",	     [RM_OUT_UNREADABLE] = "unreadable"};

const char *rm_outcome_name(enum rm_outcome o)
{
	return o < RM_OUT_N ? outcome_names[o] : "?";
}

enum rm_outcome rm_node_outcome(const struct rm_node *n, const struct rn_target *t)
{
	bool failed = false, other = false;

	if (n->lost)
		return RM_OUT_LOST;
	if (!n->n)
		return RM_OUT_EMPTY;
	if (!t)
		return RM_OUT_UNREADABLE;
	for (size_t k = 0; k < n->n; k++) {
		failed |= rm_failed(&t[k]);
		other |= !rm_clean(&t[k]);
	}
	return failed ? RM_OUT_FAILED : other ? RM_OUT_OTHER : RM_OUT_CLEAN;
}

void rm_grouping_free(struct rm_grouping *g)
{
	free(g->outcome);
	free(g->alone);
	memset(g, 0, sizeof(*g));
}

/* One read of each node. Not clean and among the first RM_GROUP_ALONE such: alone. */
int rm_group_nodes(const struct rm_window *w, struct rm_grouping *g)
{
	struct rm_hold h = {0};
	size_t alone = 0;

	memset(g, 0, sizeof(*g));
	g->n = w ? w->n_nodes : 0;
	g->grouped = g->n > RM_GROUP_ABOVE;
	g->outcome = calloc(g->n ? g->n : 1, 1);
	g->alone = calloc(g->n ? g->n : 1, sizeof(bool));
	if (!g->outcome || !g->alone) {
		rm_grouping_free(g);
		return -1;
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct rm_node *n = &w->nodes[i];
		enum rm_outcome o = rm_node_outcome(n, n->lost ? NULL : rm_targets(n, &h));

		g->outcome[i] = (unsigned char)o;
		g->alone[i] = !g->grouped || (o != RM_OUT_CLEAN && alone < RM_GROUP_ALONE);
		alone += g->grouped && g->alone[i];
		if (!g->alone[i])
			g->members[o]++;
	}
	rm_hold_free(&h);
	return 0;
}

char *rm_group_hosts(const struct rm_window *w, const struct rm_grouping *g, enum rm_outcome o,
		     size_t max)
{
	const char **hosts = calloc(g->n ? g->n : 1, sizeof(*hosts));
	size_t m = 0;
	char *s;

	if (!hosts)
		return NULL;
	for (size_t i = 0; i < g->n; i++)
		if (!g->alone[i] && g->outcome[i] == o)
			hosts[m++] = w->nodes[i].host;
	s = rm_hostlist(hosts, m);
	free(hosts);
	if (s && strlen(s) > max && max > 4)
		strcpy(s + max - 3, "...");
	return s;
}

/* A host as prefix, then a number of width digits at its end (width 0: none). */
struct hostnum {
	const char *host;
	size_t prefix, width;
	unsigned long long num;
};

static int hostnum_cmp(const void *a, const void *b)
{
	const struct hostnum *x = a, *y = b;
	size_t p = x->prefix < y->prefix ? x->prefix : y->prefix;
	int c = memcmp(x->host, y->host, p);

	if (c)
		return c;
	if (x->prefix != y->prefix)
		return x->prefix < y->prefix ? -1 : 1;
	if (x->width != y->width)
		return x->width < y->width ? -1 : 1;
	return (x->num > y->num) - (x->num < y->num);
}

static void hostnum_of(const char *host, struct hostnum *h)
{
	size_t len = strnlen(host, sizeof(((struct rm_node *)0)->host)), d = len;

	while (d > 0 && host[d - 1] >= '0' && host[d - 1] <= '9')
		d--;
	h->host = host;
	h->prefix = len;
	h->width = 0;
	h->num = 0;
	/* 18 digits at most: the number fits. */
	if (len - d == 0 || len - d > 18)
		return;
	h->prefix = d;
	h->width = len - d;
	h->num = strtoull(host + d, NULL, 10);
}

static bool same_stem(const struct hostnum *a, const struct hostnum *b)
{
	return a->width && a->prefix == b->prefix && a->width == b->width &&
	       !memcmp(a->host, b->host, a->prefix);
}

/* v[i..j) share prefix and width: "pre[1-3,5]", or the host alone. */
static void put_stem(FILE *f, const struct hostnum *v, size_t i, size_t j)
{
	size_t k, e;

	if (j - i == 1) {
		fprintf(f, "%.*s", (int)(v[i].prefix + v[i].width), v[i].host);
		return;
	}
	fprintf(f, "%.*s[", (int)v[i].prefix, v[i].host);
	for (k = i; k < j; k = e + 1) {
		for (e = k; e + 1 < j && v[e + 1].num == v[e].num + 1; e++)
			;
		fprintf(f, "%s%0*llu", k > i ? "," : "", (int)v[k].width, v[k].num);
		if (e > k)
			fprintf(f, "-%0*llu", (int)v[e].width, v[e].num);
	}
	fputc(']', f);
}

char *rm_hostlist(const char *const *hosts, size_t n)
{
	struct hostnum *v = calloc(n ? n : 1, sizeof(*v));
	size_t i, j, m = 0, len = 0;
	char *s = NULL;
	FILE *f;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++)
		hostnum_of(hosts[i], &v[i]);
	if (n)
		qsort(v, n, sizeof(*v), hostnum_cmp);
	for (i = 0; i < n; i++) /* repeats once */
		if (!m || hostnum_cmp(&v[m - 1], &v[i]))
			v[m++] = v[i];
	f = open_memstream(&s, &len);
	for (i = 0; f && i < m; i = j) {
		for (j = i + 1; j < m && same_stem(&v[i], &v[j]); j++)
			;
		if (i)
			fputc(',', f);
		put_stem(f, v, i, j);
	}
	if (!f || fclose(f)) {
		free(s);
		s = NULL;
	}
	free(v);
	return s;
}

/* SPDX-License-Identifier: MIT */
/*
 * The samples' table behind --pprof, --speedscope and --diff (profiles.h):
 * folded or timed lines in, identical samples merged, and a table of
 * distinct strings for the writers' frame lists.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "report_int.h"

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int strtab_grow(struct rm_strtab *t)
{
	size_t n = t->n_slots ? 2 * t->n_slots : 64;
	size_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		size_t k = hash(t->s[i]) & (n - 1);

		while (slot[k])
			k = (k + 1) & (n - 1);
		slot[k] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->n_slots = n;
	return 0;
}

long rm_strtab_id(struct rm_strtab *t, const char *s)
{
	size_t k;
	char **more;

	if ((t->n + 1) * 2 > t->n_slots && strtab_grow(t))
		return -1;
	for (k = hash(s) & (t->n_slots - 1); t->slot[k]; k = (k + 1) & (t->n_slots - 1))
		if (!strcmp(t->s[t->slot[k] - 1], s))
			return (long)(t->slot[k] - 1);
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;

		if (!(more = realloc(t->s, cap * sizeof(*more))))
			return -1;
		t->s = more;
		t->cap = cap;
	}
	if (!(t->s[t->n] = strdup(s)))
		return -1;
	t->slot[k] = ++t->n;
	return (long)(t->n - 1);
}

void rm_strtab_free(struct rm_strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* One sample into p (host and stack copied). */
static int add(struct rm_prof *p, const char *host, size_t host_len, long rank, long pid, long tid,
	       const char *stack, size_t stack_len, unsigned long long count)
{
	struct rm_prof_sample *s;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;

		if (!(s = realloc(p->v, cap * sizeof(*s))))
			return -1;
		p->v = s;
		p->cap = cap;
	}
	s = &p->v[p->n];
	s->host = strndup(host, host_len);
	s->stack = strndup(stack, stack_len);
	if (!s->host || !s->stack) {
		free(s->host);
		free(s->stack);
		return -1;
	}
	s->rank = rank;
	s->pid = pid;
	s->tid = tid;
	s->count = count;
	p->n++;
	p->total += count;
	return 0;
}

/* A number ending at end, all digits, at most 18 of them; -1 if not. */
static long long number(const char *s, const char *end)
{
	long long v = 0;

	if (s == end || end - s > 18)
		return -1;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/*
 * One folded line: "host;rank N;stack COUNT", or a flame-graph tool's
 * "stack COUNT" (no host: "", rank -1). 1: not such a line.
 */
static int folded_line(struct rm_prof *p, const char *l, size_t len)
{
	const char *sp = memrchr(l, ' ', len), *semi, *semi2, *stack = l;
	long long count, rank = -1;
	size_t host_len = 0;

	if (!sp || sp == l || (count = number(sp + 1, l + len)) <= 0)
		return 1;
	semi = memchr(l, ';', (size_t)(sp - l));
	if (semi && (size_t)(sp - semi) > 6 && !strncmp(semi + 1, "rank ", 5)) {
		semi2 = memchr(semi + 1, ';', (size_t)(sp - semi - 1));
		rank = number(semi + 6, semi2 ? semi2 : sp);
		if (rank >= 0) {
			host_len = (size_t)(semi - l);
			stack = semi2 ? semi2 + 1 : sp;
		}
	}
	if (stack == sp)
		return 1;
	if (add(p, l, host_len, (long)rank, -1, -1, stack, (size_t)(sp - stack),
		(unsigned long long)count))
		return -1;
	return 0;
}

/* One timed line: host, rank, pid, tid, ns, then the stack, by tabs. 1: not one. */
static int timed_line(struct rm_prof *p, const char *l, size_t len)
{
	const char *f[6], *end = l + len, *at = l;
	long long v[3];

	for (int k = 0; k < 6; k++) {
		const char *tab = k < 5 ? memchr(at, '\t', (size_t)(end - at)) : end;

		if (!tab)
			return 1;
		f[k] = at;
		at = tab + 1;
	}
	for (int k = 0; k < 3; k++)
		if ((v[k] = number(f[k + 1], f[k + 2] - 1)) < 0)
			return 1;
	if (f[5] == end)
		return 1;
	return add(p, f[0], (size_t)(f[1] - 1 - f[0]), (long)v[0], (long)v[1], (long)v[2], f[5],
		   (size_t)(end - f[5]), 1)
		   ? -1
		   : 0;
}

/* Lines into p by one; at the first bad one -1 (or, with skip, each bad one left out). */
static int add_lines(struct rm_prof *p, const char *text, size_t len, size_t *bad_line,
		     int (*one)(struct rm_prof *, const char *, size_t), bool skip)
{
	const char *end = text + len;
	size_t line = 0;

	*bad_line = 0;
	while (text < end) {
		const char *nl = memchr(text, '\n', (size_t)(end - text));
		size_t n = (size_t)((nl ? nl : end) - text);
		int r;

		line++;
		r = n ? one(p, text, n) : 0;
		if (r > 0 && skip)
			r = 0;
		if (r) {
			*bad_line = r > 0 ? line : 0;
			return -1;
		}
		text += n + 1;
	}
	return 0;
}

int rm_prof_add_folded(struct rm_prof *p, const char *text, size_t len, size_t *bad_line)
{
	return add_lines(p, text, len, bad_line, folded_line, false);
}

int rm_prof_add_timed(struct rm_prof *p, const char *text, size_t len, size_t *bad_line)
{
	if (add_lines(p, text, len, bad_line, timed_line, false))
		return -1;
	return rm_prof_merge(p);
}

static int sample_cmp(const void *a, const void *b)
{
	const struct rm_prof_sample *x = a, *y = b;
	int c;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if ((c = strcmp(x->host, y->host)))
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return strcmp(x->stack, y->stack);
}

int rm_prof_merge(struct rm_prof *p)
{
	size_t out = 0;

	if (p->n > 1)
		qsort(p->v, p->n, sizeof(*p->v), sample_cmp);
	for (size_t i = 0; i < p->n; i++) {
		if (out && !sample_cmp(&p->v[out - 1], &p->v[i])) {
			p->v[out - 1].count += p->v[i].count;
			free(p->v[i].host);
			free(p->v[i].stack);
			continue;
		}
		p->v[out++] = p->v[i];
	}
	p->n = out;
	return 0;
}

void rm_prof_free(struct rm_prof *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].host);
		free(p->v[i].stack);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}

size_t rm_prof_split(char *stack, char ***frames)
{
	size_t n = 1;

	for (const char *c = stack; *c; c++)
		n += *c == ';';
	*frames = malloc(n * sizeof(**frames));
	if (!*frames)
		return 0;
	n = 0;
	for (char *f = stack, *semi;; f = semi + 1) {
		(*frames)[n++] = f;
		if (!(semi = strchr(f, ';')))
			break;
		*semi = '\0';
	}
	return n;
}

int rm_prof_of_run(const struct rm_run *r, struct rm_prof *p)
{
	size_t bad;

	memset(p, 0, sizeof(*p));
	p->hz = r->sample_hz;
	/* A line that does not parse is left out, as the tree leaves it out (counted there). */
	if (r->timed_len) {
		if (add_lines(p, r->timed_text, r->timed_len, &bad, timed_line, true))
			return -1;
	} else if (r->samples_len &&
		   add_lines(p, r->samples_text, r->samples_len, &bad, folded_line, true)) {
		return -1;
	}
	return rm_prof_merge(p);
}

int rm_prof_write_file(const char *path, const struct rm_run *r, const char *what,
		       rm_prof_writer *write, const char *label, char *err, size_t len)
{
	struct rm_prof p;
	struct rm_out out;
	char why[128];

	if (rm_prof_of_run(r, &p)) {
		rm_prof_free(&p);
		snprintf(err, len, "cannot write the %s %s: out of memory", what, path);
		return -1;
	}
	if (rm_out_open(&out, path, what, err, len)) {
		rm_prof_free(&p);
		return -1;
	}
	if (write(out.f, &p, label, why, sizeof(why))) {
		rm_prof_free(&p);
		rm_out_abort(&out, ENOMEM, err, len);
		snprintf(err, len, "cannot write the %s %s: %s", what, path, why);
		return -1;
	}
	rm_prof_free(&p);
	return rm_out_close(&out, err, len);
}

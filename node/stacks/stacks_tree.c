/* SPDX-License-Identifier: MIT */
/* Stacks of many ranks in one call-prefix tree (stacks_tree.h). */
#include "stacks_tree.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pyframes.h"
#include "stacks_format.h"

struct node {
	char *frame;
	long *ranks; /* sorted, unique */
	size_t n_ranks, cap_ranks;
	unsigned long threads;
	struct node **kids;
	size_t n_kids, cap_kids;
};

struct ra_stack_tree {
	struct node root;
};

struct ra_stack_tree *ra_stack_tree_new(void)
{
	return calloc(1, sizeof(struct ra_stack_tree));
}

static void node_free(struct node *n)
{
	for (size_t i = 0; i < n->n_kids; i++) {
		node_free(n->kids[i]);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->ranks);
	free(n->frame);
}

void ra_stack_tree_free(struct ra_stack_tree *t)
{
	if (!t)
		return;
	node_free(&t->root);
	free(t);
}

static int add_rank(struct node *n, long rank)
{
	size_t lo = 0, hi = n->n_ranks;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (n->ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n->n_ranks && n->ranks[lo] == rank)
		return 0;
	if (n->n_ranks == n->cap_ranks) {
		size_t cap = n->cap_ranks ? 2 * n->cap_ranks : 4;
		long *grown = realloc(n->ranks, cap * sizeof(*grown));

		if (!grown)
			return -1;
		n->ranks = grown;
		n->cap_ranks = cap;
	}
	memmove(n->ranks + lo + 1, n->ranks + lo, (n->n_ranks - lo) * sizeof(*n->ranks));
	n->ranks[lo] = rank;
	n->n_ranks++;
	return 0;
}

static struct node *kid(struct node *n, const char *frame)
{
	struct node *k;

	for (size_t i = 0; i < n->n_kids; i++)
		if (!strcmp(n->kids[i]->frame, frame))
			return n->kids[i];
	if (n->n_kids == n->cap_kids) {
		size_t cap = n->cap_kids ? 2 * n->cap_kids : 4;
		struct node **grown = realloc(n->kids, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		n->kids = grown;
		n->cap_kids = cap;
	}
	k = calloc(1, sizeof(*k));
	if (!k || !(k->frame = strdup(frame))) {
		free(k);
		return NULL;
	}
	n->kids[n->n_kids++] = k;
	return k;
}

int ra_stack_tree_add(struct ra_stack_tree *t, long rank, const char *const *frames, size_t n,
		      unsigned long count)
{
	struct node *at = &t->root;

	for (size_t i = 0; i < n; i++) {
		at = kid(at, frames[i]);
		if (!at || add_rank(at, rank))
			return -1;
		at->threads += count;
	}
	return 0;
}

/* Split "host;rank R;f1;...;fn count" in place; frames point into line. */
static int parse_folded(char *line, long *rank, unsigned long *count, char ***frames, size_t *n,
			char *err, size_t errlen)
{
	char *sp = strrchr(line, ' '), *end, *p, *semi;
	size_t cap = 0;

	*frames = NULL;
	*n = 0;
	if (!sp || !sp[1])
		return snprintf(err, errlen, "no count at the end of the line"), -1;
	errno = 0;
	*count = strtoul(sp + 1, &end, 10);
	if (errno || (*end && *end != '\n') || !*count)
		return snprintf(err, errlen, "bad count '%s'", sp + 1), -1;
	*sp = '\0';
	semi = strchr(line, ';');
	if (!semi || semi == line)
		return snprintf(err, errlen, "no host before the first ';'"), -1;
	p = semi + 1;
	if (strncmp(p, "rank ", 5))
		return snprintf(err, errlen, "no 'rank N' after the host"), -1;
	errno = 0;
	*rank = strtol(p + 5, &end, 10);
	if (errno || end == p + 5 || *rank < 0 || (*end != ';' && *end))
		return snprintf(err, errlen, "bad rank"), -1;
	if (!*end)
		return snprintf(err, errlen, "no frame after the rank"), -1;
	for (p = end + 1; p; p = semi ? semi + 1 : NULL) {
		semi = strchr(p, ';');
		if (semi)
			*semi = '\0';
		if (!*p) {
			free(*frames);
			return snprintf(err, errlen, "an empty frame"), -1;
		}
		if (*n == cap) {
			char **grown = realloc(*frames, (cap ? 2 * cap : 16) * sizeof(*grown));

			if (!grown) {
				free(*frames);
				return snprintf(err, errlen, "out of memory"), -1;
			}
			*frames = grown;
			cap = cap ? 2 * cap : 16;
		}
		(*frames)[(*n)++] = p;
	}
	return 0;
}

int ra_stack_tree_add_folded(struct ra_stack_tree *t, const char *line, char *err, size_t errlen)
{
	char *copy = strdup(line), **frames;
	unsigned long count;
	size_t n;
	long rank;
	int rc = -1;

	if (!copy)
		return snprintf(err, errlen, "out of memory"), -1;
	copy[strcspn(copy, "\n")] = '\0';
	if (parse_folded(copy, &rank, &count, &frames, &n, err, errlen))
		goto out;
	rc = ra_stack_tree_add(t, rank, (const char *const *)frames, n, count);
	if (rc)
		snprintf(err, errlen, "out of memory");
	free(frames);
out:
	free(copy);
	return rc;
}

int ra_ranks_format(const long *r, size_t n, char *buf, size_t len)
{
	size_t i = 0;
	int w = 0;

	if (len)
		buf[0] = '\0';
	while (i < n) {
		size_t j = i;
		int k;

		while (j + 1 < n && r[j + 1] == r[j] + 1)
			j++;
		if (j == i)
			k = snprintf(buf + w, (size_t)w < len ? len - (size_t)w : 0, "%s%ld",
				     w ? "," : "", r[i]);
		else
			k = snprintf(buf + w, (size_t)w < len ? len - (size_t)w : 0, "%s%ld-%ld",
				     w ? "," : "", r[i], r[j]);
		w += k;
		i = j + 1;
	}
	return w;
}

static int kid_cmp(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;

	if (x->threads != y->threads)
		return x->threads > y->threads ? -1 : 1;
	return strcmp(x->frame, y->frame);
}

static void sort_kids(struct node *n)
{
	if (n->n_kids > 1)
		qsort(n->kids, n->n_kids, sizeof(*n->kids), kid_cmp);
}

static bool same_set(const struct node *a, const struct node *b)
{
	return a->threads == b->threads && a->n_ranks == b->n_ranks &&
	       !memcmp(a->ranks, b->ranks, a->n_ranks * sizeof(*a->ranks));
}

static char *ranks_str(const struct node *n)
{
	int len = ra_ranks_format(n->ranks, n->n_ranks, NULL, 0);
	char *s = malloc((size_t)len + 1);

	if (s)
		ra_ranks_format(n->ranks, n->n_ranks, s, (size_t)len + 1);
	return s;
}

static void print_node(struct node *n, int depth, FILE *out)
{
	sort_kids(n);
	for (size_t i = 0; i < n->n_kids; i++) {
		struct node *k = n->kids[i];
		char *ranks = ranks_str(k);

		fprintf(out, "%*s[%s] %lu thread%s: %s", 2 * depth, "", ranks ? ranks : "?",
			k->threads, k->threads == 1 ? "" : "s", k->frame);
		free(ranks);
		/* A run of frames the same ranks and threads share is one line. */
		while (k->n_kids == 1 && same_set(k, k->kids[0])) {
			k = k->kids[0];
			fprintf(out, " > %s", k->frame);
		}
		fprintf(out, "\n");
		print_node(k, depth + 1, out);
	}
}

void ra_stack_tree_print(const struct ra_stack_tree *t, FILE *out)
{
	print_node((struct node *)&t->root, 0, out);
}

static json_t *node_json(struct node *n)
{
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	sort_kids(n);
	for (size_t i = 0; i < n->n_kids; i++) {
		struct node *k = n->kids[i];
		char *ranks = ranks_str(k);
		json_t *kids = node_json(k);
		json_t *o = ranks && kids ? json_pack("{s:s, s:s, s:I, s:o}", "frame", k->frame,
						      "ranks", ranks, "threads",
						      (json_int_t)k->threads, "children", kids)
					  : NULL;

		free(ranks);
		if (!o || json_array_append_new(arr, o)) {
			if (!o)
				json_decref(kids);
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

json_t *ra_stack_tree_json(const struct ra_stack_tree *t)
{
	return node_json((struct node *)&t->root);
}

/* One frame's name for a folded line: no ';', no newline; an inlined call marked. */
static void frame_name(const struct ra_frame *f, char *buf, size_t len)
{
	if (f->func[0])
		snprintf(buf, len, "%.*s%s", (int)len - 12, f->func,
			 f->inlined ? " [inlined]" : "");
	else
		ra_frame_format(f, buf, len);
	for (char *p = buf; *p; p++)
		if (*p == ';')
			*p = ',';
		else if (*p == '\n')
			*p = ' ';
}

/* A stack's frame names as they are found, innermost first. */
struct names {
	char **v;
	size_t n, len;
};

static int names_add(struct names *nm, const char *name)
{
	char **grown = realloc(nm->v, (nm->n + 1) * sizeof(*grown));

	if (!grown)
		return -1;
	nm->v = grown;
	if (!(nm->v[nm->n] = strdup(name)))
		return -1;
	nm->n++;
	nm->len += strlen(name) + 1;
	return 0;
}

/*
 * The Python frames that native frame i runs (all those of no captured
 * native frame when i is -1), innermost first. Without Python frames, the
 * innermost eval loop gets the reason once (*said).
 */
static int add_py(const struct ra_stackfile *f, const struct ra_stack *st, int64_t i,
		  const char *native, bool *said, struct names *nm)
{
	char name[600];

	if (!st->n_py && f->py_off[0] && !*said && !strcmp(native, "_PyEval_EvalFrameDefault")) {
		*said = true;
		snprintf(name, sizeof(name), "[python frames: %s]", f->py_off);
		for (char *p = name; *p; p++)
			*p = *p == ';' || *p == '\n' ? ',' : *p;
		return names_add(nm, name);
	}
	for (size_t k = 0; k < st->n_py; k++) {
		if (st->py[k].native != i)
			continue;
		if (f->py)
			ra_py_name(f, &st->py[k], name, sizeof(name));
		else
			snprintf(name, sizeof(name), "[python %s: not read]", f->py_version);
		if (names_add(nm, name))
			return -1;
	}
	if (i < 0 && st->py_truncated)
		return names_add(nm, "[python frames: deeper than kept]");
	return 0;
}

/* Each native frame of st, and above each eval loop the Python frames it runs. */
static int name_frames(const struct ra_stackfile *f, const struct ra_stack *st,
		       struct ra_symbolizer *s, struct names *nm)
{
	struct ra_frame fr[16];
	char name[600];
	bool said = false;

	for (size_t i = 0; i < st->n; i++) {
		int k = ra_symbolize(s, st->frames[i], i > 0, fr, 16);

		for (int j = 0; j < k; j++) {
			frame_name(&fr[j], name, sizeof(name));
			if ((j == k - 1 && add_py(f, st, (int64_t)i, fr[j].func, &said, nm)) ||
			    names_add(nm, name))
				return -1;
		}
	}
	/* Python frames whose eval loop was not captured (a truncated stack): outermost. */
	return add_py(f, st, -1, "", &said, nm);
}

/* The folded line of one stack (without its count), malloc'ed; NULL: no memory. */
static char *fold_stack(const struct ra_stackfile *f, const struct ra_stack *st,
			struct ra_symbolizer *s, const char *prefix)
{
	struct names nm = {NULL, 0, strlen(prefix) + 1};
	char name[600], *line = NULL;

	if (!st->snapshot || !strcmp(st->status, RS_SNAP_OK)) {
		if (name_frames(f, st, s, &nm))
			goto out;
	} else {
		snprintf(name, sizeof(name), "[%s]",
			 strcmp(st->status, RS_SNAP_SELF) ? st->status : "attach thread");
		if (names_add(&nm, name))
			goto out;
	}
	line = malloc(nm.len + 16);
	if (!line)
		goto out;
	strcpy(line, prefix);
	/* Innermost first in the file; outermost first in the line. */
	for (size_t i = nm.n; i-- > 0;) {
		strcat(line, ";");
		strcat(line, nm.v[i]);
	}
	if (!nm.n)
		strcat(line, ";[no frame]");
out:
	for (size_t i = 0; i < nm.n; i++)
		free(nm.v[i]);
	free(nm.v);
	return line;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

long ra_stackfile_fold(const struct ra_stackfile *f, struct ra_symbolizer *s, const char *host,
		       long rank, bool samples, FILE *out)
{
	char prefix[320], **lines = calloc(f->n_stacks + 1, sizeof(char *));
	size_t n = 0;
	long written = 0;

	if (!lines)
		return -1;
	snprintf(prefix, sizeof(prefix), "%s;rank %ld", host, rank);
	for (char *p = prefix; *p; p++)
		if (*p == ' ' && p < prefix + strlen(host))
			*p = '_'; /* the count is after the last space: none in the host */
	for (size_t i = 0; i < f->n_stacks; i++) {
		if (f->stacks[i].snapshot == samples)
			continue;
		lines[n] = fold_stack(f, &f->stacks[i], s, prefix);
		if (!lines[n])
			goto fail;
		n++;
	}
	qsort(lines, n, sizeof(*lines), str_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j < n && !strcmp(lines[j], lines[i]))
			j++;
		if (fprintf(out, "%s %zu\n", lines[i], j - i) < 0)
			goto fail;
		written++;
		i = j;
	}
	goto done;
fail:
	written = -1;
done:
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	return written;
}

long ra_stackfile_timed(const struct ra_stackfile *f, struct ra_symbolizer *s, const char *prefix,
			FILE *out)
{
	long written = 0;

	for (size_t i = 0; i < f->n_stacks; i++) {
		const struct ra_stack *st = &f->stacks[i];
		char *line;
		int ret;

		if (st->snapshot)
			continue;
		line = fold_stack(f, st, s, "");
		if (!line)
			return -1;
		ret = fprintf(out, "%s\t%d\t%llu\t%s\n", prefix, (int)st->tid,
			      (unsigned long long)st->ns, line + 1);
		free(line);
		if (ret < 0)
			return -1;
		written++;
	}
	return written;
}

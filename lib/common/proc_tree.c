/* SPDX-License-Identifier: MIT */
/*
 * Processes and how they relate: every pid, the threads of one, the children
 * of one, a whole tree (see proc_file.c on what the parsers accept).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proc_internal.h"

#define RA_TREE_MAX 1000000

/* ---- pid lists: ordered, without duplicates ---- */

struct pidlist {
	pid_t *v;
	size_t n, cap;
	pid_t *hash; /* open addressing, 0 = free, hcap a power of two */
	size_t hcap;
	size_t max; /* 0 = no limit */
};

static size_t pid_slot(pid_t pid, size_t hcap)
{
	return ((uint32_t)pid * 2654435761u) & (hcap - 1);
}

static int pl_rehash(struct pidlist *l, size_t hcap)
{
	pid_t *h = calloc(hcap, sizeof(*h));
	size_t i, s;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < l->n; i++) {
		for (s = pid_slot(l->v[i], hcap); h[s]; s = (s + 1) & (hcap - 1))
			;
		h[s] = l->v[i];
	}
	free(l->hash);
	l->hash = h;
	l->hcap = hcap;
	return 0;
}

/* Append pid (> 0) unless present: 1 added, 0 already there, -errno. */
static int pl_add(struct pidlist *l, pid_t pid)
{
	size_t s;
	int r;

	if ((l->n + 1) * 2 > l->hcap && (r = pl_rehash(l, l->hcap ? l->hcap * 2 : 64)) < 0)
		return r;
	for (s = pid_slot(pid, l->hcap); l->hash[s]; s = (s + 1) & (l->hcap - 1))
		if (l->hash[s] == pid)
			return 0;
	if (l->max && l->n >= l->max)
		return -E2BIG;
	if (l->n == l->cap && (r = ra_grow((void **)&l->v, &l->cap, sizeof(*l->v), 16)) < 0)
		return r;
	l->hash[s] = pid;
	l->v[l->n++] = pid;
	return 1;
}

static void pl_free(struct pidlist *l)
{
	free(l->v);
	free(l->hash);
	memset(l, 0, sizeof(*l));
}

/* Hand the array to the caller (NULL when empty) and free the rest. */
static void pl_take(struct pidlist *l, pid_t **out, size_t *n)
{
	*n = l->n;
	*out = l->n ? l->v : NULL;
	if (l->n)
		l->v = NULL;
	pl_free(l);
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * The numeric entries of directory path (pids or thread ids), added to l in
 * ascending order: the kernel's own order, barring pid wrap. -ENOENT if the
 * directory does not exist.
 */
static int list_pids(const char *path, struct pidlist *l)
{
	struct ra_cursor c;
	struct dirent *de;
	pid_t pid;
	DIR *d;
	int r;

	d = opendir(path);
	if (!d)
		return -errno;
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			r = -errno;
			break;
		}
		c.p = de->d_name;
		c.end = de->d_name + strlen(de->d_name);
		if (ra_cursor_pid(&c, &pid) < 0 || c.p != c.end)
			continue;
		r = pl_add(l, pid);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0)
		return r;
	if (l->n) /* v is NULL when empty, and qsort's array must not be */
		qsort(l->v, l->n, sizeof(*l->v), cmp_pid);
	return 0;
}

int ra_proc_pids(const char *procfs, pid_t **out, size_t *n)
{
	struct pidlist l = {0};
	int r;

	*out = NULL;
	*n = 0;
	r = list_pids(ra_proc_root(procfs), &l);
	if (r < 0) {
		pl_free(&l);
		return r;
	}
	pl_take(&l, out, n);
	return 0;
}

/* Thread ids of pid in ascending order; -ESRCH if pid is gone. */
static int list_tasks(const char *procfs, pid_t pid, struct pidlist *tids)
{
	char path[PATH_MAX];
	int r;

	r = ra_proc_path(path, sizeof(path), procfs, pid, "task");
	if (r < 0)
		return r;
	r = list_pids(path, tids);
	return r == -ENOENT ? -ESRCH : r;
}

static int task_file(const char *procfs, pid_t pid, pid_t tid, const char *name, char **text,
		     size_t *len)
{
	char rest[64];

	snprintf(rest, sizeof(rest), "task/%d/%s", (int)tid, name);
	return ra_proc_read(procfs, pid, rest, text, len);
}

/* ---- threads ---- */

/* 1 if task tid of pid is named comm, 0 if not or if it has exited, else -errno. */
static int comm_is(const char *procfs, pid_t pid, pid_t tid, const char *comm)
{
	char *text;
	size_t len;
	int r;

	r = task_file(procfs, pid, tid, "comm", &text, &len);
	if (r == -ENOENT || r == -ESRCH)
		return 0;
	if (r < 0)
		return r;
	if (len && text[len - 1] == '\n')
		text[--len] = '\0';
	r = !memchr(text, '\0', len) && !strcmp(text, comm);
	free(text);
	return r;
}

/* The same tids in the same order. */
static bool same_tasks(const struct pidlist *a, const struct pidlist *b)
{
	return a->n == b->n && (!a->n || !memcmp(a->v, b->v, a->n * sizeof(*a->v)));
}

/* One look: 1 and *tid if a task is named comm, 0 if none, else -errno. */
static int look_for_comm(const char *procfs, pid_t pid, const struct pidlist *tids,
			 const char *comm, pid_t *tid)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < tids->n; i++) {
		r = comm_is(procfs, pid, tids->v[i], comm);
		if (r > 0) {
			*tid = tids->v[i];
			return 1;
		}
	}
	return r < 0 ? r : 0;
}

/*
 * A "none" is only believed when the task list was the same before and
 * after the look: threads that start or end meanwhile (an injected loader
 * thread exiting as the listener is sought) could make one look miss a
 * thread that was there all along. Up to FIND_COMM_LOOKS looks.
 */
#define FIND_COMM_LOOKS 5

int ra_find_thread_by_comm(const char *procfs, pid_t pid, const char *comm, pid_t *tid)
{
	struct pidlist tids = {0}, again = {0};
	int r;

	if (pid <= 0 || !comm || !tid)
		return -EINVAL;
	r = list_tasks(procfs, pid, &tids);
	for (int look = 0; r >= 0 && look < FIND_COMM_LOOKS; look++) {
		r = look_for_comm(procfs, pid, &tids, comm, tid);
		if (r != 0)
			break;
		r = list_tasks(procfs, pid, &again);
		if (r < 0 || same_tasks(&tids, &again))
			break;
		pl_free(&tids);
		tids = again;
		again = (struct pidlist){0};
	}
	if (r > 0)
		r = 0;
	else if (r >= 0) /* All threads may have exited while we looked. */
		r = ra_proc_gone_or(procfs, pid, -ENOENT);
	pl_free(&tids);
	pl_free(&again);
	return r;
}

/* ---- children and trees ---- */

static int children_into(const char *text, size_t len, struct pidlist *l)
{
	struct ra_cursor c = {text, text + len};
	pid_t pid;
	int r;

	if (!text && len)
		return -EINVAL;
	for (;;) {
		while (c.p < c.end && (*c.p == ' ' || *c.p == '\n'))
			c.p++;
		if (c.p == c.end)
			return 0;
		if (ra_cursor_pid(&c, &pid) < 0)
			return -EINVAL;
		if (c.p < c.end && *c.p != ' ' && *c.p != '\n')
			return -EINVAL;
		r = pl_add(l, pid);
		if (r < 0)
			return r;
	}
}

int ra_children_parse(const char *text, size_t len, pid_t **out, size_t *n)
{
	struct pidlist l = {0};
	int r;

	*out = NULL;
	*n = 0;
	r = children_into(text, len, &l);
	if (r < 0) {
		pl_free(&l);
		return r;
	}
	pl_take(&l, out, n);
	return 0;
}

/* A thread without a children file: exited (skip it), or CONFIG_PROC_CHILDREN is off. */
static int no_children_file(const char *procfs, pid_t pid, pid_t tid)
{
	char path[PATH_MAX];
	char rest[32];
	struct stat sb;

	snprintf(rest, sizeof(rest), "task/%d", (int)tid);
	if (ra_proc_path(path, sizeof(path), procfs, pid, rest) < 0)
		return -ENAMETOOLONG;
	return stat(path, &sb) == 0 ? -EOPNOTSUPP : 0;
}

/*
 * Children of pid added to l. A child belongs to the thread that forked it,
 * and moves to another thread of the group when that one exits: so read every
 * thread. The kernel builds each file under RCU, so a fork or exit racing
 * with us may or may not show up; callers get a snapshot, nothing more.
 */
static int add_children(const char *procfs, pid_t pid, struct pidlist *l)
{
	struct pidlist tids = {0};
	char *text;
	size_t i, len;
	int r;

	r = list_tasks(procfs, pid, &tids);
	for (i = 0; r >= 0 && i < tids.n; i++) {
		r = task_file(procfs, pid, tids.v[i], "children", &text, &len);
		if (r == -ENOENT) {
			r = no_children_file(procfs, pid, tids.v[i]);
			continue;
		}
		if (r < 0)
			break;
		r = children_into(text, len, l);
		free(text);
	}
	pl_free(&tids);
	return r < 0 ? r : 0;
}

int ra_children(const char *procfs, pid_t pid, pid_t **out, size_t *n)
{
	struct pidlist l = {0};
	int r;

	*out = NULL;
	*n = 0;
	if (pid <= 0)
		return -EINVAL;
	r = add_children(procfs, pid, &l);
	if (r < 0) {
		pl_free(&l);
		return r;
	}
	pl_take(&l, out, n);
	return 0;
}

int ra_tree(const char *procfs, pid_t pid, pid_t **out, size_t *n)
{
	struct pidlist l = {.max = RA_TREE_MAX};
	size_t i;
	int r;

	*out = NULL;
	*n = 0;
	if (pid <= 0)
		return -EINVAL;
	r = pl_add(&l, pid);
	/*
	 * The list doubles as the BFS queue and, with its hash, as the visited
	 * set: a pid reused while we walk cannot make us loop.
	 */
	for (i = 0; r >= 0 && i < l.n; i++) {
		r = add_children(procfs, l.v[i], &l);
		/* A descendant that exited after being listed just has no children. */
		if (r == -ESRCH && i > 0)
			r = 0;
	}
	if (r < 0) {
		pl_free(&l);
		return r;
	}
	pl_take(&l, out, n);
	return 0;
}

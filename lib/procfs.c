/* SPDX-License-Identifier: MIT */
/*
 * Readers for /proc/PID files. The parsers accept exactly what the kernel
 * writes and reject anything else with -EINVAL: they also run on captured
 * trees and, later, under a fuzzer, so no length or number is trusted.
 */
#include "procfs.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RA_READ_MAX (256u << 20) /* /proc/PID/maps of a huge JVM is tens of MB */
#define RA_TREE_MAX 1000000

/* ---- paths and files ---- */

static const char *proc_root(const char *procfs)
{
	return procfs ? procfs : RA_PROCFS;
}

/* "<procfs>/<pid>/<rest>", or "<procfs>/<pid>" when rest is NULL. */
static int pid_path(char *buf, size_t len, const char *procfs, pid_t pid, const char *rest)
{
	int r;

	if (rest)
		r = snprintf(buf, len, "%s/%d/%s", proc_root(procfs), (int)pid, rest);
	else
		r = snprintf(buf, len, "%s/%d", proc_root(procfs), (int)pid);
	if (r < 0 || (size_t)r >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * A missing /proc/PID/FILE means either that the process is gone or that the
 * kernel lacks the file; only the first is -ESRCH.
 */
static int gone_or(const char *procfs, pid_t pid, int err)
{
	char path[PATH_MAX];
	struct stat sb;

	if (err != -ENOENT || pid_path(path, sizeof(path), procfs, pid, NULL) < 0)
		return err;
	if (stat(path, &sb) < 0 && errno == ENOENT)
		return -ESRCH;
	return err;
}

static int grow(void **v, size_t *cap, size_t size, size_t first)
{
	size_t ncap = *cap ? *cap * 2 : first;
	void *nv;

	if (ncap < *cap || ncap > SIZE_MAX / size)
		return -ENOMEM;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

int ra_read_file(const char *path, char **out, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	ssize_t got;
	int fd, r = 0;

	*out = NULL;
	if (len)
		*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	for (;;) {
		/* Keep one byte for the NUL; stat's st_size is 0 here, so grow as we go. */
		if (cap - n < 2) {
			r = cap >= RA_READ_MAX ? -EFBIG : grow((void **)&buf, &cap, 1, 4096);
			if (r < 0)
				goto out;
		}
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*out = buf;
	buf = NULL;
	if (len)
		*len = n;
out:
	free(buf);
	close(fd);
	return r;
}

static int read_pid_file(const char *procfs, pid_t pid, const char *rest, char **out, size_t *len)
{
	char path[PATH_MAX];
	int r;

	*out = NULL;
	if (pid <= 0)
		return -EINVAL;
	r = pid_path(path, sizeof(path), procfs, pid, rest);
	if (r < 0)
		return r;
	return gone_or(procfs, pid, ra_read_file(path, out, len));
}

/* ---- tokens ---- */

struct cursor {
	const char *p, *end;
};

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Unsigned number in base 10 or 16: no sign, no prefix, no overflow. */
static int number(struct cursor *c, unsigned int base, uint64_t *v)
{
	const char *start = c->p;
	uint64_t x = 0;
	int d;

	while (c->p < c->end && (d = hexval(*c->p)) >= 0 && (unsigned int)d < base) {
		if (x > (UINT64_MAX - (unsigned int)d) / base)
			return -EINVAL;
		x = x * base + (unsigned int)d;
		c->p++;
	}
	if (c->p == start)
		return -EINVAL;
	*v = x;
	return 0;
}

static int expect(struct cursor *c, char ch)
{
	if (c->p == c->end || *c->p != ch)
		return -EINVAL;
	c->p++;
	return 0;
}

static void skip_blanks(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

/* Next line of [*p, end) without its '\n'; false at the end. */
static bool next_line(const char **p, const char *end, struct cursor *line)
{
	const char *eol;

	if (*p >= end)
		return false;
	eol = memchr(*p, '\n', (size_t)(end - *p));
	line->p = *p;
	line->end = eol ? eol : end;
	*p = eol ? eol + 1 : end;
	return true;
}

/* ---- maps ---- */

static int perms(struct cursor *c, struct ra_map *m)
{
	const char *s = c->p;

	if (c->end - s < 4)
		return -EINVAL;
	if ((s[0] != 'r' && s[0] != '-') || (s[1] != 'w' && s[1] != '-') ||
	    (s[2] != 'x' && s[2] != '-') || (s[3] != 'p' && s[3] != 's'))
		return -EINVAL;
	m->r = s[0] == 'r';
	m->w = s[1] == 'w';
	m->x = s[2] == 'x';
	m->p = s[3] == 'p';
	c->p += 4;
	return 0;
}

/* The path column: the kernel pads to a fixed width, and escapes '\n' in names. */
static int map_path(struct cursor *c, struct ra_map *m)
{
	static const char del[] = " (deleted)";
	const size_t dlen = sizeof(del) - 1;
	size_t len;

	if (c->p < c->end && expect(c, ' ') < 0)
		return -EINVAL;
	while (c->p < c->end && *c->p == ' ')
		c->p++;
	len = (size_t)(c->end - c->p);
	if (memchr(c->p, '\0', len))
		return -EINVAL;
	if (len >= dlen && !memcmp(c->end - dlen, del, dlen)) {
		m->deleted = true;
		len -= dlen;
	}
	m->path = strndup(c->p, len);
	return m->path ? 0 : -ENOMEM;
}

static int map_line(struct cursor *c, struct ra_map *m)
{
	uint64_t major, minor;

	memset(m, 0, sizeof(*m));
	if (number(c, 16, &m->start) || expect(c, '-') || number(c, 16, &m->end) ||
	    expect(c, ' ') || perms(c, m) || expect(c, ' ') || number(c, 16, &m->offset) ||
	    expect(c, ' ') || number(c, 16, &major) || expect(c, ':') || number(c, 16, &minor) ||
	    expect(c, ' ') || number(c, 10, &m->inode))
		return -EINVAL;
	if (m->end <= m->start || major > UINT_MAX || minor > UINT_MAX)
		return -EINVAL;
	m->dev_major = (unsigned int)major;
	m->dev_minor = (unsigned int)minor;
	return map_path(c, m);
}

int ra_maps_parse(const char *text, size_t len, struct ra_maps *out)
{
	const char *p = text, *end = text + len;
	struct ra_maps m = { NULL, 0 };
	struct cursor line;
	size_t cap = 0;
	int r = 0;

	out->v = NULL;
	out->n = 0;
	if (!text)
		return len ? -EINVAL : 0;
	while (next_line(&p, end, &line)) {
		if (m.n == cap && (r = grow((void **)&m.v, &cap, sizeof(*m.v), 64)) < 0)
			goto out;
		r = map_line(&line, &m.v[m.n]);
		if (r < 0) {
			free(m.v[m.n].path);
			goto out;
		}
		m.n++;
	}
	*out = m;
	return 0;
out:
	ra_maps_free(&m);
	return r;
}

/*
 * Each read() of maps resumes after the last address printed, so a mapping
 * that changes while we read may show its old or new state, never a torn line.
 */
int ra_maps_read(const char *procfs, pid_t pid, struct ra_maps *out)
{
	char *text;
	size_t len;
	int r;

	out->v = NULL;
	out->n = 0;
	r = read_pid_file(procfs, pid, "maps", &text, &len);
	if (r < 0)
		return r;
	r = ra_maps_parse(text, len, out);
	free(text);
	return r;
}

void ra_maps_free(struct ra_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

const struct ra_map *ra_maps_find(const struct ra_maps *m, uint64_t addr)
{
	size_t i;

	for (i = 0; m && i < m->n; i++)
		if (addr >= m->v[i].start && addr < m->v[i].end)
			return &m->v[i];
	return NULL;
}

/* ---- auxv ---- */

int ra_auxv_parse(const void *data, size_t len, uint64_t type, uint64_t *val)
{
	const unsigned char *p = data;
	uint64_t pair[2];
	size_t i;

	if (type == AT_NULL || (!data && len))
		return -EINVAL;
	for (i = 0; len - i >= sizeof(pair); i += sizeof(pair)) {
		/* The buffer need not be 8-byte aligned. */
		memcpy(pair, p + i, sizeof(pair));
		if (pair[0] == AT_NULL)
			break;
		if (pair[0] == type) {
			*val = pair[1];
			return 0;
		}
	}
	return -ENOENT;
}

int ra_auxv_read(const char *procfs, pid_t pid, uint64_t type, uint64_t *val)
{
	char *data;
	size_t len;
	int r;

	r = read_pid_file(procfs, pid, "auxv", &data, &len);
	if (r < 0)
		return r;
	r = ra_auxv_parse(data, len, type, val);
	free(data);
	return r;
}

/* ---- pid lists: ordered, without duplicates ---- */

struct pidlist {
	pid_t *v;
	size_t n, cap;
	pid_t *hash; /* open addressing, 0 = free, hcap a power of two */
	size_t hcap;
	size_t max;  /* 0 = no limit */
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
	if (l->n == l->cap && (r = grow((void **)&l->v, &l->cap, sizeof(*l->v), 16)) < 0)
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

/* Decimal pid in 1..INT_MAX. */
static int pid_number(struct cursor *c, pid_t *pid)
{
	uint64_t v;

	if (number(c, 10, &v) < 0 || v == 0 || v > INT_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Thread ids of pid in ascending order (the kernel's own order, barring pid wrap). */
static int list_tasks(const char *procfs, pid_t pid, struct pidlist *tids)
{
	char path[PATH_MAX];
	struct cursor c;
	struct dirent *de;
	pid_t tid;
	DIR *d;
	int r;

	r = pid_path(path, sizeof(path), procfs, pid, "task");
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			r = -errno;
			break;
		}
		c.p = de->d_name;
		c.end = de->d_name + strlen(de->d_name);
		if (pid_number(&c, &tid) < 0 || c.p != c.end)
			continue;
		r = pl_add(tids, tid);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0)
		return r;
	if (tids->n) /* v is NULL when empty, and qsort's array must not be */
		qsort(tids->v, tids->n, sizeof(*tids->v), cmp_pid);
	return 0;
}

static int task_file(const char *procfs, pid_t pid, pid_t tid, const char *name, char **text,
		     size_t *len)
{
	char rest[64];

	snprintf(rest, sizeof(rest), "task/%d/%s", (int)tid, name);
	return read_pid_file(procfs, pid, rest, text, len);
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

int ra_find_thread_by_comm(const char *procfs, pid_t pid, const char *comm, pid_t *tid)
{
	struct pidlist tids = { 0 };
	size_t i;
	int r;

	if (pid <= 0 || !comm || !tid)
		return -EINVAL;
	r = list_tasks(procfs, pid, &tids);
	for (i = 0; r >= 0 && i < tids.n; i++) {
		r = comm_is(procfs, pid, tids.v[i], comm);
		if (r > 0) {
			*tid = tids.v[i];
			r = 0;
			goto out;
		}
	}
	/* All threads may have exited while we looked. */
	if (r >= 0)
		r = gone_or(procfs, pid, -ENOENT);
out:
	pl_free(&tids);
	return r;
}

/* ---- children and trees ---- */

static int children_into(const char *text, size_t len, struct pidlist *l)
{
	struct cursor c = { text, text + len };
	pid_t pid;
	int r;

	if (!text && len)
		return -EINVAL;
	for (;;) {
		while (c.p < c.end && (*c.p == ' ' || *c.p == '\n'))
			c.p++;
		if (c.p == c.end)
			return 0;
		if (pid_number(&c, &pid) < 0)
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
	struct pidlist l = { 0 };
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
	if (pid_path(path, sizeof(path), procfs, pid, rest) < 0)
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
	struct pidlist tids = { 0 };
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
	struct pidlist l = { 0 };
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
	struct pidlist l = { .max = RA_TREE_MAX };
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

/* ---- status ---- */

enum {
	ST_NAME = 1 << 0,
	ST_STATE = 1 << 1,
	ST_TGID = 1 << 2,
	ST_PPID = 1 << 3,
	ST_TRACER = 1 << 4,
	ST_UID = 1 << 5,
	ST_NSPID = 1 << 6,
	ST_SIGBLK = 1 << 7,
	ST_SIGIGN = 1 << 8,
	ST_SIGCGT = 1 << 9,
	ST_SIGS = ST_SIGBLK | ST_SIGIGN | ST_SIGCGT,
	ST_REQUIRED = ST_NAME | ST_STATE | ST_TGID | ST_PPID | ST_TRACER | ST_UID,
};

/* Up to max blank-separated numbers filling the rest of the line; -EOVERFLOW if more. */
static int numbers(struct cursor *c, uint64_t *v, int max, uint64_t limit, int *count)
{
	int n = 0;

	for (skip_blanks(c); c->p < c->end; skip_blanks(c)) {
		if (n == max)
			return -EOVERFLOW;
		if (number(c, 10, &v[n]) < 0 || v[n] > limit)
			return -EINVAL;
		if (c->p < c->end && *c->p != ' ' && *c->p != '\t')
			return -EINVAL;
		n++;
	}
	*count = n;
	return n ? 0 : -EINVAL;
}

static int one_pid(struct cursor *c, pid_t *pid)
{
	uint64_t v;
	int n, r;

	r = numbers(c, &v, 1, INT_MAX, &n);
	if (r < 0)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

/* A signal mask: hexadecimal digits alone on the rest of the line. */
static int sig_mask(struct cursor *c, uint64_t *mask)
{
	skip_blanks(c);
	if (number(c, 16, mask) < 0)
		return -EINVAL;
	skip_blanks(c);
	return c->p == c->end ? 0 : -EINVAL;
}

static int status_value(const char *key, size_t klen, struct cursor *c, struct ra_status *st)
{
	uint64_t v[8];
	int i, n, r;

#define KEY(s) (klen == sizeof(s) - 1 && !memcmp(key, s, klen))
	if (KEY("Name")) {
		/* "Name:\t" then the name as is: it may start with blanks. */
		if (c->p < c->end && *c->p == '\t')
			c->p++;
		n = (int)(c->end - c->p < 63 ? c->end - c->p : 63);
		memcpy(st->name, c->p, (size_t)n);
		st->name[n] = '\0';
		return ST_NAME;
	}
	if (KEY("State")) {
		skip_blanks(c);
		if (c->p == c->end)
			return -EINVAL;
		st->state = *c->p;
		return ST_STATE;
	}
	if (KEY("Tgid"))
		return one_pid(c, &st->tgid) < 0 ? -EINVAL : ST_TGID;
	if (KEY("PPid"))
		return one_pid(c, &st->ppid) < 0 ? -EINVAL : ST_PPID;
	if (KEY("TracerPid"))
		return one_pid(c, &st->tracer_pid) < 0 ? -EINVAL : ST_TRACER;
	if (KEY("Uid")) {
		r = numbers(c, v, 4, UINT32_MAX, &n);
		if (r < 0 || n < 2)
			return -EINVAL;
		st->uid_real = (uid_t)v[0];
		st->uid_effective = (uid_t)v[1];
		return ST_UID;
	}
	if (KEY("NSpid")) {
		r = numbers(c, v, 8, INT_MAX, &n);
		if (r < 0)
			return r;
		for (i = 0; i < n; i++)
			st->nspid[i] = (pid_t)v[i];
		st->nspid_n = n;
		return ST_NSPID;
	}
	if (KEY("SigBlk"))
		return sig_mask(c, &st->sig_blocked) < 0 ? -EINVAL : ST_SIGBLK;
	if (KEY("SigIgn"))
		return sig_mask(c, &st->sig_ignored) < 0 ? -EINVAL : ST_SIGIGN;
	if (KEY("SigCgt"))
		return sig_mask(c, &st->sig_caught) < 0 ? -EINVAL : ST_SIGCGT;
#undef KEY
	return 0;
}

int ra_status_parse(const char *text, size_t len, struct ra_status *st)
{
	const char *p = text, *colon;
	struct cursor line, value;
	int seen = 0, r;

	memset(st, 0, sizeof(*st));
	if (!text)
		return -EINVAL;
	while (next_line(&p, text + len, &line)) {
		/* Unknown lines are skipped: every kernel release adds some. */
		colon = memchr(line.p, ':', (size_t)(line.end - line.p));
		if (!colon)
			continue;
		value.p = colon + 1;
		value.end = line.end;
		r = status_value(line.p, (size_t)(colon - line.p), &value, st);
		if (r < 0)
			return r;
		seen |= r;
	}
	if ((seen & ST_REQUIRED) != ST_REQUIRED)
		return -EINVAL;
	/* NSpid appeared in Linux 4.1. */
	if (!(seen & ST_NSPID)) {
		st->nspid[0] = st->tgid;
		st->nspid_n = 1;
	}
	st->sigs_known = (seen & ST_SIGS) == ST_SIGS;
	return 0;
}

int ra_status_read(const char *procfs, pid_t pid, struct ra_status *st)
{
	char *text;
	size_t len;
	int r;

	memset(st, 0, sizeof(*st));
	r = read_pid_file(procfs, pid, "status", &text, &len);
	if (r < 0)
		return r;
	r = ra_status_parse(text, len, st);
	free(text);
	return r;
}

/* ---- stat ---- */

/* Next space-separated field (fields after comm never contain spaces). */
static int stat_field(struct cursor *c, struct cursor *field)
{
	if (expect(c, ' ') < 0)
		return -EINVAL;
	field->p = c->p;
	while (c->p < c->end && *c->p != ' ' && *c->p != '\n')
		c->p++;
	field->end = c->p;
	return field->p == field->end ? -EINVAL : 0;
}

static int stat_value(int idx, struct cursor *f, struct ra_stat *st)
{
	uint64_t v;

	switch (idx) {
	case 3:
		if (f->end - f->p != 1)
			return -EINVAL;
		st->state = *f->p;
		return 0;
	case 4:
		if (number(f, 10, &v) < 0 || f->p != f->end || v > INT_MAX)
			return -EINVAL;
		st->ppid = (pid_t)v;
		return 0;
	case 22:
		return number(f, 10, &st->starttime) < 0 || f->p != f->end ? -EINVAL : 0;
	}
	return 0;
}

int ra_stat_parse(const char *text, size_t len, struct ra_stat *st)
{
	struct cursor c = { text, text + len }, f;
	const char *rparen;
	uint64_t pid;
	int idx;

	memset(st, 0, sizeof(*st));
	if (!text)
		return -EINVAL;
	/* comm is written raw: it may hold spaces and ')', so its end is the last ')'. */
	rparen = memrchr(text, ')', len);
	if (number(&c, 10, &pid) < 0 || expect(&c, ' ') < 0 || expect(&c, '(') < 0 ||
	    !rparen || rparen < c.p)
		return -EINVAL;
	c.p = rparen + 1;
	for (idx = 3; idx <= 22; idx++)
		if (stat_field(&c, &f) < 0 || stat_value(idx, &f, st) < 0)
			return -EINVAL;
	return 0;
}

int ra_stat_read(const char *procfs, pid_t pid, struct ra_stat *st)
{
	char *text;
	size_t len;
	int r;

	memset(st, 0, sizeof(*st));
	r = read_pid_file(procfs, pid, "stat", &text, &len);
	if (r < 0)
		return r;
	r = ra_stat_parse(text, len, st);
	free(text);
	return r;
}

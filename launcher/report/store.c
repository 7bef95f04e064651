/* SPDX-License-Identifier: MIT */
/*
 * Where rank 0 keeps the gathered records: not in memory (10,000 nodes x
 * 128 targets is 0.86 GB per window) but in a file, an unlinked temporary
 * one, written as each node's records arrive and read back one node at a
 * time while the report is written (docs/architecture.md, "Rank 0's
 * memory"). What stays in memory per node and window is its struct rm_node:
 * host, counts, clock figures, lost state, and where its targets are.
 *
 * The file holds struct rn_target arrays as they are in memory: it is this
 * process's own, written and read by the same binary, and never outlives
 * it (O_TMPFILE, else a name unlinked at once).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report_int.h"

struct rm_store {
	int fd;
	uint64_t end; /* bytes written */
	int read_errno, write_errno;
	char dir[512];
};

static int open_tmp(const char *dir)
{
	char *path = NULL;
	int fd;

#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
#endif
	/* A file system without O_TMPFILE: a private name, unlinked at once. */
	if (asprintf(&path, "%s/.rocattach-mpi-records.XXXXXX", dir) < 0)
		return errno = ENOMEM, -1;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	free(path);
	return fd;
}

struct rm_store *rm_store_open(const char *dir, char *err, size_t len)
{
	struct rm_store *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, len, "cannot keep the records: %s", strerror(ENOMEM));
		return NULL;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", dir && *dir ? dir : "/tmp");
	s->fd = open_tmp(s->dir);
	if (s->fd < 0) {
		snprintf(err, len,
			 "cannot keep the records in a temporary file in %s: %s: set TMPDIR to "
			 "a writable directory",
			 s->dir, strerror(errno));
		free(s);
		return NULL;
	}
	return s;
}

void rm_store_close(struct rm_store *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s);
}

uint64_t rm_store_bytes(const struct rm_store *s)
{
	return s ? s->end : 0;
}

/* All len bytes at offset at, written from or read into buf; 0, or -1 with errno. */
static int transfer(int fd, void *buf, size_t len, uint64_t at, bool out)
{
	char *p = buf;

	while (len) {
		ssize_t k = out ? pwrite(fd, p, len, (off_t)at) : pread(fd, p, len, (off_t)at);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -1 : (errno = EIO, -1);
		p += k;
		len -= (size_t)k;
		at += (uint64_t)k;
	}
	return 0;
}

/* Every known time of a target less the node's clock offset: rank 0's clock. */
static void to_root_clock(struct rn_target *t, int64_t applied_ns)
{
	uint64_t *v[] = {&t->attach_start_ns, &t->attach_end_ns, &t->attach_tool_ns,
			 &t->detach_start_ns, &t->detach_end_ns, &t->detach_tool_ns,
			 &t->detach_call_ns,  &t->attach_call_ns};

	for (size_t j = 0; j < sizeof(v) / sizeof(v[0]); j++)
		if (*v[j])
			*v[j] = (uint64_t)((int64_t)*v[j] - applied_ns);
}

int rm_take_node(const void *buf, size_t len, int64_t applied_ns, struct rm_node *n)
{
	memset(n, 0, sizeof(*n));
	if (rn_unpack(buf, len, n->host, &n->t, &n->n))
		return -1;
	for (size_t i = 0; i < n->n; i++)
		to_root_clock(&n->t[i], applied_ns);
	n->clock_applied = applied_ns != 0;
	return 0;
}

int rm_store_put(struct rm_store *s, struct rm_node *n, char *err, size_t len)
{
	size_t bytes = n->n * sizeof(*n->t);

	if (!n->n) {
		free(n->t);
		n->t = NULL;
		return 0;
	}
	if (transfer(s->fd, n->t, bytes, s->end, true)) {
		s->write_errno = errno;
		snprintf(err, len, "cannot keep the records in %s: %s", s->dir, strerror(errno));
		return -1;
	}
	free(n->t);
	n->t = NULL;
	n->store = s;
	n->at = s->end;
	s->end += bytes;
	return 0;
}

const struct rn_target *rm_targets(const struct rm_node *n, struct rm_hold *h)
{
	struct rm_store *s = n->store;

	if (!s)
		return n->t;
	if (h->cap < n->n) {
		struct rn_target *b = realloc(h->buf, n->n * sizeof(*b));

		if (!b) {
			s->read_errno = ENOMEM;
			return NULL;
		}
		h->buf = b;
		h->cap = n->n;
	}
	if (transfer(s->fd, h->buf, n->n * sizeof(*h->buf), n->at, false)) {
		s->read_errno = errno ? errno : EIO;
		return NULL;
	}
	return h->buf;
}

void rm_hold_free(struct rm_hold *h)
{
	free(h->buf);
	*h = (struct rm_hold){0};
}

int rm_store_check(const struct rm_store *s, char *err, size_t len)
{
	if (!s || !s->read_errno)
		return 0;
	snprintf(err, len, "cannot read the gathered records back from %s: %s", s->dir,
		 strerror(s->read_errno));
	return -1;
}

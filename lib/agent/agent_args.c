/* SPDX-License-Identifier: MIT */
/*
 * The attach's pointer arguments (agent.h), copied into our own memory
 * before anything reads them, so the check and the use read the same bytes.
 *
 * Two layers, both always on:
 * - Where we may read: the mapping holding the pointer and the scannable
 *   mappings that follow without a gap. Scannable is readable, and not
 *   [vvar] nor a device under /dev other than /dev/zero and /dev/shm (a
 *   read of a GPU's MMIO or doorbell page can have effects). One
 *   PROCMAP_QUERY ioctl on /proc/self/maps per mapping (Linux 6.11); an
 *   older kernel gets the maps file parsed once per pointer, as before.
 * - The copy itself, with process_vm_readv on our own pid: it fails with
 *   EFAULT instead of a SIGSEGV if the mapping went away after the check,
 *   and it stops at the first page it cannot read. The kernel pins the
 *   pages first (mm/gup.c): it refuses PROT_NONE, VM_IO and VM_PFNMAP
 *   mappings ([vvar], remap_pfn_range MMIO) before faulting anything in,
 *   and any page without a struct page. It would still read a device
 *   mapping backed by ordinary pages (and run its fault handler), which is
 *   why the first layer stays. Where process_vm_readv is refused (seccomp,
 *   ENOSYS) the argument is measured in place inside the checked span, as
 *   before (no further than its end), and copied with memcpy.
 *
 * Limits: a string is read in chunks up to its NUL, at most ARG_STRING_MAX
 * bytes; an environment buffer up to its last pair, at most ARG_ENVBUF_MAX.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/agent_base.h"
#include "agent/agent_args.h"
#include "common/procmap.h"

#define ARG_CHUNK 4096
#define ARG_STRING_MAX ((size_t)1 << 20)
#define ARG_ENVBUF_MAX ((size_t)64 << 20)
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Under agent_lock: what this kernel refused once is not asked again. */
static bool no_query, no_vm_readv;
/* /proc/self/maps for PROCMAP_QUERY, open from the first query to arg_copy_end. */
static int maps_fd = -1;

struct arg_reader {
	uintptr_t end;	  /* end of the scannable span found so far */
	bool span_closed; /* the span cannot grow past end */
};

/*
 * A mapping we may scan, by its name (NULL or "" for anonymous memory).
 * /dev/zero is shared anonymous memory, /dev/shm a tmpfs.
 */
static bool name_ok(const char *name)
{
	if (!name)
		return true;
	if (!strncmp(name, "[vvar", 5))
		return false;
	return strncmp(name, "/dev/", 5) || !strncmp(name, "/dev/zero", 9) ||
	       !strncmp(name, "/dev/shm/", 9);
}

/* A maps line into [lo, hi) and whether we may scan it (older kernels). */
static int map_parse(const char *line, unsigned long *lo, unsigned long *hi, bool *ok)
{
	const char *path;
	char perms[5];
	int n = 0;

	if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", lo, hi, perms, &n) != 3)
		return -1;
	path = n ? line + n : "";
	*ok = perms[0] == 'r' && name_ok(path);
	return 0;
}

/*
 * Bytes we may read from p on: the rest of the mapping holding p plus
 * scannable mappings that follow without a gap. 0 if p is not in one.
 */
static size_t readable_bytes(const void *p)
{
	unsigned long lo, hi, end = 0, a = (unsigned long)p;
	char *line = NULL;
	size_t cap = 0;
	bool ok;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0 && !map_parse(line, &lo, &hi, &ok)) {
		if (end && (lo != end || !ok))
			break;
		if (end || (a >= lo && a < hi && ok))
			end = hi;
		else if (a < hi)
			break;
	}
	free(line);
	fclose(f);
	return end ? end - a : 0;
}

/*
 * The mapping at a: 1 and its end if we may scan it, 0 if not; -1 if the
 * maps file cannot be opened now (out of fds), -2 if the ioctl is not there.
 */
static int query_one(uintptr_t a, uintptr_t *end)
{
	char name[4096];
	struct procmap_query q = {
	    .size = sizeof(q),
	    .query_addr = a,
	    .vma_name_size = sizeof(name),
	    .vma_name_addr = (uintptr_t)name,
	};

	if (maps_fd < 0)
		maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (maps_fd < 0)
		return -1;
	name[0] = '\0';
	if (ioctl(maps_fd, PROCMAP_QUERY, &q) < 0) {
		/* ENOENT: no mapping at a. ENAMETOOLONG: not a name we let through. */
		if (errno == ENOENT || errno == ENAMETOOLONG)
			return 0;
		return -2;
	}
	if (!(q.vma_flags & PROCMAP_QUERY_VMA_READABLE) || !name_ok(q.vma_name_size ? name : NULL))
		return 0;
	*end = (uintptr_t)q.vma_end;
	return 1;
}

/* Scannable bytes from a on: the span grows one mapping at a time. */
static size_t span_from(struct arg_reader *r, uintptr_t a)
{
	uintptr_t end;
	int ok;

	if (a < r->end)
		return r->end - a;
	if (r->span_closed)
		return 0;
	ok = no_query ? -2 : query_one(a, &end);
	if (ok < 0) {
		/* An older kernel: the whole span at once, from the maps file. */
		if (ok == -2 && !no_query) {
			dbg("PROCMAP_QUERY: %s; parsing /proc/self/maps", strerror(errno));
			no_query = true;
		}
		end = a + readable_bytes((const void *)a);
		r->span_closed = true;
		ok = end > a;
	}
	if (ok <= 0) {
		r->span_closed = true;
		return 0;
	}
	r->end = end;
	return end - a;
}

/*
 * Copy n bytes at a, all inside the span: how many came (fewer if a page
 * went away), or -1 where process_vm_readv cannot be used.
 */
static ssize_t copy_in(char *dst, uintptr_t a, size_t n)
{
	struct iovec local = {dst, n}, remote = {(void *)a, n};
	ssize_t got;
	int err;

	got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (got >= 0)
		return got;
	err = errno;
	if (err == EFAULT)
		return 0;
	/* EPERM (seccomp) or ENOSYS stay; anything else may pass. */
	no_vm_readv = err == EPERM || err == ENOSYS;
	dbg("process_vm_readv on ourselves: %s; copying directly", strerror(err));
	return -1;
}

/* What is read of one kind of argument. */
struct arg_kind {
	size_t max; /* bytes read at most */
	/* With the chunks read so far: is it complete? (st: the kind's running state) */
	bool (*done)(const char *buf, size_t len, void *st);
	/* Its length in [b, b + len) read in place, 0 if it does not end there. */
	size_t (*measure)(const char *b, size_t len);
};

static int copy_out(const char *src, size_t n, char **buf, size_t *len)
{
	char *b = malloc(n + 1);

	if (!b)
		return -ENOMEM;
	memcpy(b, src, n);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/*
 * Without process_vm_readv, as before: the whole span found first, the
 * argument measured in place (reading no further than its end, as a memchr
 * would) and copied.
 */
static int read_direct(struct arg_reader *r, const char *p, const struct arg_kind *k, char **buf,
		       size_t *len)
{
	size_t tot = 0, span, n;

	while (tot < k->max && (span = span_from(r, (uintptr_t)p + tot)))
		tot += span;
	tot = MIN(tot, k->max);
	n = tot ? k->measure(p, tot) : 0;
	return copy_out(p, n ? n : tot, buf, len);
}

/*
 * Read p into *buf until kind's done() says it is complete, the span ends
 * or max bytes came; *len is how many came. The first read goes to the end
 * of p's 4 KB block, each next one doubles what we have.
 */
static int read_arg(struct arg_reader *r, const char *p, const struct arg_kind *k, void *st,
		    char **buf, size_t *len)
{
	uintptr_t a = (uintptr_t)p;
	size_t cap = 0, want, span;
	char *b = NULL, *nb;
	ssize_t got;

	if (no_vm_readv)
		return read_direct(r, p, k, buf, len);
	*len = 0;
	do {
		span = span_from(r, a + *len);
		want = *len ? *len : ARG_CHUNK - (a & (ARG_CHUNK - 1));
		want = MIN(MIN(want, k->max - *len), span);
		if (!want)
			break;
		if (*len + want > cap) {
			cap = *len + want;
			nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		got = copy_in(b + *len, a + *len, want);
		if (got < 0) {
			free(b);
			return read_direct(r, p, k, buf, len);
		}
		*len += (size_t)got;
		if ((size_t)got < want)
			break;
	} while (!k->done(b, *len, st));
	if (b)
		b[*len] = '\0';
	*buf = b;
	return 0;
}

void arg_copy_end(void)
{
	if (maps_fd >= 0)
		close(maps_fd);
	maps_fd = -1;
}

/* A string is complete at its NUL; only the newest chunk needs a look. */
struct str_state {
	size_t seen;
};

static bool str_done(const char *buf, size_t len, void *arg)
{
	struct str_state *st = arg;
	bool nul = memchr(buf + st->seen, '\0', len - st->seen);

	st->seen = len;
	return nul;
}

static size_t str_measure(const char *b, size_t len)
{
	const char *nul = memchr(b, '\0', len);

	return nul ? (size_t)(nul - b) + 1 : 0;
}

int arg_copy_string(const char *s, char **out)
{
	static const struct arg_kind kind = {ARG_STRING_MAX, str_done, str_measure};
	struct arg_reader r = {0};
	struct str_state st = {0};
	size_t len;
	char *buf;
	int err;

	err = read_arg(&r, s, &kind, &st, &buf, &len);
	if (err)
		return err;
	if (!len || !memchr(buf, '\0', len)) {
		free(buf);
		return -EFAULT;
	}
	*out = buf;
	return 0;
}

/* The buffer is complete after its count and 2 x count strings (envbuf.h). */
struct env_state {
	size_t pos, strings;
};

static bool env_done(const char *buf, size_t len, void *arg)
{
	struct env_state *st = arg;
	uint32_t count;
	const char *nul;

	if (len < sizeof(count))
		return false;
	memcpy(&count, buf, sizeof(count));
	if (!st->pos)
		st->pos = sizeof(count);
	while (st->strings < 2 * (size_t)count) {
		nul = memchr(buf + st->pos, '\0', len - st->pos);
		if (!nul)
			return false;
		st->pos = (size_t)(nul - buf) + 1;
		st->strings++;
	}
	return true;
}

static size_t env_measure(const char *b, size_t len)
{
	struct env_state st = {0};

	return env_done(b, len, &st) ? st.pos : 0;
}

int arg_copy_envbuf(const char *env, char **out, size_t *len)
{
	static const struct arg_kind kind = {ARG_ENVBUF_MAX, env_done, env_measure};
	struct arg_reader r = {0};
	struct env_state st = {0};
	char *buf;
	int err;

	err = read_arg(&r, env, &kind, &st, &buf, len);
	if (err)
		return err;
	if (!*len) {
		free(buf);
		return -EFAULT;
	}
	*out = buf;
	return 0;
}

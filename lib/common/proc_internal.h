/* SPDX-License-Identifier: MIT */
/*
 * What the /proc readers (proc_*.c) share and nobody else uses: a cursor
 * over text with the tokens the kernel writes, growing arrays, and the
 * paths and files of one pid. Libc only.
 */
#ifndef RA_COMMON_PROC_INTERNAL_H
#define RA_COMMON_PROC_INTERNAL_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "procfs.h"

/* ---- tokens ---- */

struct ra_cursor {
	const char *p, *end;
};

static inline int ra_hexval(char ch)
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
static inline int ra_cursor_number(struct ra_cursor *c, unsigned int base, uint64_t *v)
{
	const char *start = c->p;
	uint64_t x = 0;
	int d;

	while (c->p < c->end && (d = ra_hexval(*c->p)) >= 0 && (unsigned int)d < base) {
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

static inline int ra_cursor_expect(struct ra_cursor *c, char ch)
{
	if (c->p == c->end || *c->p != ch)
		return -EINVAL;
	c->p++;
	return 0;
}

static inline void ra_cursor_skip_blanks(struct ra_cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

/* Next line of [*p, end) without its '\n'; false at the end. */
static inline bool ra_next_line(const char **p, const char *end, struct ra_cursor *line)
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

/* Decimal pid in 1..INT_MAX. */
static inline int ra_cursor_pid(struct ra_cursor *c, pid_t *pid)
{
	uint64_t v;

	if (ra_cursor_number(c, 10, &v) < 0 || v == 0 || v > INT_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

/* Double *cap (first: the first capacity) for elements of size bytes. */
static inline int ra_grow(void **v, size_t *cap, size_t size, size_t first)
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

/* ---- one pid's files (proc_file.c) ---- */

/* procfs, or "/proc" when NULL. */
const char *ra_proc_root(const char *procfs);

/*
 * A missing /proc/PID/FILE means either that the process is gone or that the
 * kernel lacks the file; err (-ENOENT) becomes -ESRCH only in the first case.
 */
int ra_proc_gone_or(const char *procfs, pid_t pid, int err);

#endif

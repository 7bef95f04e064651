/* SPDX-License-Identifier: MIT */
/* /proc/PID/maps and /proc/PID/auxv (see proc_file.c on what the parsers accept). */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "proc_internal.h"

/* ---- maps ---- */

static int perms(struct ra_cursor *c, struct ra_map *m)
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
static int map_path(struct ra_cursor *c, struct ra_map *m)
{
	static const char del[] = " (deleted)";
	const size_t dlen = sizeof(del) - 1;
	size_t len;

	if (c->p < c->end && ra_cursor_expect(c, ' ') < 0)
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

static int map_line(struct ra_cursor *c, struct ra_map *m)
{
	uint64_t major, minor;

	memset(m, 0, sizeof(*m));
	if (ra_cursor_number(c, 16, &m->start) || ra_cursor_expect(c, '-') ||
	    ra_cursor_number(c, 16, &m->end) || ra_cursor_expect(c, ' ') || perms(c, m) ||
	    ra_cursor_expect(c, ' ') || ra_cursor_number(c, 16, &m->offset) ||
	    ra_cursor_expect(c, ' ') || ra_cursor_number(c, 16, &major) ||
	    ra_cursor_expect(c, ':') || ra_cursor_number(c, 16, &minor) ||
	    ra_cursor_expect(c, ' ') || ra_cursor_number(c, 10, &m->inode))
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
	struct ra_maps m = {NULL, 0};
	struct ra_cursor line;
	size_t cap = 0;
	int r = 0;

	out->v = NULL;
	out->n = 0;
	if (!text)
		return len ? -EINVAL : 0;
	while (ra_next_line(&p, end, &line)) {
		if (m.n == cap && (r = ra_grow((void **)&m.v, &cap, sizeof(*m.v), 64)) < 0)
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
	r = ra_proc_read(procfs, pid, "maps", &text, &len);
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

	r = ra_proc_read(procfs, pid, "auxv", &data, &len);
	if (r < 0)
		return r;
	r = ra_auxv_parse(data, len, type, val);
	free(data);
	return r;
}

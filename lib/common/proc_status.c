/* SPDX-License-Identifier: MIT */
/* /proc/PID/status and /proc/PID/stat (see proc_file.c on what the parsers accept). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "proc_internal.h"

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
static int numbers(struct ra_cursor *c, uint64_t *v, int max, uint64_t limit, int *count)
{
	int n = 0;

	for (ra_cursor_skip_blanks(c); c->p < c->end; ra_cursor_skip_blanks(c)) {
		if (n == max)
			return -EOVERFLOW;
		if (ra_cursor_number(c, 10, &v[n]) < 0 || v[n] > limit)
			return -EINVAL;
		if (c->p < c->end && *c->p != ' ' && *c->p != '\t')
			return -EINVAL;
		n++;
	}
	*count = n;
	return n ? 0 : -EINVAL;
}

static int one_pid(struct ra_cursor *c, pid_t *pid)
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
static int sig_mask(struct ra_cursor *c, uint64_t *mask)
{
	ra_cursor_skip_blanks(c);
	if (ra_cursor_number(c, 16, mask) < 0)
		return -EINVAL;
	ra_cursor_skip_blanks(c);
	return c->p == c->end ? 0 : -EINVAL;
}

static int status_value(const char *key, size_t klen, struct ra_cursor *c, struct ra_status *st)
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
		ra_cursor_skip_blanks(c);
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
	struct ra_cursor line, value;
	int seen = 0, r;

	memset(st, 0, sizeof(*st));
	if (!text)
		return -EINVAL;
	while (ra_next_line(&p, text + len, &line)) {
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
	r = ra_proc_read(procfs, pid, "status", &text, &len);
	if (r < 0)
		return r;
	r = ra_status_parse(text, len, st);
	free(text);
	return r;
}

int ra_status_value_parse(const char *text, size_t len, const char *key, char **out)
{
	const char *p = text;
	size_t klen = key ? strlen(key) : 0;
	struct ra_cursor line;

	*out = NULL;
	if (!text || !klen)
		return -EINVAL;
	while (ra_next_line(&p, text + len, &line)) {
		if ((size_t)(line.end - line.p) <= klen || line.p[klen] != ':' ||
		    memcmp(line.p, key, klen))
			continue;
		line.p += klen + 1;
		ra_cursor_skip_blanks(&line);
		*out = strndup(line.p, (size_t)(line.end - line.p));
		return *out ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

int ra_status_value(const char *procfs, pid_t pid, const char *key, char **out)
{
	char *text;
	size_t len;
	int r;

	*out = NULL;
	r = ra_proc_read(procfs, pid, "status", &text, &len);
	if (r < 0)
		return r;
	r = ra_status_value_parse(text, len, key, out);
	free(text);
	return r;
}

/* ---- stat ---- */

/* Next space-separated field (fields after comm never contain spaces). */
static int stat_field(struct ra_cursor *c, struct ra_cursor *field)
{
	if (ra_cursor_expect(c, ' ') < 0)
		return -EINVAL;
	field->p = c->p;
	while (c->p < c->end && *c->p != ' ' && *c->p != '\n')
		c->p++;
	field->end = c->p;
	return field->p == field->end ? -EINVAL : 0;
}

static int stat_value(int idx, struct ra_cursor *f, struct ra_stat *st)
{
	uint64_t v;

	switch (idx) {
	case 3:
		if (f->end - f->p != 1)
			return -EINVAL;
		st->state = *f->p;
		return 0;
	case 4:
		if (ra_cursor_number(f, 10, &v) < 0 || f->p != f->end || v > INT_MAX)
			return -EINVAL;
		st->ppid = (pid_t)v;
		return 0;
	case 22:
		return ra_cursor_number(f, 10, &st->starttime) < 0 || f->p != f->end ? -EINVAL : 0;
	}
	return 0;
}

int ra_stat_parse(const char *text, size_t len, struct ra_stat *st)
{
	struct ra_cursor c = {text, text + len}, f;
	const char *rparen;
	uint64_t pid;
	int idx;

	memset(st, 0, sizeof(*st));
	if (!text)
		return -EINVAL;
	/* comm is written raw: it may hold spaces and ')', so its end is the last ')'. */
	rparen = memrchr(text, ')', len);
	if (ra_cursor_number(&c, 10, &pid) < 0 || ra_cursor_expect(&c, ' ') < 0 ||
	    ra_cursor_expect(&c, '(') < 0 || !rparen || rparen < c.p)
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
	r = ra_proc_read(procfs, pid, "stat", &text, &len);
	if (r < 0)
		return r;
	r = ra_stat_parse(text, len, st);
	free(text);
	return r;
}

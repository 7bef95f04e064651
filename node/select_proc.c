/* SPDX-License-Identifier: MIT */
/*
 * The selectors' view of one process (status, exe name, environ, read
 * under sel->procfs with the common /proc readers), who we are (our own
 * processes are never selected), and the pid sets a selection is built in.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "select_base.h"

/* ---- pid sets ---- */

int rn_pidset_add(struct pidset *s, pid_t pid)
{
	pid_t *nv;
	size_t ncap;

	if (s->n == s->cap) {
		ncap = s->cap ? s->cap * 2 : 64;
		nv = realloc(s->v, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = pid;
	return 0;
}

static int pidset_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

void rn_pidset_sort(struct pidset *s)
{
	size_t i, n = 0;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), pidset_cmp);
	for (i = 0; i < s->n; i++)
		if (!n || s->v[n - 1] != s->v[i])
			s->v[n++] = s->v[i];
	s->n = n;
}

bool rn_pidset_has(const struct pidset *s, pid_t pid)
{
	return s->n && bsearch(&pid, s->v, s->n, sizeof(*s->v), pidset_cmp);
}

int rn_pidset_add_all(struct pidset *s, const pid_t *v, size_t n)
{
	size_t i;
	int r = 0;

	for (i = 0; i < n && r == 0; i++)
		r = rn_pidset_add(s, v[i]);
	return r;
}

void rn_pidset_free(struct pidset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ---- one process ---- */

const char *rn_sel_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Unreadable (another user's process) and empty (kernel thread, zombie) look the same. */
const char *rn_sel_proc_env(const struct sel_ctx *c, struct sel_proc *p, size_t *len)
{
	if (!p->env_read) {
		p->env_read = true;
		if (ra_proc_read(c->procfs, p->pid, "environ", &p->env, &p->env_len) < 0) {
			p->env = NULL;
			p->env_len = 0;
		}
	}
	*len = p->env_len;
	return p->env;
}

/*
 * The basename of argv[0] (the cmdline's first string) into buf: 1 if there
 * is one, 0 for an empty cmdline (a kernel thread, a zombie), -1 unreadable.
 */
static int cmdline_arg0(const struct sel_ctx *c, pid_t pid, char *buf, size_t size)
{
	char *text;
	size_t len;

	if (ra_proc_read(c->procfs, pid, "cmdline", &text, &len) < 0)
		return -1;
	if (!len || !text[0]) {
		free(text);
		return 0;
	}
	/* ra_proc_read ends the text with a NUL: argv[0] is its first string. */
	snprintf(buf, size, "%s", rn_sel_base_name(text));
	free(text);
	return 1;
}

/*
 * exe basename; where the link is unreadable (another user's process),
 * argv[0]'s basename; else (a kernel thread, no cmdline) comm, which only
 * names the process: --exe never matches it (the kernel cuts it to 15 bytes).
 */
static void proc_exe(const struct sel_ctx *c, struct sel_proc *p)
{
	char link[PATH_MAX];
	int r, a;

	r = ra_proc_exe(c->procfs, p->pid, link, sizeof(link));
	if (r >= 0) {
		snprintf(p->exe, sizeof(p->exe), "%.*s", (int)sizeof(p->exe) - 1,
			 rn_sel_base_name(link));
		p->exe_known = true;
		return;
	}
	a = cmdline_arg0(c, p->pid, link, sizeof(link));
	p->kthread = r == -ENOENT && a <= 0;
	if (a > 0 && strlen(link) < sizeof(p->exe)) {
		snprintf(p->exe, sizeof(p->exe), "%s", link);
		p->exe_known = true;
		return;
	}
	if (ra_proc_comm(c->procfs, p->pid, p->exe, sizeof(p->exe)) < 0)
		snprintf(p->exe, sizeof(p->exe), "%s", p->st.name);
	p->exe_from_comm = true;
}

int rn_sel_proc_load(const struct sel_ctx *c, pid_t pid, struct sel_proc *p)
{
	int r;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	r = ra_status_read(c->procfs, pid, &p->st);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	proc_exe(c, p);
	return 0;
}

void rn_sel_proc_free(struct sel_proc *p)
{
	free(p->env);
	p->env = NULL;
}

bool rn_sel_proc_eligible(const struct sel_ctx *c, const struct sel_proc *p)
{
	if (p->pid == 1 || p->kthread || rn_pidset_has(&c->mine, p->pid))
		return false;
	return p->st.state != 'Z' && p->st.state != 'X' && p->st.state != 'x';
}

/* ---- who we are ---- */

bool rn_sel_in_scope(const struct sel_ctx *c, uid_t uid)
{
	return c->scope_uid < 0 || uid == (uid_t)c->scope_uid;
}

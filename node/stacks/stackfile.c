/* SPDX-License-Identifier: MIT */
/* The stack tool's file, read back (stackfile.h). */
#include "stackfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stacks_format.h"

struct reader {
	const char *path;
	unsigned lineno;
	char *err;
	size_t errlen;
};

static int fail(struct reader *r, const char *what)
{
	snprintf(r->err, r->errlen, "%s:%u: %s", r->path, r->lineno, what);
	return -1;
}

static void *grow(void *p, size_t n, size_t size)
{
	/* Powers of two: n is the count before the new item. */
	if (n && (n & (n - 1)))
		return p;
	return realloc(p, (n ? 2 * n : 8) * size);
}

/* " 7f00 7f08 ..." [" ..."] into s. */
static int parse_frames(struct reader *r, char *p, struct ra_stack *s)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(p, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *end;
		uint64_t *grown;

		if (!strcmp(tok, "...")) {
			s->truncated = true;
			continue;
		}
		errno = 0;
		uint64_t a = strtoull(tok, &end, 16);
		if (errno || *end)
			return fail(r, "bad address");
		grown = grow(s->frames, s->n, sizeof(*grown));
		if (!grown)
			return fail(r, "out of memory");
		s->frames = grown;
		s->frames[s->n++] = a;
	}
	return 0;
}

/* "pyframes <n> <native>:<code>:<instr> ..." [" ..."]: the last stack's Python frames. */
static int add_pyframes(struct reader *r, struct ra_stackfile *f, char *line)
{
	char *tok, *save = NULL;
	struct ra_stack *s;
	unsigned long n;

	if (!f->n_stacks || sscanf(line, "pyframes %lu", &n) != 1 || n > 4096)
		return fail(r, "bad pyframes line (or not after a stack)");
	s = &f->stacks[f->n_stacks - 1];
	if (s->py)
		return fail(r, "two pyframes lines for one stack");
	s->py = calloc(n ? n : 1, sizeof(*s->py));
	if (!s->py)
		return fail(r, "out of memory");
	strtok_r(line, " \n", &save);
	strtok_r(NULL, " \n", &save);
	while ((tok = strtok_r(NULL, " \n", &save))) {
		struct ra_pyframe *p = &s->py[s->n_py];
		unsigned long long code, instr;
		long long native = -1;

		if (!strcmp(tok, "...")) {
			s->py_truncated = true;
			continue;
		}
		if (s->n_py == n || (sscanf(tok, "%lld:%llx:%llx", &native, &code, &instr) != 3 &&
				     sscanf(tok, "-:%llx:%llx", &code, &instr) != 2))
			return fail(r, "bad Python frame");
		p->native = tok[0] == '-' ? -1 : native;
		p->code = code;
		p->instr = instr;
		s->n_py++;
	}
	return 0;
}

static int add_stack(struct reader *r, struct ra_stackfile *f, char *line, bool snap)
{
	struct ra_stack *grown, *s;
	unsigned long long ns;
	int tid, off = 0;

	grown = grow(f->stacks, f->n_stacks, sizeof(*grown));
	if (!grown)
		return fail(r, "out of memory");
	f->stacks = grown;
	s = &f->stacks[f->n_stacks];
	memset(s, 0, sizeof(*s));
	s->snapshot = snap;
	if (snap ? sscanf(line, "snapshot %d %15s %llu%n", &tid, s->status, &ns, &off) != 3
		 : sscanf(line, "sample %d %llu%n", &tid, &ns, &off) != 2)
		return fail(r, snap ? "bad snapshot line" : "bad sample line");
	s->tid = tid;
	s->ns = ns;
	f->n_stacks++;
	return parse_frames(r, line + off, s);
}

static int add_thread(struct reader *r, struct ra_stackfile *f, const char *line)
{
	struct ra_stack_thread *grown, *t;
	char state[8], cpu[24];
	int tid, off = 0;

	grown = grow(f->threads, f->n_threads, sizeof(*grown));
	if (!grown)
		return fail(r, "out of memory");
	f->threads = grown;
	t = &f->threads[f->n_threads];
	memset(t, 0, sizeof(*t));
	if (sscanf(line, "thread %d %7s %23s %n", &tid, state, cpu, &off) != 3 || !off)
		return fail(r, "bad thread line");
	t->tid = tid;
	t->cpu_ns = strcmp(cpu, "-") ? strtoll(cpu, NULL, 10) : -1;
	t->ended = !strcmp(state, "ended");
	snprintf(t->name, sizeof(t->name), "%.*s", (int)strcspn(line + off, "\n"), line + off);
	f->n_threads++;
	return 0;
}

static int header_line(struct ra_stackfile *f, const char *line)
{
	unsigned long long v, w = 0;
	int i;

	if (sscanf(line, "pid %d", &i) == 1)
		f->pid = i;
	else if (sscanf(line, "host %255s", f->host) == 1)
		;
	else if (sscanf(line, "signal %d", &i) == 1)
		f->sig = i;
	else if (sscanf(line, "hz %llu", &v) == 1)
		f->hz = (long)v;
	else if (sscanf(line, "dropped %llu", &v) == 1)
		f->dropped = (unsigned long)v;
	else if (sscanf(line, "overruns %llu", &v) == 1)
		f->overruns = (unsigned long)v;
	else if (sscanf(line, "attach_ns %llu", &v) == 1)
		f->attach_ns = v;
	else if (sscanf(line, "detach_ns %llu", &v) == 1)
		f->detach_ns = v;
	else if (sscanf(line, "python_version %31s %15s %llx %llx", f->py_version, f->py_layout, &v,
			&w) >= 3)
		f->py_code_type = v, f->py_runtime = w;
	else if (!strncmp(line, "python_off ", 11))
		snprintf(f->py_off, sizeof(f->py_off), "%.*s", (int)strcspn(line + 11, "\n"),
			 line + 11);
	else if (!strncmp(line, "note ", 5))
		snprintf(f->note, sizeof(f->note), "%.*s", (int)strcspn(line + 5, "\n"), line + 5);
	else
		return 0; /* unknown lines are for later versions */
	return 1;
}

/* The rest of the file after "maps", up to its last line "end". */
static int read_maps(struct reader *r, struct ra_stackfile *f, FILE *in)
{
	size_t cap = 0, len = 0;
	char *line = NULL;
	ssize_t n;
	bool ended = false;

	while ((n = getline(&line, &cap, in)) > 0) {
		r->lineno++;
		if (!strcmp(line, "end\n") || !strcmp(line, "end")) {
			ended = true;
			break;
		}
		char *grown = realloc(f->maps, len + (size_t)n + 1);
		if (!grown) {
			free(line);
			return fail(r, "out of memory");
		}
		f->maps = grown;
		memcpy(f->maps + len, line, (size_t)n + 1);
		len += (size_t)n;
	}
	free(line);
	if (!ended)
		return fail(r, "no \"end\" line: the file is truncated");
	if (!f->maps)
		f->maps = strdup("");
	return f->maps ? 0 : fail(r, "out of memory");
}

static int read_body(struct reader *r, struct ra_stackfile *f, FILE *in)
{
	size_t cap = 0;
	char *line = NULL;
	int rc = -1;

	while (getline(&line, &cap, in) > 0) {
		r->lineno++;
		if (!strncmp(line, "thread ", 7))
			rc = add_thread(r, f, line);
		else if (!strncmp(line, "snapshot ", 9))
			rc = add_stack(r, f, line, true);
		else if (!strncmp(line, "sample ", 7))
			rc = add_stack(r, f, line, false);
		else if (!strncmp(line, "pyframes ", 9))
			rc = add_pyframes(r, f, line);
		else if (!strcmp(line, "maps\n")) {
			rc = read_maps(r, f, in);
			goto out;
		} else {
			header_line(f, line);
			rc = 0;
		}
		if (rc)
			goto out;
	}
	rc = fail(r, "no \"maps\" line: the file is truncated");
out:
	free(line);
	return rc;
}

/*
 * path opened for reading as a file others may have planted: no symbolic
 * link, never blocking (a FIFO, a device), a regular file owned by owner
 * (unless RA_STACKFILE_ANY_OWNER) and at most RA_STACKFILE_MAX bytes. The
 * stream, or NULL with the reason in err.
 */
static FILE *open_checked(const char *path, uid_t owner, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	const char *why = NULL;
	struct stat st;
	FILE *in;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path,
			 errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st))
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = S_ISFIFO(st.st_mode) ? "a FIFO, not a regular file: refused"
					   : "not a regular file: refused";
	else if (owner != RA_STACKFILE_ANY_OWNER && st.st_uid != owner)
		snprintf(err, errlen,
			 "%s: owned by uid %u, not the target's user (uid %u): refused", path,
			 (unsigned)st.st_uid, (unsigned)owner);
	else if ((uint64_t)st.st_size > RA_STACKFILE_MAX)
		snprintf(err, errlen,
			 "%s: %llu bytes, more than any stack file (%llu MiB): refused", path,
			 (unsigned long long)st.st_size,
			 (unsigned long long)(RA_STACKFILE_MAX >> 20));
	else if ((in = fdopen(fd, "re")))
		return in;
	else
		why = strerror(errno);
	if (why)
		snprintf(err, errlen, "%s: %s", path, why);
	close(fd);
	return NULL;
}

int ra_stackfile_read_owned(const char *path, uid_t owner, struct ra_stackfile *f, char *err,
			    size_t errlen)
{
	struct reader r = {path, 1, err, errlen};
	char first[64];
	FILE *in;
	int rc;

	memset(f, 0, sizeof(*f));
	in = open_checked(path, owner, err, errlen);
	if (!in)
		return -1;
	if (!fgets(first, sizeof(first), in) || strcmp(first, RS_MAGIC "\n")) {
		fclose(in);
		return fail(&r, "not a stack file (first line is not \"" RS_MAGIC "\")");
	}
	rc = read_body(&r, f, in);
	fclose(in);
	if (rc)
		ra_stackfile_free(f);
	return rc;
}

int ra_stackfile_read(const char *path, struct ra_stackfile *f, char *err, size_t errlen)
{
	return ra_stackfile_read_owned(path, RA_STACKFILE_ANY_OWNER, f, err, errlen);
}

void ra_stackfile_free(struct ra_stackfile *f)
{
	if (f->py && f->py_free)
		f->py_free(f->py);
	for (size_t i = 0; i < f->n_stacks; i++) {
		free(f->stacks[i].frames);
		free(f->stacks[i].py);
	}
	free(f->stacks);
	free(f->threads);
	free(f->maps);
	memset(f, 0, sizeof(*f));
}

const char *ra_stackfile_thread_name(const struct ra_stackfile *f, pid_t tid)
{
	for (size_t i = 0; i < f->n_threads; i++)
		if (f->threads[i].tid == tid)
			return f->threads[i].name;
	return "?";
}

/* SPDX-License-Identifier: MIT */
/* Python frames named from the target's memory (pyframes.h). */
#include "pyframes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "stacks_pylayout.h"

/* A code object once read: its names and its location table. */
struct code {
	uint64_t addr;
	bool ok;
	int firstline;
	char name[160], file[256];
	uint8_t *table;
	size_t n;
};

struct py {
	pid_t pid;
	const struct py_layout *lay;
	struct py_layout debug; /* 3.13: from the target's _Py_DebugOffsets */
	uint64_t code_type;
	struct code *codes;
	size_t n, cap;
};

/* The location table read at most (bytes), and a name or file. */
#define PY_MAX_TABLE (1u << 20)
#define PY_MAX_STR 255

static bool peek(const struct py *py, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};

	return addr && process_vm_readv(py->pid, &local, 1, &remote, 1, 0) == (ssize_t)n;
}

static uint64_t peek_word(const struct py *py, uint64_t addr)
{
	uint64_t v = 0;

	return peek(py, addr, &v, sizeof(v)) ? v : 0;
}

/* Latin-1 (one byte a character) as UTF-8. */
static void latin1_utf8(const uint8_t *in, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 3 < len; i++) {
		if (in[i] < 0x80) {
			out[o++] = (char)in[i];
		} else {
			out[o++] = (char)(0xc0 | (in[i] >> 6));
			out[o++] = (char)(0x80 | (in[i] & 0x3f));
		}
	}
	out[o] = '\0';
}

/* A str object's text: compact ASCII or Latin-1 (names and paths); false otherwise. */
static bool read_str(const struct py *py, uint64_t obj, char *out, size_t len)
{
	const struct py_layout *l = py->lay;
	uint8_t raw[PY_MAX_STR];
	uint64_t n = peek_word(py, obj + l->str_length);
	uint32_t state = 0;
	unsigned kind;

	if (!peek(py, obj + l->str_state, &state, sizeof(state)) || !(state & (1u << 5)))
		return false;
	kind = (state >> 2) & 7;
	if (kind != 1)
		return false;
	if (n > sizeof(raw))
		n = sizeof(raw);
	if (!peek(py, obj + ((state & (1u << 6)) ? l->str_ascii_data : l->str_compact_data), raw,
		  n))
		return false;
	latin1_utf8(raw, n, out, len);
	return true;
}

static void read_code(const struct py *py, struct code *c)
{
	const struct py_layout *l = py->lay;
	uint64_t table, size;
	int32_t first = 0;

	c->ok = false;
	if (peek_word(py, c->addr + l->ob_type) != py->code_type ||
	    !peek(py, c->addr + l->code_firstlineno, &first, sizeof(first)))
		return;
	c->firstline = first;
	if (!read_str(py, peek_word(py, c->addr + l->code_qualname), c->name, sizeof(c->name)) &&
	    !read_str(py, peek_word(py, c->addr + l->code_name), c->name, sizeof(c->name)))
		snprintf(c->name, sizeof(c->name), "?");
	if (!read_str(py, peek_word(py, c->addr + l->code_filename), c->file, sizeof(c->file)))
		snprintf(c->file, sizeof(c->file), "?");
	table = peek_word(py, c->addr + l->code_linetable);
	size = table ? peek_word(py, table + l->bytes_size) : 0;
	if (size && size <= PY_MAX_TABLE && (c->table = malloc(size))) {
		if (peek(py, table + l->bytes_data, c->table, size))
			c->n = size;
	}
	c->ok = true;
}

/* The code object at addr, read once; NULL: no memory. */
static struct code *code_of(struct py *py, uint64_t addr)
{
	struct code *c;

	for (size_t i = 0; i < py->n; i++)
		if (py->codes[i].addr == addr)
			return &py->codes[i];
	if (py->n == py->cap) {
		size_t cap = py->cap ? 2 * py->cap : 64;
		struct code *grown = realloc(py->codes, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		py->codes = grown;
		py->cap = cap;
	}
	c = &py->codes[py->n++];
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	read_code(py, c);
	return c;
}

static void py_free(void *p)
{
	struct py *py = p;

	for (size_t i = 0; i < py->n; i++)
		free(py->codes[i].table);
	free(py->codes);
	free(py);
}

int ra_py_debug_layout(pid_t pid, uint64_t runtime, struct py_layout *out)
{
	struct py py = {.pid = pid};
	uint64_t w[PY_DO_WORDS];

	if (!peek(&py, runtime, w, sizeof(w)))
		return -1;
	return py_layout_from_debug(w, out);
}

/* 3.13: read the target's _Py_DebugOffsets, as the tool did at attach. */
static const struct py_layout *debug_layout(struct py *py, uint64_t runtime)
{
	return ra_py_debug_layout(py->pid, runtime, &py->debug) ? NULL : &py->debug;
}

int ra_py_open(struct ra_stackfile *f, pid_t pid)
{
	struct py *py;

	if (f->py || !f->py_layout[0] || !strcmp(f->py_layout, "-"))
		return f->py ? 0 : -1;
	py = calloc(1, sizeof(*py));
	if (!py)
		return -1;
	py->pid = pid;
	py->code_type = f->py_code_type;
	py->lay = py_layout_named(f->py_layout);
	if (!py->lay && !strcmp(f->py_layout, "3.13"))
		py->lay = debug_layout(py, f->py_runtime);
	if (!py->lay) {
		free(py);
		snprintf(f->py_off, sizeof(f->py_off), "python %s: layout %s not known here",
			 f->py_version, f->py_layout);
		return -1;
	}
	f->py = py;
	f->py_free = py_free;
	return 0;
}

/* An unsigned varint (6-bit chunks, least significant first, bit 6: more); -1 past the end. */
static long varint(const uint8_t *t, size_t n, size_t *i)
{
	unsigned long v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*i >= n || shift > 30)
			return -1;
		b = t[(*i)++];
		v |= (unsigned long)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return (long)v;
}

static long svarint(const uint8_t *t, size_t n, size_t *i)
{
	long u = varint(t, n, i);

	return u < 0 ? 0 : (u & 1) ? -(u >> 1) : (u >> 1);
}

/* The start line's change of one entry of code code; its other bytes skipped. */
static long entry_delta(int code, const uint8_t *t, size_t n, size_t *i)
{
	long d = 0;

	if (code == 15)
		return 0;
	if (code == 14) {
		d = svarint(t, n, i);
		for (int k = 0; k < 3; k++)
			varint(t, n, i);
	} else if (code == 13) {
		d = svarint(t, n, i);
	} else if (code >= 10) {
		d = code - 10;
		*i += 2;
	} else {
		*i += 1;
	}
	return d;
}

int ra_py_line(const uint8_t *t, size_t n, int firstline, long addr)
{
	long line = firstline, at = 0;
	size_t i = 0;

	if (addr < 0)
		return firstline;
	while (i < n) {
		uint8_t first = t[i++];
		int code = (first >> 3) & 15, len = (first & 7) + 1;

		if (!(first & 0x80))
			return -1;
		line += entry_delta(code, t, n, &i);
		if (addr < at + len)
			return code == 15 ? -1 : (int)line;
		at += len;
	}
	return -1;
}

void ra_py_name(const struct ra_stackfile *f, const struct ra_pyframe *p, char *buf, size_t len)
{
	struct py *py = f->py;
	struct code *c = py ? code_of(py, p->code) : NULL;
	const char *base;
	long addr;
	int line;

	if (!c || !c->ok) {
		snprintf(buf, len, "[python ?]");
		return;
	}
	/* Code units (2 bytes) from instruction 0; a new frame's may be just before it. */
	addr = ((long)(p->instr - (c->addr + py->lay->code_adaptive))) / 2;
	line = c->n ? ra_py_line(c->table, c->n, c->firstline, addr) : -1;
	base = strrchr(c->file, '/');
	base = base ? base + 1 : c->file;
	if (line > 0)
		snprintf(buf, len, "%s (%s:%d)", c->name, base, line);
	else
		snprintf(buf, len, "%s (%s)", c->name, base);
	for (char *q = buf; *q; q++)
		if (*q == ';' || *q == '\n')
			*q = ',';
}

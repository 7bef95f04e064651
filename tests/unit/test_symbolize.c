/* SPDX-License-Identifier: MIT */
/*
 * The node's symbolizer (node/stacks/symbolize.h) and the stack file reader
 * (stackfile.h), on real programs built by the tests (tests/stacks/sym_prog.c
 * and .cc, with -g, without it, and stripped). Each program prints addresses
 * with the names and lines they must get, then its maps, and exits; the
 * names are looked up after it is gone, as the node does.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../skip.h"
#include "debugfile.h"
#include "stackfile.h"
#include "symbolize.h"

struct item {
	char kind[16];
	uint64_t addr;
	char name[128], outer[128];
	int line, outer_line;
};

struct run {
	struct item items[16];
	int n;
	char *maps;
	struct ra_symbolizer *sym;
};

static void run_program(const char *path, struct run *r)
{
	char line[4096];
	size_t len = 0;
	bool in_maps = false;
	FILE *p;

	memset(r, 0, sizeof(*r));
	p = popen(path, "r");
	assert_non_null(p);
	r->maps = calloc(1, 1);
	while (fgets(line, sizeof(line), p)) {
		struct item *it = &r->items[r->n];
		unsigned long long a;

		if (in_maps) {
			if (!strcmp(line, "end\n"))
				break;
			r->maps = realloc(r->maps, len + strlen(line) + 1);
			strcpy(r->maps + len, line);
			len += strlen(line);
		} else if (!strcmp(line, "maps\n")) {
			in_maps = true;
		} else if (r->n < 16 &&
			   sscanf(line, "%15s %llx %127s %d %127s %d", it->kind, &a, it->name,
				  &it->line, it->outer, &it->outer_line) >= 3) {
			it->addr = a;
			r->n++;
		}
	}
	assert_int_equal(pclose(p), 0);
	assert_true(in_maps && r->n > 0);
	r->sym = ra_symbolizer_new(NULL);
	assert_non_null(r->sym);
	assert_int_equal(ra_symbolizer_add_maps(r->sym, r->maps), 0);
}

static void run_free(struct run *r)
{
	ra_symbolizer_free(r->sym);
	free(r->maps);
}

static const struct item *item_of(const struct run *r, const char *kind, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->items[i].kind, kind) && (!name || !strcmp(r->items[i].name, name)))
			return &r->items[i];
	fail_msg("the program printed no '%s %s' line", kind, name ? name : "");
	return NULL;
}

static int lookup(struct run *r, const struct item *it, struct ra_frame *f, int max)
{
	int n = ra_symbolize(r->sym, it->addr,
			     strcmp(it->kind, "exact") && strcmp(it->kind, "libc"), f, max);

	assert_true(n >= 1);
	for (int i = 0; i < n; i++) {
		char buf[1200];

		ra_frame_format(&f[i], buf, sizeof(buf));
		printf("  %s %llx -> %s\n", it->kind, (unsigned long long)it->addr, buf);
	}
	return n;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && !strcmp(s + a - b, tail);
}

static const char *base(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

/* Names from the symbol tables: the same with and without -g. */
static void check_names(struct run *r, const char *prog)
{
	struct ra_frame f[8];
	const struct item *it;
	int n;

	it = item_of(r, "exact", "known_function");
	n = lookup(r, it, f, 8);
	assert_string_equal(f[n - 1].func, "known_function");
	assert_string_equal(f[n - 1].module, base(prog));
	it = item_of(r, "return", "caller_function");
	n = lookup(r, it, f, 8);
	assert_string_equal(f[n - 1].func, "caller_function");
	it = item_of(r, "inlined", NULL);
	n = lookup(r, it, f, 8);
	assert_string_equal(f[n - 1].func, "outer_function");
	it = item_of(r, "libc", NULL);
	n = lookup(r, it, f, 8);
	assert_non_null(strstr(f[n - 1].func, "getpid"));
	assert_non_null(strstr(f[n - 1].module, "libc"));
}

static void test_symbolize_c_with_g(void **state)
{
	struct ra_frame f[8];
	const struct item *it;
	struct run r;
	int n;

	(void)state;
	run_program(RA_SYM_C_G, &r);
	check_names(&r, RA_SYM_C_G);
	if (!ra_symbolizer_has_dwarf()) {
		run_free(&r);
		RA_SKIP("built without libdw (Debian libdw-dev): no file:line to check");
	}
	it = item_of(&r, "return", "caller_function");
	n = lookup(&r, it, f, 8);
	assert_true(ends_with(f[n - 1].file, "sym_prog.c"));
	assert_int_equal(f[n - 1].line, it->line);
	/* The inlined call, then the function it is inlined in, each at its own line. */
	it = item_of(&r, "inlined", NULL);
	n = lookup(&r, it, f, 8);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].func, "inlined_helper");
	assert_true(f[0].inlined);
	{
		char text[1200];

		ra_frame_format(&f[0], text, sizeof(text));
		assert_true(ends_with(text, " [inlined]"));
	}
	assert_int_equal(f[0].line, it->line);
	assert_string_equal(f[1].func, "outer_function");
	assert_false(f[1].inlined);
	assert_int_equal(f[1].line, it->outer_line);
	assert_true(ends_with(f[1].file, "sym_prog.c"));
	run_free(&r);
}

/* libc's debug file (build-id, /usr/lib/debug), if installed (Debian's libc6-dbg), if any. */
static int libc_debug_file(const struct run *r, char *path, size_t len)
{
	const char *p = strstr(r->maps, "/libc.so.6\n"), *start;
	Elf *elf;
	int fd, dfd = -1;

	if (!p)
		return -1;
	for (start = p; start > r->maps && start[-1] != ' '; start--)
		;
	snprintf(path, len, "%.*s", (int)(p + strlen("/libc.so.6") - start), start);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf) {
		dfd = ra_debugfile_open("", path, elf);
		elf_end(elf);
	}
	close(fd);
	return dfd;
}

/* A local function of libc, absent from its .dynsym, named by libc's separate debug file. */
static void test_symbolize_libc_from_debug_file(void **state)
{
	char libc[PATH_MAX];
	struct ra_frame f[8];
	struct run r;
	int n, dfd;

	(void)state;
	run_program(RA_SYM_C_NOG, &r);
	dfd = libc_debug_file(&r, libc, sizeof(libc));
	if (dfd < 0) {
		run_free(&r);
		RA_SKIP("no debug file for libc (Debian libc6-dbg; scripts/deps.sh installs it)%s",
			ra_symbolizer_has_dwarf() ? "" : ", or built without libdw");
	}
	close(dfd);
	n = lookup(&r, item_of(&r, "libcmain", NULL), f, 8);
	assert_string_equal(f[n - 1].func, "__libc_start_call_main");
	assert_string_equal(f[n - 1].module, "libc.so.6");
	assert_true(f[n - 1].file[0] && f[n - 1].line > 0);
	/* Aliases at one address: the exported name, not an internal one. */
	n = lookup(&r, item_of(&r, "libc", NULL), f, 8);
	assert_string_equal(f[n - 1].func, "getpid");
	run_free(&r);
}

static void test_symbolize_c_without_g(void **state)
{
	struct ra_frame f[8];
	struct run r;
	int n;

	(void)state;
	run_program(RA_SYM_C_NOG, &r);
	check_names(&r, RA_SYM_C_NOG);
	/* No DWARF: no line, no inlined frame. */
	n = lookup(&r, item_of(&r, "inlined", NULL), f, 8);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].file, "");
	assert_int_equal(f[0].line, 0);
	run_free(&r);
}

/* No symbol at all: the file and the address in it, the same as the unstripped copy's. */
static void test_symbolize_stripped_names_file_and_offset(void **state)
{
	struct ra_frame f[8], g[8];
	char buf[1200], want[600];
	struct run r, plain;

	(void)state;
	run_program(RA_SYM_C_STRIPPED, &r);
	run_program(RA_SYM_C_NOG, &plain);
	assert_int_equal(lookup(&r, item_of(&r, "exact", "known_function"), f, 8), 1);
	lookup(&plain, item_of(&plain, "exact", "known_function"), g, 8);
	assert_string_equal(f[0].func, "");
	assert_int_equal(f[0].offset, g[0].offset);
	ra_frame_format(&f[0], buf, sizeof(buf));
	snprintf(want, sizeof(want), "%s+0x%llx", base(RA_SYM_C_STRIPPED),
		 (unsigned long long)g[0].offset);
	assert_string_equal(buf, want);
	/* libc still has its .dynsym. */
	lookup(&r, item_of(&r, "libc", NULL), f, 8);
	assert_non_null(strstr(f[0].func, "getpid"));
	run_free(&r);
	run_free(&plain);
}

static void check_cxx(const char *prog, bool lines)
{
	static const char *const names[] = {"ns::twice<int>(int)", "ns::Widget::method(int)"};
	struct ra_frame f[8];
	const struct item *it;
	struct run r;
	int n;

	run_program(prog, &r);
	n = lookup(&r, item_of(&r, "exact", names[0]), f, 8);
	assert_true(ends_with(f[n - 1].func, names[0]));
	for (int i = 0; i < 2; i++) {
		it = item_of(&r, "return", names[i]);
		n = lookup(&r, it, f, 8);
		assert_true(ends_with(f[n - 1].func, names[i]));
		if (lines) {
			assert_true(ends_with(f[n - 1].file, "sym_prog.cc"));
			assert_int_equal(f[n - 1].line, it->line);
		}
	}
	run_free(&r);
}

static void test_symbolize_cxx_demangled_with_g(void **state)
{
	(void)state;
	check_cxx(RA_SYM_CXX_G, ra_symbolizer_has_dwarf());
	if (!ra_symbolizer_has_dwarf())
		RA_SKIP("built without libdw (Debian libdw-dev): no file:line to check");
}

static void test_symbolize_cxx_demangled_without_g(void **state)
{
	(void)state;
	check_cxx(RA_SYM_CXX_NOG, false);
}

static void test_demangle_only_cxx_names(void **state)
{
	char *d = ra_demangle("_ZN2ns6Widget6methodEi");

	(void)state;
	assert_non_null(d);
	assert_string_equal(d, "ns::Widget::method(int)");
	free(d);
	assert_null(ra_demangle("main"));
	assert_null(ra_demangle("_Znot a name"));
	assert_null(ra_demangle(NULL));
}

/* Addresses outside any file: named, never invented. */
static void test_symbolize_unmapped_and_special(void **state)
{
	struct ra_symbolizer *s = ra_symbolizer_new(NULL);
	struct ra_frame f[2];
	char buf[600];

	(void)state;
	assert_int_equal(ra_symbolizer_add_maps(s, "7fff0000-7fff2000 r-xp 00000000 00:00 0"
						   "                          [vdso]\n"
						   "garbage line\n"),
			 0);
	assert_int_equal(ra_symbolize(s, 0x7fff0010, false, f, 2), 1);
	ra_frame_format(&f[0], buf, sizeof(buf));
	assert_string_equal(buf, "[vdso]+0x10");
	assert_int_equal(ra_symbolize(s, 0x1234, false, f, 2), 1);
	ra_frame_format(&f[0], buf, sizeof(buf));
	assert_string_equal(buf, "[unknown]+0x1234");
	ra_symbolizer_free(s);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_stackfile_read_round_trip(void **state)
{
	char path[] = "/tmp/ra-stackfile-XXXXXX", err[256];
	struct ra_stackfile f;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_text(path, "rocattach-stacks 1\npid 42\nhost h1\nsignal 64 SIGRTMIN+30\nhz 99\n"
			 "max_frames 64\nattach_ns 10\ndetach_ns 20\ndropped 3\noverruns 4\n"
			 "future_key 1\nthread 43 live 5000 my thread\nthread 44 ended - w\n"
			 "snapshot 43 ok 11 4005 4006 ...\nsnapshot 44 noanswer 0\n"
			 "sample 43 12 4005\nmaps\n00400000-00401000 r-xp 0 00:00 0 /x\nend\n");
	assert_int_equal(ra_stackfile_read(path, &f, err, sizeof(err)), 0);
	assert_int_equal(f.pid, 42);
	assert_string_equal(f.host, "h1");
	assert_int_equal(f.sig, 64);
	assert_int_equal(f.hz, 99);
	assert_int_equal(f.dropped, 3);
	assert_int_equal(f.overruns, 4);
	assert_int_equal(f.n_threads, 2);
	assert_string_equal(ra_stackfile_thread_name(&f, 43), "my thread");
	assert_true(f.threads[1].ended);
	assert_int_equal(f.threads[0].cpu_ns, 5000);
	assert_int_equal(f.threads[1].cpu_ns, -1);
	assert_int_equal(f.n_stacks, 3);
	assert_true(f.stacks[0].snapshot && f.stacks[0].truncated);
	assert_int_equal(f.stacks[0].n, 2);
	assert_int_equal(f.stacks[0].frames[1], 0x4006);
	assert_string_equal(f.stacks[1].status, "noanswer");
	assert_int_equal(f.stacks[1].n, 0);
	assert_false(f.stacks[2].snapshot);
	assert_non_null(strstr(f.maps, "/x"));
	ra_stackfile_free(&f);
	/* Cut short: refused, with the reason. */
	write_text(path, "rocattach-stacks 1\npid 42\nsample 43 12 4005\n");
	assert_int_equal(ra_stackfile_read(path, &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated"));
	write_text(path, "something else\n");
	assert_int_equal(ra_stackfile_read(path, &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a stack file"));
	unlink(path);
}

/*
 * A file planted by another user: a FIFO (no writer: a blocking open would
 * never return), a symbolic link, a directory, a file of another owner, one
 * past the bound; each refused with its reason. A maps line naming a FIFO
 * is never opened as an ELF file either.
 */
static void test_stackfile_read_refuses_planted(void **state)
{
	char dir[] = "/tmp/ra-planted-XXXXXX", p[4][64], err[256];
	struct ra_stackfile f;
	struct ra_symbolizer *s;
	struct ra_frame fr[4];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 4; i++)
		snprintf(p[i], sizeof(p[i]), "%s/f%d", dir, i);
	assert_int_equal(mkfifo(p[0], 0600), 0);
	assert_int_equal(ra_stackfile_read(p[0], &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "a FIFO, not a regular file: refused"));
	write_text(p[1], "rocattach-stacks 1\npid 42\nmaps\nend\n");
	assert_int_equal(ra_stackfile_read_owned(p[1], getuid(), &f, err, sizeof(err)), 0);
	ra_stackfile_free(&f);
	assert_int_equal(ra_stackfile_read_owned(p[1], getuid() + 1, &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not the target's user"));
	assert_int_equal(symlink(p[1], p[2]), 0);
	assert_int_equal(ra_stackfile_read(p[2], &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "a symbolic link: refused"));
	assert_int_equal(ra_stackfile_read(dir, &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file: refused"));
	fd = open(p[3], O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)RA_STACKFILE_MAX + 1), 0);
	close(fd);
	assert_int_equal(ra_stackfile_read(p[3], &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than any stack file (256 MiB): refused"));
	s = ra_symbolizer_new(NULL);
	assert_non_null(s);
	snprintf(err, sizeof(err), "7f0000000000-7f0000001000 r-xp 00000000 00:00 7 %s\n", p[0]);
	assert_int_equal(ra_symbolizer_add_maps(s, err), 0);
	assert_int_equal(ra_symbolize(s, 0x7f0000000010ull, false, fr, 4), 1);
	ra_frame_format(&fr[0], err, sizeof(err));
	assert_string_equal(err, "f0+0x10"); /* named by its module, never read */
	ra_symbolizer_free(s);
	for (int i = 0; i < 4; i++)
		unlink(p[i]);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symbolize_c_with_g),
	    cmocka_unit_test(test_symbolize_libc_from_debug_file),
	    cmocka_unit_test(test_symbolize_c_without_g),
	    cmocka_unit_test(test_symbolize_stripped_names_file_and_offset),
	    cmocka_unit_test(test_symbolize_cxx_demangled_with_g),
	    cmocka_unit_test(test_symbolize_cxx_demangled_without_g),
	    cmocka_unit_test(test_demangle_only_cxx_names),
	    cmocka_unit_test(test_symbolize_unmapped_and_special),
	    cmocka_unit_test(test_stackfile_read_round_trip),
	    cmocka_unit_test(test_stackfile_read_refuses_planted),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

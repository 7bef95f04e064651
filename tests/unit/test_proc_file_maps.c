/* SPDX-License-Identifier: MIT */
/*
 * /proc readers on captured trees (tests/data/, see its README.md) and on
 * /proc/self: whole files, one pid, maps, auxv (lib/common/proc_file.c,
 * proc_maps.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/procfs.h"

#define TREE1 RA_TEST_DATA "/proc-tree1"
#define EDGE RA_TEST_DATA "/proc-edge"

static int maps_parse_str(const char *text, struct ra_maps *m)
{
	return ra_maps_parse(text, strlen(text), m);
}

static const struct ra_map *maps_by_path(const struct ra_maps *m, const char *path)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].path, path))
			return &m->v[i];
	return NULL;
}

/* ---- ra_read_file ---- */

static void test_ra_read_file_grows_past_first_buffer(void **state)
{
	char tmpl[] = "/tmp/ra-test-readXXXXXX";
	char data[10000], *buf;
	size_t len, i;
	int fd;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, sizeof(data)), sizeof(data));
	close(fd);
	assert_int_equal(ra_read_file(tmpl, &buf, &len), 0);
	unlink(tmpl);
	assert_int_equal(len, sizeof(data));
	assert_memory_equal(buf, data, sizeof(data));
	assert_int_equal(buf[len], '\0');
	free(buf);
}

static void test_ra_read_file_proc_self_status(void **state)
{
	char *buf;
	size_t len;

	(void)state;
	/* st_size is 0 for /proc files: the text must come through anyway. */
	assert_int_equal(ra_read_file("/proc/self/status", &buf, &len), 0);
	assert_true(len > 100);
	assert_int_equal(strlen(buf), len);
	assert_non_null(strstr(buf, "Name:"));
	free(buf);
}

static void test_ra_read_file_missing(void **state)
{
	char *buf = (char *)1;

	(void)state;
	assert_int_equal(ra_read_file(RA_TEST_DATA "/no-such-file", &buf, NULL), -ENOENT);
	assert_null(buf);
}

/* ---- one pid: exists, exe, comm, any file ---- */

static void test_ra_proc_exists_captured(void **state)
{
	(void)state;
	assert_int_equal(ra_proc_exists(TREE1, 4584), 0);
	assert_int_equal(ra_proc_exists(TREE1, 9999), -ENOENT);
	assert_int_equal(ra_proc_exists(NULL, getpid()), 0);
}

static void test_ra_proc_read_gone_or_missing(void **state)
{
	char *text = (char *)1;
	size_t len;

	(void)state;
	assert_int_equal(ra_proc_read(TREE1, 4584, "comm", &text, &len), 0);
	assert_string_equal(text, "a) b (c)\n");
	assert_int_equal(len, 9);
	free(text);
	/* The file is missing, not the process; then the process. */
	assert_int_equal(ra_proc_read(TREE1, 4584, "environ", &text, &len), -ENOENT);
	assert_null(text);
	assert_int_equal(ra_proc_read(TREE1, 9999, "comm", &text, &len), -ESRCH);
	assert_int_equal(ra_proc_read(TREE1, 0, "comm", &text, &len), -EINVAL);
}

static void test_ra_proc_exe_captured(void **state)
{
	char buf[256];

	(void)state;
	assert_int_equal(ra_proc_exe(RA_TEST_DATA "/node-cgv1", 201, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/opt/lammps/bin/lmp");
	/* An unlinked executable: the kernel's suffix goes. */
	assert_int_equal(ra_proc_exe(RA_TEST_DATA "/node-env", 700, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/scratch/very_long_application_name");
	/* No link (a kernel thread, a zombie), no process. */
	assert_int_equal(ra_proc_exe(RA_TEST_DATA "/node-env", 701, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(ra_proc_exe(TREE1, 9999, buf, sizeof(buf)), -ENOENT);
	/* Cut to the buffer, like readlink. */
	assert_int_equal(ra_proc_exe(RA_TEST_DATA "/node-cgv1", 201, buf, 5), 0);
	assert_string_equal(buf, "/opt");
}

static void test_ra_proc_comm_captured(void **state)
{
	char buf[16];

	(void)state;
	assert_int_equal(ra_proc_comm(TREE1, 4584, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a) b (c)");
	assert_int_equal(ra_proc_comm(TREE1, 4584, buf, 4), 0);
	assert_string_equal(buf, "a) ");
	assert_int_equal(ra_proc_comm(TREE1, 9999, buf, sizeof(buf)), -ESRCH);
}

/* ---- maps ---- */

static void test_ra_maps_read_captured(void **state)
{
	const struct ra_map *m;
	struct ra_maps maps;

	(void)state;
	assert_int_equal(ra_maps_read(TREE1, 4584, &maps), 0);
	assert_int_equal(maps.n, 32);

	m = &maps.v[0];
	assert_int_equal(m->start, 0x55d604a35000);
	assert_int_equal(m->end, 0x55d604a36000);
	assert_true(m->r && !m->w && !m->x && m->p);
	assert_string_equal(m->path, "/tmp/ra-capture/capture");

	m = ra_maps_find(&maps, 0x7f247af98000 + 0x1234);
	assert_non_null(m);
	assert_true(m->r && !m->w && m->x && m->p);
	assert_int_equal(m->offset, 0x26000);
	assert_int_equal(m->dev_major, 0xfe);
	assert_int_equal(m->dev_minor, 0);
	assert_int_equal(m->inode, 332835);
	assert_false(m->deleted);
	assert_string_equal(m->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");

	/* Anonymous: the kernel leaves a trailing blank and no path. */
	m = ra_maps_find(&maps, 0x7f2479f6d000);
	assert_non_null(m);
	assert_true(!m->r && !m->w && !m->x);
	assert_int_equal(m->inode, 0);
	assert_string_equal(m->path, "");

	assert_non_null(maps_by_path(&maps, "[stack]"));
	assert_non_null(maps_by_path(&maps, "[vdso]"));
	m = maps_by_path(&maps, "[vsyscall]");
	assert_non_null(m);
	assert_int_equal(m->start, 0xffffffffff600000);
	assert_true(m->x && !m->r);
	ra_maps_free(&maps);
}

static void test_ra_maps_parse_deleted_and_spaces(void **state)
{
	const struct ra_map *m;
	struct ra_maps maps;

	(void)state;
	assert_int_equal(ra_maps_read(TREE1, 4584, &maps), 0);
	m = maps_by_path(&maps, "/tmp/ra-capture/gone.bin");
	assert_non_null(m);
	assert_true(m->deleted);
	assert_false(m->p); /* the shared mapping comes first */
	assert_int_equal(m->offset, 0x1000);
	m = maps_by_path(&maps, "/tmp/ra-capture/data file.bin");
	assert_non_null(m);
	assert_false(m->deleted);
	assert_int_equal(m->inode, 10952796);
	ra_maps_free(&maps);
}

static void test_ra_maps_parse_edge_lines(void **state)
{
	struct ra_maps maps;

	(void)state;
	/* No trailing newline, a path that ends in spaces, a name with " (deleted)" inside. */
	assert_int_equal(maps_parse_str("1000-2000 r-xs 0000abcd 103:0f 42  /a (deleted)/b  \n"
					"2000-3000 rw-p 00000000 00:00 0",
					&maps),
			 0);
	assert_int_equal(maps.n, 2);
	assert_string_equal(maps.v[0].path, "/a (deleted)/b  ");
	assert_false(maps.v[0].deleted);
	assert_int_equal(maps.v[0].dev_major, 0x103);
	assert_int_equal(maps.v[0].dev_minor, 0xf);
	assert_int_equal(maps.v[0].offset, 0xabcd);
	assert_false(maps.v[0].p);
	assert_string_equal(maps.v[1].path, "");
	assert_null(ra_maps_find(&maps, 0x3000));
	assert_null(ra_maps_find(&maps, 0xfff));
	ra_maps_free(&maps);

	assert_int_equal(maps_parse_str("", &maps), 0);
	assert_int_equal(maps.n, 0);
	assert_null(maps.v);
	ra_maps_free(&maps);
}

static void test_ra_maps_parse_malformed(void **state)
{
	static const char *const bad[] = {
	    "1000-2000 r-xp 00000000 00:00 0 x\n\n", /* empty line */
	    "1000 r-xp 00000000 00:00 0\n",	     /* no end */
	    "1000-2000 r-x 00000000 00:00 0\n",	     /* short perms */
	    "1000-2000 rwzp 00000000 00:00 0\n",     /* bad perm */
	    "1000-2000 r-xp 00000000 00-00 0\n",     /* bad dev */
	    "1000-2000 r-xp 00000000 00:00 x\n",     /* bad inode */
	    "1000-2000 r-xp 00000000 00:00 12/x\n",  /* no blank before path */
	    "2000-1000 r-xp 00000000 00:00 0\n",     /* end before start */
	    "-1000-2000 r-xp 00000000 00:00 0\n",    /* sign */
	    "0x1000-2000 r-xp 00000000 00:00 0\n",   /* prefix */
	    "10000000000000000-2 r-xp 0 00:00 0\n",  /* overflow */
	    " 1000-2000 r-xp 00000000 00:00 0\n",    /* leading blank */
	};
	struct ra_maps maps;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(maps_parse_str(bad[i], &maps), -EINVAL);
		assert_null(maps.v);
		assert_int_equal(maps.n, 0);
	}
	/* An embedded NUL in the path. */
	assert_int_equal(ra_maps_parse("1000-2000 r-xp 0 00:00 1 /a\0b", 29, &maps), -EINVAL);
}

static void test_ra_maps_read_missing(void **state)
{
	struct ra_maps maps;

	(void)state;
	assert_int_equal(ra_maps_read(TREE1, 99999, &maps), -ESRCH);
	/* The process is there, the file is not. */
	assert_int_equal(ra_maps_read(TREE1, 4587, &maps), -ENOENT);
}

static void test_ra_maps_read_self(void **state)
{
	const struct ra_map *m;
	struct ra_maps maps;
	char exe[4096];
	ssize_t len;

	(void)state;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	assert_int_equal(ra_maps_read(RA_PROCFS, getpid(), &maps), 0);
	m = ra_maps_find(&maps, (uint64_t)(uintptr_t)&test_ra_maps_read_self);
	assert_non_null(m);
	assert_true(m->x && m->r && m->p);
	assert_string_equal(m->path, exe);
	m = ra_maps_find(&maps, (uint64_t)(uintptr_t)&m);
	assert_non_null(m);
	assert_string_equal(m->path, "[stack]");
	ra_maps_free(&maps);
}

/* ---- auxv ---- */

static void test_ra_auxv_read_captured(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(ra_auxv_read(TREE1, 4584, AT_ENTRY, &v), 0);
	assert_int_equal(v, 94377689178432);
	assert_int_equal(ra_auxv_read(TREE1, 4584, AT_PAGESZ, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(ra_auxv_read(TREE1, 4584, AT_SECURE, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(ra_auxv_read(TREE1, 4584, AT_BASE_PLATFORM, &v), -ENOENT);
	assert_int_equal(ra_auxv_read(TREE1, 4587, AT_ENTRY, &v), -ENOENT);
	assert_int_equal(ra_auxv_read(TREE1, 99999, AT_ENTRY, &v), -ESRCH);
}

static void test_ra_auxv_parse_edges(void **state)
{
	uint64_t data[7] = {AT_PAGESZ, 4096, AT_NULL, 0, AT_ENTRY, 0x1234, 0};
	unsigned char odd[1 + 4 * sizeof(uint64_t)];
	uint64_t v = 0;

	(void)state;
	/* Nothing after AT_NULL counts; a partial trailing entry is ignored. */
	assert_int_equal(ra_auxv_parse(data, sizeof(data), AT_ENTRY, &v), -ENOENT);
	assert_int_equal(ra_auxv_parse(data, 8, AT_PAGESZ, &v), -ENOENT);
	assert_int_equal(ra_auxv_parse(data, 0, AT_PAGESZ, &v), -ENOENT);
	assert_int_equal(ra_auxv_parse(data, sizeof(data), AT_NULL, &v), -EINVAL);
	/* Unaligned buffer. */
	memcpy(odd + 1, data, 4 * sizeof(uint64_t));
	assert_int_equal(ra_auxv_parse(odd + 1, 4 * sizeof(uint64_t), AT_PAGESZ, &v), 0);
	assert_int_equal(v, 4096);
}

static void test_ra_auxv_read_self(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(ra_auxv_read(NULL, getpid(), AT_ENTRY, &v), 0);
	assert_int_equal(v, getauxval(AT_ENTRY));
	assert_int_equal(ra_auxv_read(RA_PROCFS, getpid(), AT_PAGESZ, &v), 0);
	assert_int_equal(v, (uint64_t)sysconf(_SC_PAGESIZE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_read_file_grows_past_first_buffer),
	    cmocka_unit_test(test_ra_read_file_proc_self_status),
	    cmocka_unit_test(test_ra_read_file_missing),
	    cmocka_unit_test(test_ra_proc_exists_captured),
	    cmocka_unit_test(test_ra_proc_read_gone_or_missing),
	    cmocka_unit_test(test_ra_proc_exe_captured),
	    cmocka_unit_test(test_ra_proc_comm_captured),
	    cmocka_unit_test(test_ra_maps_read_captured),
	    cmocka_unit_test(test_ra_maps_parse_deleted_and_spaces),
	    cmocka_unit_test(test_ra_maps_parse_edge_lines),
	    cmocka_unit_test(test_ra_maps_parse_malformed),
	    cmocka_unit_test(test_ra_maps_read_missing),
	    cmocka_unit_test(test_ra_maps_read_self),
	    cmocka_unit_test(test_ra_auxv_read_captured),
	    cmocka_unit_test(test_ra_auxv_parse_edges),
	    cmocka_unit_test(test_ra_auxv_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

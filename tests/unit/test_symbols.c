/* SPDX-License-Identifier: MIT */
/*
 * Symbol lookup, checked against the dynamic linker's own answer (dlsym) in
 * this process and in a forked child, on copies of a real library loaded
 * twice (one of them deleted), and on truncated or corrupted ELF files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../skip.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbols.h"

static const char *const libc_names[] = {"getpid", "malloc"};
static const char *const resolv_names[] = {"ns_parse_ttl", "ns_datetosecs"};

/* What the dynamic linker resolves in libc itself (an ASan or TSan runtime interposes on malloc).
 */
static void libc_expected(uint64_t *want)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	size_t i;

	assert_non_null(libc);
	for (i = 0; i < 2; i++) {
		want[i] = (uint64_t)(uintptr_t)dlsym(libc, libc_names[i]);
		assert_true(want[i] != 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
		assert_int_equal(want[i], (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, libc_names[i]));
#endif
	}
	dlclose(libc);
}

static const char *libc_file(void)
{
	static Dl_info info;

	assert_true(dladdr((void *)&getpid, &info) != 0);
	return info.dli_fname;
}

/* libresolv, which this program does not load: a library whose copies we can dlopen. */
static const char *resolv_file(void)
{
	static char path[PATH_MAX];
	const char *slash = strrchr(libc_file(), '/');

	assert_non_null(slash);
	snprintf(path, sizeof(path), "%.*s/libresolv.so.2", (int)(slash - libc_file()),
		 libc_file());
	return path;
}

/* Opening map_files needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), even for ourselves. */
static int have_map_files(void)
{
	const struct ra_map *m;
	struct ra_maps maps;
	char path[64];
	int fd;

	assert_int_equal(ra_maps_read(NULL, getpid(), &maps), 0);
	m = ra_maps_find(&maps, (uint64_t)(uintptr_t)&have_map_files);
	assert_non_null(m);
	snprintf(path, sizeof(path), "/proc/self/map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
	ra_maps_free(&maps);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static int copy_file(const char *src, const char *dst, off_t max)
{
	char buf[65536];
	ssize_t got;
	off_t done = 0;
	int in, out;

	in = open(src, O_RDONLY | O_CLOEXEC);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	assert_true(in >= 0 && out >= 0);
	while (done < max && (got = read(in, buf, sizeof(buf))) > 0) {
		if (got > max - done)
			got = (ssize_t)(max - done);
		assert_int_equal(write(out, buf, (size_t)got), got);
		done += got;
	}
	close(in);
	close(out);
	return 0;
}

static int lookup_path(const char *path, const char *const *names, size_t n, uint64_t *vaddr,
		       uint64_t *base, uint64_t *off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	assert_true(fd >= 0);
	r = ra_elf_lookup_fd(fd, names, n, vaddr, base, off);
	close(fd);
	return r;
}

/* ---- ra_elf_lookup_fd ---- */

static void test_ra_elf_lookup_fd_libc(void **state)
{
	const char *const names[] = {"getpid", "malloc", "ra_no_such_function"};
	uint64_t vaddr[3], want[2], base, off;
	Dl_info info;

	(void)state;
	libc_expected(want);
	assert_true(dladdr((void *)&getpid, &info) != 0);
	assert_int_equal(lookup_path(libc_file(), names, 3, vaddr, &base, &off), 2);
	assert_int_equal(vaddr[2], 0);
	assert_int_equal(off, 0);
	/* dli_fbase is where the first PT_LOAD went: bias + base. */
	assert_int_equal(vaddr[0] + (uint64_t)(uintptr_t)info.dli_fbase - base, want[0]);
	assert_int_equal(vaddr[1] + (uint64_t)(uintptr_t)info.dli_fbase - base, want[1]);
}

static void test_ra_elf_lookup_fd_hidden_version(void **state)
{
	const char *const names[] = {"_gethtent", "ns_parse_ttl"};
	uint64_t vaddr[2], base, off;

	(void)state;
	/* libresolv has only _gethtent@GLIBC_2.2.5, a compat symbol dlsym never returns. */
	assert_int_equal(lookup_path(resolv_file(), names, 2, vaddr, &base, &off), 1);
	assert_int_equal(vaddr[0], 0);
	assert_true(vaddr[1] != 0);
}

static void test_ra_elf_lookup_fd_not_elf(void **state)
{
	char tmpl[] = "/tmp/ra-test-notelfXXXXXX";
	char text[200];
	uint64_t vaddr[2];
	int fd, dfd;

	(void)state;
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	unlink(tmpl);
	/* Empty, then text longer than an ELF header. */
	assert_int_equal(ra_elf_lookup_fd(fd, libc_names, 2, vaddr, NULL, NULL), -ENOEXEC);
	memset(text, '#', sizeof(text));
	assert_int_equal(write(fd, text, sizeof(text)), sizeof(text));
	assert_int_equal(ra_elf_lookup_fd(fd, libc_names, 2, vaddr, NULL, NULL), -ENOEXEC);
	close(fd);

	dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(ra_elf_lookup_fd(dfd, libc_names, 2, vaddr, NULL, NULL), -ENOEXEC);
	close(dfd);
	assert_int_equal(ra_elf_lookup_fd(-1, libc_names, 2, vaddr, NULL, NULL), -EINVAL);
}

/* A header-only ELF file from this executable's own header, altered by fix. */
static int header_file(void (*fix)(Elf64_Ehdr *))
{
	char tmpl[] = "/tmp/ra-test-ehdrXXXXXX";
	unsigned char page[4096] = {0};
	Elf64_Ehdr eh;
	int fd;

	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_int_equal(read(fd, &eh, sizeof(eh)), sizeof(eh));
	close(fd);
	eh.e_phnum = 0;
	eh.e_shnum = 0;
	eh.e_shoff = 0;
	fix(&eh);
	memcpy(page, &eh, sizeof(eh));
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	unlink(tmpl);
	assert_int_equal(write(fd, page, sizeof(page)), sizeof(page));
	return fd;
}

static void fix_class32(Elf64_Ehdr *eh)
{
	eh->e_ident[EI_CLASS] = ELFCLASS32;
}

static void fix_machine(Elf64_Ehdr *eh)
{
	eh->e_machine = eh->e_machine == EM_RISCV ? EM_X86_64 : EM_RISCV;
}

static void fix_rel(Elf64_Ehdr *eh)
{
	eh->e_type = ET_REL;
}

static void fix_none(Elf64_Ehdr *eh)
{
	(void)eh;
}

static void test_ra_elf_lookup_fd_wrong_class_or_machine(void **state)
{
	void (*const fixes[])(Elf64_Ehdr *) = {fix_class32, fix_machine, fix_rel, fix_none};
	uint64_t vaddr[2];
	size_t i;
	int fd;

	(void)state;
	/* The last one is of our class and machine but has no PT_LOAD. */
	for (i = 0; i < sizeof(fixes) / sizeof(fixes[0]); i++) {
		fd = header_file(fixes[i]);
		assert_int_equal(ra_elf_lookup_fd(fd, libc_names, 2, vaddr, NULL, NULL), -ENOEXEC);
		close(fd);
	}
}

static void test_ra_elf_lookup_fd_truncated(void **state)
{
	char tmpl[] = "/tmp/ra-test-truncXXXXXX";
	struct stat sb;
	uint64_t vaddr[2], base, off;
	off_t sizes[8];
	size_t i;
	int r, fd;

	(void)state;
	assert_int_equal(stat(libc_file(), &sb), 0);
	sizes[0] = 16;
	sizes[1] = 63;
	sizes[2] = 64;
	sizes[3] = 1000;
	sizes[4] = 4096;
	sizes[5] = 70000; /* inside .dynsym */
	sizes[6] = sb.st_size / 2;
	sizes[7] = sb.st_size - 1; /* the section header table loses its last byte */
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	close(fd);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		copy_file(libc_file(), tmpl, sizes[i]);
		r = lookup_path(tmpl, libc_names, 2, vaddr, &base, &off);
		assert_int_equal(r, -ENOEXEC);
	}
	unlink(tmpl);
}

/* Offsets worth corrupting: the ELF header, program and section headers, .dynsym. */
static off_t fuzz_offset(const Elf64_Ehdr *eh, unsigned int rnd)
{
	switch (rnd % 4) {
	case 0:
		return (off_t)(rnd / 4 % sizeof(*eh));
	case 1:
		return (off_t)(eh->e_phoff + rnd / 4 % (eh->e_phnum * sizeof(Elf64_Phdr)));
	case 2:
		return (off_t)(eh->e_shoff + rnd / 4 % (eh->e_shnum * sizeof(Elf64_Shdr)));
	}
	return (off_t)(rnd / 4 % 131072);
}

static void test_ra_elf_lookup_fd_corrupted(void **state)
{
	char tmpl[] = "/tmp/ra-test-fuzzXXXXXX";
	unsigned int seed = 12345, rnd;
	unsigned char saved[4], junk[4];
	uint64_t vaddr[2], base, off;
	Elf64_Ehdr eh;
	struct stat sb;
	off_t at;
	int fd, i, j, r;

	(void)state;
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	close(fd);
	copy_file(libc_file(), tmpl, INT64_MAX);
	fd = open(tmpl, O_RDWR | O_CLOEXEC);
	unlink(tmpl);
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_int_equal(fstat(fd, &sb), 0);
	for (i = 0; i < 600; i++) {
		rnd = seed = seed * 1103515245u + 12345u;
		at = fuzz_offset(&eh, rnd >> 2);
		if (at > sb.st_size - (off_t)sizeof(saved))
			at = sb.st_size - (off_t)sizeof(saved);
		for (j = 0; j < 4; j++)
			junk[j] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 16);
		assert_int_equal(pread(fd, saved, sizeof(saved), at), sizeof(saved));
		assert_int_equal(pwrite(fd, junk, 1 + rnd % 4, at), 1 + rnd % 4);
		r = ra_elf_lookup_fd(fd, libc_names, 2, vaddr, &base, &off);
		assert_true(r == -ENOEXEC || (r >= 0 && r <= 2));
		assert_int_equal(pwrite(fd, saved, sizeof(saved), at), sizeof(saved));
	}
	assert_int_equal(ra_elf_lookup_fd(fd, libc_names, 2, vaddr, &base, &off), 2);
	close(fd);
}

/* ---- ra_symbols_find ---- */

static void find_in(pid_t pid, const char *procfs)
{
	char obj[PATH_MAX];
	uint64_t addrs[2], want[2];
	struct ra_err e = {0};
	struct ra_maps maps;

	libc_expected(want);
	assert_int_equal(ra_maps_read(RA_PROCFS, pid, &maps), 0);
	assert_int_equal(
	    ra_symbols_find(procfs, pid, &maps, libc_names, 2, NULL, addrs, obj, sizeof(obj), &e),
	    0);
	assert_int_equal(e.status, ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(addrs[0], want[0]);
	assert_int_equal(addrs[1], want[1]);
	assert_non_null(strstr(obj, "/libc.so.6"));
	ra_maps_free(&maps);
}

static void test_ra_symbols_find_self(void **state)
{
	(void)state;
	find_in(getpid(), RA_PROCFS);
}

/* Optional names may be variables: relocated with the functions' bias, 0 when absent. */
static void test_ra_symbols_find_only_variables(void **state)
{
	static const char *const names[] = {"getpid", "program_invocation_short_name",
					    "no_such_symbol_here", "getppid"};
	static const char *const data_first[] = {"program_invocation_short_name", "getpid"};
	static const char *const only[] = {"libc.so.6", NULL};
	struct ra_err e = {0};
	struct ra_maps maps;
	uint64_t addrs[4];
	void *libc;

	(void)state;
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	assert_int_equal(ra_maps_read(RA_PROCFS, getpid(), &maps), 0);
	assert_int_equal(
	    ra_symbols_find_only(RA_PROCFS, getpid(), &maps, names, 4, 1, only, addrs, &e), 0);
	assert_true(addrs[0] == (uint64_t)(uintptr_t)dlsym(libc, "getpid"));
	assert_true(addrs[1] == (uint64_t)(uintptr_t)dlsym(libc, "program_invocation_short_name"));
	assert_true(addrs[2] == 0);
	assert_true(addrs[3] == (uint64_t)(uintptr_t)dlsym(libc, "getppid"));
	/* A variable is no function: not found where a function is required. */
	assert_int_equal(
	    ra_symbols_find_only(RA_PROCFS, getpid(), &maps, data_first, 2, 1, only, addrs, &e),
	    -ENOENT);
	assert_int_equal(
	    ra_symbols_find_only(RA_PROCFS, getpid(), &maps, names, 4, 0, only, addrs, &e),
	    -EINVAL);
	ra_maps_free(&maps);
	dlclose(libc);
}

static void test_ra_symbols_find_child(void **state)
{
	pid_t child;
	int status;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* A failed check below leaves without killing us: go with the parent. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			sleep(1);
	}
	/* A forked child shares the layout, so the addresses are ours. */
	find_in(child, NULL);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
}

static void test_ra_symbols_find_not_found(void **state)
{
	const char *const names[] = {"getpid", "ra_no_such_function"};
	uint64_t addrs[2] = {1, 1};
	struct ra_err e = {0};
	struct ra_maps maps;
	char obj[64] = "";

	(void)state;
	assert_int_equal(ra_maps_read(NULL, getpid(), &maps), 0);
	assert_int_equal(
	    ra_symbols_find(NULL, getpid(), &maps, names, 2, NULL, addrs, obj, sizeof(obj), &e),
	    -ENOENT);
	/* Not found is an answer: e is left to the caller. */
	assert_int_equal(e.status, ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(addrs[0], 0);
	assert_string_equal(obj, "");
	ra_maps_free(&maps);
}

static void test_ra_symbols_find_bad_input(void **state)
{
	struct ra_maps empty = {NULL, 0};
	struct ra_err e = {0};
	uint64_t addrs[2];

	(void)state;
	assert_int_equal(
	    ra_symbols_find(NULL, getpid(), &empty, libc_names, 2, NULL, addrs, NULL, 0, &e),
	    -ESRCH);
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR);
	assert_non_null(strstr(e.msg, "no memory mappings"));
	ra_err_clear(&e);
	assert_int_equal(
	    ra_symbols_find(NULL, getpid(), NULL, libc_names, 2, NULL, addrs, NULL, 0, &e),
	    -EINVAL);
	assert_int_equal(e.status, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
}

/* Two copies of libresolv in a directory with a blank in its name, both dlopen'ed. */
struct copies {
	char dir[64];
	char path[2][128];
	void *h[2];
};

static int copies_setup(void **state)
{
	static struct copies c;
	int i;

	memset(&c, 0, sizeof(c));
	strcpy(c.dir, "/tmp/ra syms XXXXXX");
	if (!mkdtemp(c.dir))
		return -1;
	for (i = 0; i < 2; i++) {
		snprintf(c.path[i], sizeof(c.path[i]), "%s/libra %s.so", c.dir, i ? "two" : "one");
		copy_file(resolv_file(), c.path[i], INT64_MAX);
		c.h[i] = dlopen(c.path[i], RTLD_NOW | RTLD_LOCAL);
		if (!c.h[i])
			return -1;
	}
	*state = &c;
	return 0;
}

static int copies_teardown(void **state)
{
	struct copies *c = *state;
	int i;

	for (i = 0; i < 2; i++) {
		unlink(c->path[i]);
		dlclose(c->h[i]);
	}
	rmdir(c->dir);
	return 0;
}

static int find_resolv(const char *procfs, const char *const *prefer, uint64_t *addrs, char *obj,
		       size_t objlen)
{
	struct ra_err e = {0};
	struct ra_maps maps;
	int r;

	assert_int_equal(ra_maps_read(NULL, getpid(), &maps), 0);
	r = ra_symbols_find(procfs, getpid(), &maps, resolv_names, 2, prefer, addrs, obj, objlen,
			    &e);
	ra_maps_free(&maps);
	assert_int_equal(e.status, ROCATTACH_STATUS_SUCCESS);
	return r;
}

static void assert_from(const struct copies *c, int i, const uint64_t *addrs, const char *obj)
{
	assert_string_equal(obj, c->path[i]);
	assert_int_equal(addrs[0], (uint64_t)(uintptr_t)dlsym(c->h[i], resolv_names[0]));
	assert_int_equal(addrs[1], (uint64_t)(uintptr_t)dlsym(c->h[i], resolv_names[1]));
}

static void test_ra_symbols_find_prefer(void **state)
{
	const char *const two[] = {"libra two", NULL};
	const char *const one[] = {"libra one", NULL};
	const char *const other_then_two[] = {"libnothing", "libra t", NULL};
	const char *const nothing[] = {"libnothing", NULL};
	struct copies *c = *state;
	uint64_t addrs[2];
	char obj[PATH_MAX];

	assert_int_equal(find_resolv(NULL, two, addrs, obj, sizeof(obj)), 0);
	assert_from(c, 1, addrs, obj);
	assert_int_equal(find_resolv(NULL, one, addrs, obj, sizeof(obj)), 0);
	assert_from(c, 0, addrs, obj);
	assert_int_equal(find_resolv(NULL, other_then_two, addrs, obj, sizeof(obj)), 0);
	assert_from(c, 1, addrs, obj);
	/* No preferred object matches: address order decides. */
	assert_int_equal(find_resolv(NULL, nothing, addrs, obj, sizeof(obj)), 0);
	assert_from(c, dlsym(c->h[0], resolv_names[0]) < dlsym(c->h[1], resolv_names[0]) ? 0 : 1,
		    addrs, obj);
}

/* A proc root without map_files (as for a caller without CAP_SYS_ADMIN): only root/PATH works. */
static void fake_proc(char *dir, size_t len)
{
	char path[PATH_MAX];

	snprintf(dir, len, "/tmp/ra-fakeproc-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%d", dir, (int)getpid());
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/root", dir, (int)getpid());
	assert_int_equal(symlink("/", path), 0);
}

static void fake_proc_remove(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d/root", dir, (int)getpid());
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d", dir, (int)getpid());
	rmdir(path);
	rmdir(dir);
}

static void test_ra_symbols_find_deleted(void **state)
{
	const char *const one[] = {"libra one", NULL};
	struct copies *c = *state;
	uint64_t addrs[2];
	char obj[PATH_MAX], fake[64];

	if (!have_map_files())
		RA_SKIP("no /proc/PID/map_files here (needs CAP_SYS_ADMIN or "
			"CONFIG_CHECKPOINT_RESTORE)");
	assert_int_equal(unlink(c->path[0]), 0);
	/* Through map_files, the deleted copy is still readable; obj loses " (deleted)". */
	assert_int_equal(find_resolv(NULL, one, addrs, obj, sizeof(obj)), 0);
	assert_from(c, 0, addrs, obj);
	/* Without map_files it is skipped, and the other copy answers. */
	fake_proc(fake, sizeof(fake));
	assert_int_equal(find_resolv(fake, one, addrs, obj, sizeof(obj)), 0);
	assert_from(c, 1, addrs, obj);
	fake_proc_remove(fake);
}

static void test_ra_symbols_find_root_path(void **state)
{
	char fake[64];

	(void)state;
	fake_proc(fake, sizeof(fake));
	find_in(getpid(), fake);
	fake_proc_remove(fake);
}

static void test_ra_symbols_find_identity_mismatch(void **state)
{
	struct ra_err e = {0};
	struct ra_maps maps;
	uint64_t addrs[2];
	char fake[64];
	size_t i;

	(void)state;
	assert_int_equal(ra_maps_read(NULL, getpid(), &maps), 0);
	/* As if libc had been replaced on disk after it was mapped. */
	for (i = 0; i < maps.n; i++)
		if (strstr(maps.v[i].path, "/libc.so.6"))
			maps.v[i].inode++;
	fake_proc(fake, sizeof(fake));
	assert_int_equal(
	    ra_symbols_find(fake, getpid(), &maps, libc_names, 2, NULL, addrs, NULL, 0, &e),
	    -ENOENT);
	/* map_files does not care about the path, so the real root still finds it. */
	if (have_map_files())
		assert_int_equal(
		    ra_symbols_find(NULL, getpid(), &maps, libc_names, 2, NULL, addrs, NULL, 0, &e),
		    0);
	fake_proc_remove(fake);
	ra_maps_free(&maps);
}

static void test_ra_symbols_find_not_executable(void **state)
{
	struct ra_err e = {0};
	struct ra_maps maps;
	uint64_t addrs[2];
	size_t i;

	(void)state;
	assert_int_equal(ra_maps_read(NULL, getpid(), &maps), 0);
	/* libc still has executable mappings, but not where its functions are. */
	for (i = 0; i < maps.n; i++)
		if (strstr(maps.v[i].path, "/libc.so.6"))
			maps.v[i].x = !maps.v[i].x;
	assert_int_equal(
	    ra_symbols_find(NULL, getpid(), &maps, libc_names, 2, NULL, addrs, NULL, 0, &e),
	    -ENOENT);
	assert_int_equal(e.status, ROCATTACH_STATUS_SUCCESS);
	ra_maps_free(&maps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_elf_lookup_fd_libc),
	    cmocka_unit_test(test_ra_elf_lookup_fd_hidden_version),
	    cmocka_unit_test(test_ra_elf_lookup_fd_not_elf),
	    cmocka_unit_test(test_ra_elf_lookup_fd_wrong_class_or_machine),
	    cmocka_unit_test(test_ra_elf_lookup_fd_truncated),
	    cmocka_unit_test(test_ra_elf_lookup_fd_corrupted),
	    cmocka_unit_test(test_ra_symbols_find_self),
	    cmocka_unit_test(test_ra_symbols_find_only_variables),
	    cmocka_unit_test(test_ra_symbols_find_child),
	    cmocka_unit_test(test_ra_symbols_find_not_found),
	    cmocka_unit_test(test_ra_symbols_find_bad_input),
	    cmocka_unit_test(test_ra_symbols_find_root_path),
	    cmocka_unit_test(test_ra_symbols_find_identity_mismatch),
	    cmocka_unit_test(test_ra_symbols_find_not_executable),
	    cmocka_unit_test_setup_teardown(test_ra_symbols_find_prefer, copies_setup,
					    copies_teardown),
	    cmocka_unit_test_setup_teardown(test_ra_symbols_find_deleted, copies_setup,
					    copies_teardown),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

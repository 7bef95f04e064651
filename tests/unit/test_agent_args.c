/* SPDX-License-Identifier: MIT */
/*
 * The agent's pointer arguments in a real process: bad pointers, a string
 * over two mappings, device names, the slow paths (lib/agent/agent_args.c).
 * Every test forks a child that dlopens a fresh agent (agent_child.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <rocattach/version.h>

#include "common/envbuf.h"
#include "common/procmap.h"
#include "../skip.h"
#include "agent_child.h"

static char *at_page_end(char *map, size_t page, uint32_t count, const char *bytes, size_t n)
{
	char *p = map + page - sizeof(count) - n;

	memcpy(p, &count, sizeof(count));
	memcpy(p + sizeof(count), bytes, n);
	return p;
}

/* Start of the [vvar] mapping, NULL if none. */
static const char *vvar_start(void)
{
	char line[512];
	unsigned long lo = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vvar]") && sscanf(line, "%lx-", &lo) == 1)
			break;
	if (f)
		fclose(f);
	return (const char *)lo;
}

/* The refusals that need no setup: a PROT_NONE page, address 16, [vvar]. */
static int bad_pointers_basic(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map, *env, *path;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	CHECK_OK(mprotect(map + page, page, PROT_NONE));
	env = at_page_end(map, page, 5, "ROCP_A\0001", 9);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "malformed"));
	env = at_page_end(map, page, 1, "ROCP_A\0001", 8);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 8);
	CHECK(ag.attach(map + page, RA_TOOL_PATH) == 8);
	CHECK(ag.attach((const char *)16, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "not in readable memory"));
	path = map + page - 4;
	memcpy(path, "/lib", 4);
	CHECK(ag.attach(NULL, path) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(NULL, (const char *)16) == 8);
	CHECK(ag.attach(NULL, map + page) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	/* Readable in maps, but not memory to scan. */
	CHECK(!vvar_start() || ag.attach(NULL, vvar_start()) == 8);
	CHECK(!vvar_start() || strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(!vvar_start() || ag.attach(vvar_start(), RA_TOOL_PATH) == 8);
	CHECK(!vvar_start() || strstr(ag.last_error(), "not in readable memory"));
	CHECK_OK(munmap(map, 2 * page));
	return 0;
}

/* A hole (an unmapped page) between two mapped ones. */
static int bad_pointers_hole(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map, *env;

	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	CHECK_OK(munmap(map + page, page));
	CHECK(ag.attach(NULL, map + page) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(map + page, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "not in readable memory"));
	/* Runs into the hole without a NUL; the page after it has one. */
	memset(map, 'a', page);
	memset(map + 2 * page, 0, page);
	CHECK(ag.attach(NULL, map + page - 100) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(NULL, map) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	/* A buffer whose last value would run on into the hole. */
	env = at_page_end(map, page, 1, "ROCP_A\0001", 8);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "malformed"));
	CHECK_OK(munmap(map, page));
	CHECK_OK(munmap(map + 2 * page, page));
	return 0;
}

/* The agent's messages (ROCP_AGENT_DEBUG=1) go to path from now on; the old stderr, or -1. */
static int debug_to(const char *path)
{
	int fd, old;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	fflush(stderr);
	old = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	setenv("ROCP_AGENT_DEBUG", "1", 1);
	return old;
}

/* Back to the old stderr. */
static void debug_end(int old)
{
	unsetenv("ROCP_AGENT_DEBUG");
	fflush(stderr);
	dup2(old, STDERR_FILENO);
	close(old);
}

/* Do the messages in path hold text? */
static bool debug_has(const char *path, const char *text)
{
	char buf[16384];
	size_t n = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

/* Does this kernel answer PROCMAP_QUERY (Linux 6.11)? Then the agent must use it. */
static bool procmap_query_works(void)
{
	static int probe;
	struct procmap_query q = {.size = sizeof(q), .query_addr = (uintptr_t)&probe};
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && ioctl(fd, PROCMAP_QUERY, &q) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A string is read up to 1 MiB (agent_args.c): one whose NUL comes later is refused. */
static int bad_pointers_long(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = ((size_t)1 << 20) + page;
	char *map;

	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	memset(map, '/', size - 1);
	map[size - 1] = '\0';
	CHECK(ag.attach(NULL, map) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK_OK(munmap(map, size));
	return 0;
}

static int child_bad_pointers(void)
{
	char log[PATH_MAX];
	int old;

	snprintf(log, sizeof(log), "%s/agent-debug.log", outdir);
	CHECK_OK(agent_load(true));
	old = debug_to(log);
	CHECK(old >= 0);
	CHECK_OK(bad_pointers_basic());
	CHECK_OK(bad_pointers_hole());
	CHECK_OK(bad_pointers_long());
	debug_end(old);
	/* The checks above ran on the fast path: no direct copy, no maps file parsed. */
	CHECK(!debug_has(log, "copying directly"));
	CHECK(!procmap_query_works() || !debug_has(log, "parsing /proc/self/maps"));
	CHECK(!strcmp(events(getpid()), ""));
	return 0;
}

static void test_rocprofiler_register_attach_bad_pointers(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_bad_pointers), 0);
}

/*
 * s copied across the boundary of two mappings (read-write, then read-only),
 * half in each.
 */
static const char *straddled(const char *s)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = strlen(s) + 1;
	char *map;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	memcpy(map + page - len / 2, s, len);
	if (mprotect(map + page, page, PROT_READ))
		return NULL;
	return map + page - len / 2;
}

/* A buffer or a string may run on into the next mapping when it is contiguous and readable. */
static int child_two_mappings(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	char *map, *env, *buf;

	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	env = make_env_len(NULL, &len);
	CHECK(env);
	buf = map + page - len / 2;
	memcpy(buf, env, len);
	CHECK_OK(mprotect(map + page, page, PROT_READ));
	CHECK_OK(mprotect(map + 2 * page, page, PROT_NONE));
	CHECK_OK(agent_load(true));
	CHECK(ag.attach(buf, straddled(RA_TOOL_PATH)) == 0);
	CHECK(!strcmp(getenv("ROCPROF_OUTPUT_PATH"), outdir));
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_spans_mappings(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_two_mappings), 0);
}

/*
 * A file under /dev is a device to the check (by its name, as in maps),
 * whatever it holds: process_vm_readv alone would read it. /dev/zero and
 * files in /dev/shm are memory.
 */
static int child_dev_names(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	char path[64], *dev, *anon, *env, *zero, *shm;
	int fd;

	CHECK_OK(agent_load(true));
	snprintf(path, sizeof(path), "/dev/rocattach-test.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	unlink(path);
	env = make_env_len(NULL, &len);
	CHECK(env && len < page / 2);
	CHECK_OK(ftruncate(fd, (off_t)page));
	CHECK(pwrite(fd, RA_TOOL_PATH, sizeof(RA_TOOL_PATH), 0) == sizeof(RA_TOOL_PATH));
	CHECK(pwrite(fd, env, len, (off_t)(page / 2)) == (ssize_t)len);
	dev = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(dev != MAP_FAILED);
	CHECK(ag.attach(NULL, dev) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(dev + page / 2, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "not in readable memory"));
	/* A string that runs on from anonymous memory into the file's mapping. */
	anon = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED);
	CHECK(mmap(anon + page, page, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == anon + page);
	memcpy(anon + page - 4, "/lib", 4);
	CHECK(ag.attach(NULL, anon + page - 4) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	close(fd);
	/* Shared /dev/zero is read: an empty string, which names no library. */
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	zero = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	CHECK(zero != MAP_FAILED);
	CHECK(ag.attach(NULL, zero) == 8);
	CHECK(strstr(ag.last_error(), "names no library"));
	snprintf(path, sizeof(path), "/dev/shm/rocattach-test.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_OK(ftruncate(fd, (off_t)page));
	CHECK(pwrite(fd, RA_TOOL_PATH, sizeof(RA_TOOL_PATH), 0) == sizeof(RA_TOOL_PATH));
	CHECK(pwrite(fd, env, len, (off_t)(page / 2)) == (ssize_t)len);
	shm = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	CHECK(shm != MAP_FAILED);
	CHECK(ag.attach(shm + page / 2, shm) == 0);
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_dev_names(void **state)
{
	(void)state;
	if (access("/dev", W_OK) || access("/dev/shm", W_OK))
		RA_SKIP("/dev or /dev/shm is not writable here: no file to map under them");
	assert_int_equal(run_child(child_dev_names), 0);
}

/*
 * process_vm_readv answers EPERM and PROCMAP_QUERY ENOTTY, as under a
 * seccomp profile on a kernel before 6.11. The ioctl's request is in the
 * low half of args[1] (x86-64 and aarch64 are little-endian).
 */
static int deny_fast_paths(void)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)PROCMAP_QUERY, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Without either, the agent parses the maps file and copies directly: the same answers. */
static int child_slow_paths(void)
{
	size_t len;
	char log[PATH_MAX], *env;
	int old;

	snprintf(log, sizeof(log), "%s/agent-debug.log", outdir);
	CHECK_OK(deny_fast_paths());
	CHECK_OK(agent_load(true));
	old = debug_to(log);
	CHECK(old >= 0);
	CHECK_OK(bad_pointers_basic());
	CHECK_OK(bad_pointers_hole());
	CHECK_OK(bad_pointers_long());
	env = make_env_len(NULL, &len);
	CHECK(env);
	CHECK(ag.attach(env, straddled(RA_TOOL_PATH)) == 0);
	debug_end(old);
	CHECK(debug_has(log, "process_vm_readv on ourselves: Operation not permitted"));
	CHECK(debug_has(log,
			"PROCMAP_QUERY: Inappropriate ioctl for device; parsing /proc/self/maps"));
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_slow_paths(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_slow_paths), 0);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup_outdir, teardown_outdir)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_rocprofiler_register_attach_bad_pointers),
	    TEST(test_rocprofiler_register_attach_spans_mappings),
	    TEST(test_rocprofiler_register_attach_dev_names),
	    TEST(test_rocprofiler_register_attach_slow_paths),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

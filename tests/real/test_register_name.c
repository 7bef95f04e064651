/* SPDX-License-Identifier: MIT */
/*
 * Our agent under ROCm's file name (librocprofiler-register.so.0), so that
 * AMD's attacher, which looks for the entry points only in a mapped object
 * whose file name starts with "librocprofiler-register.so", drives it too
 * (protocol.md 2b). The target is started the way a user would start it, the
 * lookup is done AMD's way on its maps, and the lifecycle is ROCm's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
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

#include <rocattach/rocattach.h>
#include <rocattach/tool.h>

#include "symbols.h"
#include "testlib.h"

#define AMD_PREFIX "librocprofiler-register.so"

static char preload[PATH_MAX + 16];

static int setup(void **state)
{
	(void)state;
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", RA_REGISTER_AGENT_PATH);
	return setup_outdir(RA_TOOL_PATH);
}

/* ROCP_TOOL_ATTACH=1 LD_PRELOAD=.../librocprofiler-register.so.0 target */
static void start(struct victim *v)
{
	struct victim_opts o = {.attach_env = true, .env = {preload, NULL}};

	assert_int_equal(victim_start(v, &o), 0);
}

struct mapping {
	unsigned long lo, hi, off;
	char perms[5];
	char path[PATH_MAX];
};

/* The next file-backed line of maps, or 0 at the end. */
static int next_mapping(FILE *f, struct mapping *m)
{
	char line[PATH_MAX + 128];

	while (fgets(line, sizeof(line), f)) {
		m->path[0] = '\0';
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %4095[^\n]", &m->lo, &m->hi, m->perms,
			   &m->off, m->path) == 5 &&
		    m->path[0] == '/')
			return 1;
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * AMD's rule: exactly one mapped object whose file name starts with
 * "librocprofiler-register.so". Its path, and no mapping of our agent's name.
 */
static void amd_target_library(pid_t pid, char *path, size_t len)
{
	struct mapping m;
	char maps[64];
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	assert_non_null(f);
	path[0] = '\0';
	while (next_mapping(f, &m)) {
		assert_null(strstr(base_name(m.path), "librocattach-agent"));
		if (strncmp(base_name(m.path), AMD_PREFIX, strlen(AMD_PREFIX)))
			continue;
		if (path[0])
			assert_string_equal(m.path, path); /* one object only */
		else
			snprintf(path, len, "%s", m.path);
	}
	fclose(f);
	assert_true(path[0] != '\0');
}

/*
 * Find both entry points in that object from its ELF file alone (no dlopen,
 * as an attacher does) and check they land in an executable mapping of it.
 */
static void amd_lookup(pid_t pid, const char *path)
{
	static const char *const names[] = {"rocprofiler_register_attach",
					    "rocprofiler_register_detach"};
	uint64_t vaddr[2], base, off;
	unsigned long start = 0;
	struct mapping m;
	char file[PATH_MAX + 32];
	int fd, hits = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/root%s", pid, path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ra_elf_lookup_fd(fd, names, 2, vaddr, &base, &off), 2);
	close(fd);
	snprintf(file, sizeof(file), "/proc/%d/maps", pid);
	f = fopen(file, "r");
	assert_non_null(f);
	while (next_mapping(f, &m))
		if (!strcmp(m.path, path) && m.off == off && !start)
			start = m.lo;
	assert_true(start != 0);
	rewind(f);
	while (next_mapping(f, &m)) {
		for (int i = 0; i < 2; i++) {
			uint64_t at = start - base + vaddr[i];

			hits +=
			    !strcmp(m.path, path) && m.perms[2] == 'x' && at >= m.lo && at < m.hi;
		}
	}
	fclose(f);
	assert_int_equal(hits, 2);
}

static int count_threads(pid_t pid, const char *comm)
{
	char dir[64], file[400], name[32];
	struct dirent *d;
	int n = 0;
	DIR *dp;
	FILE *f;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	dp = opendir(dir);
	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/comm", dir, d->d_name);
		f = fopen(file, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = '\0';
			n += !strcmp(name, comm);
		}
		fclose(f);
	}
	closedir(dp);
	return n;
}

static void test_register_name_is_a_real_file_in_maps(void **state)
{
	char path[PATH_MAX];
	struct victim v;
	struct stat st;

	(void)state;
	/* The built file is itself named so: a symlink would show the target's name. */
	assert_int_equal(lstat(RA_REGISTER_AGENT_PATH, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(base_name(RA_REGISTER_AGENT_PATH), "librocprofiler-register.so.0");
	start(&v);
	amd_target_library(v.pid, path, sizeof(path));
	assert_string_equal(base_name(path), "librocprofiler-register.so.0");
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	amd_lookup(v.pid, path);
	assert_int_equal(count_threads(v.pid, "rocp-bg-attach"), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* ROCm's lifecycle and rules, through our library, on the agent under its second name. */
static void test_register_name_lifecycle(void **state)
{
	const char *logtext;
	rocattach_opts_t other = {.size = sizeof(other),
				  .tool_libraries = RA_TOOL_PATH ":" RA_TOOL_PATH};
	rocattach_report_t rep = {.size = sizeof(rep)};
	char events[512], want[128];
	struct victim v;

	(void)state;
	start(&v);
	assert_int_equal(rocattach_attach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.agent_status, ROCATTACH_REGISTER_SUCCESS);
	assert_int_equal(rep.tid, proc_thread(v.pid, "rocp-bg-attach"));
	logtext = log_of(v.pid);
	tool_events(logtext, events, sizeof(events));
	assert_string_equal(events, "configure configure_attach initialize tool_attach");
	snprintf(want, sizeof(want), " version=%u runtime=%s ", ROCATTACH_SDK_VERSION,
		 ROCATTACH_SDK_VERSION_STRING);
	assert_non_null(strstr(logtext, want));
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	tool_events(log_of(v.pid), events, sizeof(events));
	assert_string_equal(events,
			    "configure configure_attach initialize tool_attach tool_detach");

	/*
	 * Reattach: tool_attach again. Another tool list is ROCm's refusal (8), not
	 * our agent's: ours takes it between windows (the tool, already loaded, is
	 * reused as it is, once though named twice).
	 */
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	memset(&rep, 0, sizeof(rep));
	rep.size = sizeof(rep);
	assert_int_equal(rocattach_attach_ex(v.pid, &other, &rep), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rep.agent_status, ROCATTACH_REGISTER_SUCCESS);
	assert_int_equal(rocattach_is_attached(v.pid), 1);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	tool_events(log_of(v.pid), events, sizeof(events));
	assert_string_equal(events, "configure configure_attach initialize tool_attach "
				    "tool_detach tool_attach tool_detach tool_attach tool_detach");
	assert_int_equal(count_threads(v.pid, "rocp-bg-attach"), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

/* A tool that cannot be loaded: 6 (ROCPROFILER_ERROR), as ROCm's answer; then a good one. */
static void test_register_name_unloadable_tool(void **state)
{
	rocattach_opts_t bad = {.size = sizeof(bad), .tool_libraries = "libra-no-such-tool.so"};
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct victim v;

	(void)state;
	start(&v);
	assert_int_equal(rocattach_attach_ex(v.pid, &bad, &rep), ROCATTACH_STATUS_ERROR);
	assert_int_equal(rep.agent_status, ROCATTACH_REGISTER_ROCPROFILER_ERROR);
	assert_non_null(strstr(rep.message, "ROCPROFILER_ERROR"));
	assert_string_equal(log_of(v.pid), "");
	assert_int_equal(rocattach_attach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_register_name_is_a_real_file_in_maps),
	    cmocka_unit_test(test_register_name_lifecycle),
	    cmocka_unit_test(test_register_name_unloadable_tool),
	};

	/* Ours: failures are in the reports; keep the test's stderr for cmocka. */
	rocattach_set_log_callback(NULL, NULL);
	return cmocka_run_group_tests(tests, setup, NULL);
}

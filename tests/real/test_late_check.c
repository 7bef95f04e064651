/* SPDX-License-Identifier: MIT */
/*
 * --late-start's pre-checks (lib/late_check.c, lib/late_tool.c): on files
 * built for the purpose (the doubles in tests/rocm/late/ and copies of them
 * arranged to be missing or wrong) and on real late_victim processes, each
 * left as it was: not traced, still running (or still stopped).
 * ROCm's names the start uses are pinned here to the upstream text.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../skip.h"
#include "late_check.h"
#include "late_needs.h"
#include "testlib.h"

#define TOOL RA_LATE_DIR "/liblate_tool.so"
#define SDK RA_LATE_DIR "/sdk/librocprofiler-sdk.so.1"

/*
 * ROCm/rocm-systems 492f029de653cc82db31522b4ae8f6342a87c751:
 * rocprofiler_register.cpp (the entry point, the SDK's file name and its
 * entry point, the attach SDK's name), registration.cpp
 * (rocprofiler_is_initialized).
 */
static void names_pinned(void **state)
{
	(void)state;
	assert_string_equal(RA_LATE_INVOKE, "rocprofiler_register_invoke_all_registrations");
	assert_string_equal(RA_LATE_SDK_PREFIX, "librocprofiler-sdk.so");
	assert_string_equal(RA_LATE_SDK_ATTACH_PREFIX, "librocprofiler-sdk-attach.so");
	assert_string_equal(RA_LATE_SET_API_TABLE, "rocprofiler_set_api_table");
	assert_string_equal(RA_LATE_IS_INITIALIZED, "rocprofiler_is_initialized");
}

static void tool_sdk_found(void **state)
{
	struct ra_err e = {0};
	char sdk[PATH_MAX], want[PATH_MAX], got[PATH_MAX];

	(void)state;
	assert_int_equal(ra_late_tool_sdk(TOOL, sdk, sizeof(sdk), &e), 0);
	assert_non_null(realpath(SDK, want));
	assert_non_null(realpath(sdk, got));
	assert_string_equal(got, want);
}

/* A directory with a copy of the tool and, if sdk_from, sdk/librocprofiler-sdk.so.1 from it. */
static void arrange(char *dir, const char *sdk_from)
{
	char path[PATH_MAX];

	strcpy(dir, "/tmp/ra-late-check.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/liblate_tool.so", dir);
	assert_int_equal(copy_file(TOOL, path, 0755), 0);
	if (!sdk_from)
		return;
	snprintf(path, sizeof(path), "%s/sdk", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sdk/librocprofiler-sdk.so.1", dir);
	assert_int_equal(copy_file(sdk_from, path, 0755), 0);
}

static void cleanup(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void tool_refused(const char *sdk_from, const char *says)
{
	char dir[PATH_MAX], tool[PATH_MAX + 32], sdk[PATH_MAX];
	struct ra_err e = {0};

	arrange(dir, sdk_from);
	snprintf(tool, sizeof(tool), "%s/liblate_tool.so", dir);
	assert_int_equal(ra_late_tool_sdk(tool, sdk, sizeof(sdk), &e), -1);
	printf("refused: %s\n", e.msg);
	assert_non_null(strstr(e.msg, says));
	assert_null(strchr(e.msg, '\n'));
	cleanup(dir);
}

static void tool_sdk_missing(void **state)
{
	(void)state;
	tool_refused(NULL, "neither in its RUNPATH");
}

/* A file of the SDK's name that is not the SDK (rocprofiler-register's double). */
static void tool_sdk_mismatched(void **state)
{
	(void)state;
	tool_refused(RA_LATE_DIR "/librocprofiler-register.so.0", "is not the");
}

static void tool_without_sdk(void **state)
{
	struct ra_err e = {0};
	char sdk[PATH_MAX];

	(void)state;
	assert_int_equal(ra_late_tool_sdk(RA_TOOL_PATH, sdk, sizeof(sdk), &e), 1);
}

/*
 * The tool's needs against an SDK's exports: the double SDK has all; sdk-lean
 * (1.3.1, the same soname) lacks rocprofiler_get_version, which the tool calls.
 */
static void tool_needs_symbols(void **state)
{
	struct ra_err e = {0};

	(void)state;
	assert_int_equal(ra_late_tool_needs(TOOL, "librocprofiler-sdk.so.1", SDK, &e), 0);
	assert_int_equal(ra_late_tool_needs(TOOL, "librocprofiler-sdk.so.1",
					    RA_LATE_DIR "/sdk-lean/librocprofiler-sdk.so.1", &e),
			 -1);
	printf("refused: %s\n", e.msg);
	assert_non_null(strstr(e.msg, "needs rocprofiler_get_version, which the SDK"));
	assert_null(strchr(e.msg, '\n'));
}

/*
 * Symbol versions: the tool's verneed asks libc.so.6 for GLIBC_2.x, which
 * a file without those version definitions (the double SDK) does not have.
 */
static void tool_needs_versions(void **state)
{
	struct ra_err e = {0};

	(void)state;
	assert_int_equal(ra_late_tool_needs(TOOL, "libc.so.6", SDK, &e), -1);
	printf("refused: %s\n", e.msg);
	assert_non_null(strstr(e.msg, "needs symbol version GLIBC_2."));
	assert_non_null(strstr(e.msg, "of libc.so.6"));
	/* No version asked of a file the tool does not name. */
	assert_int_equal(ra_late_tool_needs(TOOL, "libnothing.so.9", SDK, &e), 0);
}

/* The victim's output, read up to "ready" and kept open while it runs (no SIGPIPE). */
static FILE *victim_out;

/* late_victim with args, once it said "ready" (its stdout through a pipe). */
static pid_t victim(const char *a1, const char *a2)
{
	char line[256];
	int fd[2];
	FILE *f;
	pid_t p;

	assert_int_equal(pipe(fd), 0);
	p = fork();
	assert_true(p >= 0);
	if (!p) {
		dup2(fd[1], 1);
		close(fd[0]);
		execl(RA_LATE_DIR "/late_victim", "late_victim", "--threads", "2", "--seconds",
		      "30", a1, a2, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	while (f && fgets(line, sizeof(line), f) && strncmp(line, "ready", 5))
		;
	assert_int_equal(strncmp(line, "ready", 5), 0);
	victim_out = f;
	return p;
}

static bool untraced(pid_t p)
{
	char path[64], line[256];
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", p);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "TracerPid:", 10))
			ok = atoi(line + 10) == 0;
	if (f)
		fclose(f);
	return ok;
}

static void end(pid_t p)
{
	int st;

	kill(p, SIGCONT);
	kill(p, SIGTERM);
	assert_int_equal(waitpid(p, &st, 0), p);
	fclose(victim_out);
	printf("victim %d: status 0x%x\n", p, st);
	/* Unharmed: every answer right all along (exit 0), ended by our SIGTERM. */
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int check(pid_t p, struct ra_late_plan *plan, struct ra_err *e)
{
	int r = ra_late_check("/proc", p, TOOL, plan, e);

	printf("check of %d: %d %s\n", p, r, e->msg);
	assert_true(untraced(p));
	return r;
}

static void process_go(void **state)
{
	struct ra_late_plan plan;
	struct ra_err e = {0};
	pid_t p = victim(NULL, NULL);

	(void)state;
	assert_int_equal(check(p, &plan, &e), RA_LATE_GO);
	assert_int_equal(plan.ncopies, 1);
	assert_non_null(strstr(plan.copy[0], "librocprofiler-register.so.0"));
	assert_non_null(strstr(plan.sdk, "/sdk/librocprofiler-sdk.so.1"));
	end(p);
}

static void process_two_copies(void **state)
{
	struct ra_late_plan plan;
	struct ra_err e = {0};
	pid_t p = victim("--two-copies", NULL);

	(void)state;
	assert_int_equal(check(p, &plan, &e), RA_LATE_GO);
	assert_int_equal(plan.ncopies, 2);
	end(p);
}

static void process_runs_sdk(void **state)
{
	struct ra_late_plan plan;
	struct ra_err e = {0};
	pid_t p = victim("--with-sdk", NULL);

	(void)state;
	assert_int_equal(check(p, &plan, &e), -1);
	assert_non_null(strstr(e.msg, "already runs a rocprofiler-sdk"));
	assert_non_null(strstr(e.msg, "librocprofiler-sdk.so"));
	end(p);
}

static void process_stopped(void **state)
{
	struct ra_late_plan plan;
	struct ra_err e = {0};
	pid_t p = victim(NULL, NULL);
	char path[64], buf[512] = "";
	FILE *f;
	int st;

	(void)state;
	kill(p, SIGSTOP);
	assert_int_equal(waitpid(p, &st, WUNTRACED), p);
	assert_int_equal(check(p, &plan, &e), -1);
	assert_non_null(strstr(e.msg, "is stopped"));
	/* Still stopped: the check did not resume it. */
	snprintf(path, sizeof(path), "/proc/%d/stat", p);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_non_null(strstr(buf, ") T "));
	end(p);
}

static void process_without_rocm(void **state)
{
	struct ra_late_plan plan;
	struct ra_err e = {0};

	(void)state;
	assert_int_equal(ra_late_check("/proc", getpid(), TOOL, &plan, &e), -1);
	assert_non_null(strstr(e.msg, "maps no librocprofiler-register.so"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names_pinned),	   cmocka_unit_test(tool_sdk_found),
	    cmocka_unit_test(tool_sdk_missing),	   cmocka_unit_test(tool_sdk_mismatched),
	    cmocka_unit_test(tool_without_sdk),	   cmocka_unit_test(tool_needs_symbols),
	    cmocka_unit_test(tool_needs_versions), cmocka_unit_test(process_go),
	    cmocka_unit_test(process_two_copies),  cmocka_unit_test(process_runs_sdk),
	    cmocka_unit_test(process_stopped),	   cmocka_unit_test(process_without_rocm),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

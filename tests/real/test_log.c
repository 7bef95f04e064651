/* SPDX-License-Identifier: MIT */
/*
 * The library's own output, as AMD's front-ends (rocprof-attach, which
 * installs no log callback) see it: with no callback, one line per error on
 * stderr, prefixed; ROCATTACH_LOG_LEVEL=none silences it; a program that
 * installs a callback (even NULL) gets nothing on stderr.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "fault_util.h"

static pid_t sleeper; /* a process without attach listener */
static char out[8192], err[8192];

static int setup(void **state)
{
	(void)state;
	sleeper = fork();
	if (sleeper == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	return sleeper > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	return 0;
}

static size_t drain(int fd, char *buf, size_t len)
{
	size_t used = 0;
	ssize_t n;

	while (used + 1 < len && (n = read(fd, buf + used, len - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	close(fd);
	return used;
}

/* Run the helper in mode with ROCATTACH_LOG_LEVEL=level (NULL: unset); its exit code. */
static int run_helper(const char *mode, const char *level)
{
	int o[2], e[2], status;
	char pid[16];
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", sleeper);
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e, O_CLOEXEC), 0);
	p = fork();
	if (p == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		if (level)
			setenv("ROCATTACH_LOG_LEVEL", level, 1);
		else
			unsetenv("ROCATTACH_LOG_LEVEL");
		execl(RA_LOG_HELPER, RA_LOG_HELPER, mode, pid, (char *)NULL);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	/* Both pipes are small here: the helper writes a line or two, no deadlock. */
	drain(o[0], out, sizeof(out));
	drain(e[0], err, sizeof(err));
	assert_int_equal(waitpid(p, &status, 0), p);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int count_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	int hits = 0;

	for (const char *l = s; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		hits += !strncmp(l, prefix, n);
	return hits;
}

static void test_log_no_callback_one_line_on_stderr(void **state)
{
	const char *levels[] = {NULL, "error", "warning", "trace", "TRACE", "0", "4"};

	(void)state;
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		assert_int_equal(run_helper("none", levels[i]), ROCATTACH_STATUS_ERROR);
		if (count_lines(err) != 1 || count_prefix(err, "rocattach: error: ") != 1)
			fail_msg("ROCATTACH_LOG_LEVEL=%s: stderr is \"%s\"", levels[i], err);
		assert_non_null(strstr(err, "no attach listener"));
		assert_non_null(strstr(err, "rocp-bg-attach"));
		assert_non_null(strstr(err, "ROCP_TOOL_ATTACH=1"));
		assert_string_equal(out, "");
	}
}

static void test_log_level_none_silences_stderr(void **state)
{
	(void)state;
	assert_int_equal(run_helper("none", "none"), ROCATTACH_STATUS_ERROR);
	assert_string_equal(err, "");
	assert_string_equal(out, "");
}

static void test_log_callback_takes_over(void **state)
{
	(void)state;
	assert_int_equal(run_helper("cb", NULL), ROCATTACH_STATUS_ERROR);
	assert_string_equal(err, "");
	assert_int_equal(count_lines(out), 1);
	assert_int_equal(count_prefix(out, "cb 0 "), 1);
	assert_non_null(strstr(out, "ROCP_TOOL_ATTACH=1"));
	/* With a callback, the variable only raises the level: "none" does not mute it. */
	assert_int_equal(run_helper("cb", "none"), ROCATTACH_STATUS_ERROR);
	assert_string_equal(err, "");
	assert_int_equal(count_prefix(out, "cb 0 "), 1);
}

static void test_log_null_callback_discards(void **state)
{
	(void)state;
	assert_int_equal(run_helper("null", NULL), ROCATTACH_STATUS_ERROR);
	assert_string_equal(err, "");
	assert_string_equal(out, "");
	assert_int_equal(run_helper("null", "debug"), ROCATTACH_STATUS_ERROR);
	assert_string_equal(err, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_log_no_callback_one_line_on_stderr),
	    cmocka_unit_test(test_log_level_none_silences_stderr),
	    cmocka_unit_test(test_log_callback_takes_over),
	    cmocka_unit_test(test_log_null_callback_discards),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

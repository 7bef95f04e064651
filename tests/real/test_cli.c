/* SPDX-License-Identifier: MIT */
/* The `rocattach` CLI as a user runs it, on real victims. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/version.h>

#include "victim.h"

static char outdir[256];
static char logbuf[65536];
static char errbuf[8192];

static const struct victim_opts with_agent = {.agent = true, .attach_env = true};

static int setup(void **state)
{
	(void)state;
	make_outdir(outdir, sizeof(outdir));
	setenv("ROCPROF_OUTPUT_PATH", outdir, 1);
	unsetenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	return outdir[0] ? 0 : -1;
}

/* Start the CLI with args; its stderr goes to a pipe that cli_wait reads. */
static pid_t cli_start(const char *const *args, int *errfd)
{
	const char *argv[16] = {RA_CLI_PATH};
	int p[2], n = 1;
	pid_t pid;

	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(p[1], 2);
		execv(RA_CLI_PATH, (char **)argv);
		_exit(127);
	}
	close(p[1]);
	*errfd = p[0];
	return pid;
}

/* Wait for the CLI; returns its exit code (or 128+signal), stderr in errbuf. */
static int cli_wait(pid_t pid, int errfd)
{
	size_t used = 0;
	ssize_t n;
	int status;

	while ((n = read(errfd, errbuf + used, sizeof(errbuf) - 1 - used)) > 0)
		used += (size_t)n;
	errbuf[used] = '\0';
	close(errfd);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cli_run(const char *const *args)
{
	int fd;
	pid_t pid = cli_start(args, &fd);

	return cli_wait(pid, fd);
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_cli_duration_attach_detach(void **state)
{
	char pid[16], events[256];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, "-d", "200", NULL};
	assert_int_equal(cli_run(args), 0);
	tool_log(outdir, v.pid, logbuf, sizeof(logbuf));
	tool_events(logbuf, events, sizeof(events));
	assert_string_equal(events,
			    "configure configure_attach initialize tool_attach tool_detach");
	assert_non_null(strstr(errbuf, "detached from process"));
	assert_true(proc_alive(v.pid));
	assert_int_equal(proc_tracer(v.pid), 0);
	victim_stop(&v);
}

static void test_cli_env_defaults(void **state)
{
	char pid[16];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	setenv("ROCPROF_ATTACH_PID", pid, 1);
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", RA_TOOL_PATH, 1);
	setenv("ROCPROF_ATTACH_DURATION", "100", 1);
	setenv("ROCPROF_ATTACH_CHILDREN", "off", 1);
	const char *args[] = {NULL};
	assert_int_equal(cli_run(args), 0);
	unsetenv("ROCPROF_ATTACH_PID");
	unsetenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	unsetenv("ROCPROF_ATTACH_DURATION");
	unsetenv("ROCPROF_ATTACH_CHILDREN");
	tool_log(outdir, v.pid, logbuf, sizeof(logbuf));
	assert_int_equal(tool_count(logbuf, "tool_detach"), 1);
	victim_stop(&v);
}

static void test_cli_signal_ends_window(void **state)
{
	int sigs[] = {SIGINT, SIGTERM};
	char pid[16];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	for (int i = 0; i < 2; i++) {
		const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, NULL};
		int fd;
		pid_t cli = cli_start(args, &fd);

		/* Without -d and with stdin not a terminal, only a signal ends the window. */
		for (int t = 0; t < 500; t++) {
			tool_log(outdir, v.pid, logbuf, sizeof(logbuf));
			if (tool_count(logbuf, "tool_attach") == i + 1)
				break;
			usleep(10000);
		}
		usleep(100000);
		assert_int_equal(tool_count(logbuf, "tool_detach"), i);
		kill(cli, sigs[i]);
		assert_int_equal(cli_wait(cli, fd), 0);
		tool_log(outdir, v.pid, logbuf, sizeof(logbuf));
		assert_int_equal(tool_count(logbuf, "tool_detach"), i + 1);
	}
	assert_true(proc_alive(v.pid));
	victim_stop(&v);
}

static void test_cli_bad_usage(void **state)
{
	const char *cases[][6] = {
		{NULL},
		{"-p", "abc", NULL},
		{"-p", "-3", NULL},
		{"-p", "1", "-d", "-5", NULL},
		{"-p", "1", "-d", "10ms", NULL},
		{"-p", "1", "--attach-children=maybe", NULL},
		{"-p", "1", "-t", "", NULL},
		{"-p", "1", "--bogus", NULL},
		{"-p", "1", "extra", NULL},
		{"-p", "99999999999", NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(cli_run(cases[i]), 2);
		/* One clear line. */
		assert_int_equal(lines(errbuf), 1);
		assert_non_null(strstr(errbuf, "rocattach: "));
	}
}

static void test_cli_no_listener_one_line_exit_1(void **state)
{
	struct victim_opts o = {.agent = true};
	char pid[16];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &o), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, "--attach-children=false", NULL};
	assert_int_equal(cli_run(args), 1);
	assert_int_equal(lines(errbuf), 1);
	assert_non_null(strstr(errbuf, "ROCP_TOOL_ATTACH=1"));
	/* ... and the other fix. */
	assert_non_null(strstr(errbuf, "--inject"));
	assert_true(proc_alive(v.pid));
	assert_int_equal(proc_tracer(v.pid), 0);
	victim_stop(&v);
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

/*
 * --inject on a process started with neither the agent nor ROCP_TOOL_ATTACH:
 * the whole lifecycle runs, the process is untraced and unharmed, and keeps
 * the agent's two threads (documented). children selects the tree form.
 */
static void inject_plain(bool children)
{
	const struct victim_opts plain = {0};
	char pid[16], events[256], why[256];
	struct victim v;

	assert_int_equal(victim_start(&v, &plain), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	assert_int_equal(proc_thread(v.pid, "rocp-bg-attach"), 0);
	const char *args[] = {"--inject", "-p", pid, "-t", RA_TOOL_PATH, "-d", "200",
			      children ? NULL : "--attach-children=false", NULL};
	if (cli_run(args) != 0)
		fail_msg("rocattach --inject: %s", errbuf);
	tool_log(outdir, v.pid, logbuf, sizeof(logbuf));
	tool_events(logbuf, events, sizeof(events));
	assert_string_equal(events,
			    "configure configure_attach initialize tool_attach tool_detach");
	if (victim_unharmed(&v, true, why, sizeof(why)))
		fail_msg("after rocattach --inject: %s", why);
	assert_int_equal(proc_tracer(v.pid), 0);
	assert_true(proc_thread(v.pid, "rocp-bg-attach") > 0);
	assert_true(proc_thread(v.pid, "rocp-watchdog") > 0);
	victim_stop(&v);
}

static void test_cli_inject_plain_process(void **state)
{
	(void)state;
	inject_plain(false);
}

static void test_cli_inject_plain_tree(void **state)
{
	(void)state;
	inject_plain(true);
}

/* Without -t: the default tool is named once, with the fix; the target is untouched. */
static void test_cli_default_tool_named_once(void **state)
{
	char pid[16], why[256];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-d", "100", NULL};
	assert_int_equal(cli_run(args), 1);
	assert_int_equal(lines(errbuf), 1);
	assert_int_equal(count(errbuf, "librocprofiler-sdk-tool.so.1"), 1);
	assert_non_null(strstr(errbuf, "give the tool with -t "));
	if (victim_unharmed(&v, true, why, sizeof(why)))
		fail_msg("after the failed attach: %s", why);
	/* Not bound by the failure: a named tool attaches afterwards. */
	const char *named[] = {"-p", pid, "-t", RA_TOOL_PATH, "-d", "100", NULL};
	assert_int_equal(cli_run(named), 0);
	victim_stop(&v);
}

static void test_cli_help_and_version(void **state)
{
	const char *help[] = {"--help", NULL};
	const char *version[] = {"--version", NULL};

	(void)state;
	assert_int_equal(cli_run(help), 0);
	assert_int_equal(cli_run(version), 0);
}

/* Ours and the SDK API's version (what rocattach_get_version reports). */
static void test_cli_version_names_both(void **state)
{
	char line[256] = "", want[256];
	FILE *f = popen(RA_CLI_PATH " --version", "r");

	(void)state;
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_int_equal(pclose(f), 0);
	snprintf(want, sizeof(want),
		 "rocattach %s (rocattach-mpi; rocprofiler-sdk rocattach API %s)\n",
		 ROCATTACH_VERSION_STRING, ROCATTACH_SDK_VERSION_STRING);
	assert_string_equal(line, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli_duration_attach_detach),
		cmocka_unit_test(test_cli_env_defaults),
		cmocka_unit_test(test_cli_signal_ends_window),
		cmocka_unit_test(test_cli_bad_usage),
		cmocka_unit_test(test_cli_no_listener_one_line_exit_1),
		cmocka_unit_test(test_cli_inject_plain_process),
		cmocka_unit_test(test_cli_inject_plain_tree),
		cmocka_unit_test(test_cli_default_tool_named_once),
		cmocka_unit_test(test_cli_help_and_version),
		cmocka_unit_test(test_cli_version_names_both),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

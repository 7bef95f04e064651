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

#include "testlib.h"

static char errbuf[8192];

static const struct victim_opts with_agent = {.agent = true, .attach_env = true};

/* The CLI as we are, its stderr in errbuf: its exit code (128 + signal if killed). */
static int run_cli(const char *const *args)
{
	return cli_run(args, 0, errbuf, sizeof(errbuf));
}

static void test_cli_duration_attach_detach(void **state)
{
	const char *logtext;
	char pid[16], events[256];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, "-d", "200", NULL};
	assert_int_equal(run_cli(args), 0);
	logtext = log_of(v.pid);
	tool_events(logtext, events, sizeof(events));
	assert_string_equal(events,
			    "configure configure_attach initialize tool_attach tool_detach");
	assert_non_null(strstr(errbuf, "detached from process"));
	assert_true(proc_alive(v.pid));
	assert_int_equal(proc_tracer(v.pid), 0);
	victim_stop(&v);
}

static void test_cli_env_defaults(void **state)
{
	const char *logtext;
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
	assert_int_equal(run_cli(args), 0);
	unsetenv("ROCPROF_ATTACH_PID");
	unsetenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	unsetenv("ROCPROF_ATTACH_DURATION");
	unsetenv("ROCPROF_ATTACH_CHILDREN");
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_detach"), 1);
	victim_stop(&v);
}

static void test_cli_signal_ends_window(void **state)
{
	const char *logtext;
	int sigs[] = {SIGINT, SIGTERM};
	char pid[16];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	for (int i = 0; i < 2; i++) {
		const char *args[] = {"-p", pid, "-t", RA_TOOL_PATH, NULL};
		int fd;
		pid_t cli = cli_spawn(args, 0, &fd);

		/* Without -d and with stdin not a terminal, only a signal ends the window. */
		for (int t = 0; t < 500; t++) {
			logtext = log_of(v.pid);
			if (tool_count(logtext, "tool_attach") == i + 1)
				break;
			usleep(10000);
		}
		usleep(100000);
		assert_int_equal(tool_count(logtext, "tool_detach"), i);
		kill(cli, sigs[i]);
		assert_int_equal(cli_finish(cli, fd, errbuf, sizeof(errbuf)), 0);
		logtext = log_of(v.pid);
		assert_int_equal(tool_count(logtext, "tool_detach"), i + 1);
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
		assert_int_equal(run_cli(cases[i]), 2);
		/* One clear line. */
		assert_int_equal(count_lines(errbuf), 1);
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
	assert_int_equal(run_cli(args), 1);
	assert_int_equal(count_lines(errbuf), 1);
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
	const char *logtext;
	const struct victim_opts plain = {0};
	char pid[16], events[256];
	struct victim v;

	assert_int_equal(victim_start(&v, &plain), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	assert_int_equal(proc_thread(v.pid, "rocp-bg-attach"), 0);
	const char *args[] = {
	    "--inject",	  "-p", pid,   "-t",
	    RA_TOOL_PATH, "-d", "200", children ? NULL : "--attach-children=false",
	    NULL};
	if (run_cli(args) != 0)
		fail_msg("rocattach --inject: %s", errbuf);
	logtext = log_of(v.pid);
	tool_events(logtext, events, sizeof(events));
	assert_string_equal(events,
			    "configure configure_attach initialize tool_attach tool_detach");
	assert_unharmed(&v, true);
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

/*
 * Without -t the default tool is rocprofv3's, looked for where rocprofv3 looks
 * (ROCM_PATH's lib/rocprofiler-sdk/): missing, one line says where, with the
 * fix; the target is untouched.
 */
static void test_cli_default_tool_named_once(void **state)
{
	char pid[16];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-d", "100", NULL};
	setenv("ROCM_PATH", "/nonexistent-rocm", 1);
	assert_int_equal(run_cli(args), 1);
	unsetenv("ROCM_PATH");
	assert_non_null(strstr(errbuf, "/nonexistent-rocm/lib/rocprofiler-sdk/"));
	assert_int_equal(count_lines(errbuf), 1);
	assert_int_equal(count(errbuf, "lib/rocprofiler-sdk/librocprofiler-sdk-tool.so and .so.1"),
			 1);
	assert_non_null(strstr(errbuf, "looked for "));
	assert_non_null(strstr(errbuf, "give the tool with -t "));
	assert_unharmed(&v, true);
	/* Not bound by the failure: a named tool attaches afterwards. */
	const char *named[] = {"-p", pid, "-t", RA_TOOL_PATH, "-d", "100", NULL};
	assert_int_equal(run_cli(named), 0);
	victim_stop(&v);
}

static void test_cli_help_and_version(void **state)
{
	const char *help[] = {"--help", NULL};
	const char *version[] = {"--version", NULL};

	(void)state;
	assert_int_equal(run_cli(help), 0);
	assert_int_equal(run_cli(version), 0);
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

	return cmocka_run_group_tests(tests, setup_outdir_no_tool, NULL);
}

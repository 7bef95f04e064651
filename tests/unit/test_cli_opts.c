/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cli_opts.h"

static char err[512];

static int parse(struct cli_opts *o, int argc, const char **argv)
{
	return cli_opts_parse(argc, (char **)argv, o, err, sizeof(err));
}

static int clear_env(void **state)
{
	(void)state;
	unsetenv("ROCPROF_ATTACH_PID");
	unsetenv("ROCPROF_ATTACH_DURATION");
	unsetenv("ROCPROF_ATTACH_CHILDREN");
	return 0;
}

static void test_cli_opts_parse_defaults(void **state)
{
	const char *argv[] = {"rocattach", "-p", "42"};
	struct cli_opts o;

	(void)state;
	assert_int_equal(parse(&o, 3, argv), 0);
	assert_int_equal(o.pid, 42);
	assert_null(o.tools);
	assert_int_equal(o.duration_ms, -1);
	assert_true(o.children);
	assert_int_equal(o.call_timeout_ms, 10000);
}

static void test_cli_opts_parse_call_timeout(void **state)
{
	const char *ok[] = {"rocattach", "-p", "42", "--call-timeout", "500"};
	const char *zero[] = {"rocattach", "-p", "42", "--call-timeout", "0"};
	const char *big[] = {"rocattach", "-p", "42", "--call-timeout", "86400001"};
	const char *junk[] = {"rocattach", "-p", "42", "--call-timeout", "5s"};
	struct cli_opts o;

	(void)state;
	assert_int_equal(parse(&o, 5, ok), 0);
	assert_int_equal(o.call_timeout_ms, 500);
	assert_int_equal(parse(&o, 5, zero), -1);
	assert_non_null(strstr(err, "--call-timeout"));
	assert_int_equal(parse(&o, 5, big), -1);
	assert_int_equal(parse(&o, 5, junk), -1);
	assert_null(strchr(err, '\n'));
}

static void test_cli_opts_parse_long_forms(void **state)
{
	const char *argv[] = {"rocattach", "--attach",
			      "7",	   "--attach-tool-library",
			      "a.so:b.so", "--attach-duration-msec",
			      "1500",	   "--attach-children=no",
			      "-v",	   "-v"};
	struct cli_opts o;

	(void)state;
	assert_int_equal(parse(&o, 10, argv), 0);
	assert_int_equal(o.pid, 7);
	assert_string_equal(o.tools, "a.so:b.so");
	assert_int_equal(o.duration_ms, 1500);
	assert_false(o.children);
	assert_int_equal(o.verbose, 2);
}

static void test_cli_opts_parse_env_defaults_and_override(void **state)
{
	const char *argv1[] = {"rocattach"};
	const char *argv2[] = {"rocattach", "-p", "9", "-d", "0", "--attach-children", "1"};
	struct cli_opts o;

	(void)state;
	setenv("ROCPROF_ATTACH_PID", "123", 1);
	setenv("ROCPROF_ATTACH_DURATION", "250", 1);
	setenv("ROCPROF_ATTACH_CHILDREN", "FALSE", 1);
	assert_int_equal(parse(&o, 1, argv1), 0);
	assert_int_equal(o.pid, 123);
	assert_int_equal(o.duration_ms, 250);
	assert_false(o.children);
	assert_int_equal(parse(&o, 7, argv2), 0);
	assert_int_equal(o.pid, 9);
	assert_int_equal(o.duration_ms, 0);
	assert_true(o.children);
	setenv("ROCPROF_ATTACH_DURATION", "soon", 1);
	assert_int_equal(parse(&o, 1, argv1), -1);
	assert_non_null(strstr(err, "ROCPROF_ATTACH_DURATION"));
	clear_env(NULL);
}

static void test_cli_opts_parse_rejects_bad_input(void **state)
{
	const char *bad[][4] = {
	    {"rocattach"},		       /* no pid */
	    {"rocattach", "-p", "0"},	       /* not positive */
	    {"rocattach", "-p", "12x"},	       /* trailing garbage */
	    {"rocattach", "-p", " 5"},	       /* leading space */
	    {"rocattach", "-p", "2147483648"}, /* over INT_MAX */
	    {"rocattach", "-p", "1", "-d"},    /* missing value */
	    {"rocattach", "-p", "1", "-x"},    /* unknown */
	    {"rocattach", "-t", ":::", "-p"},  /* empty list (and missing pid value) */
	};
	int argc[] = {1, 3, 3, 3, 3, 4, 4, 4};
	struct cli_opts o;

	(void)state;
	for (size_t i = 0; i < sizeof(argc) / sizeof(argc[0]); i++) {
		assert_int_equal(parse(&o, argc[i], bad[i]), -1);
		assert_true(strlen(err) > 10);
		assert_null(strchr(err, '\n'));
	}
}

static void test_cli_opts_parse_inject(void **state)
{
	const char *argv1[] = {"rocattach", "-p", "3"};
	const char *argv2[] = {"rocattach", "-p", "3", "--inject", "--attach-children=0"};
	struct cli_opts o;

	(void)state;
	assert_int_equal(parse(&o, 3, argv1), 0);
	assert_false(o.inject);
	assert_int_equal(parse(&o, 5, argv2), 0);
	assert_true(o.inject);
	assert_false(o.children);
}

/* --late-start: no window (-d refused, the variable ignored), no descendants, no --inject. */
static void test_cli_opts_parse_late_start(void **state)
{
	const char *ok[] = {"rocattach", "-p", "3", "--late-start"};
	const char *with_d[] = {"rocattach", "-p", "3", "--late-start", "-d", "100"};
	const char *with_inject[] = {"rocattach", "-p", "3", "--late-start", "--inject"};
	struct cli_opts o;

	(void)state;
	setenv("ROCPROF_ATTACH_DURATION", "500", 1);
	assert_int_equal(parse(&o, 4, ok), 0);
	assert_true(o.late_start);
	assert_false(o.children);
	assert_int_equal(parse(&o, 6, with_d), -1);
	assert_non_null(strstr(err, "drop -d"));
	unsetenv("ROCPROF_ATTACH_DURATION");
	assert_int_equal(parse(&o, 6, with_d), -1);
	assert_int_equal(parse(&o, 5, with_inject), -1);
	assert_non_null(strstr(err, "--late-start and --inject"));
}

/* The one line names the option and where to look. */
static void test_cli_opts_parse_names_bad_option(void **state)
{
	static struct {
		const char *argv[4];
		int argc;
		const char *want;
	} cases[] = {
	    {{"rocattach", "-p", "1", "--foo"}, 4, "unknown option '--foo': see rocattach --help"},
	    {{"rocattach", "-p", "1", "--foo=3"},
	     4,
	     "unknown option '--foo': see rocattach --help"},
	    {{"rocattach", "-p", "1", "-x"}, 4, "unknown option '-x': see rocattach --help"},
	    {{"rocattach", "-p", "1", "-vx"}, 4, "unknown option '-x': see rocattach --help"},
	    {{"rocattach", "-p", "1", "--attach-c"},
	     4,
	     "missing value for option '--attach-c': see rocattach --help"},
	    {{"rocattach", "-p", "1", "--pid"},
	     4,
	     "missing value for option '--pid': see rocattach --help"},
	    {{"rocattach", "-p", "1", "-d"},
	     4,
	     "missing value for option '-d': see rocattach --help"},
	    {{"rocattach", "-p", "1", "--inject=1"},
	     4,
	     "option '--inject' takes no value: see rocattach --help"},
	    /* --attach and --attach-* share the prefix. */
	    {{"rocattach", "-p", "1", "--attach-"},
	     4,
	     "ambiguous option '--attach-': see rocattach --help"},
	};
	struct cli_opts o;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(&o, cases[i].argc, cases[i].argv), -1);
		assert_string_equal(err, cases[i].want);
	}
}

/* -d and ROCPROF_ATTACH_DURATION: up to 7 days, the message rocattach-mpi gives too. */
static void test_cli_opts_parse_duration_limit(void **state)
{
	const char *ok[] = {"rocattach", "-p", "1", "-d", "604800000"};
	const char *over[] = {"rocattach", "-p", "1", "-d", "604800001"};
	struct cli_opts o;

	(void)state;
	assert_int_equal(CLI_MAX_DURATION_MS, 604800000LL);
	assert_int_equal(parse(&o, 5, ok), 0);
	assert_int_equal(o.duration_ms, CLI_MAX_DURATION_MS);
	assert_int_equal(parse(&o, 5, over), -1);
	assert_string_equal(err, "invalid --attach-duration-msec '604800001': give whole "
				 "milliseconds from 0 to 604800000 (7 days)");
	setenv("ROCPROF_ATTACH_DURATION", "1e3", 1);
	assert_int_equal(parse(&o, 3, ok), -1);
	assert_string_equal(err, "invalid ROCPROF_ATTACH_DURATION '1e3': give whole "
				 "milliseconds from 0 to 604800000 (7 days)");
}

static void test_cli_parse_bool_values(void **state)
{
	(void)state;
	assert_int_equal(cli_parse_bool("0"), 0);
	assert_int_equal(cli_parse_bool("Off"), 0);
	assert_int_equal(cli_parse_bool("no"), 0);
	assert_int_equal(cli_parse_bool("false"), 0);
	assert_int_equal(cli_parse_bool("TRUE"), 1);
	assert_int_equal(cli_parse_bool("on"), 1);
	assert_int_equal(cli_parse_bool(""), -1);
	assert_int_equal(cli_parse_bool("2"), -1);
	assert_int_equal(cli_parse_bool(NULL), -1);
}

static void test_cli_parse_ll_bounds(void **state)
{
	long long v;

	(void)state;
	assert_int_equal(cli_parse_ll("10", 0, 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(cli_parse_ll("11", 0, 10, &v), -1);
	assert_int_equal(cli_parse_ll("99999999999999999999", 0, 10, &v), -1);
	assert_int_equal(cli_parse_ll("+1", 0, 10, &v), -1);
	assert_int_equal(cli_parse_ll("", 0, 10, &v), -1);
	/* Found by fuzz_cli_opts: leading blanks other than ' ' were taken. */
	assert_int_equal(cli_parse_ll(" 1", 0, 10, &v), -1);
	assert_int_equal(cli_parse_ll("\t1", 0, 10, &v), -1);
	assert_int_equal(cli_parse_ll("\n1", 0, 10, &v), -1);
	assert_int_equal(cli_parse_ll("-\t1", -10, 10, &v), -1);
	assert_int_equal(cli_parse_ll("-0", 0, 10, &v), -1);
	assert_int_equal(cli_parse_ll("-1", -10, 10, &v), 0);
	assert_int_equal(v, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_cli_opts_parse_defaults, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_call_timeout, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_long_forms, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_env_defaults_and_override, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_rejects_bad_input, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_inject, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_late_start, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_names_bad_option, clear_env),
	    cmocka_unit_test_setup(test_cli_opts_parse_duration_limit, clear_env),
	    cmocka_unit_test(test_cli_parse_bool_values),
	    cmocka_unit_test(test_cli_parse_ll_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

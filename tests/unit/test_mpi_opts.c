/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cli_opts.h"
#include "mpi_opts.h"

static char err[512];
static struct rm_opts o;

#define PARSE(...)                                                                                 \
	({                                                                                         \
		const char *argv_[] = {"rocattach-mpi", __VA_ARGS__};                              \
		rm_opts_free(&o);                                                                  \
		rm_opts_parse((int)(sizeof(argv_) / sizeof(argv_[0])), (char **)argv_, &o, err,    \
			      sizeof(err));                                                        \
	})

static int clear_env(void **state)
{
	(void)state;
	unsetenv("ROCPROF_ATTACH_DURATION");
	return 0;
}

static void test_rm_opts_parse_selectors_and_window(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--slurm-step", "1234.0", "-t", "a.so", "-d", "500", "--jobs", "4",
			       "--report", "/tmp/r.json", "--attach-children=no"),
			 0);
	assert_string_equal(o.sel.slurm_step, "1234.0");
	assert_string_equal(o.tools, "a.so");
	assert_int_equal(o.duration_ms, 500);
	assert_int_equal(o.windows, 1);
	assert_int_equal(o.jobs, 4);
	assert_false(o.sel.children);
	assert_int_equal(o.sel.uid, -1);
	assert_int_equal(PARSE("--pid", "3,4,5", "--pid", "9", "--pid-tree", "7"), 0);
	assert_int_equal(o.sel.n_pids, 4);
	assert_int_equal(o.sel.pids[3], 9);
	assert_int_equal(o.sel.n_trees, 1);
	assert_int_equal(o.duration_ms, -1);
	assert_int_equal(o.call_timeout_ms, 10000);
	assert_int_equal(PARSE("--exe", "x", "--call-timeout", "250"), 0);
	assert_int_equal(o.call_timeout_ms, 250);
}

static void test_rm_opts_parse_mpi_job_forms(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--mpi-job"), 0);
	assert_string_equal(o.sel.mpi_job, "");
	assert_int_equal(PARSE("--mpi-job=prterun-x-1234@1"), 0);
	assert_string_equal(o.sel.mpi_job, "prterun-x-1234@1");
	assert_int_equal(PARSE("--mpi-job="), -1);
	assert_non_null(strstr(err, "--mpi-job= names no job: give --mpi-job=ID"));
	assert_int_equal(PARSE("--mpirun-pid", "77", "--ranks", "0-3,8"), 0);
	assert_int_equal(o.sel.mpirun_pid, 77);
	assert_non_null(o.sel.ranks);
	assert_true(rn_ranks_contains(o.sel.ranks, 8));
	assert_false(rn_ranks_contains(o.sel.ranks, 5));
}

static void test_rm_opts_parse_windows(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "app", "--windows", "5000:1000:3"), 0);
	assert_int_equal(o.delay_ms, 5000);
	assert_int_equal(o.duration_ms, 1000);
	assert_int_equal(o.windows, 3);
	assert_int_equal(PARSE("--exe", "app", "-d", "5", "--windows", "1:2:3"), -1);
	assert_non_null(strstr(err, "either -d or --windows"));
	/* ROCPROF_ATTACH_DURATION is a default, which --windows overrides. */
	setenv("ROCPROF_ATTACH_DURATION", "700", 1);
	assert_int_equal(PARSE("--exe", "app"), 0);
	assert_int_equal(o.duration_ms, 700);
	assert_int_equal(PARSE("--exe", "app", "--windows", "0:100:2"), 0);
	assert_int_equal(o.duration_ms, 100);
	clear_env(NULL);
}

static void test_rm_opts_parse_uid_by_name(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--uid", "root"), 0);
	assert_int_equal(o.sel.uid, 0);
	assert_int_equal(PARSE("--uid", "1000", "--exe", "x"), 0);
	assert_int_equal(o.sel.uid, 1000);
	assert_false(o.sel.all_users);
}

static void test_rm_opts_parse_all_users(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x"), 0);
	assert_false(o.sel.all_users);
	assert_int_equal(PARSE("--mpi-job", "--all-users"), 0);
	assert_true(o.sel.all_users);
	assert_string_equal(o.sel.mpi_job, "");
	/* Not a selector by itself. */
	assert_int_equal(PARSE("--all-users"), -1);
	assert_non_null(strstr(err, "no selector"));
	/* One user or every user, not both. */
	assert_int_equal(PARSE("--exe", "x", "--all-users", "--uid", "0"), -1);
	assert_non_null(strstr(err, "--uid or --all-users"));
	assert_null(strchr(err, '\n'));
}

static void test_rm_opts_parse_rejects_bad_input(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-t", "a.so"), -1); /* no selector */
	assert_non_null(strstr(err, "no selector"));
	assert_int_equal(PARSE("--slurm-step", "x"), -1);
	assert_non_null(strstr(err, "JOBID.STEP"));
	assert_int_equal(PARSE("--slurm-step", "12."), -1);
	assert_int_equal(PARSE("--slurm-step", "12.foo"), -1);
	assert_int_equal(PARSE("--slurm-step", "12.batch"), 0);
	assert_int_equal(PARSE("--pid", "1,,2"), -1);
	assert_int_equal(PARSE("--pid", "-4"), -1);
	assert_int_equal(PARSE("--pid-tree", "0"), -1);
	assert_int_equal(PARSE("--exe", "/bin/sh"), -1);
	assert_int_equal(PARSE("--uid", "no-such-user-here"), -1);
	assert_int_equal(PARSE("--exe", "x", "--ranks", "3-1"), -1);
	assert_int_equal(PARSE("--exe", "x", "--jobs", "0"), -1);
	assert_int_equal(PARSE("--exe", "x", "--jobs", "65537"), -1);
	assert_int_equal(PARSE("--exe", "x", "-d", "-1"), -1);
	assert_int_equal(PARSE("--exe", "x", "-d", "86400001"), -1);
	assert_int_equal(PARSE("--exe", "x", "--call-timeout", "0"), -1);
	assert_int_equal(PARSE("--exe", "x", "--call-timeout", "86400001"), -1);
	assert_int_equal(PARSE("--exe", "x", "--windows", "1:0:2"), -1);
	assert_int_equal(PARSE("--exe", "x", "--windows", "1:2"), -1);
	assert_int_equal(PARSE("--exe", "x", "--windows", "1:2:100001"), -1);
	/* Found by fuzz_mpi_opts: the count's sscanf("%s") dropped what followed a blank. */
	assert_int_equal(PARSE("--exe", "x", "--windows", "1:2:3 junk"), -1);
	assert_int_equal(PARSE("--exe", "x", "--windows", "1:2:3\f"), -1);
	assert_int_equal(PARSE("--exe", "x", "--windows", "1:2:3:4"), -1);
	assert_int_equal(PARSE("--exe", "x", "-d", "100", "--max-window", "50"), -1);
	assert_int_equal(PARSE("--exe", "x", "-t", ":"), -1);
	assert_int_equal(PARSE("--exe", "x", "--rank-var", "A=B"), -1);
	assert_int_equal(PARSE("--exe", "x", "--bogus"), -1);
	assert_int_equal(PARSE("--exe", "x", "stray"), -1);
	assert_null(strchr(err, '\n'));
}

/* --fanout: 2 to 1024, default 32; --gather-slots is refused, naming --fanout. */
static void test_rm_opts_parse_fanout(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x"), 0);
	assert_int_equal(o.fanout, 32);
	assert_int_equal(PARSE("--exe", "x", "--fanout", "2"), 0);
	assert_int_equal(o.fanout, 2);
	assert_int_equal(PARSE("--exe", "x", "--fanout", "1024"), 0);
	assert_int_equal(o.fanout, 1024);
	assert_int_equal(PARSE("--exe", "x", "--fanout", "1"), -1);
	assert_string_equal(err, "invalid --fanout '1': give 2 to 1024");
	assert_int_equal(PARSE("--exe", "x", "--fanout", "1025"), -1);
	assert_int_equal(PARSE("--exe", "x", "--fanout", "4x"), -1);
	assert_int_equal(PARSE("--exe", "x", "--gather-slots", "8"), -1);
	assert_non_null(strstr(err, "--fanout"));
	assert_null(strchr(err, '\n'));
}

/* Named as rocattach names them. */
static void test_rm_opts_parse_names_bad_option(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x", "--foo"), -1);
	assert_string_equal(err, "unknown option '--foo': see rocattach-mpi --help");
	assert_int_equal(PARSE("--exe", "x", "-q"), -1);
	assert_string_equal(err, "unknown option '-q': see rocattach-mpi --help");
	assert_int_equal(PARSE("--exe", "x", "--report"), -1);
	assert_string_equal(err, "missing value for option '--report': see rocattach-mpi --help");
	assert_int_equal(PARSE("--exe", "x", "--dry-run=yes"), -1);
	assert_string_equal(err, "option '--dry-run' takes no value: see rocattach-mpi --help");
	/* --pid and --pid-tree. */
	assert_int_equal(PARSE("--exe", "x", "--pi", "3"), -1);
	assert_string_equal(err, "ambiguous option '--pi': see rocattach-mpi --help");
}

/* -d: the limit and message of rocattach (CLI_MAX_DURATION_MS); --max-window goes as far. */
static void test_rm_opts_parse_duration_limit(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x", "-d", "604800001"), -1);
	assert_string_equal(err, "invalid --attach-duration-msec '604800001': give whole "
				 "milliseconds from 0 to 604800000 (7 days)");
	assert_int_equal(PARSE("--exe", "x", "-d", "604800000", "--max-window", "604800000"), 0);
	assert_int_equal(o.duration_ms, CLI_MAX_DURATION_MS);
	/* The default --max-window (1 day) still bounds -d: the message says what to raise. */
	assert_int_equal(PARSE("--exe", "x", "-d", "86400001"), -1);
	assert_non_null(strstr(err, "raise --max-window"));
	assert_int_equal(PARSE("--exe", "x", "--max-window", "604800001"), -1);
	assert_non_null(strstr(err, "from 1 to 604800000 (7 days)"));
	setenv("ROCPROF_ATTACH_DURATION", "abc", 1);
	assert_int_equal(PARSE("--exe", "x"), -1);
	assert_string_equal(err, "invalid ROCPROF_ATTACH_DURATION 'abc': give whole "
				 "milliseconds from 0 to 604800000 (7 days)");
}

/* --help prints launcher/cli/help/rocattach-mpi.txt, the man page's source, byte for byte. */
static void test_rm_usage_is_the_help_file(void **state)
{
	static char text[32768];
	FILE *f = fopen(RA_TEST_DATA "/../../launcher/cli/help/rocattach-mpi.txt", "r");
	size_t n;

	(void)state;
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_string_equal(rm_usage, text);
	assert_non_null(strstr(rm_usage, "--inject"));
}

static void test_rm_opts_check_outputs_missing_dir(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x", "--report", "/nonexistent-dir/r.json"), 0);
	assert_int_equal(rm_opts_check_outputs(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent-dir"));
	assert_int_equal(PARSE("--exe", "x", "--timeline", "t.svg"), 0);
	assert_int_equal(rm_opts_check_outputs(&o, err, sizeof(err)), 0);
}

static void test_rm_opts_parse_trace(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x", "--trace", "t.json"), 0);
	assert_string_equal(o.trace, "t.json");
	assert_int_equal(rm_opts_check_outputs(&o, err, sizeof(err)), 0);
	assert_int_equal(PARSE("--exe", "x", "--trace", "/nonexistent-dir/t.json"), 0);
	assert_int_equal(rm_opts_check_outputs(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot write --trace '/nonexistent-dir/t.json'"));
	assert_int_equal(PARSE("--exe", "x", "--trace"), -1);
	assert_non_null(strstr(rm_usage, "--trace FILE.json"));
}

static void test_rm_opts_parse_detail(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x"), 0);
	assert_int_equal(o.detail, RM_DETAIL_AUTO);
	assert_int_equal(PARSE("--exe", "x", "--detail", "failures"), 0);
	assert_int_equal(o.detail, RM_DETAIL_FAILURES);
	assert_int_equal(PARSE("--exe", "x", "--detail", "none"), 0);
	assert_int_equal(o.detail, RM_DETAIL_NONE);
	assert_int_equal(PARSE("--exe", "x", "--detail", "all"), 0);
	assert_int_equal(o.detail, RM_DETAIL_ALL);
	assert_int_equal(PARSE("--exe", "x", "--detail", "some"), -1);
	assert_string_equal(err, "invalid --detail 'some': give all, failures or none (the "
				 "per-target records the report and the trace keep)");
	assert_non_null(strstr(rm_usage, "--detail all|failures|none"));
}

static void test_rm_opts_parse_stacks(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x", "--stacks"), 0);
	assert_true(o.stacks);
	assert_int_equal(o.duration_ms, 0); /* one snapshot: no window to wait for */
	assert_int_equal(PARSE("--exe", "x", "--stacks", "-d", "300"), 0);
	assert_int_equal(o.duration_ms, 300);
	setenv("ROCPROF_ATTACH_DURATION", "200", 1);
	assert_int_equal(PARSE("--exe", "x", "--stacks"), 0);
	assert_int_equal(o.duration_ms, 200);
	unsetenv("ROCPROF_ATTACH_DURATION");
	assert_int_equal(PARSE("--exe", "x", "--stacks", "-t", "/lib/libx.so"), -1);
	assert_non_null(strstr(err, "give --stacks without -t"));
	assert_int_equal(PARSE("--exe", "x", "--stacks", "--windows", "100:100:2"), -1);
	assert_non_null(strstr(err, "give --stacks without --windows"));
	assert_int_equal(PARSE("--exe", "x", "--stacks", "--kernel-trace"), -1);
	assert_non_null(strstr(err, "without rocprofv3's options"));
	assert_int_equal(PARSE("--exe", "x", "--stacks-svg", "s.svg"), -1);
	assert_non_null(strstr(err, "add --stacks"));
	assert_int_equal(PARSE("--exe", "x", "--stacks", "--stacks-svg", "/nonexistent-dir/s.svg"),
			 0);
	assert_int_equal(rm_opts_check_outputs(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--stacks-svg"));
}

static void test_rm_opts_parse_late_start(void **state)
{
	static const char *const with[][3] = {{"-d", "100", "-d"},
					      {"--windows", "10:10:2", "--windows"},
					      {"--stacks", NULL, "--stacks"},
					      {"--sample", "99", "--sample"},
					      {"--inject", NULL, "--inject"}};

	(void)state;
	setenv("ROCPROF_ATTACH_DURATION", "200", 1);
	assert_int_equal(PARSE("--exe", "x", "--late-start", "-t", "/lib/libx.so"), 0);
	assert_true(o.late_start);
	assert_int_equal(o.duration_ms, -1); /* no end: the duration is ignored */
	unsetenv("ROCPROF_ATTACH_DURATION");
	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++) {
		if (with[i][1])
			assert_int_equal(
			    PARSE("--exe", "x", "--late-start", with[i][0], with[i][1]), -1);
		else
			assert_int_equal(PARSE("--exe", "x", "--late-start", with[i][0]), -1);
		assert_non_null(strstr(err, "--late-start cannot go with"));
		assert_non_null(strstr(err, with[i][2]));
		assert_null(strchr(err, '\n'));
	}
}

static void test_rm_opts_parse_sample(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x", "--sample", "99", "-d", "1000", "--folded", "f.txt",
			       "--flamegraph", "f.svg", "--flamegraph-per-rank"),
			 0);
	assert_int_equal(o.sample_hz, 99);
	assert_false(o.stacks);
	assert_true(rm_stacks_on(&o));
	assert_string_equal(o.folded, "f.txt");
	assert_string_equal(o.flamegraph, "f.svg");
	assert_true(o.flame_per_rank);
	assert_int_equal(PARSE("--exe", "x", "--sample", "99"), -1);
	assert_non_null(strstr(err, "give its length with -d MS"));
	assert_int_equal(PARSE("--exe", "x", "--sample", "0", "-d", "10"), -1);
	assert_non_null(strstr(err, "1 to 10000"));
	assert_int_equal(PARSE("--exe", "x", "--sample", "10001", "-d", "10"), -1);
	assert_int_equal(PARSE("--exe", "x", "--sample", "99", "-d", "10", "-t", "/l.so"), -1);
	assert_non_null(strstr(err, "give --sample without -t"));
	assert_int_equal(PARSE("--exe", "x", "--sample", "99", "--windows", "1:10:2"), -1);
	assert_non_null(strstr(err, "give --sample without --windows"));
	assert_int_equal(PARSE("--exe", "x", "--folded", "f.txt"), -1);
	assert_non_null(strstr(err, "add --sample HZ"));
	assert_int_equal(PARSE("--exe", "x", "--sample", "9", "-d", "9", "--flamegraph-per-rank"),
			 -1);
	assert_non_null(strstr(err, "add --flamegraph"));
	assert_int_equal(PARSE("--exe", "x", "--stacks", "--sample", "99", "-d", "500"), 0);
	assert_true(o.stacks && o.sample_hz == 99 && o.duration_ms == 500);
}

/* --pprof and --speedscope: the samples of --sample, their paths checked before any attach. */
static void test_rm_opts_parse_profiles(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--exe", "x", "--sample", "99", "-d", "1000", "--pprof", "p.pb.gz",
			       "--speedscope", "s.json"),
			 0);
	assert_string_equal(o.pprof, "p.pb.gz");
	assert_string_equal(o.speedscope, "s.json");
	assert_int_equal(PARSE("--exe", "x", "--pprof", "p.pb.gz"), -1);
	assert_non_null(strstr(err, "add --sample HZ"));
	assert_int_equal(PARSE("--exe", "x", "--speedscope", "s.json"), -1);
	assert_non_null(strstr(err, "add --sample HZ"));
	assert_int_equal(
	    PARSE("--exe", "x", "--sample", "9", "-d", "9", "--pprof", "/nonexistent-dir/p.pb.gz"),
	    0);
	assert_int_equal(rm_opts_check_outputs(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--pprof"));
	assert_int_equal(PARSE("--exe", "x", "--sample", "9", "-d", "9", "--speedscope",
			       "/nonexistent-dir/s.json"),
			 0);
	assert_int_equal(rm_opts_check_outputs(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--speedscope"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_rm_opts_parse_selectors_and_window, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_trace, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_detail, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_stacks, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_sample, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_late_start, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_profiles, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_mpi_job_forms, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_windows, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_uid_by_name, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_all_users, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_rejects_bad_input, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_names_bad_option, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_fanout, clear_env),
	    cmocka_unit_test_setup(test_rm_opts_parse_duration_limit, clear_env),
	    cmocka_unit_test(test_rm_usage_is_the_help_file),
	    cmocka_unit_test_setup(test_rm_opts_check_outputs_missing_dir, clear_env),
	};
	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	rm_opts_free(&o);
	return ret;
}

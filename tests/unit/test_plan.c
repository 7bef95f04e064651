/* SPDX-License-Identifier: MIT */
/* One plan on every rank (launcher/opts/plan.c): what rank 0 resolved, taken as it is. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "mpi_opts.h"
#include "plan.h"

static char err[512];

static int parse(struct rm_opts *o, int argc, const char **argv)
{
	return rm_opts_parse(argc, (char **)argv, o, err, sizeof(err));
}

/* Every field a rank acts on survives the trip, strings and lists included. */
static void test_plan_round_trip(void **state)
{
	const char *argv[] = {"rocattach-mpi",
			      "--pid",
			      "11,12",
			      "--pid-tree",
			      "13",
			      "--mpi-job=ompi.7",
			      "--exe",
			      "app",
			      "--uid",
			      "0",
			      "--ranks",
			      "0-3,8",
			      "--rank-var",
			      "MY_RANK",
			      "--attach-children=no",
			      "-t",
			      "a.so:b.so",
			      "--windows",
			      "100:200:3",
			      "--max-window",
			      "5000",
			      "--start-lead",
			      "40",
			      "--call-timeout",
			      "750",
			      "--jobs",
			      "4",
			      "--fanout",
			      "3",
			      "--inject",
			      "--report",
			      "/tmp/r.json",
			      "--timeline",
			      "/tmp/t.svg",
			      "--trace",
			      "/tmp/p.json",
			      "-v",
			      "-v"};
	struct rm_opts a, b;
	struct rm_plan p = {0};
	char *text;

	(void)state;
	assert_int_equal(parse(&a, sizeof(argv) / sizeof(argv[0]), argv), 0);
	text = rm_plan_encode(&a);
	assert_non_null(text);
	assert_int_equal(rm_plan_decode(text, &b, &p, err, sizeof(err)), 0);
	assert_int_equal(b.sel.n_pids, 2);
	assert_int_equal(b.sel.pids[0], 11);
	assert_int_equal(b.sel.pids[1], 12);
	assert_ptr_equal(b.sel.pids, b.pids);
	assert_int_equal(b.sel.n_trees, 1);
	assert_int_equal(b.sel.trees[0], 13);
	assert_string_equal(b.sel.mpi_job, "ompi.7");
	assert_string_equal(b.sel.exe, "app");
	assert_null(b.sel.slurm_step);
	assert_int_equal(b.sel.uid, 0);
	assert_true(b.have_ranks);
	assert_ptr_equal(b.sel.ranks, &b.ranks);
	assert_true(rn_ranks_contains(&b.ranks, 3) && rn_ranks_contains(&b.ranks, 8));
	assert_false(rn_ranks_contains(&b.ranks, 4));
	assert_string_equal(b.sel.rank_var, "MY_RANK");
	assert_false(b.sel.children);
	assert_false(b.sel.all_users);
	assert_string_equal(b.tools, "a.so:b.so");
	assert_int_equal(b.delay_ms, 100);
	assert_int_equal(b.duration_ms, 200);
	assert_int_equal(b.windows, 3);
	assert_int_equal(b.max_window_ms, 5000);
	assert_int_equal(b.start_lead_ms, 40);
	assert_int_equal(b.call_timeout_ms, 750);
	assert_int_equal(b.jobs, 4);
	assert_int_equal(b.fanout, 3);
	assert_true(b.inject);
	assert_false(b.dry_run);
	assert_string_equal(b.report, "/tmp/r.json");
	assert_string_equal(b.timeline, "/tmp/t.svg");
	assert_string_equal(b.trace, "/tmp/p.json");
	assert_int_equal(b.verbose, 2);
	assert_false(b.stacks);
	assert_false(b.late_start);
	assert_int_equal(b.detail, RM_DETAIL_AUTO);
	free(text);
	rm_plan_free(&p);
	rm_opts_free(&a);
	rm_opts_free(&b);
}

/* --late-start crosses to every rank: each node late-starts its own targets. */
static void test_plan_carries_late_start(void **state)
{
	const char *argv[] = {"rocattach-mpi", "--pid", "7", "--late-start", "-t", "/x/tool.so"};
	struct rm_opts a, b;
	struct rm_plan p = {0};
	char *text;

	(void)state;
	assert_int_equal(parse(&a, sizeof(argv) / sizeof(argv[0]), argv), 0);
	text = rm_plan_encode(&a);
	assert_non_null(text);
	assert_int_equal(rm_plan_decode(text, &b, &p, err, sizeof(err)), 0);
	assert_true(b.late_start);
	assert_int_equal(b.duration_ms, -1);
	assert_string_equal(b.tools, "/x/tool.so");
	free(text);
	rm_plan_free(&p);
	rm_opts_free(&a);
	rm_opts_free(&b);
}

/* --stacks, --sample, --pprof and --speedscope cross to every rank: each node folds its stacks. */
static void test_plan_carries_stacks(void **state)
{
	const char *argv[] = {"rocattach-mpi", "--exe",	  "app",	  "--stacks", "--sample",
			      "250",	       "-d",	  "40",		  "--detail", "none",
			      "--pprof",       "p.pb.gz", "--speedscope", "s.json"};
	struct rm_opts a, b;
	struct rm_plan p = {0};
	char *text;

	(void)state;
	assert_int_equal(parse(&a, sizeof(argv) / sizeof(argv[0]), argv), 0);
	text = rm_plan_encode(&a);
	assert_non_null(text);
	assert_int_equal(rm_plan_decode(text, &b, &p, err, sizeof(err)), 0);
	assert_true(b.stacks);
	assert_int_equal(b.sample_hz, 250);
	assert_int_equal(b.duration_ms, 40);
	assert_int_equal(b.detail, RM_DETAIL_NONE);
	/* Each node sends its timed samples for them. */
	assert_string_equal(b.pprof, "p.pb.gz");
	assert_string_equal(b.speedscope, "s.json");
	free(text);
	rm_plan_free(&p);
	rm_opts_free(&a);
	rm_opts_free(&b);
}

/* A user name is resolved once, by rank 0: the plan carries the number. */
static void test_plan_carries_resolved_uid(void **state)
{
	const char *argv[] = {"rocattach-mpi", "--mpi-job", "--uid", "root", "-d", "100"};
	struct rm_opts a, b;
	struct rm_plan p = {0};
	char *text;

	(void)state;
	assert_int_equal(parse(&a, 6, argv), 0);
	text = rm_plan_encode(&a);
	assert_non_null(strstr(text, "\"uid\":0"));
	assert_null(strstr(text, "root"));
	assert_int_equal(rm_plan_decode(text, &b, &p, err, sizeof(err)), 0);
	assert_int_equal(b.sel.uid, 0);
	assert_string_equal(b.sel.mpi_job, "");
	assert_int_equal(b.duration_ms, 100);
	free(text);
	rm_plan_free(&p);
	rm_opts_free(&a);
}

/*
 * Rank 0's environment defaults are resolved into the plan, and a receiving
 * rank's ROCP* and ROCATTACH_* variables become exactly rank 0's: its own
 * (even an invalid ROCPROF_ATTACH_DURATION) count for nothing.
 */
static void test_plan_environment_is_rank0s(void **state)
{
	const char *argv[] = {"rocattach-mpi", "--exe", "app"};
	struct rm_opts a, b;
	struct rm_plan p = {0};
	char *text;

	(void)state;
	setenv("ROCPROF_ATTACH_DURATION", "300", 1);
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", "/opt/tool.so", 1);
	setenv("ROCATTACH_LOG_LEVEL", "info", 1);
	unsetenv("ROCP_TEST_ONLY_HERE");
	assert_int_equal(parse(&a, 3, argv), 0);
	assert_int_equal(a.duration_ms, 300);
	text = rm_plan_encode(&a);
	assert_non_null(text);
	/* Now "another rank": a different environment of its own. */
	setenv("ROCPROF_ATTACH_DURATION", "junk", 1);
	setenv("ROCPROF_ATTACH_TOOL_LIBRARY", "/nonexistent.so", 1);
	unsetenv("ROCATTACH_LOG_LEVEL");
	setenv("ROCP_TEST_ONLY_HERE", "1", 1);
	setenv("OTHER_VAR", "kept", 1);
	assert_int_equal(rm_plan_decode(text, &b, &p, err, sizeof(err)), 0);
	assert_int_equal(b.duration_ms, 300);
	assert_string_equal(b.sel.exe, "app");
	assert_int_equal(rm_plan_apply_env(&p), 0);
	assert_string_equal(getenv("ROCPROF_ATTACH_DURATION"), "300");
	assert_string_equal(getenv("ROCPROF_ATTACH_TOOL_LIBRARY"), "/opt/tool.so");
	assert_string_equal(getenv("ROCATTACH_LOG_LEVEL"), "info");
	assert_null(getenv("ROCP_TEST_ONLY_HERE"));
	assert_string_equal(getenv("OTHER_VAR"), "kept");
	free(text);
	rm_plan_free(&p);
	unsetenv("ROCPROF_ATTACH_DURATION");
	unsetenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	unsetenv("ROCATTACH_LOG_LEVEL");
	unsetenv("OTHER_VAR");
}

/* A damaged plan is refused with a reason, never half taken. */
static void test_plan_refuses_damage(void **state)
{
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"uid\": 0}",
	    "not json",
	    /* a pid of the wrong form */
	    "{\"pids\":[-1],\"trees\":[],\"slurm_step\":null,\"mpirun_pid\":0,\"mpi_job\":null,"
	    "\"exe\":null,\"uid\":-1,\"ranks\":null,\"rank_var\":null,\"children\":true,"
	    "\"all_users\":false,\"tools\":null,\"duration_ms\":1,\"delay_ms\":0,\"windows\":1,"
	    "\"max_window_ms\":9,\"start_lead_ms\":-1,\"jobs\":0,\"inject\":false,\"dry_run\":"
	    "false,\"one_node_per_rank\":false,\"report\":null,\"timeline\":null,\"verbose\":0,"
	    "\"help\":false,\"version\":false,\"env\":{}}",
	};
	struct rm_opts b;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rm_plan p = {0};

		err[0] = '\0';
		assert_int_equal(rm_plan_decode(bad[i], &b, &p, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "rank 0's plan"));
		rm_plan_free(&p);
		rm_opts_free(&b);
	}
}

/*
 * The variables a rank on mpirun's node sends rank 0: taken only whole and
 * well formed; what differs here is named with the value the run uses.
 */
struct diffs {
	char line[4][256];
	size_t n;
};

static void diff_cb(const char *name, const char *here, const char *used, void *arg)
{
	struct diffs *d = arg;

	if (d->n < 4)
		snprintf(d->line[d->n++], sizeof(d->line[0]), "%s %s %s", name,
			 here ? here : "(unset)", used ? used : "(unset)");
}

static void test_plan_env_from_mpirun_node(void **state)
{
	static const char ok[] = "{\"ROCPROF_OUTPUT_PATH\":\"/w/o\",\"ROCP_NEW\":\"1\"}";
	static const char *const bad[] = {
	    "{\"PATH\":\"/bin\"}", "{\"ROCP_A\":1}", "[]", "not json", "{\"ROCP_A=B\":\"x\"}",
	};
	struct rm_plan p = {0};
	struct diffs d = {0};
	char *big;

	(void)state;
	/* None of ours to begin with (the test's environment may have some): "{}" applied. */
	assert_int_equal(rm_plan_env_decode("{}", 3, &p, err, sizeof(err)), 0);
	assert_int_equal(rm_plan_apply_env(&p), 0);
	rm_plan_free(&p);
	setenv("ROCPROF_OUTPUT_PATH", "/here", 1);
	setenv("ROCP_ONLY_HERE", "x", 1);
	unsetenv("ROCP_NEW");
	assert_int_equal(rm_plan_env_decode(ok, sizeof(ok), &p, err, sizeof(err)), 0);
	assert_int_equal(rm_plan_env_diff(&p, diff_cb, &d), 3);
	assert_string_equal(d.line[0], "ROCPROF_OUTPUT_PATH /here /w/o");
	assert_string_equal(d.line[1], "ROCP_NEW (unset) 1");
	assert_string_equal(d.line[2], "ROCP_ONLY_HERE x (unset)");
	assert_int_equal(rm_plan_apply_env(&p), 0);
	assert_string_equal(getenv("ROCPROF_OUTPUT_PATH"), "/w/o");
	assert_string_equal(getenv("ROCP_NEW"), "1");
	assert_null(getenv("ROCP_ONLY_HERE"));
	rm_plan_free(&p);
	unsetenv("ROCPROF_OUTPUT_PATH");
	unsetenv("ROCP_NEW");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(
		    rm_plan_env_decode(bad[i], strlen(bad[i]) + 1, &p, err, sizeof(err)), -1);
		assert_null(p.json);
		assert_true(err[0] != '\0');
	}
	/* No NUL within the length: refused, nothing read past it. */
	assert_int_equal(rm_plan_env_decode(ok, sizeof(ok) - 1, &p, err, sizeof(err)), -1);
	/* Longer than the bound: refused. */
	big = calloc(1, RM_PLAN_ENV_MAX + 2);
	assert_non_null(big);
	memset(big, ' ', RM_PLAN_ENV_MAX);
	big[0] = '{';
	big[RM_PLAN_ENV_MAX] = '}';
	assert_int_equal(rm_plan_env_decode(big, RM_PLAN_ENV_MAX + 2, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than 65536 bytes"));
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan_round_trip),
	    cmocka_unit_test(test_plan_carries_stacks),
	    cmocka_unit_test(test_plan_carries_late_start),
	    cmocka_unit_test(test_plan_carries_resolved_uid),
	    cmocka_unit_test(test_plan_environment_is_rank0s),
	    cmocka_unit_test(test_plan_refuses_damage),
	    cmocka_unit_test(test_plan_env_from_mpirun_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * The selectors on captured trees (tests/data/): environ, cgroups,
 * --slurm-step on cgroup v1, v2 and from environ, rank rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select_base.h"
#include "select_fixture.h"

#define V1 RA_TEST_DATA "/node-cgv1"
#define V2 RA_TEST_DATA "/node-cgv2"
#define ENV RA_TEST_DATA "/node-env"

#define PIDS(...) (const pid_t[]){__VA_ARGS__}, sizeof((const pid_t[]){__VA_ARGS__}) / sizeof(pid_t)
#define NONE NULL, 0
/* A launcher that is not in the tree (sees every step as someone else's). */
#define OUTSIDE 99999

/* ---- helpers ---- */

/* ---- environ ---- */

static void test_rn_environ_get_blob(void **state)
{
	static const char env[] = "A=1\0SLURM_JOB_ID=12\0EMPTY=\0A=2\0X=a=b\0LAST=tail";
	size_t len = sizeof(env) - 1, vlen;
	const char *v;

	(void)state;
	v = rn_environ_get(env, len, "SLURM_JOB_ID", &vlen);
	assert_non_null(v);
	assert_int_equal(vlen, 2);
	assert_memory_equal(v, "12", 2);
	/* A prefix of a name, or a name with a longer prefix, is another name. */
	assert_null(rn_environ_get(env, len, "SLURM_JOB", &vlen));
	assert_null(rn_environ_get(env, len, "JOB_ID", &vlen));
	/* The first occurrence wins, as with getenv(). */
	v = rn_environ_get(env, len, "A", &vlen);
	assert_true(vlen == 1 && *v == '1');
	v = rn_environ_get(env, len, "EMPTY", &vlen);
	assert_non_null(v);
	assert_int_equal(vlen, 0);
	v = rn_environ_get(env, len, "X", &vlen);
	assert_true(vlen == 3 && !memcmp(v, "a=b", 3));
	/* The last entry may lack its NUL. */
	v = rn_environ_get(env, len, "LAST", &vlen);
	assert_true(vlen == 4 && !memcmp(v, "tail", 4));
	assert_null(rn_environ_get(env, len, "", &vlen));
	assert_null(rn_environ_get(env, 0, "A", &vlen));
	assert_null(rn_environ_get(NULL, 0, "A", &vlen));
	/* Cut in the middle of "SLURM_JOB_ID=12": the name alone does not count. */
	assert_null(rn_environ_get(env, 16, "SLURM_JOB_ID", &vlen));
}

static void test_rn_environ_get_captured(void **state)
{
	const char *v;
	char *env;
	size_t len, vlen;

	(void)state;
	assert_int_equal(ra_read_file(ENV "/504/environ", &env, &len), 0);
	v = rn_environ_get(env, len, "PMIX_NAMESPACE", &vlen);
	assert_non_null(v);
	assert_int_equal(vlen, strlen("prterun-node1-502@1"));
	assert_memory_equal(v, "prterun-node1-502@1", vlen);
	assert_int_equal(rn_environ_rank(env, len, NULL), 0);
	free(env);
}

static long rank_in(const char *env, size_t len, const char *var)
{
	return rn_environ_rank(env, len, var);
}

#define RANK(blob, var) rank_in(blob, sizeof(blob) - 1, var)

static void test_rn_environ_rank_order_and_values(void **state)
{
	(void)state;
	/* mpirun in sbatch: SLURM_PROCID is 0 everywhere, the MPI variable decides. */
	assert_int_equal(RANK("SLURM_PROCID=0\0OMPI_COMM_WORLD_RANK=3\0PMIX_RANK=3\0", NULL), 3);
	assert_int_equal(RANK("MV2_COMM_WORLD_RANK=8\0PMI_RANK=7\0PMIX_RANK=6\0", NULL), 6);
	assert_int_equal(RANK("MV2_COMM_WORLD_RANK=8\0PMI_RANK=7\0", NULL), 7);
	assert_int_equal(RANK("SLURM_PROCID=2\0MV2_COMM_WORLD_RANK=8\0", NULL), 8);
	assert_int_equal(RANK("SLURM_PROCID=2\0", NULL), 2);
	assert_int_equal(RANK("HOME=/\0", NULL), -1);
	assert_int_equal(RANK("PMI_RANK=2147483647\0", NULL), 2147483647L);
	/* A bad value means no rank; the next variable is not tried. */
	assert_int_equal(RANK("OMPI_COMM_WORLD_RANK=x1\0PMIX_RANK=4\0", NULL), -1);
	assert_int_equal(RANK("PMIX_RANK=\0", NULL), -1);
	assert_int_equal(RANK("PMIX_RANK=-1\0", NULL), -1);
	assert_int_equal(RANK("PMIX_RANK=+1\0", NULL), -1);
	assert_int_equal(RANK("PMIX_RANK= 1\0", NULL), -1);
	assert_int_equal(RANK("PMIX_RANK=1 \0", NULL), -1);
	assert_int_equal(RANK("PMIX_RANK=2147483648\0", NULL), -1);
	/* --rank-var: that variable only. */
	assert_int_equal(RANK("PMIX_RANK=1\0MY_RANK=5\0", "MY_RANK"), 5);
	assert_int_equal(RANK("PMIX_RANK=1\0", "MY_RANK"), -1);
	assert_int_equal(RANK("SLURM_PROCID=0\0OMPI_COMM_WORLD_RANK=3\0", "SLURM_PROCID"), 0);
	assert_int_equal(rn_environ_rank(NULL, 0, NULL), -1);
}

/* ---- cgroup ---- */

static void expect_step(const char *text, int found, uint64_t job, uint64_t step)
{
	uint64_t j = 0, s = 0;
	int r = rn_cgroup_step(text, strlen(text), &j, &s);

	if (r != found || (found && (j != job || s != step)))
		fail_msg("'%s': got %d job %llu step %llx", text, r, (unsigned long long)j,
			 (unsigned long long)s);
}

static void test_rn_cgroup_step_shapes(void **state)
{
	(void)state;
	/* v1, as proctrack/cgroup writes it (test-infra.md), and without a host dir. */
	expect_step("8:pids:/\n6:freezer:/slurm_node1/uid_0/job_12/step_0\n4:memory:/\n", 1, 12, 0);
	expect_step("4:freezer:/slurm/uid_1000/job_7/step_3/task_0\n", 1, 7, 3);
	/* v2 as Slurm's cgroup/v2 plugin builds it. */
	expect_step("0::/system.slice/slurmstepd.scope/job_12/step_0/user/task_0\n", 1, 12, 0);
	expect_step("0::/system.slice/slurmstepd.scope/job_12/step_batch/slurm\n", 1, 12,
		    STEP_BATCH);
	expect_step("0::/system.slice/slurmstepd.scope/job_12/step_extern/user\n", 1, 12,
		    STEP_EXTERN);
	expect_step("0::/x/job_12/step_interactive\n", 1, 12, STEP_INTERACTIVE);
	/* Other names for the job and step directories (Slurm 26.05 and elsewhere). */
	expect_step("0::/system.slice/slurmstepd.scope/job_12.scope/step_0.scope/user\n", 1, 12, 0);
	expect_step("0::/system.slice/slurmstepd.scope/slurm-job-12.scope/step_0/user\n", 1, 12, 0);
	expect_step("0::/slurm/job12/step0\n", 1, 12, 0);
	expect_step("0::/slurm/job-12/step-4\n", 1, 12, 4);
	expect_step("0::/slurm/slurm_job_12/step.5\n", 1, 12, 5);
	expect_step("0::/slurm/job/12/step_1\n", 1, 12, 1);
	expect_step("0::/slurm/jobs/12/step_1\n", 1, 12, 1);
	/* No trailing newline; a cgroup namespace's view ("/.."). */
	expect_step("0::/../../job_12/step_2", 1, 12, 2);
}

static void test_rn_cgroup_step_exact_and_edges(void **state)
{
	(void)state;
	/* A host directory that looks like a job: the last job dir before the step counts. */
	expect_step("6:freezer:/slurm_job5/uid_0/job_12/step_0\n", 1, 12, 0);
	/* A job without a step (slurmstepd between steps): found, no step. */
	expect_step("0::/system.slice/slurmstepd.scope/job_12\n", 1, 12, STEP_NONE);
	/* A line with a step beats an earlier one without. */
	expect_step("4:memory:/slurm/uid_0/job_12\n6:freezer:/slurm/uid_0/job_12/step_3\n", 1, 12,
		    3);
	/* Not jobs: no number, other words, numbers that are not the whole tail. */
	expect_step("0::/user.slice/user-1000.slice/session-3.scope\n", 0, 0, 0);
	expect_step("4:memory:/process_api/ebc76b3a279d4c19b769eb9f3f57c80f\n0::/\n", 0, 0, 0);
	expect_step("0::/slurm/blowjob_12/step_0\n", 0, 0, 0);
	expect_step("0::/slurm/jobs_12/step_0\n", 0, 0, 0);
	expect_step("0::/slurm/job_12x/step_0\n", 0, 0, 0);
	expect_step("0::/slurm/job_0/step_0\n", 0, 0, 0);
	expect_step("0::/slurm/job_4294967296/step_0\n", 0, 0, 0);
	expect_step("0::/slurm/12/step_0\n", 0, 0, 0);
	/* Step names that are not steps; a step before the job does not count. */
	expect_step("0::/slurm/job_12/step_\n", 1, 12, STEP_NONE);
	expect_step("0::/slurm/job_12/steps\n", 1, 12, STEP_NONE);
	expect_step("0::/slurm/job_12/step_foo\n", 1, 12, STEP_NONE);
	expect_step("0::/step_1/job_12\n", 1, 12, STEP_NONE);
	expect_step("0::/slurm/job_123/step_0\n", 1, 123, 0);
	/* Malformed lines are skipped. */
	expect_step("garbage\n\n0:/job_12/step_0\n", 0, 0, 0);
	expect_step("", 0, 0, 0);
}

/* ---- --slurm-step on cgroup v1 ---- */

static void test_rn_select_slurm_step_v1(void **state)
{
	struct rn_selector s = sel_in(V1, 301);
	struct rn_target *t;
	size_t n;

	(void)state;
	/* slurmstepd (200) is not a task; 700's environ says 12.0 but its cgroup 13.0. */
	s.slurm_step = "12.0";
	n = run(&s, &t);
	assert_pids(t, n, PIDS(201, 202, 203, 204));
	assert_int_equal(rank_of(t, n, 201), 0);
	assert_int_equal(rank_of(t, n, 202), 1);
	assert_int_equal(rank_of(t, n, 203), 1);
	/* 204 has an empty environ: the cgroup alone places it, without a rank. */
	assert_int_equal(rank_of(t, n, 204), -1);
	free(t);
	s.slurm_step = "13";
	expect(&s, PIDS(601, 700));
	s.slurm_step = "12.extern";
	expect(&s, PIDS(401));
	s.slurm_step = "12.4294967292";
	expect(&s, PIDS(401));
	s.slurm_step = "12.7";
	expect(&s, NONE);
	s.slurm_step = "99";
	expect(&s, NONE);
}

static void test_rn_select_slurm_step_own_step_excluded(void **state)
{
	struct rn_selector s = sel_in(V1, 301);

	(void)state;
	/* Bare job: every step but ours (12.1: 301-303) and extern (401); srun is Slurm's. */
	s.slurm_step = "12";
	expect(&s, PIDS(201, 202, 203, 204, 501));
	/* Our own step, even when named. */
	s.slurm_step = "12.1";
	expect(&s, NONE);
	/* Seen from outside the job (we are not in the tree), step 1 is like any other. */
	s.self = OUTSIDE;
	expect(&s, PIDS(301, 302, 303));
	s.slurm_step = "12";
	expect(&s, PIDS(201, 202, 203, 204, 301, 302, 303, 501));
}

static void test_rn_select_slurm_step_children(void **state)
{
	struct rn_selector s = sel_in(V1, 301);

	(void)state;
	s.children = true;
	s.slurm_step = "12.batch";
	/* The batch script's srun is no step match but comes along as a descendant. */
	expect(&s, PIDS(501, 502));
	s.children = false;
	expect(&s, PIDS(501));
}

static void test_rn_select_target_fields(void **state)
{
	struct rn_selector s = sel_in(V1, 301);
	const struct rn_target *x;
	struct rn_target *t;
	size_t n;

	(void)state;
	s.slurm_step = "12.0";
	n = run(&s, &t);
	x = find(t, n, 201);
	assert_true(x->listener);
	assert_int_equal(x->nspid, 201);
	assert_int_equal(x->ppid, 200);
	assert_int_equal(x->uid, 0);
	assert_string_equal(x->exe, "lmp");
	assert_int_equal(x->state, RN_FOUND);
	assert_int_equal(x->status, ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(x->agent_status, -1);
	assert_int_equal(x->windows, 0);
	assert_string_equal(x->topo.cpus, "");
	assert_string_equal(x->message, "");
	x = find(t, n, 203);
	assert_false(x->listener);
	assert_string_equal(x->exe, "dash");
	assert_int_equal(x->ppid, 202);
	free(t);
}

/* ---- --slurm-step on cgroup v2 ---- */

static void test_rn_select_slurm_step_v2(void **state)
{
	struct rn_selector s = sel_in(V2, 301);
	struct rn_target *t;
	size_t n;

	(void)state;
	s.slurm_step = "12.0";
	n = run(&s, &t);
	/* 600 sits in a login session (no job dir): its environ says 12.0. */
	assert_pids(t, n, PIDS(201, 202, 203, 600));
	/* 203 runs in a container where it is pid 1. */
	assert_int_equal(find(t, n, 203)->nspid, 1);
	assert_int_equal(find(t, n, 203)->rank, 2);
	assert_int_equal(find(t, n, 202)->nspid, 202);
	free(t);
	s.slurm_step = "12";
	expect(&s, PIDS(201, 202, 203, 600));
	s.slurm_step = "12.1";
	expect(&s, NONE);
	s.slurm_step = "12.extern";
	expect(&s, PIDS(401));
	/* The 26.05 shape: slurm-job-14.scope. */
	s.slurm_step = "14";
	expect(&s, PIDS(501));
	s.slurm_step = "14.0";
	expect(&s, PIDS(501));
}

/* ---- --slurm-step from environ (proctrack/linuxproc) ---- */

static void test_rn_select_slurm_step_environ(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);

	(void)state;
	/* 200 is slurmstepd despite its variables; 202 has only SLURM_JOBID/SLURM_STEPID. */
	s.slurm_step = "20.0";
	expect(&s, PIDS(201, 202));
	/* Batch step processes have no SLURM_STEP_ID: no step to match; 20.2 is ours. */
	s.slurm_step = "20";
	expect(&s, PIDS(201, 202, 301, 302, 303));
	s.slurm_step = "20.2";
	expect(&s, NONE);
	s.slurm_step = "20.batch";
	expect(&s, NONE);
	/* From outside: 401 (the launcher in the data) and its fellow rank 402 and child 403. */
	s.self = OUTSIDE;
	s.slurm_step = "20.2";
	expect(&s, PIDS(401, 402, 403));
}

static void test_rn_select_rank_rules(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);
	struct rn_target *t;
	size_t n;

	(void)state;
	s.slurm_step = "20";
	n = run(&s, &t);
	assert_int_equal(rank_of(t, n, 201), 0);
	assert_int_equal(rank_of(t, n, 202), 1);
	/* PMI_RANK=7 beats MV2_COMM_WORLD_RANK=8 and SLURM_PROCID=0. */
	assert_int_equal(rank_of(t, n, 301), 7);
	assert_int_equal(rank_of(t, n, 302), 3);
	/* OMPI_COMM_WORLD_RANK=x1: no rank, although PMIX_RANK=4 follows. */
	assert_int_equal(rank_of(t, n, 303), -1);
	free(t);
	s.rank_var = "MY_RANK";
	n = run(&s, &t);
	assert_int_equal(rank_of(t, n, 301), 5);
	assert_int_equal(rank_of(t, n, 302), -1);
	free(t);
	s.rank_var = "SLURM_PROCID";
	n = run(&s, &t);
	assert_int_equal(rank_of(t, n, 301), 0);
	assert_int_equal(rank_of(t, n, 302), 1);
	assert_int_equal(rank_of(t, n, 303), 2);
	free(t);
}

static void test_rn_select_ranks_filter(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);
	struct rn_ranks r;
	char err[RN_ERR_MAX];

	(void)state;
	assert_int_equal(rn_ranks_parse("0-3,7", &r, err, sizeof(err)), 0);
	s.ranks = &r;
	s.slurm_step = "20";
	/* 303 has no rank: never in a rank list. */
	expect(&s, PIDS(201, 202, 301, 302));
	s.rank_var = "SLURM_PROCID";
	expect(&s, PIDS(201, 202, 301, 302, 303));
	rn_ranks_free(&r);
	/* --ranks alone is no source. */
	assert_int_equal(rn_ranks_parse("0", &r, err, sizeof(err)), 0);
	s = sel_in(ENV, 401);
	s.ranks = &r;
	expect(&s, NONE);
	rn_ranks_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_environ_get_blob),
	    cmocka_unit_test(test_rn_environ_get_captured),
	    cmocka_unit_test(test_rn_environ_rank_order_and_values),
	    cmocka_unit_test(test_rn_cgroup_step_shapes),
	    cmocka_unit_test(test_rn_cgroup_step_exact_and_edges),
	    cmocka_unit_test(test_rn_select_slurm_step_v1),
	    cmocka_unit_test(test_rn_select_slurm_step_own_step_excluded),
	    cmocka_unit_test(test_rn_select_slurm_step_children),
	    cmocka_unit_test(test_rn_select_target_fields),
	    cmocka_unit_test(test_rn_select_slurm_step_v2),
	    cmocka_unit_test(test_rn_select_slurm_step_environ),
	    cmocka_unit_test(test_rn_select_rank_rules),
	    cmocka_unit_test(test_rn_select_ranks_filter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

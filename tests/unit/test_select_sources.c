/* SPDX-License-Identifier: MIT */
/*
 * The selectors on captured trees (tests/data/): MPI jobs, --exe, --uid,
 * --pid, --pid-tree, nothing to do and bad selectors.
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

static void run_fails(const struct rn_selector *s, const char *msg)
{
	char err[RN_ERR_MAX] = "";
	struct rn_target *t = (void *)1;
	size_t n = 99;

	assert_int_equal(rn_select(s, &t, &n, err, sizeof(err)), -1);
	assert_null(t);
	assert_int_equal(n, 0);
	if (!strstr(err, msg))
		fail_msg("message '%s' lacks '%s'", err, msg);
}

/* ---- MPI jobs ---- */

static void test_rn_select_mpirun_pid(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);
	struct rn_target *t;
	size_t n;

	(void)state;
	/* Not mpirun, not prted (no rank), not the zombie 507; python3 inherited rank 1. */
	s.mpirun_pid = 502;
	n = run(&s, &t);
	assert_pids(t, n, PIDS(504, 505, 506, 508));
	/* SLURM_PROCID is 0 in all of them: the MPI variables decide. */
	assert_int_equal(rank_of(t, n, 504), 0);
	assert_int_equal(rank_of(t, n, 505), 1);
	assert_int_equal(rank_of(t, n, 506), 2);
	assert_int_equal(rank_of(t, n, 508), 1);
	/* No exe link: comm stands in. */
	assert_string_equal(find(t, n, 508)->exe, "python3");
	free(t);
	s.mpirun_pid = 9999;
	/* Not here: perhaps an mpirun on a head node; its job has an ID. */
	run_fails(&s, "process 9999 does not exist: check --mpirun-pid (PIDs are this node's; for "
		      "an mpirun on another node, such as a head node, select its job with "
		      "--mpi-job=ID)");
	/* A rank is no mpirun: say what it is, and what to give. */
	s.mpirun_pid = 504;
	run_fails(&s, "--mpirun-pid 504: process 504 is 'lmp', not mpirun/mpiexec/orterun/prterun: "
		      "give the pid of the job's mpirun");
}

static void test_rn_select_mpirun_pid_ranks_children(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);
	struct rn_ranks r;
	char err[RN_ERR_MAX];

	(void)state;
	assert_int_equal(rn_ranks_parse("0", &r, err, sizeof(err)), 0);
	s.mpirun_pid = 502;
	s.ranks = &r;
	s.children = true;
	/* 504's child 507 is a zombie. */
	expect(&s, PIDS(504));
	rn_ranks_free(&r);
	assert_int_equal(rn_ranks_parse("1", &r, err, sizeof(err)), 0);
	expect(&s, PIDS(505, 508));
	s.children = false;
	expect(&s, PIDS(505, 508));
	rn_ranks_free(&r);
}

static void test_rn_select_mpi_job_id(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);

	(void)state;
	s.mpi_job = "prterun-node1-502@1";
	expect(&s, PIDS(504, 505, 506, 508));
	s.mpi_job = "3735879681";
	expect(&s, PIDS(506));
	/* Exact comparison. */
	s.mpi_job = "prterun-node1-502";
	expect(&s, NONE);
	s.mpi_job = "prterun-node1-502@0";
	expect(&s, NONE);
	/* 602's environ is unreadable: it cannot be placed. */
	s.mpi_job = "prterun-node1-600@1";
	expect(&s, PIDS(601));
}

static void test_rn_select_mpi_job_any_but_ours(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);

	(void)state;
	/*
	 * Every process with an MPI rank but 402, our fellow rank (slurm.pmix.20.2),
	 * and only our user's (root, the real uid of 401): not uid 1000's rank 601.
	 */
	s.mpi_job = "";
	expect(&s, PIDS(301, 302, 303, 504, 505, 506, 508, 700));
	/* Another user's when named, everyone's when asked. */
	s.uid = 1000;
	expect(&s, PIDS(601));
	s.uid = -1;
	s.all_users = true;
	expect(&s, PIDS(301, 302, 303, 504, 505, 506, 508, 601, 700));
	s.self = OUTSIDE;
	expect(&s, PIDS(301, 302, 303, 401, 402, 504, 505, 506, 508, 601, 700));
	/* --rank-var counts as an MPI rank too. */
	s.self = 401;
	s.rank_var = "SLURM_PROCID";
	expect(&s, PIDS(201, 202, 301, 302, 303, 501, 502, 503, 504, 505, 506, 508, 601, 700));
	s.all_users = false;
	expect(&s, PIDS(201, 202, 301, 302, 303, 501, 502, 503, 504, 505, 506, 508, 700));
}

/* --exe alone: only our user's processes; --uid or --all-users widen it. Named jobs are whole. */
static void test_rn_select_unnamed_sources_own_user(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);

	(void)state;
	/* Root's lmp processes, not uid 1000's 601 and 602. */
	s.exe = "lmp";
	expect(&s, PIDS(201, 202, 504, 505, 506));
	s.uid = 1000;
	expect(&s, PIDS(601, 602));
	s.uid = -1;
	s.all_users = true;
	expect(&s, PIDS(201, 202, 504, 505, 506, 601, 602));
	/* mpirun 600 of uid 1000, named by pid: its ranks are its children. */
	s = sel_in(ENV, 401);
	s.children = true;
	s.pids = (pid_t[]){600};
	s.n_pids = 1;
	expect(&s, PIDS(600, 601, 602));
	s.n_pids = 0;
	s.mpi_job = "prterun-node1-600@1";
	expect(&s, PIDS(601));
}

/* ---- --exe, --uid, --pid, --pid-tree ---- */

static void test_rn_select_exe_alone(void **state)
{
	struct rn_selector s = sel_in(V1, 301);

	(void)state;
	/* 302 is our own child. */
	s.exe = "lmp";
	expect(&s, PIDS(201, 202, 204, 601, 700));
	s.exe = "/opt/lammps/bin/lmp";
	expect(&s, PIDS(201, 202, 204, 601, 700));
	s.children = true;
	expect(&s, PIDS(201, 202, 203, 204, 601, 700));
	s.children = false;
	/* 300 is our parent. */
	s.exe = "slurmstepd";
	expect(&s, PIDS(200, 400, 500, 600));
	/* init and kthreadd are never selected. */
	s.exe = "systemd";
	expect(&s, NONE);
	s.exe = "kthreadd";
	expect(&s, NONE);
}

static void test_rn_select_exe_deleted_and_comm(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);
	struct rn_target *t;
	size_t n;

	(void)state;
	/*
	 * 700: " (deleted)" dropped; 701: no exe link, so argv[0]'s basename
	 * ("./very_long_application_name"), not its comm (cut to 15 bytes).
	 */
	s.exe = "very_long_application_name";
	n = run(&s, &t);
	assert_pids(t, n, PIDS(700, 701));
	assert_string_equal(find(t, n, 700)->exe, "very_long_application_name");
	assert_string_equal(find(t, n, 701)->exe, "very_long_application_name");
	free(t);
	/* The whole name, never a prefix, never the comm. */
	s.exe = "very_long_appli";
	expect(&s, NONE);
	s.exe = "very_long_application";
	expect(&s, NONE);
	s.exe = "python3";
	expect(&s, PIDS(508));
}

static void test_rn_select_uid(void **state)
{
	struct rn_selector s = sel_in(ENV, 401);
	struct rn_ranks r;
	char err[RN_ERR_MAX];
	struct rn_target *t;
	size_t i, n;

	(void)state;
	s.uid = 1000;
	expect(&s, PIDS(600, 601, 602));
	s.exe = "lmp";
	expect(&s, PIDS(601, 602));
	assert_int_equal(rn_ranks_parse("0", &r, err, sizeof(err)), 0);
	s.ranks = &r;
	expect(&s, PIDS(601));
	rn_ranks_free(&r);
	/* Root's: never init, kernel threads, the zombie, us, our ancestors and children. */
	s = sel_in(ENV, 401);
	s.uid = 0;
	n = run(&s, &t);
	assert_int_equal(n, 18);
	for (i = 0; i < n; i++) {
		assert_true(t[i].pid != 1 && t[i].pid != 2 && t[i].pid != 3 && t[i].pid != 507);
		assert_true(t[i].pid != 100 && t[i].pid != 400 && t[i].pid != 401 &&
			    t[i].pid != 403);
		assert_true(i == 0 || t[i - 1].pid < t[i].pid);
	}
	free(t);
}

static void test_rn_select_pid(void **state)
{
	struct rn_selector s = sel_in(V1, 301);
	pid_t pids[] = {202, 201, 202};
	struct rn_ranks r;
	char err[RN_ERR_MAX];

	(void)state;
	s.pids = pids;
	s.n_pids = 3;
	expect(&s, PIDS(201, 202));
	s.children = true;
	expect(&s, PIDS(201, 202, 203));
	assert_int_equal(rn_ranks_parse("1", &r, err, sizeof(err)), 0);
	s.ranks = &r;
	s.children = false;
	expect(&s, PIDS(202));
	rn_ranks_free(&r);
	s.ranks = NULL;
	/* init, a kernel thread, ourselves, our parent: silently never. */
	pids[0] = 1;
	pids[1] = 2;
	pids[2] = 301;
	expect(&s, NONE);
	pids[0] = 300;
	s.n_pids = 1;
	expect(&s, NONE);
	pids[0] = 999;
	run_fails(&s, "process 999 does not exist");
}

static void test_rn_select_pid_tree(void **state)
{
	struct rn_selector s = sel_in(V1, 301);
	pid_t trees[] = {200, 600};

	(void)state;
	s.trees = trees;
	s.n_trees = 1;
	/* Named explicitly, slurmstepd is a process like any other. */
	expect(&s, PIDS(200, 201, 202, 203, 204));
	s.exe = "lmp";
	expect(&s, PIDS(201, 202, 204));
	s.children = true;
	expect(&s, PIDS(201, 202, 203, 204));
	s.n_trees = 2;
	expect(&s, PIDS(201, 202, 203, 204, 601, 700));
	/* Sources unite. */
	s.exe = NULL;
	s.n_trees = 1;
	s.slurm_step = "12.extern";
	expect(&s, PIDS(200, 201, 202, 203, 204, 401));
	trees[0] = 998;
	run_fails(&s, "process 998 does not exist");
}

/* ---- nothing to do, bad selectors ---- */

static void test_rn_select_no_source_no_filter(void **state)
{
	struct rn_selector s = sel_in(V1, 301);
	struct rn_target *t = (void *)1;
	size_t n = 99;

	(void)state;
	expect(&s, NONE);
	s.children = true;
	s.rank_var = "PMI_RANK";
	expect(&s, NONE);
	/* err may be NULL. */
	assert_int_equal(rn_select(&s, &t, &n, NULL, 0), 0);
	assert_null(t);
	assert_int_equal(n, 0);
}

static void test_rn_select_invalid(void **state)
{
	static const char *const steps[] = {
	    "x",   "",	  "12.", ".0",	       "12.0.1",	"12.foo", "0",	  "0.1",      "12 ",
	    " 12", "-12", "+12", "4294967296", "12.4294967296", "12_3",	  "12+1", "12.Batch",
	};
	struct rn_selector s = sel_in(V1, 301);
	pid_t bad = 0;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		s.slurm_step = steps[i];
		run_fails(&s, "invalid --slurm-step");
		run_fails(&s, "use JOBID or JOBID.STEP");
	}
	s = sel_in(V1, 301);
	s.exe = "";
	run_fails(&s, "invalid --exe ''");
	s.exe = "/usr/bin/";
	run_fails(&s, "invalid --exe");
	s = sel_in(V1, 301);
	s.uid = -2;
	run_fails(&s, "invalid --uid -2");
	s = sel_in(V1, 301);
	s.rank_var = "";
	s.exe = "lmp";
	run_fails(&s, "invalid --rank-var");
	s.rank_var = "A=B";
	run_fails(&s, "invalid --rank-var");
	s = sel_in(V1, 301);
	s.pids = &bad;
	s.n_pids = 1;
	run_fails(&s, "invalid --pid 0");
	s = sel_in(V1, 301);
	s.trees = &bad;
	s.n_trees = 1;
	run_fails(&s, "invalid --pid-tree 0");
	s = sel_in(V1, 301);
	s.mpirun_pid = -5;
	run_fails(&s, "invalid --mpirun-pid -5");
	s = sel_in(RA_TEST_DATA "/no-such-tree", 301);
	s.exe = "lmp";
	run_fails(&s, "cannot list");
	run_fails(NULL, "no selector");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_select_mpirun_pid),
	    cmocka_unit_test(test_rn_select_mpirun_pid_ranks_children),
	    cmocka_unit_test(test_rn_select_mpi_job_id),
	    cmocka_unit_test(test_rn_select_mpi_job_any_but_ours),
	    cmocka_unit_test(test_rn_select_unnamed_sources_own_user),
	    cmocka_unit_test(test_rn_select_exe_alone),
	    cmocka_unit_test(test_rn_select_exe_deleted_and_comm),
	    cmocka_unit_test(test_rn_select_uid),
	    cmocka_unit_test(test_rn_select_pid),
	    cmocka_unit_test(test_rn_select_pid_tree),
	    cmocka_unit_test(test_rn_select_no_source_no_filter),
	    cmocka_unit_test(test_rn_select_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

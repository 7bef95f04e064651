/* SPDX-License-Identifier: MIT */
/*
 * Selectors on captured trees (tests/data/node-*, see README.md there):
 * node-cgv1 (Slurm on cgroup v1, we are 301 in step 12.1), node-cgv2 (cgroup
 * v2 and the 26.05 shape, we are 301 in 12.1), node-env (proctrack/linuxproc:
 * steps only in environ, an mpirun job in the batch step, we are 401 in 20.2).
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

#define V1 RA_TEST_DATA "/node-cgv1"
#define V2 RA_TEST_DATA "/node-cgv2"
#define ENV RA_TEST_DATA "/node-env"

#define PIDS(...) (const pid_t[]){__VA_ARGS__}, sizeof((const pid_t[]){__VA_ARGS__}) / sizeof(pid_t)
#define NONE NULL, 0
/* A launcher that is not in the tree (sees every step as someone else's). */
#define OUTSIDE 99999

/* ---- helpers ---- */

static struct rn_selector sel_in(const char *tree, pid_t self)
{
	struct rn_selector s = {.uid = -1, .procfs = tree, .self = self};

	return s;
}

static size_t run(const struct rn_selector *s, struct rn_target **t)
{
	char err[RN_ERR_MAX] = "";
	size_t n = 99;

	if (rn_select(s, t, &n, err, sizeof(err)) != 0)
		fail_msg("rn_select: %s", err);
	assert_string_equal(err, "");
	return n;
}

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

static void assert_pids(const struct rn_target *t, size_t n, const pid_t *want, size_t nw)
{
	char got[512] = "";
	size_t i, len = 0;
	bool same = n == nw;

	for (i = 0; i < n; i++) {
		len += (size_t)snprintf(got + len, sizeof(got) - len, " %d", (int)t[i].pid);
		if (i < nw && t[i].pid != want[i])
			same = false;
	}
	if (!same)
		fail_msg("selected:%s", got);
}

/* Run s and compare the pids (ascending) with want. */
static void expect(const struct rn_selector *s, const pid_t *want, size_t nw)
{
	struct rn_target *t = NULL;
	size_t n = run(s, &t);

	assert_pids(t, n, want, nw);
	if (!n)
		assert_null(t);
	free(t);
}

static const struct rn_target *find(const struct rn_target *t, size_t n, pid_t pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].pid == pid)
			return &t[i];
	fail_msg("pid %d not selected", (int)pid);
	return NULL;
}

static long rank_of(const struct rn_target *t, size_t n, pid_t pid)
{
	return find(t, n, pid)->rank;
}

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
	run_fails(&s, "process 9999 does not exist");
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

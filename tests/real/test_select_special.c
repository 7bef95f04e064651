/* SPDX-License-Identifier: MIT */
/*
 * Selectors on the real /proc, the cases of their own: any MPI job but
 * ours, a pid namespace, a step's real cgroup, the listener
 * (select_fakes.h: the fakes).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../skip.h"

#include "node.h"
#include "victim.h"
#include "select_fakes.h"

/* ---- the others ---- */

/*
 * Any MPI job but ours, of our user only: the machine's other jobs may be
 * in, so check ours are in, O1 and L out, and nobody's U left alone.
 */
static void test_select_mpi_job_any_but_ours(void **state)
{
	struct rn_selector s = sel();
	struct rn_target *t;
	size_t n;

	(void)state;
	s.mpi_job = "";
	n = run(&s, &t);
	assert_non_null(find(t, n, R0));
	assert_non_null(find(t, n, R1));
	assert_null(find(t, n, U));
	assert_true(!spawned(NSK) || find(t, n, NSK));
	assert_null(find(t, n, O1));
	assert_null(find(t, n, L));
	assert_null(find(t, n, T0));
	assert_null(find(t, n, DMN));
	for (size_t k = 0; k < n; k++)
		assert_int_equal(t[k].uid, getuid());
	free(t);
	/* Everyone's when asked: U too. */
	s.all_users = true;
	n = run(&s, &t);
	assert_non_null(find(t, n, R0));
	assert_true(!spawned(U) || find(t, n, U));
	assert_null(find(t, n, O1));
	free(t);
	/* Nobody's alone with --uid. */
	s.all_users = false;
	s.uid = NOBODY;
	n = run(&s, &t);
	assert_null(find(t, n, R0));
	assert_true(!spawned(U) || find(t, n, U));
	for (size_t k = 0; k < n; k++)
		assert_int_equal(t[k].uid, NOBODY);
	free(t);
}

static void test_select_pid_namespace(void **state)
{
	struct rn_selector s = sel();
	const struct rn_target *x;
	struct rn_target *t;
	pid_t pid = fakes[NSK].pid;
	size_t n;

	(void)state;
	if (!spawned(NSK))
		RA_SKIP("the fake process in a PID namespace could not start (needs root)");
	s.pids = &pid;
	s.n_pids = 1;
	n = run(&s, &t);
	assert_int_equal(n, 1);
	x = find(t, n, NSK);
	assert_non_null(x);
	assert_int_equal(x->nspid, 1);
	assert_int_equal(x->rank, 5);
	assert_int_equal(x->ppid, fakes[NSP].pid);
	free(t);
}

/* A step's cgroup beats the environ: a process moved into job_J2/step_0 with J.0's variables. */
static void test_select_slurm_step_from_real_cgroup(void **state)
{
	struct rn_selector s = sel();
	struct rn_target *t = NULL, *j0 = NULL;
	size_t n = 0, nj0 = 0;
	char step[64];
	pid_t pid;
	int r;

	(void)state;
	if (geteuid() != 0 || cgroup_make(job + 2) < 0) {
		cgroup_remove();
		RA_SKIP("cannot make a cgroup v2 directory (needs root and a writable cgroup2)");
	}
	r = start_mover(&mover);
	pid = mover;
	s.slurm_step = step;
	snprintf(step, sizeof(step), "%lu.0", job + 2);
	if (r == 0)
		n = run(&s, &t);
	/* Its environ says J.0, its cgroup J+2.0: the cgroup wins. */
	snprintf(step, sizeof(step), "%lu.0", job);
	if (r == 0)
		nj0 = run(&s, &j0);
	stop_mover();
	assert_int_equal(r, 0);
	assert_int_equal(n, 1);
	assert_int_equal(t[0].pid, pid);
	assert_int_equal(nj0, 2);
	assert_non_null(find(j0, nj0, T0));
	assert_non_null(find(j0, nj0, T1));
	free(t);
	free(j0);
}

/* The example target with the agent has a listener thread; the selector sees it. */
static void test_select_listener(void **state)
{
	const struct victim_opts o = {
	    .agent = true, .attach_env = true, .env = {"PMIX_RANK=3", NULL}};
	struct rn_selector s = sel();
	char err[RN_ERR_MAX], want[64];
	struct victim v;
	struct rn_target *t;
	pid_t pid;
	size_t n;

	(void)state;
	assert_int_equal(victim_start(&v, &o), 0);
	pid = v.pid;
	s.pids = &pid;
	s.n_pids = 1;
	n = run(&s, &t);
	victim_stop(&v);
	assert_int_equal(n, 1);
	assert_true(t[0].listener);
	assert_int_equal(t[0].rank, 3);
	assert_int_equal(t[0].ppid, getpid());
	assert_int_equal(t[0].uid, geteuid());
	free(t);
	/* Gone now: an error naming it. */
	assert_int_equal(rn_select(&s, &t, &n, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "process %d does not exist", (int)pid);
	assert_non_null(strstr(err, want));
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_select_mpi_job_any_but_ours),
	    cmocka_unit_test(test_select_pid_namespace),
	    cmocka_unit_test(test_select_slurm_step_from_real_cgroup),
	    cmocka_unit_test(test_select_listener),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, setup, teardown));
}

/* SPDX-License-Identifier: MIT */
/*
 * Selectors on the real /proc, by runs of the same shape: a selector and
 * the fakes it must give (select_fakes.h: fake jobs of sleeping processes
 * with Slurm and MPI environments, decoys, a fake launcher).
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

/* ---- runs of the same shape: a selector, the fakes it must give ---- */

enum uid_kind { UID_ANY, UID_MINE, UID_NOBODY };

#define FAKES(...) ((const int[]){__VA_ARGS__, -1})
#define NONE FAKES(-1)

struct select_case {
	const char *name;
	int self;	  /* the launcher (its step and MPI job are ours): L unless set */
	int need;	  /* a fake that must be running (root only), else the run is skipped */
	const char *step; /* --slurm-step: job + job_off, then this (".0", "" for the bare job) */
	unsigned long job_off;
	bool mpirun; /* --mpirun-pid M */
	const char *mpi_job;
	bool exe; /* --exe with the fakes' name */
	enum uid_kind uid;
	bool all_users, children;
	const char *ranks, *rank_var;
	const int *pids, *trees; /* --pid, --pid-tree: fakes */
	const int *want;	 /* exactly these fakes (those not running left out) */
	const int *ranked;	 /* and these have these ranks */
	const long *rank;
};

static const struct select_case cases[] = {
    /* --slurm-step: LC has J.0's variables but is the launcher's child. */
    {.name = "slurm step J.0",
     .step = ".0",
     .want = FAKES(T0, T1),
     .ranked = FAKES(T0, T1),
     .rank = (const long[]){0, 1}},
    {.name = "slurm step J.0 with children",
     .step = ".0",
     .children = true,
     .want = FAKES(T0, T1, T1C),
     .ranked = FAKES(T1C),
     .rank = (const long[]){-1}},
    {.name = "slurm step J.1, ours", .step = ".1", .children = true, .want = NONE},
    {.name = "slurm job J+1", .step = "", .job_off = 1, .children = true, .want = FAKES(D1)},
    /* O1 shares our step; the batch step's processes have no SLURM_STEP_ID. */
    {.name = "slurm job J skips our own step", .step = "", .want = FAKES(T0, T1)},
    /* A launcher in no step (D2) sees step 1 like any other, L and LC included. */
    {.name = "slurm job J from outside", .self = D2, .step = "", .want = FAKES(L, LC, T0, T1, O1)},
    {.name = "slurm step J.1 from outside", .self = D2, .step = ".1", .want = FAKES(L, O1)},
    /* --mpirun-pid: SLURM_PROCID is 0 in both ranks, the MPI variables give the ranks. */
    {.name = "mpirun pid",
     .mpirun = true,
     .want = FAKES(R0, R1),
     .ranked = FAKES(R0, R1),
     .rank = (const long[]){0, 1}},
    {.name = "mpirun pid with children",
     .mpirun = true,
     .children = true,
     .want = FAKES(R0, R1, R1C)},
    {.name = "mpirun pid with children, rank 1",
     .mpirun = true,
     .children = true,
     .ranks = "1",
     .want = FAKES(R1, R1C)},
    {.name = "mpi job by id", .mpi_job = mpi_ns, .want = FAKES(R0, R1)},
    {.name = "mpi job of another user by id", .mpi_job = other_ns, .want = FAKES(U)},
    /* Alone, --exe reaches our user's processes only; --all-users everyone's. */
    {.name = "exe",
     .exe = true,
     .want = FAKES(T0, T1, T1C, O1, D1, D2, M, R0, R1, DMN, R1C, NSP, NSK)},
    {.name = "exe, all users",
     .exe = true,
     .all_users = true,
     .want = FAKES(T0, T1, T1C, O1, D1, D2, M, R0, R1, DMN, R1C, U, NSP, NSK, D2U)},
    {.name = "exe, our uid",
     .exe = true,
     .uid = UID_MINE,
     .want = FAKES(T0, T1, T1C, O1, D1, D2, M, R0, R1, DMN, R1C, NSP, NSK)},
    {.name = "exe, nobody's", .need = U, .exe = true, .uid = UID_NOBODY, .want = FAKES(U, D2U)},
    /* T1: SLURM_PROCID=1; O1: PMIX_RANK=1; R1: OMPI_COMM_WORLD_RANK=1. */
    {.name = "exe, all users, rank 1",
     .exe = true,
     .all_users = true,
     .ranks = "1",
     .want = FAKES(T1, O1, R1)},
    {.name = "exe, all users, rank 1 of SLURM_PROCID",
     .exe = true,
     .all_users = true,
     .ranks = "1",
     .rank_var = "SLURM_PROCID",
     .want = FAKES(T1, O1)},
    /*
     * --attach-children never reaches a third user: D2's child D2U (nobody)
     * is not ours and not D2's user, whether D2 was found by --exe or named by
     * --pid; --uid nobody or --all-users bring it in. --pid-tree names it.
     */
    {.name = "pid with children of a third user",
     .need = D2U,
     .children = true,
     .pids = FAKES(D2),
     .want = FAKES(D2)},
    {.name = "pid with children, all users",
     .need = D2U,
     .children = true,
     .all_users = true,
     .pids = FAKES(D2),
     .want = FAKES(D2, D2U)},
    /* --uid filters the named D2 (root's) out; its nobody child is no match either. */
    {.name = "pid with children, nobody's",
     .need = D2U,
     .children = true,
     .uid = UID_NOBODY,
     .pids = FAKES(D2),
     .want = NONE},
    {.name = "pid tree of a third user's parent",
     .need = D2U,
     .children = true,
     .trees = FAKES(D2),
     .want = FAKES(D2, D2U)},
    /* Named by --pid, a process of another user keeps its own user's children. */
    {.name = "pid of another user with children",
     .need = D2U,
     .children = true,
     .pids = FAKES(U),
     .want = FAKES(U)},
    {.name = "pids", .pids = FAKES(T0, D2), .want = FAKES(T0, D2)},
    {.name = "pid tree", .trees = FAKES(M), .want = FAKES(M, R0, R1, DMN, R1C)},
    /* Ours never, even by pid. */
    {.name = "pids of our own", .pids = FAKES(L, LC), .want = NONE},
};

/* The pids of fakes idx (-1 ends) into out: their count. */
static size_t fake_pids(const int *idx, pid_t *out)
{
	size_t n = 0;

	for (; idx && *idx >= 0; idx++)
		out[n++] = fakes[*idx].pid;
	return n;
}

static long uid_of(enum uid_kind k)
{
	return k == UID_MINE ? (long)getuid() : k == UID_NOBODY ? NOBODY : -1;
}

static void run_case(void **state)
{
	const struct select_case *c = *state;
	struct rn_selector s = sel();
	struct rn_ranks r = {0};
	pid_t pids[NFAKE], trees[NFAKE];
	char step[64], err[RN_ERR_MAX];

	if (c->need && !spawned(c->need))
		RA_SKIP("%s: its fake process of another user could not start (needs root)",
			c->name);
	s.self = fakes[c->self].pid;
	if (c->step) {
		snprintf(step, sizeof(step), "%lu%s", job + c->job_off, c->step);
		s.slurm_step = step;
	}
	s.mpirun_pid = c->mpirun ? fakes[M].pid : 0;
	s.mpi_job = c->mpi_job;
	s.exe = c->exe ? exe_name : NULL;
	s.uid = uid_of(c->uid);
	s.all_users = c->all_users;
	s.children = c->children;
	s.rank_var = c->rank_var;
	if (c->ranks) {
		assert_int_equal(rn_ranks_parse(c->ranks, &r, err, sizeof(err)), 0);
		s.ranks = &r;
	}
	s.pids = pids;
	s.n_pids = fake_pids(c->pids, pids);
	s.trees = trees;
	s.n_trees = fake_pids(c->trees, trees);
	expect_exactly(&s, c->want);
	if (c->ranked)
		expect_ranks(&s, c->ranked, c->rank);
	rn_ranks_free(&r);
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(cases)];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		tests[i] = (struct CMUnitTest){.name = cases[i].name,
					       .test_func = run_case,
					       .initial_state = (void *)&cases[i]};
	return ra_test_exit(cmocka_run_group_tests(tests, setup, teardown));
}

/* SPDX-License-Identifier: MIT */
/*
 * Selectors on the real /proc: fake jobs made of sleeping processes with
 * Slurm and MPI environments, decoys around them, and a fake launcher whose
 * step and MPI job must be left alone. Every fake runs a private copy of
 * sleep with a unique name, so --exe finds ours and nobody else's, and the
 * job ids are derived from our pid so that parallel runs do not meet.
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

#define NOBODY 65534
#define ENV_MAX 8
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The fakes; parents come before their children. */
enum {
	L,   /* the launcher: J.1, MPI job OWN rank 0 */
	LC,  /* its child, with J.0's variables: ours, so never selected */
	T0,  /* J.0 rank 0 */
	T1,  /* J.0 rank 1 */
	T1C, /* T1's child, no variables */
	O1,  /* J.1 rank 1, MPI job OWN: our step and job, not our process */
	D1,  /* job J+1, step 0 */
	D2,  /* no variables */
	M,   /* "mpirun" in the batch step of J */
	R0,  /* its ranks: SLURM_PROCID=0 in both, as under sbatch */
	R1,
	DMN, /* its daemon: no rank */
	R1C, /* R1's child, no variables */
	U,   /* another user's MPI rank */
	NSP, /* parent of NSK */
	NSK, /* in its own pid namespace: pid 1 there */
	D2U, /* D2's child, another user's, no variables */
	NFAKE
};

struct fake {
	int parent; /* -1: the test */
	bool root_only;
	bool other_uid, new_pidns;
	char env[ENV_MAX][128];
	pid_t pid;
};

static struct fake fakes[NFAKE];
static char dir[64], sleeper[128], exe_name[16], mpirun_link[128];
static unsigned long job;
static char own_ns[64], mpi_ns[64], other_ns[64];

/* ---- making the fakes ---- */

__attribute__((format(printf, 2, 3))) static void add_env(int i, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (k = 0; k < ENV_MAX && fakes[i].env[k][0]; k++)
		;
	assert_true(k < ENV_MAX);
	va_start(ap, fmt);
	vsnprintf(fakes[i].env[k], sizeof(fakes[i].env[k]), fmt, ap);
	va_end(ap);
}

static void slurm(int i, unsigned long j, int step, int procid)
{
	add_env(i, "SLURM_JOB_ID=%lu", j);
	if (step >= 0)
		add_env(i, "SLURM_STEP_ID=%d", step);
	add_env(i, "SLURM_PROCID=%d", procid);
}

static void mpi(int i, const char *ns, int rank)
{
	add_env(i, "PMIX_NAMESPACE=%s", ns);
	add_env(i, "PMIX_RANK=%d", rank);
	add_env(i, "OMPI_COMM_WORLD_RANK=%d", rank);
}

static void plan(void)
{
	int i;

	memset(fakes, 0, sizeof(fakes));
	for (i = 0; i < NFAKE; i++)
		fakes[i].parent = -1;
	fakes[LC].parent = L;
	fakes[T1C].parent = T1;
	fakes[R0].parent = fakes[R1].parent = fakes[DMN].parent = M;
	fakes[R1C].parent = R1;
	fakes[NSK].parent = NSP;
	fakes[D2U].parent = D2;
	fakes[U].root_only = fakes[U].other_uid = true;
	fakes[D2U].root_only = fakes[D2U].other_uid = true;
	fakes[NSP].root_only = fakes[NSK].root_only = fakes[NSK].new_pidns = true;
	slurm(L, job, 1, 0);
	add_env(L, "PMIX_NAMESPACE=%s", own_ns);
	add_env(L, "PMIX_RANK=0");
	slurm(LC, job, 0, 0);
	slurm(T0, job, 0, 0);
	slurm(T1, job, 0, 1);
	slurm(O1, job, 1, 1);
	add_env(O1, "PMIX_NAMESPACE=%s", own_ns);
	add_env(O1, "PMIX_RANK=1");
	slurm(D1, job + 1, 0, 0);
	slurm(M, job, -1, 0);
	slurm(R0, job, -1, 0);
	mpi(R0, mpi_ns, 0);
	slurm(R1, job, -1, 0);
	mpi(R1, mpi_ns, 1);
	slurm(DMN, job, -1, 0);
	mpi(U, other_ns, 0);
	add_env(NSK, "PMIX_RANK=5");
	for (i = 0; i < NFAKE; i++)
		add_env(i, "HOME=/");
}

static bool planned(int i)
{
	return !fakes[i].root_only || geteuid() == 0;
}

/* Running: planned, and its namespace could be made. */
static bool spawned(int i)
{
	return fakes[i].pid > 0;
}

static pid_t spawn(int i, int fd);
static void stop_mover(void);

/* In the child: drop privileges if asked, start our own children, become the sleeper. */
__attribute__((noreturn)) static void become(int i, int fd)
{
	char *argv[] = {exe_name, "120", NULL};
	char *envp[ENV_MAX + 1] = {NULL};
	int j, k = 0;

	if (fakes[i].other_uid && (setgid(NOBODY) < 0 || setuid(NOBODY) < 0))
		_exit(126);
	/* Set after setuid, which clears it; our test dies, we die. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (j = i + 1; j < NFAKE; j++)
		if (fakes[j].parent == i && planned(j) && spawn(j, fd) < 0)
			_exit(125);
	for (j = 0; j < ENV_MAX && fakes[i].env[j][0]; j++)
		envp[k++] = fakes[i].env[j];
	/* The fake mpirun runs as one to --mpirun-pid: its comm, as a script's, says mpirun. */
	execve(i == M ? mpirun_link : sleeper, argv, envp);
	_exit(127);
}

/*
 * Fork fake i and report "i pid" on fd (the child's pid as its parent sees
 * it); "i -1" when a pid namespace cannot be made here (no CAP_SYS_ADMIN).
 */
static pid_t spawn(int i, int fd)
{
	int rec[2];
	pid_t pid = -1;

	/* Only the next child goes to the new namespace: NSP has no other. */
	if (!fakes[i].new_pidns || unshare(CLONE_NEWPID) == 0) {
		pid = fork();
		if (pid == 0)
			become(i, fd);
		if (pid < 0)
			return -1;
	}
	rec[0] = i;
	rec[1] = (int)pid;
	if (write(fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec))
		return -1;
	return pid < 0 ? 0 : pid;
}

static int read_records(int fd, int want)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int rec[2], got = 0;

	while (got < want) {
		if (poll(&p, 1, 5000) <= 0 || read(fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec))
			return -1;
		if (rec[0] < 0 || rec[0] >= NFAKE)
			return -1;
		fakes[rec[0]].pid = rec[1];
		got++;
	}
	return 0;
}

static bool execed(void *arg)
{
	char path[64], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)*(pid_t *)arg);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	return !strcmp(link, sleeper);
}

static int start_fakes(void)
{
	int fd[2], i, r, want = 0;

	if (pipe2(fd, O_CLOEXEC) < 0)
		return -1;
	for (i = 0; i < NFAKE; i++) {
		want += planned(i);
		if (fakes[i].parent < 0 && planned(i) && spawn(i, fd[1]) < 0)
			return -1;
	}
	close(fd[1]);
	r = read_records(fd[0], want);
	close(fd[0]);
	for (i = 0; i < NFAKE && r == 0; i++)
		if (spawned(i) && !wait_until(execed, &fakes[i].pid, 5000))
			r = -1;
	return r;
}

/* A private sleep with a name nobody else runs (comm keeps it whole: < 16 bytes). */
static int make_sleeper(void)
{
	char cmd[512];

	snprintf(exe_name, sizeof(exe_name), "rasel%d", (int)getpid() % 10000000);
	snprintf(dir, sizeof(dir), "/tmp/ra-select-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
		return -1;
	snprintf(sleeper, sizeof(sleeper), "%s/%s", dir, exe_name);
	snprintf(mpirun_link, sizeof(mpirun_link), "%s/mpirun", dir);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s' && chmod 755 '%s'", sleeper, sleeper);
	return system(cmd) == 0 && symlink(exe_name, mpirun_link) == 0 ? 0 : -1;
}

static void reap_all(void)
{
	int tries;

	for (tries = 0; tries < 200; tries++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			return;
		usleep(10 * 1000);
	}
}

static int teardown(void **state);

static int setup(void **state)
{
	/* Orphaned grandchildren come back to us to be reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	job = 700000000ul + (unsigned long)getpid() % 100000000ul;
	snprintf(own_ns, sizeof(own_ns), "ra-select-%d@own", (int)getpid());
	snprintf(mpi_ns, sizeof(mpi_ns), "ra-select-%d@1", (int)getpid());
	snprintf(other_ns, sizeof(other_ns), "ra-select-%d@2", (int)getpid());
	plan();
	if (make_sleeper() < 0 || start_fakes() < 0) {
		fprintf(stderr, "cannot start the fake jobs\n");
		teardown(state);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	int i;

	(void)state;
	stop_mover();
	for (i = NFAKE - 1; i >= 0; i--)
		if (fakes[i].pid > 0)
			kill(fakes[i].pid, SIGKILL);
	reap_all();
	unlink(sleeper);
	unlink(mpirun_link);
	rmdir(dir);
	return 0;
}

/* ---- checking ---- */

static struct rn_selector sel(void)
{
	struct rn_selector s = {.uid = -1, .self = fakes[L].pid};

	return s;
}

static size_t run(const struct rn_selector *s, struct rn_target **t)
{
	char err[RN_ERR_MAX] = "";
	size_t n;

	if (rn_select(s, t, &n, err, sizeof(err)) != 0)
		fail_msg("rn_select: %s", err);
	return n;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The fakes listed (-1 ends), as sorted pids; those not spawned left out. */
static size_t pids_of(const int *idx, pid_t *out)
{
	size_t n = 0;

	for (; *idx >= 0; idx++)
		if (spawned(*idx))
			out[n++] = fakes[*idx].pid;
	qsort(out, n, sizeof(*out), cmp_pid);
	return n;
}

static const struct rn_target *find(const struct rn_target *t, size_t n, int i)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (t[k].pid == fakes[i].pid)
			return &t[k];
	return NULL;
}

/* rn_select gives exactly these fakes. */
static void expect_exactly(const struct rn_selector *s, const int *idx)
{
	pid_t want[NFAKE];
	struct rn_target *t;
	size_t n, nw, k;

	nw = pids_of(idx, want);
	n = run(s, &t);
	for (k = 0; k < n && k < nw; k++)
		if (t[k].pid != want[k])
			break;
	if (k != n || n != nw) {
		for (k = 0; k < n; k++)
			fprintf(stderr, "  got %d %s rank %ld\n", (int)t[k].pid, t[k].exe,
				t[k].rank);
		for (k = 0; k < nw; k++)
			fprintf(stderr, "  want %d\n", (int)want[k]);
		fail_msg("selection differs");
	}
	free(t);
}

static void expect_ranks(const struct rn_selector *s, const int *idx, const long *ranks)
{
	const struct rn_target *x;
	struct rn_target *t;
	size_t n = run(s, &t);

	for (; *idx >= 0; idx++, ranks++) {
		x = find(t, n, *idx);
		assert_non_null(x);
		assert_int_equal(x->rank, *ranks);
	}
	free(t);
}

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
static char cg_dirs[3][256]; /* top, job, step */
static pid_t mover;

static int cgroup_make(unsigned long j)
{
	const char *base;
	int i;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
		base = "/sys/fs/cgroup";
	else if (access("/sys/fs/cgroup/freezer/cgroup.procs", F_OK) == 0)
		base = "/sys/fs/cgroup/freezer";
	else
		return -1;
	snprintf(cg_dirs[0], sizeof(cg_dirs[0]), "%s/ra-select-%d", base, (int)getpid());
	snprintf(cg_dirs[1], sizeof(cg_dirs[1]), "%.200s/job_%lu", cg_dirs[0], j);
	snprintf(cg_dirs[2], sizeof(cg_dirs[2]), "%.230s/step_0", cg_dirs[1]);
	for (i = 0; i < 3; i++)
		if (mkdir(cg_dirs[i], 0755) < 0)
			return -1;
	return 0;
}

static void cgroup_remove(void)
{
	int i;

	for (i = 2; i >= 0; i--)
		if (cg_dirs[i][0])
			rmdir(cg_dirs[i]);
}

static int cgroup_enter(const char *cg, pid_t pid)
{
	char path[320];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "w");
	if (!f)
		return -1;
	r = fprintf(f, "%d\n", (int)pid) < 0;
	return fclose(f) || r ? -1 : 0;
}

/* A second fake with T0's variables (J.0), moved into J+2's step 0; *pid 0 if not started. */
static int start_mover(pid_t *pid)
{
	int fd[2];

	*pid = 0;
	if (pipe2(fd, O_CLOEXEC) < 0)
		return -1;
	*pid = spawn(T0, fd[1]);
	close(fd[1]);
	close(fd[0]);
	if (*pid <= 0) {
		*pid = 0;
		return -1;
	}
	if (!wait_until(execed, pid, 5000) || cgroup_enter(cg_dirs[2], *pid) < 0)
		return -1;
	return 0;
}

static void stop_mover(void)
{
	if (mover > 0) {
		kill(mover, SIGKILL);
		waitpid(mover, NULL, 0);
		mover = 0;
	}
	cgroup_remove();
}

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
	static const struct CMUnitTest others[] = {
	    cmocka_unit_test(test_select_mpi_job_any_but_ours),
	    cmocka_unit_test(test_select_pid_namespace),
	    cmocka_unit_test(test_select_slurm_step_from_real_cgroup),
	    cmocka_unit_test(test_select_listener),
	};
	struct CMUnitTest tests[ARRAY_SIZE(cases) + ARRAY_SIZE(others)];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		tests[i] = (struct CMUnitTest){.name = cases[i].name,
					       .test_func = run_case,
					       .initial_state = (void *)&cases[i]};
	for (i = 0; i < ARRAY_SIZE(others); i++)
		tests[ARRAY_SIZE(cases) + i] = others[i];
	return ra_test_exit(cmocka_run_group_tests(tests, setup, teardown));
}

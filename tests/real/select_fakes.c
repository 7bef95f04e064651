/* SPDX-License-Identifier: MIT */
/* Fake Slurm and MPI jobs of sleeping processes on the real /proc, for the selector tests
 * (select_fakes.h). */
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

struct fake fakes[NFAKE];
char dir[64], sleeper[128], exe_name[16], mpirun_link[128];
unsigned long job;
char own_ns[64], mpi_ns[64], other_ns[64];
/* ---- making the fakes ---- */

__attribute__((format(printf, 2, 3))) void add_env(int i, const char *fmt, ...)
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

void slurm(int i, unsigned long j, int step, int procid)
{
	add_env(i, "SLURM_JOB_ID=%lu", j);
	if (step >= 0)
		add_env(i, "SLURM_STEP_ID=%d", step);
	add_env(i, "SLURM_PROCID=%d", procid);
}

void mpi(int i, const char *ns, int rank)
{
	add_env(i, "PMIX_NAMESPACE=%s", ns);
	add_env(i, "PMIX_RANK=%d", rank);
	add_env(i, "OMPI_COMM_WORLD_RANK=%d", rank);
}

void plan(void)
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

bool planned(int i)
{
	return !fakes[i].root_only || geteuid() == 0;
}

/* Running: planned, and its namespace could be made. */
bool spawned(int i)
{
	return fakes[i].pid > 0;
}

/* In the child: drop privileges if asked, start our own children, become the sleeper. */
__attribute__((noreturn)) void become(int i, int fd)
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
pid_t spawn(int i, int fd)
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

int read_records(int fd, int want)
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

bool execed(void *arg)
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

int start_fakes(void)
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
int make_sleeper(void)
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

void reap_all(void)
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

int setup(void **state)
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

int teardown(void **state)
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

struct rn_selector sel(void)
{
	struct rn_selector s = {.uid = -1, .self = fakes[L].pid};

	return s;
}

size_t run(const struct rn_selector *s, struct rn_target **t)
{
	char err[RN_ERR_MAX] = "";
	size_t n;

	if (rn_select(s, t, &n, err, sizeof(err)) != 0)
		fail_msg("rn_select: %s", err);
	return n;
}

int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The fakes listed (-1 ends), as sorted pids; those not spawned left out. */
size_t pids_of(const int *idx, pid_t *out)
{
	size_t n = 0;

	for (; *idx >= 0; idx++)
		if (spawned(*idx))
			out[n++] = fakes[*idx].pid;
	qsort(out, n, sizeof(*out), cmp_pid);
	return n;
}

const struct rn_target *find(const struct rn_target *t, size_t n, int i)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (t[k].pid == fakes[i].pid)
			return &t[k];
	return NULL;
}

/* rn_select gives exactly these fakes. */
void expect_exactly(const struct rn_selector *s, const int *idx)
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

void expect_ranks(const struct rn_selector *s, const int *idx, const long *ranks)
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

char cg_dirs[3][256]; /* top, job, step */
pid_t mover;
int cgroup_make(unsigned long j)
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

void cgroup_remove(void)
{
	int i;

	for (i = 2; i >= 0; i--)
		if (cg_dirs[i][0])
			rmdir(cg_dirs[i]);
}

int cgroup_enter(const char *cg, pid_t pid)
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
int start_mover(pid_t *pid)
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

void stop_mover(void)
{
	if (mover > 0) {
		kill(mover, SIGKILL);
		waitpid(mover, NULL, 0);
		mover = 0;
	}
	cgroup_remove();
}

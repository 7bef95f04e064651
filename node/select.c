/* SPDX-License-Identifier: MIT */
/*
 * Selectors: which local processes a node attaches to. Users name a job,
 * never remote PIDs; this file turns the names into PIDs.
 *
 * Sources, united (each gives "source matches"):
 *  --pid P...        P itself; a P that does not exist is an error.
 *  --pid-tree P      P and its descendants; likewise.
 *  --slurm-step J.S  every process of step S of job J on this node; a bare J
 *                    means every step of J but ours and the extern step (its
 *                    processes are Slurm's sleep and pam_slurm_adopt'ed
 *                    logins, not tasks). The step of a process comes from
 *                    the first /proc/PID/cgroup line naming a job (v1 and v2,
 *                    several directory shapes, see job_component()), else,
 *                    when no line names a job (proctrack/linuxproc), from
 *                    SLURM_JOB_ID/SLURM_JOBID plus SLURM_STEP_ID/SLURM_STEPID
 *                    in its environ (both required). Processes of our own
 *                    step and slurmstepd/slurmd/srun are never step matches.
 *  --mpirun-pid P    descendants of P (not P) that have an MPI rank; P must exist.
 *  --mpi-job ID      processes whose PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid
 *                    or OMPI_MCA_orte_ess_jobid equals ID exactly; ID "" means
 *                    every process with an MPI rank whose job ids differ from
 *                    ours (our own ids: the same variables in our environ).
 *  With no source, --exe or --uid make every process a source; with neither,
 *  nothing is selected (--ranks alone selects nothing: the launcher refuses it).
 *
 * Whose processes: the sources that name no job or pid (--mpi-job "", and
 * every process for --exe or --uid alone) match only processes whose real
 * uid is in scope: --uid U if given, anyone's with --all-users, else the
 * caller's (the real uid of self, root included). The other sources select
 * exactly what they name, whoever owns it. Descendants added by
 * --attach-children are kept when in scope or of the same real uid as the
 * match they descend from: expansion never reaches a third user.
 *
 * Filters, intersected, on source matches only:
 *  --exe NAME   basename of readlink(/proc/PID/exe) minus " (deleted)"; when the
 *               link is unreadable (another user's process), the basename of
 *               argv[0] (/proc/PID/cmdline). The whole name must be equal:
 *               never a prefix, never the comm (cut to 15 bytes by the
 *               kernel). A NAME with '/' is cut to its basename.
 *  --uid U      real uid.
 *  --ranks L    the process's rank is in L; no rank never matches.
 *
 * Rank: the first variable present among --rank-var alone if given, else
 * OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK, SLURM_PROCID
 * (mpirun inside sbatch leaves SLURM_PROCID=0 in every rank, so the MPI ones
 * come first). A value that is not a clean decimal in 0..2^31-1 means no
 * rank; the next variable is not tried. "An MPI rank" (--mpirun-pid,
 * --mpi-job "") is a valid value of one of the four MPI variables or of
 * --rank-var.
 *
 * Then --attach-children expands each match that survived the filters to its
 * descendants; they get their own rank (-1 if none) and are not filtered.
 *
 * Never selected: pid 1, the launcher (sel->self or getpid()), its ancestors
 * and its descendants, kernel threads (no exe and an empty cmdline), zombies.
 * A source match that is never selected is not expanded either. Processes
 * that exit while we look are dropped. The result is sorted by pid.
 *
 * Everything is read under sel->procfs so tests run on captured trees.
 * sel->cgroupfs is not needed: /proc/PID/cgroup names the step, and a
 * process in another cgroup namespace shows a path relative to ours, which
 * still ends in the job and step directories.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/protocol.h"
#include "select_base.h"

#define TASK_COMM_LEN 16

/* ---- checking the selector ---- */

static int check_pids(struct sel_ctx *c, const pid_t *v, size_t n, const char *opt)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] <= 0)
			return rn_sel_fail(c, "invalid %s %d: a PID is a positive number", opt,
					   (int)v[i]);
	return 0;
}

static int check_filters(struct sel_ctx *c)
{
	const struct rn_selector *s = c->sel;

	if (s->exe && !*rn_sel_base_name(s->exe))
		return rn_sel_fail(c, "invalid --exe '%s': give the executable's name (e.g. lmp)",
				   s->exe);
	if (s->uid < -1 || s->uid > (long)UINT32_MAX - 1)
		return rn_sel_fail(
		    c, "invalid --uid %ld: give a user id (e.g. 1000), or -1 for any", s->uid);
	if (s->rank_var && (!*s->rank_var || strchr(s->rank_var, '=')))
		return rn_sel_fail(c,
				   "invalid --rank-var '%s': give a variable name (e.g. PMI_RANK)",
				   s->rank_var);
	c->exe = s->exe ? rn_sel_base_name(s->exe) : NULL;
	return 0;
}

static int check_selector(struct sel_ctx *c)
{
	const struct rn_selector *s = c->sel;

	if (check_pids(c, s->pids, s->n_pids, "--pid") < 0 ||
	    check_pids(c, s->trees, s->n_trees, "--pid-tree") < 0 || check_filters(c) < 0)
		return -1;
	if (s->mpirun_pid < 0)
		return rn_sel_fail(c, "invalid --mpirun-pid %d: a PID is a positive number",
				   (int)s->mpirun_pid);
	if (s->slurm_step && rn_sel_parse_slurm_step(c, s->slurm_step) < 0)
		return -1;
	return 0;
}

/* ---- sources ---- */

static bool has_source(const struct rn_selector *s)
{
	return s->n_pids || s->n_trees || s->slurm_step || s->mpirun_pid || s->mpi_job;
}

static bool every_process(const struct rn_selector *s)
{
	return !has_source(s) && (s->exe || s->uid >= 0);
}

static int tree_of(struct sel_ctx *c, pid_t pid, const char *opt, pid_t **v, size_t *n)
{
	int r = ra_tree(c->procfs, pid, v, n);

	/* An mpirun elsewhere (a head node) has no pid here: its job has an ID. */
	if (r == -ESRCH)
		return rn_sel_fail(c,
				   "process %d does not exist: check %s (PIDs are this node's%s)",
				   (int)pid, opt,
				   strcmp(opt, "--mpirun-pid") ? ""
							       : "; for an mpirun on another node, "
								 "such as a head node, select its "
								 "job with --mpi-job=ID");
	if (r < 0)
		return rn_sel_fail(c, "listing the descendants of process %d: %s", (int)pid,
				   strerror(-r));
	return 0;
}

static int add_pids(struct sel_ctx *c, struct pidset *src)
{
	size_t i;

	for (i = 0; i < c->sel->n_pids; i++) {
		if (ra_proc_exists(c->procfs, c->sel->pids[i]) < 0)
			return rn_sel_fail(
			    c, "process %d does not exist: check --pid (PIDs are this node's)",
			    (int)c->sel->pids[i]);
		if (rn_pidset_add(src, c->sel->pids[i]) < 0)
			return rn_sel_fail(c, "selecting processes: out of memory");
	}
	return 0;
}

static int add_trees(struct sel_ctx *c, struct pidset *src)
{
	pid_t *v;
	size_t i, n;
	int r = 0;

	for (i = 0; i < c->sel->n_trees && r == 0; i++) {
		if (tree_of(c, c->sel->trees[i], "--pid-tree", &v, &n) < 0)
			return -1;
		r = rn_pidset_add_all(src, v, n);
		free(v);
	}
	return r < 0 ? rn_sel_fail(c, "selecting processes: out of memory") : 0;
}

/*
 * mpirun and its kin (mpirun.openmpi, mpiexec.hydra, orterun, prterun), by
 * executable or by comm: a wrapper script's comm is its own name.
 */
static bool is_mpirun(const struct sel_proc *p)
{
	static const char *const names[] = {"mpirun", "mpiexec", "orterun", "prterun"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(p->exe, names[i], strlen(names[i])) ||
		    !strncmp(p->st.name, names[i], strlen(names[i])))
			return true;
	return false;
}

/* A pid that is no mpirun (a shell, a rank) would select nothing: say what it is. */
static int check_mpirun(struct sel_ctx *c, pid_t pid)
{
	struct sel_proc p;
	bool ok;

	if (rn_sel_proc_load(c, pid, &p) < 0)
		return 0; /* gone or unreadable: tree_of names it */
	ok = is_mpirun(&p);
	rn_sel_proc_free(&p);
	if (ok)
		return 0;
	return rn_sel_fail(
	    c,
	    "--mpirun-pid %d: process %d is '%s', not mpirun/mpiexec/orterun/prterun: "
	    "give the pid of the job's mpirun",
	    (int)pid, (int)pid, p.exe);
}

/* A number from an environ blob, -1 if absent or not a number. */
static long env_number(const char *env, size_t len, const char *name)
{
	char buf[24];
	size_t vlen;
	const char *v = rn_environ_get(env, len, name, &vlen);
	char *end;
	long x;

	if (!v || !vlen || vlen >= sizeof(buf))
		return -1;
	memcpy(buf, v, vlen);
	buf[vlen] = '\0';
	x = strtol(buf, &end, 10);
	return *end || x < 0 ? -1 : x;
}

/*
 * Open MPI tells each rank the job's size and how many ranks share its
 * node: more ranks than this node holds means the mpirun spans several
 * nodes, where its ranks elsewhere are children of a daemon, not of it.
 * Only this node's would be attached: refused, with the selector that works.
 */
static int check_one_node(struct sel_ctx *c, const char *env, size_t len)
{
	long world = env_number(env, len, "OMPI_COMM_WORLD_SIZE");
	long local = env_number(env, len, "OMPI_COMM_WORLD_LOCAL_SIZE");
	size_t vlen = 0;
	const char *job = rn_environ_get(env, len, "PMIX_NAMESPACE", &vlen);

	if (world < 0 || local < 0 || world <= local)
		return 0;
	return rn_sel_fail(c,
			   "--mpirun-pid %d: this mpirun runs ranks on several nodes (%ld ranks, "
			   "%ld on this node) and the others are not its descendants there: "
			   "select the job with --mpi-job=%.*s",
			   (int)c->sel->mpirun_pid, world, local, job ? (int)vlen : 2,
			   job ? job : "ID");
}

/* Ranks among the descendants of mpirun (its daemons, prted/orted, have no rank). */
static int add_mpirun(struct sel_ctx *c, struct pidset *src)
{
	struct sel_proc p;
	const char *env;
	pid_t *v;
	size_t i, n, len;
	int r = 0;

	if (check_mpirun(c, c->sel->mpirun_pid) < 0 ||
	    tree_of(c, c->sel->mpirun_pid, "--mpirun-pid", &v, &n) < 0)
		return -1;
	for (i = 1; i < n && r == 0; i++) {
		if (rn_sel_proc_load(c, v[i], &p) < 0)
			continue;
		env = rn_sel_proc_env(c, &p, &len);
		if (env && rn_sel_env_has_mpi_rank(env, len, c->sel->rank_var)) {
			r = check_one_node(c, env, len);
			if (!r)
				r = rn_pidset_add(src, v[i]) < 0 ? -2 : 0;
		}
		rn_sel_proc_free(&p);
	}
	free(v);
	if (r == -1)
		return -1;
	return r < 0 ? rn_sel_fail(c, "selecting processes: out of memory") : 0;
}

/* One process against the sources that need a look at every process. */
static bool scan_match(struct sel_ctx *c, pid_t pid)
{
	const struct rn_selector *s = c->sel;
	struct sel_proc p;
	bool m;

	if (rn_sel_proc_load(c, pid, &p) < 0)
		return false;
	/* Named: a Slurm step, an MPI job by its ID. */
	m = (s->slurm_step && rn_sel_in_wanted_step(c, &p)) ||
	    (s->mpi_job && *s->mpi_job && rn_sel_in_mpi_job(c, &p));
	/* Unnamed: every process, any MPI job; only whose processes are in scope. */
	if (!m && rn_sel_in_scope(c, p.st.uid_real))
		m = every_process(s) || (s->mpi_job && !*s->mpi_job && rn_sel_in_mpi_job(c, &p));
	rn_sel_proc_free(&p);
	return m;
}

static int scan(struct sel_ctx *c, struct pidset *src)
{
	pid_t *pids;
	size_t i, n;
	int r;

	r = ra_proc_pids(c->procfs, &pids, &n);
	if (r < 0)
		return rn_sel_fail(c, "cannot list %s: %s", c->procfs, strerror(-r));
	for (i = 0; i < n && r == 0; i++)
		if (scan_match(c, pids[i]))
			r = rn_pidset_add(src, pids[i]);
	free(pids);
	return r < 0 ? rn_sel_fail(c, "selecting processes: out of memory") : 0;
}

static int collect_sources(struct sel_ctx *c, struct pidset *src)
{
	const struct rn_selector *s = c->sel;

	if (add_pids(c, src) < 0 || add_trees(c, src) < 0)
		return -1;
	if (s->mpirun_pid && add_mpirun(c, src) < 0)
		return -1;
	if ((s->slurm_step || s->mpi_job || every_process(s)) && scan(c, src) < 0)
		return -1;
	rn_pidset_sort(src);
	return 0;
}

/* ---- filters and expansion ---- */

/* comm is cut to 15 bytes: a full-length comm matches a longer name it starts. */
static bool exe_matches(const struct sel_ctx *c, const struct sel_proc *p)
{
	return p->exe_known && !strcmp(p->exe, c->exe);
}

static bool passes_filters(const struct sel_ctx *c, struct sel_proc *p)
{
	const char *env;
	size_t len;

	if (!rn_sel_proc_eligible(c, p))
		return false;
	if (c->exe && !exe_matches(c, p))
		return false;
	if (c->sel->uid >= 0 && p->st.uid_real != (uid_t)c->sel->uid)
		return false;
	if (!c->sel->ranks)
		return true;
	env = rn_sel_proc_env(c, p, &len);
	return rn_ranks_contains(c->sel->ranks, rn_environ_rank(env, len, c->sel->rank_var));
}

/* The match (v[0]) and those of its descendants v[1..n) that are in scope or of its user. */
static int add_tree(struct sel_ctx *c, const struct sel_proc *match, const pid_t *v, size_t n,
		    struct pidset *all)
{
	struct ra_status st;
	size_t j;
	int r = rn_pidset_add(all, v[0]);

	for (j = 1; j < n && r == 0; j++) {
		if (ra_status_read(c->procfs, v[j], &st) < 0)
			continue;
		if (st.uid_real == match->st.uid_real || rn_sel_in_scope(c, st.uid_real))
			r = rn_pidset_add(all, v[j]);
	}
	return r;
}

/* Filtered source matches, each with its descendants when asked. */
static int expand(struct sel_ctx *c, const struct pidset *src, struct pidset *all)
{
	struct sel_proc p;
	pid_t *v;
	size_t i, n;
	bool keep;
	int r = 0;

	for (i = 0; i < src->n && r == 0; i++) {
		/*
		 * A match already listed is a descendant of one expanded before:
		 * its own descendants are listed too. Skipping it keeps a tree of
		 * n processes (--pid-tree with --attach-children, every node a
		 * match) at one walk instead of n walks of up to n processes.
		 */
		if (c->sel->children && rn_pidset_has(all, src->v[i]))
			continue;
		if (rn_sel_proc_load(c, src->v[i], &p) < 0)
			continue;
		keep = passes_filters(c, &p);
		if (!keep || !c->sel->children) {
			rn_sel_proc_free(&p);
			if (keep)
				r = rn_pidset_add(all, src->v[i]);
			continue;
		}
		r = ra_tree(c->procfs, src->v[i], &v, &n);
		if (r == 0)
			r = add_tree(c, &p, v, n, all);
		rn_sel_proc_free(&p);
		free(v);
		rn_pidset_sort(all);
		if (r == -ESRCH)
			r = 0;
	}
	if (r < 0)
		return rn_sel_fail(c, "listing the descendants of the selected processes: %s",
				   strerror(-r));
	rn_pidset_sort(all);
	return 0;
}

/* ---- targets ---- */

static void fill_target(struct sel_ctx *c, struct sel_proc *p, struct rn_target *t)
{
	const char *env;
	size_t len;
	pid_t tid;

	memset(t, 0, sizeof(*t));
	t->pid = p->pid;
	t->nspid = p->st.nspid_n > 0 ? p->st.nspid[p->st.nspid_n - 1] : p->pid;
	env = rn_sel_proc_env(c, p, &len);
	t->rank = rn_environ_rank(env, len, c->sel->rank_var);
	if (env)
		rn_environ_job(env, len, t->job, sizeof(t->job));
	t->uid = p->st.uid_real;
	t->ppid = p->st.ppid;
	snprintf(t->exe, sizeof(t->exe), "%s", p->exe);
	t->listener = ra_find_thread_by_comm(c->procfs, p->pid, RA_LISTENER_COMM, &tid) == 0;
	t->state = RN_FOUND;
	t->status = ROCATTACH_STATUS_SUCCESS;
	t->agent_status = -1;
}

static int make_targets(struct sel_ctx *c, const struct pidset *all, struct rn_target **out,
			size_t *n)
{
	struct rn_target *t;
	struct sel_proc p;
	size_t i, k = 0;

	t = calloc(all->n ? all->n : 1, sizeof(*t));
	if (!t)
		return rn_sel_fail(c, "selecting processes: out of memory");
	for (i = 0; i < all->n; i++) {
		if (rn_sel_proc_load(c, all->v[i], &p) < 0)
			continue;
		if (rn_sel_proc_eligible(c, &p))
			fill_target(c, &p, &t[k++]);
		rn_sel_proc_free(&p);
	}
	if (!k) {
		free(t);
		t = NULL;
	}
	*out = t;
	*n = k;
	return 0;
}

int rn_select(const struct rn_selector *sel, struct rn_target **out, size_t *n, char *err,
	      size_t errlen)
{
	struct sel_ctx c = {.sel = sel, .err = err, .errlen = errlen};
	struct pidset src = {0}, all = {0};
	int r = -1;

	*out = NULL;
	*n = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!sel)
		return rn_sel_fail(&c, "no selector given");
	c.procfs = sel->procfs ? sel->procfs : RA_PROCFS;
	c.self = sel->self > 0 ? sel->self : getpid();
	if (check_selector(&c) < 0)
		goto out;
	r = 0;
	if (!has_source(sel) && !every_process(sel))
		goto out;
	r = -1;
	if (rn_sel_load_self(&c) < 0 || collect_sources(&c, &src) < 0 || expand(&c, &src, &all) < 0)
		goto out;
	r = make_targets(&c, &all, out, n);
out:
	rn_pidset_free(&src);
	rn_pidset_free(&all);
	rn_pidset_free(&c.mine);
	free(c.self_env);
	return r;
}

/* ---- who we are ---- */

#define ANCESTORS_MAX 4096

/* Our ancestors: their ppid chain, up to init or a pid namespace's edge (ppid 0). */
static int add_ancestors(struct sel_ctx *c)
{
	struct ra_status st;
	pid_t pid = c->self;
	int i, r = 0;

	for (i = 0; i < ANCESTORS_MAX && pid > 0 && r == 0; i++) {
		if (ra_status_read(c->procfs, pid, &st) < 0)
			break;
		pid = st.ppid;
		if (pid > 0)
			r = rn_pidset_add(&c->mine, pid);
	}
	return r;
}

/* See the top of select.c; a self we cannot read (captured trees) is our caller. */
static long scope_of(const struct sel_ctx *c)
{
	struct ra_status st;

	if (c->sel->uid >= 0)
		return c->sel->uid;
	if (c->sel->all_users)
		return -1;
	if (ra_status_read(c->procfs, c->self, &st) == 0)
		return (long)st.uid_real;
	return (long)getuid();
}

/* All empty when we are not under procfs (tests on captured trees). */
int rn_sel_load_self(struct sel_ctx *c)
{
	struct sel_proc p = {.pid = c->self};
	pid_t *tree = NULL;
	size_t n = 0, len;
	int r;

	r = rn_pidset_add(&c->mine, c->self);
	if (r == 0 && ra_tree(c->procfs, c->self, &tree, &n) == 0)
		r = rn_pidset_add_all(&c->mine, tree, n);
	free(tree);
	if (r == 0)
		r = add_ancestors(c);
	if (r < 0)
		return rn_sel_fail(c, "selecting processes: %s", strerror(-r));
	rn_pidset_sort(&c->mine);
	c->self_env = (char *)rn_sel_proc_env(c, &p, &len);
	c->self_env_len = len;
	c->scope_uid = scope_of(c);
	if (!rn_sel_proc_step(c, &p, &c->own_job, &c->own_step))
		c->own_job = 0;
	return 0;
}

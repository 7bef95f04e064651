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
 *               link is unreadable (another user's process), /proc/PID/comm,
 *               which the kernel cuts to 15 bytes: a 15-byte comm matches a
 *               longer NAME that starts with it. A NAME with '/' is cut to
 *               its basename.
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
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "node.h"
#include "common/procfs.h"

#define LISTENER_COMM "rocp-bg-attach"
#define TASK_COMM_LEN 16
#define ANCESTORS_MAX 4096

/* Slurm's ids of the special steps (slurm.h, 20.11 and later). */
#define STEP_INTERACTIVE 0xfffffffaull
#define STEP_BATCH 0xfffffffbull
#define STEP_EXTERN 0xfffffffcull
#define STEP_NONE UINT64_MAX /* no step known */
#define STEP_ANY (UINT64_MAX - 1) /* --slurm-step J: every step */

/* Job rank variables, most specific first. */
static const char *const rank_vars[] = {
	"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID",
};
#define MPI_RANK_VARS 4 /* the first four */

static const char *const mpi_job_vars[] = {
	"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid",
};

/* Slurm's own processes carry the step's environment but are not tasks. */
static const char *const slurm_daemons[] = { "slurmstepd", "slurmd", "srun" };

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- pid sets ---- */

struct pidset {
	pid_t *v;
	size_t n, cap;
};

static int ps_add(struct pidset *s, pid_t pid)
{
	pid_t *nv;
	size_t ncap;

	if (s->n == s->cap) {
		ncap = s->cap ? s->cap * 2 : 64;
		nv = realloc(s->v, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = pid;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Sort and drop duplicates; ps_has() needs this. */
static void ps_sort(struct pidset *s)
{
	size_t i, n = 0;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_pid);
	for (i = 0; i < s->n; i++)
		if (!n || s->v[n - 1] != s->v[i])
			s->v[n++] = s->v[i];
	s->n = n;
}

static bool ps_has(const struct pidset *s, pid_t pid)
{
	return s->n && bsearch(&pid, s->v, s->n, sizeof(*s->v), cmp_pid);
}

static int ps_add_all(struct pidset *s, const pid_t *v, size_t n)
{
	size_t i;
	int r = 0;

	for (i = 0; i < n && r == 0; i++)
		r = ps_add(s, v[i]);
	return r;
}

static void ps_free(struct pidset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ---- numbers and names ---- */

/* A clean decimal: digits only, at least one, no more than max. */
static bool parse_dec(const char *s, size_t n, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(s[i] - '0');
		if (x > max)
			return false;
	}
	*v = x;
	return true;
}

static bool equals(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && !memcmp(s, word, n);
}

/* A step id: a number, or the name Slurm gives a special step. */
static bool parse_step_id(const char *s, size_t n, uint64_t *step)
{
	if (equals(s, n, "batch"))
		*step = STEP_BATCH;
	else if (equals(s, n, "extern"))
		*step = STEP_EXTERN;
	else if (equals(s, n, "interactive"))
		*step = STEP_INTERACTIVE;
	else
		return parse_dec(s, n, UINT32_MAX, step);
	return true;
}

static bool parse_job_id(const char *s, size_t n, uint64_t *job)
{
	return parse_dec(s, n, UINT32_MAX, job) && *job > 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* ---- environ ---- */

/*
 * The value of name in an environ blob ("A=1\0B=2\0"), or NULL; *vlen gets
 * its length. /proc/PID/environ is the environment area as exec left it:
 * later setenv() calls do not show, a process may have written over it
 * (setproctitle), and the last entry may lack its NUL. The first occurrence
 * wins, as with getenv().
 */
const char *rn_environ_get(const char *env, size_t len, const char *name, size_t *vlen)
{
	const char *p = env, *end = env + len, *nul;
	size_t nlen = strlen(name), elen;

	if (!env || !nlen)
		return NULL;
	while (p < end) {
		nul = memchr(p, '\0', (size_t)(end - p));
		elen = nul ? (size_t)(nul - p) : (size_t)(end - p);
		if (elen > nlen && p[nlen] == '=' && !memcmp(p, name, nlen)) {
			*vlen = elen - nlen - 1;
			return p + nlen + 1;
		}
		if (!nul)
			break;
		p = nul + 1;
	}
	return NULL;
}

static bool env_dec(const char *env, size_t len, const char *name, uint64_t max, uint64_t *v)
{
	size_t vlen;
	const char *val = rn_environ_get(env, len, name, &vlen);

	return val && parse_dec(val, vlen, max, v);
}

/* The job rank an environ blob gives, -1 if none (see the top of this file). */
long rn_environ_rank(const char *env, size_t len, const char *rank_var)
{
	const char *val = NULL;
	uint64_t rank;
	size_t i, vlen;

	if (rank_var)
		val = rn_environ_get(env, len, rank_var, &vlen);
	for (i = 0; !rank_var && !val && i < ARRAY_SIZE(rank_vars); i++)
		val = rn_environ_get(env, len, rank_vars[i], &vlen);
	if (!val || !parse_dec(val, vlen, INT32_MAX, &rank))
		return -1;
	return (long)rank;
}

static bool env_has_mpi_rank(const char *env, size_t len, const char *rank_var)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < MPI_RANK_VARS; i++)
		if (env_dec(env, len, rank_vars[i], INT32_MAX, &v))
			return true;
	return rank_var && env_dec(env, len, rank_var, INT32_MAX, &v);
}

static bool env_is(const char *env, size_t len, const char *name, const char *want, size_t wlen)
{
	size_t vlen;
	const char *val = rn_environ_get(env, len, name, &vlen);

	return val && vlen == wlen && !memcmp(val, want, wlen);
}

/* ---- cgroup ---- */

static size_t strip_suffix(const char *s, size_t n, const char *suffix)
{
	size_t sl = strlen(suffix);

	return n > sl && !memcmp(s + n - sl, suffix, sl) ? n - sl : n;
}

/* "job" ending prefix: "job_", "job-", "job", preceded by nothing or a separator. */
static bool job_prefix(const char *s, size_t n)
{
	if (n && (s[n - 1] == '_' || s[n - 1] == '-'))
		n--;
	if (n < 3 || memcmp(s + n - 3, "job", 3))
		return false;
	return n == 3 || s[n - 4] == '_' || s[n - 4] == '-' || s[n - 4] == '.';
}

/*
 * A directory naming a Slurm job: job_J (v1, v2), and, since Slurm 26.05
 * renamed v2's job directories and other shapes exist in the wild, any
 * name ending in job_J, job-J or jobJ after a separator, with an optional
 * ".scope" or ".slice" (slurm-job-J.scope), or J alone under a "job"
 * directory. The number must be the whole tail: job_12 is not job_123.
 */
static bool job_component(const char *s, size_t n, const char *prev, size_t pn, uint64_t *job)
{
	size_t d;

	n = strip_suffix(s, n, ".scope");
	n = strip_suffix(s, n, ".slice");
	for (d = n; d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9'; d--)
		;
	if (d == n || !parse_job_id(s + d, n - d, job))
		return false;
	if (d == 0)
		return equals(prev, pn, "job") || equals(prev, pn, "jobs");
	return job_prefix(s, d);
}

/* step_S, step.S, step-S, stepS (S a number, batch, extern, interactive), optional ".scope". */
static bool step_component(const char *s, size_t n, uint64_t *step)
{
	n = strip_suffix(s, n, ".scope");
	if (n < 5 || memcmp(s, "step", 4))
		return false;
	s += 4;
	n -= 4;
	if (*s == '_' || *s == '.' || *s == '-') {
		s++;
		n--;
	}
	return parse_step_id(s, n, step);
}

/* Job and step of one cgroup path: the last job directory before the first step directory. */
static bool path_step(const char *p, const char *end, uint64_t *job, uint64_t *step)
{
	const char *prev = "", *c, *slash;
	size_t pn = 0, cn;
	uint64_t j;
	bool found = false;

	*step = STEP_NONE;
	for (c = p; c < end; c = slash + 1) {
		slash = memchr(c, '/', (size_t)(end - c));
		if (!slash)
			slash = end;
		cn = (size_t)(slash - c);
		if (found && step_component(c, cn, step))
			break;
		/* A host dir like slurm_job5 comes first; the real job dir is the last one. */
		if (job_component(c, cn, prev, pn, &j)) {
			*job = j;
			found = true;
		}
		prev = c;
		pn = cn;
	}
	return found;
}

/*
 * The Slurm job and step of a /proc/PID/cgroup text ("hier:controllers:path"
 * lines; v2 is "0::path"): 1 with *job and *step (STEP_NONE when no step
 * directory follows the job's), or 0 if no line names a job. A line with a
 * step beats one without (v1 controllers may sit at different depths).
 */
int rn_cgroup_step(const char *text, size_t len, uint64_t *job, uint64_t *step)
{
	const char *p = text, *end = text + len, *eol, *path;
	uint64_t j, s;
	int found = 0;

	while (p < end) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		path = memchr(p, ':', (size_t)(eol - p));
		path = path ? memchr(path + 1, ':', (size_t)(eol - path - 1)) : NULL;
		if (path && path_step(path + 1, eol, &j, &s) && (!found || s != STEP_NONE)) {
			*job = j;
			*step = s;
			if (s != STEP_NONE)
				return 1;
			found = 1;
		}
		p = eol + 1;
	}
	return found;
}

/* ---- one process ---- */

struct sel_ctx;

struct proc {
	pid_t pid;
	struct ra_status st;
	char *env;	  /* NULL: unreadable or not read yet */
	size_t env_len;
	bool env_read;
	char exe[64];
	bool exe_from_comm; /* exe is /proc/PID/comm (15 bytes at most) */
	bool kthread;
};

struct sel_ctx {
	const struct rn_selector *sel;
	const char *procfs;
	pid_t self;
	struct pidset mine; /* self, ancestors, descendants: sorted */
	char *self_env;
	size_t self_env_len;
	uint64_t own_job, own_step; /* own_job 0: we are in no step */
	uint64_t want_job, want_step;
	long scope_uid;		    /* whose processes unnamed sources reach; -1: everyone's */
	const char *exe;	    /* basename of sel->exe */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct sel_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int pid_file(const struct sel_ctx *c, pid_t pid, const char *name, char **text, size_t *len)
{
	char path[PATH_MAX];
	int r;

	r = snprintf(path, sizeof(path), "%s/%d/%s", c->procfs, (int)pid, name);
	if (r < 0 || (size_t)r >= sizeof(path))
		return -ENAMETOOLONG;
	return ra_read_file(path, text, len);
}

/* Unreadable (another user's process) and empty (kernel thread, zombie) look the same. */
static const char *proc_env(const struct sel_ctx *c, struct proc *p, size_t *len)
{
	if (!p->env_read) {
		p->env_read = true;
		if (pid_file(c, p->pid, "environ", &p->env, &p->env_len) < 0) {
			p->env = NULL;
			p->env_len = 0;
		}
	}
	*len = p->env_len;
	return p->env;
}

static bool cmdline_empty(const struct sel_ctx *c, pid_t pid)
{
	char *text;
	size_t len;

	if (pid_file(c, pid, "cmdline", &text, &len) < 0)
		return true;
	free(text);
	return len == 0;
}

static void comm_name(const struct sel_ctx *c, struct proc *p)
{
	char *text;
	size_t len;

	if (pid_file(c, p->pid, "comm", &text, &len) < 0) {
		snprintf(p->exe, sizeof(p->exe), "%s", p->st.name);
	} else {
		if (len && text[len - 1] == '\n')
			text[len - 1] = '\0';
		snprintf(p->exe, sizeof(p->exe), "%s", text);
		free(text);
	}
	p->exe_from_comm = true;
}

/* exe basename, else comm; a kernel thread has no exe and an empty cmdline. */
static void proc_exe(const struct sel_ctx *c, struct proc *p)
{
	static const char del[] = " (deleted)";
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;
	size_t dl = sizeof(del) - 1;

	snprintf(path, sizeof(path), "%s/%d/exe", c->procfs, (int)p->pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		p->kthread = errno == ENOENT && cmdline_empty(c, p->pid);
		comm_name(c, p);
		return;
	}
	link[n] = '\0';
	if ((size_t)n > dl && !strcmp(link + n - dl, del))
		link[n - dl] = '\0';
	snprintf(p->exe, sizeof(p->exe), "%.*s", (int)sizeof(p->exe) - 1, base_name(link));
}

/* 0, or -ESRCH when the process is gone (it may exit at any moment). */
static int proc_load(const struct sel_ctx *c, pid_t pid, struct proc *p)
{
	int r;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	r = ra_status_read(c->procfs, pid, &p->st);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	proc_exe(c, p);
	return 0;
}

static void proc_free(struct proc *p)
{
	free(p->env);
	p->env = NULL;
}

/* Zombies, kernel threads, pid 1, and ourselves are never targets. */
static bool proc_eligible(const struct sel_ctx *c, const struct proc *p)
{
	if (p->pid == 1 || p->kthread || ps_has(&c->mine, p->pid))
		return false;
	return p->st.state != 'Z' && p->st.state != 'X' && p->st.state != 'x';
}

static bool is_slurm_daemon(const struct proc *p)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(slurm_daemons); i++)
		if (!strcmp(p->exe, slurm_daemons[i]))
			return true;
	return false;
}

/* ---- Slurm steps ---- */

static bool env_step(const char *env, size_t len, uint64_t *job, uint64_t *step)
{
	const char *val;
	size_t vlen;

	if (!env_dec(env, len, "SLURM_JOB_ID", UINT32_MAX, job) &&
	    !env_dec(env, len, "SLURM_JOBID", UINT32_MAX, job))
		return false;
	val = rn_environ_get(env, len, "SLURM_STEP_ID", &vlen);
	if (!val)
		val = rn_environ_get(env, len, "SLURM_STEPID", &vlen);
	return val && parse_step_id(val, vlen, step);
}

/* Job and step of a process: cgroup first, environ if no cgroup names a job. */
static bool proc_step(const struct sel_ctx *c, struct proc *p, uint64_t *job, uint64_t *step)
{
	const char *env;
	char *text;
	size_t len;
	int found = 0;

	if (pid_file(c, p->pid, "cgroup", &text, &len) == 0) {
		found = rn_cgroup_step(text, len, job, step);
		free(text);
	}
	if (found)
		return *step != STEP_NONE;
	env = proc_env(c, p, &len);
	return env_step(env, len, job, step);
}

static bool in_wanted_step(const struct sel_ctx *c, struct proc *p)
{
	uint64_t job, step;

	if (is_slurm_daemon(p) || !proc_step(c, p, &job, &step) || job != c->want_job)
		return false;
	if (c->own_job == job && c->own_step == step)
		return false;
	if (c->want_step == STEP_ANY)
		return step != STEP_EXTERN;
	return step == c->want_step;
}

static int parse_slurm_step(struct sel_ctx *c, const char *arg)
{
	const char *dot = strchr(arg, '.');
	size_t jn = dot ? (size_t)(dot - arg) : strlen(arg);

	c->want_step = STEP_ANY;
	if (!parse_job_id(arg, jn, &c->want_job) ||
	    (dot && !parse_step_id(dot + 1, strlen(dot + 1), &c->want_step)))
		return fail(c, "invalid --slurm-step '%s': use JOBID or JOBID.STEP "
			       "(e.g. 1234 or 1234.0; STEP may be batch, extern or interactive)", arg);
	return 0;
}

/* ---- MPI jobs ---- */

/* Same job ids as the launcher: under the same mpirun or srun step. */
static bool in_own_mpi_job(const struct sel_ctx *c, const char *env, size_t len)
{
	const char *own;
	size_t i, olen;

	for (i = 0; i < ARRAY_SIZE(mpi_job_vars); i++) {
		own = rn_environ_get(c->self_env, c->self_env_len, mpi_job_vars[i], &olen);
		if (own && olen && env_is(env, len, mpi_job_vars[i], own, olen))
			return true;
	}
	return false;
}

static bool in_mpi_job(const struct sel_ctx *c, struct proc *p)
{
	const char *id = c->sel->mpi_job, *env;
	size_t i, len;

	env = proc_env(c, p, &len);
	if (!env)
		return false;
	if (!*id)
		return env_has_mpi_rank(env, len, c->sel->rank_var) && !in_own_mpi_job(c, env, len);
	for (i = 0; i < ARRAY_SIZE(mpi_job_vars); i++)
		if (env_is(env, len, mpi_job_vars[i], id, strlen(id)))
			return true;
	return false;
}

/* ---- who we are ---- */

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
			r = ps_add(&c->mine, pid);
	}
	return r;
}

/* See the top of this file; a self we cannot read (captured trees) is our caller. */
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

static bool in_scope(const struct sel_ctx *c, uid_t uid)
{
	return c->scope_uid < 0 || uid == (uid_t)c->scope_uid;
}

/* Our own processes, environ and step; all empty when we are not under procfs (tests). */
static int load_self(struct sel_ctx *c)
{
	struct proc p = { .pid = c->self };
	pid_t *tree = NULL;
	size_t n = 0, len;
	int r;

	r = ps_add(&c->mine, c->self);
	if (r == 0 && ra_tree(c->procfs, c->self, &tree, &n) == 0)
		r = ps_add_all(&c->mine, tree, n);
	free(tree);
	if (r == 0)
		r = add_ancestors(c);
	if (r < 0)
		return fail(c, "selecting processes: %s", strerror(-r));
	ps_sort(&c->mine);
	c->self_env = (char *)proc_env(c, &p, &len);
	c->self_env_len = len;
	c->scope_uid = scope_of(c);
	if (!proc_step(c, &p, &c->own_job, &c->own_step))
		c->own_job = 0;
	return 0;
}

/* ---- checking the selector ---- */

static int check_pids(struct sel_ctx *c, const pid_t *v, size_t n, const char *opt)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] <= 0)
			return fail(c, "invalid %s %d: a PID is a positive number", opt, (int)v[i]);
	return 0;
}

static int check_filters(struct sel_ctx *c)
{
	const struct rn_selector *s = c->sel;

	if (s->exe && !*base_name(s->exe))
		return fail(c, "invalid --exe '%s': give the executable's name (e.g. lmp)", s->exe);
	if (s->uid < -1 || s->uid > (long)UINT32_MAX - 1)
		return fail(c, "invalid --uid %ld: give a user id (e.g. 1000), or -1 for any", s->uid);
	if (s->rank_var && (!*s->rank_var || strchr(s->rank_var, '=')))
		return fail(c, "invalid --rank-var '%s': give a variable name (e.g. PMI_RANK)",
			    s->rank_var);
	c->exe = s->exe ? base_name(s->exe) : NULL;
	return 0;
}

static int check_selector(struct sel_ctx *c)
{
	const struct rn_selector *s = c->sel;

	if (check_pids(c, s->pids, s->n_pids, "--pid") < 0 ||
	    check_pids(c, s->trees, s->n_trees, "--pid-tree") < 0 || check_filters(c) < 0)
		return -1;
	if (s->mpirun_pid < 0)
		return fail(c, "invalid --mpirun-pid %d: a PID is a positive number",
			    (int)s->mpirun_pid);
	if (s->slurm_step && parse_slurm_step(c, s->slurm_step) < 0)
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

	if (r == -ESRCH)
		return fail(c, "process %d does not exist: check %s (PIDs are this node's)", (int)pid,
			    opt);
	if (r < 0)
		return fail(c, "listing the descendants of process %d: %s", (int)pid, strerror(-r));
	return 0;
}

static int add_pids(struct sel_ctx *c, struct pidset *src)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < c->sel->n_pids; i++) {
		snprintf(path, sizeof(path), "%s/%d", c->procfs, (int)c->sel->pids[i]);
		if (access(path, F_OK) < 0)
			return fail(c, "process %d does not exist: check --pid (PIDs are this node's)",
				    (int)c->sel->pids[i]);
		if (ps_add(src, c->sel->pids[i]) < 0)
			return fail(c, "selecting processes: out of memory");
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
		r = ps_add_all(src, v, n);
		free(v);
	}
	return r < 0 ? fail(c, "selecting processes: out of memory") : 0;
}

/*
 * mpirun and its kin (mpirun.openmpi, mpiexec.hydra, orterun, prterun), by
 * executable or by comm: a wrapper script's comm is its own name.
 */
static bool is_mpirun(const struct proc *p)
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
	struct proc p;
	bool ok;

	if (proc_load(c, pid, &p) < 0)
		return 0; /* gone or unreadable: tree_of names it */
	ok = is_mpirun(&p);
	proc_free(&p);
	if (ok)
		return 0;
	return fail(c,
		    "--mpirun-pid %d: process %d is '%s', not mpirun/mpiexec/orterun/prterun: "
		    "give the pid of the job's mpirun",
		    (int)pid, (int)pid, p.exe);
}

/* Ranks among the descendants of mpirun (its daemons, prted/orted, have no rank). */
static int add_mpirun(struct sel_ctx *c, struct pidset *src)
{
	struct proc p;
	const char *env;
	pid_t *v;
	size_t i, n, len;
	int r = 0;

	if (check_mpirun(c, c->sel->mpirun_pid) < 0 ||
	    tree_of(c, c->sel->mpirun_pid, "--mpirun-pid", &v, &n) < 0)
		return -1;
	for (i = 1; i < n && r == 0; i++) {
		if (proc_load(c, v[i], &p) < 0)
			continue;
		env = proc_env(c, &p, &len);
		if (env && env_has_mpi_rank(env, len, c->sel->rank_var))
			r = ps_add(src, v[i]);
		proc_free(&p);
	}
	free(v);
	return r < 0 ? fail(c, "selecting processes: out of memory") : 0;
}

/* One process against the sources that need a look at every process. */
static bool scan_match(struct sel_ctx *c, pid_t pid)
{
	const struct rn_selector *s = c->sel;
	struct proc p;
	bool m;

	if (proc_load(c, pid, &p) < 0)
		return false;
	/* Named: a Slurm step, an MPI job by its ID. */
	m = (s->slurm_step && in_wanted_step(c, &p)) ||
	    (s->mpi_job && *s->mpi_job && in_mpi_job(c, &p));
	/* Unnamed: every process, any MPI job; only whose processes are in scope. */
	if (!m && in_scope(c, p.st.uid_real))
		m = every_process(s) || (s->mpi_job && !*s->mpi_job && in_mpi_job(c, &p));
	proc_free(&p);
	return m;
}

static int scan(struct sel_ctx *c, struct pidset *src)
{
	struct dirent *de;
	uint64_t pid;
	DIR *d;
	int r = 0;

	d = opendir(c->procfs);
	if (!d)
		return fail(c, "cannot list %s: %s", c->procfs, strerror(errno));
	while (r == 0 && (de = readdir(d))) {
		if (!parse_dec(de->d_name, strlen(de->d_name), INT_MAX, &pid) || pid == 0)
			continue;
		if (scan_match(c, (pid_t)pid))
			r = ps_add(src, (pid_t)pid);
	}
	closedir(d);
	return r < 0 ? fail(c, "selecting processes: out of memory") : 0;
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
	ps_sort(src);
	return 0;
}

/* ---- filters and expansion ---- */

/* comm is cut to 15 bytes: a full-length comm matches a longer name it starts. */
static bool exe_matches(const struct sel_ctx *c, const struct proc *p)
{
	size_t n = strlen(p->exe);

	if (!strcmp(p->exe, c->exe))
		return true;
	return p->exe_from_comm && n == TASK_COMM_LEN - 1 && !strncmp(p->exe, c->exe, n);
}

static bool passes_filters(const struct sel_ctx *c, struct proc *p)
{
	const char *env;
	size_t len;

	if (!proc_eligible(c, p))
		return false;
	if (c->exe && !exe_matches(c, p))
		return false;
	if (c->sel->uid >= 0 && p->st.uid_real != (uid_t)c->sel->uid)
		return false;
	if (!c->sel->ranks)
		return true;
	env = proc_env(c, p, &len);
	return rn_ranks_contains(c->sel->ranks, rn_environ_rank(env, len, c->sel->rank_var));
}

/* The match (v[0]) and those of its descendants v[1..n) that are in scope or of its user. */
static int add_tree(struct sel_ctx *c, const struct proc *match, const pid_t *v, size_t n,
		    struct pidset *all)
{
	struct ra_status st;
	size_t j;
	int r = ps_add(all, v[0]);

	for (j = 1; j < n && r == 0; j++) {
		if (ra_status_read(c->procfs, v[j], &st) < 0)
			continue;
		if (st.uid_real == match->st.uid_real || in_scope(c, st.uid_real))
			r = ps_add(all, v[j]);
	}
	return r;
}

/* Filtered source matches, each with its descendants when asked. */
static int expand(struct sel_ctx *c, const struct pidset *src, struct pidset *all)
{
	struct proc p;
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
		if (c->sel->children && ps_has(all, src->v[i]))
			continue;
		if (proc_load(c, src->v[i], &p) < 0)
			continue;
		keep = passes_filters(c, &p);
		if (!keep || !c->sel->children) {
			proc_free(&p);
			if (keep)
				r = ps_add(all, src->v[i]);
			continue;
		}
		r = ra_tree(c->procfs, src->v[i], &v, &n);
		if (r == 0)
			r = add_tree(c, &p, v, n, all);
		proc_free(&p);
		free(v);
		ps_sort(all);
		if (r == -ESRCH)
			r = 0;
	}
	if (r < 0)
		return fail(c, "listing the descendants of the selected processes: %s", strerror(-r));
	ps_sort(all);
	return 0;
}

/* ---- targets ---- */

static void fill_target(struct sel_ctx *c, struct proc *p, struct rn_target *t)
{
	const char *env;
	size_t len;
	pid_t tid;

	memset(t, 0, sizeof(*t));
	t->pid = p->pid;
	t->nspid = p->st.nspid_n > 0 ? p->st.nspid[p->st.nspid_n - 1] : p->pid;
	env = proc_env(c, p, &len);
	t->rank = rn_environ_rank(env, len, c->sel->rank_var);
	t->uid = p->st.uid_real;
	t->ppid = p->st.ppid;
	snprintf(t->exe, sizeof(t->exe), "%s", p->exe);
	t->listener = ra_find_thread_by_comm(c->procfs, p->pid, LISTENER_COMM, &tid) == 0;
	t->state = RN_FOUND;
	t->status = ROCATTACH_STATUS_SUCCESS;
	t->agent_status = -1;
}

static int make_targets(struct sel_ctx *c, const struct pidset *all, struct rn_target **out,
			size_t *n)
{
	struct rn_target *t;
	struct proc p;
	size_t i, k = 0;

	t = calloc(all->n ? all->n : 1, sizeof(*t));
	if (!t)
		return fail(c, "selecting processes: out of memory");
	for (i = 0; i < all->n; i++) {
		if (proc_load(c, all->v[i], &p) < 0)
			continue;
		if (proc_eligible(c, &p))
			fill_target(c, &p, &t[k++]);
		proc_free(&p);
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
	struct sel_ctx c = { .sel = sel, .err = err, .errlen = errlen };
	struct pidset src = { 0 }, all = { 0 };
	int r = -1;

	*out = NULL;
	*n = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!sel)
		return fail(&c, "no selector given");
	c.procfs = sel->procfs ? sel->procfs : RA_PROCFS;
	c.self = sel->self > 0 ? sel->self : getpid();
	if (check_selector(&c) < 0)
		goto out;
	r = 0;
	if (!has_source(sel) && !every_process(sel))
		goto out;
	r = -1;
	if (load_self(&c) < 0 || collect_sources(&c, &src) < 0 || expand(&c, &src, &all) < 0)
		goto out;
	r = make_targets(&c, &all, out, n);
out:
	ps_free(&src);
	ps_free(&all);
	ps_free(&c.mine);
	free(c.self_env);
	return r;
}

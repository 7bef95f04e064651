/* SPDX-License-Identifier: MIT */
/*
 * Which job a process is in, from what it carries: its environ (job rank
 * variables, MPI job ids, Slurm's step variables) and its /proc/PID/cgroup
 * (the step directories Slurm makes). The rules are at the top of select.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select_base.h"

/* Job rank variables, most specific first. */
static const char *const rank_vars[] = {
    "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID",
};
#define MPI_RANK_VARS 4 /* the first four */

static const char *const mpi_job_vars[] = {
    "PMIX_NAMESPACE",
    "OMPI_MCA_ess_base_jobid",
    "OMPI_MCA_orte_ess_jobid",
};

/* Slurm's own processes carry the step's environment but are not tasks. */
static const char *const slurm_daemons[] = {"slurmstepd", "slurmd", "srun"};

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
		return parse_dec(s, n, RN_SLURM_ID_MAX, step);
	return true;
}

static bool parse_job_id(const char *s, size_t n, uint64_t *job)
{
	return parse_dec(s, n, RN_SLURM_ID_MAX, job) && *job > 0;
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

/* The job rank an environ blob gives, -1 if none (see the top of select.c). */
long rn_environ_rank(const char *env, size_t len, const char *rank_var)
{
	const char *val = NULL;
	uint64_t rank;
	size_t i, vlen;

	if (rank_var)
		val = rn_environ_get(env, len, rank_var, &vlen);
	for (i = 0; !rank_var && !val && i < RN_ARRAY_SIZE(rank_vars); i++)
		val = rn_environ_get(env, len, rank_vars[i], &vlen);
	if (!val || !parse_dec(val, vlen, RN_RANK_MAX, &rank))
		return -1;
	return (long)rank;
}

bool rn_sel_env_has_mpi_rank(const char *env, size_t len, const char *rank_var)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < MPI_RANK_VARS; i++)
		if (env_dec(env, len, rank_vars[i], RN_RANK_MAX, &v))
			return true;
	return rank_var && env_dec(env, len, rank_var, RN_RANK_MAX, &v);
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

/* ---- Slurm steps ---- */

static bool is_slurm_daemon(const struct sel_proc *p)
{
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(slurm_daemons); i++)
		if (!strcmp(p->exe, slurm_daemons[i]))
			return true;
	return false;
}

static bool env_step(const char *env, size_t len, uint64_t *job, uint64_t *step)
{
	const char *val;
	size_t vlen;

	if (!env_dec(env, len, "SLURM_JOB_ID", RN_SLURM_ID_MAX, job) &&
	    !env_dec(env, len, "SLURM_JOBID", RN_SLURM_ID_MAX, job))
		return false;
	val = rn_environ_get(env, len, "SLURM_STEP_ID", &vlen);
	if (!val)
		val = rn_environ_get(env, len, "SLURM_STEPID", &vlen);
	return val && parse_step_id(val, vlen, step);
}

/* Job and step of a process: cgroup first, environ if no cgroup names a job. */
bool rn_sel_proc_step(const struct sel_ctx *c, struct sel_proc *p, uint64_t *job, uint64_t *step)
{
	const char *env;
	char *text;
	size_t len;
	int found = 0;

	if (ra_proc_read(c->procfs, p->pid, "cgroup", &text, &len) == 0) {
		found = rn_cgroup_step(text, len, job, step);
		free(text);
	}
	if (found)
		return *step != STEP_NONE;
	env = rn_sel_proc_env(c, p, &len);
	return env_step(env, len, job, step);
}

bool rn_sel_in_wanted_step(const struct sel_ctx *c, struct sel_proc *p)
{
	uint64_t job, step;

	if (is_slurm_daemon(p) || !rn_sel_proc_step(c, p, &job, &step) || job != c->want_job)
		return false;
	if (c->own_job == job && c->own_step == step)
		return false;
	if (c->want_step == STEP_ANY)
		return step != STEP_EXTERN;
	return step == c->want_step;
}

int rn_sel_parse_slurm_step(struct sel_ctx *c, const char *arg)
{
	const char *dot = strchr(arg, '.');
	size_t jn = dot ? (size_t)(dot - arg) : strlen(arg);

	c->want_step = STEP_ANY;
	if (!parse_job_id(arg, jn, &c->want_job) ||
	    (dot && !parse_step_id(dot + 1, strlen(dot + 1), &c->want_step)))
		return rn_sel_fail(
		    c,
		    "invalid --slurm-step '%s': use JOBID or JOBID.STEP "
		    "(e.g. 1234 or 1234.0; STEP may be batch, extern or interactive)",
		    arg);
	return 0;
}

/* ---- MPI jobs ---- */

void rn_environ_job(const char *env, size_t len, char *out, size_t olen)
{
	const char *val = NULL;
	size_t i, vlen = 0;

	for (i = 0; !val && i < RN_ARRAY_SIZE(mpi_job_vars); i++)
		val = rn_environ_get(env, len, mpi_job_vars[i], &vlen);
	/* Cut, not wrapped: an id longer than the field is shown as far as it goes. */
	snprintf(out, olen, "%.*s", val ? (int)(vlen < olen ? vlen : olen - 1) : 0, val ? val : "");
}

/* Same job ids as the launcher: under the same mpirun or srun step. */
static bool in_own_mpi_job(const struct sel_ctx *c, const char *env, size_t len)
{
	const char *own;
	size_t i, olen;

	for (i = 0; i < RN_ARRAY_SIZE(mpi_job_vars); i++) {
		own = rn_environ_get(c->self_env, c->self_env_len, mpi_job_vars[i], &olen);
		if (own && olen && env_is(env, len, mpi_job_vars[i], own, olen))
			return true;
	}
	return false;
}

bool rn_sel_in_mpi_job(const struct sel_ctx *c, struct sel_proc *p)
{
	const char *id = c->sel->mpi_job, *env;
	size_t i, len;

	env = rn_sel_proc_env(c, p, &len);
	if (!env)
		return false;
	if (!*id)
		return rn_sel_env_has_mpi_rank(env, len, c->sel->rank_var) &&
		       !in_own_mpi_job(c, env, len);
	for (i = 0; i < RN_ARRAY_SIZE(mpi_job_vars); i++)
		if (env_is(env, len, mpi_job_vars[i], id, strlen(id)))
			return true;
	return false;
}

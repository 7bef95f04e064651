/* SPDX-License-Identifier: MIT */
/*
 * Inside the selectors (rn_select, see select.c for the rules):
 *   select.c       the selector checked, its sources, filters and expansion, the targets
 *   select_proc.c  one process as the selectors see it, who we are, pid sets
 *   select_job.c   which Slurm step or MPI job a process is in (environ, cgroup)
 * Not for other rooms; the unit tests and fuzz harnesses reach the parsers here.
 */
#ifndef RN_SELECT_BASE_H
#define RN_SELECT_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/procfs.h"
#include "node.h"

#define RN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Slurm's ids of the special steps (slurm.h, 20.11 and later). */
/* A Slurm job or plain step id is 32 bits. */
#define RN_SLURM_ID_MAX UINT32_MAX
#define STEP_INTERACTIVE 0xfffffffaull
#define STEP_BATCH 0xfffffffbull
#define STEP_EXTERN 0xfffffffcull
#define STEP_NONE UINT64_MAX	  /* no step known */
#define STEP_ANY (UINT64_MAX - 1) /* --slurm-step J: every step */

/* ---- pid sets (select_proc.c) ---- */

struct pidset {
	pid_t *v;
	size_t n, cap;
};

int rn_pidset_add(struct pidset *s, pid_t pid);
int rn_pidset_add_all(struct pidset *s, const pid_t *v, size_t n);
/* Sort and drop duplicates; rn_pidset_has() needs this. */
void rn_pidset_sort(struct pidset *s);
bool rn_pidset_has(const struct pidset *s, pid_t pid);
void rn_pidset_free(struct pidset *s);

/* ---- one run, one process (select_proc.c) ---- */

struct sel_proc {
	pid_t pid;
	struct ra_status st;
	char *env; /* NULL: unreadable or not read yet */
	size_t env_len;
	bool env_read;
	char exe[64];
	bool exe_known;	    /* exe is the executable's name (exe link, else argv[0]) */
	bool exe_from_comm; /* exe is /proc/PID/comm: a name to show, never matched */
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
	long scope_uid;	 /* whose processes unnamed sources reach; -1: everyone's */
	const char *exe; /* basename of sel->exe */
	char *err;
	size_t errlen;
};

/* The error of the run: -1, with the message in c->err. */
__attribute__((format(printf, 2, 3))) int rn_sel_fail(struct sel_ctx *c, const char *fmt, ...);

/* 0, or -ESRCH when the process is gone (it may exit at any moment). */
int rn_sel_proc_load(const struct sel_ctx *c, pid_t pid, struct sel_proc *p);
void rn_sel_proc_free(struct sel_proc *p);
/* Its environ, read once; NULL when unreadable or empty. */
const char *rn_sel_proc_env(const struct sel_ctx *c, struct sel_proc *p, size_t *len);
/* Zombies, kernel threads, pid 1, and ourselves are never targets. */
bool rn_sel_proc_eligible(const struct sel_ctx *c, const struct sel_proc *p);
const char *rn_sel_base_name(const char *path);

/* Our own processes, environ and step, and whose processes are in scope. */
int rn_sel_load_self(struct sel_ctx *c);
bool rn_sel_in_scope(const struct sel_ctx *c, uid_t uid);

/* ---- jobs (select_job.c) ---- */

/*
 * The value of name in an environ blob ("A=1\0B=2\0"), or NULL; *vlen gets
 * its length. The first occurrence wins, as with getenv().
 */
const char *rn_environ_get(const char *env, size_t len, const char *name, size_t *vlen);
/* The job rank an environ blob gives, -1 if none (see select.c). */
long rn_environ_rank(const char *env, size_t len, const char *rank_var);
/* The MPI job id an environ blob gives, as --mpi-job takes it, into out ("" if none). */
void rn_environ_job(const char *env, size_t len, char *out, size_t olen);
/*
 * The Slurm job and step of a /proc/PID/cgroup text: 1 with *job and *step
 * (STEP_NONE when no step directory follows the job's), or 0 if no line names a job.
 */
int rn_cgroup_step(const char *text, size_t len, uint64_t *job, uint64_t *step);

/* A valid value of one of the MPI rank variables, or of rank_var. */
bool rn_sel_env_has_mpi_rank(const char *env, size_t len, const char *rank_var);
/* Job and step of a process: cgroup first, environ if no cgroup names a job. */
bool rn_sel_proc_step(const struct sel_ctx *c, struct sel_proc *p, uint64_t *job, uint64_t *step);
/* --slurm-step: parse it into c->want_job, c->want_step; match a process against it. */
int rn_sel_parse_slurm_step(struct sel_ctx *c, const char *arg);
bool rn_sel_in_wanted_step(const struct sel_ctx *c, struct sel_proc *p);
/* --mpi-job: the named job, or with "" any MPI job but ours. */
bool rn_sel_in_mpi_job(const struct sel_ctx *c, struct sel_proc *p);

#endif

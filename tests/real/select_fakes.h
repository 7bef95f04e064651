/* SPDX-License-Identifier: MIT */
/* Fake Slurm and MPI jobs of sleeping processes on the real /proc, for the selector tests */
#ifndef RA_SELECT_FAKES_H
#define RA_SELECT_FAKES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "node.h"

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

extern struct fake fakes[NFAKE];
extern char dir[64], sleeper[128], exe_name[16], mpirun_link[128];
extern unsigned long job;
extern char own_ns[64], mpi_ns[64], other_ns[64];
__attribute__((format(printf, 2, 3))) void add_env(int i, const char *fmt, ...);
void slurm(int i, unsigned long j, int step, int procid);
void mpi(int i, const char *ns, int rank);
void plan(void);
bool planned(int i);
/* Running: planned, and its namespace could be made. */
bool spawned(int i);
/* In the child: drop privileges if asked, start our own children, become the sleeper. */
__attribute__((noreturn)) void become(int i, int fd);
/*
 * Fork fake i and report "i pid" on fd (the child's pid as its parent sees
 * it); "i -1" when a pid namespace cannot be made here (no CAP_SYS_ADMIN).
 */
pid_t spawn(int i, int fd);
int read_records(int fd, int want);
bool execed(void *arg);
int start_fakes(void);
/* A private sleep with a name nobody else runs (comm keeps it whole: < 16 bytes). */
int make_sleeper(void);
void reap_all(void);
int setup(void **state);
int teardown(void **state);
struct rn_selector sel(void);
size_t run(const struct rn_selector *s, struct rn_target **t);
int cmp_pid(const void *a, const void *b);
/* The fakes listed (-1 ends), as sorted pids; those not spawned left out. */
size_t pids_of(const int *idx, pid_t *out);
const struct rn_target *find(const struct rn_target *t, size_t n, int i);
/* rn_select gives exactly these fakes. */
void expect_exactly(const struct rn_selector *s, const int *idx);
void expect_ranks(const struct rn_selector *s, const int *idx, const long *ranks);
/* A process moved between cgroups (the mover), for the cgroup test. */
extern char cg_dirs[3][256]; /* top, job, step */
extern pid_t mover;
int cgroup_make(unsigned long j);
void cgroup_remove(void);
int cgroup_enter(const char *cg, pid_t pid);
/* A second fake with T0's variables (J.0), moved into J+2's step 0; *pid 0 if not started. */
int start_mover(pid_t *pid);
void stop_mover(void);

#endif

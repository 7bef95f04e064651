/* SPDX-License-Identifier: MIT */
/*
 * The user's variables on every node. Open MPI passes a rank on another
 * node only the variables that -x names; the ranks on mpirun's own node
 * have the user's whole environment. So, before rank 0 reads anything, the
 * lowest rank on mpirun's node (if there is one and it is not rank 0) sends
 * its ROCP* and ROCATTACH_* variables to rank 0, which takes them as its
 * own; the plan then carries them to every rank (plan.h). Where a node
 * sets a variable to another value than the run's, its worker says so
 * once, one line per variable.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "messages.h"
#include "startup.h"
#include "user_env.h"

#define MAX_NOTES 16   /* lines per node; the rest are counted */
#define SHOWN_VALUE 80 /* bytes of a value shown in a line */

static int env_src; /* the rank whose variables the run uses */
static char *notes[MAX_NOTES];
static size_t n_notes, n_more;

/* An ancestor's comm and parent, from /proc/PID/stat. 0 or -1. */
static int proc_parent(pid_t pid, char *comm, size_t len, pid_t *ppid)
{
	char path[64], buf[512], *open, *close;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	open = strchr(buf, '(');
	close = strrchr(buf, ')');
	if (!open || !close || close < open || sscanf(close + 1, " %*c %d", ppid) != 1)
		return -1;
	snprintf(comm, len, "%.*s", (int)(close - open - 1), open + 1);
	return 0;
}

static bool named(const char *comm, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(comm, names[i], strlen(names[i])))
			return true;
	return false;
}

/*
 * Is this rank on mpirun's node? Open MPI 4 tells each rank its local
 * daemon and mpirun (the HNP): they are one where mpirun runs. Elsewhere
 * (Open MPI 5, a wrapper): mpirun among the ancestors, before a daemon.
 */
static bool on_mpirun_node(void)
{
	static const char *const launchers[] = {"mpirun", "mpiexec", "orterun", "prterun"};
	static const char *const daemons[] = {"orted", "prted", "slurmstepd"};
	const char *hnp = getenv("OMPI_MCA_orte_hnp_uri");
	const char *local = getenv("OMPI_MCA_orte_local_daemon_uri");
	pid_t pid = getppid(), ppid;
	char comm[64];

	if (hnp && local)
		return !strcmp(hnp, local);
	for (int depth = 0; pid > 1 && depth < 16; depth++, pid = ppid) {
		if (proc_parent(pid, comm, sizeof(comm), &ppid))
			return false;
		if (named(comm, launchers, sizeof(launchers) / sizeof(launchers[0])))
			return true;
		if (named(comm, daemons, sizeof(daemons) / sizeof(daemons[0])))
			return false;
	}
	return false;
}

/* A value as a line shows it: quoted, cut at SHOWN_VALUE bytes, no control bytes. */
static void shown(char *out, size_t len, const char *v)
{
	if (strlen(v) > SHOWN_VALUE)
		snprintf(out, len, "'%.*s...'", SHOWN_VALUE, v);
	else
		snprintf(out, len, "'%s'", v);
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

static void note(const char *name, const char *here, const char *used, void *arg)
{
	char h[SHOWN_VALUE + 8], u[SHOWN_VALUE + 8], src[64], *line = NULL;
	int r;

	(void)arg;
	/*
	 * Unset here: the node takes the run's, the usual case where mpirun
	 * passed it no variable (-x). The same: an option gave it.
	 */
	if (!here || (used && !strcmp(here, used)))
		return;
	if (n_notes == MAX_NOTES) {
		n_more++;
		return;
	}
	if (env_src)
		snprintf(src, sizeof(src), "rank %d on mpirun's node", env_src);
	else
		snprintf(src, sizeof(src), "rank 0");
	shown(h, sizeof(h), here);
	shown(u, sizeof(u), used ? used : "");
	if (!used)
		r = asprintf(&line, "%s is %s on this node; the run unsets it, as %s has none",
			     name, h, src);
	else
		r = asprintf(&line, "%s is %s on this node; the run uses %s, as %s has it", name, h,
			     u, src);
	if (r < 0)
		rm_out_of_memory();
	notes[n_notes++] = line;
}

void rm_user_env_note(const struct rm_plan *p)
{
	rm_plan_env_diff(p, note, NULL);
}

void rm_user_env_say(const struct rm_self *s, bool say)
{
	for (size_t i = 0; i < n_notes; i++) {
		if (say)
			fprintf(stderr, "rocattach-mpi[%s:%d] warning: %s\n", s->host, s->rank,
				notes[i]);
		free(notes[i]);
	}
	if (n_more && say)
		fprintf(stderr, "rocattach-mpi[%s:%d] warning: and %zu more variable%s differ\n",
			s->host, s->rank, n_more, n_more == 1 ? "" : "s");
	n_notes = n_more = 0;
}

/* The source rank: its variables, or "" when it has too many to send (it says so). */
static void send_env(const struct rm_startup *su)
{
	char *text = rm_plan_env_encode();
	MPI_Request req;

	if (!text || strlen(text) + 1 > RM_PLAN_ENV_MAX) {
		rm_rank_error(su->self,
			      "this rank is on mpirun's node, but its ROCP* and ROCATTACH_* "
			      "variables take more than %d bytes: rank 0's are used",
			      RM_PLAN_ENV_MAX);
		free(text);
		text = strdup("");
		if (!text)
			rm_out_of_memory();
	}
	RM_MPI(su->link, RM_ALL, "", MPI_Isend, text, (int)strlen(text) + 1, MPI_CHAR, 0,
	       TAG_USER_ENV, MPI_COMM_WORLD, &req);
	rm_startup_wait(su, &req);
	free(text);
}

/* Rank 0: the source's variables, checked, made its own (differences noted). */
static void take_env(const struct rm_startup *su)
{
	char *buf = calloc(1, RM_PLAN_ENV_MAX), err[256];
	struct rm_plan p = {0};
	MPI_Request req;

	if (!buf)
		rm_out_of_memory();
	RM_MPI(su->link, RM_ALL, "", MPI_Irecv, buf, RM_PLAN_ENV_MAX, MPI_CHAR, env_src,
	       TAG_USER_ENV, MPI_COMM_WORLD, &req);
	rm_startup_wait(su, &req);
	if (!buf[0]) {
		env_src = 0; /* it said why */
	} else if (rm_plan_env_decode(buf, RM_PLAN_ENV_MAX, &p, err, sizeof(err))) {
		rm_rank_error(su->self,
			      "the variables of rank %d (on mpirun's node): %s: rank 0's "
			      "are used",
			      env_src, err);
		env_src = 0;
	} else {
		rm_user_env_note(&p);
		if (rm_plan_apply_env(&p))
			rm_rank_error(su->self,
				      "cannot set the variables of rank %d (on mpirun's "
				      "node) here: the run may mix them with rank 0's",
				      env_src);
	}
	rm_plan_free(&p);
	free(buf);
}

void rm_user_env_gather(const struct rm_startup *su)
{
	int mine = on_mpirun_node() ? su->self->rank : INT_MAX, src = INT_MAX;
	MPI_Request req;

	/* A failure ends every rank (RM_ALL): no target is touched yet. */
	RM_MPI(su->link, RM_ALL, "", MPI_Iallreduce, &mine, &src, 1, MPI_INT, MPI_MIN,
	       MPI_COMM_WORLD, &req);
	rm_startup_wait(su, &req);
	env_src = src == INT_MAX ? 0 : src;
	if (!env_src)
		return;
	if (su->self->rank == env_src)
		send_env(su);
	else if (su->self->rank == 0)
		take_env(su);
}

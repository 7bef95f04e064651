/* SPDX-License-Identifier: MIT */
/*
 * rocattach-spank.so: a Slurm SPANK plugin that starts the tasks of a job's
 * steps attachable: ROCP_TOOL_ATTACH=1 and our agent appended to LD_PRELOAD.
 *
 * plugstack.conf:  optional /path/rocattach-spank.so [default=on|off] [agent=PATH]
 *
 * Without agent=, the agent is found beside the plugin's own file as the
 * installation lays them out (ROCATTACH_SPANK_AGENT_REL, from the plugin's
 * directory), else in the plugin's own directory (a build tree), else at
 * the path configured at build time: one plugstack line works for any
 * installation prefix.
 * srun, sbatch, salloc:  --rocattach[=on|off]
 *
 * Slurm calls slurm_spank_init in every context (srun, sbatch/salloc,
 * slurmstepd, slurmd): the option is registered there, the only way sbatch
 * and salloc accept it. An option given to sbatch or salloc reaches the
 * steps of the job: its callback runs again in slurmstepd (remote), where
 * slurm_spank_task_init sets each task's environment before exec.
 *
 * The batch script, the extern step and the interactive step run Slurm's
 * and the user's shells, not the application: they are left alone.
 *
 * Slurm forwards the option of sbatch/salloc to the srun of the job script
 * as SLURM_SPANK__SLURM_SPANK_OPTION_rocattach_rocattach=<arg>; srun reads
 * the same variable from anyone's environment, so "=off" there keeps a step
 * out (rocattach-slurm's own step) and does nothing where we are not loaded.
 *
 * A task that loads ROCm's rocprofiler-register (a HIP program) gets the same
 * variables: the agent sees ROCm's library at start and stands aside, so the
 * task has one rocp-bg-attach listener, ROCm's.
 *
 * Nothing here may fail a job: a wrong argument in plugstack.conf or on the
 * command line is one error line, and the plugin goes on with its defaults.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#ifndef ROCATTACH_SPANK_AGENT
#define ROCATTACH_SPANK_AGENT "/usr/local/lib/librocattach-agent.so.0"
#endif
#ifndef ROCATTACH_SPANK_AGENT_REL
#define ROCATTACH_SPANK_AGENT_REL "../librocattach-agent.so.0"
#endif
#define PRELOAD_MAX (64 * 1024)

SPANK_PLUGIN(rocattach, 1);

static bool default_on;
static char agent[4096] = ROCATTACH_SPANK_AGENT;
static int user_choice = -1; /* --rocattach: -1 not given, 0 off, 1 on */
static bool step_on;	     /* decided once per step in user_init */
static char usage[256];

/*
 * 1 on, 0 off, -1 neither. A bare --rocattach is on: it arrives as NULL or
 * "", and as "(null)" in a job that sbatch or salloc started (Slurm 22.05
 * formats the NULL argument into the job's environment, whence the srun in
 * the script reads it).
 */
static int parse_on_off(const char *s)
{
	static const char *const on[] = {"on", "yes", "true", "1"};
	static const char *const off[] = {"off", "no", "false", "0"};
	size_t i;

	if (!s || !*s || !strcmp(s, "(null)"))
		return 1;
	for (i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		if (!strcasecmp(s, on[i]))
			return 1;
		if (!strcasecmp(s, off[i]))
			return 0;
	}
	return -1;
}

/*
 * Runs where the user typed the option (remote == 0) and again in
 * slurmstepd; only the first place prints, so the user reads one line.
 */
static int option_cb(int val, const char *optarg, int remote)
{
	int v = parse_on_off(optarg);

	(void)val;
	if (v < 0) {
		if (!remote)
			slurm_error("rocattach: --rocattach=%s: expected on or off; ignored, "
				    "the site default (%s) applies",
				    optarg, default_on ? "on" : "off");
		return 0;
	}
	user_choice = v;
	return 0;
}

static struct spank_option rocattach_option = {
    .name = "rocattach",
    .arginfo = "on|off",
    .usage = usage,
    .has_arg = 2, /* optional: --rocattach means on */
    .val = 0,
    .cb = option_cb,
};

/* Only where a user reads it: the client commands; slurmstepd logs its own copy. */
static bool may_complain(void)
{
	spank_context_t c = spank_context();

	return c == S_CTX_LOCAL || c == S_CTX_ALLOCATOR || c == S_CTX_REMOTE;
}

static void parse_arg(const char *arg)
{
	int v;

	if (!strncmp(arg, "default=", 8)) {
		v = parse_on_off(arg + 8);
		if (v >= 0 && arg[8]) {
			default_on = v;
			return;
		}
	} else if (!strncmp(arg, "agent=", 6)) {
		if (arg[6] == '/' && strlen(arg + 6) < sizeof(agent)) {
			snprintf(agent, sizeof(agent), "%s", arg + 6);
			return;
		}
	}
	if (may_complain())
		slurm_error("rocattach: plugstack.conf: argument '%s' ignored: expected "
			    "default=on|off or agent=/absolute/path",
			    arg);
}

/* The agent beside our own file (see the top), if it is there. */
static void agent_beside_us(void)
{
	const char *base = strrchr(ROCATTACH_SPANK_AGENT_REL, '/');
	char self[4096], *dir, path[sizeof(agent)];
	Dl_info info;

	if (!dladdr((void *)agent_beside_us, &info) || !info.dli_fname ||
	    snprintf(self, sizeof(self), "%s", info.dli_fname) >= (int)sizeof(self))
		return;
	dir = dirname(self);
	if (dir[0] != '/')
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, ROCATTACH_SPANK_AGENT_REL);
	if (access(path, R_OK)) {
		snprintf(path, sizeof(path), "%s/%s", dir,
			 base ? base + 1 : ROCATTACH_SPANK_AGENT_REL);
		if (access(path, R_OK))
			return;
	}
	/* Its directory resolved ("lib/slurm/.." is "lib"), its name kept: the soname's link. */
	snprintf(self, sizeof(self), "%s", path);
	dir = realpath(dirname(self), NULL);
	base = strrchr(path, '/');
	if (dir && snprintf(agent, sizeof(agent), "%s%s", dir, base) < (int)sizeof(agent)) {
		free(dir);
		return;
	}
	free(dir);
	snprintf(agent, sizeof(agent), "%s", path);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t c = spank_context();
	int i;

	agent_beside_us();
	for (i = 0; i < ac; i++)
		parse_arg(av[i]);
	snprintf(usage, sizeof(usage),
		 "start every task of the job's steps attachable by rocattach-slurm "
		 "(ROCP_TOOL_ATTACH=1, the agent preloaded); site default: %s",
		 default_on ? "on" : "off");
	if (c != S_CTX_LOCAL && c != S_CTX_ALLOCATOR && c != S_CTX_REMOTE)
		return ESPANK_SUCCESS;
	if (spank_option_register(sp, &rocattach_option) != ESPANK_SUCCESS)
		slurm_error("rocattach: cannot register --rocattach");
	return ESPANK_SUCCESS;
}

/*
 * slurmstepd, once per step, as the user: decide for the whole step. A
 * missing agent is said once here rather than by ld.so in every process.
 */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	uint32_t job = 0, step = 0;

	(void)ac;
	(void)av;
	step_on = false;
	if (!(user_choice >= 0 ? user_choice : default_on))
		return ESPANK_SUCCESS;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return ESPANK_SUCCESS;
	if (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT ||
	    step == SLURM_INTERACTIVE_STEP)
		return ESPANK_SUCCESS;
	if (access(agent, R_OK)) {
		slurm_error("rocattach: job %u.%u not made attachable: agent %s: %s", job, step,
			    agent, strerror(errno));
		return ESPANK_SUCCESS;
	}
	step_on = true;
	return ESPANK_SUCCESS;
}

/* Is path one of the entries of an LD_PRELOAD list (separated by ':' or ' ')? */
static bool preload_has(const char *list, const char *path)
{
	size_t n = strlen(path);
	const char *p = list;

	while ((p = strstr(p, path))) {
		bool starts = p == list || p[-1] == ':' || p[-1] == ' ';
		bool ends = p[n] == '\0' || p[n] == ':' || p[n] == ' ';

		if (starts && ends)
			return true;
		p += n;
	}
	return false;
}

/*
 * In each task, after Slurm became the user and before exec. The agent goes
 * last in LD_PRELOAD: what the user preloads (a sanitizer runtime that must
 * come first, say) keeps its place.
 */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char *old, *new = NULL;
	spank_err_t err;

	(void)ac;
	(void)av;
	if (!step_on)
		return ESPANK_SUCCESS;
	old = calloc(1, PRELOAD_MAX);
	if (!old)
		goto nomem;
	err = spank_getenv(sp, "LD_PRELOAD", old, PRELOAD_MAX);
	if (err != ESPANK_SUCCESS)
		old[0] = '\0';
	if (err == ESPANK_NOSPACE) {
		slurm_error("rocattach: LD_PRELOAD longer than %d bytes: task not made attachable",
			    PRELOAD_MAX);
		goto out;
	}
	if (!preload_has(old, agent)) {
		if (asprintf(&new, "%s%s%s", old, old[0] ? ":" : "", agent) < 0) {
			new = NULL;
			goto nomem;
		}
		spank_setenv(sp, "LD_PRELOAD", new, 1);
	}
	spank_setenv(sp, "ROCP_TOOL_ATTACH", "1", 1);
	goto out;
nomem:
	slurm_error("rocattach: out of memory: task not made attachable");
out:
	free(new);
	free(old);
	return ESPANK_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/*
 * One rocp-bg-attach listener per process when ROCm's rocprofiler-register
 * (the double, tests/rocm/) and our agent are both loaded at start, in either
 * LD_PRELOAD order: the agent stands aside and the attach goes through
 * ROCm's. A copy of our agent under ROCm's file name is still our agent: it
 * never stands aside from itself.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

static char copydir[256];
static char agent_copy[512]; /* our agent, named librocprofiler-register.so.0 */

static int setup(void **state)
{
	(void)state;
	if (setup_outdir(RA_TOOL_PATH) < 0)
		return -1;
	snprintf(copydir, sizeof(copydir), "/tmp/rocattach-standaside.XXXXXX");
	if (!mkdtemp(copydir))
		return -1;
	snprintf(agent_copy, sizeof(agent_copy), "%s/librocprofiler-register.so.0", copydir);
	return copy_file(RA_AGENT_PATH, agent_copy, 0755);
}

static int teardown(void **state)
{
	(void)state;
	unlink(agent_copy);
	rmdir(copydir);
	return 0;
}

/* How many threads of pid are named rocp-bg-attach. */
static int listeners(pid_t pid)
{
	char path[128], comm[32];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/comm", pid, d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "rocp-bg-attach\n"))
			n++;
		fclose(f);
	}
	closedir(dir);
	return n;
}

/* Start with LD_PRELOAD=preload and ROCP_TOOL_ATTACH=1; expect one listener. */
static void start_one_listener(struct victim *v, const char *preload)
{
	static char env[2048];
	struct victim_opts o = {.attach_env = true};

	snprintf(env, sizeof(env), "LD_PRELOAD=%s", preload);
	o.env[0] = env;
	assert_int_equal(victim_start(v, &o), 0);
	assert_int_equal(listeners(v->pid), 1);
}

/* The one listener attaches and detaches the tool once, and the victim is intact. */
static void attach_once(struct victim *v)
{
	const char *logtext;
	pid_t pid = v->pid;

	assert_int_equal(rocattach_attach(pid), ROCATTACH_STATUS_SUCCESS);
	assert_int_equal(rocattach_detach(pid), ROCATTACH_STATUS_SUCCESS);
	logtext = log_of(pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), 1);
	assert_int_equal(tool_count(logtext, "tool_detach"), 1);
	assert_unharmed(v, true);
	victim_stop(v);
}

static void test_standaside_agent_alone_listens(void **state)
{
	struct victim v;

	(void)state;
	start_one_listener(&v, RA_AGENT_PATH);
	attach_once(&v);
}

static void test_standaside_register_after_agent(void **state)
{
	struct victim v;

	(void)state;
	start_one_listener(&v, RA_AGENT_PATH ":" RA_ROCM_REGISTER);
	attach_once(&v);
}

static void test_standaside_register_before_agent(void **state)
{
	struct victim v;

	(void)state;
	start_one_listener(&v, RA_ROCM_REGISTER ":" RA_AGENT_PATH);
	attach_once(&v);
}

static void test_standaside_never_from_itself(void **state)
{
	char preload[1100];
	struct victim v;

	(void)state;
	start_one_listener(&v, agent_copy);
	attach_once(&v);
	snprintf(preload, sizeof(preload), "%s:%s", agent_copy, RA_AGENT_PATH);
	start_one_listener(&v, preload);
	attach_once(&v);
	snprintf(preload, sizeof(preload), "%s:%s", RA_AGENT_PATH, agent_copy);
	start_one_listener(&v, preload);
	attach_once(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_standaside_agent_alone_listens),
	    cmocka_unit_test(test_standaside_register_after_agent),
	    cmocka_unit_test(test_standaside_register_before_agent),
	    cmocka_unit_test(test_standaside_never_from_itself),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

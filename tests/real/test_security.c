/* SPDX-License-Identifier: MIT */
/*
 * The security rules of docs/reliability.md, each on real processes:
 *  - under secure execution (AT_SECURE) ROCPROF_ATTACH_TOOL_LIBRARY and the
 *    rest of the caller's environment are ignored: a setuid-root copy of an
 *    attacher, run by nobody, cannot make a root process load a library of
 *    nobody's choosing;
 *  - a tool library (or the --inject agent) that others could replace is
 *    refused: group- or world-writable, in such a directory, or owned by a
 *    user who is neither root, the target's user nor us;
 *  - only ROCP* variables cross into a target.
 */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../skip.h"

#include <rocattach/rocattach.h>

#include "testlib.h"

static char workdir[256];
static char out[8192];

static const struct victim_opts with_agent = {.agent = true, .attach_env = true};

static int setup(void **state)
{
	(void)state;
	if (setup_outdir(NULL) < 0)
		return -1;
	make_outdir(workdir, sizeof(workdir));
	/* nobody writes tool logs here and runs programs from there. */
	chmod(test_outdir, 0777);
	chmod(workdir, 0755);
	return workdir[0] ? 0 : -1;
}

/* workdir/name, a directory of the given mode, owned by uid. */
static void make_dir(char *path, size_t len, const char *name, mode_t mode, uid_t uid)
{
	snprintf(path, len, "%s/%s", workdir, name);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, uid, 0), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* A copy of the example tool at dir/libtool.so with the given mode and owner. */
static void make_tool(char *path, size_t len, const char *dir, mode_t mode, uid_t uid)
{
	snprintf(path, len, "%s/libtool.so", dir);
	assert_int_equal(copy_file(RA_TOOL_PATH, path, 0644), 0);
	assert_int_equal(chown(path, uid, 0), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static rocattach_status_t attach_with(pid_t pid, const char *tool)
{
	const rocattach_opts_t o = {.size = sizeof(o), .tool_libraries = tool};

	return rocattach_attach_ex(pid, &o, NULL);
}

static void assert_refused(pid_t pid, const char *tool, const char *cause)
{
	assert_int_equal(attach_with(pid, tool), ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	print_message("%s\n", rocattach_last_error());
	assert_non_null(strstr(rocattach_last_error(), "refusing library"));
	assert_non_null(strstr(rocattach_last_error(), cause));
	assert_non_null(strstr(rocattach_last_error(), "fix with"));
	assert_int_equal(rocattach_is_attached(pid), 0);
}

static void assert_accepted(pid_t pid, const char *tool)
{
	if (attach_with(pid, tool) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("%s: %s", tool, rocattach_last_error());
	assert_int_equal(rocattach_detach(pid), ROCATTACH_STATUS_SUCCESS);
}

/* The target still works and no tool ever ran in it. */
static void assert_untouched(struct victim *v)
{
	char reply[64];

	assert_string_equal(log_of(v->pid), "");
	assert_int_equal(victim_cmd(v, "ping", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "pong");
	assert_int_equal(proc_tracer(v->pid), 0);
}

/* ------------------------------------------------------------------------ */
/* Library hijack. */

static void test_security_world_writable_tool_refused(void **state)
{
	char dir[512], tool[600];
	struct victim v;

	(void)state;
	make_dir(dir, sizeof(dir), "ww", 0755, 0);
	make_tool(tool, sizeof(tool), dir, 0666, 0);
	assert_int_equal(victim_start(&v, &with_agent), 0);
	assert_refused(v.pid, tool, "the file is writable by everyone (mode 0666)");
	assert_untouched(&v);
	chmod(tool, 0644);
	assert_accepted(v.pid, tool);
	victim_stop(&v);
}

static void test_security_group_writable_tool_refused(void **state)
{
	char dir[512], tool[600];
	struct victim v;

	(void)state;
	make_dir(dir, sizeof(dir), "gw", 0755, 0);
	make_tool(tool, sizeof(tool), dir, 0664, 0);
	assert_int_equal(victim_start(&v, &with_agent), 0);
	assert_refused(v.pid, tool, "the file is writable by its group (mode 0664)");
	assert_untouched(&v);
	victim_stop(&v);
}

/* Whoever may write the directory may rename another file over the tool. */
static void test_security_writable_directory_refused(void **state)
{
	char dir[512], sub[600], tool[700], cause[800];
	struct victim v;

	(void)state;
	make_dir(dir, sizeof(dir), "open", 0777, 0);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	make_tool(tool, sizeof(tool), sub, 0644, 0);
	assert_int_equal(victim_start(&v, &with_agent), 0);
	snprintf(cause, sizeof(cause), "its directory %s is writable by everyone (mode 0777)", dir);
	assert_refused(v.pid, tool, cause);
	assert_untouched(&v);
	/* Sticky (like /tmp): others cannot rename over our file, so it is fine. */
	chmod(dir, 01777);
	assert_accepted(v.pid, tool);
	victim_stop(&v);
}

static void test_security_tool_of_another_user_refused(void **state)
{
	char dir[512], tool[600];
	struct victim v;

	(void)state;
	make_dir(dir, sizeof(dir), "other", 0755, 0);
	make_tool(tool, sizeof(tool), dir, 0644, 1234);
	assert_int_equal(victim_start(&v, &with_agent), 0);
	assert_refused(v.pid, tool,
		       "the file is owned by uid 1234, neither root, the target's "
		       "user (uid 0) nor us (uid 0)");
	assert_untouched(&v);
	victim_stop(&v);
}

/*
 * The target's own user may own its tools: nobody's process, nobody's
 * library. (The agent comes in after setpriv: setpriv raises capabilities on
 * its main thread only, so with a listener thread its setresgid aborts.)
 */
static void test_security_tool_of_the_target_user_accepted(void **state)
{
	static char preload[512];
	struct victim_opts o = {.program = "/usr/bin/setpriv"};
	char dir[512], tool[600];
	struct victim v;

	(void)state;
	make_dir(dir, sizeof(dir), "nobody", 0755, NOBODY_UID);
	make_tool(tool, sizeof(tool), dir, 0644, NOBODY_UID);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", RA_AGENT_PATH);
	o.argv[0] = "--reuid=65534";
	o.argv[1] = "--regid=65534";
	o.argv[2] = "--clear-groups";
	o.argv[3] = "--pdeathsig=KILL";
	o.argv[4] = "/usr/bin/env";
	o.argv[5] = "ROCP_TOOL_ATTACH=1";
	o.argv[6] = preload;
	o.argv[7] = RA_TARGET_PATH;
	assert_int_equal(victim_start(&v, &o), 0);
	assert_accepted(v.pid, tool);
	assert_int_equal(tool_count(log_of(v.pid), "tool_detach"), 1);
	victim_stop(&v);
}

/* --inject loads the agent: the same rules apply to its path. */
static void test_security_inject_agent_hijack_refused(void **state)
{
	rocattach_opts_t o = {
	    .size = sizeof(o), .tool_libraries = RA_TOOL_PATH, .flags = ROCATTACH_F_INJECT};
	char dir[512], agent[600];
	struct victim v;

	(void)state;
	make_dir(dir, sizeof(dir), "agent", 0775, 0);
	snprintf(agent, sizeof(agent), "%s/librocattach-agent.so.0", dir);
	assert_int_equal(copy_file(RA_AGENT_PATH, agent, 0755), 0);
	o.agent_path = agent;
	assert_int_equal(victim_start(&v, &(struct victim_opts){0}), 0);
	assert_int_equal(rocattach_attach_ex(v.pid, &o, NULL),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	print_message("%s\n", rocattach_last_error());
	assert_non_null(strstr(rocattach_last_error(), "is writable by its group (mode 0775)"));
	/* Nothing was loaded: no listener appeared. */
	assert_int_equal(proc_thread(v.pid, "rocp-bg-attach"), 0);
	assert_untouched(&v);
	victim_stop(&v);
}

/* ------------------------------------------------------------------------ */
/* Environment. */

static void test_security_only_rocp_variables_cross(void **state)
{
	static const char *const crossing[] = {"ROCP_SEC_A", "ROCPX_SEC"};
	static const char *const staying[] = {"ROC_SEC_NOT",
					      "rocp_sec_lower",
					      "XROCP_SEC",
					      "SEC_SECRET",
					      "ROCPROFILER_REGISTER_LIBRARY",
					      "ROCP_ATTACH_OWNER"};
	const char *extra[] = {"ROCP_SEC_EXTRA=1", "SEC_EXTRA_NOT=1", NULL};
	const rocattach_opts_t o = {
	    .size = sizeof(o), .tool_libraries = RA_TOOL_PATH, .env = extra};
	char cmd[128], reply[256];
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &with_agent), 0);
	for (size_t i = 0; i < 2; i++)
		setenv(crossing[i], "1", 1);
	for (size_t i = 0; i < sizeof(staying) / sizeof(staying[0]); i++)
		setenv(staying[i], "1", 1);
	assert_int_equal(rocattach_attach_ex(v.pid, &o, NULL), ROCATTACH_STATUS_SUCCESS);
	for (size_t i = 0; i < sizeof(staying) / sizeof(staying[0]); i++) {
		snprintf(cmd, sizeof(cmd), "env %s", staying[i]);
		assert_int_equal(victim_cmd(&v, cmd, reply, sizeof(reply)), 0);
		assert_non_null(strstr(reply, " unset"));
		unsetenv(staying[i]);
	}
	for (size_t i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "env %s", crossing[i]);
		assert_int_equal(victim_cmd(&v, cmd, reply, sizeof(reply)), 0);
		assert_non_null(strstr(reply, "=1"));
		unsetenv(crossing[i]);
	}
	assert_int_equal(victim_cmd(&v, "env ROCP_SEC_EXTRA", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_SEC_EXTRA=1");
	assert_int_equal(victim_cmd(&v, "env SEC_EXTRA_NOT", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env SEC_EXTRA_NOT unset");
	assert_int_equal(rocattach_detach(v.pid), ROCATTACH_STATUS_SUCCESS);
	victim_stop(&v);
}

/* ------------------------------------------------------------------------ */
/* Secure execution. */

/* Run helper PID with the given environment, as uid; its stdout in out. */
static int run_helper(const char *helper, pid_t pid, uid_t uid, char *const envp[])
{
	char p[16];
	int fds[2], status;
	size_t used = 0;
	ssize_t n;
	pid_t c;

	snprintf(p, sizeof(p), "%d", pid);
	assert_int_equal(pipe(fds), 0);
	c = fork();
	if (c == 0) {
		dup2(fds[1], 1);
		if (uid && (setgroups(0, NULL) || setgid(NOBODY_GID) || setuid(uid)))
			_exit(126);
		execle(helper, helper, p, (char *)NULL, envp);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], out + used, sizeof(out) - 1 - used)) > 0)
		used += (size_t)n;
	out[used] = '\0';
	close(fds[0]);
	waitpid(c, &status, 0);
	print_message("%s", out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * A setuid-root attacher run by nobody (AT_SECURE=1 for real) attaches a
 * root process with its defaults: nobody's ROCPROF_ATTACH_TOOL_LIBRARY and
 * ROCP* variables are ignored, the default tool name is what the target is
 * asked to load. The same program without the setuid bit, run by root, does
 * use them: the variables were effective, only secure execution stopped them.
 */
static void test_security_at_secure_ignores_caller_environment(void **state)
{
	char helper[512], tool_env[600], out_env[300], reply[256];
	char *envp[] = {tool_env, out_env, "ROCP_SEC_MARKER=crossed", NULL};
	struct victim v;

	(void)state;
#ifdef __SANITIZE_THREAD__
	/*
	 * Where TSan needs ASLR off, scripts/sanitize.sh runs us under setarch -R;
	 * a setuid exec turns ASLR back on, and the instrumented helper may then
	 * not even start.
	 */
	if (personality(0xffffffff) & ADDR_NO_RANDOMIZE)
		RA_SKIP("ASLR is off (TSan under setarch -R): a setuid exec turns it back on");
#endif
	snprintf(helper, sizeof(helper), "%s/attacher", workdir);
	snprintf(tool_env, sizeof(tool_env), "ROCPROF_ATTACH_TOOL_LIBRARY=%s", RA_TOOL_PATH);
	snprintf(out_env, sizeof(out_env), "ROCPROF_OUTPUT_PATH=%s", test_outdir);
	assert_int_equal(copy_file(RA_SECURE_HELPER, helper, 0755), 0);
	assert_int_equal(chown(helper, 0, 0), 0);
	assert_int_equal(chmod(helper, 04755), 0);
	assert_int_equal(victim_start(&v, &with_agent), 0);

	assert_int_equal(run_helper(helper, v.pid, NOBODY_UID, envp), 0);
	assert_non_null(strstr(out, "at_secure=1\n"));
	assert_non_null(strstr(out, "status=1\n"));
	assert_non_null(strstr(out, "agent=6\n")); /* ROCPROFILER_ERROR: cannot load */
	assert_non_null(strstr(out, "librocprofiler-sdk-tool.so.1"));
	assert_null(strstr(out, RA_TOOL_PATH));
	assert_int_equal(victim_cmd(&v, "env ROCP_SEC_MARKER", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_SEC_MARKER unset");
	assert_string_equal(log_of(v.pid), "");

	assert_int_equal(chmod(helper, 0755), 0);
	assert_int_equal(run_helper(helper, v.pid, 0, envp), 0);
	assert_non_null(strstr(out, "at_secure=0\n"));
	assert_non_null(strstr(out, "status=0\n"));
	assert_int_equal(tool_count(log_of(v.pid), "tool_attach"), 1);
	assert_int_equal(victim_cmd(&v, "env ROCP_SEC_MARKER", reply, sizeof(reply)), 0);
	assert_string_equal(reply, "env ROCP_SEC_MARKER=crossed");
	victim_stop(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_security_world_writable_tool_refused),
	    cmocka_unit_test(test_security_group_writable_tool_refused),
	    cmocka_unit_test(test_security_writable_directory_refused),
	    cmocka_unit_test(test_security_tool_of_another_user_refused),
	    cmocka_unit_test(test_security_tool_of_the_target_user_accepted),
	    cmocka_unit_test(test_security_inject_agent_hijack_refused),
	    cmocka_unit_test(test_security_only_rocp_variables_cross),
	    cmocka_unit_test(test_security_at_secure_ignores_caller_environment),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, setup, NULL));
}

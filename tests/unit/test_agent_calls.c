/* SPDX-License-Identifier: MIT */
/*
 * The agent in a real process, with the example tool: its listener, the
 * attach and detach lifecycle, one attacher, rollback, the tool's failures,
 * start times, concurrency, reattach, fork. Every test forks a child that
 * dlopens a fresh agent (agent_child.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <rocattach/version.h>

#include "common/envbuf.h"
#include "common/procmap.h"
#include "../skip.h"
#include "agent_child.h"

static char *make_env(const char *const *entries)
{
	size_t len;

	return make_env_len(entries, &len);
}
/* The last line of pid's log for event, "" if none. */
static const char *last_line(pid_t pid, const char *event)
{
	static char found[512];
	char *log = log_buf, *line, *save = NULL;
	size_t n = strlen(event);

	found[0] = '\0';
	log_read(pid, log_buf, sizeof(log_buf));
	for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, event, n) && line[n] == ' ')
			snprintf(found, sizeof(found), "%s", line);
	return found;
}
static unsigned long long line_ns(const char *line)
{
	const char *p = strstr(line, " ns=");

	return p ? strtoull(p + 4, NULL, 10) : 0;
}
static unsigned long long realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}
/* TID of the only thread named comm, 0 if none, -1 if several. */
static pid_t thread_named(const char *comm)
{
	char path[PATH_MAX], name[32];
	struct dirent *de;
	pid_t tid = 0;
	DIR *d = opendir("/proc/self/task");
	FILE *f;

	while (d && (de = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strcmp(strtok(name, "\n"), comm))
			tid = tid ? -1 : atoi(de->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}
static unsigned long long sigblk(pid_t tid)
{
	char path[PATH_MAX], line[256];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask;
}
/*
 * Everything that can be blocked: not SIGKILL/SIGSTOP (the kernel refuses),
 * not glibc's internal cancel/setxid signals (sigfillset leaves them out,
 * and blocking SIGSETXID would hang setuid() in every other thread).
 */
static unsigned long long blockable_mask(void)
{
	unsigned long long mask = 0;
	sigset_t full;
	int sig;

	sigfillset(&full);
	for (sig = 1; sig <= 64; sig++)
		if (sigismember(&full, sig) && sig != SIGKILL && sig != SIGSTOP)
			mask |= 1ULL << (sig - 1);
	return mask;
}

static int child_listener(void)
{
	unsigned long long expect = blockable_mask();
	pid_t tid;
	int sig;

	CHECK(thread_named("rocp-bg-attach") == 0);
	CHECK_OK(agent_load(true));
	tid = thread_named("rocp-bg-attach");
	CHECK(tid > 0);
	CHECK(sigblk(tid) == expect);
	for (sig = 1; sig < 32; sig++)
		CHECK(sig == SIGKILL || sig == SIGSTOP || (expect & (1ULL << (sig - 1))));
	for (sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		CHECK(expect & (1ULL << (sig - 1)));
	CHECK(sigblk(gettid()) != expect); /* the caller's mask came back */
	CHECK(ag.version() == ROCATTACH_VERSION);
	CHECK(!strcmp(ag.last_error(), ""));
	return 0;
}

static void test_agent_init_starts_listener(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_listener), 0);
}

static int child_no_listener(void)
{
	char *env = make_env(NULL);

	CHECK_OK(agent_load(false));
	CHECK(thread_named("rocp-bg-attach") == 0);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 9);
	CHECK(strstr(ag.last_error(), "ROCP_TOOL_ATTACH=1"));
	CHECK(ag.detach() == 9);
	CHECK(!strcmp(events(getpid()), ""));
	free(env);
	return 0;
}

static void test_agent_init_without_env(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_no_listener), 0);
}

static int child_lifecycle(void)
{
	const char *vars[] = {"ROCP_TEST_X=1", "ROCPROFILER_REGISTER_TOOL_ATTACHED=1", NULL};
	char *env = make_env(vars), version[64];
	pid_t me = getpid();

	/* Tools get the SDK's version (major 1), as ROCm's register hands them. */
	snprintf(version, sizeof(version), " version=%u runtime=%s ", ROCATTACH_SDK_VERSION,
		 ROCATTACH_SDK_VERSION_STRING);
	CHECK_OK(agent_load(true));
	CHECK(ag.attach(env, RA_TOOL_PATH) == 0);
	CHECK(!strcmp(events(me), "configure configure_attach initialize tool_attach"));
	CHECK(strstr(last_line(me, "configure"), version));
	CHECK(strstr(last_line(me, "configure_attach"), version));
	CHECK(ROCATTACH_SDK_VERSION / 10000 == 1);
	CHECK(strstr(last_line(me, "configure"), " priority=0"));
	CHECK(strstr(last_line(me, "tool_attach"), " detach_func=null n_contexts=0"));
	CHECK(getenv("ROCP_TEST_X") && !strcmp(getenv("ROCP_TEST_X"), "1"));
	CHECK(!getenv("ROCPROFILER_REGISTER_TOOL_ATTACHED"));
	CHECK(!strcmp(ag.last_error(), ""));
	CHECK(ag.detach() == 0);
	CHECK(!strcmp(events(me), "configure configure_attach initialize tool_attach tool_detach"));
	CHECK(ag.detach() == 8);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 0);
	CHECK(!strcmp(events(me), "configure configure_attach initialize tool_attach "
				  "tool_detach tool_attach"));
	CHECK(ag.attach(env, RA_TOOL_PATH ":" RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "detach before attaching"));
	CHECK(ag.attach(env, NULL) == 8);
	CHECK(ag.detach() == 0);
	free(env);
	return 0;
}

/*
 * Unlike ROCm's side, the agent takes another tool list between windows:
 * the tools are chosen again; one already configured is reused as it is
 * (never configured twice), and a list that fails leaves none chosen.
 */
static int child_other_list(void)
{
	char *env = make_env(NULL);
	pid_t me = getpid();

	CHECK_OK(agent_load(true));
	CHECK(ag.attach(env, RA_TOOL_PATH) == 0);
	CHECK(ag.detach() == 0);
	CHECK(ag.attach(env, "/nonexistent/libnotool.so") == 6);
	CHECK(strstr(ag.last_error(), "/nonexistent/libnotool.so"));
	CHECK(ag.detach() == 8);
	CHECK(ag.attach(env, RA_TOOL_PATH ":" RA_TOOL_PATH) == 0);
	CHECK(!strcmp(events(me), "configure configure_attach initialize tool_attach "
				  "tool_detach tool_attach"));
	CHECK(ag.detach() == 0);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 0);
	CHECK(ag.detach() == 0);
	CHECK(!strcmp(events(me), "configure configure_attach initialize tool_attach "
				  "tool_detach tool_attach tool_detach tool_attach tool_detach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_other_list(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_other_list), 0);
}

/* The child exits normally: the tool must be finalized exactly once. */
static void test_rocprofiler_register_attach_lifecycle(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_lifecycle), 0);
	assert_string_equal(events(child_pid), "configure configure_attach initialize tool_attach "
					       "tool_detach tool_attach tool_detach finalize");
}

static int child_attach_twice(void)
{
	char *env = make_env(NULL);

	CHECK_OK(agent_load(true));
	CHECK(ag.attach(env, RA_TOOL_PATH ":" RA_TOOL_PATH) == 0);
	CHECK(ag.attach(env, RA_TOOL_PATH ":" RA_TOOL_PATH) == 0);
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	free(env);
	return 0;
}

/* A library named twice is one tool; attaching while attached changes nothing. */
static void test_rocprofiler_register_attach_already_attached(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_attach_twice), 0);
}

/* "ROCP_ATTACH_OWNER=PID:STARTTIME" for pid, as an attacher sends it; "" on error. */
static void owner_var(char *buf, size_t len, pid_t pid)
{
	char path[64], stat[1024], *p;
	unsigned long long start = 0;
	FILE *f;
	int field;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return;
	p = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
	fclose(f);
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%llu", &start) == 1)
		snprintf(buf, len, "ROCP_ATTACH_OWNER=%d:%llu", (int)pid, start);
}

/*
 * One attacher per window: while the owner A lives, another attacher (us,
 * or one that names nobody) is refused with EXCESS_API_INSTANCES and A
 * named, none of its variables applied; A itself may attach again; once A
 * is dead the window is free (taken over, or detached by the watchdog first).
 */
static int child_one_attacher(void)
{
	char var_a[96], var_b[96], want[64];
	const char *vars_a[] = {var_a, NULL};
	const char *vars_b[] = {var_b, "ROCP_TEST_SECOND=1", NULL};
	char *env_a, *env_b, *env_none = make_env(NULL);
	pid_t a = fork();

	if (a == 0) {
		pause();
		_exit(0);
	}
	CHECK(a > 0);
	owner_var(var_a, sizeof(var_a), a);
	owner_var(var_b, sizeof(var_b), getpid());
	CHECK(var_a[0] && var_b[0]);
	env_a = make_env(vars_a);
	env_b = make_env(vars_b);
	CHECK_OK(agent_load(true));
	CHECK(ag.attach(env_a, RA_TOOL_PATH) == 0);
	CHECK(ag.attach(env_b, RA_TOOL_PATH) == 7);
	snprintf(want, sizeof(want), "(pid %d, since ", (int)a);
	CHECK(strstr(ag.last_error(), "is attached by "));
	CHECK(strstr(ag.last_error(), want));
	CHECK(strstr(ag.last_error(), "): wait for its window to end"));
	CHECK(!getenv("ROCP_TEST_SECOND"));
	CHECK(ag.attach(env_none, RA_TOOL_PATH) == 7);
	CHECK(ag.attach(env_a, RA_TOOL_PATH) == 0);
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	kill(a, SIGKILL);
	CHECK(waitpid(a, NULL, 0) == a);
	CHECK(ag.attach(env_b, RA_TOOL_PATH) == 0);
	CHECK(ag.detach() == 0);
	CHECK(ag.attach(env_none, RA_TOOL_PATH) == 0);
	CHECK(ag.detach() == 0);
	free(env_a);
	free(env_b);
	free(env_none);
	return 0;
}

static void test_rocprofiler_register_attach_one_attacher(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_one_attacher), 0);
}

static int child_rollback(void)
{
	/* SAME already has its value (left as is); FLIP too, then is given another. */
	const char *vars[] = {"ROCP_TEST_NEW=1",
			      "ROCP_TEST_KEEP=new",
			      "ROCP_TEST_KEEP=newer",
			      "ROCP_TEST_SAME=s",
			      "ROCP_TEST_FLIP=a",
			      "ROCP_TEST_FLIP=b",
			      NULL};
	char *env = make_env(vars);

	setenv("ROCP_TEST_KEEP", "old", 1);
	setenv("ROCP_TEST_SAME", "s", 1);
	setenv("ROCP_TEST_FLIP", "a", 1);
	unsetenv("ROCP_TEST_NEW");
	CHECK_OK(agent_load(true));
	CHECK(ag.attach(env, "/nonexistent/libnope.so") == 6);
	CHECK(strstr(ag.last_error(), "no tool can attach: /nonexistent/libnope.so: "));
	CHECK(!getenv("ROCP_TEST_NEW"));
	CHECK(!getenv("ROCPROF_OUTPUT_PATH"));
	CHECK(!strcmp(getenv("ROCP_TEST_KEEP"), "old"));
	CHECK(!strcmp(getenv("ROCP_TEST_SAME"), "s"));
	CHECK(!strcmp(getenv("ROCP_TEST_FLIP"), "a"));
	CHECK(ag.attach(env, ":::") == 8);
	CHECK(ag.attach(env, RA_AGENT_PATH) == 6);
	CHECK(strstr(ag.last_error(), "rocprofiler_configure not exported by this library"));
	CHECK(ag.detach() == 8);
	/* Still never attached: a later attach may name other libraries. */
	CHECK(ag.attach(env, "/nonexistent/libnope.so:" RA_TOOL_PATH) == 0);
	CHECK(strstr(ag.last_error(), "skipped: /nonexistent/libnope.so: "));
	CHECK(!strcmp(getenv("ROCP_TEST_NEW"), "1"));
	CHECK(!strcmp(getenv("ROCP_TEST_KEEP"), "newer"));
	CHECK(!strcmp(getenv("ROCP_TEST_SAME"), "s"));
	CHECK(!strcmp(getenv("ROCP_TEST_FLIP"), "b"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_failure_restores_env(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_rollback), 0);
}

/*
 * A tool that declines is inactive, not an error (as in rocprofiler-sdk):
 * with no other tool the attach has nothing to attach (NO_TOOLS, the tool
 * named as declined), and its configure is never asked again.
 */
static int child_configure_null(void)
{
	const char *vars[] = {"ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL=1", NULL};
	char *declining = make_env(vars), *plain = make_env(NULL);
	const uint8_t *outcome;
	pid_t me = getpid();

	CHECK_OK(agent_load(true));
	outcome = dlsym(agent_handle, "rocattach_agent_tool_outcome");
	CHECK(outcome);
	CHECK(ag.attach(declining, RA_TOOL_PATH) == 1);
	CHECK(strstr(ag.last_error(), "every tool declined: "));
	CHECK(strstr(ag.last_error(), ": declined (its rocprofiler_configure returned NULL)"));
	CHECK(!strcmp(events(me), "configure"));
	CHECK(!getenv("ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL"));
	CHECK(outcome[0] == 1 && outcome[1] == 2 /* ROCATTACH_TOOL_DECLINED */);
	/* Never configured again: it stays declined. */
	CHECK(ag.attach(plain, RA_TOOL_PATH) == 1);
	CHECK(!strcmp(events(me), "configure"));
	free(declining);
	free(plain);
	return 0;
}

static void test_rocprofiler_register_attach_configure_null(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_configure_null), 0);
}

static int child_init_fail(void)
{
	const char *vars[] = {"ROCPROF_EXAMPLE_TOOL_INIT_FAIL=1", NULL};
	char *failing = make_env(vars), *plain = make_env(NULL);

	CHECK_OK(agent_load(true));
	CHECK(ag.attach(failing, RA_TOOL_PATH) == 6);
	CHECK(strstr(ag.last_error(), "initialize failed (returned -1)"));
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize"));
	/* Configured once, failed once: never configured or initialized again. */
	CHECK(ag.attach(plain, RA_TOOL_PATH) == 6);
	CHECK(strstr(ag.last_error(), "initialize failed (returned -1)"));
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize"));
	free(failing);
	free(plain);
	return 0;
}

/* A tool whose initialize failed is not finalized at exit. */
static void test_rocprofiler_register_attach_initialize_fails(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_init_fail), 0);
	assert_string_equal(events(child_pid), "configure configure_attach initialize");
}

static int child_no_attach(void)
{
	const char *vars[] = {"ROCPROF_EXAMPLE_TOOL_NO_ATTACH=1", NULL};
	char *env = make_env(vars);

	CHECK_OK(agent_load(true));
	CHECK(ag.attach(env, RA_TOOL_PATH) == 6);
	CHECK(strstr(ag.last_error(), "no rocprofiler_configure_attach"));
	CHECK(ag.attach(env, RA_TOOL_PATH) == 6);
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize"));
	/* The failed attach took ROCPROF_OUTPUT_PATH back: finalize must still find outdir. */
	CHECK(!getenv("ROCPROF_OUTPUT_PATH"));
	setenv("ROCPROF_OUTPUT_PATH", outdir, 1);
	free(env);
	return 0;
}

/* Initialized without tool_attach: the attach fails, but finalize still comes at exit. */
static void test_rocprofiler_register_attach_no_tool_attach(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_no_attach), 0);
	assert_string_equal(events(child_pid), "configure configure_attach initialize finalize");
}

/* count, then bytes, ending exactly where a PROT_NONE page starts. */
static int attach_with_start(unsigned long long start_ns)
{
	char hint[64];
	const char *vars[] = {hint, NULL};
	char *env;
	int ret;

	snprintf(hint, sizeof(hint), "ROCP_ATTACH_START_NS=%llu", start_ns);
	env = make_env(vars);
	ret = ag.attach(env, RA_TOOL_PATH);
	free(env);
	return ret;
}

static int child_start_hint(void)
{
	unsigned long long t0 = realtime_ns(), start;

	CHECK_OK(agent_load(true));
	/* Too far ahead: ignored. */
	CHECK(attach_with_start(t0 + 20000000000ULL) == 0);
	CHECK(realtime_ns() - t0 < 5000000000ULL);
	CHECK(ag.detach() == 0);
	start = realtime_ns() + 300000000ULL;
	CHECK(attach_with_start(start) == 0);
	CHECK(realtime_ns() >= start);
	CHECK(line_ns(last_line(getpid(), "tool_attach")) >= start);
	return 0;
}

static void test_rocprofiler_register_attach_start_hint(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_start_hint), 0);
}

static int child_detach_slow(void)
{
	const char *vars[] = {"ROCPROF_EXAMPLE_TOOL_DETACH_MS=300", NULL};
	char *env = make_env(vars);
	unsigned long long t0;

	CHECK_OK(agent_load(true));
	CHECK(ag.detach() == 8);
	CHECK(strstr(ag.last_error(), "not attached"));
	CHECK(ag.attach(env, RA_TOOL_PATH) == 0);
	t0 = realtime_ns();
	CHECK(ag.detach() == 0);
	CHECK(realtime_ns() - t0 >= 300000000ULL);
	CHECK(strstr(events(getpid()), "tool_attach tool_detach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_detach_waits_for_tool(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_detach_slow), 0);
}

static void *attach_detach_loop(void *arg)
{
	intptr_t bad = 0;
	int i, r;

	for (i = 0; i < 40; i++) {
		r = ag.attach(arg, RA_TOOL_PATH);
		bad |= r != 0;
		r = ag.detach();
		bad |= r != 0 && r != 8;
	}
	return (void *)bad;
}

/* Never two tool_attach (or tool_detach) in a row. */
static int strictly_alternating(const char *ev)
{
	const char *p = strstr(ev, "tool_attach");
	bool want_attach = true;
	int n = 0;

	while (p && *p) {
		if (strncmp(p, want_attach ? "tool_attach" : "tool_detach", 11))
			return -1;
		want_attach = !want_attach;
		n++;
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	return n;
}

static int child_concurrent(void)
{
	char *env = make_env(NULL);
	pthread_t a, b;
	void *ra, *rb;

	CHECK_OK(agent_load(true));
	CHECK_OK(pthread_create(&a, NULL, attach_detach_loop, env));
	CHECK_OK(pthread_create(&b, NULL, attach_detach_loop, env));
	CHECK_OK(pthread_join(a, &ra));
	CHECK_OK(pthread_join(b, &rb));
	CHECK(!ra && !rb);
	CHECK(strictly_alternating(events(getpid())) >= 80);
	free(env);
	return 0;
}

/* Calls from several threads serialize: the tool sees attach, detach, attach... */
static void test_rocprofiler_register_attach_concurrent(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_concurrent), 0);
}

static int grandchild_attach(void)
{
	char *env = make_env(NULL);

	CHECK(thread_named("rocp-bg-attach") == 0);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 9);
	CHECK(strstr(ag.last_error(), "fork"));
	CHECK(ag.detach() == 9);
	free(env);
	return 0;
}

/* One attach and detach of env; counts: what the agent says it did with the pairs. */
static int cycle(const char *env, const uint32_t *counts, uint32_t pairs, uint32_t set,
		 uint32_t in_place)
{
	CHECK(ag.attach(env, RA_TOOL_PATH) == 0);
	CHECK(counts[0] == pairs && counts[1] == set && counts[2] == in_place);
	CHECK(ag.detach() == 0);
	return 0;
}

static bool env_is(const char *name, const char *value)
{
	const char *v = getenv(name);

	return v && !strcmp(v, value);
}

/*
 * A reattach with the same variables sets none: each is checked at the
 * place it had in environ. Whatever the application did to environ since
 * (a variable changed, unset, another one added) is seen, and the tool
 * gets the sent values as on a first attach.
 */
static int child_reattach_env(void)
{
	const char *vars[] = {"ROCP_TEST_R1=1", "ROCP_TEST_R2=two", NULL};
	char *env = make_env(vars), *env_out = make_env(NULL);
	const uint32_t *counts;

	CHECK(env && env_out);
	CHECK_OK(agent_load(true));
	counts = dlsym(agent_handle, "rocattach_agent_env_counts");
	CHECK(counts);
	CHECK_OK(cycle(env, counts, 3, 3, 0));
	/* The first reattach finds the places by name, the next ones check them. */
	CHECK_OK(cycle(env, counts, 3, 0, 0));
	CHECK_OK(cycle(env, counts, 3, 0, 3));
	CHECK_OK(cycle(env, counts, 3, 0, 3));
	/* Another buffer (a subset) in between keeps the places. */
	CHECK_OK(cycle(env_out, counts, 1, 0, 1));
	CHECK_OK(cycle(env, counts, 3, 0, 3));
	CHECK(env_is("ROCP_TEST_R1", "1") && env_is("ROCP_TEST_R2", "two"));
	/* The application changed one: it is set again, the others checked in place. */
	setenv("ROCP_TEST_R2", "app", 1);
	CHECK_OK(cycle(env, counts, 3, 1, 2));
	CHECK(env_is("ROCP_TEST_R2", "two"));
	CHECK_OK(cycle(env, counts, 3, 0, 0));
	CHECK_OK(cycle(env, counts, 3, 0, 3));
	/* Unset: environ moved down and shrank, so every place is found again. */
	unsetenv("ROCP_TEST_R1");
	CHECK_OK(cycle(env, counts, 3, 1, 0));
	CHECK(env_is("ROCP_TEST_R1", "1"));
	CHECK_OK(cycle(env, counts, 3, 0, 0));
	/* A variable added, the array maybe moved: found again by name. */
	setenv("APP_OTHER", "x", 1);
	CHECK_OK(cycle(env, counts, 3, 0, 0));
	CHECK_OK(cycle(env, counts, 3, 0, 3));
	CHECK(env_is("ROCP_TEST_R1", "1") && env_is("ROCP_TEST_R2", "two"));
	CHECK(env_is("ROCPROF_OUTPUT_PATH", outdir));
	free(env);
	free(env_out);
	return 0;
}

static void test_rocprofiler_register_attach_reattach_env_in_place(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_reattach_env), 0);
}

static int child_fork(void)
{
	int status;
	pid_t pid;

	CHECK_OK(agent_load(true));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(grandchild_attach());
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return 0;
}

static void test_agent_atfork_child_has_no_listener(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_fork), 0);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup_outdir, teardown_outdir)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_agent_init_starts_listener),
	    TEST(test_agent_init_without_env),
	    TEST(test_rocprofiler_register_attach_lifecycle),
	    TEST(test_rocprofiler_register_attach_other_list),
	    TEST(test_rocprofiler_register_attach_already_attached),
	    TEST(test_rocprofiler_register_attach_one_attacher),
	    TEST(test_rocprofiler_register_attach_failure_restores_env),
	    TEST(test_rocprofiler_register_attach_configure_null),
	    TEST(test_rocprofiler_register_attach_initialize_fails),
	    TEST(test_rocprofiler_register_attach_no_tool_attach),
	    TEST(test_rocprofiler_register_attach_start_hint),
	    TEST(test_rocprofiler_register_detach_waits_for_tool),
	    TEST(test_rocprofiler_register_attach_concurrent),
	    TEST(test_agent_atfork_child_has_no_listener),
	    TEST(test_rocprofiler_register_attach_reattach_env_in_place),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

/* SPDX-License-Identifier: MIT */
/*
 * The agent in a real process, with the example tool. The agent's state is
 * per process and its listener does not survive fork, so every test forks a
 * child that dlopens a fresh agent; this process never loads it. Children
 * report through their exit status (CHECK prints the failed condition), and
 * exit through exit() so the agent's atexit finalization runs.
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

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

#define CHECK_OK(expr) CHECK((expr) == 0)

struct agent {
	int (*attach)(const char *env, const char *path);
	int (*detach)(void);
	const char *(*last_error)(void);
	unsigned int (*version)(void);
};

static struct agent ag;
static void *agent_handle;
static char outdir[64];
static pid_t child_pid;

static int agent_load(bool attach_env)
{
	void *h;

	if (attach_env)
		setenv("ROCP_TOOL_ATTACH", "1", 1);
	else
		unsetenv("ROCP_TOOL_ATTACH");
	h = agent_handle = dlopen(RA_AGENT_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	ag.attach = (int (*)(const char *, const char *))dlsym(h, "rocprofiler_register_attach");
	ag.detach = (int (*)(void))dlsym(h, "rocprofiler_register_detach");
	ag.last_error = (const char *(*)(void))dlsym(h, "rocattach_agent_last_error");
	ag.version = (unsigned int (*)(void))dlsym(h, "rocattach_agent_version");
	CHECK(ag.attach && ag.detach && ag.last_error && ag.version);
	return 0;
}

/* Run fn in a fresh child; its exit status, or 128 + the signal that killed it. */
static int run_child(int (*fn)(void))
{
	int status;

	fflush(NULL);
	child_pid = fork();
	assert_true(child_pid >= 0);
	if (child_pid == 0) {
		alarm(30); /* a hung agent must fail the test, not stall it */
		unsetenv("ROCPROF_OUTPUT_PATH");
		exit(fn());
	}
	assert_int_equal(waitpid(child_pid, &status, 0), child_pid);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* An encoded buffer of the NULL-terminated entries, plus ROCPROF_OUTPUT_PATH. */
static char *make_env_len(const char *const *entries, size_t *len)
{
	const char *all[16];
	char out[128];
	size_t n = 0;
	char *buf = NULL;

	snprintf(out, sizeof(out), "ROCPROF_OUTPUT_PATH=%s", outdir);
	all[n++] = out;
	while (entries && *entries && n < 16)
		all[n++] = *entries++;
	if (ra_envbuf_encode(all, n, &buf, len, NULL))
		return NULL;
	return buf;
}

static char *make_env(const char *const *entries)
{
	size_t len;

	return make_env_len(entries, &len);
}

static void log_path(char *path, size_t len, pid_t pid)
{
	char host[256] = "";

	gethostname(host, sizeof(host));
	snprintf(path, len, "%s/rocattach-tool.%s.%d.log", outdir, host, (int)pid);
}

static size_t log_read(pid_t pid, char *buf, size_t len)
{
	char path[PATH_MAX];
	size_t n = 0;
	FILE *f;

	buf[0] = '\0';
	log_path(path, sizeof(path), pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

static char log_buf[65536];

/* The event names of pid's log, space-separated. */
static const char *events(pid_t pid)
{
	static char out[16384];
	char *line, *save = NULL;
	size_t off = 0;

	out[0] = '\0';
	log_read(pid, log_buf, sizeof(log_buf));
	for (line = strtok_r(log_buf, "\n", &save); line && off < sizeof(out);
	     line = strtok_r(NULL, "\n", &save))
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%.*s", off ? " " : "",
					(int)strcspn(line, " "), line);
	return out;
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

static int setup_outdir(void **state)
{
	(void)state;
	snprintf(outdir, sizeof(outdir), "/tmp/ra-test-agent-XXXXXX");
	return mkdtemp(outdir) ? 0 : -1;
}

static int teardown_outdir(void **state)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(outdir);

	(void)state;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", outdir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(outdir);
	return 0;
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
	CHECK(strstr(ag.last_error(), "differs from the first attach"));
	CHECK(ag.attach(env, NULL) == 8);
	CHECK(ag.detach() == 0);
	free(env);
	return 0;
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
static char *at_page_end(char *map, size_t page, uint32_t count, const char *bytes, size_t n)
{
	char *p = map + page - sizeof(count) - n;

	memcpy(p, &count, sizeof(count));
	memcpy(p + sizeof(count), bytes, n);
	return p;
}

/* Start of the [vvar] mapping, NULL if none. */
static const char *vvar_start(void)
{
	char line[512];
	unsigned long lo = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vvar]") && sscanf(line, "%lx-", &lo) == 1)
			break;
	if (f)
		fclose(f);
	return (const char *)lo;
}

/* The refusals that need no setup: a PROT_NONE page, address 16, [vvar]. */
static int bad_pointers_basic(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map, *env, *path;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	CHECK_OK(mprotect(map + page, page, PROT_NONE));
	env = at_page_end(map, page, 5, "ROCP_A\0001", 9);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "malformed"));
	env = at_page_end(map, page, 1, "ROCP_A\0001", 8);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 8);
	CHECK(ag.attach(map + page, RA_TOOL_PATH) == 8);
	CHECK(ag.attach((const char *)16, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "not in readable memory"));
	path = map + page - 4;
	memcpy(path, "/lib", 4);
	CHECK(ag.attach(NULL, path) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(NULL, (const char *)16) == 8);
	CHECK(ag.attach(NULL, map + page) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	/* Readable in maps, but not memory to scan. */
	CHECK(!vvar_start() || ag.attach(NULL, vvar_start()) == 8);
	CHECK(!vvar_start() || strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(!vvar_start() || ag.attach(vvar_start(), RA_TOOL_PATH) == 8);
	CHECK(!vvar_start() || strstr(ag.last_error(), "not in readable memory"));
	CHECK_OK(munmap(map, 2 * page));
	return 0;
}

/* A hole (an unmapped page) between two mapped ones. */
static int bad_pointers_hole(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map, *env;

	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	CHECK_OK(munmap(map + page, page));
	CHECK(ag.attach(NULL, map + page) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(map + page, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "not in readable memory"));
	/* Runs into the hole without a NUL; the page after it has one. */
	memset(map, 'a', page);
	memset(map + 2 * page, 0, page);
	CHECK(ag.attach(NULL, map + page - 100) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(NULL, map) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	/* A buffer whose last value would run on into the hole. */
	env = at_page_end(map, page, 1, "ROCP_A\0001", 8);
	CHECK(ag.attach(env, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "malformed"));
	CHECK_OK(munmap(map, page));
	CHECK_OK(munmap(map + 2 * page, page));
	return 0;
}

/* The agent's messages (ROCP_AGENT_DEBUG=1) go to path from now on; the old stderr, or -1. */
static int debug_to(const char *path)
{
	int fd, old;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	fflush(stderr);
	old = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	setenv("ROCP_AGENT_DEBUG", "1", 1);
	return old;
}

/* Back to the old stderr. */
static void debug_end(int old)
{
	unsetenv("ROCP_AGENT_DEBUG");
	fflush(stderr);
	dup2(old, STDERR_FILENO);
	close(old);
}

/* Do the messages in path hold text? */
static bool debug_has(const char *path, const char *text)
{
	char buf[16384];
	size_t n = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

/* Does this kernel answer PROCMAP_QUERY (Linux 6.11)? Then the agent must use it. */
static bool procmap_query_works(void)
{
	static int probe;
	struct procmap_query q = {.size = sizeof(q), .query_addr = (uintptr_t)&probe};
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && ioctl(fd, PROCMAP_QUERY, &q) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A string is read up to 1 MiB (agent_args.c): one whose NUL comes later is refused. */
static int bad_pointers_long(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = ((size_t)1 << 20) + page;
	char *map;

	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	memset(map, '/', size - 1);
	map[size - 1] = '\0';
	CHECK(ag.attach(NULL, map) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK_OK(munmap(map, size));
	return 0;
}

static int child_bad_pointers(void)
{
	char log[PATH_MAX];
	int old;

	snprintf(log, sizeof(log), "%s/agent-debug.log", outdir);
	CHECK_OK(agent_load(true));
	old = debug_to(log);
	CHECK(old >= 0);
	CHECK_OK(bad_pointers_basic());
	CHECK_OK(bad_pointers_hole());
	CHECK_OK(bad_pointers_long());
	debug_end(old);
	/* The checks above ran on the fast path: no direct copy, no maps file parsed. */
	CHECK(!debug_has(log, "copying directly"));
	CHECK(!procmap_query_works() || !debug_has(log, "parsing /proc/self/maps"));
	CHECK(!strcmp(events(getpid()), ""));
	return 0;
}

static void test_rocprofiler_register_attach_bad_pointers(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_bad_pointers), 0);
}

/*
 * s copied across the boundary of two mappings (read-write, then read-only),
 * half in each.
 */
static const char *straddled(const char *s)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = strlen(s) + 1;
	char *map;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	memcpy(map + page - len / 2, s, len);
	if (mprotect(map + page, page, PROT_READ))
		return NULL;
	return map + page - len / 2;
}

/* A buffer or a string may run on into the next mapping when it is contiguous and readable. */
static int child_two_mappings(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	char *map, *env, *buf;

	map = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	env = make_env_len(NULL, &len);
	CHECK(env);
	buf = map + page - len / 2;
	memcpy(buf, env, len);
	CHECK_OK(mprotect(map + page, page, PROT_READ));
	CHECK_OK(mprotect(map + 2 * page, page, PROT_NONE));
	CHECK_OK(agent_load(true));
	CHECK(ag.attach(buf, straddled(RA_TOOL_PATH)) == 0);
	CHECK(!strcmp(getenv("ROCPROF_OUTPUT_PATH"), outdir));
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_spans_mappings(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_two_mappings), 0);
}

/*
 * A file under /dev is a device to the check (by its name, as in maps),
 * whatever it holds: process_vm_readv alone would read it. /dev/zero and
 * files in /dev/shm are memory.
 */
static int child_dev_names(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	char path[64], *dev, *anon, *env, *zero, *shm;
	int fd;

	CHECK_OK(agent_load(true));
	snprintf(path, sizeof(path), "/dev/rocattach-test.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	unlink(path);
	env = make_env_len(NULL, &len);
	CHECK(env && len < page / 2);
	CHECK_OK(ftruncate(fd, (off_t)page));
	CHECK(pwrite(fd, RA_TOOL_PATH, sizeof(RA_TOOL_PATH), 0) == sizeof(RA_TOOL_PATH));
	CHECK(pwrite(fd, env, len, (off_t)(page / 2)) == (ssize_t)len);
	dev = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(dev != MAP_FAILED);
	CHECK(ag.attach(NULL, dev) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	CHECK(ag.attach(dev + page / 2, RA_TOOL_PATH) == 8);
	CHECK(strstr(ag.last_error(), "not in readable memory"));
	/* A string that runs on from anonymous memory into the file's mapping. */
	anon = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED);
	CHECK(mmap(anon + page, page, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == anon + page);
	memcpy(anon + page - 4, "/lib", 4);
	CHECK(ag.attach(NULL, anon + page - 4) == 8);
	CHECK(strstr(ag.last_error(), "not a string in readable memory"));
	close(fd);
	/* Shared /dev/zero is read: an empty string, which names no library. */
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	zero = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	CHECK(zero != MAP_FAILED);
	CHECK(ag.attach(NULL, zero) == 8);
	CHECK(strstr(ag.last_error(), "names no library"));
	snprintf(path, sizeof(path), "/dev/shm/rocattach-test.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_OK(ftruncate(fd, (off_t)page));
	CHECK(pwrite(fd, RA_TOOL_PATH, sizeof(RA_TOOL_PATH), 0) == sizeof(RA_TOOL_PATH));
	CHECK(pwrite(fd, env, len, (off_t)(page / 2)) == (ssize_t)len);
	shm = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	CHECK(shm != MAP_FAILED);
	CHECK(ag.attach(shm + page / 2, shm) == 0);
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_dev_names(void **state)
{
	(void)state;
	if (access("/dev", W_OK) || access("/dev/shm", W_OK))
		RA_SKIP("/dev or /dev/shm is not writable here: no file to map under them");
	assert_int_equal(run_child(child_dev_names), 0);
}

/*
 * process_vm_readv answers EPERM and PROCMAP_QUERY ENOTTY, as under a
 * seccomp profile on a kernel before 6.11. The ioctl's request is in the
 * low half of args[1] (x86-64 and aarch64 are little-endian).
 */
static int deny_fast_paths(void)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)PROCMAP_QUERY, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Without either, the agent parses the maps file and copies directly: the same answers. */
static int child_slow_paths(void)
{
	size_t len;
	char log[PATH_MAX], *env;
	int old;

	snprintf(log, sizeof(log), "%s/agent-debug.log", outdir);
	CHECK_OK(deny_fast_paths());
	CHECK_OK(agent_load(true));
	old = debug_to(log);
	CHECK(old >= 0);
	CHECK_OK(bad_pointers_basic());
	CHECK_OK(bad_pointers_hole());
	CHECK_OK(bad_pointers_long());
	env = make_env_len(NULL, &len);
	CHECK(env);
	CHECK(ag.attach(env, straddled(RA_TOOL_PATH)) == 0);
	debug_end(old);
	CHECK(debug_has(log, "process_vm_readv on ourselves: Operation not permitted"));
	CHECK(debug_has(log,
			"PROCMAP_QUERY: Inappropriate ioctl for device; parsing /proc/self/maps"));
	CHECK(!strcmp(events(getpid()), "configure configure_attach initialize tool_attach"));
	free(env);
	return 0;
}

static void test_rocprofiler_register_attach_slow_paths(void **state)
{
	(void)state;
	assert_int_equal(run_child(child_slow_paths), 0);
}

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
	    TEST(test_rocprofiler_register_attach_already_attached),
	    TEST(test_rocprofiler_register_attach_one_attacher),
	    TEST(test_rocprofiler_register_attach_failure_restores_env),
	    TEST(test_rocprofiler_register_attach_configure_null),
	    TEST(test_rocprofiler_register_attach_initialize_fails),
	    TEST(test_rocprofiler_register_attach_no_tool_attach),
	    TEST(test_rocprofiler_register_attach_bad_pointers),
	    TEST(test_rocprofiler_register_attach_spans_mappings),
	    TEST(test_rocprofiler_register_attach_dev_names),
	    TEST(test_rocprofiler_register_attach_slow_paths),
	    TEST(test_rocprofiler_register_attach_start_hint),
	    TEST(test_rocprofiler_register_detach_waits_for_tool),
	    TEST(test_rocprofiler_register_attach_concurrent),
	    TEST(test_agent_atfork_child_has_no_listener),
	    TEST(test_rocprofiler_register_attach_reattach_env_in_place),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

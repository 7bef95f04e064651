/* SPDX-License-Identifier: MIT */
/*
 * Every target on its own clock (issue 30) in `rocattach` over a process
 * tree (--attach-children, the default): a root and two children, one of
 * which is harmed (a hung rocprofiler_configure, a hung tool_attach, a
 * stopped child, a tool_attach returning after the stop), on both target
 * sides (our agent, and ROCm's double in tests/rocm/). The two healthy
 * tools' own timestamps (the example tool's log) show the planned -d window
 * within the report's tolerance (1% + 5 ms); the harmed child is named on
 * standard error with its cause, and the run exits as documented (4; a late
 * one is only said). Every process of the tree is this test's: its victim's
 * children, killed at the end.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testlib.h"

#define MS 1000000ull
#define WINDOW_MS 1000ull
#define TIMEOUT_MS "3000"
/* The report's tolerance on a window's length (docs/report.md): 1% + 5 ms. */
#define TOLERANCE_NS (WINDOW_MS * MS / 100 + 5 * MS)
/* The example tool logs its times; the fault tool, after it, harms as its process's env says. */
#define TOOLS RA_TOOL_PATH ":" RA_FAULT_TOOL

enum harm { HUNG_CONFIGURE, HUNG_TOOL_ATTACH, STOPPED, SLOW_TOOL_ATTACH };
static const char *const harm_names[] = {"hung rocprofiler_configure", "hung tool_attach",
					 "stopped", "tool_attach returning after the stop"};
static const char *const harm_env[] = {"ROCP_FAULT_TOOL=configure-hang ",
				       "ROCP_FAULT_TOOL=attach-hang ", "",
				       "ROCP_FAULT_TOOL=attach-slow "};

static char errbuf[16384];

struct tree {
	struct victim root;
	pid_t kid[2]; /* kid[0] is the harmed one */
};

/* The direct children of pid (at most 2), from /proc/PID/task/PID/children. */
static int children_of(pid_t pid, pid_t *out)
{
	char path[64];
	int n = 0, c;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (n < 2 && fscanf(f, "%d", &c) == 1)
		out[n++] = c;
	fclose(f);
	return n;
}

static bool harmed_by_env(pid_t pid)
{
	char path[64], env[8192];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	len = fread(env, 1, sizeof(env) - 1, f);
	fclose(f);
	for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
		env[len] = '\0';
		if (!strncmp(env + i, "ROCP_FAULT_TOOL=", 16))
			return true;
	}
	return false;
}

/*
 * sh execs the example target as the root after starting two children of
 * it (the first harmed as h says); every one listens, on the side asked.
 */
static void start_tree(struct tree *tr, bool rocm, enum harm h)
{
	struct victim_opts o = {.agent = !rocm, .attach_env = true, .program = "/bin/sh"};
	char script[1024];
	int n = 0;

	snprintf(script, sizeof(script),
		 "%s%s </dev/null >/dev/null 2>&1 & %s </dev/null >/dev/null 2>&1 & exec %s",
		 harm_env[h], RA_TARGET_PATH, RA_TARGET_PATH, RA_TARGET_PATH);
	o.argv[0] = "-c";
	o.argv[1] = script;
	if (rocm)
		o.env[0] = "LD_PRELOAD=" RA_ROCM_REGISTER;
	assert_int_equal(victim_start(&tr->root, &o), 0);
	for (int k = 0; k < 500; k++, usleep(10000)) {
		n = children_of(tr->root.pid, tr->kid);
		if (n == 2 && proc_thread(tr->kid[0], "rocp-bg-attach") > 0 &&
		    proc_thread(tr->kid[1], "rocp-bg-attach") > 0)
			break;
	}
	assert_int_equal(n, 2);
	assert_true(proc_thread(tr->root.pid, "rocp-bg-attach") > 0);
	if (harmed_by_env(tr->kid[1])) {
		pid_t p = tr->kid[0];

		tr->kid[0] = tr->kid[1];
		tr->kid[1] = p;
	}
	assert_true(h == STOPPED || harmed_by_env(tr->kid[0]));
	assert_false(harmed_by_env(tr->kid[1]) || harmed_by_env(tr->root.pid));
	if (h == STOPPED) {
		assert_int_equal(kill(tr->kid[0], SIGSTOP), 0);
		for (int k = 0; k < 200 && proc_state(tr->kid[0]) != 'T'; k++)
			usleep(5000);
		assert_int_equal(proc_state(tr->kid[0]), 'T');
	}
}

static void stop_tree(struct tree *tr)
{
	for (int i = 0; i < 2; i++) {
		kill(tr->kid[i], SIGCONT);
		kill(tr->kid[i], SIGKILL);
	}
	victim_stop(&tr->root);
}

/*
 * A healthy process: its tools' own window, hand-over to hand-back, is the
 * planned one within the tolerance (a loaded machine may deschedule a
 * hand-over: the caller tries again). Never held by the harmed call.
 */
static bool planned(pid_t pid)
{
	const char *log = log_of(pid);
	uint64_t a = tool_event_ns(log, "tool_attach", 1), d = tool_event_ns(log, "tool_detach", 1);

	print_message("  pid %d: tool window %.3f ms\n", (int)pid, ((double)d - (double)a) / 1e6);
	assert_true(a && d > a);
	assert_int_equal(tool_count(log, "tool_attach"), 1);
	assert_int_equal(tool_count(log, "tool_detach"), 1);
	/* Held by the harmed call, it would end at its deadline: 3 s after the attach. */
	assert_true(d - a < (WINDOW_MS + 1000) * MS);
	assert_true(proc_alive(pid));
	assert_int_equal(proc_tracer(pid), 0);
	return d - a >= WINDOW_MS * MS - TOLERANCE_NS && d - a <= WINDOW_MS * MS + TOLERANCE_NS;
}

/* The line of errbuf that names "process PID" and holds what, or NULL. */
static const char *line_naming(pid_t pid, const char *what)
{
	char name[32];
	const char *at = errbuf;

	snprintf(name, sizeof(name), "process %d", (int)pid);
	while (at && *at) {
		const char *end = strchr(at, '\n'), *p = strstr(at, name), *w = strstr(at, what);

		if (!end)
			end = at + strlen(at);
		if (p && w && p < end && w < end)
			return at;
		at = *end ? end + 1 : NULL;
	}
	return NULL;
}

/* The harmed child: named with its cause; the exit code as documented. */
static void assert_harmed(pid_t pid, enum harm h, int code)
{
	static const char *const cause[] = {
	    "did not return within 3.0 s", "did not return within 3.0 s",
	    "is stopped (SIGSTOP/SIGTSTP): not attached",
	    "after the window's stop: its tools were detached at once"};

	if (!line_naming(pid, cause[h]))
		fail_msg("no line names process %d with \"%s\":\n%s", (int)pid, cause[h], errbuf);
	assert_int_equal(code, h == SLOW_TOOL_ATTACH ? 0 : 4);
	assert_true(proc_alive(pid));
	assert_int_equal(proc_tracer(pid), 0);
	if (h == SLOW_TOOL_ATTACH)
		assert_int_equal(tool_count(log_of(pid), "tool_detach"), 1);
	if (h == HUNG_CONFIGURE)
		assert_int_equal(tool_count(log_of(pid), "tool_attach"), 0);
	if (h == STOPPED)
		assert_string_equal(log_of(pid), "");
}

/* One run of rocattach; returns whether both healthy tools' windows were the planned one. */
static bool one_run(bool rocm, enum harm h)
{
	char pid[16];
	const char *args[] = {"-p",	  pid, "-t", TOOLS, "-d", "1000", "--call-timeout",
			      TIMEOUT_MS, NULL};
	struct tree tr;
	uint64_t t0, took;
	bool ok;
	int code;

	print_message("%s side, %s\n", rocm ? "rocm" : "agent", harm_names[h]);
	assert_int_equal(setup_outdir(NULL), 0);
	start_tree(&tr, rocm, h);
	snprintf(pid, sizeof(pid), "%d", (int)tr.root.pid);
	t0 = realtime_ns();
	code = cli_run(args, 0, errbuf, sizeof(errbuf));
	took = realtime_ns() - t0;
	print_message("  exit %d after %.3f s; stderr:\n%s", code, (double)took / 1e9, errbuf);
	ok = planned(tr.root.pid);
	ok &= planned(tr.kid[1]);
	assert_harmed(tr.kid[0], h, code);
	assert_unharmed(&tr.root, true);
	stop_tree(&tr);
	return ok;
}

/* Both sides; the planned length within the tolerance in one of 3 tries per side. */
static void both_sides(enum harm h)
{
	for (int rocm = 0; rocm < 2; rocm++) {
		int k = 0;

		while (!one_run(rocm, h) && ++k < 3)
			print_message("  off the tolerance (a loaded machine): again\n");
		assert_true(k < 3);
	}
}

static void test_tree_own_clock_hung_configure(void **state)
{
	(void)state;
	both_sides(HUNG_CONFIGURE);
}

static void test_tree_own_clock_hung_tool_attach(void **state)
{
	(void)state;
	both_sides(HUNG_TOOL_ATTACH);
}

static void test_tree_own_clock_stopped_child(void **state)
{
	(void)state;
	both_sides(STOPPED);
}

static void test_tree_own_clock_late_child(void **state)
{
	(void)state;
	both_sides(SLOW_TOOL_ATTACH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tree_own_clock_hung_configure),
	    cmocka_unit_test(test_tree_own_clock_hung_tool_attach),
	    cmocka_unit_test(test_tree_own_clock_stopped_child),
	    cmocka_unit_test(test_tree_own_clock_late_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

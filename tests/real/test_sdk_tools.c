/* SPDX-License-Identifier: MIT */
/*
 * Tools written the way AMD's rocprofiler-sdk samples are (tests/tools/: C
 * and C++, setting client_id->name, checking the version, keeping a copy of
 * the client id), on both target sides (our agent, ROCm's double) and with
 * --inject: they attach and detach unharmed, and the report says what became
 * of each library of the list (loaded, declined, failed; on ROCm's side
 * only "not loaded" can be seen, the rest is unknown).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>
#include <rocattach/tool.h>

#include "node.h"
#include "testlib.h"

#define BOTH RA_SDK_TOOL_C ":" RA_SDK_TOOL_CXX
#define MISSING "libnotthere-rocattach.so"

enum side { AGENT, ROCM, INJECT };

static const struct victim_opts side_opts[] = {
    [AGENT] = {.agent = true, .attach_env = true},
    [ROCM] = {.attach_env = true, .env = {"LD_PRELOAD=" RA_ROCM_REGISTER}},
    [INJECT] = {0},
};

static rocattach_opts_t opts_for(enum side s, const char *tools)
{
	rocattach_opts_t o = {.size = sizeof(o), .tool_libraries = tools};

	if (s == INJECT)
		o.flags |= ROCATTACH_F_INJECT;
	return o;
}

/* The tool's log in test_outdir ("" if none). */
static const char *sdk_log(const char *name, pid_t pid)
{
	static char buf[4096];
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/sdk-tool.%s.%d.log", test_outdir, name, (int)pid);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void assert_logged(const char *name, pid_t pid, const char *line)
{
	const char *log = sdk_log(name, pid);

	if (!strstr(log, line))
		fail_msg("%s of process %d: no \"%s\" in:\n%s", name, (int)pid, line, log);
}

static int count_of(const char *name, pid_t pid, const char *event)
{
	const char *p = sdk_log(name, pid);
	int n = 0;

	while ((p = strstr(p, event))) {
		n++;
		p += strlen(event);
	}
	return n;
}

static void assert_outcomes(const rocattach_report_t *rep, int a, int b)
{
	assert_int_equal(rep->tool_count, 2);
	assert_int_equal(rep->tool_outcome[0], a);
	assert_int_equal(rep->tool_outcome[1], b);
}

/* Both tools load, get the SDK's client id and version, attach and detach, twice. */
static void both_load(enum side s)
{
	rocattach_opts_t o = opts_for(s, BOTH);
	rocattach_report_t rep = {.size = sizeof(rep)};
	int seen = s == ROCM ? ROCATTACH_TOOL_UNKNOWN : ROCATTACH_TOOL_LOADED;
	struct victim v;

	assert_int_equal(victim_start(&v, &side_opts[s]), 0);
	for (int window = 1; window <= 2; window++) {
		assert_int_equal(rocattach_attach_ex(v.pid, &o, &rep), ROCATTACH_STATUS_SUCCESS);
		assert_string_equal(rep.message, "");
		assert_outcomes(&rep, seen, seen);
		assert_int_equal(rocattach_detach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
		assert_int_equal(count_of("sdk-c", v.pid, "tool_detach data_ok=1"), window);
		assert_int_equal(count_of("sdk-cxx", v.pid, "tool_detach data_ok=1"), window);
	}
	assert_logged("sdk-c", v.pid,
		      "configure version=1.3.5 runtime=1.3.5 priority=0 id_size=24 name=sdk-c");
	assert_logged("sdk-c", v.pid, "configure_attach version=10305 priority=0 name_kept=1");
	assert_logged("sdk-c", v.pid, "initialize data_ok=1");
	assert_logged("sdk-cxx", v.pid,
		      "configure version=1.3.5 runtime=1.3.5 priority=1 id_size=24 name=sdk-cxx");
	assert_logged("sdk-cxx", v.pid, "configure_attach priority=1 name_kept=1");
	assert_int_equal(count_of("sdk-c", v.pid, "tool_attach contexts=0 data_ok=1"), 2);
	assert_int_equal(count_of("sdk-cxx", v.pid, "tool_attach contexts=0 data_ok=1"), 2);
	assert_int_equal(count_of("sdk-c", v.pid, "configure "), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_sdk_tools_agent(void **state)
{
	(void)state;
	both_load(AGENT);
}

static void test_sdk_tools_rocm(void **state)
{
	(void)state;
	both_load(ROCM);
}

static void test_sdk_tools_inject(void **state)
{
	(void)state;
	both_load(INJECT);
}

/* One declines: inactive, no error; the other attaches. */
static void one_declines(enum side s)
{
	rocattach_opts_t o = opts_for(s, BOTH);
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct victim v;

	assert_int_equal(victim_start(&v, &side_opts[s]), 0);
	setenv("ROCP_TEST_SDK_DECLINE", "sdk-c", 1);
	assert_int_equal(rocattach_attach_ex(v.pid, &o, &rep), ROCATTACH_STATUS_SUCCESS);
	unsetenv("ROCP_TEST_SDK_DECLINE");
	if (s == ROCM)
		assert_outcomes(&rep, ROCATTACH_TOOL_UNKNOWN, ROCATTACH_TOOL_UNKNOWN);
	else
		assert_outcomes(&rep, ROCATTACH_TOOL_DECLINED, ROCATTACH_TOOL_LOADED);
	assert_int_equal(rocattach_detach_ex(v.pid, NULL, &rep), ROCATTACH_STATUS_SUCCESS);
	/* Asked once, never configured for attach nor attached. */
	assert_int_equal(count_of("sdk-c", v.pid, "configure "), 1);
	assert_int_equal(count_of("sdk-c", v.pid, "configure_attach"), 0);
	assert_int_equal(count_of("sdk-c", v.pid, "tool_attach"), 0);
	assert_logged("sdk-cxx", v.pid, "priority=1 id_size=24 name=sdk-cxx");
	assert_int_equal(count_of("sdk-cxx", v.pid, "tool_detach data_ok=1"), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_sdk_tool_declines_agent(void **state)
{
	(void)state;
	one_declines(AGENT);
}

static void test_sdk_tool_declines_rocm(void **state)
{
	(void)state;
	one_declines(ROCM);
}

/* Every tool declines: through the node layer, a tool failure (no later window can change it). */
static void all_decline(enum side s)
{
	struct rn_pool_opts po = {.tools = RA_SDK_TOOL_C, .inject = s == INJECT};
	struct rn_target t = {.state = RN_FOUND};
	struct victim v;

	assert_int_equal(victim_start(&v, &side_opts[s]), 0);
	t.pid = v.pid;
	setenv("ROCP_TEST_SDK_DECLINE", "sdk-c", 1);
	rn_attach_all(&t, 1, &po);
	unsetenv("ROCP_TEST_SDK_DECLINE");
	print_message("%s\n", t.message);
	if (s == ROCM) {
		/* ROCm's side cannot tell declining from failing (docs/report.md): 6. */
		assert_int_equal(t.state, RN_ATTACH_FAILED);
		assert_true(rn_tool_failed(&t));
		assert_false(rn_all_declined(&t));
		assert_int_equal(t.agent_status, ROCATTACH_REGISTER_ROCPROFILER_ERROR);
	} else {
		/* Our agent tells it: declined, not attached, and no failure. */
		assert_int_equal(t.state, RN_DECLINED);
		assert_false(rn_tool_failed(&t));
		assert_true(rn_all_declined(&t));
		assert_int_equal(t.agent_status, ROCATTACH_REGISTER_NO_TOOLS);
		assert_non_null(strstr(t.message, "every tool declined: " RA_SDK_TOOL_C
						  ": declined (its rocprofiler_configure returned "
						  "NULL)"));
		assert_int_equal(t.tool_n, 1);
		assert_int_equal(t.tools[0], ROCATTACH_TOOL_DECLINED);
	}
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_sdk_all_decline_agent(void **state)
{
	(void)state;
	all_decline(AGENT);
}

static void test_sdk_all_decline_rocm(void **state)
{
	(void)state;
	all_decline(ROCM);
}

static void test_sdk_all_decline_inject(void **state)
{
	(void)state;
	all_decline(INJECT);
}

/*
 * A library of the list that does not load is never skipped silently: on
 * our agent the others attach and the target counts as failed, the library
 * and the loader's reason named; on ROCm's side the attach fails (6).
 */
static void one_missing(enum side s)
{
	struct rn_pool_opts po = {.tools = RA_SDK_TOOL_C ":" MISSING, .inject = s == INJECT};
	struct rn_target t = {.state = RN_FOUND};
	struct victim v;

	assert_int_equal(victim_start(&v, &side_opts[s]), 0);
	t.pid = v.pid;
	rn_attach_all(&t, 1, &po);
	print_message("%s\n", t.message);
	assert_int_equal(t.tool_n, 2);
	assert_int_equal(t.tools[1], ROCATTACH_TOOL_FAILED);
	assert_true(rn_some_tool_failed(&t));
	if (s == ROCM) {
		assert_int_equal(t.state, RN_ATTACH_FAILED);
		assert_int_equal(t.agent_status, ROCATTACH_REGISTER_ROCPROFILER_ERROR);
		assert_int_equal(t.tools[0], ROCATTACH_TOOL_UNKNOWN);
		assert_non_null(strstr(t.message, "; not loaded in the target: " MISSING));
	} else {
		assert_int_equal(t.state, RN_ATTACHED);
		assert_int_equal(t.tools[0], ROCATTACH_TOOL_LOADED);
		assert_non_null(strstr(t.message, MISSING ": "));
		assert_non_null(strstr(t.message, "cannot open shared object file"));
		rn_detach_all(&t, 1, &po);
		assert_int_equal(t.state, RN_DETACHED);
		/* The detach keeps what became of the tools. */
		assert_int_equal(t.tools[1], ROCATTACH_TOOL_FAILED);
		assert_int_equal(count_of("sdk-c", v.pid, "tool_detach data_ok=1"), 1);
	}
	assert_unharmed(&v, true);
	victim_stop(&v);
}

static void test_sdk_missing_tool_agent(void **state)
{
	(void)state;
	one_missing(AGENT);
}

static void test_sdk_missing_tool_rocm(void **state)
{
	(void)state;
	one_missing(ROCM);
}

static void test_sdk_missing_tool_inject(void **state)
{
	(void)state;
	one_missing(INJECT);
}

/* rocattach says it in one line and exits 4; the window still ran for the tool that loaded. */
static void test_sdk_missing_tool_cli(void **state)
{
	char pid[16], err[4096];
	struct victim v;
	int rc;

	(void)state;
	assert_int_equal(victim_start(&v, &side_opts[AGENT]), 0);
	snprintf(pid, sizeof(pid), "%d", v.pid);
	const char *args[] = {"-p", pid, "-t", RA_SDK_TOOL_C ":" MISSING, "-d", "100", NULL};
	rc = cli_run(args, 0, err, sizeof(err));
	print_message("%s", err);
	assert_int_equal(rc, 4);
	assert_non_null(strstr(err, "rocattach: error: process "));
	assert_non_null(strstr(err, ": a tool of the list failed, the others attached: attached; "
				    "skipped: " MISSING ": "));
	assert_int_equal(count_lines(err) - 2, 1); /* plus "attached to" and "detached from" */
	assert_int_equal(count_of("sdk-c", v.pid, "tool_detach data_ok=1"), 1);
	assert_unharmed(&v, true);
	victim_stop(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sdk_tools_agent),
	    cmocka_unit_test(test_sdk_tools_rocm),
	    cmocka_unit_test(test_sdk_tools_inject),
	    cmocka_unit_test(test_sdk_tool_declines_agent),
	    cmocka_unit_test(test_sdk_tool_declines_rocm),
	    cmocka_unit_test(test_sdk_all_decline_agent),
	    cmocka_unit_test(test_sdk_all_decline_rocm),
	    cmocka_unit_test(test_sdk_all_decline_inject),
	    cmocka_unit_test(test_sdk_missing_tool_agent),
	    cmocka_unit_test(test_sdk_missing_tool_rocm),
	    cmocka_unit_test(test_sdk_missing_tool_inject),
	    cmocka_unit_test(test_sdk_missing_tool_cli),
	};

	return cmocka_run_group_tests(tests, setup_outdir_no_tool, NULL);
}

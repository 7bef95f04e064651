/* SPDX-License-Identifier: MIT */
/* The node layer's parallel pool on 40 real processes: every record checked. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "node.h"
#include "testlib.h"

#define N 40

static struct victim victims[N];
static pid_t stand_in; /* plays the launcher: the victims are our children, not its */

static int setup(void **state)
{
	const struct victim_opts o = {
	    .agent = true, .attach_env = true, .argv = {"--threads", "1"}};

	(void)state;
	stand_in = fork();
	if (stand_in == 0) {
		pause();
		_exit(0);
	}
	if (setup_outdir(NULL) < 0)
		return -1;
	for (int i = 0; i < N; i++)
		if (victim_start(&victims[i], &o))
			return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < N; i++)
		victim_stop(&victims[i]);
	kill(stand_in, SIGKILL);
	waitpid(stand_in, NULL, 0);
	return 0;
}

/* Every victim still running, through the --pid selector. */
static void select_all(struct rn_target **t, size_t *n)
{
	pid_t pids[N];
	struct rn_selector sel = {.pids = pids, .uid = -1, .self = stand_in};
	char err[256];

	for (int i = 0; i < N; i++)
		if (victims[i].pid > 0)
			pids[sel.n_pids++] = victims[i].pid;
	assert_int_equal(rn_select(&sel, t, n, err, sizeof(err)), 0);
	assert_int_equal(*n, sel.n_pids);
}

static int events(pid_t pid, const char *ev)
{
	return tool_count(log_of(pid), ev);
}

static void test_rn_attach_all_forty_records_correct(void **state)
{
	struct rn_pool_opts o = {.tools = RA_TOOL_PATH};
	struct rn_target *t;
	size_t n, exited = 0;
	pid_t gone;

	(void)state;
	select_all(&t, &n);
	assert_true(rn_pool_jobs(&o, n) > 1);
	rn_attach_all(t, n, &o);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(t[i].state, RN_ATTACHED);
		assert_int_equal(t[i].status, ROCATTACH_STATUS_SUCCESS);
		assert_int_equal(t[i].agent_status, 0);
		assert_string_equal(t[i].message, "");
		assert_true(t[i].listener);
		assert_true(t[i].attach_start_ns > 0 && t[i].attach_end_ns >= t[i].attach_start_ns);
		assert_string_equal(t[i].exe, "rocattach-example-target");
		assert_int_equal(events(t[i].pid, "tool_attach"), 1);
	}
	/* One target exits during the window: it died with its tools attached, never a hang. */
	gone = t[7].pid;
	for (int i = 0; i < N; i++)
		if (victims[i].pid == gone)
			victim_stop(&victims[i]);
	rn_detach_all(t, n, &o);
	for (size_t i = 0; i < n; i++) {
		if (t[i].pid == gone) {
			assert_int_equal(t[i].state, RN_DIED_ATTACHED);
			assert_true(t[i].died_ns >= t[i].attach_end_ns);
			assert_int_equal(t[i].status,
					 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
			assert_non_null(strstr(t[i].message, "died with its tools attached"));
			exited++;
			continue;
		}
		assert_int_equal(t[i].state, RN_DETACHED);
		assert_int_equal(t[i].windows, 1);
		assert_true(t[i].detach_start_ns >= t[i].attach_end_ns);
		assert_int_equal(events(t[i].pid, "tool_detach"), 1);
	}
	assert_int_equal(exited, 1);

	/* A second window, the sequential way: same outcome. */
	o.jobs = 1;
	rn_attach_all(t, n, &o);
	rn_detach_all(t, n, &o);
	for (size_t i = 0; i < n; i++) {
		if (t[i].pid == gone)
			continue;
		assert_int_equal(t[i].state, RN_DETACHED);
		assert_int_equal(t[i].windows, 2);
		assert_int_equal(events(t[i].pid, "tool_attach"), 2);
		assert_int_equal(proc_tracer(t[i].pid), 0);
	}
	free(t);
}

static void test_rn_pack_real_records_round_trip(void **state)
{
	struct rn_target *t, *u = NULL;
	char host[256];
	size_t n, m = 0, len;
	void *buf;

	(void)state;
	select_all(&t, &n);
	len = rn_pack("node-a", t, n, NULL, 0);
	buf = malloc(len);
	assert_int_equal(rn_pack("node-a", t, n, buf, len), len);
	assert_int_equal(rn_unpack(buf, len, host, &u, &m), 0);
	assert_string_equal(host, "node-a");
	assert_int_equal(m, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(u[i].pid, t[i].pid);
		assert_string_equal(u[i].exe, t[i].exe);
		assert_int_equal(u[i].listener, t[i].listener);
	}
	free(buf);
	free(u);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_attach_all_forty_records_correct),
	    cmocka_unit_test(test_rn_pack_real_records_round_trip),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

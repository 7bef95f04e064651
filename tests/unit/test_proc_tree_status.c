/* SPDX-License-Identifier: MIT */
/*
 * /proc readers on captured trees (tests/data/, see its README.md) and on
 * /proc/self: threads, children, trees, status, stat (lib/common/proc_tree.c,
 * proc_status.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/procfs.h"

#define TREE1 RA_TEST_DATA "/proc-tree1"
#define EDGE RA_TEST_DATA "/proc-edge"

/* ---- threads ---- */

static void test_ra_find_thread_by_comm_found(void **state)
{
	pid_t tid = 0;

	(void)state;
	assert_int_equal(ra_find_thread_by_comm(TREE1, 4584, "rocp-bg-attach", &tid), 0);
	assert_int_equal(tid, 4585);
	assert_int_equal(ra_find_thread_by_comm(TREE1, 4584, "worker", &tid), 0);
	assert_int_equal(tid, 4586);
	/* comm with blanks and parentheses, newline stripped. */
	assert_int_equal(ra_find_thread_by_comm(TREE1, 4584, "a) b (c)", &tid), 0);
	assert_int_equal(tid, 4584);
}

static void test_ra_find_thread_by_comm_not_found(void **state)
{
	pid_t tid = 0;

	(void)state;
	assert_int_equal(ra_find_thread_by_comm(TREE1, 4584, "rocp-bg-attac", &tid), -ENOENT);
	assert_int_equal(ra_find_thread_by_comm(TREE1, 4584, "rocp-bg-attach\n", &tid), -ENOENT);
	assert_int_equal(ra_find_thread_by_comm(TREE1, 4587, "rocp-bg-attach", &tid), -ENOENT);
	assert_int_equal(ra_find_thread_by_comm(TREE1, 99999, "rocp-bg-attach", &tid), -ESRCH);
	assert_int_equal(tid, 0);
}

static pthread_mutex_t thr_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t thr_cond = PTHREAD_COND_INITIALIZER;
static pid_t thr_tid;
static int thr_stop;

static void *named_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&thr_lock);
	thr_tid = gettid();
	pthread_cond_broadcast(&thr_cond);
	while (!thr_stop)
		pthread_cond_wait(&thr_cond, &thr_lock);
	pthread_mutex_unlock(&thr_lock);
	return NULL;
}

static void test_ra_find_thread_by_comm_self(void **state)
{
	pthread_t t;
	pid_t tid = 0;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, named_thread, NULL), 0);
	pthread_mutex_lock(&thr_lock);
	while (!thr_tid)
		pthread_cond_wait(&thr_cond, &thr_lock);
	pthread_mutex_unlock(&thr_lock);
	assert_int_equal(pthread_setname_np(t, "ra-test-named"), 0);

	assert_int_equal(ra_find_thread_by_comm(NULL, getpid(), "ra-test-named", &tid), 0);
	assert_int_equal(tid, thr_tid);

	pthread_mutex_lock(&thr_lock);
	thr_stop = 1;
	pthread_cond_broadcast(&thr_cond);
	pthread_mutex_unlock(&thr_lock);
	pthread_join(t, NULL);
	/*
	 * pthread_join returns once the thread cleared its tid, which it does
	 * while it exits: the kernel may list it in /proc/self/task a moment
	 * longer. Once gone it is not found (2 s at most).
	 */
	for (int i = 0; i < 2000; i++) {
		int r = ra_find_thread_by_comm(NULL, getpid(), "ra-test-named", &tid);

		if (r == -ENOENT)
			return;
		assert_int_equal(r, 0);
		usleep(1000);
	}
	fail_msg("the joined thread is still found after 2 s");
}

/* ---- children and trees ---- */

static void test_ra_children_parse_edges(void **state)
{
	pid_t *v;
	size_t n;

	(void)state;
	assert_int_equal(ra_children_parse("7 3 7 9 3 \n", 11, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0], 7);
	assert_int_equal(v[1], 3);
	assert_int_equal(v[2], 9);
	free(v);
	assert_int_equal(ra_children_parse("", 0, &v, &n), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	assert_int_equal(ra_children_parse("12 x4 ", 6, &v, &n), -EINVAL);
	assert_int_equal(ra_children_parse("12,13", 5, &v, &n), -EINVAL);
	assert_int_equal(ra_children_parse("0 ", 2, &v, &n), -EINVAL);
	assert_int_equal(ra_children_parse("-4 ", 3, &v, &n), -EINVAL);
	assert_int_equal(ra_children_parse("2147483648 ", 11, &v, &n), -EINVAL);
	/* Only the first len bytes count. */
	assert_int_equal(ra_children_parse("12 x", 3, &v, &n), 0);
	assert_int_equal(n, 1);
	free(v);
}

static void test_ra_children_union_of_threads(void **state)
{
	pid_t *v;
	size_t n;

	(void)state;
	/* Thread 4584 forked 4587 and 4588, thread 4586 forked 4590. */
	assert_int_equal(ra_children(TREE1, 4584, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0], 4587);
	assert_int_equal(v[1], 4588);
	assert_int_equal(v[2], 4590);
	free(v);
	assert_int_equal(ra_children(TREE1, 4591, &v, &n), 0);
	assert_int_equal(n, 0);
	assert_null(v);
	/* Duplicates across threads. */
	assert_int_equal(ra_children(EDGE, 201, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0], 200);
	assert_int_equal(v[1], 203);
	free(v);
}

static void test_ra_children_errors(void **state)
{
	pid_t *v;
	size_t n;

	(void)state;
	assert_int_equal(ra_children(TREE1, 99999, &v, &n), -ESRCH);
	/* The thread is there but has no children file: CONFIG_PROC_CHILDREN=n. */
	assert_int_equal(ra_children(EDGE, 100, &v, &n), -EOPNOTSUPP);
	assert_int_equal(ra_children(EDGE, 300, &v, &n), -EINVAL);
	assert_null(v);
}

static void test_ra_children_self(void **state)
{
	pid_t child, *v;
	size_t n, i;
	int found = 0, status;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(ra_children(NULL, getpid(), &v, &n), 0);
	for (i = 0; i < n; i++)
		found |= v[i] == child;
	free(v);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	assert_true(found);
}

static void test_ra_tree_breadth_first(void **state)
{
	static const pid_t want[] = {4584, 4587, 4588, 4590, 4591, 4592};
	pid_t *v;
	size_t n, i;

	(void)state;
	assert_int_equal(ra_tree(TREE1, 4584, &v, &n), 0);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++)
		assert_int_equal(v[i], want[i]);
	free(v);

	assert_int_equal(ra_tree(TREE1, 4587, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0], 4587);
	free(v);

	assert_int_equal(ra_tree(TREE1, 4592, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0], 4592);
	free(v);
}

static void test_ra_tree_cycle_and_vanished(void **state)
{
	pid_t *v;
	size_t n;

	(void)state;
	/* 200 -> 201 -> {200, 203}: 200 is not revisited, 203 has gone. */
	assert_int_equal(ra_tree(EDGE, 200, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0], 200);
	assert_int_equal(v[1], 201);
	assert_int_equal(v[2], 203);
	free(v);
}

static void test_ra_tree_missing_root(void **state)
{
	pid_t *v = (pid_t *)1;
	size_t n = 1;

	(void)state;
	assert_int_equal(ra_tree(TREE1, 99999, &v, &n), -ESRCH);
	assert_null(v);
	assert_int_equal(n, 0);
	assert_int_equal(ra_tree(TREE1, 0, &v, &n), -EINVAL);
}

static void test_ra_proc_pids_captured(void **state)
{
	static const pid_t want[] = {4584, 4587, 4588, 4590, 4591, 4592};
	pid_t *v = (pid_t *)1;
	size_t n = 99;

	(void)state;
	assert_int_equal(ra_proc_pids(TREE1, &v, &n), 0);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	assert_memory_equal(v, want, sizeof(want));
	free(v);
	assert_int_equal(ra_proc_pids(RA_TEST_DATA "/no-such-tree", &v, &n), -ENOENT);
	assert_null(v);
	assert_int_equal(n, 0);
}

static void test_ra_proc_pids_self(void **state)
{
	pid_t *v;
	size_t n, i;
	bool me = false;

	(void)state;
	assert_int_equal(ra_proc_pids(NULL, &v, &n), 0);
	for (i = 0; i < n; i++) {
		me |= v[i] == getpid();
		assert_true(i == 0 || v[i - 1] < v[i]);
	}
	assert_true(me);
	free(v);
}

/* ---- status ---- */

static void test_ra_status_read_captured(void **state)
{
	struct ra_status st;

	(void)state;
	assert_int_equal(ra_status_read(TREE1, 4584, &st), 0);
	assert_string_equal(st.name, "a) b (c)");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.tgid, 4584);
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.tracer_pid, 0);
	assert_int_equal(st.uid_real, 0);
	assert_int_equal(st.uid_effective, 0);
	assert_int_equal(st.nspid_n, 1);
	assert_int_equal(st.nspid[0], 4584);
	assert_true(st.sigs_known);
	assert_true(st.sig_blocked == 0);
	assert_true(st.sig_ignored == 0x6);
	assert_true(st.sig_caught == 0x100000000ull);
}

static void test_ra_status_read_nested_pidns(void **state)
{
	struct ra_status st;

	(void)state;
	assert_int_equal(ra_status_read(TREE1, 4588, &st), 0);
	assert_string_equal(st.name, "in-pidns");
	assert_int_equal(st.ppid, 4584);
	assert_int_equal(st.nspid_n, 2);
	assert_int_equal(st.nspid[0], 4588);
	assert_int_equal(st.nspid[1], 1);
}

static void test_ra_status_read_old_kernel(void **state)
{
	struct ra_status st;

	(void)state;
	assert_int_equal(ra_status_read(EDGE, 300, &st), 0);
	assert_string_equal(st.name, "old-kernel");
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.tracer_pid, 42);
	assert_int_equal(st.uid_real, 1000);
	assert_int_equal(st.uid_effective, 1001);
	assert_int_equal(st.nspid_n, 1);
	assert_int_equal(st.nspid[0], 300);
	assert_int_equal(ra_status_read(EDGE, 100, &st), -ENOENT);
	assert_int_equal(ra_status_read(EDGE, 99999, &st), -ESRCH);
}

static int status_str(const char *text, struct ra_status *st)
{
	return ra_status_parse(text, strlen(text), st);
}

#define ST_HEAD "Name:\t  x\nState:\tZ (zombie)\nTgid:\t5\nPPid:\t0\nTracerPid:\t0\n"

static void test_ra_status_parse_edges(void **state)
{
	struct ra_status st;

	(void)state;
	assert_int_equal(
	    status_str(ST_HEAD "Uid:\t1\t2\t3\t4\nNSpid:\t5\t4\t3\t2\t1\t9\t8\t7", &st), 0);
	assert_string_equal(st.name, "  x");
	assert_int_equal(st.state, 'Z');
	assert_int_equal(st.nspid_n, 8);
	assert_int_equal(st.nspid[7], 7);
	/* Deeper than we can hold. */
	assert_int_equal(
	    status_str(ST_HEAD "Uid:\t1\t2\t3\t4\nNSpid:\t1\t2\t3\t4\t5\t6\t7\t8\t9", &st),
	    -EOVERFLOW);
	assert_int_equal(status_str(ST_HEAD "Uid:\t1\n", &st), -EINVAL);
	assert_int_equal(status_str(ST_HEAD "Uid:\t1\tx\t3\t4\n", &st), -EINVAL);
	assert_int_equal(status_str(ST_HEAD "Uid:\t4294967296\t0\t0\t0\n", &st), -EINVAL);
	assert_int_equal(status_str(ST_HEAD, &st), -EINVAL);
	assert_int_equal(status_str("Tgid:\t5 6\n", &st), -EINVAL);
	assert_int_equal(status_str("Tgid:\n", &st), -EINVAL);
	assert_int_equal(status_str("", &st), -EINVAL);
	/* Signal masks: all three or they are not known; hexadecimal alone on the line. */
	assert_int_equal(status_str(ST_HEAD
				    "Uid:\t1\t2\t3\t4\nSigBlk:\tfffffffe7ffbfeff\n"
				    "SigIgn:\t0000000000001000\nSigCgt:\t0000000000000000\n",
				    &st),
			 0);
	assert_true(st.sigs_known);
	assert_true(st.sig_blocked == 0xfffffffe7ffbfeffull);
	assert_true(st.sig_ignored == 0x1000);
	assert_int_equal(status_str(ST_HEAD "Uid:\t1\t2\t3\t4\nSigBlk:\t0000000000000001\n", &st),
			 0);
	assert_false(st.sigs_known);
	assert_int_equal(status_str(ST_HEAD "Uid:\t1\t2\t3\t4\nSigBlk:\t00x0\n", &st), -EINVAL);
	assert_int_equal(status_str(ST_HEAD "Uid:\t1\t2\t3\t4\nSigCgt:\n", &st), -EINVAL);
	assert_int_equal(status_str(ST_HEAD "Uid:\t1\t2\t3\t4\nSigIgn:\t1ffffffffffffffff\n", &st),
			 -EINVAL);
}

static void test_ra_status_read_self(void **state)
{
	struct ra_status st;

	(void)state;
	assert_int_equal(ra_status_read(NULL, getpid(), &st), 0);
	assert_int_equal(st.tgid, getpid());
	assert_int_equal(st.ppid, getppid());
	assert_int_equal(st.uid_real, getuid());
	assert_int_equal(st.uid_effective, geteuid());
	assert_true(st.nspid_n >= 1);
	assert_int_equal(st.nspid[0], getpid());
}

static void test_ra_status_value_captured(void **state)
{
	char *v = (char *)1;

	(void)state;
	assert_int_equal(ra_status_value(TREE1, 4584, "Cpus_allowed_list", &v), 0);
	assert_string_equal(v, "0-1");
	free(v);
	assert_int_equal(ra_status_value(TREE1, 4584, "Cpus_allowed", &v), 0);
	assert_string_equal(v, "3");
	free(v);
	assert_int_equal(ra_status_value(TREE1, 4584, "No_such_key", &v), -ENOENT);
	assert_null(v);
	assert_int_equal(ra_status_value(TREE1, 9999, "Name", &v), -ESRCH);
}

static void test_ra_status_value_parse_edges(void **state)
{
	static const char text[] = "Name:\tx\nEmpty:\nBlanks: \t 1 2\t\nLast:\tend";
	char *v, big[8192], *longv;
	size_t i;

	(void)state;
	assert_int_equal(ra_status_value_parse(text, strlen(text), "Empty", &v), 0);
	assert_string_equal(v, "");
	free(v);
	/* Leading blanks go, the rest of the line stays as it is. */
	assert_int_equal(ra_status_value_parse(text, strlen(text), "Blanks", &v), 0);
	assert_string_equal(v, "1 2\t");
	free(v);
	assert_int_equal(ra_status_value_parse(text, strlen(text), "Last", &v), 0);
	assert_string_equal(v, "end");
	free(v);
	/* A key is a whole key: not a prefix, not a suffix, not a value. */
	assert_int_equal(ra_status_value_parse(text, strlen(text), "Nam", &v), -ENOENT);
	assert_int_equal(ra_status_value_parse(text, strlen(text), "ame", &v), -ENOENT);
	assert_int_equal(ra_status_value_parse(text, strlen(text), "x", &v), -ENOENT);
	assert_int_equal(ra_status_value_parse(text, strlen(text), "", &v), -EINVAL);
	assert_int_equal(ra_status_value_parse(NULL, 0, "Name", &v), -EINVAL);
	/* Any length: a list of every other CPU of a large node. */
	i = (size_t)snprintf(big, sizeof(big), "Cpus_allowed_list:\t");
	for (int cpu = 0; i < sizeof(big) - 8; cpu += 2)
		i += (size_t)snprintf(big + i, sizeof(big) - i, "%d,", cpu);
	big[i - 1] = '\n';
	assert_int_equal(ra_status_value_parse(big, i, "Cpus_allowed_list", &longv), 0);
	assert_int_equal(strlen(longv), i - strlen("Cpus_allowed_list:\t") - 1);
	assert_memory_equal(longv, "0,2,4,", 6);
	free(longv);
}

/* ---- stat ---- */

static void test_ra_stat_read_captured(void **state)
{
	struct ra_stat st;

	(void)state;
	/* comm "a) b (c)": only the last ')' ends it. */
	assert_int_equal(ra_stat_read(TREE1, 4584, &st), 0);
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.starttime, 45281);
	assert_int_equal(ra_stat_read(TREE1, 4587, &st), 0);
	assert_int_equal(st.ppid, 4584);
	assert_int_equal(ra_stat_read(TREE1, 99999, &st), -ESRCH);
}

static int stat_str(const char *text, struct ra_stat *st)
{
	return ra_stat_parse(text, strlen(text), st);
}

static void test_ra_stat_parse_edges(void **state)
{
	static const char tail[] = " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 -16 17 18 777 19 20\n";
	char buf[256];
	struct ra_stat st;

	(void)state;
	snprintf(buf, sizeof(buf), "12 ()) ) t%s", tail);
	assert_int_equal(stat_str(buf, &st), 0);
	assert_int_equal(st.state, 't');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.starttime, 777);
	snprintf(buf, sizeof(buf), "12 () R%s", tail);
	assert_int_equal(stat_str(buf, &st), 0);

	assert_int_equal(stat_str("12 (x) R 1 2 3\n", &st), -EINVAL); /* too short */
	snprintf(buf, sizeof(buf), "12 (x) RR%s", tail);
	assert_int_equal(stat_str(buf, &st), -EINVAL);
	snprintf(buf, sizeof(buf), "12 (x)  R%s", tail);
	assert_int_equal(stat_str(buf, &st), -EINVAL);
	snprintf(buf, sizeof(buf), "(x) R%s", tail);
	assert_int_equal(stat_str(buf, &st), -EINVAL);
	snprintf(buf, sizeof(buf), "12 x) R%s", tail);
	assert_int_equal(stat_str(buf, &st), -EINVAL);
	snprintf(buf, sizeof(buf), "12 (x R%s", tail);
	assert_int_equal(stat_str(buf, &st), -EINVAL);
	assert_int_equal(
	    stat_str("12 (x) R -1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n", &st),
	    -EINVAL);
}

static void test_ra_stat_read_self(void **state)
{
	struct ra_stat st;

	(void)state;
	assert_int_equal(ra_stat_read(NULL, getpid(), &st), 0);
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.ppid, getppid());
	assert_true(st.starttime > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ra_find_thread_by_comm_found),
	    cmocka_unit_test(test_ra_find_thread_by_comm_not_found),
	    cmocka_unit_test(test_ra_find_thread_by_comm_self),
	    cmocka_unit_test(test_ra_children_parse_edges),
	    cmocka_unit_test(test_ra_children_union_of_threads),
	    cmocka_unit_test(test_ra_children_errors),
	    cmocka_unit_test(test_ra_children_self),
	    cmocka_unit_test(test_ra_tree_breadth_first),
	    cmocka_unit_test(test_ra_tree_cycle_and_vanished),
	    cmocka_unit_test(test_ra_tree_missing_root),
	    cmocka_unit_test(test_ra_proc_pids_captured),
	    cmocka_unit_test(test_ra_proc_pids_self),
	    cmocka_unit_test(test_ra_status_read_captured),
	    cmocka_unit_test(test_ra_status_read_nested_pidns),
	    cmocka_unit_test(test_ra_status_read_old_kernel),
	    cmocka_unit_test(test_ra_status_parse_edges),
	    cmocka_unit_test(test_ra_status_read_self),
	    cmocka_unit_test(test_ra_status_value_captured),
	    cmocka_unit_test(test_ra_status_value_parse_edges),
	    cmocka_unit_test(test_ra_stat_read_captured),
	    cmocka_unit_test(test_ra_stat_parse_edges),
	    cmocka_unit_test(test_ra_stat_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

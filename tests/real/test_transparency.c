/* SPDX-License-Identifier: MIT */
/*
 * The target never notices: 1000 attach/detach cycles on a process whose
 * threads sit in read, nanosleep, a futex wait, epoll_wait and poll, while
 * real-time signals rain on it. No EINTR, no early wake-up, no lost byte,
 * every signal delivered exactly once, and the descriptors, mappings,
 * threads and memory of the target and of the attacher stay where they were.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

#define CYCLES 1000
#define WARMUP 5
#define RSS_SLACK_KB 1024 /* allocator noise; a leak per cycle would be far more */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/*
 * This process is instrumented: the sanitizer's allocator owns its memory (ASan's
 * quarantine keeps tens of MB of freed blocks here, TSan maps new regions).
 */
#define ATTACHER_MEMORY_CHECKED false
#else
#define ATTACHER_MEMORY_CHECKED true
#endif

struct counts {
	int fds, maps, threads;
	long rss_kb;
};

/*
 * After a detach the target's watchdog closes the attacher's pidfd on its own
 * thread, a moment after the call returned: let it, before counting.
 */
static void settle(void)
{
	usleep(50 * 1000);
}

static void counts_of(pid_t pid, struct counts *c)
{
	c->fds = proc_fd_count(pid);
	c->maps = proc_maps_count(pid);
	c->threads = proc_thread_count(pid);
	c->rss_kb = proc_rss_kb(pid);
}

static void assert_counts_stable(const char *who, const struct counts *a, const struct counts *b,
				 bool memory)
{
	print_message("%s: fds %d -> %d, maps %d -> %d, threads %d -> %d, rss %ld -> %ld kB\n", who,
		      a->fds, b->fds, a->maps, b->maps, a->threads, b->threads, a->rss_kb,
		      b->rss_kb);
	assert_int_equal(b->fds, a->fds);
	assert_int_equal(b->threads, a->threads);
	if (!memory)
		return;
	assert_int_equal(b->maps, a->maps);
	assert_true(b->rss_kb <= a->rss_kb + RSS_SLACK_KB);
}

/* Real-time signals with distinct values, every 2 ms, until told to stop. */
struct sender {
	pid_t pid;
	atomic_bool stop;
	unsigned long sent;
	unsigned long long sum;
};

static void *sender_main(void *arg)
{
	struct timespec gap = {0, 2 * 1000 * 1000};
	struct sender *s = arg;

	while (!atomic_load(&s->stop)) {
		union sigval v = {.sival_int = (int)(s->sent % 1000) + 1};

		if (sigqueue(s->pid, SIGRTMIN + 1, v) == 0) {
			s->sent++;
			s->sum += (unsigned long long)v.sival_int;
		}
		nanosleep(&gap, NULL);
	}
	return NULL;
}

static void cycle(pid_t pid, const rocattach_opts_t *o)
{
	if (rocattach_attach_ex(pid, o, NULL) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("attach: %s", rocattach_last_error());
	if (rocattach_detach(pid) != ROCATTACH_STATUS_SUCCESS)
		fail_msg("detach: %s", rocattach_last_error());
}

static void assert_never_noticed(struct victim *v, const struct sender *s)
{
	static const char *const zero[] = {"eintr", "short", "early", "lost", "err"};
	static const char *const moving[] = {"reads",	 "sleeps", "waits",
					     "timeouts", "epolls", "polls"};
	char reply[512];

	assert_int_equal(victim_cmd(v, "status", reply, sizeof(reply)), 0);
	print_message("%s\n", reply);
	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		assert_int_equal(victim_status(v, zero[i]), 0);
	for (size_t i = 0; i < sizeof(moving) / sizeof(moving[0]); i++)
		assert_true(victim_status(v, moving[i]) > 0);
	assert_int_equal(victim_status(v, "rt"), (long long)s->sent);
	assert_int_equal(victim_status(v, "rtsum"), (long long)s->sum);
	assert_true(proc_alive(v->pid));
	assert_int_equal(proc_tracer(v->pid), 0);
}

/* Run n cycles with signals flowing; check the victim and the counts of both sides. */
static void cycles_under_signals(struct victim *v, const rocattach_opts_t *o, int n)
{
	const char *logtext;
	struct sender s = {.pid = v->pid};
	struct counts t0, t1, a0, a1;
	struct timespec ts0, ts1;
	pthread_t th;

	for (int i = 0; i < WARMUP; i++)
		cycle(v->pid, o);
	/* glibc keeps a joined thread's stack for the next one: have it cached already. */
	atomic_store(&s.stop, true);
	assert_int_equal(pthread_create(&th, NULL, sender_main, &s), 0);
	pthread_join(th, NULL);
	atomic_store(&s.stop, false);
	settle();
	counts_of(v->pid, &t0);
	counts_of(getpid(), &a0);
	assert_int_equal(pthread_create(&th, NULL, sender_main, &s), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts0);
	for (int i = 0; i < n; i++)
		cycle(v->pid, o);
	clock_gettime(CLOCK_MONOTONIC, &ts1);
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	print_message("%d cycles in %.2f s, %lu signals sent\n", n,
		      (double)(ts1.tv_sec - ts0.tv_sec) + (ts1.tv_nsec - ts0.tv_nsec) / 1e9,
		      s.sent);
	/* The last signals' handlers may still be to run on a loaded machine. */
	for (int i = 0; i < 500 && victim_status(v, "rt") < (long long)s.sent; i++)
		usleep(10 * 1000);
	assert_never_noticed(v, &s);
	settle();
	counts_of(v->pid, &t1);
	counts_of(getpid(), &a1);
	assert_counts_stable("target", &t0, &t1, true);
	assert_counts_stable("attacher", &a0, &a1, ATTACHER_MEMORY_CHECKED);
	logtext = log_of(v->pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), tool_count(logtext, "tool_detach"));
}

static void test_transparency_1000_cycles(void **state)
{
	const char *logtext;
	const struct victim_opts vo = {
	    .program = RA_BLOCKED_VICTIM, .agent = true, .attach_env = true};
	const rocattach_opts_t o = {.size = sizeof(o), .tool_libraries = RA_TOOL_PATH};
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &vo), 0);
	cycles_under_signals(&v, &o, CYCLES);
	logtext = log_of(v.pid);
	assert_int_equal(tool_count(logtext, "tool_attach"), CYCLES + WARMUP);
	victim_stop(&v);
}

/*
 * Started without attach support: the first attach borrows one of the
 * blocked application threads for the agent's dlopen. Its syscall must be
 * restarted as if nothing happened.
 */
static void test_transparency_after_inject(void **state)
{
	const struct victim_opts vo = {.program = RA_BLOCKED_VICTIM};
	const rocattach_opts_t o = {.size = sizeof(o),
				    .tool_libraries = RA_TOOL_PATH,
				    .flags = ROCATTACH_F_INJECT,
				    .agent_path = RA_AGENT_PATH};
	struct victim v;

	(void)state;
	assert_int_equal(victim_start(&v, &vo), 0);
	assert_int_equal(proc_thread(v.pid, "rocp-bg-attach"), 0);
	cycles_under_signals(&v, &o, 100);
	victim_stop(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_transparency_1000_cycles),
	    cmocka_unit_test(test_transparency_after_inject),
	};

	return cmocka_run_group_tests(tests, setup_outdir_no_tool, NULL);
}

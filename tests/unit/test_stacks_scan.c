/* SPDX-License-Identifier: MIT */
/*
 * The stack tool's thread table and timers (tools/stacks/stacks_threads.c),
 * built into this test (so the sanitizers see them) and run on this
 * process's own threads, which come and go while scans run from several
 * threads at once: no thread armed twice, no entry lost, a timer of each
 * armed entry and no other, none left after the stop. A handler or a timer
 * the program gives the signal in the window stops the sampling, and is
 * left as the program set it. A scan says when the poller must look again
 * soon (a thread came, went or was armed), and the stop cuts the poller's
 * wait short, however long it is.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "skip.h"
#include "stacks_proc.h"
#include "stacks_threads.h"

static _Atomic unsigned long ticks, program_ticks;
static _Atomic int churning;
static _Atomic unsigned long started;

static void tool_like_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	atomic_fetch_add(&ticks, 1);
}

static void program_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&program_ticks, 1);
}

static void spin_ms(long ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000L + (b.tv_nsec - a.tv_nsec) / 1000000L < ms);
}

static void *short_lived(void *arg)
{
	spin_ms((long)(intptr_t)arg);
	return NULL;
}

/* Threads that live 1 to 12 ms, a few at a time, until churning ends. */
static void *churner(void *arg)
{
	pthread_t t[4];
	long k = 0;

	(void)arg;
	while (atomic_load(&churning)) {
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, short_lived, (void *)(intptr_t)(1 + k++ % 12));
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		atomic_fetch_add(&started, 4);
	}
	return NULL;
}

static void *scanner(void *arg)
{
	(void)arg;
	while (atomic_load(&churning))
		threads_scan(true);
	return NULL;
}

/* The tool's side of an attach: its handler on a free signal, sampling on. */
static int setup(void **state)
{
	struct sigaction sa = {0};

	(void)state;
	memset(&st, 0, sizeof(st));
	st.sig = pick_signal();
	if (!st.sig)
		return -1;
	sa.sa_sigaction = tool_like_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	st.our_handler = tool_like_handler;
	if (sigaction(st.sig, &sa, &st.old_action))
		return -1;
	st.installed = true;
	st.hz = 1000;
	st.attach_ns = now_ns();
	threads_reset();
	atomic_store(&st.sampling, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	threads_stop();
	signal(st.sig, SIG_IGN);
	sigaction(st.sig, &st.old_action, NULL);
	return 0;
}

/* Entries that hold a timer now; fails on a tid armed twice among them. */
static int armed_entries(void)
{
	int n = atomic_load(&st.n_threads), armed = 0;

	for (int i = 0; i < n; i++) {
		if (!st.threads[i].has_timer)
			continue;
		armed++;
		for (int j = i + 1; j < n; j++)
			if (st.threads[j].has_timer && st.threads[j].tid == st.threads[i].tid)
				fail_msg("thread %d armed twice", st.threads[i].tid);
	}
	return armed;
}

static void test_concurrent_scans_arm_each_thread_once(void **state)
{
	pthread_t ch, sc[2];

	(void)state;
	atomic_store(&churning, 1);
	assert_int_equal(pthread_create(&ch, NULL, churner, NULL), 0);
	assert_int_equal(threads_start_poller(), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&sc[i], NULL, scanner, NULL), 0);
	spin_ms(600);
	atomic_store(&churning, 0);
	for (int i = 0; i < 2; i++)
		pthread_join(sc[i], NULL);
	pthread_join(ch, NULL);
	/* The poller stopped, not yet the timers: the table holds still. */
	atomic_store(&st.stop_poller, 1);
	pthread_join(st.poller, NULL);
	st.poller_running = false;
	threads_scan(true);
	printf("%lu threads started, %d seen, %d armed now, %lu samples\n", atomic_load(&started),
	       atomic_load(&st.n_threads), st.n_armed, atomic_load(&ticks));
	assert_true(atomic_load(&started) >= 8);
	assert_true(atomic_load(&st.n_threads) >= 8);
	assert_int_equal(atomic_load(&st.taken), TAKEN_NO);
	/* Every timer that exists is one entry's (none lost), and no more. */
	assert_int_equal(armed_entries(), st.n_armed);
	assert_int_equal(timers_with_signal(st.sig), st.n_armed);
	threads_stop();
	assert_int_equal(st.n_armed, 0);
	assert_int_equal(timers_with_signal(st.sig), 0);
	assert_int_equal(armed_entries(), 0);
}

/* A thread that ended loses its timer at the next scan, not at the stop. */
static void test_ended_thread_timer_deleted_at_once(void **state)
{
	pthread_t t;
	struct thread *e;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, short_lived, (void *)(intptr_t)300), 0);
	e = NULL;
	for (int i = 0; i < 100 && !(e && e->has_timer); i++) {
		threads_scan(true);
		e = NULL;
		for (int k = 0; k < atomic_load(&st.n_threads); k++)
			if (st.threads[k].has_timer)
				e = &st.threads[k];
		spin_ms(1);
	}
	assert_non_null(e);
	assert_int_equal(timers_with_signal(st.sig), st.n_armed);
	pthread_join(t, NULL);
	threads_scan(true);
	assert_true(e->ended);
	assert_false(e->has_timer);
	assert_int_equal(st.n_armed, 0);
	assert_int_equal(timers_with_signal(st.sig), 0);
}

static void test_program_handler_stops_sampling(void **state)
{
	struct sigaction sa;
	pthread_t t;

	(void)state;
	atomic_store(&churning, 1);
	assert_int_equal(pthread_create(&t, NULL, churner, NULL), 0);
	threads_scan(true);
	spin_ms(30);
	signal(st.sig, program_handler);
	threads_scan(true);
	atomic_store(&churning, 0);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&st.taken), TAKEN_HANDLER);
	assert_non_null(strstr(st.taken_note, "a handler of its own"));
	assert_int_equal(st.n_armed, 0);
	assert_int_equal(timers_with_signal(st.sig), 0);
	assert_int_equal(atomic_load(&st.sampling), 0);
	/* No timer is made after that, and the program's handler stays. */
	threads_scan(true);
	assert_int_equal(timers_with_signal(st.sig), 0);
	assert_int_equal(sigaction(st.sig, NULL, &sa), 0);
	assert_ptr_equal(sa.sa_handler, program_handler);
}

static void test_program_timer_stops_sampling(void **state)
{
	struct sigevent ev = {0};
	pthread_t t;
	timer_t mine;

	(void)state;
	threads_scan(true);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = st.sig;
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &ev, &mine), 0);
	/* A new thread to arm: the check before its timer finds the program's. */
	atomic_store(&churning, 1);
	assert_int_equal(pthread_create(&t, NULL, churner, NULL), 0);
	for (int i = 0; i < 100 && atomic_load(&st.taken) == TAKEN_NO; i++) {
		spin_ms(2);
		threads_scan(true);
	}
	atomic_store(&churning, 0);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&st.taken), TAKEN_TIMER);
	assert_non_null(strstr(st.taken_note, "a timer of its own"));
	assert_int_equal(st.n_armed, 0);
	/* Only the program's timer is left. */
	assert_int_equal(timers_with_signal(st.sig), 1);
	timer_delete(mine);
}

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;

/* Waits on hold_lock: a thread that lives as long as the test wants. */
static void *held(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hold_lock);
	pthread_mutex_unlock(&hold_lock);
	return NULL;
}

/* Busy: a thread new (and armed) or ended; quiet otherwise, so the poller slows. */
static void test_scan_says_when_to_look_again(void **state)
{
	struct thread *e = NULL;
	pthread_t t;

	(void)state;
	/*
	 * The threads here settle first: one that blocks the signal (TSan's own) is
	 * looked at again for BLOCKED_SCANS scans before it is left alone.
	 */
	for (int i = 0; i <= BLOCKED_SCANS + 1 && threads_scan(true); i++)
		;
	assert_false(threads_scan(true));
	pthread_mutex_lock(&hold_lock);
	assert_int_equal(pthread_create(&t, NULL, held, NULL), 0);
	/* Busy until it is armed (a new thread blocks every signal for a moment). */
	for (int i = 0; i < 200 && !(e && e->has_timer); i++) {
		assert_true(threads_scan(true));
		e = NULL;
		for (int k = 0; k < atomic_load(&st.n_threads); k++)
			if (st.threads[k].has_timer)
				e = &st.threads[k];
		spin_ms(1);
	}
	assert_non_null(e);
	assert_false(threads_scan(true));
	pthread_mutex_unlock(&hold_lock);
	pthread_join(t, NULL);
	assert_true(threads_scan(true));
	assert_true(e->ended);
	assert_false(threads_scan(true));
}

/* A poller in a long wait does not hold the stop (the detach) back. */
static void test_stop_cuts_the_poll_wait(void **state)
{
	struct timespec a, b;
	long ms;

	(void)state;
	st.poll_ms = 5000;
	assert_int_equal(threads_start_poller(), 0);
	spin_ms(100); /* its first look is done: it waits 5 s */
	clock_gettime(CLOCK_MONOTONIC, &a);
	threads_stop();
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000L + (b.tv_nsec - a.tv_nsec) / 1000000L;
	printf("threads_stop took %ld ms against a 5000 ms wait\n", ms);
	assert_false(st.poller_running);
	assert_true(ms < 2500);
	assert_int_equal(timers_with_signal(st.sig), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_concurrent_scans_arm_each_thread_once, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_ended_thread_timer_deleted_at_once, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_program_handler_stops_sampling, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_program_timer_stops_sampling, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_scan_says_when_to_look_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stop_cuts_the_poll_wait, setup, teardown),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

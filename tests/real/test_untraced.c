/* SPDX-License-Identifier: MIT */
/*
 * No thread left traced (issue 30): a listener held where PTRACE_INTERRUPT
 * cannot stop it (a vfork parent waits for its child in a killable sleep,
 * state D) for longer than the 2 s interrupt wait. It is never sent a
 * PTRACE_DETACH while running (which the kernel refuses, and which was
 * misreported as "process exited"): it is detached when it stops, within
 * the call's deadline by the call itself, past it by the library's own
 * tracer thread, while the caller's thread lives on idle. On both target
 * sides: at the seize (tests/real/vfork_victim.c) and in a call left to
 * run after its deadline (the fault tool's attach-vfork). Every victim is a
 * child of this test.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

#include "testlib.h"

#define MS 1000000ull
#define HELD_MS 5000 /* how long the listener stays in vfork: well past the 2 s wait */

static const struct victim_opts held_agent = {.agent = true, .program = RA_VFORK_VICTIM};
static const struct victim_opts held_rocm = {.program = RA_VFORK_VICTIM,
					     .env = {"LD_PRELOAD=" RA_ROCM_REGISTER}};
static const struct victim_opts *const held_sides[2] = {&held_agent, &held_rocm};
static const struct victim_opts agent_side = {.agent = true, .attach_env = true};
static const struct victim_opts rocm_side = {.attach_env = true,
					     .env = {"LD_PRELOAD=" RA_ROCM_REGISTER}};
static const struct victim_opts *const sides[2] = {&agent_side, &rocm_side};
static const char *const side_names[2] = {"agent", "rocm"};

static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* TracerPid of one thread; -1 when it cannot be read. */
static long thread_tracer(pid_t pid, pid_t tid)
{
	char path[96], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (read_text(path, buf, sizeof(buf)) || !(p = strstr(buf, "TracerPid:")))
		return -1;
	return atol(p + strlen("TracerPid:"));
}

/* The state letter of one thread, '?' when it cannot be read. */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[96], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_text(path, buf, sizeof(buf)) || !(p = strrchr(buf, ')')))
		return '?';
	return p[2];
}

/* Poll up to ms for the thread's TracerPid to be want; the time it took (ns), or -1. */
static long long until_tracer(pid_t pid, pid_t tid, long want, int ms)
{
	unsigned long long t0 = realtime_ns();
	struct timespec nap = {0, 10 * 1000 * 1000};

	while (realtime_ns() - t0 < (unsigned long long)ms * MS) {
		if (thread_tracer(pid, tid) == want)
			return (long long)(realtime_ns() - t0);
		nanosleep(&nap, NULL);
	}
	return -1;
}

/* How many of our own threads are named name. */
static int own_threads(const char *name)
{
	char path[320], comm[64];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	int n = 0;

	assert_non_null(dir);
	while ((d = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		if (d->d_name[0] != '.' && !read_text(path, comm, sizeof(comm)) &&
		    !strncmp(comm, name, strlen(name)))
			n++;
	}
	closedir(dir);
	return n;
}

/* Is tid a thread of this process named rocattach-trace (the library's tracer)? */
static bool is_library_thread(long tid)
{
	char path[96], comm[64];

	snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
	return tid > 0 && !read_text(path, comm, sizeof(comm)) &&
	       !strcmp(comm, "rocattach-trace\n");
}

/* Start a vfork victim and hold its listener in vfork for HELD_MS; its tid. */
static pid_t start_held(struct victim *v, int side)
{
	struct timespec nap = {0, 5 * 1000 * 1000};
	char reply[64], cmd[32];
	pid_t tid;

	assert_int_equal(victim_start(v, held_sides[side]), 0);
	tid = proc_thread(v->pid, "rocp-bg-attach");
	assert_true(tid > 0);
	snprintf(cmd, sizeof(cmd), "vfork %d", HELD_MS);
	assert_int_equal(victim_cmd(v, cmd, reply, sizeof(reply)), 0);
	assert_string_equal(reply, "vforking");
	for (int i = 0; i < 400 && thread_state(v->pid, tid) != 'D'; i++)
		nanosleep(&nap, NULL);
	assert_int_equal(thread_state(v->pid, tid), 'D');
	return tid;
}

static rocattach_status_t attach_opts(pid_t pid, const char *tool, const char *mode,
				      uint32_t timeout_ms, rocattach_report_t *rep)
{
	char knob[64];
	const char *env[2] = {knob, NULL};
	rocattach_opts_t o = {
	    .size = sizeof(o), .tool_libraries = tool, .env = env, .call_timeout_ms = timeout_ms};

	snprintf(knob, sizeof(knob), "ROCP_FAULT_TOOL=%s", mode);
	memset(rep, 0, sizeof(*rep));
	rep->size = sizeof(*rep);
	return rocattach_attach_ex(pid, &o, rep);
}

/* The vfork victim is unharmed: untraced, answering, its worker on, back from the vfork. */
static void assert_came_back(struct victim *v)
{
	struct timespec nap = {0, 10 * 1000 * 1000};

	for (int i = 0; i < 300 && victim_status(v, "vforks") < 1; i++)
		nanosleep(&nap, NULL);
	assert_int_equal(victim_status(v, "vforks"), 1);
	assert_unharmed(v, true);
}

/*
 * The seized listener stops within the call's deadline (10 s, the default):
 * the attach fails once it stops, naming its state, and it is detached
 * there, untraced at once. Not "exited".
 */
static void test_untraced_stops_within_deadline(void **state)
{
	unsigned long long t0, took;
	rocattach_report_t rep;
	struct victim v;
	pid_t tid;

	(void)state;
	for (int side = 0; side < 2; side++) {
		tid = start_held(&v, side);
		t0 = realtime_ns();
		assert_int_equal(attach_opts(v.pid, RA_FAULT_TOOL, "", 0, &rep),
				 ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
		took = realtime_ns() - t0;
		print_message("%s side: %s (%.3f s)\n", side_names[side], rep.message,
			      (double)took / 1e9);
		assert_int_equal(thread_tracer(v.pid, tid), 0);
		assert_true(took >= 3000 * MS && took < 9500 * MS);
		assert_non_null(strstr(rep.message, "did not stop within 2.0 s of PTRACE_INTERRUPT "
						    "(state D (uninterruptible sleep), wchan "));
		assert_non_null(strstr(rep.message, "after PTRACE_INTERRUPT and was released"));
		assert_null(strstr(rep.message, "exited"));
		assert_false(rep.flags & ROCATTACH_REPORT_TRACED);
		assert_int_equal(rocattach_is_attached(v.pid), 0);
		assert_came_back(&v);
		victim_stop(&v);
	}
}

/* A caller thread: one attach, then idle until told to go. */
struct caller {
	pid_t pid, tid;
	rocattach_status_t st;
	rocattach_report_t rep;
	unsigned long long took;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, go;
};

static void *caller_main(void *arg)
{
	struct caller *c = arg;
	unsigned long long t0 = realtime_ns();

	c->tid = (pid_t)syscall(SYS_gettid);
	c->st = attach_opts(c->pid, RA_FAULT_TOOL, "", 1000, &c->rep);
	c->took = realtime_ns() - t0;
	pthread_mutex_lock(&c->lock);
	c->done = true;
	pthread_cond_broadcast(&c->cond);
	while (!c->go)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void caller_wait(struct caller *c)
{
	pthread_mutex_lock(&c->lock);
	while (!c->done)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

static void caller_end(struct caller *c, pthread_t th)
{
	pthread_mutex_lock(&c->lock);
	c->go = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* Past the call's deadline (1 s): the call says it is still traced; a later one is refused. */
static void check_kept(struct victim *v, pid_t tid, struct caller *c)
{
	rocattach_report_t rep;

	print_message("%s (%.3f s)\n", c->rep.message, (double)c->took / 1e9);
	assert_int_equal(c->st, ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
	/* Back before the vfork ends (the thread is still traced below), not waiting for it. */
	assert_true(c->took >= 2000 * MS && c->took < HELD_MS * MS);
	assert_true(c->rep.flags & ROCATTACH_REPORT_TRACED);
	assert_non_null(strstr(c->rep.message, "did not stop within 2.0 s of PTRACE_INTERRUPT "
					       "(state D (uninterruptible sleep), wchan "));
	assert_non_null(strstr(c->rep.message, "is still traced (state D (uninterruptible "
					       "sleep), wchan "));
	assert_non_null(strstr(c->rep.message, "this library keeps it and releases it when it "
					       "stops"));
	assert_null(strstr(c->rep.message, "exited"));
	/* Traced by a thread of the library (TracerPid names the thread), not the caller. */
	assert_true(is_library_thread(thread_tracer(v->pid, tid)));
	assert_int_not_equal(thread_tracer(v->pid, tid), c->tid);
	assert_int_equal(own_threads("rocattach-trace"), 1);
	assert_int_equal(attach_opts(v->pid, RA_FAULT_TOOL, "", 1000, &rep),
			 ROCATTACH_STATUS_ERROR_PTRACE_ERROR);
	print_message("again: %s\n", rep.message);
	assert_non_null(strstr(rep.message, "is still traced by this library"));
	assert_true(rep.flags & ROCATTACH_REPORT_TRACED);
	/* At once: no second 2 s interrupt wait. */
	assert_true(rep.end_ns - rep.start_ns < 1500 * MS);
}

/*
 * It does not stop within the deadline: the library's tracer thread keeps
 * it and detaches it when the vfork ends, while the caller's thread is
 * alive and idle (not released by that thread's exit); then the tracer
 * thread is gone.
 */
static void test_untraced_kept_past_deadline(void **state)
{
	char path[64];
	struct victim v;
	long long when;
	pthread_t th;
	pid_t tid;

	(void)state;
	for (int side = 0; side < 2; side++) {
		struct caller c = {.lock = PTHREAD_MUTEX_INITIALIZER,
				   .cond = PTHREAD_COND_INITIALIZER};

		print_message("%s side\n", side_names[side]);
		tid = start_held(&v, side);
		c.pid = v.pid;
		assert_int_equal(pthread_create(&th, NULL, caller_main, &c), 0);
		caller_wait(&c);
		check_kept(&v, tid, &c);
		when = until_tracer(v.pid, tid, 0, HELD_MS + 5000);
		print_message("untraced %.3f s after the call returned\n", (double)when / 1e9);
		assert_true(when >= 0);
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", c.tid);
		assert_int_equal(access(path, F_OK), 0);
		assert_int_equal(thread_state(getpid(), c.tid), 'S');
		for (int i = 0; i < 100 && own_threads("rocattach-trace"); i++)
			usleep(10000);
		assert_int_equal(own_threads("rocattach-trace"), 0);
		caller_end(&c, th);
		assert_came_back(&v);
		victim_stop(&v);
	}
}

/*
 * A call left to run after its deadline (1 s), in a tool held in vfork:
 * the thread is interrupted to be let go but does not stop; it is kept
 * and released when the vfork ends. The process runs on; once the tool
 * returns, a new attach drives the listener from the park.
 */
static void test_untraced_abandoned_call_kept(void **state)
{
	unsigned long long t0, took;
	rocattach_report_t rep;
	struct victim v;
	long long when;
	pid_t tid;

	(void)state;
	for (int side = 0; side < 2; side++) {
		assert_int_equal(victim_start(&v, sides[side]), 0);
		tid = proc_thread(v.pid, "rocp-bg-attach");
		t0 = realtime_ns();
		assert_int_equal(attach_opts(v.pid, RA_FAULT_TOOL, "attach-vfork", 1000, &rep),
				 ROCATTACH_STATUS_ERROR);
		took = realtime_ns() - t0;
		print_message("%s side: %s (%.3f s)\n", side_names[side], rep.message,
			      (double)took / 1e9);
		/* The deadline, then the 2 s interrupt wait; back before the vfork ends. */
		assert_true(took >= 3000 * MS && took < HELD_MS * MS);
		assert_true(rep.flags & ROCATTACH_REPORT_TIMED_OUT);
		assert_true(rep.flags & ROCATTACH_REPORT_TRACED);
		assert_non_null(strstr(rep.message, "did not return within 1.0 s"));
		assert_non_null(strstr(rep.message, "did not stop within 2.0 s of PTRACE_INTERRUPT "
						    "(state D (uninterruptible sleep), wchan "));
		assert_non_null(strstr(rep.message, "this library keeps it"));
		assert_null(strstr(rep.message, "exited"));
		assert_true(is_library_thread(thread_tracer(v.pid, tid)));
		when = until_tracer(v.pid, tid, 0, HELD_MS + 5000);
		print_message("untraced %.3f s later\n", (double)when / 1e9);
		assert_true(when >= 0);
		assert_unharmed(&v, true);
		assert_int_equal(rocattach_is_attached(v.pid), 0);
		victim_stop(&v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_untraced_stops_within_deadline),
	    cmocka_unit_test(test_untraced_kept_past_deadline),
	    cmocka_unit_test(test_untraced_abandoned_call_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

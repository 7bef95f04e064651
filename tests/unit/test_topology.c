/* SPDX-License-Identifier: MIT */
/*
 * rn_topology and rn_bind_away on real child processes bound to one CPU, and
 * rn_topology_at on captured machines.
 */
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../skip.h"

#include "common/clock.h"
#include "node.h"

static bool two_cpus(void)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || sched_getaffinity(0, sizeof(set), &set) < 0)
		return false;
	return CPU_ISSET(0, &set) && CPU_ISSET(1, &set);
}

/*
 * Bind every thread of this process: a forked child runs one thread of ours,
 * but under TSan also the runtime's background thread, and hwloc reads a
 * process's binding as the union of its threads' bindings.
 */
static int bind_all_threads(const cpu_set_t *set)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int r = d ? 0 : -1;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && sched_setaffinity(atoi(de->d_name), sizeof(*set), set))
			r = -1;
	if (d)
		closedir(d);
	return r;
}

/* A child bound to CPUs lo..hi, sleeping until killed (or until we die). */
static pid_t spawn_on_range(int lo, int hi)
{
	int fds[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		cpu_set_t set;
		int cpu;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		CPU_ZERO(&set);
		for (cpu = lo; cpu <= hi; cpu++)
			CPU_SET(cpu, &set);
		c = bind_all_threads(&set) == 0 ? 'y' : 'n';
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	assert_int_equal(c, 'y');
	return pid;
}

static pid_t spawn_on(int cpu)
{
	return spawn_on_range(cpu, cpu);
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void target_init(struct rn_target *t, pid_t pid)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->nspid = pid;
	t->rank = -1;
	/* Stale values that rn_topology must overwrite. */
	memset(&t->topo, 'z', sizeof(t->topo));
}

static void assert_terminated(const char *s, size_t size)
{
	assert_true(memchr(s, '\0', size) != NULL);
}

/* "" or "name(dddd:bb:dd.f)" entries joined by commas, no empty entries. */
static void assert_gpus_well_formed(const char *gpus)
{
	const char *p = gpus;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		assert_true(len > 0);
		assert_true(memchr(p, ' ', len) == NULL);
		if (memchr(p, '(', len))
			assert_int_equal(p[len - 1], ')');
		p += len + (end ? 1 : 0);
		assert_true(!end || *p);
	}
}

static void assert_topo_of_cpu(const struct rn_target *t, const char *cpu)
{
	assert_terminated(t->topo.cpus, sizeof(t->topo.cpus));
	assert_terminated(t->topo.numa, sizeof(t->topo.numa));
	assert_terminated(t->topo.gpus, sizeof(t->topo.gpus));
	assert_string_equal(t->topo.cpus, cpu);
	assert_int_equal(t->topo.n_cpus, 1);
	assert_string_equal(t->topo.numa, "0");
	assert_gpus_well_formed(t->topo.gpus);
}

static void test_rn_topology_bound_children(void **state)
{
	struct rn_target t[2];
	char err[RN_ERR_MAX] = "";
	bool two = two_cpus();
	uint64_t t0;
	size_t n = two ? 2 : 1;

	(void)state;
	target_init(&t[0], spawn_on(0));
	if (two)
		target_init(&t[1], spawn_on(1));
	else
		print_message("only one CPU: skipping the CPU 1 child\n");
	t0 = ra_monotonic_ns();
	assert_int_equal(rn_topology(t, n, err, sizeof(err)), 0);
	/* The first call loads the topology. */
	print_message("rn_topology with hwloc load: %.2f ms\n",
		      (double)(ra_monotonic_ns() - t0) / 1e6);
	assert_topo_of_cpu(&t[0], "0");
	if (two)
		assert_topo_of_cpu(&t[1], "1");
	reap(t[0].pid);
	if (two)
		reap(t[1].pid);
}

/* On a machine without GPUs the list is empty: here, /sys/class/drm has no cards. */
static void test_rn_topology_no_gpus_here(void **state)
{
	struct rn_target t;
	char err[RN_ERR_MAX];

	(void)state;
	if (access("/sys/class/drm/card0", F_OK) == 0 || access("/dev/kfd", F_OK) == 0) {
		RA_SKIP("this machine has a GPU: the empty-gpus check cannot run");
	}
	target_init(&t, getpid());
	assert_int_equal(rn_topology(&t, 1, err, sizeof(err)), 0);
	assert_string_equal(t.topo.gpus, "");
	assert_true(t.topo.n_cpus >= 1);
}

static void test_rn_topology_dead_pid_left_empty(void **state)
{
	struct rn_target t;
	char err[RN_ERR_MAX] = "";
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	target_init(&t, pid);
	assert_int_equal(rn_topology(&t, 1, err, sizeof(err)), 0);
	assert_string_equal(t.topo.cpus, "");
	assert_string_equal(t.topo.numa, "");
	assert_string_equal(t.topo.gpus, "");
	assert_int_equal(t.topo.n_cpus, 0);
	assert_string_equal(err, "");
}

static void test_rn_topology_zero_targets(void **state)
{
	char err[RN_ERR_MAX];

	(void)state;
	assert_int_equal(rn_topology(NULL, 0, err, sizeof(err)), 0);
}

/* Save and restore the calling thread's binding around each bind_away test. */
static int save_affinity(void **state)
{
	static cpu_set_t saved;

	if (sched_getaffinity(0, sizeof(saved), &saved) < 0)
		return -1;
	*state = &saved;
	return 0;
}

static int restore_affinity(void **state)
{
	return sched_setaffinity(0, sizeof(cpu_set_t), *state) < 0 ? -1 : 0;
}

static void test_rn_bind_away_targets_on_cpu0(void **state)
{
	struct rn_target t[2];
	cpu_set_t now;
	char err[RN_ERR_MAX];

	(void)state;
	if (!two_cpus()) {
		RA_SKIP("only one CPU: nothing to bind away to");
	}
	target_init(&t[0], spawn_on(0));
	target_init(&t[1], spawn_on(0));
	assert_int_equal(rn_topology(t, 2, err, sizeof(err)), 0);
	assert_string_equal(t[1].topo.cpus, "0");
	/* Every other allowed CPU; on this 2-CPU machine, CPU 1 alone. */
	assert_true(rn_bind_away(t, 2) >= 1);
	assert_int_equal(sched_getaffinity(0, sizeof(now), &now), 0);
	assert_false(CPU_ISSET(0, &now));
	assert_true(CPU_ISSET(1, &now));
	reap(t[0].pid);
	reap(t[1].pid);
}

static void assert_affinity_unchanged(const cpu_set_t *before)
{
	cpu_set_t now;

	assert_int_equal(sched_getaffinity(0, sizeof(now), &now), 0);
	assert_true(CPU_EQUAL(&now, before));
}

static void test_rn_bind_away_targets_everywhere(void **state)
{
	struct rn_target t[2];
	char err[RN_ERR_MAX];
	bool two = two_cpus();

	target_init(&t[0], spawn_on(0));
	target_init(&t[1], spawn_on(two ? 1 : 0));
	assert_int_equal(rn_topology(t, 2, err, sizeof(err)), 0);
	assert_int_equal(rn_bind_away(t, 2), 0);
	assert_affinity_unchanged(*state);
	reap(t[0].pid);
	reap(t[1].pid);
}

/* A target whose binding is unknown counts as bound everywhere. */
static void test_rn_bind_away_unknown_target(void **state)
{
	struct rn_target t[2];

	target_init(&t[0], 1);
	target_init(&t[1], 2);
	snprintf(t[0].topo.cpus, sizeof(t[0].topo.cpus), "0");
	t[1].topo.cpus[0] = '\0';
	assert_int_equal(rn_bind_away(t, 2), 0);
	assert_affinity_unchanged(*state);
	/* A list cut short at its field size is unknown too. */
	snprintf(t[1].topo.cpus, sizeof(t[1].topo.cpus), "0,...");
	assert_int_equal(rn_bind_away(t, 2), 0);
	assert_affinity_unchanged(*state);
	assert_int_equal(rn_bind_away(t, 0), 0);
	assert_affinity_unchanged(*state);
}

/* ------------------------------------------------------------------------ */
/*
 * Captured machines (tests/data/, see its README.md): the topology from an
 * hwloc XML file, each target's binding from a captured status file
 * (node-topo/: sleeps bound to CPU 0, to CPU 1 and to both), so nothing
 * depends on this host. topo-vm2.xml is lstopo's XML of a 2-CPU VM without
 * GPUs; topo-two-packages.xml, written by hand, has two packages with a NUMA
 * node and a PCI device each, package 1's with enough OS devices to overflow
 * the gpus field when a target is bound to the whole machine.
 */
#define TOPO_PROC RA_TEST_DATA "/node-topo"
#define ON_CPU0 26647
#define ON_CPU1 26648
#define ON_BOTH 26649
#define GONE 26650 /* not captured: an exited process */

#define PKG0_GPUS "card0(0000:c1:00.0),renderD128(0000:c1:00.0)"
#define PKG1_GPUS                                                                                  \
	"card1(0000:41:00.0),opencl0d1(0000:41:00.0),rsmi0(0000:41:00.0),rsmi1(0000:41:00.0),"     \
	"rsmi2(0000:41:00.0),rsmi3(0000:41:00.0)"

static void captured(const char *xml, struct rn_target *t)
{
	static const pid_t pids[] = {ON_CPU0, ON_CPU1, ON_BOTH, GONE};
	char err[RN_ERR_MAX] = "";
	size_t i;

	for (i = 0; i < 4; i++)
		target_init(&t[i], pids[i]);
	if (rn_topology_at(xml, TOPO_PROC, t, 4, err, sizeof(err)) < 0)
		fail_msg("rn_topology_at: %s", err);
	assert_string_equal(err, "");
	for (i = 0; i < 4; i++) {
		assert_terminated(t[i].topo.cpus, sizeof(t[i].topo.cpus));
		assert_terminated(t[i].topo.numa, sizeof(t[i].topo.numa));
		assert_terminated(t[i].topo.gpus, sizeof(t[i].topo.gpus));
		assert_gpus_well_formed(t[i].topo.gpus);
	}
	/* Gone: an empty topology, like a process that exits before we look. */
	assert_string_equal(t[3].topo.cpus, "");
	assert_string_equal(t[3].topo.numa, "");
	assert_string_equal(t[3].topo.gpus, "");
	assert_int_equal(t[3].topo.n_cpus, 0);
}

static void test_rn_topology_at_captured_vm(void **state)
{
	struct rn_target t[4];

	(void)state;
	captured(RA_TEST_DATA "/topo-vm2.xml", t);
	assert_topo_of_cpu(&t[0], "0");
	assert_topo_of_cpu(&t[1], "1");
	assert_string_equal(t[2].topo.cpus, "0-1");
	assert_int_equal(t[2].topo.n_cpus, 2);
	assert_string_equal(t[2].topo.numa, "0");
	/* Its storage and network devices are no GPUs. */
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(t[i].topo.gpus, "");
}

static void test_rn_topology_at_gpus_near_binding(void **state)
{
	struct rn_target t[4];

	(void)state;
	captured(RA_TEST_DATA "/topo-two-packages.xml", t);
	assert_topo_of_cpu(&t[0], "0");
	assert_string_equal(t[0].topo.gpus, PKG0_GPUS);
	assert_string_equal(t[1].topo.cpus, "1");
	assert_string_equal(t[1].topo.numa, "1");
	assert_string_equal(t[1].topo.gpus, PKG1_GPUS);
	/* Bound everywhere: every GPU, cut after the last whole entry that fits. */
	assert_string_equal(t[2].topo.cpus, "0-1");
	assert_int_equal(t[2].topo.n_cpus, 2);
	assert_string_equal(t[2].topo.numa, "0-1");
	assert_string_equal(t[2].topo.gpus,
			    PKG0_GPUS ",card1(0000:41:00.0),"
				      "opencl0d1(0000:41:00.0),rsmi0(0000:41:00.0)");
}

static void test_rn_topology_at_errors(void **state)
{
	struct rn_target t;
	char err[RN_ERR_MAX] = "";

	(void)state;
	target_init(&t, ON_CPU0);
	assert_int_equal(
	    rn_topology_at(RA_TEST_DATA "/no-such.xml", TOPO_PROC, &t, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no-such.xml"));
	assert_int_equal(rn_topology_at(NULL, TOPO_PROC, &t, 1, err, sizeof(err)), -1);
	assert_int_equal(rn_topology_at(RA_TEST_DATA "/topo-vm2.xml", NULL, &t, 1, NULL, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_topology_bound_children),
	    cmocka_unit_test(test_rn_topology_at_captured_vm),
	    cmocka_unit_test(test_rn_topology_at_gpus_near_binding),
	    cmocka_unit_test(test_rn_topology_at_errors),
	    cmocka_unit_test(test_rn_topology_no_gpus_here),
	    cmocka_unit_test(test_rn_topology_dead_pid_left_empty),
	    cmocka_unit_test(test_rn_topology_zero_targets),
	    cmocka_unit_test_setup_teardown(test_rn_bind_away_targets_on_cpu0, save_affinity,
					    restore_affinity),
	    cmocka_unit_test_setup_teardown(test_rn_bind_away_targets_everywhere, save_affinity,
					    restore_affinity),
	    cmocka_unit_test_setup_teardown(test_rn_bind_away_unknown_target, save_affinity,
					    restore_affinity),
	};

	return ra_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}

/* SPDX-License-Identifier: MIT */
/*
 * Where each target runs: its CPU binding, the NUMA nodes of those CPUs and
 * the GPUs closest to them, read with hwloc (the project's only hwloc user).
 * Also keeps the attaching thread off the targets' CPUs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "common/procfs.h"
#include "node.h"

/*
 * One topology per process, loaded on first use and kept until exit:
 * rn_topology and rn_bind_away both need it and it does not change during a
 * run. Written once under pthread_once, read-only afterwards.
 */
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t topo;
static char topo_err[RN_ERR_MAX];

/*
 * Discovery components we never want inside a launcher. opencl and cuda
 * (and levelzero) initialize a whole compute runtime in our process just to
 * name devices that linux:io already finds as DRM card/renderD; gl connects
 * to X servers. x86 binds our thread to every PU in turn to run CPUID, which
 * briefly puts us on the targets' cores and is slow on large nodes; the
 * linux component reads the same structure from sysfs. Names that this hwloc
 * does not have are refused with -1, which is fine.
 */
static const char *const heavy_components[] = {"opencl", "cuda", "levelzero", "gl", "x86"};

/*
 * This machine's topology, or (xml) the one an XML file describes, always
 * with the same filters. Load time on the 2-CPU VM this was written on: 1.5 ms init (plugins) plus
 * 8-12 ms load, almost all of it I/O discovery reading the PCI config space of
 * six virtio devices (about 1.5 ms each under the hypervisor; microseconds on
 * bare metal). Without I/O the load takes under 1 ms.
 */
static int topo_open(const char *xml, hwloc_topology_t *out, char *err, size_t errlen)
{
	hwloc_topology_t tp;
	size_t i;

	if (hwloc_topology_init(&tp) < 0) {
		snprintf(err, errlen, "hwloc_topology_init: %s", strerror(errno));
		return -1;
	}
	if (xml && hwloc_topology_set_xml(tp, xml) < 0) {
		snprintf(err, errlen, "hwloc_topology_set_xml(%s): %s", xml, strerror(errno));
		hwloc_topology_destroy(tp);
		return -1;
	}
	/*
	 * Targets may sit in other cgroups (another Slurm step) with CPUs we are
	 * not allowed: keep those in the topology so their NUMA nodes and GPUs are
	 * found; the allowed set still tells rn_bind_away where we may run.
	 */
	hwloc_topology_set_flags(tp, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	hwloc_topology_set_io_types_filter(tp, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_cache_types_filter(tp, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(tp, HWLOC_TYPE_FILTER_KEEP_NONE);
	for (i = 0; i < sizeof(heavy_components) / sizeof(heavy_components[0]); i++)
		hwloc_topology_set_components(tp, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
					      heavy_components[i]);
	if (hwloc_topology_load(tp) < 0) {
		snprintf(err, errlen, "hwloc_topology_load: %s", strerror(errno));
		hwloc_topology_destroy(tp);
		return -1;
	}
	*out = tp;
	return 0;
}

static void topo_load(void)
{
	if (topo_open(NULL, &topo, topo_err, sizeof(topo_err)) < 0)
		topo = NULL;
}

static hwloc_topology_t topo_get(char *err, size_t errlen)
{
	pthread_once(&topo_once, topo_load);
	if (!topo && err && errlen)
		snprintf(err, errlen, "%s", topo_err);
	return topo;
}

/*
 * A list that does not fit its field keeps its whole leading elements and
 * ends in "..." ("0,2,4,..."), so it is never mistaken for a smaller set: it
 * no longer parses, and rn_bind_away then counts the target as everywhere.
 */
static void list_str(char *dst, size_t size, hwloc_const_bitmap_t set)
{
	int len = hwloc_bitmap_list_snprintf(dst, size, set);
	char *cut;

	if (len < 0) {
		dst[0] = '\0';
		return;
	}
	if ((size_t)len < size)
		return;
	dst[size - 4] = '\0';
	cut = strrchr(dst, ',');
	cut = cut ? cut + 1 : dst;
	memcpy(cut, "...", 4);
}

/* The value of "Cpus_allowed_list:" in /proc/PID/status (main thread only). */
static int status_binding(const char *procfs, pid_t pid, hwloc_bitmap_t set)
{
	char *val;
	int ret = -1;

	if (ra_status_value(procfs, pid, "Cpus_allowed_list", &val) < 0)
		return -1;
	if (*val && hwloc_bitmap_list_sscanf(set, val) == 0)
		ret = 0;
	free(val);
	return ret;
}

/*
 * hwloc unites the bindings of all the process's threads. A captured machine
 * (procfs set) has only what its status files say.
 */
static int read_binding(hwloc_topology_t tp, const char *procfs, pid_t pid, hwloc_bitmap_t set)
{
	if (!procfs && hwloc_get_proc_cpubind(tp, pid, set, HWLOC_CPUBIND_PROCESS) == 0 &&
	    !hwloc_bitmap_iszero(set))
		return 0;
	if (status_binding(procfs, pid, set) == 0 && !hwloc_bitmap_iszero(set))
		return 0;
	return -1;
}

static void numa_of(hwloc_topology_t tp, hwloc_const_bitmap_t set, hwloc_bitmap_t out)
{
	hwloc_obj_t node = NULL;

	hwloc_bitmap_zero(out);
	while ((node = hwloc_get_next_obj_by_type(tp, HWLOC_OBJ_NUMANODE, node)))
		if (node->cpuset && hwloc_bitmap_intersects(node->cpuset, set))
			hwloc_bitmap_set(out, node->os_index);
}

static bool is_gpu(hwloc_obj_t os)
{
	return os->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU ||
	       os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC;
}

/* "card0(0000:c1:00.0)", or the bare name when it hangs off no PCI device. */
static void gpu_name(hwloc_obj_t os, char *buf, size_t size)
{
	hwloc_obj_t pci = os->parent;
	const char *name = os->name ? os->name : "?";

	if (pci && pci->type == HWLOC_OBJ_PCI_DEVICE)
		snprintf(buf, size, "%s(%04x:%02x:%02x.%x)", name, pci->attr->pcidev.domain,
			 (unsigned)pci->attr->pcidev.bus, (unsigned)pci->attr->pcidev.dev,
			 (unsigned)pci->attr->pcidev.func);
	else
		snprintf(buf, size, "%s", name);
}

/*
 * GPUs whose nearest CPU-side ancestor shares a CPU with the binding. Only
 * whole entries are written: the list stops at the first one that does not
 * fit.
 */
static void gpus_near(hwloc_topology_t tp, hwloc_const_bitmap_t set, char *dst, size_t size)
{
	hwloc_obj_t os = NULL, anc;
	char one[128];
	size_t used = 0;
	int w;

	dst[0] = '\0';
	while ((os = hwloc_get_next_osdev(tp, os))) {
		if (!is_gpu(os))
			continue;
		anc = hwloc_get_non_io_ancestor_obj(tp, os);
		if (!anc || !anc->cpuset || !hwloc_bitmap_intersects(anc->cpuset, set))
			continue;
		gpu_name(os, one, sizeof(one));
		w = snprintf(dst + used, size - used, "%s%s", used ? "," : "", one);
		if (w < 0 || (size_t)w >= size - used) {
			dst[used] = '\0';
			break;
		}
		used += (size_t)w;
	}
}

/* A process that is gone (or unreadable) keeps an empty topo. */
static void target_topo(hwloc_topology_t tp, const char *procfs, struct rn_target *t,
			hwloc_bitmap_t set, hwloc_bitmap_t tmp)
{
	memset(&t->topo, 0, sizeof(t->topo));
	if (read_binding(tp, procfs, t->pid, set) < 0)
		return;
	list_str(t->topo.cpus, sizeof(t->topo.cpus), set);
	t->topo.n_cpus = hwloc_bitmap_weight(set);
	numa_of(tp, set, tmp);
	list_str(t->topo.numa, sizeof(t->topo.numa), tmp);
	gpus_near(tp, set, t->topo.gpus, sizeof(t->topo.gpus));
}

static int topo_fill(hwloc_topology_t tp, const char *procfs, struct rn_target *t, size_t n,
		     char *err, size_t errlen)
{
	hwloc_bitmap_t set = NULL, tmp = NULL;
	int ret = -1;
	size_t i;

	set = hwloc_bitmap_alloc();
	tmp = hwloc_bitmap_alloc();
	if (!set || !tmp) {
		if (err && errlen)
			snprintf(err, errlen, "hwloc_bitmap_alloc: out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		target_topo(tp, procfs, &t[i], set, tmp);
	ret = 0;
out:
	hwloc_bitmap_free(set);
	hwloc_bitmap_free(tmp);
	return ret;
}

int rn_topology(struct rn_target *t, size_t n, char *err, size_t errlen)
{
	hwloc_topology_t tp = topo_get(err, errlen);

	if (!tp)
		return -1;
	return topo_fill(tp, NULL, t, n, err, errlen);
}

int rn_topology_at(const char *xml, const char *procfs, struct rn_target *t, size_t n, char *err,
		   size_t errlen)
{
	char why[RN_ERR_MAX];
	hwloc_topology_t tp;
	int ret;

	if (!xml || !procfs) {
		if (err && errlen)
			snprintf(err, errlen,
				 "rn_topology_at: an XML file and a proc root are needed");
		return -1;
	}
	if (topo_open(xml, &tp, why, sizeof(why)) < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s", why);
		return -1;
	}
	ret = topo_fill(tp, procfs, t, n, err, errlen);
	hwloc_topology_destroy(tp);
	return ret;
}

/* Add a target's CPUs to busy; -1 if they are unknown (empty, truncated). */
static int target_cpus(const struct rn_target *t, hwloc_bitmap_t busy, hwloc_bitmap_t tmp)
{
	char cpus[sizeof(t->topo.cpus) + 1];

	memcpy(cpus, t->topo.cpus, sizeof(t->topo.cpus));
	cpus[sizeof(t->topo.cpus)] = '\0';
	if (!cpus[0] || hwloc_bitmap_list_sscanf(tmp, cpus) < 0 || hwloc_bitmap_iszero(tmp))
		return -1;
	hwloc_bitmap_or(busy, busy, tmp);
	return 0;
}

/*
 * With no targets there is nothing to keep away from, so an existing binding
 * (say, mpirun's) is left alone. Threads created afterwards inherit the
 * binding: call this before starting workers.
 */
int rn_bind_away(const struct rn_target *t, size_t n)
{
	hwloc_topology_t tp = topo_get(NULL, 0);
	hwloc_bitmap_t busy = NULL, tmp = NULL;
	int ret = 0;
	size_t i;

	if (!tp || n == 0)
		return 0;
	busy = hwloc_bitmap_alloc();
	tmp = hwloc_bitmap_alloc();
	if (!busy || !tmp)
		goto out;
	for (i = 0; i < n; i++)
		if (target_cpus(&t[i], busy, tmp) < 0)
			goto out;
	hwloc_bitmap_andnot(tmp, hwloc_topology_get_allowed_cpuset(tp), busy);
	if (hwloc_bitmap_iszero(tmp))
		goto out;
	if (hwloc_set_cpubind(tp, tmp, HWLOC_CPUBIND_THREAD) < 0)
		goto out;
	ret = hwloc_bitmap_weight(tmp);
out:
	hwloc_bitmap_free(busy);
	hwloc_bitmap_free(tmp);
	return ret;
}

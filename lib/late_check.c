/* SPDX-License-Identifier: MIT */
/*
 * --late-start's pre-checks on the process: from /proc/PID/maps and the
 * mapped files' dynamic symbols, read-only. ROCm's names are in
 * common/late.h, with their source.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/procfs.h"
#include "common/protocol.h"
#include "late_check.h"
#include "symbols.h"
#include "trust.h"

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/*
 * A copy of rocprofiler-register: librocprofiler-register.so*, or as a
 * Python wheel bundles it, renamed by auditwheel (librocprofiler-register-HASH.so*).
 */
static bool is_register(const char *base)
{
	static const char name[] = "librocprofiler-register";
	const char *rest = base + sizeof(name) - 1;

	return starts(base, name) &&
	       (starts(rest, ".so") || (rest[0] == '-' && strstr(rest, ".so")));
}

/* Does the file behind m export the entry point? */
static bool exports_invoke(const char *procfs, pid_t pid, const struct ra_map *m)
{
	static const char *const name[] = {RA_LATE_INVOKE};
	uint64_t v, base, off;
	int fd = ra_map_open(procfs, pid, m), n;

	if (fd < 0)
		return false;
	n = ra_elf_lookup_fd(fd, name, 1, &v, &base, &off);
	close(fd);
	return n == 1;
}

static bool known(const struct ra_late_plan *p, const char *path)
{
	for (size_t i = 0; i < p->ncopies; i++)
		if (!strcmp(p->copy[i], path))
			return true;
	return false;
}

/* One mapping: an SDK (refused), the attach SDK (normal path), a register copy (kept). */
static int look(const char *procfs, pid_t pid, const struct ra_map *m, struct ra_late_plan *p,
		struct ra_err *e)
{
	const char *b = base_of(m->path);

	if (starts(b, RA_LATE_SDK_ATTACH_PREFIX)) {
		ra_err_set(e, ROCATTACH_STATUS_SUCCESS,
			   "process %d maps %s: it was started to be attached; the normal attach",
			   pid, m->path);
		return RA_LATE_NORMAL;
	}
	if (starts(b, RA_LATE_SDK_PREFIX))
		return RA_REFUSE(
		    e, ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
		    "process %d already runs a rocprofiler-sdk (%s): a late start "
		    "would load a second one; nothing was touched (profile it with the "
		    "tool it runs)",
		    pid, m->path);
	if (!is_register(b) || known(p, m->path))
		return RA_LATE_GO;
	if (!exports_invoke(procfs, pid, m))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
				 "process %d: its %s exports no " RA_LATE_INVOKE
				 " (too old a ROCm): nothing was touched; a late start needs "
				 "rocprofiler-register with it (ROCm 7.0 or newer)",
				 pid, m->path);
	if (p->ncopies >= RA_LATE_COPIES_MAX)
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
				 "process %d maps more than %d copies of rocprofiler-register: "
				 "nothing was touched",
				 pid, RA_LATE_COPIES_MAX);
	snprintf(p->copy[p->ncopies++], PATH_MAX, "%s", m->path);
	return RA_LATE_GO;
}

static int look_maps(const char *procfs, pid_t pid, struct ra_late_plan *p, struct ra_err *e)
{
	struct ra_maps maps = {0};
	int ret = ra_maps_read(procfs, pid, &maps);

	if (ret)
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				 "process %d does not exist (or its maps cannot be read: %s)", pid,
				 strerror(-ret));
	for (size_t i = 0; !ret && i < maps.n; i++)
		if (maps.v[i].inode && maps.v[i].path[0] == '/')
			ret = look(procfs, pid, &maps.v[i], p, e);
	ra_maps_free(&maps);
	if (!ret && !p->ncopies)
		return RA_REFUSE(
		    e, ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
		    "process %d maps no " RA_ROCM_REGISTER_PREFIX
		    ": it has not loaded a ROCm runtime, so there is nothing to start; "
		    "nothing was touched",
		    pid);
	return ret;
}

/* Not stopped, no listener. */
static int look_process(const char *procfs, pid_t pid, struct ra_err *e)
{
	struct ra_stat st;
	pid_t tid;

	if (ra_stat_read(procfs, pid, &st))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				 "process %d does not exist", pid);
	if (st.state == 'T' || st.state == 't')
		return RA_REFUSE(
		    e, ROCATTACH_STATUS_ERROR,
		    "process %d is stopped: nothing was touched; resume it (kill -CONT "
		    "%d) and start again",
		    pid, pid);
	if (st.state == 'Z' || st.state == 'X')
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				 "process %d is exiting", pid);
	if (!ra_find_thread_by_comm(procfs, pid, RA_LISTENER_COMM, &tid)) {
		ra_err_set(e, ROCATTACH_STATUS_SUCCESS,
			   "process %d has an attach listener (thread %d): the normal attach", pid,
			   tid);
		return RA_LATE_NORMAL;
	}
	return RA_LATE_GO;
}

/*
 * A tool or SDK file, as given and as resolved, and its directories: none
 * writable by others or owned by someone not trusted, as for the normal
 * attach (trust.h). The late start cannot be undone, so neither can a
 * library swapped in by someone else.
 */
static int look_trust(pid_t pid, const char *what, const char *path, const struct ra_trust *tr,
		      struct ra_err *e)
{
	char real[PATH_MAX], which[PATH_MAX], why[256];
	const char *problem = NULL;

	if (path[0] == '/')
		problem = ra_trust_path(path, tr, which, sizeof(which), why, sizeof(why));
	if (!problem && realpath(path, real))
		problem = ra_trust_path(real, tr, which, sizeof(which), why, sizeof(why));
	if (!problem)
		return 0;
	return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			 "refusing %s %s for process %d: %s %s %s; nothing was touched", what, path,
			 pid,
			 strcmp(which, path) && strcmp(which, real) ? "its directory" : "the file",
			 which, problem);
}

/* Every tool that links an SDK links the same one; at least one does; all are trusted. */
static int look_tools(pid_t pid, const char *tools, const struct ra_trust *tr,
		      struct ra_late_plan *p, struct ra_err *e)
{
	char tool[PATH_MAX], sdk[PATH_MAX];

	p->sdk[0] = '\0';
	for (const char *t = tools; *t;) {
		size_t n = strcspn(t, ":");
		int r;

		snprintf(tool, sizeof(tool), "%.*s", (int)n, t);
		t += n + (t[n] == ':');
		if (!tool[0])
			continue;
		if (look_trust(pid, "tool", tool, tr, e))
			return -1;
		r = ra_late_tool_sdk(tool, sdk, sizeof(sdk), e);
		if (r < 0 || (r == 0 && look_trust(pid, "the SDK", sdk, tr, e)))
			return -1;
		if (r == 0 && p->sdk[0] && strcmp(p->sdk, sdk))
			return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
					 "the tools link two SDKs (%s and %s): one process takes "
					 "one; give tools built with the same rocprofiler-sdk",
					 p->sdk, sdk);
		if (r == 0)
			snprintf(p->sdk, sizeof(p->sdk), "%s", sdk);
	}
	if (!p->sdk[0])
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "no tool of '%s' links " RA_LATE_SDK_PREFIX
				 ": a late start loads rocprofiler-sdk tools only (-t)",
				 tools);
	return 0;
}

int ra_late_check(const char *procfs, pid_t pid, const char *tools, struct ra_late_plan *p,
		  struct ra_err *e)
{
	struct ra_trust tr;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = look_process(procfs, pid, e);
	if (!ret)
		ret = look_maps(procfs, pid, p, e);
	if (!ret && ra_trust_read(procfs, pid, &tr))
		ret = RA_REFUSE(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				"process %d does not exist", pid);
	if (!ret)
		ret = look_tools(pid, tools, &tr, p, e);
	return ret;
}

bool ra_late_maps_register(const char *procfs, pid_t pid)
{
	struct ra_maps maps = {0};
	bool found = false;

	if (ra_maps_read(procfs, pid, &maps))
		return false;
	for (size_t i = 0; !found && i < maps.n; i++)
		found = is_register(base_of(maps.v[i].path));
	ra_maps_free(&maps);
	return found;
}

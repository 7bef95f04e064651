/* SPDX-License-Identifier: MIT */
/*
 * Preparing an attach: everything slow and fallible before any ptrace. The
 * tool libraries are checked as the target sees them (loadable here, safe
 * from hijack), --inject loads the agent where no listener runs, and the
 * payload (environment buffer, tool list) is built.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/envbuf.h"
#include "common/protocol.h"
#include "inject.h"
#include "log.h"
#include "common/procfs.h"
#include "ptrace_calls.h"
#include "session.h"
#include "symbols.h"
#include "target_path.h"
#include "target_memory.h"
#include "trust.h"

/* A start or stop time further ahead than this is refused (our agent ignores one). */
#define AHEAD_MAX_NS (10 * RA_NS_PER_SEC)

extern char **environ;

/* One object, so that its use can be told from a list naming the same file. */
const char ra_default_tool[] = RA_DEFAULT_TOOL;

const char *ra_tool_list_for(const rocattach_opts_t *o)
{
	const char *v;

	if (o->tool_libraries)
		return o->tool_libraries;
	/* Under secure execution the caller's environment is not trusted. */
	if (!(o->flags & ROCATTACH_F_NO_ENV_TOOL) && !getauxval(AT_SECURE)) {
		v = getenv("ROCPROF_ATTACH_TOOL_LIBRARY");
		if (v && *v)
			return v;
	}
	return ra_default_tool;
}

/* One directory of t's path, or t itself (name == t): 0, or -1 with e set. */
static int check_node(pid_t pid, int base, const char *t, const char *name, bool in_root,
		      const struct ra_trust *tr, struct ra_err *e)
{
	const char *problem;
	char why[256];
	struct stat sb;
	int fd;

	fd = ra_open_in_target(base, name, O_PATH, in_root);
	if (fd < 0)
		return 0; /* a missing path is check_file's to report */
	problem = fstat(fd, &sb) ? NULL : ra_trust_problem(&sb, tr, why, sizeof(why));
	close(fd);
	if (!problem)
		return 0;
	ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
		   "refusing library %s for process %d: %s%s %s", t, pid,
		   name == t ? "the file" : "its directory ", name == t ? "" : name, problem);
	return -1;
}

/* The directories of t from the top down, then t itself: none may be open to hijack. */
static int check_chain(pid_t pid, int base, const char *t, bool in_root, const struct ra_trust *tr,
		       struct ra_err *e)
{
	char prefix[4096];
	const char *p;

	if (in_root && check_node(pid, base, t, "/", in_root, tr, e))
		return -1;
	for (p = strchr(t + 1, '/'); p; p = strchr(p + 1, '/')) {
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(p - t), t);
		if (check_node(pid, base, t, prefix, in_root, tr, e))
			return -1;
	}
	return check_node(pid, base, t, t, in_root, tr, e);
}

static const char *machine_name(unsigned int m)
{
	switch (m) {
	case EM_386:
		return "i386";
	case EM_X86_64:
		return "x86-64";
	case EM_AARCH64:
		return "aarch64";
	case EM_ARM:
		return "arm";
	case EM_PPC64:
		return "ppc64";
	case EM_RISCV:
		return "riscv";
	default:
		return "another machine";
	}
}

/* What dlopen in the target would refuse anyway, refused here before any ptrace. */
static const char *elf_problem(int fd, char *buf, size_t len)
{
	struct ra_elf_header h;

	if (ra_elf_header_fd(fd, &h))
		return NULL; /* we cannot read it; the target may: let dlopen decide */
	if (!h.elf)
		return "is not an ELF file: give the path of a shared library (.so)";
	if (h.elf_class != ELFCLASS64)
		return "is a 32-bit ELF object: a 64-bit process cannot load it";
	if (h.machine != ra_arch_elf_machine()) {
		snprintf(buf, len, "is built for %s (ELF machine %u), not for %s",
			 machine_name(h.machine), h.machine, machine_name(ra_arch_elf_machine()));
		return buf;
	}
	if (h.type != ET_DYN)
		return "is not a shared object (ELF type is not ET_DYN): it cannot be dlopen'ed";
	return NULL;
}

static int check_file(pid_t pid, int base, const char *t, bool in_root, struct ra_err *e)
{
	const char *problem;
	char why[160];
	struct stat sb;
	int fd, err;

	fd = ra_open_in_target(base, t, O_RDONLY | O_NOCTTY | O_NONBLOCK, in_root);
	if (fd < 0 && errno == EACCES)
		fd = ra_open_in_target(base, t, O_PATH, in_root);
	if (fd < 0 || fstat(fd, &sb)) {
		err = errno;
		if (fd >= 0)
			close(fd);
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				  "library %s as seen from process %d (/proc/%d/%s/%s): %s", t, pid,
				  pid, in_root ? "root" : "cwd", t + in_root, strerror(err));
	}
	problem = S_ISREG(sb.st_mode) ? elf_problem(fd, why, sizeof(why)) : "is not a regular file";
	close(fd);
	if (problem)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				  "library %s in process %d %s", t, pid, problem);
	return 0;
}

/*
 * A path with a '/' is checked as the target sees it: it must exist, be a
 * loadable shared object for this machine, and be safe from hijack. A bare
 * name is the target's to search (its LD_LIBRARY_PATH, cache, RUNPATH).
 */
static int check_one_tool(pid_t pid, const char *t, const struct ra_trust *tr, struct ra_err *e)
{
	bool in_root = t[0] == '/';
	char path[64];
	int base, ret;

	if (!strchr(t, '/'))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, in_root ? "root" : "cwd");
	base = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (base < 0) {
		int err = errno;

		return ra_err_set(e,
				  err == ENOENT || err == ESRCH
				      ? ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND
				      : ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				  "library %s: cannot open %s: %s", t, path, strerror(err));
	}
	ret = check_file(pid, base, t, in_root, e);
	if (!ret)
		ret = check_chain(pid, base, t, in_root, tr, e);
	close(base);
	return ret ? -1 : 0;
}

static int check_tools(pid_t pid, struct prepared *p, const struct ra_trust *tr, struct ra_err *e)
{
	for (size_t i = 0; i < p->tools.n; i++)
		if (check_one_tool(pid, p->tools.v[i], tr, e))
			return -1;
	return 0;
}

/*
 * /proc/PID/root, maps and mem need ptrace read access: without it, say why
 * here rather than fail on the first of them.
 */
static int check_access(pid_t pid, struct ra_trust *tr, struct ra_err *e)
{
	char path[64], why[256];
	struct ra_status st;
	int fd;

	/* Not access(2): it checks with the real uid, which a setuid attacher does not act as. */
	snprintf(path, sizeof(path), "/proc/%d/root/", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	else if (errno == EACCES || errno == EPERM) {
		ra_explain_eacces(pid, why, sizeof(why));
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED,
				  "process %d cannot be inspected (%s: %s): %s", pid, path,
				  strerror(EACCES), why);
	}
	if (ra_status_read(RA_PROCFS, pid, &st))
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				  "process %d does not exist", pid);
	tr->ruid = st.uid_real;
	tr->euid = st.uid_effective;
	tr->self = geteuid();
	return 0;
}

/*
 * Our own identity for the owner entry: our pid namespace and time namespace
 * (stat of /proc/self/ns/..., errno if absent) and our start time. Read once
 * per process (a forked child reads its own: keyed by pid).
 */
struct self_ids {
	pid_t pid;
	int ns_err[2];
	struct stat ns[2];
	uint64_t starttime;
	bool starttime_ok;
};

static const char *const own_ns[2] = {"pid", "time"};
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static struct self_ids self_cache;

static void self_ids(struct self_ids *out)
{
	pid_t me = getpid();
	struct ra_stat st;
	char path[64];

	pthread_mutex_lock(&self_lock);
	if (self_cache.pid != me) {
		for (int i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "/proc/self/ns/%s", own_ns[i]);
			self_cache.ns_err[i] = stat(path, &self_cache.ns[i]) ? errno : 0;
		}
		self_cache.starttime_ok = !ra_stat_read(RA_PROCFS, me, &st);
		self_cache.starttime = st.starttime;
		self_cache.pid = me;
	}
	*out = self_cache;
	pthread_mutex_unlock(&self_lock);
}

/* Same namespace of kind own_ns[i] for us and pid; absent on both counts as same. */
static bool same_ns(pid_t pid, const struct self_ids *me, int i)
{
	char other[64];
	struct stat b;
	int rb;

	snprintf(other, sizeof(other), "/proc/%d/ns/%s", pid, own_ns[i]);
	rb = stat(other, &b) ? errno : 0;
	if (me->ns_err[i] || rb)
		return me->ns_err[i] == ENOENT && rb == ENOENT;
	return me->ns[i].st_dev == b.st_dev && me->ns[i].st_ino == b.st_ino;
}

/*
 * We as a watchdog in pid sees us (ROCP_ATTACH_OWNER=<our pid>:<our
 * starttime> for our agent, the same two for librocattach-watchdog on
 * ROCm's side): it detaches the tools itself if we die during the window.
 * Only meaningful where the target sees our pid and our starttime as we do:
 * the same pid namespace, and the same time namespace (starttime is shifted
 * by its boot-time offset). Elsewhere: no watchdog.
 */
static void owner_ids(pid_t pid, struct prepared *p)
{
	struct self_ids me;

	self_ids(&me);
	p->owner_ok = false;
	if (!same_ns(pid, &me, 0) || !same_ns(pid, &me, 1)) {
		ra_debug("process %d is in another pid or time namespace: no watchdog", pid);
		return;
	}
	p->owner_ok = me.starttime_ok;
	p->owner_pid = me.pid;
	p->owner_start = (unsigned long long)me.starttime;
}

/* Ours to set, and only for our agent: a caller's private variable never crosses. */
static bool is_private_entry(const char *kv)
{
	return ra_env_is_private(kv, strlen(kv));
}

/*
 * The caller's ROCP* variables (not under secure execution: its environment
 * is not trusted then) and the explicit extras. Our agent also gets the
 * owner, the start time and the window's end (end NULL: not this agent);
 * ROCm's side keeps every variable it is sent in
 * the application's environment for good, so it gets only the caller's.
 * The encoder drops every name that does not start with ROCP.
 */
static int collect_env(const rocattach_opts_t *o, int side, const struct prepared *p,
		       const char ***out, size_t *n, char *owner, size_t owner_len, char *start,
		       size_t start_len, char *end, size_t end_len)
{
	size_t n_env = 0, n_extra = 0, k = 0;
	bool secure = getauxval(AT_SECURE);
	const char **all;

	while (!secure && environ && environ[n_env])
		n_env++;
	while (o->env && o->env[n_extra])
		n_extra++;
	all = calloc(n_env + n_extra + 4, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < n_env; i++)
		if (!strncmp(environ[i], "ROCP", 4) && !is_private_entry(environ[i]))
			all[k++] = environ[i];
	for (size_t i = 0; i < n_extra; i++)
		if (!is_private_entry(o->env[i]))
			all[k++] = o->env[i];
	if (side == ROCATTACH_SIDE_AGENT && p->owner_ok) {
		snprintf(owner, owner_len, "%s=%d:%llu", RA_ENV_OWNER, (int)p->owner_pid,
			 p->owner_start);
		all[k++] = owner;
	}
	if (side == ROCATTACH_SIDE_AGENT && o->start_ns) {
		snprintf(start, start_len, "%s=%llu", RA_ENV_START_NS,
			 (unsigned long long)o->start_ns);
		all[k++] = start;
	}
	if (side == ROCATTACH_SIDE_AGENT && o->planned_stop_ns && end) {
		snprintf(end, end_len, "%s=%llu", RA_ENV_END_NS,
			 (unsigned long long)ra_self_detach_by(o));
		all[k++] = end;
	}
	*out = all;
	*n = k;
	return 0;
}

/*
 * ends: the agent keeps a window's end (it exports RA_AGENT_WINDOW). An older
 * one does not know ROCP_ATTACH_END_NS as private and would put it into the
 * application's environment: it is not sent one.
 */
static int build_payload(const rocattach_opts_t *o, int side, bool ends, struct prepared *p,
			 struct ra_err *e)
{
	char owner[96], start[64], end[64];
	const char **all;
	size_t k, plen;
	char *buf;
	int ret;

	ret = collect_env(o, side, p, &all, &k, owner, sizeof(owner), start, sizeof(start),
			  ends ? end : NULL, sizeof(end));
	if (ret)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR, "out of memory");
	ret = ra_envbuf_encode(all, k, &buf, &p->env_len, NULL);
	free(all);
	if (ret)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR, "environment buffer: %s",
				  strerror(-ret));
	plen = strlen(p->tool_path) + 1;
	p->payload = realloc(buf, p->env_len + plen);
	if (!p->payload) {
		free(buf);
		return ra_err_set(e, ROCATTACH_STATUS_ERROR, "out of memory");
	}
	memcpy(p->payload + p->env_len, p->tool_path, plen);
	p->payload_len = p->env_len + plen;
	return 0;
}

#define INJECT_LISTENER_WAIT_MS 2000

/* --inject: no listener yet, so load the agent, which starts one. */
static int inject_listener(struct session *s, const rocattach_opts_t *o, const struct ra_trust *tr,
			   struct op *op)
{
	char agent[4096];
	uint64_t pause_ns;
	int ret;

	ret = ra_find_thread_by_comm(RA_PROCFS, s->pid, RA_LISTENER_COMM, &s->tid);
	if (!ret)
		return 0; /* found */
	if (ret == -ESRCH)
		return 0; /* gone: find_listener says so */
	if (ra_inject_agent_path(o->agent_path, agent, sizeof(agent), &op->e))
		return -1;
	if (check_one_tool(s->pid, agent, tr, &op->e))
		return -1;
	ra_info("process %d has no listener: loading %s into it", s->pid, agent);
	ret = ra_inject(s->pid, agent, &pause_ns, &op->e);
	op->rep.step_ns[ROCATTACH_STEP_INJECT] = pause_ns;
	if (ret)
		return ret;
	/*
	 * The listener runs once the agent is enabled. One case takes longer: the
	 * loader of an earlier inject whose attacher died may still be starting
	 * it (the agent was loaded, its enable is in flight, ours found it under
	 * way): give that loader a moment (up to INJECT_LISTENER_WAIT_MS).
	 */
	for (int i = 0; i < INJECT_LISTENER_WAIT_MS / 10 &&
			ra_find_thread_by_comm(RA_PROCFS, s->pid, RA_LISTENER_COMM, &s->tid);
	     i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	return 0;
}

/*
 * ROCm's side has no watchdog of its own: librocattach-watchdog, if we can
 * find one it may load, gets one. Without it the attach goes on (warned).
 */
static void find_watchdog(pid_t pid, const rocattach_opts_t *o, const struct ra_trust *tr,
			  struct prepared *p)
{
	static atomic_bool warned_missing;
	const char *env = getenv("ROCATTACH_WATCHDOG");
	struct ra_err e = {0};
	char where[4096];

	p->watchdog[0] = '\0';
	/* ROCATTACH_WATCHDOG=off: the flag for programs (the launchers) that have no option. */
	if ((o->flags & ROCATTACH_F_NO_WATCHDOG) || !p->owner_ok || (env && !strcmp(env, "off")))
		return;
	if (ra_own_lib_path(NULL, "ROCATTACH_WATCHDOG", RA_WATCHDOG_SONAME, p->watchdog,
			    sizeof(p->watchdog), where, sizeof(where))) {
		p->watchdog[0] = '\0';
		if (!atomic_exchange(&warned_missing, true))
			ra_warn("no watchdog for ROCm-side targets: cannot find %s beside %s (set "
				"ROCATTACH_WATCHDOG=/path/to/%s): if this attacher dies during a "
				"window, their tools stay attached",
				RA_WATCHDOG_SONAME, where, RA_WATCHDOG_SONAME);
		return;
	}
	if (check_one_tool(pid, p->watchdog, tr, &e)) {
		ra_warn("process %d: no watchdog: %s", pid, e.msg);
		p->watchdog[0] = '\0';
	}
}

/* A time ahead: 0 (none) or within AHEAD_MAX_NS from now. */
int ra_check_ahead(pid_t pid, const char *what, uint64_t at, struct ra_err *e)
{
	uint64_t now = ra_realtime_ns();

	if (at && at > now && at - now > AHEAD_MAX_NS)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				  "process %d: %s time is %.1f s ahead, more than %llu s: call "
				  "closer to it",
				  pid, what, (double)(at - now) / 1e9,
				  AHEAD_MAX_NS / RA_NS_PER_SEC);
	return 0;
}

/*
 * ROCm's side keeps the tool path of its first attach and refuses any other
 * with 8, INVALID_ARGUMENT, before it changes anything: ROCm/rocm-systems,
 * projects/rocprofiler-register/source/lib/rocprofiler-register/
 * rocprofiler_register.cpp, rocprofiler_register_attach and its
 * previous_attachment_tool_path, in the newest stored version (search index
 * id 68928104168; the index gives no commit for it; the older stored commit
 * 492f029de653cc82db31522b4ae8f6342a87c751 has no tool path at all). Where
 * our watchdog is loaded it recorded that path (RA_WATCHDOG_TOOL_PATH):
 * refuse another at once, before touching the process. Without a watchdog,
 * ROCm's 8 says it (agent_failed in session_drive.c names the cause).
 */
static int rocm_kept_path(pid_t pid, const struct prepared *p, struct ra_err *e)
{
	static const char *const names[] = {RA_WATCHDOG_ATTACH, RA_WATCHDOG_TOOL_PATH};
	static const char *const only[] = {RA_WATCHDOG_PREFIX, NULL};
	char kept[RA_WATCHDOG_TOOL_PATH_MAX];
	struct ra_maps maps = {0};
	struct ra_err ignore = {0};
	uint64_t a[2] = {0};
	int ret;

	ret = ra_maps_read(RA_PROCFS, pid, &maps);
	if (!ret)
		ret = ra_symbols_find_only(RA_PROCFS, pid, &maps, names, 2, 1, only, a, &ignore);
	ra_maps_free(&maps);
	if (ret || !a[1] || ra_mem_read(pid, a[1], kept, sizeof(kept), &ignore))
		return 0; /* no watchdog loaded (or an older one): nothing recorded */
	kept[sizeof(kept) - 1] = '\0';
	if (!kept[0] || !strcmp(kept, p->tool_path))
		return 0;
	return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			  "process %d: ROCm's side keeps the tool path of its first attach (%s) "
			  "and refuses %s: attach with that tool, or start a new process for "
			  "another",
			  pid, kept, p->tool_path);
}

int ra_prepare(struct session *s, const rocattach_opts_t *o, struct prepared *p, struct op *op)
{
	struct ra_err *e = &op->e;
	struct ra_trust tr;
	struct ra_stat st;
	int ret;

	ret = ra_stat_read(RA_PROCFS, s->pid, &st);
	if (ret)
		return ra_no_process(s->pid, ret, e);
	if (ra_check_stopped(s->pid, &st, true, e)) {
		op->rep.flags |= ROCATTACH_REPORT_STOPPED;
		return -1;
	}
	if (ra_check_alive(s->pid, &st, e) || ra_check_ahead(s->pid, "start", o->start_ns, e) ||
	    check_access(s->pid, &tr, e))
		return -1;
	s->starttime = st.starttime;
	p->tool_path = ra_tool_list_for(o);
	ret = ra_toollist_parse(p->tool_path, &p->tools);
	if (ret)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				  "tool library list '%s' is %s", p->tool_path,
				  ret == -E2BIG ? "too long" : "empty");
	if (check_tools(s->pid, p, &tr, e))
		return -1;
	if ((o->flags & ROCATTACH_F_INJECT) && inject_listener(s, o, &tr, op))
		return -1;
	if (ra_find_target(s, p, e))
		return -1;
	owner_ids(s->pid, p);
	if (s->ep.side == ROCATTACH_SIDE_ROCM)
		find_watchdog(s->pid, o, &tr, p);
	if (s->ep.side == ROCATTACH_SIDE_ROCM && rocm_kept_path(s->pid, p, e))
		return -1;
	return build_payload(o, s->ep.side, s->ep.agent[AGENT_WINDOW] != 0, p, e);
}

void ra_prepared_free(struct prepared *p)
{
	ra_toollist_free(&p->tools);
	free(p->payload);
}

/* SPDX-License-Identifier: MIT */
/*
 * Sessions and the public attach/detach API.
 *
 * A session records that a process is attached. Unlike ROCm's attacher we do
 * not stay the tracer between attach and detach: ptrace is held only while an
 * operation runs. So an open window costs the attacher no thread and no CPU,
 * any thread may detach what another attached, a debugger may attach during
 * the window, and an attacher that dies leaves no tracee behind.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>

#include "common/clock.h"
#include "common/envbuf.h"
#include "common/protocol.h"
#include "common/toollist.h"
#include "inject.h"
#include "log.h"
#include "procfs.h"
#include "ptrace_util.h"
#include "remote.h"
#include "symbols.h"

#define DEFAULT_TOOL "librocprofiler-sdk-tool.so.1"
/* A start or stop time further ahead than this is refused (our agent ignores one). */
#define AHEAD_MAX_NS (10 * RA_NS_PER_SEC)

extern char **environ;

static const char *const entry_names[] = {RA_ENTRY_ATTACH, RA_ENTRY_DETACH};
static const char *const entry_objects[] = {RA_ROCM_REGISTER_PREFIX, RA_AGENT_PREFIX, NULL};

/*
 * What our agent exports beyond the entry points (protocol.h); its marker
 * first; then what only newer agents have (optional, may be variables).
 */
enum { AGENT_MARKER, AGENT_TOOL_NS, AGENT_DETACH_AT, AGENT_LAST_ERROR, AGENT_FNS,
       AGENT_TOOL_EVENT_NS = AGENT_FNS, AGENT_SYMS };
static const char *const agent_names[AGENT_SYMS] = {RA_AGENT_MARKER, RA_AGENT_TOOL_NS,
						    RA_AGENT_DETACH_AT, RA_AGENT_LAST_ERROR,
						    RA_AGENT_TOOL_EVENT_NS};

/* Where a target's side and entry points are: looked up once per process and listener. */
struct entry {
	int side;		   /* enum rocattach_target_side */
	uint64_t fn_attach, fn_detach;
	uint64_t agent[AGENT_SYMS]; /* our agent's symbols, all 0 on ROCm's side */
	bool preloaded;		   /* ROCm's side: the tools were loaded ahead (see drive_attach) */
};

struct session {
	struct session *next;
	pid_t pid;
	uint64_t stack_lo, stack_hi; /* the listener's stack mapping, once known */
	bool busy;	     /* an attach or detach is running on it */
	bool attached;
	uint64_t starttime;  /* with pid, identifies the process */
	pid_t tid;	     /* listener thread */
	uint64_t tramp;	     /* AT_ENTRY */
	struct entry ep;
	pid_t *tree;	     /* recorded by attach_tree on its root */
	size_t tree_n;
	bool has_tree;
};

static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct session *sessions;
static __thread char last_error[ROCATTACH_MESSAGE_MAX];

/* One operation's error, timings and report. */
struct op {
	struct ra_err e;
	rocattach_report_t rep;
	uint64_t t_step;
};

static void op_init(struct op *op)
{
	memset(op, 0, sizeof(*op));
	op->rep.size = sizeof(op->rep);
	op->rep.agent_status = -1;
	op->rep.start_ns = ra_realtime_ns();
	op->t_step = ra_monotonic_ns();
}

/* Close the running step: its time goes to step_ns[step]. */
static void op_step(struct op *op, enum rocattach_step step)
{
	uint64_t now = ra_monotonic_ns();

	op->rep.step_ns[step] += now - op->t_step;
	op->t_step = now;
}

static rocattach_status_t op_finish(struct op *op, rocattach_report_t *out)
{
	op->rep.status = op->e.status;
	op->rep.end_ns = ra_realtime_ns();
	snprintf(op->rep.message, sizeof(op->rep.message), "%s", op->e.msg);
	if (op->e.status != ROCATTACH_STATUS_SUCCESS) {
		snprintf(last_error, sizeof(last_error), "%s", op->e.msg);
		ra_error("%s", op->e.msg);
	}
	if (out && out->size >= offsetof(rocattach_report_t, message))
		memcpy(out, &op->rep, out->size < sizeof(op->rep) ? out->size : sizeof(op->rep));
	return op->e.status;
}

/* ------------------------------------------------------------------------ */
/* Session table. */

static struct session *find_locked(pid_t pid)
{
	for (struct session *s = sessions; s; s = s->next)
		if (s->pid == pid)
			return s;
	return NULL;
}

/* A new busy session for pid, or NULL (e set) if pid already has one. */
static struct session *claim_new(pid_t pid, struct ra_err *e)
{
	struct session *s = NULL;

	pthread_mutex_lock(&sessions_lock);
	if (find_locked(pid)) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d already has an attach session: detach it first", pid);
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "out of memory");
		goto out;
	}
	s->pid = pid;
	s->busy = true;
	s->next = sessions;
	sessions = s;
out:
	pthread_mutex_unlock(&sessions_lock);
	return s;
}

/* The attached session of pid, marked busy, or NULL (e set). */
static struct session *claim_existing(pid_t pid, struct ra_err *e)
{
	struct session *s;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(pid);
	if (!s || !s->attached) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d has no attach session", pid);
		s = NULL;
	} else if (s->busy) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d: another attach or detach is in progress", pid);
		s = NULL;
	} else {
		s->busy = true;
	}
	pthread_mutex_unlock(&sessions_lock);
	return s;
}

/* End an operation on s: keep it (attached) or drop it. */
static void release(struct session *s, bool keep)
{
	struct session **pp;

	pthread_mutex_lock(&sessions_lock);
	s->busy = false;
	s->attached = keep;
	if (!keep) {
		for (pp = &sessions; *pp; pp = &(*pp)->next) {
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		}
	}
	pthread_mutex_unlock(&sessions_lock);
	if (!keep) {
		free(s->tree);
		free(s);
	}
}

/* ------------------------------------------------------------------------ */
/* Preparing an attach: everything slow and fallible before any ptrace. */

struct prepared {
	struct ra_toollist tools;
	const char *tool_path;
	char *payload;	    /* env buffer, then the tool path */
	size_t env_len, payload_len;
	char object[512];
};

/* One object, so that its use can be told from a list naming the same file. */
static const char default_tool[] = DEFAULT_TOOL;

static const char *tool_list_for(const rocattach_opts_t *o)
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
	return default_tool;
}

/*
 * Opening paths as the target sees them. An absolute path is resolved in the
 * target's root (RESOLVE_IN_ROOT keeps absolute symlinks inside a container
 * root; before Linux 5.6 they would resolve in ours), a relative one from its
 * working directory.
 */
static int open_in_target(int base, const char *path, int flags, bool in_root)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve = in_root ? RESOLVE_IN_ROOT : 0};
	int fd = (int)syscall(SYS_openat2, base, path, &how, sizeof(how));

	if (fd >= 0 || errno != ENOSYS)
		return fd;
	while (in_root && *path == '/')
		path++;
	return openat(base, *path ? path : ".", flags | O_CLOEXEC);
}

/* Who may own code we make a process run: root, its user, or us. */
struct trust {
	uid_t ruid, euid, self;
};

static const char *trust_problem(const struct stat *sb, const struct trust *tr, char *buf,
				 size_t len)
{
	bool dir = S_ISDIR(sb->st_mode);

	if ((sb->st_mode & (S_IWGRP | S_IWOTH)) && !(dir && (sb->st_mode & S_ISVTX))) {
		snprintf(buf, len, "is writable by %s (mode %04o), so others could replace it: "
			 "fix with chmod go-w", sb->st_mode & S_IWOTH ? "everyone" : "its group",
			 (unsigned int)(sb->st_mode & 07777));
		return buf;
	}
	if (sb->st_uid && sb->st_uid != tr->ruid && sb->st_uid != tr->euid &&
	    sb->st_uid != tr->self) {
		snprintf(buf, len, "is owned by uid %u, neither root, the target's user (uid %u) "
			 "nor us (uid %u): fix with chown, or copy the library to a directory "
			 "you own", (unsigned int)sb->st_uid, (unsigned int)tr->ruid,
			 (unsigned int)tr->self);
		return buf;
	}
	return NULL;
}

/* One directory of t's path, or t itself (name == t): 0, or -1 with e set. */
static int check_node(pid_t pid, int base, const char *t, const char *name, bool in_root,
		      const struct trust *tr, struct ra_err *e)
{
	const char *problem;
	char why[256];
	struct stat sb;
	int fd;

	fd = open_in_target(base, name, O_PATH, in_root);
	if (fd < 0)
		return 0; /* a missing path is check_file's to report */
	problem = fstat(fd, &sb) ? NULL : trust_problem(&sb, tr, why, sizeof(why));
	close(fd);
	if (!problem)
		return 0;
	ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
		   "refusing library %s for process %d: %s%s %s", t, pid,
		   name == t ? "the file" : "its directory ", name == t ? "" : name, problem);
	return -1;
}

/* The directories of t from the top down, then t itself: none may be open to hijack. */
static int check_chain(pid_t pid, int base, const char *t, bool in_root,
		       const struct trust *tr, struct ra_err *e)
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
	case EM_386: return "i386";
	case EM_X86_64: return "x86-64";
	case EM_AARCH64: return "aarch64";
	case EM_ARM: return "arm";
	case EM_PPC64: return "ppc64";
	case EM_RISCV: return "riscv";
	default: return "another machine";
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

	fd = open_in_target(base, t, O_RDONLY | O_NOCTTY | O_NONBLOCK, in_root);
	if (fd < 0 && errno == EACCES)
		fd = open_in_target(base, t, O_PATH, in_root);
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
static int check_one_tool(pid_t pid, const char *t, const struct trust *tr, struct ra_err *e)
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

		return ra_err_set(e, err == ENOENT || err == ESRCH
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

static int check_tools(pid_t pid, struct prepared *p, const struct trust *tr, struct ra_err *e)
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
static int check_access(pid_t pid, struct trust *tr, struct ra_err *e)
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
 * "ROCP_ATTACH_OWNER=<our pid>:<our starttime>": our agent watches that
 * process and detaches the tools itself if we die during the window. Only
 * meaningful where the target sees our pid and our starttime as we do: the
 * same pid namespace, and the same time namespace (starttime is shifted by
 * its boot-time offset). Elsewhere we send nothing: no watchdog.
 */
static int owner_entry(pid_t pid, char *buf, size_t len)
{
	struct self_ids me;

	self_ids(&me);
	if (!same_ns(pid, &me, 0) || !same_ns(pid, &me, 1)) {
		ra_debug("process %d is in another pid or time namespace: no %s watchdog", pid,
			 RA_ENV_OWNER);
		return -1;
	}
	if (!me.starttime_ok)
		return -1;
	snprintf(buf, len, "%s=%d:%llu", RA_ENV_OWNER, (int)me.pid,
		 (unsigned long long)me.starttime);
	return 0;
}

/* Ours to set, and only for our agent: a caller's private variable never crosses. */
static bool is_private_entry(const char *kv)
{
	return ra_env_is_private(kv, strlen(kv));
}

/*
 * The caller's ROCP* variables (not under secure execution: its environment
 * is not trusted then) and the explicit extras. Our agent also gets the
 * owner and the start time; ROCm's side keeps every variable it is sent in
 * the application's environment for good, so it gets only the caller's.
 * The encoder drops every name that does not start with ROCP.
 */
static int collect_env(pid_t pid, const rocattach_opts_t *o, int side, const char ***out,
		       size_t *n, char *owner, size_t owner_len, char *start, size_t start_len)
{
	size_t n_env = 0, n_extra = 0, k = 0;
	bool secure = getauxval(AT_SECURE);
	const char **all;

	while (!secure && environ && environ[n_env])
		n_env++;
	while (o->env && o->env[n_extra])
		n_extra++;
	all = calloc(n_env + n_extra + 3, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < n_env; i++)
		if (!strncmp(environ[i], "ROCP", 4) && !is_private_entry(environ[i]))
			all[k++] = environ[i];
	for (size_t i = 0; i < n_extra; i++)
		if (!is_private_entry(o->env[i]))
			all[k++] = o->env[i];
	if (side == ROCATTACH_SIDE_AGENT && !owner_entry(pid, owner, owner_len))
		all[k++] = owner;
	if (side == ROCATTACH_SIDE_AGENT && o->start_ns) {
		snprintf(start, start_len, "%s=%llu", RA_ENV_START_NS,
			 (unsigned long long)o->start_ns);
		all[k++] = start;
	}
	*out = all;
	*n = k;
	return 0;
}

static int build_payload(pid_t pid, const rocattach_opts_t *o, int side, struct prepared *p,
			 struct ra_err *e)
{
	char owner[96], start[64];
	const char **all;
	size_t k, plen;
	char *buf;
	int ret;

	ret = collect_env(pid, o, side, &all, &k, owner, sizeof(owner), start, sizeof(start));
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

static rocattach_status_t no_process(pid_t pid, int err, struct ra_err *e)
{
	if (err == -ESRCH || err == -ENOENT)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				  "process %d does not exist", pid);
	return ra_err_set(e, ROCATTACH_STATUS_ERROR, "reading /proc/%d: %s", pid, strerror(-err));
}

static int find_listener(pid_t pid, pid_t *tid, struct ra_err *e)
{
	int ret = ra_find_thread_by_comm(RA_PROCFS, pid, RA_LISTENER_COMM, tid);

	if (ret == -ENOENT)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d has no attach listener (no thread named '%s'): start "
				  "it with ROCP_TOOL_ATTACH=1 (and LD_PRELOAD=" RA_AGENT_PREFIX " "
				  "if it does not use ROCm), or attach with --inject",
				  pid, RA_LISTENER_COMM);
	if (ret)
		return no_process(pid, ret, e);
	return 0;
}

/*
 * Our agent is known by its marker, looked up in the object that exports
 * the entry points only (whatever its file name: it may be installed as
 * librocprofiler-register.so.0); anything else is ROCm's side.
 */
static void find_side(pid_t pid, const struct ra_maps *maps, const char *object,
		      struct entry *ep)
{
	const char *slash = strrchr(object, '/');
	const char *only[] = {slash ? slash + 1 : object, NULL};
	struct ra_err ignore = {0};

	if (ra_symbols_find_only(RA_PROCFS, pid, maps, agent_names, AGENT_SYMS, AGENT_FNS, only,
				 ep->agent, &ignore)) {
		memset(ep->agent, 0, sizeof(ep->agent));
		ep->side = ROCATTACH_SIDE_ROCM;
		return;
	}
	ep->side = ROCATTACH_SIDE_AGENT;
}

/*
 * CLOCK_REALTIME when the target's agent called the tools (which 0: attach,
 * 1: detach): read from its memory, or from an older agent by a call.
 */
static uint64_t tool_clock(struct ra_remote *r, const struct entry *ep, int which)
{
	uint64_t arg = (uint64_t)which, ns = 0;
	struct ra_err ignore = {0};

	if (ep->agent[AGENT_TOOL_EVENT_NS]) {
		if (ra_mem_read(r->pid, ep->agent[AGENT_TOOL_EVENT_NS] + 8 * (uint64_t)which, &ns,
				sizeof(ns), &ignore))
			ns = 0;
		return ns;
	}
	if (!ep->agent[AGENT_TOOL_NS] || ra_remote_call(r, ep->agent[AGENT_TOOL_NS], &arg, 1, &ns))
		ns = 0;
	return ns;
}

static int find_entry_points(pid_t pid, struct entry *ep, char *object, size_t objlen,
			     struct ra_err *e)
{
	struct ra_maps maps = {0};
	uint64_t addrs[2];
	int ret;

	ret = ra_maps_read(RA_PROCFS, pid, &maps);
	if (ret)
		return no_process(pid, ret, e);
	ret = ra_symbols_find(RA_PROCFS, pid, &maps, entry_names, 2, entry_objects, addrs,
			      object, objlen, e);
	if (!ret)
		find_side(pid, &maps, object, ep);
	ra_maps_free(&maps);
	if (ret == -ENOENT)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d has a '%s' thread but no loaded object exports %s "
				  "and %s",
				  pid, RA_LISTENER_COMM, entry_names[0], entry_names[1]);
	if (ret)
		return ret; /* e set by the lookup */
	ep->fn_attach = addrs[0];
	ep->fn_detach = addrs[1];
	return 0;
}

#define INJECT_LISTENER_WAIT_MS 2000

/* --inject: no listener yet, so load the agent, which starts one. */
static int inject_listener(struct session *s, const rocattach_opts_t *o, const struct trust *tr,
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

static int proc_threads(pid_t pid)
{
	char path[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/%d/task", RA_PROCFS, pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * A zombie has exited. A process whose main thread alone has exited shows
 * the same 'Z' but runs on; its maps and memory are gone from /proc/PID.
 */
static int check_alive(pid_t pid, const struct ra_stat *st, struct ra_err *e)
{
	if (st->state != 'Z' && st->state != 'X')
		return 0;
	if (st->state == 'Z' && proc_threads(pid) > 1)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
				  "process %d: its main thread has exited while other threads "
				  "run on: attaching such a process is not supported", pid);
	return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
			  "process %d is a zombie (exited, not yet reaped)", pid);
}

/*
 * What the lookup of a process found, kept for its next windows: reading
 * every mapped object's ELF is most of an attach's preparation. An entry is
 * used only for the same process (pid and start time) while the same
 * listener thread lives in it: an exec replaces the image and the
 * addresses, but it also ends every thread but the main one.
 */
struct lookup {
	pid_t pid, tid;
	uint64_t starttime, tramp;
	uint64_t stack_lo, stack_hi; /* the listener's stack mapping, once known */
	struct entry ep;
	char object[512];
};

#define LOOKUPS 256 /* direct-mapped by pid */
static struct lookup lookups[LOOKUPS];
static pthread_mutex_t lookups_lock = PTHREAD_MUTEX_INITIALIZER;

static bool listener_lives(pid_t pid, pid_t tid)
{
	char path[64], *comm = NULL;
	size_t len;
	bool ok;

	snprintf(path, sizeof(path), "%s/%d/task/%d/comm", RA_PROCFS, pid, tid);
	if (ra_read_file(path, &comm, &len))
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	ok = !strcmp(comm, RA_LISTENER_COMM);
	free(comm);
	return ok;
}

/* The kept lookup of pid started at starttime, if its listener still lives. */
static bool lookup_get(pid_t pid, uint64_t starttime, struct lookup *out)
{
	pthread_mutex_lock(&lookups_lock);
	*out = lookups[pid % LOOKUPS];
	pthread_mutex_unlock(&lookups_lock);
	return out->pid == pid && out->starttime == starttime && listener_lives(pid, out->tid);
}

static void lookup_put(const struct lookup *l)
{
	pthread_mutex_lock(&lookups_lock);
	lookups[l->pid % LOOKUPS] = *l;
	pthread_mutex_unlock(&lookups_lock);
}

/* What a remote operation on s's listener learnt of its stack, kept for the next. */
static void keep_stack(struct session *s, const struct ra_remote *r)
{
	struct lookup *l = &lookups[s->pid % LOOKUPS];

	s->stack_lo = r->stack_lo;
	s->stack_hi = r->stack_hi;
	pthread_mutex_lock(&lookups_lock);
	if (l->pid == s->pid && l->starttime == s->starttime && l->tid == s->tid) {
		l->stack_lo = r->stack_lo;
		l->stack_hi = r->stack_hi;
	}
	pthread_mutex_unlock(&lookups_lock);
}

static void lookup_mark_preloaded(pid_t pid, uint64_t starttime)
{
	struct lookup *l = &lookups[pid % LOOKUPS];

	pthread_mutex_lock(&lookups_lock);
	if (l->pid == pid && l->starttime == starttime)
		l->ep.preloaded = true;
	pthread_mutex_unlock(&lookups_lock);
}

/* Listener, side, entry points and trampoline address: kept, else looked up. */
static int lookup(pid_t pid, uint64_t starttime, struct lookup *l, struct ra_err *e)
{
	int ret;

	if (lookup_get(pid, starttime, l))
		return 0;
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->starttime = starttime;
	if (find_listener(pid, &l->tid, e) ||
	    find_entry_points(pid, &l->ep, l->object, sizeof(l->object), e))
		return -1;
	ret = ra_auxv_read(RA_PROCFS, pid, AT_ENTRY, &l->tramp);
	if (ret)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d: no AT_ENTRY in /proc/%d/auxv: %s", pid, pid,
				  strerror(-ret));
	lookup_put(l);
	return 0;
}

static int find_target(struct session *s, struct prepared *p, struct ra_err *e)
{
	struct lookup l;

	if (lookup(s->pid, s->starttime, &l, e))
		return -1;
	s->tid = l.tid;
	s->tramp = l.tramp;
	s->ep = l.ep;
	s->stack_lo = l.stack_lo;
	s->stack_hi = l.stack_hi;
	snprintf(p->object, sizeof(p->object), "%s", l.object);
	return 0;
}

/* A time ahead: 0 (none) or within AHEAD_MAX_NS from now. */
static int check_ahead(pid_t pid, const char *what, uint64_t at, struct ra_err *e)
{
	uint64_t now = ra_realtime_ns();

	if (at && at > now && at - now > AHEAD_MAX_NS)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				  "process %d: %s time is %.1f s ahead, more than %llu s: call "
				  "closer to it", pid, what, (double)(at - now) / 1e9,
				  AHEAD_MAX_NS / RA_NS_PER_SEC);
	return 0;
}

static int prepare(struct session *s, const rocattach_opts_t *o, struct prepared *p,
		   struct op *op)
{
	struct ra_err *e = &op->e;
	struct trust tr;
	struct ra_stat st;
	int ret;

	ret = ra_stat_read(RA_PROCFS, s->pid, &st);
	if (ret)
		return no_process(s->pid, ret, e);
	if (check_alive(s->pid, &st, e) || check_ahead(s->pid, "start", o->start_ns, e) ||
	    check_access(s->pid, &tr, e))
		return -1;
	s->starttime = st.starttime;
	p->tool_path = tool_list_for(o);
	ret = ra_toollist_parse(p->tool_path, &p->tools);
	if (ret)
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				  "tool library list '%s' is %s", p->tool_path,
				  ret == -E2BIG ? "too long" : "empty");
	if (check_tools(s->pid, p, &tr, e))
		return -1;
	if ((o->flags & ROCATTACH_F_INJECT) && inject_listener(s, o, &tr, op))
		return -1;
	if (find_target(s, p, e))
		return -1;
	return build_payload(s->pid, o, s->ep.side, p, e);
}

static void prepared_free(struct prepared *p)
{
	ra_toollist_free(&p->tools);
	free(p->payload);
}

/* ------------------------------------------------------------------------ */
/* Driving the target. */

static const char *register_error_name(int v)
{
	static const char *const names[] = {
		"SUCCESS", "NO_TOOLS", "DEADLOCK", "BAD_API_TABLE_LENGTH", "UNSUPPORTED_API",
		"INVALID_API_ADDRESS", "ROCPROFILER_ERROR", "EXCESS_API_INSTANCES",
		"INVALID_ARGUMENT", "ATTACHMENT_NOT_AVAILABLE"};

	if (v < 0 || v >= (int)(sizeof(names) / sizeof(names[0])))
		return "unknown error";
	return names[v];
}

/* Our agent explains its failures; ask it (ROCm's rocprofiler-register has no such call). */
static void agent_message(struct ra_remote *r, const struct entry *ep, char *buf, size_t len)
{
	struct ra_err ignore = {0};
	uint64_t str;

	buf[0] = '\0';
	if (ep->agent[AGENT_LAST_ERROR] &&
	    !ra_remote_call(r, ep->agent[AGENT_LAST_ERROR], NULL, 0, &str) && str &&
	    !ra_mem_read(r->pid, str, buf, len - 1, &ignore))
		buf[len - 1] = '\0';
	else
		buf[0] = '\0';
}

/*
 * Our agent answers EXCESS_API_INSTANCES only when another live attacher
 * holds the window; its message names that one. Taken, as a second tracer
 * of ROCm's attacher would be: PTRACE_OPERATION_NOT_PERMITTED. The target
 * is named by our pid for it (the agent's getpid() differs in a container).
 */
static void agent_failed(struct ra_remote *r, const struct entry *ep, const char *fn, int v,
			 struct ra_err *e)
{
	const char *held;
	char why[256];

	agent_message(r, ep, why, sizeof(why));
	held = strstr(why, " is attached by ");
	if (v == ROCATTACH_REGISTER_EXCESS_API_INSTANCES && held) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED, "process %d%s",
			   r->pid, held);
		return;
	}
	ra_err_set(e, ROCATTACH_STATUS_ERROR, "%s in process %d returned %d (%s)%s%s", fn, r->pid,
		   v, register_error_name(v), why[0] ? ": " : "", why);
}

/*
 * The entry point's call, timed for the report. ROCm's side calls the
 * tools inside it and knows no start or stop time, so on that side the call
 * itself begins at the time (everything else is done by now, the listener
 * is stopped in our hands: the thread sleeps in the target until the time
 * and makes the call itself), and the report's tool time is its bound: the
 * call's end (the tools ran inside the call).
 */
static int call_entry(struct ra_remote *r, const struct entry *ep, uint64_t fn, uint64_t at,
		      const uint64_t *args, int n, struct op *op, int which)
{
	uint64_t ret;
	int err;

	/*
	 * Only ROCm's call edges are reported as times, and that call is short
	 * (begun at the time). Our agent's call waits in the target for the
	 * time: watching it closely would burn the CPUs the hand-over needs.
	 */
	r->tight = ep->side == ROCATTACH_SIDE_ROCM;
	if (ep->side == ROCATTACH_SIDE_ROCM && at)
		err = ra_remote_call_at(r, fn, args, n, at, &ret);
	else
		err = ra_remote_call(r, fn, args, n, &ret);
	if (err)
		return -1;
	op->rep.call_start_ns = r->call_start_ns;
	op->rep.call_end_ns = r->call_end_ns;
	op->rep.agent_status = (int)(int32_t)ret;
	if (op->rep.agent_status) {
		agent_failed(r, ep, entry_names[which], op->rep.agent_status, &op->e);
		return 0;
	}
	if (ep->side == ROCATTACH_SIDE_AGENT) {
		op->rep.tool_ns = tool_clock(r, ep, which);
	} else {
		op->rep.tool_ns = r->call_end_ns;
		op->rep.tool_ns_bound = 1;
	}
	return 0;
}

/*
 * The payload goes onto the listener's own stack when it fits: nothing to
 * unmap, and nothing left behind if we die during the call. Else into a
 * temporary mapping (*mapped), which such a death would leak.
 */
static int place_payload(struct prepared *p, struct ra_remote *r, struct op *op, uint64_t *addr,
			 bool *mapped)
{
	*mapped = false;
	if (!ra_remote_stack_push(r, p->payload, p->payload_len, addr)) {
		op_step(op, ROCATTACH_STEP_WRITE);
		return 0;
	}
	if (ra_remote_mmap(r, p->payload_len, addr))
		return -1;
	*mapped = true;
	op_step(op, ROCATTACH_STEP_MMAP);
	if (ra_mem_write(r->pid, *addr, p->payload, p->payload_len, &op->e))
		return -1;
	op_step(op, ROCATTACH_STEP_WRITE);
	return 0;
}

/*
 * ROCm's side loads the tools inside the attach call, at the start time:
 * a first window would open late and spread by each target's load time.
 * So with a start time, the tools are loaded ahead on the listener we
 * hold; ROCm's own dlopen at the start time then finds them loaded.
 */
static int preload_tools(struct session *s, const rocattach_opts_t *o, struct prepared *p,
			 struct ra_remote *r)
{
	if (s->ep.side != ROCATTACH_SIDE_ROCM || !o->start_ns || s->ep.preloaded)
		return 0;
	if (ra_preload(r, p->tools.v, p->tools.n))
		return -1;
	s->ep.preloaded = true;
	lookup_mark_preloaded(s->pid, s->starttime);
	return 0;
}

/*
 * Nobody named a tool and the default one (ROCm's rocprofiler-sdk tool, absent
 * off ROCm) could not attach: say once which tool was tried, why, and to name
 * one. The agent's reason reads "no tool can attach: <lib>: <why>".
 */
static void default_tool_failed(pid_t pid, struct op *op)
{
	const char *why = strstr(op->e.msg, DEFAULT_TOOL ": ");
	char cause[ROCATTACH_MESSAGE_MAX];

	snprintf(cause, sizeof(cause), "%s", why ? why + strlen(DEFAULT_TOOL ": ") : "");
	ra_err_reset(&op->e, op->e.status,
		     "process %d: the default tool %s (ROCm's rocprofiler-sdk; no tool list was "
		     "given) cannot attach%s%s (rocprofiler_register_attach returned %d): give "
		     "the tool with -t /path/to/libtool.so (or ROCPROF_ATTACH_TOOL_LIBRARY)",
		     pid, DEFAULT_TOOL, cause[0] ? ": " : "", cause, op->rep.agent_status);
}

/* Call the attach entry point with the payload in the target. */
static void drive_attach(struct session *s, const rocattach_opts_t *o, struct prepared *p,
			 struct ra_remote *r, struct op *op)
{
	uint64_t addr = 0, args[2];
	bool mapped;

	if (place_payload(p, r, op, &addr, &mapped))
		goto unmap;
	args[0] = addr;
	args[1] = addr + p->env_len;
	if (preload_tools(s, o, p, r))
		return;
	if (call_entry(r, &s->ep, s->ep.fn_attach, o->start_ns, args, 2, op, 0))
		return; /* the thread may be anywhere: leave the mapping */
	if (p->tool_path == default_tool &&
	    op->rep.agent_status == ROCATTACH_REGISTER_ROCPROFILER_ERROR)
		default_tool_failed(s->pid, op);
	op_step(op, ROCATTACH_STEP_CALL);
unmap:
	/* A failed munmap is in op->e: the attach fails with it. */
	if (mapped && !ra_remote_munmap(r, addr, p->payload_len))
		op_step(op, ROCATTACH_STEP_MUNMAP);
}

/* 0 once attached, else -1 with op->e set. */
static int do_attach(struct session *s, const rocattach_opts_t *o, struct op *op)
{
	struct prepared p = {0};
	struct ra_remote r;
	int ret = -1;

	if (prepare(s, o, &p, op))
		goto out;
	op->rep.tid = s->tid;
	op->rep.target_side = s->ep.side;
	op_step(op, ROCATTACH_STEP_PREPARE);
	ra_debug("attach %d: listener %d, entry points in %s (%s), tools %s", s->pid, s->tid,
		 p.object, s->ep.side == ROCATTACH_SIDE_AGENT ? "our agent" : "ROCm's side",
		 p.tool_path);
	if (ra_remote_begin(&r, s->pid, s->tid, s->tramp, &op->e))
		goto out;
	r.stack_lo = s->stack_lo;
	r.stack_hi = s->stack_hi;
	op_step(op, ROCATTACH_STEP_SEIZE);
	drive_attach(s, o, &p, &r, op);
	keep_stack(s, &r);
	ret = ra_remote_end(&r);
	op_step(op, ROCATTACH_STEP_RELEASE);
out:
	prepared_free(&p);
	return ret || op->e.status != ROCATTACH_STATUS_SUCCESS ? -1 : 0;
}

/*
 * The caller's options as this library knows them, libbpf's way: a smaller
 * (older) struct is read as far as its size goes, the rest is zero; a
 * larger (newer) one only if every byte beyond ours is zero, so that an
 * option this library does not know is refused, never silently ignored.
 */
static int copy_opts(rocattach_opts_t *dst, const rocattach_opts_t *src, struct ra_err *e)
{
	const unsigned char *beyond;

	memset(dst, 0, sizeof(*dst));
	dst->size = sizeof(*dst);
	if (!src)
		return 0;
	beyond = (const unsigned char *)src + sizeof(*dst);
	for (size_t i = 0; src->size > sizeof(*dst) && i < src->size - sizeof(*dst); i++)
		if (beyond[i])
			return ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
					  "rocattach_opts_t of %zu bytes, this library's has %zu: byte "
					  "%zu is set, an option this library does not know (built "
					  "against a newer rocattach.h?)",
					  src->size, sizeof(*dst), sizeof(*dst) + i);
	memcpy(dst, src, src->size < sizeof(*dst) ? src->size : sizeof(*dst));
	dst->size = sizeof(*dst);
	return 0;
}

static rocattach_status_t attach_one(int pid, const rocattach_opts_t *opts,
				     rocattach_report_t *report)
{
	rocattach_opts_t o;
	struct session *s;
	struct op op;

	op_init(&op);
	last_error[0] = '\0';
	if (copy_opts(&o, opts, &op.e))
		return op_finish(&op, report);
	if (pid <= 0 || pid == getpid()) {
		ra_err_set(&op.e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   pid <= 0 ? "invalid pid %d" : "process %d is the caller itself", pid);
		return op_finish(&op, report);
	}
	s = claim_new(pid, &op.e);
	if (s) {
		release(s, do_attach(s, &o, &op) == 0);
	}
	return op_finish(&op, report);
}

/* ------------------------------------------------------------------------ */
/* Detach. */

/* Is s still the same process with the same listener thread? */
static int still_there(struct session *s, struct ra_err *e)
{
	struct ra_stat st;

	if (ra_stat_read(RA_PROCFS, s->pid, &st) || st.starttime != s->starttime ||
	    st.state == 'Z' || st.state == 'X')
		return ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
				  "process %d exited during the window", s->pid);
	/* The listener dies with an exec; a new image means new addresses. */
	if (!listener_lives(s->pid, s->tid))
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d lost its attach listener thread %d during the "
				  "window (exec?)",
				  s->pid, s->tid);
	return 0;
}

/*
 * With a stop time, our agent gets it with the call (detach_at) and hands
 * over at it; ROCm's side gets the plain call, begun at the stop time.
 */
static void drive_detach(struct session *s, uint64_t stop_ns, struct ra_remote *r, struct op *op)
{
	uint64_t fn = s->ep.fn_detach;

	if (stop_ns && s->ep.side == ROCATTACH_SIDE_AGENT) {
		call_entry(r, &s->ep, s->ep.agent[AGENT_DETACH_AT], 0, &stop_ns, 1, op, 1);
		return;
	}
	call_entry(r, &s->ep, fn, stop_ns, NULL, 0, op, 1);
}

/*
 * 0, or -errno with op->e set. -EPERM only when the listener could not be
 * seized (a debugger holds it, say): nothing was done, the caller may retry.
 */
static int do_detach(struct session *s, const rocattach_opts_t *o, struct op *op)
{
	struct ra_remote r;
	int err;

	op->rep.tid = s->tid;
	op->rep.target_side = s->ep.side;
	if (still_there(s, &op->e))
		return -ESRCH;
	op_step(op, ROCATTACH_STEP_PREPARE);
	err = ra_remote_begin(&r, s->pid, s->tid, s->tramp, &op->e);
	op_step(op, ROCATTACH_STEP_SEIZE);
	if (err)
		return err;
	drive_detach(s, o->stop_ns, &r, op);
	op_step(op, ROCATTACH_STEP_CALL);
	err = ra_remote_end(&r) ? -EIO : 0;
	op_step(op, ROCATTACH_STEP_RELEASE);
	return err;
}

static rocattach_status_t detach_one(int pid, const rocattach_opts_t *opts,
				     rocattach_report_t *report)
{
	rocattach_opts_t o;
	struct session *s;
	struct op op;

	op_init(&op);
	last_error[0] = '\0';
	if (copy_opts(&o, opts, &op.e))
		return op_finish(&op, report);
	if (pid <= 0) {
		ra_err_set(&op.e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT, "invalid pid %d", pid);
		return op_finish(&op, report);
	}
	if (check_ahead(pid, "stop", o.stop_ns, &op.e))
		return op_finish(&op, report);
	s = claim_existing(pid, &op.e);
	if (s)
		release(s, do_detach(s, &o, &op) == -EPERM);
	return op_finish(&op, report);
}

/* ------------------------------------------------------------------------ */
/* Public API. */

rocattach_status_t rocattach_attach_ex(int pid, const rocattach_opts_t *opts,
				       rocattach_report_t *report)
{
	return attach_one(pid, opts, report);
}

rocattach_status_t rocattach_detach_ex(int pid, const rocattach_opts_t *opts,
				       rocattach_report_t *report)
{
	return detach_one(pid, opts, report);
}

int rocattach_target_side(int pid)
{
	struct ra_err ignore = {0};
	struct ra_stat st;
	struct lookup l;

	if (pid <= 0 || ra_stat_read(RA_PROCFS, pid, &st) || check_alive(pid, &st, &ignore) ||
	    lookup(pid, st.starttime, &l, &ignore))
		return ROCATTACH_SIDE_UNKNOWN;
	return l.ep.side;
}

rocattach_status_t rocattach_attach(int pid)
{
	return attach_one(pid, NULL, NULL);
}

static void record_tree(pid_t root, pid_t *pids, size_t n)
{
	struct session *s;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(root);
	if (s && s->attached) {
		free(s->tree);
		s->tree = pids;
		s->tree_n = n;
		s->has_tree = true;
		pids = NULL;
	}
	pthread_mutex_unlock(&sessions_lock);
	free(pids);
}

/*
 * A descendant without a listener (a child forked without exec) is skipped,
 * unless the caller injects: then it gets the agent like the root.
 */
static bool tree_skips(pid_t root, pid_t pid, const rocattach_opts_t *o)
{
	pid_t tid;

	if (o->flags & ROCATTACH_F_INJECT)
		return false;
	if (ra_find_thread_by_comm(RA_PROCFS, pid, RA_LISTENER_COMM, &tid) != -ENOENT)
		return false;
	ra_warn("attach tree %d: skipping process %d: no attach listener "
		"(a child forked without exec?)",
		root, pid);
	return true;
}

rocattach_status_t rocattach_attach_tree_ex(int pid, const rocattach_opts_t *opts,
					    rocattach_report_t *report)
{
	rocattach_status_t st, last = ROCATTACH_STATUS_SUCCESS;
	pid_t *pids = NULL;
	size_t n = 0, done = 0;
	rocattach_opts_t o;
	struct op op;
	int ret;

	op_init(&op);
	if (copy_opts(&o, opts, &op.e))
		return op_finish(&op, report);
	if (pid <= 0)
		return attach_one(pid, &o, report);
	ret = ra_tree(RA_PROCFS, pid, &pids, &n);
	if (ret) {
		no_process(pid, ret, &op.e);
		return op_finish(&op, report);
	}
	st = attach_one(pid, &o, report);
	if (st != ROCATTACH_STATUS_SUCCESS)
		goto out;
	pids[done++] = pid;
	for (size_t i = 1; i < n; i++) {
		if (tree_skips(pid, pids[i], &o))
			continue;
		st = attach_one(pids[i], &o, NULL);
		if (st == ROCATTACH_STATUS_SUCCESS)
			pids[done++] = pids[i];
		else
			last = st;
	}
	record_tree(pid, pids, done);
	return last;
out:
	free(pids);
	return st;
}

rocattach_status_t rocattach_attach_tree(int pid)
{
	return rocattach_attach_tree_ex(pid, NULL, NULL);
}

rocattach_status_t rocattach_detach_tree(int pid)
{
	rocattach_status_t st, last = ROCATTACH_STATUS_SUCCESS;
	struct session *s;
	pid_t *pids = NULL;
	size_t n = 0;
	struct op op;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(pid);
	if (s && s->has_tree) {
		pids = s->tree;
		n = s->tree_n;
		s->tree = NULL;
		s->tree_n = 0;
		s->has_tree = false;
	}
	pthread_mutex_unlock(&sessions_lock);
	if (!pids) {
		op_init(&op);
		ra_err_set(&op.e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "process %d has no tree attach session", pid);
		return op_finish(&op, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		st = detach_one(pids[i], NULL, NULL);
		if (st != ROCATTACH_STATUS_SUCCESS)
			last = st;
	}
	free(pids);
	return last;
}

rocattach_status_t rocattach_detach(int pid)
{
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;

	if (pid != 0)
		return detach_one(pid, NULL, NULL);
	pthread_mutex_lock(&sessions_lock);
	for (struct session *s = sessions; s; s = s->next)
		cap++;
	pids = calloc(cap ? cap : 1, sizeof(*pids));
	for (struct session *s = sessions; s && pids; s = s->next)
		if (s->attached && !s->busy)
			pids[n++] = s->pid;
	pthread_mutex_unlock(&sessions_lock);
	for (size_t i = 0; i < n; i++)
		detach_one(pids[i], NULL, NULL);
	free(pids);
	return ROCATTACH_STATUS_SUCCESS;
}

int rocattach_is_attached(int pid)
{
	struct session *s;
	int ret;

	pthread_mutex_lock(&sessions_lock);
	s = find_locked(pid);
	ret = s && s->attached;
	pthread_mutex_unlock(&sessions_lock);
	return ret;
}

const char *rocattach_last_error(void)
{
	return last_error;
}

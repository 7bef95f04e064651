/* SPDX-License-Identifier: MIT */
/*
 * --inject: a process started without ROCP_TOOL_ATTACH=1 has no listener.
 * We borrow one of its threads for as short a time as possible: it only
 * creates a loader thread (pthread_create, traced from birth with
 * PTRACE_O_TRACECLONE) and is released at once. The loader, taken over
 * before its first instruction (every signal blocked, as glibc starts a
 * thread), detaches itself, dlopens the agent and calls
 * rocattach_agent_enable(), which starts the listener; released, it goes on
 * into its start routine, free(NULL), and exits. From then on the normal
 * protocol runs on the listener only. A glibc older than 2.34 (no
 * pthread_create in libc) gets the old way: the borrowed thread does it all.
 *
 * The borrowed thread is preferably one sleeping in a syscall: it is then not
 * inside malloc or the dynamic linker, whose locks pthread_create and dlopen
 * need. Its syscall is restarted transparently when it is released (see
 * lib/arch/arch.h).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/protocol.h"
#include "inject.h"
#include "log.h"
#include "common/procfs.h"
#include "ptrace_calls.h"
#include "target_memory.h"
#include "remote.h"
#include "symbols.h"

#define RTLD_NOW_ 0x2
#define RTLD_DLOPEN_ 0x80000000 /* glibc's __RTLD_DLOPEN, for __libc_dlopen_mode */

static int exists_file(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/*
 * The file this code is in, resolved: librocattach.so.0 when it is the shared
 * library, the program when a copy is linked in statically (rocattach-mpi).
 * Never argv[0]: dladdr gives the main program's name as it was typed, a bare
 * "rocattach-mpi" when it was found through PATH.
 */
static int own_file(char *out)
{
	struct link_map *lm = NULL;
	Dl_info info;
	ssize_t n;

	if (!dladdr1((void *)own_file, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return -1;
	if (lm->l_name && lm->l_name[0])
		return realpath(lm->l_name, out) ? 0 : -1;
	n = readlink("/proc/self/exe", out, PATH_MAX - 1);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return 0;
}

/*
 * One of our libraries to load into a target: explicit, else $env, else
 * beside the library (from a program's bin/: the installed or build lib dir).
 * 0 and path, or -ENOENT; *where: the directory looked in.
 */
int ra_own_lib_path(const char *explicit_path, const char *env_name, const char *soname, char *path,
		    size_t len, char *where, size_t wlen)
{
	static const char *const rel[] = {"", RA_BIN_TO_LIB, "../lib/", "../lib64/"};
	const char *env = getenv(env_name);
	char dir[PATH_MAX], *slash = NULL;

	snprintf(where, wlen, "librocattach");
	if (explicit_path || (env && *env)) {
		snprintf(path, len, "%s", explicit_path ? explicit_path : env);
		return 0;
	}
	if (!own_file(dir) && (slash = strrchr(dir, '/'))) {
		slash[1] = '\0';
		snprintf(where, wlen, "%s", dir);
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(path, len, "%s%s%s", dir, rel[i], soname);
			if (exists_file(path))
				return 0;
		}
	}
	return -ENOENT;
}

int ra_inject_agent_path(const char *explicit_path, char *path, size_t len, struct ra_err *e)
{
	char where[PATH_MAX];

	if (!ra_own_lib_path(explicit_path, "ROCATTACH_AGENT", RA_AGENT_SONAME, path, len, where,
			     sizeof(where)))
		return 0;
	ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
		   "cannot find %s for --inject beside %s: set ROCATTACH_AGENT=/path/to/%s",
		   RA_AGENT_SONAME, where, RA_AGENT_SONAME);
	return -ENOENT;
}

/* A thread of pid sleeping in a syscall, else the main thread. */
static pid_t borrow_thread(pid_t pid)
{
	char task[64];
	struct dirent *d;
	struct ra_stat st;
	pid_t tid = pid;
	DIR *dir;

	snprintf(task, sizeof(task), "%s/%d/task", RA_PROCFS, pid);
	dir = opendir(task);
	if (!dir)
		return pid;
	while ((d = readdir(dir))) {
		pid_t t = (pid_t)atoi(d->d_name);

		if (t > 0 && !ra_stat_read(task, t, &st) && st.state == 'S') {
			tid = t;
			break;
		}
	}
	closedir(dir);
	return tid;
}

struct libc_fns {
	uint64_t dlopen, dlerror;
	uint64_t pthread_create, pthread_detach, pthread_self, free;
	bool libc_mode; /* __libc_dlopen_mode (glibc < 2.34) */
	bool loader;	/* pthread_* in libc (glibc >= 2.34): a loader thread */
};

static int find_dlopen(pid_t pid, struct libc_fns *f, struct ra_err *e)
{
	static const char *const prefer[] = {"libc.so.6", NULL};
	static const char *const threads[] = {"dlopen",		"dlerror",	"pthread_create",
					      "pthread_detach", "pthread_self", "free"};
	static const char *const modern[] = {"dlopen", "dlerror"};
	static const char *const old[] = {"__libc_dlopen_mode"};
	struct ra_maps maps = {0};
	uint64_t a[6];
	int ret;

	memset(f, 0, sizeof(*f));
	ret = ra_maps_read(RA_PROCFS, pid, &maps);
	if (ret) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
			   "process %d does not exist", pid);
		return ret;
	}
	ret = ra_symbols_find(RA_PROCFS, pid, &maps, threads, 6, prefer, a, NULL, 0, e);
	if (!ret) {
		f->pthread_create = a[2];
		f->pthread_detach = a[3];
		f->pthread_self = a[4];
		f->free = a[5];
		f->loader = true;
	} else if (ret == -ENOENT) {
		ret = ra_symbols_find(RA_PROCFS, pid, &maps, modern, 2, prefer, a, NULL, 0, e);
	}
	if (!ret) {
		f->dlopen = a[0];
		f->dlerror = a[1];
	} else if (ret == -ENOENT) {
		ret = ra_symbols_find(RA_PROCFS, pid, &maps, old, 1, prefer, a, NULL, 0, e);
		f->dlopen = a[0];
		f->libc_mode = true;
	}
	ra_maps_free(&maps);
	if (ret == -ENOENT)
		ra_err_set(e, ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
			   "process %d has no glibc dlopen (statically linked or not glibc): "
			   "--inject cannot load the agent; start it with ROCP_TOOL_ATTACH=1 and "
			   "LD_PRELOAD=%s instead",
			   pid, RA_AGENT_SONAME);
	return ret;
}

static int find_entry(pid_t pid, const struct ra_inject_call *c, uint64_t *fn, struct ra_err *e)
{
	const char *const name[] = {c->fn};
	const char *const prefer[] = {c->object, NULL};
	struct ra_maps maps = {0};
	int ret;

	ret = ra_maps_read(RA_PROCFS, pid, &maps);
	if (ret) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "process %d: reading its maps: %s", pid,
			   strerror(-ret));
		return ret;
	}
	ret = ra_symbols_find(RA_PROCFS, pid, &maps, name, 1, prefer, fn, NULL, 0, e);
	ra_maps_free(&maps);
	/* Another error than "not found" is in e already. */
	if (ret == -ENOENT)
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "process %d: the loaded %s exports no %s",
			   pid, c->lib, c->fn);
	return ret;
}

/*
 * fn(arg, arglen) on the thread r holds, arg copied onto its stack (or
 * fn() when there is none); *ret its int result.
 */
static int call_entry(struct ra_remote *r, const struct ra_inject_call *c, uint64_t fn,
		      uint64_t *ret, struct ra_err *e)
{
	uint64_t a[2] = {0, c->arglen};

	if (c->arg && ra_remote_stack_push(r, c->arg, c->arglen, &a[0]))
		return ra_err_set(e, ROCATTACH_STATUS_ERROR,
				  "process %d: no room on the stack for %s's %zu bytes", r->pid,
				  c->fn, c->arglen);
	return ra_remote_call(r, fn, a, c->arg ? 2 : 0, ret);
}

/* Copy dlerror()'s text out of the target for the message. */
static void remote_dlerror(struct ra_remote *r, uint64_t fn, char *buf, size_t len)
{
	struct ra_err ignore = {0};
	uint64_t str = 0;

	buf[0] = '\0';
	if (fn && !ra_remote_call(r, fn, NULL, 0, &str) && str &&
	    !ra_mem_read(r->pid, str, buf, len - 1, &ignore))
		buf[len - 1] = '\0';
	else
		buf[0] = '\0';
}

static int remote_dlopen(struct ra_remote *r, const struct libc_fns *f, const char *agent,
			 struct ra_err *e)
{
	size_t len = strlen(agent) + 1;
	uint64_t a[2], buf, handle = 0;
	char why[256];
	int ret;

	ret = ra_remote_mmap(r, len, &buf);
	if (ret)
		return ret;
	a[0] = buf;
	a[1] = f->libc_mode ? RTLD_NOW_ | RTLD_DLOPEN_ : RTLD_NOW_;
	ret = ra_mem_write(r->pid, buf, agent, len, e);
	if (!ret && ra_remote_call(r, f->dlopen, a, 2, &handle))
		return -1; /* the thread may be anywhere: leave the mapping */
	if (!ret && !handle) {
		remote_dlerror(r, f->dlerror, why, sizeof(why));
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "dlopen(%s) in process %d failed%s%s", agent,
			   r->pid, why[0] ? ": " : "", why);
		ret = -ENOEXEC;
	}
	if (ra_remote_munmap(r, buf, len) && !ret)
		ret = -EIO;
	return ret;
}

static int entry_failed(pid_t pid, const struct ra_inject_call *c, uint64_t ret, struct ra_err *e)
{
	ra_err_set(e, ROCATTACH_STATUS_ERROR, "%s in process %d failed: %s", c->fn, pid,
		   strerror((int)-(int32_t)ret));
	return -1;
}

/* Before glibc 2.34: the borrowed thread loads the agent and starts the listener. */
static int inject_borrowed(pid_t pid, pid_t tid, uint64_t tramp, const struct libc_fns *f,
			   const struct ra_inject_call *c, uint64_t *pause_ns, struct ra_err *e)
{
	uint64_t enable, ret = 0, t0 = ra_monotonic_ns();
	struct ra_remote r;
	int err;

	if (ra_remote_begin(&r, pid, tid, tramp, e))
		return -1;
	err = remote_dlopen(&r, f, c->lib, e);
	if (!err)
		err = find_entry(pid, c, &enable, e);
	if (!err)
		err = call_entry(&r, c, enable, &ret, e);
	if (!err && (int32_t)ret != 0)
		err = entry_failed(pid, c, ret, e);
	if (ra_remote_end(&r))
		err = -1;
	*pause_ns = ra_monotonic_ns() - t0;
	return err ? -1 : 0;
}

/*
 * The borrowed thread's whole part: pthread_create(&t, NULL, free, NULL),
 * the new thread traced from birth. *loader receives it, with the
 * trampoline, once the borrowed thread is released.
 */
static int start_loader(pid_t pid, pid_t tid, uint64_t tramp, const struct libc_fns *f,
			struct ra_remote *loader, uint64_t *pause_ns, struct ra_err *e)
{
	uint64_t a[4] = {0, 0, 0, 0}, ret = 0, t0 = ra_monotonic_ns();
	struct ra_remote r;
	int err;

	memset(loader, 0, sizeof(*loader));
	if (ra_remote_begin_opts(&r, pid, tid, tramp, PTRACE_O_TRACECLONE, e))
		return -1;
	/* Its mask lets the park's signal through: watched, closely (a short call). */
	r.tight = true;
	a[0] = r.scratch;
	a[2] = f->free;
	err = ra_remote_call(&r, f->pthread_create, a, 4, &ret);
	if (!err && (int32_t)ret != 0)
		err = ra_err_set(e, ROCATTACH_STATUS_ERROR,
				 "pthread_create in process %d (thread %d) failed: %s", pid, tid,
				 strerror((int)(int32_t)ret));
	if (!err && !r.clone_tid)
		err = ra_err_set(e, ROCATTACH_STATUS_ERROR,
				 "process %d: the loader thread was not reported", pid);
	/* A new thread, even if something failed, is released to run free(NULL) and exit. */
	ra_remote_adopt(loader, &r);
	if (ra_remote_end(&r))
		err = -1;
	*pause_ns = ra_monotonic_ns() - t0;
	return err ? -1 : 0;
}

/*
 * dlopen(lib) on the thread r holds, the path on its stack (else in a
 * temporary mapping). 0; -ENOEXEC when dlopen returned NULL (e says why,
 * the thread is fine); else the thread could not be driven.
 */
static int dlopen_on(struct ra_remote *r, const struct libc_fns *f, const char *lib,
		     struct ra_err *e)
{
	uint64_t a[2], handle = 0;
	char why[256];
	int err;

	if (ra_remote_stack_push(r, lib, strlen(lib) + 1, &a[0]))
		return remote_dlopen(r, f, lib, e); /* no room: in a temporary mapping */
	a[1] = f->libc_mode ? RTLD_NOW_ | RTLD_DLOPEN_ : RTLD_NOW_;
	err = ra_remote_call(r, f->dlopen, a, 2, &handle);
	if (!err && !handle) {
		remote_dlerror(r, f->dlerror, why, sizeof(why));
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "dlopen(%s) in process %d failed%s%s", lib,
			   r->pid, why[0] ? ": " : "", why);
		return -ENOEXEC;
	}
	return err;
}

/*
 * On the loader, stopped before its first instruction: detach it (it exits
 * on its own once released), dlopen the agent, start the listener.
 */
static int loader_work(struct ra_remote *n, const struct libc_fns *f,
		       const struct ra_inject_call *c, struct ra_err *e)
{
	uint64_t self = 0, enable, ret = 0;
	int err;

	err = ra_remote_call(n, f->pthread_self, NULL, 0, &self);
	if (!err)
		err = ra_remote_call(n, f->pthread_detach, &self, 1, &ret);
	if (err)
		return err;
	err = dlopen_on(n, f, c->lib, e);
	if (!err)
		err = find_entry(n->pid, c, &enable, e);
	if (!err)
		err = call_entry(n, c, enable, &ret, e);
	if (!err && (int32_t)ret != 0)
		return entry_failed(n->pid, c, ret, e);
	return err;
}

#define LISTENER_WAIT_MS 500

/* Does pid have a thread named rocp-bg-attach, now or within ms? */
static bool listener_up(pid_t pid, int ms)
{
	const struct timespec nap = {0, 5000000};
	pid_t tid;

	for (int waited = 0;; waited += 5) {
		if (!ra_find_thread_by_comm(RA_PROCFS, pid, RA_LISTENER_COMM, &tid))
			return true;
		if (waited >= ms)
			return false;
		nanosleep(&nap, NULL);
	}
}

/* The loader's part of ra_inject_call; *tid: the borrowed thread. */
static int inject_run(pid_t pid, const struct ra_inject_call *c, const struct libc_fns *f,
		      uint64_t tramp, pid_t tid, uint64_t *pause_ns, struct ra_err *e)
{
	struct ra_remote loader;
	int err;

	if (!f->loader || f->libc_mode)
		return inject_borrowed(pid, tid, tramp, f, c, pause_ns, e);
	err = start_loader(pid, tid, tramp, f, &loader, pause_ns, e);
	if (!loader.seized)
		return -1;
	if (ra_remote_adopted(&loader))
		return -1;
	if (!err)
		err = loader_work(&loader, f, c, e);
	if (ra_remote_end(&loader) || err)
		return -1;
	return 0;
}

static int inject_prepare(pid_t pid, struct libc_fns *f, uint64_t *tramp, struct ra_err *e)
{
	if (find_dlopen(pid, f, e))
		return -1;
	if (ra_auxv_read(RA_PROCFS, pid, AT_ENTRY, tramp))
		return ra_err_set(e, ROCATTACH_STATUS_ERROR, "process %d: no AT_ENTRY in its auxv",
				  pid);
	return 0;
}

int ra_inject_call(pid_t pid, const struct ra_inject_call *c, uint64_t *pause_ns, struct ra_err *e)
{
	struct libc_fns f;
	uint64_t tramp;

	*pause_ns = 0;
	if (inject_prepare(pid, &f, &tramp, e))
		return -1;
	return inject_run(pid, c, &f, tramp, borrow_thread(pid), pause_ns, e);
}

int ra_inject(pid_t pid, const char *agent, uint64_t *pause_ns, struct ra_err *e)
{
	const struct ra_inject_call c = {
	    .lib = agent, .fn = RA_AGENT_ENABLE, .object = RA_AGENT_PREFIX};
	struct libc_fns f;
	uint64_t tramp;
	pid_t tid;

	*pause_ns = 0;
	if (inject_prepare(pid, &f, &tramp, e))
		return -1;
	tid = borrow_thread(pid);
	if (inject_run(pid, &c, &f, tramp, tid, pause_ns, e))
		return -1;
	if (!f.loader || f.libc_mode)
		return 0;
	/*
	 * The loader's enable returns once the listener is parked, so it is
	 * there now. Once in a while in the suite's runs it was not (not
	 * understood yet): then the borrowed thread loads and enables the agent
	 * the old way (the agent is loaded already: dlopen only counts it, and
	 * enable starts the listener if none runs).
	 */
	if (listener_up(pid, LISTENER_WAIT_MS))
		return 0;
	ra_warn("process %d: no listener after the loader thread's enable: enabling it on "
		"thread %d instead",
		pid, tid);
	return inject_borrowed(pid, tid, tramp, &f, &c, pause_ns, e);
}

int ra_preload(struct ra_remote *r, const char *const *libs, size_t n)
{
	struct ra_err ignore = {0};
	uint64_t a[2], handle;
	struct libc_fns f;

	if (find_dlopen(r->pid, &f, &ignore))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (ra_remote_stack_push(r, libs[i], strlen(libs[i]) + 1, &a[0]))
			return 0; /* no room: the target loads it itself, later */
		a[1] = f.libc_mode ? RTLD_NOW_ | RTLD_DLOPEN_ : RTLD_NOW_;
		if (ra_remote_call(r, f.dlopen, a, 2, &handle))
			return -1;
		ra_debug("process %d: preloaded %s: %s", r->pid, libs[i], handle ? "ok" : "failed");
	}
	return 0;
}

int ra_remote_dlopen(struct ra_remote *r, const char *lib, struct ra_err *e)
{
	struct libc_fns f;

	if (find_dlopen(r->pid, &f, e))
		return -ENOENT;
	return dlopen_on(r, &f, lib, e);
}

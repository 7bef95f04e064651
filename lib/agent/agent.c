/* SPDX-License-Identifier: MIT */
/*
 * librocattach-agent: the target side of an attach (protocol.md sections 2, 3).
 *
 * With ROCP_TOOL_ATTACH=1 at start, a constructor parks one thread named
 * rocp-bg-attach in a condition wait. An attacher stops that thread with
 * ptrace and calls rocprofiler_register_attach/_detach on it, so the calls
 * run on a thread that holds no application lock. They may also be called
 * directly by any thread; calls serialize on agent_lock.
 *
 * Tools live in tools[], appended only, never freed: a tool may keep the
 * address of its client id, and its fini callback (agent_fini) may run on
 * any thread at any time, even inside one of our calls, so that path reads
 * tools[] without the lock.
 *
 * Nothing is printed unless ROCP_AGENT_DEBUG=1 (read at each message, so an
 * attacher can switch it on through the environment buffer).
 *
 * Ours: the attacher names itself in ROCP_ATTACH_OWNER=<pid>:<starttime>.
 * After a successful attach a watchdog thread (rocp-watchdog) waits for that
 * process to end (pidfd, else a /proc poll) and then runs tool_detach itself,
 * as rocprofiler_register_detach would: a dead launcher never leaves a tool
 * attached. The watch follows the latest attach and ends with a detach.
 * One attacher per window: while that owner lives, an attach from any other
 * attacher is refused with EXCESS_API_INSTANCES and a message naming the
 * owner (the owner itself may attach again; a dead owner is taken over).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>
#include <rocattach/version.h>

#include "common/clock.h"
#include "common/envbuf.h"
#include "common/protocol.h"
#include "common/toollist.h"

#define RA_EXPORT __attribute__((visibility("default")))
#define RA_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define MAX_TOOLS RA_TOOLLIST_MAX
#define ERR_MAX 4096
#define START_HINT_MAX_NS (10 * RA_NS_PER_SEC)
#define FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define OWNER_POLL_MS 250 /* liveness poll where pidfd_open is missing (Linux < 5.3) */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

typedef rocprofiler_tool_configure_result_t *(*configure_fn)(uint32_t, const char *, uint32_t,
							     rocprofiler_client_id_t *);
typedef rocprofiler_tool_configure_attach_result_t *(*configure_attach_fn)(
	uint32_t, const char *, uint32_t, rocprofiler_client_id_t *);

struct tool {
	rocprofiler_client_id_t id; /* handed to the tool: must never move */
	void *handle;
	rocprofiler_tool_initialize_t initialize;
	rocprofiler_tool_finalize_t finalize;
	void *data;
	rocprofiler_tool_attach_t attach;
	rocprofiler_tool_detach_t detach;
	void *attach_data;
	struct tool *next_declined;
	const char *why; /* why it cannot attach, NULL if it can */
	char whybuf[96];
	bool attached;
	atomic_bool live;      /* initialize entered and did not fail */
	atomic_bool finalized; /* finalize ran, or must never run */
};

struct env_prev {
	char *name;
	char *value; /* NULL: was unset */
};

struct env_undo {
	struct env_prev *v;
	size_t n, cap;
};

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * "This thread is in one of our calls" (it holds agent_lock, or is a starter
 * the holder waits for): a tool calling back from its callback is refused,
 * not deadlocked. A thread-specific value, not a _Thread_local: this library
 * is often dlopen'd (--inject, test programs), where thread-locals are
 * dynamic TLS, which LeakSanitizer's thread walk misreads (a crash at exit).
 */
static pthread_key_t in_agent_key;
static pthread_once_t in_agent_once = PTHREAD_ONCE_INIT;
static bool in_agent_keyed; /* false if the process had no key left: no re-entry check */

static void in_agent_key_create(void)
{
	in_agent_keyed = pthread_key_create(&in_agent_key, NULL) == 0;
}

static void in_agent_set(bool yes)
{
	pthread_once(&in_agent_once, in_agent_key_create);
	if (in_agent_keyed)
		pthread_setspecific(in_agent_key, yes ? &in_agent_key : NULL);
}

static bool in_agent(void)
{
	pthread_once(&in_agent_once, in_agent_key_create);
	return in_agent_keyed && pthread_getspecific(in_agent_key) != NULL;
}
static atomic_bool listening; /* set once the listener is parked */
static bool attached;
static char *first_path; /* tool_lib_path of the first successful attach */
static bool atexit_registered;
static pid_t tools_pid; /* the process whose tools were initialized */

static struct tool *tools[MAX_TOOLS];
static atomic_uint n_tools;
static struct tool *declined; /* kept: a tool may hold on to &t->id */

/*
 * The attacher of the current attach. owner_next is what the watchdog must
 * watch from generation owner_gen on; the watchdog takes its fd over (sets
 * it to -1), so an fd is closed by the agent only while nobody polls it.
 * All under agent_lock.
 */
struct owner {
	pid_t pid; /* 0: nobody to watch */
	unsigned long long start;
	int fd;	   /* pidfd, or -1: poll /proc */
	bool dead; /* already gone when the attach arrived */
};

static struct owner owner_next = { .fd = -1 };
static unsigned int owner_gen;
static int wd_wake = -1; /* eventfd: owner_next changed */
static bool wd_started;
static struct owner wd_cur = { .fd = -1 }; /* the watchdog's own copy */

static char err_text[ERR_MAX];
static char err_copy[ERR_MAX];
static char notes[ERR_MAX - 128]; /* leaves room for a prefix in err_text */

/* The listener parks on park_cond; nothing ever signals it. */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t parked_cond = PTHREAD_COND_INITIALIZER;
static bool parked;

static bool debug_on(void)
{
	const char *v = getenv("ROCP_AGENT_DEBUG");

	return v && !strcmp(v, "1");
}

/* One write(2) per message, so lines from several processes do not mix. */
static RA_PRINTF(1, 2) void dbg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n, m;

	if (!debug_on())
		return;
	n = snprintf(line, sizeof(line), "rocattach-agent[%d]: ", (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

static RA_PRINTF(2, 3) int fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_text, sizeof(err_text), fmt, ap);
	va_end(ap);
	dbg("error %d: %s", code, err_text);
	return code;
}

/* Per-library reasons, joined with "; ", for the "no tool can attach" message. */
static void note(const char *lib, const char *why)
{
	size_t len = strlen(notes);

	snprintf(notes + len, sizeof(notes) - len, "%s%s: %s", len ? "; " : "", lib, why);
	dbg("%s: %s", lib, why);
}

static void agent_enter(void)
{
	pthread_mutex_lock(&agent_lock);
	in_agent_set(true);
	err_text[0] = '\0';
	notes[0] = '\0';
}

static void agent_leave(void)
{
	in_agent_set(false);
	pthread_mutex_unlock(&agent_lock);
}

/*
 * A maps line into [lo, hi) and whether we may scan it: readable, and not
 * [vvar] (some of its pages fault) nor a device (reads of a GPU's MMIO or
 * doorbell mapping can have effects). /dev/zero is shared anonymous memory.
 */
static int map_parse(const char *line, unsigned long *lo, unsigned long *hi, bool *ok)
{
	const char *path;
	char perms[5];
	int n = 0;

	if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", lo, hi, perms, &n) != 3)
		return -1;
	path = n ? line + n : "";
	*ok = perms[0] == 'r' && strncmp(path, "[vvar", 5) &&
	      (strncmp(path, "/dev/", 5) || !strncmp(path, "/dev/zero", 9) ||
	       !strncmp(path, "/dev/shm/", 9));
	return 0;
}

/*
 * Bytes we may read from p on: the rest of the mapping holding p plus
 * scannable mappings that follow without a gap. 0 if p is not in one.
 */
static size_t readable_bytes(const void *p)
{
	unsigned long lo, hi, end = 0, a = (unsigned long)p;
	char *line = NULL;
	size_t cap = 0;
	bool ok;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0 && !map_parse(line, &lo, &hi, &ok)) {
		if (end && (lo != end || !ok))
			break;
		if (end || (a >= lo && a < hi && ok))
			end = hi;
		else if (a < hi)
			break;
	}
	free(line);
	fclose(f);
	return end ? end - a : 0;
}

static bool readable_string(const char *s)
{
	size_t len = readable_bytes(s);

	return len && memchr(s, '\0', len);
}

/* Accept a symbol only from the object behind handle, not from its dependencies. */
static void *own_symbol(void *handle, const char *name)
{
	struct link_map *obj, *owner = NULL;
	Dl_info info;
	void *sym;

	dlerror();
	sym = dlsym(handle, name);
	if (!sym || dlinfo(handle, RTLD_DI_LINKMAP, &obj) != 0)
		return NULL;
	if (!dladdr1(sym, &info, (void **)&owner, RTLD_DL_LINKMAP) || owner != obj)
		return NULL;
	return sym;
}

static void tool_finalize(struct tool *t)
{
	if (!atomic_load(&t->live) || atomic_exchange(&t->finalized, true))
		return;
	dbg("finalize tool %u", t->id.handle);
	if (t->finalize)
		t->finalize(t->data);
}

/* The fini callback handed to initialize: finalize one tool, once. */
static void agent_fini(rocprofiler_client_id_t id)
{
	if (id.handle < atomic_load(&n_tools))
		tool_finalize(tools[id.handle]);
}

/* A fork child inherits the tools' state but never initialized them: skip it. */
static void agent_atexit(void)
{
	unsigned int i, n = atomic_load(&n_tools);

	if (getpid() != tools_pid)
		return;
	for (i = 0; i < n; i++)
		tool_finalize(tools[i]);
}

static struct tool *tool_new(void *handle, unsigned int idx)
{
	const rocprofiler_client_id_t id = { .name = NULL, .handle = idx };
	struct tool *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	/* handle is const in the ABI: fill it by copy, into storage without a declared type. */
	memcpy(&t->id, &id, sizeof(id));
	t->handle = handle;
	return t;
}

static void tool_publish(struct tool *t)
{
	unsigned int idx = t->id.handle;

	if (!atexit_registered && !atexit(agent_atexit))
		atexit_registered = true;
	tools_pid = getpid();
	tools[idx] = t;
	atomic_store(&n_tools, idx + 1);
}

static void tool_set_why(struct tool *t, const char *fmt, ...) RA_PRINTF(2, 3);
static void tool_set_why(struct tool *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->whybuf, sizeof(t->whybuf), fmt, ap);
	va_end(ap);
	t->why = t->whybuf;
}

static void tool_configure_attach(struct tool *t, configure_attach_fn fn)
{
	rocprofiler_tool_configure_attach_result_t *res;
	size_t need = FIELD_END(rocprofiler_tool_configure_attach_result_t, tool_data);

	if (!fn) {
		t->why = "no rocprofiler_configure_attach";
		return;
	}
	res = fn(ROCATTACH_SDK_VERSION, ROCATTACH_SDK_VERSION_STRING, t->id.handle, &t->id);
	if (!res) {
		t->why = "no rocprofiler_configure_attach (returned NULL)";
	} else if (res->size < need) {
		tool_set_why(t, "no rocprofiler_configure_attach (result size %zu < %zu)",
			     res->size, need);
	} else if (!res->tool_attach) {
		t->why = "no rocprofiler_configure_attach (tool_attach is NULL)";
	} else {
		t->attach = res->tool_attach;
		t->detach = res->tool_detach;
		t->attach_data = res->tool_data;
	}
}

/*
 * live is set before initialize runs because the tool may call its fini
 * from inside initialize. A tool whose initialize fails is never finalized.
 */
static void tool_initialize(struct tool *t)
{
	int r;

	atomic_store(&t->live, true);
	if (!t->initialize)
		return;
	r = t->initialize(agent_fini, t->data);
	if (!r)
		return;
	atomic_store(&t->live, false);
	atomic_store(&t->finalized, true);
	tool_set_why(t, "initialize failed (returned %d)", r);
}

static struct tool *no_tool(const char *lib, const char *why)
{
	note(lib, why);
	return NULL;
}

/* configure, configure_attach, initialize. NULL if the library is no tool. */
static struct tool *tool_setup(void *handle, const char *lib)
{
	size_t need = FIELD_END(rocprofiler_tool_configure_result_t, tool_data);
	rocprofiler_tool_configure_result_t *res;
	unsigned int idx = atomic_load(&n_tools);
	configure_fn configure;
	struct tool *t;

	configure = (configure_fn)own_symbol(handle, "rocprofiler_configure");
	if (!configure)
		return no_tool(lib, "rocprofiler_configure not exported by this library");
	if (idx == MAX_TOOLS)
		return no_tool(lib, "too many tool libraries");
	t = tool_new(handle, idx);
	if (!t)
		return no_tool(lib, "out of memory");
	res = configure(ROCATTACH_SDK_VERSION, ROCATTACH_SDK_VERSION_STRING, idx, &t->id);
	if (!res) {
		/* Not freed: the tool may have kept &t->id. It is asked again next attach. */
		t->next_declined = declined;
		declined = t;
		return no_tool(lib, "configure declined (returned NULL)");
	}
	tool_publish(t);
	if (res->size < need) {
		tool_set_why(t, "rocprofiler_configure result size %zu < %zu", res->size, need);
		atomic_store(&t->finalized, true);
		return t;
	}
	t->initialize = res->initialize;
	t->finalize = res->finalize;
	t->data = res->tool_data;
	tool_configure_attach(t, (configure_attach_fn)own_symbol(handle,
								 "rocprofiler_configure_attach"));
	tool_initialize(t);
	return t;
}

static struct tool *tool_find(void *handle)
{
	unsigned int i, n = atomic_load(&n_tools);

	for (i = 0; i < n; i++)
		if (tools[i]->handle == handle)
			return tools[i];
	return NULL;
}

static const char *tool_unusable(const struct tool *t)
{
	if (t->why)
		return t->why;
	if (atomic_load(&t->finalized))
		return "tool already finalized itself";
	return NULL;
}

/*
 * A library already configured by an earlier, failed attach is reused as it
 * is: no tool is configured or initialized twice. Libraries stay loaded.
 */
static void tool_load(const char *lib)
{
	struct tool *t;
	void *handle;
	const char *why;

	handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		why = dlerror();
		if (!why)
			why = "dlopen failed";
		/* glibc's message starts with the name already: say it once. */
		else if (!strncmp(why, lib, strlen(lib)) && !strncmp(why + strlen(lib), ": ", 2))
			why += strlen(lib) + 2;
		note(lib, why);
		return;
	}
	t = tool_find(handle);
	if (!t)
		t = tool_setup(handle, lib);
	why = t ? tool_unusable(t) : NULL;
	if (why)
		note(lib, why);
}

static unsigned int tools_usable(void)
{
	unsigned int i, n = atomic_load(&n_tools), usable = 0;

	for (i = 0; i < n; i++)
		usable += !tool_unusable(tools[i]);
	return usable;
}

static int first_attach(const char *path)
{
	struct ra_toollist tl;
	char *copy;
	size_t i;
	int err;

	copy = strdup(path);
	if (!copy)
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
	err = ra_toollist_parse(path, &tl);
	if (err) {
		free(copy);
		if (err == -ENOMEM)
			return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT, "tool_lib_path \"%s\": %s", path,
			    err == -E2BIG ? "more than 64 libraries" : "names no library");
	}
	for (i = 0; i < tl.n; i++)
		tool_load(tl.v[i]);
	ra_toollist_free(&tl);
	if (!tools_usable()) {
		free(copy);
		/* As ROCm: a tool that fails to load or configure is ROCPROFILER_ERROR. */
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "no tool can attach: %s", notes);
	}
	if (notes[0])
		snprintf(err_text, sizeof(err_text), "attached; skipped: %s", notes);
	first_path = copy;
	return ROCATTACH_REGISTER_SUCCESS;
}

/* A time the attacher asked for (CLOCK_REALTIME ns), if still ahead (and not absurdly far). */
static bool time_ahead(uint64_t ns)
{
	uint64_t now;

	if (!ns)
		return false;
	now = ra_realtime_ns();
	if (ns <= now || ns - now > START_HINT_MAX_NS) {
		dbg("ignoring the time %llu (now %llu)", (unsigned long long)ns,
		    (unsigned long long)now);
		return false;
	}
	return true;
}

static int start_match(const char *name, const char *value, void *arg)
{
	if (!strcmp(name, RA_ENV_START_NS))
		*(const char **)arg = value;
	return 0;
}

/*
 * The start time in the environment buffer (never in environ: it is ours,
 * not the tools'), if still ahead; else 0.
 */
static uint64_t start_hint(const char *env, size_t envlen)
{
	const char *v = NULL;
	unsigned long long ns;
	char *end;

	if (!env || ra_envbuf_decode(env, envlen, start_match, &v) || !v || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	ns = strtoull(v, &end, 10);
	return !errno && !*end && time_ahead(ns) ? ns : 0;
}

/*
 * When the last attach and detach handed over to the tools (CLOCK_REALTIME
 * ns, taken right before the first tool's callback), for the attacher's
 * report: it is the moment the profiling window really opened or closed.
 * Exported as a variable: the attacher reads it from our memory once the
 * entry point has returned (no second remote call). Written before the call
 * returns, read after: no reader ever races a writer.
 */
RA_EXPORT _Atomic uint64_t rocattach_agent_tool_event_ns[2];
#define tool_event_ns rocattach_agent_tool_event_ns

static void stamp_tool_event(int which)
{
	atomic_store(&tool_event_ns[which], ra_realtime_ns());
}

/* Hand the attach over to every usable tool: the window opens. */
static void tools_hand_over(void)
{
	unsigned int i, n = atomic_load(&n_tools);

	stamp_tool_event(0);
	for (i = 0; i < n; i++) {
		if (tool_unusable(tools[i]))
			continue;
		dbg("tool_attach tool %u", i);
		tools[i]->attach(NULL, NULL, 0, tools[i]->attach_data);
		tools[i]->attached = true;
	}
}

/*
 * With a start time, a starter thread sleeps until it and hands the attach
 * over, not the thread running rocprofiler_register_attach: that one is
 * the attacher's, which watches it and interrupts, restores and releases it
 * as soon as it returns, and on a node with many targets that work for the
 * first windows to open delays the others. With 32 targets on 2 CPUs,
 * tool_attach spread over 5-8 ms from the listener and over 1.3-2.5 ms from
 * starter threads, which is the floor there (32 processes merely waking at
 * one instant spread over about 2 ms). The call still returns only after
 * tool_attach. A tool calling us back from tool_attach gets DEADLOCK, as on
 * the listener: the caller holds agent_lock while it waits.
 */
struct starter {
	uint64_t at_ns;
	void (*hand_over)(void);
};

static void *starter_main(void *arg)
{
	struct starter *st = arg;

	ra_sleep_until_realtime(st->at_ns);
	in_agent_set(true);
	st->hand_over();
	return NULL;
}

/*
 * 0 once a starter thread has run fn at at_ns (the stop time uses the same
 * way: tool_detach spreads as little as tool_attach); -1 if none could start.
 */
static int run_at(uint64_t at_ns, void (*fn)(void))
{
	struct starter st = { at_ns, fn };
	sigset_t all, old;
	pthread_t th;
	int err;

	/* Like the listener, it never takes a signal meant for the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, NULL, starter_main, &st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		dbg("cannot start a starter thread: %s", strerror(err));
		return -1;
	}
	pthread_setname_np(th, "rocp-starter");
	pthread_join(th, NULL);
	return 0;
}

static int tools_attach(const char *env, size_t envlen)
{
	uint64_t at;

	if (!tools_usable())
		return fail(ROCATTACH_REGISTER_NO_TOOLS, "every tool has finalized itself");
	at = start_hint(env, envlen);
	if (!at || run_at(at, tools_hand_over)) {
		if (at)
			ra_sleep_until_realtime(at);
		tools_hand_over();
	}
	attached = true;
	return ROCATTACH_REGISTER_SUCCESS;
}

static int env_save(struct env_undo *u, const char *name)
{
	const char *old = getenv(name);
	struct env_prev *v;

	if (u->n == u->cap) {
		v = realloc(u->v, (u->cap ? 2 * u->cap : 8) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		u->v = v;
		u->cap = u->cap ? 2 * u->cap : 8;
	}
	v = &u->v[u->n];
	v->name = strdup(name);
	v->value = old ? strdup(old) : NULL;
	if (!v->name || (old && !v->value)) {
		free(v->name);
		free(v->value);
		return -ENOMEM;
	}
	u->n++;
	return 0;
}

/* Our private variables (the owner, the start time) are ours to read: they never enter environ. */
static int env_apply_one(const char *name, const char *value, void *arg)
{
	if (!strcmp(name, "ROCPROFILER_REGISTER_TOOL_ATTACHED") ||
	    ra_env_is_private(name, strlen(name)))
		return 0;
	if (env_save(arg, name))
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
	if (setenv(name, value, 1))
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "setenv(%s): %s", name,
			    strerror(errno));
	return 0;
}

/* Newest first, so a name given twice gets its original value back. */
static void env_rollback(struct env_undo *u)
{
	size_t i;

	for (i = u->n; i-- > 0;) {
		if (u->v[i].value)
			setenv(u->v[i].name, u->v[i].value, 1);
		else
			unsetenv(u->v[i].name);
	}
}

static void env_undo_free(struct env_undo *u)
{
	size_t i;

	for (i = 0; i < u->n; i++) {
		free(u->v[i].name);
		free(u->v[i].value);
	}
	free(u->v);
}

static int check_env_buffer(const char *env, size_t *len)
{
	*len = 0;
	if (!env)
		return 0;
	*len = readable_bytes(env);
	if (!*len)
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
			    "environment_buffer %p is not in readable memory", (const void *)env);
	if (ra_envbuf_decode(env, *len, NULL, NULL))
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
			    "environment_buffer %p is malformed", (const void *)env);
	return 0;
}

static int no_listener(void)
{
	return fail(ROCATTACH_REGISTER_ATTACHMENT_NOT_AVAILABLE,
		    "no attach support in this process: start it with ROCP_TOOL_ATTACH=1"
		    " (a child forked without exec has none)");
}

static int check_attach_args(const char *env, const char *path, size_t *envlen)
{
	int ret;

	if (!listening)
		return no_listener();
	if (!readable_string(path))
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
			    "tool_lib_path %p is not a string in readable memory",
			    (const void *)path);
	ret = check_env_buffer(env, envlen);
	if (ret)
		return ret;
	if (first_path && strcmp(first_path, path))
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT,
			    "tool_lib_path \"%s\" differs from the first attach's \"%s\"", path,
			    first_path);
	return 0;
}

/*
 * A thread names itself: glibc then uses prctl(PR_SET_NAME). Naming another
 * thread goes through /proc/self/task/TID/comm, which misses in a pid
 * namespace whose /proc is the host's (unshare --pid without --mount-proc):
 * the attacher would find no listener.
 */
static void thread_name(const char *name)
{
	pthread_setname_np(pthread_self(), name);
}

/* ------------------------------------------------------------------------ */
/* The attacher's liveness: ROCP_ATTACH_OWNER and the watchdog thread. */

static int detach_locked(void);

/*
 * 1: pid runs and started at start (clock ticks since boot, /proc/PID/stat
 * field 22); 0: it is gone, a zombie, or another process now has its pid;
 * -1: cannot tell (no /proc in our root).
 */
static int owner_alive_proc(pid_t pid, unsigned long long start)
{
	unsigned long long st;
	char path[64], buf[1024], *p;
	int fd, field;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && !access("/proc/self/stat", F_OK) ? 0 : -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n == 0 || errno == ESRCH ? 0 : -1;
	buf[n] = '\0';
	/* comm may hold spaces and ')': count fields from the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return p ? 0 : -1;
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &st) != 1)
		return -1;
	return st == start;
}

static bool owner_alive(const struct owner *o)
{
	int r = owner_alive_proc(o->pid, o->start);

	if (r >= 0)
		return r;
	return !(kill(o->pid, 0) && errno == ESRCH);
}

static int owner_match(const char *name, const char *value, void *arg)
{
	if (!strcmp(name, RA_ENV_OWNER))
		*(const char **)arg = value;
	return 0;
}

/*
 * The attacher named by the environment buffer (nobody if absent). Its
 * pidfd is opened now, during its own call; the starttime check then rules
 * out a pid that was reused after it died.
 */
static void owner_from_env(const char *env, size_t envlen, struct owner *o)
{
	unsigned long long pid, start;
	const char *v = NULL;
	char tail;

	*o = (struct owner){ .fd = -1 };
	if (!env || ra_envbuf_decode(env, envlen, owner_match, &v) || !v)
		return;
	if (sscanf(v, "%llu:%llu%c", &pid, &start, &tail) != 2 || !pid || pid > INT32_MAX) {
		dbg("ignoring %s=%s", RA_ENV_OWNER, v);
		return;
	}
	o->pid = (pid_t)pid;
	o->start = start;
	o->fd = (int)syscall(SYS_pidfd_open, o->pid, 0);
	if (o->fd < 0)
		o->dead = errno == ESRCH || !owner_alive(o);
	else if (owner_alive_proc(o->pid, start) == 0)
		o->dead = true;
	dbg("attacher %d (start %llu)%s", (int)o->pid, start, o->dead ? " is already gone" : "");
}

static void owner_drop(struct owner *o)
{
	if (o->fd >= 0)
		close(o->fd);
	*o = (struct owner){ .fd = -1 };
}

/* Take over what owner_set published, if newer than what we watch. */
static unsigned int wd_adopt(unsigned int gen)
{
	pthread_mutex_lock(&agent_lock);
	if (gen != owner_gen) {
		owner_drop(&wd_cur);
		wd_cur = owner_next;
		owner_next.fd = -1;
		gen = owner_gen;
	}
	pthread_mutex_unlock(&agent_lock);
	return gen;
}

/* Wait until the owner ends (true) or owner_set changes it (false). */
static bool wd_wait(void)
{
	struct pollfd p[2] = { { wd_wake, POLLIN, 0 }, { wd_cur.fd, POLLIN, 0 } };
	int timeout = wd_cur.pid && wd_cur.fd < 0 ? OWNER_POLL_MS : -1;
	uint64_t v;
	int n;

	if (wd_cur.pid && wd_cur.dead)
		return true;
	n = poll(p, wd_cur.pid ? 2 : 1, timeout);
	if (n < 0)
		return false;
	if (p[0].revents) {
		if (read(wd_wake, &v, sizeof(v)) < 0)
			dbg("watchdog: eventfd read: %s", strerror(errno));
		return false;
	}
	if (p[1].revents)
		return true;
	return n == 0 && !owner_alive(&wd_cur);
}

/*
 * The owner is gone: detach unless an attach or detach came in since we
 * adopted it (gen moved on). Not through agent_enter: err_text belongs to
 * the last remote call. A remote call in progress holds agent_lock, so we
 * never run tool_detach at the same time as one.
 */
static void wd_owner_gone(unsigned int gen)
{
	pthread_mutex_lock(&agent_lock);
	in_agent_set(true);
	if (gen == owner_gen && attached) {
		dbg("attacher %d is gone: detaching the tools", (int)wd_cur.pid);
		detach_locked();
	}
	in_agent_set(false);
	pthread_mutex_unlock(&agent_lock);
	owner_drop(&wd_cur);
}

static void *watchdog_main(void *arg)
{
	unsigned int gen = 0;

	(void)arg;
	thread_name("rocp-watchdog");
	for (;;) {
		gen = wd_adopt(gen);
		if (wd_wait())
			wd_owner_gone(gen);
	}
	return NULL;
}

/* Under agent_lock. Every signal blocked: it must never take the application's. */
static int watchdog_start(void)
{
	sigset_t all, old;
	pthread_t th;
	int err;

	wd_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wd_wake < 0)
		return -errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, NULL, watchdog_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(wd_wake);
		wd_wake = -1;
		return -err;
	}
	pthread_detach(th);
	wd_started = true;
	return 0;
}

/* Under agent_lock: from now on watch o (o->pid == 0: nobody). Takes o's fd. */
static void owner_set(struct owner *o)
{
	uint64_t one = 1;
	int err;

	if (o->pid && !wd_started) {
		err = watchdog_start();
		if (err) {
			dbg("cannot start the watchdog: %s", strerror(-err));
			owner_drop(o);
		}
	}
	if (!wd_started)
		return;
	owner_drop(&owner_next);
	owner_next = *o;
	owner_gen++;
	if (write(wd_wake, &one, sizeof(one)) < 0)
		dbg("watchdog: eventfd write: %s", strerror(errno));
}

static void owner_clear(void)
{
	struct owner none = { .fd = -1 };

	owner_set(&none);
}

/*
 * One attacher per window. holder is the owner of the attach that opened the
 * window (pid 0: none named itself); since is when it did. Under agent_lock.
 */
static struct {
	pid_t pid;
	unsigned long long start;
	time_t since;
} holder;

static void holder_set(const struct owner *o)
{
	if (o->pid != holder.pid || o->start != holder.start)
		holder.since = time(NULL);
	holder.pid = o->pid;
	holder.start = o->start;
}

/*
 * An attach while attached: the holder itself again (it lost its session),
 * a holder that is gone, or a window nobody named itself for is taken over,
 * as before. Any other attacher is refused while the holder lives, with
 * EXCESS_API_INSTANCES (ours: only for this) and the holder named.
 */
static int holder_check(const struct owner *o)
{
	struct owner h = { .pid = holder.pid, .start = holder.start, .fd = -1 };
	char comm[32] = "", when[16] = "?";
	struct tm tm;
	ssize_t n;
	int fd;

	if (!h.pid || (o->pid == h.pid && o->start == h.start) || !owner_alive(&h))
		return 0;
	snprintf(comm, sizeof(comm), "/proc/%d/comm", (int)h.pid);
	fd = open(comm, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, comm, sizeof(comm) - 1);
	if (fd >= 0)
		close(fd);
	comm[n > 0 ? n : 0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	if (localtime_r(&holder.since, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	return fail(ROCATTACH_REGISTER_EXCESS_API_INSTANCES,
		    "process %d is attached by %s (pid %d, since %s): wait for its window to end",
		    (int)getpid(), comm[0] ? comm : "another attacher", (int)h.pid, when);
}

static int attach_locked(const char *env, const char *path)
{
	struct env_undo undo = { 0 };
	struct owner o;
	size_t envlen = 0;
	int ret;

	ret = check_attach_args(env, path, &envlen);
	if (ret)
		return ret;
	owner_from_env(env, envlen, &o);
	if (attached) {
		ret = holder_check(&o);
		if (ret) {
			owner_drop(&o);
			return ret;
		}
		dbg("already attached");
		holder_set(&o);
		owner_set(&o);
		return ROCATTACH_REGISTER_SUCCESS;
	}
	if (env)
		ret = ra_envbuf_decode(env, envlen, env_apply_one, &undo);
	if (!ret && !first_path)
		ret = first_attach(path);
	if (!ret)
		ret = tools_attach(env, envlen);
	if (ret) {
		env_rollback(&undo);
		owner_drop(&o);
	} else {
		holder_set(&o);
		owner_set(&o);
	}
	env_undo_free(&undo);
	return ret;
}

RA_EXPORT int rocprofiler_register_attach(const char *environment_buffer,
					  const char *tool_lib_path)
{
	int ret;

	if (in_agent()) {
		/* A tool calling back from its callback: this thread holds agent_lock. */
		note(RA_ENTRY_ATTACH, "called from inside a tool callback");
		return tool_lib_path ? ROCATTACH_REGISTER_DEADLOCK
				     : ROCATTACH_REGISTER_INVALID_ARGUMENT;
	}
	agent_enter();
	if (tool_lib_path)
		ret = attach_locked(environment_buffer, tool_lib_path);
	else
		ret = fail(ROCATTACH_REGISTER_INVALID_ARGUMENT, "tool_lib_path is NULL");
	dbg("attach(%s) = %d", tool_lib_path ? "path" : "NULL", ret);
	agent_leave();
	return ret;
}

/* Hand the tools back: tool_detach for every attached tool, the window closes. */
static void tools_hand_back(void)
{
	unsigned int i, n = atomic_load(&n_tools);
	struct tool *t;

	stamp_tool_event(1);
	for (i = 0; i < n; i++) {
		t = tools[i];
		if (!t->attached)
			continue;
		t->attached = false;
		if (t->detach && !atomic_load(&t->finalized))
			t->detach(t->attach_data);
	}
}

/* Detach now (at_ns 0), or at at_ns (a starter thread, as for the start). */
static int detach_locked_at(uint64_t at_ns)
{
	if (!listening)
		return no_listener();
	if (!attached)
		return fail(ROCATTACH_REGISTER_INVALID_ARGUMENT, "not attached");
	if (!at_ns || run_at(at_ns, tools_hand_back)) {
		if (at_ns)
			ra_sleep_until_realtime(at_ns);
		tools_hand_back();
	}
	attached = false;
	holder.pid = 0;
	owner_clear();
	return ROCATTACH_REGISTER_SUCCESS;
}

static int detach_locked(void)
{
	return detach_locked_at(0);
}

RA_EXPORT int rocprofiler_register_detach(void)
{
	int ret;

	if (in_agent()) {
		note(RA_ENTRY_DETACH, "called from inside a tool callback");
		return ROCATTACH_REGISTER_DEADLOCK;
	}
	agent_enter();
	ret = detach_locked();
	dbg("detach = %d", ret);
	agent_leave();
	return ret;
}

/*
 * Ours: rocprofiler_register_detach, with tool_detach called at stop_ns
 * (CLOCK_REALTIME; at once if it is past or more than 10 s ahead). It
 * returns after tool_detach, like the attach with a start time.
 */
RA_EXPORT int rocattach_agent_detach_at(uint64_t stop_ns)
{
	int ret;

	if (in_agent()) {
		note(RA_AGENT_DETACH_AT, "called from inside a tool callback");
		return ROCATTACH_REGISTER_DEADLOCK;
	}
	agent_enter();
	ret = detach_locked_at(time_ahead(stop_ns) ? stop_ns : 0);
	dbg("detach_at(%llu) = %d", (unsigned long long)stop_ns, ret);
	agent_leave();
	return ret;
}

/* Ours: the marker that tells an attacher this is our agent (protocol.h), whatever our file name. */
RA_EXPORT unsigned int rocattach_agent_abi(void)
{
	return RA_AGENT_ABI;
}

RA_EXPORT const char *rocattach_agent_last_error(void)
{
	if (in_agent()) {
		memcpy(err_copy, err_text, sizeof(err_copy));
		return err_copy;
	}
	pthread_mutex_lock(&agent_lock);
	memcpy(err_copy, err_text, sizeof(err_copy));
	pthread_mutex_unlock(&agent_lock);
	return err_copy;
}

/* Ours: when the last attach (which 0) or detach (1) called the tools, 0 if never. */
RA_EXPORT uint64_t rocattach_agent_tool_ns(int which)
{
	return which == 0 || which == 1 ? atomic_load(&tool_event_ns[which]) : 0;
}

RA_EXPORT unsigned int rocattach_agent_version(void)
{
	return ROCATTACH_VERSION;
}

/*
 * The attacher stops this thread inside the futex wait and runs our entry
 * points on it. pthread_cond_wait has released park_lock by then, so the
 * thread holds no lock anyone else wants; a remote call may end the wait
 * early, hence the loop.
 */
static void *listener_main(void *arg)
{
	(void)arg;
	thread_name(RA_LISTENER_COMM);
	pthread_mutex_lock(&park_lock);
	parked = true;
	pthread_cond_signal(&parked_cond);
	for (;;)
		pthread_cond_wait(&park_cond, &park_lock);
	return NULL;
}

/*
 * Only the forking thread survives: there is no listener any more, and a
 * thread that held agent_lock is gone. If the forking thread itself is in
 * one of our calls (a tool forked), it holds the lock and will release it.
 */
static void agent_atfork_child(void)
{
	listening = false;
	if (!in_agent())
		pthread_mutex_init(&agent_lock, NULL);
	/* No watchdog here: its descriptors are copies the child does not need. */
	if (wd_wake >= 0)
		close(wd_wake);
	wd_wake = -1;
	wd_started = false;
	owner_drop(&owner_next);
	owner_drop(&wd_cur);
}

/*
 * The listener runs our code forever: if the host dlopen'ed us, a dlclose
 * must not unmap it.
 */
static void pin_self(void)
{
	Dl_info info;

	if (!dladdr((void *)listener_main, &info) || !info.dli_fname)
		return;
	if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
		dbg("cannot pin %s: %s", info.dli_fname, dlerror());
}

/*
 * glibc starts a thread with every signal blocked and installs the inherited
 * mask only once it runs. The listener gives park_lock up only by entering
 * its wait, so once we get it back, an attacher arriving right after start
 * finds the thread settled and parked.
 */
static void listener_wait_parked(void)
{
	pthread_mutex_lock(&park_lock);
	while (!parked)
		pthread_cond_wait(&parked_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

/*
 * The new thread inherits the creator's signal mask, so block everything
 * around pthread_create: the listener never takes a signal meant for the
 * application. (glibc keeps its internal cancel/setxid signals unblocked.)
 */
static int listener_start(void)
{
	sigset_t all, old;
	pthread_t th;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, NULL, listener_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_detach(th);
	listener_wait_parked();
	return 0;
}

static bool env_true(const char *name)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	const char *v = getenv(name);
	size_t i;

	for (i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(v, yes[i]))
			return true;
	return false;
}

/* Start the listener once; 0 if it runs (now or already), else -errno. */
static int agent_enable(void)
{
	static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;
	int err = 0;

	pthread_mutex_lock(&enable_lock);
	if (listening)
		goto out;
	err = listener_start();
	if (err) {
		dbg("cannot start the attach listener: %s", strerror(-err));
		goto out;
	}
	pin_self();
	pthread_atfork(NULL, NULL, agent_atfork_child);
	listening = true;
	dbg("attach listener " RA_LISTENER_COMM " started");
out:
	pthread_mutex_unlock(&enable_lock);
	return err;
}

/*
 * Ours: start the listener in a process that did not have ROCP_TOOL_ATTACH=1
 * at start. The attacher calls it remotely after loading us with dlopen
 * (--inject); it returns once the listener is parked.
 */
RA_EXPORT int rocattach_agent_enable(void)
{
	return agent_enable();
}

/*
 * ROCm's rocprofiler-register starts its own rocp-bg-attach listener under
 * ROCP_TOOL_ATTACH=1 (a HIP program, with our agent added by a site policy
 * such as the Slurm plugin). One listener per process: we stand aside, and
 * attachers (ours prefer librocprofiler-register.so*) drive ROCm's.
 *
 * Called from our constructor, when every object loaded at start (preloads,
 * DT_NEEDED) is mapped and relocated, whatever their order; an object
 * dlopen'ed later is not seen. No dlopen(RTLD_NOLOAD) here: at start it would
 * run the other object's constructor early. The first definition in the
 * global scope is ROCm's when it comes before us, else the next one after
 * us is. Objects are compared by load base, never by symbol address: our own
 * exported entry point may be interposed by ROCm's. A copy of this agent
 * built under ROCm's file name is another object too, and keeps the listener.
 */
static bool rocm_register_loaded(void)
{
	static const char entry[] = RA_ENTRY_ATTACH;
	static const char prefix[] = RA_ROCM_REGISTER_PREFIX;
	Dl_info self, other;
	const char *base;
	void *sym;

	if (!dladdr((void *)rocm_register_loaded, &self))
		return false;
	sym = dlsym(RTLD_DEFAULT, entry);
	if (!sym || !dladdr(sym, &other) || other.dli_fbase == self.dli_fbase) {
		sym = dlsym(RTLD_NEXT, entry);
		if (!sym || !dladdr(sym, &other) || other.dli_fbase == self.dli_fbase)
			return false;
	}
	base = other.dli_fname ? strrchr(other.dli_fname, '/') : NULL;
	base = base ? base + 1 : other.dli_fname;
	if (!base || strncmp(base, prefix, sizeof(prefix) - 1))
		return false;
	dbg("%s is loaded and has its own attach listener: standing aside", other.dli_fname);
	return true;
}

__attribute__((constructor)) static void agent_init(void)
{
	if (env_true("ROCP_TOOL_ATTACH") && !rocm_register_loaded())
		agent_enable();
}

/* SPDX-License-Identifier: MIT */
/*
 * The tool lifecycle inside the target: load a library, configure it (and
 * its attach half), initialize it, hand the window over (tool_attach) and
 * back (tool_detach), finalize it at exit or when it asks.
 *
 * Tools live in tools[], appended only, never freed: a tool may keep the
 * address of its client id, and its fini callback (agent_fini) may run on
 * any thread at any time, even inside one of our calls, so that path reads
 * tools[] without the lock. A tool that declines (rocprofiler_configure
 * returns NULL) is kept too, inactive: as in rocprofiler-sdk, its
 * configure is never called again and it holds its place (priority).
 *
 * Which of them the window uses is the current tool list's choice
 * (chosen): an attach with another list than the last one chooses again
 * (tools_choose_none, then tool_load for each library). A tool of an
 * earlier list stays loaded and initialized, with its own client id, and
 * is simply not handed the window; chosen again, it is reused as it is.
 *
 * The client id a tool gets is rocprofiler-sdk's {size, name, handle}
 * (include/rocattach/tool.h cites the SDK's files). The tool may write to
 * it, so the agent never reads it back: the handle it goes by is t->idx.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rocattach/rocattach.h>
#include <rocattach/tool.h>
#include <rocattach/version.h>

#include "agent/agent_base.h"
#include "agent/agent_tools.h"
#include "common/clock.h"
#include "common/protocol.h"
#include "common/toollist.h"

#define MAX_TOOLS RA_TOOLLIST_MAX
#define FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

typedef rocprofiler_tool_configure_result_t *(*configure_fn)(uint32_t, const char *, uint32_t,
							     rocprofiler_client_id_t *);
typedef rocprofiler_tool_configure_attach_result_t *(*configure_attach_fn)(
    uint32_t, const char *, uint32_t, rocprofiler_client_id_t *);

struct tool {
	rocprofiler_client_id_t id; /* handed to the tool: must never move, never read back */
	unsigned int idx;	    /* its handle and place in tools[]: ours */
	const char *lib;	    /* as the tool list names it */
	void *handle;
	rocprofiler_tool_initialize_t initialize;
	rocprofiler_tool_finalize_t finalize;
	void *data;
	rocprofiler_tool_attach_t attach;
	rocprofiler_tool_detach_t detach;
	void *attach_data;
	bool declined;	 /* rocprofiler_configure returned NULL */
	const char *why; /* why it cannot attach, NULL if it can */
	char whybuf[96];
	bool attached;
	bool chosen;	       /* in the current tool list */
	atomic_bool live;      /* initialize entered and did not fail */
	atomic_bool finalized; /* finalize ran, or must never run */
};

static bool atexit_registered;
static pid_t tools_pid; /* the process whose tools were initialized */
static struct tool *tools[MAX_TOOLS];
static atomic_uint n_tools;

/*
 * The tool callback running now, for an attacher whose call outlived its
 * deadline (RA_AGENT_CURRENT): "<library>: <callback>", "" when none. It
 * reads it from our memory while we run: a torn read costs a word of text.
 */
RA_EXPORT char rocattach_agent_current[RA_AGENT_CURRENT_MAX];

static void current_set(const struct tool *t, const char *what)
{
	snprintf(rocattach_agent_current, sizeof(rocattach_agent_current), "%s: %s",
		 t ? t->lib : "?", what);
}

static void current_clear(void)
{
	rocattach_agent_current[0] = '\0';
}

static bool tool_ready(const struct tool *t);

/*
 * Before a starter thread runs the hand-over or back (agent.c, run_at):
 * what it will run, said ahead. That thread is not the attacher's: if the
 * tool crashes there the process is gone before anyone could look, so the
 * attacher reads this while the call waits for the time, marked as ahead
 * (RA_AGENT_CURRENT_NEXT). The library is named when one tool takes part;
 * NULL clears.
 */
void tools_current_next(const char *what)
{
	unsigned int i, n = atomic_load(&n_tools), k = 0;
	const struct tool *one = NULL;

	if (!what) {
		current_clear();
		return;
	}
	for (i = 0; i < n; i++)
		if (strcmp(what, "tool_attach") ? tools[i]->attached : tool_ready(tools[i])) {
			one = tools[i];
			k++;
		}
	if (k == 1)
		snprintf(rocattach_agent_current, sizeof(rocattach_agent_current), "%c%s: %s",
			 RA_AGENT_CURRENT_NEXT, one->lib, what);
	else
		snprintf(rocattach_agent_current, sizeof(rocattach_agent_current), "%c%s",
			 RA_AGENT_CURRENT_NEXT, what);
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
	dbg("finalize tool %u", t->idx);
	if (t->finalize)
		t->finalize(t->data); /* not marked current: it may run on any thread, at exit */
}

/*
 * The fini callback handed to initialize: finalize one tool, once. The id
 * is the tool's copy: its handle is only a key, checked against ours.
 */
static void agent_fini(rocprofiler_client_id_t id)
{
	if (id.handle < atomic_load(&n_tools) && tools[id.handle]->idx == id.handle)
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

static struct tool *tool_new(void *handle, const char *lib, unsigned int idx)
{
	const rocprofiler_client_id_t id = {.size = sizeof(id), .name = NULL, .handle = idx};
	struct tool *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->lib = strdup(lib);
	if (!t->lib) {
		free(t);
		return NULL;
	}
	/* handle is const in the ABI: fill it by copy, into storage without a declared type. */
	memcpy(&t->id, &id, sizeof(id));
	t->idx = idx;
	t->handle = handle;
	return t;
}

static void tool_publish(struct tool *t)
{
	unsigned int idx = t->idx;

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
	current_set(t, "rocprofiler_configure_attach");
	res = fn(ROCATTACH_SDK_VERSION, ROCATTACH_SDK_VERSION_STRING, t->idx, &t->id);
	current_clear();
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
	current_set(t, "initialize");
	r = t->initialize(agent_fini, t->data);
	current_clear();
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
	t = tool_new(handle, lib, idx);
	if (!t)
		return no_tool(lib, "out of memory");
	current_set(t, "rocprofiler_configure");
	res = configure(ROCATTACH_SDK_VERSION, ROCATTACH_SDK_VERSION_STRING, idx, &t->id);
	current_clear();
	tool_publish(t);
	if (!res) {
		/* As rocprofiler-sdk: inactive, not an error, never configured again. */
		t->declined = true;
		t->why = "declined (its rocprofiler_configure returned NULL)";
		atomic_store(&t->finalized, true);
		return t;
	}
	if (res->size < need) {
		tool_set_why(t, "rocprofiler_configure result size %zu < %zu", res->size, need);
		atomic_store(&t->finalized, true);
		return t;
	}
	t->initialize = res->initialize;
	t->finalize = res->finalize;
	t->data = res->tool_data;
	tool_configure_attach(
	    t, (configure_attach_fn)own_symbol(handle, "rocprofiler_configure_attach"));
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
int tool_load(const char *lib)
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
		return ROCATTACH_TOOL_FAILED;
	}
	t = tool_find(handle);
	if (!t)
		t = tool_setup(handle, lib);
	if (!t)
		return ROCATTACH_TOOL_FAILED;
	t->chosen = true;
	why = tool_unusable(t);
	if (why)
		note(lib, why);
	return t->declined ? ROCATTACH_TOOL_DECLINED
	       : why	   ? ROCATTACH_TOOL_FAILED
			   : ROCATTACH_TOOL_LOADED;
}

/* A new tool list: no tool is chosen until tool_load chooses it. Only between windows. */
void tools_choose_none(void)
{
	unsigned int i, n = atomic_load(&n_tools);

	for (i = 0; i < n; i++)
		tools[i]->chosen = false;
}

/* A chosen tool that can take the window. */
static bool tool_ready(const struct tool *t)
{
	return t->chosen && !tool_unusable(t);
}

unsigned int tools_usable(void)
{
	unsigned int i, n = atomic_load(&n_tools), usable = 0;

	for (i = 0; i < n; i++)
		usable += tool_ready(tools[i]);
	return usable;
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

static void stamp_tool_event(int which)
{
	atomic_store(&rocattach_agent_tool_event_ns[which], ra_realtime_ns());
}

/* Hand the attach over to every usable tool: the window opens. */
void tools_hand_over(void)
{
	unsigned int i, n = atomic_load(&n_tools);

	stamp_tool_event(0);
	for (i = 0; i < n; i++) {
		if (!tool_ready(tools[i]))
			continue;
		dbg("tool_attach tool %u", i);
		current_set(tools[i], "tool_attach");
		tools[i]->attach(NULL, NULL, 0, tools[i]->attach_data);
		current_clear();
		tools[i]->attached = true;
	}
}

/* Hand the tools back: tool_detach for every attached tool, the window closes. */
void tools_hand_back(void)
{
	unsigned int i, n = atomic_load(&n_tools);
	struct tool *t;

	stamp_tool_event(1);
	for (i = 0; i < n; i++) {
		t = tools[i];
		if (!t->attached)
			continue;
		t->attached = false;
		if (t->detach && !atomic_load(&t->finalized)) {
			current_set(t, "tool_detach");
			t->detach(t->attach_data);
			current_clear();
		}
	}
}

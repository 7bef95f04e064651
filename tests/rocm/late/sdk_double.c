/* SPDX-License-Identifier: MIT */
/*
 * A double of rocprofiler-sdk (librocprofiler-sdk.so.1) for the late start,
 * written from the upstream text (never copied): ROCm/rocm-systems
 * projects/rocprofiler-sdk/source/lib/rocprofiler-sdk/registration.cpp,
 * commit 0028ad56a4c9542c4d93c85e88ea552679b347c1, and
 * registration/late.cpp (stored from the robotchaoX/rocm-systems fork,
 * commit 0ee4385511968d1f4ee4de20ebaade02c5503d94).
 *
 *  - rocprofiler_set_api_table(name, lib_version, lib_instance, tables,
 *    num_tables): ignored (0) once finalized; the first call initializes
 *    the SDK (below); "hip" restores the table if it was wrapped before,
 *    copies it, then puts a wrapper in every entry (each wrapper counts the
 *    call, tells the tool, then calls the copy); the other runtimes' names
 *    are accepted and left alone; an unknown name is INVALID_ARGUMENT (19).
 *    Calls made while a table is swapped go to the runtime's own functions
 *    and are missed: upstream says so and accepts it;
 *  - initialization: status -1 while it runs, 1 after; sets
 *    ROCPROFILER_REGISTER_LIBRARY to this library's path unless set already
 *    (ROCPROFILER_FORCE_ROCPROFILER_REGISTER_LIBRARY overrides that,
 *    ROCPROFILER_SET_ROCPROFILER_REGISTER_LIBRARY=0 opts out); finalizes at
 *    exit; finds the tools: ROCP_TOOL_LIBRARIES opened RTLD_NOLOAD, else
 *    RTLD_LOCAL | RTLD_LAZY (one that will not open is fatal, as upstream's
 *    ROCP_FATAL), then a rocprofiler_configure visible by RTLD_DEFAULT;
 *    calls each rocprofiler_configure(version, version string, priority,
 *    &id) once, keeps a copy of the result, then each initialize;
 *  - ROCP_TOOL_LIBRARIES is split on ':' as upstream's loop does: with
 *    more than one entry, the text after the last ':' is dropped
 *    ("a.so:b.so" loads a.so only; "a.so:b.so:" loads both);
 *  - rocprofiler_is_initialized(&status) / rocprofiler_is_finalized: the
 *    status (0, -1 or 1); the call itself always returns SUCCESS;
 *  - rocprofiler_get_version(&major, &minor, &patch): this build's version
 *    (LATE_SDK_MAJOR/MINOR/PATCH; the file is librocprofiler-sdk.so.M.m.p);
 *    not in the LATE_SDK_LEAN build (sdk-lean/): an SDK of the same soname
 *    that lacks a call a tool needs.
 *
 * Its own calls, for tests: late_sdk_double_wrapped_calls(table) and
 * late_sdk_double_set_api_callback(cb, data).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "late_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define STR2(x) #x
#define STR(x) STR2(x)
#define SDK_VERSION LATE_REG_VERSION(LATE_SDK_MAJOR, LATE_SDK_MINOR, LATE_SDK_PATCH)
#define SDK_VERSION_STRING STR(LATE_SDK_MAJOR) "." STR(LATE_SDK_MINOR) "." STR(LATE_SDK_PATCH)
#define MAX_CLIENTS 8
#define MAX_SLOTS 4

struct client {
	late_sdk_configure_fn configure;
	late_sdk_configure_result result;
	late_sdk_client_id id;
	bool configured;
};

struct slot {
	struct late_hip_table *table;
	struct late_hip_table orig;
	atomic_ullong calls;
};

static atomic_int init_status, fini_status;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct client clients[MAX_CLIENTS];
static unsigned int n_clients;
static struct slot slots[MAX_SLOTS];
static _Atomic(late_sdk_api_cb) api_cb;
static void *_Atomic api_data;

static void seen(unsigned int s, const char *function)
{
	late_sdk_api_cb cb = atomic_load_explicit(&api_cb, memory_order_acquire);

	atomic_fetch_add_explicit(&slots[s].calls, 1, memory_order_relaxed);
	if (cb)
		cb(function, atomic_load_explicit(&api_data, memory_order_relaxed));
}

/* One set of wrappers per slot: a wrapper knows its copy by its slot. */
#define WRAPPERS(s)                                                                                \
	static int wrap_devices_##s(int *count)                                                    \
	{                                                                                          \
		seen(s, "get_device_count");                                                       \
		return slots[s].orig.get_device_count(count);                                      \
	}                                                                                          \
	static uint64_t wrap_mix_##s(uint64_t seed)                                                \
	{                                                                                          \
		seen(s, "mix");                                                                    \
		return slots[s].orig.mix(seed);                                                    \
	}                                                                                          \
	static int64_t wrap_add_##s(int64_t a, int64_t b)                                          \
	{                                                                                          \
		seen(s, "add");                                                                    \
		return slots[s].orig.add(a, b);                                                    \
	}
WRAPPERS(0)
WRAPPERS(1)
WRAPPERS(2)
WRAPPERS(3)

static const struct late_hip_table wrappers[MAX_SLOTS] = {
    {0, wrap_devices_0, wrap_mix_0, wrap_add_0},
    {0, wrap_devices_1, wrap_mix_1, wrap_add_1},
    {0, wrap_devices_2, wrap_mix_2, wrap_add_2},
    {0, wrap_devices_3, wrap_mix_3, wrap_add_3},
};

#define HAS(t, member) ((t)->size >= offsetof(struct late_hip_table, member) + sizeof((t)->member))

static void put(struct late_hip_table *t, const struct late_hip_table *from)
{
	if (HAS(t, get_device_count))
		__atomic_store_n(&t->get_device_count, from->get_device_count, __ATOMIC_RELEASE);
	if (HAS(t, mix))
		__atomic_store_n(&t->mix, from->mix, __ATOMIC_RELEASE);
	if (HAS(t, add))
		__atomic_store_n(&t->add, from->add, __ATOMIC_RELEASE);
}

/* restore_table, copy_table, update_table for one HIP-like table. */
static int wrap_hip(struct late_hip_table *t)
{
	int s, ret = LATE_SDK_STATUS_SUCCESS;

	pthread_mutex_lock(&lock);
	for (s = 0; s < MAX_SLOTS && slots[s].table && slots[s].table != t; s++)
		;
	if (s == MAX_SLOTS) {
		ret = LATE_SDK_STATUS_ERROR;
		goto out;
	}
	if (slots[s].table)
		put(t, &slots[s].orig);
	slots[s].orig = *t;
	slots[s].table = t;
	put(t, &wrappers[s]);
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

static void finalize(void)
{
	int zero = 0;

	if (!atomic_compare_exchange_strong(&fini_status, &zero, -1))
		return;
	for (unsigned int i = 0; i < n_clients; i++)
		if (atomic_load(&init_status) > 0 && clients[i].configured &&
		    clients[i].result.finalize)
			clients[i].result.finalize(clients[i].result.tool_data);
	atomic_store(&fini_status, 1);
}

static void client_fini(late_sdk_client_id id)
{
	(void)id;
	finalize();
}

static void add_client(late_sdk_configure_fn fn)
{
	for (unsigned int i = 0; i < n_clients; i++)
		if (clients[i].configure == fn)
			return;
	if (n_clients < MAX_CLIENTS)
		clients[n_clients++].configure = fn;
}

static void add_library(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOLOAD | RTLD_LAZY);
	void *fn;

	if (!h)
		h = dlopen(lib, RTLD_LOCAL | RTLD_LAZY);
	if (!h) {
		fprintf(stderr, "[ROCP_TOOL_LIBRARIES] error dlopening '%s': %s\n", lib, dlerror());
		abort();
	}
	fn = dlsym(h, "rocprofiler_configure");
	if (fn)
		add_client(*(late_sdk_configure_fn *)&fn);
}

static void find_clients(void)
{
	const char *env = getenv("ROCP_TOOL_LIBRARIES");
	char *list, *p, *colon;
	void *fn;

	if (env && *env && (list = strdup(env))) {
		if (!strchr(list, ':'))
			add_library(list);
		for (p = list; (colon = strchr(p, ':')); p = colon + 1) {
			*colon = '\0';
			if (*p)
				add_library(p);
		}
		free(list);
	}
	fn = dlsym(RTLD_DEFAULT, "rocprofiler_configure");
	if (fn)
		add_client(*(late_sdk_configure_fn *)&fn);
}

static void set_register_library(void)
{
	const char *have = getenv("ROCPROFILER_REGISTER_LIBRARY");
	const char *opt = getenv("ROCPROFILER_SET_ROCPROFILER_REGISTER_LIBRARY");
	const char *force = getenv("ROCPROFILER_FORCE_ROCPROFILER_REGISTER_LIBRARY");
	Dl_info info;

	if (opt && (!strcmp(opt, "0") || !strcasecmp(opt, "false")))
		return;
	if (have && *have && !(force && strcmp(force, "0") && strcasecmp(force, "false")))
		return;
	if (dladdr((void *)set_register_library, &info) && info.dli_fname)
		setenv("ROCPROFILER_REGISTER_LIBRARY", info.dli_fname, 1);
}

static void initialize(void)
{
	atomic_store(&init_status, -1);
	set_register_library();
	atexit(finalize);
	find_clients();
	for (unsigned int i = 0; i < n_clients; i++) {
		struct client *c = &clients[i];
		late_sdk_configure_result *r;

		memcpy(&c->id, &(late_sdk_client_id){sizeof(c->id), NULL, i}, sizeof(c->id));
		r = c->configure(SDK_VERSION, SDK_VERSION_STRING, i, &c->id);
		if (!r)
			continue;
		c->result = *r;
		c->configured = true;
	}
	for (unsigned int i = 0; i < n_clients; i++)
		if (clients[i].configured && clients[i].result.initialize)
			clients[i].result.initialize(client_fini, clients[i].result.tool_data);
	atomic_store(&init_status, 1);
}

static bool known_runtime(const char *name)
{
	static const char *const others[] = {"hip_compiler", "hsa",	  "roctx",
					     "rccl",	     "rocdecode", "rocjpeg",
					     "rocshmem",     "hipFile",	  "rocattach"};

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		if (!strcmp(name, others[i]))
			return true;
	return false;
}

EXPORT int rocprofiler_set_api_table(const char *name, uint64_t lib_version, uint64_t lib_instance,
				     void **tables, uint64_t num_tables)
{
	(void)lib_version;
	(void)lib_instance;
	if (atomic_load(&fini_status) != 0)
		return 0;
	pthread_once(&once, initialize);
	if (!name || !tables || num_tables == 0)
		return LATE_SDK_STATUS_ERROR_INVALID_ARGUMENT;
	if (!strcmp(name, "hip"))
		return wrap_hip(tables[0]);
	if (known_runtime(name))
		return 0;
	return LATE_SDK_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT int rocprofiler_is_initialized(int *status)
{
	*status = atomic_load(&init_status);
	return LATE_SDK_STATUS_SUCCESS;
}

EXPORT int rocprofiler_is_finalized(int *status)
{
	*status = atomic_load(&fini_status);
	return LATE_SDK_STATUS_SUCCESS;
}

#ifndef LATE_SDK_LEAN
EXPORT int rocprofiler_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch)
{
	if (major)
		*major = LATE_SDK_MAJOR;
	if (minor)
		*minor = LATE_SDK_MINOR;
	if (patch)
		*patch = LATE_SDK_PATCH;
	return LATE_SDK_STATUS_SUCCESS;
}
#endif

EXPORT uint64_t late_sdk_double_wrapped_calls(const void *table)
{
	uint64_t n = 0;

	pthread_mutex_lock(&lock);
	for (int s = 0; s < MAX_SLOTS; s++)
		if (slots[s].table && slots[s].table == table)
			n = atomic_load_explicit(&slots[s].calls, memory_order_relaxed);
	pthread_mutex_unlock(&lock);
	return n;
}

EXPORT int late_sdk_double_set_api_callback(late_sdk_api_cb cb, void *data)
{
	atomic_store_explicit(&api_data, data, memory_order_relaxed);
	atomic_store_explicit(&api_cb, cb, memory_order_release);
	return LATE_SDK_STATUS_SUCCESS;
}

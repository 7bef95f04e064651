/* SPDX-License-Identifier: MIT */
/*
 * A test double of ROCm's target side (rocprofiler-register with the SDK's
 * attach support), written from docs/protocol.md section "ROCm's target
 * side": it behaves as ROCm's does wherever a launcher can tell, and it is
 * deliberately NOT our agent (no code shared with lib/agent/):
 *
 *  - ROCP_TOOL_ATTACH=1 at start parks one thread named rocp-bg-attach in a
 *    condition wait, every signal blocked;
 *  - rocprofiler_register_attach(env, path) applies every pair of the
 *    environment buffer with setenv and keeps them for the life of the
 *    process; the first attach loads the tool libraries (configure,
 *    configure_attach, initialize) and a load or configure failure returns
 *    6 (ROCPROFILER_ERROR); another path later returns 8
 *    (INVALID_ARGUMENT); tool_attach runs at once, inside the call: no
 *    start time is understood;
 *  - tools are configured as rocprofiler-sdk's loader does it
 *    (projects/rocprofiler-sdk/source/lib/rocprofiler-sdk/registration.cpp
 *    in ROCm/rocm-systems, commit d379662d51e6d70c96ef4591be3f9796146a8a05):
 *    the client id is {size = sizeof, name = NULL, handle} and the loader
 *    keeps its own handle apart from the copy the tool may write to;
 *    priority is the number of tools before it; a NULL result from
 *    rocprofiler_configure declines (that tool is inactive, not an error,
 *    and rocprofiler_configure_attach is not asked); version 1.3.5, the
 *    newest release in projects/rocprofiler-sdk/CHANGELOG.md (commit
 *    0029a62d9e7ccac1224c103807d7b22a64acf421); with no tool left to
 *    attach the attach fails (6): a declined tool gets no
 *    configure_attach, so no tool_attach, and the SDK's
 *    invoke_client_attaches returns ERROR_NOT_IMPLEMENTED when no client
 *    has one (registration.cpp, commit
 *    0028ad56a4c9542c4d93c85e88ea552679b347c1), which
 *    rocprofiler_register_attach turns into ROCPROFILER_ERROR
 *    (projects/rocprofiler-register/source/lib/rocprofiler-register/
 *    rocprofiler_register.cpp, commit
 *    04e1fbc5338585ecd4d2db5b4ebd89da34a0f78e): every tool declined cannot
 *    be told from a failure on this side;
 *  - rocprofiler_register_detach() runs tool_detach inside the call;
 *  - no watchdog: a tool stays attached when the attacher dies.
 *
 * Built as librocprofiler-register.so.0 (the file name AMD's attacher
 * looks for). Tests only: it trusts its caller as ROCm's code does.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The SDK's types, written here from its headers (not from our tool.h), in
 * ROCm/rocm-systems projects/rocprofiler-sdk/source/include/rocprofiler-sdk/:
 * registration.h (commit 1803c2273abdb5c1bdb8617d06fd1650ee674e6a) and
 * experimental/registration.h (commit 410f315dd17c897d67d9864b413d4630bb3cf85a).
 * Only what a loader touches; callbacks as untyped where it never calls them.
 */
typedef struct {
	size_t size;
	const char *name;
	const uint32_t handle;
} sdk_client_id;

typedef struct {
	size_t size;
	int (*initialize)(void (*fini)(sdk_client_id), void *tool_data);
	void (*finalize)(void *tool_data);
	void *tool_data;
} sdk_configure_result;

typedef struct {
	size_t size;
	int (*tool_attach)(void (*detach)(sdk_client_id), void *context_ids,
			   uint64_t context_ids_length, void *tool_data);
	void (*tool_detach)(void *tool_data);
	void *tool_data;
} sdk_configure_attach_result;

/* rocprofiler-register's error codes, in its order (docs/protocol.md section 2). */
enum {
	REG_SUCCESS = 0,
	REG_DEADLOCK = 2,
	REG_ROCPROFILER_ERROR = 6,
	REG_INVALID_ARGUMENT = 8,
	REG_ATTACHMENT_NOT_AVAILABLE = 9,
};

#define EXPORT __attribute__((visibility("default")))
#define SDK_VERSION 10305u /* rocprofiler-sdk 1.3.5 */
#define SDK_VERSION_STRING "1.3.5"
#define MAX_TOOLS 16

typedef sdk_configure_result *(*configure_fn)(uint32_t, const char *, uint32_t, sdk_client_id *);
typedef sdk_configure_attach_result *(*configure_attach_fn)(uint32_t, const char *, uint32_t,
							    sdk_client_id *);

struct client {
	sdk_client_id id; /* the tool's to write to */
	uint32_t handle;  /* the loader's own */
	sdk_configure_attach_result attach;
	bool active;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t named_cond = PTHREAD_COND_INITIALIZER;
static bool enabled, attached, named;
static char *first_path;
static struct client clients[MAX_TOOLS];
static unsigned int n_clients, n_active;

static void *listener(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "rocp-bg-attach");
	pthread_mutex_lock(&park_lock);
	named = true;
	pthread_cond_signal(&named_cond);
	for (;;)
		pthread_cond_wait(&park_cond, &park_lock);
	return NULL;
}

/* The buffer: uint32_t count, then count pairs "name\0value\0". */
static void apply_env(const char *buf)
{
	uint32_t count;
	const char *p;

	if (!buf)
		return;
	memcpy(&count, buf, sizeof(count));
	p = buf + sizeof(count);
	for (uint32_t i = 0; i < count; i++) {
		const char *name = p, *value = p + strlen(p) + 1;

		p = value + strlen(value) + 1;
		if (strcmp(name, "ROCPROFILER_REGISTER_TOOL_ATTACHED"))
			setenv(name, value, 1);
	}
}

static int load_one(const char *lib)
{
	struct client *c = &clients[n_clients];
	configure_attach_fn cfg_attach;
	configure_fn cfg;
	sdk_configure_result *res;
	void *h;

	if (n_clients == MAX_TOOLS)
		return -1;
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	cfg = (configure_fn)dlsym(h, "rocprofiler_configure");
	cfg_attach = (configure_attach_fn)dlsym(h, "rocprofiler_configure_attach");
	if (!cfg)
		return -1;
	c->handle = n_clients;
	memcpy(&c->id, &(sdk_client_id){.size = sizeof(c->id), .name = NULL, .handle = c->handle},
	       sizeof(c->id));
	n_clients++;
	res = cfg(SDK_VERSION, SDK_VERSION_STRING, c->handle, &c->id);
	if (!res)
		return 0; /* declined: inactive, not an error */
	if (cfg_attach) {
		sdk_configure_attach_result *a =
		    cfg_attach(SDK_VERSION, SDK_VERSION_STRING, c->handle, &c->id);

		if (a)
			c->attach = *a; /* the loader keeps a copy */
	}
	if (res->initialize && res->initialize(NULL, res->tool_data))
		return -1;
	c->active = true;
	n_active++;
	return 0;
}

static int load_tools(const char *path)
{
	char *list = strdup(path), *save = NULL, *lib;
	int ret = 0;

	if (!list)
		return REG_ROCPROFILER_ERROR;
	for (lib = strtok_r(list, ":", &save); lib; lib = strtok_r(NULL, ":", &save))
		if (load_one(lib))
			ret = REG_ROCPROFILER_ERROR;
	free(list);
	if (!ret && !n_active)
		ret = REG_ROCPROFILER_ERROR;
	return ret;
}

EXPORT int rocprofiler_register_attach(const char *env, const char *path)
{
	int ret = REG_SUCCESS;

	if (!path)
		return REG_INVALID_ARGUMENT;
	if (pthread_mutex_trylock(&lock))
		return REG_DEADLOCK;
	if (!enabled) {
		ret = REG_ATTACHMENT_NOT_AVAILABLE;
		goto out;
	}
	if (first_path && strcmp(first_path, path)) {
		ret = REG_INVALID_ARGUMENT;
		goto out;
	}
	apply_env(env);
	if (!first_path) {
		ret = load_tools(path);
		if (ret)
			goto out;
		first_path = strdup(path);
	}
	for (unsigned int i = 0; i < n_clients; i++)
		if (clients[i].active && clients[i].attach.tool_attach)
			clients[i].attach.tool_attach(NULL, NULL, 0, clients[i].attach.tool_data);
	attached = true;
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

EXPORT int rocprofiler_register_detach(void)
{
	int ret = REG_SUCCESS;

	if (pthread_mutex_trylock(&lock))
		return REG_DEADLOCK;
	if (!attached) {
		ret = REG_INVALID_ARGUMENT;
		goto out;
	}
	for (unsigned int i = 0; i < n_clients; i++)
		if (clients[i].active && clients[i].attach.tool_detach)
			clients[i].attach.tool_detach(clients[i].attach.tool_data);
	attached = false;
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

__attribute__((constructor)) static void register_init(void)
{
	const char *v = getenv("ROCP_TOOL_ATTACH");
	sigset_t all, old;
	pthread_t th;

	if (!v || (strcmp(v, "1") && strcasecmp(v, "true")))
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	enabled = !pthread_create(&th, NULL, listener, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!enabled)
		return;
	pthread_detach(th);
	/* An attacher right after start finds the thread named and parked. */
	pthread_mutex_lock(&park_lock);
	while (!named)
		pthread_cond_wait(&named_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

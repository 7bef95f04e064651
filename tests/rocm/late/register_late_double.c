/* SPDX-License-Identifier: MIT */
/*
 * A double of rocprofiler-register's registration store for the late start,
 * written from the upstream text (never copied, no code shared with
 * tests/rocm/register_double.c or lib/): ROCm/rocm-systems
 * projects/rocprofiler-register/source/lib/rocprofiler-register/
 * rocprofiler_register.cpp, commit 04e1fbc5338585ecd4d2db5b4ebd89da34a0f78e.
 *
 *  - rocprofiler_register_library_api_table(name, import, version, tables,
 *    count, id): a count below 1 is BAD_API_TABLE_LENGTH;
 *    ROCPROFILER_REGISTER_ENABLED=0 is NO_TOOLS (nothing kept); a second
 *    caller inside the library at once is DEADLOCK; a name not in the list
 *    is UNSUPPORTED_API; a ninth instance of a name is EXCESS_API_INSTANCES;
 *    id->handle = 8 * name index + instance. The table pointers are kept
 *    (the array is copied, the tables are not). Tools are looked for first:
 *    if one is found the tables go to rocprofiler_set_api_table at once
 *    (a failure there is ROCPROFILER_ERROR) and are marked propagated;
 *    with none found the call returns NO_TOOLS, tables kept all the same;
 *  - a tool is "found" when rocprofiler_configure is visible
 *    (dlsym(RTLD_DEFAULT)) or ROCPROFILER_REGISTER_FORCE_LOAD is true; its
 *    default is true when ROCP_TOOL_LIBRARIES or ROCPROFILER_REGISTER_LIBRARY
 *    is set and not empty;
 *  - the SDK: rocprofiler_set_api_table visible already (RTLD_DEFAULT), else
 *    ROCPROFILER_REGISTER_LIBRARY (default librocprofiler-sdk.so) opened
 *    RTLD_NOLOAD, then RTLD_GLOBAL | RTLD_LAZY as given, then beside this
 *    library, then by its base name. Kept for later calls only when opened
 *    by handle. None found while a tool is asked for: glog's LOG(FATAL),
 *    "rocprofiler_set_api_table not found. Tried to dlopen LIB", then abort;
 *  - rocprofiler_register_invoke_all_registrations() ("can be invoked by
 *    ptrace") hands every kept table to the SDK again, propagated or not;
 *    ..._invoke_nonpropagated_registrations() only those not yet handed.
 *    With no tool asked for they do nothing and return SUCCESS; the same
 *    DEADLOCK guard applies;
 *  - rocprofiler_register_attach/detach: ATTACHMENT_NOT_AVAILABLE, as
 *    upstream when the attach library was never registered (this double
 *    never loads librocprofiler-sdk-attach.so).
 *
 * Left out (not on the late path): secure mode (ROCPROFILER_REGISTER_SECURE),
 * the attach library's HSA table (ROCP_TOOL_ATTACH), runtime activation
 * callbacks. Boolean variables read "0", "false", "off", "no" as false, any
 * other value as true (an assumption: common::get_env<bool> was not read).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "late_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_KEPT (LATE_REG_NAMES * LATE_REG_INSTANCES_PER_NAME)

#ifndef LATE_REG_SONAME
#define LATE_REG_SONAME "librocprofiler-register.so.0"
#endif

static const char *const names[LATE_REG_NAMES] = {
    "hsa", "hip", "roctx", "hip_compiler", "rccl", "rocdecode", "rocjpeg", "rocattach",
};

static const char *const messages[LATE_REG_ERROR_CODE_END] = {
    "Success",
    "rocprofiler-register found no tools",
    "rocprofiler-register deadlocked",
    "Library passed an invalid number of API tables",
    "Library's API is not supported",
    "Invalid API address (secure mode enabled)",
    "Unspecified rocprofiler-register error",
    "Too many instances of the same library API were registered",
    "rocprofiler-register API function was provided an invalid argument",
    "rocprofiler-register attach was invoked, but the attachment library was never loaded.",
};

struct kept {
	atomic_bool used;
	bool propagated;
	const char *name;
	late_reg_import_fn import;
	uint32_t version;
	void **tables;
	uint64_t count;
	uint64_t instance;
};

static struct kept kept[MAX_KEPT];
static atomic_uint instances[LATE_REG_NAMES];
static atomic_uint inside;
static void *sdk_handle;
static late_sdk_set_api_table_fn sdk_set_api_table;

static void fatal(const char *what, const char *lib)
{
	char line[1024];
	struct timeval tv;
	struct tm tm;
	int n;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	/* glog's FATAL line, then its abort. */
	n = snprintf(line, sizeof(line),
		     "F%02d%02d %02d:%02d:%02d.%06ld %d rocprofiler_register.cpp] %s%s\n"
		     "*** Check failure stack trace: ***\n",
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec,
		     (int)getpid(), what, lib);
	if (n > 0)
		(void)!write(STDERR_FILENO, line,
			     (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
	abort();
}

static bool env_bool(const char *name, bool def)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return def;
	return strcmp(v, "0") && strcasecmp(v, "false") && strcasecmp(v, "off") &&
	       strcasecmp(v, "no");
}

static bool env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

/* Where this library lies: found by its file name, as upstream does. */
static void this_dir(char *dir, size_t len)
{
	struct link_map *map = NULL;
	void *self = dlopen(LATE_REG_SONAME, RTLD_NOLOAD | RTLD_LAZY);
	char *slash;

	if (!self || dlinfo(self, RTLD_DI_LINKMAP, &map) || !map || !map->l_name)
		fatal(LATE_REG_SONAME, " could not locate itself in the list of loaded libraries");
	snprintf(dir, len, "%s", map->l_name);
	dlclose(self);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, len, ".");
}

static void *open_sdk(const char *lib)
{
	char dir[4096], path[8192];
	const char *base = strrchr(lib, '/');
	void *h;

	h = dlopen(lib, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)
		h = dlopen(lib, RTLD_GLOBAL | RTLD_LAZY);
	if (!h && lib[0] != '/') {
		this_dir(dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/%s", dir, lib);
		h = dlopen(path, RTLD_GLOBAL | RTLD_LAZY);
	}
	if (!h)
		h = dlopen(base ? base + 1 : lib, RTLD_GLOBAL | RTLD_LAZY);
	return h;
}

/* The SDK's rocprofiler_set_api_table when a tool is asked for, else NULL. */
static late_sdk_set_api_table_fn scan_for_tools(void)
{
	bool force =
	    env_bool("ROCPROFILER_REGISTER_FORCE_LOAD",
		     env_set("ROCPROFILER_REGISTER_LIBRARY") || env_set("ROCP_TOOL_LIBRARIES"));
	const char *lib = getenv("ROCPROFILER_REGISTER_LIBRARY");
	late_sdk_set_api_table_fn fn;
	void *h;

	if (!force && !dlsym(RTLD_DEFAULT, "rocprofiler_configure"))
		return NULL;
	if (sdk_handle && sdk_set_api_table)
		return sdk_set_api_table;
	if (!lib || !*lib)
		lib = "librocprofiler-sdk.so";
	*(void **)&fn = dlsym(RTLD_DEFAULT, "rocprofiler_set_api_table");
	if (fn)
		return fn;
	h = open_sdk(lib);
	if (h)
		*(void **)&fn = dlsym(h, "rocprofiler_set_api_table");
	if (!fn)
		fatal("rocprofiler_set_api_table not found. Tried to dlopen ", lib);
	sdk_handle = h;
	sdk_set_api_table = fn;
	return fn;
}

static int name_index(const char *name)
{
	for (unsigned int i = 0; i < LATE_REG_NAMES; i++)
		if (name && !strcmp(name, names[i]))
			return (int)i;
	return -1;
}

static struct kept *keep(const char *name, late_reg_import_fn import, uint32_t version,
			 void **tables, uint64_t count, uint64_t instance)
{
	for (unsigned int i = 0; i < MAX_KEPT; i++) {
		struct kept *k = &kept[i];

		if (atomic_load(&k->used))
			continue;
		k->tables = malloc(count * sizeof(*tables));
		if (!k->tables)
			return NULL;
		memcpy(k->tables, tables, count * sizeof(*tables));
		k->name = name;
		k->import = import;
		k->version = version;
		k->count = count;
		k->instance = instance;
		k->propagated = false;
		atomic_store(&k->used, true);
		return k;
	}
	return NULL;
}

static int invoke(bool all)
{
	int ret = LATE_REG_SUCCESS;

	if (atomic_fetch_add(&inside, 1) > 0) {
		ret = LATE_REG_DEADLOCK;
		goto out;
	}
	for (unsigned int i = 0; i < MAX_KEPT; i++) {
		struct kept *k = &kept[i];
		late_sdk_set_api_table_fn fn;

		if (!atomic_load(&k->used) || (k->propagated && !all))
			continue;
		fn = scan_for_tools();
		if (!fn)
			continue;
		if (fn(k->name, k->version, k->instance, k->tables, k->count)) {
			ret = LATE_REG_ROCPROFILER_ERROR;
			goto out;
		}
		k->propagated = true;
	}
out:
	atomic_fetch_sub(&inside, 1);
	return ret;
}

static int do_register(const char *name, late_reg_import_fn import, uint32_t version, void **tables,
		       uint64_t count, late_reg_id *id)
{
	late_sdk_set_api_table_fn fn = scan_for_tools();
	int idx = name_index(name);
	unsigned int inst;
	struct kept *k;

	if (idx < 0)
		return LATE_REG_UNSUPPORTED_API;
	if (atomic_load(&instances[idx]) >= LATE_REG_INSTANCES_PER_NAME)
		return LATE_REG_EXCESS_API_INSTANCES;
	inst = atomic_fetch_add(&instances[idx], 1);
	id->handle = LATE_REG_INSTANCES_PER_NAME * (unsigned int)idx + inst;
	k = keep(name, import, version, tables, count, inst);
	if (!fn)
		return LATE_REG_NO_TOOLS;
	if (fn(name, version, inst, tables, count))
		return LATE_REG_ROCPROFILER_ERROR;
	if (k)
		k->propagated = true;
	return LATE_REG_SUCCESS;
}

EXPORT int rocprofiler_register_library_api_table(const char *name, late_reg_import_fn import,
						  uint32_t version, void **tables, uint64_t count,
						  late_reg_id *id)
{
	int ret;

	if (count < 1)
		return LATE_REG_BAD_API_TABLE_LENGTH;
	if (!env_bool("ROCPROFILER_REGISTER_ENABLED", true))
		return LATE_REG_NO_TOOLS;
	if (atomic_fetch_add(&inside, 1) > 0)
		ret = LATE_REG_DEADLOCK;
	else
		ret = do_register(name, import, version, tables, count, id);
	atomic_fetch_sub(&inside, 1);
	return ret;
}

EXPORT const char *rocprofiler_register_error_string(int code)
{
	if (code < 0 || code >= LATE_REG_ERROR_CODE_END)
		return "rocprofiler_register_unknown_error";
	return messages[code];
}

EXPORT int rocprofiler_register_iterate_registration_info(late_reg_info_cb cb, void *data)
{
	for (unsigned int i = 0; i < MAX_KEPT; i++) {
		struct kept *k = &kept[i];
		late_reg_info info;

		if (!atomic_load(&k->used))
			continue;
		info = (late_reg_info){.size = sizeof(info),
				       .common_name = k->name,
				       .lib_version = k->version,
				       .api_table_length = k->count};
		if (cb(&info, data) != LATE_REG_SUCCESS)
			break;
	}
	return LATE_REG_SUCCESS;
}

EXPORT int rocprofiler_register_invoke_nonpropagated_registrations(void)
{
	return invoke(false);
}

EXPORT int rocprofiler_register_invoke_all_registrations(void)
{
	return invoke(true);
}

EXPORT int rocprofiler_register_attach(const char *env, const char *tool_path)
{
	(void)env;
	(void)tool_path;
	return LATE_REG_ATTACHMENT_NOT_AVAILABLE;
}

EXPORT int rocprofiler_register_detach(void)
{
	return LATE_REG_ATTACHMENT_NOT_AVAILABLE;
}

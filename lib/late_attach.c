/* SPDX-License-Identifier: MIT */
/*
 * --late-start, the attacher's side: the pre-checks (late_check.c), the
 * start library loaded and called by ra_inject_call (inject.c), then its
 * status read with process_vm_readv until the start's thread is done or
 * the deadline passes. See include/rocattach/rocattach.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#include "common/clock.h"
#include "common/protocol.h"
#include "inject.h"
#include "late_check.h"
#include "target_path.h"
#include "log.h"
#include "session.h"
#include "symbols.h"
#include "target_memory.h"

extern char **environ;

#define LATE_POLL_NS 2000000L
#define LATE_DEFAULT_TIMEOUT_MS 10000u

struct blob {
	char *buf;
	size_t len, cap;
	int err;
};

static void put(struct blob *b, char kind, const char *a, const char *c)
{
	size_t n = 1 + strlen(a) + (c ? strlen(c) : 0) + 1;
	char *nb;

	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		nb = realloc(b->buf, b->cap);
		if (!nb) {
			b->err = -ENOMEM;
			return;
		}
		b->buf = nb;
	}
	b->len += (size_t)sprintf(b->buf + b->len, "%c%s%s", kind, a, c ? c : "") + 1;
	b->buf[b->len] = '\0';
}

/* ROCP* of ours that must not cross: the listener's switch, and the two we pin. */
static bool crosses(const char *kv)
{
	static const char *const ours[] = {
	    "ROCP_TOOL_ATTACH=", "ROCP_TOOL_LIBRARIES=", "ROCPROFILER_REGISTER_LIBRARY="};

	if (strncmp(kv, "ROCP", 4) || ra_env_is_private(kv, strlen(kv)))
		return false;
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strncmp(kv, ours[i], strlen(ours[i])))
			return false;
	return true;
}

/*
 * The next tool of a colon-separated list, as its real path, into abs
 * (PATH_MAX): 1, or 0 at the list's end. Empty entries and paths that do not
 * resolve are skipped.
 */
static int next_tool(const char **t, char *abs)
{
	char one[PATH_MAX];

	while (**t) {
		size_t n = strcspn(*t, ":");

		snprintf(one, sizeof(one), "%.*s", (int)n, *t);
		*t += n + ((*t)[n] == ':');
		if (one[0] && realpath(one, abs))
			return 1;
	}
	return 0;
}

/* Tools as absolute paths, colon-separated, for ROCP_TOOL_LIBRARIES. */
static void put_tools(struct blob *b, const char *tools, char *list, size_t len)
{
	char abs[PATH_MAX];
	size_t k = 0;

	list[0] = '\0';
	for (const char *t = tools; next_tool(&t, abs);) {
		put(b, 'T', abs, NULL);
		k += (size_t)snprintf(list + k, len > k ? len - k : 0, "%s%s", k ? ":" : "", abs);
	}
}

static int build(const rocattach_opts_t *o, const char *tools, const struct ra_late_plan *p,
		 struct blob *b)
{
	bool secure = getauxval(AT_SECURE) != 0;
	char list[8192];

	put(b, 'S', p->sdk, NULL);
	put_tools(b, tools, list, sizeof(list));
	for (size_t i = 0; !secure && environ && environ[i]; i++)
		if (crosses(environ[i]))
			put(b, 'E', environ[i], NULL);
	for (size_t i = 0; o->env && o->env[i]; i++)
		if (crosses(o->env[i]))
			put(b, 'E', o->env[i], NULL);
	put(b, 'E', "ROCP_TOOL_LIBRARIES=", list);
	put(b, 'E', "ROCPROFILER_REGISTER_LIBRARY=", p->sdk);
	for (size_t i = 0; i < p->ncopies; i++)
		put(b, 'R', p->copy[i], NULL);
	if (!b->err && b->len + 1 > RA_LATE_BUF_MAX)
		b->err = -E2BIG;
	b->len++; /* the empty string that ends it */
	return b->err;
}

static int late_lib(char *path, size_t len, struct ra_err *e)
{
	char where[PATH_MAX];

	if (!ra_own_lib_path(NULL, "ROCATTACH_LATE", RA_LATE_SONAME, path, len, where,
			     sizeof(where)))
		return 0;
	return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			 "cannot find " RA_LATE_SONAME " for --late-start beside %s: set "
			 "ROCATTACH_LATE=/path/to/" RA_LATE_SONAME,
			 where);
}

/* Where the start library's status is in the target. */
static int status_addr(pid_t pid, uint64_t *addr, struct ra_err *e)
{
	static const char *const names[] = {RA_LATE_BEGIN, RA_LATE_STATUS};
	static const char *const only[] = {RA_LATE_SONAME, NULL};
	struct ra_maps maps = {0};
	uint64_t a[2] = {0, 0};
	int ret = ra_maps_read(RA_PROCFS, pid, &maps);

	if (!ret)
		ret = ra_symbols_find_only(RA_PROCFS, pid, &maps, names, 2, 1, only, a, e);
	ra_maps_free(&maps);
	*addr = a[1];
	if (!ret && !a[1])
		ret = -ENOENT;
	if (ret)
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR,
				 "process %d: the start library's status is not found", pid);
	return 0;
}

/* The start's status once it is done, or the deadline's. */
static int wait_done(pid_t pid, uint64_t addr, uint32_t ms, struct ra_late_status *st,
		     struct ra_err *e)
{
	uint64_t deadline = ra_monotonic_ns() + (uint64_t)ms * RA_NS_PER_MS;
	const struct timespec nap = {0, LATE_POLL_NS};

	for (;;) {
		if (ra_mem_read(pid, addr, st, sizeof(*st), e))
			return -1;
		if (st->magic != RA_LATE_MAGIC)
			return RA_REFUSE(e, ROCATTACH_STATUS_ERROR,
					 "process %d: the start library's status is not ours", pid);
		if (st->state == RA_LATE_DONE)
			return 0;
		if (ra_monotonic_ns() > deadline)
			return RA_REFUSE(e, ROCATTACH_STATUS_ERROR,
					 "process %d: the start did not end within %u ms (stuck in "
					 "the SDK's or a tool's start?); its thread goes on",
					 pid, ms);
		nanosleep(&nap, NULL);
	}
}

static void outcome(pid_t pid, const struct ra_late_status *st, rocattach_late_report_t *r,
		    struct ra_err *e)
{
	r->register_started = st->copies;
	r->initialized = st->initialized;
	r->begin_ns = st->begin_ns;
	r->done_ns = st->end_ns;
	if (st->stage == RA_LATE_OK && st->initialized == 1) {
		r->route = ROCATTACH_LATE_STARTED;
		return;
	}
	r->route = ROCATTACH_LATE_FAILED;
	if (st->stage != RA_LATE_OK)
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "process %d: the late start failed: %.*s",
			   pid, (int)sizeof(st->message), st->message);
	else
		ra_err_set(e, ROCATTACH_STATUS_ERROR,
			   "process %d: the late start ran but the SDK is not initialized "
			   "(rocprofiler_is_initialized: %d): no tool runs",
			   pid, st->initialized);
}

static int start(pid_t pid, const rocattach_opts_t *o, const char *tools,
		 const struct ra_late_plan *p, rocattach_late_report_t *r, struct ra_err *e)
{
	uint32_t ms = o->call_timeout_ms ? o->call_timeout_ms : LATE_DEFAULT_TIMEOUT_MS;
	struct ra_inject_call c = {.fn = RA_LATE_BEGIN, .object = RA_LATE_SONAME};
	struct blob b = {0};
	struct ra_late_status st;
	char lib[PATH_MAX];
	uint64_t addr;
	int ret = -1;

	if (late_lib(lib, sizeof(lib), e))
		return -1;
	if (build(o, tools, p, &b)) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "the start's variables: %s",
			   strerror(-b.err));
		goto out;
	}
	c.lib = lib;
	c.arg = b.buf;
	c.arglen = b.len;
	r->route = ROCATTACH_LATE_FAILED;
	if (ra_inject_call(pid, &c, &r->pause_ns, e) || status_addr(pid, &addr, e) ||
	    wait_done(pid, addr, ms, &st, e))
		goto out;
	outcome(pid, &st, r, e);
	ret = r->route == ROCATTACH_LATE_STARTED ? 0 : -1;
out:
	free(b.buf);
	return ret;
}

/*
 * The start library, the tools and the SDK, by the paths the target gets:
 * the files checked here (target_path.h).
 */
static int seen_alike(pid_t pid, const char *tools, const struct ra_late_plan *p, struct ra_err *e)
{
	char abs[PATH_MAX];

	if (late_lib(abs, sizeof(abs), e) || ra_target_same_file(pid, "the start library", abs, e))
		return -1;
	for (const char *t = tools; next_tool(&t, abs);)
		if (ra_target_same_file(pid, "the tool", abs, e))
			return -1;
	return ra_target_same_file(pid, "the SDK", p->sdk, e);
}

/* Options and report as the caller's size allows; the pre-checks. */
static int check(int pid, const rocattach_opts_t *opts, rocattach_late_report_t *r,
		 struct ra_late_plan *p, const char **tools, struct ra_err *e)
{
	int ret;

	if (pid <= 0 || !opts || opts->size < sizeof(*opts) || !r || r->size < sizeof(*r))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "rocattach_late_start: bad argument (pid %d)", pid);
	*tools = ra_tool_list_for(opts);
	ret = ra_late_check(RA_PROCFS, pid, *tools, p, e);
	if (!ret)
		ret = seen_alike(pid, *tools, p, e);
	snprintf(r->sdk, sizeof(r->sdk), "%s", p->sdk);
	r->register_copies = (uint32_t)p->ncopies;
	if (ret == RA_LATE_NORMAL)
		r->route = ROCATTACH_LATE_ATTACHABLE;
	return ret;
}

static rocattach_status_t finish(rocattach_late_report_t *r, const struct ra_err *e, int ret)
{
	r->end_ns = ra_realtime_ns();
	r->status = ret ? (e->status ? e->status : ROCATTACH_STATUS_ERROR) : 0;
	snprintf(r->message, sizeof(r->message), "%s", ret ? e->msg : "");
	if (ret && r->route != ROCATTACH_LATE_ATTACHABLE)
		ra_error("%s", e->msg);
	return r->status;
}

static void report_init(rocattach_late_report_t *r)
{
	size_t size = r->size;

	memset(r, 0, size);
	r->size = size;
	r->initialized = -2;
	r->start_ns = ra_realtime_ns();
}

rocattach_status_t rocattach_late_start(int pid, const rocattach_opts_t *opts,
					rocattach_late_report_t *r)
{
	struct ra_err e = {0};
	struct ra_late_plan p;
	const char *tools;
	int ret;

	if (!r || r->size < sizeof(*r))
		return ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT;
	report_init(r);
	ret = check(pid, opts, r, &p, &tools, &e);
	if (ret == RA_LATE_NORMAL)
		e.status = ROCATTACH_STATUS_ERROR_NOT_SUPPORTED;
	if (!ret)
		ret = start(pid, opts, tools, &p, r, &e);
	return finish(r, &e, ret);
}

/* SPDX-License-Identifier: MIT */
/* Loading the agent into a process that was started without it (--inject). */
#ifndef RA_INJECT_H
#define RA_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * The agent to load: explicit path, else $ROCATTACH_AGENT, else next to the
 * object this code is in. 0 and path, or -ENOENT with e set.
 */
int ra_own_lib_path(const char *explicit_path, const char *env_name, const char *soname, char *path,
		    size_t len, char *where, size_t wlen);
int ra_inject_agent_path(const char *explicit_path, char *path, size_t len, struct ra_err *e);

/*
 * dlopen(agent) on one thread of pid (a sleeping one if any), then
 * rocattach_agent_enable(). *pause_ns receives how long that application
 * thread was stopped. 0, or -1 with e set (nothing left behind).
 */
int ra_inject(pid_t pid, const char *agent, uint64_t *pause_ns, struct ra_err *e) RA_MUST_CHECK;

/* A library to load into a process and one function of it to call. */
struct ra_inject_call {
	const char *lib;    /* its path, as the target sees it */
	const char *fn;	    /* int fn(const void *arg, uint64_t arglen), or int fn(void) */
	const char *object; /* the loaded object's basename prefix, searched first for fn */
	const void *arg;    /* NULL: fn() */
	size_t arglen;
};

/*
 * As ra_inject, for any library: dlopen(c->lib) on a loader thread (one
 * application thread, a sleeping one if any, is stopped only to create it;
 * *pause_ns says how long), then c->fn with c->arg copied onto the loader's
 * stack; fn must copy what it keeps and return at once. 0 (fn returned 0),
 * or -1 with e set.
 */
int ra_inject_call(pid_t pid, const struct ra_inject_call *c, uint64_t *pause_ns,
		   struct ra_err *e) RA_MUST_CHECK;

struct ra_remote;
/*
 * dlopen(libs[i], RTLD_NOW) for each i on the thread r holds (a listener,
 * parked holding no lock). A library that does not load is skipped: the
 * target's own load reports it later. -1 (r's error set) only when the
 * thread could not be driven.
 */
int ra_preload(struct ra_remote *r, const char *const *libs, size_t n) RA_MUST_CHECK;

/*
 * dlopen(lib, RTLD_NOW) on the thread r holds (a listener, parked holding no
 * lock). 0; -ENOENT (no dlopen in the process) or -ENOEXEC (dlopen returned
 * NULL) with e saying why, the thread still ours; other: it could not be
 * driven (r's error set).
 */
int ra_remote_dlopen(struct ra_remote *r, const char *lib, struct ra_err *e) RA_MUST_CHECK;

#endif

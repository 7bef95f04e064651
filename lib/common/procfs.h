/* SPDX-License-Identifier: MIT */
/*
 * Readers for /proc/PID files, shared by the library (lib/) and the node
 * layer (node/): libc only. Every function takes the proc root ("/proc" when
 * NULL or RA_PROCFS in production, a captured tree under tests/data/ in unit
 * tests), and every parser also exists as a *_parse() on an in-memory text so
 * it can be fuzzed. Returns are 0 or -errno; nothing here logs or exits.
 *
 *   proc_file.c    paths and whole files of one pid: exe, comm, any file
 *   proc_maps.c    maps and auxv
 *   proc_tree.c    pids, threads, children and trees
 *   proc_status.c  status and stat
 */
#ifndef RA_COMMON_PROCFS_H
#define RA_COMMON_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RA_PROCFS "/proc"

/* As in lib/err.h (this header is shared with node/ and the agent, which do not include it). */
#ifndef RA_MUST_CHECK
#define RA_MUST_CHECK __attribute__((warn_unused_result))
#endif

/* ---- paths and files (proc_file.c) ---- */

/*
 * Read a whole /proc file into a malloc'd NUL-terminated buffer (/proc files
 * report size 0, so this reads until EOF). Shared by the readers below.
 */
int ra_read_file(const char *path, char **out, size_t *len) RA_MUST_CHECK;

/* "<procfs>/<pid>/<rest>", or "<procfs>/<pid>" when rest is NULL; -ENAMETOOLONG. */
int ra_proc_path(char *buf, size_t len, const char *procfs, pid_t pid,
		 const char *rest) RA_MUST_CHECK;

/*
 * <procfs>/PID/NAME whole (ra_read_file; NAME may be "task/TID/comm").
 * -ESRCH when the process is gone, -ENOENT when only the file is missing.
 */
int ra_proc_read(const char *procfs, pid_t pid, const char *name, char **out,
		 size_t *len) RA_MUST_CHECK;

/* 0 if <procfs>/PID exists (a zombie does), else -errno (-ENOENT: no such process). */
int ra_proc_exists(const char *procfs, pid_t pid) RA_MUST_CHECK;

/*
 * The path <procfs>/PID/exe links to, without the " (deleted)" the kernel
 * appends to an unlinked file. -errno of readlink: -ENOENT for a kernel
 * thread or a zombie, -EACCES for another user's process; -ENAMETOOLONG.
 */
int ra_proc_exe(const char *procfs, pid_t pid, char *buf, size_t size) RA_MUST_CHECK;

/* <procfs>/PID/comm without its newline, cut to size. */
int ra_proc_comm(const char *procfs, pid_t pid, char *buf, size_t size) RA_MUST_CHECK;

/* ---- maps and auxv (proc_maps.c) ---- */

/* One line of /proc/PID/maps. */
struct ra_map {
	uint64_t start, end, offset;
	unsigned int dev_major, dev_minor;
	uint64_t inode;
	bool r, w, x, p; /* permissions; p = private */
	bool deleted;	 /* path ended in " (deleted)" (suffix removed from path) */
	char *path;	 /* "" for anonymous; "[stack]" etc. kept as is */
};

struct ra_maps {
	struct ra_map *v;
	size_t n;
};

/* Parse maps text (len bytes, need not be NUL-terminated). -EINVAL on a malformed line. */
int ra_maps_parse(const char *text, size_t len, struct ra_maps *out) RA_MUST_CHECK;
int ra_maps_read(const char *procfs, pid_t pid, struct ra_maps *out) RA_MUST_CHECK;
void ra_maps_free(struct ra_maps *m);
/* The mapping containing addr, or NULL. */
const struct ra_map *ra_maps_find(const struct ra_maps *m, uint64_t addr);

/* Value of auxv entry `type` (AT_ENTRY, AT_SECURE, ...) of a 64-bit process. -ENOENT if absent. */
int ra_auxv_parse(const void *data, size_t len, uint64_t type, uint64_t *val) RA_MUST_CHECK;
int ra_auxv_read(const char *procfs, pid_t pid, uint64_t type, uint64_t *val) RA_MUST_CHECK;

/* ---- pids, threads, children, trees (proc_tree.c) ---- */

/*
 * Every process under procfs (its numeric entries), ascending. *out is
 * malloc'd (NULL when *n == 0). -errno when procfs cannot be listed.
 */
int ra_proc_pids(const char *procfs, pid_t **out, size_t *n) RA_MUST_CHECK;

/*
 * The first thread of pid whose /proc/PID/task/TID/comm equals comm exactly
 * (trailing newline ignored). 0 and *tid, -ENOENT if none, -ESRCH if pid is gone.
 */
int ra_find_thread_by_comm(const char *procfs, pid_t pid, const char *comm,
			   pid_t *tid) RA_MUST_CHECK;

/*
 * Direct children of pid: the union of /proc/PID/task/TID/children over all
 * threads, in thread order, without duplicates. *out is malloc'd (may be NULL when *n == 0).
 */
int ra_children_parse(const char *text, size_t len, pid_t **out, size_t *n) RA_MUST_CHECK;
int ra_children(const char *procfs, pid_t pid, pid_t **out, size_t *n) RA_MUST_CHECK;

/*
 * Breadth-first snapshot of pid and its descendants; out[0] == pid.
 * -ESRCH if pid does not exist.
 */
int ra_tree(const char *procfs, pid_t pid, pid_t **out, size_t *n) RA_MUST_CHECK;

/* ---- status and stat (proc_status.c) ---- */

/* Fields of /proc/PID/status that callers need. */
struct ra_status {
	char name[64]; /* Name: */
	char state;    /* first letter of State: */
	pid_t tgid;
	pid_t ppid;
	pid_t tracer_pid; /* TracerPid: */
	uid_t uid_real, uid_effective;
	pid_t nspid[8]; /* NSpid: outermost first */
	int nspid_n;
	/* SigBlk (this thread's), SigIgn, SigCgt: bit n-1 is signal n; valid if sigs_known. */
	uint64_t sig_blocked, sig_ignored, sig_caught;
	bool sigs_known;
};
int ra_status_parse(const char *text, size_t len, struct ra_status *st) RA_MUST_CHECK;
int ra_status_read(const char *procfs, pid_t pid, struct ra_status *st) RA_MUST_CHECK;

/*
 * The value of one line "KEY:\tVALUE" of /proc/PID/status, any length
 * (Cpus_allowed_list of a large node): leading blanks skipped, without its
 * newline. *out is malloc'd. -ENOENT if no line has that key.
 */
int ra_status_value_parse(const char *text, size_t len, const char *key, char **out) RA_MUST_CHECK;
int ra_status_value(const char *procfs, pid_t pid, const char *key, char **out) RA_MUST_CHECK;

/* Fields of /proc/PID/stat (comm may contain spaces and ')'). */
struct ra_stat {
	char state;
	pid_t ppid;
	uint64_t
	    starttime; /* field 22, clock ticks since boot: identifies a process with its pid */
};
int ra_stat_parse(const char *text, size_t len, struct ra_stat *st) RA_MUST_CHECK;
int ra_stat_read(const char *procfs, pid_t pid, struct ra_stat *st) RA_MUST_CHECK;

#endif

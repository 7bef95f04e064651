/* SPDX-License-Identifier: MIT */
/*
 * A reader of the files librocattach-stacks.so writes (the format:
 * tools/stacks/stacks_format.h and docs/stacks.md), for the node layer.
 */
#ifndef RA_STACKFILE_H
#define RA_STACKFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ra_stack_thread {
	pid_t tid;
	bool ended;	/* gone before the detach */
	int64_t cpu_ns; /* CPU time while sampled, -1 if unknown */
	char name[64];
};

/* A Python frame as the tool copied it (stacks_format.h "pyframes"). */
struct ra_pyframe {
	uint64_t code;	/* the code object, in the target */
	uint64_t instr; /* the frame's instruction pointer */
	int64_t native; /* the eval-loop native frame that runs it; -1: none captured */
};

struct ra_stack {
	pid_t tid;
	bool snapshot;	  /* a snapshot, else a sample */
	char status[16];  /* a snapshot's status (RS_SNAP_*); "" for a sample */
	uint64_t ns;	  /* CLOCK_REALTIME; 0 when the snapshot has no answer */
	bool truncated;	  /* deeper than the tool's max_frames */
	size_t n;	  /* frames, innermost first */
	uint64_t *frames; /* frame 0 exact, the others return addresses */
	size_t n_py;	  /* Python frames, innermost first */
	struct ra_pyframe *py;
	bool py_truncated;
};

struct ra_stackfile {
	pid_t pid;
	char host[256];
	int sig;
	long hz;
	unsigned long dropped, overruns;
	uint64_t attach_ns, detach_ns;
	char note[256];
	struct ra_stack_thread *threads;
	size_t n_threads;
	struct ra_stack *stacks; /* the snapshots, then the samples, in the file's order */
	size_t n_stacks;
	char *maps; /* the /proc/PID/maps copy, for ra_symbolizer_add_maps */
	/* CPython: its version and layout ("3.11"), PyCode_Type's address, or why not. */
	char py_version[32], py_layout[16], py_off[192];
	uint64_t py_code_type, py_runtime;
	/* The names of the Python frames, while open (pyframes.h); freed with f. */
	void *py;
	void (*py_free)(void *py);
};

/*
 * The largest file read: the tool's default buffer (16 MB of stacks) is
 * about 40 MB as text; a buffer above about 100 MB
 * (ROCPROF_STACKS_BUFFER_MB) may write more, and is refused.
 */
#define RA_STACKFILE_MAX (256ull << 20)
#define RA_STACKFILE_ANY_OWNER ((uid_t)-1)

/*
 * Read path into f. 0, or -1 with a message in err naming the file, the
 * line and what is wrong (a truncated file has no "end": it is refused).
 * The file may have been planted by another user: a symbolic link, a FIFO
 * or anything else that is not a regular file, a file of more than
 * RA_STACKFILE_MAX bytes, or (read_owned) one not owned by owner, is
 * refused, and the open never blocks.
 */
int ra_stackfile_read_owned(const char *path, uid_t owner, struct ra_stackfile *f, char *err,
			    size_t errlen);
int ra_stackfile_read(const char *path, struct ra_stackfile *f, char *err, size_t errlen);
void ra_stackfile_free(struct ra_stackfile *f);

/* The name of tid in f, or "?" */
const char *ra_stackfile_thread_name(const struct ra_stackfile *f, pid_t tid);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The stack tool's state (librocattach-stacks.so, docs/stacks.md), shared by
 * its files. Calls go one way:
 *
 *   stacks_tool.c     the lifecycle: rocprofiler_configure*, attach, detach,
 *                     exit and fork; the signal's disposition
 *     -> stacks_file.c      the file written at detach (stacks_format.h)
 *     -> stacks_handler.c   the signal handler, the unwind, the snapshot
 *     -> stacks_threads.c   the thread table, its scans and its timers
 *     -> stacks_python.c    CPython found at attach; its frames copied in the handler
 *     -> stacks_proc.c      what /proc/self says (masks, timers, the signal)
 *     -> stacks_state.c     this state and the clocks
 *
 * Each calls only those below it.
 */
#ifndef ROCATTACH_STACKS_STATE_H
#define ROCATTACH_STACKS_STATE_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "stacks_pylayout.h"

#define MAX_THREADS 1024
#define DEFAULT_FRAMES 64
#define MAX_FRAMES 256
#define DEFAULT_BUFFER_MB 16
#define DEFAULT_SNAPSHOT_MS 500
#define MAX_HZ 10000
/*
 * The poller looks for new threads every DEFAULT_POLL_MS while threads come,
 * go or wait to be armed; after a look that found nothing to do it waits twice
 * as long, up to MAX_POLL_MS: each look wakes a thread and reads
 * /proc/self/task, which was most of sampling's cost (bench/README.md).
 */
#define DEFAULT_POLL_MS 10
#define MAX_POLL_MS 100

/* Scans of the poller (10 ms apart) a thread may show the signal blocked before it is
 * taken for one that blocks it (see stacks_threads.c). */
#define BLOCKED_SCANS 20

enum slot_state { SLOT_FREE, SLOT_ASKED, SLOT_BUSY, SLOT_DONE };

enum { RS_KIND_SNAPSHOT = 1, RS_KIND_SAMPLE = 2 };

/* One record: a snapshot or a sample of one thread. */
struct record {
	int32_t tid;
	uint8_t kind; /* RS_KIND_* */
	uint8_t pad[3];
	uint64_t ns;
	uint64_t handler_ns; /* CLOCK_MONOTONIC from the handler's first read to after the unwind */
	uint64_t entry_mono; /* snapshots: CLOCK_MONOTONIC at the handler's entry */
	uint32_t nframes;
	uint32_t truncated;
	uint32_t npy;	       /* Python frames, after the native ones (record_py) */
	uint32_t py_truncated; /* the chain was deeper than st.py.max */
	uint64_t frames[];     /* max_frames of them, then st.py.max struct py_raw */
};

/* One Python frame as copied in the handler, resolved on the node. */
struct py_raw {
	uint64_t code;	 /* the code object */
	uint64_t instr;	 /* the frame's instruction pointer (prev_instr) */
	uint32_t native; /* index of the eval-loop native frame that runs it; PY_NO_NATIVE */
	uint32_t pad;
};

#define PY_NO_NATIVE 0xffffffffu
#define DEFAULT_PY_FRAMES 64
#define MAX_PY_FRAMES 128

/* CPython in the process, as found at attach (stacks_python.c). */
struct py_state {
	bool on;		     /* frames are copied */
	unsigned max;		     /* frames per record */
	const struct py_layout *lay; /* NULL: not known */
	struct py_layout debug;	     /* 3.13: read from its _Py_DebugOffsets */
	uint32_t version;	     /* Py_Version (PY_VERSION_HEX) */
	uint64_t eval_lo, eval_hi;   /* _PyEval_EvalFrameDefault's code */
	uint64_t runtime;	     /* &_PyRuntime */
	uint64_t code_type;	     /* &PyCode_Type, for the node to check a code object */
	char why[160];		     /* found but not on: why (the file's python_off line) */
};

/* A thread the tool knows: its snapshot slot and its sampling timer. */
struct thread {
	pid_t tid;
	char name[16];
	bool has_timer, timer_tried;
	int blocked_scans; /* poller scans that found the signal blocked in it */
	bool ended;	   /* gone from /proc/self/task during the window */
	unsigned seen;	   /* the last scan that listed it */
	timer_t timer;
	clockid_t clock;	/* its CPU-time clock */
	long long cpu0, cpu_ns; /* CPU time at the timer's start; used while sampled, or -1 */
	/* The snapshot: the state, then the record the handler filled. */
	_Atomic int snap;
	_Atomic long snap_record;	     /* index in the pool, -1 none */
	unsigned long long sent_mono;	     /* CLOCK_MONOTONIC read just before its tgkill */
	_Atomic unsigned long long ret_mono; /* read at the end of its handler, 0 none */
	uint64_t py_tstate; /* its PyThreadState as last found (its own handler's only) */
	const char *snap_status;
};

struct stacks {
	int sig;
	long hz;
	unsigned max_frames;
	size_t record_size;
	size_t n_records;
	char *pool;
	_Atomic size_t next_record;
	_Atomic unsigned long dropped;
	_Atomic unsigned long overruns; /* timer expiries while its signal was pending */
	_Atomic int in_handler;
	_Atomic int sampling; /* the handler takes samples only while set */
	bool unwind;	      /* ROCPROF_STACKS_UNWIND=0: snapshots answer without frames */
	struct py_state py;
	int sample_part; /* ROCPROF_STACKS_SAMPLE_PART, for measuring: SAMPLE_* */
	long poll_ms;	 /* the poller's shortest interval (ROCPROF_STACKS_POLL_MS) */
	struct sigaction old_action;
	void (*our_handler)(int, siginfo_t *, void *); /* what sigaction shows while ours */
	bool installed;
	struct thread threads[MAX_THREADS];
	_Atomic int n_threads;
	int n_armed; /* timers of ours that exist now (under the scan lock) */
	pthread_t poller;
	bool poller_running;
	_Atomic int stop_poller;
	pid_t self_tid;
	unsigned long long attach_ns, detach_ns;
	unsigned attach_seq;
	bool atexit_set;
	bool too_many;	   /* more than MAX_THREADS threads: the others are not seen */
	_Atomic int taken; /* the program took the signal in the window: TAKEN_* */
	pid_t pid;	   /* a fork child inherits st: its exit is not ours to write */
	char note[256];	   /* why something did not happen, for the file */
	char taken_note[192];
};

/*
 * How much of a sample the handler takes (ROCPROF_STACKS_SAMPLE_PART, only for
 * measuring the parts of the cost, bench/sample_cost.sh): "signal" returns at
 * once, "record" fills a record without frames; the default, all of it.
 */
enum { SAMPLE_ALL, SAMPLE_SIGNAL, SAMPLE_RECORD };

/* What the program did with the tool's signal during the window. */
enum { TAKEN_NO, TAKEN_HANDLER, TAKEN_TIMER };

extern struct stacks st;

unsigned long long now_ns(void);
unsigned long long mono_ns(void);
long env_long(const char *name, long def, long min, long max);
void sleep_ms(long ms);

static inline struct record *record_at(size_t i)
{
	return (struct record *)(st.pool + i * st.record_size);
}

static inline struct py_raw *record_py(const struct record *r)
{
	return (struct py_raw *)(uintptr_t)&r->frames[st.max_frames];
}

#endif

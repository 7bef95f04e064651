/* SPDX-License-Identifier: MIT */
/*
 * librocattach: attach profiling tool libraries to running processes.
 *
 * The first part of this header is the ROCm rocattach API: same names, values,
 * signatures and meanings as AMD's rocprofiler-sdk-rocattach, so code written
 * against <rocprofiler-sdk-rocattach/rocattach.h> builds and links against
 * this library unchanged (that header is provided too and includes this one).
 *
 * The second part (rocattach_ex_*, rocattach_opts_t, rocattach_report_t,
 * logging) is ours: per-call options and a per-call report with the error
 * message and step timings. Option and report structs start with their size
 * so they can grow without breaking the ABI.
 *
 * Dangers, read before use:
 *  - The target must have an attach listener: a thread named "rocp-bg-attach"
 *    (start it with ROCP_TOOL_ATTACH=1 and librocattach-agent.so or ROCm's
 *    rocprofiler-register). Only that thread is ever stopped.
 *  - The tool libraries run inside the target. A crashing tool crashes it.
 *  - Between attach and detach the target is not traced: ptrace is held only
 *    while an operation runs, so a debugger can attach during the window and a
 *    dying attacher leaves nothing behind.
 */
#ifndef ROCATTACH_ROCATTACH_H
#define ROCATTACH_ROCATTACH_H

#include <stddef.h>
#include <stdint.h>

#include <rocattach/version.h>

#ifdef __cplusplus
#define ROCATTACH_EXTERN_C_INIT extern "C" {
#define ROCATTACH_EXTERN_C_FINI }
#else
#define ROCATTACH_EXTERN_C_INIT
#define ROCATTACH_EXTERN_C_FINI
#endif

#if defined(ROCATTACH_BUILDING_LIBRARY)
#define ROCATTACH_API __attribute__((visibility("default")))
#else
#define ROCATTACH_API
#endif
#define ROCATTACH_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
/*
 * On the _ex entry points: their status says whether the target is attached
 * (or detached) as asked; a caller that ignores it gets a compiler warning.
 */
#define ROCATTACH_MUST_CHECK __attribute__((warn_unused_result))

ROCATTACH_EXTERN_C_INIT

/* Frozen order and values: ROCm compatibility. */
typedef enum rocattach_status_t {
	ROCATTACH_STATUS_SUCCESS = 0,
	ROCATTACH_STATUS_ERROR,
	ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
	ROCATTACH_STATUS_ERROR_NOT_SUPPORTED,
	ROCATTACH_STATUS_ERROR_PTRACE_ERROR,
	ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED,
	ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND,
	ROCATTACH_STATUS_LAST,
} rocattach_status_t;

typedef struct rocattach_version_triplet_t {
	uint32_t major;
	uint32_t minor;
	uint32_t patch;
} rocattach_version_triplet_t;

rocattach_status_t rocattach_get_version(uint32_t *major, uint32_t *minor,
					 uint32_t *patch) ROCATTACH_API;
rocattach_status_t rocattach_get_version_triplet(rocattach_version_triplet_t *info) ROCATTACH_API
    ROCATTACH_NONNULL(1);

/*
 * Attach the tool libraries named by ROCPROF_ATTACH_TOOL_LIBRARY (colon list,
 * default "librocprofiler-sdk-tool.so.1") to one process.
 * A PID that already has a session: INVALID_ARGUMENT. A process whose window
 * another live attacher holds (another program, another process):
 * PTRACE_OPERATION_NOT_PERMITTED, the message naming that attacher.
 */
rocattach_status_t rocattach_attach(int pid) ROCATTACH_API;

/*
 * Attach to pid and every descendant (snapshot, breadth-first). The root must
 * attach or nothing else is tried. Descendants without a listener are skipped
 * with a warning; other failures are logged, and the call goes on with the
 * rest.
 *
 * Calls over many processes (this one, rocattach_detach_tree and
 * rocattach_detach(0)) return the worst status of any process: SUCCESS only
 * if every one succeeded; else, from mildest to worst, PROCESS_NOT_FOUND,
 * NOT_SUPPORTED, INVALID_ARGUMENT, PTRACE_OPERATION_NOT_PERMITTED,
 * PTRACE_ERROR, ERROR. rocattach_last_error() then gives the first failure's
 * message; when more than one failed, as "K of N processes failed to attach
 * (detach); the first: <message>" (every failure is also logged).
 */
rocattach_status_t rocattach_attach_tree(int pid) ROCATTACH_API;

/* Detach exactly the PIDs recorded by rocattach_attach_tree(pid); the worst status (above). */
rocattach_status_t rocattach_detach_tree(int pid) ROCATTACH_API;

/*
 * Detach one process; pid 0 detaches every session and returns the worst
 * status (see rocattach_attach_tree; SUCCESS when there was none).
 */
rocattach_status_t rocattach_detach(int pid) ROCATTACH_API;

/* Enum identifier / message of a status; NULL for an unknown value. */
const char *rocattach_get_status_name(rocattach_status_t status) ROCATTACH_API;
const char *rocattach_get_status_string(rocattach_status_t status) ROCATTACH_API;

/* ---------------------------------------------------------------------------
 * Extensions (ours).
 */

/* Steps of an operation, timed in rocattach_report_t.step_ns. */
enum rocattach_step {
	ROCATTACH_STEP_PREPARE = 0, /* /proc reads, tool path checks, symbol lookup */
	ROCATTACH_STEP_SEIZE,	    /* PTRACE_SEIZE + PTRACE_INTERRUPT + stop */
	ROCATTACH_STEP_MMAP,	    /* remote mmap of the buffers */
	ROCATTACH_STEP_WRITE,	    /* process_vm_writev of the buffers */
	ROCATTACH_STEP_CALL,	    /* remote call of the attach/detach entry point */
	ROCATTACH_STEP_MUNMAP,	    /* remote munmap */
	ROCATTACH_STEP_RELEASE,	    /* register restore + PTRACE_DETACH */
	ROCATTACH_STEP_INJECT,	    /* --inject: time an application thread was stopped */
	ROCATTACH_STEP_COUNT,
};

/* Flags for rocattach_opts_t.flags. */
#define ROCATTACH_F_NO_ENV_TOOL 0x1u /* ignore ROCPROF_ATTACH_TOOL_LIBRARY */
/*
 * A target without a listener first gets librocattach-agent loaded by a
 * remote dlopen on one of its threads (glibc only), which starts the
 * listener. That thread is stopped for the dlopen (see step_ns INJECT); if
 * the attacher dies during it, that thread stays blocked.
 */
#define ROCATTACH_F_INJECT 0x2u
/*
 * A target whose listener is ROCm's (rocprofiler-register) has no watchdog of
 * its own. By default such a target gets librocattach-watchdog loaded on its
 * listener ($ROCATTACH_WATCHDOG, else beside this library, like the agent for
 * ROCATTACH_F_INJECT): if the attacher dies before its detach, it calls that
 * process's rocprofiler_register_detach (ROCATTACH_REPORT_WATCHDOG says it is
 * armed). This flag loads nothing: then such a target keeps its tools attached
 * if the attacher dies. Our agent's own watchdog is unaffected.
 */
#define ROCATTACH_F_NO_WATCHDOG 0x4u

typedef struct rocattach_opts {
	size_t size; /* sizeof(rocattach_opts_t) */
	/* Colon-separated tool libraries; NULL: ROCPROF_ATTACH_TOOL_LIBRARY or the default. */
	const char *tool_libraries;
	/*
	 * Extra "NAME=VALUE" strings (NULL-terminated array) added to the
	 * environment buffer after the caller's ROCP* variables. Names must
	 * start with "ROCP", like everything that crosses into a target.
	 */
	const char *const *env;
	unsigned int flags;
	/*
	 * The agent for ROCATTACH_F_INJECT, as an absolute path valid in the
	 * target's root. NULL: $ROCATTACH_AGENT, else librocattach-agent.so.0
	 * beside this library's own file (found with dladdr, not from argv[0]),
	 * or, for a program linking a static copy, in the lib dir beside its bin/.
	 */
	const char *agent_path;
	/*
	 * When the window opens or closes (CLOCK_REALTIME ns; 0: at once).
	 * rocattach_attach_ex: tool_attach runs at start_ns. Our agent gets the
	 * time and the call ahead (it loads the tools first and hands over at
	 * start_ns); on ROCm's rocprofiler-register, which knows no start time,
	 * everything up to the call is done ahead (lookup, checks, the seized and
	 * stopped listener, the payload in place) and the call that runs
	 * tool_attach begins at start_ns. Either way the call returns after
	 * tool_attach: call it that far ahead of start_ns, on its own thread.
	 * rocattach_detach_ex: the same for tool_detach at stop_ns.
	 */
	uint64_t start_ns;
	uint64_t stop_ns;
	/*
	 * Fields below were added later: read only when size covers them.
	 * The longest a remote call into the target may take (ms; 0: 10000).
	 * A call that has not returned by then fails the operation
	 * (ROCATTACH_REPORT_TIMED_OUT), naming the call it was stuck in.
	 */
	uint32_t call_timeout_ms;
	/*
	 * rocattach_attach_ex: when the window is planned to end
	 * (CLOCK_REALTIME ns; 0: no planned end). The target side keeps its
	 * own end: if no detach has reached it by planned_stop_ns plus
	 * call_timeout_ms, it detaches its tools by itself (our agent; on
	 * ROCm's side, librocattach-watchdog), so that a stopped, hung or
	 * cut-off caller holds no tool. The late detach then fails with
	 * ROCATTACH_REPORT_SELF_DETACHED. Ignored by rocattach_detach_ex.
	 */
	uint64_t planned_stop_ns;
	/*
	 * A field added here must end where the struct ends (no padding after
	 * it): the library refuses a caller's non-zero bytes from the end of
	 * the last field it knows (session_api.c).
	 */
} rocattach_opts_t;

/* Which target side answered (rocattach_report_t.target_side). */
enum rocattach_target_side {
	ROCATTACH_SIDE_UNKNOWN = 0, /* not reached */
	ROCATTACH_SIDE_AGENT = 1,   /* our librocattach-agent (any file name) */
	ROCATTACH_SIDE_ROCM = 2,    /* anything else exporting the entry points: ROCm's */
};

#define ROCATTACH_MESSAGE_MAX 512
/* Tools of one list whose outcome a report carries (rocattach_report_t.tool_outcome). */
#define ROCATTACH_TOOLS_MAX 64

/* What became of one tool library of the list in one target. */
enum rocattach_tool_outcome {
	ROCATTACH_TOOL_UNKNOWN = 0,  /* not tried, or the target side does not tell */
	ROCATTACH_TOOL_LOADED = 1,   /* loaded and configured: it takes part in the window */
	ROCATTACH_TOOL_DECLINED = 2, /* its rocprofiler_configure returned NULL: inactive */
	ROCATTACH_TOOL_FAILED = 3,   /* did not load, configure or initialize (see message) */
};

/* Flags for rocattach_report_t.flags. */
#define ROCATTACH_REPORT_STOPPED 0x1u	/* the target was stopped (State T): not driven */
#define ROCATTACH_REPORT_TIMED_OUT 0x2u /* a remote call outlived call_timeout_ms */
#define ROCATTACH_REPORT_KILLED 0x4u	/* the target was killed by a signal (see signal) */
#define ROCATTACH_REPORT_WATCHDOG 0x8u	/* a watchdog detaches the tools if the attacher dies */
/*
 * The listener did not stop for its release (an uninterruptible sleep) by
 * the call's deadline: it is still traced, by a thread of this library that
 * releases it when it stops (the message names its state).
 */
#define ROCATTACH_REPORT_TRACED 0x10u
/*
 * The target side detached its tools by itself (self_detach_ns says when):
 * no detach came by the attach's planned_stop_ns plus its call_timeout_ms.
 * On a detach: this window's tools were handed back then, not at the
 * detach (the detach fails). On an attach: the previous window of the
 * process ended that way (the attach itself is unaffected).
 */
#define ROCATTACH_REPORT_SELF_DETACHED 0x20u

typedef struct rocattach_report {
	size_t size; /* sizeof(rocattach_report_t), set by the caller */
	rocattach_status_t status;
	int agent_status; /* value returned by the target's entry point, -1 if not called */
	int tid;	  /* listener thread that was driven, 0 if none found */
	uint64_t step_ns[ROCATTACH_STEP_COUNT];
	uint64_t start_ns, end_ns; /* CLOCK_REALTIME around the whole operation */
	/*
	 * CLOCK_REALTIME at which the target handed over to the tools (right
	 * before tool_attach / tool_detach). Our agent measures it. ROCm's side
	 * does not tell: then it is an upper bound (tool_ns_bound = 1), the end
	 * of the entry point's call (the tools ran inside it), and call_start_ns
	 * the lower one. 0 when no tool was called.
	 */
	uint64_t tool_ns;
	char message[ROCATTACH_MESSAGE_MAX]; /* "" on success */
	/* Fields below were added later: copied only when size covers them. */
	int target_side;		     /* enum rocattach_target_side */
	int tool_ns_bound;		     /* 1: tool_ns is the bound described above */
	uint64_t call_start_ns, call_end_ns; /* around the entry point's remote call, 0 if none */
	unsigned int flags;		     /* ROCATTACH_REPORT_* */
	int signal;			     /* the signal that killed the target, 0 if none */
	/*
	 * One outcome per library of the tool list, in its order
	 * (enum rocattach_tool_outcome); tool_count 0 when not known.
	 */
	uint32_t tool_count;
	uint8_t tool_outcome[ROCATTACH_TOOLS_MAX];
	/*
	 * CLOCK_REALTIME at which the target side detached its tools by itself
	 * (ROCATTACH_REPORT_SELF_DETACHED), 0 if it did not or cannot tell.
	 * A field added after it must end where the struct ends.
	 */
	uint64_t self_detach_ns;
} rocattach_report_t;

/* rocattach_attach() with explicit options; report may be NULL. */
rocattach_status_t
rocattach_attach_ex(int pid, const rocattach_opts_t *opts,
		    rocattach_report_t *report) ROCATTACH_API ROCATTACH_MUST_CHECK;
/*
 * rocattach_attach_tree() with explicit options; report (may be NULL) is the
 * root's. With ROCATTACH_F_INJECT, descendants without a listener get the
 * agent like the root instead of being skipped. rocattach_detach_tree(pid)
 * detaches what it attached.
 */
rocattach_status_t
rocattach_attach_tree_ex(int pid, const rocattach_opts_t *opts,
			 rocattach_report_t *report) ROCATTACH_API ROCATTACH_MUST_CHECK;
/*
 * --late-start: a process that was not started with ROCP_TOOL_ATTACH=1 but
 * has loaded a ROCm runtime gets the tools for the rest of its life.
 * rocprofiler-register keeps every runtime's API tables; a start library
 * (librocattach-late.so, $ROCATTACH_LATE, else beside this library) loaded
 * by a remote dlopen starts a thread of its own in the target, which sets
 * the variables, loads the SDK the tool links and the tools, and calls
 * rocprofiler_register_invoke_all_registrations in each copy of
 * rocprofiler-register. There is no detach.
 */
enum rocattach_late_route {
	ROCATTACH_LATE_REFUSED = 0,    /* a pre-check refused: nothing was touched */
	ROCATTACH_LATE_ATTACHABLE = 1, /* it has a listener: attach it (rocattach_attach_ex) */
	ROCATTACH_LATE_STARTED = 2,    /* the start ran and the SDK says it initialized */
	ROCATTACH_LATE_FAILED = 3,     /* the start library was loaded; the start failed */
};

#define ROCATTACH_PATH_MAX 4096

typedef struct rocattach_late_report {
	size_t size; /* sizeof(rocattach_late_report_t), set by the caller */
	rocattach_status_t status;
	int route;		  /* enum rocattach_late_route */
	int initialized;	  /* the SDK's rocprofiler_is_initialized: 1, 0, -1; -2 not known */
	uint32_t register_copies; /* copies of rocprofiler-register mapped (pre-check) */
	uint32_t register_started;    /* copies whose entry point was called */
	uint64_t start_ns, end_ns;    /* CLOCK_REALTIME around the whole call */
	uint64_t begin_ns, done_ns;   /* the target's start thread: its start and end, 0 unknown */
	uint64_t pause_ns;	      /* how long one application thread was stopped */
	char sdk[ROCATTACH_PATH_MAX]; /* the SDK pinned (ROCPROFILER_REGISTER_LIBRARY) */
	char message[ROCATTACH_MESSAGE_MAX]; /* "" on success */
} rocattach_late_report_t;

/*
 * The pre-checks, then the start, waited for up to opts->call_timeout_ms.
 * SUCCESS only when the SDK says it initialized. opts: tool_libraries, env
 * (added to the caller's ROCP* variables), call_timeout_ms.
 */
rocattach_status_t
rocattach_late_start(int pid, const rocattach_opts_t *opts,
		     rocattach_late_report_t *report) ROCATTACH_API ROCATTACH_MUST_CHECK;

/* rocattach_detach() of one pid (> 0) with options (stop_ns; the rest is ignored) and a report. */
rocattach_status_t
rocattach_detach_ex(int pid, const rocattach_opts_t *opts,
		    rocattach_report_t *report) ROCATTACH_API ROCATTACH_MUST_CHECK;

/*
 * The target side of pid's listener (enum rocattach_target_side), read from
 * its mapped objects without stopping it; ROCATTACH_SIDE_UNKNOWN if it has
 * no listener or cannot be inspected. The lookup is kept for the next attach.
 */
int rocattach_target_side(int pid) ROCATTACH_API;

/* 1 if pid has an attach session (attached and not yet detached), else 0. */
int rocattach_is_attached(int pid) ROCATTACH_API;

/*
 * The message of the last failed call made by this thread ("" if none):
 * which step, which pid/tid, which syscall, and why.
 */
const char *rocattach_last_error(void) ROCATTACH_API;

/* Log levels. */
enum rocattach_log_level {
	ROCATTACH_LOG_ERROR = 0,
	ROCATTACH_LOG_WARNING,
	ROCATTACH_LOG_INFO,
	ROCATTACH_LOG_DEBUG,
	ROCATTACH_LOG_TRACE,
};

typedef void (*rocattach_log_fn)(int level, const char *message, void *user);

/*
 * Install a log callback (NULL: discard everything) and the most verbose
 * level passed to it (default ROCATTACH_LOG_WARNING).
 *
 * Until a program calls rocattach_set_log_callback, messages go to stderr
 * as AMD's library does, one line each: "rocattach: error: <message>"
 * ("warning", "info", ...), so a failure is seen even through front-ends
 * that install no callback. ROCATTACH_LOG_LEVEL in the environment (none,
 * error, warning, info, debug, trace or 0-4) sets the level of that output
 * ("none": nothing, not even errors); once a callback is installed it can
 * only raise the program's level.
 */
void rocattach_set_log_callback(rocattach_log_fn fn, void *user) ROCATTACH_API;
void rocattach_set_log_level(int level) ROCATTACH_API;

ROCATTACH_EXTERN_C_FINI

#endif /* ROCATTACH_ROCATTACH_H */

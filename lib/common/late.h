/* SPDX-License-Identifier: MIT */
/*
 * --late-start: what crosses between the attacher (lib/late_attach.c) and
 * the start library in the target (lib/late_start/late_start.c,
 * librocattach-late.so). libc only.
 *
 * The start call gets one buffer: NUL-terminated strings, each starting
 * with a kind letter, ended by an empty string:
 *   "ENAME=VALUE"  a variable to set before anything is loaded
 *   "SPATH"        the SDK to load (ROCPROFILER_REGISTER_LIBRARY's value)
 *   "TPATH"        a tool library to load
 *   "RPATH"        a copy of librocprofiler-register to start
 * The start library's thread records its progress in RA_LATE_STATUS, which
 * the attacher reads with process_vm_readv.
 */
#ifndef RA_COMMON_LATE_H
#define RA_COMMON_LATE_H

#include <stdint.h>

#define RA_LATE_SONAME "librocattach-late.so"
#define RA_LATE_BEGIN "rocattach_late_begin"
#define RA_LATE_STATUS "rocattach_late_status"
#define RA_LATE_MAGIC 0x4c415445u /* "LATE" */
#define RA_LATE_BUF_MAX (256u * 1024u)
#define RA_LATE_COPIES_MAX 8

/*
 * ROCm's names (ROCm/rocm-systems 492f029de653cc82db31522b4ae8f6342a87c751,
 * projects/rocprofiler-register/source/lib/rocprofiler-register/
 * rocprofiler_register.cpp): the entry point "can be invoked by ptrace",
 * takes nothing and returns rocprofiler_register_error_code_t (0 success);
 * the SDK it hands the tables to is ROCPROFILER_REGISTER_LIBRARY, else
 * librocprofiler-sdk.so beside itself, loaded when that variable or
 * ROCP_TOOL_LIBRARIES is set; a loaded file without rocprofiler_set_api_table
 * is a glog FATAL (the process aborts).
 */
#define RA_LATE_INVOKE "rocprofiler_register_invoke_all_registrations"
#define RA_LATE_SDK_PREFIX "librocprofiler-sdk.so"
#define RA_LATE_SDK_ATTACH_PREFIX "librocprofiler-sdk-attach.so"
#define RA_LATE_SET_API_TABLE "rocprofiler_set_api_table"
/*
 * rocprofiler-sdk's registration.cpp (same commit): rocprofiler_status_t
 * rocprofiler_is_initialized(int *status), *status 1 initialized, 0 not,
 * -1 initializing.
 */
#define RA_LATE_IS_INITIALIZED "rocprofiler_is_initialized"

/* rocattach_late_status.state */
enum ra_late_state {
	RA_LATE_IDLE = 0,    /* no start yet */
	RA_LATE_RUNNING = 1, /* the start's thread runs */
	RA_LATE_DONE = 2,    /* it ended: see the rest */
};

/* Where the start failed (rocattach_late_status.stage), 0: it did not. */
enum ra_late_stage {
	RA_LATE_OK = 0,
	RA_LATE_STAGE_SDK = 1,	  /* dlopen of the SDK */
	RA_LATE_STAGE_TOOL = 2,	  /* dlopen of a tool */
	RA_LATE_STAGE_COPY = 3,	  /* a register copy not found or without the entry point */
	RA_LATE_STAGE_INVOKE = 4, /* the entry point returned an error */
	RA_LATE_STAGE_QUERY = 5,  /* no rocprofiler_is_initialized in the SDK */
};

struct ra_late_status {
	uint32_t magic;
	volatile int32_t state; /* enum ra_late_state, written last */
	int32_t stage;		/* enum ra_late_stage */
	int32_t initialized;	/* rocprofiler_is_initialized's *status; -2: not asked */
	uint32_t copies;	/* register copies whose entry point was called */
	int32_t invoke_rc[RA_LATE_COPIES_MAX];
	uint64_t begin_ns, end_ns; /* CLOCK_REALTIME: the thread's start and end */
	char message[256];	   /* dlerror() or what was missing */
};

#endif

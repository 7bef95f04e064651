/* SPDX-License-Identifier: MIT */
/*
 * The real-process tests' own library: one header for what they share.
 * Victims (victim.h) and the CLI and /proc counts (fault_util.h), plus the
 * tool output directory, its logs, and the checks every test repeats.
 * Needs cmocka (the assertions fail the running test).
 */
#ifndef RA_TESTLIB_H
#define RA_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fault_util.h"
#include "victim.h"

/* The tool output directory of this test program (setup_outdir). */
extern char test_outdir[256];

/*
 * A fresh test_outdir as ROCPROF_OUTPUT_PATH, and ROCPROF_ATTACH_TOOL_LIBRARY
 * set to tool, or unset when tool is NULL. 0, or -1: a cmocka setup's result.
 */
int setup_outdir(const char *tool);
/* The same as cmocka group setups: with the example tool (RA_TOOL_PATH), or no tool. */
int setup_outdir_with_tool(void **state);
int setup_outdir_no_tool(void **state);

/* The example tool's log of pid in test_outdir ("" if none); valid until the next call. */
const char *log_of(pid_t pid);

/*
 * Fail the running test unless victim v is unharmed (victim_unharmed; with
 * listener, its rocp-bg-attach thread intact too).
 */
void assert_unharmed(struct victim *v, bool listener);

/* Copy a file to a new one of the given mode (never wider while it is written). 0 or -1. */
int copy_file(const char *from, const char *to, mode_t mode);

#endif

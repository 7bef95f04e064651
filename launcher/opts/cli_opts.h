/* SPDX-License-Identifier: MIT */
/* Options of the single-node `rocattach` CLI (the rocprof-attach equivalent). */
#ifndef RA_CLI_OPTS_H
#define RA_CLI_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "rocprofv3_opts.h"

/* Exit codes of `rocattach`, documented in docs/ and --help. */
enum cli_exit {
	CLI_EXIT_OK = 0,     /* attached and detached */
	CLI_EXIT_ATTACH = 1, /* the attach failed: nothing is attached */
	CLI_EXIT_USAGE = 2,  /* bad command line or environment */
	CLI_EXIT_DETACH = 3, /* attached, but the detach failed */
	/*
	 * Tree: the root attached, some descendants failed; a library of the
	 * tool list failed while the others attached; or the target was
	 * harmed or needs seeing to: killed by a signal during a call, stopped,
	 * a call that did not return in time, died with its tools attached.
	 */
	CLI_EXIT_PARTIAL = 4,
};

struct cli_opts {
	int pid;
	const char *tools;     /* NULL: ROCPROF_ATTACH_TOOL_LIBRARY or the default */
	long long duration_ms; /* -1: until Enter (on a terminal) or a signal */
	bool children;
	bool inject;		   /* --inject: load the agent into targets without a listener */
	bool late_start;	   /* --late-start: load the tool for the process's life */
	bool duration_env;	   /* duration_ms came from ROCPROF_ATTACH_DURATION */
	long long call_timeout_ms; /* --call-timeout: the longest one remote call may take */
	int verbose;
	bool help, version;
	struct rp3_opts rp3; /* rocprofv3's options, by its names */
};

/*
 * Parse argv, with ROCPROF_ATTACH_PID, ROCPROF_ATTACH_TOOL_LIBRARY,
 * ROCPROF_ATTACH_DURATION and ROCPROF_ATTACH_CHILDREN as defaults.
 * Returns 0, or -1 with a one-line reason (cause and fix) in err.
 */
int cli_opts_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen);

/* "0/false/no/off" -> 0, "1/true/yes/on" -> 1 (case-insensitive), else -1. */
int cli_parse_bool(const char *s);
/* Strict decimal in [min, max]; 0 or -1. */
int cli_parse_ll(const char *s, long long min, long long max, long long *out);

/*
 * The longest window both programs take (-d, ROCPROF_ATTACH_DURATION;
 * rocattach-mpi's --max-window and --windows too): a week. Longer is almost
 * certainly a unit mistake (the unit is ms).
 */
#define CLI_MAX_DURATION_MS (7LL * 24 * 3600 * 1000)

/* --call-timeout of both programs: its default and its bounds (ms). */
#define CLI_CALL_TIMEOUT_MS 10000LL
#define CLI_MAX_CALL_TIMEOUT_MS (24LL * 3600 * 1000)

/*
 * Whole milliseconds from min to max given by `from` (an option or a
 * variable); else -1 and the one message both programs give.
 */
int cli_parse_ms(const char *v, long long min, long long max, const char *from, long long *out,
		 char *err, size_t len);

/*
 * After getopt_long returned '?' or ':' (optstring starting "+:"): the one line
 * naming the unknown or ambiguous option, or the option missing its value.
 */
void cli_bad_option(const char *prog, int c, char **argv, const struct option *opts, char *err,
		    size_t len);

/* A -t list names at least one library; else -1 with the one-line reason. */
int cli_check_tools(const char *list, char *err, size_t len);
/* -t LIST: checked (cli_check_tools), then *tools points at it. 0, or -1 with the reason. */
int cli_take_tools(const char *list, const char **tools, char *err, size_t len);
/*
 * -d's value before it is read as milliseconds: an option (a missing value) or a
 * path (rocprofv3's -d is a directory) is refused for prog. 0, or -1 with the reason.
 */
int cli_check_d_value(const char *v, const char *prog, char *err, size_t len);

extern const char cli_usage[];

#endif

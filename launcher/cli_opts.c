/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli_opts.h"

/* A week: longer windows are almost certainly a unit mistake (the unit is ms). */
#define MAX_DURATION_MS (7LL * 24 * 3600 * 1000)

const char cli_usage[] =
	"Usage: rocattach -p PID [-t LIB[:LIB...]] [-d MS] [--attach-children=BOOL]\n"
	"\n"
	"Attach profiling tool libraries to a running process (and by default its\n"
	"descendants), hold the window, then detach. The target must have been started\n"
	"with ROCP_TOOL_ATTACH=1 (and LD_PRELOAD=librocattach-agent.so unless it uses ROCm).\n"
	"\n"
	"  -p, --pid, --attach PID           process to attach (env ROCPROF_ATTACH_PID)\n"
	"  -t, --attach-tool-library LIST    colon-separated tool libraries\n"
	"                                    (env ROCPROF_ATTACH_TOOL_LIBRARY,\n"
	"                                    default librocprofiler-sdk-tool.so.1)\n"
	"  -d, --attach-duration-msec MS     detach after MS milliseconds (env\n"
	"                                    ROCPROF_ATTACH_DURATION); without it, detach on\n"
	"                                    Enter (when stdin is a terminal) or SIGINT/SIGTERM\n"
	"      --attach-children=BOOL        also attach descendants (default true; env\n"
	"                                    ROCPROF_ATTACH_CHILDREN; 0/false/no/off = false)\n"
	"  -v, --verbose                     more messages (repeat for debug)\n"
	"  -h, --help                        this text\n"
	"      --version                     print the version (and the rocprofiler-sdk\n"
	"                                    rocattach API version it implements)\n"
	"\n"
	"Every ROCP* variable of this environment is passed to the target.\n"
	"Exit codes: 0 attached and detached, 1 attach failed, 2 bad usage,\n"
	"3 detach failed, 4 some descendants failed to attach.\n";

int cli_parse_bool(const char *s)
{
	static const char *const no[] = {"0", "false", "no", "off"};
	static const char *const yes[] = {"1", "true", "yes", "on"};

	for (int i = 0; s && i < 4; i++) {
		if (!strcasecmp(s, no[i]))
			return 0;
		if (!strcasecmp(s, yes[i]))
			return 1;
	}
	return -1;
}

int cli_parse_ll(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	/* strtoll would also take leading blanks of any kind ("\t5", "\n5"), a '+', and "-0". */
	if (!s || (*s != '-' && (*s < '0' || *s > '9')) || (*s == '-' && min >= 0))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_check_tools(const char *list, char *err, size_t len)
{
	if (*list && strspn(list, ":") != strlen(list))
		return 0;
	snprintf(err, len, "empty tool library list: give -t /path/to/libtool.so");
	return -1;
}

static int set_pid(struct cli_opts *o, const char *v, const char *from, char *err, size_t len)
{
	long long pid;

	if (cli_parse_ll(v, 1, INT_MAX, &pid)) {
		snprintf(err, len, "invalid PID '%s' from %s: give a positive process id", v, from);
		return -1;
	}
	o->pid = (int)pid;
	return 0;
}

static int set_duration(struct cli_opts *o, const char *v, const char *from, char *err, size_t len)
{
	if (cli_parse_ll(v, 0, MAX_DURATION_MS, &o->duration_ms)) {
		snprintf(err, len,
			 "invalid duration '%s' from %s: give whole milliseconds from 0 to %lld", v,
			 from, MAX_DURATION_MS);
		return -1;
	}
	return 0;
}

static int set_children(struct cli_opts *o, const char *v, const char *from, char *err, size_t len)
{
	int b = cli_parse_bool(v);

	if (b < 0) {
		snprintf(err, len, "invalid boolean '%s' from %s: use true/false, 1/0, yes/no, on/off",
			 v, from);
		return -1;
	}
	o->children = b;
	return 0;
}

static int env_defaults(struct cli_opts *o, char *err, size_t len)
{
	const char *v;

	v = getenv("ROCPROF_ATTACH_PID");
	if (v && *v && set_pid(o, v, "ROCPROF_ATTACH_PID", err, len))
		return -1;
	v = getenv("ROCPROF_ATTACH_DURATION");
	if (v && *v && set_duration(o, v, "ROCPROF_ATTACH_DURATION", err, len))
		return -1;
	v = getenv("ROCPROF_ATTACH_CHILDREN");
	if (v && *v && set_children(o, v, "ROCPROF_ATTACH_CHILDREN", err, len))
		return -1;
	return 0;
}

enum { OPT_CHILDREN = 256, OPT_VERSION };

static const struct option long_opts[] = {
	{"pid", required_argument, NULL, 'p'},
	{"attach", required_argument, NULL, 'p'},
	{"attach-tool-library", required_argument, NULL, 't'},
	{"attach-duration-msec", required_argument, NULL, 'd'},
	{"attach-children", required_argument, NULL, OPT_CHILDREN},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0},
};

static int one_opt(int c, struct cli_opts *o, char *err, size_t len)
{
	switch (c) {
	case 'p':
		return set_pid(o, optarg, "--pid", err, len);
	case 't':
		if (cli_check_tools(optarg, err, len))
			return -1;
		o->tools = optarg;
		return 0;
	case 'd':
		return set_duration(o, optarg, "--attach-duration-msec", err, len);
	case OPT_CHILDREN:
		return set_children(o, optarg, "--attach-children", err, len);
	case 'v':
		o->verbose++;
		return 0;
	case 'h':
		o->help = true;
		return 0;
	case OPT_VERSION:
		o->version = true;
		return 0;
	default:
		snprintf(err, len, "unknown or incomplete option: see rocattach --help");
		return -1;
	}
}

int cli_opts_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t len)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->duration_ms = -1;
	o->children = true;
	err[0] = '\0';
	if (env_defaults(o, err, len))
		return -1;
	optind = 0; /* reset getopt, so the parser can run more than once */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:t:d:vh", long_opts, NULL)) != -1) {
		if (one_opt(c, o, err, len))
			return -1;
	}
	if (optind < argc) {
		snprintf(err, len, "unexpected argument '%s': see rocattach --help", argv[optind]);
		return -1;
	}
	if (!o->help && !o->version && !o->pid) {
		snprintf(err, len, "no process given: use -p PID (or ROCPROF_ATTACH_PID)");
		return -1;
	}
	return 0;
}

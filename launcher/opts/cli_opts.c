/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli_opts.h"
#include "launcher_help/rocattach.h"

/* launcher/cli/help/rocattach.txt, also the source of the man page rocattach(1). */
const char cli_usage[] = RA_HELP_ROCATTACH;

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

int cli_parse_ms(const char *v, long long min, long long max, const char *from, long long *out,
		 char *err, size_t len)
{
	if (!cli_parse_ll(v, min, max, out))
		return 0;
	snprintf(err, len, "invalid %s '%s': give whole milliseconds from %lld to %lld%s", from, v,
		 min, max, max == CLI_MAX_DURATION_MS ? " (7 days)" : "");
	return -1;
}

/*
 * getopt_long leaves the cause in optopt and argv[optind - 1]: a long option
 * is that word (optind is past it); a short one is optopt (its word may hold
 * several, and optind may still be on it). optopt is 0 for an unknown or
 * ambiguous long option, the option's value for one given a value it does
 * not take ("--inject=1") or missing one.
 */
void cli_bad_option(const char *prog, int c, char **argv, const struct option *opts, char *err,
		    size_t len)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	bool is_long = !strncmp(arg, "--", 2) && (c == ':' || !optopt || strchr(arg, '='));
	int n = (int)strcspn(arg, "="), matches = 0;

	if (!is_long) {
		snprintf(err, len, "%s option '-%c': see %s --help",
			 c == ':' ? "missing value for" : "unknown", optopt, prog);
		return;
	}
	if (n > 60)
		n = 60;
	if (c == ':') {
		snprintf(err, len, "missing value for option '%.*s': see %s --help", n, arg, prog);
		return;
	}
	if (optopt) {
		snprintf(err, len, "option '%.*s' takes no value: see %s --help", n, arg, prog);
		return;
	}
	for (size_t i = 0; n > 2 && opts[i].name; i++)
		matches += !strncmp(opts[i].name, arg + 2, (size_t)n - 2);
	snprintf(err, len, "%s option '%.*s': see %s --help", matches > 1 ? "ambiguous" : "unknown",
		 n, arg, prog);
}

int cli_check_tools(const char *list, char *err, size_t len)
{
	if (*list && strspn(list, ":") != strlen(list))
		return 0;
	snprintf(err, len, "empty tool library list: give -t /path/to/libtool.so");
	return -1;
}

int cli_take_tools(const char *list, const char **tools, char *err, size_t len)
{
	if (cli_check_tools(list, err, len))
		return -1;
	*tools = list;
	return 0;
}

int cli_check_d_value(const char *v, const char *prog, char *err, size_t len)
{
	return rp3_value_is_option("-d", v, err, len) || rp3_d_is_path(v, prog, err, len) ? -1 : 0;
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
	return cli_parse_ms(v, 0, CLI_MAX_DURATION_MS, from, &o->duration_ms, err, len);
}

static int set_children(struct cli_opts *o, const char *v, const char *from, char *err, size_t len)
{
	int b = cli_parse_bool(v);

	if (b < 0) {
		snprintf(err, len,
			 "invalid boolean '%s' from %s: use true/false, 1/0, yes/no, on/off", v,
			 from);
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
	o->duration_env = v && *v;
	v = getenv("ROCPROF_ATTACH_CHILDREN");
	if (v && *v && set_children(o, v, "ROCPROF_ATTACH_CHILDREN", err, len))
		return -1;
	return 0;
}

/*
 * --late-start has no window: no -d, no descendants (they inherit the
 * variables and would start by themselves), no --inject.
 */
static int late_start_check(struct cli_opts *o, char *err, size_t len)
{
	if (!o->late_start)
		return 0;
	if (o->inject) {
		snprintf(err, len, "--late-start and --inject exclude each other: give one");
		return -1;
	}
	if (o->duration_ms >= 0 && !o->duration_env) {
		snprintf(err, len,
			 "--late-start has no window to end (the tool stays until the process "
			 "exits): drop -d");
		return -1;
	}
	o->children = false;
	return 0;
}

enum { OPT_CHILDREN = 256, OPT_VERSION, OPT_INJECT, OPT_CALL_TIMEOUT, OPT_LATE_START };

static const struct option long_opts[] = {
    {"pid", required_argument, NULL, 'p'},
    {"attach", required_argument, NULL, 'p'},
    {"attach-tool-library", required_argument, NULL, 't'},
    {"attach-duration-msec", required_argument, NULL, 'd'},
    {"attach-children", required_argument, NULL, OPT_CHILDREN},
    {"inject", no_argument, NULL, OPT_INJECT},
    {"late-start", no_argument, NULL, OPT_LATE_START},
    {"call-timeout", required_argument, NULL, OPT_CALL_TIMEOUT},
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
		return cli_take_tools(optarg, &o->tools, err, len);
	case 'd':
		if (cli_check_d_value(optarg, "rocattach", err, len))
			return -1;
		o->duration_env = false;
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
	case OPT_INJECT:
		o->inject = true;
		return 0;
	case OPT_LATE_START:
		o->late_start = true;
		return 0;
	case OPT_CALL_TIMEOUT:
		return cli_parse_ms(optarg, 1, CLI_MAX_CALL_TIMEOUT_MS, "--call-timeout",
				    &o->call_timeout_ms, err, len);
	}
	return 1; /* rocprofv3's, '?' or ':' */
}

int cli_opts_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t len)
{
	struct option *all;
	int c, ret = 0;

	memset(o, 0, sizeof(*o));
	rp3_init(&o->rp3);
	o->duration_ms = -1;
	o->children = true;
	o->call_timeout_ms = CLI_CALL_TIMEOUT_MS;
	err[0] = '\0';
	if (env_defaults(o, err, len))
		return -1;
	optind = 0; /* reset getopt, so the parser can run more than once */
	opterr = 0;
	all = rp3_long_options(long_opts);
	if (!all) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	while (!ret &&
	       (c = getopt_long(argc, argv, "+:p:t:d:vh" RP3_SHORT_OPTS, all, NULL)) != -1) {
		ret = one_opt(c, o, err, len);
		if (ret > 0)
			ret = rp3_parse(c, argc, argv, &o->rp3, err, len);
		if (ret > 0)
			cli_bad_option("rocattach", c, argv, all, err, len);
	}
	free(all);
	if (ret)
		return -1;
	if (optind < argc) {
		snprintf(err, len, "unexpected argument '%s': see rocattach --help", argv[optind]);
		return -1;
	}
	if (!o->help && !o->version && !o->pid) {
		snprintf(err, len, "no process given: use -p PID (or ROCPROF_ATTACH_PID)");
		return -1;
	}
	if (!o->help && !o->version && late_start_check(o, err, len))
		return -1;
	if (!o->help && !o->version &&
	    rp3_check(&o->rp3, getenv("ROCPROFILER_PC_SAMPLING_BETA_ENABLED") != NULL, err, len))
		return -1;
	return 0;
}

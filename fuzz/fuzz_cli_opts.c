/* SPDX-License-Identifier: MIT */
/*
 * Options of `rocattach` (launcher/opts/cli_opts.c). Input: NUL-separated
 * arguments; leading ones of the form ROCPROF_ATTACH_{PID,DURATION,...}=VALUE
 * are put in the environment instead (the parser's defaults come from there). The parser
 * resets getopt itself (optind = 0), which running it over and over here
 * checks too: a result that differs on a second parse is a finding.
 * An input starting with byte 0x01 is one option value instead, checked
 * against a reference: what cli_parse_ll accepts is a plain decimal.
 */
#include <errno.h>
#include <limits.h>

#include "cli_opts.h"
#include "fuzz.h"

static const char *const env_names[] = {
    "ROCPROF_ATTACH_PID",
    "ROCPROF_ATTACH_TOOL_LIBRARY",
    "ROCPROF_ATTACH_DURATION",
    "ROCPROF_ATTACH_CHILDREN",
};
#define N_ENV (sizeof(env_names) / sizeof(env_names[0]))

/* Leading NAME=VALUE arguments (names above) into the environment; how many. */
static int take_env(int argc, char **argv)
{
	size_t k, len;
	int i;

	for (k = 0; k < N_ENV; k++)
		unsetenv(env_names[k]);
	for (i = 1; i < argc; i++) {
		for (k = 0; k < N_ENV; k++) {
			len = strlen(env_names[k]);
			if (!strncmp(argv[i], env_names[k], len) && argv[i][len] == '=')
				break;
		}
		if (k == N_ENV)
			break;
		fuzz_putenv((int)k, argv[i]);
	}
	return i - 1;
}

/* "-?[0-9]+" whose value fits in a long long (then in *v). */
static bool plain_decimal(const char *s, long long *v)
{
	const char *d = s + (*s == '-');

	if (!*d || strspn(d, "0123456789") != strlen(d))
		return false;
	errno = 0;
	*v = strtoll(s, NULL, 10);
	return errno == 0;
}

static void check_value(const char *value)
{
	long long got, want;

	if (cli_parse_ll(value, LLONG_MIN, LLONG_MAX, &got) == 0)
		FUZZ_CHECK(plain_decimal(value, &want) && got == want);
	if (cli_parse_ll(value, 1, 1000, &got) == 0)
		FUZZ_CHECK(got >= 1 && got <= 1000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[FUZZ_ARGV_MAX + 1], err[512], err2[512];
	struct cli_opts o, o2;
	int argc, skip, r;

	if (size && data[0] == 0x01) {
		char *value = fuzz_strdup(data + 1, size - 1);

		check_value(value);
		free(value);
		return 0;
	}
	argc = fuzz_argv(data, size, "rocattach", argv);
	skip = take_env(argc, argv);
	/* argv[skip] stands in for argv[0]: the environment arguments are not options. */
	r = cli_opts_parse(argc - skip, argv + skip, &o, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -1);
	if (r == 0) {
		FUZZ_CHECK(o.pid > 0 || o.help || o.version);
		FUZZ_CHECK(o.duration_ms >= -1 && o.verbose >= 0);
		FUZZ_CHECK(!o.tools || strspn(o.tools, ":") < strlen(o.tools));
	} else {
		FUZZ_CHECK(err[0] && strnlen(err, sizeof(err)) < sizeof(err));
	}
	FUZZ_CHECK(cli_opts_parse(argc - skip, argv + skip, &o2, err2, sizeof(err2)) == r);
	FUZZ_CHECK(r ||
		   (o2.pid == o.pid && o2.duration_ms == o.duration_ms &&
		    o2.children == o.children && o2.tools == o.tools && o2.inject == o.inject));
	FUZZ_CHECK(!r || !strcmp(err, err2));
	/* A short error buffer is cut, never overrun. */
	cli_opts_parse(argc - skip, argv + skip, &o2, err2, 8);
	fuzz_argv_free(argc, argv);
	return 0;
}

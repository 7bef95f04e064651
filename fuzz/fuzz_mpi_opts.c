/* SPDX-License-Identifier: MIT */
/*
 * Options of `rocattach-mpi` (launcher/opts/mpi_opts.c): every rank parses the
 * same argv that rank 0 validated. Input: NUL-separated arguments; a leading
 * ROCPROF_ATTACH_DURATION=VALUE goes to the environment. The parser resets
 * getopt itself; a second parse must give the same result.
 * An input starting with byte 0x01 is one option value instead, given to
 * --windows, --pid and --slurm-step in turn: what is accepted must be what
 * the usage says (plain decimals, ':' and ',' where they belong).
 */
#include <limits.h>

#include "cli_opts.h"
#include "fuzz.h"
#include "mpi_opts.h"

static int take_env(int argc, char **argv)
{
	static const char var[] = "ROCPROF_ATTACH_DURATION=";

	unsetenv("ROCPROF_ATTACH_DURATION");
	if (argc > 1 && !strncmp(argv[1], var, sizeof(var) - 1)) {
		fuzz_putenv(0, argv[1]);
		return 1;
	}
	return 0;
}

static struct rm_opts o, o2; /* large: PID arrays */

static void check_ok(const struct rm_opts *p)
{
	size_t i;

	FUZZ_CHECK(p->sel.n_pids <= RM_MAX_PIDS && p->sel.n_trees <= RM_MAX_PIDS);
	for (i = 0; i < p->sel.n_pids; i++)
		FUZZ_CHECK(p->pids[i] > 0 && p->pids[i] <= RM_MAX_PID);
	for (i = 0; i < p->sel.n_trees; i++)
		FUZZ_CHECK(p->trees[i] > 0 && p->trees[i] <= RM_MAX_PID);
	FUZZ_CHECK(p->windows >= 1 && p->windows <= RM_MAX_WINDOWS && p->jobs >= 0 &&
		   p->jobs <= RM_MAX_JOBS);
	FUZZ_CHECK(p->duration_ms >= -1 && p->delay_ms >= 0 && p->max_window_ms >= 1);
	if (p->help || p->version)
		return;
	FUZZ_CHECK(p->duration_ms <= p->max_window_ms);
	FUZZ_CHECK(p->have_ranks == (p->sel.ranks != NULL));
	FUZZ_CHECK(!p->sel.exe || (p->sel.exe[0] && !strchr(p->sel.exe, '/')));
	FUZZ_CHECK(!(p->sel.all_users && p->sel.uid >= 0));
}

/* s[0..n) is a plain decimal within [lo, hi] (hi < LLONG_MAX / 10); its value in *v. */
static bool dec(const char *s, size_t n, long long lo, long long hi, long long *v)
{
	long long x = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (s[i] - '0');
		if (x > hi)
			return false;
	}
	*v = x;
	return x >= lo && x <= hi;
}

static int parse_one(const char *opt, const char *value)
{
	char *argv[] = {"rocattach-mpi", "--exe", "a", (char *)opt, (char *)value, NULL};
	char err[512];
	int r;

	unsetenv("ROCPROF_ATTACH_DURATION");
	r = rm_opts_parse(5, argv, &o, err, sizeof(err));
	if (r)
		rm_opts_free(&o);
	return r;
}

static void check_value(const char *v)
{
	const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *p, *comma;
	long long a, b, c;
	size_t i;

	if (parse_one("--windows", v) == 0) {
		FUZZ_CHECK(c1 && c2 && dec(v, (size_t)(c1 - v), 0, CLI_MAX_DURATION_MS, &a) &&
			   dec(c1 + 1, (size_t)(c2 - c1 - 1), 1, CLI_MAX_DURATION_MS, &b) &&
			   dec(c2 + 1, strlen(c2 + 1), 1, RM_MAX_WINDOWS, &c));
		FUZZ_CHECK(o.delay_ms == a && o.duration_ms == b && o.windows == c);
		rm_opts_free(&o);
	}
	if (parse_one("--pid", v) == 0) {
		for (i = 0, p = v;; p = comma + 1, i++) {
			comma = strchr(p, ',');
			FUZZ_CHECK(
			    dec(p, comma ? (size_t)(comma - p) : strlen(p), 1, RM_MAX_PID, &a));
			FUZZ_CHECK(i < o.sel.n_pids && o.pids[i] == a);
			if (!comma)
				break;
		}
		FUZZ_CHECK(i + 1 == o.sel.n_pids);
		rm_opts_free(&o);
	}
	if (parse_one("--slurm-step", v) == 0) {
		size_t j = strcspn(v, ".");

		FUZZ_CHECK(j > 0 && strspn(v, "0123456789") == j);
		p = v[j] ? v + j + 1 : NULL;
		FUZZ_CHECK(!p || (*p && strspn(p, "0123456789") == strlen(p)) ||
			   !strcmp(p, "batch") || !strcmp(p, "extern") ||
			   !strcmp(p, "interactive"));
		rm_opts_free(&o);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[FUZZ_ARGV_MAX + 1], err[512], err2[512];
	int argc, skip, r, r2;

	if (size && data[0] == 0x01) {
		char *value = fuzz_strdup(data + 1, size - 1);

		check_value(value);
		free(value);
		return 0;
	}
	argc = fuzz_argv(data, size, "rocattach-mpi", argv);
	skip = take_env(argc, argv);
	r = rm_opts_parse(argc - skip, argv + skip, &o, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -1);
	if (r == 0)
		check_ok(&o);
	else
		FUZZ_CHECK(err[0] && strnlen(err, sizeof(err)) < sizeof(err));
	r2 = rm_opts_parse(argc - skip, argv + skip, &o2, err2, sizeof(err2));
	FUZZ_CHECK(r2 == r);
	FUZZ_CHECK(r || (o2.sel.n_pids == o.sel.n_pids && o2.duration_ms == o.duration_ms &&
			 o2.windows == o.windows && o2.ranks.n == o.ranks.n));
	FUZZ_CHECK(!r || !strcmp(err, err2));
	rm_opts_free(&o);
	rm_opts_free(&o2);
	/* A short error buffer is cut, never overrun. */
	rm_opts_parse(argc - skip, argv + skip, &o2, err2, 8);
	rm_opts_free(&o2);
	fuzz_argv_free(argc, argv);
	return 0;
}

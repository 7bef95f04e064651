/* SPDX-License-Identifier: MIT */
/*
 * Options of `rocattach-mpi` (launcher/mpi_opts.c): every rank parses the
 * same argv that rank 0 validated. Input: NUL-separated arguments; a leading
 * ROCPROF_ATTACH_DURATION=VALUE goes to the environment. The parser resets
 * getopt itself; a second parse must give the same result.
 */
#include "fuzz.h"
#include "mpi_opts.h"

static int take_env(int argc, char **argv)
{
	static const char var[] = "ROCPROF_ATTACH_DURATION=";

	unsetenv("ROCPROF_ATTACH_DURATION");
	if (argc > 1 && !strncmp(argv[1], var, sizeof(var) - 1)) {
		setenv("ROCPROF_ATTACH_DURATION", argv[1] + sizeof(var) - 1, 1);
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
		FUZZ_CHECK(p->pids[i] > 0);
	for (i = 0; i < p->sel.n_trees; i++)
		FUZZ_CHECK(p->trees[i] > 0);
	FUZZ_CHECK(p->windows >= 1 && p->jobs >= 0 && p->jobs <= 256);
	FUZZ_CHECK(p->duration_ms >= -1 && p->delay_ms >= 0 && p->max_window_ms >= 1);
	if (p->help || p->version)
		return;
	FUZZ_CHECK(p->duration_ms <= p->max_window_ms);
	FUZZ_CHECK(p->have_ranks == (p->sel.ranks != NULL));
	FUZZ_CHECK(!p->sel.exe || (p->sel.exe[0] && !strchr(p->sel.exe, '/')));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[FUZZ_ARGV_MAX + 1], err[512], err2[512];
	int argc, skip, r, r2;

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

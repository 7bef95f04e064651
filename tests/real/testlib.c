/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testlib.h"

char test_outdir[256];

/* 1000 attach-detach cycles of one target (test_transparency) fit. */
static char logbuf[1 << 20];

int setup_outdir(const char *tool)
{
	make_outdir(test_outdir, sizeof(test_outdir));
	setenv("ROCPROF_OUTPUT_PATH", test_outdir, 1);
	if (tool)
		setenv("ROCPROF_ATTACH_TOOL_LIBRARY", tool, 1);
	else
		unsetenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	return test_outdir[0] ? 0 : -1;
}

int setup_outdir_with_tool(void **state)
{
	(void)state;
	return setup_outdir(RA_TOOL_PATH);
}

int setup_outdir_no_tool(void **state)
{
	(void)state;
	return setup_outdir(NULL);
}

const char *log_of(pid_t pid)
{
	tool_log(test_outdir, pid, logbuf, sizeof(logbuf));
	return logbuf;
}

void assert_unharmed(struct victim *v, bool listener)
{
	char why[256];

	if (victim_unharmed(v, listener, why, sizeof(why)))
		fail_msg("victim %d harmed: %s", v->pid, why);
}

int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in, out, ret = -1;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (in < 0 || out < 0)
		goto out;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			goto out;
	ret = n == 0 && !fchmod(out, mode) ? 0 : -1;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

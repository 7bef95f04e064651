/* SPDX-License-Identifier: MIT */
/* A fresh agent in a forked child, and its tool's log, for the agent tests (agent_child.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <rocattach/version.h>

#include "common/envbuf.h"
#include "common/procmap.h"
#include "../skip.h"
#include "agent_child.h"

struct agent ag;
void *agent_handle;
char outdir[64];
pid_t child_pid;
int agent_load(bool attach_env)
{
	void *h;

	if (attach_env)
		setenv("ROCP_TOOL_ATTACH", "1", 1);
	else
		unsetenv("ROCP_TOOL_ATTACH");
	h = agent_handle = dlopen(RA_AGENT_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	ag.attach = (int (*)(const char *, const char *))dlsym(h, "rocprofiler_register_attach");
	ag.detach = (int (*)(void))dlsym(h, "rocprofiler_register_detach");
	ag.last_error = (const char *(*)(void))dlsym(h, "rocattach_agent_last_error");
	ag.version = (unsigned int (*)(void))dlsym(h, "rocattach_agent_version");
	CHECK(ag.attach && ag.detach && ag.last_error && ag.version);
	return 0;
}

/* Run fn in a fresh child; its exit status, or 128 + the signal that killed it. */
int run_child(int (*fn)(void))
{
	int status;

	fflush(NULL);
	child_pid = fork();
	assert_true(child_pid >= 0);
	if (child_pid == 0) {
		alarm(30); /* a hung agent must fail the test, not stall it */
		unsetenv("ROCPROF_OUTPUT_PATH");
		exit(fn());
	}
	assert_int_equal(waitpid(child_pid, &status, 0), child_pid);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* An encoded buffer of the NULL-terminated entries, plus ROCPROF_OUTPUT_PATH. */
char *make_env_len(const char *const *entries, size_t *len)
{
	const char *all[16];
	char out[128];
	size_t n = 0;
	char *buf = NULL;

	snprintf(out, sizeof(out), "ROCPROF_OUTPUT_PATH=%s", outdir);
	all[n++] = out;
	while (entries && *entries && n < 16)
		all[n++] = *entries++;
	if (ra_envbuf_encode(all, n, &buf, len, NULL))
		return NULL;
	return buf;
}

void log_path(char *path, size_t len, pid_t pid)
{
	char host[256] = "";

	gethostname(host, sizeof(host));
	snprintf(path, len, "%s/rocattach-tool.%s.%d.log", outdir, host, (int)pid);
}

size_t log_read(pid_t pid, char *buf, size_t len)
{
	char path[PATH_MAX];
	size_t n = 0;
	FILE *f;

	buf[0] = '\0';
	log_path(path, sizeof(path), pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

char log_buf[65536];
/* The event names of pid's log, space-separated. */
const char *events(pid_t pid)
{
	static char out[16384];
	char *line, *save = NULL;
	size_t off = 0;

	out[0] = '\0';
	log_read(pid, log_buf, sizeof(log_buf));
	for (line = strtok_r(log_buf, "\n", &save); line && off < sizeof(out);
	     line = strtok_r(NULL, "\n", &save))
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%.*s", off ? " " : "",
					(int)strcspn(line, " "), line);
	return out;
}

int setup_outdir(void **state)
{
	(void)state;
	snprintf(outdir, sizeof(outdir), "/tmp/ra-test-agent-XXXXXX");
	return mkdtemp(outdir) ? 0 : -1;
}

int teardown_outdir(void **state)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(outdir);

	(void)state;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", outdir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(outdir);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Example tool: records every lifecycle call the loader makes, one line per
 * call, in $ROCPROF_OUTPUT_PATH/rocattach-tool.<hostname>.<pid>.log
 * (ROCPROF_OUTPUT_PATH defaults to "."; the directory is created, mode 0755).
 *
 *   <event> pid=<pid> tid=<tid> host=<hostname> ns=<CLOCK_REALTIME ns> [extra]
 *
 * Events: configure and configure_attach (extra: version=<v> runtime=<version
 * string> priority=<p>),
 * initialize, tool_attach (extra: detach_func=<null|set> n_contexts=<n>),
 * tool_detach (recorded when it returns, after the optional sleep), finalize.
 * tool_attach and tool_detach also list the ROCP_ATTACH_* variables the
 * process has in its environment (rocp_attach_env=NAME,... or -): an
 * attacher's private variables must never be there.
 *
 * The output path is read at every record, because it arrives with the
 * attach's environment buffer, after the tool may have been loaded.
 *
 * Test knobs, read in rocprofiler_configure:
 *   ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL=1  rocprofiler_configure returns NULL
 *   ROCPROF_EXAMPLE_TOOL_INIT_FAIL=1       initialize returns -1
 *   ROCPROF_EXAMPLE_TOOL_NO_ATTACH=1       rocprofiler_configure_attach returns NULL
 *   ROCPROF_EXAMPLE_TOOL_DETACH_MS=N       tool_detach sleeps N ms (a tool writing output)
 * and read at every tool_attach (it comes with each attach's environment):
 *   ROCPROF_EXAMPLE_TOOL_ATTACH_MS=N       tool_attach sleeps N ms before recording
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>

#define TOOL_EXPORT __attribute__((visibility("default")))
#define TOOL_NAME "rocattach-example-tool"

struct knobs {
	int init_fail;
	int no_attach;
	long detach_ms;
};

static struct knobs knobs;

static int knob_set(const char *name)
{
	const char *v = getenv(name);

	return v && !strcmp(v, "1");
}

static long knob_long(const char *name)
{
	const char *v = getenv(name);
	long n;

	if (!v)
		return 0;
	n = strtol(v, NULL, 10);
	return n > 0 ? n : 0;
}

/* mkdir -p: intermediate directories may be missing too. */
static void make_dirs(const char *dir)
{
	char path[PATH_MAX], *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return;
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static int open_log(const char *host)
{
	const char *dir = getenv("ROCPROF_OUTPUT_PATH");
	char path[PATH_MAX];

	if (!dir || !*dir)
		dir = ".";
	make_dirs(dir);
	if (snprintf(path, sizeof(path), "%s/rocattach-tool.%s.%d.log", dir, host, (int)getpid()) >=
	    (int)sizeof(path))
		return -1;
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* One write(2) per line, so O_APPEND keeps lines whole. */
static void record(const char *event, const char *extra)
{
	char host[HOST_NAME_MAX + 1] = "unknown", line[1024];
	int fd, n, saved = errno;
	ssize_t w;

	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	n = snprintf(line, sizeof(line), "%s pid=%d tid=%d host=%s ns=%llu%s\n", event,
		     (int)getpid(), (int)gettid(), host, now_ns(), extra);
	if (n < 0 || n >= (int)sizeof(line))
		goto out;
	fd = open_log(host);
	if (fd < 0)
		goto out;
	w = write(fd, line, (size_t)n);
	(void)w; /* a lost record has nowhere to be reported */
	close(fd);
out:
	errno = saved;
}

static void record_configure(const char *event, uint32_t version, const char *runtime,
			     uint32_t priority)
{
	char extra[128];

	snprintf(extra, sizeof(extra), " version=%u runtime=%.40s priority=%u", version,
		 runtime ? runtime : "(null)", priority);
	record(event, extra);
}

static int tool_initialize(rocprofiler_client_finalize_t fini, void *data)
{
	(void)fini;
	(void)data;
	record("initialize", "");
	return knobs.init_fail ? -1 : 0;
}

static void tool_finalize(void *data)
{
	(void)data;
	record("finalize", "");
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (ms && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

extern char **environ;

/* " rocp_attach_env=A,B" (names only) or " rocp_attach_env=-". */
static void attach_env(char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, " rocp_attach_env=");
	bool any = false;

	for (char **e = environ; e && *e && n < len; e++) {
		if (strncmp(*e, "ROCP_ATTACH_", 12))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%.*s", any ? "," : "",
				      (int)strcspn(*e, "="), *e);
		any = true;
	}
	if (!any && n < len)
		snprintf(buf + n, len - n, "-");
}

static int tool_attach(rocprofiler_client_detach_t detach_func,
		       rocprofiler_context_id_t *context_ids, uint64_t n_contexts, void *data)
{
	char extra[256], env[160];

	(void)context_ids;
	(void)data;
	sleep_ms(knob_long("ROCPROF_EXAMPLE_TOOL_ATTACH_MS"));
	attach_env(env, sizeof(env));
	snprintf(extra, sizeof(extra), " detach_func=%s n_contexts=%llu",
		 detach_func ? "set" : "null", (unsigned long long)n_contexts);
	strncat(extra, env, sizeof(extra) - strlen(extra) - 1);
	record("tool_attach", extra);
	return 0;
}

static void tool_detach(void *data)
{
	char env[160];

	(void)data;
	sleep_ms(knobs.detach_ms);
	attach_env(env, sizeof(env));
	record("tool_detach", env);
}

static rocprofiler_tool_configure_result_t configure_result = {
    .size = sizeof(rocprofiler_tool_configure_result_t),
    .initialize = tool_initialize,
    .finalize = tool_finalize,
    .tool_data = &knobs,
};

static rocprofiler_tool_configure_attach_result_t attach_result = {
    .size = sizeof(rocprofiler_tool_configure_attach_result_t),
    .tool_attach = tool_attach,
    .tool_detach = tool_detach,
    .tool_data = &knobs,
};

TOOL_EXPORT rocprofiler_tool_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
		      rocprofiler_client_id_t *client_id)
{
	record_configure("configure", version, runtime_version, priority);
	if (client_id)
		client_id->name = TOOL_NAME;
	knobs.init_fail = knob_set("ROCPROF_EXAMPLE_TOOL_INIT_FAIL");
	knobs.no_attach = knob_set("ROCPROF_EXAMPLE_TOOL_NO_ATTACH");
	knobs.detach_ms = knob_long("ROCPROF_EXAMPLE_TOOL_DETACH_MS");
	if (knob_set("ROCPROF_EXAMPLE_TOOL_CONFIGURE_NULL"))
		return NULL;
	return &configure_result;
}

TOOL_EXPORT rocprofiler_tool_configure_attach_result_t *
rocprofiler_configure_attach(uint32_t version, const char *runtime_version, uint32_t priority,
			     rocprofiler_client_id_t *client_id)
{
	(void)client_id;
	record_configure("configure_attach", version, runtime_version, priority);
	return knobs.no_attach ? NULL : &attach_result;
}

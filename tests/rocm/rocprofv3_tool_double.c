/* SPDX-License-Identifier: MIT */
/*
 * A test double of rocprofv3's tool, ROCm's librocprofiler-sdk-tool.so, as
 * far as a launcher can tell: it reads the ROCP* variables rocprofv3 sends
 * (rocprofv3.py in ROCm/rocm-systems, commit 01610ac2) and writes its files
 * where they go: ROCPROF_OUTPUT_PATH joined with ROCPROF_OUTPUT_FILE_NAME
 * (default "%hostname%/%pid%", rocprofv3's documented default), with
 * %hostname%, %pid% and %q{VAR}% expanded by the tool, as rocprofv3 leaves
 * them to it. It is not the tool: it collects nothing.
 *
 * At tool_attach it keeps every ROCP* variable of its process, sorted; at
 * tool_detach it writes them, one per line, to PREFIX_results.EXT for each
 * format of ROCPROF_OUTPUT_FORMAT (rocpd: .db, else the format's name), the
 * suffixes being the double's own. A second attach whose collection
 * variables differ from the first's fails, as the real tool cannot change
 * them (tool_attach returns -1 and records "reattach_refused").
 *
 * When it writes them is upstream's (ROCm/rocm-systems pull request #3179):
 * by default on a thread of its own, after tool_detach has returned; with
 * ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC=1 (true) before tool_detach returns.
 * A next tool_attach waits for a write still going, as rocprofv3 blocks
 * reattach until then. Test knob: a file WRITE_DELAY_FILE in the directory
 * the files go to (that of the expanded prefix) holding milliseconds makes each
 * write take that long: the variables are written, then after the delay a
 * last line "written_after_ms=N", so a file cut short shows.
 * Built as tests/rocm/rocm-root/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so,
 * so ROCM_PATH=tests/rocm/rocm-root finds it where rocprofv3 would.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/tool.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_VARS 128
#define WRITE_DELAY_FILE "rocprofv3-double-write-ms"

extern char **environ;

static char *seen[MAX_VARS];
static size_t n_seen;
static char *first_key; /* the collection variables of the first attach */
static int my_data;
static pthread_t writer; /* the asynchronous write of the last detach */
static bool writing;

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* %hostname%, %pid% and %q{VAR}% of s, expanded into out. */
static void expand(const char *s, char *out, size_t len)
{
	size_t n = 0;

	while (*s && n + 1 < len) {
		char host[256] = "";
		const char *end;

		if (!strncmp(s, "%hostname%", 10)) {
			gethostname(host, sizeof(host) - 1);
			n += (size_t)snprintf(out + n, len - n, "%s", host);
			s += 10;
		} else if (!strncmp(s, "%pid%", 5)) {
			n += (size_t)snprintf(out + n, len - n, "%d", (int)getpid());
			s += 5;
		} else if (!strncmp(s, "%q{", 3) && (end = strstr(s, "}%"))) {
			char name[128];
			const char *v;

			snprintf(name, sizeof(name), "%.*s", (int)(end - s - 3), s + 3);
			v = getenv(name);
			n += (size_t)snprintf(out + n, len - n, "%s", v ? v : "");
			s = end + 2;
		} else {
			out[n++] = *s++;
		}
	}
	out[n < len ? n : len - 1] = '\0';
}

static void mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
}

/* What rocprofv3 compares on reattach, as its variables: the trace, counter and filter ones. */
static bool collection_var(const char *kv)
{
	return strstr(kv, "_TRACE=") || !strncmp(kv, "ROCPROF_COUNTER", 15) ||
	       !strncmp(kv, "ROCPROF_PC_SAMPLING", 19) ||
	       !strncmp(kv, "ROCPROF_KERNEL_FILTER", 21) ||
	       !strncmp(kv, "ROCPROF_OUTPUT_CONFIG", 21);
}

static char *collection_key(void)
{
	size_t len = 1;
	char *key;

	for (size_t i = 0; i < n_seen; i++)
		len += strlen(seen[i]) + 1;
	key = calloc(1, len);
	for (size_t i = 0; key && i < n_seen; i++)
		if (collection_var(seen[i]))
			strcat(strcat(key, seen[i]), "\n");
	return key;
}

/* The test knob: milliseconds each write takes (0 without the file). */
static long write_delay_ms(const char *dir)
{
	char path[PATH_MAX], buf[32] = "";
	long ms = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, WRITE_DELAY_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (read(fd, buf, sizeof(buf) - 1) > 0)
		ms = strtol(buf, NULL, 10);
	close(fd);
	return ms > 0 ? ms : 0;
}

static void write_file(const char *prefix, const char *ext, const char *extra, long delay_ms)
{
	char path[PATH_MAX], last[64];
	int fd;

	snprintf(path, sizeof(path), "%s_results.%s", prefix, ext);
	mkdirs(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	for (size_t i = 0; i < n_seen; i++)
		if (write(fd, seen[i], strlen(seen[i])) < 0 || write(fd, "\n", 1) < 0)
			break;
	if (extra && write(fd, extra, strlen(extra)) < 0)
		extra = NULL;
	if (delay_ms) {
		struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};

		while (nanosleep(&ts, &ts))
			;
		snprintf(last, sizeof(last), "written_after_ms=%ld\n", delay_ms);
		if (write(fd, last, strlen(last)) < 0)
			delay_ms = 0;
	}
	close(fd);
}

/* Where and how the next write goes: read at tool_detach, before any later attach's setenv. */
static struct output {
	char prefix[2 * PATH_MAX + 2], list[256];
	long delay_ms;
} out;

static void plan_outputs(void)
{
	const char *dir = getenv("ROCPROF_OUTPUT_PATH"), *file = getenv("ROCPROF_OUTPUT_FILE_NAME");
	const char *fmts = getenv("ROCPROF_OUTPUT_FORMAT");
	char d[PATH_MAX], f[PATH_MAX];

	expand(dir && *dir ? dir : ".", d, sizeof(d));
	expand(file && *file ? file : "%hostname%/%pid%", f, sizeof(f));
	snprintf(out.prefix, sizeof(out.prefix), "%s/%s", d, f);
	snprintf(out.list, sizeof(out.list), "%s", fmts && *fmts ? fmts : "rocpd");
	/* The knob sits where the files go: DIR/HOST/ by default, so per node or per target. */
	snprintf(d, sizeof(d), "%s", out.prefix);
	if (strrchr(d, '/'))
		*strrchr(d, '/') = '\0';
	out.delay_ms = write_delay_ms(d);
}

static void write_outputs(const char *extra)
{
	char list[256];

	snprintf(list, sizeof(list), "%s", out.list);
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		write_file(out.prefix, !strcmp(t, "rocpd") ? "db" : t, extra, out.delay_ms);
}

static void *write_later(void *arg)
{
	(void)arg;
	write_outputs(NULL);
	return NULL;
}

/* A write still going from the last detach ends first (rocprofv3 blocks reattach so). */
static void wait_writer(void)
{
	if (writing)
		pthread_join(writer, NULL);
	writing = false;
}

/* ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC, read as the tool reads its booleans. */
static bool sync_output(void)
{
	static const char *const yes[] = {"1", "y", "yes", "t", "true", "on"};
	const char *v = getenv("ROCPROF_ATTACH_OUTPUT_GENERATION_SYNC");

	for (size_t i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(v, yes[i]))
			return true;
	return false;
}

static void keep_environment(void)
{
	for (size_t i = 0; i < n_seen; i++)
		free(seen[i]);
	n_seen = 0;
	for (char **e = environ; e && *e && n_seen < MAX_VARS; e++)
		if (!strncmp(*e, "ROCP", 4))
			seen[n_seen++] = strdup(*e);
	qsort(seen, n_seen, sizeof(seen[0]), by_name);
}

static int tool_init(rocprofiler_client_finalize_t fini, void *data)
{
	(void)fini;
	(void)data;
	return 0;
}

static void tool_fini(void *data)
{
	(void)data;
}

static int tool_attach(rocprofiler_client_detach_t detach, rocprofiler_context_id_t *ctx,
		       uint64_t n, void *data)
{
	char *key;

	(void)detach;
	(void)ctx;
	(void)n;
	(void)data;
	wait_writer();
	keep_environment();
	key = collection_key();
	if (!first_key) {
		first_key = key;
		return 0;
	}
	if (key && strcmp(key, first_key)) {
		/* The real tool ends in an exception here; the double says so in its files. */
		plan_outputs();
		write_outputs("reattach_refused\n");
		free(key);
		return -1;
	}
	free(key);
	return 0;
}

static void tool_detach(void *data)
{
	(void)data;
	wait_writer();
	plan_outputs();
	if (!sync_output() && !pthread_create(&writer, NULL, write_later, NULL)) {
		writing = true;
		return;
	}
	write_outputs(NULL);
}

EXPORT rocprofiler_tool_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
		      rocprofiler_client_id_t *client_id)
{
	static rocprofiler_tool_configure_result_t cfg = {
	    sizeof(rocprofiler_tool_configure_result_t), tool_init, tool_fini, &my_data};

	(void)version;
	(void)runtime_version;
	(void)priority;
	client_id->name = "rocprofv3-double";
	return &cfg;
}

EXPORT rocprofiler_tool_configure_attach_result_t *
rocprofiler_configure_attach(uint32_t version, const char *runtime_version, uint32_t priority,
			     rocprofiler_client_id_t *client_id)
{
	static rocprofiler_tool_configure_attach_result_t cfg = {
	    sizeof(rocprofiler_tool_configure_attach_result_t), tool_attach, tool_detach, &my_data};

	(void)version;
	(void)runtime_version;
	(void)priority;
	(void)client_id;
	return &cfg;
}

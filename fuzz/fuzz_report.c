/* SPDX-License-Identifier: MIT */
/*
 * Rank 0's outputs (launcher/report_*.c) from what the nodes sent: the summary,
 * the dry-run listing, the JSON report and the SVG timeline. The records
 * come from other hosts and processes (host names, executable names,
 * messages, CPU lists, times), so the input fills them byte by byte, within
 * what rn_unpack lets through (terminated strings, defined states).
 * Properties: the report is valid JSON, and the timeline has no raw control
 * or non-ASCII byte and no '&' that does not start an entity. The trace
 * (--trace) is valid JSON in the trace-event form: a traceEvents array of
 * objects, each with a phase M, X or i and integer pid and tid, and a
 * numeric ts (X: and a dur >= 0) for X and i.
 */
#include <jansson.h>
#include <unistd.h>

#include "fuzz.h"
#include "report.h"

#define WINDOWS_MAX 2
#define NODES_MAX 3
#define TARGETS_MAX 4

struct reader {
	const uint8_t *p, *end;
	bool raw_times;
	uint64_t base;
};

static uint64_t take(struct reader *r, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n && r->p < r->end; i++)
		v |= (uint64_t)*r->p++ << (8 * i);
	return v;
}

/* A string of at most width - 1 bytes, its length from the input. */
static void take_str(struct reader *r, char *s, size_t width)
{
	size_t len = (size_t)take(r, 1) % width, have = (size_t)(r->end - r->p);

	if (len > have)
		len = have;
	memcpy(s, r->p, len);
	s[len] = '\0';
	r->p += len;
}

/* A time: 0 (unknown), near the run's base, or (raw mode) anything. */
static uint64_t take_time(struct reader *r)
{
	uint64_t v = take(r, r->raw_times ? 8 : 4);

	return r->raw_times || !v ? v : r->base + v * 1000;
}

static void fill_target(struct reader *r, struct rn_target *t)
{
	memset(t, 0, sizeof(*t));
	t->pid = (pid_t)take(r, 4);
	t->nspid = (pid_t)take(r, 4);
	t->rank = (long)(int32_t)take(r, 4);
	t->uid = (uid_t)take(r, 4);
	t->ppid = (pid_t)take(r, 4);
	take_str(r, t->exe, sizeof(t->exe));
	t->listener = take(r, 1) & 1;
	take_str(r, t->topo.cpus, sizeof(t->topo.cpus));
	take_str(r, t->topo.numa, sizeof(t->topo.numa));
	take_str(r, t->topo.gpus, sizeof(t->topo.gpus));
	t->topo.n_cpus = (int)take(r, 4);
	t->state = (enum rn_state)(take(r, 1) % (RN_DIED_ATTACHED + 1));
	t->status = (rocattach_status_t)(take(r, 1) % ROCATTACH_STATUS_LAST);
	t->agent_status = (int)take(r, 4);
	t->windows = (int)take(r, 1);
	t->attach_start_ns = take_time(r);
	t->attach_end_ns = take_time(r);
	t->detach_start_ns = take_time(r);
	t->detach_end_ns = take_time(r);
	t->attach_tool_ns = take_time(r);
	t->detach_tool_ns = take_time(r);
	t->detach_call_ns = take_time(r);
	t->attach_tool_bound = t->detach_tool_bound = take(r, 1) & 1;
	t->side = (int)take(r, 1) % (ROCATTACH_SIDE_ROCM + 1);
	take_str(r, t->message, sizeof(t->message));
	t->died_ns = take_time(r);
	t->signal = (int)take(r, 1);
	t->timed_out = take(r, 1) & 1;
}

struct world {
	struct rm_run run;
	struct rm_window w[WINDOWS_MAX];
	struct rm_node nodes[WINDOWS_MAX][NODES_MAX];
	struct rn_target t[WINDOWS_MAX][NODES_MAX][TARGETS_MAX];
	char errors[WINDOWS_MAX][NODES_MAX][64];
	char arg[64], tools[64];
	char *argv[2];
};

static void fill(struct reader *r, struct world *x)
{
	size_t wi, ni, ti;
	uint8_t mode = (uint8_t)take(r, 1);

	memset(x, 0, sizeof(*x));
	r->raw_times = mode & 1;
	r->base = 1700000000000000000ull + take(r, 4) * 1000000ull;
	take_str(r, x->arg, sizeof(x->arg));
	take_str(r, x->tools, sizeof(x->tools));
	x->argv[0] = "rocattach-mpi";
	x->argv[1] = x->arg;
	x->run.cfg = (struct rm_config){.argc = 2,
					.argv = x->argv,
					.tools = x->tools,
					.duration_ms = (mode & 2) ? -1 : 100,
					.windows = 1,
					.jobs = (int)take(r, 1),
					.inject = mode & 4,
					.ranks = 2};
	x->run.started_ns = take_time(r);
	x->run.ended_ns = take_time(r);
	x->run.exit_code = (int)take(r, 1) % 6;
	x->run.exit_reason = "fuzzed";
	x->run.stop_reason = (mode & 64) ? "job ended" : NULL;
	x->run.w = x->w;
	x->run.n_w = 1 + (mode >> 3) % WINDOWS_MAX;
	for (wi = 0; wi < x->run.n_w; wi++) {
		struct rm_window *w = &x->w[wi];

		w->index = (int)wi + 1;
		w->start_ns = take_time(r);
		w->stop_ns = take_time(r);
		w->stop_reason = (mode & 32) ? "SIGINT" : "duration";
		w->nodes = x->nodes[wi];
		w->n_nodes = 1 + (size_t)take(r, 1) % NODES_MAX;
		for (ni = 0; ni < w->n_nodes; ni++) {
			struct rm_node *n = &w->nodes[ni];

			take_str(r, n->host, sizeof(n->host) / 4);
			take_str(r, x->errors[wi][ni], sizeof(x->errors[wi][ni]));
			n->error = x->errors[wi][ni][0] ? x->errors[wi][ni] : NULL;
			n->boot_offset_ns = (int64_t)take(r, 8);
			/* Lost (its records the last known), with the error as its reason or none.
			 */
			n->lost = n->boot_offset_ns & 1;
			n->lost_reason = n->lost && (n->boot_offset_ns & 2) ? n->error : NULL;
			n->t = x->t[wi][ni];
			n->n = (size_t)take(r, 1) % (TARGETS_MAX + 1);
			for (ti = 0; ti < n->n; ti++)
				fill_target(r, &n->t[ti]);
		}
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;

	*len = 0;
	FUZZ_CHECK(f);
	FUZZ_CHECK(getdelim(&buf, &cap, '\0', f) >= 0 || feof(f));
	*len = buf ? strlen(buf) : 0;
	fclose(f);
	return buf;
}

/* Every '&' starts an entity; no control (but \n, \t) or non-ASCII byte. */
static void check_xml_text(const char *s, size_t len)
{
	static const char *const ent[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"};
	size_t i, k;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		FUZZ_CHECK(c < 0x7f && (c >= 0x20 || c == '\n' || c == '\t'));
		if (c != '&')
			continue;
		for (k = 0; k < sizeof(ent) / sizeof(ent[0]); k++)
			if (!strncmp(s + i, ent[k], strlen(ent[k])))
				break;
		FUZZ_CHECK(k < sizeof(ent) / sizeof(ent[0]));
	}
}

/* The trace-event form: see the header. */
static void check_trace(json_t *j)
{
	json_t *ev = json_object_get(j, "traceEvents"), *e;
	const char *ph;
	size_t i;

	FUZZ_CHECK(json_is_array(ev));
	FUZZ_CHECK(json_is_string(json_object_get(j, "displayTimeUnit")));
	json_array_foreach (ev, i, e) {
		FUZZ_CHECK(json_is_object(e));
		ph = json_string_value(json_object_get(e, "ph"));
		FUZZ_CHECK(ph && (!strcmp(ph, "M") || !strcmp(ph, "X") || !strcmp(ph, "i")));
		FUZZ_CHECK(json_is_integer(json_object_get(e, "pid")));
		FUZZ_CHECK(json_is_integer(json_object_get(e, "tid")));
		FUZZ_CHECK(json_is_string(json_object_get(e, "name")));
		if (!strcmp(ph, "M"))
			continue;
		FUZZ_CHECK(json_is_number(json_object_get(e, "ts")));
		if (!strcmp(ph, "X"))
			FUZZ_CHECK(json_number_value(json_object_get(e, "dur")) >= 0);
	}
}

static char json_path[64], svg_path[64], trace_path[64];
static FILE *devnull;
static struct world x;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = {data, data + size, false, 0};
	char err[512];
	json_error_t je;
	json_t *j;
	size_t len;
	char *svg;

	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		snprintf(json_path, sizeof(json_path), "/dev/shm/fuzz-report.%d.json",
			 (int)getpid());
		snprintf(svg_path, sizeof(svg_path), "/dev/shm/fuzz-report.%d.svg", (int)getpid());
		snprintf(trace_path, sizeof(trace_path), "/dev/shm/fuzz-report.%d.trace.json",
			 (int)getpid());
	}
	FUZZ_CHECK(devnull);
	fill(&r, &x);
	rm_print_summary(devnull, &x.run);
	rm_print_dry_run(devnull, x.w[0].nodes, x.w[0].n_nodes);
	FUZZ_CHECK(rm_write_report(json_path, &x.run, err, sizeof(err)) == 0);
	j = json_load_file(json_path, 0, &je);
	if (!j)
		fprintf(stderr, "report is not JSON: %s (line %d)\n", je.text, je.line);
	FUZZ_CHECK(j);
	json_decref(j);
	FUZZ_CHECK(rm_write_trace(trace_path, &x.run, err, sizeof(err)) == 0);
	j = json_load_file(trace_path, 0, &je);
	if (!j)
		fprintf(stderr, "trace is not JSON: %s (line %d)\n", je.text, je.line);
	FUZZ_CHECK(j);
	check_trace(j);
	json_decref(j);
	unlink(trace_path);
	FUZZ_CHECK(rm_write_timeline(svg_path, &x.run, err, sizeof(err)) == 0);
	svg = slurp(svg_path, &len);
	check_xml_text(svg, len);
	free(svg);
	unlink(json_path);
	unlink(svg_path);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Rank 0's outputs (launcher/report/) from what the nodes sent: the summary,
 * the dry-run listing, the JSON report and the SVG timeline. The records
 * come from other hosts and processes (host names, executable names,
 * messages, CPU lists, times), so the input fills them byte by byte, within
 * what rn_unpack lets through (terminated strings, defined states). Some
 * nodes cut their records as at --detail failures or none before the wire,
 * and their block (struct rm_node_sum) is changed byte by byte before rank 0
 * takes or refuses it (rm_take_sum).
 * Properties: the report is valid JSON, and the timeline has no raw control
 * or non-ASCII byte and no '&' that does not start an entity. The trace
 * (--trace) is valid JSON in the trace-event form: a traceEvents array of
 * objects, each with a phase M, X or i and integer pid and tid, and a
 * numeric ts (X: and a dur >= 0) for X and i.
 *
 * Empty, partial and lost windows (mode bit 128: no window at all, nodes
 * without targets, times missing or a stop before its start) drive the
 * summary and rank 0's progress lines too, and no figure there may be
 * absurd: no wrapped subtraction ("18446744..."), no negative count in the
 * headline or a progress line, no time in ms above a day (above the longest
 * window, 7 days, when the times are raw 64-bit values: mode bit 1).
 */
#include <ctype.h>
#include <jansson.h>
#include <unistd.h>

#include "fuzz.h"
#include "report.h"

#define WINDOWS_MAX 2
#define NODES_MAX 3
#define TARGETS_MAX 4
#define DAY_MS 86400000.0
#define WEEK_MS (7 * DAY_MS)

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

/*
 * A string of at most width - 1 bytes, its length from the input. Digits
 * become '#': the figures checked in the text are the program's own, not
 * numbers inside a host name or a message.
 */
static void take_str(struct reader *r, char *s, size_t width)
{
	size_t len = (size_t)take(r, 1) % width, have = (size_t)(r->end - r->p);

	if (len > have)
		len = have;
	memcpy(s, r->p, len);
	s[len] = '\0';
	r->p += len;
	for (size_t i = 0; i < len; i++)
		if (isdigit((unsigned char)s[i]))
			s[i] = '#';
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

/*
 * Some nodes cut their records as a node does before the wire
 * (rm_node_summary: the kept records and the block), then some bytes of
 * the block are changed: rank 0 takes it (rm_take_sum) or refuses it, and
 * the outputs hold either way. The run's level is then the cut's.
 */
static void cut_on_node(struct reader *r, struct world *x, struct rm_node *n, uint64_t since)
{
	static struct rm_node_sum sum;
	uint8_t how = (uint8_t)take(r, 1);
	enum rm_detail d = how & 2 ? RM_DETAIL_NONE : RM_DETAIL_FAILURES;
	unsigned flips = (how >> 2) % 4;
	char why[256] = "";
	size_t m = 0;

	if (!(how & 1) || rm_node_summary(n->t, n->n, d, since, &sum))
		return;
	for (size_t k = 0; k < n->n; k++)
		if (rm_detail_keeps_target(d, &n->t[k]))
			n->t[m++] = n->t[k];
	n->n = m;
	for (unsigned i = flips; i > 0; i--) {
		size_t at = (size_t)take(r, 2) % sizeof(sum);

		((uint8_t *)&sum)[at] ^= (uint8_t)take(r, 1);
	}
	if (!rm_take_sum(&sum, (int64_t)(int8_t)take(r, 1) * 1000, n, why, sizeof(why)))
		x->run.cut = (struct rm_cut){d, m + (size_t)n->sum->left_out};
	else if (!flips || !why[0] || strchr(why, '\n'))
		abort(); /* a node's own block is taken; a refusal says why, on one line */
}

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
	/* Bit 128: empty and partial runs (no window, nodes without targets). */
	x->run.n_w = (mode & 128) ? (mode >> 3) % (WINDOWS_MAX + 1) : 1 + (mode >> 3) % WINDOWS_MAX;
	for (wi = 0; wi < x->run.n_w; wi++) {
		struct rm_window *w = &x->w[wi];

		w->index = (int)wi + 1;
		w->start_ns = take_time(r);
		w->stop_ns = take_time(r);
		w->stop_reason = (mode & 32) ? "SIGINT" : "duration";
		w->nodes = x->nodes[wi];
		w->n_nodes = (mode & 128) ? (size_t)take(r, 1) % (NODES_MAX + 1)
					  : 1 + (size_t)take(r, 1) % NODES_MAX;
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
			cut_on_node(r, x, n, w->start_ns);
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

/*
 * No absurd figure in text meant for people: no "18446744" (a wrapped
 * subtraction), no number before "ms" above max_ms, and (counts) no '-'
 * before a digit when counts is set.
 */
static void check_figures(const char *s, double max_ms, bool counts)
{
	const char *p = s;

	if (strstr(s, "18446744"))
		fprintf(stderr, "wrapped figure in: %s\n", s);
	FUZZ_CHECK(!strstr(s, "18446744"));
	for (; *p; p++) {
		char *end;
		double v;

		if (!isdigit((unsigned char)*p) ||
		    (p > s && (isdigit((unsigned char)p[-1]) || p[-1] == '.')))
			continue;
		if (counts)
			FUZZ_CHECK(p == s || p[-1] != '-');
		v = strtod(p, &end);
		while (*end == ' ')
			end++;
		if (!strncmp(end, "ms", 2)) {
			if (v > max_ms)
				fprintf(stderr, "absurd figure: %.40s\n", p);
			FUZZ_CHECK(v <= max_ms);
		}
	}
}

/* The summary's headline (its first line) and the rest, each checked. */
static void check_summary(const struct rm_run *run, double max_ms)
{
	char *buf = NULL, *nl;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	FUZZ_CHECK(f);
	rm_print_summary(f, run);
	FUZZ_CHECK(fclose(f) == 0);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	check_figures(buf, max_ms, true);
	if (nl)
		check_figures(nl + 1, max_ms, false);
	free(buf);
}

/* Rank 0's progress lines, on the run's windows and on times from the input. */
static void check_progress(struct reader *r, const struct rm_run *run, double max_ms)
{
	char line[128];
	long long n = (long long)(int64_t)take(r, 8);
	size_t total = (size_t)take(r, 4); /* a count of targets: 32 bits are plenty */
	uint64_t a = take_time(r), b = take_time(r);

	rm_progress_attached(line, sizeof(line), 1, n, total, a, b);
	check_figures(line, max_ms, true);
	rm_progress_detached(line, sizeof(line), 1, n, total, a, b);
	check_figures(line, max_ms, true);
	for (size_t i = 0; i < run->n_w; i++) {
		const struct rm_window *w = &run->w[i];

		rm_progress_attached(line, sizeof(line), w->index, (long long)w->n_nodes, total,
				     w->start_ns, w->stop_ns);
		check_figures(line, max_ms, true);
		rm_progress_detached(line, sizeof(line), w->index, 0, 0, w->stop_ns, w->start_ns);
		check_figures(line, max_ms, true);
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
	check_summary(&x.run, r.raw_times ? WEEK_MS : DAY_MS);
	check_progress(&r, &x.run, r.raw_times ? WEEK_MS : DAY_MS);
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
	for (size_t wi = 0; wi < WINDOWS_MAX; wi++)
		for (size_t ni = 0; ni < NODES_MAX; ni++)
			rm_node_sum_free(&x.nodes[wi][ni]);
	return 0;
}

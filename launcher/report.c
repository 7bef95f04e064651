/* SPDX-License-Identifier: MIT */
/*
 * What rank 0 shows and writes at the end of a run, from the records that
 * every node sent after each window: the summary table, the --dry-run
 * listing, the JSON report and the SVG timeline. No MPI here.
 *
 * Timing: a target's window is from its hand-over to the tools (tool_attach)
 * to the hand-back (tool_detach). Our agent measures both (attach_tool_ns,
 * detach_tool_ns); ROCm's side does not tell, and the library gives bounds
 * instead (each call's end: the tools ran inside it), flagged as such in
 * the records and the report. Skews are spreads of those; ROCm's windows
 * are lower bounds (the attach call's end to the detach call's start). All
 * timestamps are rank 0's CLOCK_REALTIME: each node's were corrected by its
 * estimated clock offset (rm_node.clock_offset_ns) when gathered.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <rocattach/version.h>

#include "report.h"

#define NS_PER_MS 1e6

/* ------------------------------------------------------------------------ */
/* Figures. */

/*
 * Attached: its attach call returned and did not fail. A target that exited
 * during its attach call (RN_EXITED with no detach) never was attached.
 */
static bool attached(const struct rn_target *t)
{
	if (t->attach_end_ns == 0 || t->state == RN_ATTACH_FAILED)
		return false;
	return !(t->state == RN_EXITED && t->detach_start_ns == 0);
}

/*
 * Attached in the window that started at since (0: any). A target that
 * failed is not attached again, and later windows gather its old record
 * again: its timestamps are older than their start. Each node fires at
 * start_ns by its own clock, the clock of its timestamps, so a record of
 * this window never ends its attach before the window's start.
 */
static bool attached_since(const struct rn_target *t, uint64_t since)
{
	return attached(t) && t->attach_end_ns >= since;
}

/*
 * A target that exited (normally or by a signal: the launcher is not its
 * parent and cannot tell) is not a failure: its job ended under it.
 */
static bool failed(const struct rn_target *t)
{
	return t->state == RN_ATTACH_FAILED || t->state == RN_DETACH_FAILED;
}

struct spread {
	uint64_t lo, hi;
	size_t n;
};

static void spread_add(struct spread *s, uint64_t v)
{
	if (!s->n || v < s->lo)
		s->lo = v;
	if (!s->n || v > s->hi)
		s->hi = v;
	s->n++;
}

static uint64_t spread_ns(const struct spread *s)
{
	return s->n ? s->hi - s->lo : 0;
}

/* The hand-over and hand-back times (measured or bound); 0 where none. */
static uint64_t hand_over(const struct rn_target *t)
{
	return t->attach_tool_ns ? t->attach_tool_ns : t->attach_end_ns;
}

static uint64_t hand_back(const struct rn_target *t)
{
	return t->detach_tool_ns ? t->detach_tool_ns : t->detach_start_ns;
}

static void node_spreads(const struct rm_node *n, uint64_t since, struct spread *a,
			 struct spread *d, struct spread *len, size_t *bounds)
{
	const struct rn_target *t;
	bool bound;
	size_t k;

	for (k = 0; k < n->n; k++) {
		t = &n->t[k];
		if (!attached_since(t, since))
			continue;
		spread_add(a, hand_over(t));
		*bounds += t->attach_tool_bound || t->detach_tool_bound || !t->attach_tool_ns;
		if (!hand_back(t))
			continue;
		spread_add(d, hand_back(t));
		if (rn_window_ns(t, &bound))
			spread_add(len, rn_window_ns(t, &bound));
	}
}

uint64_t rm_length_tolerance_ns(uint64_t planned_ns)
{
	return planned_ns / 100 + 5000000u;
}

struct rm_skew rm_window_skew(const struct rm_window *w)
{
	struct spread a = {0}, d = {0}, len = {0};
	uint64_t planned = w->stop_ns > w->start_ns ? w->stop_ns - w->start_ns : 0;
	struct rm_skew s = {0};
	size_t i;

	for (i = 0; i < w->n_nodes; i++)
		node_spreads(&w->nodes[i], w->start_ns, &a, &d, &len, &s.bounds);
	s.attach_ns = spread_ns(&a);
	s.detach_ns = spread_ns(&d);
	s.n = a.n;
	s.n_detach = d.n;
	s.len_min_ns = len.lo;
	s.len_max_ns = len.hi;
	s.n_len = len.n;
	if (len.n && planned) {
		uint64_t tol = rm_length_tolerance_ns(planned);

		s.len_off = len.lo + tol < planned || len.hi > planned + tol;
	}
	return s;
}

/* Spread of attach ends within one node; n = 0 when nothing attached there. */
static struct spread node_attach_spread(const struct rm_node *n, uint64_t since)
{
	struct spread a = {0}, d = {0}, len = {0};
	size_t bounds = 0;

	node_spreads(n, since, &a, &d, &len, &bounds);
	return a;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Attach time of a window: from the later of the call's start and the
 * window's start (since) to the call's return. Our agent loads the tools
 * ahead and waits for the window's start before tool_attach, so the part
 * before the start is preparation, not lateness. Median of an even count:
 * the mean of the two middle values, rounded down.
 */
static void node_times(const struct rm_node *n, uint64_t since, uint64_t *p50, uint64_t *max)
{
	const struct rn_target *t;
	uint64_t *v;
	size_t k, m = 0;

	*p50 = *max = 0;
	if (!n->n || !(v = malloc(n->n * sizeof(*v))))
		return;
	for (k = 0; k < n->n; k++) {
		t = &n->t[k];
		uint64_t from = t->attach_start_ns > since ? t->attach_start_ns : since;

		if (attached_since(t, since))
			v[m++] = t->attach_end_ns > from ? t->attach_end_ns - from : 0;
	}
	if (m) {
		qsort(v, m, sizeof(*v), cmp_u64);
		*p50 = m % 2 ? v[m / 2] : v[m / 2 - 1] + (v[m / 2] - v[m / 2 - 1]) / 2;
		*max = v[m - 1];
	}
	free(v);
}

void rm_node_attach_times(const struct rm_node *n, uint64_t *p50, uint64_t *max)
{
	node_times(n, 0, p50, max);
}

struct counts {
	size_t found, attached, failed, detached, exited;
};

/*
 * Each window's records are the same targets gathered again, so the counts
 * of a run are those of its last window. attached: completed a window or got
 * past its attach call in this one.
 */
static void count_node(const struct rm_node *n, struct counts *c)
{
	const struct rn_target *t;
	size_t k;

	c->found += n->n;
	for (k = 0; k < n->n; k++) {
		t = &n->t[k];
		if (t->windows > 0 || t->state == RN_ATTACHED || t->state == RN_DETACHED ||
		    t->state == RN_DETACH_FAILED)
			c->attached++;
		c->failed += failed(t);
		c->detached += t->state == RN_DETACHED;
		c->exited += t->state == RN_EXITED;
	}
}

static struct counts count_window(const struct rm_window *w)
{
	struct counts c = {0};
	size_t i;

	for (i = 0; w && i < w->n_nodes; i++)
		count_node(&w->nodes[i], &c);
	return c;
}

static const struct rm_window *last_window(const struct rm_run *r)
{
	return r->n_w ? &r->w[r->n_w - 1] : NULL;
}

/* ------------------------------------------------------------------------ */
/* Finding a target again in another window, and failures shown once. */

static const struct rm_node *find_node(const struct rm_window *w, size_t hint, const char *host)
{
	size_t i;

	if (hint < w->n_nodes && !strncmp(w->nodes[hint].host, host, sizeof(w->nodes[hint].host)))
		return &w->nodes[hint];
	for (i = 0; i < w->n_nodes; i++)
		if (!strncmp(w->nodes[i].host, host, sizeof(w->nodes[i].host)))
			return &w->nodes[i];
	return NULL;
}

static const struct rn_target *find_target(const struct rm_node *n, size_t hint, pid_t pid)
{
	size_t k;

	if (!n)
		return NULL;
	if (hint < n->n && n->t[hint].pid == pid)
		return &n->t[hint];
	for (k = 0; k < n->n; k++)
		if (n->t[k].pid == pid)
			return &n->t[k];
	return NULL;
}

/*
 * A failed target keeps its state and record in the windows after its
 * failure (the pool only attaches found or detached targets): report and
 * draw a failure in the first window that has it, not again.
 */
static bool new_failure(const struct rm_run *r, size_t wi, size_t ni, size_t ti)
{
	const struct rm_node *n = &r->w[wi].nodes[ni];
	const struct rn_target *t = &n->t[ti], *p;

	if (!failed(t))
		return false;
	if (wi == 0)
		return true;
	p = find_target(find_node(&r->w[wi - 1], ni, n->host), ti, t->pid);
	return !p || p->state != t->state || p->attach_start_ns != t->attach_start_ns ||
	       strncmp(p->message, t->message, sizeof(t->message));
}

typedef int (*failure_fn)(const struct rm_window *w, const struct rm_node *n,
			  const struct rn_target *t, void *arg);

/* fn on every failure once, in window order; stops at (and returns) fn's first non-zero. */
static int for_each_failure(const struct rm_run *r, failure_fn fn, void *arg)
{
	const struct rm_node *n;
	size_t wi, ni, ti;
	int rc;

	for (wi = 0; wi < r->n_w; wi++) {
		for (ni = 0; ni < r->w[wi].n_nodes; ni++) {
			n = &r->w[wi].nodes[ni];
			for (ti = 0; ti < n->n; ti++) {
				if (!new_failure(r, wi, ni, ti))
					continue;
				rc = fn(&r->w[wi], n, &n->t[ti], arg);
				if (rc)
					return rc;
			}
		}
	}
	return 0;
}

static int count_one(const struct rm_window *w, const struct rm_node *n,
		     const struct rn_target *t, void *arg)
{
	(void)w;
	(void)n;
	(void)t;
	(*(size_t *)arg)++;
	return 0;
}

size_t rm_count_failures(const struct rm_run *r)
{
	size_t n = 0;

	for_each_failure(r, count_one, &n);
	return n;
}

/* ------------------------------------------------------------------------ */
/* Text output. */

/* CLOCK_REALTIME ns as ISO-8601 UTC with milliseconds; "-" for 0. */
static void fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000u);
	struct tm tm;
	size_t k;

	if (!ns || !gmtime_r(&sec, &tm) || !(k = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf + k, len - k, ".%03uZ", (unsigned)(ns / 1000000u % 1000u));
}

static void fmt_ms(uint64_t ns, bool known, char *buf, size_t len)
{
	if (known)
		snprintf(buf, len, "%.3fms", (double)ns / NS_PER_MS);
	else
		snprintf(buf, len, "-");
}

/* Text from other hosts and processes on a terminal: no control characters. */
static void put_text(FILE *f, const char *s, size_t width)
{
	size_t len = strnlen(s, width), i;

	for (i = 0; i < len; i++)
		fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i], f);
}

/* s in exactly width columns: padded, or cut with a '~'. */
static void put_col(FILE *f, const char *s, size_t max, int width)
{
	int len = (int)strnlen(s, max);

	if (len > width) {
		put_text(f, s, (size_t)width - 1);
		fputc('~', f);
		return;
	}
	put_text(f, s, (size_t)len);
	fprintf(f, "%*s", width - len, "");
}

/* The host column: as wide as the longest host, within 15..32. */
static int host_width(const struct rm_node *nodes, size_t n_nodes)
{
	size_t i, w = 15, len;

	for (i = 0; i < n_nodes; i++) {
		len = strnlen(nodes[i].host, sizeof(nodes[i].host));
		if (len > w)
			w = len;
	}
	return w > 32 ? 32 : (int)w;
}

static void print_headline(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = last_window(r);
	struct counts c = count_window(w);
	size_t other = c.found - c.detached - c.failed - c.exited;

	if (!w)
		fprintf(f, "rocattach-mpi: no window ran");
	else
		fprintf(f, "rocattach-mpi: %zu node%s, %zu target%s", w->n_nodes,
			w->n_nodes == 1 ? "" : "s", c.found, c.found == 1 ? "" : "s");
	if (r->n_w > 1)
		fprintf(f, ", %zu windows", r->n_w);
	if (c.found)
		fprintf(f, ": %zu attached and detached, %zu failed", c.detached, c.failed);
	if (c.exited)
		fprintf(f, ", %zu exited", c.exited);
	if (c.found && other)
		fprintf(f, ", %zu not completed", other);
	fprintf(f, " (exit %d%s%s)\n", r->exit_code, r->exit_reason ? ": " : "",
		r->exit_reason ? r->exit_reason : "");
}

static void print_node_row(FILE *f, const struct rm_node *n, uint64_t since, int hw)
{
	struct spread a = node_attach_spread(n, since);
	struct counts c = {0};
	char p50s[32], maxs[32], skews[32];
	uint64_t p50, max;

	put_col(f, n->host, sizeof(n->host), hw);
	if (!n->n) {
		fprintf(f, " %5d  %s%s\n", 0, n->error ? "selection failed: " : "no targets found",
			n->error ? n->error : "");
		return;
	}
	count_node(n, &c);
	node_times(n, since, &p50, &max);
	fmt_ms(p50, a.n, p50s, sizeof(p50s));
	fmt_ms(max, a.n, maxs, sizeof(maxs));
	fmt_ms(spread_ns(&a), a.n, skews, sizeof(skews));
	fprintf(f, " %5zu %8zu %6zu %6zu %11s %11s %11s\n", c.found, c.attached, c.failed,
		c.exited, p50s, maxs, skews);
}

static void print_window_line(FILE *f, const struct rm_window *w)
{
	struct rm_skew s = rm_window_skew(w);
	char start[40];

	fmt_time(w->start_ns, start, sizeof(start));
	fprintf(f, "window %d: start %s, ", w->index, start);
	if (w->stop_ns >= w->start_ns && w->start_ns)
		fprintf(f, "%.1f ms", (double)(w->stop_ns - w->start_ns) / NS_PER_MS);
	else
		fprintf(f, "? ms");
	fprintf(f, ", stop reason %s, ", w->stop_reason ? w->stop_reason : "-");
	if (!s.n) {
		fprintf(f, "no target attached\n");
		return;
	}
	fprintf(f, "attach skew %.3f ms, detach skew ", (double)s.attach_ns / NS_PER_MS);
	if (s.n_detach)
		fprintf(f, "%.3f ms", (double)s.detach_ns / NS_PER_MS);
	else
		fputs("-", f);
	fprintf(f, " (%zu target%s", s.n, s.n == 1 ? "" : "s");
	if (s.bounds)
		fprintf(f, ", %zu from call bounds", s.bounds);
	fputs(")\n", f);
	if (s.n_len)
		fprintf(f, "  tools' window %.1f-%.1f ms%s%s\n", (double)s.len_min_ns / NS_PER_MS,
			(double)s.len_max_ns / NS_PER_MS, s.bounds ? " (at least, where bounds)" : "",
			s.len_off ? ": OFF the planned length by more than 1% + 5 ms" : "");
}

/*
 * ROCm's side has no watchdog: said once per run, with the targets, since a
 * launcher killed by SIGKILL leaves their tools attached until they exit.
 */
static void print_no_watchdog(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = last_window(r);
	size_t i, k, n = 0, shown = 0;

	for (i = 0; w && i < w->n_nodes; i++)
		for (k = 0; k < w->nodes[i].n; k++)
			n += w->nodes[i].t[k].side == ROCATTACH_SIDE_ROCM;
	if (!n)
		return;
	fprintf(f, "note: %zu target%s run%s ROCm's target side, which has no watchdog: if this "
		   "launcher is killed with SIGKILL, their tools stay attached until they exit "
		   "(every other signal detaches them):", n, n == 1 ? "" : "s", n == 1 ? "s" : "");
	for (i = 0; w && i < w->n_nodes; i++) {
		for (k = 0; k < w->nodes[i].n && shown < 16; k++) {
			if (w->nodes[i].t[k].side != ROCATTACH_SIDE_ROCM)
				continue;
			fputc(' ', f);
			put_text(f, w->nodes[i].host, sizeof(w->nodes[i].host));
			fprintf(f, ":%d", (int)w->nodes[i].t[k].pid);
			shown++;
		}
	}
	fprintf(f, "%s\n", n > shown ? " ..." : "");
}

struct failure_out {
	FILE *f;
	bool windows; /* name the window: there was more than one */
	bool any;
};

static int print_failure(const struct rm_window *w, const struct rm_node *n,
			 const struct rn_target *t, void *arg)
{
	struct failure_out *o = arg;

	if (!o->any)
		fputs("failures:\n", o->f);
	o->any = true;
	fputs("  ", o->f);
	put_text(o->f, n->host, sizeof(n->host));
	fprintf(o->f, " pid %d", (int)t->pid);
	if (t->rank >= 0)
		fprintf(o->f, " rank %ld", t->rank);
	fputs(" (", o->f);
	put_text(o->f, t->exe, sizeof(t->exe));
	fputc(')', o->f);
	if (o->windows)
		fprintf(o->f, ", window %d", w->index);
	fprintf(o->f, ": %s: ", rn_state_name(t->state));
	if (t->message[0])
		put_text(o->f, t->message, sizeof(t->message));
	else
		fputs("(no message)", o->f);
	fputc('\n', o->f);
	return 0;
}

/* Rows are the nodes of the last window: the same targets, gathered last. */
void rm_print_summary(FILE *f, const struct rm_run *r)
{
	const struct rm_window *w = last_window(r);
	size_t i;
	int hw;

	print_headline(f, r);
	if (w && w->n_nodes) {
		hw = host_width(w->nodes, w->n_nodes);
		fprintf(f, "%-*s found attached failed exited  attach p50  attach max  start skew\n",
			hw, "node");
		for (i = 0; i < w->n_nodes; i++)
			print_node_row(f, &w->nodes[i], w->start_ns, hw);
	}
	for (i = 0; i < r->n_w; i++)
		print_window_line(f, &r->w[i]);
	print_no_watchdog(f, r);
	for_each_failure(r, print_failure, &(struct failure_out){.f = f, .windows = r->n_w > 1});
	fflush(f);
}

static void print_dry_target(FILE *f, const struct rn_target *t)
{
	char pid[32], rank[24];

	if (t->nspid && t->nspid != t->pid)
		snprintf(pid, sizeof(pid), "%d (%d)", (int)t->pid, (int)t->nspid);
	else
		snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	if (t->rank >= 0)
		snprintf(rank, sizeof(rank), "%ld", t->rank);
	else
		snprintf(rank, sizeof(rank), "-");
	fprintf(f, "  %-15s %6s %6u  ", pid, rank, (unsigned)t->uid);
	put_col(f, t->exe, sizeof(t->exe), 16);
	fprintf(f, " %-8s  ",
		!t->listener ? "no" : t->side == ROCATTACH_SIDE_ROCM ? "rocm"
			: t->side == ROCATTACH_SIDE_AGENT ? "agent" : "yes");
	put_col(f, t->topo.cpus[0] ? t->topo.cpus : "-", sizeof(t->topo.cpus), 13);
	fputc(' ', f);
	put_col(f, t->topo.numa[0] ? t->topo.numa : "-", sizeof(t->topo.numa), 5);
	fputc(' ', f);
	put_text(f, t->topo.gpus[0] ? t->topo.gpus : "-", sizeof(t->topo.gpus));
	fputc('\n', f);
}

void rm_print_dry_run(FILE *f, const struct rm_node *nodes, size_t n_nodes)
{
	size_t i, k, total = 0;

	for (i = 0; i < n_nodes; i++) {
		put_text(f, nodes[i].host, sizeof(nodes[i].host));
		fprintf(f, ": %zu process%s\n", nodes[i].n, nodes[i].n == 1 ? "" : "es");
		if (!nodes[i].n) {
			fputs("  (no matching processes)\n", f);
			continue;
		}
		fprintf(f, "  %-15s %6s %6s  %-16s %-8s  %-13s %-5s %s\n", "pid (nspid)", "rank",
			"uid", "exe", "listener", "cpus", "numa", "gpus");
		for (k = 0; k < nodes[i].n; k++)
			print_dry_target(f, &nodes[i].t[k]);
		total += nodes[i].n;
	}
	fprintf(f, "dry run: %zu process%s on %zu node%s would be attached; nothing was attached\n",
		total, total == 1 ? "" : "es", n_nodes, n_nodes == 1 ? "" : "s");
	fflush(f);
}

/* ------------------------------------------------------------------------ */
/* Files, written whole or not at all: PATH.tmp, then renamed over PATH. */

struct out {
	FILE *f;
	char *tmp;
	const char *path, *what;
};

static int out_fail(struct out *o, int e, char *err, size_t len)
{
	snprintf(err, len, "cannot write %s %s: %s", o->what, o->path, strerror(e));
	if (o->f)
		fclose(o->f);
	if (o->tmp) {
		unlink(o->tmp);
		free(o->tmp);
	}
	o->f = NULL;
	o->tmp = NULL;
	return -1;
}

/*
 * Rank 0 may run as root and PATH may be in a shared directory: never
 * follow a symbolic link planted at PATH.tmp.
 */
static int out_open(struct out *o, const char *path, const char *what, char *err, size_t len)
{
	int fd, e;

	*o = (struct out){.path = path, .what = what};
	if (asprintf(&o->tmp, "%s.tmp", path) < 0) {
		o->tmp = NULL;
		return out_fail(o, ENOMEM, err, len);
	}
	fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		/* Nothing was created: keep unlink away from a file that is not ours. */
		e = errno;
		free(o->tmp);
		o->tmp = NULL;
		return out_fail(o, e, err, len);
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		e = errno;
		close(fd);
		return out_fail(o, e, err, len);
	}
	errno = 0;
	return 0;
}

static int out_close(struct out *o, char *err, size_t len)
{
	int e = 0;

	if (ferror(o->f))
		e = errno ? errno : EIO;
	if (fclose(o->f) && !e)
		e = errno;
	o->f = NULL;
	if (!e && rename(o->tmp, o->path))
		e = errno;
	if (e)
		return out_fail(o, e, err, len);
	free(o->tmp);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* JSON report. json_object_set_new() takes (and on failure frees) the value. */

/* jansson refuses what is not UTF-8: then non-ASCII bytes become '?'. */
static json_t *jstr(const char *s, size_t width)
{
	size_t len = strnlen(s, width), i;
	json_t *j = json_stringn(s, len);
	char *copy;

	if (j || !(copy = malloc(len + 1)))
		return j;
	for (i = 0; i < len; i++)
		copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	j = json_stringn(copy, len);
	free(copy);
	return j;
}

static json_t *jstr_or_null(const char *s)
{
	return s ? jstr(s, (size_t)-1) : json_null();
}

/* Timestamps and durations in ns fit: CLOCK_REALTIME stays below 2^63 ns until 2262. */
static json_t *jint_or_null(uint64_t v, bool known)
{
	return known ? json_integer((json_int_t)v) : json_null();
}

static json_t *argv_json(const struct rm_config *c)
{
	json_t *a = json_array();
	int i;

	for (i = 0; a && c->argv && i < c->argc; i++) {
		if (json_array_append_new(a, jstr_or_null(c->argv[i]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *config_json(const struct rm_config *c)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "argv", argv_json(c));
	rc |= json_object_set_new(o, "tools", jstr_or_null(c->tools));
	rc |= json_object_set_new(o, "duration_ms",
				  jint_or_null((uint64_t)c->duration_ms, c->duration_ms != -1));
	rc |= json_object_set_new(o, "delay_ms", json_integer(c->delay_ms));
	rc |= json_object_set_new(o, "windows", json_integer(c->windows));
	rc |= json_object_set_new(o, "jobs", json_integer(c->jobs));
	rc |= json_object_set_new(o, "inject", json_boolean(c->inject));
	rc |= json_object_set_new(o, "ranks", json_integer(c->ranks));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* found is "found" in a node, "targets" in the run's summary. */
static json_t *counts_json(json_t *o, const struct counts *c, const char *found)
{
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, found, json_integer((json_int_t)c->found));
	rc |= json_object_set_new(o, "attached", json_integer((json_int_t)c->attached));
	rc |= json_object_set_new(o, "failed", json_integer((json_int_t)c->failed));
	rc |= json_object_set_new(o, "exited", json_integer((json_int_t)c->exited));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *summary_json(const struct rm_run *r)
{
	const struct rm_window *w = last_window(r);
	struct counts c = count_window(w);
	json_t *o = json_object();

	if (o && json_object_set_new(o, "nodes", json_integer(w ? (json_int_t)w->n_nodes : 0))) {
		json_decref(o);
		return NULL;
	}
	return counts_json(o, &c, "targets");
}

/* A node's topology: the union of its targets' CPU and NUMA lists. */
struct ranges {
	struct rn_range *v;
	size_t n, cap;
};

static int ranges_push(struct ranges *r, long lo, long hi)
{
	struct rn_range *v;

	if (r->n == r->cap) {
		v = realloc(r->v, (r->cap ? 2 * r->cap : 16) * sizeof(*v));
		if (!v)
			return -1;
		r->v = v;
		r->cap = r->cap ? 2 * r->cap : 16;
	}
	r->v[r->n++] = (struct rn_range){lo, hi};
	return 0;
}

/*
 * "0-3,8" into r; what does not parse is skipped, and so are numbers past
 * INT_MAX (strtol gives LONG_MAX for any longer one, and merging adds 1).
 */
static int ranges_parse(struct ranges *r, const char *s, size_t width)
{
	char buf[128], *p, *end;
	long lo, hi;

	snprintf(buf, sizeof(buf), "%.*s", (int)strnlen(s, width), s);
	for (p = buf; *p; p = *end ? end + 1 : end) {
		lo = hi = strtol(p, &end, 10);
		if (end != p && *end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p)
				hi = -1;
		}
		if (end != p && lo >= 0 && hi >= lo && hi <= INT_MAX && ranges_push(r, lo, hi))
			return -1;
		end = strchrnul(end, ',');
	}
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct rn_range *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Sorted and merged, as a list ("0-5,8"); NULL if out of memory. */
static json_t *ranges_json(struct ranges *r)
{
	char *s = NULL;
	size_t len = 0, i, k;
	FILE *f = open_memstream(&s, &len);
	json_t *j = NULL;

	if (!f)
		return NULL;
	/* qsort's array must not be NULL, even when empty. */
	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), cmp_range);
	for (i = 0; i < r->n; i = k) {
		long hi = r->v[i].hi;

		for (k = i + 1; k < r->n && r->v[k].lo <= hi + 1; k++)
			hi = r->v[k].hi > hi ? r->v[k].hi : hi;
		fprintf(f, i ? ",%ld" : "%ld", r->v[i].lo);
		if (hi > r->v[i].lo)
			fprintf(f, "-%ld", hi);
	}
	if (!fclose(f))
		j = json_string(s);
	free(s);
	return j;
}

static json_t *list_union_json(const struct rm_node *n, bool numa)
{
	struct ranges r = {0};
	json_t *j = NULL;
	size_t k;

	for (k = 0; k < n->n; k++) {
		const struct rn_topo *t = &n->t[k].topo;

		if (numa ? ranges_parse(&r, t->numa, sizeof(t->numa)) :
			   ranges_parse(&r, t->cpus, sizeof(t->cpus)))
			goto out;
	}
	j = ranges_json(&r);
out:
	free(r.v);
	return j;
}

static bool has_string(json_t *a, const char *s, size_t len)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v) {
		if (json_string_length(v) == len && !memcmp(json_string_value(v), s, len))
			return true;
	}
	return false;
}

/* The GPUs near any target of the node, each once, in order of appearance. */
static json_t *gpus_union_json(const struct rm_node *n)
{
	json_t *a = json_array();
	const char *g;
	size_t k, i, e, len;

	for (k = 0; a && k < n->n; k++) {
		g = n->t[k].topo.gpus;
		len = strnlen(g, sizeof(n->t[k].topo.gpus));
		for (i = 0; i < len; i = e + 1) {
			for (e = i; e < len && g[e] != ','; e++)
				;
			if (e == i || has_string(a, g + i, e - i))
				continue;
			if (json_array_append_new(a, jstr(g + i, e - i))) {
				json_decref(a);
				return NULL;
			}
		}
	}
	return a;
}

static json_t *topology_json(const struct rm_node *n)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "cpus", list_union_json(n, false));
	rc |= json_object_set_new(o, "numa", list_union_json(n, true));
	rc |= json_object_set_new(o, "gpus", gpus_union_json(n));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *targets_json(const struct rm_node *n)
{
	json_t *a = json_array();
	size_t k;

	for (k = 0; a && k < n->n; k++) {
		if (json_array_append_new(a, rn_target_to_json(&n->t[k]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *node_json(const struct rm_node *n, uint64_t since)
{
	struct spread a = node_attach_spread(n, since);
	struct counts c = {0};
	json_t *o = json_object();
	uint64_t p50, max;
	int rc = 0;

	if (!o)
		return NULL;
	count_node(n, &c);
	node_times(n, since, &p50, &max);
	rc |= json_object_set_new(o, "host", jstr(n->host, sizeof(n->host)));
	rc |= json_object_set_new(o, "error", jstr_or_null(n->error));
	rc |= json_object_set_new(o, "realtime_minus_boottime_ns",
				  n->boot_offset_ns ? json_integer(n->boot_offset_ns) : json_null());
	rc |= json_object_set_new(o, "topology", topology_json(n));
	if (rc || !(o = counts_json(o, &c, "found"))) {
		json_decref(o);
		return NULL;
	}
	rc |= json_object_set_new(o, "attach_p50_ns", jint_or_null(p50, a.n));
	rc |= json_object_set_new(o, "attach_max_ns", jint_or_null(max, a.n));
	rc |= json_object_set_new(o, "attach_skew_ns", jint_or_null(spread_ns(&a), a.n));
	rc |= json_object_set_new(o, "clock_offset_ns", n->clock_known
				  ? json_integer((json_int_t)n->clock_offset_ns) : json_null());
	rc |= json_object_set_new(o, "clock_rtt_ns", jint_or_null(n->clock_rtt_ns, n->clock_known));
	rc |= json_object_set_new(o, "clock_corrected",
				  n->clock_known ? json_boolean(n->clock_applied) : json_null());
	rc |= json_object_set_new(o, "targets", targets_json(n));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Measured when every figure came from our agent's clock, else from bounds (or mixed). */
static json_t *basis_json(const struct rm_skew *s)
{
	if (!s->n)
		return json_null();
	return json_string(!s->bounds ? "measured" : s->bounds == s->n ? "bounds" : "mixed");
}

/* Null (never 0) where no target was attached. */
static json_t *skew_json(const struct rm_window *w)
{
	struct rm_skew s = rm_window_skew(w);
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "attach_ns", jint_or_null(s.attach_ns, s.n));
	rc |= json_object_set_new(o, "detach_ns", jint_or_null(s.detach_ns, s.n_detach));
	rc |= json_object_set_new(o, "targets", json_integer((json_int_t)s.n));
	rc |= json_object_set_new(o, "basis", basis_json(&s));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The tools' windows of the targets against the planned one. */
static json_t *length_json(const struct rm_window *w)
{
	struct rm_skew s = rm_window_skew(w);
	uint64_t planned = w->stop_ns > w->start_ns ? w->stop_ns - w->start_ns : 0;
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "planned_ns", jint_or_null(planned, planned));
	rc |= json_object_set_new(o, "min_ns", jint_or_null(s.len_min_ns, s.n_len));
	rc |= json_object_set_new(o, "max_ns", jint_or_null(s.len_max_ns, s.n_len));
	rc |= json_object_set_new(o, "kind", !s.n_len ? json_null()
				  : json_string(s.bounds ? "lower-bound" : "measured"));
	rc |= json_object_set_new(o, "tolerance_ns",
				  jint_or_null(rm_length_tolerance_ns(planned), planned));
	rc |= json_object_set_new(o, "off", s.n_len && planned ? json_boolean(s.len_off)
							       : json_null());
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *window_json(const struct rm_window *w)
{
	json_t *o = json_object(), *nodes = json_array();
	size_t i;
	int rc = 0;

	for (i = 0; nodes && i < w->n_nodes; i++)
		rc |= json_array_append_new(nodes, node_json(&w->nodes[i], w->start_ns));
	if (!o || rc) {
		json_decref(nodes);
		json_decref(o);
		return NULL;
	}
	rc |= json_object_set_new(o, "index", json_integer(w->index));
	rc |= json_object_set_new(o, "start_ns", jint_or_null(w->start_ns, w->start_ns));
	rc |= json_object_set_new(o, "stop_ns", jint_or_null(w->stop_ns, w->stop_ns));
	rc |= json_object_set_new(o, "stop_reason", jstr_or_null(w->stop_reason));
	rc |= json_object_set_new(o, "skew", skew_json(w));
	rc |= json_object_set_new(o, "length", length_json(w));
	rc |= json_object_set_new(o, "nodes", nodes);
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *error_json(const struct rm_window *w, const struct rm_node *n,
			  const struct rn_target *t)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "window", json_integer(w->index));
	rc |= json_object_set_new(o, "host", jstr(n->host, sizeof(n->host)));
	rc |= json_object_set_new(o, "pid", json_integer(t->pid));
	rc |= json_object_set_new(o, "rank", t->rank >= 0 ? json_integer(t->rank) : json_null());
	rc |= json_object_set_new(o, "state", json_string(rn_state_name(t->state)));
	rc |= json_object_set_new(o, "message", t->message[0] ?
				  jstr(t->message, sizeof(t->message)) : json_null());
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int append_error(const struct rm_window *w, const struct rm_node *n,
			const struct rn_target *t, void *arg)
{
	return json_array_append_new(arg, error_json(w, n, t));
}

/* Every failure once, in the first window that has it (see new_failure). */
static json_t *errors_json(const struct rm_run *r)
{
	json_t *a = json_array();

	if (a && for_each_failure(r, append_error, a)) {
		json_decref(a);
		return NULL;
	}
	return a;
}

static json_t *windows_json(const struct rm_run *r)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < r->n_w; i++) {
		if (json_array_append_new(a, window_json(&r->w[i]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *run_json(const struct rm_run *r)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "schema", json_string("rocattach-mpi-report/1"));
	rc |= json_object_set_new(o, "version", json_string(ROCATTACH_VERSION_STRING));
	rc |= json_object_set_new(o, "started_ns", json_integer((json_int_t)r->started_ns));
	rc |= json_object_set_new(o, "ended_ns", json_integer((json_int_t)r->ended_ns));
	rc |= json_object_set_new(o, "exit_code", json_integer(r->exit_code));
	rc |= json_object_set_new(o, "exit_reason", jstr_or_null(r->exit_reason));
	rc |= json_object_set_new(o, "stop_reason", jstr_or_null(r->stop_reason));
	rc |= json_object_set_new(o, "config", config_json(&r->cfg));
	rc |= json_object_set_new(o, "summary", summary_json(r));
	rc |= json_object_set_new(o, "windows", windows_json(r));
	rc |= json_object_set_new(o, "errors", errors_json(r));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Write j (NULL: out of memory) to path atomically, as the file named what; j is released. */
static int write_json(const char *path, const char *what, json_t *j, size_t flags, char *err,
		      size_t len)
{
	struct out o;
	int rc = -1;

	if (!j) {
		snprintf(err, len, "cannot write %s %s: %s", what, path, strerror(ENOMEM));
		return -1;
	}
	if (out_open(&o, path, what, err, len))
		goto out;
	if (json_dumpf(j, o.f, flags | JSON_PRESERVE_ORDER) || fputc('\n', o.f) == EOF) {
		rc = out_fail(&o, errno ? errno : EIO, err, len);
		goto out;
	}
	rc = out_close(&o, err, len);
out:
	json_decref(j);
	return rc;
}

int rm_write_report(const char *path, const struct rm_run *r, char *err, size_t len)
{
	return write_json(path, "report", run_json(r), JSON_INDENT(1), err, len);
}

/* ------------------------------------------------------------------------ */
/* SVG timeline: one lane per target, grouped by node, windows left to right. */

#define SVG_W 1200
#define SVG_LABEL_W 220 /* lane labels left of the plot */
#define SVG_RIGHT 24
#define SVG_TOP 74	/* title, window labels, tick labels */
#define SVG_GROUP_H 24
#define SVG_LANE_H 18
#define SVG_BOTTOM 44	/* legend */
#define SVG_CHAR_W 6.6	/* average width of an 11px sans-serif character, with margin */

#define SVG_OK "#3a9d5d"
#define SVG_EXIT "#9aa5b1"
#define SVG_FAIL "#d64541"
#define SVG_CALL "#1d3557"

struct svg {
	FILE *f;
	const struct rm_run *r;
	uint64_t t0, lo, hi; /* window 1's start; the axis range */
	double px_per_ns;
	int y; /* top of the next row */
};

/*
 * Text into XML: escaped, control characters (not allowed in XML 1.0 even
 * escaped) and non-ASCII bytes (maybe not UTF-8) as '?', cut at max
 * characters with a '~'.
 */
static void xml_put(FILE *f, const char *s, size_t width, size_t max)
{
	size_t len = strnlen(s, width), i;
	bool cut = len > max;
	unsigned char c;

	for (i = 0; i < (cut ? max - 1 : len); i++) {
		c = (unsigned char)s[i];
		switch (c) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fputc(c < 0x20 || c >= 0x7f ? '?' : c, f);
		}
	}
	if (cut)
		fputc('~', f);
}

static double svg_x(const struct svg *s, uint64_t ns)
{
	return SVG_LABEL_W + (double)(int64_t)(ns - s->lo) * s->px_per_ns;
}

static double rel_ms(const struct svg *s, uint64_t ns)
{
	return (double)(int64_t)(ns - s->t0) / NS_PER_MS;
}

static void range_add(struct spread *sp, uint64_t ns)
{
	if (ns)
		spread_add(sp, ns);
}

/* Every timestamp of the run, with a little room on both sides. */
static void svg_range(struct svg *s)
{
	const struct rm_window *w;
	const struct rn_target *t;
	struct spread sp = {0};
	uint64_t pad;
	size_t wi, ni, k;

	for (wi = 0; wi < s->r->n_w; wi++) {
		w = &s->r->w[wi];
		range_add(&sp, w->start_ns);
		range_add(&sp, w->stop_ns);
		for (ni = 0; ni < w->n_nodes; ni++) {
			for (k = 0; k < w->nodes[ni].n; k++) {
				t = &w->nodes[ni].t[k];
				range_add(&sp, t->attach_start_ns);
				range_add(&sp, t->attach_end_ns);
				range_add(&sp, t->detach_start_ns);
				range_add(&sp, t->detach_end_ns);
			}
		}
	}
	if (spread_ns(&sp) < 1000000)
		sp.hi = sp.lo + 1000000;
	pad = spread_ns(&sp) / 50;
	if (pad > sp.lo) /* nothing ran: an axis from 0 */
		pad = sp.lo;
	s->t0 = s->r->n_w && s->r->w[0].start_ns ? s->r->w[0].start_ns : sp.lo;
	s->lo = sp.lo - pad;
	s->hi = sp.hi + pad;
	s->px_per_ns = (double)(SVG_W - SVG_LABEL_W - SVG_RIGHT) / (double)(s->hi - s->lo);
}

static int svg_height(const struct rm_run *r)
{
	const struct rm_window *w = last_window(r);
	size_t i, h = SVG_TOP + SVG_BOTTOM;

	for (i = 0; w && i < w->n_nodes; i++)
		h += SVG_GROUP_H + w->nodes[i].n * SVG_LANE_H;
	return (int)h;
}

static void svg_head(struct svg *s, int height)
{
	const struct rm_run *r = s->r;
	struct counts c = count_window(last_window(r));
	size_t n_nodes = r->n_w ? last_window(r)->n_nodes : 0;
	char line[256], start[40];

	fprintf(s->f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\">\n<style>\n"
		"text{font-family:DejaVu Sans,Arial,sans-serif;font-size:11px;fill:#222}\n"
		".title{font-size:14px;font-weight:bold}\n.host{font-weight:bold}\n"
		".dim{fill:#777}\n.tick{font-size:10px;fill:#666}\n.bad{fill:" SVG_FAIL "}\n"
		".inbar{fill:#fff;font-size:9px}\n"
		".halo{paint-order:stroke;stroke:#fff;stroke-width:5px;stroke-linejoin:round}\n"
		"</style>\n<path d=\"M0 0H%dV%dH0Z\" fill=\"#fff\"/>\n",
		SVG_W, height, SVG_W, height, SVG_W, height);
	fmt_time(s->t0, start, sizeof(start));
	snprintf(line, sizeof(line),
		 "rocattach-mpi: %zu node%s, %zu target%s, %zu window%s from %s, exit %d%s%s",
		 n_nodes, n_nodes == 1 ? "" : "s", c.found, c.found == 1 ? "" : "s", r->n_w,
		 r->n_w == 1 ? "" : "s", start, r->exit_code, r->exit_reason ? ": " : "",
		 r->exit_reason ? r->exit_reason : "");
	fputs("<text class=\"title\" x=\"8\" y=\"20\">", s->f);
	xml_put(s->f, line, sizeof(line), sizeof(line));
	fputs("</text>\n", s->f);
}

/* 1, 2 or 5 times a power of ten: at most 10 ticks over span. */
static double nice_step(double span_ms, int *decimals)
{
	static const double m[] = {1, 2, 5};
	double base = 0.001;
	int i;

	for (*decimals = 3; base < 1e12; base *= 10, *decimals -= *decimals > 0) {
		for (i = 0; i < 3; i++)
			if (span_ms / (m[i] * base) <= 10)
				return m[i] * base;
	}
	return base;
}

/*
 * Ticks in ms (or s past 10 s per tick) since window 1's start: grid lines
 * (under everything) or their labels (over the window lines).
 */
static void svg_axis(struct svg *s, int bottom, bool labels)
{
	double lo = rel_ms(s, s->lo), hi = rel_ms(s, s->hi), step, x;
	long long k;
	bool sec;
	int dec;

	step = nice_step(hi - lo, &dec);
	sec = step >= 10000;
	if (labels)
		fprintf(s->f, "<text class=\"tick\" x=\"8\" y=\"%d\">%s since window 1 start"
			"</text>\n", SVG_TOP - 8, sec ? "s" : "ms");
	k = (long long)(lo / step);
	for (k += (double)k * step < lo; (double)k * step <= hi; k++) {
		x = SVG_LABEL_W + ((double)k * step - lo) * NS_PER_MS * s->px_per_ns;
		if (!labels)
			fprintf(s->f,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
				"stroke=\"#e4e4e4\"/>\n",
				x, SVG_TOP - 4, x, bottom);
		else
			fprintf(s->f,
				"<text class=\"tick halo\" x=\"%.1f\" y=\"%d\" "
				"text-anchor=\"middle\">%.*f</text>\n",
				x, SVG_TOP - 8, sec ? 0 : dec, (double)k * step / (sec ? 1000 : 1));
	}
}

/* The label over a window, as long as fits before the next window starts. */
static void svg_window_label(struct svg *s, const struct rm_window *w, double x, double room)
{
	struct rm_skew sk = rm_window_skew(w);
	char text[160];
	size_t len;

	len = (size_t)snprintf(text, sizeof(text),
			       "window %d: attach skew %.3f ms, detach skew %.3f ms", w->index,
			       (double)sk.attach_ns / NS_PER_MS, (double)sk.detach_ns / NS_PER_MS);
	if (!sk.n)
		len = (size_t)snprintf(text, sizeof(text), "window %d: nothing attached", w->index);
	if (len * SVG_CHAR_W > room && sk.n)
		len = (size_t)snprintf(text, sizeof(text), "w%d skew: attach %.3f, detach %.3f ms",
				       w->index, (double)sk.attach_ns / NS_PER_MS,
				       (double)sk.detach_ns / NS_PER_MS);
	if (len * SVG_CHAR_W > room)
		len = (size_t)snprintf(text, sizeof(text), "w%d", w->index);
	if (len * SVG_CHAR_W > room)
		return;
	fprintf(s->f, "<text class=\"halo\" x=\"%.1f\" y=\"%d\">%s</text>\n", x + 3, SVG_TOP - 28,
		text);
}

static void svg_vline(struct svg *s, uint64_t ns, int bottom, const char *what, int index)
{
	double x = svg_x(s, ns);

	fprintf(s->f,
		"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#555\" "
		"stroke-dasharray=\"5 3\"><title>window %d %s</title></line>\n",
		x, SVG_TOP - 40, x, bottom, index, what);
}

/* Dashed lines at each window's start and stop, labelled with its skews. */
static void svg_windows(struct svg *s, int bottom)
{
	const struct rm_window *w;
	double x, next;
	size_t i;

	for (i = 0; i < s->r->n_w; i++) {
		w = &s->r->w[i];
		if (!w->start_ns)
			continue;
		x = svg_x(s, w->start_ns);
		next = i + 1 < s->r->n_w && s->r->w[i + 1].start_ns ?
			       svg_x(s, s->r->w[i + 1].start_ns) : SVG_W - 4;
		svg_window_label(s, w, x, next - x - 6);
		svg_vline(s, w->start_ns, bottom, "start", w->index);
		if (w->stop_ns)
			svg_vline(s, w->stop_ns, bottom, "stop", w->index);
	}
}

static void svg_title(struct svg *s, const char *text)
{
	fputs("<title>", s->f);
	xml_put(s->f, text, (size_t)-1, (size_t)-1);
	fputs("</title>", s->f);
}

/* A thin dark mark over a call span (at least 2 px, so a fast call still shows). */
static void svg_call(struct svg *s, uint64_t start, uint64_t end, int y, const char *what)
{
	double x1 = svg_x(s, start), x2 = end > start ? svg_x(s, end) : x1;
	char t[96];

	if (!start)
		return;
	if (x2 - x1 < 2)
		x2 = x1 + 2;
	snprintf(t, sizeof(t), "%s call: %.3f ms", what,
		 end > start ? (double)(end - start) / NS_PER_MS : 0.0);
	fprintf(s->f,
		"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"" SVG_CALL
		"\" stroke-width=\"14\">",
		x1, y + 9, x2, y + 9);
	svg_title(s, t);
	fputs("</line>\n", s->f);
}

/*
 * Where a target's bar of one window goes: profiling (attach end to detach
 * start, or to the window's stop if it never detached), or for a failed
 * attach the attach call itself. false: nothing to draw.
 */
static bool bar_span(const struct rm_window *w, const struct rn_target *t, uint64_t *from,
		     uint64_t *to)
{
	if (attached(t)) {
		*from = t->attach_end_ns;
		*to = t->detach_start_ns ? t->detach_start_ns : w->stop_ns;
	} else if (failed(t)) {
		*from = t->attach_start_ns ? t->attach_start_ns : w->start_ns;
		*to = t->attach_end_ns;
	} else {
		return false;
	}
	if (*to < *from)
		*to = *from;
	return *from != 0;
}

static void bar_title(const struct rm_window *w, const struct rm_node *n,
		      const struct rn_target *t, const struct svg *s, char *buf, size_t len)
{
	int k = snprintf(buf, len, "%.*s pid %d (%.*s), window %d: %s", (int)sizeof(n->host),
			 n->host, (int)t->pid, (int)sizeof(t->exe), t->exe, w->index,
			 rn_state_name(t->state));

	if (k < 0 || (size_t)k >= len)
		return;
	if (t->message[0])
		snprintf(buf + k, len - (size_t)k, ": %.*s", (int)sizeof(t->message), t->message);
	else if (attached(t))
		snprintf(buf + k, len - (size_t)k, ", attached %+.3f ms to %+.3f ms",
			 rel_ms(s, t->attach_end_ns),
			 rel_ms(s, t->detach_start_ns ? t->detach_start_ns : w->stop_ns));
}

/*
 * A failed target is not attached again: the rest of its lane is free for
 * its state's name; at the right edge, the name goes inside the bar.
 */
static void svg_state_label(struct svg *s, const struct rn_target *t, double x1, double x2, int y)
{
	const char *name = rn_state_name(t->state);
	double w = (double)strlen(name) * SVG_CHAR_W;

	if (x2 + 4 + w > SVG_W && x2 - x1 > w + 8)
		fprintf(s->f, "<text class=\"inbar\" x=\"%.1f\" y=\"%d\" text-anchor=\"end\">%s"
			"</text>\n", x2 - 4, y + 12, name);
	else
		fprintf(s->f, "<text class=\"bad halo\" x=\"%.1f\" y=\"%d\">%s</text>\n", x2 + 4,
			y + 13, name);
}

/* The record of a target that exited, unchanged since the previous window: drawn there. */
static bool stale_exit(const struct rm_run *r, size_t wi, const struct rm_node *n,
		       const struct rn_target *t)
{
	const struct rn_target *p;

	if (t->state != RN_EXITED || wi == 0)
		return false;
	p = find_target(find_node(&r->w[wi - 1], 0, n->host), (size_t)(t - n->t), t->pid);
	return p && p->state == t->state && p->attach_start_ns == t->attach_start_ns;
}

/*
 * One target in one window: its bar (green, red if it failed, grey if it
 * exited attached), then its call marks.
 */
static void svg_target(struct svg *s, size_t wi, const struct rm_node *n, size_t ni, size_t ti,
		       int y)
{
	const struct rm_window *w = &s->r->w[wi];
	const struct rm_node *wn = find_node(w, ni, n->host);
	const struct rn_target *t = find_target(wn, ti, n->t[ti].pid);
	uint64_t from, to;
	double x1, x2;
	char title[512];

	if (!t || !bar_span(w, t, &from, &to))
		return;
	if (failed(t) && !new_failure(s->r, wi, (size_t)(wn - w->nodes), (size_t)(t - wn->t)))
		return;
	if (stale_exit(s->r, wi, wn, t))
		return;
	x1 = svg_x(s, from);
	x2 = svg_x(s, to);
	if (x2 - x1 < 6)
		x2 = x1 + 6;
	bar_title(w, n, t, s, title, sizeof(title));
	fprintf(s->f,
		"<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"10\" rx=\"2\" fill=\"%s\">",
		x1, y + 4, x2 - x1, failed(t) ? SVG_FAIL : t->state == RN_EXITED ? SVG_EXIT : SVG_OK);
	svg_title(s, title);
	fputs("</rect>\n", s->f);
	/* A failed attach's bar is its call: no mark over it. */
	if (attached(t))
		svg_call(s, t->attach_start_ns, t->attach_end_ns, y, "attach");
	svg_call(s, t->detach_start_ns, t->detach_end_ns, y, "detach");
	if (failed(t))
		svg_state_label(s, t, x1, x2, y);
}

/* Every other lane shaded, drawn before the grid so that it shows through. */
static void svg_shading(struct svg *s, const struct rm_window *w)
{
	int y = SVG_TOP;
	size_t i, k;

	for (i = 0; w && i < w->n_nodes; i++) {
		y += SVG_GROUP_H;
		for (k = 0; k < w->nodes[i].n; k++, y += SVG_LANE_H)
			if (k % 2)
				fprintf(s->f, "<path d=\"M0 %dH%dV%dH0Z\" fill=\"#f1f4f8\"/>\n", y,
					SVG_W, y + SVG_LANE_H);
	}
}

static void svg_lane(struct svg *s, const struct rm_node *n, size_t ni, size_t ti)
{
	const struct rn_target *t = &n->t[ti];
	char label[64];
	size_t wi;

	if (t->rank >= 0)
		snprintf(label, sizeof(label), "%d (rank %ld)", (int)t->pid, t->rank);
	else
		snprintf(label, sizeof(label), "%d", (int)t->pid);
	fprintf(s->f, "<text x=\"20\" y=\"%d\"%s>%s <tspan class=\"dim\">", s->y + 13,
		failed(t) ? " class=\"bad\"" : "", label);
	xml_put(s->f, t->exe, sizeof(t->exe), 18);
	fputs("</tspan></text>\n", s->f);
	for (wi = 0; wi < s->r->n_w; wi++)
		svg_target(s, wi, n, ni, ti, s->y);
	s->y += SVG_LANE_H;
}

/* A node's label row, then one lane per target. */
static void svg_node(struct svg *s, const struct rm_node *n, size_t ni)
{
	struct counts c = {0};
	size_t k;

	count_node(n, &c);
	fprintf(s->f,
		"<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#bbb\"/>\n"
		"<text class=\"host\" x=\"8\" y=\"%d\"><title>",
		s->y, SVG_W, s->y, s->y + 16);
	xml_put(s->f, n->host, sizeof(n->host), sizeof(n->host));
	fputs("</title>", s->f);
	xml_put(s->f, n->host, sizeof(n->host), 30);
	/* Right of window 1's start line, so that no line crosses it unless windows are narrow. */
	fprintf(s->f, "</text>\n<text class=\"dim halo\" x=\"%.1f\" y=\"%d\">",
		svg_x(s, s->t0) + 6, s->y + 16);
	if (n->n)
		fprintf(s->f, "%zu found, %zu attached, %zu failed</text>\n", c.found, c.attached,
			c.failed);
	else
		fputs("no targets found</text>\n", s->f);
	s->y += SVG_GROUP_H;
	for (k = 0; k < n->n; k++)
		svg_lane(s, n, ni, k);
}

static void svg_legend_item(struct svg *s, int x, const char *stroke, const char *dash,
			    const char *text)
{
	fprintf(s->f,
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
		"stroke-width=\"%d\"%s/>\n"
		"<text x=\"%d\" y=\"%d\">%s</text>\n",
		x, s->y + 20, x + 22, s->y + 20, stroke, dash ? 1 : 10, dash ? dash : "", x + 28,
		s->y + 24, text);
}

static void svg_legend(struct svg *s)
{
	svg_legend_item(s, 8, SVG_OK, NULL, "profiling: attach end to detach start");
	svg_legend_item(s, 300, SVG_CALL, NULL, "attach / detach call");
	svg_legend_item(s, 470, SVG_FAIL, NULL, "failed (hover for the message)");
	svg_legend_item(s, 700, "#555", " stroke-dasharray=\"5 3\"", "window start / stop");
	svg_legend_item(s, 880, SVG_EXIT, NULL, "exited while attached");
}

static void svg_write(struct svg *s)
{
	const struct rm_window *w = last_window(s->r);
	int height = svg_height(s->r), bottom = height - SVG_BOTTOM;
	size_t i;

	svg_range(s);
	svg_head(s, height);
	svg_shading(s, w);
	svg_axis(s, bottom, false);
	svg_windows(s, bottom);
	svg_axis(s, bottom, true);
	s->y = SVG_TOP;
	for (i = 0; w && i < w->n_nodes; i++)
		svg_node(s, &w->nodes[i], i);
	if (!w)
		fprintf(s->f, "<text x=\"8\" y=\"%d\">no window ran</text>\n", s->y + 16);
	s->y = bottom;
	svg_legend(s);
	fputs("</svg>\n", s->f);
}

/* Lanes are the targets of the last window; earlier windows are matched by host and pid. */
int rm_write_timeline(const char *path, const struct rm_run *r, char *err, size_t len)
{
	struct svg s = {.r = r};
	struct out o;

	if (out_open(&o, path, "timeline", err, len))
		return -1;
	s.f = o.f;
	svg_write(&s);
	return out_close(&o, err, len);
}

/* ------------------------------------------------------------------------ */
/*
 * Chrome/Perfetto trace-event JSON (--trace). Process 1 holds the windows;
 * node i (of the last window, as the timeline's lanes) is process i + 2,
 * named by its host. Each target has two tracks (threads): tid = its pid
 * for the tools' window, tid = pid + TRACE_CALLS_TID for its attach and
 * detach calls: our agent hands over inside the calls, so a call and the
 * tools' window overlap without nesting, which one track cannot show.
 * Timestamps: CLOCK_REALTIME of the node that took them, in us since the
 * epoch (a double: to about 0.25 us).
 */

#define TRACE_CALLS_TID 4194304 /* PID_MAX_LIMIT: above any pid */
#define TRACE_WINDOWS_PID 1

struct trace {
	json_t *ev;
	const struct rm_run *r;
	int rc;
};

/* ns since the epoch to us, split so that the division keeps the ns digits. */
static double trace_us(uint64_t ns)
{
	return (double)(ns / 1000u) + (double)(ns % 1000u) / 1000.0;
}

static void trace_add(struct trace *tr, json_t *e)
{
	if (!e || json_array_append_new(tr->ev, e))
		tr->rc = -1;
}

/* A metadata event: process_name, thread_name, *_sort_index. */
static void trace_meta(struct trace *tr, const char *what, int pid, long long tid, json_t *args)
{
	json_t *e = json_pack("{s:s, s:s, s:i, s:I}", "name", what, "ph", "M", "pid", pid,
			      "tid", (json_int_t)tid);

	if (e && json_object_set_new(e, "args", args))
		json_decref(e), e = NULL;
	else if (!e)
		json_decref(args);
	trace_add(tr, e);
}

static void trace_span(struct trace *tr, const char *name, const char *cat, int pid,
		       long long tid, uint64_t from, uint64_t to, json_t *args)
{
	json_t *e = json_pack("{s:s, s:s, s:s, s:i, s:I, s:f, s:f}", "name", name, "cat", cat,
			      "ph", "X", "pid", pid, "tid", (json_int_t)tid, "ts", trace_us(from),
			      "dur", to > from ? (double)(to - from) / 1000.0 : 0.0);

	if (e && json_object_set_new(e, "args", args ? args : json_object()))
		json_decref(e), e = NULL;
	else if (!e)
		json_decref(args);
	trace_add(tr, e);
}

static void trace_instant(struct trace *tr, const char *name, const char *cat, int pid,
			  long long tid, uint64_t at, json_t *args)
{
	json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:f}", "name", name, "cat", cat,
			      "ph", "i", "s", "t", "pid", pid, "tid", (json_int_t)tid, "ts",
			      trace_us(at));

	if (e && json_object_set_new(e, "args", args ? args : json_object()))
		json_decref(e), e = NULL;
	else if (!e)
		json_decref(args);
	trace_add(tr, e);
}

static json_t *trace_name(const char *s, size_t width)
{
	return json_pack("{s:o}", "name", jstr(s, width));
}

static json_t *trace_sort(long long i)
{
	return json_pack("{s:I}", "sort_index", (json_int_t)i);
}

static void trace_windows(struct trace *tr)
{
	const struct rm_window *w;

	trace_meta(tr, "process_name", TRACE_WINDOWS_PID, 0, trace_name("rocattach-mpi windows",
									 (size_t)-1));
	trace_meta(tr, "process_sort_index", TRACE_WINDOWS_PID, 0, trace_sort(0));
	trace_meta(tr, "thread_name", TRACE_WINDOWS_PID, 1, trace_name("windows", (size_t)-1));
	for (size_t i = 0; i < tr->r->n_w; i++) {
		char name[32];

		w = &tr->r->w[i];
		if (!w->start_ns || w->stop_ns < w->start_ns)
			continue;
		snprintf(name, sizeof(name), "window %d", w->index);
		trace_span(tr, name, "window", TRACE_WINDOWS_PID, 1, w->start_ns, w->stop_ns,
			   json_pack("{s:I, s:I, s:o}", "start_ns", (json_int_t)w->start_ns,
				     "stop_ns", (json_int_t)w->stop_ns, "stop_reason",
				     jstr_or_null(w->stop_reason)));
	}
}

/* A node's process and its targets' two tracks each, named and in order. */
static void trace_node_meta(struct trace *tr, const struct rm_node *n, int pid)
{
	char label[160];

	trace_meta(tr, "process_name", pid, 0, trace_name(n->host, sizeof(n->host)));
	trace_meta(tr, "process_sort_index", pid, 0, trace_sort(pid));
	for (size_t k = 0; k < n->n; k++) {
		const struct rn_target *t = &n->t[k];
		int len = snprintf(label, sizeof(label), "pid %d", (int)t->pid);

		if (t->rank >= 0)
			len += snprintf(label + len, sizeof(label) - (size_t)len, " rank %ld", t->rank);
		snprintf(label + len, sizeof(label) - (size_t)len, " (%.*s)", (int)sizeof(t->exe),
			 t->exe);
		trace_meta(tr, "thread_name", pid, t->pid, trace_name(label, sizeof(label)));
		trace_meta(tr, "thread_sort_index", pid, t->pid, trace_sort(2 * (long long)k));
		snprintf(label + len, sizeof(label) - (size_t)len, " calls");
		trace_meta(tr, "thread_name", pid, (long long)t->pid + TRACE_CALLS_TID,
			   trace_name(label, sizeof(label)));
		trace_meta(tr, "thread_sort_index", pid, (long long)t->pid + TRACE_CALLS_TID,
			   trace_sort(2 * (long long)k + 1));
	}
}

static json_t *trace_call_args(const struct rn_target *t, int window)
{
	const char *status = rocattach_get_status_name(t->status);

	return json_pack("{s:i, s:o, s:o, s:o}", "window", window, "target_side",
			 rn_side_name(t->side) ? json_string(rn_side_name(t->side)) : json_null(),
			 "status", status ? json_string(status) : json_null(), "agent_status",
			 t->agent_status == -1 ? json_null() : json_integer(t->agent_status));
}

/*
 * The tools' window: from the hand-over to the hand-back as the report's
 * tool_ns give them; on ROCm's side both are bounds (each call's end), and
 * the args say so with the window's lower bound. A target that exited
 * attached has no hand-back: its span ends at the window's stop.
 */
static void trace_tools(struct trace *tr, const struct rm_window *w, const struct rn_target *t,
			int pid)
{
	bool bound = t->attach_tool_bound || t->detach_tool_bound;
	uint64_t from = t->attach_tool_ns, to = t->detach_tool_ns, lower = rn_window_ns(t, &bound);
	json_t *args;

	if (!from)
		return;
	bound = t->attach_tool_bound || t->detach_tool_bound;
	args = json_pack("{s:i, s:s, s:I, s:o, s:o}", "window", w->index, "tool_ns_kind",
			 bound ? "bound" : "measured", "attach_tool_ns", (json_int_t)from,
			 "detach_tool_ns", to ? json_integer((json_int_t)to) : json_null(),
			 "window_ns", lower ? json_integer((json_int_t)lower) : json_null());
	if (args && bound)
		json_object_set_new(args, "note", json_string(
			"ROCm's side: the tools ran inside the calls, which end at these times "
			"(bounds); window_ns is a lower bound: the attach call's end to the "
			"detach call's start"));
	if (args && !to)
		json_object_set_new(args, "end", json_string("no hand-back (the target exited): "
							     "drawn to the window's stop"));
	if (!to)
		to = w->stop_ns > from ? w->stop_ns : from;
	trace_span(tr, bound ? "tools attached (bounds)" : "tools attached", "tools", pid, t->pid,
		   from, to, args);
}

/* A failure or an exit: an instant on the target's calls track, with the message. */
static void trace_mark(struct trace *tr, const struct rm_window *w, const struct rn_target *t,
		       int pid, bool new_call)
{
	uint64_t at = t->state == RN_DETACH_FAILED || (t->state == RN_EXITED && t->detach_start_ns)
			      ? (t->detach_end_ns ? t->detach_end_ns : t->detach_start_ns)
			      : (t->attach_end_ns ? t->attach_end_ns : t->attach_start_ns);
	json_t *args = trace_call_args(t, w->index);

	if (!new_call || !at)
		at = w->start_ns; /* found gone before this window's attach */
	if (args)
		json_object_set_new(args, "message",
				    t->message[0] ? jstr(t->message, sizeof(t->message)) : json_null());
	trace_instant(tr, rn_state_name(t->state), failed(t) ? "failure" : "exit", pid,
		      (long long)t->pid + TRACE_CALLS_TID, at, args);
}

/*
 * One target in one window. Its record is gathered again after every
 * window, attached or not: only what changed since the previous window's
 * record (a new attach call, a new state) is this window's.
 */
static void trace_target(struct trace *tr, size_t wi, size_t ni, size_t ti, int pid)
{
	const struct rm_window *w = &tr->r->w[wi];
	const struct rm_node *n = &w->nodes[ni];
	const struct rn_target *t = &n->t[ti], *p = NULL;
	bool new_call, new_state;

	if (wi > 0)
		p = find_target(find_node(&tr->r->w[wi - 1], ni, n->host), ti, t->pid);
	new_call = t->attach_start_ns && (!p || p->attach_start_ns != t->attach_start_ns);
	new_state = !p || p->state != t->state || new_call;
	if (new_call) {
		trace_span(tr, "attach call", "call", pid, (long long)t->pid + TRACE_CALLS_TID,
			   t->attach_start_ns, t->attach_end_ns, trace_call_args(t, w->index));
		if (attached(t))
			trace_tools(tr, w, t, pid);
		if (t->detach_start_ns)
			trace_span(tr, "detach call", "call", pid,
				   (long long)t->pid + TRACE_CALLS_TID, t->detach_start_ns,
				   t->detach_end_ns, trace_call_args(t, w->index));
	}
	if (new_state && (failed(t) || t->state == RN_EXITED))
		trace_mark(tr, w, t, pid, new_call);
}

/* Nodes are those of the last window (as the timeline's); earlier ones are found by host. */
static void trace_nodes(struct trace *tr)
{
	const struct rm_window *last = last_window(tr->r);

	for (size_t ni = 0; last && ni < last->n_nodes; ni++)
		trace_node_meta(tr, &last->nodes[ni], (int)ni + 2);
	for (size_t wi = 0; last && wi < tr->r->n_w; wi++) {
		const struct rm_window *w = &tr->r->w[wi];

		for (size_t ni = 0; ni < w->n_nodes; ni++) {
			const struct rm_node *ln = find_node(last, ni, w->nodes[ni].host);

			for (size_t ti = 0; ln && ti < w->nodes[ni].n; ti++)
				trace_target(tr, wi, ni, ti, (int)(ln - last->nodes) + 2);
		}
	}
}

/*
 * The clock, and per node its CLOCK_REALTIME - CLOCK_BOOTTIME and its clock's
 * offset to rank 0's, to line up with other traces taken on that node.
 */
static json_t *trace_other(const struct rm_run *r)
{
	const struct rm_window *last = last_window(r);
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:o, s:o}", "producer", "rocattach-mpi",
			      "version", ROCATTACH_VERSION_STRING, "clock",
			      "rank 0's CLOCK_REALTIME (each node's times corrected by its "
			      "clock_offset_ns), us since the Unix epoch",
			      "exit_code", r->exit_code, "exit_reason", jstr_or_null(r->exit_reason),
			      "stop_reason", jstr_or_null(r->stop_reason));
	json_t *offs = json_object(), *clocks = json_object();

	for (size_t i = 0; o && offs && clocks && last && i < last->n_nodes; i++) {
		const struct rm_node *n = &last->nodes[i];
		json_t *host = jstr(n->host, sizeof(n->host));

		/* Keys must be UTF-8 too: the host as jstr made it. */
		if (host && n->boot_offset_ns)
			json_object_set_new(offs, json_string_value(host),
					    json_integer(n->boot_offset_ns));
		if (host && n->clock_known) /* the correction made: 0 where none was */
			json_object_set_new(clocks, json_string_value(host),
					    json_integer(n->clock_applied ? n->clock_offset_ns : 0));
		json_decref(host);
	}
	if (!o || !offs || !clocks || json_object_set_new(o, "realtime_minus_boottime_ns", offs) ||
	    json_object_set_new(o, "clock_offset_ns", clocks)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *trace_json(const struct rm_run *r)
{
	struct trace tr = {.ev = json_array(), .r = r};
	json_t *o;

	if (!tr.ev)
		return NULL;
	trace_windows(&tr);
	trace_nodes(&tr);
	o = json_pack("{s:o, s:s, s:o}", "traceEvents", tr.ev, "displayTimeUnit", "ns",
		      "otherData", trace_other(r));
	if (o && tr.rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int rm_write_trace(const char *path, const struct rm_run *r, char *err, size_t len)
{
	return write_json(path, "trace", trace_json(r), JSON_COMPACT, err, len);
}

/* SPDX-License-Identifier: MIT */
/*
 * The report's model: which targets count (attached, failed), the figures
 * (skews, attach times, counts), finding a target again in another window,
 * and each failure once (the failure walk). The writers read the run
 * through it; the per-node figures are figures.c's.
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
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "report_int.h"

/* ------------------------------------------------------------------------ */
/* What a node's records hold, at its --detail level. */

/* Clean: attached, then detached, nothing failed. An exit, even after a window, is kept. */
bool rm_clean(const struct rn_target *t)
{
	return (t->state == RN_DETACHED || t->state == RN_LATE_STARTED) && !rm_failed(t);
}

/* The one rule, on the nodes (before the wire) and on rank 0 (while writing). */
bool rm_detail_keeps_target(enum rm_detail d, const struct rn_target *t)
{
	if (d == RM_DETAIL_NONE)
		return false;
	return d != RM_DETAIL_FAILURES || !rm_clean(t);
}

bool rm_detail_keeps(enum rm_detail d, const struct rm_node *n, const struct rn_target *t)
{
	return d != RM_DETAIL_NONE && (n->lost || rm_detail_keeps_target(d, t));
}

size_t rm_found(const struct rm_node *n)
{
	return n->cut ? (size_t)n->sum->found : n->n;
}

size_t rm_left_out(const struct rm_node *n)
{
	return n->cut ? (size_t)n->sum->left_out : 0;
}

/* ------------------------------------------------------------------------ */
/* Figures. */

/*
 * Attached: its attach call returned and did not fail. A target that exited
 * during its attach call (RN_EXITED with no detach) never was attached.
 */
bool rm_attached(const struct rn_target *t)
{
	if (t->attach_end_ns == 0 || t->state == RN_ATTACH_FAILED || t->state == RN_DECLINED)
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
bool rm_attached_since(const struct rn_target *t, uint64_t since)
{
	return rm_attached(t) && t->attach_end_ns >= since;
}

/*
 * A target that exited (normally or by a signal: the launcher is not its
 * parent and cannot tell) is not a failure: its job ended under it. One
 * where a library of the tool list failed while the others attached is:
 * the user asked for that tool.
 */
bool rm_failed(const struct rn_target *t)
{
	return t->state == RN_ATTACH_FAILED || t->state == RN_DETACH_FAILED ||
	       rn_some_tool_failed(t) || t->state == RN_STOPPED;
}

void rm_spread_add(struct rm_spread *s, uint64_t v)
{
	if (!s->n || v < s->lo)
		s->lo = v;
	if (!s->n || v > s->hi)
		s->hi = v;
	s->n++;
}

uint64_t rm_spread_ns(const struct rm_spread *s)
{
	return s->n ? s->hi - s->lo : 0;
}

/* The hand-over and hand-back times (measured or bound); 0 where none. */
static uint64_t hand_over(const struct rn_target *t)
{
	return t->attach_tool_ns ? t->attach_tool_ns : t->attach_end_ns;
}

/*
 * The hand-back of a target this window detached (0 for any other: a detach
 * that failed, or never came, hands back nothing at the stop).
 */
uint64_t rm_hand_back(const struct rn_target *t)
{
	if (t->state != RN_DETACHED)
		return 0;
	return t->detach_tool_ns ? t->detach_tool_ns : t->detach_start_ns;
}

/*
 * The earliest the hand-over (or back) can have been: the measured time, or
 * on ROCm's side the entry point's call's start (the tools ran inside the
 * call). 0 where it is unknown (records without call times, a target that
 * detached its tools itself on ROCm's side): the skew is then an estimate.
 */
static uint64_t over_lo(const struct rn_target *t)
{
	if (t->attach_tool_bound || !t->attach_tool_ns)
		return t->attach_call_ns;
	return t->attach_tool_ns;
}

static uint64_t back_lo(const struct rn_target *t)
{
	if (t->detach_tool_bound || !t->detach_tool_ns)
		return t->detach_call_ns;
	return t->detach_tool_ns;
}

/* A target's interval [lo, hi] into a spread; a missing lo (0) counts as hi: true. */
static bool spread_range(struct rm_spread *s, uint64_t lo, uint64_t hi)
{
	bool est = !lo || lo > hi;

	if (est)
		lo = hi;
	if (!s->n || lo < s->lo)
		s->lo = lo;
	if (!s->n || hi > s->hi)
		s->hi = hi;
	s->n++;
	return est;
}

/* Two spreads as one: lo of both, hi of both, n the sum. */
static void spread_join(struct rm_spread *s, uint64_t lo, uint64_t hi, size_t n)
{
	if (!n)
		return;
	if (!s->n || lo < s->lo)
		s->lo = lo;
	if (!s->n || hi > s->hi)
		s->hi = hi;
	s->n += n;
}

/*
 * A lost node's targets are its last known records, not measured in this
 * window: none count. A node that cut its records sent these figures of
 * all its targets (rm_node_sum).
 */
/*
 * A target's skew interval: [over_lo, hand_over] (one point where measured).
 * est counts those whose lower edge is unknown. A cut node sent only its
 * hand-over times' min and max: where some are bounds, those count as
 * unknown lower edges (est).
 */
struct spreads {
	struct rm_spread a, d, len;
	size_t bounds, est;
};

static void node_spreads(const struct rm_node *n, const struct rn_target *v, uint64_t since,
			 struct spreads *s)
{
	const struct rn_target *t;
	bool bound;
	size_t k;

	if (n->cut && !n->lost) {
		const struct rm_node_sum *m = n->sum;

		spread_join(&s->a, m->over_lo ? m->over_lo : m->over.min, m->over.max,
			    (size_t)m->over.n);
		spread_join(&s->d, m->back_lo ? m->back_lo : m->back.min, m->back.max,
			    (size_t)m->back.n);
		spread_join(&s->len, m->len_lo, m->len_hi, (size_t)m->len_n);
		s->bounds += (size_t)m->bounds;
		s->est += (size_t)m->est;
		return;
	}
	for (k = 0; v && !n->lost && k < n->n; k++) {
		bool est;

		t = &v[k];
		if (!rm_attached_since(t, since))
			continue;
		est = spread_range(&s->a, over_lo(t), hand_over(t));
		s->bounds += t->attach_tool_bound || t->detach_tool_bound || !t->attach_tool_ns;
		/* Only targets detached in this window: one never detached has no hand-back. */
		if (rm_hand_back(t) && rm_hand_back(t) >= hand_over(t)) {
			est |= spread_range(&s->d, back_lo(t), rm_hand_back(t));
			if (rn_window_ns(t, &bound))
				rm_spread_add(&s->len, rn_window_ns(t, &bound));
		}
		s->est += est;
	}
}

int64_t rm_window_length_ns(const struct rm_window *w)
{
	return ra_ns_span(w->stop_ns, w->start_ns, RM_LONGEST_WINDOW_NS);
}

const char *rm_window_length_why(const struct rm_window *w)
{
	if (!w->start_ns)
		return "unknown: no start time";
	if (!w->stop_ns)
		return "unknown: no stop time";
	if (w->stop_ns < w->start_ns)
		return "unknown: stopped before its start";
	if (!ra_ns_known(rm_window_length_ns(w)))
		return "unknown: longer than any window can be";
	return NULL;
}

uint64_t rm_length_tolerance_ns(uint64_t planned_ns)
{
	return planned_ns / 100 + 5000000u;
}

struct rm_skew rm_window_skew(const struct rm_window *w)
{
	int64_t length = rm_window_length_ns(w);
	uint64_t planned = ra_ns_known(length) ? (uint64_t)length : 0;
	struct spreads sp = {0};
	struct rm_skew s = {0};
	struct rm_hold h = {0};
	size_t i;

	for (i = 0; i < w->n_nodes; i++)
		if (!w->nodes[i].lost)
			node_spreads(&w->nodes[i], rm_targets(&w->nodes[i], &h), w->start_ns, &sp);
	rm_hold_free(&h);
	s.attach_ns = rm_spread_ns(&sp.a);
	s.detach_ns = rm_spread_ns(&sp.d);
	s.n = sp.a.n;
	s.n_detach = sp.d.n;
	s.bounds = sp.bounds;
	s.estimate = sp.est;
	s.len_min_ns = sp.len.lo;
	s.len_max_ns = sp.len.hi;
	s.n_len = sp.len.n;
	if (sp.len.n && planned) {
		uint64_t tol = rm_length_tolerance_ns(planned);

		s.len_off = sp.len.lo + tol < planned || sp.len.hi > planned + tol;
	}
	return s;
}

/* Spread of attach ends within one node; n = 0 when nothing attached there. */
struct rm_spread rm_node_attach_spread(const struct rm_node *n, const struct rn_target *t,
				       uint64_t since)
{
	struct spreads s = {0};

	node_spreads(n, t, since, &s);
	return s.a;
}

void rm_node_len_spread(const struct rm_node *n, const struct rn_target *t, uint64_t since,
			struct rm_spread *len, size_t *bounds)
{
	struct spreads s = {0};

	node_spreads(n, t, since, &s);
	*len = s.len;
	*bounds += s.bounds;
}

void rm_node_skew_lo(const struct rm_node *n, const struct rn_target *t, uint64_t since,
		     uint64_t lo[2], size_t *est)
{
	struct spreads s = {0};

	node_spreads(n, t, since, &s);
	lo[0] = s.a.n ? s.a.lo : 0;
	lo[1] = s.d.n ? s.d.lo : 0;
	*est = s.est;
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
void rm_node_times(const struct rm_node *n, const struct rn_target *all, uint64_t since,
		   uint64_t *p50, uint64_t *max)
{
	const struct rn_target *t;
	uint64_t *v;
	size_t k, m = 0;

	*p50 = *max = 0;
	if (n->cut && !n->lost) { /* the node's figures, from the window's start */
		*p50 = n->sum->attach.p50;
		*max = n->sum->attach.max;
		return;
	}
	if (n->lost || !n->n || !all || !(v = malloc(n->n * sizeof(*v))))
		return;
	for (k = 0; k < n->n; k++) {
		t = &all[k];
		uint64_t from = t->attach_start_ns > since ? t->attach_start_ns : since;

		if (rm_attached_since(t, since))
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
	struct rm_hold h = {0};

	rm_node_times(n, rm_targets(n, &h), 0, p50, max);
	rm_hold_free(&h);
}

/*
 * Each window's records are the same targets gathered again, so the counts
 * of a run are those of its last window. attached: completed a window or got
 * past its attach call in this one. A lost node's targets are found (last
 * known) and lost, nothing else: this window did not hear of them.
 */
void rm_count_node(const struct rm_node *n, const struct rn_target *all, struct rm_counts *c)
{
	const struct rn_target *t;
	size_t k;

	c->found += rm_found(n);
	if (n->lost) {
		c->lost_nodes++;
		c->lost += rm_found(n);
		return;
	}
	if (n->cut) {
		c->attached += (size_t)n->sum->attached;
		c->failed += (size_t)n->sum->failed;
		c->detached += (size_t)n->sum->detached;
		c->exited += (size_t)n->sum->exited;
		c->exited_after += (size_t)n->sum->exited_after;
		c->died += (size_t)n->sum->died;
		c->stopped += (size_t)n->sum->stopped;
		c->late += (size_t)n->sum->late;
		c->declined += (size_t)n->sum->declined;
		c->partial += (size_t)n->sum->partial;
		c->late_started += (size_t)n->sum->ls_init;
		return;
	}
	if (!all && n->n) {
		c->unreadable_nodes++;
		c->unreadable += n->n;
		return;
	}
	for (k = 0; all && k < n->n; k++) {
		t = &all[k];
		/*
		 * Attached in this window (a reattach that failed is not), or
		 * completed one and exited after: as the headline counts them.
		 */
		if (t->state == RN_ATTACHED || t->state == RN_DETACHED ||
		    t->state == RN_LATE_STARTED || t->state == RN_DETACH_FAILED ||
		    t->state == RN_DIED_ATTACHED || (t->state == RN_EXITED && t->windows > 0))
			c->attached++;
		c->failed += rm_failed(t);
		/* A target where a library of the list failed is in failed only: they partition. */
		c->detached += t->state == RN_DETACHED && !rm_failed(t);
		c->exited += t->state == RN_EXITED;
		c->exited_after += t->state == RN_EXITED && t->windows > 0 && !rm_failed(t);
		c->died += t->state == RN_DIED_ATTACHED;
		c->stopped += t->state == RN_STOPPED;
		c->late += t->late_ns != 0;
		c->declined += t->state == RN_DECLINED;
		c->late_started += t->state == RN_LATE_STARTED && !rm_failed(t);
		c->partial += t->state == RN_DETACHED && rn_some_tool_failed(t);
	}
}

size_t rm_died_attached(const struct rm_run *r, size_t *lived, uint64_t *first_ns,
			uint64_t *last_ns)
{
	const struct rm_window *w = rm_last_window(r);
	const struct rn_target *t;
	struct rm_hold h = {0};
	size_t died = 0, alive = 0;
	uint64_t lo = 0, hi = 0;
	struct rm_counts l;

	for (size_t i = 0; w && i < w->n_nodes; i++) {
		if (w->nodes[i].lost)
			continue;
		t = rm_targets(&w->nodes[i], &h);
		/* The records left out on the node: as its block counts them. */
		l = rm_left_counts(&w->nodes[i], t);
		died += l.died;
		alive += l.found - l.died - l.exited;
		if (!t)
			continue;
		for (size_t k = 0; k < w->nodes[i].n; k++) {
			if (t[k].state == RN_EXITED)
				continue;
			if (t[k].state != RN_DIED_ATTACHED) {
				alive++;
				continue;
			}
			died++;
			if (t[k].died_ns && (!lo || t[k].died_ns < lo))
				lo = t[k].died_ns;
			if (t[k].died_ns > hi)
				hi = t[k].died_ns;
		}
	}
	rm_hold_free(&h);
	if (lived)
		*lived = alive;
	if (first_ns)
		*first_ns = lo;
	if (last_ns)
		*last_ns = hi;
	return died;
}

struct rm_counts rm_count_window(const struct rm_window *w)
{
	struct rm_counts c = {0};
	struct rm_hold h = {0};
	size_t i;

	for (i = 0; w && i < w->n_nodes; i++)
		rm_count_node(&w->nodes[i], w->nodes[i].lost ? NULL : rm_targets(&w->nodes[i], &h),
			      &c);
	rm_hold_free(&h);
	return c;
}

const struct rm_window *rm_last_window(const struct rm_run *r)
{
	return r->n_w ? &r->w[r->n_w - 1] : NULL;
}

/* ------------------------------------------------------------------------ */
/* Finding a target again in another window, and failures shown once. */

const struct rm_node *rm_find_node(const struct rm_window *w, size_t hint, const char *host)
{
	size_t i;

	if (hint < w->n_nodes && !strncmp(w->nodes[hint].host, host, sizeof(w->nodes[hint].host)))
		return &w->nodes[hint];
	for (i = 0; i < w->n_nodes; i++)
		if (!strncmp(w->nodes[i].host, host, sizeof(w->nodes[i].host)))
			return &w->nodes[i];
	return NULL;
}

const struct rn_target *rm_find_target(const struct rn_target *t, size_t n, size_t hint, pid_t pid)
{
	size_t k;

	if (!t)
		return NULL;
	if (hint < n && t[hint].pid == pid)
		return &t[hint];
	for (k = 0; k < n; k++)
		if (t[k].pid == pid)
			return &t[k];
	return NULL;
}

/*
 * A failed target keeps its state and record in the windows after its
 * failure (the pool only attaches found or detached targets): report and
 * draw a failure in the first window that has it, not again.
 */
bool rm_new_failure(const struct rn_target *prev, size_t n_prev, const struct rn_target *t,
		    size_t hint)
{
	const struct rn_target *p;

	if (!rm_failed(t))
		return false;
	p = rm_find_target(prev, n_prev, hint, t->pid);
	return !p || p->state != t->state || p->attach_start_ns != t->attach_start_ns ||
	       strncmp(p->message, t->message, sizeof(t->message));
}

const struct rn_target *rm_prev_targets(const struct rm_run *r, size_t wi, size_t hint,
					const char *host, struct rm_hold *h, size_t *n)
{
	const struct rm_node *p = wi ? rm_find_node(&r->w[wi - 1], hint, host) : NULL;
	const struct rn_target *t = p ? rm_targets(p, h) : NULL;

	*n = t ? p->n : 0;
	return t;
}

void rm_unreadable_reason(const struct rm_node *n, char *buf, size_t len)
{
	char err[600];

	if (!rm_store_check(n->store, err, sizeof(err)))
		snprintf(err, sizeof(err), "cannot read the gathered records back");
	snprintf(buf, len, "%s: the outcome of its %zu target%s is unknown", err, n->n,
		 n->n == 1 ? "" : "s");
}

/*
 * fn on every failure once, in window order; stops at (and returns) fn's
 * first non-zero. A lost node's last known records are no window's news.
 * A node whose records cannot be read back from the store is one failure,
 * with t NULL (rm_unreadable_reason says why), in every window it is
 * unreadable: the run cannot say its targets are fine.
 * Two nodes' targets are in memory at a time: this window's and the
 * previous window's of the same host.
 */
int rm_for_each_failure(const struct rm_run *r, rm_failure_fn fn, void *arg)
{
	struct rm_hold h = {0}, hp = {0};
	const struct rn_target *t, *p;
	const struct rm_node *n;
	size_t wi, ni, ti, np;
	bool looked;
	int rc = 0;

	for (wi = 0; wi < r->n_w && !rc; wi++) {
		for (ni = 0; ni < r->w[wi].n_nodes && !rc; ni++) {
			n = &r->w[wi].nodes[ni];
			t = n->lost ? NULL : rm_targets(n, &h);
			if (!n->lost && n->n && !t) {
				rc = fn(&r->w[wi], n, NULL, arg);
				continue;
			}
			p = NULL;
			np = 0;
			looked = false;
			for (ti = 0; t && ti < n->n && !rc; ti++) {
				if (!rm_failed(&t[ti]))
					continue;
				if (!looked)
					p = rm_prev_targets(r, wi, ni, n->host, &hp, &np);
				looked = true;
				if (rm_new_failure(p, np, &t[ti], ti))
					rc = fn(&r->w[wi], n, &t[ti], arg);
			}
		}
	}
	rm_hold_free(&h);
	rm_hold_free(&hp);
	return rc;
}

const struct rm_window *rm_lost_in(const struct rm_run *r, const char *host, size_t hint,
				   const struct rm_node **node)
{
	const struct rm_node *n;
	size_t wi;

	for (wi = 0; wi < r->n_w; wi++) {
		n = rm_find_node(&r->w[wi], hint, host);
		if (n && n->lost) {
			*node = n;
			return &r->w[wi];
		}
	}
	*node = NULL;
	return NULL;
}

const char *rm_lost_reason(const struct rm_node *n)
{
	return n->lost_reason ? n->lost_reason : "no reason given";
}

static int count_one(const struct rm_window *w, const struct rm_node *n, const struct rn_target *t,
		     void *arg)
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

	rm_for_each_failure(r, count_one, &n);
	return n + rm_failures_left_out(r);
}

/* ------------------------------------------------------------------------ */
/* What a cut node left out (its block, figures.c, less the records it kept). */

/* A cut node's records left out, as its block counts them less the records kept. */
struct rm_counts rm_left_counts(const struct rm_node *n, const struct rn_target *kept)
{
	struct rm_node plain = {.t = (struct rn_target *)kept, .n = kept ? n->n : 0};
	const struct rm_node_sum *s = n->sum;
	struct rm_counts k = {0}, l = {0};

	if (!n->cut || n->lost)
		return l;
	rm_count_node(&plain, kept, &k);
	l.found = (size_t)s->left_out;
	l.attached = (size_t)rm_left_of(s->attached, k.attached);
	l.failed = (size_t)rm_left_of(s->failed, k.failed);
	l.exited = (size_t)rm_left_of(s->exited, k.exited);
	l.detached = (size_t)rm_left_of(s->detached, k.detached);
	l.died = (size_t)rm_left_of(s->died, k.died);
	l.exited_after = (size_t)rm_left_of(s->exited_after, k.exited_after);
	l.stopped = (size_t)rm_left_of(s->stopped, k.stopped);
	l.late = (size_t)rm_left_of(s->late, k.late);
	l.late_started = (size_t)rm_left_of(s->ls_init, k.late_started);
	return l;
}

/*
 * Failures node ni of window wi left out that were not failed there in the
 * window before: a failed target keeps its state (rm_new_failure), so the
 * failures of one node grow from window to window by the new ones.
 */
static size_t left_new_failures(const struct rm_run *r, size_t wi, size_t ni, struct rm_hold *h)
{
	const struct rm_node *n = &r->w[wi].nodes[ni], *p;
	struct rm_counts before = {0};
	size_t left;

	if (!n->cut || n->lost || !(left = rm_left_counts(n, rm_targets(n, h)).failed))
		return 0;
	p = wi ? rm_find_node(&r->w[wi - 1], ni, n->host) : NULL;
	if (p && !p->lost)
		rm_count_node(p, rm_targets(p, h), &before);
	return left > before.failed ? left - before.failed : 0;
}

size_t rm_failures_left_out(const struct rm_run *r)
{
	struct rm_hold h = {0};
	size_t n = 0;

	for (size_t wi = 0; wi < r->n_w; wi++)
		for (size_t ni = 0; ni < r->w[wi].n_nodes; ni++)
			n += left_new_failures(r, wi, ni, &h);
	rm_hold_free(&h);
	return n;
}

size_t rm_left_unsure(const struct rm_node *n, const struct rn_target *kept)
{
	struct rm_counts l = rm_left_counts(n, kept);

	return l.found - l.detached;
}

size_t rm_node_detached(const struct rm_node *n, const struct rn_target *kept)
{
	size_t d = n->cut ? rm_left_counts(n, kept).detached : 0;

	for (size_t k = 0; kept && k < n->n; k++)
		d += kept[k].state == RN_DETACHED;
	return d;
}

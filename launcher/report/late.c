/* SPDX-License-Identifier: MIT */
/*
 * A window's late starts and its verdict (report.h: rm_late,
 * rm_window_off), and the kind of its skew figures. Late means shown late:
 * on ROCm's side from the call's start (the tools ran no earlier).
 */
#include <stdlib.h>

#include "report_int.h"

const char *rm_skew_kind(const struct rm_skew *s)
{
	if (!s->n)
		return NULL;
	if (s->estimate)
		return "estimate";
	return s->bounds ? "bound" : "measured";
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The earliest the tools can have been handed the window: measured by our
 * agent, else (ROCm's side) the call's start; 0: unknown, never shown late.
 */
static uint64_t earliest_over(const struct rn_target *t)
{
	if (t->attach_tool_ns && !t->attach_tool_bound)
		return t->attach_tool_ns;
	return t->attach_call_ns;
}

/* A cut node: only its latest hand-over is known; all its targets may be late. */
static void cut_late(const struct rm_node *n, uint64_t since, struct rm_late *l)
{
	const struct rm_node_sum *s = n->sum;

	l->of += (size_t)s->over.n;
	l->bound |= s->bounds != 0;
	if (!s->over.n || s->over.max <= since + l->tolerance_ns)
		return;
	l->unknown += (size_t)s->over.n;
	if (s->over.max - since > l->max_ns)
		l->max_ns = s->over.max - since;
}

/* The late ones of a node's records into v (room for n->n more), counted in l. */
static size_t node_late(const struct rm_node *n, const struct rn_target *t, uint64_t since,
			uint64_t *v, struct rm_late *l)
{
	size_t m = 0;

	for (size_t k = 0; t && k < n->n; k++) {
		uint64_t over = earliest_over(&t[k]);

		if (!rm_attached_since(&t[k], since))
			continue;
		l->of++;
		if (!over || over <= since + l->tolerance_ns)
			continue;
		v[m++] = over - since;
		l->bound |= t[k].attach_tool_bound || !t[k].attach_tool_ns;
	}
	return m;
}

static uint64_t planned_of(const struct rm_window *w)
{
	int64_t length = rm_window_length_ns(w);

	return ra_ns_known(length) ? (uint64_t)length : 0;
}

struct rm_late rm_window_late(const struct rm_window *w)
{
	struct rm_late l = {.tolerance_ns = rm_length_tolerance_ns(planned_of(w))};
	struct rm_hold h = {0};
	uint64_t *v = NULL;
	size_t m = 0, room = 0;

	for (size_t i = 0; i < w->n_nodes && w->start_ns; i++) {
		const struct rm_node *n = &w->nodes[i];
		uint64_t *more;

		if (n->lost)
			continue;
		if (n->cut) {
			cut_late(n, w->start_ns, &l);
			continue;
		}
		more = realloc(v, (room + n->n + 1) * sizeof(*v));
		if (!more) {
			/* Out of memory: its targets may be late, unknown. */
			l.unknown += n->n;
			continue;
		}
		v = more;
		room += n->n;
		m += node_late(n, rm_targets(n, &h), w->start_ns, v + m, &l);
	}
	rm_hold_free(&h);
	l.n = m;
	l.p50_known = !l.unknown;
	if (m) {
		qsort(v, m, sizeof(*v), cmp_u64);
		l.p50_ns = m % 2 ? v[m / 2] : v[m / 2 - 1] + (v[m / 2] - v[m / 2 - 1]) / 2;
		if (v[m - 1] > l.max_ns)
			l.max_ns = v[m - 1];
	}
	free(v);
	return l;
}

/*
 * Off: a target shown late, or a tools' window shown off the planned length
 * (on bounds only one longer than the plan is shown: the others are lower
 * bounds).
 */
bool rm_window_off(const struct rm_window *w)
{
	struct rm_late l = rm_window_late(w);
	struct rm_skew s = rm_window_skew(w);
	uint64_t planned = planned_of(w), tol = rm_length_tolerance_ns(planned);
	int64_t length = rm_window_length_ns(w);

	/*
	 * A snapshot (--stacks: start and stop one instant) has no window to be
	 * off: when each target's stacks were taken is its late figures and skew.
	 */
	if (ra_ns_known(length) && length == 0)
		return false;
	if (l.n || l.unknown)
		return true;
	if (!s.len_off)
		return false;
	return !s.bounds || s.len_max_ns > planned + tol;
}

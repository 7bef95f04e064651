/* SPDX-License-Identifier: MIT */
/*
 * The report at scale: --detail (which per-target records are kept), the
 * per-node figures kept at every level (times, histograms), and nodes in
 * groups for the summary and the timeline, named by a Slurm-style hostlist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

static const char *const detail_names[] = {
    [RM_DETAIL_ALL] = "all", [RM_DETAIL_FAILURES] = "failures", [RM_DETAIL_NONE] = "none"};

int rm_detail_parse(const char *s, enum rm_detail *d)
{
	for (int i = RM_DETAIL_ALL; i <= RM_DETAIL_NONE; i++)
		if (!strcmp(s, detail_names[i])) {
			*d = (enum rm_detail)i;
			return 0;
		}
	return -1;
}

const char *rm_detail_name(enum rm_detail d)
{
	return d >= RM_DETAIL_ALL && d <= RM_DETAIL_NONE ? detail_names[d] : "auto";
}

enum rm_detail rm_detail_default(size_t targets)
{
	return targets > RM_DETAIL_AUTO_MAX ? RM_DETAIL_FAILURES : RM_DETAIL_ALL;
}

/* Flags and counts only: no target is read. */
enum rm_detail rm_detail_of(const struct rm_run *r, char *chosen, size_t len)
{
	size_t most = 0, sum, at;

	if (r->cfg.detail != RM_DETAIL_AUTO) {
		if (chosen)
			snprintf(chosen, len, "--detail %s", rm_detail_name(r->cfg.detail));
		return r->cfg.detail;
	}
	for (size_t wi = 0; wi < r->n_w; wi++) {
		sum = 0;
		for (size_t i = 0; i < r->w[wi].n_nodes; i++)
			sum += rm_found(&r->w[wi].nodes[i]);
		most = sum > most ? sum : most;
	}
	if (r->cut.level == RM_DETAIL_AUTO) {
		if (chosen)
			snprintf(chosen, len, "default: %zu target%s %s %d", most,
				 most == 1 ? "" : "s",
				 most > RM_DETAIL_AUTO_MAX ? ">" : "<=", RM_DETAIL_AUTO_MAX);
		return rm_detail_default(most);
	}
	/* Decided at the start, and kept: the nodes cut every window's records at it. */
	if (chosen) {
		at = r->cut.survey_targets;
		snprintf(chosen, len, "default: %zu target%s found at the start %s %d", at,
			 at == 1 ? "" : "s",
			 at > RM_DETAIL_AUTO_MAX ? ">" : "<=", RM_DETAIL_AUTO_MAX);
		if (most > at)
			snprintf(chosen + strlen(chosen), len - strlen(chosen),
				 "; a later window found %zu, the level chosen at the start "
				 "was kept",
				 most);
	}
	return r->cut.level;
}

/* ------------------------------------------------------------------------ */
/* Figures. */

unsigned rm_hist_bin(uint64_t ns)
{
	uint64_t us = ns / 1000u;
	unsigned b;

	if (!us)
		return 0;
	b = 64u - (unsigned)__builtin_clzll(us);
	return b < RM_HIST_BINS ? b : RM_HIST_BINS - 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* v sorted in place; the median of an even count as rm_node_times has it. */
static struct rm_fig3 fig3_of(uint64_t *v, size_t m)
{
	struct rm_fig3 f = {.n = m};

	if (!m)
		return f;
	qsort(v, m, sizeof(*v), cmp_u64);
	f.min = v[0];
	f.max = v[m - 1];
	f.p50 = m % 2 ? v[m / 2] : v[m / 2 - 1] + (v[m / 2] - v[m / 2 - 1]) / 2;
	return f;
}

static uint64_t over_of(const struct rn_target *t)
{
	return t->attach_tool_ns ? t->attach_tool_ns : t->attach_end_ns;
}

static void hist_fill(struct rm_node_fig *f, const struct rn_target *t, uint64_t since)
{
	uint64_t from = t->attach_start_ns > since ? t->attach_start_ns : since;
	uint64_t over = over_of(t);

	f->attach_hist[rm_hist_bin(t->attach_end_ns > from ? t->attach_end_ns - from : 0)]++;
	if (!since)
		return;
	if (over < since)
		f->early++;
	f->skew_hist[rm_hist_bin(over > since ? over - since : 0)]++;
}

static struct rm_fig3 fig3_of_sum(const struct rm_sum_fig3 *s)
{
	return (struct rm_fig3){.min = s->min, .p50 = s->p50, .max = s->max, .n = (size_t)s->n};
}

static struct rm_sum_fig3 sum_of_fig3(const struct rm_fig3 *f)
{
	return (struct rm_sum_fig3){.min = f->min, .p50 = f->p50, .max = f->max, .n = f->n};
}

static void fig_of_sum(const struct rm_node_sum *s, struct rm_node_fig *f)
{
	f->attach = fig3_of_sum(&s->attach);
	f->detach = fig3_of_sum(&s->detach);
	f->over = fig3_of_sum(&s->over);
	f->back = fig3_of_sum(&s->back);
	f->calls_lo = s->calls_lo;
	f->calls_hi = s->calls_hi;
	f->early = (size_t)s->early;
	memcpy(f->attach_hist, s->attach_hist, sizeof(f->attach_hist));
	memcpy(f->skew_hist, s->skew_hist, sizeof(f->skew_hist));
}

void rm_node_figures(const struct rm_node *n, const struct rn_target *all, uint64_t since,
		     struct rm_node_fig *f)
{
	uint64_t *v[4], from;
	size_t m[4] = {0}, k;
	const struct rn_target *t;

	memset(f, 0, sizeof(*f));
	if (n->lost)
		return;
	if (n->cut) {
		fig_of_sum(n->sum, f);
		return;
	}
	if (!n->n || !all)
		return;
	v[0] = malloc(4 * n->n * sizeof(uint64_t));
	if (!v[0])
		return;
	for (k = 1; k < 4; k++)
		v[k] = v[0] + k * n->n;
	for (k = 0; k < n->n; k++) {
		t = &all[k];
		if (!rm_attached_since(t, since))
			continue;
		from = t->attach_start_ns > since ? t->attach_start_ns : since;
		v[0][m[0]++] = t->attach_end_ns > from ? t->attach_end_ns - from : 0;
		v[2][m[2]++] = over_of(t);
		if (t->detach_start_ns && t->detach_end_ns >= t->detach_start_ns)
			v[1][m[1]++] = t->detach_end_ns - t->detach_start_ns;
		if (rm_hand_back(t))
			v[3][m[3]++] = rm_hand_back(t);
		if (!f->calls_lo || (t->attach_start_ns && t->attach_start_ns < f->calls_lo))
			f->calls_lo = t->attach_start_ns;
		if (t->detach_end_ns > f->calls_hi)
			f->calls_hi = t->detach_end_ns;
		if (t->attach_end_ns > f->calls_hi)
			f->calls_hi = t->attach_end_ns;
		hist_fill(f, t, since);
	}
	f->attach = fig3_of(v[0], m[0]);
	f->detach = fig3_of(v[1], m[1]);
	f->over = fig3_of(v[2], m[2]);
	f->back = fig3_of(v[3], m[3]);
	free(v[0]);
}

/* ------------------------------------------------------------------------ */
/* The cut on the node, and rank 0 taking its block. */

_Static_assert(RM_SUM_HIST_BINS == RM_HIST_BINS, "the block's histograms are the report's");

/*
 * --late-start's counts of t[0..n) (report_int.h): a node cut at --detail
 * sends them in its block, as it keeps no record of them; the summary counts
 * an uncut node's with it too.
 */
void rm_late_sum(const struct rn_target *t, size_t n, struct rm_node_sum *sum)
{
	for (size_t k = 0; k < n; k++) {
		if (!t[k].ls.tried)
			continue;
		sum->ls_tried++;
		sum->ls_ran += t[k].ls.route == ROCATTACH_LATE_STARTED ||
			       t[k].ls.route == ROCATTACH_LATE_FAILED;
		sum->ls_init += t[k].state == RN_LATE_STARTED && !rm_failed(&t[k]);
		sum->ls_failed += rm_failed(&t[k]);
		if (t[k].ls.route == ROCATTACH_LATE_ATTACHABLE) {
			sum->ls_listener += !rm_failed(&t[k]);
			sum->ls_listener_failed += rm_failed(&t[k]);
		}
	}
}

int rm_node_summary(const struct rn_target *t, size_t n, enum rm_detail d, uint64_t since,
		    struct rm_node_sum *sum)
{
	struct rm_node node = {.t = (struct rn_target *)t, .n = n};
	struct rm_counts c = {0};
	struct rm_spread len = {0};
	struct rm_node_fig f;
	size_t bounds = 0, est;
	uint64_t lo[2];

	memset(sum, 0, sizeof(*sum));
	if (d != RM_DETAIL_FAILURES && d != RM_DETAIL_NONE)
		return -1;
	if (rm_topo_union(t, n, sum))
		return -1;
	rm_node_figures(&node, t, since, &f);
	rm_count_node(&node, t, &c);
	rm_node_len_spread(&node, t, since, &len, &bounds);
	sum->level = d;
	sum->outcome = rm_node_outcome(&node, t);
	sum->found = n;
	for (size_t k = 0; k < n; k++) {
		if (rm_detail_keeps_target(d, &t[k]))
			continue;
		sum->left_out++;
		sum->unwatched_left += t[k].side == ROCATTACH_SIDE_ROCM && !t[k].watchdog;
		if (t[k].tool_n > RM_SUM_TOOLS)
			return -1;
		for (size_t j = 0; j < t[k].tool_n; j++)
			sum->tools_left[j][t[k].tools[j] <= ROCATTACH_TOOL_FAILED ? t[k].tools[j]
										  : 0]++;
	}
	sum->attached = c.attached;
	sum->failed = c.failed;
	sum->exited = c.exited;
	sum->detached = c.detached;
	sum->died = c.died;
	sum->exited_after = c.exited_after;
	sum->stopped = c.stopped;
	sum->late = c.late;
	sum->declined = c.declined;
	sum->partial = c.partial;
	rm_late_sum(t, n, sum);
	sum->attach = sum_of_fig3(&f.attach);
	sum->detach = sum_of_fig3(&f.detach);
	sum->over = sum_of_fig3(&f.over);
	sum->back = sum_of_fig3(&f.back);
	sum->calls_lo = f.calls_lo;
	sum->calls_hi = f.calls_hi;
	sum->early = f.early;
	memcpy(sum->attach_hist, f.attach_hist, sizeof(sum->attach_hist));
	memcpy(sum->skew_hist, f.skew_hist, sizeof(sum->skew_hist));
	sum->len_lo = len.lo;
	sum->len_hi = len.hi;
	sum->len_n = len.n;
	sum->bounds = bounds;
	rm_node_skew_lo(&node, t, since, lo, &est);
	sum->over_lo = lo[0];
	sum->back_lo = lo[1];
	sum->est = est;
	return 0;
}

/*
 * What a node can claim of its found targets, and of the records it kept
 * (kept: their counts). -1 with the first claim that does not hold in why.
 */
#define LLU(v) ((unsigned long long)(v))

static int head_fault(const struct rm_node_sum *s, const struct rm_node *n, char *why, size_t len)
{
	uint64_t f = s->found;

	if (s->level != RM_DETAIL_FAILURES && s->level != RM_DETAIL_NONE)
		snprintf(why, len, "level %d is neither failures nor none", (int)s->level);
	else if (s->outcome < 0 || s->outcome >= RM_OUT_N || s->outcome == RM_OUT_LOST ||
		 s->outcome == RM_OUT_UNREADABLE)
		snprintf(why, len, "outcome %d is none a node can send", (int)s->outcome);
	else if (f < n->n)
		snprintf(why, len, "found %llu, fewer than the %zu records kept", LLU(f), n->n);
	else if (s->left_out != f - n->n)
		snprintf(why, len, "left out %llu, not found %llu less the %zu records kept",
			 LLU(s->left_out), LLU(f), n->n);
	else
		return 0;
	return -1;
}

/* --late-start's counts: within found, and each within those tried. */
static int late_fault(const struct rm_node_sum *s, char *why, size_t len)
{
	uint64_t t = s->ls_tried, listener = s->ls_listener + s->ls_listener_failed;

	if (t <= s->found && s->ls_ran <= t && s->ls_init <= s->ls_ran && s->ls_failed <= t &&
	    listener <= t && s->ls_ran + listener <= t && s->ls_listener_failed <= s->ls_failed)
		return 0;
	snprintf(why, len,
		 "its late starts do not add up (tried %llu of %llu found, ran %llu, "
		 "initialized %llu, failed %llu, with a listener %llu attached and %llu failed)",
		 LLU(t), LLU(s->found), LLU(s->ls_ran), LLU(s->ls_init), LLU(s->ls_failed),
		 LLU(s->ls_listener), LLU(s->ls_listener_failed));
	return -1;
}

/* The block's own counts: each within found, the states apart, the outcome they give. */
static int counts_fault(const struct rm_node_sum *s, char *why, size_t len)
{
	const uint64_t c[] = {s->attached, s->failed,	    s->exited, s->detached, s->died,
			      s->stopped,  s->exited_after, s->late,   s->declined};
	static const char *const name[] = {"attached", "failed",       "exited", "detached", "died",
					   "stopped",  "exited after", "late",	 "declined"};
	uint64_t f = s->found, clean = s->detached + s->ls_init,
		 states = clean + s->exited + s->died + s->stopped;
	int want = !f	       ? RM_OUT_EMPTY
		   : s->failed ? RM_OUT_FAILED
		   : clean < f ? RM_OUT_OTHER
			       : RM_OUT_CLEAN;

	if (late_fault(s, why, len))
		return -1;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (c[i] > f) {
			snprintf(why, len, "%s %llu, more than the %llu found", name[i], LLU(c[i]),
				 LLU(f));
			return -1;
		}
	if (states > f || s->failed + clean > f)
		snprintf(why, len,
			 "its counts add up past the %llu found (detached %llu, failed %llu, "
			 "exited %llu, died %llu, stopped %llu)",
			 LLU(f), LLU(s->detached), LLU(s->failed), LLU(s->exited), LLU(s->died),
			 LLU(s->stopped));
	else if (s->stopped > s->failed || s->exited_after > s->exited ||
		 clean + s->died > s->attached)
		snprintf(why, len,
			 "its counts contradict each other (stopped %llu of %llu failed, "
			 "%llu of %llu exited after a window, detached and died %llu of "
			 "%llu attached)",
			 LLU(s->stopped), LLU(s->failed), LLU(s->exited_after), LLU(s->exited),
			 LLU(s->detached + s->died), LLU(s->attached));
	else if (s->outcome != want)
		snprintf(why, len, "outcome %s, but its counts make it %s",
			 rm_outcome_name((enum rm_outcome)s->outcome),
			 rm_outcome_name((enum rm_outcome)want));
	else
		return 0;
	return -1;
}

/* A record kept that the block's level leaves out: the node did not cut at that level. */
static int level_fault(const struct rm_node_sum *s, const struct rm_node *n, char *why, size_t len)
{
	for (size_t j = 0; j < n->n; j++)
		if (!rm_detail_keeps_target((enum rm_detail)s->level, &n->t[j])) {
			snprintf(why, len,
				 "it kept the record of pid %d, which --detail %s leaves out",
				 (int)n->t[j].pid, rm_detail_name((enum rm_detail)s->level));
			return -1;
		}
	return 0;
}

/*
 * The block against the records kept (their counts k): no count below
 * theirs, what is left over fits in the records left out, and at failures
 * those are clean ones (attached and detached, nothing else).
 */
static int kept_fault(const struct rm_node_sum *s, const struct rm_counts *k, char *why, size_t len)
{
	static const char *const name[] = {"failed",	   "died",     "exited",   "stopped",
					   "exited after", "attached", "detached", "late"};
	const uint64_t b[] = {s->failed,       s->died,	    s->exited,	 s->stopped,
			      s->exited_after, s->attached, s->detached, s->late};
	const size_t kc[] = {k->failed,	      k->died,	   k->exited,	k->stopped,
			     k->exited_after, k->attached, k->detached, k->late};
	/* Clean ones left out are detached, or late-started (and never detached). */
	uint64_t want, init_left = rm_left_of(s->ls_init, k->late_started);

	if (s->ls_init < k->late_started || init_left > s->left_out) {
		snprintf(why, len,
			 "late-started %llu, below the %zu such records kept or past the %llu "
			 "left out",
			 LLU(s->ls_init), k->late_started, LLU(s->left_out));
		return -1;
	}
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		want = kc[i] + (i < 5 ? 0 : s->left_out - (i == 6 ? init_left : 0));
		if (b[i] < kc[i])
			snprintf(why, len, "%s %llu, fewer than the %zu such records kept", name[i],
				 LLU(b[i]), kc[i]);
		else if (b[i] - kc[i] > s->left_out)
			snprintf(why, len,
				 "%s %llu: %llu more than the records kept, past the %llu "
				 "left out",
				 name[i], LLU(b[i]), LLU(b[i] - kc[i]), LLU(s->left_out));
		else if (s->level == RM_DETAIL_FAILURES && i < 7 && b[i] != want)
			snprintf(why, len,
				 "%s %llu, but at --detail failures the %zu such records kept and "
				 "the %llu clean ones left out make %llu",
				 name[i], LLU(b[i]), kc[i], LLU(s->left_out), LLU(want));
		else
			continue;
		return -1;
	}
	if (rm_left_of(s->detached, k->detached) + rm_left_of(s->exited, k->exited) +
		rm_left_of(s->died, k->died) + rm_left_of(s->stopped, k->stopped) + init_left <=
	    s->left_out)
		return 0;
	snprintf(why, len, "its counts, less the records kept, claim more than the %llu left out",
		 LLU(s->left_out));
	return -1;
}

static bool fig3_holds(const struct rm_sum_fig3 *f, uint64_t found)
{
	return f->n <= found && (!f->n || (f->min <= f->p50 && f->p50 <= f->max));
}

static uint64_t hist_sum(const uint32_t *h)
{
	uint64_t v = 0;

	for (size_t i = 0; i < RM_SUM_HIST_BINS; i++)
		v += h[i];
	return v;
}

/* The figures: within found, in order, histograms that add up; the tools left out. */
static int figures_fault(const struct rm_node_sum *s, char *why, size_t len)
{
	uint64_t f = s->found;

	if (!fig3_holds(&s->attach, f) || !fig3_holds(&s->detach, f) || !fig3_holds(&s->over, f) ||
	    !fig3_holds(&s->back, f) || hist_sum(s->attach_hist) != s->attach.n ||
	    (hist_sum(s->skew_hist) != s->attach.n && hist_sum(s->skew_hist) != 0) ||
	    s->early > s->attach.n || s->len_n > f || s->bounds > f ||
	    (s->len_n && s->len_lo > s->len_hi)) {
		snprintf(why, len,
			 "its times do not add up (out of order, more than found, or "
			 "histograms that do not sum to their targets)");
		return -1;
	}
	for (size_t j = 0; j < RM_SUM_TOOLS; j++)
		if ((uint64_t)s->tools_left[j][0] + s->tools_left[j][1] + s->tools_left[j][2] +
			    s->tools_left[j][3] >
			s->left_out ||
		    s->unwatched_left > s->left_out) {
			snprintf(why, len,
				 "its tools' outcomes or watchdogs count more than the %llu "
				 "left out",
				 LLU(s->left_out));
			return -1;
		}
	return 0;
}

static int sum_fault(const struct rm_node_sum *s, const struct rm_node *n, char *why, size_t len)
{
	struct rm_node plain = {.t = n->t, .n = n->n};
	struct rm_counts k = {0};

	if (head_fault(s, n, why, len) || counts_fault(s, why, len) || level_fault(s, n, why, len))
		return -1;
	rm_count_node(&plain, n->t, &k);
	return kept_fault(s, &k, why, len) || figures_fault(s, why, len) ? -1 : 0;
}

static void sum_to_root_clock(struct rm_sum_fig3 *f, int64_t applied_ns)
{
	uint64_t *v[] = {&f->min, &f->p50, &f->max};

	for (size_t j = 0; f->n && j < 3; j++)
		*v[j] = (uint64_t)((int64_t)*v[j] - applied_ns);
}

int rm_take_sum(const struct rm_node_sum *sum, int64_t applied_ns, struct rm_node *n, char *why,
		size_t len)
{
	struct rm_node_sum s = *sum, *copy;

	s.cpus[sizeof(s.cpus) - 1] = '\0';
	s.numa[sizeof(s.numa) - 1] = '\0';
	s.gpus[sizeof(s.gpus) - 1] = '\0';
	if (sum_fault(&s, n, why, len))
		return -1;
	sum_to_root_clock(&s.over, applied_ns);
	sum_to_root_clock(&s.back, applied_ns);
	if (s.over_lo)
		s.over_lo = (uint64_t)((int64_t)s.over_lo - applied_ns);
	if (s.back_lo)
		s.back_lo = (uint64_t)((int64_t)s.back_lo - applied_ns);
	if (s.calls_lo)
		s.calls_lo = (uint64_t)((int64_t)s.calls_lo - applied_ns);
	if (s.calls_hi)
		s.calls_hi = (uint64_t)((int64_t)s.calls_hi - applied_ns);
	if (!(copy = malloc(sizeof(*copy)))) {
		snprintf(why, len, "out of memory for its figures");
		return -1;
	}
	*copy = s;
	n->sum = copy;
	n->cut = true;
	return 0;
}

void rm_node_sum_free(struct rm_node *n)
{
	free((void *)n->sum);
	n->sum = NULL;
	n->cut = false;
}

/* ------------------------------------------------------------------------ */
/* Groups. */

static const char *const outcome_names[RM_OUT_N] = {
    [RM_OUT_CLEAN] = "ok",    [RM_OUT_EMPTY] = "no targets", [RM_OUT_FAILED] = "failed",
    [RM_OUT_OTHER] = "other", [RM_OUT_LOST] = "lost",	     [RM_OUT_UNREADABLE] = "unreadable"};

const char *rm_outcome_name(enum rm_outcome o)
{
	return o < RM_OUT_N ? outcome_names[o] : "?";
}

enum rm_outcome rm_node_outcome(const struct rm_node *n, const struct rn_target *t)
{
	bool failed = false, other = false;

	if (n->lost)
		return RM_OUT_LOST;
	if (n->cut)
		return (enum rm_outcome)n->sum->outcome;
	if (!n->n)
		return RM_OUT_EMPTY;
	if (!t)
		return RM_OUT_UNREADABLE;
	for (size_t k = 0; k < n->n; k++) {
		failed |= rm_failed(&t[k]);
		other |= !rm_clean(&t[k]);
	}
	return failed ? RM_OUT_FAILED : other ? RM_OUT_OTHER : RM_OUT_CLEAN;
}

void rm_grouping_free(struct rm_grouping *g)
{
	free(g->outcome);
	free(g->alone);
	memset(g, 0, sizeof(*g));
}

/* One read of each node. Not clean and among the first RM_GROUP_ALONE such: alone. */
int rm_group_nodes(const struct rm_window *w, struct rm_grouping *g)
{
	struct rm_hold h = {0};
	size_t alone = 0;

	memset(g, 0, sizeof(*g));
	g->n = w ? w->n_nodes : 0;
	g->grouped = g->n > RM_GROUP_ABOVE;
	g->outcome = calloc(g->n ? g->n : 1, 1);
	g->alone = calloc(g->n ? g->n : 1, sizeof(bool));
	if (!g->outcome || !g->alone) {
		rm_grouping_free(g);
		return -1;
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct rm_node *n = &w->nodes[i];
		enum rm_outcome o = rm_node_outcome(n, n->lost ? NULL : rm_targets(n, &h));

		g->outcome[i] = (unsigned char)o;
		g->alone[i] = !g->grouped || (o != RM_OUT_CLEAN && alone < RM_GROUP_ALONE);
		alone += g->grouped && g->alone[i];
		if (!g->alone[i])
			g->members[o]++;
	}
	rm_hold_free(&h);
	return 0;
}

char *rm_group_hosts(const struct rm_window *w, const struct rm_grouping *g, enum rm_outcome o,
		     size_t max)
{
	const char **hosts = calloc(g->n ? g->n : 1, sizeof(*hosts));
	size_t m = 0;
	char *s;

	if (!hosts)
		return NULL;
	for (size_t i = 0; i < g->n; i++)
		if (!g->alone[i] && g->outcome[i] == o)
			hosts[m++] = w->nodes[i].host;
	s = rm_hostlist(hosts, m);
	free(hosts);
	if (s && strlen(s) > max && max > 4)
		strcpy(s + max - 3, "...");
	return s;
}

/* A host as prefix, then a number of width digits at its end (width 0: none). */
struct hostnum {
	const char *host;
	size_t prefix, width;
	unsigned long long num;
};

static int hostnum_cmp(const void *a, const void *b)
{
	const struct hostnum *x = a, *y = b;
	size_t p = x->prefix < y->prefix ? x->prefix : y->prefix;
	int c = memcmp(x->host, y->host, p);

	if (c)
		return c;
	if (x->prefix != y->prefix)
		return x->prefix < y->prefix ? -1 : 1;
	if (x->width != y->width)
		return x->width < y->width ? -1 : 1;
	return (x->num > y->num) - (x->num < y->num);
}

static void hostnum_of(const char *host, struct hostnum *h)
{
	size_t len = strnlen(host, sizeof(((struct rm_node *)0)->host)), d = len;

	while (d > 0 && host[d - 1] >= '0' && host[d - 1] <= '9')
		d--;
	h->host = host;
	h->prefix = len;
	h->width = 0;
	h->num = 0;
	/* 18 digits at most: the number fits. */
	if (len - d == 0 || len - d > 18)
		return;
	h->prefix = d;
	h->width = len - d;
	h->num = strtoull(host + d, NULL, 10);
}

static bool same_stem(const struct hostnum *a, const struct hostnum *b)
{
	return a->width && a->prefix == b->prefix && a->width == b->width &&
	       !memcmp(a->host, b->host, a->prefix);
}

/* v[i..j) share prefix and width: "pre[1-3,5]", or the host alone. */
static void put_stem(FILE *f, const struct hostnum *v, size_t i, size_t j)
{
	size_t k, e;

	if (j - i == 1) {
		fprintf(f, "%.*s", (int)(v[i].prefix + v[i].width), v[i].host);
		return;
	}
	fprintf(f, "%.*s[", (int)v[i].prefix, v[i].host);
	for (k = i; k < j; k = e + 1) {
		for (e = k; e + 1 < j && v[e + 1].num == v[e].num + 1; e++)
			;
		fprintf(f, "%s%0*llu", k > i ? "," : "", (int)v[k].width, v[k].num);
		if (e > k)
			fprintf(f, "-%0*llu", (int)v[e].width, v[e].num);
	}
	fputc(']', f);
}

char *rm_hostlist(const char *const *hosts, size_t n)
{
	struct hostnum *v = calloc(n ? n : 1, sizeof(*v));
	size_t i, j, m = 0, len = 0;
	char *s = NULL;
	FILE *f;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++)
		hostnum_of(hosts[i], &v[i]);
	if (n)
		qsort(v, n, sizeof(*v), hostnum_cmp);
	for (i = 0; i < n; i++) /* repeats once */
		if (!m || hostnum_cmp(&v[m - 1], &v[i]))
			v[m++] = v[i];
	f = open_memstream(&s, &len);
	for (i = 0; f && i < m; i = j) {
		for (j = i + 1; j < m && same_stem(&v[i], &v[j]); j++)
			;
		if (i)
			fputc(',', f);
		put_stem(f, v, i, j);
	}
	if (!f || fclose(f)) {
		free(s);
		s = NULL;
	}
	free(v);
	return s;
}

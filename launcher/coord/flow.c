/* SPDX-License-Identifier: MIT */
/*
 * The launcher's tree (tree.h, --fanout K): each rank talks to its parent
 * and its children only, point to point, every wait with a deadline.
 *
 *   clocks   each parent measures its children (all parents at once) at
 *            the start-up; later only children whose drift check
 *            disagrees are measured again. Offsets compose down the tree.
 *   down     ORDER and HALT: a rank forwards what its parent sent to its
 *            live children, each order with that child's composed clock.
 *   up       READY: one per subtree, counts summed; RECORDS: one bundle
 *            per subtree (this node's records, the children's bundles as
 *            they came, and "rank r lost" entries); STOP and GONE: each
 *            forwarded at once with its origin rank.
 *
 * A child silent past its deadline is late (retried once), then lost with
 * the reason; rank 0 then loses its whole subtree ("under rank P, lost:").
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include "common/clock.h"
#include "ctx.h"
#include "tree.h"

/* A bundle: this head, then n entries, each a struct rm_entry and its bytes. */
struct rm_bundle_head {
	int32_t window;
	int32_t n;
	int32_t stops_sent, gones_sent; /* on the sender's link to its parent, all along */
	uint64_t t1, t2; /* the stop's receipt and this bundle's send (the drift check) */
};

struct rm_entry {
	int32_t rank;
	int32_t lost; /* the bytes are why it was lost (a string), else its records */
	uint64_t len;
};

void rm_tree_init(struct ctx *c)
{
	struct rm_tree *t = &c->tree;

	t->k = c->o.fanout >= RM_FANOUT_MIN ? c->o.fanout : RM_FANOUT_DEFAULT;
	t->height = rm_tree_height(c->size, t->k);
	t->depth = rm_tree_depth(c->rank, t->k);
	t->parent = rm_tree_parent(c->rank, t->k);
	t->first = rm_tree_first_child(c->rank, t->k);
	t->n_kids = rm_tree_children(c->rank, t->k, c->size);
	t->n_heap = t->cap_kids = t->n_kids;
	t->kids = calloc(t->n_kids ? (size_t)t->n_kids : 1, sizeof(*t->kids));
	if (!t->kids)
		rm_out_of_memory();
	for (int i = 0; i < t->n_kids; i++) {
		if (!(t->kids[i] = calloc(1, sizeof(**t->kids))))
			rm_out_of_memory();
		t->kids[i]->rank = t->first + i;
	}
	if (c->rank == 0)
		c->clock = (struct rm_clock){0, 0, 0, true, 0}; /* the reference */
}

struct rm_kid *rm_kid_of(struct ctx *c, int r)
{
	long long i = (long long)r - c->tree.first;

	if (r < 0)
		return NULL;
	if (i >= 0 && i < c->tree.n_heap)
		return c->tree.kids[i];
	/* Adopted (a lost child's children): after the own ones. */
	for (int a = c->tree.n_heap; a < c->tree.n_kids; a++)
		if (c->tree.kids[a]->rank == r)
			return c->tree.kids[a];
	return NULL;
}

uint64_t rm_level_wait(const struct ctx *c)
{
	int levels = c->tree.height - 1 - c->tree.depth;

	return levels > 0 ? (uint64_t)levels * rm_budget(c, LEVEL_STEP_NS) : 0;
}

static void note_lost(struct ctx *c, int r, const char *why, bool adopted)
{
	struct rm_tree *t = &c->tree;

	if (t->n_notes == t->cap_notes) {
		size_t cap = t->cap_notes ? 2 * t->cap_notes : 8;
		struct rm_lost_note *n = realloc(t->notes, cap * sizeof(*n));

		if (!n)
			rm_out_of_memory();
		t->notes = n;
		t->cap_notes = cap;
	}
	t->notes[t->n_notes].rank = r;
	t->notes[t->n_notes].adopted = adopted;
	snprintf(t->notes[t->n_notes].reason, sizeof(t->notes[0].reason), "%s", why);
	t->n_notes++;
}

/*
 * The children of lost child p become this rank's: each is told (ADOPT,
 * with this window's stop if it went down already) and owes what it sent
 * p (READY, records), ADOPT_WAIT_NS (rm_budget) from now. Their clocks
 * are measured before the next order. 0 if p had no children.
 */
static int adopt(struct ctx *c, const struct rm_kid *p)
{
	struct rm_tree *t = &c->tree;
	int first = rm_tree_first_child(p->rank, t->k),
	    n = rm_tree_children(p->rank, t->k, c->size);
	struct rm_adopt a = {.window = t->window, .lost = p->rank, .has_halt = t->have_halt};

	if (!n)
		return 0;
	a.halt = t->halt;
	if (t->n_kids + n > t->cap_kids) {
		int cap = 2 * (t->n_kids + n);
		struct rm_kid **kids = realloc(t->kids, (size_t)cap * sizeof(*kids));

		if (!kids)
			rm_out_of_memory();
		t->kids = kids;
		t->cap_kids = cap;
	}
	for (int r = first; r < first + n; r++) {
		struct rm_kid *k = calloc(1, sizeof(*k));

		if (!k)
			rm_out_of_memory();
		k->rank = r;
		k->adopted = true;
		k->adopted_from = p->rank;
		k->clock_stale = true; /* its offset to this rank: not measured yet */
		t->kids[t->n_kids++] = k;
		rm_post(c, r, TAG_ADOPT, &a, sizeof(a));
	}
	t->adopt_until = ra_monotonic_ns() + rm_budget(c, ADOPT_WAIT_NS);
	if (c->o.verbose)
		rm_say(c, "rank %d lost: its %d children adopted by rank %d", p->rank, n, c->rank);
	return n;
}

void rm_kid_lost(struct ctx *c, struct rm_kid *k, const char *fmt, ...)
{
	bool adopted;
	va_list ap;

	if (k->lost)
		return;
	k->lost = true;
	va_start(ap, fmt);
	vsnprintf(k->lost_reason, sizeof(k->lost_reason), fmt, ap);
	va_end(ap);
	adopted = adopt(c, k) > 0;
	if (c->rank == 0) {
		if (adopted)
			rm_mark_lost(c, k->rank, "%s", k->lost_reason);
		else
			rm_lose_subtree(c, k->rank, k->lost_reason);
		return;
	}
	if (c->o.verbose)
		rm_rank_error(c, "child rank %d lost: %s", k->rank, k->lost_reason);
	note_lost(c, k->rank, k->lost_reason, adopted);
}

/* A lost rank below a child, as that child said: rank 0 loses it, others tell it up. */
static void take_note(struct ctx *c, const struct rm_kid *k, int r, const char *why, bool adopted)
{
	if (!rm_tree_in_subtree(r, k->rank, c->tree.k) || r == k->rank)
		return; /* not below that child: not its to say */
	if (c->rank != 0)
		note_lost(c, r, why, adopted);
	else if (adopted)
		rm_mark_lost(c, r, "%s", why);
	else
		rm_lose_subtree(c, r, why);
}

/* ------------------------------------------------------------------------ */
/* Waiting: the parent's pings answered, the children's STOP and GONE sent up. */

void rm_send_up(struct ctx *c, int tag, int32_t origin, int32_t value)
{
	struct rm_up m = {origin, value};

	rm_post(c, c->tree.parent, tag, &m, sizeof(m));
	if (tag == TAG_STOP)
		c->tree.up_stops++;
	else
		c->tree.up_gones++;
}

static void answer_pings(struct ctx *c)
{
	for (;;) {
		int flag = 0;
		uint64_t t;

		/* RM_MPI with the parent returns only on success. */
		RM_MPI(c, c->tree.parent, "from", MPI_Iprobe, c->tree.parent, TAG_CLOCK,
		       MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		if (!flag)
			return;
		RM_MPI(c, c->tree.parent, "from", MPI_Recv, &t, 1, MPI_UINT64_T, c->tree.parent,
		       TAG_CLOCK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		t = ra_realtime_ns();
		rm_post(c, c->tree.parent, TAG_CLOCK, &t, sizeof(t));
		/* Awake for a while: the rest of the exchange measures the link, not naps. */
		c->tree.awake_until = ra_monotonic_ns() + 50 * RA_NS_PER_MS;
	}
}

/* One STOP or GONE from child k, counted; forwarded up (other ranks). */
static int take_up(struct ctx *c, struct rm_kid *k, int tag, struct rm_up *m)
{
	if (RM_MPI(c, k->rank, "from", MPI_Recv, m, sizeof(*m), MPI_BYTE, k->rank, tag,
		   MPI_COMM_WORLD, MPI_STATUS_IGNORE))
		return -1;
	rm_count_in(c, sizeof(*m));
	if (tag == TAG_STOP)
		k->stops_in++;
	else
		k->gones_in++;
	if (c->rank != 0)
		rm_send_up(c, tag, m->origin, m->value);
	return 0;
}

static void relay_up(struct ctx *c, int tag)
{
	for (;;) {
		MPI_Status st;
		struct rm_up m;
		struct rm_kid *k;
		int flag = 0;

		if (RM_MPI(c, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD,
			   &flag, &st) ||
		    !flag)
			return;
		k = rm_kid_of(c, st.MPI_SOURCE);
		if (!k) {
			/* Not a child's: taken and dropped. */
			RM_MPI(c, RM_ANY, "from", MPI_Recv, &m, sizeof(m), MPI_BYTE, st.MPI_SOURCE,
			       tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			continue;
		}
		take_up(c, k, tag, &m);
	}
}

int rm_tree_take_up(struct ctx *c, int tag, struct rm_up *m)
{
	for (;;) {
		MPI_Status st;
		struct rm_kid *k;
		int flag = 0;

		if (RM_MPI(c, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD,
			   &flag, &st) ||
		    !flag)
			return 0;
		k = rm_kid_of(c, st.MPI_SOURCE);
		if (!k) {
			RM_MPI(c, RM_ANY, "from", MPI_Recv, m, sizeof(*m), MPI_BYTE, st.MPI_SOURCE,
			       tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			continue;
		}
		if (take_up(c, k, tag, m) || m->origin < 0 || m->origin >= c->size)
			continue;
		return 1;
	}
}

/* A copy of what went up last (buf, len), for an adopter. */
static void keep_sent(char **keep, size_t *keep_len, int32_t *keep_w, const void *buf, size_t len,
		      int32_t window)
{
	free(*keep);
	if (!(*keep = malloc(len ? len : 1)))
		rm_out_of_memory();
	memcpy(*keep, buf, len);
	*keep_len = len;
	*keep_w = window;
}

/*
 * An ancestor adopts this rank (its parent was lost): it is the parent from
 * now on. What went up this window to the lost one goes to it again; the
 * window's stop, if it sent one, is taken as the parent's.
 */
static void take_adopt(struct ctx *c)
{
	struct rm_tree *t = &c->tree;
	struct rm_adopt a;
	MPI_Status st;
	int flag = 0;

	if (RM_MPI(c, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, TAG_ADOPT, MPI_COMM_WORLD, &flag,
		   &st) ||
	    !flag)
		return;
	if (RM_MPI(c, RM_ANY, "from", MPI_Recv, &a, sizeof(a), MPI_BYTE, st.MPI_SOURCE, TAG_ADOPT,
		   MPI_COMM_WORLD, MPI_STATUS_IGNORE) ||
	    st.MPI_SOURCE == t->parent || st.MPI_SOURCE == c->rank ||
	    !rm_tree_in_subtree(c->rank, st.MPI_SOURCE, t->k))
		return; /* not from an ancestor */
	fprintf(stderr,
		"rocattach-mpi[%s:%d] warning: rank %d (this rank's parent) was lost: rank %d "
		"adopted this rank\n",
		c->host, c->rank, a.lost, st.MPI_SOURCE);
	t->parent = st.MPI_SOURCE;
	/* A new link: its counts start again (what went to the lost one is gone). */
	t->up_stops = t->up_gones = 0;
	if (a.window != t->window)
		return;
	if (t->last_ready && t->last_ready_window == t->window)
		rm_post(c, t->parent, TAG_READY, t->last_ready, t->last_ready_len);
	if (t->last_bundle && t->last_bundle_window == t->window) {
		struct rm_bundle_head h;

		/* No STOP or GONE on this link yet. */
		memcpy(&h, t->last_bundle, sizeof(h));
		h.stops_sent = h.gones_sent = 0;
		h.t1 = 0; /* the stop it answered came from the lost parent */
		memcpy(t->last_bundle, &h, sizeof(h));
		rm_post(c, t->parent, TAG_RECORDS, t->last_bundle, t->last_bundle_len);
	}
	if (a.has_halt && !t->have_halt) {
		t->adopted_halt = a.halt;
		t->adopt_halt = true;
	}
}

void rm_tree_window(struct ctx *c, int32_t window)
{
	c->tree.window = window;
	c->tree.have_halt = c->tree.adopt_halt = false;
	c->tree.halt_t1 = 0;
}

bool rm_tree_adopted_halt(struct ctx *c, struct rm_halt *m)
{
	if (!c->tree.adopt_halt)
		return false;
	*m = c->tree.adopted_halt;
	c->tree.adopt_halt = false;
	return true;
}

void rm_tree_service(struct ctx *c)
{
	if (c->rank == 0)
		return;
	take_adopt(c);
	answer_pings(c);
	if (c->tree.n_kids) {
		relay_up(c, TAG_STOP);
		relay_up(c, TAG_GONE);
	}
}

void rm_tree_nap(struct ctx *c, unsigned us)
{
	if (ra_monotonic_ns() > c->tree.awake_until)
		usleep(us);
}

int rm_await_parent(struct ctx *c, int tag, void *buf, size_t len, uint64_t deadline)
{
	for (;;) {
		int flag = 0, p;

		rm_tree_service(c);
		if (tag == TAG_HALT && len == sizeof(struct rm_halt) &&
		    rm_tree_adopted_halt(c, buf))
			return 0;
		p = c->tree.parent; /* an adoption changes it */
		RM_MPI(c, p, "from", MPI_Iprobe, p, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		if (flag) {
			RM_MPI(c, p, "from", MPI_Recv, buf, (int)len, MPI_BYTE, p, tag,
			       MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			return 0;
		}
		if (ra_monotonic_ns() > deadline)
			return -1;
		rm_tree_nap(c, 500);
	}
}

/*
 * Every STOP and GONE child k sent before a message that says how many it
 * had sent by then: they came first on the same link, so none is left
 * pending (and none is taken later for a stop of the next window).
 */
static void drain_link(struct ctx *c, struct rm_kid *k, int stops, int gones)
{
	struct rm_up m;

	while (!k->lost && k->stops_in < stops)
		if (!take_up(c, k, TAG_STOP, &m) && c->rank == 0 && m.origin > 0 &&
		    m.origin < c->size)
			c->peers[m.origin].stops++;
	while (!k->lost && k->gones_in < gones)
		if (!take_up(c, k, TAG_GONE, &m) && c->rank == 0 && m.origin > 0 &&
		    m.origin < c->size)
			c->peers[m.origin].gones++;
}

/* ------------------------------------------------------------------------ */
/*
 * Clocks: each parent with its children, as rank 0 did with every rank:
 * CLOCK_ROUNDS ping-pongs (the parent sends its time t0, the child answers
 * its own t1, the parent reads t2), more (up to CLOCK_ROUNDS_MAX) while no
 * round trip was shorter than CLOCK_RTT_GOOD_NS; the estimate with the
 * shortest round trip is kept: offset = t1 - (t0 + t2) / 2, within rtt / 2.
 * The children are measured together, a round at a time (rm_tree_measure).
 * A parent answers its own parent's pings meanwhile. A child that leaves a
 * ping unanswered for CLOCK_ANSWER_NS (rm_budget) is late: the parent goes
 * on with the others, then waits for the late ones until CLOCK_LOST_NS
 * after each ping. One that does not answer is lost.
 */
static int take_answer(struct ctx *c, struct rm_kid *k, uint64_t t0, uint64_t sent,
		       struct rm_clock *best)
{
	uint64_t t1, rtt;

	if (RM_MPI(c, k->rank, "from", MPI_Recv, &t1, 1, MPI_UINT64_T, k->rank, TAG_CLOCK,
		   MPI_COMM_WORLD, MPI_STATUS_IGNORE))
		return -1;
	rm_count_in(c, sizeof(t1));
	/* On CLOCK_MONOTONIC: a step of this rank's wall clock does not make it absurd. */
	rtt = ra_monotonic_ns() - sent;
	if (rtt < best->rtt_ns) {
		best->rtt_ns = rtt;
		best->offset_ns = (int64_t)(t1 - t0) - (int64_t)(rtt / 2);
	}
	return 0;
}

static void wait_late_clocks(struct ctx *c, size_t late)
{
	uint64_t lost_after = rm_budget(c, CLOCK_LOST_NS);

	while (late) {
		uint64_t now = ra_monotonic_ns();

		for (int i = 0; i < c->tree.n_kids; i++) {
			struct rm_kid *k = c->tree.kids[i];
			int flag = 0;

			if (!k->ping_t0)
				continue;
			if (k->lost ||
			    RM_MPI(c, k->rank, "from", MPI_Iprobe, k->rank, TAG_CLOCK,
				   MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) ||
			    (flag && take_answer(c, k, k->ping_t0, k->ping_sent, &k->clock))) {
				/* Lost (RM_MPI said why). */
			} else if (flag) {
				k->measured_mono = now;
			} else if (now - k->ping_sent > lost_after) {
				rm_kid_lost(c, k, "no answer to a clock ping within %.1f s",
					    (double)lost_after / 1e9);
			} else {
				continue;
			}
			k->ping_t0 = 0;
			late--;
		}
		rm_tree_service(c);
		if (late)
			usleep(200);
	}
}

/* A child's clock as rank 0's: this rank's composed clock plus the child's offset to it. */
static struct rm_clock compose(const struct rm_clock *mine, const struct rm_clock *rel)
{
	struct rm_clock t = {.offset_ns = mine->offset_ns + rel->offset_ns,
			     .rtt_ns = rel->rtt_ns,
			     .known = mine->known && rel->known,
			     .bound_ns = mine->bound_ns + rel->rtt_ns / 2};

	/* Applied only when it shows the clocks differ: else it would add only its error. */
	t.applied_ns = (uint64_t)llabs(t.offset_ns) > t.bound_ns ? t.offset_ns : 0;
	return t;
}

/* One child's exchange in rm_tree_measure. */
struct measuring;
static bool any_active(const struct measuring *ms, int n);
struct measuring {
	struct rm_clock best;
	uint64_t t0, sent; /* the ping in flight: CLOCK_REALTIME sent, and CLOCK_MONOTONIC */
	uint64_t budget;   /* no new round after this (CLOCK_MONOTONIC) */
	int rounds;
	bool active, pinged;
};

/* Another round for child m? A slow one gets fewer (a wider bound). */
static bool more_rounds(const struct measuring *m, uint64_t now)
{
	if (m->rounds && now > m->budget)
		return false;
	return m->rounds < CLOCK_ROUNDS ||
	       (m->rounds < CLOCK_ROUNDS_MAX && m->best.rtt_ns > CLOCK_RTT_GOOD_NS);
}

static bool any_active(const struct measuring *ms, int n)
{
	for (int i = 0; i < n; i++)
		if (ms[i].active)
			return true;
	return false;
}

static void measured(struct rm_kid *k, const struct measuring *m)
{
	k->clock = m->best;
	k->clock_stale = false;
	k->measured_mono = ra_monotonic_ns();
}

/*
 * The children are measured together: each round pings every child still
 * measuring, then takes their answers, so the exchange takes the rounds of
 * the slowest child, not the sum over the children (at 32 children on a
 * busy machine, 2 s against 60 ms here).
 */
void rm_tree_measure(struct ctx *c, bool all)
{
	/* Adopted meanwhile (a child lost): measured before the next order, not here. */
	int n = c->tree.n_kids;
	struct measuring *ms = calloc((size_t)n + 1, sizeof(*ms));
	uint64_t answer = rm_budget(c, CLOCK_ANSWER_NS), now = ra_monotonic_ns();
	size_t late = 0;
	int pending;

	if (!ms)
		rm_out_of_memory();
	for (int i = 0; i < n; i++) {
		const struct rm_kid *k = c->tree.kids[i];

		ms[i].active = !k->lost && (all || k->clock_stale);
		ms[i].best = (struct rm_clock){0, UINT64_MAX, 0, true, 0};
		ms[i].budget = now + answer;
	}
	do {
		pending = 0;
		for (int i = 0; i < n; i++) {
			struct measuring *m = &ms[i];
			struct rm_kid *k = c->tree.kids[i];

			if (!m->active)
				continue;
			if (k->lost || !more_rounds(m, ra_monotonic_ns())) {
				measured(k, m);
				m->active = false;
				continue;
			}
			m->t0 = ra_realtime_ns();
			m->sent = ra_monotonic_ns();
			rm_post(c, k->rank, TAG_CLOCK, &m->t0, sizeof(m->t0));
			m->pinged = true;
			pending++;
		}
		while (pending) {
			for (int i = 0; i < n; i++) {
				struct measuring *m = &ms[i];
				struct rm_kid *k = c->tree.kids[i];
				int flag = 0;

				if (!m->active || !m->pinged)
					continue;
				if (!k->lost &&
				    RM_MPI(c, k->rank, "from", MPI_Iprobe, k->rank, TAG_CLOCK,
					   MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE))
					flag = 0;
				if (k->lost ||
				    (flag && take_answer(c, k, m->t0, m->sent, &m->best))) {
					/* Lost (RM_MPI said why): what it gave so far. */
					measured(k, m);
					m->active = false;
				} else if (flag) {
					m->rounds++;
				} else if (ra_monotonic_ns() - m->sent > answer) {
					/* Late: its answer is waited for below. */
					measured(k, m);
					k->ping_t0 = m->t0;
					k->ping_sent = m->sent;
					m->active = false;
					late++;
					if (c->o.verbose)
						rm_say(c,
						       "rank %d late: no answer to a clock ping "
						       "within "
						       "%.1f s; waiting up to %.1f s",
						       k->rank, (double)answer / 1e9,
						       (double)rm_budget(c, CLOCK_LOST_NS) / 1e9);
				} else {
					continue;
				}
				m->pinged = false;
				pending--;
			}
			if (pending)
				rm_tree_service(c);
		}
	} while (any_active(ms, n));
	free(ms);
	wait_late_clocks(c, late);
	for (int i = 0; i < c->tree.n_kids; i++) {
		const struct rm_kid *k = c->tree.kids[i];

		/* Late answers' round trips are this rank's own wait: not the link's. */
		if (!k->lost && k->clock.known && k->clock.rtt_ns != UINT64_MAX &&
		    k->clock.rtt_ns > c->tree.rtt_sub_ns)
			c->tree.rtt_sub_ns = k->clock.rtt_ns;
	}
	if (c->rank == 0 && c->tree.rtt_sub_ns > c->rtt_worst_ns)
		c->rtt_worst_ns = c->tree.rtt_sub_ns;
}

/*
 * The drift check, on the order and the READY, and on the stop and the
 * records (no message of its own): t0 the order's (stop's) send here, t1
 * its receipt there, t2 the READY's (records') send there, t3 its receipt
 * here. offset = ((t1 - t0) + (t2 - t3)) / 2 within
 * ((t3 - t0) - (t2 - t1)) / 2. A check whose interval misses the stored
 * estimate's (rtt / 2, widened by CLOCK_DRIFT_PPM since it was measured)
 * marks the child for a new exchange before the next order.
 */
static void drift_check(struct ctx *c, struct rm_kid *k, uint64_t t0, uint64_t t1, uint64_t t2,
			uint64_t t3)
{
	int64_t off, bound, lo, hi, drift;

	if (!t0 || !t1 || !t2 || !k->clock.known || k->clock.rtt_ns == UINT64_MAX)
		return;
	off = ((int64_t)(t1 - t0) + (int64_t)(t2 - t3)) / 2;
	bound = ((int64_t)(t3 - t0) - (int64_t)(t2 - t1)) / 2;
	/* The child's clock ran faster than the round trip allows: it was stepped. */
	if (bound < 0) {
		k->clock_stale = true;
		return;
	}
	drift = (int64_t)((ra_monotonic_ns() - k->measured_mono) / 1000000 * CLOCK_DRIFT_PPM);
	lo = k->clock.offset_ns - (int64_t)(k->clock.rtt_ns / 2) - drift;
	hi = k->clock.offset_ns + (int64_t)(k->clock.rtt_ns / 2) + drift;
	if (off + bound >= lo && off - bound <= hi)
		return;
	k->clock_stale = true;
	if (c->o.verbose)
		rm_say(c,
		       "rank %d's clock moved: %.3f ms within %.3f ms, was %.3f ms; measured "
		       "again before the next window",
		       k->rank, (double)off / 1e6, (double)bound / 1e6,
		       (double)k->clock.offset_ns / 1e6);
}

/* ------------------------------------------------------------------------ */
/* Down the tree. */

void rm_tree_orders(struct ctx *c, const struct rm_order *o)
{
	for (int i = 0; i < c->tree.n_kids; i++) {
		struct rm_kid *k = c->tree.kids[i];
		struct rm_order mine = *o;

		if (k->lost)
			continue;
		mine.clock = compose(&c->clock, &k->clock);
		mine.sent_rt = k->order_rt = ra_realtime_ns();
		rm_post(c, k->rank, TAG_ORDER, &mine, sizeof(mine));
	}
}

void rm_tree_halts(struct ctx *c, const struct rm_halt *m)
{
	c->tree.halt = *m;
	c->tree.have_halt = true;
	for (int i = 0; i < c->tree.n_kids; i++) {
		struct rm_kid *k = c->tree.kids[i];
		struct rm_halt mine = *m;

		if (k->lost)
			continue;
		mine.sent_rt = k->halt_rt = ra_realtime_ns();
		rm_post(c, k->rank, TAG_HALT, &mine, sizeof(mine));
	}
}

/* ------------------------------------------------------------------------ */
/* READY up. */

static size_t kids_missing(const struct ctx *c, bool records)
{
	size_t n = 0;

	for (int i = 0; i < c->tree.n_kids; i++) {
		const struct rm_kid *k = c->tree.kids[i];

		n += !k->lost && !(records ? k->got_records : k->got_ready);
	}
	return n;
}

static void say_late(struct ctx *c, bool records, const char *what, uint64_t retry)
{
	for (int i = 0; i < c->tree.n_kids && c->o.verbose; i++) {
		const struct rm_kid *k = c->tree.kids[i];

		if (!k->lost && !(records ? k->got_records : k->got_ready))
			rm_say(c, "rank %d late: no %s yet; retrying for %.1f s", k->rank, what,
			       (double)retry / 1e9);
	}
}

/* A message of tag from any rank, whole, into a new buffer: its child, or NULL. */
static struct rm_kid *take_message(struct ctx *c, int tag, char **buf, size_t *len)
{
	MPI_Status st;
	int flag = 0, n = 0;

	*buf = NULL;
	if (RM_MPI(c, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag,
		   &st) ||
	    !flag)
		return NULL;
	if (RM_MPI(c, st.MPI_SOURCE, "from", MPI_Get_count, &st, MPI_BYTE, &n) || n < 0)
		return NULL;
	*buf = malloc(n ? (size_t)n : 1);
	if (!*buf)
		rm_out_of_memory();
	if (RM_MPI(c, st.MPI_SOURCE, "from", MPI_Recv, *buf, n, MPI_BYTE, st.MPI_SOURCE, tag,
		   MPI_COMM_WORLD, MPI_STATUS_IGNORE)) {
		free(*buf);
		*buf = NULL;
		return NULL;
	}
	rm_count_in(c, (size_t)n);
	*len = (size_t)n;
	return rm_kid_of(c, st.MPI_SOURCE);
}

static void add_ready(struct rm_ready *sum, const struct rm_ready *m)
{
	sum->attached += m->attached;
	sum->tool_failed += m->tool_failed;
	sum->no_listener += m->no_listener;
	if (m->ready_ns > sum->ready_ns)
		sum->ready_ns = m->ready_ns;
	if (m->rtt_sub_ns > sum->rtt_sub_ns)
		sum->rtt_sub_ns = m->rtt_sub_ns;
	sum->owed += m->owed;
}

static void take_ready(struct ctx *c, struct rm_kid *k, const char *buf, size_t len, int32_t window,
		       uint64_t t3, struct rm_ready *sum)
{
	struct rm_ready m;
	const struct rm_lost_note *notes = (const void *)(buf + sizeof(m));

	if (k->lost || k->got_ready || len < sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	if (m.window != window || m.n_lost < 0 ||
	    (size_t)m.n_lost > (len - sizeof(m)) / sizeof(*notes))
		return; /* an earlier window's, late: not this one's */
	for (int32_t i = 0; i < m.n_lost; i++) {
		struct rm_lost_note n;

		memcpy(&n, &notes[i], sizeof(n));
		n.reason[sizeof(n.reason) - 1] = '\0';
		take_note(c, k, n.rank, n.reason, n.adopted);
	}
	drift_check(c, k, k->order_rt, m.t1, m.t2, t3);
	k->ready = m;
	k->got_ready = true;
	add_ready(sum, &m);
	if (c->rank == 0) {
		c->peers[k->rank].ready = m;
		c->peers[k->rank].got_ready = true;
	}
}

/*
 * The wait for the children's READY runs inside the window's hold (each
 * poll takes what came and acts on the deadlines), so that a silent child
 * delays no stop: the hold acts on its stop while READYs are still owed.
 */
void rm_tree_ready_begin(struct ctx *c, int32_t window, uint64_t start_mono,
			 const struct rm_ready *own)
{
	struct rm_tree *t = &c->tree;

	for (int i = 0; i < t->n_kids; i++)
		t->kids[i]->got_ready = t->kids[i]->ready_owed = false;
	t->ready_sum = *own;
	t->ready_sum.rtt_sub_ns = t->rtt_sub_ns;
	t->ready_window = window;
	t->ready_retry = rm_budget(c, LATE_RETRY_NS);
	t->ready_grace = rm_budget(c, GRACE_READY_NS) + rm_level_wait(c);
	t->ready_deadline = start_mono + t->ready_grace;
	t->ready_retried = false;
	t->ready_fresh = t->n_kids;
	t->ready_open = true;
}

/* Past the deadline and its retry: the silent children lost (their children adopted). */
static void lose_unready(struct ctx *c)
{
	struct rm_tree *t = &c->tree;
	int before = t->n_kids;

	for (int i = 0; i < before; i++) {
		struct rm_kid *k = t->kids[i];

		if (k->lost || k->got_ready)
			continue;
		if (i >= t->ready_fresh)
			rm_kid_lost(c, k,
				    "no word of its attaches within %.1f s of its adoption by rank "
				    "%d (rank %d, its parent, was lost)",
				    (double)rm_budget(c, ADOPT_WAIT_NS) / 1e9, c->rank,
				    k->adopted_from);
		else
			rm_kid_lost(c, k,
				    "its attaches not done within %.1f s after the start "
				    "(retried for %.1f s)",
				    (double)t->ready_grace / 1e9, (double)t->ready_retry / 1e9);
	}
	/* The lost ones' children adopted: their READY is waited for (adopt_until). */
	t->ready_fresh = before;
}

bool rm_tree_ready_poll(struct ctx *c)
{
	struct rm_tree *t = &c->tree;
	uint64_t now;

	if (!t->ready_open)
		return true;
	for (;;) {
		struct rm_kid *k;
		size_t len = 0;
		char *buf;

		rm_tree_service(c);
		k = take_message(c, TAG_READY, &buf, &len);
		if (!buf)
			break;
		/* t3 after the receive: never before the message was there. */
		if (k)
			take_ready(c, k, buf, len, t->ready_window, ra_realtime_ns(),
				   &t->ready_sum);
		free(buf);
	}
	if (!kids_missing(c, false)) {
		t->ready_open = false;
		return true;
	}
	now = ra_monotonic_ns();
	if (now <= t->ready_deadline)
		return false;
	if (!t->ready_retried) {
		say_late(c, false, "word of its attaches", t->ready_retry);
		t->ready_deadline += t->ready_retry;
		t->ready_retried = true;
		return false;
	}
	if (now <= t->adopt_until)
		return false;
	lose_unready(c);
	if (kids_missing(c, false))
		return false; /* adopted ones, owed until adopt_until */
	t->ready_open = false;
	return true;
}

int rm_tree_ready_close(struct ctx *c)
{
	int owed = 0;

	if (!c->tree.ready_open)
		return 0;
	for (int i = 0; i < c->tree.n_kids; i++) {
		struct rm_kid *k = c->tree.kids[i];

		if (k->lost || k->got_ready)
			continue;
		k->ready_owed = true;
		owed++;
		if (c->o.verbose)
			rm_say(c,
			       "rank %d: no word of its attaches by the stop; its records say how "
			       "they went",
			       k->rank);
	}
	c->tree.ready_open = false;
	return owed;
}

/* The notes not told up yet, after buf's first `head` bytes (a new buffer). */
static char *with_notes(struct ctx *c, const void *head, size_t len, size_t *total)
{
	size_t notes = c->tree.n_notes * sizeof(struct rm_lost_note);
	char *buf = malloc(len + notes);

	if (!buf)
		rm_out_of_memory();
	memcpy(buf, head, len);
	if (notes)
		memcpy(buf + len, c->tree.notes, notes);
	*total = len + notes;
	c->tree.n_notes = 0;
	return buf;
}

void rm_tree_ready_up(struct ctx *c, struct rm_ready *sum)
{
	size_t len;
	char *buf;

	sum->n_lost = (int32_t)c->tree.n_notes;
	sum->t1 = c->tree.order_t1;
	sum->t2 = ra_realtime_ns();
	buf = with_notes(c, sum, sizeof(*sum), &len);
	rm_post(c, c->tree.parent, TAG_READY, buf, len);
	keep_sent(&c->tree.last_ready, &c->tree.last_ready_len, &c->tree.last_ready_window, buf,
		  len, c->tree.window);
	free(buf);
}

/* ------------------------------------------------------------------------ */
/* Records up. */

/*
 * While rank 0 waits for records: Open MPI or Slurm ending the job
 * (SIGCONT, SIGTERM; SIGKILL follows) cuts the wait to GRACE_SIGNALLED_NS,
 * so the report is written first. The signal, or 0.
 */
static int cut_short(struct ctx *c, uint64_t *deadline)
{
	int sig = c->rank == 0 ? rm_take_signal(c) : 0;
	uint64_t soon = ra_monotonic_ns() + GRACE_SIGNALLED_NS;

	if (!sig)
		return 0;
	if (!c->interrupted && sig != SIGUSR1)
		c->interrupted = sig;
	if (soon < *deadline)
		*deadline = soon;
	return sig;
}

/* Rank 0: one entry of a bundle from child k. */
static void take_entry(struct ctx *c, const struct rm_kid *k, const struct rm_entry *e,
		       const char *bytes)
{
	if (e->rank <= 0 || e->rank >= c->size || !rm_tree_in_subtree(e->rank, k->rank, c->tree.k))
		return; /* not from below that child */
	if (e->lost) {
		char why[320];

		snprintf(why, sizeof(why), "%.*s", (int)(e->len < sizeof(why) ? e->len : 0), bytes);
		take_note(c, k, e->rank, why, e->lost == 2);
		return;
	}
	if (c->peers[e->rank].got_records || c->peers[e->rank].lost)
		return;
	rm_take_records(c, e->rank, bytes, (size_t)e->len);
}

/* Child k's bundle: checked, its link drained; rank 0 takes its entries, others keep it. */
static void take_bundle(struct ctx *c, struct rm_kid *k, char *buf, size_t len, int32_t window)
{
	struct rm_bundle_head h;
	size_t at = sizeof(h);

	if (k->lost || k->got_records || len < sizeof(h)) {
		free(buf);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.window != window) {
		free(buf);
		return; /* an earlier window's, late */
	}
	drain_link(c, k, h.stops_sent, h.gones_sent);
	/* A resent bundle (an adoption) was stopped by another parent: no t0 here for it. */
	if (window && !k->adopted)
		drift_check(c, k, k->halt_rt, h.t1, h.t2, ra_realtime_ns());
	for (int32_t i = 0; i < h.n; i++) {
		struct rm_entry e;

		if (len - at < sizeof(e))
			break;
		memcpy(&e, buf + at, sizeof(e));
		if (e.len > len - at - sizeof(e))
			break;
		if (c->rank == 0)
			take_entry(c, k, &e, buf + at + sizeof(e));
		at += sizeof(e) + e.len;
	}
	k->got_records = true;
	if (c->rank != 0 && at == len) {
		k->bundle = buf;
		k->bundle_len = len;
		return;
	}
	if (at != len)
		rm_kid_lost(c, k, "its records are cut short (%zu bytes)", len);
	free(buf);
}

/* Children silent at the deadline: lost, and why. */
/* Children silent at the deadline: lost, and why (those adopted from `fresh` on: since then). */
static void lose_silent(struct ctx *c, int cut, uint64_t grace, uint64_t retry, const char *after,
			int fresh)
{
	char more[48] = "";

	if (retry > 1)
		snprintf(more, sizeof(more), " (retried for %.1f s)", (double)retry / 1e9);
	for (int i = 0, n = c->tree.n_kids; i < n; i++) {
		struct rm_kid *k = c->tree.kids[i];

		if (k->lost || k->got_records)
			continue;
		if (i >= fresh && !cut)
			rm_kid_lost(c, k,
				    "no records within %.1f s of its adoption by rank %d (rank %d, "
				    "its parent, was lost)",
				    (double)rm_budget(c, ADOPT_WAIT_NS) / 1e9, c->rank,
				    k->adopted_from);
		else if (cut)
			rm_kid_lost(c, k,
				    "no records by the time the job was being ended (SIG%s on "
				    "rank 0)",
				    sigabbrev_np(cut));
		else
			rm_kid_lost(c, k, "no records within %.1f s %s%s%s", (double)grace / 1e9,
				    after, more,
				    k->ready_owed ? "; no word of its attaches by the stop either"
						  : "");
	}
}

/*
 * Every live child's bundle until since + grace + this level's steps;
 * children silent then are late: retried once, LATE_RETRY_NS (rm_budget)
 * more, unless a signal cut rank 0's wait. Who is still silent is lost.
 */
static void gather_records(struct ctx *c, int32_t window, uint64_t since, uint64_t grace,
			   const char *after)
{
	uint64_t retry = 0, deadline;
	int cut = 0;

	int fresh = c->tree.n_kids, before;

	grace += rm_level_wait(c);
	deadline = since + grace;
	if (ra_monotonic_ns() > deadline) {
		/*
		 * The stop came after the deadline: from an adopter, which waits
		 * ADOPT_WAIT_NS for this rank. Its children get half of that, no retry.
		 */
		grace = rm_budget(c, ADOPT_WAIT_NS) / 2;
		deadline = ra_monotonic_ns() + grace;
		retry = 1;
		after = "after the stop reached this rank (late: an adoption)";
	}
	for (int i = 0; i < c->tree.n_kids; i++) {
		c->tree.kids[i]->got_records = false;
		c->tree.kids[i]->bundle = NULL;
	}
again:
	while (kids_missing(c, true)) {
		struct rm_kid *k;
		size_t len = 0;
		char *buf;
		uint64_t now;

		rm_tree_service(c);
		k = take_message(c, TAG_RECORDS, &buf, &len);
		if (buf) {
			if (k)
				take_bundle(c, k, buf, len, window);
			else
				free(buf);
			continue;
		}
		now = ra_monotonic_ns();
		if (!cut)
			cut = cut_short(c, &deadline);
		if (now > deadline && !cut && !retry) {
			retry = rm_budget(c, LATE_RETRY_NS);
			say_late(c, true, "records", retry);
			deadline += retry;
			continue;
		}
		if (now > deadline && (cut || now > c->tree.adopt_until))
			break;
		rm_tree_nap(c, 100);
	}
	before = c->tree.n_kids;
	lose_silent(c, cut, grace, retry, after, fresh);
	/* The lost ones' children adopted: their records are waited for (adopt_until). */
	if (c->tree.n_kids != before) {
		fresh = before;
		goto again;
	}
}

static size_t put_entry(char *at, int32_t rank, int32_t lost, const void *bytes, size_t len)
{
	struct rm_entry e = {rank, lost, len};

	memcpy(at, &e, sizeof(e));
	memcpy(at + sizeof(e), bytes, len);
	return sizeof(e) + len;
}

void rm_records_up(struct ctx *c, int32_t window, uint64_t since, uint64_t grace)
{
	struct rm_bundle_head h = {.window = window};
	size_t own_len, total, at;
	char *own, *buf;

	gather_records(c, window, since, grace, window ? "after the stop" : "of the start");
	own = rm_pack_records(c, &own_len);
	total = sizeof(h) + sizeof(struct rm_entry) + own_len;
	for (int i = 0; i < c->tree.n_kids; i++)
		if (c->tree.kids[i]->bundle)
			total += c->tree.kids[i]->bundle_len - sizeof(h);
	for (size_t i = 0; i < c->tree.n_notes; i++)
		total += sizeof(struct rm_entry) + strlen(c->tree.notes[i].reason) + 1;
	if (!(buf = malloc(total)))
		rm_out_of_memory();
	at = sizeof(h);
	at += put_entry(buf + at, c->rank, 0, own, own_len);
	h.n = 1;
	free(own);
	for (int i = 0; i < c->tree.n_kids; i++) {
		struct rm_kid *k = c->tree.kids[i];
		struct rm_bundle_head kh;

		if (!k->bundle)
			continue;
		memcpy(&kh, k->bundle, sizeof(kh));
		memcpy(buf + at, k->bundle + sizeof(kh), k->bundle_len - sizeof(kh));
		at += k->bundle_len - sizeof(kh);
		h.n += kh.n;
		free(k->bundle);
		k->bundle = NULL;
	}
	for (size_t i = 0; i < c->tree.n_notes; i++, h.n++)
		at += put_entry(buf + at, c->tree.notes[i].rank, c->tree.notes[i].adopted ? 2 : 1,
				c->tree.notes[i].reason, strlen(c->tree.notes[i].reason) + 1);
	c->tree.n_notes = 0;
	/* Counted after the children's links were drained: those went up first. */
	h.stops_sent = c->tree.up_stops;
	h.gones_sent = c->tree.up_gones;
	h.t1 = c->tree.halt_t1;
	h.t2 = ra_realtime_ns();
	memcpy(buf, &h, sizeof(h));
	rm_post(c, c->tree.parent, TAG_RECORDS, buf, at);
	keep_sent(&c->tree.last_bundle, &c->tree.last_bundle_len, &c->tree.last_bundle_window, buf,
		  at, window);
	free(buf);
}

/*
 * Rank 0: its own records, then every child's bundle; a rank neither in a
 * bundle nor said lost is lost (its parent would have said why).
 */
void rm_collect_records(struct ctx *c, struct rm_node **nodes, size_t *n_nodes, uint64_t since,
			uint64_t grace, const char *after)
{
	int32_t window = (int32_t)c->run.n_w;
	size_t len;
	char *own;

	for (int r = 0; r < c->size; r++)
		c->peers[r].got_records = false;
	own = rm_pack_records(c, &len);
	rm_take_records(c, 0, own, len);
	free(own);
	gather_records(c, window, since, grace, after);
	for (int r = 1; r < c->size; r++) {
		int p = rm_tree_parent(r, c->tree.k);

		if (c->peers[r].lost || c->peers[r].got_records)
			continue;
		rm_mark_lost(c, r, "its records were not in rank %d's (its parent's) bundle", p);
	}
	rm_window_nodes(c, nodes, n_nodes, NULL);
}

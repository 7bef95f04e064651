/* SPDX-License-Identifier: MIT */
/*
 * The flow's ground (flow.h): the children, lost ones and their adoption,
 * the service loop every wait turns, the parent's messages, and orders and
 * stops down the tree.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "flow.h"
#include "tree.h"

void rm_flow_init(struct rm_flow *f, int fanout)
{
	struct rm_flow *t = f;

	t->k = fanout >= RM_FANOUT_MIN ? fanout : RM_FANOUT_DEFAULT;
	t->height = rm_tree_height(f->self->size, t->k);
	t->depth = rm_tree_depth(f->self->rank, t->k);
	t->link->parent = rm_tree_parent(f->self->rank, t->k);
	t->first = rm_tree_first_child(f->self->rank, t->k);
	t->n_kids = rm_tree_children(f->self->rank, t->k, f->self->size);
	t->n_heap = t->cap_kids = t->n_kids;
	t->kids = calloc(t->n_kids ? (size_t)t->n_kids : 1, sizeof(*t->kids));
	if (!t->kids)
		rm_out_of_memory();
	for (int i = 0; i < t->n_kids; i++) {
		if (!(t->kids[i] = calloc(1, sizeof(**t->kids))))
			rm_out_of_memory();
		t->kids[i]->rank = t->first + i;
	}
	if (f->self->rank == 0)
		f->clock = (struct rm_clock){0, 0, 0, true, 0}; /* the reference */
}

struct rm_kid *rm_kid_of(struct rm_flow *f, int r)
{
	long long i = (long long)r - f->first;

	if (r < 0)
		return NULL;
	if (i >= 0 && i < f->n_heap)
		return f->kids[i];
	/* Adopted (a lost child's children): after the own ones. */
	for (int a = f->n_heap; a < f->n_kids; a++)
		if (f->kids[a]->rank == r)
			return f->kids[a];
	return NULL;
}

uint64_t rm_level_wait(const struct rm_flow *f)
{
	int levels = f->height - 1 - f->depth;

	return levels > 0 ? (uint64_t)levels * rm_budget(f->link, LEVEL_STEP_NS) : 0;
}

static void note_lost(struct rm_flow *f, int r, const char *why, bool adopted)
{
	struct rm_flow *t = f;

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
static int adopt(struct rm_flow *f, const struct rm_kid *p)
{
	struct rm_flow *t = f;
	int first = rm_tree_first_child(p->rank, t->k),
	    n = rm_tree_children(p->rank, t->k, f->self->size);
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
		rm_post(f->link, r, TAG_ADOPT, &a, sizeof(a));
	}
	t->adopt_until = ra_monotonic_ns() + rm_budget(f->link, ADOPT_WAIT_NS);
	if (f->verbose)
		rm_say(f->self, "rank %d lost: its %d children adopted by rank %d", p->rank, n,
		       f->self->rank);
	return n;
}

void rm_kid_lost(struct rm_flow *f, struct rm_kid *k, const char *fmt, ...)
{
	bool adopted;
	va_list ap;

	if (k->lost)
		return;
	k->lost = true;
	va_start(ap, fmt);
	vsnprintf(k->lost_reason, sizeof(k->lost_reason), fmt, ap);
	va_end(ap);
	adopted = adopt(f, k) > 0;
	if (f->self->rank == 0) {
		if (adopted)
			rm_mark_lost(f->roster, k->rank, "%s", k->lost_reason);
		else
			rm_lose_subtree(f->roster, k->rank, k->lost_reason);
		return;
	}
	if (f->verbose)
		rm_rank_error(f->self, "child rank %d lost: %s", k->rank, k->lost_reason);
	note_lost(f, k->rank, k->lost_reason, adopted);
}

/* A lost rank below a child, as that child said: rank 0 loses it, others tell it up. */
void rm_take_note(struct rm_flow *f, const struct rm_kid *k, int r, const char *why, bool adopted)
{
	if (!rm_tree_in_subtree(r, k->rank, f->k) || r == k->rank)
		return; /* not below that child: not its to say */
	if (f->self->rank != 0)
		note_lost(f, r, why, adopted);
	else if (adopted)
		rm_mark_lost(f->roster, r, "%s", why);
	else
		rm_lose_subtree(f->roster, r, why);
}

/* ------------------------------------------------------------------------ */
/* Waiting: the parent's pings answered, the children's STOP and GONE sent up. */

void rm_send_up(struct rm_flow *f, int tag, int32_t origin, int32_t value)
{
	struct rm_up m = {origin, value};

	rm_post(f->link, f->link->parent, tag, &m, sizeof(m));
	if (tag == TAG_STOP)
		f->up_stops++;
	else
		f->up_gones++;
}

static void answer_pings(struct rm_flow *f)
{
	for (;;) {
		int flag = 0;
		uint64_t t;

		/* RM_MPI with the parent returns only on success. */
		FLOW_MPI(f, f->link->parent, "from", MPI_Iprobe, f->link->parent, TAG_CLOCK,
			 MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		if (!flag)
			return;
		FLOW_MPI(f, f->link->parent, "from", MPI_Recv, &t, 1, MPI_UINT64_T, f->link->parent,
			 TAG_CLOCK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		t = ra_realtime_ns();
		rm_post(f->link, f->link->parent, TAG_CLOCK, &t, sizeof(t));
		/* Awake for a while: the rest of the exchange measures the link, not naps. */
		f->awake_until = ra_monotonic_ns() + 50 * RA_NS_PER_MS;
	}
}

/* One STOP or GONE from child k, counted; forwarded up (other ranks). */
int rm_take_up(struct rm_flow *f, struct rm_kid *k, int tag, struct rm_up *m)
{
	if (FLOW_MPI(f, k->rank, "from", MPI_Recv, m, sizeof(*m), MPI_BYTE, k->rank, tag,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE))
		return -1;
	rm_count_in(f->link, sizeof(*m));
	if (tag == TAG_STOP)
		k->stops_in++;
	else
		k->gones_in++;
	if (f->self->rank != 0)
		rm_send_up(f, tag, m->origin, m->value);
	return 0;
}

static void relay_up(struct rm_flow *f, int tag)
{
	for (;;) {
		MPI_Status st;
		struct rm_up m;
		struct rm_kid *k;
		int flag = 0;

		if (FLOW_MPI(f, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD,
			     &flag, &st) ||
		    !flag)
			return;
		k = rm_kid_of(f, st.MPI_SOURCE);
		if (!k) {
			/* Not a child's: taken and dropped. */
			FLOW_MPI(f, RM_ANY, "from", MPI_Recv, &m, sizeof(m), MPI_BYTE,
				 st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			continue;
		}
		rm_take_up(f, k, tag, &m);
	}
}

int rm_flow_take_up(struct rm_flow *f, int tag, struct rm_up *m)
{
	for (;;) {
		MPI_Status st;
		struct rm_kid *k;
		int flag = 0;

		if (FLOW_MPI(f, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD,
			     &flag, &st) ||
		    !flag)
			return 0;
		k = rm_kid_of(f, st.MPI_SOURCE);
		if (!k) {
			FLOW_MPI(f, RM_ANY, "from", MPI_Recv, m, sizeof(*m), MPI_BYTE,
				 st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			continue;
		}
		if (rm_take_up(f, k, tag, m) || m->origin < 0 || m->origin >= f->self->size)
			continue;
		return 1;
	}
}

/* A copy of what went up last (buf, len), for an adopter. */
void rm_keep_sent(char **keep, size_t *keep_len, int32_t *keep_w, const void *buf, size_t len,
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
static void take_adopt(struct rm_flow *f)
{
	struct rm_flow *t = f;
	struct rm_adopt a;
	MPI_Status st;
	int flag = 0;

	if (FLOW_MPI(f, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, TAG_ADOPT, MPI_COMM_WORLD,
		     &flag, &st) ||
	    !flag)
		return;
	if (FLOW_MPI(f, RM_ANY, "from", MPI_Recv, &a, sizeof(a), MPI_BYTE, st.MPI_SOURCE, TAG_ADOPT,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE) ||
	    st.MPI_SOURCE == t->link->parent || st.MPI_SOURCE == f->self->rank ||
	    !rm_tree_in_subtree(f->self->rank, st.MPI_SOURCE, t->k))
		return; /* not from an ancestor */
	fprintf(stderr,
		"rocattach-mpi[%s:%d] warning: rank %d (this rank's parent) was lost: rank %d "
		"adopted this rank\n",
		f->self->host, f->self->rank, a.lost, st.MPI_SOURCE);
	t->link->parent = st.MPI_SOURCE;
	/* A new link: its counts start again (what went to the lost one is gone). */
	t->up_stops = t->up_gones = 0;
	if (a.window != t->window)
		return;
	if (t->last_ready && t->last_ready_window == t->window)
		rm_post(f->link, t->link->parent, TAG_READY, t->last_ready, t->last_ready_len);
	if (t->last_bundle && t->last_bundle_window == t->window) {
		struct rm_bundle_head h;

		/* No STOP or GONE on this link yet. */
		memcpy(&h, t->last_bundle, sizeof(h));
		h.stops_sent = h.gones_sent = 0;
		h.t1 = 0; /* the stop it answered came from the lost parent */
		memcpy(t->last_bundle, &h, sizeof(h));
		rm_post(f->link, t->link->parent, TAG_RECORDS, t->last_bundle, t->last_bundle_len);
	}
	if (a.has_halt && !t->have_halt) {
		t->adopted_halt = a.halt;
		t->adopt_halt = true;
	}
}

void rm_flow_window(struct rm_flow *f, int32_t window)
{
	f->window = window;
	f->have_halt = f->adopt_halt = false;
	f->halt_t1 = 0;
}

bool rm_flow_adopted_halt(struct rm_flow *f, struct rm_halt *m)
{
	if (!f->adopt_halt)
		return false;
	*m = f->adopted_halt;
	f->adopt_halt = false;
	return true;
}

void rm_flow_service(struct rm_flow *f)
{
	rm_flow_settle(f);
	if (f->self->rank == 0)
		return;
	take_adopt(f);
	answer_pings(f);
	if (f->n_kids) {
		relay_up(f, TAG_STOP);
		relay_up(f, TAG_GONE);
	}
}

void rm_flow_nap(struct rm_flow *f, unsigned us)
{
	if (ra_monotonic_ns() > f->awake_until)
		usleep(us);
}

int rm_await_parent(struct rm_flow *f, int tag, void *buf, size_t len, uint64_t deadline)
{
	for (;;) {
		int flag = 0, p;

		rm_flow_service(f);
		if (tag == TAG_HALT && len == sizeof(struct rm_halt) &&
		    rm_flow_adopted_halt(f, buf))
			return 0;
		p = f->link->parent; /* an adoption changes it */
		FLOW_MPI(f, p, "from", MPI_Iprobe, p, tag, MPI_COMM_WORLD, &flag,
			 MPI_STATUS_IGNORE);
		if (flag) {
			FLOW_MPI(f, p, "from", MPI_Recv, buf, (int)len, MPI_BYTE, p, tag,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			return 0;
		}
		if (ra_monotonic_ns() > deadline)
			return -1;
		rm_flow_nap(f, 500);
	}
}

/*
 * The link records the peers whose calls failed (link.h); here, outside any
 * pass over the outbox, each child among them is lost. A failure with
 * another rank (not a child: a message from a stranger) is said once.
 */
void rm_flow_settle(struct rm_flow *f)
{
	char msg[sizeof(((struct rm_failed *)0)->msg)];
	struct rm_kid *k;
	int r;

	while (rm_link_failed(f->link, &r, msg, sizeof(msg))) {
		if ((k = rm_kid_of(f, r))) {
			rm_kid_lost(f, k, "%s", msg);
			continue;
		}
		if (!f->link->any_said)
			rm_rank_error(f->self, "%s (said once; ranks that stay silent are lost)",
				      msg);
		f->link->any_said = true;
	}
}

/* ------------------------------------------------------------------------ */
/* Down the tree. */

void rm_flow_orders(struct rm_flow *f, const struct rm_order *o)
{
	for (int i = 0; i < f->n_kids; i++) {
		struct rm_kid *k = f->kids[i];
		struct rm_order mine = *o;

		if (k->lost)
			continue;
		mine.clock = rm_clock_compose(&f->clock, &k->clock);
		mine.sent_rt = k->order_rt = ra_realtime_ns();
		rm_post(f->link, k->rank, TAG_ORDER, &mine, sizeof(mine));
	}
}

void rm_flow_halts(struct rm_flow *f, const struct rm_halt *m)
{
	f->halt = *m;
	f->have_halt = true;
	for (int i = 0; i < f->n_kids; i++) {
		struct rm_kid *k = f->kids[i];
		struct rm_halt mine = *m;

		if (k->lost)
			continue;
		mine.sent_rt = k->halt_rt = ra_realtime_ns();
		rm_post(f->link, k->rank, TAG_HALT, &mine, sizeof(mine));
	}
}

/* ------------------------------------------------------------------------ */
/* What the waits up the tree share. */

size_t rm_kids_missing(const struct rm_flow *f, bool records)
{
	size_t n = 0;

	for (int i = 0; i < f->n_kids; i++) {
		const struct rm_kid *k = f->kids[i];

		n += !k->lost && !(records ? k->got_records : k->got_ready);
	}
	return n;
}

void rm_say_late(struct rm_flow *f, bool records, const char *what, uint64_t retry)
{
	for (int i = 0; i < f->n_kids && f->verbose; i++) {
		const struct rm_kid *k = f->kids[i];

		if (!k->lost && !(records ? k->got_records : k->got_ready))
			rm_say(f->self, "rank %d late: no %s yet; retrying for %.1f s", k->rank,
			       what, (double)retry / 1e9);
	}
}

/* A message of tag from any rank, whole, into a new buffer: its child, or NULL. */
struct rm_kid *rm_take_message(struct rm_flow *f, int tag, char **buf, size_t *len)
{
	MPI_Status st;
	int flag = 0, n = 0;

	*buf = NULL;
	if (FLOW_MPI(f, RM_ANY, "from", MPI_Iprobe, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag,
		     &st) ||
	    !flag)
		return NULL;
	if (FLOW_MPI(f, st.MPI_SOURCE, "from", MPI_Get_count, &st, MPI_BYTE, &n) || n < 0)
		return NULL;
	*buf = malloc(n ? (size_t)n : 1);
	if (!*buf)
		rm_out_of_memory();
	if (FLOW_MPI(f, st.MPI_SOURCE, "from", MPI_Recv, *buf, n, MPI_BYTE, st.MPI_SOURCE, tag,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE)) {
		free(*buf);
		*buf = NULL;
		return NULL;
	}
	rm_count_in(f->link, (size_t)n);
	*len = (size_t)n;
	return rm_kid_of(f, st.MPI_SOURCE);
}

/*
 * The drift check, on the order and the READY, and on the stop and the
 * records (no message of its own): t0 the order's (stop's) send here, t1
 * its receipt there, t2 the READY's (records') send there, t3 its receipt
 * here (rm_clock_drift). A check whose interval misses the stored
 * estimate's marks the child for a new exchange before the next order.
 */
void rm_flow_drift(struct rm_flow *f, struct rm_kid *k, uint64_t t0, uint64_t t1, uint64_t t2,
		   uint64_t t3)
{
	int64_t off = 0, bound = 0;
	enum rm_drift d = rm_clock_drift(&k->clock, ra_monotonic_ns() - k->measured_mono, t0, t1,
					 t2, t3, &off, &bound);

	if (d == RM_DRIFT_NONE)
		return;
	k->clock_stale = true;
	if (d == RM_DRIFT_MOVED && f->verbose)
		rm_say(f->self,
		       "rank %d's clock moved: %.3f ms within %.3f ms, was %.3f ms; measured "
		       "again before the next window",
		       k->rank, (double)off / 1e6, (double)bound / 1e6,
		       (double)k->clock.offset_ns / 1e6);
}

void rm_flow_free(struct rm_flow *f)
{
	for (int i = 0; i < f->n_kids; i++)
		free(f->kids[i]);
	free(f->kids);
	free(f->last_ready);
	free(f->last_bundle);
	free(f->notes);
}

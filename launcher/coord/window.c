/* SPDX-License-Identifier: MIT */
/*
 * What a window does on every rank (window.h): its frame, the attaches and
 * detaches on a helper thread while signals are answered, --stacks' files,
 * and the watch on this node's targets.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rocattach/tool.h>

#include "common/clock.h"
#include "rocprofv3_opts.h"
#include "window.h"

/*
 * The automatic start lead. The first window's: nothing of an attach is
 * measured yet, so the larger of a base plus a cost per target on the
 * busiest node, and LEAD_ROOM times the start-up survey's slowest node's
 * probe of its targets (each target's objects read, one after another:
 * the lookup an attach needs, and a measure of how busy the node is), plus
 * LEAD_MARGIN_NS. Later windows take the time the last one's attaches
 * needed to be ready in every target (measured), with room: LEAD_ROOM
 * times it plus LEAD_MARGIN_NS. Never less than LEAD_MIN_NS nor more than
 * LEAD_MAX_NS.
 */
#define LEAD_BASE_NS 150000000ull
#define LEAD_PER_TARGET_NS 3000000ull
#define LEAD_ROOM 3
#define LEAD_MARGIN_NS 30000000ull
#define LEAD_MIN_NS 50000000ull
#define LEAD_MAX_NS 3000000000ull

/* A time of rank 0's clock in this rank's. */
uint64_t rm_win_local_ns(const struct rm_win *w, uint64_t root_ns)
{
	return (uint64_t)((int64_t)root_ns + w->flow->clock.applied_ns);
}

/*
 * The window's frame (launcher/coord/messages.h): a CLOCK_REALTIME time of this window as
 * CLOCK_MONOTONIC, and back. Unsigned wrap-around keeps times before the
 * frame's start right.
 */
uint64_t rm_win_mono(const struct rm_win *w, uint64_t rt_ns)
{
	return w->frame_mono + (rt_ns - w->frame_rt);
}

uint64_t rm_win_rt(const struct rm_win *w, uint64_t mono_ns)
{
	return w->frame_rt + (mono_ns - w->frame_mono);
}

/* Take the frame at the start time rt_ns (once per window, on its start's receipt). */
void rm_win_set_frame(struct rm_win *w, uint64_t rt_ns)
{
	w->frame_rt = w->part->frame_rt = rt_ns;
	w->frame_mono = ra_monotonic_of_realtime(rt_ns);
}

/* How long before the start the attaches are sent (the start lead). */
uint64_t rm_win_start_lead(const struct rm_win *w, char *why, size_t len)
{
	uint64_t first = LEAD_BASE_NS + LEAD_PER_TARGET_NS * w->max_targets, lead;
	uint64_t probe = LEAD_ROOM * w->survey_probe_ns + LEAD_MARGIN_NS;
	char none[1];

	if (!why) {
		why = none;
		len = sizeof(none);
	}
	if (w->o->start_lead_ms >= 0) {
		snprintf(why, len, "--start-lead %lld", w->o->start_lead_ms);
		return (uint64_t)w->o->start_lead_ms * RA_NS_PER_MS;
	}
	if (w->ready_ns) {
		lead = LEAD_ROOM * w->ready_ns + LEAD_MARGIN_NS;
		snprintf(why, len, "3 x the last window's attaches ready in %.1f ms, + 30 ms",
			 (double)w->ready_ns / 1e6);
	} else if (probe > first) {
		lead = probe;
		snprintf(why, len,
			 "3 x the start-up's slowest probe of a node's targets (%.1f ms), + 30 ms",
			 (double)w->survey_probe_ns / 1e6);
	} else {
		lead = first;
		snprintf(why, len, "150 ms + 3 ms x %zu targets on the busiest node",
			 w->max_targets);
	}
	if (lead > LEAD_MAX_NS)
		snprintf(why + strlen(why), len - strlen(why), ", capped at %.0f ms",
			 (double)LEAD_MAX_NS / 1e6);
	return lead < LEAD_MIN_NS ? LEAD_MIN_NS : lead > LEAD_MAX_NS ? LEAD_MAX_NS : lead;
}

static struct rn_pool_opts pool_opts(const struct rm_win *w)
{
	struct rn_pool_opts p = {.tools = w->o->tools,
				 .inject = w->o->inject,
				 .late_start = w->o->late_start,
				 .call_timeout_ms = (unsigned)w->o->call_timeout_ms};

	if (rm_stacks_on(w->o) && w->part->stacks.dir[0]) {
		p.env_of = rm_stacks_env_of; /* a folder per target user */
		p.env_arg = (void *)&w->part->stacks;
	}
	/* rocprofv3's variables go (rank 0's plan): each target gets its own ROCPROF_ATTACH_PID. */
	p.attach_pid_env = getenv(RP3_OPTIONS_ENV) != NULL;
	/* For a common start, every attach must be in flight before T: one worker per target. */
	p.jobs = w->o->jobs ? w->o->jobs : (int)(w->self->n ? w->self->n : 1);
	return p;
}

/*
 * --stacks without a directory for the tool's files: nothing is attached
 * (the tool would write into each target's working directory); each
 * target fails with the reason.
 */
static struct rm_ready stacks_unattached(struct rm_win *w)
{
	struct rm_ready r = {0};

	for (size_t i = 0; i < w->self->n; i++) {
		struct rn_target *t = &w->self->t[i];

		if (t->state != RN_FOUND && t->state != RN_DETACHED)
			continue;
		t->state = RN_ATTACH_FAILED;
		t->status = ROCATTACH_STATUS_ERROR;
		snprintf(t->message, sizeof(t->message), "not attached: %s", w->part->stacks_error);
	}
	return r;
}

/* The window's planned end: its start + the duration; 0 without one (until a stop). */
uint64_t rm_win_planned_end(const struct rm_win *w, uint64_t start_ns)
{
	return w->o->duration_ms >= 0 ? start_ns + (uint64_t)w->o->duration_ms * RA_NS_PER_MS : 0;
}

/* Other ranks: is the window's planned end (else its --max-window) past already? */
static bool window_over(const struct rm_win *w)
{
	uint64_t end = rm_win_planned_end(w, w->frame_mono);

	if (!end)
		end = w->frame_mono + (uint64_t)w->o->max_window_ms * RA_NS_PER_MS;
	return ra_monotonic_ns() > end;
}

/*
 * Other ranks: the window's planned end passed before its attaches went
 * out (this rank was stopped, SIGSTOP, or starved past it; its parent has
 * lost it, or will). Attaching now would put the tool in after the window.
 */
__attribute__((noreturn)) static void too_late(struct rm_win *w)
{
	rm_leave(w->self,
		 "window %d's planned end passed before its attaches were due to go out "
		 "(this rank was stopped or starved): nothing attached; ending (exit %d)",
		 w->flow->window, RM_EXIT_LOST);
}

/* The targets this window's attaches go to (node/pool.c: found, or detached before). */
static bool *tried_now(const struct rm_win *w)
{
	bool *v = calloc(w->self->n, sizeof(*v));

	for (size_t i = 0; v && i < w->self->n; i++)
		v[i] = w->self->t[i].state == RN_FOUND || w->self->t[i].state == RN_DETACHED;
	return v;
}

/*
 * A target this window tried that did not attach, by cause. Held: another
 * attacher has it (our agent's EXCESS_API_INSTANCES, or a tracer on ROCm's
 * listener: both PTRACE_OPERATION_NOT_PERMITTED). Differ: the tool list
 * (agent and ROCm: INVALID_ARGUMENT, 8) or rocprofv3's options
 * (node/rp3_state.c) are not the first attach's.
 */
static void count_refusal(const struct rm_win *w, const struct rn_target *t, struct rm_ready *r)
{
	if (t->state == RN_ATTACHED || t->state == RN_LATE_STARTED)
		return;
	if (t->state == RN_EXITED) {
		r->gone++;
		return;
	}
	if (t->state == RN_DECLINED) {
		r->declined++;
		return;
	}
	if (t->status == ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED) {
		r->held++;
		return;
	}
	/* ROCm's 8, our agent's words, or librocattach's refusal before any ptrace. */
	if (t->agent_status == ROCATTACH_REGISTER_INVALID_ARGUMENT ||
	    strstr(t->message, " was first attached with ") ||
	    strstr(t->message, "keeps the tool path of its first attach")) {
		r->differ++;
		return;
	}
	r->other++;
	r->tool_failed += rn_tool_failed(t);
	/* Without --inject a target without a listener can never attach (a late start needs none).
	 */
	r->no_listener +=
	    t->state == RN_ATTACH_FAILED && !t->listener && !w->o->inject && !w->o->late_start;
}

/* when: the start and the send time, in this rank's clock. Returns how the attaches went. */
struct rm_ready rm_win_attach(struct rm_win *w, const uint64_t when[2])
{
	struct rm_ready r = {0};
	struct rn_pool_opts p;
	uint64_t stop;
	bool *tried;
	int short_by;

	if (rm_stacks_on(w->o) && w->part->worker && w->self->n && !w->part->stacks.dir[0] &&
	    !w->part->stacks_error[0] &&
	    rm_stacks_prepare(&w->part->stacks, w->o->sample_hz, w->self->t, w->self->n,
			      w->part->stacks_error, sizeof(w->part->stacks_error)))
		rm_rank_error(w->self, "%s", w->part->stacks_error);
	ra_sleep_until_monotonic(rm_win_mono(w, when[1]));
	if (w->self->rank != 0 && window_over(w))
		too_late(w);
	if (!w->part->worker || !w->self->n)
		return r;
	if (rm_stacks_on(w->o) && w->part->stacks_error[0])
		return stacks_unattached(w);
	/* Who went since the last look is not attached again (and its GONE is due). */
	rn_watch_mark(w->part->watch, w->self->t, w->self->n);
	tried = tried_now(w);
	p = pool_opts(w);
	p.start_ns = when[0];
	stop = rm_win_planned_end(w, w->frame_mono);
	/* Each target keeps its own end: the planned stop + --call-timeout, if -d is given. */
	p.planned_stop_ns = rm_win_planned_end(w, when[0]);
	short_by = rm_attaches(w, &p, w->frame_mono, stop ? stop - STOP_MARGIN_NS : 0);
	if (short_by)
		fprintf(stderr,
			"rocattach-mpi[%s:%d] warning: %d of the %d attach workers could not be "
			"started (thread limits: ulimit -u, kernel.threads-max): fewer attaches "
			"were in flight at once, and some may have begun after the start time\n",
			w->self->host, w->self->rank, short_by, rn_pool_jobs(&p, w->self->n));
	/* A target still in its attach call counts as pending: its record is its worker's. */
	r.pending = (int32_t)rm_attach_pending(w);
	for (size_t i = 0; i < w->self->n; i++) {
		const struct rn_target *t = &w->self->t[i];

		if (!rm_attach_returned(w, i))
			continue;
		if (t->attach_ready_ns > when[1] && t->attach_ready_ns - when[1] > r.ready_ns)
			r.ready_ns = t->attach_ready_ns - when[1];
		r.attached += t->state == RN_ATTACHED;
		if (tried && tried[i])
			count_refusal(w, t, &r);
	}
	free(tried);
	return r;
}

/* --stacks: this node's files, read and named, become its folded lines; then removed. */
void rm_win_stacks_fold(struct rm_win *w)
{
	if (!rm_stacks_on(w->o) || !w->part->worker)
		return;
	rm_stacks_fold(&w->part->stacks, w->self->host, w->self->t, w->self->n,
		       w->part->stacks_error, w->o->stacks, w->o->sample_hz > 0,
		       w->o->sample_hz > 0 && (w->o->trace || w->o->pprof || w->o->speedscope));
	rm_stacks_cleanup(&w->part->stacks);
}

/* The detach calls go out at once; the library keeps every hand-back to stop_ns. */

void rm_win_detach(struct rm_win *w, uint64_t stop_ns)
{
	struct rn_pool_opts p;

	if (!w->part->worker || !w->self->n) {
		ra_sleep_until_monotonic(rm_win_mono(w, stop_ns));
		return;
	}
	p = pool_opts(w);
	p.stop_ns = stop_ns;
	rm_detaches(w, &p);
}

/*
 * Workers: once every target of the node is gone, rank 0 hears it once
 * (rank 0 counts its own node directly).
 */
void rm_win_watch_job(struct rm_win *w)
{
	int32_t one = 1;

	/* While attach calls run, their records are their workers': only counted. */
	if (!w->part->watch || w->gone_told ||
	    (w->self->win ? rn_watch_alive(w->part->watch)
			  : rn_watch_mark(w->part->watch, w->self->t, w->self->n)))
		return;
	w->gone_told = true;
	if (w->self->rank == 0) {
		w->nodes_alive--;
		return;
	}
	rm_send_up(w->flow, TAG_GONE, w->self->rank, one);
	w->part->gones_sent++;
}

/* The next look of a hold: sooner while READYs are owed (they are taken then). */
uint64_t rm_win_hold_wake(const struct rm_win *w, uint64_t wake)
{
	uint64_t soon = ra_monotonic_ns() + 5 * RA_NS_PER_MS;

	if (!w->flow->ready_open)
		return wake;
	return wake && wake < soon ? wake : soon;
}

/*
 * With rocprofv3's synchronous output (--attach-sync-output), each tool
 * writes its output inside tool_detach, so a node's detach calls, and its
 * records, come up to --call-timeout later than without: the user raises
 * --call-timeout for big outputs. The waits on a node's records (rank 0's
 * after the stop, the other ranks' for rank 0's next order) grow by that much.
 */
uint64_t rm_win_output_wait(const struct rm_win *w)
{
	return rp3_sync_output() ? (uint64_t)w->o->call_timeout_ms * RA_NS_PER_MS : 0;
}

void rm_win_take_cut(struct rm_win *w)
{
	if (!w->interrupted && w->flow->cut_signal)
		w->interrupted = w->flow->cut_signal;
}

/*
 * A node whose attach calls had not all returned when it sent its word of
 * them (window_calls.c) sends its records once they have, each by its
 * deadline: up to --call-timeout after the stop. The waits on a subtree
 * that said so grow by that much, and so do the waits on one whose word was
 * still owed at the stop: its word may say so too late to be heard (it may
 * be inside its calls), so it is taken as saying so.
 */
uint64_t rm_win_calls_wait(const struct rm_win *w)
{
	if (!w->flow->ready_sum.pending && !w->flow->ready_sum.owed && !rm_attach_pending(w))
		return 0;
	return (uint64_t)w->o->call_timeout_ms * RA_NS_PER_MS;
}

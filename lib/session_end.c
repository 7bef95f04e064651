/* SPDX-License-Identifier: MIT */
/*
 * Each target keeps its own end. An attach with a planned stop tells the
 * target side (our agent through ROCP_ATTACH_END_NS, librocattach-watchdog
 * through its call's end_ns) by when a detach must come; if none has by
 * then, the target side detaches its tools by itself and notes when in its
 * window record (RA_AGENT_WINDOW, RA_WATCHDOG_WINDOW: the number of the last
 * window opened, and when it closed that one itself). This room reads that
 * record from the target's memory, without stopping it, and says what it
 * found: after an attach (the window's number, kept in the session), before
 * a detach (the window is closed already: no call is made, the detach
 * fails saying when and why), and before the next attach (the previous
 * window ended that way: said once).
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "common/clock.h"
#include "log.h"
#include "target_memory.h"
#include "session.h"

/*
 * Where s's target side keeps its window record, 0 if it keeps none (an
 * older agent or watchdog; ROCm's side without our watchdog).
 */
static uint64_t window_addr(const struct session *s)
{
	if (s->ep.side == ROCATTACH_SIDE_AGENT)
		return s->ep.agent[AGENT_WINDOW];
	return s->ep.wd_window;
}

/* The record: [0] the last window's number, [1] when the target closed it itself. 0, or -1. */
static int window_read(const struct session *s, uint64_t v[2])
{
	struct ra_err ignore = {0};
	uint64_t addr = window_addr(s);

	if (!addr || ra_mem_read(s->pid, addr, v, 2 * sizeof(*v), &ignore))
		return -1;
	return 0;
}

/* "14:03:07.254", local time, of a CLOCK_REALTIME ns. */
static const char *clock_text(uint64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / RA_NS_PER_SEC);
	struct tm tm;
	char hms[16];

	if (!localtime_r(&sec, &tm) || !strftime(hms, sizeof(hms), "%H:%M:%S", &tm))
		snprintf(hms, sizeof(hms), "?");
	snprintf(buf, len, "%s.%03u", hms, (unsigned)(ns % RA_NS_PER_SEC / RA_NS_PER_MS));
	return buf;
}

/* "1234 ms after the planned stop" of a self-detach at at_ns, or "" when not known. */
static const char *after_stop(uint64_t at_ns, uint64_t planned_ns, char *buf, size_t len)
{
	int64_t d = ra_ns_diff(at_ns, planned_ns);

	buf[0] = '\0';
	if (ra_ns_known(d))
		snprintf(buf, len, ", %lld ms after the planned stop",
			 (long long)(d / (int64_t)RA_NS_PER_MS));
	return buf;
}

void ra_end_after_attach(struct session *s, const rocattach_opts_t *o)
{
	uint64_t v[2];

	s->planned_stop_ns = o->planned_stop_ns;
	/* On ROCm's side only an attach through the watchdog opened its window. */
	if (s->ep.side == ROCATTACH_SIDE_ROCM && !s->watched)
		s->window = 0;
	else
		s->window = window_read(s, v) ? 0 : v[0];
}

void ra_end_before_attach(struct session *s, struct op *op)
{
	char at[32];
	uint64_t v[2];

	if (window_read(s, v) || !v[1] || !ra_lookup_told_window(s->pid, s->starttime, v[0]))
		return;
	op->rep.flags |= ROCATTACH_REPORT_SELF_DETACHED;
	op->rep.self_detach_ns = v[1];
	ra_warn("process %d: its previous window ended without a detach: the target detached "
		"its tools itself at %s, when no detach had come by the planned stop plus the "
		"call deadline",
		s->pid, clock_text(v[1], at, sizeof(at)));
}

/*
 * s's window closed by the target itself (or closed, and another opened
 * since): the report says it, op->e the detach's failure. 0 if it is open.
 */
static int window_closed(struct session *s, const uint64_t v[2], struct op *op)
{
	char at[32], after[64];

	if (v[0] == s->window && !v[1])
		return 0;
	op->rep.flags |= ROCATTACH_REPORT_SELF_DETACHED;
	if (v[0] != s->window)
		return ra_err_reset(&op->e, ROCATTACH_STATUS_ERROR,
				    "process %d: its window was closed without this detach (the "
				    "target detached its tools itself: no detach came by the "
				    "planned stop plus the call deadline), and another attacher "
				    "has opened a window since: not detached",
				    s->pid);
	op->rep.self_detach_ns = v[1];
	(void)ra_lookup_told_window(s->pid, s->starttime, v[0]);
	return ra_err_reset(&op->e, ROCATTACH_STATUS_ERROR,
			    "process %d: the target detached its tools itself at %s%s: no "
			    "detach came by then (the planned stop plus the call deadline); "
			    "this detach came late",
			    s->pid, clock_text(v[1], at, sizeof(at)),
			    after_stop(v[1], s->planned_stop_ns, after, sizeof(after)));
}

int ra_end_before_detach(struct session *s, struct op *op)
{
	uint64_t v[2];

	if (!s->window || window_read(s, v))
		return 0;
	return window_closed(s, v, op) ? -ECANCELED : 0;
}

int ra_end_after_failed_detach(struct session *s, struct op *op)
{
	return op->rep.agent_status ? ra_end_before_detach(s, op) : 0;
}

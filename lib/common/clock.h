/* SPDX-License-Identifier: MIT */
/*
 * Clocks, in one place for every layer (libc only). Times that cross a
 * process boundary (start and stop times, tool records) are CLOCK_REALTIME
 * nanoseconds; durations, timeouts and deadlines inside one process use
 * CLOCK_MONOTONIC, so that a step of the wall clock (NTP, an admin) neither
 * cuts a wait short nor stretches it.
 */
#ifndef RA_COMMON_CLOCK_H
#define RA_COMMON_CLOCK_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define RA_NS_PER_SEC 1000000000ull
#define RA_NS_PER_MS 1000000ull

static inline uint64_t ra_ns_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * RA_NS_PER_SEC + (uint64_t)ts->tv_nsec;
}

static inline struct timespec ra_timespec_of(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / RA_NS_PER_SEC), (long)(ns % RA_NS_PER_SEC)};

	return ts;
}

static inline uint64_t ra_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ra_ns_of(&ts);
}

/*
 * Differences of times, signed and checked: never an unsigned wrap (a stop
 * before its start printed as 18446744073610.7 ms). RA_NS_UNKNOWN stands for
 * a difference that is not known: a time is missing (0) or the difference
 * does not fit. Say it as a plain word ("unknown"), or null with a reason
 * in JSON, never as a number.
 */
#define RA_NS_UNKNOWN INT64_MIN

static inline bool ra_ns_known(int64_t d)
{
	return d != RA_NS_UNKNOWN;
}

/* later - earlier in ns (negative if later is earlier), or RA_NS_UNKNOWN. */
static inline int64_t ra_ns_diff(uint64_t later, uint64_t earlier)
{
	uint64_t d;

	if (!later || !earlier)
		return RA_NS_UNKNOWN;
	d = later >= earlier ? later - earlier : earlier - later;
	if (d > (uint64_t)INT64_MAX)
		return RA_NS_UNKNOWN;
	return later >= earlier ? (int64_t)d : -(int64_t)d;
}

/*
 * A duration from earlier to later: 0 to max ns, else RA_NS_UNKNOWN (a time
 * missing, the end before the start, or longer than anything measured can
 * be: max, e.g. the longest window, 7 days).
 */
static inline int64_t ra_ns_span(uint64_t later, uint64_t earlier, uint64_t max)
{
	int64_t d = ra_ns_diff(later, earlier);

	return ra_ns_known(d) && d >= 0 && (uint64_t)d <= max ? d : RA_NS_UNKNOWN;
}

/* Wall-clock time, the clock of every time that leaves this process. */
static inline uint64_t ra_realtime_ns(void)
{
	return ra_clock_ns(CLOCK_REALTIME);
}

/* For durations: never jumps. */
static inline uint64_t ra_monotonic_ns(void)
{
	return ra_clock_ns(CLOCK_MONOTONIC);
}

/*
 * The CLOCK_MONOTONIC time at which CLOCK_REALTIME reads rt_ns, as the two
 * clocks stand now: a deadline given as a wall-clock time is turned into
 * one that a later step of the wall clock does not move (convert it once,
 * when it is received, and wait on the result).
 */
static inline uint64_t ra_monotonic_of_realtime(uint64_t rt_ns)
{
	uint64_t rt = ra_realtime_ns(), mono = ra_monotonic_ns();

	if (rt_ns >= rt)
		return mono + (rt_ns - rt);
	return rt - rt_ns < mono ? mono - (rt - rt_ns) : 0;
}

/* Sleep until CLOCK_MONOTONIC reaches ns (at once if it has); signals do not cut it short. */
static inline void ra_sleep_until_monotonic(uint64_t ns)
{
	struct timespec ts = ra_timespec_of(ns);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Sleep until CLOCK_REALTIME reaches ns (at once if it has); signals do not cut it short. */
static inline void ra_sleep_until_realtime(uint64_t ns)
{
	struct timespec ts = ra_timespec_of(ns);

	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

#endif

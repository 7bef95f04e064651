/* SPDX-License-Identifier: MIT */
/*
 * Per-call error: a status and a message that names the step, pid and cause.
 * Every failure is kept: the first sets the status and opens the message,
 * each later one (a restore that failed after the call did) is appended as
 * "; then <message>", as far as ROCATTACH_MESSAGE_MAX allows ("..." marks a
 * cut). A later failure that is only a consequence of the first (the same
 * gone thread failing again) is the caller's not to report.
 */
#ifndef RA_ERR_H
#define RA_ERR_H

#include <rocattach/rocattach.h>

/* On functions whose result says whether the target was left as it should be. */
#ifndef RA_MUST_CHECK
#define RA_MUST_CHECK __attribute__((warn_unused_result))
#endif

struct ra_err {
	rocattach_status_t status;
	char msg[ROCATTACH_MESSAGE_MAX];
};

/*
 * Record a failure (printf format): the first sets status and message, a
 * later one is appended to the message. Returns the status of the first.
 */
rocattach_status_t ra_err_set(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Replace whatever was recorded (a message rewritten with what the caller knows). */
rocattach_status_t ra_err_reset(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ra_err_clear(struct ra_err *e);
/* Set e and give -1: a refusal. */
#define RA_REFUSE(e, st, ...) (ra_err_set((e), (st), __VA_ARGS__), -1)
/* Add to the message as it is (printf format), status unchanged, as far as it fits. */
void ra_err_note(struct ra_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* errno of a failed ptrace request -> status (EPERM 5, ESRCH 6, other 4). */
rocattach_status_t ra_status_from_ptrace_errno(int err);

#endif

/* SPDX-License-Identifier: MIT */
/* Per-call error: a status and a message that names the step, pid and cause. */
#ifndef RA_ERR_H
#define RA_ERR_H

#include <rocattach/rocattach.h>

struct ra_err {
	rocattach_status_t status;
	char msg[ROCATTACH_MESSAGE_MAX];
};

/* Set status and message (printf format). Returns status. Keeps the first error. */
rocattach_status_t ra_err_set(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Same, overwriting an earlier error. */
rocattach_status_t ra_err_reset(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ra_err_clear(struct ra_err *e);

/* errno of a failed ptrace request -> status (EPERM 5, ESRCH 6, other 4). */
rocattach_status_t ra_status_from_ptrace_errno(int err);

#endif

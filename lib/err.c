/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

#define THEN "; then "
#define CUT "..."

/* "..." at the end of e->msg, where there is room, else over its last characters. */
static void mark_cut(struct ra_err *e)
{
	size_t at = strlen(e->msg);

	if (at > sizeof(e->msg) - sizeof(CUT))
		at = sizeof(e->msg) - sizeof(CUT);
	memcpy(e->msg + at, CUT, sizeof(CUT));
}

/* Append a later failure to e->msg; a message cut short ends in "...". */
__attribute__((format(printf, 2, 0))) static void append(struct ra_err *e, const char *fmt,
							 va_list ap)
{
	size_t used = strlen(e->msg);
	int n;

	if (sizeof(e->msg) - used <= sizeof(THEN)) {
		mark_cut(e);
		return;
	}
	memcpy(e->msg + used, THEN, sizeof(THEN));
	used += sizeof(THEN) - 1;
	n = vsnprintf(e->msg + used, sizeof(e->msg) - used, fmt, ap);
	if (n < 0 || (size_t)n >= sizeof(e->msg) - used)
		mark_cut(e);
}

rocattach_status_t ra_err_set(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return status;
	va_start(ap, fmt);
	if (e->status == ROCATTACH_STATUS_SUCCESS) {
		e->status = status;
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	} else {
		append(e, fmt, ap);
	}
	va_end(ap);
	return e->status;
}

rocattach_status_t ra_err_reset(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return status;
	va_start(ap, fmt);
	e->status = status;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return status;
}

void ra_err_clear(struct ra_err *e)
{
	e->status = ROCATTACH_STATUS_SUCCESS;
	e->msg[0] = '\0';
}

void ra_err_note(struct ra_err *e, const char *fmt, ...)
{
	size_t len = strnlen(e->msg, sizeof(e->msg));
	va_list ap;

	if (len + 1 >= sizeof(e->msg))
		return;
	va_start(ap, fmt);
	vsnprintf(e->msg + len, sizeof(e->msg) - len, fmt, ap);
	va_end(ap);
}

rocattach_status_t ra_status_from_ptrace_errno(int err)
{
	switch (err) {
	case EPERM:
		return ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED;
	case ESRCH:
		return ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND;
	default:
		return ROCATTACH_STATUS_ERROR_PTRACE_ERROR;
	}
}

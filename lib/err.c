/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "err.h"

__attribute__((format(printf, 3, 0))) static rocattach_status_t
vset(struct ra_err *e, rocattach_status_t status, const char *fmt, va_list ap)
{
	e->status = status;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	return status;
}

rocattach_status_t ra_err_set(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
{
	va_list ap;

	if (!e || e->status != ROCATTACH_STATUS_SUCCESS)
		return e ? e->status : status;
	va_start(ap, fmt);
	vset(e, status, fmt, ap);
	va_end(ap);
	return status;
}

rocattach_status_t ra_err_reset(struct ra_err *e, rocattach_status_t status, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return status;
	va_start(ap, fmt);
	vset(e, status, fmt, ap);
	va_end(ap);
	return status;
}

void ra_err_clear(struct ra_err *e)
{
	e->status = ROCATTACH_STATUS_SUCCESS;
	e->msg[0] = '\0';
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

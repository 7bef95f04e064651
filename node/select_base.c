/* SPDX-License-Identifier: MIT */
/* What the selector's rooms share (select_base.h): the one failure message. */
#include <stdarg.h>
#include <stdio.h>

#include "select_base.h"

int rn_sel_fail(struct sel_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

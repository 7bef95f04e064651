/* SPDX-License-Identifier: MIT */
#ifndef RA_LOG_H
#define RA_LOG_H

#include <rocattach/rocattach.h>

void ra_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ra_error(...) ra_log(ROCATTACH_LOG_ERROR, __VA_ARGS__)
#define ra_warn(...) ra_log(ROCATTACH_LOG_WARNING, __VA_ARGS__)
#define ra_info(...) ra_log(ROCATTACH_LOG_INFO, __VA_ARGS__)
#define ra_debug(...) ra_log(ROCATTACH_LOG_DEBUG, __VA_ARGS__)
#define ra_trace(...) ra_log(ROCATTACH_LOG_TRACE, __VA_ARGS__)

#endif

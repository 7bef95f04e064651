/* SPDX-License-Identifier: MIT */
/*
 * The environment buffer that crosses into a target (protocol.md section 2):
 * uint32_t count (native byte order), then count pairs "name\0value\0",
 * no padding, no terminator. Shared by the attacher and the agent, so libc only.
 */
#ifndef RA_COMMON_ENVBUF_H
#define RA_COMMON_ENVBUF_H

#include <stddef.h>
#include <stdint.h>

/* Names that may cross: start with "ROCP", except ROCPROFILER_REGISTER_LIBRARY. */
int ra_envbuf_name_allowed(const char *name, size_t namelen);

/*
 * Encode "NAME=VALUE" strings. Entries without '=' or with a name that is
 * not allowed are skipped (reported through *skipped if non-NULL).
 * Returns 0 and a malloc'd buffer, or -errno (-ENOMEM, -E2BIG over 2^31 bytes).
 */
int ra_envbuf_encode(const char *const *entries, size_t n, char **out, size_t *outlen,
		     size_t *skipped);

/*
 * Decode at most len bytes. For each pair cb(name, value, arg) is called;
 * a non-zero return stops decoding and is returned. Returns 0, or -EINVAL
 * when the buffer is malformed (shorter than its count says, a string not
 * NUL-terminated within len, an empty name or a name containing '='), in
 * which case cb has not been called at all (the buffer is validated first).
 */
int ra_envbuf_decode(const char *buf, size_t len,
		     int (*cb)(const char *name, const char *value, void *arg), void *arg);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The environment buffer (see envbuf.h). The agent runs decode on memory an
 * attacher wrote into it, bounded by what is mapped, so decode trusts nothing:
 * every string is found with memchr inside len, and the whole buffer is
 * checked before the callback sees the first pair.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "envbuf.h"

#define ENVBUF_MAX ((size_t)1 << 31)

static const char excluded_name[] = "ROCPROFILER_REGISTER_LIBRARY";

int ra_envbuf_name_allowed(const char *name, size_t namelen)
{
	if (!name || namelen < 4 || memcmp(name, "ROCP", 4) != 0)
		return 0;
	if (namelen == sizeof(excluded_name) - 1 && !memcmp(name, excluded_name, namelen))
		return 0;
	/* Such a name could not be decoded again. */
	if (memchr(name, '=', namelen) || memchr(name, '\0', namelen))
		return 0;
	return 1;
}

/* Length of the name in "NAME=VALUE", or -1 if the entry does not cross. */
static long entry_namelen(const char *entry)
{
	const char *eq;

	if (!entry)
		return -1;
	eq = strchr(entry, '=');
	if (!eq || !ra_envbuf_name_allowed(entry, (size_t)(eq - entry)))
		return -1;
	return eq - entry;
}

static int encoded_size(const char *const *entries, size_t n, size_t *size, uint32_t *count)
{
	size_t i, total = sizeof(uint32_t), len;

	*count = 0;
	for (i = 0; i < n; i++) {
		if (entry_namelen(entries[i]) < 0)
			continue;
		/* "NAME=VALUE\0" becomes "NAME\0VALUE\0": same length. */
		len = strlen(entries[i]) + 1;
		if (len > ENVBUF_MAX - total)
			return -E2BIG;
		total += len;
		(*count)++;
	}
	*size = total;
	return 0;
}

int ra_envbuf_encode(const char *const *entries, size_t n, char **out, size_t *outlen,
		     size_t *skipped)
{
	size_t i, size, len;
	uint32_t count;
	long namelen;
	char *buf, *p;
	int err;

	if (!out || !outlen || (n && !entries))
		return -EINVAL;
	err = encoded_size(entries, n, &size, &count);
	if (err)
		return err;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &count, sizeof(count));
	p = buf + sizeof(count);
	for (i = 0; i < n; i++) {
		namelen = entry_namelen(entries[i]);
		if (namelen < 0)
			continue;
		len = strlen(entries[i]) + 1;
		memcpy(p, entries[i], len);
		p[namelen] = '\0';
		p += len;
	}
	*out = buf;
	*outlen = size;
	if (skipped)
		*skipped = n - count;
	return 0;
}

/* Check the pair at p within left bytes; its size goes to *used. */
static int pair_check(const char *p, size_t left, size_t *used)
{
	const char *name_end, *value_end;
	size_t namelen;

	name_end = memchr(p, '\0', left);
	if (!name_end)
		return -EINVAL;
	namelen = (size_t)(name_end - p);
	if (!namelen || memchr(p, '=', namelen))
		return -EINVAL;
	value_end = memchr(name_end + 1, '\0', left - namelen - 1);
	if (!value_end)
		return -EINVAL;
	*used = (size_t)(value_end + 1 - p);
	return 0;
}

/*
 * A hostile count is harmless: every pair takes at least 3 bytes, so the
 * loop runs out of len long before it runs out of count.
 */
static int buffer_check(const char *buf, size_t len, uint32_t *count)
{
	size_t off = sizeof(uint32_t), used;
	uint32_t i;

	if (!buf || len < sizeof(uint32_t))
		return -EINVAL;
	memcpy(count, buf, sizeof(*count));
	for (i = 0; i < *count; i++) {
		if (pair_check(buf + off, len - off, &used))
			return -EINVAL;
		off += used;
	}
	return 0;
}

int ra_envbuf_decode(const char *buf, size_t len,
		     int (*cb)(const char *name, const char *value, void *arg), void *arg)
{
	const char *name, *value;
	uint32_t count, i;
	int ret;

	ret = buffer_check(buf, len, &count);
	if (ret || !cb)
		return ret;
	name = buf + sizeof(count);
	for (i = 0; i < count; i++) {
		value = name + strlen(name) + 1;
		ret = cb(name, value, arg);
		if (ret)
			return ret;
		name = value + strlen(value) + 1;
	}
	return 0;
}

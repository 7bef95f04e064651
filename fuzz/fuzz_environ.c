/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/environ lookups (node/select_job.c). Input: a variable name, a NUL,
 * then the environ blob, which may end without its NUL. A value found lies
 * inside the blob right after "NAME="; a rank is -1 or 0..RN_RANK_MAX.
 */
#include "fuzz.h"
#include "select_base.h"

static void check_rank(long rank)
{
	FUZZ_CHECK(rank == -1 || (rank >= 0 && rank <= RN_RANK_MAX));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	const char *env, *v;
	size_t nlen, len, vlen = 0;
	char *name;

	if (!nul)
		return 0;
	nlen = (size_t)(nul - data);
	name = fuzz_strdup(data, nlen);
	env = (const char *)nul + 1;
	len = size - nlen - 1;
	v = rn_environ_get(env, len, name, &vlen);
	if (v) {
		FUZZ_CHECK(nlen > 0 && v >= env + nlen + 1 && v + vlen <= env + len);
		FUZZ_CHECK(v[-1] == '=' && !memcmp(v - 1 - nlen, name, nlen));
		FUZZ_CHECK(!memchr(v, '\0', vlen));
	}
	check_rank(rn_environ_rank(env, len, NULL));
	if (nlen)
		check_rank(rn_environ_rank(env, len, name));
	free(name);
	return 0;
}

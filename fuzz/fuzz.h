/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the libFuzzer harnesses (one fuzz_<parser>.c each).
 * libFuzzer hands every input in a heap buffer of exactly its size, so a
 * parser that reads one byte past its length is caught by ASan: harnesses
 * pass that buffer as is wherever the parser takes (text, len), and copy it
 * only to add the NUL that string parsers need.
 */
#ifndef RA_FUZZ_H
#define RA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the parser promises does not hold: a finding, like a crash. */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__,        \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* The input as a NUL-terminated string (cut at its first NUL, if any). */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * Put "NAME=VALUE" in the environment through one of a few static buffers:
 * glibc's setenv keeps every distinct value it was ever given, which over
 * millions of runs becomes the fuzzer's memory. A slot serves one name.
 */
#define FUZZ_ENV_SLOTS 8
static inline void fuzz_putenv(int slot, const char *entry)
{
	static char buf[FUZZ_ENV_SLOTS][512];

	snprintf(buf[slot], sizeof(buf[slot]), "%s", entry);
	putenv(buf[slot]);
}

#define FUZZ_ARGV_MAX 64

/*
 * The input split on NUL bytes into argv[1..] behind argv0, each argument
 * in its own allocation. Returns argc; free with fuzz_argv_free().
 */
static inline int fuzz_argv(const uint8_t *data, size_t size, const char *argv0, char **argv)
{
	const uint8_t *p = data, *end = data + size, *nul;
	int argc = 0;

	argv[argc++] = fuzz_strdup((const uint8_t *)argv0, strlen(argv0));
	while (p < end && argc < FUZZ_ARGV_MAX) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			nul = end;
		argv[argc++] = fuzz_strdup(p, (size_t)(nul - p));
		p = nul + 1;
	}
	argv[argc] = NULL;
	return argc;
}

static inline void fuzz_argv_free(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

#endif

/* SPDX-License-Identifier: MIT */
/* The entry points' pointer arguments, copied from memory we may read (agent_args.c). */
#ifndef RA_AGENT_ARGS_H
#define RA_AGENT_ARGS_H

#include <stddef.h>

/*
 * Copy the string at s up to its NUL (*out malloc'd): 0, -EFAULT if it is
 * not a string in memory we may read, -ENOMEM.
 */
int arg_copy_string(const char *s, char **out);
/*
 * Copy the environment buffer at env up to its last pair, or as far as we
 * may read (env_scan then finds it malformed): 0, -EFAULT if not one byte
 * may be read, -ENOMEM.
 */
int arg_copy_envbuf(const char *env, char **out, size_t *len);
/* After the copies of one call: closes what they kept open (one maps fd). */
void arg_copy_end(void);

#endif

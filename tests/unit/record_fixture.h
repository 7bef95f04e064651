/* SPDX-License-Identifier: MIT */
/* Records built for the record tests */
#ifndef RA_RECORD_FIXTURE_H
#define RA_RECORD_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "node.h"

void fill_str(char *dst, size_t size, const char *pattern, size_t i);
/* Every field distinct per index, strings filled to the last byte. */
void make_target(struct rn_target *t, size_t i, bool long_strings);

#endif

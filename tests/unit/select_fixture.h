/* SPDX-License-Identifier: MIT */
/* Captured trees and selectors for the selector tests */
#ifndef RA_SELECT_FIXTURE_H
#define RA_SELECT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "node.h"
#include "select_base.h"

struct rn_selector sel_in(const char *tree, pid_t self);
size_t run(const struct rn_selector *s, struct rn_target **t);
void assert_pids(const struct rn_target *t, size_t n, const pid_t *want, size_t nw);
/* Run s and compare the pids (ascending) with want. */
void expect(const struct rn_selector *s, const pid_t *want, size_t nw);
const struct rn_target *find(const struct rn_target *t, size_t n, pid_t pid);
long rank_of(const struct rn_target *t, size_t n, pid_t pid);

#endif

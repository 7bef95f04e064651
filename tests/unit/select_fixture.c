/* SPDX-License-Identifier: MIT */
/* Captured trees and selectors for the selector tests (select_fixture.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select_base.h"
#include "select_fixture.h"

struct rn_selector sel_in(const char *tree, pid_t self)
{
	struct rn_selector s = {.uid = -1, .procfs = tree, .self = self};

	return s;
}

size_t run(const struct rn_selector *s, struct rn_target **t)
{
	char err[RN_ERR_MAX] = "";
	size_t n = 99;

	if (rn_select(s, t, &n, err, sizeof(err)) != 0)
		fail_msg("rn_select: %s", err);
	assert_string_equal(err, "");
	return n;
}

void assert_pids(const struct rn_target *t, size_t n, const pid_t *want, size_t nw)
{
	char got[512] = "";
	size_t i, len = 0;
	bool same = n == nw;

	for (i = 0; i < n; i++) {
		len += (size_t)snprintf(got + len, sizeof(got) - len, " %d", (int)t[i].pid);
		if (i < nw && t[i].pid != want[i])
			same = false;
	}
	if (!same)
		fail_msg("selected:%s", got);
}

/* Run s and compare the pids (ascending) with want. */
void expect(const struct rn_selector *s, const pid_t *want, size_t nw)
{
	struct rn_target *t = NULL;
	size_t n = run(s, &t);

	assert_pids(t, n, want, nw);
	if (!n)
		assert_null(t);
	free(t);
}

const struct rn_target *find(const struct rn_target *t, size_t n, pid_t pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].pid == pid)
			return &t[i];
	fail_msg("pid %d not selected", (int)pid);
	return NULL;
}

long rank_of(const struct rn_target *t, size_t n, pid_t pid)
{
	return find(t, n, pid)->rank;
}

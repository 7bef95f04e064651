/* SPDX-License-Identifier: MIT */
/* Records built for the record tests (record_fixture.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "node.h"
#include "record_fixture.h"

void fill_str(char *dst, size_t size, const char *pattern, size_t i)
{
	size_t plen = strlen(pattern), k;

	for (k = 0; k + 1 < size; k++)
		dst[k] = pattern[(k + i) % plen];
	dst[size - 1] = '\0';
}

/* Every field distinct per index, strings filled to the last byte. */
void make_target(struct rn_target *t, size_t i, bool long_strings)
{
	memset(t, 0, sizeof(*t));
	t->pid = (pid_t)(1000 + i);
	t->nspid = (pid_t)(10 + i);
	t->rank = i % 3 == 0 ? -1 : (long)(i * 7);
	t->uid = (uid_t)(500 + i);
	t->ppid = (pid_t)(900 + i);
	t->listener = i % 2;
	t->side = (int)(i % 3);
	t->topo.n_cpus = (int)i;
	t->state = (enum rn_state)(i % (RN_DIED_ATTACHED + 1));
	t->status = (rocattach_status_t)(i % ROCATTACH_STATUS_LAST);
	t->agent_status = i % 4 == 0 ? -1 : (int)i;
	t->windows = (int)(i * 2);
	t->attach_start_ns = 1700000000000000000ull + i;
	t->attach_end_ns = t->attach_start_ns + 1000 + i;
	t->detach_start_ns = i % 5 ? t->attach_end_ns + 5 : 0;
	t->detach_end_ns = t->detach_start_ns ? t->detach_start_ns + 7 : 0;
	t->attach_tool_ns = i % 3 ? t->attach_end_ns - 3 : 0;
	t->detach_tool_ns = t->detach_start_ns ? t->detach_start_ns + 2 : 0;
	t->detach_call_ns = t->detach_start_ns ? t->detach_start_ns + 1 : 0;
	t->attach_tool_bound = t->side == ROCATTACH_SIDE_ROCM;
	t->detach_tool_bound = t->side == ROCATTACH_SIDE_ROCM && i % 2;
	t->signal = (int)(i % 65);
	t->died_ns = i % 4 ? t->attach_end_ns + 11 : 0;
	t->watchdog = i % 3 == 1;
	t->timed_out = i % 5 == 2;
	t->self_detached = i % 7 == 3;
	t->late_ns = i % 3 == 2 ? 1000000000ull + i : 0;
	t->attach_call_ns = t->attach_end_ns - 9;
	/* --late-start's word on every other target, its SDK path long enough to be cut. */
	t->ls.tried = i % 2;
	t->ls.route = (int8_t)(i % 4);
	t->ls.initialized = (int8_t)(i % 4) - 2;
	t->ls.copies = (uint32_t)i % 3;
	t->ls.started = (uint32_t)i % 2;
	t->ls.planned_ns = 1000 + i;
	t->ls.start_ns = 2000 + i;
	t->ls.end_ns = 3000 + i;
	t->ls.begin_ns = 4000 + i;
	t->ls.done_ns = 5000 + i;
	t->ls.pause_ns = 6000 + i;
	snprintf(t->ls.sdk, sizeof(t->ls.sdk), "/opt/rocm-%zu/lib/librocprofiler-sdk.so.1", i);
	t->tool_n = (uint8_t)(i % (RN_TOOLS_MAX + 1));
	for (size_t k = 0; k < t->tool_n; k++)
		t->tools[k] = (uint8_t)((i + k) % (ROCATTACH_TOOL_FAILED + 1));
	if (long_strings) {
		fill_str(t->exe, sizeof(t->exe), "x\"\n\\\xc3\xa9", i);
		fill_str(t->job, sizeof(t->job), "slurm.pmix.", i);
		fill_str(t->topo.cpus, sizeof(t->topo.cpus), "0-3,", i);
		fill_str(t->topo.numa, sizeof(t->topo.numa), "0,1", i);
		fill_str(t->topo.gpus, sizeof(t->topo.gpus), "card0(0000:c1:00.0),", i);
		fill_str(t->message, sizeof(t->message), "err \"q\"\t\x01\n\xe2\x82\xac ", i);
	} else {
		snprintf(t->exe, sizeof(t->exe), "app_%zu", i);
		snprintf(t->job, sizeof(t->job), "%zu", 1000 + i);
		snprintf(t->topo.cpus, sizeof(t->topo.cpus), "%zu", i % 2);
		snprintf(t->topo.numa, sizeof(t->topo.numa), "0");
		snprintf(t->message, sizeof(t->message), "%s", i % 2 ? "" : "ptrace: \"EPERM\"\n");
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * rocattach's descendants (--attach-children), each on its own clock: once
 * the root has attached, they are attached in parallel through the node
 * pool's window (node/pool.c, rn_window_*) beside the hold. A descendant
 * whose call is stuck, slow or stopped holds neither the root's window nor
 * its neighbours'.
 */
#ifndef RA_ROCATTACH_CHILDREN_H
#define RA_ROCATTACH_CHILDREN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rc_children;

/*
 * Attach root's descendants that have a listener (every one with inject;
 * one without is skipped, said in a warning as the library's tree attach
 * says it), each call on a worker thread, their tools handed over at
 * start_ns (CLOCK_REALTIME, 0: at once); planned_stop_ns, their window's
 * planned stop (0: none), is carried by each attach, so that a target that
 * gets no detach by then + the call timeout detaches itself. Returns at once; NULL when there
 * is none to attach (or the tree cannot be read: the root alone then).
 */
struct rc_children *rc_children_open(pid_t root, const char *tools, bool inject,
				     unsigned call_timeout_ms, uint64_t start_ns,
				     uint64_t planned_stop_ns);
/*
 * Wait until every attach call returned, a signal is read from sfd (*sig
 * set, 0 otherwise), or the monotonic time until_ms.
 */
void rc_children_wait(struct rc_children *c, int sfd, long long until_ms, int *sig);
/*
 * The stop at stop_ns (CLOCK_REALTIME, 0: now): detaches every descendant
 * whose attach returned, on a helper thread.
 */
void rc_children_stop(struct rc_children *c, uint64_t stop_ns);
/*
 * After rc_children_stop: join every call (a stuck one ends by its
 * deadline), say what went wrong in one line each, and free c. Returns
 * the exit code the descendants call for: 0; 4 (CLI_EXIT_PARTIAL) if one
 * failed to attach, a library of its list failed, or one is still attached
 * and stopped; 3 (CLI_EXIT_DETACH) if a detach failed or one died with its
 * tools attached (3 wins).
 */
int rc_children_end(struct rc_children *c);

#endif

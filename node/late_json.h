/* SPDX-License-Identifier: MIT */
/* --late-start's object in a report: per target, "late_start": {...} (node/late_json.c). */
#ifndef RN_LATE_JSON_H
#define RN_LATE_JSON_H

#include <rocattach/rocattach.h>

struct json_t;

/*
 * {"outcome", "sdk", "sdk_version", "register_copies", "register_started",
 *  "initialized", "covers", "not_covered", "stays_until_exit", "message"}:
 * outcome "ok" only when the SDK said it initialized; unknowns are null.
 */
struct json_t *rn_late_json(const rocattach_late_report_t *r);

/* "ok", "failed" or "refused" (nothing touched). */
const char *rn_late_outcome(const rocattach_late_report_t *r);

struct rn_target;
/*
 * A target's record of rocattach-mpi --late-start as rn_late_json's object,
 * with "planned_start_ns", "call_start_ns", "call_end_ns",
 * "thread_begin_ns", "thread_done_ns" (null: unknown). NULL out of memory.
 */
struct json_t *rn_target_late_json(const struct rn_target *t);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * --late-start's object in a report. What it covers comes from the SDK's
 * version (node/late_covers.c, from the upstream text).
 */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "late_covers.h"
#include "late_json.h"
#include "node.h"

static json_t *list(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

const char *rn_late_outcome(const rocattach_late_report_t *r)
{
	if (r->route == ROCATTACH_LATE_STARTED && r->initialized == 1 && !r->status)
		return "ok";
	return r->route == ROCATTACH_LATE_REFUSED ? "refused" : "failed";
}

/* The version in the SDK's real file name (librocprofiler-sdk.so.1.3.5), else null. */
static json_t *sdk_version(const char *sdk)
{
	unsigned int v[3];
	char text[40];

	if (rn_late_sdk_version(sdk, v))
		return json_null();
	snprintf(text, sizeof(text), "%u.%u.%u", v[0], v[1], v[2]);
	return json_string(text);
}

json_t *rn_late_json(const rocattach_late_report_t *r)
{
	bool ran = r->route == ROCATTACH_LATE_STARTED || r->route == ROCATTACH_LATE_FAILED;
	json_t *o = json_object();
	struct rn_late_covers c;

	if (!o)
		return NULL;
	json_object_set_new(o, "outcome", json_string(rn_late_outcome(r)));
	json_object_set_new(o, "sdk",
			    r->sdk[0] ? rn_json_str(r->sdk, sizeof(r->sdk)) : json_null());
	json_object_set_new(o, "sdk_version", sdk_version(r->sdk));
	json_object_set_new(o, "register_copies", json_integer(r->register_copies));
	json_object_set_new(o, "register_started",
			    ran ? json_integer(r->register_started) : json_null());
	json_object_set_new(o, "initialized",
			    r->initialized >= 0 ? json_boolean(r->initialized == 1) : json_null());
	rn_late_covers_of(r->sdk, &c);
	json_object_set_new(o, "covers", list(c.covers, c.ncovers));
	json_object_set_new(o, "not_covered", list(c.not_covered, c.nnot_covered));
	json_object_set_new(o, "covers_basis", json_string(c.basis));
	json_object_set_new(o, "stays_until_exit", json_boolean(ran));
	json_object_set_new(o, "pause_ns",
			    ran ? json_integer((json_int_t)r->pause_ns) : json_null());
	json_object_set_new(o, "message", rn_json_str(r->message, sizeof(r->message)));
	return o;
}

static json_t *ns_or_null(uint64_t ns)
{
	return ns ? json_integer((json_int_t)ns) : json_null();
}

/*
 * A target's record of rocattach-mpi --late-start: the object rocattach
 * prints (rn_late_json), rebuilt from the record's fields (the SDK's path cut
 * to 255 bytes), with the planned start and the times around it.
 */
json_t *rn_target_late_json(const struct rn_target *t)
{
	rocattach_late_report_t *r = calloc(1, sizeof(*r));
	json_t *o = NULL;

	if (!r)
		return NULL;
	r->size = sizeof(*r);
	r->status = t->state == RN_LATE_STARTED ? 0 : (t->status ? t->status : 1);
	r->route = t->ls.route;
	r->initialized = t->ls.initialized;
	r->register_copies = t->ls.copies;
	r->register_started = t->ls.started;
	r->pause_ns = t->ls.pause_ns;
	snprintf(r->sdk, sizeof(r->sdk), "%s", t->ls.sdk);
	snprintf(r->message, sizeof(r->message), "%.*s", (int)sizeof(t->message), t->message);
	o = rn_late_json(r);
	free(r);
	if (!o)
		return NULL;
	json_object_set_new(o, "planned_start_ns", ns_or_null(t->ls.planned_ns));
	json_object_set_new(o, "call_start_ns", ns_or_null(t->ls.start_ns));
	json_object_set_new(o, "call_end_ns", ns_or_null(t->ls.end_ns));
	json_object_set_new(o, "thread_begin_ns", ns_or_null(t->ls.begin_ns));
	json_object_set_new(o, "thread_done_ns", ns_or_null(t->ls.done_ns));
	return o;
}

/* SPDX-License-Identifier: MIT */
/*
 * A target's record in words (node/record_json.c): names, the failure
 * predicates, JSON.
 */
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

#define HDR 272	   /* magic 8 + version 4 + count 4 + host 256 */
#define ENTRY 1025 /* see the wire layout in node/record_wire.c */

static void test_rn_state_name_every_state(void **state)
{
	(void)state;
	assert_string_equal(rn_state_name(RN_FOUND), "found");
	assert_string_equal(rn_state_name(RN_ATTACHED), "attached");
	assert_string_equal(rn_state_name(RN_ATTACH_FAILED), "attach-failed");
	assert_string_equal(rn_state_name(RN_DETACHED), "detached");
	assert_string_equal(rn_state_name(RN_DETACH_FAILED), "detach-failed");
	assert_string_equal(rn_state_name(RN_EXITED), "exited");
	assert_string_equal(rn_state_name(RN_STOPPED), "stopped");
	assert_string_equal(rn_state_name(RN_DIED_ATTACHED), "died_attached");
	assert_string_equal(rn_state_name(RN_DECLINED), "declined");
	assert_string_equal(rn_state_name(RN_LATE_STARTED), "late_started");
	assert_string_equal(rn_state_name((enum rn_state)(RN_LATE_STARTED + 1)), "unknown");
	assert_string_equal(rn_state_name((enum rn_state) - 1), "unknown");
}

/* Dump with jansson and parse back, as the report reader would. */
static json_t *through_text(const struct rn_target *t)
{
	json_t *j = rn_target_to_json(t), *back;
	json_error_t err;
	char *text;

	assert_non_null(j);
	text = json_dumps(j, JSON_COMPACT);
	assert_non_null(text);
	back = json_loads(text, 0, &err);
	if (!back)
		fail_msg("json_loads: %s in %s", err.text, text);
	json_decref(j);
	free(text);
	return back;
}

/* --late-start's object: rocattach's (node/late_json.c), with the planned start. */
static void test_rn_target_to_json_late_start(void **state)
{
	struct rn_target t;
	json_t *j, *l;

	(void)state;
	make_target(&t, 0, false);
	j = through_text(&t);
	assert_null(json_object_get(j, "late_start")); /* not tried: no object */
	json_decref(j);
	make_target(&t, 3, false);
	t.state = RN_LATE_STARTED;
	t.status = ROCATTACH_STATUS_SUCCESS;
	t.message[0] = '\0';
	t.ls.route = ROCATTACH_LATE_STARTED;
	t.ls.initialized = 1;
	t.ls.copies = t.ls.started = 2;
	j = through_text(&t);
	l = json_object_get(j, "late_start");
	assert_string_equal(json_string_value(json_object_get(l, "outcome")), "ok");
	assert_true(json_is_true(json_object_get(l, "initialized")));
	assert_true(json_is_true(json_object_get(l, "stays_until_exit")));
	assert_int_equal(json_integer_value(json_object_get(l, "register_copies")), 2);
	assert_string_equal(json_string_value(json_object_get(l, "sdk")), t.ls.sdk);
	assert_int_equal(json_integer_value(json_object_get(l, "planned_start_ns")), 1003);
	assert_int_equal(json_integer_value(json_object_get(l, "thread_begin_ns")), 4003);
	assert_true(json_array_size(json_object_get(l, "covers")) > 0);
	json_decref(j);
	/* The SDK said it did not initialize: failed, never ok. */
	t.state = RN_ATTACH_FAILED;
	t.status = ROCATTACH_STATUS_ERROR;
	t.ls.initialized = 0;
	j = through_text(&t);
	l = json_object_get(j, "late_start");
	assert_string_equal(json_string_value(json_object_get(l, "outcome")), "failed");
	assert_true(json_is_false(json_object_get(l, "initialized")));
	json_decref(j);
	/* A listener: attached on the normal path and detached; nothing stays, not "failed". */
	t.state = RN_DETACHED;
	t.status = ROCATTACH_STATUS_SUCCESS;
	t.ls.route = ROCATTACH_LATE_ATTACHABLE;
	t.ls.initialized = -2;
	j = through_text(&t);
	l = json_object_get(j, "late_start");
	assert_string_equal(json_string_value(json_object_get(j, "state")), "detached");
	assert_string_equal(json_string_value(json_object_get(l, "outcome")), "attached");
	assert_true(json_is_false(json_object_get(l, "stays_until_exit")));
	assert_int_equal(json_integer_value(json_object_get(l, "planned_start_ns")), 1003);
	assert_non_null(strstr(json_string_value(json_object_get(l, "route")), "listener"));
	json_decref(j);
}

static void test_rn_target_to_json_all_keys(void **state)
{
	const char *keys[] = {
	    "pid",	     "nspid",	    "rank",	"uid",	  "ppid",    "exe",
	    "listener",	     "target_side", "topology", "state",  "status",  "agent_status",
	    "windows",	     "attach",	    "detach",	"window", "message", "signal",
	    "died_ns",	     "timed_out",   "watchdog", "tools",  "late",    "late_ns",
	    "self_detached", "late_start"};
	struct rn_target t;
	json_t *j, *topo, *att;
	size_t i;

	(void)state;
	make_target(&t, 1, false);
	snprintf(t.topo.gpus, sizeof(t.topo.gpus), "card0(0000:c1:00.0),renderD128(0000:c1:00.0)");
	j = through_text(&t);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(json_object_get(j, keys[i]));
	assert_int_equal(json_object_size(j), sizeof(keys) / sizeof(keys[0]));
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 1001);
	assert_int_equal(json_integer_value(json_object_get(j, "rank")), 7);
	assert_int_equal(json_integer_value(json_object_get(j, "agent_status")), 1);
	assert_true(json_is_boolean(json_object_get(j, "listener")));
	assert_true(json_is_true(json_object_get(j, "listener")));
	assert_string_equal(json_string_value(json_object_get(j, "state")), "attached");
	assert_string_equal(json_string_value(json_object_get(j, "status")),
			    "ROCATTACH_STATUS_ERROR");
	topo = json_object_get(j, "topology");
	assert_string_equal(json_string_value(json_object_get(topo, "cpus")), "1");
	assert_string_equal(json_string_value(json_object_get(topo, "numa")), "0");
	assert_int_equal(json_integer_value(json_object_get(topo, "n_cpus")), 1);
	assert_int_equal(json_array_size(json_object_get(topo, "gpus")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(topo, "gpus"), 1)),
			    "renderD128(0000:c1:00.0)");
	att = json_object_get(j, "attach");
	assert_true(json_integer_value(json_object_get(att, "start_ns")) ==
		    (json_int_t)1700000000000000001ll);
	assert_int_equal(json_integer_value(json_object_get(att, "duration_ns")), 1001);
	assert_true(json_is_object(json_object_get(j, "detach")));
	assert_string_equal(json_string_value(json_object_get(j, "signal")), "SIGHUP");
	assert_true(json_integer_value(json_object_get(j, "died_ns")) ==
		    (json_int_t)(t.attach_end_ns + 11));
	assert_true(json_is_true(json_object_get(j, "watchdog")));
	assert_true(json_is_false(json_object_get(j, "timed_out")));
	assert_true(json_is_false(json_object_get(j, "self_detached")));
	assert_true(json_is_false(json_object_get(j, "late")));
	assert_true(json_is_null(json_object_get(j, "late_ns")));
	assert_int_equal(json_array_size(json_object_get(j, "tools")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "tools"), 0)),
			    "loaded");
	json_decref(j);
}

static void test_rn_target_to_json_nulls(void **state)
{
	struct rn_target t;
	json_t *j, *topo;

	(void)state;
	make_target(&t, 0, false);
	t.message[0] = '\0';
	t.attach_start_ns = t.attach_end_ns = 0;
	t.detach_start_ns = t.detach_end_ns = 0;
	t.topo.gpus[0] = '\0';
	j = through_text(&t);
	assert_true(json_is_null(json_object_get(j, "rank")));
	assert_true(json_is_null(json_object_get(j, "agent_status")));
	assert_true(json_is_null(json_object_get(j, "attach")));
	assert_true(json_is_null(json_object_get(j, "detach")));
	assert_true(json_is_null(json_object_get(j, "message")));
	assert_true(json_is_false(json_object_get(j, "listener")));
	assert_string_equal(json_string_value(json_object_get(j, "state")), "found");
	assert_string_equal(json_string_value(json_object_get(j, "status")),
			    "ROCATTACH_STATUS_SUCCESS");
	topo = json_object_get(j, "topology");
	assert_true(json_is_array(json_object_get(topo, "gpus")));
	assert_int_equal(json_array_size(json_object_get(topo, "gpus")), 0);
	json_decref(j);
}

/* An attach that started but has no end yet: no negative duration. */
static void test_rn_target_to_json_unfinished_step(void **state)
{
	struct rn_target t;
	json_t *j, *att;

	(void)state;
	make_target(&t, 1, false);
	t.attach_end_ns = 0;
	j = through_text(&t);
	att = json_object_get(j, "attach");
	assert_true(json_is_object(att));
	assert_true(json_is_integer(json_object_get(att, "start_ns")));
	assert_true(json_is_null(json_object_get(att, "end_ns")));
	assert_true(json_is_null(json_object_get(att, "duration_ns")));
	json_decref(j);
}

static void test_rn_target_to_json_escapes_strings(void **state)
{
	const char *msg =
	    "PTRACE_SEIZE(12): \"quoted\"\nline2\ttab\x01\x1f back\\slash \xe2\x82\xac";
	const char *exe = "we\"ird\n\xc3\xa9xe";
	struct rn_target t;
	json_t *j;

	(void)state;
	make_target(&t, 1, false);
	snprintf(t.message, sizeof(t.message), "%s", msg);
	snprintf(t.exe, sizeof(t.exe), "%s", exe);
	j = through_text(&t);
	assert_string_equal(json_string_value(json_object_get(j, "message")), msg);
	assert_string_equal(json_string_value(json_object_get(j, "exe")), exe);
	json_decref(j);
}

/* Bytes that are not UTF-8 still give a string, with '?' for non-ASCII. */
static void test_rn_target_to_json_invalid_utf8(void **state)
{
	struct rn_target t;
	json_t *j;

	(void)state;
	make_target(&t, 1, false);
	snprintf(t.exe, sizeof(t.exe), "bad\xff\xfe");
	snprintf(t.message, sizeof(t.message), "half \xe2\x82 \xc3\xa9");
	j = through_text(&t);
	assert_string_equal(json_string_value(json_object_get(j, "exe")), "bad??");
	assert_string_equal(json_string_value(json_object_get(j, "message")), "half ?? ??");
	json_decref(j);
}

/* Fields filled to the last byte without a NUL are read within bounds. */
static void test_rn_target_to_json_unterminated_fields(void **state)
{
	struct rn_target t;
	json_t *j, *topo;

	(void)state;
	make_target(&t, 1, false);
	memset(t.exe, 'e', sizeof(t.exe));
	memset(t.topo.gpus, 'g', sizeof(t.topo.gpus));
	memset(t.message, 'm', sizeof(t.message));
	j = through_text(&t);
	assert_int_equal(strlen(json_string_value(json_object_get(j, "exe"))), sizeof(t.exe));
	assert_int_equal(strlen(json_string_value(json_object_get(j, "message"))),
			 sizeof(t.message));
	topo = json_object_get(j, "topology");
	assert_int_equal(
	    strlen(json_string_value(json_array_get(json_object_get(topo, "gpus"), 0))),
	    sizeof(t.topo.gpus));
	json_decref(j);
}

/*
 * rn_json_str at any length: around 512 bytes (where the report's strings
 * once went another way than the records') and far beyond, valid UTF-8 kept
 * as it is, anything else with '?' for every non-ASCII byte.
 */
static void test_rn_json_str_any_length(void **state)
{
	static const size_t lens[] = {1, 255, 511, 512, 513, 4096, 1 << 20};
	char *s, *want;
	json_t *j;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		len = lens[i];
		s = malloc(len + 1);
		want = malloc(len + 1);
		assert_non_null(s);
		assert_non_null(want);
		memset(s, 'a', len);
		s[len] = '\0';
		/* Valid: a two-byte character at the end. */
		if (len >= 2)
			memcpy(s + len - 2, "\xc3\xa9", 2);
		j = rn_json_str(s, (size_t)-1);
		assert_non_null(j);
		assert_int_equal(json_string_length(j), len);
		assert_memory_equal(json_string_value(j), s, len);
		json_decref(j);
		/* Not UTF-8: a lone continuation byte at the end, another in front. */
		s[len - 1] = '\x80';
		s[0] = '\xff';
		memcpy(want, s, len + 1);
		for (size_t k = 0; k < len; k++)
			if ((unsigned char)want[k] >= 0x80)
				want[k] = '?';
		j = rn_json_str(s, (size_t)-1);
		assert_non_null(j);
		assert_int_equal(json_string_length(j), len);
		assert_memory_equal(json_string_value(j), want, len);
		json_decref(j);
		/* Cut at width, whatever follows. */
		j = rn_json_str(s, len / 2);
		assert_non_null(j);
		assert_int_equal(json_string_length(j), len / 2);
		json_decref(j);
		free(s);
		free(want);
	}
	j = rn_json_str("", 0);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "");
	json_decref(j);
}

/* The tool is the cause: the agent's status 6, or the library's checks of the path. */
static void test_rn_tool_failed_causes(void **state)
{
	struct rn_target t = {
	    .state = RN_ATTACH_FAILED, .agent_status = 6, .status = ROCATTACH_STATUS_ERROR};

	(void)state;
	assert_true(rn_tool_failed(&t));
	t.state = RN_EXITED;
	assert_false(rn_tool_failed(&t));
	t = (struct rn_target){.state = RN_ATTACH_FAILED,
			       .agent_status = -1,
			       .status = ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT};
	snprintf(t.message, sizeof(t.message),
		 "library /x/t.so as seen from process 4 "
		 "(/proc/4/root/x/t.so): No such file or directory");
	assert_true(rn_tool_failed(&t));
	snprintf(t.message, sizeof(t.message), "refusing library /x/t.so for process 4: ...");
	assert_true(rn_tool_failed(&t));
	/* Not the tool: a pid of our own, another attacher, no listener. */
	snprintf(t.message, sizeof(t.message), "process 4 is the caller itself");
	assert_false(rn_tool_failed(&t));
	t.status = ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED;
	t.agent_status = 7;
	assert_false(rn_tool_failed(&t));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rn_state_name_every_state),
	    cmocka_unit_test(test_rn_target_to_json_all_keys),
	    cmocka_unit_test(test_rn_target_to_json_late_start),
	    cmocka_unit_test(test_rn_target_to_json_nulls),
	    cmocka_unit_test(test_rn_target_to_json_unfinished_step),
	    cmocka_unit_test(test_rn_target_to_json_escapes_strings),
	    cmocka_unit_test(test_rn_target_to_json_invalid_utf8),
	    cmocka_unit_test(test_rn_target_to_json_unterminated_fields),
	    cmocka_unit_test(test_rn_json_str_any_length),
	    cmocka_unit_test(test_rn_tool_failed_causes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

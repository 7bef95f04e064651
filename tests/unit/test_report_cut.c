/* SPDX-License-Identifier: MIT */
/*
 * --detail failures and none cut the records on each node, before the
 * wire: the node's block of figures equals rank 0's computation from all
 * its records, the report made from the cut is the same, rank 0 refuses a
 * block that does not hold against the records kept (with the reason), and
 * the failures and deaths left out count in the run's outcome.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "report_fixture.h"

/* The node's figures are rank 0's computation from all the records, number for number. */
static void test_rm_node_summary_equals_rank0(void **state)
{
	static const enum rm_detail levels[] = {RM_DETAIL_FAILURES, RM_DETAIL_NONE};
	static const int64_t offsets[] = {0, 2500 * (int64_t)US, -7 * (int64_t)MS};
	struct rn_target all[EVERY];
	struct rm_node full = {.host = "every", .t = all, .n = EVERY};
	struct rm_counts ca = {0}, cb = {0};
	struct rm_node_fig fa, fb;
	struct rm_spread sa, sb, la = {0}, lb = {0};
	size_t ba = 0, bb = 0, clean_n = 0;
	uint64_t pa, ma, pb, mb;

	(void)state;
	every_outcome(all);
	for (size_t k = 0; k < EVERY; k++)
		clean_n += rm_clean(&all[k]);
	assert_int_equal(clean_n, 5); /* 0, 1, 9, 10 and 11 */
	for (size_t li = 0; li < 2; li++)
		for (size_t oi = 0; oi < 3; oi++) {
			struct rm_node cut = {0};

			cut_on_node(all, EVERY, levels[li], offsets[oi], &cut);
			assert_true(cut.cut);
			assert_int_equal(rm_found(&cut), EVERY);
			assert_int_equal(rm_left_out(&cut),
					 levels[li] == RM_DETAIL_NONE ? EVERY : clean_n);
			assert_int_equal(cut.n + rm_left_out(&cut), EVERY);
			memset(&ca, 0, sizeof(ca));
			memset(&cb, 0, sizeof(cb));
			rm_count_node(&full, all, &ca);
			rm_count_node(&cut, cut.t, &cb);
			assert_memory_equal(&ca, &cb, sizeof(ca));
			rm_node_figures(&full, all, T0, &fa);
			rm_node_figures(&cut, cut.t, T0, &fb);
			assert_memory_equal(&fa, &fb, sizeof(fa));
			assert_true(fa.attach.n > 0 && fa.early == 0);
			rm_node_times(&full, all, T0, &pa, &ma);
			rm_node_times(&cut, cut.t, T0, &pb, &mb);
			assert_int_equal(pa, pb);
			assert_int_equal(ma, mb);
			sa = rm_node_attach_spread(&full, all, T0);
			sb = rm_node_attach_spread(&cut, cut.t, T0);
			assert_memory_equal(&sa, &sb, sizeof(sa));
			la = lb = (struct rm_spread){0};
			ba = bb = 0;
			rm_node_len_spread(&full, all, T0, &la, &ba);
			rm_node_len_spread(&cut, cut.t, T0, &lb, &bb);
			assert_memory_equal(&la, &lb, sizeof(la));
			assert_int_equal(ba, bb);
			assert_int_equal(rm_node_outcome(&full, all), rm_node_outcome(&cut, cut.t));
			free(cut.t);
			rm_node_sum_free(&cut);
		}
}

/* A run of one node: the report, summary and timeline as rank 0 made them from all records. */
static void one_node_run(struct big *b, struct rm_node *node)
{
	big_run(b, 1, 1);
	b->w.nodes = node;
	b->r.cfg.ranks = 1;
}

static char *file_text(const char *path)
{
	size_t size;

	return slurp(path, &size);
}

/* The line of s that holds what, taken out of s. */
static void drop_line(char *s, const char *what)
{
	char *at = strstr(s, what), *end;

	assert_non_null(at);
	while (at > s && at[-1] != '\n')
		at--;
	end = strchr(at, '\n');
	end = end ? end + 1 : at + strlen(at);
	memmove(at, end, strlen(end) + 1);
}

static void test_rm_write_report_cut_on_node_same_content(void **state)
{
	struct rn_target all[EVERY];
	struct rm_node full = {.host = "every", .t = all, .n = EVERY}, cut = {0};
	struct big bf, bc;
	json_t *jf, *jc, *wf, *wc;
	char path[256], err[512], *sf, *sc, *tf, *tc;

	(void)state;
	every_outcome(all);
	cut_on_node(all, EVERY, RM_DETAIL_FAILURES, 1500 * (int64_t)US, &cut);
	snprintf(cut.host, sizeof(cut.host), "every");
	one_node_run(&bf, &full);
	one_node_run(&bc, &cut);
	bc.r.cut = (struct rm_cut){RM_DETAIL_FAILURES, EVERY};
	bf.r.cut = (struct rm_cut){RM_DETAIL_FAILURES, EVERY};
	jf = report_at(&bf.r, RM_DETAIL_AUTO);
	jc = report_at(&bc.r, RM_DETAIL_AUTO);
	wf = json_object_get(jf, "windows");
	wc = json_object_get(jc, "windows");
	assert_true(json_equal(wf, wc));
	assert_true(json_equal(json_object_get(jf, "summary"), json_object_get(jc, "summary")));
	assert_true(json_equal(json_object_get(jf, "errors"), json_object_get(jc, "errors")));
	assert_int_equal(ival(node_of(jc, 0), "records_left_out"), 5);
	assert_int_equal(n_targets(node_of(jc, 0)), EVERY - 5);
	assert_non_null(
	    strstr(json_string_value(json_object_get(json_object_get(jc, "detail"), "cut")),
		   "on each node: the records left out never crossed the wire"));
	assert_non_null(strstr(
	    json_string_value(json_object_get(json_object_get(jf, "detail"), "cut")), "on rank 0"));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(jc, "detail"), "chosen")),
	    "default: 12 targets found at the start <= 10000");
	sf = summary_of(&bf.r);
	sc = summary_of(&bc.r);
	/* The same, but a target left out on its node is counted, not named. */
	assert_non_null(strstr(sf, "without a watchdog: if this launcher is killed with SIGKILL, "
				   "their tools stay attached until they exit (every other signal "
				   "detaches them): every:3001\n"));
	assert_non_null(strstr(sc, "detaches them): (1 not named: their records were left out on "
				   "their nodes)\n"));
	drop_line(sf, "without a watchdog");
	drop_line(sc, "without a watchdog");
	assert_string_equal(sf, sc);
	snprintf(path, sizeof(path), "%s/full.svg", dir);
	bf.r.cfg.detail = RM_DETAIL_FAILURES;
	bc.r.cfg.detail = RM_DETAIL_FAILURES;
	assert_int_equal(rm_write_timeline(path, &bf.r, err, sizeof(err)), 0);
	tf = file_text(path);
	snprintf(path, sizeof(path), "%s/cut.svg", dir);
	assert_int_equal(rm_write_timeline(path, &bc.r, err, sizeof(err)), 0);
	tc = file_text(path);
	assert_string_equal(tf, tc);
	assert_non_null(strstr(tc, "5 clean not drawn"));
	{ /* the trace: the same events */
		size_t size;
		json_t *xf = trace_at(&bf.r, RM_DETAIL_FAILURES, &size);
		json_t *xc = trace_at(&bc.r, RM_DETAIL_FAILURES, &size);

		assert_true(json_equal(json_object_get(xf, "traceEvents"),
				       json_object_get(xc, "traceEvents")));
		json_decref(xf);
		json_decref(xc);
	}
	free(tf);
	free(tc);
	free(sf);
	free(sc);
	json_decref(jf);
	json_decref(jc);
	free(cut.t);
	rm_node_sum_free(&cut);
	big_free(&bf);
	big_free(&bc);
}

/* Refused, the node left as it was, with the reason on one line. */
#define REFUSED(n, change, reason)                                                                 \
	do {                                                                                       \
		char why_[256] = "";                                                               \
		*bad = *sum;                                                                       \
		change;                                                                            \
		assert_int_equal(rm_take_sum(bad, 0, n, why_, sizeof(why_)), -1);                  \
		assert_false((n)->cut);                                                            \
		if (!strstr(why_, reason))                                                         \
			fail_msg("refused for \"%s\", not \"%s\"", why_, reason);                  \
		assert_null(strchr(why_, '\n'));                                                   \
	} while (0)

/* The records --detail d keeps of all[0..EVERY), moved to its front; n holds them. */
static void keep_at(struct rn_target *all, enum rm_detail d, struct rm_node *n)
{
	size_t m = 0;

	for (size_t k = 0; k < EVERY; k++)
		if (rm_detail_keeps_target(d, &all[k]))
			all[m++] = all[k];
	n->t = all;
	n->n = m;
}

/*
 * A block that does not hold against its records at --detail failures: 4
 * failed, 1 stopped, 1 died, 2 exited (1 after a window), 5 clean left out,
 * 10 attached.
 */
static void test_rm_take_sum_refuses_what_does_not_hold(void **state)
{
	struct rn_target all[EVERY];
	struct rm_node_sum *sum = calloc(1, sizeof(*sum)), *bad = calloc(1, sizeof(*bad));
	struct rm_node n = {.host = "every"};

	(void)state;
	assert_non_null(sum);
	assert_non_null(bad);
	every_outcome(all);
	assert_int_equal(rm_node_summary(all, EVERY, RM_DETAIL_FAILURES, T0, sum), 0);
	keep_at(all, RM_DETAIL_FAILURES, &n);
	assert_int_equal(n.n, 7);
	REFUSED(&n, bad->left_out++, "left out 6, not found 12 less the 7 records kept");
	REFUSED(&n, bad->found--, "left out 5, not found 11 less the 7 records kept");
	REFUSED(&n, bad->found = 6, "found 6, fewer than the 7 records kept");
	REFUSED(&n, bad->level = RM_DETAIL_ALL, "level 1 is neither failures nor none");
	REFUSED(&n, bad->outcome = RM_OUT_N, "outcome 6 is none a node can send");
	REFUSED(&n, bad->outcome = RM_OUT_EMPTY,
		"outcome no targets, but its counts make it failed");
	REFUSED(&n, bad->outcome = RM_OUT_CLEAN, "outcome ok, but its counts make it failed");
	REFUSED(&n, bad->failed = bad->found + 1, "failed 13, more than the 12 found");
	REFUSED(&n, bad->exited = 8, "its counts add up past the 12 found");
	REFUSED(&n, (bad->stopped = 2, bad->failed = 1), "its counts contradict each other");
	/* Fewer than the records kept of that kind. */
	REFUSED(&n, bad->failed = 3, "failed 3, fewer than the 4 such records kept");
	REFUSED(&n, bad->died = 0, "died 0, fewer than the 1 such records kept");
	REFUSED(&n, bad->exited = 1, "exited 1, fewer than the 2 such records kept");
	/* At failures the records left out are clean: nothing more failed, exactly 5 detached. */
	REFUSED(&n, bad->failed = 5, "failed 5, but at --detail failures the 4 such records kept");
	REFUSED(&n, bad->detached = 4, "detached 4, but at --detail failures the 0 such records");
	REFUSED(&n, bad->attach_hist[3]++, "its times do not add up");
	REFUSED(&n, bad->attach.min = bad->attach.max + 1, "its times do not add up");
	REFUSED(&n, bad->unwatched_left = bad->left_out + 1, "more than the 5 left out");
	REFUSED(&n, bad->tools_left[0][1] = (uint32_t)bad->left_out + 1,
		"more than the 5 left out");
	/* A clean record among those kept: the level would have left it out. */
	n.n = 8;
	all[7] = all[0];
	all[7].pid = 4242;
	all[7].state = RN_DETACHED;
	all[7].tools[1] = ROCATTACH_TOOL_LOADED;
	REFUSED(&n, bad->left_out = 4,
		"it kept the record of pid 4242, which --detail failures "
		"leaves out");
	n.n = 7;
	assert_int_equal(rm_take_sum(sum, 0, &n, NULL, 0), 0);
	assert_true(n.cut);
	rm_node_sum_free(&n);
	free(sum);
	free(bad);
}

/* At none no record is kept: the block holds against found and against itself. */
static void test_rm_take_sum_refuses_at_none(void **state)
{
	struct rn_target all[EVERY];
	struct rm_node_sum *sum = calloc(1, sizeof(*sum)), *bad = calloc(1, sizeof(*bad));
	struct rm_node n = {.host = "every"};

	(void)state;
	assert_non_null(sum);
	assert_non_null(bad);
	every_outcome(all);
	assert_int_equal(rm_node_summary(all, EVERY, RM_DETAIL_NONE, T0, sum), 0);
	keep_at(all, RM_DETAIL_NONE, &n);
	assert_int_equal(n.n, 0);
	REFUSED(&n, bad->left_out--, "left out 11, not found 12 less the 0 records kept");
	REFUSED(&n, bad->died = 13, "died 13, more than the 12 found");
	REFUSED(&n, bad->late = 13, "late 13, more than the 12 found");
	REFUSED(&n, (bad->failed = 0, bad->stopped = 0),
		"outcome failed, but its counts make it other");
	REFUSED(&n, (bad->failed = 0, bad->stopped = 0, bad->outcome = RM_OUT_CLEAN),
		"outcome ok, but its counts make it other");
	REFUSED(&n, bad->detached = 9, "its counts add up past the 12 found");
	REFUSED(&n, bad->attached = 5, "its counts contradict each other");
	REFUSED(&n, bad->exited_after = 3, "its counts contradict each other");
	/* A failed record kept at none. */
	n.n = 1;
	REFUSED(&n, bad->left_out = 11, "it kept the record of pid 3000, which --detail none");
	n.n = 0;
	assert_int_equal(rm_take_sum(sum, 0, &n, NULL, 0), 0);
	assert_true(n.cut);
	rm_node_sum_free(&n);
	free(sum);
	free(bad);
}

/*
 * --late-start (issue 33): 2 late-started, 1 refused and left stopped, 1
 * whose SDK did not initialize (3 starts ran), 1 with a listener attached
 * on the normal path and detached. Before the block carried the late starts, a node cut
 * at none or failures was refused (late-started ones are clean but not
 * detached) and its starts were not counted.
 */
#define LATE_N 5
static void late_outcomes(struct rn_target *t)
{
	for (int k = 0; k < LATE_N; k++) {
		clean(&t[k], (pid_t)(4000 + k), k + 1);
		t[k].ls.tried = true;
		t[k].ls.route = ROCATTACH_LATE_STARTED;
		t[k].ls.initialized = 1;
		t[k].ls.planned_ns = T0;
		if (k == 4)
			continue;
		t[k].state = RN_LATE_STARTED;
		t[k].windows = 0;
		t[k].attach_start_ns = t[k].attach_end_ns = t[k].attach_tool_ns = 0;
		t[k].detach_start_ns = t[k].detach_end_ns = t[k].detach_tool_ns = 0;
	}
	t[2].state = RN_STOPPED;
	t[2].ls.route = ROCATTACH_LATE_REFUSED;
	t[2].ls.initialized = -2;
	t[3].state = RN_ATTACH_FAILED;
	t[3].ls.route = ROCATTACH_LATE_FAILED;
	t[3].ls.initialized = 0;
	t[4].ls.route = ROCATTACH_LATE_ATTACHABLE; /* detached at the window's end */
	t[4].ls.initialized = -2;
}

static void test_late_starts_cut_carried(void **state)
{
	static const enum rm_detail levels[] = {RM_DETAIL_FAILURES, RM_DETAIL_NONE};
	struct rn_target all[LATE_N];
	struct rm_node full = {.host = "every", .t = all, .n = LATE_N};
	struct rm_counts ca, cb;

	(void)state;
	late_outcomes(all);
	for (size_t li = 0; li < 2; li++) {
		struct rm_node cut = {0};
		struct rm_window w = {1, T0, STOP, "enter", &cut, 1};
		struct rm_run r = {.w = &w, .n_w = 1, .cfg = {.windows = 1, .ranks = 1}};
		char *text;

		cut_on_node(all, LATE_N, levels[li], 0, &cut);
		snprintf(cut.host, sizeof(cut.host), "every");
		assert_true(cut.cut);
		assert_int_equal(cut.n, levels[li] == RM_DETAIL_NONE ? 0 : 2);
		memset(&ca, 0, sizeof(ca));
		memset(&cb, 0, sizeof(cb));
		rm_count_node(&full, all, &ca);
		rm_count_node(&cut, cut.t, &cb);
		assert_memory_equal(&ca, &cb, sizeof(ca));
		assert_int_equal(cb.late_started, 2);
		assert_int_equal(cb.failed, 2);
		assert_int_equal(rm_node_outcome(&cut, cut.t), RM_OUT_FAILED);
		assert_int_equal(rm_count_failures(&r), 2);
		text = summary_of(&r);
		assert_non_null(strstr(text, ", 2 failed, 2 late-started"));
		assert_non_null(strstr(text, "  every: 3 started, 2 initialized, 2 failed or "
					     "refused, 1 with a listener attached on the normal "
					     "path (detached at the window's end)"));
		free(text);
		free(cut.t);
		rm_node_sum_free(&cut);
	}
	/* The listener's normal attach failed: among those failed, and said so. */
	failed(&all[4], 4004);
	all[4].ls.tried = true;
	all[4].ls.route = ROCATTACH_LATE_ATTACHABLE;
	all[4].ls.initialized = -2;
	{
		struct rm_node cut = {0};
		struct rm_window w = {1, T0, STOP, "late starts done", &cut, 1};
		struct rm_run r = {.w = &w, .n_w = 1, .cfg = {.windows = 1, .ranks = 1}};
		char *text;

		cut_on_node(all, LATE_N, RM_DETAIL_NONE, 0, &cut);
		snprintf(cut.host, sizeof(cut.host), "every");
		assert_int_equal(cut.sum->ls_listener, 0);
		assert_int_equal(cut.sum->ls_listener_failed, 1);
		text = summary_of(&r);
		assert_non_null(strstr(text, ", 3 failed, 2 late-started"));
		assert_non_null(strstr(text, "  every: 3 started, 2 initialized, 3 failed or "
					     "refused, 1 with a listener whose normal attach "
					     "failed, 5 more not listed (--detail)\n"));
		free(text);
		free(cut.t);
		rm_node_sum_free(&cut);
	}
}

/* A block whose late starts do not add up is refused, with the reason. */
static void test_late_starts_block_refused(void **state)
{
	struct rn_target all[LATE_N];
	struct rm_node_sum *sum = calloc(1, sizeof(*sum)), *bad = calloc(1, sizeof(*bad));
	struct rm_node n = {.host = "every", .t = all, .n = 0};

	(void)state;
	assert_non_null(sum);
	assert_non_null(bad);
	late_outcomes(all);
	assert_int_equal(rm_node_summary(all, LATE_N, RM_DETAIL_NONE, T0, sum), 0);
	assert_int_equal(sum->ls_tried, 5);
	assert_int_equal(sum->ls_ran, 3);
	assert_int_equal(sum->ls_init, 2);
	assert_int_equal(sum->ls_failed, 2);
	assert_int_equal(sum->ls_listener, 1);
	assert_int_equal(sum->ls_listener_failed, 0);
	REFUSED(&n, bad->ls_tried = 6, "its late starts do not add up (tried 6 of 5 found");
	REFUSED(&n, bad->ls_listener_failed = 3, "its late starts do not add up");
	REFUSED(&n, bad->ls_init = 4, "its late starts do not add up");
	REFUSED(&n, bad->ls_listener = 3, "its late starts do not add up");
	REFUSED(&n, (bad->ls_init = 1, bad->outcome = RM_OUT_CLEAN),
		"outcome ok, but its counts make it failed");
	REFUSED(&n, bad->ls_init = 3, "its counts add up past the 5 found");
	assert_int_equal(rm_take_sum(sum, 0, &n, NULL, 0), 0);
	rm_node_sum_free(&n);
	free(sum);
	free(bad);
}
#undef REFUSED

/*
 * --detail none: the failures and deaths left out on the node count, from
 * its block: 4 failed and 1 died in window 1; window 2 keeps them (a failed
 * target keeps its state) and one more fails. Each failure once: 5.
 */
static void test_left_out_failures_and_deaths_count(void **state)
{
	struct rn_target all[EVERY];
	struct rm_node nodes[2];
	struct rm_window w[2];
	struct rm_run r = {.w = w, .n_w = 1, .cfg = {.windows = 2, .ranks = 1}};
	size_t lived;
	char *text;
	json_t *j;

	(void)state;
	memset(nodes, 0, sizeof(nodes));
	every_outcome(all);
	cut_on_node(all, EVERY, RM_DETAIL_NONE, 0, &nodes[0]);
	failed(&all[0], 3000);
	cut_on_node(all, EVERY, RM_DETAIL_NONE, 0, &nodes[1]);
	for (size_t i = 0; i < 2; i++) {
		snprintf(nodes[i].host, sizeof(nodes[i].host), "every");
		w[i] = (struct rm_window){(int)i + 1, T0, STOP, "duration", &nodes[i], 1};
	}
	r.cut = (struct rm_cut){RM_DETAIL_NONE, EVERY};
	assert_int_equal(nodes[0].n, 0);
	assert_int_equal(rm_count_failures(&r), 4);
	assert_int_equal(rm_died_attached(&r, &lived, NULL, NULL), 1);
	assert_int_equal(lived, EVERY - 1 - 2); /* neither died nor exited */
	j = report_at(&r, RM_DETAIL_AUTO);
	assert_true(json_is_null(json_object_get(j, "errors")));
	assert_int_equal(ival(j, "errors_left_out"), 4);
	assert_int_equal(ival(json_object_get(j, "summary"), "died_attached"), 1);
	json_decref(j);
	text = summary_of(&r);
	assert_non_null(strstr(text, "4 failures not named: their records were left out on their "
				     "nodes (--detail none)\n"));
	assert_non_null(strstr(text,
			       "died with their tools attached:\n  1 not named: their records "
			       "were left out on their nodes\n"));
	free(text);
	r.n_w = 2;
	assert_int_equal(rm_count_failures(&r), 5);
	assert_int_equal(rm_died_attached(&r, &lived, NULL, NULL), 1);
	assert_int_equal(lived, EVERY - 1 - 2);
	for (size_t i = 0; i < 2; i++) {
		free(nodes[i].t);
		rm_node_sum_free(&nodes[i]);
	}
}

/* At failures every failure and death is among the records kept: none is counted twice. */
static void test_failures_kept_are_not_counted_twice(void **state)
{
	struct rn_target all[EVERY];
	struct rm_node node = {0};
	struct rm_window w;
	struct rm_run r = {.w = &w, .n_w = 1, .cfg = {.windows = 1, .ranks = 1}};
	size_t lived;

	(void)state;
	every_outcome(all);
	cut_on_node(all, EVERY, RM_DETAIL_FAILURES, 0, &node);
	snprintf(node.host, sizeof(node.host), "every");
	w = (struct rm_window){1, T0, STOP, "duration", &node, 1};
	assert_int_equal(rm_count_failures(&r), 4);
	assert_int_equal(rm_failures_left_out(&r), 0);
	assert_int_equal(rm_died_attached(&r, &lived, NULL, NULL), 1);
	assert_int_equal(lived, EVERY - 1 - 2);
	assert_int_equal(rm_node_detached(&node, node.t), 6); /* 5 clean, 1 with a tool failed */
	free(node.t);
	rm_node_sum_free(&node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_node_summary_equals_rank0),
	    cmocka_unit_test(test_rm_write_report_cut_on_node_same_content),
	    cmocka_unit_test(test_rm_take_sum_refuses_what_does_not_hold),
	    cmocka_unit_test(test_rm_take_sum_refuses_at_none),
	    cmocka_unit_test(test_left_out_failures_and_deaths_count),
	    cmocka_unit_test(test_failures_kept_are_not_counted_twice),
	    cmocka_unit_test(test_late_starts_cut_carried),
	    cmocka_unit_test(test_late_starts_block_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: MIT */
/*
 * Runs built by hand for the report's tests at scale (test_report_scale.c,
 * test_report_cut.c): targets of each kind, runs of many nodes, a node that
 * cuts its records as a node does before the wire, and the writers' files
 * read back.
 */
#ifndef RA_TEST_REPORT_FIXTURE_H
#define RA_TEST_REPORT_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "report.h"
#include "report_int.h"

#define MS 1000000ull
#define US 1000ull
#define T0 1795246201123000000ull /* 2026-11-21T07:30:01.123Z */
#define STOP (T0 + 1000 * MS)

/* The test's directory for the files written (setup makes it, teardown removes it). */
extern char dir[];
int setup(void **state);
int teardown(void **state);

/*
 * A clean target k of a node: its attach call from T0 - 2 ms to T0 + k us,
 * its hand-over at T0 + 10 k us, hand-back at STOP + k us, its detach call
 * 500 + k us long.
 */
void clean(struct rn_target *t, pid_t pid, long k);
/* Its attach failed (PTRACE_SEIZE refused). */
void failed(struct rn_target *t, pid_t pid);

/* A run of one window over n nodes (hosts node0000...), k targets each, in memory. */
struct big {
	struct rn_target *t;
	struct rm_node *nodes;
	struct rm_window w;
	struct rm_run r;
};
void big_run(struct big *b, size_t n, size_t k);
void big_free(struct big *b);

/* The report of r at level d, read back; node i of window 1; an integer that must be there. */
json_t *report_at(const struct rm_run *r, enum rm_detail d);
json_t *node_of(json_t *j, size_t i);
json_int_t ival(json_t *o, const char *k);
size_t n_targets(json_t *node);
/* The summary as text, a file's bytes, the trace at level d read back. */
char *summary_of(const struct rm_run *r);
char *slurp(const char *path, size_t *size);
json_t *trace_at(const struct rm_run *r, enum rm_detail d, size_t *size);

/*
 * A node with every outcome: clean ones (on both sides, one whose tools'
 * window is on bounds), an attach that failed, a detach that failed, one
 * where a library of the list failed, a stopped one, one that died with
 * its tools attached, one that exited before the window and one after it,
 * with CPU, NUMA and GPU lists, in rank 0's clock.
 */
#define EVERY 12
void every_outcome(struct rn_target *t);
/*
 * What a node of that clock (offset applied_ns) sends at level d, taken by
 * rank 0 as rm_take_records does: the records the level keeps (rn_pack)
 * and the block beside them.
 */
void cut_on_node(const struct rn_target *root, size_t n, enum rm_detail d, int64_t applied_ns,
		 struct rm_node *out);

#endif

/* SPDX-License-Identifier: MIT */
/* A run of rocattach-mpi built by hand, and readers of its outputs, for the report tests */
#ifndef RA_REPORT_SAMPLE_H
#define RA_REPORT_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "report.h"

#define MS 1000000ull

/* 2026-11-21T07:30:01.123Z */
#define T1 1795246201123000000ull

#define S1 (T1 + 1000 * MS)

#define T2 (S1 + 500 * MS)

#define S2 (T2 + 1000 * MS)

#define BAD_MESSAGE "PTRACE_SEIZE(201): \"denied\"\n<&> 'x'"

extern struct rn_target w1_node1[2], w1_node2[2], w2_node1[2], w2_node2[2];
extern struct rm_node w1_nodes[3], w2_nodes[3];
extern struct rm_window windows[2];
extern struct rm_run run;
extern char *argv_run[];
extern char dir[];
struct rn_target target(pid_t pid, long rank, const char *exe, enum rn_state state);
void target_times(struct rn_target *t, uint64_t as, uint64_t ae, uint64_t ds, uint64_t de);
void topo(struct rn_target *t, const char *cpus, const char *numa, const char *gpus);
void build_window1(void);
/* The same targets gathered again: 200 exits during the window, 201 stays failed. */
void build_window2(void);
void node(struct rm_node *n, const char *host, struct rn_target *t, size_t count);
void nodes(struct rm_node *n, struct rn_target *t1, struct rn_target *t2);
int setup(void **state);
int teardown(void **state);
char *slurp(const char *path);
size_t count(const char *s, const char *what);
/* The summary and the --dry-run listing, as text (malloc'd). */
char *summary_of(const struct rm_run *r);
char *dry_run_of(const struct rm_node *nodes, size_t n_nodes);
char *path_in_dir(const char *name);
json_int_t jint(json_t *o, const char *path);
json_t *jget(json_t *o, const char *path);
/* The counts of a node (found: "found") or of the summary ("targets"). */
void check_counts(json_t *o, const char *found, json_int_t n, json_int_t attached,
		  json_int_t failed, json_int_t exited);
json_t *write_trace(const struct rm_run *r, const char *name);
/* The events named name (any phase if ph is NULL) of track tid, and the first of them. */
size_t events_of(json_t *j, const char *name, const char *ph, json_int_t tid, json_t **first);
#define CALLS(pid) ((json_int_t)(pid) + 4194304)

/* The name of trace process pid (its process_name metadata). */
const char *process_name(json_t *j, json_int_t pid);

/* A run with a lost node (build_lost_run): one window over nodeA and nodeB, lost. */
#define LOST_REASON "no records within 5.0 s after the stop"
extern struct rn_target lost_a[2], lost_b[2];
extern struct rm_node lost_nodes[2];
extern struct rm_window lost_window;
extern struct rm_run lost_run;
void build_lost_run(void);
/* Every '<' opens a tag and every '&' an entity: what a parser would choke on first. */
void assert_xml_text_escaped(const char *s);

#endif

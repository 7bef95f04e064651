/* SPDX-License-Identifier: MIT */
/*
 * --sample's samples as profiles other tools load (docs/stacks.md): a
 * table of samples read from folded lines (--folded's, which carry no
 * thread) or timed lines (one a sample, with its pid and thread), then
 * written as pprof (profile.proto, gzipped) or speedscope JSON. A frame is
 * any text without ';': its form is not looked into.
 */
#ifndef RM_PROFILES_H
#define RM_PROFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct rm_run;

/* One stack of one thread (or rank, from folded lines), seen count times. */
struct rm_prof_sample {
	char *host;
	long rank;
	long pid;    /* -1: not known (folded lines) */
	long tid;    /* -1: not known (folded lines) */
	char *stack; /* outermost frame first, frames split by ';' */
	unsigned long long count;
};

struct rm_prof {
	struct rm_prof_sample *v;
	size_t n, cap;
	unsigned long long total; /* the counts' sum */
	int hz;			  /* samples per second of CPU time; 0: not known */
};

/* Distinct strings, each with its index (first seen first). */
struct rm_strtab {
	char **s;
	size_t n, cap;
	size_t *slot; /* open addressing: index + 1, 0 free */
	size_t n_slots;
};

/* s's index, added if new; -1 out of memory. */
long rm_strtab_id(struct rm_strtab *t, const char *s);
void rm_strtab_free(struct rm_strtab *t);

/*
 * "host;rank N;frame;...;frame COUNT" lines into p. Returns 0, or -1 at the
 * first line that is not one (*bad_line: its number from 1; 0: no memory).
 */
int rm_prof_add_folded(struct rm_prof *p, const char *text, size_t len, size_t *bad_line);
/* "host\trank\tpid\ttid\tns\tframes" lines (report.h's timed_text): identical ones counted. */
int rm_prof_add_timed(struct rm_prof *p, const char *text, size_t len, size_t *bad_line);
/* Identical samples (host, rank, pid, tid, stack) as one, sorted by rank, host, thread. */
int rm_prof_merge(struct rm_prof *p);
void rm_prof_free(struct rm_prof *p);

/* The frames of a stack, split in place (stack is changed); their number. */
size_t rm_prof_split(char *stack, char ***frames);

/* The run's samples as a table: timed lines if there are any, else folded ones. */
int rm_prof_of_run(const struct rm_run *r, struct rm_prof *p);

/* p as a gzipped pprof profile into f (profile.proto); 0, or -1 with the reason in err. */
int rm_pprof_write(FILE *f, const struct rm_prof *p, const char *comment, char *err, size_t len);
/* p as speedscope JSON, one sampled profile per rank, into f; 0 or -1. */
int rm_speedscope_write(FILE *f, const struct rm_prof *p, const char *name, char *err, size_t len);

/* A writer of p into f (rm_pprof_write, rm_speedscope_write); label: the file's own name or note.
 */
typedef int rm_prof_writer(FILE *f, const struct rm_prof *p, const char *label, char *err,
			   size_t len);
/*
 * The run's samples into path by write, written whole or not at all; what
 * names the file in the messages ("pprof profile"). 0, or -1 with err set.
 */
int rm_prof_write_file(const char *path, const struct rm_run *r, const char *what,
		       rm_prof_writer *write, const char *label, char *err, size_t len);

/* --pprof FILE and --speedscope FILE of rocattach-mpi --sample (rank 0, at the end). */
int rm_write_pprof(const char *path, const struct rm_run *r, char *err, size_t len);
int rm_write_speedscope(const char *path, const struct rm_run *r, char *err, size_t len);

/*
 * --diff A B --flamegraph OUT.svg: B's stacks drawn, each box red where its
 * share of the samples grew from A, blue where it shrank (diff_svg.c).
 */
int rm_write_diff_svg(const char *path, const struct rm_prof *a, const struct rm_prof *b,
		      const char *title, char *err, size_t len);

#endif

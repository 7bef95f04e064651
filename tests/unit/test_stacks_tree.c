/* SPDX-License-Identifier: MIT */
/*
 * Stacks of many ranks in one tree (node/stacks/stacks_tree.h): rank lists,
 * folded lines in and out, the printed tree with its merged runs, the JSON
 * tree, and a node's stack file folded with real names (tests/stacks/sym_prog.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "stacks_tree.h"

static void test_ranks_format_runs(void **state)
{
	static const long a[] = {0, 1, 3}, b[] = {0, 1, 2, 3, 7, 9, 10}, c[] = {5};
	char buf[64];

	(void)state;
	ra_ranks_format(a, 3, buf, sizeof(buf));
	assert_string_equal(buf, "0-1,3");
	ra_ranks_format(b, 7, buf, sizeof(buf));
	assert_string_equal(buf, "0-3,7,9-10");
	ra_ranks_format(c, 1, buf, sizeof(buf));
	assert_string_equal(buf, "5");
	ra_ranks_format(c, 0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	assert_int_equal(ra_ranks_format(b, 7, NULL, 0), (int)strlen("0-3,7,9-10"));
}

/* Three ranks wait in a barrier, rank 3 is stuck; every rank has a progress thread. */
static struct ra_stack_tree *hung_job(void)
{
	struct ra_stack_tree *t = ra_stack_tree_new();
	char line[256], err[128];

	assert_non_null(t);
	for (int r = 3; r >= 0; r--) {
		if (r < 3)
			snprintf(line, sizeof(line),
				 "node%d;rank %d;_start;main;MPI_Barrier;poll 1", r / 2, r);
		else
			snprintf(line, sizeof(line),
				 "node1;rank 3;_start;main;compute;stuck_here 1");
		assert_int_equal(ra_stack_tree_add_folded(t, line, err, sizeof(err)), 0);
		snprintf(line, sizeof(line),
			 "node%d;rank %d;clone;start_thread;progress;epoll_wait 1\n", r / 2, r);
		assert_int_equal(ra_stack_tree_add_folded(t, line, err, sizeof(err)), 0);
	}
	return t;
}

static char *printed(const struct ra_stack_tree *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	ra_stack_tree_print(t, f);
	fclose(f);
	return buf;
}

static void test_tree_print_odd_rank_out(void **state)
{
	struct ra_stack_tree *t = hung_job();
	char *out = printed(t);

	(void)state;
	printf("%s", out);
	assert_string_equal(out, "[0-3] 4 threads: _start > main\n"
				 "  [0-2] 3 threads: MPI_Barrier > poll\n"
				 "  [3] 1 thread: compute > stuck_here\n"
				 "[0-3] 4 threads: clone > start_thread > progress > epoll_wait\n");
	free(out);
	ra_stack_tree_free(t);
}

static void test_tree_json(void **state)
{
	struct ra_stack_tree *t = hung_job();
	json_t *j = ra_stack_tree_json(t), *main_node, *kids;

	(void)state;
	assert_non_null(j);
	assert_int_equal(json_array_size(j), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "frame")),
			    "_start");
	assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "ranks")),
			    "0-3");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 0), "threads")), 4);
	main_node = json_array_get(json_object_get(json_array_get(j, 0), "children"), 0);
	assert_string_equal(json_string_value(json_object_get(main_node, "frame")), "main");
	kids = json_object_get(main_node, "children");
	assert_int_equal(json_array_size(kids), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(kids, 0), "ranks")),
			    "0-2");
	assert_string_equal(json_string_value(json_object_get(json_array_get(kids, 1), "ranks")),
			    "3");
	assert_string_equal(json_string_value(json_object_get(json_array_get(kids, 1), "frame")),
			    "compute");
	json_decref(j);
	ra_stack_tree_free(t);
}

static void test_tree_bad_folded_lines_refused(void **state)
{
	static const char *const bad[] = {
	    "node0;rank 1;main",    "node0;rank x;main 1",  "node0;rank 1 1",
	    ";rank 1;main 1",	    "node0;rank 1;;main 1", "node0;rank 1;main 0",
	    "node0;rank -1;main 1", "node0;main 1",	    "node0;rank 1;main 1x",
	};
	struct ra_stack_tree *t = hung_job();
	char *before = printed(t), *after, err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(ra_stack_tree_add_folded(t, bad[i], err, sizeof(err)), -1);
		assert_true(err[0] != '\0');
	}
	after = printed(t);
	assert_string_equal(before, after);
	free(before);
	free(after);
	ra_stack_tree_free(t);
}

static void write_text_head(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Addresses and maps printed by a real program (sym_prog.c), as a stack file of rank 2. */
static void write_stack_file(const char *path)
{
	char line[4096], known[32] = "", caller[32] = "";
	FILE *p = popen(RA_SYM_C_G, "r"), *f = fopen(path, "a");
	int in_maps = 0;

	assert_non_null(p);
	assert_non_null(f);
	while (fgets(line, sizeof(line), p)) {
		if (in_maps) {
			fputs(line, f); /* the program's maps, then its "end" */
			continue;
		}
		if (!strcmp(line, "maps\n")) {
			fprintf(f, "snapshot 100 ok 5 %s %s\nsnapshot 101 blocked 0\n", known,
				caller);
			fprintf(f, "snapshot 102 self 5 %s\n", known);
			fprintf(f,
				"sample 100 6 %s %s\nsample 100 7 %s %s\nsample 100 8 %s\nmaps\n",
				known, caller, known, caller, known);
			in_maps = 1;
		} else if (!strncmp(line, "exact ", 6) && strstr(line, "known_function")) {
			sscanf(line, "exact %31s", known);
		} else if (!strncmp(line, "return ", 7) && strstr(line, "caller_function")) {
			sscanf(line, "return %31s", caller);
		}
	}
	assert_int_equal(pclose(p), 0);
	fclose(f);
}

static char *folded(const struct ra_stackfile *sf, struct ra_symbolizer *s, bool samples, long *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*n = ra_stackfile_fold(sf, s, "node 7", 2, samples, f);
	fclose(f);
	return buf;
}

static void test_stackfile_fold_names_and_counts(void **state)
{
	char path[] = "/tmp/ra-fold-XXXXXX", err[256], head[256];
	int fd = mkstemp(path);
	struct ra_stackfile sf;
	struct ra_symbolizer *s;
	struct ra_stack_tree *t;
	char *out, *line, *save = NULL;
	long n;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	snprintf(head, sizeof(head), "rocattach-stacks 1\npid 1\nhost h\n");
	write_text_head(path, head);
	write_stack_file(path);
	assert_int_equal(ra_stackfile_read(path, &sf, err, sizeof(err)), 0);
	s = ra_symbolizer_new(NULL);
	assert_int_equal(ra_symbolizer_add_maps(s, sf.maps), 0);
	/* Snapshots: one line each, sorted; no stack is invented for blocked or self. */
	out = folded(&sf, s, false, &n);
	printf("%s", out);
	assert_int_equal(n, 3);
	assert_string_equal(out, "node_7;rank 2;[attach thread] 1\n"
				 "node_7;rank 2;[blocked] 1\n"
				 "node_7;rank 2;caller_function;known_function 1\n");
	t = ra_stack_tree_new();
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		assert_int_equal(ra_stack_tree_add_folded(t, line, err, sizeof(err)), 0);
	free(out);
	out = printed(t);
	assert_non_null(strstr(out, "[2] 1 thread: caller_function > known_function\n"));
	free(out);
	ra_stack_tree_free(t);
	/* Samples: the same stack counted once with its count. */
	out = folded(&sf, s, true, &n);
	printf("%s", out);
	assert_int_equal(n, 2);
	assert_string_equal(out, "node_7;rank 2;caller_function;known_function 2\n"
				 "node_7;rank 2;known_function 1\n");
	free(out);
	ra_symbolizer_free(s);
	ra_stackfile_free(&sf);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranks_format_runs),
	    cmocka_unit_test(test_tree_print_odd_rank_out),
	    cmocka_unit_test(test_tree_json),
	    cmocka_unit_test(test_tree_bad_folded_lines_refused),
	    cmocka_unit_test(test_stackfile_fold_names_and_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* The launcher's tree of ranks: heap order, depths, subtrees. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tree.h"

static void test_rm_tree_parent_heap_order(void **state)
{
	(void)state;
	assert_int_equal(rm_tree_parent(0, 4), -1);
	for (int r = 1; r <= 4; r++)
		assert_int_equal(rm_tree_parent(r, 4), 0);
	assert_int_equal(rm_tree_parent(5, 4), 1);
	assert_int_equal(rm_tree_parent(8, 4), 1);
	assert_int_equal(rm_tree_parent(9, 4), 2);
	assert_int_equal(rm_tree_parent(31, 4), 7);
	assert_int_equal(rm_tree_parent(2, 2), 0);
	assert_int_equal(rm_tree_parent(6, 2), 2);
}

/* Every rank is its parent's child, once. */
static void test_rm_tree_children_cover_all(void **state)
{
	static int seen[1000];

	(void)state;
	for (int k = 2; k <= 40; k += 3) {
		for (int n = 1; n <= 1000; n += 37) {
			for (int r = 0; r < n; r++)
				seen[r] = 0;
			for (int p = 0; p < n; p++) {
				int f = rm_tree_first_child(p, k), m = rm_tree_children(p, k, n);

				assert_true(m >= 0 && m <= k);
				for (int c = f; c < f + m; c++) {
					assert_true(c < n);
					assert_int_equal(rm_tree_parent(c, k), p);
					seen[c]++;
				}
			}
			assert_int_equal(seen[0], 0);
			for (int r = 1; r < n; r++)
				assert_int_equal(seen[r], 1);
		}
	}
}

static void test_rm_tree_children_last_partial(void **state)
{
	(void)state;
	assert_int_equal(rm_tree_children(0, 4, 32), 4);
	assert_int_equal(rm_tree_children(7, 4, 32), 3); /* 29, 30, 31 */
	assert_int_equal(rm_tree_children(8, 4, 32), 0);
	assert_int_equal(rm_tree_children(0, 32, 1), 0);
	assert_int_equal(rm_tree_children(0, 1024, 5), 4);
	/* No overflow for a big rank and fanout. */
	assert_int_equal(rm_tree_children(2000000, 1024, 2100000), 0);
}

static void test_rm_tree_depth_height(void **state)
{
	(void)state;
	assert_int_equal(rm_tree_depth(0, 4), 0);
	assert_int_equal(rm_tree_depth(4, 4), 1);
	assert_int_equal(rm_tree_depth(5, 4), 2);
	assert_int_equal(rm_tree_depth(20, 4), 2);
	assert_int_equal(rm_tree_depth(21, 4), 3);
	assert_int_equal(rm_tree_height(1, 32), 0);
	assert_int_equal(rm_tree_height(2, 32), 1);
	assert_int_equal(rm_tree_height(33, 32), 1);
	assert_int_equal(rm_tree_height(34, 32), 2);
	assert_int_equal(rm_tree_height(32, 4), 3);
	assert_int_equal(rm_tree_height(8, 2), 3);
	assert_int_equal(rm_tree_height(10000, 32), 3);
}

/* Subtree sizes sum as the tree does; membership agrees with parents. */
static void test_rm_tree_subtree(void **state)
{
	(void)state;
	assert_int_equal(rm_tree_subtree_size(0, 4, 32), 32);
	assert_int_equal(rm_tree_subtree_size(1, 4, 32), 1 + 4 + 11); /* 1; 5-8; 21-31 */
	assert_int_equal(rm_tree_subtree_size(2, 4, 32), 1 + 4);      /* 2; 9-12 */
	assert_int_equal(rm_tree_subtree_size(31, 4, 32), 1);
	for (int k = 2; k <= 9; k++) {
		for (int n = 1; n <= 300; n += 7) {
			for (int r = 0; r < n; r++) {
				int f = rm_tree_first_child(r, k), m = rm_tree_children(r, k, n);
				int sum = 1, members = 0;

				for (int c = f; c < f + m; c++)
					sum += rm_tree_subtree_size(c, k, n);
				assert_int_equal(rm_tree_subtree_size(r, k, n), sum);
				for (int a = 0; a < n; a++)
					members += rm_tree_in_subtree(a, r, k);
				assert_int_equal(members, sum);
			}
		}
	}
}

static void test_rm_tree_ancestor_by_depth(void **state)
{
	(void)state;
	assert_int_equal(rm_tree_ancestor(31, 4, 0), 0);
	assert_int_equal(rm_tree_ancestor(31, 4, 1), 1);
	assert_int_equal(rm_tree_ancestor(31, 4, 2), 7);
	assert_int_equal(rm_tree_ancestor(31, 4, 3), 31);
	assert_true(rm_tree_in_subtree(31, 7, 4));
	assert_false(rm_tree_in_subtree(31, 2, 4));
	assert_true(rm_tree_in_subtree(5, 5, 4));
	assert_false(rm_tree_in_subtree(0, 5, 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rm_tree_parent_heap_order),
	    cmocka_unit_test(test_rm_tree_children_cover_all),
	    cmocka_unit_test(test_rm_tree_children_last_partial),
	    cmocka_unit_test(test_rm_tree_depth_height),
	    cmocka_unit_test(test_rm_tree_subtree),
	    cmocka_unit_test(test_rm_tree_ancestor_by_depth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

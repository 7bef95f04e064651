/* SPDX-License-Identifier: MIT */
/*
 * The launcher's k-ary tree of ranks, in heap order: rank 0 is the root,
 * rank r's parent is (r - 1) / k and its children are k*r + 1 .. k*r + k
 * (those below n). Pure arithmetic, no MPI: every rank computes the same tree
 * from the size and --fanout.
 */
#ifndef RM_TREE_H
#define RM_TREE_H

#include <stdbool.h>

/* r's parent, -1 for the root. */
int rm_tree_parent(int r, int k);
/* r's first child, and how many it has (0: a leaf) among n ranks. */
int rm_tree_first_child(int r, int k);
int rm_tree_children(int r, int k, int n);
/* r's depth (the root's is 0), the tree's height (the deepest rank's depth). */
int rm_tree_depth(int r, int k);
int rm_tree_height(int n, int k);
/* Is a in r's subtree (r itself included)? */
bool rm_tree_in_subtree(int a, int r, int k);
/* Ranks in r's subtree, r included. */
int rm_tree_subtree_size(int r, int k, int n);
/* r's ancestor at depth d (d <= r's depth); r itself at its own depth. */
int rm_tree_ancestor(int r, int k, int d);

#endif

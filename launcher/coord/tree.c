/* SPDX-License-Identifier: MIT */
/* The launcher's tree of ranks (tree.h). */
#include "tree.h"

int rm_tree_parent(int r, int k)
{
	return r > 0 ? (r - 1) / k : -1;
}

int rm_tree_first_child(int r, int k)
{
	return k * r + 1;
}

int rm_tree_children(int r, int k, int n)
{
	long long first = (long long)k * r + 1, left = (long long)n - first;

	if (left <= 0)
		return 0;
	return left < k ? (int)left : k;
}

int rm_tree_depth(int r, int k)
{
	int d = 0;

	for (; r > 0; r = (r - 1) / k)
		d++;
	return d;
}

int rm_tree_height(int n, int k)
{
	return n > 0 ? rm_tree_depth(n - 1, k) : 0;
}

bool rm_tree_in_subtree(int a, int r, int k)
{
	for (; a > r; a = (a - 1) / k)
		;
	return a == r;
}

/* Level by level: the subtree's ranks at each depth form one run [lo, hi]. */
int rm_tree_subtree_size(int r, int k, int n)
{
	long long lo = r, hi = r, size = 0;

	while (lo < n) {
		size += (hi < n ? hi : n - 1) - lo + 1;
		lo = k * lo + 1;
		hi = k * hi + k;
	}
	return (int)size;
}

int rm_tree_ancestor(int r, int k, int d)
{
	for (int up = rm_tree_depth(r, k) - d; up > 0; up--)
		r = (r - 1) / k;
	return r;
}

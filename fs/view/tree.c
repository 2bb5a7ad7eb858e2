/*
 * tree.c — the queries of a finished view tree (view.h): its nodes'
 * names, parents, counts and sorted children, the lookup of a child by
 * name (the lookup table), and freeing it.  Trees are built by build.c
 * (from the store) and derive.c (from other trees).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "view-internal.h"

/* ---- the lookup table ------------------------------------------------ */

static uint32_t lookup_hash(uint32_t parent, const char *name, size_t len)
{
	return (uint32_t)XXH3_64bits_withSeed(name, len, parent);
}

int view_tree_index(struct view_tree *t)
{
	uint64_t size = 16;

	if (t->ltab)
		return 0;
	while (size * 3 < (uint64_t)t->nnodes * 4)
		size *= 2;
	if (size > (1ull << 32))
		return -EOVERFLOW;
	t->ltab = calloc(size, sizeof(*t->ltab));
	if (!t->ltab)
		return -ENOMEM;
	t->ltab_mask = (uint32_t)(size - 1);
	for (uint32_t n = 1; n < t->nnodes; n++) {
		if (t->nodes[n].flags & VNODE_HIDDEN)
			continue;
		const struct vstr *x = &t->strs[vnode_frame(t, n)->name];
		uint32_t j =
		        lookup_hash(t->nodes[n].parent, t->arena + x->off, x->len) & t->ltab_mask;
		while (t->ltab[j])
			j = (j + 1) & t->ltab_mask;
		t->ltab[j] = n + 1;
	}
	return 0;
}

void view_tree_free(struct view_tree *t)
{
	if (!t)
		return;
	view_tree_settle(t); /* the second thread may still write the tree */
	view_lists_free(t->lists);
	free(t->tl_memo);
	view_time_index_free(t->time_index);
	free(t->nodes);
	free(t->base);
	free(t->kids);
	free(t->name_sums);
	free(t->ltab);
	free(t->frames);
	free(t->strs);
	free(t->esc_len);
	free(t->arena);
	free(t->event);
	free(t->unit);
	free(t->src.series);
	free(t->src.binary);
	free(t->src.recent);
	free(t->src.window);
	view_place_free(t->src.place);
	free(t->src.about);
	view_spans_free(t->src.spans);
	free(t);
}

uint32_t view_tree_root(const struct view_tree *t)
{
	return VIEW_ROOT;
}

uint32_t view_tree_node_count(const struct view_tree *t)
{
	return t->nnodes;
}

size_t view_tree_memory(const struct view_tree *t)
{
	return sizeof(*t) + (size_t)t->nodes_cap * sizeof(*t->nodes) +
	       (t->base ? (size_t)t->nnodes * sizeof(*t->base) : 0) +
	       (size_t)t->nnodes * sizeof(*t->kids) + (size_t)t->frames_cap * sizeof(*t->frames) +
	       (t->name_sums ? (size_t)t->nstrs * sizeof(*t->name_sums) : 0) +
	       (size_t)t->strs_cap * sizeof(*t->strs) + t->arena_cap +
	       (t->esc_len ? (size_t)t->nstrs * sizeof(*t->esc_len) : 0) +
	       (t->ltab ? ((size_t)t->ltab_mask + 1) * sizeof(*t->ltab) : 0) +
	       t->src.nseries *
	               (sizeof(*t->src.series) + sizeof(*t->src.binary) + sizeof(*t->src.recent)) +
	       view_time_index_memory(t);
}

const char *view_tree_event(const struct view_tree *t)
{
	return t->event;
}

const char *view_tree_unit(const struct view_tree *t)
{
	return t->unit;
}

const char *view_node_name(const struct view_tree *t, uint32_t node, size_t *len)
{
	uint32_t s = vnode_frame(t, node)->name;

	*len = t->strs[s].len;
	return vstr_ptr(t, s);
}

uint32_t view_node_parent(const struct view_tree *t, uint32_t node)
{
	return t->nodes[node].parent;
}

void view_node_counts(const struct view_tree *t, uint32_t node, struct view_counts *c)
{
	const struct vnode *v = &t->nodes[node];

	c->self_weight = v->self_weight;
	c->self_samples = v->self_samples;
	c->total_weight = v->total_weight;
	c->total_samples = v->total_samples;
}

uint32_t view_node_child_count(const struct view_tree *t, uint32_t node)
{
	return t->nodes[node].nkids;
}

uint32_t view_node_child(const struct view_tree *t, uint32_t node, uint32_t i)
{
	view_tree_settle(t);
	return t->kids[t->nodes[node].first_kid + i];
}

static int cmp_name(const struct view_tree *t, uint32_t n, const char *name, size_t len)
{
	const struct vstr *x = &t->strs[vnode_frame(t, n)->name];
	size_t m = x->len < len ? x->len : len;
	/* memcmp's arguments must not be NULL even for 0 bytes: an empty
	 * name may come without a pointer, and an empty tree without an arena */
	int c = m ? memcmp(t->arena + x->off, name, m) : 0;

	if (c)
		return c;
	return x->len < len ? -1 : x->len > len;
}

uint32_t view_node_lower_bound(const struct view_tree *t, uint32_t node, const char *name,
                               size_t len)
{
	view_tree_settle(t);
	const uint32_t *k = t->kids + t->nodes[node].first_kid;
	uint32_t lo = 0, hi = t->nodes[node].nkids;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (cmp_name(t, k[mid], name, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t view_node_find_child(const struct view_tree *t, uint32_t node, const char *name,
                              size_t len)
{
	if (!t->ltab) {
		uint32_t i = view_node_lower_bound(t, node, name, len);
		if (i < t->nodes[node].nkids &&
		    cmp_name(t, view_node_child(t, node, i), name, len) == 0)
			return view_node_child(t, node, i);
		return VIEW_NONE;
	}
	uint32_t j = lookup_hash(node, name, len) & t->ltab_mask;

	for (; t->ltab[j]; j = (j + 1) & t->ltab_mask) {
		uint32_t c = t->ltab[j] - 1;
		if (t->nodes[c].parent == node && cmp_name(t, c, name, len) == 0)
			return c;
	}
	return VIEW_NONE;
}

bool view_node_visible(const struct view_tree *t, uint32_t node)
{
	return node < t->nnodes && !(t->nodes[node].flags & VNODE_HIDDEN);
}

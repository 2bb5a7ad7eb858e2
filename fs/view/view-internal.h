/*
 * view-internal.h — the layout of a built view tree, shared by build.c
 * and derive.c (which build it), tree.c (its queries) and the renderers
 * (which walk it).  Not for other modules.
 */
#ifndef FLAMEFS_VIEW_INTERNAL_H
#define FLAMEFS_VIEW_INTERNAL_H

#include "view.h"

/* An interned string: bytes at arena + off, followed by a NUL. */
struct vstr {
	uint32_t off;
	uint32_t len;
};

/* A frame copied out of the store; every field is a string id (0 = ""). */
struct vframe {
	uint32_t name;
	uint32_t module;
	uint32_t build_id; /* raw bytes */
	uint32_t file;
	uint32_t line;
	uint8_t kind;
};

/* One view node.  Children are kids[first_kid .. first_kid + nkids),
 * sorted by name.  Nodes are numbered so that a parent's id is smaller
 * than its children's. */
struct vnode {
	uint32_t parent;
	uint32_t frame; /* index into frames (name and attributes) */
	uint32_t first_kid;
	uint32_t nkids;
	uint32_t path_len; /* bytes of "bin;a;b" for this node */
	uint32_t flags;    /* VNODE_* */
	uint64_t self_weight, self_samples;
	uint64_t total_weight, total_samples;
	uint64_t folded_bytes; /* size of the subtree's folded rendering */
};
/* build.c reserves the nodes on a 64-byte boundary so that a node is one
 * cache line while the tree is built. */
_Static_assert(sizeof(struct vnode) == 64, "a view node is 64 bytes");

/* A node kept only to hold its id (a seeded build, see view.h): it has no
 * counts, is in no child list and no lookup table. */
#define VNODE_HIDDEN 1u
/* A frame above the node, below its binary's node, has the node's name
 * (a recursive call): its total is already in that frame's function
 * total (top.c). */
#define VNODE_RECURSIVE 4u
/* While building (build.c, derive.c): set on nodes that counts reached (and, once
 * view_tree_finish() propagates it, on their ancestors); cleared before
 * the tree is done. */
#define VNODE_LIVE 2u
/* While building from the store (build.c, a lazy build): the node has its
 * entry in the child table; cleared before the tree is done. */
#define VNODE_INDEXED 8u

/* The weight of the visible nodes of one name below the binaries'
 * nodes: self, and total over those no frame above has the name of (the
 * outermost); the kind of the first in id order; used: there is one. */
struct vname_sum {
	uint64_t self, total;
	uint8_t kind;
	bool used;
};

/* The counts of the other version in a diff tree (see diff.c). */
struct vbase {
	uint64_t self_weight, self_samples;
	uint64_t total_weight, total_samples;
};

/* Where a tree built from a store read its counts, so that a timeline
 * can read them again when it is rendered (timeline.c) instead of the
 * tree keeping counts per node and bucket.  `store` is NULL in trees
 * derived from trees (diffs, callers, callees). */
struct vsource {
	struct store *store; /* borrowed: the store the tree was built from */
	uint32_t *series;    /* store series ids, nseries of them */
	uint32_t *binary;    /* per series: its binary's view node */
	bool *recent;        /* per series: the recent tier held detail of it */
	size_t nseries;
	int64_t from, to;        /* the closed bucket interval read */
	uint32_t store_nodes;    /* store_node_count() at the build */
	uint32_t bucket_seconds; /* the store's bucket size (0: none) */
	/* The first and last moment its series hold (store_series.first_us,
	 * last_us; INT64_MAX, INT64_MIN when none has samples). */
	int64_t first_us, last_us;
	/* For a window's tree (window.c): the window and what it could not
	 * cut exactly; NULL otherwise. */
	struct view_window *window;
	/* Where the tree's directories are in the mount (the daemon's
	 * view_tree_set_place()), for heatmap.svg's links; NULL: unknown. */
	struct view_place *place;
	/* The `about` text (view_tree_set_about()), about_len bytes; NULL:
	 * none was given. */
	char *about;
	size_t about_len;
	/* The scope's span records (view_tree_set_spans()); NULL: none
	 * given. */
	struct view_spans *spans;
};
void view_spans_free(struct view_spans *sp); /* accepts NULL */

struct view_tree {
	struct vnode *nodes;
	/* NULL, or for a diff tree one per node: version A's counts, while
	 * `nodes` holds version B's. */
	struct vbase *base;
	uint32_t nnodes, nodes_cap;
	uint32_t *kids;
	struct vframe *frames;
	uint32_t nframes, frames_cap;
	struct vstr *strs;
	uint32_t nstrs, strs_cap;
	char *arena;
	size_t arena_len, arena_cap;
	/* true when depth-first order with children in name order is not the
	 * bytewise order of folded lines because a sibling name extends
	 * another by a byte < ';' (`foo` and `foo.part.0`): the renderer then
	 * orders those sibling groups by line keys (see render.c). */
	bool folded_keyed;
	/* true when a sibling name extends another by ';' itself (only
	 * possible for names that contain ';'): keys do not decide the order
	 * there, so the folded renderer sorts all lines. */
	bool folded_needs_sort;
	/* true when some frame name holds a byte a folded path escapes
	 * (view_text_put() with VIEW_TEXT_FOLDED): set as frames are added
	 * (build.c), and then view_tree_finish() makes esc_len. */
	bool names_escape;
	/* NULL, or per string id its length escaped for a folded path: path
	 * lengths and folded sizes count the escaped bytes, and the folded
	 * renderer writes names escaped and sorts its lines (render.c). */
	uint32_t *esc_len;
	/* (parent, name) -> node + 1, 0 = empty: the lookup table of every
	 * visible node but the root, open addressing, at most 3/4 full. */
	uint32_t *ltab;
	uint32_t ltab_mask;
	char *event;
	char *unit;
	/* Trees built from a store: what they read (timeline.c). */
	struct vsource src;
	/* Per string id: what `top` shows of the function of that name over
	 * the whole tree (below the binaries' nodes), which
	 * view_tree_finish() sums in its totals pass so that `top` at the
	 * root or at a lone binary's node reads no node (top.c). */
	struct vname_sum *name_sums;
	/* NULL, or the child lists (kids, first_kid), folded sizes and
	 * folded order still being made on a second thread after the tree
	 * was handed out (finish.c): whatever reads them calls
	 * view_tree_settle() first.  Every other field is final but the
	 * next. */
	struct view_lists *lists;
	/* NULL, or the rows of the last timeline collected of this tree
	 * (timeline.c): `timeline` and `timeline.svg` of one node, read one
	 * after the other as `grep -r` does, read the store once.  Taken and
	 * put back with atomic exchanges, so renderers need no lock. */
	struct tl_memo *tl_memo;
	/* NULL until a timeline or heatmap is first rendered, then the
	 * tree's counts and samples as read from the store then
	 * (timeline.c), or VIEW_TIME_NONE when they pass
	 * view_time_rows_max.  Set once, with an atomic compare-exchange. */
	struct view_time_index *time_index;
};

/* a / d rounded toward minus infinity (d > 0): the interval a time in
 * microseconds falls in, before 1970 too. */
static inline int64_t view_floor_div(int64_t a, int64_t d)
{
	return a / d - (a % d < 0);
}

static inline const char *vstr_ptr(const struct view_tree *t, uint32_t s)
{
	return t->arena + t->strs[s].off;
}

/* The bytes string s takes in a folded path (escaped). */
static inline uint32_t vstr_folded_len(const struct view_tree *t, uint32_t s)
{
	return t->esc_len ? t->esc_len[s] : t->strs[s].len;
}

static inline const struct vframe *vnode_frame(const struct view_tree *t, uint32_t n)
{
	return &t->frames[t->nodes[n].frame];
}

/* The arrays view_tree_finish() works in, which a build may hand over:
 * each NULL or malloc'd with at least t->nnodes entries whose contents do
 * not matter, and whose pages the build touched or populated already
 * (a store build's per-node lists, and the arrays its prefault thread
 * populated beside it: build.c), so that finishing takes no page faults
 * for them.  Members left NULL are allocated by view_tree_finish(). */
struct view_scratch {
	uint32_t *list[3]; /* name ranks, then the visible nodes and their parents by rank */
	uint32_t *par;     /* per node: its parent, then its cursor into kids */
	uint32_t *kids;    /* becomes t->kids */
	uint32_t kids_cap; /* entries kids has: trimmed when far above the nodes */
	uint64_t *mask;    /* per node: the names on its path (finish.c, paths_down()) */
	uint8_t *rec;      /* per node: recursive (finish.c, paths_down()) */
};

/* Makes the tree's nodes, as built (parent, frame, self counts and
 * VNODE_LIVE set), the finished tree (finish.c): totals, path lengths,
 * folded sizes, hidden and recursive nodes, and the sorted child lists in
 * t->kids.  `spare` is NULL or arrays handed over (see struct
 * view_scratch; all freed here, or kept as t->kids, also on failure).
 * With `defer`, a large tree's child lists and folded sizes may still be
 * in the making on a second thread when it returns (t->lists), so that
 * what needs only counts (`top` at a version root) need not wait for
 * them; the tree must not move or grow its nodes from then on.  Returns
 * 0, -ENOMEM or -EOVERFLOW (a sum or a path length past its type); on
 * failure the tree is only fit for view_tree_free(). */
int view_tree_finish(struct view_tree *t, const struct view_scratch *spare, bool defer);

/* Waits until t's child lists, first_kid, folded sizes and folded order
 * are made (at once when they are); any thread may call it, any number
 * of times.  Every reader of those fields calls it first. */
void view_tree_settle(const struct view_tree *t);

/* Frees a finished tree's t->lists (view_tree_free(), after
 * view_tree_settle()).  Accepts NULL. */
void view_lists_free(struct view_lists *l);

/* Asks for transparent huge pages under the 2 MB-aligned part of a big
 * array (malloc'd; a hint, nothing when the kernel does not take it).  A
 * tree's arrays are written once each, front to back or all over, so
 * each of their 4 KB pages costs a fault, dearer still in a VM: a huge
 * page takes one fault for 512 of them. */
void view_hugepages(void *p, size_t bytes);

/* For the sorted child list kids[0..nkids): 0 when no later sibling
 * extends kids[i]'s name by a byte <= ';', 2 when one extends it by ';',
 * else 1. */
int view_sibling_order_breaks(const struct view_tree *t, const uint32_t *kids, uint32_t i,
                              uint32_t nkids);

/* ---- deriving trees from trees (functions.c, diff.c) ------------------ */

/* Builds a tree node by node, the way view_tree_build() builds one from
 * the store: children are found or created by (parent, name), counts are
 * added to a node's self, and view_builder_finish() computes totals,
 * sizes and sorted child lists.  Node 0 is the frameless root. */
struct view_builder;

/* `nodes_hint` sizes the tables (0 for small).  On success *out is owned
 * by the caller: finish it or free it. */
int view_builder_new(const char *event, const char *unit, uint32_t nodes_hint,
                     struct view_builder **out);
void view_builder_free(struct view_builder *b); /* accepts NULL */
/* Before any other node is made: creates every node of `seed` (a tree
 * this library built, NULL for none) again, in id order, so each keeps
 * its id; a seed node the build does not reach again stays hidden (see
 * view_tree_build_seeded()). */
int view_builder_seed(struct view_builder *vb, const struct view_tree *seed);
/* A frame of the new tree with the attributes of frame `src_frame` of tree
 * `src` (at most two source trees per builder).  Frames with the same
 * name share one node name, so one call per source frame suffices. */
int view_builder_frame(struct view_builder *b, const struct view_tree *src, uint32_t src_frame,
                       uint32_t *out);
/* The child of `parent` with the name of `frame`, created if new. */
int view_builder_child(struct view_builder *b, uint32_t parent, uint32_t frame, uint32_t *out);
/* A new child of `parent`, without looking for one of the same name: for
 * callers that know the names they add below a parent are distinct (and
 * then add no child to that parent with view_builder_child()). */
int view_builder_append(struct view_builder *vb, uint32_t parent, uint32_t frame, uint32_t *out);
/* Adds to a node's self counts.  _base adds to the other version's counts
 * and makes the tree a diff tree. */
void view_builder_add(struct view_builder *b, uint32_t node, uint64_t samples, uint64_t weight);
int view_builder_add_base(struct view_builder *b, uint32_t node, uint64_t samples, uint64_t weight);
/* Finishes the tree into *out (the caller owns it) and frees the builder,
 * also on failure. */
int view_builder_finish(struct view_builder *b, struct view_tree **out);

/* True when a folded path writes s[0..len) as it is (view_text_put()
 * with VIEW_TEXT_FOLDED changes nothing): one table lookup a byte. */
bool view_text_plain(const char *s, size_t len);

/* Writes node n's frame name, escaped as folded paths are, at its place
 * in the buffer of a folded path that holds n's ancestors' (bytes
 * [0, n's path_len)), with the ';' before it below a binary (render.c). */
void view_path_put_name(const struct view_tree *t, uint32_t n, char *path);

/* Where a tree's directories are (view_tree_set_place()). */
struct view_place {
	unsigned between;
	char *top;
};
void view_place_free(struct view_place *p); /* accepts NULL */

/* Which store nodes lie in the subtree of a view node, for renderers
 * that read the store again (timeline.c, heatmap.c): decided once per
 * store node, memoized (see timeline.c). */
struct view_subtree {
	const struct view_tree *t;
	uint32_t node;   /* the subtree's root */
	uint32_t binary; /* its binary's view node; VIEW_NONE at the top root */
	uint32_t *path;  /* the view nodes from the binary's (0) down to node */
	uint32_t depth;  /* entries of path */
	uint32_t *memo;  /* store node -> its state (timeline.c) */
	uint32_t *walk;  /* scratch: store nodes not yet decided */
	bool all;        /* every store node of the tree is in */
};
/* 0, -EINVAL (node past the tree) or -ENOMEM; free with
 * view_subtree_fini() either way. */
int view_subtree_init(struct view_subtree *st, const struct view_tree *t, uint32_t node);
void view_subtree_fini(struct view_subtree *st);
/* 1 when store node sn lies in the subtree, 0 when not, or -errno. */
int view_subtree_has(struct view_subtree *st, uint32_t sn);
/* The counts and the samples' detail of a tree's series over the span
 * its timelines show, read from the store once per tree and sorted by
 * the view node each store node maps to (its deepest visible node of
 * the same names), in depth-first order, so that a subtree's rows are
 * one run: rendering every directory's timeline, timeline.svg and
 * heatmap.svg reads the store once (timeline.c). */
struct view_time_count {
	uint32_t pre;    /* the mapped view node's depth-first number */
	uint32_t bucket; /* index from the span's first bucket */
	uint64_t samples, weight;
};
struct view_time_sample {
	int64_t time_us;
	uint64_t weight;
	uint32_t pre;
};
struct view_time_index {
	uint32_t *pre, *size; /* per view node: depth-first number, nodes below and itself */
	struct view_time_count *counts;
	size_t ncounts;
	struct view_time_sample *samples;
	size_t nsamples;
	/* The buckets read: b0 (start / bucket length) and nbk after it;
	 * samples of [b0, b0 + nbk) buckets. */
	int64_t b0;
	size_t nbk;
};
/* A tree's time_index when its rows pass the bound: no index. */
#define VIEW_TIME_NONE (&view_time_none)
extern struct view_time_index view_time_none;
/* The most rows (counts and samples) a tree's index may hold; past it the
 * tree's renderers read the store at each rendering.  Tests set 0 to
 * compare both ways. */
extern size_t view_time_rows_max;
/* The index of t, built at the first call: *out is NULL when t reads no
 * store or its rows pass the bound.  0 or -errno (the store's). */
int view_time_index_get(const struct view_tree *t, const struct view_time_index **out);
/* The run of rows of the subtree of view node `node`: [*a, *z). */
void view_time_counts_of(const struct view_time_index *x, uint32_t node, size_t *a, size_t *z);
void view_time_samples_of(const struct view_time_index *x, uint32_t node, size_t *a, size_t *z);
void view_time_index_free(struct view_time_index *x); /* accepts NULL and VIEW_TIME_NONE */
size_t view_time_index_memory(const struct view_tree *t);

/* Whether series i of t->src can hold stacks of the subtree. */
static inline bool view_subtree_series(const struct view_subtree *st, size_t i)
{
	return st->binary == VIEW_NONE || st->t->src.binary[i] == st->binary;
}

/* True when node n of a tree has a folded line (a self count, in either
 * version of a diff tree). */
static inline bool vnode_has_line(const struct view_tree *t, uint32_t n)
{
	return t->nodes[n].self_weight > 0 || (t->base && t->base[n].self_weight > 0);
}

/* Number of decimal digits of v. */
static inline unsigned view_digits(uint64_t v)
{
	unsigned d = 1;
	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

#endif

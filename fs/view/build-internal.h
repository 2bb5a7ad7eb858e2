/*
 * build-internal.h — the builder the two kinds of build share (build.c): a
 * tree being made, its string and child tables, and, for a build from
 * the store (build.c), the store-to-view maps and the lazy lists.  The
 * trees derived from trees (derive.c) use the same tables.  Private to
 * fs/view/.
 */
#ifndef FLAMEFS_VIEW_BUILD_H
#define FLAMEFS_VIEW_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "view-internal.h"

/* A slot of the child table; the key is kept in the slot, so a probe
 * reads no other array. */
struct cslot {
	uint32_t parent;
	uint32_t name;
	uint32_t node; /* node + 1; 0 = empty */
};

struct prefault; /* build.c */

/* Counts a build from the store keeps waiting while it asks for the
 * memory they will read (build.c, add_count()). */
#define COUNT_AHEAD 16

struct builder {
	struct view_tree *t;
	struct store *s;
	uint32_t *stab; /* string intern table: sid + 1, 0 = empty */
	uint32_t stab_mask;
	struct cslot *ctab; /* (parent, name) -> node + 1, 0 = empty */
	uint32_t ctab_mask, ctab_used;
	/* Store frame id -> local frame + 1 (0: none yet) and its name, side
	 * by side: a new node needs both, and the name read from the frames
	 * would be a cache miss of its own.  A lazy build keeps there too
	 * what a new node of the frame needs (a store frame is one local
	 * frame): the newest node of the frame + 1, and whether its name has
	 * another frame, so a new node reads one slot, not another per name. */
	struct fslot {
		uint32_t frame, name;
		uint32_t head, multi;
	} * fmap;
	uint32_t fmap_len;
	/* Store node -> view node + 1 of the binary being built: entries
	 * <= memo_floor are none (0) or another binary's.  A lazy build makes
	 * each binary's nodes after the previous one's, so moving the floor
	 * to the new binary's node forgets them all without a pass over the
	 * store's node count for each binary. */
	uint32_t *memo;
	uint32_t memo_len, memo_floor;
	uint32_t *path; /* scratch stack of (store node, frame) pairs */
	size_t path_cap;
	/* A build from the store without a seed enters a node in the child
	 * table only once a lookup could ask for it (see store_child()):
	 * until then it is on two lists, its frame's and its parent's
	 * (entries are node + 1, 0 ends a list). */
	bool lazy;
	uint32_t *next_same;    /* per node: the next node of its frame */
	uint32_t *first_child;  /* per node: its newest child, | LAZY_MERGED (build.c) */
	uint32_t *next_sibling; /* per node: the next child of its parent */
	uint32_t lazy_cap;      /* entries of the three */
	/* Per string: the store frame + 1 of its one frame, or NAME_MULTI. */
	uint32_t *name_first;
	uint32_t names_cap;  /* entries of name_first */
	struct prefault *pf; /* NULL, or the thread populating the per-node arrays */
	/* With the thread: view_tree_finish()'s arrays it populates beside
	 * the build's (list[0] and list[2] are the build's own lists), with
	 * fin_cap entries each; NULL members without it. */
	struct view_scratch fin;
	uint32_t fin_cap;
	/* Counts waiting to be added (build.c, add_count()): ring_len of
	 * them from ring_head on. */
	struct ahead {
		uint32_t node, far;
		uint64_t samples, weight;
	} ring[COUNT_AHEAD];
	uint32_t ring_head, ring_len;
};

/* Grows *p (of *cap elements of elem bytes) to at least `need` elements,
 * doubling; 0, -ENOMEM or -EOVERFLOW.  builder_grow_zeroed() zeroes the
 * new elements. */
int builder_grow(void **p, uint32_t *cap, uint32_t need, size_t elem);
int builder_grow_zeroed(void **p, uint32_t *cap, uint32_t need, size_t elem);
/* The id of string p[0..len) in the tree, copied in if new. */
int builder_intern(struct builder *b, const char *p, size_t len, uint32_t *sid);
/* A new local frame with f's name and attributes (its strings copied). */
int builder_add_frame(struct builder *b, const struct store_frame *f, uint32_t *out);
/* The same for frame `frame` of another tree. */
int builder_add_tree_frame(struct builder *b, const struct view_tree *src, uint32_t frame,
                           uint32_t *out);
/* The child of `parent` named like local frame `frame`, created if new. */
int builder_get_child(struct builder *b, uint32_t parent, uint32_t frame, uint32_t *out);
/* Creates every node of `seed` again, in id order, so each keeps its id. */
int builder_seed_nodes(struct builder *b, const struct view_tree *seed);

/* Counts a build from the store adds to one series beside those it reads
 * (window.c: the parts of the buckets a window cuts), by store node. */
struct build_count {
	uint32_t node;
	uint64_t samples, weight;
};
struct build_extra {
	const struct build_count *v;
	size_t n;
};

/* view_tree_build_seeded() with, for series[i], the counts extra[i] added
 * after the counts it reads (extra NULL: none).  from > to reads no
 * counts at all.  Fills the tree's source (t->src) as the store build
 * does; the caller may refine it. */
int builder_build(struct store *s, const struct store_series *series, size_t n, int64_t from,
                  int64_t to, const struct build_extra *extra, const struct view_tree *seed,
                  struct view_tree **out);

#endif

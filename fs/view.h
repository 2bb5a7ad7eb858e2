/*
 * view.h — the flamefs view library: an in-memory call tree built from a
 * store, the renderers that turn a tree node into file bytes, and the
 * reversible escaping of frame names into directory names.
 *
 * A tree is built once from one or more series of the same event and is
 * immutable afterwards, so any number of threads may read and render it
 * concurrently.  It copies every string it needs, so it does not depend on
 * the store once built.  Node 0 (VIEW_ROOT) is a frameless top root; its
 * children are one node per binary name, and below each binary node are
 * the stack frames.  Every folded line therefore starts with the binary
 * name.  Siblings with the same name are merged (store frames that differ
 * only in module, file, ... become one view node).  Children are sorted by
 * name, bytewise.
 *
 * Everything returns 0 (or a length/count) on success and -errno on
 * failure.  Nothing here prints or exits.
 */
#ifndef FLAMEFS_VIEW_H
#define FLAMEFS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define VIEW_ROOT 0u
#define VIEW_NONE UINT32_MAX

/* ---- growable byte buffer ------------------------------------------ */

/* A growable buffer.  `data` is malloc'd and owned by the buffer; it is
 * always NUL-terminated after a successful append (the NUL is not counted
 * in len).  A zeroed struct is a valid empty buffer. */
struct view_buf {
	char *data;
	size_t len;
	size_t cap;
};

void view_buf_init(struct view_buf *b);
/* Frees the data and leaves an empty buffer.  Accepts an empty buffer. */
void view_buf_free(struct view_buf *b);
/* Makes room for `extra` more bytes (plus the NUL).  -ENOMEM on failure. */
int view_buf_reserve(struct view_buf *b, size_t extra);
int view_buf_append(struct view_buf *b, const void *data, size_t len);

/* ---- the call tree -------------------------------------------------- */

struct view_tree;

/* Counts of one view node.  Weight is what users see; samples are kept
 * for pprof's samples/count. */
struct view_counts {
	uint64_t self_weight;
	uint64_t self_samples;
	uint64_t total_weight;
	uint64_t total_samples;
};

/* Builds the tree of series[0..n) (all of the same event; several binaries
 * or versions allowed: stacks of series with the same binary merge) over
 * counts whose bucket lies in [from, to] (INT64_MIN/INT64_MAX for all).
 * The event and unit of series[0] label the tree's weight.  `series`
 * entries are only read during the call.  On success *out is owned by the
 * caller; free it with view_tree_free().  The caller must hold whatever
 * lock guards `s` for the duration of the call.  Returns -EOVERFLOW, and
 * builds nothing, when a sum (over series, buckets or children) would pass
 * 2^64 - 1. */
int view_tree_build(struct store *s, const struct store_series *series, size_t n, int64_t from,
                    int64_t to, struct view_tree **out);
/* Like view_tree_build(), but every node of `seed` (a tree built by this
 * library, e.g. of the same series before the store moved) keeps its id:
 * its nodes are created first, in id order, and nodes the counts add come
 * after them.  A seed node no count reaches any more stays in the tree,
 * hidden: in no child list, not found by lookups, not visible
 * (view_node_visible()).  So node ids can name the same path across
 * rebuilds.  `seed` is only read during the call. */
int view_tree_build_seeded(struct store *s, const struct store_series *series, size_t n,
                           int64_t from, int64_t to, const struct view_tree *seed,
                           struct view_tree **out);
void view_tree_free(struct view_tree *t); /* accepts NULL */

/* Always VIEW_ROOT; present for readability at call sites. */
uint32_t view_tree_root(const struct view_tree *t);
uint32_t view_tree_node_count(const struct view_tree *t);
/* Approximate heap bytes held by the tree. */
size_t view_tree_memory(const struct view_tree *t);
/* The event and unit the tree's weight is in.  Owned by the tree. */
const char *view_tree_event(const struct view_tree *t);
const char *view_tree_unit(const struct view_tree *t);

/* The node's display name (the frame name, or the binary name for a
 * child of the root; "" for the root).  Owned by the tree; not
 * NUL-terminated in general: use *len. */
const char *view_node_name(const struct view_tree *t, uint32_t node, size_t *len);
uint32_t view_node_parent(const struct view_tree *t, uint32_t node);
/* False for ids past the tree and for hidden seed nodes (see
 * view_tree_build_seeded()). */
bool view_node_visible(const struct view_tree *t, uint32_t node);
void view_node_counts(const struct view_tree *t, uint32_t node, struct view_counts *c);
uint32_t view_node_child_count(const struct view_tree *t, uint32_t node);
/* The i-th child in bytewise name order. */
uint32_t view_node_child(const struct view_tree *t, uint32_t node, uint32_t i);
/* Builds the (parent, name) lookup table of every visible node (about 4-8
 * bytes a node), which makes view_node_find_child() O(1); until then it
 * binary-searches the parent's children.  Building it writes the tree:
 * call it where no view_node_find_child() on the same tree runs at the
 * same time (the daemon: under its lock).  0, or -ENOMEM/-EOVERFLOW (the
 * tree is still usable). */
int view_tree_index(struct view_tree *t);
/* Finds the child named exactly name[0..len): one probe of the lookup
 * table once view_tree_index() built it, else a binary search among the
 * children.  VIEW_NONE if none. */
uint32_t view_node_find_child(const struct view_tree *t, uint32_t node, const char *name,
                              size_t len);
/* Index of the first child whose name is >= name[0..len) bytewise (for
 * prefix scans); equals the child count when there is none. */
uint32_t view_node_lower_bound(const struct view_tree *t, uint32_t node, const char *name,
                               size_t len);

/* ---- renderers: node -> bytes -------------------------------------- */

/* Each renderer appends the bytes of one file of `node` to `out` (which
 * the caller owns and frees).  On failure `out` may hold a partial
 * rendering; discard it. */
typedef int (*view_render_fn)(const struct view_tree *t, uint32_t node, struct view_buf *out);

/* Every stack of the subtree, full path from the top root ("bin;a;b 42"),
 * one per line, sorted bytewise (LC_ALL=C sort), zero-weight lines
 * omitted. */
int view_render_folded(const struct view_tree *t, uint32_t node, struct view_buf *out);
/* Self / total weight as one decimal integer and a newline. */
int view_render_self(const struct view_tree *t, uint32_t node, struct view_buf *out);
int view_render_total(const struct view_tree *t, uint32_t node, struct view_buf *out);
/* The full (unescaped) node name and a newline. */
int view_render_name(const struct view_tree *t, uint32_t node, struct view_buf *out);
/* A gzipped profile.proto of the subtree with full stacks from the top
 * root and two sample types: samples/count and the weight (type "cpu",
 * unit "nanoseconds" for cpu-clock/task-clock; else the event and unit). */
int view_render_pprof(const struct view_tree *t, uint32_t node, struct view_buf *out);

/* The exact size view_render_folded() would produce, without rendering. */
uint64_t view_folded_size(const struct view_tree *t, uint32_t node);

/* The files every view directory holds, in listing order.  `size` is
 * non-NULL when the size can be computed without rendering. */
struct view_file {
	const char *name;
	view_render_fn render;
	uint64_t (*size)(const struct view_tree *t, uint32_t node);
};
extern const struct view_file view_files[];
extern const size_t view_file_count;

/* ---- names ---------------------------------------------------------- */

/* Longest directory name produced (NAME_MAX). */
#define VIEW_NAME_MAX 255

enum view_escape_flags {
	VIEW_ESCAPE_AT = 1 << 0, /* also escape '@' (used for versions) */
};

/* Writes the directory name of name[0..len) into out (NUL-terminated,
 * at most VIEW_NAME_MAX bytes) and returns its length.  The rule is
 * documented in fs/README.md.  Never fails. */
size_t view_escape(const char *name, size_t len, int flags, char out[VIEW_NAME_MAX + 1]);

/* Decodes a directory name made by view_escape() into out (appended;
 * caller owns).  Returns 0 when `out` holds the full original name, 1
 * when the name was shortened (then `out` holds the decoded prefix and
 * the caller must compare candidates with view_escape()), -EINVAL when
 * the name is not a valid escaped name, -ENOMEM. */
int view_unescape(const char *dirname, size_t len, struct view_buf *out);

#endif

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

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define VIEW_ROOT 0u
#define VIEW_NONE UINT32_MAX

/* ---- growable byte buffer ------------------------------------------ */

/* A growable buffer.  `data` is malloc'd and owned by the buffer; it is
 * always NUL-terminated after a successful append (the NUL is not counted
 * in len).  A zeroed struct is a valid empty buffer.  `max` caps len: an
 * append or reserve that would pass it fails with -EFBIG and leaves the
 * buffer as it was (0: VIEW_RENDER_MAX), so one rendering can never take
 * more than that much memory, whatever the tree; view_buf_free() keeps
 * it. */
struct view_buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

/* The default cap of one rendering (struct view_buf's max): 256 MiB.
 * flamefs takes another with -o max_render=SIZE, export with
 * --max-render SIZE. */
#define VIEW_RENDER_MAX ((size_t)256 << 20)

/* The cap b->max stands for (VIEW_RENDER_MAX when 0). */
size_t view_buf_max(const struct view_buf *b);
/* Parses a size: a number of bytes, optionally followed by K, M or G
 * (KiB, MiB, GiB; "256M").  Returns 0, -EINVAL or -ERANGE (0 bytes, or
 * past SIZE_MAX). */
int view_parse_size(const char *s, size_t *bytes);

void view_buf_init(struct view_buf *b);
/* Frees the data and leaves an empty buffer.  Accepts an empty buffer. */
void view_buf_free(struct view_buf *b);
/* Makes room for `extra` more bytes (plus the NUL).  -ENOMEM on failure. */
int view_buf_reserve(struct view_buf *b, size_t extra);
int view_buf_append(struct view_buf *b, const void *data, size_t len);
/* Appends printf's output, whatever its length.  For numbers and a
 * renderer's own words only: a string of the data (a name, the unit, the
 * event) goes through view_text_append() or view_xml_append().  0,
 * -EINVAL (a bad format), -ENOMEM or -EFBIG (past the buffer's cap). */
int view_buf_printf(struct view_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int view_buf_vprintf(struct view_buf *b, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));

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

/* An interactive flame graph (SVG 1.1 with an embedded script: click to
 * zoom, a search box, tooltips), the one flamegraph.pl draws from this
 * node's `folded` file: the ancestors as full-width frames at the bottom,
 * then the subtree, frame widths proportional to total weight; frames
 * narrower than 0.1% of the width are left out (their weight stays in
 * their parent's width).  Colours are stable by name and kind.  A diff
 * tree's flame graph is differential: widths by version B, red where a
 * frame's share of the total grew from A to B, blue where it shrank. */
int view_render_flame_svg(const struct view_tree *t, uint32_t node, struct view_buf *out);
/* The subtree in callgrind's profile format (callgrind_annotate,
 * kcachegrind): one function per frame name with its self cost, and call
 * edges whose costs make each function's inclusive cost (self + calls)
 * equal the weight of the stacks that contain it, counted once per stack.
 * Stacks are full paths from the top root, as in `folded`.  Two events:
 * the weight and the samples. */
int view_render_callgrind(const struct view_tree *t, uint32_t node, struct view_buf *out);

/* The functions of the subtree (every frame below the binary level in it,
 * the node itself included when it is a frame) ranked by self weight, then
 * total weight, then name: two header lines beginning with '#' (the
 * count, the unit and event, the subtree's total, also in seconds for a
 * clock unit; the column titles), then one line per function with the
 * columns self weight, self %, total weight, total %, kind (as
 * view_kind_name()) and the name, which runs to the end of the line.
 * Weights are right-aligned to one width, percentages of the node's total
 * have two decimals.  self and total are the function view's
 * (view_functions_counts() over the same subtree). */
int view_render_top(const struct view_tree *t, uint32_t node, struct view_buf *out);
/* "user", "kernel", "inline", "unknown", "jit", "python" for an enum
 * store_frame_kind; "other" for a kind this library does not know.  A
 * static string. */
const char *view_kind_name(unsigned kind);
/* True, with how many units make a second, when `unit` is a clock unit
 * (nanoseconds, microseconds, milliseconds, seconds). */
bool view_unit_is_clock(const char *unit, uint64_t *per_second);

/* When the subtree ran (timeline.c): the counts of the tree's series in
 * its window, read again from the store the tree was built from, which
 * must still be open; the caller holds whatever lock guards that store
 * for the duration of the call (as for view_tree_build()).  The first
 * timeline or heatmap rendered of a tree reads them (and the samples'
 * detail) for every node at once and keeps them in the tree; later ones
 * read nothing.  Counts of stacks the store gained after the build are
 * left out; counts the store gained for the tree's own stacks before
 * that first read are not.  Derived trees
 * (diffs, callers, callees) read nothing: header only.
 * timeline: two '#' header lines (the number of buckets, the bucket
 * size, the clock: "unix" or "perf", the unit and event; the column
 * titles), then one line per bucket with counts in the subtree, oldest
 * first: start (seconds), samples, weight, start in ISO 8601 UTC ("-"
 * for perf's clock).  timeline.svg: the same as a self-contained SVG bar
 * chart (bar height: weight; a tooltip per bar). */
int view_render_timeline(const struct view_tree *t, uint32_t node, struct view_buf *out);
int view_render_timeline_svg(const struct view_tree *t, uint32_t node, struct view_buf *out);

/* A subsecond heatmap of the subtree over the recent tier (heatmap.c),
 * as FlameScope draws one: a column per second, 50 rows of 20 ms for the
 * offset inside it, each cell coloured by the samples of the subtree
 * whose moment falls in it (read from the store as timelines are: the
 * same lock rule, and the same rows kept in the tree), with a tooltip naming the interval and its
 * count and a link to the @range directory of its interval (see
 * view_tree_set_place()).  Over the tree's window for a window's tree,
 * else over the span of its series' samples; at most the last
 * VIEW_HEATMAP_COLUMNS seconds of it. */
#define VIEW_HEATMAP_COLUMNS 7200
#define VIEW_HEATMAP_ROWS    50
int view_render_heatmap_svg(const struct view_tree *t, uint32_t node, struct view_buf *out);
/* Says where a tree's directories are in their view (the mount's root, or
 * @host/NAME/ or @thread/NAME/, ..., which have the same layout), for heatmap.svg's links,
 * which go up to the view's root and down its @range: `between` is the
 * number of directories from the view's root to the tree's top
 * directory's parent (0 for a version, 3 in @range/F/T/, 2 in
 * @last/D/), and `top` the path of the tree's top directory from there
 * ("bin/1.0", escaped as the mount shows it), or "" for a tree whose
 * files are its top root's (the whole view at a root).  So a tree's
 * heatmap is the same in every view.  Copies the string.  0 or
 * -ENOMEM. */
int view_tree_set_place(struct view_tree *t, unsigned between, const char *top);

/* What a version directory's `about` file says (about.c), one fact per
 * line, names escaped as in every text file: "binary B", "version V",
 * "build_id V" when the version is a build id's hex digits, "event E",
 * "unit U", "first US ISO" and "last US ISO" (the series' first and last
 * moment, Unix seconds with the fraction and ISO 8601 UTC; the clock's
 * seconds twice on perf's clock), then for each of host, exe, cgroup,
 * container, thread and cmdline that the series have: "<key>s N" (N
 * distinct values; "exes", "cgroups", ...) and "<key> VALUE" for the
 * first VIEW_ABOUT_LIST of them in bytewise order.  view_tree_set_about()
 * makes the text from series[0..n) (the series the tree sums: one
 * binary, version and event) and keeps a copy in the tree; 0, -EINVAL
 * (n = 0) or -ENOMEM.  view_render_about() writes it (nothing when none
 * was set); view_about_size() is its length, known without rendering. */
#define VIEW_ABOUT_LIST 10
int view_tree_set_about(struct view_tree *t, const struct store_series *series, size_t n);
int view_render_about(const struct view_tree *t, uint32_t node, struct view_buf *out);
uint64_t view_about_size(const struct view_tree *t, uint32_t node);

/* ---- spans (spans.c) --------------------------------------------------
 * A span record is a sample of a series of event STORE_EVENT_SPANS
 * (store.h, "spans"): the view keeps those series out of every tree and
 * sum, and reads them only for the two files below.  The label that
 * names a span, on its records and on the samples taken inside it: */
#define VIEW_SPAN_LABEL "span"
/* Gives a tree built from a store the span-record series of its scope,
 * spans[0..n) (the daemon decides the scope: a version's, a view's), and
 * the store's series `all[0..nall)`, from which the thread label and
 * binary of each series the tree reads is copied (a trace's thread
 * names).  Copies what it keeps.  0 or -ENOMEM. */
int view_tree_set_spans(struct view_tree *t, const struct store_series *spans, size_t n,
                        const struct store_series *all, size_t nall);
bool view_tree_has_spans(const struct view_tree *t);
/* `spans`: a header line "# count total_ms mean_ms p50_ms p99_ms max_ms
 * unended detailed name", then one line per span name (bytewise order;
 * the name last, escaped as in every text file, so `sort -k` works on
 * the numbers): count and total (the sum of the durations) from the
 * series' counts over all time; mean = total / count truncated to the
 * nanosecond; p50, p99 and max over the `detailed` spans whose record
 * the recent tier still holds (nearest rank: the value of rank
 * ceil(p * detailed / 100) in ascending order; "-" when detailed is 0);
 * unended: the spans closed at their thread's exit.  Durations are in
 * milliseconds with six decimals, so exact to the nanosecond.  Reads the
 * store the tree was built from: the caller holds its lock. */
int view_render_spans(const struct view_tree *t, uint32_t node, struct view_buf *out);
/* `trace.json`: the Chrome Trace Event Format's JSON object.
 * "traceEvents" holds, over the tree's window (all time outside one),
 * an "X" event per span that started in it (ts its start in µs, dur its
 * duration in µs with three decimals, exact; args id, parent, dur_ns and
 * unended: true for a span closed at exit), a "P" event per sample with
 * a moment (sf its stack's leaf in "stackFrames", args weight and span),
 * and "M" events naming each process (its binary) and thread (its series'
 * thread label).  "stackFrames" holds each sample's stack (id: the store
 * node, parent: its caller).  No top-level "samples" array: speedscope
 * would then show the samples only, not the spans.  At most
 * VIEW_TRACE_MAX_EVENTS spans and as many samples are written (series
 * by series, each in time order); "otherData" says how many were and
 * how many were left out.  Reads the store: the caller holds its lock. */
#define VIEW_TRACE_MAX_EVENTS 100000u
int view_render_trace(const struct view_tree *t, uint32_t node, struct view_buf *out);

/* How good the stacks of a subtree are (quality.c).  total: the node's
 * total weight; rooted: the weight of its stacks whose outermost frame is
 * an entry point (view_name_is_entry(), or an unnamed frame right below
 * one), so the stack was not cut short; unknown_leaf: the weight of its
 * stacks whose leaf is "[unknown]", a bare module name "[...]" or a frame
 * of kind unknown.  At VIEW_ROOT, every binary's. */
struct view_quality {
	uint64_t total, rooted, unknown_leaf;
};
int view_quality(const struct view_tree *t, uint32_t node, struct view_quality *q);
/* _start, __libc_start_main, __libc_start_call_main, start_thread, clone,
 * clone3, ret_from_fork(_asm), kthread, Go's runtime.goexit ... */
bool view_name_is_entry(const char *name, size_t len);
/* part/whole in percent as "98.23" (two decimals, rounded half up). */
void view_quality_share(uint64_t part, uint64_t whole, char out[32]);
/* The unnamed weight of a subtree by module (quality.c): every frame of
 * view_quality()'s unknown leaves counts its self weight to its module,
 * the frame's module path, or its own name where it has none ("[unknown]",
 * "[truncated]"), with the frame's build id (raw bytes; none: length 0).
 * A view node holds one frame of a name, so a node's weight goes to that
 * frame's module and build id.  The weights sum to unknown_leaf.
 * Strings point into the tree and live as long as it does. */
struct view_unnamed {
	const char *module;
	size_t module_len;
	const uint8_t *build_id;
	size_t build_id_len;
	uint64_t weight;
};
/* Fills *out (malloc'd, the caller frees it) with *n rows, one per
 * (module, build id), largest weight first, then by module and build id
 * bytewise.  0, -EINVAL (no such node) or -ENOMEM. */
int view_quality_unnamed(const struct view_tree *t, uint32_t node, struct view_unnamed **out,
                         size_t *n);
/* The share of unnamed weight from which the quality file and the end
 * lines of record and import say how to get names: 20%. */
#define VIEW_UNNAMED_WARN_PERCENT 20
/* unnamed / whole >= VIEW_UNNAMED_WARN_PERCENT %, exactly; false for whole 0. */
bool view_unnamed_large(uint64_t unnamed, uint64_t whole);
/* The `quality` file: "total T", "rooted W P%", "unknown_leaf W P%", then
 * per module with unnamed weight, largest first, "unnamed W P% BUILD_ID
 * MODULE" (BUILD_ID in lower-case hex, "-" when none; MODULE escaped as
 * text files are, to the end of the line), one a line.  When fewer than
 * half the stacks are rooted, or at least VIEW_UNNAMED_WARN_PERCENT of the
 * weight is unnamed, '#' lines saying what usually causes it and what
 * to do. */
int view_render_quality(const struct view_tree *t, uint32_t node, struct view_buf *out);

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

/* ---- version diffs (diff.c) ---------------------------------------- */

/* Builds the union tree of subtree `anode` of `a` (version A, the base)
 * and subtree `bnode` of `b` (version B): the two subtree roots become one
 * child of the new root, named like bnode (both VIEW_ROOT: the roots
 * themselves are merged), and below it nodes merge by name.  Every node
 * has B's counts (view_node_counts()) and A's (view_node_base_counts()).
 * In a diff tree, folded lines are "stack A B" (what difffolded.pl
 * prints; a line where either self weight is non-zero), `self` and
 * `total` are "A B", pprof's values are B - A (as pprof -diff_base
 * shows them), and flame.svg is differential.  `a` and `b` are only read
 * during the call; *out is owned by the caller (view_tree_free()). */
int view_diff_build(const struct view_tree *a, uint32_t anode, const struct view_tree *b,
                    uint32_t bnode, struct view_tree **out);
/* Like view_diff_build(), keeping the node ids of `seed` (an earlier diff
 * of the same versions) as view_tree_build_seeded() does. */
int view_diff_build_seeded(const struct view_tree *a, uint32_t anode, const struct view_tree *b,
                           uint32_t bnode, const struct view_tree *seed, struct view_tree **out);
bool view_tree_is_diff(const struct view_tree *t);
/* Version A's counts of a diff tree's node; zeroes in other trees. */
void view_node_base_counts(const struct view_tree *t, uint32_t node, struct view_counts *c);
/* The nodes of a diff subtree whose share of their version's total grew
 * by at least 0.1 percentage points, biggest growth first, one per line:
 * "+12.3% bin;a;b".  A node whose growth is all in one of its callees is
 * left out for that callee (sto's findRegressions).  Share is a node's
 * total weight over the subtree root's, in A and in B.  Nothing for a
 * tree that is not a diff tree. */
int view_render_regressions(const struct view_tree *t, uint32_t node, struct view_buf *out);

/* The files of a diff directory, in listing order (like view_files). */
extern const struct view_file view_diff_files[];
extern const size_t view_diff_file_count;

/* ---- the function view (functions.c) --------------------------------- */

/* One tree's functions: every distinct frame name below the binary level
 * in the subtree of a node, with its self and total weight, and the
 * trees of its callers and callees.  Built once, read-only after; it
 * refers to the tree, which must outlive it. */
struct view_functions;

/* Indexes the subtree of `node` (usually a version root, the binary
 * node).  *out is owned by the caller (view_functions_free()). */
int view_functions_build(const struct view_tree *t, uint32_t node, struct view_functions **out);
void view_functions_free(struct view_functions *fx); /* accepts NULL */
uint32_t view_functions_count(const struct view_functions *fx);
/* The i-th function, in bytewise name order.  Owned by the tree. */
const char *view_functions_name(const struct view_functions *fx, uint32_t i, size_t *len);
/* The index of the function named name[0..len), VIEW_NONE if none. */
uint32_t view_functions_find(const struct view_functions *fx, const char *name, size_t len);
/* self: weight and samples of the stacks the function is the leaf of;
 * total: of the stacks that contain it, each counted once however often
 * the function recurses in it. */
void view_functions_counts(const struct view_functions *fx, uint32_t i, struct view_counts *c);
/* The callers tree: its root's only child is the function (total = the
 * function's total), below it the function's callers, their callers and
 * so on up to the binary, taken from the function's innermost occurrence
 * in each stack (so the recursive calls show as the function calling
 * itself).  A stack ends at its binary, so the function's children's
 * totals add up to its total.  *out is owned by the caller. */
int view_functions_callers(const struct view_functions *fx, uint32_t i, struct view_tree **out);
/* The callees tree: its root's only child is the function, below it the
 * subtrees of all the function's outermost occurrences merged by name
 * (recursive calls stay inside them), so its total is the function's
 * total.  *out is owned by the caller. */
int view_functions_callees(const struct view_functions *fx, uint32_t i, struct view_tree **out);
/* Appends one line per function, in bytewise name order: its self weight,
 * its total weight and its name (escaped as in folded: view_text_put()),
 * separated by spaces.  -EFBIG past out->max, -ENOMEM. */
int view_render_functions(const struct view_functions *fx, struct view_buf *out);
/* The same, keeping the node ids of `seed` (an earlier callers or callees
 * tree of the same function) as view_tree_build_seeded() does. */
int view_functions_callers_seeded(const struct view_functions *fx, uint32_t i,
                                  const struct view_tree *seed, struct view_tree **out);
int view_functions_callees_seeded(const struct view_functions *fx, uint32_t i,
                                  const struct view_tree *seed, struct view_tree **out);

/* ---- time windows (window.c) ----------------------------------------- */

/* The durations `ls @last` lists, shortest first. */
extern const char *const view_last_durations[];
extern const size_t view_last_duration_count;

/* Parses a duration: a sum of NUMBER UNIT parts, units s, m, h, d, w
 * ("90s", "5m", "1d12h"), at least one second.  Returns 0, -EINVAL or
 * -ERANGE. */
int view_parse_duration(const char *s, int64_t *seconds);
/* Parses a time: Unix seconds ("1795010520") or ISO 8601 in UTC
 * ("2026-11-24T14:02:00Z"; the seconds, and the time of day, may be left
 * out; "Z" or "+00:00" may end it; a space may stand for "T").  Returns
 * 0 or -EINVAL. */
int view_parse_time(const char *s, int64_t *t);
/* The window [*from, *to) of @last/DURATION at time `now`: it ends where
 * the bucket holding `now` ends, and is `seconds` long, so `5m` is the
 * current minute and the four before it. */
void view_window_last(int64_t now, int64_t seconds, uint32_t bucket_seconds, int64_t *from,
                      int64_t *to);
/* Parses a time to the microsecond: what view_parse_time() takes, with
 * an optional fraction of a second of up to 6 digits after the seconds
 * ("1795010520.25", "2026-11-24T14:02:03.250Z").  0 or -EINVAL. */
int view_parse_time_us(const char *s, int64_t *us);
/* Writes a time in microseconds as Unix seconds with the fraction when
 * there is one ("1795010523.25", "1795010523"), and in ISO 8601 UTC
 * ("2026-11-24T14:02:03.25Z"; "-" before STORE_WALL_CLOCK_MIN: perf's
 * clock).  Each fits 40 bytes; return their lengths. */
size_t view_format_us(int64_t us, char out[40]);
size_t view_format_iso_us(int64_t us, char out[40]);
/* Writes a time for people to read: ISO 8601 UTC when it is a wall-clock
 * time (view_format_iso_us), else the clock's seconds with the fraction
 * (view_format_us: perf's clock, seconds since boot).  Fits 40 bytes;
 * returns its length. */
size_t view_format_time_us(int64_t us, char out[40]);

/* One bucket a window cuts (starts or ends inside), summed over the
 * window's series. */
struct view_window_cut {
	int64_t bucket;                       /* its start, seconds */
	int64_t from_us, to_us;               /* the part of it inside the window */
	uint64_t timed_samples, timed_weight; /* samples in that part by their moment */
	/* The bucket's samples without a moment (its counts minus the
	 * detail of all its samples, per node: the whole bucket when the
	 * recent tier holds none of it), taken whole. */
	uint64_t whole_samples, whole_weight;
	bool detail; /* the recent tier held detail of the bucket */
};

/* A window's tree: the half-open window [from_us, to_us) asked, and what
 * it is made of. */
struct view_window {
	int64_t from_us, to_us;
	uint32_t bucket_seconds;
	/* The buckets wholly inside, [whole_from, whole_to] (starts in
	 * seconds; none when whole_from > whole_to), taken from the counts,
	 * and their samples and weight. */
	int64_t whole_from, whole_to;
	uint64_t bucket_samples, bucket_weight;
	unsigned ncut;
	struct view_window_cut cut[2];
};

/* Builds the tree of the half-open window [from_us, to_us) of series[0..n)
 * (as view_tree_build(); seeded like view_tree_build_seeded() unless seed
 * is NULL): each bucket wholly inside from its counts, and for each
 * bucket the window cuts, the detail of its samples inside the window
 * (store_series_samples()) plus its samples without a moment, taken
 * whole (struct view_window_cut says how many).  Empty when to_us <=
 * from_us.  view_tree_window() then tells what it is made of. */
int view_tree_build_window_us(struct store *s, const struct store_series *series, size_t n,
                              int64_t from_us, int64_t to_us, const struct view_tree *seed,
                              struct view_tree **out);
/* The same over [from, to) in seconds. */
int view_tree_build_window(struct store *s, const struct store_series *series, size_t n,
                           int64_t from, int64_t to, struct view_tree **out);
/* The window a tree was built over (view_tree_build_window_us()), or
 * NULL.  Owned by the tree. */
const struct view_window *view_tree_window(const struct view_tree *t);
/* True when no cut bucket had samples taken whole: the window is exact. */
bool view_window_exact(const struct view_window *w);
/* Samples taken whole from cut buckets, and in how many buckets. */
uint64_t view_window_whole_samples(const struct view_window *w, unsigned *buckets);
/* The `window` file of a window's root: what the window is made of (see
 * fs/README.md, "Exact windows").  Nothing for a tree without one. */
int view_render_window(const struct view_tree *t, uint32_t node, struct view_buf *out);

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

/* ---- names inside files ---------------------------------------------- */

enum view_text_flags {
	VIEW_TEXT_FOLDED = 1 << 0, /* also escape ';' (a frame of a folded stack) */
};

/* The text files' escaping (fs/view/README.md, "Names in files"): every
 * byte below 0x20, 0x7f, backslash and the two bytes of U+0080..U+009F (the C1
 * controls in UTF-8) become \xNN (two lower-case hex digits), and so
 * does ';' with VIEW_TEXT_FOLDED; every other byte is kept.  So a name
 * stays on its line, sends a terminal nothing, and stays one frame of a
 * folded stack.  view_text_len() is the escaped length; view_text_put()
 * writes it at out (which has room for it) and returns the end. */
size_t view_text_len(const char *s, size_t len, int flags);
char *view_text_put(char *out, const char *s, size_t len, int flags);
/* Appends the escaped name; 0 or -ENOMEM/-EFBIG. */
int view_text_append(struct view_buf *b, const char *s, size_t len, int flags);
/* Reverses view_text_put(): every \xNN becomes its byte, appended to
 * out.  -EINVAL for a backslash that does not start one. */
int view_text_unescape(const char *s, size_t len, struct view_buf *out);

/* Appends s[0..len) as XML character data or attribute value (SVG): &, <,
 * >, " and ' as entities, control bytes (but tab) and bytes that are not
 * UTF-8 as U+FFFD; at most max_chars characters (at least 2; SIZE_MAX:
 * all), the last two then "..".  Every string an SVG renderer writes goes
 * through it.  0 or -ENOMEM/-EFBIG. */
int view_xml_append(struct view_buf *b, const char *s, size_t len, size_t max_chars);

/* Decodes a directory name made by view_escape() into out (appended;
 * caller owns).  Returns 0 when `out` holds the full original name, 1
 * when the name was shortened (then `out` holds the decoded prefix and
 * the caller must compare candidates with view_escape()), -EINVAL when
 * the name is not a valid escaped name, -ENOMEM. */
int view_unescape(const char *dirname, size_t len, struct view_buf *out);

#endif

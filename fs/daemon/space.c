/*
 * space.c — the tree spaces and their cache.  A space is one tree the
 * view shows (a series' call tree, or a window, diff, callers or callees
 * tree) with what the kernel was told about it: its lookup count, and
 * per node the content version and the `seen` bits.  Spaces are made on
 * first lookup and live while the kernel holds an inode of theirs or
 * their tree is among the TREE_CACHE_SLOTS most recently used; this file
 * builds their trees (the one place that knows what each kind is a tree
 * of), keeps the function indexes of recently listed versions, and counts
 * lookups.  Call with fs.lock held unless a name says otherwise.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon-internal.h"

#define TREE_CACHE_SLOTS 16

void space_put_tree_locked(struct tree_ref *r)
{
	if (r && --r->refs == 0) {
		view_tree_free(r->tree);
		free(r);
		malloc_trim(0);
	}
}

void space_put_tree(struct tree_ref *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&fs.lock);
	space_put_tree_locked(r);
	pthread_mutex_unlock(&fs.lock);
}

void space_drop_tree_locked(struct space *sp)
{
	space_put_tree_locked(sp->tree);
	sp->tree = NULL;
	free(sp->changed);
	free(sp->seen);
	free(sp->gen_time);
	sp->changed = NULL;
	sp->seen = NULL;
	sp->gen_time = NULL;
	sp->nodes_cap = sp->gen_time_cap = 0;
	sp->gen = 0;
}

/* Frees a space the kernel holds nothing of and that has no tree. */
void space_free_locked(struct space *sp)
{
	if (sp->kind == SPACE_SERIES && sp->series_id < fs.space_of_len &&
	    fs.space_of[sp->series_id] == sp->id)
		fs.space_of[sp->series_id] = 0;
	fs.spaces[sp->id] = NULL;
	space_drop_tree_locked(sp);
	free(sp->func);
	free(sp);
}

/* Keeps at most TREE_CACHE_SLOTS trees the kernel holds nothing of. */
void space_trim_locked(void)
{
	for (;;) {
		struct space *lru = NULL;
		unsigned n = 0;
		for (uint32_t i = 1; i < fs.max_space; i++) {
			struct space *sp = fs.spaces[i];
			if (!sp || sp->nlookup > 0)
				continue;
			if (!sp->tree) {
				space_free_locked(sp);
				continue;
			}
			n++;
			if (!lru || sp->last_use < lru->last_use)
				lru = sp;
		}
		if (n <= TREE_CACHE_SLOTS)
			return;
		space_drop_tree_locked(lru);
	}
}

struct space *space_get_locked(uint32_t id)
{
	return id > 0 && id < MAX_SPACES ? fs.spaces[id] : NULL;
}

/* The space of series `series_id`, made if needed.  NULL with *err set. */
struct space *space_for_series_locked(uint32_t series_id, int *err)
{
	if (series_id < fs.space_of_len && fs.space_of[series_id])
		return fs.spaces[fs.space_of[series_id]];
	if (series_id >= fs.space_of_len) {
		uint32_t n = series_id + 64;
		uint32_t *m = realloc(fs.space_of, n * sizeof(*m));
		if (!m) {
			*err = -ENOMEM;
			return NULL;
		}
		memset(m + fs.space_of_len, 0, (n - fs.space_of_len) * sizeof(*m));
		fs.space_of = m;
		fs.space_of_len = n;
	}
	uint32_t id = 1;
	while (id < MAX_SPACES && fs.spaces[id])
		id++;
	if (id >= MAX_SPACES) {
		*err = -ENOSPC;
		return NULL;
	}
	struct space *sp = calloc(1, sizeof(*sp));
	if (!sp) {
		*err = -ENOMEM;
		return NULL;
	}
	sp->id = id;
	sp->series_id = series_id;
	sp->uid = ++fs.next_uid;
	sp->series_mtime = fs.mtime;
	fs.spaces[id] = sp;
	fs.space_of[series_id] = id;
	if (id >= fs.max_space)
		fs.max_space = id + 1;
	return sp;
}

/* The space of another kind with the key `key` holds (kind, series_id,
 * base_id, last, from, to, func), made if needed.  NULL with *err set. */
struct space *space_for_key_locked(const struct space *key, int *err)
{
	uint32_t id, free_id = 0;

	for (id = 1; id < fs.max_space; id++) {
		struct space *sp = fs.spaces[id];
		if (!sp) {
			if (!free_id)
				free_id = id;
			continue;
		}
		if (sp->kind == key->kind && sp->series_id == key->series_id &&
		    sp->base_id == key->base_id && sp->last == key->last && sp->from == key->from &&
		    sp->to == key->to && sp->from2 == key->from2 && sp->to2 == key->to2 &&
		    !sp->gone && sp->func_len == key->func_len &&
		    (!key->func || memcmp(sp->func, key->func, key->func_len) == 0))
			return sp;
	}
	if (!free_id)
		free_id = fs.max_space ? fs.max_space : 1; /* space 0 is the synthetic one */
	if (free_id >= MAX_SPACES) {
		*err = -ENOSPC;
		return NULL;
	}
	struct space *sp = calloc(1, sizeof(*sp));
	if (!sp) {
		*err = -ENOMEM;
		return NULL;
	}
	*sp = *key;
	sp->func = NULL;
	if (key->func && !(sp->func = malloc(key->func_len ? key->func_len : 1))) {
		free(sp);
		*err = -ENOMEM;
		return NULL;
	}
	if (key->func)
		memcpy(sp->func, key->func, key->func_len);
	sp->id = free_id;
	sp->uid = ++fs.next_uid;
	sp->series_mtime = fs.mtime;
	fs.spaces[free_id] = sp;
	if (free_id >= fs.max_space)
		fs.max_space = free_id + 1;
	return sp;
}

/* The files of a space's directories: a diff's (with regressions, shown
 * at its root only) or the call tree's.  Slot f + 1 is file f. */
static const struct view_file regressions_file = {"regressions", view_render_regressions, NULL};
#define DIFF_FILES (view_diff_file_count + 1)
/* A version directory's (a series' or a window's root) stack quality. */
static const struct view_file quality_file = {"quality", view_render_quality, NULL};

/* The timeline files read the store again when rendered (timeline.c):
 * unlike the other renderers, under fs.lock, which guards it. */
static int render_timeline_locked(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	pthread_mutex_lock(&fs.lock);
	int r = view_render_timeline(t, node, out);
	pthread_mutex_unlock(&fs.lock);
	return r;
}

static int render_timeline_svg_locked(const struct view_tree *t, uint32_t node,
                                      struct view_buf *out)
{
	pthread_mutex_lock(&fs.lock);
	int r = view_render_timeline_svg(t, node, out);
	pthread_mutex_unlock(&fs.lock);
	return r;
}

static int render_heatmap_locked(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	pthread_mutex_lock(&fs.lock);
	int r = view_render_heatmap_svg(t, node, out);
	pthread_mutex_unlock(&fs.lock);
	return r;
}

static const struct view_file timeline_file = {"timeline", render_timeline_locked, NULL};
static const struct view_file timeline_svg_file = {"timeline.svg", render_timeline_svg_locked,
                                                   NULL};
static const struct view_file heatmap_file = {"heatmap.svg", render_heatmap_locked, NULL};
/* A window's root (a window's version directory, and /@range/F/T/):
 * what the window is made of. */
static const struct view_file window_file = {"window", view_render_window, NULL};

static bool has_quality(const struct space *sp)
{
	return sp->kind == SPACE_SERIES || sp->kind == SPACE_WINDOW;
}

/* The span files read the store when rendered (spans.c), as timelines do. */
static int render_spans_locked(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	pthread_mutex_lock(&fs.lock);
	int r = view_render_spans(t, node, out);
	pthread_mutex_unlock(&fs.lock);
	return r;
}

static int render_trace_locked(const struct view_tree *t, uint32_t node, struct view_buf *out)
{
	pthread_mutex_lock(&fs.lock);
	int r = view_render_trace(t, node, out);
	pthread_mutex_unlock(&fs.lock);
	return r;
}

static const struct view_file spans_file = {"spans", render_spans_locked, NULL};
static const struct view_file trace_file = {"trace.json", render_trace_locked, NULL};

/* The scope of a space's span records (series_spans_locked()): its view,
 * and for a version directory its binary and version.  False for spaces
 * that show no span file. */
static bool spans_scope_locked(const struct space *sp, uint32_t *view, const char **binary,
                               const char **version)
{
	*binary = *version = NULL;
	if (sp->kind == SPACE_ALL || sp->kind == SPACE_ALL_WINDOW) {
		*view = sp->base_id;
		return true;
	}
	if (sp->kind != SPACE_SERIES && sp->kind != SPACE_WINDOW)
		return false;
	const struct store_series *s = series_by_id_locked(sp->series_id);
	if (!s)
		return false;
	*view = series_view_locked(s);
	*binary = s->binary;
	*version = s->version;
	return true;
}

/* The span files a space's top directory shows after the others: `spans`
 * (a version directory's, and a /@span/<name>/ root's) and `trace.json`
 * (a version directory's, a window's version directory's and a window's
 * root), when its scope has span records; SPAN_FILE_* bits. */
#define SPAN_FILE_SPANS 1u
#define SPAN_FILE_TRACE 2u
static unsigned span_files_locked(const struct space *sp)
{
	uint32_t view;
	const char *binary, *version;
	size_t n = 0;

	if (!spans_scope_locked(sp, &view, &binary, &version) ||
	    (sp->kind == SPACE_ALL && series_view_kind(view) != VIEW_KIND_SPAN) ||
	    series_spans_locked(view, binary, version, NULL, &n) < 0 || !n)
		return 0;
	switch (sp->kind) {
	case SPACE_SERIES: return SPAN_FILE_SPANS | SPAN_FILE_TRACE;
	case SPACE_ALL: return SPAN_FILE_SPANS;
	default: return SPAN_FILE_TRACE;
	}
}

/* The files of a space's top directory before the span files.  With
 * them a version directory has 15, all the inode's slot field holds
 * (daemon-internal.h): a sixteenth file needs a wider field. */
static unsigned top_file_count(const struct space *sp)
{
	switch (sp->kind) {
	case SPACE_ALL: return (unsigned)view_file_count;
	case SPACE_ALL_WINDOW: return (unsigned)view_file_count + 1;
	case SPACE_SERIES: return (unsigned)view_file_count + 2;
	case SPACE_WINDOW: return (unsigned)view_file_count + 3;
	default: return 0;
	}
}

/* Span file f of a space's top directory (f counted from the first span
 * file), or NULL. */
static const struct view_file *span_file_locked(const struct space *sp, unsigned f)
{
	unsigned bits = span_files_locked(sp);

	if ((bits & SPAN_FILE_SPANS) && f-- == 0)
		return &spans_file;
	if ((bits & SPAN_FILE_TRACE) && f == 0)
		return &trace_file;
	return NULL;
}

static unsigned span_file_count_locked(const struct space *sp)
{
	unsigned bits = span_files_locked(sp);

	return !!(bits & SPAN_FILE_SPANS) + !!(bits & SPAN_FILE_TRACE);
}

/* A version directory's `about`: who ran the series it sums (about.c);
 * after quality (and a window's `window`). */
static const struct view_file about_file = {"about", view_render_about, view_about_size};

const struct view_file *space_file(const struct space *sp, unsigned f)
{
	if (!space_is_diff(sp) && top_file_count(sp) && f >= top_file_count(sp))
		return span_file_locked(sp, f - top_file_count(sp));
	if (!space_is_diff(sp)) {
		if (f < view_file_count && view_files[f].render == view_render_timeline)
			return &timeline_file;
		if (f < view_file_count && view_files[f].render == view_render_timeline_svg)
			return &timeline_svg_file;
		if (f < view_file_count && view_files[f].render == view_render_heatmap_svg)
			return &heatmap_file;
		if (f < view_file_count)
			return &view_files[f];
		if (f == view_file_count && has_quality(sp))
			return &quality_file;
		if (f == view_file_count && sp->kind == SPACE_ALL_WINDOW)
			return &window_file;
		if (f == view_file_count + 1 && sp->kind == SPACE_SERIES)
			return &about_file;
		if (f == view_file_count + 1 && sp->kind == SPACE_WINDOW)
			return &window_file;
		return f == view_file_count + 2 && sp->kind == SPACE_WINDOW ? &about_file : NULL;
	}
	if (f < view_diff_file_count)
		return &view_diff_files[f];
	return f == view_diff_file_count ? &regressions_file : NULL;
}

/* The number of files node `node` of a space shows (a whole view's:
 * VIEW_ROOT's). */
unsigned space_file_count(const struct space *sp, uint32_t node)
{
	if (sp->kind == SPACE_ALL)
		return (unsigned)view_file_count + span_file_count_locked(sp);
	if (sp->kind == SPACE_ALL_WINDOW)
		return (unsigned)view_file_count + 1 + span_file_count_locked(sp);
	if ((sp->kind == SPACE_SERIES || sp->kind == SPACE_WINDOW) && node == SPACE_ROOT_NODE)
		return top_file_count(sp) + span_file_count_locked(sp);
	if (sp->kind == SPACE_ALL_WDIFF)
		return DIFF_FILES;
	if (!space_is_diff(sp))
		return (unsigned)view_file_count +
		       (node == SPACE_ROOT_NODE ? 2 * has_quality(sp) + (sp->kind == SPACE_WINDOW)
		                                : 0);
	return node == SPACE_ROOT_NODE ? DIFF_FILES : (unsigned)view_diff_file_count;
}

/* The window [*from, *to) of a window space now, in microseconds (window
 * A of a window diff). */
void space_window_locked(const struct space *sp, int64_t *from, int64_t *to)
{
	if (sp->last) {
		view_window_last(time(NULL), sp->last, store_bucket_seconds(fs.store), from, to);
		*from *= 1000000;
		*to *= 1000000;
		return;
	}
	*from = sp->from;
	*to = sp->to;
}

static int space_build_all_locked(const struct space *sp, const struct view_tree *seed,
                                  struct view_tree **out);

/* The referenced tree of a whole view (series_all_id()): its root's
 * SPACE_ALL space's when built, else built now. */
static int all_tree_locked(uint32_t view, struct tree_ref **out)
{
	for (uint32_t id = 1; id < fs.max_space; id++) {
		struct space *sp = fs.spaces[id];
		if (sp && !sp->gone && sp->kind == SPACE_ALL && sp->base_id == view && sp->tree) {
			sp->tree->refs++;
			*out = sp->tree;
			return 0;
		}
	}
	struct tree_ref *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	struct space key = {.kind = SPACE_ALL, .base_id = view};
	int r = space_build_all_locked(&key, NULL, &t->tree);
	if (r < 0) {
		free(t);
		return r;
	}
	t->refs = 1;
	*out = t;
	return 0;
}

/* A referenced tree of a series, all times: its space's when built (a
 * user usually lists a version before its @functions or @diff), else
 * built now; for series_all_id(v), the whole view's.  Release it with
 * space_put_tree_locked(). */
static int series_tree_locked(uint32_t series_id, struct tree_ref **out)
{
	if (series_id_is_all(series_id))
		return all_tree_locked(series_id - SERIES_ALL_BASE, out);
	const struct store_series *s = series_by_id_locked(series_id);
	uint32_t id = series_id < fs.space_of_len ? fs.space_of[series_id] : 0;
	struct space *sp = id ? fs.spaces[id] : NULL;
	int r;

	if (!s)
		return -ENOENT;
	if (sp && !sp->gone && sp->tree) {
		sp->tree->refs++;
		*out = sp->tree;
		return 0;
	}
	struct tree_ref *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	const struct store_series *m;
	size_t nm;
	series_members_locked(series_id, &m, &nm);
	r = view_tree_build(fs.store, m, nm, INT64_MIN, INT64_MAX, &t->tree);
	if (r < 0) {
		free(t);
		return r;
	}
	t->refs = 1;
	*out = t;
	return 0;
}

/* The function index of a series' tree, from a small cache (per store
 * generation).  *fx and *tree are borrowed under fs.lock. */
int space_functions_locked(uint32_t series_id, struct view_functions **fx, struct tree_ref **tree)
{
	struct fxc *slot = &fs.fxc[0];
	int r;

	for (unsigned i = 0; i < sizeof(fs.fxc) / sizeof(fs.fxc[0]); i++) {
		struct fxc *c = &fs.fxc[i];
		if (c->fx && c->series_id == series_id && c->generation == fs.generation) {
			c->last_use = ++fs.use_clock;
			*fx = c->fx;
			*tree = c->tree;
			return 0;
		}
		if (!c->fx || c->last_use < slot->last_use)
			slot = c;
	}
	struct tree_ref *t;
	r = series_tree_locked(series_id, &t);
	if (r < 0)
		return r;
	struct view_functions *f;
	/* A version's functions are below its binary; a whole view's below
	 * every binary (the root's). */
	r = view_functions_build(t->tree, series_id_is_all(series_id) ? VIEW_ROOT : SPACE_ROOT_NODE,
	                         &f);
	if (r < 0) {
		space_put_tree_locked(t);
		return r;
	}
	view_functions_free(slot->fx);
	space_put_tree_locked(slot->tree);
	*slot = (struct fxc){series_id, fs.generation, t, f, ++fs.use_clock};
	*fx = f;
	*tree = t;
	return 0;
}

/* Grows the per-node arrays to `n` nodes; new nodes changed in `gen`. */
int space_grow_locked(struct space *sp, uint32_t n, uint32_t gen)
{
	if (n > sp->nodes_cap && sp->nodes_cap == 0 && gen == 0) {
		/* A new tree: zeroes from calloc, whose pages (fresh from
		 * mmap for a big tree) nothing touches until a node is looked
		 * up or changes, so no page is faulted in for nodes never read. */
		uint32_t *c = calloc(n, sizeof(*c));
		uint8_t *s = c ? calloc(n, 1) : NULL;
		if (!s) {
			free(c);
			return -ENOMEM;
		}
		free(sp->changed);
		free(sp->seen);
		sp->changed = c;
		sp->seen = s;
		sp->nodes_cap = n;
	} else if (n > sp->nodes_cap) {
		uint32_t *c = realloc(sp->changed, (size_t)n * sizeof(*c));
		if (!c)
			return -ENOMEM;
		sp->changed = c;
		uint8_t *s = realloc(sp->seen, n);
		if (!s)
			return -ENOMEM;
		sp->seen = s;
		for (uint32_t i = sp->nodes_cap; i < n; i++) {
			sp->changed[i] = gen;
			sp->seen[i] = 0;
		}
		sp->nodes_cap = n;
	}
	if (gen >= sp->gen_time_cap) {
		uint32_t cap = sp->gen_time_cap ? sp->gen_time_cap * 2 : 4;
		while (cap <= gen)
			cap *= 2;
		time_t *t = realloc(sp->gen_time, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		sp->gen_time = t;
		sp->gen_time_cap = cap;
	}
	return 0;
}

/* The event of the whole view's tree of the series fs.series[lo, hi):
 * the event the most primary series have (ties: cpu-clock, then the
 * bytewise first), so a root sums what most binaries show.  NULL when
 * there is none. */
const char *space_all_event_locked(size_t lo, size_t hi)
{
	const char *best = NULL;
	size_t best_n = 0;

	for (size_t i = lo; i < hi; i++) {
		if (!fs.primary[i])
			continue;
		const char *e = fs.series[i].event;
		size_t n = 0;
		for (size_t j = lo; j < hi; j++)
			n += fs.primary[j] && strcmp(fs.series[j].event, e) == 0;
		bool cpu = strcmp(e, "cpu-clock") == 0,
		     best_cpu = best && strcmp(best, "cpu-clock") == 0;
		if (n > best_n ||
		    (n == best_n && (cpu > best_cpu || (cpu == best_cpu && strcmp(e, best) < 0)))) {
			best = e;
			best_n = n;
		}
	}
	return best;
}

/* The tree of a SPACE_ALL or SPACE_ALL_WINDOW space: every binary's
 * primary series (the members of each: every host's in view 0) of the
 * view's event, in the window for a window.  An empty window (or no
 * series in it) is an empty tree of the first of them. */
static int space_build_all_locked(const struct space *sp, const struct view_tree *seed,
                                  struct view_tree **out)
{
	if (sp->kind == SPACE_ALL_WDIFF) {
		/* Window B against window A, both whole views. */
		struct space ka = *sp, kb = *sp;
		struct view_tree *a = NULL, *b = NULL;
		ka.kind = kb.kind = SPACE_ALL_WINDOW;
		kb.last = 0;
		kb.from = sp->from2;
		kb.to = sp->to2;
		int r = space_build_all_locked(&ka, NULL, &a);
		if (r == 0)
			r = space_build_all_locked(&kb, NULL, &b);
		if (r == 0)
			r = view_diff_build_seeded(a, VIEW_ROOT, b, VIEW_ROOT, seed, out);
		view_tree_free(a);
		view_tree_free(b);
		return r;
	}
	size_t lo, hi, n = 0, cap = 0;
	int64_t from = INT64_MIN, to = INT64_MAX;
	struct store_series *m;
	int r;

	series_view_range(sp->base_id, &lo, &hi);
	const char *event = space_all_event_locked(lo, hi);
	if (!event)
		return -ENOENT;
	if (sp->kind == SPACE_ALL_WINDOW)
		space_window_locked(sp, &from, &to);
	for (size_t i = lo; i < hi; i++)
		if (fs.primary[i] && strcmp(fs.series[i].event, event) == 0)
			cap += fs.members[i].hi - fs.members[i].lo;
	m = malloc((cap ? cap : 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	const struct store_series *first = NULL;
	for (size_t i = lo; i < hi; i++) {
		if (!fs.primary[i] || strcmp(fs.series[i].event, event) != 0)
			continue;
		if (!first)
			first = &fs.mraw[fs.members[i].lo];
		if (sp->kind == SPACE_ALL_WINDOW && !series_in_window(&fs.series[i], from, to))
			continue;
		for (size_t j = fs.members[i].lo; j < fs.members[i].hi; j++)
			m[n++] = fs.mraw[j]; /* borrowed strings: only read by the build */
	}
	if (!first) {
		free(m);
		return -ENOENT;
	}
	if (n == 0) {
		m[n++] = *first;
		from = 0, to = 0;
	}
	if (sp->kind == SPACE_ALL_WINDOW)
		r = view_tree_build_window_us(fs.store, m, n, from, to, seed, out);
	else
		r = view_tree_build_seeded(fs.store, m, n, from, to, seed, out);
	free(m);
	return r;
}

/* Tells a tree of a series or a whole view where its directories are in
 * their view (heatmap.svg's links): the window directories above, and
 * the version directory (by the version's own name, or <version>@<event>
 * for a series that is not the version's primary). */
static int space_place_locked(const struct space *sp, struct view_tree *t)
{
	char top[3 * VIEW_NAME_MAX + 4] = "";
	unsigned between = 0;

	if (sp->kind == SPACE_WINDOW || sp->kind == SPACE_ALL_WINDOW)
		between = sp->last ? 2 : 3;
	else if (sp->kind != SPACE_SERIES && sp->kind != SPACE_ALL)
		return 0; /* diffs, callers, callees: no heatmap of their own */
	if (!space_is_all(sp)) {
		const struct store_series *s = series_by_id_locked(sp->series_id);
		if (!s)
			return 0;
		char b[VIEW_NAME_MAX + 1], v[VIEW_NAME_MAX + 1], e[VIEW_NAME_MAX + 1];
		bool primary = fs.primary[s - fs.series];
		view_escape(s->binary, strlen(s->binary), 0, b);
		view_escape(s->version, strlen(s->version), VIEW_ESCAPE_AT, v);
		view_escape(s->event, strlen(s->event), 0, e);
		snprintf(top, sizeof(top), "%s/%s%s%s", b, v, primary ? "" : "@", primary ? "" : e);
	}
	return view_tree_set_place(t, between, top);
}

static int space_build_kind_locked(const struct space *sp, const struct view_tree *seed,
                                   struct view_tree **out);

/* Gives a version directory's tree its `about`: the series it sums. */
static int space_about_locked(const struct space *sp, struct view_tree *t)
{
	const struct store_series *m;
	size_t n;

	if (!has_quality(sp))
		return 0;
	series_members_locked(sp->series_id, &m, &n);
	return n ? view_tree_set_about(t, m, n) : 0;
}

/* Gives a tree the span records of its scope (spans_scope_locked()). */
static int space_spans_locked(const struct space *sp, struct view_tree *t)
{
	uint32_t view;
	const char *binary, *version;
	struct store_series *spans;
	size_t n;
	int r;

	if (!spans_scope_locked(sp, &view, &binary, &version))
		return 0;
	r = series_spans_locked(view, binary, version, &spans, &n);
	if (r == 0 && n)
		r = view_tree_set_spans(t, spans, n, fs.raw, fs.nraw);
	free(spans);
	return r;
}

/* Builds the tree a space shows, seeded with `seed` (NULL: afresh), and
 * tells it where it is and, at a version directory, what it is about and
 * which span records its scope has. */
int space_build_tree_locked(const struct space *sp, const struct view_tree *seed,
                            struct view_tree **out)
{
	int r = space_build_kind_locked(sp, seed, out);

	if (r == 0 &&
	    ((r = space_place_locked(sp, *out)) < 0 || (r = space_about_locked(sp, *out)) < 0 ||
	     (r = space_spans_locked(sp, *out)) < 0)) {
		view_tree_free(*out);
		*out = NULL;
	}
	return r;
}

/* The one place that knows what each kind of space is a tree of; a new
 * kind (a time window, a diff) is a case here and a key in struct
 * space. */
static int space_build_kind_locked(const struct space *sp, const struct view_tree *seed,
                                   struct view_tree **out)
{
	const struct store_series *s;
	size_t n;
	int r;

	if (space_is_all(sp))
		return space_build_all_locked(sp, seed, out);
	/* A series of the view sums its members: one host's series each
	 * (the root's callers and callees have none: series_all_id()). */
	series_members_locked(sp->series_id, &s, &n);
	if (!n && !series_id_is_all(sp->series_id))
		return -ENOENT;
	switch (sp->kind) {
	case SPACE_SERIES:
		return view_tree_build_seeded(fs.store, s, n, INT64_MIN, INT64_MAX, seed, out);
	case SPACE_WINDOW: {
		int64_t from, to;
		space_window_locked(sp, &from, &to);
		return view_tree_build_window_us(fs.store, s, n, from, to, seed, out);
	}
	case SPACE_WDIFF: {
		int64_t from, to;
		struct view_tree *a = NULL, *b = NULL;
		space_window_locked(sp, &from, &to);
		r = view_tree_build_window_us(fs.store, s, n, from, to, NULL, &a);
		if (r == 0)
			r = view_tree_build_window_us(fs.store, s, n, sp->from2, sp->to2, NULL, &b);
		if (r == 0)
			r = view_diff_build_seeded(a, SPACE_ROOT_NODE, b, SPACE_ROOT_NODE, seed,
			                           out);
		view_tree_free(a);
		view_tree_free(b);
		return r;
	}
	case SPACE_DIFF: {
		struct tree_ref *ta, *tb;
		r = series_tree_locked(sp->base_id, &ta);
		if (r < 0)
			return r;
		r = series_tree_locked(sp->series_id, &tb);
		if (r == 0) {
			r = view_diff_build_seeded(ta->tree, SPACE_ROOT_NODE, tb->tree,
			                           SPACE_ROOT_NODE, seed, out);
			space_put_tree_locked(tb);
		}
		space_put_tree_locked(ta);
		return r;
	}
	case SPACE_ALL:
	case SPACE_ALL_WINDOW:
	case SPACE_ALL_WDIFF: break; /* above */
	case SPACE_CALLERS:
	case SPACE_CALLEES: {
		struct view_functions *fx;
		struct tree_ref *t;
		r = space_functions_locked(sp->series_id, &fx, &t);
		if (r < 0)
			return r;
		uint32_t i = view_functions_find(fx, sp->func, sp->func_len);
		if (i == VIEW_NONE)
			return -ENOENT;
		return sp->kind == SPACE_CALLERS ? view_functions_callers_seeded(fx, i, seed, out)
		                                 : view_functions_callees_seeded(fx, i, seed, out);
	}
	}
	return -EINVAL;
}

/* Builds the tree of a space that has none (node ids start afresh: the
 * kernel holds at most its root directory, SPACE_ROOT_NODE in every
 * build). */
int space_build_locked(struct space *sp)
{
	struct tree_ref *t;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = space_build_tree_locked(sp, NULL, &t->tree);
	if (r < 0) {
		free(t);
		return r;
	}
	malloc_trim(0); /* give the build's scratch tables back */
	size_t len;
	if (space_is_all(sp))
		; /* files of VIEW_ROOT only: any tree, an empty one too */
	else if (view_tree_node_count(t->tree) <= SPACE_ROOT_NODE ||
	         view_node_parent(t->tree, SPACE_ROOT_NODE) != VIEW_ROOT ||
	         view_node_child_count(t->tree, VIEW_ROOT) != 1 ||
	         !view_node_name(t->tree, SPACE_ROOT_NODE, &len)) {
		view_tree_free(t->tree);
		free(t);
		return -EIO;
	}
	t->refs = 1;
	sp->tree = t;
	sp->gen = 0;
	/* Node ids and content versions start afresh, so (node, version)
	 * may name other bytes than before the tree was dropped: the render
	 * cache's renderings and lengths of the old tree must not be found.
	 * A root's files are keyed by files_version, which does not restart. */
	if (!space_is_all(sp))
		sp->uid = ++fs.next_uid;
	r = space_grow_locked(sp, view_tree_node_count(t->tree), 0);
	if (r < 0) {
		space_drop_tree_locked(sp);
		return r;
	}
	sp->gen_time[0] = sp->series_mtime;
	sp->last_use = ++fs.use_clock;
	space_trim_locked(); /* at most TREE_CACHE_SLOTS unreferenced trees */
	return 0;
}

time_t space_node_mtime(const struct space *sp, uint32_t node)
{
	return sp->tree ? sp->gen_time[sp->changed[node]] : sp->series_mtime;
}

/* Counts a lookup the kernel is about to be told of. */
void space_count_lookup_locked(const struct ino *i)
{
	if (i->space == 0)
		return;
	struct space *sp = fs.spaces[i->space];
	sp->nlookup++;
	if (sp->seen && i->node < sp->nodes_cap)
		sp->seen[i->node] |= 1u << i->alias;
}

void space_uncount_lookup_locked(const struct ino *i, uint64_t n)
{
	struct space *sp = space_get_locked(i->space);

	if (!sp)
		return;
	sp->nlookup = n > sp->nlookup ? 0 : sp->nlookup - n;
	if (sp->nlookup == 0 && (sp->gone || !sp->tree))
		space_free_locked(sp);
}

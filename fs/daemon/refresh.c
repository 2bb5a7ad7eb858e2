/*
 * refresh.c — catching up with the store and telling the kernel.  Once a
 * second (from a request, or from the invalidator thread when the kernel
 * asks nothing), the RocksDB secondary is refreshed; when it moved, the
 * series list is reloaded and every space the kernel holds is rebuilt
 * seeded with its old tree and compared node by node, and exactly the
 * changed nodes' attributes, listings and entries are invalidated, before
 * any reply can show the new data.  See fs/README.md ("Invalidation").
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon-internal.h"

#define REFRESH_INTERVAL_NS 1000000000LL

/* ---- invalidation --------------------------------------------------------

   Attribute invalidations (fuse_lowlevel_notify_inval_inode with a
   negative offset) take no lock in the kernel that a pending request may
   hold, so they are sent at once, under fs.lock, before the new generation
   is published: no reply can show new data while an old size is cached.
   Entry invalidations take the parent directory's lock, which a lookup
   waiting for fs.lock holds, so a thread of their own sends them. */

static void inval_attr(fuse_ino_t ino)
{
	if (fs.se)
		fuse_lowlevel_notify_inval_inode(fs.se, ino, -1, 0);
}

/* For ops.c: a file's size became known (its first rendering), so the
 * kernel's cached attributes, which say 0, are dropped. */
void refresh_inval_attr(fuse_ino_t ino)
{
	inval_attr(ino);
}

/* A directory's attributes and its cached listing (the kernel caches
 * listings: see op_opendir).  Dropping the listing locks its pages only,
 * which the kernel never holds across a request, so this is as safe. */
static void inval_dir(fuse_ino_t ino)
{
	if (fs.se)
		fuse_lowlevel_notify_inval_inode(fs.se, ino, 0, 0);
}

static void queue_inval_entry_locked(fuse_ino_t parent, const char *name, size_t len)
{
	struct inval *iv = malloc(sizeof(*iv) + len + 1);

	if (!iv)
		return; /* the entry times out instead (CACHE_TIMEOUT) */
	iv->next = NULL;
	iv->parent = parent;
	iv->len = len;
	memcpy(iv->name, name, len);
	iv->name[len] = '\0';
	*fs.inval_tail = iv;
	fs.inval_tail = &iv->next;
	pthread_cond_signal(&fs.inval_cond);
}

/* The invalidator thread: sends queued entry invalidations, and catches
 * up with the store once a second on its own.  The kernel may answer
 * every request from its caches for as long as nothing is invalidated, so
 * a refresh that waited for a request could wait for ever. */
void *refresh_invalidator(void *arg)
{
	pthread_mutex_lock(&fs.lock);
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		while (!fs.inval_head && !fs.inval_stop) {
			if (pthread_cond_timedwait(&fs.inval_cond, &fs.lock, &until) == ETIMEDOUT) {
				refresh_maybe_locked();
				break;
			}
		}
		if (fs.inval_stop)
			break;
		struct inval *list = fs.inval_head;
		fs.inval_head = NULL;
		fs.inval_tail = &fs.inval_head;
		pthread_mutex_unlock(&fs.lock);
		while (list) {
			struct inval *next = list->next;
			fuse_lowlevel_notify_inval_entry(fs.se, list->parent, list->name,
			                                 list->len);
			free(list);
			list = next;
		}
		pthread_mutex_lock(&fs.lock);
	}
	pthread_mutex_unlock(&fs.lock);
	return NULL;
}

static fuse_ino_t node_dir_ino(const struct space *sp, bool alias, uint32_t node)
{
	return inode_make((struct ino){.space = sp->id, .alias = alias, .node = node});
}

static bool counts_differ(const struct view_tree *a, const struct view_tree *b, uint32_t n)
{
	struct view_counts x, y;

	view_node_counts(a, n, &x);
	view_node_counts(b, n, &y);
	return x.self_weight != y.self_weight || x.self_samples != y.self_samples ||
	       x.total_weight != y.total_weight || x.total_samples != y.total_samples ||
	       view_folded_size(a, n) != view_folded_size(b, n);
}

/* Replaces a space's tree by `nt`, built seeded with it, and invalidates
 * what the kernel was told about every node whose subtree changed. */
static int space_update_locked(struct space *sp, struct tree_ref *nt, time_t now)
{
	const struct view_tree *ot = sp->tree->tree, *t = nt->tree;
	uint32_t on = view_tree_node_count(ot), nn = view_tree_node_count(t);
	uint32_t gen = sp->gen + 1;
	uint8_t *ch = calloc(on ? on : 1, 1);
	int r;

	if (!ch)
		return -ENOMEM;
	for (uint32_t n = 1; n < on; n++)
		if (view_node_visible(ot, n) &&
		    (!view_node_visible(t, n) || counts_differ(ot, t, n)))
			ch[n] = 1;
	for (uint32_t n = on; n-- > SPACE_ROOT_NODE + 1;)
		if (ch[n])
			ch[view_node_parent(ot, n)] = 1;
	r = space_grow_locked(sp, nn, gen);
	if (r < 0) {
		free(ch);
		return r;
	}
	for (uint32_t n = 1; n < on; n++) {
		if (!ch[n])
			continue;
		uint32_t old_version = sp->changed[n];
		sp->changed[n] = gen;
		for (int alias = 0; alias < 2; alias++) {
			if (!(sp->seen[n] & (1u << alias)))
				continue;
			inval_dir(node_dir_ino(sp, alias, n));
			for (unsigned f = 0; f < space_file_count(sp, n); f++) {
				fuse_ino_t old = inode_make((struct ino){.space = sp->id,
				                                         .alias = alias,
				                                         .node = n,
				                                         .slot = f + 1,
				                                         .version = old_version});
				inval_attr(old);
				if (view_node_visible(t, n))
					queue_inval_entry_locked(node_dir_ino(sp, alias, n),
					                         space_file(sp, f)->name,
					                         strlen(space_file(sp, f)->name));
			}
			if (!view_node_visible(t, n) && n > SPACE_ROOT_NODE) {
				char esc[VIEW_NAME_MAX + 1];
				size_t len;
				const char *name = view_node_name(ot, n, &len);
				size_t elen = view_escape(name, len, 0, esc);
				queue_inval_entry_locked(
				        node_dir_ino(sp, alias, view_node_parent(ot, n)), esc,
				        elen);
			}
		}
	}
	free(ch);
	sp->gen = gen;
	sp->gen_time[gen] = now;
	space_put_tree_locked(sp->tree);
	sp->tree = nt;
	return 0;
}

static bool series_same(const struct store_series *a, const struct store_series *b)
{
	/* The recent tier too: a roll-up changes what a window can cut. */
	return a->samples == b->samples && a->weight == b->weight &&
	       a->first_seen == b->first_seen && a->last_seen == b->last_seen &&
	       a->input_bytes == b->input_bytes && a->recent_samples == b->recent_samples &&
	       a->first_us == b->first_us && a->last_us == b->last_us;
}

/* After a refresh: queues entry invalidations for the version entries of
 * the old list that name something else now or nothing. */
struct old_entry_ctx {
	fuse_ino_t parent;
	size_t lo, hi; /* the binary's range in the new list */
};

static int old_entry_cb(void *ctx, const char *name, size_t len, uint32_t series_id, bool alias)
{
	struct old_entry_ctx *c = ctx;
	struct find_version fv = {.name = name, .len = len, .series_id = UINT32_MAX};

	series_each_version(fs.series, c->lo, c->hi, series_find_version_cb, &fv);
	if (fv.series_id != series_id || fv.alias != alias)
		queue_inval_entry_locked(c->parent, name, len);
	return 0;
}

/* The series lists a new one replaced, freed after the refresh compared
 * them. */
struct old_lists {
	struct store_series *series, *raw, *mraw;
	size_t nseries, nraw;
	struct members *members;
	size_t *view_lo, *view_hi;
};

static void old_lists_free(struct old_lists *o)
{
	store_series_free(o->series, o->nseries);
	store_series_free(o->raw, o->nraw);
	free(o->mraw);
	free(o->members);
	free(o->view_lo);
	free(o->view_hi);
}

/* Installs the store's new series list `raw` (taking it, also on
 * failure): the view series, indexes, primaries, binaries' ranges; *old
 * gets the lists it replaced. */
static int install_series_locked(struct store_series *raw, size_t nraw, struct old_lists *old)
{
	struct store_series *list, *mraw;
	struct members *members;
	size_t n, *view_lo, *view_hi;
	uint32_t max_id = 0;
	size_t *by_id;
	bool *primary;
	int r = series_make_views_locked(raw, nraw, &list, &n, &mraw, &members, &view_lo, &view_hi);

	if (r < 0) {
		store_series_free(raw, nraw);
		return r;
	}
	for (size_t i = 0; i < n; i++)
		if (list[i].id > max_id)
			max_id = list[i].id;
	by_id = calloc((size_t)max_id + 1, sizeof(*by_id));
	primary = calloc(n ? n : 1, sizeof(*primary));
	if (!by_id || !primary) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		by_id[list[i].id] = i + 1;
	for (size_t i = 0; i < n;) {
		size_t j = series_binary_end(list, n, i), k = i;
		while (k < j) { /* the versions of one binary in one view */
			size_t e = k;
			while (e < j && strcmp(list[e].version, list[k].version) == 0)
				e++;
			primary[series_primary(list, k, e)] = true;
			k = e;
		}
		i = j;
	}
	for (size_t i = 1; i < fs.nsdirs; i++)
		fs.sdirs[i].lo = fs.sdirs[i].hi = 0;
	*old = (struct old_lists){fs.series, fs.raw,     fs.mraw,    fs.nseries,
	                          fs.nraw,   fs.members, fs.view_lo, fs.view_hi};
	fs.series = list;
	fs.nseries = n;
	fs.raw = raw;
	fs.nraw = nraw;
	fs.nraw_spans = 0;
	for (size_t i = 0; i < nraw; i++)
		fs.nraw_spans += series_is_spans(&raw[i]);
	fs.mraw = mraw;
	fs.members = members;
	fs.view_lo = view_lo;
	fs.view_hi = view_hi;
	free(fs.by_id);
	free(fs.primary);
	fs.by_id = by_id;
	fs.by_id_len = max_id + 1;
	fs.primary = primary;
	for (size_t i = 0; i < n;) {
		size_t hi = series_binary_end(list, n, i), d;
		/* Making a directory can fail only for memory; its binary
		 * then shows no versions until the next refresh. */
		if (synth_binary_locked(list[i].binary, series_view_locked(&list[i]), &d) == 0) {
			fs.sdirs[d].lo = i;
			fs.sdirs[d].hi = hi;
		}
		i = hi;
	}
	return 0;
fail:
	free(by_id);
	free(primary);
	store_series_free(list, n);
	free(mraw);
	free(members);
	free(view_lo);
	free(view_hi);
	store_series_free(raw, nraw);
	return r;
}

int refresh_load_series_locked(void)
{
	struct store_series *list;
	struct old_lists old;
	size_t n;
	int r = store_series_list(fs.store, &list, &n);

	if (r < 0)
		return r;
	r = install_series_locked(list, n, &old);
	if (r < 0)
		return r;
	old_lists_free(&old);
	return 0;
}

static int refresh_spaces_locked(const struct store_series *old, size_t nold, time_t now,
                                 bool window_moved);

/* Where the time bucket holding `now` ends: @last windows move when it
 * does. */
int64_t refresh_bucket_end_now(void)
{
	int64_t from, to;

	view_window_last(time(NULL), 1, store_bucket_seconds(fs.store), &from, &to);
	return to;
}

void refresh_maybe_locked(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	long long ns = (now.tv_sec - fs.last_refresh.tv_sec) * 1000000000LL +
	               (now.tv_nsec - fs.last_refresh.tv_nsec);
	if (ns < REFRESH_INTERVAL_NS)
		return;
	fs.last_refresh = now;
	uint64_t before = store_sequence(fs.store);
	int r = store_refresh(fs.store);
	int64_t end = refresh_bucket_end_now();
	/* Said once per change of state, not once a second: the log of a
	 * view whose database is away for an hour holds two lines. */
	const char *what = store_is_database(store_where(fs.store)) ? "database" : "store";
	if (r < 0 && !fs.store_down)
		fprintf(stderr, "flamefs: %s unreachable: %s\n", what, store_errmsg(fs.store));
	else if (r >= 0 && fs.store_down)
		fprintf(stderr, "flamefs: %s back: %s\n", what, store_where(fs.store));
	fs.store_down = r < 0;
	bool moved = end != fs.last_bucket_end;
	fs.last_bucket_end = end;
	if (r <= 0 && store_sequence(fs.store) == before) {
		/* Only time went on: @last windows moved to the next bucket. */
		if (moved)
			refresh_spaces_locked(fs.series, fs.nseries, time(NULL), true);
		return;
	}

	struct store_series *list;
	struct old_lists old;
	size_t n;
	if (store_series_list(fs.store, &list, &n) < 0)
		return;
	if (install_series_locked(list, n, &old) < 0)
		return;
	time_t wall = time(NULL);
	fs.mtime = wall;
	/* Frames that took names (symbolize) change no series: every
	 * view is built again, as if all had changed. */
	uint64_t renames = store_renames(fs.store);
	bool renamed = renames != fs.last_renames;
	fs.last_renames = renames;
	refresh_spaces_locked(renamed ? NULL : old.series, renamed ? 0 : old.nseries, wall, moved);
	old_lists_free(&old);
	fs.generation++;
}

/* Is series `id` in `old` and the same now? */
static bool series_unchanged_locked(const struct store_series *old, size_t nold, uint32_t id)
{
	const struct store_series *s = series_by_id_locked(id);

	for (size_t i = 0; i < nold; i++)
		if (old[i].id == id)
			return s && series_same(&old[i], s);
	return false;
}

/* Did any series of view `view` change from `old` to fs.series? */
static bool view_changed_locked(const struct store_series *old, size_t nold, uint32_t view)
{
	size_t lo, hi, n_old = 0;

	series_view_range(view, &lo, &hi);
	for (size_t i = 0; i < nold; i++)
		n_old += series_view_locked(&old[i]) == view;
	if (n_old != hi - lo)
		return true;
	for (size_t i = lo; i < hi; i++)
		if (!series_unchanged_locked(old, nold, fs.series[i].id))
			return true;
	return false;
}

/* A whole view's files (SPACE_ALL*) after a refresh: when its view
 * changed (or a @last window moved), the files get a new version, the
 * kernel drops the old numbers' attributes and the names' entries in the
 * root that lists them, and the tree is built again when next opened. */
static void space_all_refresh_locked(struct space *sp, const struct store_series *old, size_t nold,
                                     time_t now, bool window_moved)
{
	if (!view_changed_locked(old, nold, sp->base_id) &&
	    !(sp->kind != SPACE_ALL && sp->last && window_moved))
		return;
	uint32_t old_version = sp->files_version++;
	sp->series_mtime = now;
	for (unsigned f = 0; f < space_file_count(sp, VIEW_ROOT); f++) {
		const char *name = space_file(sp, f)->name;
		inval_attr(inode_make((struct ino){.space = sp->id,
		                                   .node = VIEW_ROOT,
		                                   .slot = f + 1,
		                                   .version = old_version & VERSION_MASK}));
		queue_inval_entry_locked(inode_make((struct ino){.node = sp->parent_sdir}), name,
		                         strlen(name));
	}
	space_drop_tree_locked(sp);
}

/* The listings of the views' synthetic directories follow the series
 * (and the clock, for @last): invalidated, and a host gone leaves
 * /@host. */
static void inval_sdirs_locked(void)
{
	for (size_t d = 1; d < fs.nsdirs; d++) {
		enum sdir_kind k = fs.sdirs[d].kind;
		if (k == SD_WINDOW || k == SD_WBINARY || k == SD_DIFF || k == SD_DIFFA ||
		    k == SD_FUNCS || k == SD_HOSTS || k == SD_ROOT || k == SD_WDROOT ||
		    k == SD_WDBINARY)
			inval_dir(inode_make((struct ino){.node = (uint32_t)d}));
		/* A host or label value gone: its entry in /@host, /@cgroup, ... */
		size_t lo, hi;
		series_view_range(fs.sdirs[d].view, &lo, &hi);
		if (k == SD_ROOT && fs.sdirs[d].view && lo == hi) {
			const char *h = series_view_value(fs.sdirs[d].view);
			char esc[VIEW_NAME_MAX + 1];
			size_t len = view_escape(h, strlen(h), 0, esc);
			queue_inval_entry_locked(
			        inode_make((struct ino){.node = fs.sdirs[d].parent}), esc, len);
		}
		/* A label no series carries now: /@cgroup, ... in the root. */
		int kind = (int)fs.sdirs[d].series_id;
		if (k == SD_HOSTS && kind != VIEW_KIND_HOST && kind < VIEW_KINDS &&
		    !series_kind_present(kind)) {
			char name[VIEW_NAME_MAX + 1];
			int len = snprintf(name, sizeof(name), "@%s", view_kind_names[kind]);
			queue_inval_entry_locked(FUSE_ROOT_ID, name, (size_t)len);
		}
	}
}

/* Everything a refresh changes in what the kernel was told: the store
 * moved from `old` to fs.series, or (window_moved) only time went on to
 * the next bucket, which moves every @last window. */
static int refresh_spaces_locked(const struct store_series *old, size_t nold, time_t now,
                                 bool window_moved)
{
	inval_sdirs_locked();
	/* The root's and binaries' listings: entries gone or retargeted. */
	inval_dir(FUSE_ROOT_ID);
	for (size_t i = 0; i < nold;) {
		size_t hi = series_binary_end(old, nold, i), d;
		if (synth_binary_locked(old[i].binary, series_view_locked(&old[i]), &d) == 0) {
			fuse_ino_t bino = inode_make((struct ino){.node = (uint32_t)d});
			inval_dir(bino);
			if (fs.sdirs[d].lo == fs.sdirs[d].hi) {
				char esc[VIEW_NAME_MAX + 1];
				size_t len =
				        view_escape(old[i].binary, strlen(old[i].binary), 0, esc);
				queue_inval_entry_locked(
				        inode_make((struct ino){.node = fs.sdirs[d].parent}), esc,
				        len);
			}
			struct old_entry_ctx c = {bino, fs.sdirs[d].lo, fs.sdirs[d].hi};
			series_each_version(old, i, hi, old_entry_cb, &c);
		}
		i = hi;
	}

	/* The function indexes were of the old trees. */
	if (old != fs.series)
		for (unsigned i = 0; i < sizeof(fs.fxc) / sizeof(fs.fxc[0]); i++) {
			view_functions_free(fs.fxc[i].fx);
			space_put_tree_locked(fs.fxc[i].tree);
			memset(&fs.fxc[i], 0, sizeof(fs.fxc[i]));
		}
	/* The trees: the series' first, since diffs, callers and callees are
	 * built from them. */
	for (uint32_t n = 1; n < 2 * fs.max_space; n++) {
		uint32_t id = n < fs.max_space ? n : n - fs.max_space + 1;
		struct space *sp = fs.spaces[id];
		/* First the series' and the whole views' (the root's callers
		 * and callees are built from those). */
		bool first = sp && (sp->kind == SPACE_SERIES || space_is_all(sp));
		if (!sp || sp->gone || first != (n < fs.max_space))
			continue;
		if (space_is_all(sp)) {
			space_all_refresh_locked(sp, old, nold, now, window_moved);
			continue;
		}
		bool all = series_id_is_all(sp->series_id); /* the root's callers, callees */
		const struct store_series *s = all ? NULL : series_by_id_locked(sp->series_id);
		if ((!s && !all) || (sp->kind == SPACE_DIFF && !series_by_id_locked(sp->base_id))) {
			/* Pruned: its inodes are stale from now on. */
			sp->gone = true;
			space_drop_tree_locked(sp);
			continue;
		}
		bool changed = all ? view_changed_locked(old, nold, sp->series_id - SERIES_ALL_BASE)
		                   : (!series_unchanged_locked(old, nold, sp->series_id) ||
		                      (sp->kind == SPACE_DIFF &&
		                       !series_unchanged_locked(old, nold, sp->base_id)) ||
		                      ((sp->kind == SPACE_WINDOW || sp->kind == SPACE_WDIFF) &&
		                       sp->last && window_moved));
		if (!changed)
			continue;
		sp->series_mtime = now;
		for (int alias = 0; alias < 2; alias++)
			inval_dir(node_dir_ino(sp, alias, SPACE_ROOT_NODE));
		if (!sp->tree)
			continue;
		if (sp->nlookup == 0 || !sp->seen) {
			space_drop_tree_locked(sp);
			continue;
		}
		struct tree_ref *nt = calloc(1, sizeof(*nt));
		int r = nt ? space_build_tree_locked(sp, sp->tree->tree, &nt->tree) : -ENOMEM;
		if (r == 0) {
			nt->refs = 1;
			r = space_update_locked(sp, nt, now);
			if (r < 0)
				space_put_tree_locked(nt);
		} else {
			free(nt);
		}
		if (r < 0) {
			/* The ids cannot be kept: the space's inodes go stale
			 * (ESTALE), and the series gets a new space. */
			sp->gone = true;
			space_drop_tree_locked(sp);
			if (sp->kind == SPACE_SERIES)
				fs.space_of[sp->series_id] = 0;
		}
		malloc_trim(0);
	}
	return 0;
}

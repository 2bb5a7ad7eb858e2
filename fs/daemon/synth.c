/*
 * synth.c — the synthetic directories (space 0): the root, one per
 * binary, and the views' own directories (@last, @range, a window and its
 * binaries, @diff, @diff/<A>, @functions, a function, @host and a host's
 * root, under which all of them exist again for that host alone, and so
 * @cgroup, @container, @thread, @span and a label value's root).  They are made on
 * first lookup and kept for the mount's life (an index is an inode
 * number), found again by their key through a hash.  Each kind is one
 * entry of a table of operations (lookup: name -> inode; list); the trees
 * below them are spaces (space.c).  Call with fs.lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon-internal.h"

/* ---- the registry: synthetic directories by key ------------------------- */

#define SDIR_HASH 65536u

static uint64_t sdir_key_hash(const struct sdir *k)
{
	uint64_t h = 1469598103934665603ull;
	const uint64_t nums[] = {
	        k->kind,      (uint64_t)k->last, (uint64_t)k->from,  (uint64_t)k->to,
	        k->series_id, k->view,           (uint64_t)k->from2, (uint64_t)k->to2};

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		h = (h ^ nums[i]) * 1099511628211ull;
	for (size_t i = 0; k->name && i < k->name_len; i++)
		h = (h ^ (unsigned char)k->name[i]) * 1099511628211ull;
	for (const char *v = k->version; v && *v; v++)
		h = (h ^ (unsigned char)*v) * 1099511628211ull;
	return h;
}

static bool sdir_key_equal(const struct sdir *a, const struct sdir *b)
{
	return a->kind == b->kind && a->last == b->last && a->from == b->from && a->to == b->to &&
	       a->from2 == b->from2 && a->to2 == b->to2 && a->series_id == b->series_id &&
	       a->view == b->view && a->name_len == b->name_len &&
	       (!a->name_len || memcmp(a->name, b->name, a->name_len) == 0) &&
	       !a->version == !b->version && (!a->version || strcmp(a->version, b->version) == 0);
}

/* The index of the synthetic directory with `key`'s kind and key fields
 * (name and name_len, version, last, from, to, series_id, view), made if new
 * (with key->parent as its parent).  Indexes are inode numbers: kept. */
int synth_get_locked(const struct sdir *key, size_t *out)
{
	if (!fs.sdir_hash) {
		fs.sdir_hash = calloc(SDIR_HASH, sizeof(*fs.sdir_hash));
		if (!fs.sdir_hash)
			return -ENOMEM;
	}
	uint32_t b = (uint32_t)(sdir_key_hash(key) & (SDIR_HASH - 1));
	for (uint32_t d = fs.sdir_hash[b]; d; d = fs.sdirs[d - 1].hnext)
		if (sdir_key_equal(&fs.sdirs[d - 1], key)) {
			*out = d - 1;
			return 0;
		}
	if (fs.nsdirs >= UINT32_MAX - 1)
		return -ENOSPC;
	if (fs.nsdirs == fs.sdirs_cap) {
		size_t cap = fs.sdirs_cap * 2;
		struct sdir *d = realloc(fs.sdirs, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		fs.sdirs = d;
		fs.sdirs_cap = cap;
	}
	struct sdir sd = *key;
	sd.name = NULL;
	sd.version = NULL;
	if ((key->name && !(sd.name = malloc(key->name_len + 1))) ||
	    (key->version && !(sd.version = strdup(key->version)))) {
		free(sd.name);
		return -ENOMEM;
	}
	if (key->name) {
		memcpy(sd.name, key->name, key->name_len);
		sd.name[key->name_len] = '\0';
	}
	sd.hnext = fs.sdir_hash[b];
	sd.index = (uint32_t)fs.nsdirs;
	fs.sdirs[fs.nsdirs] = sd;
	fs.sdir_hash[b] = (uint32_t)fs.nsdirs + 1;
	*out = fs.nsdirs++;
	return 0;
}

static int sdir_ino_locked(const struct sdir *key, struct ino *out)
{
	size_t d = 0;
	int r = synth_get_locked(key, &d);

	*out = (struct ino){.node = (uint32_t)d};
	return r;
}

/* An sdir's index.  Operations work on a copy of their sdir (making one
 * may move fs.sdirs), so the index is kept in it. */
static uint32_t sdir_index(const struct sdir *sd)
{
	return sd->index;
}

/* Decodes an escaped directory name into a NUL-terminated string (the
 * caller frees it); NULL when it is no canonical escaped name. */
static char *unescaped(const char *comp, size_t len, int flags, size_t *out_len)
{
	struct view_buf raw = {0};

	if (view_unescape(comp, len, &raw) != 0 || view_buf_append(&raw, "", 0) < 0 ||
	    !inode_names(comp, len, raw.data, raw.len, flags)) {
		view_buf_free(&raw);
		return NULL;
	}
	*out_len = raw.len;
	return raw.data;
}

/* The window a window directory shows now, in microseconds. */
static void sdir_window(const struct sdir *sd, int64_t *from, int64_t *to)
{
	if (sd->last) {
		view_window_last(time(NULL), sd->last, store_bucket_seconds(fs.store), from, to);
		*from *= 1000000;
		*to *= 1000000;
	} else {
		*from = sd->from;
		*to = sd->to;
	}
}

/* ---- the kinds ------------------------------------------------------------

   Each kind of synthetic directory says how a name in it resolves and what
   it lists; the inode core does the rest.  A new kind is a pair here and a
   line in sdir_ops; the trees below them are more space kinds
   (space_build_tree_locked). */

/* The directory that lists the views of kind `kind` (/@host, /@cgroup,
 * ...), made if new. */
static int kind_dir_locked(int kind, size_t *out)
{
	return synth_get_locked(&(struct sdir){.kind = SD_HOSTS, .series_id = (uint32_t)kind}, out);
}

/* The root of a view (v > 0: /@host/<name>, /@cgroup/<value>, ...), made
 * if new. */
static int view_root_locked(uint32_t view, size_t *out)
{
	size_t hosts;
	int r, kind = series_view_kind(view);

	*out = 0;
	if (!view)
		return 0;
	if (kind < 0)
		return -ENOENT;
	r = kind_dir_locked(kind, &hosts);
	if (r < 0)
		return r;
	return synth_get_locked(
	        &(struct sdir){.kind = SD_ROOT, .view = view, .parent = (uint32_t)hosts}, out);
}

/* Whether a root shows the whole view's files: when its view has a
 * series, and for a window one with counts in it (an empty window shows
 * nothing; a window diff, when either window has one). */
static bool all_files_shown(const struct sdir *sd, enum space_kind kind, size_t lo, size_t hi)
{
	int64_t from, to;

	if (!space_all_event_locked(lo, hi))
		return false;
	if (kind == SPACE_ALL)
		return true;
	sdir_window(sd, &from, &to);
	for (size_t i = lo; i < hi; i++)
		if (fs.primary[i] && (series_in_window(&fs.series[i], from, to) ||
		                      (kind == SPACE_ALL_WDIFF &&
		                       series_in_window(&fs.series[i], sd->from2, sd->to2))))
			return true;
	return false;
}

/* The space key of the whole view's files of root sd, of kind `kind`. */
static struct space all_key(const struct sdir *sd, enum space_kind kind)
{
	bool window = kind != SPACE_ALL;

	return (struct space){.kind = kind,
	                      .base_id = sd->view,
	                      .last = window ? sd->last : 0,
	                      .from = window && !sd->last ? sd->from : 0,
	                      .to = window && !sd->last ? sd->to : 0,
	                      .from2 = kind == SPACE_ALL_WDIFF ? sd->from2 : 0,
	                      .to2 = kind == SPACE_ALL_WDIFF ? sd->to2 : 0,
	                      .parent_sdir = sdir_index(sd)};
}

/* The whole view's files in a root (SPACE_ALL: /, /@host/<name>/), a
 * window's root (SPACE_ALL_WINDOW: /@last/D/, /@range/F/T/) or a window
 * diff's (SPACE_ALL_WDIFF: <window>/@diff/F/T/): file f of the space of
 * every binary's primary series of sd's view.  Returns 1 when `name` is
 * no file's name, -ENOENT when the view has no series. */
static int all_file_lookup(const struct sdir *sd, enum space_kind kind, const char *name,
                           size_t len, struct ino *out)
{
	struct space key = all_key(sd, kind);
	size_t lo, hi;
	int r;

	for (unsigned f = 0; f < space_file_count(&key, VIEW_ROOT); f++) {
		const char *fname = space_file(&key, f)->name;
		if (strlen(fname) != len || memcmp(fname, name, len) != 0)
			continue;
		series_view_range(sd->view, &lo, &hi);
		if (!all_files_shown(sd, kind, lo, hi))
			return -ENOENT;
		struct space *sp = space_for_key_locked(&key, &r);
		if (!sp)
			return r;
		*out = (struct ino){.space = sp->id,
		                    .node = VIEW_ROOT,
		                    .slot = f + 1,
		                    .version = sp->files_version & VERSION_MASK};
		return 0;
	}
	return 1;
}

/* Emits the whole view's files (all_file_lookup) from the k-th on, with
 * cookies 3 + their index; *pos is how many there are (0 without
 * series).  Returns false when the reply is full. */
static int all_files_list(struct emitter *em, const struct sdir *sd, enum space_kind kind, size_t k,
                          size_t *pos)
{
	struct space key = all_key(sd, kind);
	size_t lo, hi, nf = space_file_count(&key, VIEW_ROOT);

	series_view_range(sd->view, &lo, &hi);
	*pos = 0;
	if (!all_files_shown(sd, kind, lo, hi))
		return 0;
	*pos = nf;
	for (size_t f = k; f < nf; f++) {
		const char *name = space_file(&key, (unsigned)f)->name;
		struct ino ino;
		int r = all_file_lookup(sd, kind, name, strlen(name), &ino);
		if (r < 0)
			return r;
		if (!inode_emit_locked(em, name, ino, false, (off_t)(3 + f)))
			return 1;
	}
	return 0;
}

/* The root: the whole view's files, @last, @range, @host, @cgroup,
 * @container, @thread, @span (the whole view's root only; a label's when some
 * series carries it), then one directory per binary name (of its view). */
static int root_lookup(const struct sdir *root, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *root; /* fs.sdirs may move below */

	root = &me;
	int fr = all_file_lookup(root, SPACE_ALL, name, len, out);
	if (fr <= 0)
		return fr;
	if (strcmp(name, "@last") == 0)
		return sdir_ino_locked(&(struct sdir){.kind = SD_LAST,
		                                      .view = root->view,
		                                      .parent = sdir_index(root)},
		                       out);
	if (strcmp(name, "@range") == 0)
		return sdir_ino_locked(&(struct sdir){.kind = SD_RANGE,
		                                      .view = root->view,
		                                      .parent = sdir_index(root)},
		                       out);
	for (int kind = 0; kind < VIEW_KINDS && root->view == 0; kind++) {
		const char *kn = view_kind_names[kind];
		if (name[0] != '@' || strcmp(name + 1, kn) != 0)
			continue;
		if (kind != VIEW_KIND_HOST && !series_kind_present(kind))
			return -ENOENT;
		size_t d;
		int r = kind_dir_locked(kind, &d);
		*out = (struct ino){.node = (uint32_t)d};
		return r;
	}
	if (strcmp(name, "@functions") == 0) {
		size_t lo, hi;
		series_view_range(root->view, &lo, &hi);
		if (!space_all_event_locked(lo, hi))
			return -ENOENT;
		return sdir_ino_locked(&(struct sdir){.kind = SD_FUNCS,
		                                      .series_id = series_all_id(root->view),
		                                      .view = root->view,
		                                      .parent = sdir_index(root)},
		                       out);
	}
	size_t lo, hi;
	series_view_range(root->view, &lo, &hi);
	for (size_t i = lo; i < hi; i = series_binary_end(fs.series, hi, i)) {
		const char *b = fs.series[i].binary;
		size_t d;
		if (!inode_names(name, len, b, strlen(b), 0))
			continue;
		int r = synth_binary_locked(b, root->view, &d);
		if (r < 0)
			return r;
		*out = (struct ino){.node = (uint32_t)d};
		return 0;
	}
	return -ENOENT;
}

/* The views' own directories (@last, @range, @host, <binary>/@diff,
 * <version>/@functions) resolve by name but are not listed, as ZFS hides
 * its .zfs directory: find, du, grep -r and updatedb walk the call trees
 * only, not every window, diff, host and function of them. */
static int root_list(struct emitter *em, const struct sdir *root, size_t k)
{
	const struct sdir me = *root; /* fs.sdirs may move below */
	size_t pos = 0, lo, hi;

	root = &me;
	int fr = all_files_list(em, root, SPACE_ALL, k, &pos);
	if (fr != 0)
		return fr < 0 ? fr : 0;
	series_view_range(root->view, &lo, &hi);
	for (size_t i = lo; i < hi; i = series_binary_end(fs.series, hi, i), pos++) {
		char esc[VIEW_NAME_MAX + 1];
		size_t d;
		if (pos < k)
			continue;
		view_escape(fs.series[i].binary, strlen(fs.series[i].binary), 0, esc);
		int r = synth_binary_locked(fs.series[i].binary, root->view, &d);
		if (r < 0)
			return r;
		if (!inode_emit_locked(em, esc, (struct ino){.node = (uint32_t)d}, false,
		                       (off_t)(3 + pos)))
			break;
	}
	return 0;
}

/* @host: the hosts that have series now, in name order; each the root of
 * its own view.  @cgroup, @container, @thread: the same for the values of
 * that label (VIEW_LABEL_NONE for the series without it). */
static int hosts_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	for (uint32_t v = 1; v <= fs.viewid.n; v++) {
		const char *h = series_view_value(v);
		size_t lo, hi;
		series_view_range(v, &lo, &hi);
		if (lo == hi || series_view_kind(v) != (int)sd->series_id ||
		    !inode_names(name, len, h, strlen(h), 0))
			continue;
		size_t d;
		int r = view_root_locked(v, &d);
		if (r < 0)
			return r;
		*out = (struct ino){.node = (uint32_t)d};
		return 0;
	}
	return -ENOENT;
}

static int cmp_host_view(const void *a, const void *b)
{
	return strcmp(series_view_value(*(const uint32_t *)a),
	              series_view_value(*(const uint32_t *)b));
}

static int hosts_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	uint32_t *views = malloc(((size_t)fs.viewid.n + 1) * sizeof(*views));
	size_t n = 0;
	int r = 0;

	if (!views)
		return -ENOMEM;
	for (uint32_t v = 1; v <= fs.viewid.n; v++) {
		size_t lo, hi;
		series_view_range(v, &lo, &hi);
		if (lo < hi && series_view_kind(v) == (int)sd->series_id)
			views[n++] = v;
	}
	qsort(views, n, sizeof(*views), cmp_host_view);
	for (size_t pos = k; pos < n; pos++) {
		const char *h = series_view_value(views[pos]);
		char esc[VIEW_NAME_MAX + 1];
		size_t d;
		view_escape(h, strlen(h), 0, esc);
		r = view_root_locked(views[pos], &d);
		if (r < 0)
			break;
		if (!inode_emit_locked(em, esc, (struct ino){.node = (uint32_t)d}, false,
		                       (off_t)(3 + pos)))
			break;
	}
	free(views);
	return r;
}

/* A binary: @diff, then its versions, each the root of a series' tree
 * space. */
static int binary_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct find_version fv = {.name = name, .len = len, .series_id = UINT32_MAX};
	int r;

	if (strcmp(name, "@diff") == 0)
		return sdir_ino_locked(&(struct sdir){.kind = SD_DIFF,
		                                      .name = sd->name,
		                                      .name_len = strlen(sd->name),
		                                      .view = sd->view,
		                                      .parent = sdir_index(sd)},
		                       out);
	series_each_version(fs.series, sd->lo, sd->hi, series_find_version_cb, &fv);
	if (fv.series_id == UINT32_MAX)
		return -ENOENT;
	struct space *sp = space_for_series_locked(fv.series_id, &r);
	if (!sp)
		return r;
	*out = (struct ino){.space = sp->id, .alias = fv.alias, .node = SPACE_ROOT_NODE};
	return 0;
}

static int binary_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct version_list l = {0};
	int r = series_each_version(fs.series, sd->lo, sd->hi, series_collect_version_cb, &l);

	for (size_t pos = k; r == 0 && pos < l.n; pos++) {
		struct space *sp = space_for_series_locked(l.v[pos].series_id, &r);
		if (!sp)
			break;
		struct ino i = {.space = sp->id, .alias = l.v[pos].alias, .node = SPACE_ROOT_NODE};
		if (!inode_emit_locked(em, l.names[pos], i, false, (off_t)(3 + pos)))
			break;
	}
	free(l.v);
	free(l.names);
	return r;
}

/* @last: the usual durations are listed, any other resolves. */
static int last_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	int64_t secs;

	if (view_parse_duration(name, &secs) < 0)
		return -ENOENT;
	return sdir_ino_locked(&(struct sdir){.kind = SD_WINDOW,
	                                      .last = secs,
	                                      .view = sd->view,
	                                      .parent = sdir_index(sd)},
	                       out);
}

static int last_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	for (size_t pos = k; pos < view_last_duration_count; pos++) {
		struct ino i;
		const char *name = view_last_durations[pos];
		int r = last_lookup(sd, name, strlen(name), &i);
		if (r < 0)
			return r;
		if (!inode_emit_locked(em, name, i, false, (off_t)(3 + pos)))
			break;
	}
	return 0;
}

/* @range and @range/FROM: any time resolves (the listings: range_list, from_list). */
static int range_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	int64_t t;

	if (view_parse_time_us(name, &t) < 0)
		return -ENOENT;
	if (sd->kind == SD_RANGE)
		return sdir_ino_locked(&(struct sdir){.kind = SD_FROM,
		                                      .from = t,
		                                      .view = sd->view,
		                                      .parent = sdir_index(sd)},
		                       out);
	return sdir_ino_locked(&(struct sdir){.kind = SD_WINDOW,
	                                      .from = sd->from,
	                                      .to = t,
	                                      .view = sd->view,
	                                      .parent = sdir_index(sd)},
	                       out);
}

#define DAY_SECONDS 86400
/* At most this many days are listed in @range (the most recent). */
#define RANGE_DAYS_MAX 366

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* "2026-11-24": the UTC day that begins at `t`. */
static size_t day_name(int64_t t, char out[32])
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (!gmtime_r(&tt, &tm))
		return 0;
	return strftime(out, 32, "%Y-%m-%d", &tm);
}

/* @range: the UTC days the view's series with wall-clock times span
 * (from each one's first to its last time), as ready-made windows: each
 * day's name resolves like any time, and @range/<day>/ lists the next
 * day, so `ls @range/2026-11-24/2026-11-25` is that day.  Series on
 * perf's clock are not listed (name them in Unix seconds). */
static int range_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */
	size_t lo, hi, n = 0, cap = 0;
	int64_t *days = NULL;
	int r = 0;

	sd = &me;
	series_view_range(sd->view, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		const struct store_series *s = &fs.series[i];
		if (s->samples == 0 || s->first_seen < STORE_WALL_CLOCK_MIN ||
		    s->last_seen < s->first_seen)
			continue;
		int64_t d0 = s->first_seen / DAY_SECONDS, d1 = s->last_seen / DAY_SECONDS;
		if (d1 - d0 >= RANGE_DAYS_MAX)
			d0 = d1 - RANGE_DAYS_MAX + 1;
		for (int64_t d = d0; d <= d1; d++) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				int64_t *nd = realloc(days, cap * sizeof(*nd));
				if (!nd) {
					free(days);
					return -ENOMEM;
				}
				days = nd;
			}
			days[n++] = d * DAY_SECONDS;
		}
	}
	if (n)
		qsort(days, n, sizeof(*days), cmp_i64);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || days[u - 1] != days[i])
			days[u++] = days[i];
	size_t start = u > RANGE_DAYS_MAX ? u - RANGE_DAYS_MAX : 0;
	for (size_t i = start + k; i < u; i++) {
		char name[32];
		size_t len = day_name(days[i], name);
		struct ino ino;
		if (!len)
			continue;
		r = range_lookup(sd, name, len, &ino);
		if (r < 0)
			break;
		if (!inode_emit_locked(em, name, ino, false, (off_t)(3 + i - start)))
			break;
	}
	free(days);
	return r < 0 ? r : 0;
}

/* @range/FROM: when FROM is the start of a UTC day, the next day (the
 * window of that one day); else nothing (any TO resolves). */
static int from_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */
	char name[32];
	struct ino ino;
	size_t len;

	sd = &me;
	if (k > 0 || sd->from % (DAY_SECONDS * INT64_C(1000000)) != 0 ||
	    sd->from < (int64_t)STORE_WALL_CLOCK_MIN * 1000000 ||
	    !(len = day_name(sd->from / 1000000 + DAY_SECONDS, name)))
		return 0;
	int r = range_lookup(sd, name, len, &ino);
	if (r < 0)
		return r;
	inode_emit_locked(em, name, ino, false, 3);
	return 0;
}

/* ---- windows: /@last/D/, /@range/F/T/ and their diffs <window>/@diff/F/T/ --
 * A window diff's directories are a window's with a window B (from2, to2)
 * beside it; a window's window B is empty (from2 = to2 = 0). */

/* Whether series s has counts in window [from, to) (sd's window A now, by
 * sdir_window) or in sd's window B. */
static bool in_windows(const struct sdir *sd, int64_t from, int64_t to,
                       const struct store_series *s)
{
	return series_in_window(s, from, to) || series_in_window(s, sd->from2, sd->to2);
}

/* A window's root (SD_WINDOW) or a window diff's (SD_WDROOT): the whole
 * view's files, a window's @diff, then the binaries with counts in either
 * window, each an SD_WBINARY or SD_WDBINARY. */
static int window_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	bool diff = sd->kind == SD_WDROOT;
	int64_t from, to;
	size_t lo, hi;
	int fr = all_file_lookup(sd, diff ? SPACE_ALL_WDIFF : SPACE_ALL_WINDOW, name, len, out);

	if (fr <= 0)
		return fr;
	if (!diff && strcmp(name, "@diff") == 0)
		return sdir_ino_locked(&(struct sdir){.kind = SD_WDIFF,
		                                      .last = sd->last,
		                                      .from = sd->from,
		                                      .to = sd->to,
		                                      .view = sd->view,
		                                      .parent = sdir_index(sd)},
		                       out);
	sdir_window(sd, &from, &to);
	series_view_range(sd->view, &lo, &hi);
	for (size_t i = lo; i < hi; i = series_binary_end(fs.series, hi, i)) {
		const char *b = fs.series[i].binary;
		if (!inode_names(name, len, b, strlen(b), 0))
			continue;
		for (size_t j = i; j < series_binary_end(fs.series, hi, i); j++)
			if (in_windows(sd, from, to, &fs.series[j]))
				return sdir_ino_locked(
				        &(struct sdir){.kind = diff ? SD_WDBINARY : SD_WBINARY,
				                       .name = (char *)b,
				                       .name_len = strlen(b),
				                       .last = sd->last,
				                       .from = sd->from,
				                       .to = sd->to,
				                       .from2 = sd->from2,
				                       .to2 = sd->to2,
				                       .view = sd->view,
				                       .parent = sdir_index(sd)},
				        out);
		return -ENOENT;
	}
	return -ENOENT;
}

static int window_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	int64_t from, to;
	size_t pos = 0, lo, hi;
	int fr = all_files_list(em, sd, sd->kind == SD_WDROOT ? SPACE_ALL_WDIFF : SPACE_ALL_WINDOW,
	                        k, &pos);

	if (fr != 0)
		return fr < 0 ? fr : 0;
	sdir_window(sd, &from, &to);
	series_view_range(sd->view, &lo, &hi);
	for (size_t i = lo; i < hi; i = series_binary_end(fs.series, hi, i)) {
		bool any = false;
		for (size_t j = i; j < series_binary_end(fs.series, hi, i) && !any; j++)
			any = in_windows(sd, from, to, &fs.series[j]);
		if (!any || pos++ < k)
			continue;
		char esc[VIEW_NAME_MAX + 1];
		size_t len = view_escape(fs.series[i].binary, strlen(fs.series[i].binary), 0, esc);
		struct ino ino;
		int r = window_lookup(sd, esc, len, &ino);
		if (r < 0)
			return r;
		if (!inode_emit_locked(em, esc, ino, false, (off_t)(3 + pos - 1)))
			break;
	}
	return 0;
}

/* A binary in a window (SD_WBINARY) or a window diff (SD_WDBINARY): its
 * versions with counts in either window, each a window (diff) tree
 * space. */
static int wbinary_entry(const struct sdir *sd, uint32_t series_id, bool alias, struct ino *out)
{
	struct space key = {.kind = sd->kind == SD_WDBINARY ? SPACE_WDIFF : SPACE_WINDOW,
	                    .series_id = series_id,
	                    .last = sd->last,
	                    .from = sd->last ? 0 : sd->from,
	                    .to = sd->last ? 0 : sd->to,
	                    .from2 = sd->from2,
	                    .to2 = sd->to2,
	                    .parent_sdir = sdir_index(sd)};
	int r;
	struct space *sp = space_for_key_locked(&key, &r);

	if (!sp)
		return r;
	*out = (struct ino){.space = sp->id, .alias = alias, .node = SPACE_ROOT_NODE};
	return 0;
}

static int wbinary_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct find_version fv = {.name = name, .len = len, .series_id = UINT32_MAX};
	size_t lo, hi;
	int64_t from, to;

	series_binary_range(sd->view, sd->name, &lo, &hi);
	series_each_version(fs.series, lo, hi, series_find_version_cb, &fv);
	sdir_window(sd, &from, &to);
	const struct store_series *s = series_by_id_locked(fv.series_id);
	if (!s || !in_windows(sd, from, to, s))
		return -ENOENT;
	return wbinary_entry(sd, fv.series_id, fv.alias, out);
}

static int wbinary_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct version_list l = {0};
	size_t lo, hi, pos = 0;
	int64_t from, to;
	int r;

	series_binary_range(sd->view, sd->name, &lo, &hi);
	sdir_window(sd, &from, &to);
	r = series_each_version(fs.series, lo, hi, series_collect_version_cb, &l);
	for (size_t n = 0; r == 0 && n < l.n; n++) {
		const struct store_series *s = series_by_id_locked(l.v[n].series_id);
		if (!s || !in_windows(sd, from, to, s) || pos++ < k)
			continue;
		struct ino i;
		r = wbinary_entry(sd, l.v[n].series_id, l.v[n].alias, &i);
		if (r == 0 && !inode_emit_locked(em, l.names[n], i, false, (off_t)(3 + pos - 1)))
			break;
	}
	free(l.v);
	free(l.names);
	return r;
}

/* The distinct version labels of a binary, escaped as versions are, in
 * order; calls fn(ctx, escaped, len, label) until it returns non-zero. */
static int each_label(uint32_t view, const char *binary,
                      int (*fn)(void *, const char *, size_t, const char *), void *ctx)
{
	size_t lo, hi;

	series_binary_range(view, binary, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		if (i > lo && strcmp(fs.series[i].version, fs.series[i - 1].version) == 0)
			continue;
		char esc[VIEW_NAME_MAX + 1];
		const char *v = fs.series[i].version;
		size_t len = view_escape(v, strlen(v), VIEW_ESCAPE_AT, esc);
		int r = fn(ctx, esc, len, v);
		if (r)
			return r;
	}
	return 0;
}

struct label_find {
	const char *name;
	size_t len;
	const char *label;
};

static int label_find_cb(void *ctx, const char *esc, size_t len, const char *label)
{
	struct label_find *f = ctx;

	if (len != f->len || memcmp(esc, f->name, len) != 0)
		return 0;
	f->label = label;
	return 1;
}

/* @diff: version A; @diff/A: version B, a diff tree space. */
static int diff_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct label_find f = {.name = name, .len = len};
	int r;

	each_label(sd->view, sd->name, label_find_cb, &f);
	if (!f.label)
		return -ENOENT;
	if (sd->kind == SD_DIFF)
		return sdir_ino_locked(&(struct sdir){.kind = SD_DIFFA,
		                                      .name = sd->name,
		                                      .name_len = sd->name_len,
		                                      .version = (char *)f.label,
		                                      .view = sd->view,
		                                      .parent = sdir_index(sd)},
		                       out);
	const struct store_series *b = series_primary_of(sd->view, sd->name, f.label);
	const struct store_series *a = b ? series_diff_base_locked(b, sd->version) : NULL;
	if (!a)
		return -ENOENT;
	struct space key = {.kind = SPACE_DIFF,
	                    .series_id = b->id,
	                    .base_id = a->id,
	                    .parent_sdir = sdir_index(sd)};
	struct space *sp = space_for_key_locked(&key, &r);
	if (!sp)
		return r;
	*out = (struct ino){.space = sp->id, .node = SPACE_ROOT_NODE};
	return 0;
}

struct label_list {
	struct emitter *em;
	const struct sdir *sd;
	size_t k, pos;
	int err;
};

static int label_list_cb(void *ctx, const char *esc, size_t len, const char *label)
{
	struct label_list *l = ctx;
	struct ino i;

	if (l->pos++ < l->k)
		return 0;
	l->err = diff_lookup(l->sd, esc, len, &i);
	if (l->err == -ENOENT) {
		l->err = 0;
		return 0;
	}
	if (l->err < 0)
		return 1;
	return !inode_emit_locked(l->em, esc, i, false, (off_t)(3 + l->pos - 1));
}

static int diff_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct label_list l = {.em = em, .sd = sd, .k = k};

	each_label(sd->view, sd->name, label_list_cb, &l);
	return l.err;
}

/* <version>/@functions: the version's functions. */
static int funcs_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct view_functions *fx;
	struct tree_ref *t;
	size_t raw_len;
	int r = space_functions_locked(sd->series_id, &fx, &t);

	if (r < 0)
		return r;
	char *raw = unescaped(name, len, 0, &raw_len);
	uint32_t i = raw ? view_functions_find(fx, raw, raw_len) : VIEW_NONE;
	if (!raw) {
		/* A shortened name: compare with every function's. */
		for (uint32_t k = 0; k < view_functions_count(fx) && i == VIEW_NONE; k++) {
			size_t l;
			const char *fn = view_functions_name(fx, k, &l);
			if (inode_names(name, len, fn, l, 0))
				i = k;
		}
	}
	free(raw);
	if (i == VIEW_NONE)
		return -ENOENT;
	size_t fl;
	const char *fname = view_functions_name(fx, i, &fl);
	return sdir_ino_locked(&(struct sdir){.kind = SD_FUNC,
	                                      .name = (char *)fname,
	                                      .name_len = fl,
	                                      .series_id = sd->series_id,
	                                      .view = sd->view,
	                                      .parent = sdir_index(sd)},
	                       out);
}

static int funcs_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct view_functions *fx;
	struct tree_ref *t;
	int r = space_functions_locked(sd->series_id, &fx, &t);

	if (r < 0)
		return r;
	for (uint32_t i = (uint32_t)k; i < view_functions_count(fx); i++) {
		size_t len;
		const char *fname = view_functions_name(fx, i, &len);
		char esc[VIEW_NAME_MAX + 1];
		struct ino ino;
		view_escape(fname, len, 0, esc);
		r = sdir_ino_locked(&(struct sdir){.kind = SD_FUNC,
		                                   .name = (char *)fname,
		                                   .name_len = len,
		                                   .series_id = sd->series_id,
		                                   .view = sd->view,
		                                   .parent = sdir_index(sd)},
		                    &ino);
		if (r < 0)
			return r;
		if (!inode_emit_locked(em, esc, ino, false, (off_t)(3 + i)))
			break;
	}
	return 0;
}

/* @functions/F: self, total, callers/, callees/. */
static const char *const func_entries[] = {"self", "total", "callers", "callees"};

static int func_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	for (unsigned e = 0; e < 4; e++) {
		if (strcmp(name, func_entries[e]) != 0)
			continue;
		if (e < 2) {
			*out = (struct ino){.node = sdir_index(sd), .slot = e + 1};
			return 0;
		}
		struct space key = {.kind = e == 2 ? SPACE_CALLERS : SPACE_CALLEES,
		                    .series_id = sd->series_id,
		                    .func = sd->name,
		                    .func_len = sd->name_len,
		                    .parent_sdir = sdir_index(sd)};
		int r;
		struct space *sp = space_for_key_locked(&key, &r);
		if (!sp)
			return r;
		*out = (struct ino){.space = sp->id, .node = SPACE_ROOT_NODE};
		return 0;
	}
	return -ENOENT;
}

static int func_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	for (size_t e = k; e < 4; e++) {
		struct ino i;
		int r = func_lookup(sd, func_entries[e], strlen(func_entries[e]), &i);
		if (r < 0)
			return r;
		if (!inode_emit_locked(em, func_entries[e], i, false, (off_t)(3 + e)))
			break;
	}
	return 0;
}

/* ---- window diffs: <window A>/@diff/<from>/<to>/ is window B against A ---- */

/* <window>/@diff and <window>/@diff/FROM: any time resolves, nothing is
 * listed (as @range and @range/FROM). */
static int wdiff_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */
	int64_t t;

	sd = &me;
	if (view_parse_time_us(name, &t) < 0)
		return -ENOENT;
	struct sdir key = {.kind = sd->kind == SD_WDIFF ? SD_WDFROM : SD_WDROOT,
	                   .last = sd->last,
	                   .from = sd->from,
	                   .to = sd->to,
	                   .from2 = sd->kind == SD_WDIFF ? t : sd->from2,
	                   .to2 = sd->kind == SD_WDIFF ? 0 : t,
	                   .view = sd->view,
	                   .parent = sdir_index(sd)};
	return sdir_ino_locked(&key, out);
}

static int nothing_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	return 0;
}

static const struct sdir_ops sdir_ops[SD_KINDS] = {
        [SD_ROOT] = {root_lookup, root_list},
        [SD_BINARY] = {binary_lookup, binary_list},
        [SD_LAST] = {last_lookup, last_list},
        [SD_RANGE] = {range_lookup, range_list},
        [SD_FROM] = {range_lookup, from_list},
        [SD_WINDOW] = {window_lookup, window_list},
        [SD_WBINARY] = {wbinary_lookup, wbinary_list},
        [SD_DIFF] = {diff_lookup, diff_list},
        [SD_DIFFA] = {diff_lookup, diff_list},
        [SD_FUNCS] = {funcs_lookup, funcs_list},
        [SD_FUNC] = {func_lookup, func_list},
        [SD_HOSTS] = {hosts_lookup, hosts_list},
        [SD_WDIFF] = {wdiff_lookup, nothing_list},
        [SD_WDFROM] = {wdiff_lookup, nothing_list},
        [SD_WDROOT] = {window_lookup, window_list},
        [SD_WDBINARY] = {wbinary_lookup, wbinary_list},
};

const struct sdir_ops *synth_ops_of(const struct sdir *sd)
{
	return &sdir_ops[sd->kind];
}

/* The directory of binary `name` in a view (its root's child), made if
 * new. */
int synth_binary_locked(const char *name, uint32_t view, size_t *out)
{
	size_t root;
	int r = view_root_locked(view, &root);

	if (r < 0)
		return r;
	return synth_get_locked(&(struct sdir){.kind = SD_BINARY,
	                                       .name = (char *)name,
	                                       .name_len = strlen(name),
	                                       .view = view,
	                                       .parent = (uint32_t)root},
	                        out);
}

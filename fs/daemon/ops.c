/*
 * flamefs.c — the FUSE daemon: mounts a flamefs store read-only as
 * /<binary>/<version>/<frame>/.../ with the view's generated files in every
 * call-tree directory, on libfuse's low-level API.  Inode numbers are
 * computed, not allocated: a directory's is (space, node id of the call
 * tree), a file's adds its slot and the node's content version, so the
 * daemon keeps no per-inode memory and a lookup is one hash probe from the
 * parent's node.  The kernel caches entries, attributes and file pages;
 * when a refresh of the RocksDB secondary changes a tree, the tree is
 * rebuilt with its node ids kept (view_tree_build_seeded), and exactly the
 * nodes whose counts changed are invalidated.  Each open() takes one
 * rendering of the file and keeps it in the file handle, so one open file
 * is one consistent snapshot.  See fs/README.md ("Inodes", "Caching").
 */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "view.h"

#define TREE_CACHE_SLOTS    16
#define REFRESH_INTERVAL_NS 1000000000LL
/* Rendered files kept for later opens: at most this many bytes, and only
 * files at least RENDER_CACHE_MIN long (smaller ones are cheap to render),
 * but every pprof (never cheap). */
#define RENDER_CACHE_BYTES (256ull << 20)
#define RENDER_CACHE_MIN   4096
/* Entry and attribute timeout of everything current (seconds).  Changes
 * are invalidated explicitly, so this only bounds how long a missed
 * invalidation could last. */
#define CACHE_TIMEOUT 60.0

/* ---- inode numbers ------------------------------------------------------

   An inode number is 1 + these 64 bits, high to low:

     space   14   0: the synthetic directories (root, binaries, the views'
                  directories); else a tree space (struct space): one
                  series' call tree, or a window, diff, callers or callees
                  tree
     alias    1   1: the tree shown as /<b>/<v>/ (the version's primary
                  event), 0: as /<b>/<v>@<e>/ (two directories, one tree)
     node    32   the tree's node id; in space 0 the synthetic dir's index
     slot     3   0: the directory; f + 1: the file space_file(f) (in
                  space 0: a function's self, 1, and total, 2)
     version 14   files only: the node's content version (mod 2^14)

   So the root is 1, a directory's number is the same for as long as the
   daemon keeps the space (node ids survive rebuilds), and a file's number
   changes whenever its bytes may have: a file inode's size and pages never
   change, and the kernel may cache them for as long as it likes. */
#define INO_SPACE_BITS   14
#define INO_NODE_BITS    32
#define INO_SLOT_BITS    3
#define INO_VERSION_BITS 14
#define MAX_SPACES       ((1u << INO_SPACE_BITS) - 1) /* the last id is never used */
#define VERSION_MASK     ((1u << INO_VERSION_BITS) - 1)

struct ino {
	uint32_t space;
	bool alias;
	uint32_t node;
	unsigned slot;
	unsigned version;
};

static fuse_ino_t ino_make(struct ino i)
{
	uint64_t v = i.space;

	v = v << 1 | i.alias;
	v = v << INO_NODE_BITS | i.node;
	v = v << INO_SLOT_BITS | i.slot;
	v = v << INO_VERSION_BITS | (i.version & VERSION_MASK);
	return v + 1;
}

static struct ino ino_split(fuse_ino_t ino)
{
	uint64_t v = ino - 1;
	struct ino i;

	i.version = v & VERSION_MASK;
	v >>= INO_VERSION_BITS;
	i.slot = v & ((1u << INO_SLOT_BITS) - 1);
	v >>= INO_SLOT_BITS;
	i.node = (uint32_t)v;
	v >>= INO_NODE_BITS;
	i.alias = v & 1;
	i.space = (uint32_t)(v >> 1);
	return i;
}

/* ---- state -------------------------------------------------------------- */

/* A built tree shared by its space, directory handles and renderers
 * running unlocked. */
struct tree_ref {
	struct view_tree *tree;
	unsigned refs; /* guarded by fs.lock */
};

/* One series' call tree and what the kernel was told about it.  A space
 * lives while the kernel holds any of its inodes (nlookup > 0) or its tree
 * is among the TREE_CACHE_SLOTS most recently used; node ids (and so
 * inode numbers) stay the same for the space's whole life.  All fields
 * are guarded by fs.lock. */
enum space_kind {
	SPACE_SERIES,  /* the call tree of one series (series_id) */
	SPACE_WINDOW,  /* series_id restricted to a time window: @last, @range */
	SPACE_DIFF,    /* series_id (B) against base_id (A): @diff */
	SPACE_CALLERS, /* function `func` of series_id: @functions/F/callers */
	SPACE_CALLEES, /* ... and its callees */
};

/* The directory a space's tree shows at the top: the one child of the
 * tree's frameless root (for a series, the binary's node). */
#define SPACE_ROOT_NODE 1u

struct space {
	uint32_t id;
	enum space_kind kind;
	uint32_t series_id;
	/* The key of the other kinds (SPACE_SERIES uses series_id only). */
	uint32_t base_id; /* SPACE_DIFF: version A's series */
	int64_t last;     /* SPACE_WINDOW: @last's seconds, or 0 for @range */
	int64_t from, to; /* SPACE_WINDOW @range: [from, to) */
	char *func;       /* SPACE_CALLERS/CALLEES: the function */
	size_t func_len;
	uint32_t parent_sdir; /* the synthetic directory above its root */

	uint64_t uid;          /* never reused: the render cache's key */
	uint64_t nlookup;      /* the kernel's lookup count, all inodes */
	struct tree_ref *tree; /* NULL until built or once dropped */
	uint64_t last_use;
	bool gone;           /* the series was pruned: inodes are stale */
	time_t series_mtime; /* when the series last changed (or was first seen) */
	/* Content versions: `gen` counts the rebuilds that changed something;
	 * changed[n] is the gen in which node n's subtree last changed (its
	 * files' version, its mtime via gen_time); seen[n] has bit `alias`
	 * set once an inode of node n was given to the kernel under that
	 * alias.  Sized nodes_cap. */
	uint32_t gen;
	uint32_t *changed;
	uint8_t *seen;
	uint32_t nodes_cap;
	time_t *gen_time;
	uint32_t gen_time_cap;
};

/* The rendered bytes of one file of one node at one content version.
 * Shared by the render cache and the open files reading it; freed when the
 * last of them lets go.  `buf` is immutable once published. */
struct rendered {
	struct view_buf buf;
	uint64_t space_uid;
	const struct view_file *vf; /* the file's renderer (space_file()) */
	uint32_t node;
	uint32_t file;
	uint32_t changed;
	unsigned refs;                  /* atomic: a read's reply holds one too */
	struct rendered *newer, *older; /* LRU list, guarded by fs.lock */
	struct rendered *hnext;         /* hash chain, guarded by fs.lock */
};

struct open_file {
	struct rendered *r; /* NULL until the first read (or fstat) */
	fuse_ino_t ino;
	struct open_file *prev, *next; /* fs.open_files, guarded by fs.lock */
	/* Until r is made: what to render, from the tree of the open (one
	 * open is one snapshot).  An open whose bytes the kernel already
	 * holds (keep_cache) sends no READ and renders nothing: a second
	 * `grep -r` rendered every file again to have it thrown away. */
	struct rendered key;
	struct tree_ref *tree;
	pthread_mutex_t mu; /* guards r, tree while rendering */
};
static int open_file_render(struct open_file *of);

/* A synthetic directory (space 0): the root and one per binary name ever
 * seen (kept, empty, once the binary is pruned, so indexes are stable),
 * and the directories of issue #13's views, made when first looked up and
 * kept (an index is an inode number) but found again by their key:
 *
 *   SD_LAST      /@last                 the durations
 *   SD_RANGE     /@range                nothing listed; any FROM resolves
 *   SD_FROM      /@range/FROM           nothing listed; any TO resolves
 *   SD_WINDOW    /@last/D, /@range/F/T  binaries with counts in the window
 *   SD_WBINARY   .../<binary>           its versions: window tree spaces
 *   SD_DIFF      /<binary>/@diff        versions (A)
 *   SD_DIFFA     /<binary>/@diff/A      versions (B): diff tree spaces
 *   SD_FUNCS     <version>/@functions   the version's functions
 *   SD_FUNC      .../@functions/F       self, total, callers/, callees/ */
enum sdir_kind {
	SD_ROOT,
	SD_BINARY,
	SD_LAST,
	SD_RANGE,
	SD_FROM,
	SD_WINDOW,
	SD_WBINARY,
	SD_DIFF,
	SD_DIFFA,
	SD_FUNCS,
	SD_FUNC,
	SD_KINDS
};

struct sdir {
	enum sdir_kind kind; /* sdir_ops[kind] */
	char *name;          /* SD_BINARY, SD_WBINARY, SD_DIFF, SD_DIFFA: the binary;
	                        SD_FUNC: the function (name_len bytes) */
	size_t name_len;
	char *version;      /* SD_DIFFA: version A */
	size_t lo, hi;      /* SD_BINARY: its series are fs.series[lo, hi) */
	int64_t last;       /* SD_WINDOW, SD_WBINARY: @last's seconds, 0 for @range */
	int64_t from, to;   /* SD_FROM: from; SD_WINDOW, SD_WBINARY of @range: [from, to) */
	uint32_t series_id; /* SD_FUNCS, SD_FUNC: the version's series */
	uint32_t parent;    /* the synthetic directory above it (SD_FUNCS: none) */
	uint32_t index;     /* its own index (the inode's node field) */
	uint32_t hnext;     /* the key hash's chain, index + 1 */
};

/* What each kind of synthetic directory does (see "synthetic directory
 * kinds" below). */
struct emitter;
struct sdir_ops {
	/* The inode `name` names in `sd` (not counted), or -ENOENT. */
	int (*lookup)(const struct sdir *sd, const char *name, size_t len, struct ino *out);
	/* Emits the entries from the k-th on (offset cookie 3 + index). */
	int (*list)(struct emitter *em, const struct sdir *sd, size_t k);
};

/* Entries the invalidator thread tells the kernel to drop. */
struct inval {
	struct inval *next;
	fuse_ino_t parent;
	size_t len;
	char name[];
};

static struct {
	char *store_dir;
	struct fuse_session *se;
	bool no_opendir;      /* the kernel takes ENOSYS for OPENDIR */
	pthread_mutex_t lock; /* guards every field below */
	struct store *store;
	struct timespec last_refresh;
	uint64_t generation; /* bumped whenever the store changed */
	time_t mtime;        /* wall clock of the last change seen */
	struct store_series *series;
	size_t nseries;
	size_t *by_id; /* series id -> index + 1 in fs.series, 0 = none */
	uint32_t by_id_len;
	bool *primary; /* per fs.series index: shown as /<b>/<v>/ */
	struct sdir *sdirs;
	size_t nsdirs, sdirs_cap;
	uint32_t *sdir_hash; /* by sdir_key_hash(), index + 1, SDIR_HASH buckets */
	/* Function indexes of recently listed versions (one tree each). */
	struct fxc {
		uint32_t series_id;
		uint64_t generation;
		struct tree_ref *tree;
		struct view_functions *fx;
		uint64_t last_use;
	} fxc[4];
	int64_t last_bucket_end; /* where the current time bucket ends (@last) */
	struct space *spaces[MAX_SPACES];
	uint32_t *space_of; /* series id -> space id, 0 = none */
	uint32_t space_of_len;
	uint32_t max_space; /* every space id in use is below it */
	uint64_t use_clock, next_uid;
	/* The render cache: most recently used first, `cache_bytes` in all. */
	struct rendered *newest, *oldest;
	uint64_t cache_bytes;
	struct rendered **cache_hash; /* chains by rendered_hash(), cache_buckets of them */
	size_t cache_buckets, cache_count;
	/* Every open file handle.  After a lazy unmount the kernel can end
	 * the connection before the last RELEASE reaches us, so the handles
	 * left here are freed at exit. */
	struct open_file *open_files;
	/* Entry invalidations waiting for the invalidator thread. */
	struct inval *inval_head, **inval_tail;
	pthread_cond_t inval_cond;
	bool inval_stop;
} fs = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .inval_cond = PTHREAD_COND_INITIALIZER,
        .inval_tail = &fs.inval_head,
};

/* ---- trees and spaces (call with fs.lock held) -------------------------- */

static void put_tree_locked(struct tree_ref *r)
{
	if (r && --r->refs == 0) {
		view_tree_free(r->tree);
		free(r);
		malloc_trim(0);
	}
}

static void put_tree(struct tree_ref *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&fs.lock);
	put_tree_locked(r);
	pthread_mutex_unlock(&fs.lock);
}

static void space_drop_tree_locked(struct space *sp)
{
	put_tree_locked(sp->tree);
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
static void space_free_locked(struct space *sp)
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
static void trim_spaces_locked(void)
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

static struct space *space_get_locked(uint32_t id)
{
	return id > 0 && id < MAX_SPACES ? fs.spaces[id] : NULL;
}

/* The space of series `series_id`, made if needed.  NULL with *err set. */
static struct space *space_for_series_locked(uint32_t series_id, int *err)
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

static const struct store_series *series_by_id_locked(uint32_t id)
{
	if (id >= fs.by_id_len || !fs.by_id[id])
		return NULL;
	return &fs.series[fs.by_id[id] - 1];
}

/* The space of another kind with the key `key` holds (kind, series_id,
 * base_id, last, from, to, func), made if needed.  NULL with *err set. */
static struct space *space_for_key_locked(const struct space *key, int *err)
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
		    sp->to == key->to && !sp->gone && sp->func_len == key->func_len &&
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

static const struct view_file *space_file(const struct space *sp, unsigned f)
{
	if (sp->kind != SPACE_DIFF)
		return f < view_file_count ? &view_files[f] : NULL;
	if (f < view_diff_file_count)
		return &view_diff_files[f];
	return f == view_diff_file_count ? &regressions_file : NULL;
}

/* The number of files node `node` of a space shows. */
static unsigned space_file_count(const struct space *sp, uint32_t node)
{
	if (sp->kind != SPACE_DIFF)
		return (unsigned)view_file_count;
	return node == SPACE_ROOT_NODE ? DIFF_FILES : (unsigned)view_diff_file_count;
}

/* The window [*from, *to) of a window space now. */
static void space_window_locked(const struct space *sp, int64_t *from, int64_t *to)
{
	if (sp->last) {
		view_window_last(time(NULL), sp->last, store_bucket_seconds(fs.store), from, to);
		return;
	}
	*from = sp->from;
	*to = sp->to;
}

/* A referenced tree of a series, all times: its space's when built (a
 * user usually lists a version before its @functions or @diff), else
 * built now.  Release it with put_tree_locked(). */
static int series_tree_locked(uint32_t series_id, struct tree_ref **out)
{
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
	r = view_tree_build(fs.store, s, 1, INT64_MIN, INT64_MAX, &t->tree);
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
static int functions_of_locked(uint32_t series_id, struct view_functions **fx,
                               struct tree_ref **tree)
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
	r = view_functions_build(t->tree, SPACE_ROOT_NODE, &f);
	if (r < 0) {
		put_tree_locked(t);
		return r;
	}
	view_functions_free(slot->fx);
	put_tree_locked(slot->tree);
	*slot = (struct fxc){series_id, fs.generation, t, f, ++fs.use_clock};
	*fx = f;
	*tree = t;
	return 0;
}

/* The series of version A to compare with series B: A's series of B's
 * event, else A's primary series. */
static const struct store_series *diff_base_locked(const struct store_series *b,
                                                   const char *version_a)
{
	const struct store_series *primary = NULL;

	for (size_t i = 0; i < fs.nseries; i++) {
		const struct store_series *s = &fs.series[i];
		if (strcmp(s->binary, b->binary) != 0 || strcmp(s->version, version_a) != 0)
			continue;
		if (strcmp(s->event, b->event) == 0)
			return s;
		if (fs.primary[i])
			primary = s;
	}
	return primary;
}

/* Grows the per-node arrays to `n` nodes; new nodes changed in `gen`. */
static int space_grow_locked(struct space *sp, uint32_t n, uint32_t gen)
{
	if (n > sp->nodes_cap) {
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

/* Builds the tree a space shows, seeded with `seed` (NULL: afresh).  The
 * one place that knows what each kind of space is a tree of; a new kind
 * (a time window, a diff) is a case here and a key in struct space. */
static int space_build_tree_locked(const struct space *sp, const struct view_tree *seed,
                                   struct view_tree **out)
{
	const struct store_series *s = series_by_id_locked(sp->series_id);
	int r;

	if (!s)
		return -ENOENT;
	switch (sp->kind) {
	case SPACE_SERIES:
		return view_tree_build_seeded(fs.store, s, 1, INT64_MIN, INT64_MAX, seed, out);
	case SPACE_WINDOW: {
		int64_t from, to;
		space_window_locked(sp, &from, &to);
		/* view_tree_build takes closed intervals: the buckets that
		 * overlap [from, to) are those of [from, to - 1]. */
		if (to <= from)
			return view_tree_build_seeded(fs.store, s, 1, 1, 0, seed, out);
		return view_tree_build_seeded(fs.store, s, 1, from, to - 1, seed, out);
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
			put_tree_locked(tb);
		}
		put_tree_locked(ta);
		return r;
	}
	case SPACE_CALLERS:
	case SPACE_CALLEES: {
		struct view_functions *fx;
		struct tree_ref *t;
		r = functions_of_locked(sp->series_id, &fx, &t);
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
static int space_build_locked(struct space *sp)
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
	if (view_tree_node_count(t->tree) <= SPACE_ROOT_NODE ||
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
	r = space_grow_locked(sp, view_tree_node_count(t->tree), 0);
	if (r < 0) {
		space_drop_tree_locked(sp);
		return r;
	}
	sp->gen_time[0] = sp->series_mtime;
	sp->last_use = ++fs.use_clock;
	trim_spaces_locked(); /* at most TREE_CACHE_SLOTS unreferenced trees */
	return 0;
}

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

static void maybe_refresh_locked(void);

/* The invalidator thread: sends queued entry invalidations, and catches
 * up with the store once a second on its own.  The kernel may answer
 * every request from its caches for as long as nothing is invalidated, so
 * a refresh that waited for a request could wait for ever. */
static void *invalidator(void *arg)
{
	pthread_mutex_lock(&fs.lock);
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		while (!fs.inval_head && !fs.inval_stop) {
			if (pthread_cond_timedwait(&fs.inval_cond, &fs.lock, &until) == ETIMEDOUT) {
				maybe_refresh_locked();
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
	return ino_make((struct ino){.space = sp->id, .alias = alias, .node = node});
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
				fuse_ino_t old = ino_make((struct ino){.space = sp->id,
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
	put_tree_locked(sp->tree);
	sp->tree = nt;
	return 0;
}

/* ---- the series list and the synthetic directories ---------------------- */

static int sdir_binary_locked(const char *name, size_t *out)
{
	for (size_t i = 1; i < fs.nsdirs; i++)
		if (fs.sdirs[i].kind == SD_BINARY && strcmp(fs.sdirs[i].name, name) == 0) {
			*out = i;
			return 0;
		}
	if (fs.nsdirs == fs.sdirs_cap) {
		size_t cap = fs.sdirs_cap ? fs.sdirs_cap * 2 : 16;
		struct sdir *d = realloc(fs.sdirs, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		fs.sdirs = d;
		fs.sdirs_cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	fs.sdirs[fs.nsdirs] =
	        (struct sdir){.kind = SD_BINARY, .name = copy, .index = (uint32_t)fs.nsdirs};
	*out = fs.nsdirs++;
	return 0;
}

/* The series to show in /<binary>/<version>/: cpu-clock if the version
 * has it, else the event that the most input bytes were imported into
 * (the importers count a pprof or legacy profile's bytes for its default
 * sample type, so that is the one shown, as pprof shows it), else the
 * event with the most samples.  [lo, hi) are the series of that binary
 * and version (sorted by event). */
static size_t primary_series(const struct store_series *list, size_t lo, size_t hi)
{
	size_t best = lo;

	for (size_t i = lo; i < hi; i++)
		if (strcmp(list[i].event, "cpu-clock") == 0)
			return i;
	for (size_t i = lo; i < hi; i++) {
		const struct store_series *a = &list[i], *b = &list[best];
		if (a->input_bytes > b->input_bytes ||
		    (a->input_bytes == b->input_bytes && a->samples > b->samples))
			best = i;
	}
	return best;
}

/* Calls fn for every entry of the binary whose series are list[lo, hi):
 * "<version>" (the primary series, alias) and, for versions with several
 * events, "<version>@<event>".  Stops at fn's first non-zero return. */
typedef int (*version_fn)(void *ctx, const char *name, size_t len, uint32_t series_id, bool alias);

static int each_version(const struct store_series *list, size_t lo, size_t hi, version_fn fn,
                        void *ctx)
{
	int r;

	for (size_t i = lo; i < hi;) {
		const char *v = list[i].version;
		size_t j = i;
		while (j < hi && strcmp(list[j].version, v) == 0)
			j++;
		char vesc[VIEW_NAME_MAX + 1];
		size_t vl = view_escape(v, strlen(v), VIEW_ESCAPE_AT, vesc);
		r = fn(ctx, vesc, vl, list[primary_series(list, i, j)].id, true);
		if (r)
			return r;
		for (size_t k = i; j - i > 1 && k < j; k++) {
			char eesc[VIEW_NAME_MAX + 1], both[2 * VIEW_NAME_MAX + 2];
			const char *e = list[k].event;
			size_t el = view_escape(e, strlen(e), 0, eesc);
			if (vl + 1 + el > VIEW_NAME_MAX)
				continue; /* cannot be named; skip */
			snprintf(both, sizeof(both), "%s@%s", vesc, eesc);
			r = fn(ctx, both, vl + 1 + el, list[k].id, false);
			if (r)
				return r;
		}
		i = j;
	}
	return 0;
}

struct find_version {
	const char *name;
	size_t len;
	uint32_t series_id;
	bool alias;
};

static int find_version_cb(void *ctx, const char *name, size_t len, uint32_t series_id, bool alias)
{
	struct find_version *fv = ctx;

	if (len != fv->len || memcmp(name, fv->name, len) != 0)
		return 0;
	fv->series_id = series_id;
	fv->alias = alias;
	return 1;
}

/* The range of `list` with binary `b` starting at or after `from`. */
static size_t binary_end(const struct store_series *list, size_t n, size_t lo)
{
	size_t hi = lo;

	while (hi < n && strcmp(list[hi].binary, list[lo].binary) == 0)
		hi++;
	return hi;
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

	each_version(fs.series, c->lo, c->hi, find_version_cb, &fv);
	if (fv.series_id != series_id || fv.alias != alias)
		queue_inval_entry_locked(c->parent, name, len);
	return 0;
}

static bool series_same(const struct store_series *a, const struct store_series *b)
{
	return a->samples == b->samples && a->weight == b->weight &&
	       a->first_seen == b->first_seen && a->last_seen == b->last_seen &&
	       a->input_bytes == b->input_bytes;
}

/* Installs a new series list: indexes, primaries, binaries' ranges. */
static int install_series_locked(struct store_series *list, size_t n)
{
	uint32_t max_id = 0;
	size_t *by_id;
	bool *primary;

	for (size_t i = 0; i < n; i++)
		if (list[i].id > max_id)
			max_id = list[i].id;
	by_id = calloc((size_t)max_id + 1, sizeof(*by_id));
	primary = calloc(n ? n : 1, sizeof(*primary));
	if (!by_id || !primary) {
		free(by_id);
		free(primary);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		by_id[list[i].id] = i + 1;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && strcmp(list[j].binary, list[i].binary) == 0 &&
		       strcmp(list[j].version, list[i].version) == 0)
			j++;
		primary[primary_series(list, i, j)] = true;
		i = j;
	}
	for (size_t i = 1; i < fs.nsdirs; i++)
		fs.sdirs[i].lo = fs.sdirs[i].hi = 0;
	for (size_t i = 0; i < n;) {
		size_t hi = binary_end(list, n, i), d;
		int r = sdir_binary_locked(list[i].binary, &d);
		if (r < 0) {
			free(by_id);
			free(primary);
			return r;
		}
		fs.sdirs[d].lo = i;
		fs.sdirs[d].hi = hi;
		i = hi;
	}
	free(fs.by_id);
	free(fs.primary);
	fs.by_id = by_id;
	fs.by_id_len = max_id + 1;
	fs.primary = primary;
	fs.series = list;
	fs.nseries = n;
	return 0;
}

static int load_series_locked(void)
{
	struct store_series *list;
	size_t n;
	int r = store_series_list(fs.store, &list, &n);

	if (r < 0)
		return r;
	struct store_series *old = fs.series;
	size_t nold = fs.nseries;
	r = install_series_locked(list, n);
	if (r < 0) {
		store_series_free(list, n);
		return r;
	}
	store_series_free(old, nold);
	return 0;
}

static int refresh_spaces_locked(const struct store_series *old, size_t nold, time_t now,
                                 bool window_moved);

/* Where the time bucket holding `now` ends: @last windows move when it
 * does. */
static int64_t bucket_end_now(void)
{
	int64_t from, to;

	view_window_last(time(NULL), 1, store_bucket_seconds(fs.store), &from, &to);
	return to;
}

static void maybe_refresh_locked(void)
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
	int64_t end = bucket_end_now();
	bool moved = end != fs.last_bucket_end;
	fs.last_bucket_end = end;
	if (r <= 0 && store_sequence(fs.store) == before) {
		/* Only time went on: @last windows moved to the next bucket. */
		if (moved)
			refresh_spaces_locked(fs.series, fs.nseries, time(NULL), true);
		return;
	}

	struct store_series *old = fs.series, *list;
	size_t nold = fs.nseries, n;
	if (store_series_list(fs.store, &list, &n) < 0)
		return;
	if (install_series_locked(list, n) < 0) {
		store_series_free(list, n);
		return;
	}
	time_t wall = time(NULL);
	fs.mtime = wall;
	refresh_spaces_locked(old, nold, wall, moved);
	store_series_free(old, nold);
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

/* Everything a refresh changes in what the kernel was told: the store
 * moved from `old` to fs.series, or (window_moved) only time went on to
 * the next bucket, which moves every @last window. */
static int refresh_spaces_locked(const struct store_series *old, size_t nold, time_t now,
                                 bool window_moved)
{
	/* The listings of the views' synthetic directories follow the series
	 * (and the clock, for @last). */
	for (size_t d = 1; d < fs.nsdirs; d++) {
		enum sdir_kind k = fs.sdirs[d].kind;
		if (k == SD_WINDOW || k == SD_WBINARY || k == SD_DIFF || k == SD_DIFFA ||
		    k == SD_FUNCS)
			inval_dir(ino_make((struct ino){.node = (uint32_t)d}));
	}
	/* The root's and binaries' listings: entries gone or retargeted. */
	inval_dir(FUSE_ROOT_ID);
	for (size_t i = 0; i < nold;) {
		size_t hi = binary_end(old, nold, i), d;
		if (sdir_binary_locked(old[i].binary, &d) == 0) {
			fuse_ino_t bino = ino_make((struct ino){.node = (uint32_t)d});
			inval_dir(bino);
			if (fs.sdirs[d].lo == fs.sdirs[d].hi) {
				char esc[VIEW_NAME_MAX + 1];
				size_t len =
				        view_escape(old[i].binary, strlen(old[i].binary), 0, esc);
				queue_inval_entry_locked(FUSE_ROOT_ID, esc, len);
			}
			struct old_entry_ctx c = {bino, fs.sdirs[d].lo, fs.sdirs[d].hi};
			each_version(old, i, hi, old_entry_cb, &c);
		}
		i = hi;
	}

	/* The function indexes were of the old trees. */
	if (old != fs.series)
		for (unsigned i = 0; i < sizeof(fs.fxc) / sizeof(fs.fxc[0]); i++) {
			view_functions_free(fs.fxc[i].fx);
			put_tree_locked(fs.fxc[i].tree);
			memset(&fs.fxc[i], 0, sizeof(fs.fxc[i]));
		}
	/* The trees: the series' first, since diffs, callers and callees are
	 * built from them. */
	for (uint32_t n = 1; n < 2 * fs.max_space; n++) {
		uint32_t id = n < fs.max_space ? n : n - fs.max_space + 1;
		struct space *sp = fs.spaces[id];
		if (!sp || sp->gone || (sp->kind == SPACE_SERIES) != (n < fs.max_space))
			continue;
		const struct store_series *s = series_by_id_locked(sp->series_id);
		if (!s || (sp->kind == SPACE_DIFF && !series_by_id_locked(sp->base_id))) {
			/* Pruned: its inodes are stale from now on. */
			sp->gone = true;
			space_drop_tree_locked(sp);
			continue;
		}
		bool changed = !series_unchanged_locked(old, nold, sp->series_id) ||
		               (sp->kind == SPACE_DIFF &&
		                !series_unchanged_locked(old, nold, sp->base_id)) ||
		               (sp->kind == SPACE_WINDOW && sp->last && window_moved);
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
				put_tree_locked(nt);
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

/* ---- resolving inodes (call with fs.lock held) -------------------------- */

/* What an inode names now.  `sp` and `tree` are borrowed under fs.lock. */
struct at {
	struct ino i;
	struct sdir *sd;  /* space 0 */
	struct space *sp; /* tree spaces */
	struct view_tree *tree;
	bool current; /* files: i.version is the node's content version */
};

/* With `need_tree` false, a space's root directory (a version directory) of a space whose
 * tree is not built resolves without building it (at->tree NULL), so
 * listing a binary's versions builds nothing. */
static int resolve_tree_locked(fuse_ino_t ino, struct at *at, bool need_tree)
{
	memset(at, 0, sizeof(*at));
	at->i = ino_split(ino);
	if (at->i.space == 0) {
		if (at->i.alias || at->i.version || at->i.node >= fs.nsdirs)
			return -ENOENT;
		at->sd = &fs.sdirs[at->i.node];
		/* Files only in a function's directory: self and total. */
		if (at->i.slot && (at->sd->kind != SD_FUNC || at->i.slot > 2))
			return -ENOENT;
		if (at->sd->kind == SD_BINARY && at->sd->lo == at->sd->hi)
			return -ENOENT;
		at->current = true;
		return 0;
	}
	at->sp = space_get_locked(at->i.space);
	if (!at->sp || at->sp->gone)
		return -ESTALE;
	const struct store_series *s = series_by_id_locked(at->sp->series_id);
	if (!s)
		return -ESTALE;
	if (at->i.alias && !fs.primary[s - fs.series])
		return -ENOENT; /* /<b>/<v>/ shows another event now */
	if (at->i.slot > space_file_count(at->sp, at->i.node) || at->i.node == 0)
		return -ENOENT;
	if (!at->sp->tree && !need_tree && at->i.node == SPACE_ROOT_NODE && at->i.slot == 0)
		return 0;
	if (!at->sp->tree) {
		int r = space_build_locked(at->sp);
		if (r < 0)
			return r;
	}
	at->sp->last_use = ++fs.use_clock;
	at->tree = at->sp->tree->tree;
	if (at->i.node == 0 || !view_node_visible(at->tree, at->i.node))
		return -ENOENT;
	if (at->i.slot)
		at->current = at->i.version == (at->sp->changed[at->i.node] & VERSION_MASK);
	return 0;
}

static int resolve_locked(fuse_ino_t ino, struct at *at)
{
	return resolve_tree_locked(ino, at, true);
}

/* Is name[0..len) the escaped form of `raw`? */
static bool names(const char *comp, size_t len, const char *raw, size_t raw_len, int flags)
{
	char esc[VIEW_NAME_MAX + 1];
	size_t n = view_escape(raw, raw_len, flags, esc);

	return n == len && memcmp(esc, comp, len) == 0;
}

static uint32_t find_child(const struct view_tree *t, uint32_t node, const char *comp, size_t len)
{
	struct view_buf raw = {0};
	uint32_t found = VIEW_NONE;
	int r = view_unescape(comp, len, &raw);

	if (r == 0) {
		uint32_t c = view_node_find_child(t, node, raw.data ? raw.data : "", raw.len);
		size_t nlen;
		if (c != VIEW_NONE) {
			const char *nm = view_node_name(t, c, &nlen);
			if (names(comp, len, nm, nlen, 0))
				found = c;
		}
	} else if (r == 1) {
		/* Shortened: candidates share the decoded prefix. */
		uint32_t n = view_node_child_count(t, node);
		for (uint32_t i = view_node_lower_bound(t, node, raw.data ? raw.data : "", raw.len);
		     i < n; i++) {
			uint32_t c = view_node_child(t, node, i);
			size_t nlen;
			const char *nm = view_node_name(t, c, &nlen);
			if (nlen < raw.len || memcmp(nm, raw.data, raw.len) != 0)
				break;
			if (names(comp, len, nm, nlen, 0)) {
				found = c;
				break;
			}
		}
	}
	view_buf_free(&raw);
	return found;
}

/* ---- attributes --------------------------------------------------------- */

static void attr_common(struct stat *st, fuse_ino_t ino, time_t mtime)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_mtime = st->st_ctime = st->st_atime = mtime;
}

static void attr_dir(struct stat *st, fuse_ino_t ino, time_t mtime)
{
	attr_common(st, ino, mtime);
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2;
}

static void attr_file(struct stat *st, fuse_ino_t ino, time_t mtime, uint64_t size)
{
	attr_common(st, ino, mtime);
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
}

static time_t node_mtime(const struct space *sp, uint32_t node)
{
	return sp->tree ? sp->gen_time[sp->changed[node]] : sp->series_mtime;
}

/* The attributes of what `at` names now (a file's current size; files
 * without a size function, pprof, report 0 and are read with direct_io).
 * Returns the attribute timeout. */
/* The bytes of a function directory's self (slot 1) or total (slot 2):
 * the function view's number, rendered under the lock (a few bytes). */
static int func_file_locked(const struct sdir *sd, unsigned slot, struct view_buf *out)
{
	struct view_functions *fx;
	struct tree_ref *t;
	struct view_counts c;
	char num[32];
	int r = functions_of_locked(sd->series_id, &fx, &t);

	if (r < 0)
		return r;
	uint32_t i = view_functions_find(fx, sd->name, sd->name_len);
	if (i == VIEW_NONE)
		return -ENOENT;
	view_functions_counts(fx, i, &c);
	int n = snprintf(num, sizeof(num), "%" PRIu64 "\n",
	                 slot == 1 ? c.self_weight : c.total_weight);
	return view_buf_append(out, num, (size_t)n);
}

static double attr_of_locked(const struct at *at, fuse_ino_t ino, struct stat *st)
{
	if (at->sd && at->i.slot) {
		/* A function's self or total: the current number, never cached
		 * (its inode stays the same when the number changes). */
		struct view_buf b = {0};
		func_file_locked(at->sd, at->i.slot, &b);
		attr_file(st, ino, fs.mtime, b.len);
		view_buf_free(&b);
		return 0;
	}
	if (at->sd) {
		attr_dir(st, ino, fs.mtime);
		return CACHE_TIMEOUT;
	}
	if (at->i.slot == 0) {
		attr_dir(st, ino, node_mtime(at->sp, at->i.node));
		return CACHE_TIMEOUT;
	}
	const struct view_file *f = space_file(at->sp, at->i.slot - 1);
	attr_file(st, ino, node_mtime(at->sp, at->i.node),
	          f->size ? f->size(at->tree, at->i.node) : 0);
	/* An inode of an older version is answered with the current size and
	 * not cached, so a stale entry never caches a stale size. */
	return at->current ? CACHE_TIMEOUT : 0;
}

/* Counts a lookup the kernel is about to be told of. */
static void count_lookup_locked(const struct ino *i)
{
	if (i->space == 0)
		return;
	struct space *sp = fs.spaces[i->space];
	sp->nlookup++;
	if (sp->seen && i->node < sp->nodes_cap)
		sp->seen[i->node] |= 1u << i->alias;
}

static void uncount_lookup_locked(const struct ino *i, uint64_t n)
{
	struct space *sp = space_get_locked(i->space);

	if (!sp)
		return;
	sp->nlookup = n > sp->nlookup ? 0 : sp->nlookup - n;
	if (sp->nlookup == 0 && (sp->gone || !sp->tree))
		space_free_locked(sp);
}

static const struct sdir_ops *sdir_ops_of(const struct sdir *sd);

static int sdir_get_locked(const struct sdir *key, size_t *out);

/* Does the tree directory `at` names hold @functions (a version's root)? */
static bool has_functions(const struct at *at)
{
	return at->sp && at->sp->kind == SPACE_SERIES && at->i.node == SPACE_ROOT_NODE;
}

/* The entry for `name` in the directory `parent` names; counted. */
static int lookup_locked(const struct at *parent, const char *name, struct fuse_entry_param *e)
{
	size_t len = strlen(name);
	struct at at;
	struct ino i = {0};
	int r;

	if (parent->sd) {
		r = sdir_ops_of(parent->sd)->lookup(parent->sd, name, len, &i);
		if (r < 0)
			return r;
		goto found;
	}
	i = (struct ino){.space = parent->i.space, .alias = parent->i.alias};
	for (unsigned f = 0; f < space_file_count(parent->sp, parent->i.node); f++)
		if (strcmp(space_file(parent->sp, f)->name, name) == 0) {
			i.node = parent->i.node;
			i.slot = f + 1;
			i.version = parent->sp->changed[i.node];
			goto found;
		}
	if (has_functions(parent) && strcmp(name, "@functions") == 0) {
		size_t d;
		struct sdir key = {.kind = SD_FUNCS, .series_id = parent->sp->series_id};
		r = sdir_get_locked(&key, &d);
		if (r < 0)
			return r;
		i = (struct ino){.node = (uint32_t)d};
		goto found;
	}
	/* Built on the first lookup, not with the tree: a first ls needs none
	 * (readdirplus gives the kernel every entry). */
	view_tree_index(parent->sp->tree->tree);
	i.node = find_child(parent->tree, parent->i.node, name, len);
	if (i.node == VIEW_NONE)
		return -ENOENT;
found:
	memset(e, 0, sizeof(*e));
	e->ino = ino_make(i);
	r = resolve_tree_locked(e->ino, &at, false);
	if (r < 0)
		return r;
	e->attr_timeout = attr_of_locked(&at, e->ino, &e->attr);
	e->entry_timeout = CACHE_TIMEOUT;
	count_lookup_locked(&at.i);
	return 0;
}

/* ---- rendered files (the cache is guarded by fs.lock) -------------------- */

static void get_rendered_ref(struct rendered *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

/* Drops a reference; needs no lock (the name says callers may hold it). */
static void put_rendered_locked(struct rendered *r)
{
	if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		bool big = r->buf.cap >= (1u << 20);
		view_buf_free(&r->buf);
		free(r);
		if (big)
			malloc_trim(0);
	}
}

static void unlink_locked(struct rendered *r)
{
	if (r->newer)
		r->newer->older = r->older;
	else
		fs.newest = r->older;
	if (r->older)
		r->older->newer = r->newer;
	else
		fs.oldest = r->newer;
	r->newer = r->older = NULL;
}

static size_t rendered_hash(const struct rendered *k)
{
	uint64_t h = k->space_uid * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)k->node << 32 | (uint64_t)k->changed << 3 | k->file) *
	     0xff51afd7ed558ccdull;
	h ^= h >> 29;
	return (size_t)h & (fs.cache_buckets - 1);
}

static void unhash_locked(struct rendered *r)
{
	struct rendered **p = &fs.cache_hash[rendered_hash(r)];

	while (*p && *p != r)
		p = &(*p)->hnext;
	if (*p)
		*p = r->hnext;
	r->hnext = NULL;
	fs.cache_count--;
}

/* Adds `r` to the hash (growing it when it is full; if that fails the
 * chains just get longer). */
static void hash_locked(struct rendered *r)
{
	if (fs.cache_count >= fs.cache_buckets) {
		size_t n = fs.cache_buckets ? fs.cache_buckets * 2 : 1024;
		struct rendered **t = calloc(n, sizeof(*t));
		if (t) {
			struct rendered **old = fs.cache_hash;
			size_t oldn = fs.cache_buckets;
			fs.cache_hash = t;
			fs.cache_buckets = n;
			for (size_t i = 0; i < oldn; i++)
				for (struct rendered *c = old[i], *next; c; c = next) {
					next = c->hnext;
					size_t b = rendered_hash(c);
					c->hnext = t[b];
					t[b] = c;
				}
			free(old);
		}
	}
	size_t b = rendered_hash(r);
	r->hnext = fs.cache_hash[b];
	fs.cache_hash[b] = r;
	fs.cache_count++;
}

static void uncache_locked(struct rendered *r)
{
	unlink_locked(r);
	unhash_locked(r);
	fs.cache_bytes -= r->buf.len + sizeof(*r);
	put_rendered_locked(r);
}

static void push_newest_locked(struct rendered *r)
{
	r->older = fs.newest;
	r->newer = NULL;
	if (fs.newest)
		fs.newest->newer = r;
	else
		fs.oldest = r;
	fs.newest = r;
}

static void drop_rendered_locked(void)
{
	while (fs.oldest)
		uncache_locked(fs.oldest);
	free(fs.cache_hash);
	fs.cache_hash = NULL;
	fs.cache_buckets = fs.cache_count = 0;
}

/* The cached rendering with `key`'s space, node, file and content
 * version, made most recently used and referenced for the caller, or
 * NULL.  One hash probe. */
static struct rendered *find_rendered_locked(const struct rendered *key)
{
	if (!fs.cache_buckets)
		return NULL;
	for (struct rendered *c = fs.cache_hash[rendered_hash(key)]; c; c = c->hnext) {
		if (c->space_uid == key->space_uid && c->node == key->node &&
		    c->file == key->file && c->changed == key->changed) {
			unlink_locked(c);
			push_newest_locked(c);
			get_rendered_ref(c);
			return c;
		}
	}
	return NULL;
}

/* Returns a referenced rendering of file `f` of `node` in `tree`, whose
 * content version is `key`'s; from the cache when it holds one, else
 * rendered now (without the lock) and cached when big enough. */
static int get_rendered(const struct rendered *key, const struct view_tree *tree,
                        struct rendered **out)
{
	struct rendered *r, *c;
	int err;

	pthread_mutex_lock(&fs.lock);
	c = find_rendered_locked(key);
	pthread_mutex_unlock(&fs.lock);
	if (c) {
		*out = c;
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = key->vf->render(tree, key->node, &r->buf);
	if (err < 0) {
		view_buf_free(&r->buf);
		free(r);
		return err;
	}
	r->space_uid = key->space_uid;
	r->vf = key->vf;
	r->node = key->node;
	r->file = key->file;
	r->changed = key->changed;
	r->refs = 1;
	pthread_mutex_lock(&fs.lock);
	/* Another open may have rendered it meanwhile: share that one. */
	c = find_rendered_locked(key);
	if (c) {
		put_rendered_locked(r);
		pthread_mutex_unlock(&fs.lock);
		*out = c;
		return 0;
	}
	/* Small files with a size function are cheap to render again; pprof
	 * is not, whatever its size. */
	if ((r->buf.len >= RENDER_CACHE_MIN || !key->vf->size) &&
	    r->buf.len <= RENDER_CACHE_BYTES) {
		get_rendered_ref(r);
		push_newest_locked(r);
		hash_locked(r);
		fs.cache_bytes += r->buf.len + sizeof(*r);
		while (fs.cache_bytes > RENDER_CACHE_BYTES && fs.oldest != r)
			uncache_locked(fs.oldest);
	}
	pthread_mutex_unlock(&fs.lock);
	*out = r;
	return 0;
}

/* ---- operations --------------------------------------------------------- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* readdirplus for every listing: find and ls -l then need no
	 * lookups.  Listings are stateless: no OPENDIR and RELEASEDIR, and
	 * the kernel caches them (op_opendir).  No automatic page-cache
	 * invalidation: a file inode's bytes never change (its number
	 * carries the content version). */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs.no_opendir = true;
	}
}

/* Takes fs.lock, refreshes if due and resolves `ino`.  On success the
 * lock is held; on failure it is released and the error replied. */
static bool enter_tree(fuse_req_t req, fuse_ino_t ino, struct at *at, bool need_tree)
{
	int r;

	pthread_mutex_lock(&fs.lock);
	maybe_refresh_locked();
	r = resolve_tree_locked(ino, at, need_tree);
	if (r < 0) {
		pthread_mutex_unlock(&fs.lock);
		fuse_reply_err(req, -r);
		return false;
	}
	return true;
}

static bool enter(fuse_req_t req, fuse_ino_t ino, struct at *at)
{
	return enter_tree(req, ino, at, true);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	struct at at;
	int r;

	if (!enter(req, parent, &at))
		return;
	if (at.i.slot) {
		pthread_mutex_unlock(&fs.lock);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	r = lookup_locked(&at, name, &e);
	pthread_mutex_unlock(&fs.lock);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	if (fuse_reply_entry(req, &e) != 0) {
		/* The kernel did not take it: undo the count. */
		struct ino i = ino_split(e.ino);
		pthread_mutex_lock(&fs.lock);
		uncount_lookup_locked(&i, 1);
		pthread_mutex_unlock(&fs.lock);
	}
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct ino i = ino_split(ino);

	pthread_mutex_lock(&fs.lock);
	uncount_lookup_locked(&i, nlookup);
	trim_spaces_locked();
	pthread_mutex_unlock(&fs.lock);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	pthread_mutex_lock(&fs.lock);
	for (size_t k = 0; k < count; k++) {
		struct ino i = ino_split(forgets[k].ino);
		uncount_lookup_locked(&i, forgets[k].nlookup);
	}
	trim_spaces_locked();
	pthread_mutex_unlock(&fs.lock);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	struct at at;
	double timeout;

	if (fi && fi->fh && ino_split(ino).slot) {
		/* fstat() on an open file: the size of its snapshot. */
		struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
		pthread_mutex_lock(&fs.lock);
		maybe_refresh_locked();
		int r = resolve_locked(ino, &at);
		time_t mtime = r == 0 && at.sp ? node_mtime(at.sp, at.i.node) : fs.mtime;
		bool current = r == 0 && at.sp && at.current && of->ino == ino;
		pthread_mutex_unlock(&fs.lock);
		r = open_file_render(of);
		if (r < 0) {
			fuse_reply_err(req, -r);
			return;
		}
		attr_file(&st, ino, mtime, of->r->buf.len);
		fuse_reply_attr(req, &st, current ? CACHE_TIMEOUT : 0);
		return;
	}
	if (!enter_tree(req, ino, &at, false))
		return;
	timeout = attr_of_locked(&at, ino, &st);
	pthread_mutex_unlock(&fs.lock);
	fuse_reply_attr(req, &st, timeout);
}

/* ---- directory listings --------------------------------------------------

   Listings keep no state between calls, so the kernel sends no OPENDIR or
   RELEASEDIR (FUSE_CAP_NO_OPENDIR_SUPPORT): two round trips fewer per
   directory.  An entry's offset cookie says where the next call goes on:
   1 and 2 after "." and "..", then in a tree directory 3 + f after view
   file f and CHILD_COOKIE + node after a child (node ids are stable, so
   the next call finds its place by the child's name however the tree
   changed meanwhile), in a synthetic directory 3 + k after entry k. */
#define CHILD_COOKIE (1ull << 40)

struct emitter {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	bool plus;
	fuse_ino_t *counted; /* readdirplus entries: lookups to the kernel */
	size_t ncounted, counted_cap;
};

/* Adds the entry `name` -> `i` (resolved now: skipped when gone).  Returns
 * false when the reply is full. */
static bool emit_locked(struct emitter *em, const char *name, struct ino i, bool dot, off_t cookie)
{
	struct fuse_entry_param e;
	fuse_ino_t ino = ino_make(i);
	struct at at;
	size_t n;

	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr.st_ino = ino; /* readdir's d_ino comes from the attributes */
	e.attr.st_mode = S_IFDIR;
	if (!dot) {
		if (resolve_tree_locked(ino, &at, false) < 0)
			return true;
		if (em->plus) {
			e.attr_timeout = attr_of_locked(&at, ino, &e.attr);
			e.entry_timeout = CACHE_TIMEOUT;
		} else if (at.i.slot) {
			e.attr.st_mode = S_IFREG;
		}
	}
	bool counts = em->plus && !dot;
	if (counts && em->ncounted == em->counted_cap) {
		size_t cap = em->counted_cap ? em->counted_cap * 2 : 64;
		fuse_ino_t *c = realloc(em->counted, cap * sizeof(*c));
		if (!c)
			return false;
		em->counted = c;
		em->counted_cap = cap;
	}
	if (em->plus)
		n = fuse_add_direntry_plus(em->req, em->buf + em->used, em->size - em->used, name,
		                           &e, cookie);
	else
		n = fuse_add_direntry(em->req, em->buf + em->used, em->size - em->used, name,
		                      &e.attr, cookie);
	if (n > em->size - em->used)
		return false;
	em->used += n;
	/* Every entry but . and .. is a lookup to the kernel. */
	if (counts) {
		count_lookup_locked(&at.i);
		em->counted[em->ncounted++] = ino;
	}
	return true;
}

struct version_list {
	struct find_version *v;
	char (*names)[VIEW_NAME_MAX + 1];
	size_t n, cap;
};

static int collect_version_cb(void *ctx, const char *name, size_t len, uint32_t series_id,
                              bool alias)
{
	struct version_list *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct find_version *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		char(*nm)[VIEW_NAME_MAX + 1] = realloc(l->names, cap * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		l->names = nm;
		l->cap = cap;
	}
	memcpy(l->names[l->n], name, len);
	l->names[l->n][len] = '\0';
	l->v[l->n] = (struct find_version){.series_id = series_id, .alias = alias};
	l->n++;
	return 0;
}

/* ---- synthetic directory kinds -------------------------------------------

   Each kind of synthetic directory (space 0) says how a name in it
   resolves and what it lists; the inode core does the rest.  More kinds
   (issue #13's @last, @range, @diff) go here, and the trees below them are
   more space kinds (space_build_tree_locked). */
/* ---- the views' synthetic directories (issue #13) ---- */

#define SDIR_HASH 65536u

static uint64_t sdir_key_hash(const struct sdir *k)
{
	uint64_t h = 1469598103934665603ull;
	const uint64_t nums[] = {k->kind, (uint64_t)k->last, (uint64_t)k->from, (uint64_t)k->to,
	                         k->series_id};

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
	       a->series_id == b->series_id && a->name_len == b->name_len &&
	       (!a->name_len || memcmp(a->name, b->name, a->name_len) == 0) &&
	       !a->version == !b->version && (!a->version || strcmp(a->version, b->version) == 0);
}

/* The index of the synthetic directory with `key`'s kind and key fields
 * (name and name_len, version, last, from, to, series_id), made if new
 * (with key->parent as its parent).  Indexes are inode numbers: kept. */
static int sdir_get_locked(const struct sdir *key, size_t *out)
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
	int r = sdir_get_locked(key, &d);

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
	    !names(comp, len, raw.data, raw.len, flags)) {
		view_buf_free(&raw);
		return NULL;
	}
	*out_len = raw.len;
	return raw.data;
}

/* The window a window directory shows now. */
static void sdir_window(const struct sdir *sd, int64_t *from, int64_t *to)
{
	if (sd->last)
		view_window_last(time(NULL), sd->last, store_bucket_seconds(fs.store), from, to);
	else {
		*from = sd->from;
		*to = sd->to;
	}
}

/* May series `s` have counts in [from, to)?  Its first and last buckets
 * say: a window takes the buckets that overlap it.  (A series with a gap
 * over the whole window is listed, with nothing in it.) */
static bool series_in_window(const struct store_series *s, int64_t from, int64_t to)
{
	int64_t bs = store_bucket_seconds(fs.store);

	if (to <= from || s->samples == 0)
		return false;
	int64_t first = s->first_seen / bs * bs - (s->first_seen % bs < 0 ? bs : 0);
	int64_t last = s->last_seen / bs * bs - (s->last_seen % bs < 0 ? bs : 0);
	return first < to && last + bs > from;
}

/* The root: @last, @range, then one directory per binary name. */
static int root_lookup(const struct sdir *root, const char *name, size_t len, struct ino *out)
{
	if (strcmp(name, "@last") == 0)
		return sdir_ino_locked(&(struct sdir){.kind = SD_LAST}, out);
	if (strcmp(name, "@range") == 0)
		return sdir_ino_locked(&(struct sdir){.kind = SD_RANGE}, out);
	for (size_t d = 1; d < fs.nsdirs; d++) {
		const struct sdir *sd = &fs.sdirs[d];
		if (sd->kind != SD_BINARY || sd->lo == sd->hi ||
		    !names(name, len, sd->name, strlen(sd->name), 0))
			continue;
		*out = (struct ino){.node = (uint32_t)d};
		return 0;
	}
	return -ENOENT;
}

/* The views' own directories (@last, @range, <binary>/@diff,
 * <version>/@functions) resolve by name but are not listed, as ZFS hides
 * its .zfs directory: find, du, grep -r and updatedb walk the call trees
 * only, not every window, diff and function of them. */
static int root_list(struct emitter *em, const struct sdir *root, size_t k)
{
	size_t pos = 0;

	for (size_t i = 0; i < fs.nseries; i = binary_end(fs.series, fs.nseries, i), pos++) {
		char esc[VIEW_NAME_MAX + 1];
		size_t d;
		if (pos < k)
			continue;
		view_escape(fs.series[i].binary, strlen(fs.series[i].binary), 0, esc);
		int r = sdir_binary_locked(fs.series[i].binary, &d);
		if (r < 0)
			return r;
		if (!emit_locked(em, esc, (struct ino){.node = (uint32_t)d}, false,
		                 (off_t)(3 + pos)))
			break;
	}
	return 0;
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
		                                      .parent = sdir_index(sd)},
		                       out);
	each_version(fs.series, sd->lo, sd->hi, find_version_cb, &fv);
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
	int r = each_version(fs.series, sd->lo, sd->hi, collect_version_cb, &l);

	for (size_t pos = k; r == 0 && pos < l.n; pos++) {
		struct space *sp = space_for_series_locked(l.v[pos].series_id, &r);
		if (!sp)
			break;
		struct ino i = {.space = sp->id, .alias = l.v[pos].alias, .node = SPACE_ROOT_NODE};
		if (!emit_locked(em, l.names[pos], i, false, (off_t)(3 + pos)))
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
	return sdir_ino_locked(
	        &(struct sdir){.kind = SD_WINDOW, .last = secs, .parent = sdir_index(sd)}, out);
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
		if (!emit_locked(em, name, i, false, (off_t)(3 + pos)))
			break;
	}
	return 0;
}

/* @range and @range/FROM: nothing to list; any time resolves. */
static int range_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	int64_t t;

	if (view_parse_time(name, &t) < 0)
		return -ENOENT;
	if (sd->kind == SD_RANGE)
		return sdir_ino_locked(
		        &(struct sdir){.kind = SD_FROM, .from = t, .parent = sdir_index(sd)}, out);
	return sdir_ino_locked(
	        &(struct sdir){
	                .kind = SD_WINDOW, .from = sd->from, .to = t, .parent = sdir_index(sd)},
	        out);
}

static int empty_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	return 0;
}

/* A window: the binaries with counts in it. */
static int window_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	int64_t from, to;

	sdir_window(sd, &from, &to);
	for (size_t i = 0; i < fs.nseries; i = binary_end(fs.series, fs.nseries, i)) {
		const char *b = fs.series[i].binary;
		if (!names(name, len, b, strlen(b), 0))
			continue;
		for (size_t j = i; j < binary_end(fs.series, fs.nseries, i); j++)
			if (series_in_window(&fs.series[j], from, to))
				return sdir_ino_locked(&(struct sdir){.kind = SD_WBINARY,
				                                      .name = (char *)b,
				                                      .name_len = strlen(b),
				                                      .last = sd->last,
				                                      .from = sd->from,
				                                      .to = sd->to,
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
	size_t pos = 0;

	sdir_window(sd, &from, &to);
	for (size_t i = 0; i < fs.nseries; i = binary_end(fs.series, fs.nseries, i)) {
		bool any = false;
		for (size_t j = i; j < binary_end(fs.series, fs.nseries, i) && !any; j++)
			any = series_in_window(&fs.series[j], from, to);
		if (!any)
			continue;
		if (pos++ < k)
			continue;
		char esc[VIEW_NAME_MAX + 1];
		size_t len = view_escape(fs.series[i].binary, strlen(fs.series[i].binary), 0, esc);
		struct ino ino;
		int r = window_lookup(sd, esc, len, &ino);
		if (r < 0)
			return r;
		if (!emit_locked(em, esc, ino, false, (off_t)(3 + pos - 1)))
			break;
	}
	return 0;
}

/* The binary's series range now. */
static void binary_range(const char *binary, size_t *lo, size_t *hi)
{
	*lo = *hi = 0;
	for (size_t i = 0; i < fs.nseries; i = binary_end(fs.series, fs.nseries, i))
		if (strcmp(fs.series[i].binary, binary) == 0) {
			*lo = i;
			*hi = binary_end(fs.series, fs.nseries, i);
			return;
		}
}

/* A binary in a window: its versions with counts in it, each a window
 * tree space. */
static int wbinary_entry(const struct sdir *sd, uint32_t series_id, bool alias, struct ino *out)
{
	struct space key = {.kind = SPACE_WINDOW,
	                    .series_id = series_id,
	                    .last = sd->last,
	                    .from = sd->last ? 0 : sd->from,
	                    .to = sd->last ? 0 : sd->to,
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

	binary_range(sd->name, &lo, &hi);
	each_version(fs.series, lo, hi, find_version_cb, &fv);
	sdir_window(sd, &from, &to);
	const struct store_series *s = series_by_id_locked(fv.series_id);
	if (!s || !series_in_window(s, from, to))
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

	binary_range(sd->name, &lo, &hi);
	sdir_window(sd, &from, &to);
	r = each_version(fs.series, lo, hi, collect_version_cb, &l);
	for (size_t n = 0; r == 0 && n < l.n; n++) {
		const struct store_series *s = series_by_id_locked(l.v[n].series_id);
		if (!s || !series_in_window(s, from, to) || pos++ < k)
			continue;
		struct ino i;
		r = wbinary_entry(sd, l.v[n].series_id, l.v[n].alias, &i);
		if (r == 0 && !emit_locked(em, l.names[n], i, false, (off_t)(3 + pos - 1)))
			break;
	}
	free(l.v);
	free(l.names);
	return r;
}

/* The distinct version labels of a binary, escaped as versions are, in
 * order; calls fn(ctx, escaped, len, label) until it returns non-zero. */
static int each_label(const char *binary, int (*fn)(void *, const char *, size_t, const char *),
                      void *ctx)
{
	size_t lo, hi;

	binary_range(binary, &lo, &hi);
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

/* The primary series of a binary's version. */
static const struct store_series *primary_of(const char *binary, const char *version)
{
	for (size_t i = 0; i < fs.nseries; i++)
		if (fs.primary[i] && strcmp(fs.series[i].binary, binary) == 0 &&
		    strcmp(fs.series[i].version, version) == 0)
			return &fs.series[i];
	return NULL;
}

/* @diff: version A; @diff/A: version B, a diff tree space. */
static int diff_lookup(const struct sdir *sd, const char *name, size_t len, struct ino *out)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct label_find f = {.name = name, .len = len};
	int r;

	each_label(sd->name, label_find_cb, &f);
	if (!f.label)
		return -ENOENT;
	if (sd->kind == SD_DIFF)
		return sdir_ino_locked(&(struct sdir){.kind = SD_DIFFA,
		                                      .name = sd->name,
		                                      .name_len = sd->name_len,
		                                      .version = (char *)f.label,
		                                      .parent = sdir_index(sd)},
		                       out);
	const struct store_series *b = primary_of(sd->name, f.label);
	const struct store_series *a = b ? diff_base_locked(b, sd->version) : NULL;
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
	return !emit_locked(l->em, esc, i, false, (off_t)(3 + l->pos - 1));
}

static int diff_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct label_list l = {.em = em, .sd = sd, .k = k};

	each_label(sd->name, label_list_cb, &l);
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
	int r = functions_of_locked(sd->series_id, &fx, &t);

	if (r < 0)
		return r;
	char *raw = unescaped(name, len, 0, &raw_len);
	uint32_t i = raw ? view_functions_find(fx, raw, raw_len) : VIEW_NONE;
	if (!raw) {
		/* A shortened name: compare with every function's. */
		for (uint32_t k = 0; k < view_functions_count(fx) && i == VIEW_NONE; k++) {
			size_t l;
			const char *fn = view_functions_name(fx, k, &l);
			if (names(name, len, fn, l, 0))
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
	                                      .parent = sdir_index(sd)},
	                       out);
}

static int funcs_list(struct emitter *em, const struct sdir *sd, size_t k)
{
	const struct sdir me = *sd; /* fs.sdirs may move below */

	sd = &me;
	struct view_functions *fx;
	struct tree_ref *t;
	int r = functions_of_locked(sd->series_id, &fx, &t);

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
		                                   .parent = sdir_index(sd)},
		                    &ino);
		if (r < 0)
			return r;
		if (!emit_locked(em, esc, ino, false, (off_t)(3 + i)))
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
		if (!emit_locked(em, func_entries[e], i, false, (off_t)(3 + e)))
			break;
	}
	return 0;
}

static const struct sdir_ops sdir_ops[SD_KINDS] = {
        [SD_ROOT] = {root_lookup, root_list},          [SD_BINARY] = {binary_lookup, binary_list},
        [SD_LAST] = {last_lookup, last_list},          [SD_RANGE] = {range_lookup, empty_list},
        [SD_FROM] = {range_lookup, empty_list},        [SD_WINDOW] = {window_lookup, window_list},
        [SD_WBINARY] = {wbinary_lookup, wbinary_list}, [SD_DIFF] = {diff_lookup, diff_list},
        [SD_DIFFA] = {diff_lookup, diff_list},         [SD_FUNCS] = {funcs_lookup, funcs_list},
        [SD_FUNC] = {func_lookup, func_list},
};

static const struct sdir_ops *sdir_ops_of(const struct sdir *sd)
{
	return &sdir_ops[sd->kind];
}

/* The entries of a tree directory after cookie `pos`. */
static void list_node_locked(struct emitter *em, const struct at *at, uint64_t pos)
{
	const struct view_tree *t = at->tree;
	uint32_t node = at->i.node, nk = view_node_child_count(t, node), start = 0;
	struct ino i = {.space = at->i.space, .alias = at->i.alias, .node = node};

	unsigned nf = space_file_count(at->sp, node);
	for (uint64_t f = pos - 2; f < nf; f++) {
		i.slot = (unsigned)f + 1;
		i.version = at->sp->changed[node];
		if (!emit_locked(em, space_file(at->sp, (unsigned)f)->name, i, false,
		                 (off_t)(3 + f)))
			return;
	}
	i.slot = i.version = 0; /* @functions is not listed (see root_list) */
	if (pos >= CHILD_COOKIE) {
		uint64_t after = pos - CHILD_COOKIE;
		size_t len;
		start = nk;
		if (after < view_tree_node_count(t)) {
			const char *name = view_node_name(t, (uint32_t)after, &len);
			start = view_node_lower_bound(t, node, name, len);
			if (start < nk && view_node_child(t, node, start) == after)
				start++;
		}
	}
	for (uint32_t k = start; k < nk; k++) {
		char esc[VIEW_NAME_MAX + 1];
		size_t len;
		i.node = view_node_child(t, node, k);
		const char *raw = view_node_name(t, i.node, &len);
		view_escape(raw, len, 0, esc);
		if (!emit_locked(em, esc, i, false, (off_t)(CHILD_COOKIE + i.node)))
			return;
	}
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct emitter em = {.req = req, .size = size, .plus = plus};
	uint64_t pos = off < 0 ? 0 : (uint64_t)off;
	struct at at;
	int r = 0;

	em.buf = malloc(size ? size : 1);
	if (!em.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (!enter(req, ino, &at)) {
		free(em.buf);
		return;
	}
	if (at.i.slot) {
		pthread_mutex_unlock(&fs.lock);
		free(em.buf);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	struct ino parent = {0};
	if (at.sp && at.i.node > SPACE_ROOT_NODE) {
		parent = at.i;
		parent.node = view_node_parent(at.tree, at.i.node);
	} else if (at.sp && at.sp->kind != SPACE_SERIES) {
		parent.node = at.sp->parent_sdir;
	} else if (at.sp) {
		const struct store_series *s = series_by_id_locked(at.sp->series_id);
		size_t d;
		if (s && sdir_binary_locked(s->binary, &d) == 0)
			parent.node = (uint32_t)d;
	} else if (at.sd) {
		parent.node = at.sd->parent;
	}
	if (pos == 0 && emit_locked(&em, ".", at.i, true, 1))
		pos = 1;
	if (pos == 1 && emit_locked(&em, "..", parent, true, 2))
		pos = 2;
	if (pos >= 2) {
		if (at.sd)
			r = sdir_ops_of(at.sd)->list(&em, at.sd, (size_t)(pos - 2));
		else
			list_node_locked(&em, &at, pos);
	}
	pthread_mutex_unlock(&fs.lock);
	if (r < 0 && em.used == 0) {
		fuse_reply_err(req, -r);
	} else if (fuse_reply_buf(req, em.buf, em.used) != 0 && em.ncounted) {
		/* The kernel did not take them: undo the counts. */
		pthread_mutex_lock(&fs.lock);
		for (size_t k = 0; k < em.ncounted; k++) {
			struct ino i = ino_split(em.counted[k]);
			uncount_lookup_locked(&i, 1);
		}
		pthread_mutex_unlock(&fs.lock);
	}
	free(em.counted);
	free(em.buf);
}

/* No OPENDIR state: with FUSE_CAP_NO_OPENDIR_SUPPORT, ENOSYS tells the
 * kernel to send no OPENDIR or RELEASEDIR again and to cache listings as if
 * opened with keep_cache and cache_readdir; a refresh drops the listings
 * that changed (inval_dir). */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fs.no_opendir)
		fuse_reply_err(req, ENOSYS);
	else
		fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, true);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rendered key = {0};
	struct open_file *of;
	struct tree_ref *tree;
	struct at at;
	bool current;
	int r;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (!enter(req, ino, &at))
		return;
	if (!at.i.slot) {
		pthread_mutex_unlock(&fs.lock);
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (at.sd) {
		/* A function's self or total: a few bytes, rendered now. */
		struct rendered *fr = calloc(1, sizeof(*fr));
		r = fr ? func_file_locked(at.sd, at.i.slot, &fr->buf) : -ENOMEM;
		pthread_mutex_unlock(&fs.lock);
		of = r == 0 ? calloc(1, sizeof(*of)) : NULL;
		if (!of) {
			if (fr)
				view_buf_free(&fr->buf);
			free(fr);
			fuse_reply_err(req, r < 0 ? -r : ENOMEM);
			return;
		}
		fr->refs = 1;
		of->r = fr;
		fi->direct_io = 1;
		fi->keep_cache = 0;
		goto opened;
	}
	key.space_uid = at.sp->uid;
	key.vf = space_file(at.sp, at.i.slot - 1);
	key.node = at.i.node;
	key.file = at.i.slot - 1;
	key.changed = at.sp->changed[at.i.node];
	current = at.current;
	tree = at.sp->tree;
	tree->refs++;
	pthread_mutex_unlock(&fs.lock);

	of = calloc(1, sizeof(*of));
	if (!of) {
		put_tree(tree);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	of->key = key;
	of->tree = tree; /* rendered at the first read (open_file_render) */
	/* A size not known before rendering (pprof: 0 in stat), or an inode
	 * of an older version whose cached size and pages are another
	 * rendering's: read to EOF through the daemon.  Otherwise the
	 * inode's pages can only ever hold these bytes: keep them. */
	fi->direct_io = key.vf->size == NULL || !current;
	fi->keep_cache = !fi->direct_io;
opened:
	pthread_mutex_init(&of->mu, NULL);
	of->ino = ino;
	fi->fh = (uint64_t)(uintptr_t)of;
	pthread_mutex_lock(&fs.lock);
	of->next = fs.open_files;
	if (of->next)
		of->next->prev = of;
	fs.open_files = of;
	pthread_mutex_unlock(&fs.lock);
	if (fuse_reply_open(req, fi) != 0) {
		pthread_mutex_lock(&fs.lock);
		if (of->prev)
			of->prev->next = of->next;
		else
			fs.open_files = of->next;
		if (of->next)
			of->next->prev = of->prev;
		put_rendered_locked(of->r);
		put_tree_locked(of->tree);
		pthread_mutex_unlock(&fs.lock);
		pthread_mutex_destroy(&of->mu);
		free(of);
	}
}

/* Renders an open file's bytes at its first read (or fstat), from the
 * tree it was opened on.  Returns 0 or -errno. */
static int open_file_render(struct open_file *of)
{
	int rc = 0;

	pthread_mutex_lock(&of->mu);
	if (!of->r) {
		rc = get_rendered(&of->key, of->tree->tree, &of->r);
		if (rc == 0) {
			put_tree(of->tree);
			of->tree = NULL;
		}
	}
	pthread_mutex_unlock(&of->mu);
	return rc;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
	int rc = open_file_render(of);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct rendered *r = of->r;
	const struct view_buf *b = &r->buf;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((uint64_t)off >= b->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > b->len - (size_t)off)
		size = b->len - (size_t)off;
	/* Straight from the rendering: libfuse writes the reply with one
	 * writev() that points into it, no copy in between.  The kernel may
	 * end the request, and another thread handle the file's RELEASE,
	 * before writev() returns: hold the rendering until then. */
	get_rendered_ref(r);
	fuse_reply_buf(req, b->data + off, size);
	put_rendered_locked(r);
}

static void close_file_locked(struct open_file *of)
{
	if (of->prev)
		of->prev->next = of->next;
	else
		fs.open_files = of->next;
	if (of->next)
		of->next->prev = of->prev;
	put_rendered_locked(of->r);
	put_tree_locked(of->tree);
	pthread_mutex_destroy(&of->mu);
	free(of);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;

	if (of) {
		pthread_mutex_lock(&fs.lock);
		close_file_locked(of);
		pthread_mutex_unlock(&fs.lock);
	}
	fuse_reply_err(req, 0);
}

/* A rendered file is always readable. */
static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                    struct fuse_pollhandle *ph)
{
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM);
}

/* Every change is refused: the view is a read-only window on the store. */
static void ro_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void ro_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	fuse_reply_err(req, EROFS);
}

static void ro_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_reply_err(req, EROFS);
}

static void ro_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void ro_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void ro_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
	fuse_reply_err(req, EROFS);
}

static void ro_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	fuse_reply_err(req, EROFS);
}

static void ro_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void ro_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
	fuse_reply_err(req, EROFS);
}

static void ro_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void ro_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static const struct fuse_lowlevel_ops ops = {
        .init = op_init,
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .opendir = op_opendir,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .open = op_open,
        .read = op_read,
        .release = op_release,
        .poll = op_poll,
        .setattr = ro_setattr,
        .mknod = ro_mknod,
        .mkdir = ro_mkdir,
        .unlink = ro_unlink,
        .rmdir = ro_unlink,
        .symlink = ro_symlink,
        .rename = ro_rename,
        .link = ro_link,
        .write = ro_write,
        .setxattr = ro_setxattr,
        .removexattr = ro_removexattr,
        .create = ro_create,
};

/* ---- command line ------------------------------------------------------- */

enum { KEY_HELP, KEY_VERSION, KEY_RW };

static const struct fuse_opt cli_opts[] = {
        FUSE_OPT_KEY("-h", KEY_HELP),
        FUSE_OPT_KEY("--help", KEY_HELP),
        FUSE_OPT_KEY("-V", KEY_VERSION),
        FUSE_OPT_KEY("--version", KEY_VERSION),
        FUSE_OPT_KEY("rw", KEY_RW),
        /* fstab and mount(8) options that mean nothing to a FUSE mount. */
        FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("x-%s", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_KEY("comment=%s", FUSE_OPT_KEY_DISCARD),
        FUSE_OPT_END,
};

struct cli {
	char *store;
	int nonopts;
	bool help, version, rw;
};

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cli *c = data;

	switch (key) {
	case KEY_HELP: c->help = true; return 0;
	case KEY_VERSION: c->version = true; return 0;
	case KEY_RW: c->rw = true; return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (c->nonopts++ == 0) {
			c->store = strdup(arg);
			return c->store ? 0 : -1;
		}
		return 1; /* the mount point, for fuse_parse_cmdline */
	default: return 1;
	}
}

static void usage(FILE *out)
{
	fprintf(out, "usage: flamefs [options] STORE MOUNTPOINT\n"
	             "\n"
	             "Mounts a flamefs store read-only as a filesystem of call trees:\n"
	             "  MOUNTPOINT/<binary>/<version>/<frame>/<frame>/...\n"
	             "with the files folded, self, total, pprof, name, flame.svg and callgrind\n"
	             "in every directory below a version, and the views\n"
	             "  MOUNTPOINT/@last/<duration>/...  MOUNTPOINT/@range/<from>/<to>/...\n"
	             "  MOUNTPOINT/<binary>/@diff/<A>/<B>/...\n"
	             "  MOUNTPOINT/<binary>/<version>/@functions/<function>/...\n"
	             "Data imported while mounted shows up within 2 s.\n"
	             "\n"
	             "options:\n"
	             "  -h, --help        print this help and exit\n"
	             "  -V, --version     print the version and exit\n"
	             "  -f                stay in the foreground\n"
	             "  -d                debug: foreground, print every FUSE request\n"
	             "  -s                single-threaded\n"
	             "  -o opt[,opt...]   mount options, passed to FUSE (allow_other,\n"
	             "                    default_permissions, ...); ro, noauto, user, users,\n"
	             "                    _netdev, nofail, defaults and x-* are accepted for\n"
	             "                    /etc/fstab; rw is refused\n"
	             "\n"
	             "EXAMPLES\n"
	             "  flamefs ~/.local/share/flamefs /mnt/prof\n"
	             "  cat /mnt/prof/nginx/1.25.3/total\n"
	             "  ls /mnt/prof/nginx/1.25.3/main/\n"
	             "  go tool pprof -top /mnt/prof/nginx/1.25.3/pprof\n"
	             "  firefox /mnt/prof/nginx/1.25.3/flame.svg\n"
	             "  cat /mnt/prof/@last/5m/nginx/1.25.3/total\n"
	             "  cat /mnt/prof/nginx/@diff/1.25.2/1.25.3/regressions\n"
	             "  ls /mnt/prof/nginx/1.25.3/@functions/malloc/callers/\n"
	             "  fusermount3 -u /mnt/prof\n"
	             "\n"
	             "  /etc/fstab:  /var/lib/flamefs  /mnt/prof  fuse.flamefs  "
	             "ro,allow_other,noauto  0 0\n");
}

/* Refuses a mount point that does not exist, is not a directory, or is
 * already a mount point, with one line that says so. */
static int check_mountpoint(const char *mp)
{
	struct stat st, pst;
	char *parent;
	int r = 0;

	if (stat(mp, &st) < 0) {
		r = errno;
		if (r == ENOTCONN)
			fprintf(stderr, "flamefs: %s: stale mount (run fusermount3 -u %s)\n", mp,
			        mp);
		else
			fprintf(stderr, "flamefs: %s: %s\n", mp, strerror(r));
		return -r;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "flamefs: %s: not a directory\n", mp);
		return -ENOTDIR;
	}
	if (asprintf(&parent, "%s/..", mp) < 0)
		return -ENOMEM;
	if (stat(parent, &pst) == 0 && (pst.st_dev != st.st_dev || pst.st_ino == st.st_ino)) {
		fprintf(stderr, "flamefs: %s: busy: something is already mounted there\n", mp);
		r = -EBUSY;
	}
	free(parent);
	return r;
}

static int open_store(const char *dir)
{
	char err[512] = "";
	int r = store_open(dir, STORE_READONLY, &fs.store, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "flamefs: %s\n", err[0] ? err : strerror(-r));
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &fs.last_refresh);
	fs.mtime = time(NULL);
	fs.last_bucket_end = bucket_end_now();
	r = load_series_locked();
	if (r < 0) {
		fprintf(stderr, "flamefs: %s: cannot list series: %s\n", dir,
		        store_errmsg(fs.store));
		store_close(fs.store);
		fs.store = NULL;
		return r;
	}
	return 0;
}

/* Frees everything the daemon holds (the mount is gone). */
static void teardown(void)
{
	pthread_mutex_lock(&fs.lock);
	while (fs.open_files)
		close_file_locked(fs.open_files);
	for (uint32_t i = 1; i < fs.max_space; i++)
		if (fs.spaces[i])
			space_free_locked(fs.spaces[i]);
	drop_rendered_locked();
	while (fs.inval_head) {
		struct inval *next = fs.inval_head->next;
		free(fs.inval_head);
		fs.inval_head = next;
	}
	fs.inval_tail = &fs.inval_head;
	store_series_free(fs.series, fs.nseries);
	fs.series = NULL;
	fs.nseries = 0;
	free(fs.by_id);
	free(fs.primary);
	free(fs.space_of);
	fs.by_id = NULL;
	fs.primary = NULL;
	fs.space_of = NULL;
	fs.by_id_len = fs.space_of_len = 0;
	for (size_t i = 0; i < fs.nsdirs; i++) {
		free(fs.sdirs[i].name);
		free(fs.sdirs[i].version);
	}
	free(fs.sdirs);
	fs.sdirs = NULL;
	free(fs.sdir_hash);
	fs.sdir_hash = NULL;
	for (unsigned i = 0; i < sizeof(fs.fxc) / sizeof(fs.fxc[0]); i++) {
		view_functions_free(fs.fxc[i].fx);
		put_tree_locked(fs.fxc[i].tree);
		memset(&fs.fxc[i], 0, sizeof(fs.fxc[i]));
	}
	fs.nsdirs = fs.sdirs_cap = 0;
	store_close(fs.store);
	fs.store = NULL;
	pthread_mutex_unlock(&fs.lock);
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts = {0};
	struct cli cli = {0};
	struct fuse_session *se = NULL;
	pthread_t inval_thread;
	struct stat st;
	char *fsname = NULL;
	int ret = 1, r;

	if (fuse_opt_parse(&args, &cli, cli_opts, cli_proc) < 0)
		goto out;
	if (cli.help) {
		usage(stdout);
		ret = 0;
		goto out;
	}
	if (cli.version) {
		printf("flamefs %s (libfuse %s)\n", FLAMEFS_VERSION, fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (fuse_parse_cmdline(&args, &opts) < 0)
		goto out;
	if (!cli.store || !opts.mountpoint || cli.nonopts > 2) {
		fprintf(stderr, "flamefs: expected STORE MOUNTPOINT (see flamefs --help)\n");
		ret = 2;
		goto out;
	}
	if (cli.rw) {
		fprintf(stderr, "flamefs: the view is read-only; drop the rw option\n");
		ret = 2;
		goto out;
	}
	if (stat(cli.store, &st) < 0) {
		fprintf(stderr, "flamefs: %s: %s\n", cli.store, strerror(errno));
		goto out;
	}
	/* fuse_daemonize() changes to "/": keep an absolute path. */
	char *abs = realpath(cli.store, NULL);
	if (!abs) {
		fprintf(stderr, "flamefs: %s: %s\n", cli.store, strerror(errno));
		goto out;
	}
	free(cli.store);
	cli.store = abs;
	/* The root is synthetic directory 0. */
	fs.sdirs = calloc(16, sizeof(*fs.sdirs));
	if (!fs.sdirs)
		goto out;
	fs.sdirs_cap = 16;
	fs.nsdirs = 1;
	fs.sdirs[0].kind = SD_ROOT;
	/* Check the store now, while errors still reach the terminal.  When
	 * we fork it is opened again afterwards: RocksDB's threads do not
	 * survive fork(). */
	if (open_store(cli.store) < 0)
		goto out_close;
	if (!opts.foreground) {
		store_series_free(fs.series, fs.nseries);
		fs.series = NULL;
		fs.nseries = 0;
		store_close(fs.store);
		fs.store = NULL;
	}
	if (check_mountpoint(opts.mountpoint) < 0)
		goto out_close;

	if (!strchr(cli.store, ',') &&
	    asprintf(&fsname, "-ofsname=%s,subtype=flamefs", cli.store) >= 0)
		fuse_opt_add_arg(&args, fsname);
	if (fuse_opt_add_arg(&args, "-oro") < 0)
		goto out_close;
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out_close;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_destroy;
	if (fuse_daemonize(opts.foreground) != 0)
		goto out_unmount;
	if (!fs.store && open_store(cli.store) < 0)
		goto out_unmount;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_unmount;
	fs.se = se;
	if (pthread_create(&inval_thread, NULL, invalidator, NULL) != 0)
		goto out_signals;
	/* The loops return the number of the signal that ended them (SIGINT,
	 * SIGTERM, SIGHUP): that is a clean unmount, not an error. */
	if (opts.singlethread) {
		r = fuse_session_loop(se);
	} else {
		/* libfuse's default of 10 idle threads unless -o
		 * max_idle_threads= says otherwise. */
		struct fuse_loop_config cfg = {
		        .clone_fd = opts.clone_fd,
		        .max_idle_threads =
		                opts.max_idle_threads == UINT_MAX ? 10 : opts.max_idle_threads,
		};
		r = fuse_session_loop_mt(se, &cfg);
	}
	ret = r < 0 ? 1 : 0;
	pthread_mutex_lock(&fs.lock);
	fs.inval_stop = true;
	pthread_cond_signal(&fs.inval_cond);
	pthread_mutex_unlock(&fs.lock);
	pthread_join(inval_thread, NULL);
out_signals:
	fs.se = NULL;
	fuse_remove_signal_handlers(se);
out_unmount:
	fuse_session_unmount(se);
out_destroy:
	fuse_session_destroy(se);
out_close:
	teardown();
out:
	free(fsname);
	free(opts.mountpoint);
	free(cli.store);
	fuse_opt_free_args(&args);
	return ret;
}

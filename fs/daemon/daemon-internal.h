/*
 * daemon-internal.h — what the files of the flamefs daemon share: the
 * inode number's layout, the spaces (tree caches), the synthetic
 * directories, the render cache's entries and open files, the one state
 * (`fs`, guarded by fs.lock) and each file's exported functions.  Only
 * fs/daemon/ includes it.  Files call down this list and never up:
 * flamefs.c, ops.c, refresh.c, synth.c, inode.c, space.c, view-series.c
 * (rendercache.c is called by ops.c and flamefs.c, and by inode.c for the
 * size of a cached rendering; state.c holds `fs` and calls nothing); see
 * fs/daemon/README.md.
 */
#ifndef FLAMEFS_DAEMON_INTERNAL_H
#define FLAMEFS_DAEMON_INTERNAL_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "view.h"

/* Entry and attribute timeout of everything current (seconds).  Changes
 * are invalidated explicitly, so this only bounds how long a missed
 * invalidation could last. */
#define CACHE_TIMEOUT 60.0

/* ---- inode numbers ------------------------------------------------------

   An inode number is 1 + these 64 bits, high to low:

     space   13   0: the synthetic directories (root, binaries, the views'
                  directories); else a tree space (struct space): one
                  series' call tree, or a window, diff, callers or callees
                  tree
     alias    1   1: the tree shown as /<b>/<v>/ (the version's primary
                  event), 0: as /<b>/<v>@<e>/ (two directories, one tree)
     node    32   the tree's node id; in space 0 the synthetic dir's index
     slot     4   0: the directory; f + 1: the file space_file(f) (in
                  space 0: a function's self, 1, and total, 2); room
                  for 15 files, all taken by a series' version
                  directory with spans (view_files, quality, about,
                  spans, trace.json) and a window's (view_files,
                  quality, window, about, trace.json)
     version 14   files only: the node's content version (mod 2^14)

   So the root is 1, a directory's number is the same for as long as the
   daemon keeps the space (node ids survive rebuilds), and a file's number
   changes whenever its bytes may have: a file inode's size and pages never
   change, and the kernel may cache them for as long as it likes. */
#define INO_SPACE_BITS   13
#define INO_NODE_BITS    32
#define INO_SLOT_BITS    4
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
	/* The whole view at a root (issue 24): every binary's primary series
	 * of view base_id (of one event, space_all_event_locked()), shown as
	 * the files of node VIEW_ROOT only, in the directory parent_sdir (a
	 * root: /, /@host/<name>/). */
	SPACE_ALL,
	SPACE_ALL_WINDOW, /* ... restricted to a window (last, from, to): /@last/D/, /@range/F/T/ */
	/* Window B (from2, to2) against window A (last, from, to) of the
	 * same tree: <window A>/@diff/<from2>/<to2>/... (issue 39). */
	SPACE_WDIFF,     /* series_id's window trees: .../<binary>/<version>/ */
	SPACE_ALL_WDIFF, /* the whole view's (base_id): the files of the diff's root */
};

/* The directory a space's tree shows at the top: the one child of the
 * tree's frameless root (for a series, the binary's node). */
#define SPACE_ROOT_NODE 1u

struct space {
	uint32_t id;
	enum space_kind kind;
	uint32_t series_id;
	/* The key of the other kinds (SPACE_SERIES uses series_id only). */
	uint32_t base_id;   /* SPACE_DIFF: version A's series */
	int64_t last;       /* SPACE_WINDOW: @last's seconds, or 0 for @range */
	int64_t from, to;   /* SPACE_WINDOW @range: [from, to), microseconds */
	int64_t from2, to2; /* SPACE_*WDIFF: window B, [from2, to2), microseconds */
	char *func;         /* SPACE_CALLERS/CALLEES: the function */
	size_t func_len;
	uint32_t parent_sdir; /* the synthetic directory above its root */

	uint64_t uid;          /* never reused: the render cache's key; new at each fresh build */
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
	/* SPACE_ALL*: the content version of its files, bumped by every
	 * refresh that changes its view and kept while the tree is dropped
	 * (the files have no size in stat and are read with direct_io). */
	uint32_t files_version;
	uint32_t *changed;
	uint8_t *seen;
	uint32_t nodes_cap;
	time_t *gen_time;
	uint32_t gen_time_cap;
};

static inline bool space_is_all(const struct space *sp)
{
	return sp->kind == SPACE_ALL || sp->kind == SPACE_ALL_WINDOW || sp->kind == SPACE_ALL_WDIFF;
}

/* A space whose tree is a diff tree (its directories show diff files). */
static inline bool space_is_diff(const struct space *sp)
{
	return sp->kind == SPACE_DIFF || sp->kind == SPACE_WDIFF || sp->kind == SPACE_ALL_WDIFF;
}

/* The whole view of view v as a series id, for the root's @functions (its
 * SD_FUNCS and SD_FUNC directories, callers and callees spaces): the top
 * of the id range, which the view series' ids (1 up) never reach. */
#define SERIES_ALL_BASE 0xffff0000u
static inline uint32_t series_all_id(uint32_t view)
{
	return SERIES_ALL_BASE + view;
}
static inline bool series_id_is_all(uint32_t id)
{
	return id >= SERIES_ALL_BASE;
}

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
	/* The inode's alias bit: the two names of one tree are two inodes,
	 * and each has renderings and lengths of its own, so that what the
	 * daemon knows of a file's length is what it told of that inode. */
	uint32_t alias;
	bool keep;                      /* cached whatever its size: stat reads the size from it */
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
	bool sizeless;      /* a current root file whose stat had no size */
	/* A file without a size function: the length of its rendering when
	 * the daemon knew it at the open, else -1; the daemon answers it to
	 * stat for as long as the file is open (inode_attr_locked()). */
	int64_t length;
	/* Guarded by mu: set once the rendering was refused for its size
	 * (-EFBIG, which the same tree always gives again), so that the
	 * open's later reads answer it without rendering (and logging) once
	 * more. */
	bool too_large;
};

/* A synthetic directory (space 0): the root and one per binary name ever
 * seen (kept, empty, once the binary is pruned, so indexes are stable),
 * and the directories of issue #13's views, made when first looked up and
 * kept (an index is an inode number) but found again by their key:
 *
 *   SD_LAST      /@last                 the durations
 *   SD_RANGE     /@range                the days with data; any FROM resolves
 *   SD_FROM      /@range/FROM           the next day (a day FROM); any TO resolves
 *   SD_WINDOW    /@last/D, /@range/F/T  binaries with counts in the window
 *   SD_WBINARY   .../<binary>           its versions: window tree spaces
 *   SD_DIFF      /<binary>/@diff        versions (A)
 *   SD_DIFFA     /<binary>/@diff/A      versions (B): diff tree spaces
 *   SD_FUNCS     <version>/@functions   the version's functions
 *   SD_FUNC      .../@functions/F       self, total, callers/, callees/
 *   SD_HOSTS     /@host, /@cgroup,      the hosts (the label's values) that have
 *                /@container, /@thread, series (series_id: the view kind)
 *                /@span
 *   SD_WDIFF     <window>/@diff         nothing; any FROM resolves
 *   SD_WDFROM    <window>/@diff/FROM    nothing; any TO resolves
 *   SD_WDROOT    <window>/@diff/F/T     the diff's files, binaries of either window
 *   SD_WDBINARY  .../<binary>           its versions: window diff tree spaces
 *
 * Every one of them belongs to a view (sdir.view): 0 is every host and
 * label set summed, v > 0 one host's or one label value's series alone
 * (series_view_kind(v), series_view_value(v)), whose root
 * /@host/<name>, /@cgroup/<value>, ... is an SD_ROOT of view v (the whole
 * tree of directories again, restricted). */
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
	SD_HOSTS,
	SD_WDIFF,
	SD_WDFROM,
	SD_WDROOT,
	SD_WDBINARY,
	SD_KINDS
};

struct sdir {
	enum sdir_kind kind; /* its operations: synth_ops_of() */
	char *name;          /* SD_BINARY, SD_WBINARY, SD_DIFF, SD_DIFFA: the binary;
	                        SD_FUNC: the function (name_len bytes) */
	size_t name_len;
	char *version;      /* SD_DIFFA: version A */
	size_t lo, hi;      /* SD_BINARY: its series are fs.series[lo, hi) */
	int64_t last;       /* SD_WINDOW, SD_WBINARY: @last's seconds, 0 for @range */
	int64_t from, to;   /* SD_FROM: from; SD_WINDOW, SD_WBINARY of @range: [from, to);
	                       microseconds (and window A of the SD_WD* kinds) */
	int64_t from2, to2; /* SD_WDFROM: from2; SD_WDROOT, SD_WDBINARY: window B */
	uint32_t series_id; /* SD_FUNCS, SD_FUNC: the version's series */
	uint32_t view;      /* 0: every host summed; h: one host (view-series.c) */
	uint32_t parent;    /* the synthetic directory above it (SD_FUNCS: none) */
	uint32_t index;     /* its own index (the inode's node field) */
	uint32_t hnext;     /* the key hash's chain, index + 1 */
};

/* What each kind of synthetic directory does (synth.c). */
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

/* The directory entries a listing gives the kernel (inode_emit_locked). */
struct emitter {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	bool plus;
	fuse_ino_t *counted; /* readdirplus entries: lookups to the kernel */
	size_t ncounted, counted_cap;
};

/* What an inode names now.  `sp` and `tree` are borrowed under fs.lock. */
struct at {
	struct ino i;
	struct sdir *sd;  /* space 0 */
	struct space *sp; /* tree spaces */
	struct view_tree *tree;
	bool current; /* files: i.version is the node's content version */
};

/* The entries of a binary directory (series_each_version). */
typedef int (*version_fn)(void *ctx, const char *name, size_t len, uint32_t series_id, bool alias);

struct find_version {
	const char *name;
	size_t len;
	uint32_t series_id;
	bool alias;
};

struct version_list {
	struct find_version *v;
	char (*names)[VIEW_NAME_MAX + 1];
	size_t n, cap;
};

/* Keys (byte strings) to small stable ids, 1 up, never forgotten: the
 * view series' ids and the hosts' view numbers (view-series.c). */
struct idmap {
	char **keys;
	size_t *lens;
	uint32_t n, cap;
	uint32_t *slots; /* index + 1; 0: empty */
	size_t mask;     /* slots - 1; 0 when unallocated */
};

/* The kinds of view v > 0 (view-series.c): what selects its series, the
 * host or one label's value; view_kind_names[] is the label's key and
 * the name of the directory that lists them (after '@'). */
enum view_kind {
	VIEW_KIND_HOST,
	VIEW_KIND_CGROUP,
	VIEW_KIND_CONTAINER,
	VIEW_KIND_THREAD,
	VIEW_KIND_SPAN,
	VIEW_KINDS
};
extern const char *const view_kind_names[VIEW_KINDS];
/* The value a label's view gives series without that label. */
#define VIEW_LABEL_NONE "-"
/* The label that names the span a sample fell in (store.h, "spans"). */
#define VIEW_LABEL_SPAN "span"

/* The daemon's state. */
struct flamefs_state {
	char *store_dir;
	struct fuse_session *se;
	bool no_opendir; /* the kernel takes ENOSYS for OPENDIR */
	/* The most bytes one rendering may take (-o max_render, else
	 * VIEW_RENDER_MAX): set before the session starts, read-only after. */
	size_t render_max;
	/* Who may read the view (inode_set_access()): every file and
	 * directory is owned by `owner`:`group` with the read (and, for
	 * directories, search) bits of `read_mode` (0444 when every class may
	 * read).  Set before the session starts, read-only after. */
	uid_t owner;
	gid_t group;
	mode_t read_mode;
	pthread_mutex_t lock; /* guards every field below */
	struct store *store;
	struct timespec last_refresh;
	uint64_t generation; /* bumped whenever the store changed */
	time_t mtime;        /* wall clock of the last change seen */
	/* The view's series: one per (view, binary, version, event), sorted
	 * by view, then binary, version and event, with ids of the daemon's
	 * own (view-series.c); `host` is NULL in view 0 and the view's key
	 * ("host=<name>", "cgroup=<path>", ...) in the others.  Each one is
	 * the sum of its members (fs.members), the store's series (store
	 * ids; fs.raw sorted as store_series_list() sorts). */
	struct store_series *series;
	size_t nseries;
	struct store_series *raw;
	size_t nraw;
	size_t nraw_spans; /* of fs.raw, the span-record series (series_is_spans) */
	/* Shallow copies of fs.raw's entries (their strings are fs.raw's),
	 * the members of each view series side by side: a label value's
	 * view sums series that are not neighbours in fs.raw. */
	struct store_series *mraw;
	struct members {
		size_t lo, hi;
	} * members;               /* per fs.series index: its members, fs.mraw[lo, hi) */
	struct idmap ids;          /* (view, binary, version, event) -> series id */
	struct idmap viewid;       /* "<kind>=<value>" -> view number (view-series.c) */
	size_t *view_lo, *view_hi; /* per view 0..viewid.n: its range of fs.series */
	size_t *by_id;             /* series id -> index + 1 in fs.series, 0 = none */
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
	uint64_t last_renames;   /* store_renames() at the last refresh */
	bool store_down;         /* the last refresh failed: said once on stderr */
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
	/* The lengths of renderings of files without a size function, kept
	 * after their bytes leave the cache (rendercache.c): a table of
	 * LENGTH_SETS sets of LENGTH_WAYS, allocated at the first one. */
	struct rendered_length *lengths;
	unsigned lengths_clock;
	/* Every open file handle.  After a lazy unmount the kernel can end
	 * the connection before the last RELEASE reaches us, so the handles
	 * left here are freed at exit. */
	struct open_file *open_files;
	/* Entry invalidations waiting for the invalidator thread. */
	struct inval *inval_head, **inval_tail;
	pthread_cond_t inval_cond;
	bool inval_stop;
};
extern struct flamefs_state fs; /* defined in state.c */

/* view-series.c */
const struct store_series *series_by_id_locked(uint32_t id);
const struct store_series *series_diff_base_locked(const struct store_series *b,
                                                   const char *version_a);
uint32_t series_view_locked(const struct store_series *s);
void series_view_range(uint32_t view, size_t *lo, size_t *hi);
int series_view_kind(uint32_t view);
const char *series_view_value(uint32_t view);
bool series_kind_present(int kind);
void series_members_locked(uint32_t id, const struct store_series **m, size_t *n);
int series_make_views_locked(struct store_series *raw, size_t nraw, struct store_series **out,
                             size_t *n, struct store_series **mraw, struct members **members,
                             size_t **view_lo, size_t **view_hi);
void series_free_locked(void);
void series_forget_ids_locked(void);
size_t series_primary(const struct store_series *list, size_t lo, size_t hi);
int series_each_version(const struct store_series *list, size_t lo, size_t hi, version_fn fn,
                        void *ctx);
int series_find_version_cb(void *ctx, const char *name, size_t len, uint32_t series_id, bool alias);
size_t series_binary_end(const struct store_series *list, size_t n, size_t lo);
void series_binary_range(uint32_t view, const char *binary, size_t *lo, size_t *hi);
const struct store_series *series_primary_of(uint32_t view, const char *binary,
                                             const char *version);
bool series_in_window(const struct store_series *s, int64_t from, int64_t to);
int series_collect_version_cb(void *ctx, const char *name, size_t len, uint32_t series_id,
                              bool alias);
bool series_is_spans(const struct store_series *s);
int series_spans_locked(uint32_t view, const char *binary, const char *version,
                        struct store_series **out, size_t *n);

/* space.c */
void space_put_tree_locked(struct tree_ref *r);
void space_put_tree(struct tree_ref *r);
void space_drop_tree_locked(struct space *sp);
void space_free_locked(struct space *sp);
void space_trim_locked(void);
struct space *space_get_locked(uint32_t id);
struct space *space_for_series_locked(uint32_t series_id, int *err);
struct space *space_for_key_locked(const struct space *key, int *err);
const struct view_file *space_file(const struct space *sp, unsigned f);
unsigned space_file_count(const struct space *sp, uint32_t node);
int space_functions_locked(uint32_t series_id, struct view_functions **fx, struct tree_ref **tree);
int space_grow_locked(struct space *sp, uint32_t n, uint32_t gen);
int space_build_tree_locked(const struct space *sp, const struct view_tree *seed,
                            struct view_tree **out);
int space_build_locked(struct space *sp);
void space_window_locked(const struct space *sp, int64_t *from, int64_t *to);
const char *space_all_event_locked(size_t lo, size_t hi);
time_t space_node_mtime(const struct space *sp, uint32_t node);
void space_count_lookup_locked(const struct ino *i);
void space_uncount_lookup_locked(const struct ino *i, uint64_t n);

/* inode.c */
fuse_ino_t inode_make(struct ino i);
struct ino inode_split(fuse_ino_t ino);
int inode_resolve_tree_locked(fuse_ino_t ino, struct at *at, bool need_tree);
int inode_resolve_locked(fuse_ino_t ino, struct at *at);
bool inode_names(const char *comp, size_t len, const char *raw, size_t raw_len, int flags);
void inode_attr_file(struct stat *st, fuse_ino_t ino, time_t mtime, uint64_t size);
/* Makes the view's files and directories readable as the store directory
 * is (st: its stat): its owner and group, and read access for the classes
 * the directory lets read; with NULL (a database), by this process's
 * user and group, readable by all. */
void inode_set_access(const struct stat *st);
int inode_func_file_locked(const struct sdir *sd, unsigned slot, struct view_buf *out);
double inode_attr_locked(const struct at *at, fuse_ino_t ino, struct stat *st);
bool inode_emit_locked(struct emitter *em, const char *name, struct ino i, bool dot, off_t cookie);

/* rendercache.c */
void rendercache_ref(struct rendered *r);
void rendercache_put(struct rendered *r);
void rendercache_drop_locked(void);
int rendercache_get(const struct rendered *key, const struct view_tree *tree, struct rendered **out,
                    bool *fresh);
int64_t rendercache_length_locked(const struct rendered *key);

/* synth.c */
int synth_get_locked(const struct sdir *key, size_t *out);
const struct sdir_ops *synth_ops_of(const struct sdir *sd);
int synth_binary_locked(const char *name, uint32_t view, size_t *out);

/* refresh.c */
void refresh_maybe_locked(void);
void refresh_inval_attr(fuse_ino_t ino);
void *refresh_invalidator(void *arg);
int refresh_load_series_locked(void);
int64_t refresh_bucket_end_now(void);

/* loop.c */
int loop_run(struct fuse_session *se, unsigned nthreads);
void loop_yield(void);

/* ops.c */
extern const struct fuse_lowlevel_ops ops_lowlevel; /* what main mounts */
void ops_close_file_locked(struct open_file *of);
/* The requests answered since the mount, by kind, as one line ("lookup N,
 * forget N, ...") in buf; 0 or -ENOSPC. */
int ops_counts(char *buf, size_t size);

#endif

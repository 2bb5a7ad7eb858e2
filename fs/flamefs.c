/*
 * flamefs.c — the FUSE daemon: mounts a flamefs store read-only as
 * /<binary>/<version>/<frame>/.../ with the view's generated files in every
 * call-tree directory.  It opens the store as a RocksDB secondary, catches
 * up with the writer at most once a second on access, builds call trees on
 * demand and caches them until the store's sequence number moves.  Each
 * open() takes one rendering of the file (from a byte-bounded render cache
 * when this generation already rendered it) and keeps it in the file
 * handle, so one open file is one consistent snapshot.  See fs/README.md.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
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
 * files at least RENDER_CACHE_MIN long (smaller ones are cheap to render). */
#define RENDER_CACHE_BYTES (256ull << 20)
#define RENDER_CACHE_MIN   4096

/* A built tree shared by the cache and by renderers running unlocked. */
struct tree_ref {
	struct view_tree *tree;
	uint32_t series_id;
	unsigned refs;     /* guarded by fs.lock */
	uint64_t last_use; /* guarded by fs.lock */
};

/* The rendered bytes of one file of one node in one store generation.
 * Shared by the render cache and the open files reading it; freed when the
 * last of them lets go.  `buf` is immutable once published. */
struct rendered {
	struct view_buf buf;
	uint64_t generation;
	uint32_t series_id;
	uint32_t node;
	uint32_t file;
	unsigned refs;                  /* guarded by fs.lock */
	uint64_t stale_mark;            /* fs.stale_reads when last opened */
	struct rendered *newer, *older; /* LRU list, guarded by fs.lock */
};

static struct {
	char *store_dir;
	pthread_mutex_t lock; /* guards every field below */
	struct store *store;
	struct timespec last_refresh;
	uint64_t generation; /* bumped whenever the store changed */
	time_t mtime;        /* wall clock of the last change seen */
	struct store_series *series;
	size_t nseries;
	struct tree_ref *trees[TREE_CACHE_SLOTS];
	uint64_t use_clock;
	/* The render cache: most recently used first, `cache_bytes` of
	 * buffers in all. */
	struct rendered *newest, *oldest;
	uint64_t cache_bytes;
	/* Reads through handles opened in an older generation (atomic). */
	uint64_t stale_reads;
	/* Every open file handle.  After a lazy unmount the kernel can end
	 * the connection before the last RELEASE reaches us, so the handles
	 * left here are freed at exit. */
	struct open_file *open_files;
} fs = {.lock = PTHREAD_MUTEX_INITIALIZER};

enum kind { K_ROOT, K_BINARY, K_NODE, K_FILE };

/* What a path names.  `tree` holds a reference (release with put_tree). */
struct resolved {
	enum kind kind;
	size_t series; /* index of the first series of the binary,
				 * or of the tree's series */
	struct tree_ref *tree;
	uint32_t node;
	uint32_t file; /* index into view_files */
	uint64_t generation;
};

struct open_file {
	struct rendered *r;
	uint64_t generation;
	struct open_file *prev, *next; /* fs.open_files, guarded by fs.lock */
};

/* ---- store and cache (call with fs.lock held) ------------------------- */

static void put_tree_locked(struct tree_ref *r)
{
	if (r && --r->refs == 0) {
		view_tree_free(r->tree);
		free(r);
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

static void drop_trees_locked(void)
{
	for (size_t i = 0; i < TREE_CACHE_SLOTS; i++) {
		put_tree_locked(fs.trees[i]);
		fs.trees[i] = NULL;
	}
}

static void put_rendered_locked(struct rendered *r)
{
	if (r && --r->refs == 0) {
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

/* Drops the cache's reference to `r`. */
static void uncache_locked(struct rendered *r)
{
	unlink_locked(r);
	fs.cache_bytes -= r->buf.len;
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
}

static int load_series_locked(void)
{
	struct store_series *list;
	size_t n;
	int r = store_series_list(fs.store, &list, &n);

	if (r < 0)
		return r;
	store_series_free(fs.series, fs.nseries);
	fs.series = list;
	fs.nseries = n;
	return 0;
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
	if (r <= 0 && store_sequence(fs.store) == before)
		return;
	/* Something committed: every cached tree and rendering is stale. */
	if (load_series_locked() < 0)
		return;
	drop_trees_locked();
	drop_rendered_locked();
	__atomic_add_fetch(&fs.generation, 1, __ATOMIC_SEQ_CST);
	fs.mtime = time(NULL);
}

/* Returns a referenced tree for series index `si`, building it if needed. */
static int get_tree_locked(size_t si, struct tree_ref **out)
{
	uint32_t id = fs.series[si].id;
	size_t victim = 0;
	int r;

	for (size_t i = 0; i < TREE_CACHE_SLOTS; i++) {
		struct tree_ref *t = fs.trees[i];
		if (t && t->series_id == id) {
			t->refs++;
			t->last_use = ++fs.use_clock;
			*out = t;
			return 0;
		}
		if (!t)
			victim = i;
		else if (fs.trees[victim] && t->last_use < fs.trees[victim]->last_use)
			victim = i;
	}
	struct tree_ref *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = view_tree_build(fs.store, &fs.series[si], 1, INT64_MIN, INT64_MAX, &t->tree);
	if (r < 0) {
		free(t);
		return r;
	}
	malloc_trim(0); /* give the build's scratch tables back */
	t->series_id = id;
	t->refs = 2; /* the cache's and the caller's */
	t->last_use = ++fs.use_clock;
	put_tree_locked(fs.trees[victim]);
	fs.trees[victim] = t;
	*out = t;
	return 0;
}

/* ---- names ------------------------------------------------------------- */

/* Does component comp[0..len) name `name` (escaped with `flags`)? */
static bool names(const char *comp, size_t len, const char *name, size_t name_len, int flags)
{
	char esc[VIEW_NAME_MAX + 1];
	size_t n = view_escape(name, name_len, flags, esc);

	return n == len && memcmp(esc, comp, len) == 0;
}

/* The series to show in /<binary>/<version>/: cpu-clock if the version
 * has it, else the event that the most input bytes were imported into
 * (the importers count a pprof or legacy profile's bytes for its default
 * sample type, so that is the one shown, as pprof shows it), else the
 * event with the most samples.  [lo, hi) are the series of that binary
 * and version (sorted by event). */
static size_t primary_series(size_t lo, size_t hi)
{
	size_t best = lo;

	for (size_t i = lo; i < hi; i++)
		if (strcmp(fs.series[i].event, "cpu-clock") == 0)
			return i;
	for (size_t i = lo; i < hi; i++) {
		const struct store_series *a = &fs.series[i], *b = &fs.series[best];
		if (a->input_bytes > b->input_bytes ||
		    (a->input_bytes == b->input_bytes && a->samples > b->samples))
			best = i;
	}
	return best;
}

/* The range of series with binary name `b` (escaped component). */
static int find_binary_locked(const char *comp, size_t len, size_t *lo, size_t *hi)
{
	for (size_t i = 0; i < fs.nseries; i++) {
		const char *b = fs.series[i].binary;
		if (i > 0 && strcmp(b, fs.series[i - 1].binary) == 0)
			continue;
		if (!names(comp, len, b, strlen(b), 0))
			continue;
		size_t j = i;
		while (j < fs.nseries && strcmp(fs.series[j].binary, b) == 0)
			j++;
		*lo = i;
		*hi = j;
		return 0;
	}
	return -ENOENT;
}

static int find_version_locked(size_t blo, size_t bhi, const char *comp, size_t len, size_t *si)
{
	const char *at = memchr(comp, '@', len);
	size_t vlen = at ? (size_t)(at - comp) : len;

	for (size_t i = blo; i < bhi;) {
		const char *v = fs.series[i].version;
		size_t j = i;
		while (j < bhi && strcmp(fs.series[j].version, v) == 0)
			j++;
		if (names(comp, vlen, v, strlen(v), VIEW_ESCAPE_AT)) {
			if (!at) {
				*si = primary_series(i, j);
				return 0;
			}
			if (j - i < 2)
				return -ENOENT;
			for (size_t k = i; k < j; k++) {
				const char *e = fs.series[k].event;
				if (names(at + 1, len - vlen - 1, e, strlen(e), 0)) {
					*si = k;
					return 0;
				}
			}
			return -ENOENT;
		}
		i = j;
	}
	return -ENOENT;
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

/* Resolves `path`.  On success res->tree (if set) holds a reference. */
static int resolve(const char *path, struct resolved *res)
{
	const char *p = path;
	size_t blo = 0, bhi = 0, si = 0;
	int r = 0, level = 0;

	memset(res, 0, sizeof(*res));
	res->kind = K_ROOT;
	pthread_mutex_lock(&fs.lock);
	maybe_refresh_locked();
	res->generation = fs.generation;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchrnul(p, '/');
		size_t len = (size_t)(e - p);
		if (res->kind == K_FILE) {
			r = -ENOTDIR;
			goto fail;
		}
		if (level == 0) {
			r = find_binary_locked(p, len, &blo, &bhi);
			if (r < 0)
				goto fail;
			res->kind = K_BINARY;
			res->series = blo;
		} else if (level == 1) {
			r = find_version_locked(blo, bhi, p, len, &si);
			if (r < 0)
				goto fail;
			r = get_tree_locked(si, &res->tree);
			if (r < 0)
				goto fail;
			res->kind = K_NODE;
			res->series = si;
			const char *b = fs.series[si].binary;
			res->node = view_node_find_child(res->tree->tree, VIEW_ROOT, b, strlen(b));
			if (res->node == VIEW_NONE) {
				r = -EIO;
				goto fail;
			}
		} else {
			uint32_t f;
			for (f = 0; f < view_file_count; f++)
				if (strlen(view_files[f].name) == len &&
				    memcmp(view_files[f].name, p, len) == 0)
					break;
			if (f < view_file_count) {
				res->kind = K_FILE;
				res->file = f;
			} else {
				uint32_t c = find_child(res->tree->tree, res->node, p, len);
				if (c == VIEW_NONE) {
					r = -ENOENT;
					goto fail;
				}
				res->node = c;
			}
		}
		level++;
		p = e;
	}
	pthread_mutex_unlock(&fs.lock);
	return 0;
fail:
	put_tree_locked(res->tree);
	res->tree = NULL;
	pthread_mutex_unlock(&fs.lock);
	return r;
}

/* ---- rendered files ---------------------------------------------------- */

/* The cached rendering of the file `res` names, made most recently used
 * and referenced for the caller, or NULL. */
static struct rendered *find_rendered_locked(const struct resolved *res)
{
	for (struct rendered *c = fs.newest; c; c = c->older) {
		if (c->generation == res->generation && c->series_id == res->tree->series_id &&
		    c->node == res->node && c->file == res->file) {
			unlink_locked(c);
			push_newest_locked(c);
			c->refs++;
			return c;
		}
	}
	return NULL;
}

/* Returns a referenced rendering of the file `res` names, from the cache
 * when it holds one for this generation (*hit set), else rendered now and
 * cached when big enough.  Release with put_rendered_locked(). */
static int get_rendered(const struct resolved *res, struct rendered **out, bool *hit)
{
	struct rendered *r, *c;
	int err;

	pthread_mutex_lock(&fs.lock);
	c = find_rendered_locked(res);
	pthread_mutex_unlock(&fs.lock);
	*hit = c != NULL;
	if (c) {
		*out = c;
		return 0;
	}

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	err = view_files[res->file].render(res->tree->tree, res->node, &r->buf);
	if (err < 0) {
		view_buf_free(&r->buf);
		free(r);
		return err;
	}
	r->generation = res->generation;
	r->series_id = res->tree->series_id;
	r->node = res->node;
	r->file = res->file;
	r->refs = 1;
	pthread_mutex_lock(&fs.lock);
	/* Another open may have rendered it meanwhile: share that one. */
	c = find_rendered_locked(res);
	if (c) {
		put_rendered_locked(r);
		pthread_mutex_unlock(&fs.lock);
		*out = c;
		return 0;
	}
	r->stale_mark = __atomic_load_n(&fs.stale_reads, __ATOMIC_SEQ_CST);
	if (r->buf.len >= RENDER_CACHE_MIN && r->buf.len <= RENDER_CACHE_BYTES &&
	    res->generation == fs.generation) {
		r->refs++;
		push_newest_locked(r);
		fs.cache_bytes += r->buf.len;
		while (fs.cache_bytes > RENDER_CACHE_BYTES && fs.oldest != r)
			uncache_locked(fs.oldest);
	}
	pthread_mutex_unlock(&fs.lock);
	*out = r;
	return 0;
}

/* ---- operations --------------------------------------------------------- */

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Entries only ever appear, so the kernel may keep them for a
	 * second.  Attributes it may not keep at all: a file's size changes
	 * with the store generation, and the kernel stops a read at the size
	 * it has cached, so a size kept from before a refresh cut the next
	 * open's bigger rendering short (a folded without its last lines, a
	 * total missing a digit).  With no attribute caching, a read that
	 * reaches the cached size asks again (getattr with the file handle,
	 * which answers the open snapshot's size) and stat is always exact. */
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0;
	cfg->direct_io = 0;
	cfg->use_ino = 0;
	return NULL;
}

static void fill_dir(struct stat *st)
{
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct resolved res;
	int r;

	memset(st, 0, sizeof(*st));
	st->st_uid = getuid();
	st->st_gid = getgid();
	pthread_mutex_lock(&fs.lock);
	st->st_mtime = st->st_ctime = st->st_atime = fs.mtime;
	pthread_mutex_unlock(&fs.lock);
	if (fi && fi->fh) {
		/* fstat() on an open file: the size of its snapshot. */
		struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)of->r->buf.len;
		return 0;
	}
	r = resolve(path, &res);
	if (r < 0)
		return r;
	if (res.kind == K_FILE) {
		/* Files without a size function (pprof) report 0 and are
		 * opened with direct_io, so readers read up to EOF. */
		const struct view_file *f = &view_files[res.file];
		uint64_t size = f->size ? f->size(res.tree->tree, res.node) : 0;
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)size;
		st->st_blocks = (blkcnt_t)((size + 511) / 512);
	} else {
		fill_dir(st);
	}
	put_tree(res.tree);
	return r;
}

/* Adds one entry with its type (a directory unless `mode` says
 * otherwise), so `find`, `ls -F` and the like need not stat it. */
static int fill(void *buf, fuse_fill_dir_t filler, const char *name, mode_t mode)
{
	struct stat st = {.st_mode = mode};

	return filler(buf, name, &st, 0, 0) ? -ENOMEM : 0;
}

static int fill_escaped(void *buf, fuse_fill_dir_t filler, const char *name, size_t len, int flags)
{
	char esc[VIEW_NAME_MAX + 1];

	view_escape(name, len, flags, esc);
	return fill(buf, filler, esc, S_IFDIR);
}

/* Lists the version entries of the binary whose series are [lo, hi):
 * "<version>" and, for versions with several events, "<version>@<event>".
 * Called with fs.lock held. */
static int list_versions_locked(void *buf, fuse_fill_dir_t filler, size_t lo)
{
	const char *b = fs.series[lo].binary;
	size_t hi = lo;
	int r;

	while (hi < fs.nseries && strcmp(fs.series[hi].binary, b) == 0)
		hi++;
	for (size_t i = lo; i < hi;) {
		const char *v = fs.series[i].version;
		size_t j = i;
		while (j < hi && strcmp(fs.series[j].version, v) == 0)
			j++;
		r = fill_escaped(buf, filler, v, strlen(v), VIEW_ESCAPE_AT);
		if (r < 0)
			return r;
		for (size_t k = i; j - i > 1 && k < j; k++) {
			char vesc[VIEW_NAME_MAX + 1], eesc[VIEW_NAME_MAX + 1];
			char both[2 * VIEW_NAME_MAX + 2];
			size_t vl = view_escape(v, strlen(v), VIEW_ESCAPE_AT, vesc);
			const char *e = fs.series[k].event;
			size_t el = view_escape(e, strlen(e), 0, eesc);
			if (vl + 1 + el > VIEW_NAME_MAX)
				continue; /* cannot be named; skip */
			snprintf(both, sizeof(both), "%s@%s", vesc, eesc);
			r = fill(buf, filler, both, S_IFDIR);
			if (r < 0)
				return r;
		}
		i = j;
	}
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t offset,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct resolved res;
	int r;

	r = resolve(path, &res);
	if (r < 0)
		return r;
	if ((r = fill(buf, filler, ".", S_IFDIR)) < 0 || (r = fill(buf, filler, "..", S_IFDIR)) < 0)
		goto out;
	switch (res.kind) {
	case K_ROOT:
		pthread_mutex_lock(&fs.lock);
		for (size_t i = 0; i < fs.nseries && r == 0; i++) {
			const char *b = fs.series[i].binary;
			if (i > 0 && strcmp(b, fs.series[i - 1].binary) == 0)
				continue;
			r = fill_escaped(buf, filler, b, strlen(b), 0);
		}
		pthread_mutex_unlock(&fs.lock);
		break;
	case K_BINARY:
		pthread_mutex_lock(&fs.lock);
		if (res.generation == fs.generation)
			r = list_versions_locked(buf, filler, res.series);
		else
			r = -EAGAIN;
		pthread_mutex_unlock(&fs.lock);
		break;
	case K_NODE: {
		const struct view_tree *t = res.tree->tree;
		for (size_t f = 0; f < view_file_count && r == 0; f++)
			r = fill(buf, filler, view_files[f].name, S_IFREG);
		uint32_t n = view_node_child_count(t, res.node);
		for (uint32_t i = 0; i < n && r == 0; i++) {
			size_t len;
			const char *name = view_node_name(t, view_node_child(t, res.node, i), &len);
			r = fill_escaped(buf, filler, name, len, 0);
		}
		break;
	}
	case K_FILE: r = -ENOTDIR; break;
	}
out:
	put_tree(res.tree);
	return r;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	struct resolved res;
	struct open_file *of;
	bool hit;
	int r;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EROFS;
	r = resolve(path, &res);
	if (r < 0)
		return r;
	if (res.kind != K_FILE) {
		r = -EISDIR;
		goto out;
	}
	of = calloc(1, sizeof(*of));
	if (!of) {
		r = -ENOMEM;
		goto out;
	}
	r = get_rendered(&res, &of->r, &hit);
	if (r < 0) {
		free(of);
		goto out;
	}
	of->generation = res.generation;
	fi->fh = (uint64_t)(uintptr_t)of;
	/* Sizes not known before rendering are 0 in stat: read to EOF. */
	fi->direct_io = view_files[res.file].size == NULL;
	/* The kernel's pages of this file are still right when this
	 * generation's rendering was opened before and no handle from an
	 * older generation has read since (it could have cached old pages). */
	pthread_mutex_lock(&fs.lock);
	uint64_t stale = __atomic_load_n(&fs.stale_reads, __ATOMIC_SEQ_CST);
	fi->keep_cache = hit && !fi->direct_io && of->r->stale_mark == stale;
	of->r->stale_mark = stale;
	of->next = fs.open_files;
	if (of->next)
		of->next->prev = of;
	fs.open_files = of;
	pthread_mutex_unlock(&fs.lock);
out:
	put_tree(res.tree);
	return r;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
	const struct view_buf *b = &of->r->buf;

	if (off < 0)
		return -EINVAL;
	if (of->generation != __atomic_load_n(&fs.generation, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&fs.stale_reads, 1, __ATOMIC_SEQ_CST);
	if ((uint64_t)off >= b->len)
		return 0;
	if (size > b->len - (size_t)off)
		size = b->len - (size_t)off;
	memcpy(buf, b->data + off, size);
	return (int)size;
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
	free(of);
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;

	if (of) {
		pthread_mutex_lock(&fs.lock);
		close_file_locked(of);
		pthread_mutex_unlock(&fs.lock);
	}
	return 0;
}

/* A rendered file is always readable.  libfuse passes the poll handle on
 * to the filesystem, which must destroy it: without .poll, libfuse 3.14's
 * high-level layer leaks it on every poll(2) that asks to be notified
 * (less does, for instance). */
static int fs_poll(const char *path, struct fuse_file_info *fi, struct fuse_pollhandle *ph,
                   unsigned *reventsp)
{
	if (ph)
		fuse_pollhandle_destroy(ph);
	*reventsp = POLLIN | POLLRDNORM;
	return 0;
}

/* Every change is refused: the view is a read-only window on the store. */
static int ro_path(const char *path, mode_t mode)
{
	return -EROFS;
}

static int ro_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return -EROFS;
}

static int ro_mknod(const char *path, mode_t mode, dev_t dev)
{
	return -EROFS;
}

static int ro_unlink(const char *path)
{
	return -EROFS;
}

static int ro_two(const char *from, const char *to)
{
	return -EROFS;
}

static int ro_rename(const char *from, const char *to, unsigned int flags)
{
	return -EROFS;
}

static int ro_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return -EROFS;
}

static int ro_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	return -EROFS;
}

static int ro_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	return -EROFS;
}

static int ro_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	return -EROFS;
}

static int ro_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	return -EROFS;
}

static int ro_setxattr(const char *path, const char *name, const char *value, size_t size,
                       int flags)
{
	return -EROFS;
}

static int ro_removexattr(const char *path, const char *name)
{
	return -EROFS;
}

static const struct fuse_operations ops = {
        .init = fs_init,
        .getattr = fs_getattr,
        .readdir = fs_readdir,
        .open = fs_open,
        .read = fs_read,
        .release = fs_release,
        .poll = fs_poll,
        .mkdir = ro_path,
        .create = ro_create,
        .mknod = ro_mknod,
        .unlink = ro_unlink,
        .rmdir = ro_unlink,
        .symlink = ro_two,
        .link = ro_two,
        .rename = ro_rename,
        .chmod = ro_chmod,
        .chown = ro_chown,
        .truncate = ro_truncate,
        .write = ro_write,
        .utimens = ro_utimens,
        .setxattr = ro_setxattr,
        .removexattr = ro_removexattr,
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
	             "with the files folded, self, total, pprof and name in every directory\n"
	             "below a version.  Data imported while mounted shows up within 2 s.\n"
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
	             "  flamegraph.pl /mnt/prof/nginx/1.25.3/folded > nginx.svg\n"
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
	r = load_series_locked();
	if (r < 0) {
		fprintf(stderr, "flamefs: %s: cannot list series: %s\n", dir,
		        store_errmsg(fs.store));
		store_close(fs.store);
		fs.store = NULL;
		return r;
	}
	clock_gettime(CLOCK_MONOTONIC, &fs.last_refresh);
	fs.mtime = time(NULL);
	return 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts = {0};
	struct cli cli = {0};
	struct fuse *fuse = NULL;
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
	/* Check the store now, while errors still reach the terminal.  When
	 * we fork it is opened again afterwards: RocksDB's threads do not
	 * survive fork(). */
	if (open_store(cli.store) < 0)
		goto out;
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
	fuse = fuse_new(&args, &ops, sizeof(ops), NULL);
	if (!fuse)
		goto out_close;
	if (fuse_mount(fuse, opts.mountpoint) != 0)
		goto out_destroy;
	if (fuse_daemonize(opts.foreground) != 0)
		goto out_unmount;
	if (!fs.store && open_store(cli.store) < 0)
		goto out_unmount;
	if (fuse_set_signal_handlers(fuse_get_session(fuse)) != 0)
		goto out_unmount;
	/* The loops return the number of the signal that ended them (SIGINT,
	 * SIGTERM, SIGHUP): that is a clean unmount, not an error. */
	if (opts.singlethread)
		r = fuse_loop(fuse);
	else
		r = fuse_loop_mt(fuse, opts.clone_fd);
	ret = r < 0 ? 1 : 0;
	fuse_remove_signal_handlers(fuse_get_session(fuse));
out_unmount:
	fuse_unmount(fuse);
out_destroy:
	fuse_destroy(fuse);
out_close:
	pthread_mutex_lock(&fs.lock);
	while (fs.open_files)
		close_file_locked(fs.open_files);
	drop_trees_locked();
	drop_rendered_locked();
	store_series_free(fs.series, fs.nseries);
	fs.series = NULL;
	store_close(fs.store);
	fs.store = NULL;
	pthread_mutex_unlock(&fs.lock);
out:
	free(fsname);
	free(opts.mountpoint);
	free(cli.store);
	fuse_opt_free_args(&args);
	return ret;
}

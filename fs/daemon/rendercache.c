/*
 * rendercache.c — the rendered files: one rendering per (space, node,
 * file, content version), shared by the open files reading it and, when
 * big enough or a pprof, kept in a cache (a hash and an LRU list, at most
 * RENDER_CACHE_BYTES) for later opens.  A refresh does not empty it: an
 * unchanged node keeps its content version.  The cache is guarded by
 * fs.lock; rendering runs without it.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon-internal.h"

/* Rendered files kept for later opens: at most this many bytes, and only
 * files at least RENDER_CACHE_MIN long (smaller ones are cheap to render),
 * but every pprof (never cheap). */
#define RENDER_CACHE_BYTES (256ull << 20)
#define RENDER_CACHE_MIN   4096

/* The lengths of renderings of files without a size function outlive
 * their bytes here, so that stat keeps answering them and a later open
 * need not render to learn them (the kernel may hold the pages).  A set
 * is chosen by the key's hash; a full set loses its oldest-written entry,
 * and a lost length is only one the daemon will render to learn again.
 * 8 MiB at most: 2^18 entries of 32 bytes. */
#define LENGTH_WAYS 4
#define LENGTH_SETS (1u << 16)

struct rendered_length {
	uint64_t space_uid; /* 0: empty (uids start at 1) */
	uint32_t node, file, changed;
	uint16_t alias;
	uint64_t len;
};

void rendercache_ref(struct rendered *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

/* Drops a reference; needs no lock, and callers may hold fs.lock. */
void rendercache_put(struct rendered *r)
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

/* The key's hash modulo `n`, a power of two. */
static size_t rendered_hash_n(const struct rendered *k, size_t n)
{
	uint64_t h = k->space_uid * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)k->node << 32 | (uint64_t)k->changed << 5 | k->alias << 4 | k->file) *
	     0xff51afd7ed558ccdull;
	h ^= h >> 29;
	return (size_t)h & (n - 1);
}

static size_t rendered_hash(const struct rendered *k)
{
	return rendered_hash_n(k, fs.cache_buckets);
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
	rendercache_put(r);
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

void rendercache_drop_locked(void)
{
	while (fs.oldest)
		uncache_locked(fs.oldest);
	free(fs.cache_hash);
	fs.cache_hash = NULL;
	fs.cache_buckets = fs.cache_count = 0;
	free(fs.lengths);
	fs.lengths = NULL;
}

static bool same_key(const struct rendered_length *l, const struct rendered *key)
{
	return l->space_uid == key->space_uid && l->node == key->node && l->file == key->file &&
	       l->changed == key->changed && l->alias == key->alias;
}

/* Remembers the length of a rendering of `key`'s file (one without a size
 * function); does nothing when the table cannot be allocated. */
static void note_length_locked(const struct rendered *key, uint64_t len)
{
	if (!fs.lengths &&
	    !(fs.lengths = calloc((size_t)LENGTH_SETS * LENGTH_WAYS, sizeof(*fs.lengths))))
		return;
	struct rendered_length *set =
	        &fs.lengths[(rendered_hash_n(key, LENGTH_SETS)) * LENGTH_WAYS];
	struct rendered_length *slot = NULL;
	for (unsigned w = 0; w < LENGTH_WAYS && !slot; w++)
		if (same_key(&set[w], key) || set[w].space_uid == 0)
			slot = &set[w];
	if (!slot)
		slot = &set[fs.lengths_clock++ % LENGTH_WAYS];
	*slot = (struct rendered_length){.space_uid = key->space_uid,
	                                 .node = key->node,
	                                 .file = key->file,
	                                 .changed = key->changed,
	                                 .alias = (uint16_t)key->alias,
	                                 .len = len};
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
		    c->file == key->file && c->changed == key->changed && c->alias == key->alias) {
			unlink_locked(c);
			push_newest_locked(c);
			rendercache_ref(c);
			return c;
		}
	}
	return NULL;
}

/* The length of the rendering with `key`'s space, node, file and content
 * version when the cache holds it or remembers its length, else -1.
 * Leaves the LRU order alone: stat is not a use. */
int64_t rendercache_length_locked(const struct rendered *key)
{
	if (fs.cache_buckets)
		for (struct rendered *c = fs.cache_hash[rendered_hash(key)]; c; c = c->hnext)
			if (c->space_uid == key->space_uid && c->node == key->node &&
			    c->file == key->file && c->changed == key->changed &&
			    c->alias == key->alias)
				return (int64_t)c->buf.len;
	if (fs.lengths) {
		const struct rendered_length *set =
		        &fs.lengths[rendered_hash_n(key, LENGTH_SETS) * LENGTH_WAYS];
		for (unsigned w = 0; w < LENGTH_WAYS; w++)
			if (same_key(&set[w], key))
				return (int64_t)set[w].len;
	}
	return -1;
}

/* Says on stderr (the terminal or journal of `flamefs -f`) which
 * rendering was refused with EFBIG, and why: one line, the node's name
 * escaped as text files escape names and cut to 200 bytes. */
static void log_too_large(const struct rendered *key, const struct view_tree *tree)
{
	struct view_buf name = {0};
	size_t len = 0;
	const char *p = key->node == VIEW_ROOT ? "" : view_node_name(tree, key->node, &len);

	if (view_text_append(&name, p, len < 200 ? len : 200, 0) < 0)
		view_buf_free(&name);
	fprintf(stderr,
	        "flamefs: %s of \"%s\"%s (node %" PRIu32 "): the rendering passes the limit of "
	        "%zu bytes (-o max_render); refused with EFBIG\n",
	        key->vf->name, name.data ? name.data : "", len > 200 ? ".." : "", key->node,
	        fs.render_max ? fs.render_max : VIEW_RENDER_MAX);
	view_buf_free(&name);
}

/* Returns a referenced rendering of file `f` of `node` in `tree`, whose
 * content version is `key`'s; from the cache when it holds one, else
 * rendered now (without the lock) and cached when big enough, and then
 * *fresh (when not NULL) is set. */
int rendercache_get(const struct rendered *key, const struct view_tree *tree, struct rendered **out,
                    bool *fresh)
{
	struct rendered *r, *c;
	int err;

	pthread_mutex_lock(&fs.lock);
	c = find_rendered_locked(key);
	pthread_mutex_unlock(&fs.lock);
	if (fresh)
		*fresh = false;
	if (c) {
		*out = c;
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->buf.max = fs.render_max;
	err = key->vf->render(tree, key->node, &r->buf);
	if (err == -EFBIG)
		log_too_large(key, tree);
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
	r->alias = key->alias;
	r->keep = key->keep;
	r->refs = 1;
	pthread_mutex_lock(&fs.lock);
	if (!key->vf->size)
		note_length_locked(key, r->buf.len);
	/* Another open may have rendered it meanwhile: share that one. */
	c = find_rendered_locked(key);
	if (c) {
		rendercache_put(r);
		pthread_mutex_unlock(&fs.lock);
		*out = c;
		return 0;
	}
	/* Small files with a size function are cheap to render again; pprof
	 * is not, whatever its size, and a file whose size stat takes from
	 * its rendering (the root's) is kept too. */
	if ((r->buf.len >= RENDER_CACHE_MIN || !key->vf->size || key->keep) &&
	    r->buf.len <= RENDER_CACHE_BYTES) {
		rendercache_ref(r);
		push_newest_locked(r);
		hash_locked(r);
		fs.cache_bytes += r->buf.len + sizeof(*r);
		while (fs.cache_bytes > RENDER_CACHE_BYTES && fs.oldest != r)
			uncache_locked(fs.oldest);
		if (fresh)
			*fresh = true;
	}
	pthread_mutex_unlock(&fs.lock);
	*out = r;
	return 0;
}

/*
 * ops.c — the FUSE operations (libfuse's low-level API): lookup, forget,
 * getattr, the stateless listings, open, read and release, and the
 * refusal of every change (the view is read-only).  Each request takes
 * fs.lock, catches up with the store if due (refresh.c) and resolves its
 * inode (inode.c); a file's bytes are rendered without the lock at its
 * first read and kept in the file handle (rendercache.c), so one open
 * file is one snapshot.  See fs/README.md ("Inodes", "Caching").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon-internal.h"

static int open_file_render(struct open_file *of);

/* Requests answered, by kind, for FLAMEFS_REQUEST_COUNTS (ops_counts()). */
enum {
	RQ_LOOKUP,
	RQ_FORGET,
	RQ_GETATTR,
	RQ_OPENDIR,
	RQ_READDIR,
	RQ_READDIRPLUS,
	RQ_OPEN,
	RQ_READ,
	RQ_RELEASE,
	RQ_POLL,
	RQ_REFUSED,
	RQ_KINDS
};
static const char *const rq_names[RQ_KINDS] = {"lookup",  "forget",      "getattr", "opendir",
                                               "readdir", "readdirplus", "open",    "read",
                                               "release", "poll",        "refused"};
static uint64_t rq_counts[RQ_KINDS];

static void rq_count(unsigned kind, uint64_t n)
{
	__atomic_fetch_add(&rq_counts[kind], n, __ATOMIC_RELAXED);
}

int ops_counts(char *buf, size_t size)
{
	size_t used = 0;

	for (unsigned k = 0; k < RQ_KINDS; k++) {
		int n = snprintf(buf + used, size - used, "%s%s %" PRIu64, k ? ", " : "",
		                 rq_names[k], __atomic_load_n(&rq_counts[k], __ATOMIC_RELAXED));
		if (n < 0 || (size_t)n >= size - used)
			return -ENOSPC;
		used += (size_t)n;
	}
	return 0;
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
			if (inode_names(comp, len, nm, nlen, 0))
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
			if (inode_names(comp, len, nm, nlen, 0)) {
				found = c;
				break;
			}
		}
	}
	view_buf_free(&raw);
	return found;
}

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
		r = synth_ops_of(parent->sd)->lookup(parent->sd, name, len, &i);
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
		r = synth_get_locked(&key, &d);
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
	e->ino = inode_make(i);
	r = inode_resolve_tree_locked(e->ino, &at, false);
	if (r < 0)
		return r;
	e->attr_timeout = inode_attr_locked(&at, e->ino, &e->attr);
	e->entry_timeout = CACHE_TIMEOUT;
	space_count_lookup_locked(&at.i);
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
	refresh_maybe_locked();
	r = inode_resolve_tree_locked(ino, at, need_tree);
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

	rq_count(RQ_LOOKUP, 1);
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
		struct ino i = inode_split(e.ino);
		pthread_mutex_lock(&fs.lock);
		space_uncount_lookup_locked(&i, 1);
		pthread_mutex_unlock(&fs.lock);
	}
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct ino i = inode_split(ino);

	rq_count(RQ_FORGET, 1);
	pthread_mutex_lock(&fs.lock);
	space_uncount_lookup_locked(&i, nlookup);
	space_trim_locked();
	pthread_mutex_unlock(&fs.lock);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	rq_count(RQ_FORGET, count);
	pthread_mutex_lock(&fs.lock);
	for (size_t k = 0; k < count; k++) {
		struct ino i = inode_split(forgets[k].ino);
		space_uncount_lookup_locked(&i, forgets[k].nlookup);
	}
	space_trim_locked();
	pthread_mutex_unlock(&fs.lock);
	fuse_reply_none(req);
}

/* Answers fstat() on an open file: the size of its snapshot. */
static void fstat_answer(fuse_req_t req, fuse_ino_t ino, struct open_file *of)
{
	struct stat st;
	struct at at;

	pthread_mutex_lock(&fs.lock);
	refresh_maybe_locked();
	int r = inode_resolve_locked(ino, &at);
	time_t mtime = r == 0 && at.sp ? space_node_mtime(at.sp, at.i.node) : fs.mtime;
	bool current = r == 0 && at.sp && at.current && of->ino == ino;
	pthread_mutex_unlock(&fs.lock);
	r = open_file_render(of);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	inode_attr_file(&st, ino, mtime, of->r->buf.len);
	fuse_reply_attr(req, &st, current ? CACHE_TIMEOUT : 0);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	struct at at;
	double timeout;

	rq_count(RQ_GETATTR, 1);
	if (fi && fi->fh && inode_split(ino).slot) {
		struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
		fstat_answer(req, ino, of);
		return;
	}
	if (!enter_tree(req, ino, &at, false))
		return;
	timeout = inode_attr_locked(&at, ino, &st);
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
		if (!inode_emit_locked(em, space_file(at->sp, (unsigned)f)->name, i, false,
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
		if (!inode_emit_locked(em, esc, i, false, (off_t)(CHILD_COOKIE + i.node)))
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
		if (s && synth_binary_locked(s->binary, series_view_locked(s), &d) == 0)
			parent.node = (uint32_t)d;
	} else if (at.sd) {
		parent.node = at.sd->parent;
	}
	if (pos == 0 && inode_emit_locked(&em, ".", at.i, true, 1))
		pos = 1;
	if (pos == 1 && inode_emit_locked(&em, "..", parent, true, 2))
		pos = 2;
	if (pos >= 2) {
		if (at.sd)
			r = synth_ops_of(at.sd)->list(&em, at.sd, (size_t)(pos - 2));
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
			struct ino i = inode_split(em.counted[k]);
			space_uncount_lookup_locked(&i, 1);
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
	rq_count(RQ_OPENDIR, 1);
	if (fs.no_opendir)
		fuse_reply_err(req, ENOSYS);
	else
		fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
	rq_count(RQ_READDIR, 1);
	do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
	rq_count(RQ_READDIRPLUS, 1);
	do_readdir(req, ino, size, off, true);
}

/* Renderings up to this long are handed to the kernel's page cache when
 * an open renders them (push_pages()). */
#define PUSH_MAX (256u << 10)

/* Makes sure the kernel holds no size below `len` for the file inode
 * `ino` when an open answered with keep_cache reads it through the page
 * cache: a 0 that stat told before the file was rendered would end its
 * reads there.  FUSE_NOTIFY_STORE of no bytes at offset `len` drops the
 * kernel's attributes exactly when its size is smaller (the next fstat()
 * or read asks the daemon, which answers `len`), and leaves a size of
 * `len` and its 60 s alone; it bumps the attribute version too, so a reply
 * that carried a 0 and was sent before is not applied after it. */
static void hold_length(fuse_ino_t ino, uint64_t len)
{
	if (!fs.se || len == 0)
		return;
	struct fuse_bufvec v = FUSE_BUFVEC_INIT(0);
	fuse_lowlevel_notify_store(fs.se, ino, (off_t)len, &v, 0);
}

/* Stores a rendering the open just made in the inode's page cache
 * (FUSE_NOTIFY_STORE, which also sets the kernel's size), so the reads
 * that follow need no READ: a first `grep -r` reads a directory's seven
 * files without a size function in one request fewer each.  Only a
 * current inode's own bytes, which are all its pages can ever hold; a
 * large one is left to READs, since a reader may want its head only. */
static void push_pages(fuse_ino_t ino, const struct view_buf *b)
{
	if (!fs.se || b->len == 0 || b->len > PUSH_MAX)
		return;
	struct fuse_bufvec v = FUSE_BUFVEC_INIT(b->len);
	v.buf[0].mem = b->data;
	fuse_lowlevel_notify_store(fs.se, ino, 0, &v, 0);
}

/* Is the inode of the open file `of` open through another open file? */
static bool open_elsewhere(const struct open_file *of)
{
	bool found = false;

	pthread_mutex_lock(&fs.lock);
	for (const struct open_file *o = fs.open_files; o && !found; o = o->next)
		found = o != of && o->ino == of->ino;
	pthread_mutex_unlock(&fs.lock);
	return found;
}

/* Finishes an open: with `render`, renders the file first (its length is
 * then known, while the kernel may hold the 0 stat gave it: that is
 * dropped before the first fstat() or read, and the bytes handed over; a
 * rendering refused (EFBIG) is refused at each read).  Then replies. */
static void open_answer(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                        struct open_file *of, bool render)
{
	if (render) {
		if (open_file_render(of) == 0) {
			refresh_inval_attr(ino);
			/* Storing pages waits for any the kernel has locked for a
			 * READ of another open of the inode, which another thread
			 * must then be there to answer. */
			if (open_elsewhere(of))
				loop_yield();
			push_pages(ino, &of->r->buf);
		} else {
			fi->direct_io = 1;
			fi->keep_cache = 0;
		}
	}
	if (fuse_reply_open(req, fi) != 0) {
		pthread_mutex_lock(&fs.lock);
		ops_close_file_locked(of);
		pthread_mutex_unlock(&fs.lock);
	}
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rendered key = {0};
	struct open_file *of;
	struct tree_ref *tree;
	struct at at;
	bool current, all;
	int64_t length = 0;
	int r;

	rq_count(RQ_OPEN, 1);
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
		r = fr ? inode_func_file_locked(at.sd, at.i.slot, &fr->buf) : -ENOMEM;
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
	key.alias = at.i.alias;
	all = space_is_all(at.sp);
	key.changed = all ? at.sp->files_version : at.sp->changed[at.i.node];
	key.keep = all;
	current = at.current;
	/* A file without a size function whose length the daemon does not
	 * know (-1) is rendered before the open is answered (below). */
	length = current && !all && !key.vf->size ? rendercache_length_locked(&key) : 0;
	tree = at.sp->tree;
	tree->refs++;
	pthread_mutex_unlock(&fs.lock);

	of = calloc(1, sizeof(*of));
	if (!of) {
		space_put_tree(tree);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	of->key = key;
	of->tree = tree; /* rendered at the first read (open_file_render) */
	/* An inode of an older version, whose cached size and pages are
	 * another rendering's, or a root file (whose 0 in stat before the
	 * root's tree is built is cached): read to EOF through the daemon,
	 * from its cached rendering.  Otherwise the inode's pages can only
	 * ever hold these bytes: keep them, so that a second `grep -r` costs
	 * an OPEN and a RELEASE per file and renders nothing.  That holds for
	 * a file whose size needs its rendering too (pprof, flame.svg, ...),
	 * whose 0 from a stat before its rendering the kernel may still hold:
	 * when the daemon knows its length, hold_length() has the kernel drop
	 * a smaller size; when not, it is rendered before the open is
	 * answered, and the kernel's attributes are dropped then (below). */
	fi->direct_io = !current || all;
	fi->keep_cache = !fi->direct_io;
	if (length > 0)
		hold_length(ino, (uint64_t)length);
	of->sizeless = current && all;
	of->length = length;
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
	open_answer(req, ino, fi, of, length < 0);
}

/* Renderings of a subtree with more samples than this may take long
 * enough (milliseconds) to be worth another thread's reading requests
 * meanwhile: a subtree of n samples has at most n stacks, so its nodes and
 * its files' lines are bounded by n times their depth.  Below it a
 * rendering takes less than handing over the lead costs. */
#define LONG_RENDER_SAMPLES 2000

/* Is rendering the open file `of` (not rendered yet; of->mu held) likely
 * long? */
static bool render_is_long(const struct open_file *of)
{
	struct view_counts c;

	if (of->key.keep || !of->tree)
		return true; /* a whole view's file */
	view_node_counts(of->tree->tree, of->key.node, &c);
	return c.total_samples > LONG_RENDER_SAMPLES;
}

/* Renders an open file's bytes at its first read (or fstat), from the
 * tree it was opened on.  Returns 0 or -errno. */
static int open_file_render(struct open_file *of)
{
	int rc = 0;

	bool fresh = false;

	pthread_mutex_lock(&of->mu);
	if (!of->r && !of->too_large && render_is_long(of))
		loop_yield(); /* another thread reads requests meanwhile */
	if (!of->r && of->too_large) {
		rc = -EFBIG;
	} else if (!of->r) {
		rc = rendercache_get(&of->key, of->tree->tree, &of->r, &fresh);
		if (rc == 0) {
			space_put_tree(of->tree);
			of->tree = NULL;
		}
		of->too_large = rc == -EFBIG;
	}
	pthread_mutex_unlock(&of->mu);
	/* A file stat gave no size (see inode_attr_locked()) has one now,
	 * for as long as the rendering stays cached: let stat ask again. */
	if (fresh && of->sizeless)
		refresh_inval_attr(of->ino);
	return rc;
}

/* Answers a READ of an open file, rendering it first if need be. */
static void read_answer(fuse_req_t req, size_t size, off_t off, struct open_file *of)
{
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
	rendercache_ref(r);
	fuse_reply_buf(req, b->data + off, size);
	rendercache_put(r);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;

	rq_count(RQ_READ, 1);
	read_answer(req, size, off, of);
}

void ops_close_file_locked(struct open_file *of)
{
	if (of->prev)
		of->prev->next = of->next;
	else
		fs.open_files = of->next;
	if (of->next)
		of->next->prev = of->prev;
	rendercache_put(of->r);
	space_put_tree_locked(of->tree);
	pthread_mutex_destroy(&of->mu);
	free(of);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;

	rq_count(RQ_RELEASE, 1);
	if (of) {
		pthread_mutex_lock(&fs.lock);
		ops_close_file_locked(of);
		pthread_mutex_unlock(&fs.lock);
	}
	fuse_reply_err(req, 0);
}

/* A rendered file is always readable. */
static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                    struct fuse_pollhandle *ph)
{
	rq_count(RQ_POLL, 1);
	if (ph)
		fuse_pollhandle_destroy(ph);
	fuse_reply_poll(req, POLLIN | POLLRDNORM);
}

/* Every change is refused: the view is a read-only window on the store. */
static void ro_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

static void ro_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
	rq_count(RQ_REFUSED, 1);
	fuse_reply_err(req, EROFS);
}

const struct fuse_lowlevel_ops ops_lowlevel = {
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

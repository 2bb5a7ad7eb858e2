/*
 * inode.c — the inode core: making and splitting inode numbers, resolving
 * one to what it names now (struct at: a synthetic directory, or a node
 * or file of a space's tree), the attributes of what it names, and the
 * directory entries that hand inodes to the kernel (inode_emit_locked,
 * counting lookups).  Numbers are computed, not allocated: see "inode
 * numbers" in daemon-internal.h and fs/README.md ("Inodes").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon-internal.h"

fuse_ino_t inode_make(struct ino i)
{
	uint64_t v = i.space;

	v = v << 1 | i.alias;
	v = v << INO_NODE_BITS | i.node;
	v = v << INO_SLOT_BITS | i.slot;
	v = v << INO_VERSION_BITS | (i.version & VERSION_MASK);
	return v + 1;
}

struct ino inode_split(fuse_ino_t ino)
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

/* ---- resolving inodes (call with fs.lock held) --------------------------- */

/* With `need_tree` false, a space's root directory (a version directory) of a space whose
 * tree is not built resolves without building it (at->tree NULL), so
 * listing a binary's versions builds nothing. */
int inode_resolve_tree_locked(fuse_ino_t ino, struct at *at, bool need_tree)
{
	memset(at, 0, sizeof(*at));
	at->i = inode_split(ino);
	if (at->i.space == 0) {
		if (at->i.alias || at->i.version || at->i.node >= fs.nsdirs)
			return -ENOENT;
		at->sd = &fs.sdirs[at->i.node];
		/* Files only in a function's directory: self and total. */
		if (at->i.slot && (at->sd->kind != SD_FUNC || at->i.slot > 2))
			return -ENOENT;
		if (at->sd->kind == SD_BINARY && at->sd->lo == at->sd->hi)
			return -ENOENT;
		if (at->sd->kind == SD_HOSTS && at->sd->series_id != VIEW_KIND_HOST &&
		    !series_kind_present((int)at->sd->series_id))
			return -ENOENT; /* a label no series carries now */
		/* A host's or a label value's: gone with its last series. */
		if (at->sd->view) {
			size_t lo, hi;
			series_view_range(at->sd->view, &lo, &hi);
			if (lo == hi)
				return -ENOENT;
		}
		at->current = true;
		return 0;
	}
	at->sp = space_get_locked(at->i.space);
	if (!at->sp || at->sp->gone)
		return -ESTALE;
	if (space_is_all(at->sp)) {
		/* The whole view's files at a root: node VIEW_ROOT's only. */
		if (at->i.alias || at->i.node != VIEW_ROOT || at->i.slot == 0 ||
		    at->i.slot > space_file_count(at->sp, VIEW_ROOT))
			return -ENOENT;
		at->current = at->i.version == (at->sp->files_version & VERSION_MASK);
		if (!at->sp->tree && !need_tree)
			return 0;
		if (!at->sp->tree) {
			int r = space_build_locked(at->sp);
			if (r < 0)
				return r;
		}
		at->sp->last_use = ++fs.use_clock;
		at->tree = at->sp->tree->tree;
		return 0;
	}
	if (!series_id_is_all(at->sp->series_id)) {
		const struct store_series *s = series_by_id_locked(at->sp->series_id);
		if (!s)
			return -ESTALE;
		if (at->i.alias && !fs.primary[s - fs.series])
			return -ENOENT; /* /<b>/<v>/ shows another event now */
	}
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

int inode_resolve_locked(fuse_ino_t ino, struct at *at)
{
	return inode_resolve_tree_locked(ino, at, true);
}

/* Is name[0..len) the escaped form of `raw`? */
bool inode_names(const char *comp, size_t len, const char *raw, size_t raw_len, int flags)
{
	char esc[VIEW_NAME_MAX + 1];
	size_t n = view_escape(raw, raw_len, flags, esc);

	return n == len && memcmp(esc, comp, len) == 0;
}

/* ---- attributes --------------------------------------------------------- */

void inode_set_access(const struct stat *st)
{
	fs.owner = st ? st->st_uid : getuid();
	fs.group = st ? st->st_gid : getgid();
	fs.read_mode = st ? st->st_mode & 0444 : 0444;
}

/* The kernel checks these modes only with -o default_permissions; without
 * it, -o allow_other lets every user read whatever they say. */
static void attr_common(struct stat *st, fuse_ino_t ino, time_t mtime)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs.owner;
	st->st_gid = fs.group;
	st->st_mtime = st->st_ctime = st->st_atime = mtime;
}

static void attr_dir(struct stat *st, fuse_ino_t ino, time_t mtime)
{
	attr_common(st, ino, mtime);
	st->st_mode = S_IFDIR | fs.read_mode | fs.read_mode >> 2; /* r, and x where r */
	st->st_nlink = 2;
}

void inode_attr_file(struct stat *st, fuse_ino_t ino, time_t mtime, uint64_t size)
{
	attr_common(st, ino, mtime);
	st->st_mode = S_IFREG | fs.read_mode;
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
}

/* The bytes of a function directory's self (slot 1) or total (slot 2):
 * the function view's number, rendered under the lock (a few bytes). */
int inode_func_file_locked(const struct sdir *sd, unsigned slot, struct view_buf *out)
{
	struct view_functions *fx;
	struct tree_ref *t;
	struct view_counts c;
	char num[32];
	int r = space_functions_locked(sd->series_id, &fx, &t);

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

/* The length of a file's cached rendering at its current content
 * version, or -1. */
static int64_t cached_length_locked(const struct at *at)
{
	struct rendered key = {
	        .space_uid = at->sp->uid,
	        .node = at->i.node,
	        .file = at->i.slot - 1,
	        .alias = at->i.alias,
	        .changed =
	                space_is_all(at->sp) ? at->sp->files_version : at->sp->changed[at->i.node],
	};

	return rendercache_length_locked(&key);
}

/* The length of an open file of inode `ino` (the open knew it or has
 * rendered it), or -1.  The kernel keeps the pages of an open file
 * without a size function (op_open): if stat answered 0 while one is
 * open, because the render cache forgot its length, the kernel would
 * drop them and end that file's reads there. */
static int64_t open_length_locked(fuse_ino_t ino)
{
	for (const struct open_file *of = fs.open_files; of; of = of->next)
		if (of->ino == ino) {
			/* of->r is set once, under of->mu, and its bytes never change */
			const struct rendered *r = __atomic_load_n(&of->r, __ATOMIC_ACQUIRE);
			if (r || of->length >= 0)
				return r ? (int64_t)r->buf.len : of->length;
		}
	return -1;
}

/* The attributes of what `at` names now (a file's current size; files
 * without a size function, pprof, top, ..., and the root's files report
 * the size of their cached rendering, 0 before one is made, and are read
 * with direct_io).  Returns the attribute timeout. */
double inode_attr_locked(const struct at *at, fuse_ino_t ino, struct stat *st)
{
	if (at->sd && at->i.slot) {
		/* A function's self or total: the current number, never cached
		 * (its inode stays the same when the number changes). */
		struct view_buf b = {0};
		inode_func_file_locked(at->sd, at->i.slot, &b);
		inode_attr_file(st, ino, fs.mtime, b.len);
		view_buf_free(&b);
		return 0;
	}
	if (at->sd) {
		attr_dir(st, ino, fs.mtime);
		return CACHE_TIMEOUT;
	}
	if (at->i.slot == 0) {
		attr_dir(st, ino, space_node_mtime(at->sp, at->i.node));
		return CACHE_TIMEOUT;
	}
	const struct view_file *f = space_file(at->sp, at->i.slot - 1);
	if (space_is_all(at->sp)) {
		/* No tree is built for a stat: the size is known once the tree
		 * is (the files with a size function) or the file was rendered
		 * (while the rendering stays cached), else 0. */
		int64_t len = -1;
		if (at->current && f->size && at->sp->tree)
			len = (int64_t)f->size(at->sp->tree->tree, VIEW_ROOT);
		if (at->current && len < 0)
			len = cached_length_locked(at);
		inode_attr_file(st, ino, at->sp->series_mtime, len > 0 ? (uint64_t)len : 0);
		return at->current ? CACHE_TIMEOUT : 0;
	}
	int64_t len = 0;
	if (f->size)
		len = (int64_t)f->size(at->tree, at->i.node);
	else if (!at->current || (len = cached_length_locked(at)) < 0)
		len = open_length_locked(ino);
	inode_attr_file(st, ino, space_node_mtime(at->sp, at->i.node), len > 0 ? (uint64_t)len : 0);
	/* An inode of an older version is answered with the current size and
	 * not cached, so a stale entry never caches a stale size; one without
	 * a size function with the length of its open file's rendering: it
	 * was opened current, with its pages kept, and a read past the size
	 * the kernel dropped at the open asks for it (a 0 would end that read
	 * empty when the store changed in between: test-concurrent). */
	return at->current ? CACHE_TIMEOUT : 0;
}

/* Adds the entry `name` -> `i` (resolved now: skipped when gone).  Returns
 * false when the reply is full. */
bool inode_emit_locked(struct emitter *em, const char *name, struct ino i, bool dot, off_t cookie)
{
	struct fuse_entry_param e;
	fuse_ino_t ino = inode_make(i);
	struct at at;
	size_t n;

	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr.st_ino = ino; /* readdir's d_ino comes from the attributes */
	e.attr.st_mode = S_IFDIR;
	if (!dot) {
		if (inode_resolve_tree_locked(ino, &at, false) < 0)
			return true;
		if (em->plus) {
			e.attr_timeout = inode_attr_locked(&at, ino, &e.attr);
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
		space_count_lookup_locked(&at.i);
		em->counted[em->ncounted++] = ino;
	}
	return true;
}

/*
 * tree.c — builds the in-memory call tree of one or more series from the
 * store.  Store nodes are mapped to view nodes by (view parent, frame
 * name), so store frames that differ only in their attributes merge, and
 * the tree copies every string it keeps, so it outlives store refreshes.
 * After the counts are added, totals, folded sizes and the sorted child
 * lists are computed once; the finished tree is read-only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "view-internal.h"

/* Set while building on nodes that counts reached (and, once finish()
 * propagates it, on their ancestors); cleared before the tree is done. */
#define VNODE_LIVE 2u
/* While building from the store (builder.lazy): the node has its entry
 * in the child table. */
#define VNODE_INDEXED 8u

/* A slot of the child table; the key is kept in the slot so a probe
 * touches one cache line. */
struct cslot {
	uint32_t parent;
	uint32_t name;
	uint32_t node; /* node + 1; 0 = empty */
};

#define CTAB_START (1u << 14)

struct builder {
	struct view_tree *t;
	struct store *s;
	uint32_t *stab; /* string intern table: sid + 1, 0 = empty */
	uint32_t stab_mask;
	struct cslot *ctab; /* (parent, name) -> node + 1, 0 = empty */
	uint32_t ctab_mask, ctab_used;
	/* Store frame id -> local frame (VIEW_NONE: none yet) and its name,
	 * side by side: a new node needs both, and the name read from the
	 * frames was a cache miss of its own. */
	struct fslot {
		uint32_t frame, name;
	} * fmap;
	uint32_t fmap_len;
	/* Store node -> view node + 1 of the binary being built: entries
	 * <= memo_floor are none (0) or another binary's.  A lazy build makes
	 * each binary's nodes after the previous one's, so moving the floor
	 * to the new binary's node forgets them all without a pass over the
	 * store's node count for each binary. */
	uint32_t *memo;
	uint32_t memo_len, memo_floor;
	uint32_t *path; /* scratch stack of (store node, frame) pairs */
	size_t path_cap;
	/* A build from the store without a seed enters a node in the child
	 * table only once a lookup could ask for it (see store_child()):
	 * until then it is on two lists, its name's and its parent's
	 * (entries are node + 1, 0 ends a list). */
	bool lazy;
	uint32_t *next_same;    /* per node: the next node of its name */
	uint32_t *first_child;  /* per node: its newest child */
	uint32_t *next_sibling; /* per node: the next child of its parent */
	uint8_t *merged;        /* per node: more than one store node maps to it */
	uint32_t lazy_cap;      /* entries of the four */
	uint32_t *name_head;    /* per string: the newest node of that name */
	uint32_t *name_frame;   /* per string: its one local frame + 1, or NAME_MULTI */
	uint32_t names_cap;     /* entries of the two */
};

#define NAME_MULTI UINT32_MAX

/* ---- growable arrays ------------------------------------------------- */

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint64_t ncap = *cap ? (uint64_t)*cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		ncap = UINT32_MAX;
	if (ncap < need)
		return -EOVERFLOW;
	void *np = realloc(*p, (size_t)ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = (uint32_t)ncap;
	return 0;
}

/* Like grow(), with the new elements zeroed. */
static int grow_zeroed(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t old = *cap;
	int r = grow(p, cap, need, elem);

	if (r == 0 && *cap > old)
		memset((char *)*p + (size_t)old * elem, 0, (size_t)(*cap - old) * elem);
	return r;
}

/* ---- strings ---------------------------------------------------------- */

static int stab_rehash(struct builder *b, uint32_t size)
{
	struct view_tree *t = b->t;
	uint32_t *nt = calloc(size, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nstrs; i++) {
		uint64_t h = XXH3_64bits(vstr_ptr(t, i), t->strs[i].len);
		uint32_t j = (uint32_t)h & (size - 1);
		while (nt[j])
			j = (j + 1) & (size - 1);
		nt[j] = i + 1;
	}
	free(b->stab);
	b->stab = nt;
	b->stab_mask = size - 1;
	return 0;
}

static int intern(struct builder *b, const char *p, size_t len, uint32_t *sid)
{
	struct view_tree *t = b->t;
	int r;

	if (!p) {
		p = ""; /* memcmp and memcpy take no NULL, even for 0 bytes */
		len = 0;
	}
	if (len > UINT32_MAX - 1)
		return -EOVERFLOW;
	uint64_t h = XXH3_64bits(p, len);
	uint32_t j = (uint32_t)h & b->stab_mask;
	for (; b->stab[j]; j = (j + 1) & b->stab_mask) {
		uint32_t s = b->stab[j] - 1;
		if (t->strs[s].len == len && memcmp(vstr_ptr(t, s), p, len) == 0) {
			*sid = s;
			return 0;
		}
	}
	if (t->arena_len + len + 1 > UINT32_MAX)
		return -EOVERFLOW;
	if (t->arena_len + len + 1 > t->arena_cap) {
		size_t ncap = t->arena_cap ? t->arena_cap * 2 : 4096;
		while (ncap < t->arena_len + len + 1)
			ncap *= 2;
		char *na = realloc(t->arena, ncap);
		if (!na)
			return -ENOMEM;
		t->arena = na;
		t->arena_cap = ncap;
	}
	r = grow((void **)&t->strs, &t->strs_cap, t->nstrs + 1, sizeof(*t->strs));
	if (r < 0)
		return r;
	if (len)
		memcpy(t->arena + t->arena_len, p, len);
	t->arena[t->arena_len + len] = '\0';
	t->strs[t->nstrs].off = (uint32_t)t->arena_len;
	t->strs[t->nstrs].len = (uint32_t)len;
	t->arena_len += len + 1;
	b->stab[j] = t->nstrs + 1;
	*sid = t->nstrs++;
	if ((uint64_t)t->nstrs * 2 > b->stab_mask)
		return stab_rehash(b, (b->stab_mask + 1) * 2);
	return 0;
}

/* ---- frames and nodes -------------------------------------------------- */

static int add_frame(struct builder *b, const struct store_frame *f, uint32_t *out)
{
	struct view_tree *t = b->t;
	struct vframe vf = {.line = f->line, .kind = f->kind};
	int r;

	if ((r = intern(b, f->name, f->name_len, &vf.name)) < 0 ||
	    (r = intern(b, f->module, f->module_len, &vf.module)) < 0 ||
	    (r = intern(b, (const char *)f->build_id, f->build_id_len, &vf.build_id)) < 0 ||
	    (r = intern(b, f->file, f->file_len, &vf.file)) < 0)
		return r;
	r = grow((void **)&t->frames, &t->frames_cap, t->nframes + 1, sizeof(*t->frames));
	if (r < 0)
		return r;
	t->frames[t->nframes] = vf;
	*out = t->nframes++;
	return 0;
}

static uint32_t child_hash(uint32_t parent, uint32_t name)
{
	uint64_t k = (uint64_t)parent << 32 | name;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

static int ctab_rehash(struct builder *b, uint32_t size)
{
	struct cslot *nt = calloc(size, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (uint32_t i = 0; i <= b->ctab_mask; i++) {
		struct cslot *c = &b->ctab[i];
		if (!c->node)
			continue;
		uint32_t j = child_hash(c->parent, c->name) & (size - 1);
		while (nt[j].node)
			j = (j + 1) & (size - 1);
		nt[j] = *c;
	}
	free(b->ctab);
	b->ctab = nt;
	b->ctab_mask = size - 1;
	return 0;
}

/* Makes room in the lazy build's per-node lists for `need` nodes. */
static int lazy_grow(struct builder *b, uint32_t need)
{
	uint32_t *p[3] = {b->next_same, b->first_child, b->next_sibling};
	uint32_t cap = b->lazy_cap ? b->lazy_cap : 1024;

	if (need <= b->lazy_cap)
		return 0;
	while (cap < need)
		cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
	for (int i = 0; i < 3; i++) {
		uint32_t *np = realloc(p[i], (size_t)cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		p[i] = np;
		/* Stored at once: a later failure must not leave a freed one. */
		if (i == 0)
			b->next_same = np;
		else if (i == 1)
			b->first_child = np;
		else
			b->next_sibling = np;
	}
	uint8_t *m = realloc(b->merged, cap);
	if (!m)
		return -ENOMEM;
	b->merged = m;
	b->lazy_cap = cap;
	return 0;
}

/* A new node, child of `parent` with local frame `frame`, in no table
 * and (lazy builds) on no list. */
static int new_node(struct builder *b, uint32_t parent, uint32_t frame, uint32_t *out)
{
	struct view_tree *t = b->t;
	uint32_t n = t->nnodes;
	int r;

	if (n >= UINT32_MAX - 1)
		return -EOVERFLOW;
	r = grow((void **)&t->nodes, &t->nodes_cap, n + 1, sizeof(*t->nodes));
	if (r < 0)
		return r;
	if (b->lazy) {
		if ((r = lazy_grow(b, n + 1)) < 0)
			return r;
		b->next_same[n] = b->first_child[n] = b->next_sibling[n] = 0;
		b->merged[n] = 0;
	}
	memset(&t->nodes[n], 0, sizeof(t->nodes[0]));
	t->nodes[n].parent = parent;
	t->nodes[n].frame = frame;
	*out = t->nnodes++;
	return 0;
}

/* Enters node n in the child table (it is in none yet). */
static int ctab_put(struct builder *b, uint32_t n)
{
	struct view_tree *t = b->t;
	uint32_t parent = t->nodes[n].parent, name = vnode_frame(t, n)->name;
	uint32_t j = child_hash(parent, name) & b->ctab_mask;

	while (b->ctab[j].node)
		j = (j + 1) & b->ctab_mask;
	b->ctab[j] = (struct cslot){parent, name, n + 1};
	t->nodes[n].flags |= VNODE_INDEXED;
	if (++b->ctab_used * 2 > b->ctab_mask)
		return ctab_rehash(b, (b->ctab_mask + 1) * 2);
	return 0;
}

/* The child of `parent` named like local frame `frame`, created if new. */
static int get_child(struct builder *b, uint32_t parent, uint32_t frame, uint32_t *out)
{
	struct view_tree *t = b->t;
	uint32_t name = t->frames[frame].name;
	uint32_t j = child_hash(parent, name) & b->ctab_mask;
	int r;

	for (; b->ctab[j].node; j = (j + 1) & b->ctab_mask) {
		if (b->ctab[j].parent == parent && b->ctab[j].name == name) {
			*out = b->ctab[j].node - 1;
			return 0;
		}
	}
	if ((r = new_node(b, parent, frame, out)) < 0)
		return r;
	return ctab_put(b, *out);
}

/* Enters every node of a list (next: next_same or next_sibling) that is
 * not in the child table yet. */
static int ctab_put_list(struct builder *b, uint32_t head, const uint32_t *next)
{
	int r;

	for (uint32_t n = head; n; n = next[n - 1])
		if (!(b->t->nodes[n - 1].flags & VNODE_INDEXED) && (r = ctab_put(b, n - 1)) < 0)
			return r;
	return 0;
}

/* Notes a new local frame (lazy builds): a name with a second frame can
 * now name two store children of one parent, so its nodes are entered in
 * the child table and looked up from now on. */
static int note_frame(struct builder *b, uint32_t frame)
{
	struct view_tree *t = b->t;
	uint32_t name = t->frames[frame].name;

	if (name >= b->names_cap) {
		uint32_t old = b->names_cap, cap = t->strs_cap;
		uint32_t *h = realloc(b->name_head, (size_t)cap * sizeof(*h));
		if (h)
			b->name_head = h;
		uint32_t *f = h ? realloc(b->name_frame, (size_t)cap * sizeof(*f)) : NULL;
		if (!f)
			return -ENOMEM;
		b->name_frame = f;
		b->names_cap = cap;
		memset(b->name_head + old, 0, (size_t)(cap - old) * sizeof(*b->name_head));
		memset(b->name_frame + old, 0, (size_t)(cap - old) * sizeof(*b->name_frame));
	}
	if (b->name_frame[name] == 0) {
		b->name_frame[name] = frame + 1;
	} else if (b->name_frame[name] != NAME_MULTI && b->name_frame[name] != frame + 1) {
		b->name_frame[name] = NAME_MULTI;
		return ctab_put_list(b, b->name_head[name], b->next_same);
	}
	return 0;
}

/* The child of `parent` for a store node of local frame `frame`, named
 * `name` (which note_frame() has seen).  Lazily: while the name has one frame and one
 * store node maps to `parent`, the store (which keeps a node's children
 * distinct by frame) has one such child, so a new node needs no lookup
 * and no table entry, only its place on two lists.  Otherwise a lookup;
 * one that finds a node found a second store node for it, whose children
 * may then repeat its first's: they are entered in the table. */
static int store_child(struct builder *b, uint32_t parent, uint32_t frame, uint32_t name,
                       uint32_t *out)
{
	struct view_tree *t = b->t;
	uint32_t n;
	int r;

	if (!b->lazy)
		return get_child(b, parent, frame, out);
	if (b->name_frame[name] == NAME_MULTI || b->merged[parent]) {
		uint32_t before = t->nnodes;
		if ((r = get_child(b, parent, frame, out)) < 0)
			return r;
		if (*out < before && !b->merged[*out]) {
			b->merged[*out] = 1;
			return ctab_put_list(b, b->first_child[*out], b->next_sibling);
		}
		return 0;
	}
	if ((r = new_node(b, parent, frame, &n)) < 0)
		return r;
	b->next_same[n] = b->name_head[name];
	b->name_head[name] = n + 1;
	b->first_child[n] = 0;
	b->next_sibling[n] = b->first_child[parent];
	b->first_child[parent] = n + 1;
	*out = n;
	return 0;
}

/* The view node of store node `sn`, creating its path as needed. */
static int resolve(struct builder *b, uint32_t sn, uint32_t *out)
{
	size_t depth = 0;
	uint32_t parent, frame, vn;
	int r;

	/* Up to a node the memo knows, keeping each node's frame (path holds
	 * node, frame pairs), then down, making the view nodes. */
	while (sn >= b->memo_len || b->memo[sn] <= b->memo_floor) {
		if (sn >= b->memo_len)
			return -EIO;
		if (2 * depth + 2 > b->path_cap) {
			size_t ncap = b->path_cap ? b->path_cap * 2 : 512;
			uint32_t *np = realloc(b->path, ncap * sizeof(*np));
			if (!np)
				return -ENOMEM;
			b->path = np;
			b->path_cap = ncap;
		}
		r = store_node_get(b->s, sn, &parent, &frame);
		if (r < 0)
			return r;
		b->path[2 * depth] = sn;
		b->path[2 * depth + 1] = frame;
		if (++depth > b->memo_len)
			return -EIO; /* a cycle: the store is corrupt */
		sn = parent;
	}
	vn = b->memo[sn] - 1;
	while (depth > 0) {
		depth--;
		sn = b->path[2 * depth];
		frame = b->path[2 * depth + 1];
		if (frame >= b->fmap_len)
			return -EIO;
		struct fslot *fs = &b->fmap[frame];
		if (fs->frame == VIEW_NONE) {
			struct store_frame f;
			r = store_frame_get(b->s, frame, &f);
			if (r < 0)
				return r;
			r = add_frame(b, &f, &fs->frame);
			if (r < 0)
				return r;
			fs->name = b->t->frames[fs->frame].name;
			if (b->lazy && (r = note_frame(b, fs->frame)) < 0)
				return r;
		}
		r = store_child(b, vn, fs->frame, fs->name, &vn);
		if (r < 0)
			return r;
		b->memo[sn] = vn + 1;
	}
	*out = vn;
	return 0;
}

static int add_count(void *ctx, int64_t bucket_start, uint32_t node, uint64_t samples,
                     uint64_t weight)
{
	struct builder *b = ctx;
	uint32_t vn;
	int r = resolve(b, node, &vn);

	if (r < 0)
		return r;
	/* Sums across series (and buckets) that would pass 2^64 - 1 refuse
	 * the whole tree. */
	if (__builtin_add_overflow(b->t->nodes[vn].self_samples, samples,
	                           &b->t->nodes[vn].self_samples) ||
	    __builtin_add_overflow(b->t->nodes[vn].self_weight, weight,
	                           &b->t->nodes[vn].self_weight))
		return -EOVERFLOW;
	b->t->nodes[vn].flags |= VNODE_LIVE;
	return 0;
}

/* ---- finishing -------------------------------------------------------- */

int view_sibling_order_breaks(const struct view_tree *t, const uint32_t *kids, uint32_t i,
                              uint32_t nkids)
{
	const struct vstr *x = &t->strs[vnode_frame(t, kids[i])->name];
	int worst = 0;

	for (uint32_t j = i + 1; j < nkids; j++) {
		const struct vstr *y = &t->strs[vnode_frame(t, kids[j])->name];
		if (y->len <= x->len || memcmp(t->arena + x->off, t->arena + y->off, x->len) != 0)
			break;
		unsigned char c = (unsigned char)t->arena[y->off + x->len];
		if (c == ';')
			return 2;
		if (c < ';')
			worst = 1;
	}
	return worst;
}

static uint32_t lookup_hash(uint32_t parent, const char *name, size_t len)
{
	return (uint32_t)XXH3_64bits_withSeed(name, len, parent);
}

int view_tree_index(struct view_tree *t)
{
	uint64_t size = 16;

	if (t->ltab)
		return 0;
	while (size * 3 < (uint64_t)t->nnodes * 4)
		size *= 2;
	if (size > (1ull << 32))
		return -EOVERFLOW;
	t->ltab = calloc(size, sizeof(*t->ltab));
	if (!t->ltab)
		return -ENOMEM;
	t->ltab_mask = (uint32_t)(size - 1);
	for (uint32_t n = 1; n < t->nnodes; n++) {
		if (t->nodes[n].flags & VNODE_HIDDEN)
			continue;
		const struct vstr *x = &t->strs[vnode_frame(t, n)->name];
		uint32_t j =
		        lookup_hash(t->nodes[n].parent, t->arena + x->off, x->len) & t->ltab_mask;
		while (t->ltab[j])
			j = (j + 1) & t->ltab_mask;
		t->ltab[j] = n + 1;
	}
	return 0;
}

/* A string being ranked: its bytes, length and id. */
struct skey {
	const unsigned char *p;
	uint32_t len, sid;
};

/* Byte d of k plus one, or 0 past its end (a prefix sorts first). */
static inline int skey_at(const struct skey *k, uint32_t d)
{
	return d < k->len ? k->p[d] + 1 : 0;
}

/* Bytewise order of two strings equal in their first d bytes. */
static int skey_cmp(const void *a, const void *b, void *ctx)
{
	const struct skey *x = a, *y = b;
	uint32_t d = *(const uint32_t *)ctx, n = x->len < y->len ? x->len : y->len;
	int c = n > d ? memcmp(x->p + d, y->p + d, n - d) : 0;

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static void skey_swap(struct skey *a, size_t i, size_t j)
{
	struct skey k = a[i];

	a[i] = a[j];
	a[j] = k;
}

/* Sorts a[0..n), strings equal in their first d bytes, bytewise: a
 * multikey quicksort (Bentley and Sedgewick), which reads one byte of a
 * string per partition where a comparison sort read both strings' heads
 * again at every comparison (30,000 names sharing long prefixes: 5 ms
 * with qsort_r).  The equal part goes on at the next byte in the loop;
 * the two others recurse, `budget` levels deep at most (bad pivots),
 * past which a part is left to qsort_r. */
static void skey_sort(struct skey *a, size_t n, uint32_t d, unsigned budget)
{
	while (n > 16) {
		if (budget == 0) {
			qsort_r(a, n, sizeof(*a), skey_cmp, &d);
			return;
		}
		int x = skey_at(&a[0], d), y = skey_at(&a[n / 2], d), z = skey_at(&a[n - 1], d);
		int v = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		size_t lt = 0, i = 0, gt = n;
		while (i < gt) {
			int c = skey_at(&a[i], d);
			if (c < v)
				skey_swap(a, lt++, i++);
			else if (c > v)
				skey_swap(a, i, --gt);
			else
				i++;
		}
		skey_sort(a, lt, d, budget - 1);
		skey_sort(a + gt, n - gt, d, budget - 1);
		if (v == 0)
			return; /* the equal part ended here: equal strings */
		a += lt;
		n = gt - lt;
		d++;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && skey_cmp(&a[j - 1], &a[j], &d) > 0; j--)
			skey_swap(a, j - 1, j);
}

/* The tree's strings ranked in bytewise order (a prefix first): rank
 * per string id into *rank, and per rank into *ext whether some string
 * extends it by a byte <= ';' (the only extensions that break the
 * folded order, see view_sibling_order_breaks()); both malloc'd, the
 * caller frees. */
static int rank_strings(const struct view_tree *t, uint32_t **rank, uint8_t **ext)
{
	size_t nstrs = t->nstrs ? t->nstrs : 1;
	struct skey *keys = malloc(nstrs * sizeof(*keys));
	unsigned budget = 8;

	*rank = malloc(nstrs * sizeof(**rank));
	*ext = calloc(nstrs, 1);
	if (!keys || !*rank || !*ext) {
		free(keys);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nstrs; i++)
		keys[i] = (struct skey){(const unsigned char *)vstr_ptr(t, i), t->strs[i].len, i};
	for (size_t m = t->nstrs; m > 1; m /= 2)
		budget += 2;
	skey_sort(keys, t->nstrs, 0, budget);
	for (uint32_t i = 0; i < t->nstrs; i++) {
		(*rank)[keys[i].sid] = i;
		/* The strings that extend one follow it in this order, by the
		 * byte after it first: the next one tells. */
		if (i + 1 < t->nstrs) {
			const struct skey *x = &keys[i], *y = &keys[i + 1];
			(*ext)[i] = y->len > x->len && memcmp(x->p, y->p, x->len) == 0 &&
			            y->p[x->len] <= ';';
		}
	}
	free(keys);
	return 0;
}

/* finish()'s work on what a node's path decides: path lengths, the
 * nodes a frame above has the name of (VNODE_RECURSIVE) and folded sizes.
 * It reads the nodes' parents, frames and self counts and writes only
 * path_len and folded_bytes, fields the rest of finish() neither reads
 * nor writes, so the two run on two threads; the recursive nodes are
 * listed, not flagged, for the same reason (finish() flags them after). */
struct paths_job {
	struct view_tree *t;
	uint32_t *rec; /* the recursive nodes (malloc'd) */
	uint32_t nrec, rec_cap;
	int r;
};

static int paths(struct paths_job *j)
{
	struct view_tree *t = j->t;
	uint64_t *mask = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*mask));
	uint32_t n;
	int r;

	if (!mask)
		return -ENOMEM;
	/* Top-down: a mask of the names on each node's path (one of 64 bits
	 * per name, the parent's mask and the node's bit) rules out most
	 * nodes at once, and only one whose bit its parent's mask has walks
	 * up to compare names. */
	mask[0] = 0;
	for (n = 1; n < t->nnodes; n++) {
		struct vnode *v = &t->nodes[n];
		uint32_t name = vnode_frame(t, n)->name;
		uint64_t len = t->strs[name].len;
		mask[n] = 0;
		if (v->parent != VIEW_ROOT) {
			len += t->nodes[v->parent].path_len + 1;
			uint64_t bit = 1ull << ((name * 0x9e3779b9u) >> 26);
			if (mask[v->parent] & bit)
				for (uint32_t a = v->parent; t->nodes[a].parent != VIEW_ROOT;
				     a = t->nodes[a].parent)
					if (vnode_frame(t, a)->name == name) {
						r = grow((void **)&j->rec, &j->rec_cap, j->nrec + 1,
						         sizeof(*j->rec));
						if (r < 0)
							goto out;
						j->rec[j->nrec++] = n;
						break;
					}
			mask[n] = mask[v->parent] | bit;
		}
		r = -EOVERFLOW;
		if (len > UINT32_MAX)
			goto out;
		v->path_len = (uint32_t)len;
	}
	/* Bottom-up (children have larger ids than their parent): folded
	 * sizes. */
	for (n = t->nnodes; n-- > 1;) {
		struct vnode *v = &t->nodes[n];
		if (t->base && vnode_has_line(t, n))
			v->folded_bytes += v->path_len + 3 + view_digits(t->base[n].self_weight) +
			                   view_digits(v->self_weight);
		else if (v->self_weight > 0)
			v->folded_bytes += v->path_len + 2 + view_digits(v->self_weight);
		t->nodes[v->parent].folded_bytes += v->folded_bytes;
	}
	r = 0;
out:
	free(mask);
	return r;
}

static void *paths_thread(void *arg)
{
	struct paths_job *j = arg;

	j->r = paths(j);
	return NULL;
}

/* From this many nodes on, finish() runs paths() on a second thread
 * (bench/glance.sh's bin1/1: 450,000 nodes, about 15 ms of it): below
 * it, making the thread would cost about what it saves. */
#define PATHS_THREAD_MIN 16384u

/* Path lengths, recursive nodes, folded sizes (paths(), on a second
 * thread for a large tree), liveness, hidden nodes, totals and the child
 * lists, each in bytewise name order.  Each pass over the nodes costs a
 * read of every node and of its parent, at random, so there are few:
 * top-down and bottom-up in paths(), one bottom-up here for the sums and
 * the counts of children.  The child lists need no sort per list and
 * read no node: the names are ranked once, the visible nodes bucketed by
 * the rank of their name with their parent beside them, and each
 * appended to its parent's list in that order (bin1/1 of
 * bench/glance.sh: 9.5 -> 2.5 ms, against a pass that read each node and
 * its parent).  Path lengths and recursion are not set as the nodes are
 * made: there the parent is often far in memory and the build waits on
 * each read, where a pass has several reads in flight at once (bin1/1:
 * about 27 ms of the build there, 11 in the pass). */
static int finish(struct view_tree *t)
{
	size_t nnodes = t->nnodes ? t->nnodes : 1, nstrs = t->nstrs ? t->nstrs : 1;
	uint32_t *rank = NULL, *start = NULL, *rk = NULL, *par = NULL, *chk = NULL;
	struct {
		uint32_t node, parent;
	} *byname = NULL;
	uint8_t *ext = NULL, *checked = NULL;
	uint32_t n, i, nvisible = 0, nchk = 0, pos = 0;
	struct paths_job job = {.t = t};
	pthread_t pather;
	bool threaded = t->nnodes >= PATHS_THREAD_MIN &&
	                pthread_create(&pather, NULL, paths_thread, &job) == 0;
	int r;

	if ((r = rank_strings(t, &rank, &ext)) < 0)
		goto out;
	r = -ENOMEM;
	start = calloc(nstrs + 1, sizeof(*start)); /* per rank, then running */
	rk = malloc(nnodes * sizeof(*rk));         /* per node: its name's rank */
	/* Per node: its parent, then where its next child goes in kids. */
	par = malloc(nnodes * sizeof(*par));
	byname = malloc(nnodes * sizeof(*byname));
	chk = malloc(nnodes * sizeof(*chk));        /* nodes to run the sibling check on */
	checked = calloc(nnodes, sizeof(*checked)); /* per node: in chk */
	t->kids = malloc(nnodes * sizeof(*t->kids));
	if (!start || !rk || !par || !byname || !chk || !checked || !t->kids)
		goto out;

	/* Bottom-up (a node's children are done when it is reached):
	 * liveness (a node no count reached, one kept from the seed only, is
	 * hidden), totals, the number of children, and the nodes per rank of
	 * their name. */
	r = -EOVERFLOW;
	for (n = t->nnodes; n-- > 0;) {
		struct vnode *v = &t->nodes[n];
		struct vnode *p = n > 0 ? &t->nodes[v->parent] : NULL;
		if (p && !(v->flags & VNODE_LIVE))
			v->flags |= VNODE_HIDDEN;
		if (p && (v->flags & VNODE_LIVE))
			p->flags |= VNODE_LIVE;
		v->flags &= ~(VNODE_LIVE | VNODE_INDEXED | VNODE_RECURSIVE);
		if (__builtin_add_overflow(v->total_weight, v->self_weight, &v->total_weight) ||
		    __builtin_add_overflow(v->total_samples, v->self_samples, &v->total_samples))
			goto out;
		if (!p)
			break;
		if (__builtin_add_overflow(p->total_weight, v->total_weight, &p->total_weight) ||
		    __builtin_add_overflow(p->total_samples, v->total_samples, &p->total_samples))
			goto out;
		rk[n] = UINT32_MAX;
		par[n] = v->parent;
		if (!(v->flags & VNODE_HIDDEN)) {
			p->nkids++;
			rk[n] = rank[vnode_frame(t, n)->name];
			start[rk[n] + 1]++;
			nvisible++;
		}
	}
	for (n = t->base ? t->nnodes : 0; n-- > 0;) {
		struct vbase *v = &t->base[n];
		v->total_weight += v->self_weight;
		v->total_samples += v->self_samples;
		if (n > 0) {
			t->base[t->nodes[n].parent].total_weight += v->total_weight;
			t->base[t->nodes[n].parent].total_samples += v->total_samples;
		}
	}

	/* The visible nodes bucketed by the rank of their name, each with its
	 * parent, so that placing them reads no node. */
	for (i = 0; i < t->nstrs; i++)
		start[i + 1] += start[i];
	for (n = 1; n < t->nnodes; n++)
		if (rk[n] != UINT32_MAX) {
			byname[start[rk[n]]].node = n;
			byname[start[rk[n]]++].parent = par[n];
		}
	for (n = 0; n < t->nnodes; n++) {
		t->nodes[n].first_kid = pos;
		par[n] = pos;
		pos += t->nodes[n].nkids;
	}
	/* start[k] is now the end of rank k's bucket.  A parent with a child
	 * whose name some string extends by a byte <= ';' needs the sibling
	 * check, and only at those children. */
	uint32_t k = 0;
	for (i = 0; i < nvisible; i++) {
		while (i >= start[k])
			k++;
		uint32_t pn = byname[i].parent;
		t->kids[par[pn]++] = byname[i].node;
		if (ext[k] && !checked[pn]) {
			checked[pn] = 1;
			chk[nchk++] = pn;
		}
	}
	for (i = 0; i < nchk; i++) {
		struct vnode *v = &t->nodes[chk[i]];
		uint32_t *kids = t->kids + v->first_kid;
		for (uint32_t j = 0; j < v->nkids && !t->folded_needs_sort; j++) {
			if (!ext[rk[kids[j]]])
				continue;
			int b = view_sibling_order_breaks(t, kids, j, v->nkids);
			if (b == 2)
				t->folded_needs_sort = true;
			else if (b == 1)
				t->folded_keyed = true;
		}
	}
	r = 0;
out:
	if (threaded)
		pthread_join(pather, NULL);
	else if (r == 0)
		job.r = paths(&job);
	if (r == 0)
		r = job.r;
	for (i = 0; r == 0 && i < job.nrec; i++)
		t->nodes[job.rec[i]].flags |= VNODE_RECURSIVE;
	free(job.rec);
	free(rank);
	free(ext);
	free(start);
	free(rk);
	free(par);
	free(byname);
	free(chk);
	free(checked);
	return r;
}

/* ---- deriving trees from trees ---------------------------------------- */

struct view_builder {
	struct builder b;
	struct {
		const struct view_tree *t;
		uint32_t *map; /* source frame -> local frame, or VIEW_NONE */
	} src[2];
	uint32_t *frame_of_name; /* local name string -> local frame + 1 */
	uint32_t frame_of_name_cap;
	uint32_t base_cap;
	bool seeded; /* nodes exist that appends must find, not duplicate */
};

static int seed_nodes(struct builder *b, const struct view_tree *seed);

int view_builder_seed(struct view_builder *vb, const struct view_tree *seed)
{
	if (!seed)
		return 0;
	vb->seeded = true;
	return seed_nodes(&vb->b, seed);
}

int view_builder_new(const char *event, const char *unit, uint32_t nodes_hint,
                     struct view_builder **out)
{
	struct view_builder *vb = calloc(1, sizeof(*vb));
	struct view_tree *t;
	struct store_frame empty = {0};
	uint32_t sid, root_frame, csize = 1024;
	int r;

	*out = NULL;
	if (!vb)
		return -ENOMEM;
	while (csize < (uint64_t)nodes_hint * 2 && csize < (1u << 24))
		csize *= 2;
	vb->b.t = t = calloc(1, sizeof(*t));
	vb->b.stab = calloc(1024, sizeof(*vb->b.stab));
	vb->b.ctab = calloc(csize, sizeof(*vb->b.ctab));
	if (!t || !vb->b.stab || !vb->b.ctab)
		goto nomem;
	vb->b.stab_mask = 1023;
	vb->b.ctab_mask = csize - 1;
	t->event = strdup(event ? event : "");
	t->unit = strdup(unit ? unit : "");
	if (!t->event || !t->unit)
		goto nomem;
	if ((r = intern(&vb->b, "", 0, &sid)) < 0 ||
	    (r = add_frame(&vb->b, &empty, &root_frame)) < 0 ||
	    (r = grow((void **)&t->nodes, &t->nodes_cap, 1, sizeof(*t->nodes))) < 0)
		goto fail;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].frame = root_frame;
	t->nnodes = 1;
	*out = vb;
	return 0;
nomem:
	r = -ENOMEM;
fail:
	view_builder_free(vb);
	return r;
}

void view_builder_free(struct view_builder *vb)
{
	if (!vb)
		return;
	view_tree_free(vb->b.t);
	free(vb->b.stab);
	free(vb->b.ctab);
	for (int i = 0; i < 2; i++)
		free(vb->src[i].map);
	free(vb->frame_of_name);
	free(vb);
}

int view_builder_frame(struct view_builder *vb, const struct view_tree *src, uint32_t src_frame,
                       uint32_t *out)
{
	struct view_tree *t = vb->b.t;
	int i, r;

	for (i = 0; i < 2 && vb->src[i].t != src; i++)
		if (!vb->src[i].t) {
			vb->src[i].map = malloc((size_t)(src->nframes ? src->nframes : 1) *
			                        sizeof(*vb->src[i].map));
			if (!vb->src[i].map)
				return -ENOMEM;
			memset(vb->src[i].map, 0xff,
			       (size_t)src->nframes * sizeof(*vb->src[i].map));
			vb->src[i].t = src;
			break;
		}
	if (i == 2 || src_frame >= src->nframes)
		return -EINVAL;
	if (vb->src[i].map[src_frame] != VIEW_NONE) {
		*out = vb->src[i].map[src_frame];
		return 0;
	}
	const struct vframe *f = &src->frames[src_frame];
	uint32_t name;
	r = intern(&vb->b, vstr_ptr(src, f->name), src->strs[f->name].len, &name);
	if (r < 0)
		return r;
	r = grow_zeroed((void **)&vb->frame_of_name, &vb->frame_of_name_cap, t->nstrs,
	                sizeof(*vb->frame_of_name));
	if (r < 0)
		return r;
	if (vb->frame_of_name[name] != 0) {
		*out = vb->src[i].map[src_frame] = vb->frame_of_name[name] - 1;
		return 0;
	}
	struct store_frame sf = {
	        .name = vstr_ptr(src, f->name),
	        .name_len = src->strs[f->name].len,
	        .module = vstr_ptr(src, f->module),
	        .module_len = src->strs[f->module].len,
	        .build_id = (const uint8_t *)vstr_ptr(src, f->build_id),
	        .build_id_len = src->strs[f->build_id].len,
	        .file = vstr_ptr(src, f->file),
	        .file_len = src->strs[f->file].len,
	        .line = f->line,
	        .kind = f->kind,
	};
	uint32_t frame;
	r = add_frame(&vb->b, &sf, &frame);
	if (r < 0)
		return r;
	/* add_frame may have interned more strings: grow the map again. */
	r = grow_zeroed((void **)&vb->frame_of_name, &vb->frame_of_name_cap, t->nstrs,
	                sizeof(*vb->frame_of_name));
	if (r < 0)
		return r;
	vb->frame_of_name[t->frames[frame].name] = frame + 1;
	*out = vb->src[i].map[src_frame] = frame;
	return 0;
}

int view_builder_child(struct view_builder *vb, uint32_t parent, uint32_t frame, uint32_t *out)
{
	int r = get_child(&vb->b, parent, frame, out);

	if (r == 0)
		vb->b.t->nodes[*out].flags |= VNODE_LIVE; /* reached: shown even if seeded */
	return r;
}

int view_builder_append(struct view_builder *vb, uint32_t parent, uint32_t frame, uint32_t *out)
{
	struct view_tree *t = vb->b.t;
	int r;

	if (vb->seeded)
		return view_builder_child(vb, parent, frame, out);
	if (t->nnodes >= UINT32_MAX - 1)
		return -EOVERFLOW;
	r = grow((void **)&t->nodes, &t->nodes_cap, t->nnodes + 1, sizeof(*t->nodes));
	if (r < 0)
		return r;
	memset(&t->nodes[t->nnodes], 0, sizeof(t->nodes[0]));
	t->nodes[t->nnodes].parent = parent;
	t->nodes[t->nnodes].frame = frame;
	t->nodes[t->nnodes].flags = VNODE_LIVE;
	*out = t->nnodes++;
	return 0;
}

void view_builder_add(struct view_builder *vb, uint32_t node, uint64_t samples, uint64_t weight)
{
	vb->b.t->nodes[node].self_samples += samples;
	vb->b.t->nodes[node].self_weight += weight;
}

/* Grows the base counts to at least `need` nodes, zeroed. */
static int base_grow(struct view_builder *vb, uint32_t need)
{
	return grow_zeroed((void **)&vb->b.t->base, &vb->base_cap, need, sizeof(*vb->b.t->base));
}

int view_builder_add_base(struct view_builder *vb, uint32_t node, uint64_t samples, uint64_t weight)
{
	int r = base_grow(vb, vb->b.t->nnodes);

	if (r < 0)
		return r;
	vb->b.t->base[node].self_samples += samples;
	vb->b.t->base[node].self_weight += weight;
	return 0;
}

int view_builder_finish(struct view_builder *vb, struct view_tree **out)
{
	struct view_tree *t = vb->b.t;
	int r = 0;

	*out = NULL;
	if (t->base)
		r = base_grow(vb, t->nnodes);
	if (r == 0)
		r = finish(t);
	if (r == 0) {
		*out = t;
		vb->b.t = NULL;
	}
	view_builder_free(vb);
	return r;
}

/* ---- public API ------------------------------------------------------- */

/* Frees a store build's tables (not its tree) and empties them: a second
 * call does nothing. */
static void builder_release(struct builder *b)
{
	free(b->stab);
	free(b->ctab);
	free(b->fmap);
	free(b->memo);
	free(b->path);
	free(b->next_same);
	free(b->first_child);
	free(b->next_sibling);
	free(b->merged);
	free(b->name_head);
	free(b->name_frame);
	*b = (struct builder){.t = b->t, .s = b->s};
}

static int cmp_series_binary(const void *a, const void *b)
{
	const struct store_series *const *x = a, *const *y = b;
	return strcmp((*x)->binary, (*y)->binary);
}

/* Creates every node of `seed` again, in id order, so each keeps its id;
 * counts then only add nodes after them. */
static int seed_nodes(struct builder *b, const struct view_tree *seed)
{
	uint32_t *fm = malloc((size_t)(seed->nframes ? seed->nframes : 1) * sizeof(*fm));
	int r = 0;

	if (!fm)
		return -ENOMEM;
	memset(fm, 0xff, (size_t)seed->nframes * sizeof(*fm));
	for (uint32_t n = 1; n < seed->nnodes && r == 0; n++) {
		const struct vnode *v = &seed->nodes[n];
		uint32_t vn;
		if (fm[v->frame] == VIEW_NONE) {
			const struct vframe *f = &seed->frames[v->frame];
			struct store_frame sf = {
			        .name = vstr_ptr(seed, f->name),
			        .name_len = seed->strs[f->name].len,
			        .module = vstr_ptr(seed, f->module),
			        .module_len = seed->strs[f->module].len,
			        .build_id = (const uint8_t *)vstr_ptr(seed, f->build_id),
			        .build_id_len = seed->strs[f->build_id].len,
			        .file = vstr_ptr(seed, f->file),
			        .file_len = seed->strs[f->file].len,
			        .line = f->line,
			        .kind = f->kind,
			};
			r = add_frame(b, &sf, &fm[v->frame]);
			if (r < 0)
				break;
		}
		r = get_child(b, v->parent, fm[v->frame], &vn);
		if (r == 0 && vn != n)
			r = -EINVAL; /* not a tree this library built */
	}
	free(fm);
	return r;
}

int view_tree_build(struct store *s, const struct store_series *series, size_t n, int64_t from,
                    int64_t to, struct view_tree **out)
{
	return view_tree_build_seeded(s, series, n, from, to, NULL, out);
}

int view_tree_build_seeded(struct store *s, const struct store_series *series, size_t n,
                           int64_t from, int64_t to, const struct view_tree *seed,
                           struct view_tree **out)
{
	struct builder b = {.s = s};
	const struct store_series **order = NULL;
	struct view_tree *t;
	struct store_frame empty = {0};
	uint32_t root_frame, sid;
	int r;

	*out = NULL;
	if (n == 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	b.t = t;
	t->event = strdup(series[0].event ? series[0].event : "");
	t->unit = strdup(series[0].unit ? series[0].unit : "");
	b.stab = calloc(1024, sizeof(*b.stab));
	/* The child table starts at CTAB_START slots (or the seed's size)
	 * and doubles as nodes come (ctab_rehash()): sized for the whole
	 * store, a small tree's build zeroed and faulted in a table of
	 * millions of slots (bench/glance.sh: a 4,000-stack binary's tree
	 * in a 1.78M-node store took 45 ms, 10 ms now). */
	uint32_t csize = CTAB_START;
	while (seed && csize < (uint64_t)seed->nnodes * 2 && csize < (1u << 22))
		csize *= 2;
	b.ctab = calloc(csize, sizeof(*b.ctab));
	b.fmap_len = store_frame_count(s);
	b.memo_len = store_node_count(s);
	b.fmap = malloc((size_t)(b.fmap_len ? b.fmap_len : 1) * sizeof(*b.fmap));
	b.memo = calloc(b.memo_len ? b.memo_len : 1, sizeof(*b.memo));
	order = malloc(n * sizeof(*order));
	t->src.series = malloc(n * sizeof(*t->src.series));
	t->src.binary = malloc(n * sizeof(*t->src.binary));
	if (!t->event || !t->unit || !b.stab || !b.ctab || !b.fmap || !b.memo || !order ||
	    !t->src.series || !t->src.binary) {
		r = -ENOMEM;
		goto fail;
	}
	b.stab_mask = 1023;
	b.ctab_mask = csize - 1;
	memset(b.fmap, 0xff, (size_t)b.fmap_len * sizeof(*b.fmap));

	/* String 0 is "", frame 0 is the root's empty frame, node 0 the root. */
	r = intern(&b, "", 0, &sid);
	if (r < 0)
		goto fail;
	r = add_frame(&b, &empty, &root_frame);
	if (r < 0)
		goto fail;
	/* The per-node arrays are reserved at once for a node per store node
	 * (and per binary, and the seed's): a binary's tree has no more, so
	 * they never grow by copies (a realloc of the nodes copied 30 MB of
	 * them on the way to bin1/1's 450,000 in bench/glance.sh).  Pages
	 * the build does not reach are never touched and take no memory; the
	 * nodes are trimmed at the end.  A tree of several binaries that
	 * share store nodes can have more, and grows. */
	uint64_t reserve = (uint64_t)b.memo_len + n + 1 + (seed ? seed->nnodes : 0);
	if (reserve > UINT32_MAX - 1)
		reserve = UINT32_MAX - 1;
	r = grow((void **)&t->nodes, &t->nodes_cap, (uint32_t)reserve, sizeof(*t->nodes));
	if (r < 0)
		goto fail;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].frame = root_frame;
	t->nnodes = 1;
	b.lazy = !seed;
	if (b.lazy) {
		r = lazy_grow(&b, (uint32_t)reserve);
		if (r < 0)
			goto fail;
		b.next_same[0] = b.first_child[0] = b.next_sibling[0] = 0;
		b.merged[0] = 0;
	}
	if (seed) {
		r = seed_nodes(&b, seed);
		if (r < 0)
			goto fail;
	}

	/* Series of one binary share view nodes: group them by binary. */
	for (size_t i = 0; i < n; i++)
		order[i] = &series[i];
	qsort(order, n, sizeof(*order), cmp_series_binary);
	t->src.store = s;
	t->src.nseries = n;
	t->src.from = from;
	t->src.to = to;
	t->src.store_nodes = b.memo_len;
	t->src.bucket_seconds = store_bucket_seconds(s);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || strcmp(order[i]->binary, order[i - 1]->binary) != 0) {
			struct store_frame bf = {
			        .name = order[i]->binary,
			        .name_len = strlen(order[i]->binary),
			};
			uint32_t frame, vn;
			r = add_frame(&b, &bf, &frame);
			if (r < 0)
				goto fail;
			r = get_child(&b, VIEW_ROOT, frame, &vn);
			if (r < 0)
				goto fail;
			t->nodes[vn].flags |= VNODE_LIVE; /* shown even without counts */
			if (b.lazy && vn + 1 == t->nnodes) {
				b.memo_floor = vn;
			} else {
				memset(b.memo, 0, (size_t)b.memo_len * sizeof(*b.memo));
				b.memo_floor = 0;
			}
			if (b.memo_len == 0) {
				r = -EIO;
				goto fail;
			}
			b.memo[STORE_ROOT_NODE] = vn + 1;
		}
		t->src.series[i] = order[i]->id;
		t->src.binary[i] = b.memo[STORE_ROOT_NODE] - 1;
		r = store_series_counts(s, order[i]->id, from, to, add_count, &b);
		if (r < 0)
			goto fail;
		if (r > 0) {
			r = -EIO;
			goto fail;
		}
	}
	builder_release(&b); /* before finish() makes its own arrays */
	r = finish(t);
	if (r < 0)
		goto fail;
	if (t->nodes_cap > t->nnodes + t->nnodes / 8) {
		struct vnode *nn = realloc(t->nodes, (size_t)t->nnodes * sizeof(*nn));
		if (nn) {
			t->nodes = nn;
			t->nodes_cap = t->nnodes;
		}
	}
	*out = t;
	r = 0;
	goto done;
fail:
	view_tree_free(t);
done:
	free(order);
	builder_release(&b);
	return r;
}

void view_tree_free(struct view_tree *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t->base);
	free(t->kids);
	free(t->ltab);
	free(t->frames);
	free(t->strs);
	free(t->arena);
	free(t->event);
	free(t->unit);
	free(t->src.series);
	free(t->src.binary);
	free(t);
}

uint32_t view_tree_root(const struct view_tree *t)
{
	return VIEW_ROOT;
}

uint32_t view_tree_node_count(const struct view_tree *t)
{
	return t->nnodes;
}

size_t view_tree_memory(const struct view_tree *t)
{
	return sizeof(*t) + (size_t)t->nodes_cap * sizeof(*t->nodes) +
	       (t->base ? (size_t)t->nnodes * sizeof(*t->base) : 0) +
	       (size_t)t->nnodes * sizeof(*t->kids) + (size_t)t->frames_cap * sizeof(*t->frames) +
	       (size_t)t->strs_cap * sizeof(*t->strs) + t->arena_cap +
	       (t->ltab ? ((size_t)t->ltab_mask + 1) * sizeof(*t->ltab) : 0) +
	       t->src.nseries * (sizeof(*t->src.series) + sizeof(*t->src.binary));
}

const char *view_tree_event(const struct view_tree *t)
{
	return t->event;
}

const char *view_tree_unit(const struct view_tree *t)
{
	return t->unit;
}

const char *view_node_name(const struct view_tree *t, uint32_t node, size_t *len)
{
	uint32_t s = vnode_frame(t, node)->name;

	*len = t->strs[s].len;
	return vstr_ptr(t, s);
}

uint32_t view_node_parent(const struct view_tree *t, uint32_t node)
{
	return t->nodes[node].parent;
}

void view_node_counts(const struct view_tree *t, uint32_t node, struct view_counts *c)
{
	const struct vnode *v = &t->nodes[node];

	c->self_weight = v->self_weight;
	c->self_samples = v->self_samples;
	c->total_weight = v->total_weight;
	c->total_samples = v->total_samples;
}

uint32_t view_node_child_count(const struct view_tree *t, uint32_t node)
{
	return t->nodes[node].nkids;
}

uint32_t view_node_child(const struct view_tree *t, uint32_t node, uint32_t i)
{
	return t->kids[t->nodes[node].first_kid + i];
}

static int cmp_name(const struct view_tree *t, uint32_t n, const char *name, size_t len)
{
	const struct vstr *x = &t->strs[vnode_frame(t, n)->name];
	size_t m = x->len < len ? x->len : len;
	int c = memcmp(t->arena + x->off, name, m);

	if (c)
		return c;
	return x->len < len ? -1 : x->len > len;
}

uint32_t view_node_lower_bound(const struct view_tree *t, uint32_t node, const char *name,
                               size_t len)
{
	const uint32_t *k = t->kids + t->nodes[node].first_kid;
	uint32_t lo = 0, hi = t->nodes[node].nkids;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (cmp_name(t, k[mid], name, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t view_node_find_child(const struct view_tree *t, uint32_t node, const char *name,
                              size_t len)
{
	if (!t->ltab) {
		uint32_t i = view_node_lower_bound(t, node, name, len);
		if (i < t->nodes[node].nkids &&
		    cmp_name(t, view_node_child(t, node, i), name, len) == 0)
			return view_node_child(t, node, i);
		return VIEW_NONE;
	}
	uint32_t j = lookup_hash(node, name, len) & t->ltab_mask;

	for (; t->ltab[j]; j = (j + 1) & t->ltab_mask) {
		uint32_t c = t->ltab[j] - 1;
		if (t->nodes[c].parent == node && cmp_name(t, c, name, len) == 0)
			return c;
	}
	return VIEW_NONE;
}

bool view_node_visible(const struct view_tree *t, uint32_t node)
{
	return node < t->nnodes && !(t->nodes[node].flags & VNODE_HIDDEN);
}

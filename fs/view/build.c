/*
 * build.c — builds the in-memory call tree of one or more series from the
 * store.  Store nodes are mapped to view nodes by (view parent, frame
 * name), so store frames that differ only in their attributes merge, and
 * the tree copies every string it keeps, so it outlives store refreshes.
 * After the counts are added, view_tree_finish() (finish.c) computes
 * totals, folded sizes and the sorted child lists once (a large tree's
 * lists on a second thread, after it is handed out); the finished tree
 * is read-only.  The tables (strings, frames, nodes, the child table) are
 * shared with derive.c, which builds trees from trees (build-internal.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "build-internal.h"

#define CTAB_START (1u << 14)

/* In first_child: more than one store node maps to the node (it is
 * "merged"), so its children are looked up.  Kept in the entry a new
 * child reads and writes anyway, not in a byte array of its own: the
 * parent of a new branch is often far away in memory, and one miss there
 * is cheaper than two.  So a lazy build makes fewer than LAZY_MERGED
 * nodes. */
#define LAZY_MERGED (1u << 31)

/* A big build from the store writes its per-node arrays front to back,
 * a page fault at every new page, each one stalling the build.  A second
 * thread populates the pages ahead of the build instead (madvise
 * MADV_POPULATE_WRITE, which writes nothing into a page the build has
 * already), so the faults are taken beside the build's own work, on a
 * core it leaves idle: populating on the build's own thread would take
 * the same faults on the same core.  It keeps PREFAULT_AHEAD entries
 * ahead of the last node made, so a build populates at most that many
 * entries it does not use (trimmed or freed with the arrays). */
#define PREFAULT_MIN   (1u << 14) /* reserved nodes from which a build populates ahead */
#define PREFAULT_AHEAD (1u << 14) /* entries populated ahead of the last node made */

struct prefault {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* The arrays, fixed while the thread runs: the build stops it before
	 * one could move (prefault_stop()). */
	char *base[8];
	size_t elem[8];
	unsigned narr;
	uint32_t cap;  /* entries every array holds */
	uint32_t want; /* populate entries up to here; guarded by mu */
	bool stop;     /* guarded by mu */
	uint32_t next; /* the build's own: it asks for more at this node */
};

/* ---- growable arrays ------------------------------------------------- */

int builder_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
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
	view_hugepages(np, (size_t)ncap * elem);
	*p = np;
	*cap = (uint32_t)ncap;
	return 0;
}

/* Like builder_grow(), with the new elements zeroed. */
int builder_grow_zeroed(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t old = *cap;
	int r = builder_grow(p, cap, need, elem);

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

int builder_intern(struct builder *b, const char *p, size_t len, uint32_t *sid)
{
	struct view_tree *t = b->t;
	int r;

	if (!p) {
		p = ""; /* memcmp and memcpy take no NULL, even for 0 bytes */
		len = 0;
	}
	/* String 0 is "": both builds intern it first.  Most frames' module,
	 * file and build id are empty, and need no hash. */
	if (len == 0 && t->nstrs > 0) {
		*sid = 0;
		return 0;
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
		view_hugepages(na, ncap);
		t->arena = na;
		t->arena_cap = ncap;
	}
	r = builder_grow((void **)&t->strs, &t->strs_cap, t->nstrs + 1, sizeof(*t->strs));
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

int builder_add_frame(struct builder *b, const struct store_frame *f, uint32_t *out)
{
	struct view_tree *t = b->t;
	struct vframe vf = {.line = f->line, .kind = f->kind};
	int r;

	if ((r = builder_intern(b, f->name, f->name_len, &vf.name)) < 0)
		return r;
	/* Does a folded path have to escape the name?  (Asked once a frame:
	 * derived trees intern a name before they add its frame.) */
	if (!t->names_escape && !view_text_plain(f->name, f->name_len))
		t->names_escape = true;
	if ((r = builder_intern(b, f->module, f->module_len, &vf.module)) < 0 ||
	    (r = builder_intern(b, (const char *)f->build_id, f->build_id_len, &vf.build_id)) < 0 ||
	    (r = builder_intern(b, f->file, f->file_len, &vf.file)) < 0)
		return r;
	r = builder_grow((void **)&t->frames, &t->frames_cap, t->nframes + 1, sizeof(*t->frames));
	if (r < 0)
		return r;
	t->frames[t->nframes] = vf;
	*out = t->nframes++;
	return 0;
}

int builder_add_tree_frame(struct builder *b, const struct view_tree *src, uint32_t frame,
                           uint32_t *out)
{
	const struct vframe *f = &src->frames[frame];
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

	return builder_add_frame(b, &sf, out);
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
	view_hugepages(nt, (size_t)size * sizeof(*nt));
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
		view_hugepages(np, (size_t)cap * sizeof(*np));
		p[i] = np;
		/* Stored at once: a later failure must not leave a freed one. */
		if (i == 0)
			b->next_same = np;
		else if (i == 1)
			b->first_child = np;
		else
			b->next_sibling = np;
	}
	b->lazy_cap = cap;
	return 0;
}

/* ---- populating the per-node arrays ahead (struct prefault) ---------- */

void view_hugepages(void *p, size_t bytes)
{
	const uintptr_t huge = (uintptr_t)2 << 20;
	uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
	uintptr_t e = ((uintptr_t)p + bytes) & ~(huge - 1);

	if (p && e > a)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
}

static void *prefault_main(void *arg)
{
	struct prefault *pf = arg;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uint32_t done = 0;

	pthread_mutex_lock(&pf->mu);
	while (!pf->stop) {
		if (done >= pf->want) {
			pthread_cond_wait(&pf->cv, &pf->mu);
			continue;
		}
		uint32_t to = pf->want;
		bool failed = false;
		pthread_mutex_unlock(&pf->mu);
		for (unsigned i = 0; i < pf->narr && !failed; i++) {
			uintptr_t a = (uintptr_t)(pf->base[i] + done * pf->elem[i]) & ~(page - 1);
			uintptr_t e = (uintptr_t)(pf->base[i] + to * pf->elem[i]);
			/* Unsupported (before Linux 5.14) or out of memory: the
			 * build takes its faults itself, as without the thread. */
			failed = madvise((void *)a, e - a, MADV_POPULATE_WRITE) != 0;
		}
		pthread_mutex_lock(&pf->mu);
		if (failed)
			break;
		done = to;
	}
	pthread_mutex_unlock(&pf->mu);
	return NULL;
}

/* Asks for entries up to node n + PREFAULT_AHEAD, every PREFAULT_AHEAD / 2
 * nodes. */
static void prefault_ask(struct prefault *pf, uint32_t n)
{
	if (n < pf->next)
		return;
	pf->next = n + PREFAULT_AHEAD / 2;
	pthread_mutex_lock(&pf->mu);
	pf->want = pf->cap - n > PREFAULT_AHEAD ? n + PREFAULT_AHEAD : pf->cap;
	pthread_cond_signal(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
}

/* view_tree_finish()'s arrays a build made for it and kept: freed. */
static void fin_free(struct view_scratch *s)
{
	free(s->par);
	free(s->kids);
	free(s->mask);
	free(s->rec);
	*s = (struct view_scratch){0};
}

/* Starts populating the lazy build's per-node arrays when they are big:
 * the nodes and the three lists, and view_tree_finish()'s other arrays
 * (struct view_scratch), made here with as many entries.  Nothing when
 * they are small or the thread or arrays cannot be made. */
static void prefault_start(struct builder *b)
{
	struct view_tree *t = b->t;
	uint32_t cap = t->nodes_cap < b->lazy_cap ? t->nodes_cap : b->lazy_cap;
	struct view_scratch *s = &b->fin;
	struct prefault *pf;

	if (cap < PREFAULT_MIN || !(pf = calloc(1, sizeof(*pf))))
		return;
	/* Address space only: no page is touched before it is populated. */
	s->par = malloc((size_t)cap * sizeof(*s->par));
	s->kids = malloc((size_t)cap * sizeof(*s->kids));
	s->mask = malloc((size_t)cap * sizeof(*s->mask));
	s->rec = malloc((size_t)cap * sizeof(*s->rec));
	view_hugepages(s->par, (size_t)cap * sizeof(*s->par));
	view_hugepages(s->kids, (size_t)cap * sizeof(*s->kids));
	view_hugepages(s->mask, (size_t)cap * sizeof(*s->mask));
	view_hugepages(s->rec, (size_t)cap * sizeof(*s->rec));
	char *base[] = {(char *)t->nodes,        (char *)b->next_same, (char *)b->first_child,
	                (char *)b->next_sibling, (char *)s->par,       (char *)s->kids,
	                (char *)s->mask,         (char *)s->rec};
	size_t elem[] = {sizeof(*t->nodes),        sizeof(*b->next_same), sizeof(*b->first_child),
	                 sizeof(*b->next_sibling), sizeof(*s->par),       sizeof(*s->kids),
	                 sizeof(*s->mask),         sizeof(*s->rec)};
	if (!s->par || !s->kids || !s->mask || !s->rec)
		goto fail;
	memcpy(pf->base, base, sizeof(base));
	memcpy(pf->elem, elem, sizeof(elem));
	pf->narr = sizeof(base) / sizeof(base[0]);
	pf->cap = b->fin_cap = cap;
	pthread_mutex_init(&pf->mu, NULL);
	pthread_cond_init(&pf->cv, NULL);
	if (pthread_create(&pf->thread, NULL, prefault_main, pf) != 0) {
		pthread_mutex_destroy(&pf->mu);
		pthread_cond_destroy(&pf->cv);
		goto fail;
	}
	b->pf = pf;
	prefault_ask(pf, t->nnodes);
	return;
fail:
	fin_free(s);
	free(pf);
}

/* Stops and joins the thread, if any: call before an array it populates
 * can move or be freed. */
static void prefault_stop(struct builder *b)
{
	struct prefault *pf = b->pf;

	if (!pf)
		return;
	pthread_mutex_lock(&pf->mu);
	pf->stop = true;
	pthread_cond_signal(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	pthread_join(pf->thread, NULL);
	pthread_mutex_destroy(&pf->mu);
	pthread_cond_destroy(&pf->cv);
	free(pf);
	b->pf = NULL;
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
	if (b->pf) {
		if (n + 1 > b->pf->cap)
			prefault_stop(b); /* the arrays grow: they may move */
		else
			prefault_ask(b->pf, n);
	}
	r = builder_grow((void **)&t->nodes, &t->nodes_cap, n + 1, sizeof(*t->nodes));
	if (r < 0)
		return r;
	if (b->lazy) {
		if (n + 1 >= LAZY_MERGED)
			return -EOVERFLOW; /* first_child holds node + 1 below its flag */
		if ((r = lazy_grow(b, n + 1)) < 0)
			return r;
		b->next_same[n] = b->first_child[n] = b->next_sibling[n] = 0;
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
int builder_get_child(struct builder *b, uint32_t parent, uint32_t frame, uint32_t *out)
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

/* Creates every node of `seed` again, in id order, so each keeps its id;
 * counts then only add nodes after them. */
int builder_seed_nodes(struct builder *b, const struct view_tree *seed)
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
			r = builder_add_tree_frame(b, seed, v->frame, &fm[v->frame]);
			if (r < 0)
				break;
		}
		r = builder_get_child(b, v->parent, fm[v->frame], &vn);
		if (r == 0 && vn != n)
			r = -EINVAL; /* not a tree this library built */
	}
	free(fm);
	return r;
}

/* Frees a store build's tables (not its tree) and empties them: a second
 * call does nothing. */
static void builder_release(struct builder *b)
{
	prefault_stop(b);
	free(b->stab);
	free(b->ctab);
	free(b->fmap);
	free(b->memo);
	free(b->path);
	free(b->next_same);
	free(b->first_child);
	free(b->next_sibling);
	free(b->name_first);
	fin_free(&b->fin);
	*b = (struct builder){.t = b->t, .s = b->s};
}

#define NAME_MULTI UINT32_MAX

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

/* Notes the new local frame of store frame `sframe` (lazy builds): a
 * name with a second frame can now name two store children of one
 * parent, so the first frame's nodes are entered in the child table, and
 * every frame of the name looks up its nodes from now on. */
static int note_frame(struct builder *b, uint32_t sframe)
{
	struct fslot *fs = &b->fmap[sframe];
	uint32_t name = fs->name;

	if (name >= b->names_cap) {
		uint32_t old = b->names_cap, cap = b->t->strs_cap;
		uint32_t *grown = realloc(b->name_first, (size_t)cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		b->name_first = grown;
		b->names_cap = cap;
		memset(b->name_first + old, 0, (size_t)(cap - old) * sizeof(*b->name_first));
	}
	uint32_t *nf = &b->name_first[name];
	if (*nf == 0) {
		*nf = sframe + 1;
	} else if (*nf == NAME_MULTI) {
		fs->multi = 1;
	} else {
		struct fslot *first = &b->fmap[*nf - 1];
		*nf = NAME_MULTI;
		first->multi = fs->multi = 1;
		return ctab_put_list(b, first->head, b->next_same);
	}
	return 0;
}

/* The child of `parent` for a store node of the store frame whose slot is
 * `fs` (which note_frame() has seen).  Lazily: while the frame's name has
 * one frame and one store node maps to `parent`, the store (which keeps
 * a node's children distinct by frame) has one such child, so a new node
 * needs no lookup and no table entry, only its place on two lists.
 * Otherwise a lookup; one that finds a node found a second store node
 * for it, whose children may then repeat its first's: they are entered
 * in the table. */
static int store_child(struct builder *b, uint32_t parent, struct fslot *fs, uint32_t *out)
{
	uint32_t n, first;
	int r;

	if (!b->lazy)
		return builder_get_child(b, parent, fs->frame - 1, out);
	first = b->first_child[parent];
	if (fs->multi || (first & LAZY_MERGED)) {
		uint32_t before = b->t->nnodes;
		if ((r = builder_get_child(b, parent, fs->frame - 1, out)) < 0)
			return r;
		if (*out < before && !(b->first_child[*out] & LAZY_MERGED)) {
			b->first_child[*out] |= LAZY_MERGED;
			return ctab_put_list(b, b->first_child[*out] & ~LAZY_MERGED,
			                     b->next_sibling);
		}
		return 0;
	}
	if ((r = new_node(b, parent, fs->frame - 1, &n)) < 0)
		return r;
	b->next_same[n] = fs->head;
	fs->head = n + 1;
	b->next_sibling[n] = first;
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
		if (fs->frame == 0) {
			struct store_frame sf;
			uint32_t local;
			r = store_frame_get(b->s, frame, &sf);
			if (r < 0)
				return r;
			r = builder_add_frame(b, &sf, &local);
			if (r < 0)
				return r;
			fs->frame = local + 1;
			fs->name = b->t->frames[local].name;
			if (b->lazy && (r = note_frame(b, frame)) < 0)
				return r;
		}
		r = store_child(b, vn, fs, &vn);
		if (r < 0)
			return r;
		b->memo[sn] = vn + 1;
	}
	*out = vn;
	return 0;
}

/* Adds one count to the view node of store node `node`. */
static int count_one(struct builder *b, uint32_t node, uint64_t samples, uint64_t weight)
{
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

/* Adding a count waits on memory far from the last count's: the memo
 * entry of the store node its new nodes hang from, the slots of their
 * frames, and that node's child list, each often a cache miss.  So a
 * count waits in a ring of COUNT_AHEAD before it is added: on arrival
 * its new nodes' store entries (made one after another, so numbered one
 * below the other) are followed up to the first older node, and the memo
 * entry of that node and the frames' slots asked for; half-way, the
 * child list of the view node the memo names.  The counts are added in
 * the order they come, so the tree is the same. */

/* Asks for the memory resolve() will read for store node sn; returns the
 * older node its path hangs from (or UINT32_MAX). */
static uint32_t look_ahead(const struct builder *b, uint32_t sn)
{
	uint32_t parent, frame;

	if (sn < b->memo_len)
		__builtin_prefetch(&b->memo[sn]);
	for (unsigned d = 0; d < 32; d++) {
		if (store_node_get(b->s, sn, &parent, &frame) < 0 || parent >= b->memo_len)
			break;
		if (frame < b->fmap_len)
			__builtin_prefetch(&b->fmap[frame]);
		__builtin_prefetch(&b->memo[parent]);
		if (parent + 1 != sn)
			return parent;
		sn = parent;
	}
	return UINT32_MAX;
}

/* Adds the oldest waiting count. */
static int ring_pop(struct builder *b)
{
	const struct ahead *a = &b->ring[b->ring_head];

	b->ring_head = (b->ring_head + 1) % COUNT_AHEAD;
	b->ring_len--;
	return count_one(b, a->node, a->samples, a->weight);
}

static int add_count(void *ctx, int64_t bucket_start, uint32_t node, uint64_t samples,
                     uint64_t weight)
{
	struct builder *b = ctx;
	int r;

	(void)bucket_start;
	if (b->ring_len == COUNT_AHEAD && (r = ring_pop(b)) < 0)
		return r;
	b->ring[(b->ring_head + b->ring_len++) % COUNT_AHEAD] =
	        (struct ahead){node, look_ahead(b, node), samples, weight};
	if (b->lazy && b->ring_len > COUNT_AHEAD / 2) {
		const struct ahead *m =
		        &b->ring[(b->ring_head + b->ring_len - 1 - COUNT_AHEAD / 2) % COUNT_AHEAD];
		uint32_t v = m->far < b->memo_len ? b->memo[m->far] : 0;
		if (v > b->memo_floor)
			__builtin_prefetch(&b->first_child[v - 1], 1);
	}
	return 0;
}

/* Adds the counts still waiting, in order. */
static int ring_drain(struct builder *b)
{
	int r = 0;

	while (b->ring_len > 0 && r == 0)
		r = ring_pop(b);
	return r;
}

static int cmp_series_binary(const void *a, const void *b)
{
	const struct store_series *const *x = a, *const *y = b;
	return strcmp((*x)->binary, (*y)->binary);
}

int view_tree_build(struct store *s, const struct store_series *series, size_t n, int64_t from,
                    int64_t to, struct view_tree **out)
{
	return view_tree_build_seeded(s, series, n, from, to, NULL, out);
}

/* Allocates the tree and the builder's tables for series[0..n) of store
 * s: the string and child tables (the child table at CTAB_START slots or
 * the seed's size, doubling as nodes come: ctab_rehash()), the frame map
 * and memo (a slot per store frame and node, untouched until used), and
 * the tree's copy of its sources.  The tree is b->t, freed by the
 * caller on failure. */
static int builder_alloc(struct builder *b, struct store *s, const struct store_series *series,
                         size_t n, const struct view_tree *seed)
{
	struct view_tree *t = calloc(1, sizeof(*t));
	uint32_t csize = CTAB_START;

	*b = (struct builder){.s = s, .t = t};
	if (!t)
		return -ENOMEM;
	t->event = strdup(series[0].event ? series[0].event : "");
	t->unit = strdup(series[0].unit ? series[0].unit : "");
	b->stab = calloc(1024, sizeof(*b->stab));
	while (seed && csize < (uint64_t)seed->nnodes * 2 && csize < (1u << 22))
		csize *= 2;
	b->ctab = calloc(csize, sizeof(*b->ctab));
	b->fmap_len = store_frame_count(s);
	b->memo_len = store_node_count(s);
	b->fmap = calloc(b->fmap_len ? b->fmap_len : 1, sizeof(*b->fmap));
	b->memo = calloc(b->memo_len ? b->memo_len : 1, sizeof(*b->memo));
	t->src.series = malloc(n * sizeof(*t->src.series));
	t->src.binary = malloc(n * sizeof(*t->src.binary));
	t->src.recent = malloc(n * sizeof(*t->src.recent));
	if (!t->event || !t->unit || !b->stab || !b->ctab || !b->fmap || !b->memo ||
	    !t->src.series || !t->src.binary || !t->src.recent)
		return -ENOMEM;
	b->stab_mask = 1023;
	b->ctab_mask = csize - 1;
	view_hugepages(b->memo, (size_t)b->memo_len * sizeof(*b->memo));
	view_hugepages(b->ctab, (size_t)csize * sizeof(*b->ctab));
	t->src.store = s;
	t->src.nseries = n;
	t->src.first_us = INT64_MAX;
	t->src.last_us = INT64_MIN;
	/* A series without detail whose first or last moment is a whole
	 * second knows it to the bucket only (an older store's bucket start,
	 * or an import's time for all its samples): the span takes the
	 * bucket.  A moment with a fraction is a sample's own, rolled up. */
	int64_t bsu = (int64_t)(store_bucket_seconds(s) ? store_bucket_seconds(s) : 1) * 1000000;
	for (size_t i = 0; i < n; i++) {
		int64_t f = series[i].first_us, l = series[i].last_us;
		if (series[i].samples == 0)
			continue;
		if (series[i].recent_samples == 0 && f % 1000000 == 0)
			f = (f / bsu - (f % bsu < 0)) * bsu;
		if (series[i].recent_samples == 0 && l % 1000000 == 0)
			l = (l / bsu - (l % bsu < 0)) * bsu + bsu - 1;
		if (f < t->src.first_us)
			t->src.first_us = f;
		if (l > t->src.last_us)
			t->src.last_us = l;
	}
	t->src.store_nodes = b->memo_len;
	t->src.bucket_seconds = store_bucket_seconds(s);
	return 0;
}

/* Reserves the per-node arrays at once for a node per store node (and
 * per binary, and the seed's): a binary's tree has no more, so they never
 * grow by copies; pages the build does not reach are never touched, and
 * the nodes are trimmed at the end.  A tree of several binaries that
 * share store nodes can have more, and grows.  The nodes start on a
 * 64-byte boundary, a node a cache line, for the build's passes that read
 * a parent far away.  Then the root (string 0 "", frame 0 the empty
 * frame, node 0), and either the lazy lists with the thread that
 * populates them (prefault_start()) or the seed's nodes. */
static int builder_reserve_nodes(struct builder *b, size_t n, const struct view_tree *seed)
{
	struct view_tree *t = b->t;
	struct store_frame empty = {0};
	uint32_t root_frame, sid;
	uint64_t reserve = (uint64_t)b->memo_len + n + 1 + (seed ? seed->nnodes : 0);
	void *nodes;
	int r;

	if ((r = builder_intern(b, "", 0, &sid)) < 0 ||
	    (r = builder_add_frame(b, &empty, &root_frame)) < 0)
		return r;
	if (reserve > UINT32_MAX - 1)
		reserve = UINT32_MAX - 1;
	if (posix_memalign(&nodes, 64, (size_t)reserve * sizeof(*t->nodes)) != 0)
		return -ENOMEM;
	view_hugepages(nodes, (size_t)reserve * sizeof(*t->nodes));
	t->nodes = nodes;
	t->nodes_cap = (uint32_t)reserve;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].frame = root_frame;
	t->nnodes = 1;
	b->lazy = !seed;
	if (seed)
		return builder_seed_nodes(b, seed);
	if ((r = lazy_grow(b, (uint32_t)reserve)) < 0)
		return r;
	b->next_same[0] = b->first_child[0] = b->next_sibling[0] = 0;
	prefault_start(b);
	return 0;
}

/* The node of order[i]'s binary under the root, made if new, with the
 * memo set to start that binary's nodes. */
static int builder_enter_binary(struct builder *b, const struct store_series *se)
{
	struct view_tree *t = b->t;
	struct store_frame bf = {.name = se->binary, .name_len = strlen(se->binary)};
	uint32_t frame, vn;
	int r;

	if ((r = builder_add_frame(b, &bf, &frame)) < 0 ||
	    (r = builder_get_child(b, VIEW_ROOT, frame, &vn)) < 0)
		return r;
	t->nodes[vn].flags |= VNODE_LIVE; /* shown even without counts */
	if (b->lazy && vn + 1 == t->nnodes) {
		b->memo_floor = vn;
	} else {
		memset(b->memo, 0, (size_t)b->memo_len * sizeof(*b->memo));
		b->memo_floor = 0;
	}
	if (b->memo_len == 0)
		return -EIO;
	b->memo[STORE_ROOT_NODE] = vn + 1;
	return 0;
}

/* Adds the counts of series[0..n) in [from, to), grouped by binary
 * (series of one binary share view nodes), and after each series' counts
 * the ones `extra` gives it (NULL: none). */
static int builder_add_series(struct builder *b, const struct store_series *series, size_t n,
                              int64_t from, int64_t to, const struct build_extra *extra)
{
	struct view_tree *t = b->t;
	const struct store_series **order = malloc(n * sizeof(*order));
	int r = 0;

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = &series[i];
	qsort(order, n, sizeof(*order), cmp_series_binary);
	t->src.from = from;
	t->src.to = to;
	/* A database sends all these series' counts for one query. */
	for (size_t i = 0; i < n; i++) {
		t->src.series[i] = order[i]->id;
		t->src.recent[i] = order[i]->recent_samples > 0;
	}
	if (n > 1 && from <= to)
		r = store_series_prefetch(b->s, t->src.series, n, from, to);
	for (size_t i = 0; i < n && r == 0; i++) {
		if ((i == 0 || strcmp(order[i]->binary, order[i - 1]->binary) != 0) &&
		    (r = builder_enter_binary(b, order[i])) < 0)
			break;
		t->src.binary[i] = b->memo[STORE_ROOT_NODE] - 1;
		if (from <= to)
			r = store_series_counts(b->s, order[i]->id, from, to, add_count, b);
		if (r > 0)
			r = -EIO;
		if (extra) {
			const struct build_extra *e = &extra[order[i] - series];
			for (size_t k = 0; k < e->n && r == 0; k++)
				r = add_count(b, 0, e->v[k].node, e->v[k].samples, e->v[k].weight);
		}
		/* Before the next binary moves the memo's floor. */
		if (r == 0)
			r = ring_drain(b);
	}
	free(order);
	return r;
}

/* Stops the prefault thread, hands the builder's arrays that
 * view_tree_finish() can use as scratch to it (a lazy build's three
 * lists have an entry per node, each written; and the arrays the thread
 * populated, unless the nodes outgrew them), frees the rest, trims the
 * nodes and finishes the tree.  The trim comes before the finish: once
 * the tree is handed out with its lists in the making, its nodes must not
 * move.  (A trimmed array keeps malloc's alignment, not 64 bytes: the
 * passes after the build read nodes mostly in order.) */
static int builder_finish(struct builder *b)
{
	struct view_tree *t = b->t;
	struct view_scratch spare = {.list = {b->next_same, b->first_child, b->next_sibling}};
	bool lazy = b->lazy;
	uint32_t fin_cap;

	prefault_stop(b);
	fin_cap = b->fin_cap;
	if (lazy) {
		b->next_same = b->first_child = b->next_sibling = NULL;
		if (b->fin.par && t->nnodes <= b->fin_cap) {
			spare.par = b->fin.par;
			spare.kids = b->fin.kids;
			spare.mask = b->fin.mask;
			spare.rec = b->fin.rec;
			b->fin = (struct view_scratch){0};
		}
	}
	builder_release(b);
	if (t->nodes_cap > t->nnodes + t->nnodes / 8) {
		struct vnode *nn = realloc(t->nodes, (size_t)t->nnodes * sizeof(*nn));
		if (nn) {
			t->nodes = nn;
			t->nodes_cap = t->nnodes;
		}
	}
	spare.kids_cap = spare.kids ? fin_cap : 0;
	return view_tree_finish(t, lazy ? &spare : NULL, true);
}

int view_tree_build_seeded(struct store *s, const struct store_series *series, size_t n,
                           int64_t from, int64_t to, const struct view_tree *seed,
                           struct view_tree **out)
{
	return builder_build(s, series, n, from, to, NULL, seed, out);
}

int builder_build(struct store *s, const struct store_series *series, size_t n, int64_t from,
                  int64_t to, const struct build_extra *extra, const struct view_tree *seed,
                  struct view_tree **out)
{
	struct builder b;
	int r;

	*out = NULL;
	if (n == 0)
		return -EINVAL;
	if ((r = builder_alloc(&b, s, series, n, seed)) < 0 ||
	    (r = builder_reserve_nodes(&b, n, seed)) < 0 ||
	    (r = builder_add_series(&b, series, n, from, to, extra)) < 0 ||
	    (r = builder_finish(&b)) < 0) {
		prefault_stop(&b); /* before its arrays are freed */
		view_tree_free(b.t);
		builder_release(&b);
		return r;
	}
	*out = b.t;
	return 0;
}

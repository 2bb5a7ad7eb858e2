/*
 * intern.c — frames and stack-tree nodes in memory: the arena their
 * strings live in, the open-addressing id tables that make interning
 * O(1), the frame and node records' codecs, and loading them from the
 * default column family.
 */
#include "embedded-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- fresh memory ------------------------------------------------------- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Maps the whole pages of [p, p + len) in one call, where the kernel can
 * (Linux 5.14 and later), instead of one page fault at each first touch:
 * an open fills these arrays and tables at once, and a fault costs
 * several times more in a virtual machine.  At most POPULATE_MAX bytes:
 * past that (a huge store, or a damaged one whose last id is far off)
 * pages come as they are touched. */
#define POPULATE_MAX ((uintptr_t)64 << 20)
static void populate(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t b = ((uintptr_t)p + len) & ~(page - 1);

	if (len < 16 * page || b <= a)
		return;
	if (b - a > POPULATE_MAX)
		b = a + POPULATE_MAX;
	(void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
}

/* ---- arena for frame strings ------------------------------------------ */

#define ARENA_CHUNK (256 * 1024)

static void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_chunk *c = a->top;

	if (!c || c->size - c->used < n) {
		size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		populate(c->data, size);
		c->prev = a->top;
		c->size = size;
		c->used = 0;
		a->top = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

struct arena_mark arena_mark(const struct arena *a)
{
	struct arena_mark m = {a->top, a->top ? a->top->used : 0};

	return m;
}

void arena_release(struct arena *a, struct arena_mark m)
{
	while (a->top && a->top != m.top) {
		struct arena_chunk *prev = a->top->prev;

		free(a->top);
		a->top = prev;
	}
	if (a->top)
		a->top->used = m.used;
}

void arena_free(struct arena *a)
{
	struct arena_mark none = {NULL, 0};

	arena_release(a, none);
}

/* ---- open-addressing id table ------------------------------------------
 * Linear probing over {id, hash} slots; id 0 marks an empty slot.  The
 * caller probes and compares keys itself (the keys live in the arrays the
 * ids index); the table only stores where ids are. */

int idtab_grow(struct idtab *t)
{
	return idtab_presize(t, t->slots ? (t->mask + 1) * 2 : 1024);
}

int idtab_presize(struct idtab *t, size_t entries)
{
	size_t n = 1024;
	struct slot *ns;

	while (n * 7 < entries * 10) /* the load idtab_reserve keeps */
		n *= 2;
	if (t->slots && n <= t->mask + 1)
		return 0;
	ns = calloc(n, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; t->slots && i <= t->mask; i++) {
		size_t j;

		if (!t->slots[i].id)
			continue;
		j = t->slots[i].h & (n - 1);
		while (ns[j].id)
			j = (j + 1) & (n - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->mask = n - 1;
	return 0;
}

/* Removes `id` (whose hash is h) with backward-shift deletion, so that no
 * tombstones are needed and probe chains stay intact. */
void idtab_remove(struct idtab *t, uint32_t id, uint32_t h)
{
	size_t i = h & t->mask, j;

	if (!t->slots)
		return;
	while (t->slots[i].id && t->slots[i].id != id)
		i = (i + 1) & t->mask;
	if (!t->slots[i].id)
		return;
	t->slots[i].id = 0;
	t->count--;
	j = i;
	for (;;) {
		size_t k;

		j = (j + 1) & t->mask;
		if (!t->slots[j].id)
			break;
		k = t->slots[j].h & t->mask;
		/* Leave slot j alone if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slots[i] = t->slots[j];
		t->slots[j].id = 0;
		i = j;
	}
}

void idtab_free(struct idtab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->count = 0;
}

/* ---- frames in memory ----------------------------------------------------- */

uint32_t frame_hash(const struct store_frame *f)
{
	uint64_t h = XXH3_64bits_withSeed(f->name, f->name_len, (uint64_t)f->kind << 32 | f->line);

	/* Only the tables in memory use this hash, so empty fields (most
	 * build ids and files) can be skipped. */
	h = XXH3_64bits_withSeed(f->module, f->module_len, h);
	if (f->build_id_len)
		h = XXH3_64bits_withSeed(f->build_id, f->build_id_len, h);
	if (f->file_len)
		h = XXH3_64bits_withSeed(f->file, f->file_len, h);
	if (f->offset)
		h = XXH3_64bits_withSeed(&f->offset, sizeof(f->offset), h);
	return (uint32_t)(h ^ (h >> 32));
}

static bool mem_eq(const void *a, size_t alen, const void *b, size_t blen)
{
	return alen == blen && (!alen || !memcmp(a, b, alen));
}

static bool frame_eq(const struct store_frame *a, const struct store_frame *b)
{
	return a->kind == b->kind && a->line == b->line && a->offset == b->offset &&
	       mem_eq(a->name, a->name_len, b->name, b->name_len) &&
	       mem_eq(a->module, a->module_len, b->module, b->module_len) &&
	       mem_eq(a->build_id, a->build_id_len, b->build_id, b->build_id_len) &&
	       mem_eq(a->file, a->file_len, b->file, b->file_len);
}

/* Room for frames below id n; fill: populate() the new room, which the
 * caller is about to fill (not so when doubling). */
static int frames_resize(struct rdb *s, uint32_t n, bool fill)
{
	struct store_frame *nfs;

	if (n <= s->frames_cap)
		return 0;
	nfs = realloc(s->frames, (size_t)n * sizeof(*nfs));
	if (!nfs)
		return -ENOMEM;
	if (fill)
		populate(nfs + s->frames_cap, (size_t)(n - s->frames_cap) * sizeof(*nfs));
	s->frames = nfs;
	s->frames_cap = n;
	return 0;
}

/* A reservation past this many bytes is not made: the last id a damaged
 * store's keys give can be anything, and asking for tens of gigabytes
 * may end the process (a sanitizer's allocator, overcommit) instead of
 * failing.  A real store that large grows its arrays as records come. */
#define RESERVE_MAX_BYTES (1ull << 30)

int frames_reserve(struct rdb *s, uint32_t n)
{
	if ((uint64_t)n * sizeof(*s->frames) > RESERVE_MAX_BYTES)
		return 0;
	return frames_resize(s, n, true);
}

/* Appends f as frame nframes, its strings copied into the arena, except
 * its module and build id when shared_module: those then already live
 * there (an earlier frame's, which outlives this one). */
static int frame_put(struct rdb *s, const struct store_frame *f, bool shared_module)
{
	size_t total = f->name_len + f->file_len;
	struct store_frame *nf;
	uint8_t *p = NULL;

	if (!shared_module)
		total += f->module_len + f->build_id_len;
	if (s->nframes == UINT32_MAX)
		return -EOVERFLOW;
	if (s->nframes == s->frames_cap) {
		uint32_t cap = s->frames_cap ? s->frames_cap * 2 : 1024;

		if (cap < s->frames_cap)
			cap = UINT32_MAX;
		if (frames_resize(s, cap, false) < 0)
			return -ENOMEM;
	}
	if (total) {
		p = arena_alloc(&s->arena, total);
		if (!p)
			return -ENOMEM;
	}
	nf = &s->frames[s->nframes];
	memset(nf, 0, sizeof(*nf));
	nf->kind = f->kind;
	nf->line = f->line;
	nf->offset = f->offset;
#define COPY_FIELD(fld, type)                                                                      \
	do {                                                                                       \
		nf->fld##_len = f->fld##_len;                                                      \
		if (f->fld##_len) {                                                                \
			memcpy(p, f->fld, f->fld##_len);                                           \
			nf->fld = (type)p;                                                         \
			p += f->fld##_len;                                                         \
		}                                                                                  \
	} while (0)
	COPY_FIELD(name, const char *);
	if (shared_module) {
		nf->module = f->module;
		nf->module_len = f->module_len;
		nf->build_id = f->build_id;
		nf->build_id_len = f->build_id_len;
	} else {
		COPY_FIELD(module, const char *);
		COPY_FIELD(build_id, const uint8_t *);
	}
	COPY_FIELD(file, const char *);
#undef COPY_FIELD
	s->nframes++;
	return 0;
}

/* Copies f's strings into the arena and appends it as frame nframes. */
int frame_append(struct rdb *s, const struct store_frame *f)
{
	return frame_put(s, f, false);
}

static void frame_index(struct rdb *s, uint32_t id)
{
	size_t pos;
	uint32_t h;

	h = frame_hash(&s->frames[id]);
	pos = h & s->frame_tab.mask;
	while (s->frame_tab.slots[pos].id)
		pos = (pos + 1) & s->frame_tab.mask;
	idtab_put(&s->frame_tab, pos, id, h);
}

/* Frame record: kind u8 (with the flags FRAME_MODULE_REF and
 * FRAME_OFFSET), varint line, then name, module, build_id, file as
 * (varint length, bytes), then (FRAME_OFFSET only) varint offset. */
/* ref: 0, or how far back the frame with the same module and build id is */
int frame_encode(struct buf *b, const struct store_frame *f, uint32_t ref)
{
	int r = buf_reserve(b, 1 + 10 + 4 * 10 + 10 + f->name_len + f->module_len +
	                               f->build_id_len + f->file_len);

	if (r < 0)
		return r;
	b->p[b->len++] =
	        (uint8_t)(f->kind | (ref ? FRAME_MODULE_REF : 0) | (f->offset ? FRAME_OFFSET : 0));
	buf_varint(b, f->line);
	buf_bytes(b, f->name, f->name_len);
	if (ref) {
		buf_varint(b, ref);
	} else {
		buf_bytes(b, f->module, f->module_len);
		buf_bytes(b, f->build_id, f->build_id_len);
	}
	buf_bytes(b, f->file, f->file_len);
	if (f->offset)
		buf_varint(b, f->offset);
	return 0;
}

static uint32_t module_slot(const struct store_frame *f)
{
	uint64_t seed = f->build_id_len ? XXH3_64bits(f->build_id, f->build_id_len) : 0;

	return (uint32_t)XXH3_64bits_withSeed(f->module, f->module_len, seed) &
	       (MODULE_LAST_SLOTS - 1);
}

/* Writer: the distance back from frame id to the last frame before it
 * with the same module and build id (0 when none is remembered), noting
 * id as the last one.  Modules repeat across thousands of frames; a
 * reference of a byte or two replaces a path and a 20-byte build id. */
uint32_t module_ref(struct rdb *s, uint32_t id)
{
	const struct store_frame *f = &s->frames[id];
	uint32_t slot, last;

	if (!f->module_len && !f->build_id_len)
		return 0;
	slot = module_slot(f);
	last = s->module_last[slot];
	s->module_last[slot] = id;
	if (last == 0 || last >= id)
		return 0;
	const struct store_frame *g = &s->frames[last];
	if (g->module_len != f->module_len || g->build_id_len != f->build_id_len ||
	    (f->module_len && memcmp(g->module, f->module, f->module_len) != 0) ||
	    (f->build_id_len && memcmp(g->build_id, f->build_id, f->build_id_len) != 0))
		return 0;
	return id - last;
}

/* Decodes frame id's record; a module reference must name a frame that
 * s already holds (frames load in id order), and *by_ref says the module
 * and build id are that frame's (in the arena). */
static int frame_decode(const struct rdb *s, uint32_t id, const uint8_t *p, size_t len,
                        struct store_frame *f, bool *by_ref_out)
{
	const uint8_t *end = p + len;
	const void *v;
	uint64_t line, ref;

	memset(f, 0, sizeof(*f));
	if (len < 1)
		return -1;
	f->kind = (uint8_t)(*p & ~(FRAME_MODULE_REF | FRAME_OFFSET));
	bool by_ref = *p & FRAME_MODULE_REF, has_offset = *p & FRAME_OFFSET;
	p++;
	*by_ref_out = by_ref;
	if (get_varint(&p, end, &line) < 0 || line > UINT32_MAX)
		return -1;
	f->line = (uint32_t)line;
	if (get_bytes(&p, end, &v, &f->name_len) < 0)
		return -1;
	f->name = v;
	if (by_ref) {
		if (get_varint(&p, end, &ref) < 0 || ref == 0 || ref >= id ||
		    id - ref >= s->nframes)
			return -1;
		const struct store_frame *g = &s->frames[id - ref];
		f->module = g->module;
		f->module_len = g->module_len;
		f->build_id = g->build_id;
		f->build_id_len = g->build_id_len;
	} else {
		if (get_bytes(&p, end, &v, &f->module_len) < 0)
			return -1;
		f->module = v;
		if (get_bytes(&p, end, &v, &f->build_id_len) < 0)
			return -1;
		f->build_id = v;
	}
	if (get_bytes(&p, end, &v, &f->file_len) < 0)
		return -1;
	f->file = v;
	if (has_offset &&
	    (f->kind != STORE_FRAME_UNKNOWN || get_varint(&p, end, &f->offset) < 0 || !f->offset))
		return -1;
	return p == end ? 0 : -1;
}

/* ---- nodes in memory ------------------------------------------------------ */

uint32_t node_hash(uint32_t parent, uint32_t frame)
{
	uint64_t k = (uint64_t)parent << 32 | frame;
	uint64_t h = XXH3_64bits(&k, sizeof(k));

	return (uint32_t)(h ^ (h >> 32));
}

/* As frames_resize(), for the node arrays. */
static int nodes_resize(struct rdb *s, uint32_t n, bool fill)
{
	uint32_t *np, *nf;

	if (n <= s->nodes_cap)
		return 0;
	np = realloc(s->node_parent, (size_t)n * sizeof(*np));
	if (!np)
		return -ENOMEM;
	s->node_parent = np;
	nf = realloc(s->node_frame, (size_t)n * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	s->node_frame = nf;
	if (fill) {
		populate(np + s->nodes_cap, (size_t)(n - s->nodes_cap) * sizeof(*np));
		populate(nf + s->nodes_cap, (size_t)(n - s->nodes_cap) * sizeof(*nf));
	}
	s->nodes_cap = n;
	return 0;
}

int nodes_reserve(struct rdb *s, uint32_t n)
{
	if ((uint64_t)n * (sizeof(*s->node_parent) + sizeof(*s->node_frame)) > RESERVE_MAX_BYTES)
		return 0;
	return nodes_resize(s, n, true);
}

int node_append(struct rdb *s, uint32_t parent, uint32_t frame)
{
	if (s->nnodes == UINT32_MAX)
		return -EOVERFLOW;
	if (s->nnodes == s->nodes_cap) {
		uint32_t cap = s->nodes_cap ? s->nodes_cap * 2 : 4096;

		if (cap < s->nodes_cap)
			cap = UINT32_MAX;
		if (nodes_resize(s, cap, false) < 0)
			return -ENOMEM;
	}
	s->node_parent[s->nnodes] = parent;
	s->node_frame[s->nnodes] = frame;
	s->nnodes++;
	return 0;
}

/* ---- the writer's node index (struct nodetab, embedded-internal.h) ------------------ */

static void node_index(struct rdb *s, uint32_t id)
{
	struct nodetab *t = &s->node_tab;
	uint32_t mask = nodetab_mask(t);
	uint32_t h = node_hash(s->node_parent[id], s->node_frame[id]);
	size_t pos = h & mask;

	while (t->slots[pos])
		pos = (pos + 1) & mask;
	t->slots[pos] = (h & ~mask) | id;
	t->count++;
}

/* Makes the index big enough for the ids below `ids` at the load
 * idtab_reserve() keeps (it never shrinks); 0, -ENOMEM or -EOVERFLOW.
 * Growing rehashes from the node arrays: a slot holds only the high bits
 * of its hash. */
static int nodetab_presize(struct rdb *s, size_t ids)
{
	struct nodetab *t = &s->node_tab, old = *t;
	unsigned bits = 10;

	while (((size_t)7 << bits) < ids * 10)
		bits++;
	if (t->slots && bits <= t->bits)
		return 0;
	if (bits > 32)
		return -EOVERFLOW;
	t->slots = calloc((size_t)1 << bits, sizeof(*t->slots));
	if (!t->slots) {
		*t = old;
		return -ENOMEM;
	}
	populate(t->slots, ((size_t)1 << bits) * sizeof(*t->slots));
	t->bits = bits;
	t->count = 0;
	for (size_t i = 0; old.slots && i <= nodetab_mask(&old); i++)
		if (old.slots[i])
			node_index(s, old.slots[i] & nodetab_mask(&old));
	free(old.slots);
	return 0;
}

/* Backward-shift deletion, as idtab_remove(); a slot's place comes from
 * its node's hash, recomputed. */
void node_unindex(struct rdb *s, uint32_t id)
{
	struct nodetab *t = &s->node_tab;
	uint32_t mask = nodetab_mask(t);
	size_t i, j;

	if (!t->slots)
		return;
	i = node_hash(s->node_parent[id], s->node_frame[id]) & mask;
	while (t->slots[i] && (t->slots[i] & mask) != id)
		i = (i + 1) & mask;
	if (!t->slots[i])
		return;
	t->slots[i] = 0;
	t->count--;
	j = i;
	for (;;) {
		uint32_t n;
		size_t k;

		j = (j + 1) & mask;
		if (!t->slots[j])
			break;
		n = t->slots[j] & mask;
		k = node_hash(s->node_parent[n], s->node_frame[n]) & mask;
		/* Leave slot j alone if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slots[i] = t->slots[j];
		t->slots[j] = 0;
		i = j;
	}
}

/* Sized once for what was loaded: growing by doubling as the records
 * came would rehash everything and fault its pages in again at each
 * doubling, a large part of an open's time. */
int index_frames(struct rdb *s, uint32_t frames_from)
{
	int r;

	if (s->readonly)
		return 0;
	r = idtab_presize(&s->frame_tab, s->nframes);
	if (r < 0)
		return r;
	for (uint32_t id = frames_from ? frames_from : 1; id < s->nframes; id++) {
		frame_index(s, id);
		(void)module_ref(s, id); /* remembers id's module */
	}
	return 0;
}

int index_nodes(struct rdb *s, uint32_t nodes_from)
{
	int r;

	if (s->readonly)
		return 0;
	r = nodetab_presize(s, s->nnodes);
	if (r < 0)
		return r;
	for (uint32_t id = nodes_from ? nodes_from : 1; id < s->nnodes; id++)
		node_index(s, id);
	return 0;
}

int index_new(struct rdb *s, uint32_t frames_from, uint32_t nodes_from)
{
	int r = index_frames(s, frames_from);

	return r < 0 ? r : index_nodes(s, nodes_from);
}

int load_frame(struct rdb *s, uint32_t id, const uint8_t *v, size_t vlen)
{
	struct store_frame f;
	bool by_ref;
	int r;

	if (frame_decode(s, id, v, vlen, &f, &by_ref) < 0) {
		seterr(s, "%s: store is damaged: frame %u", s->dir, id);
		return -EIO;
	}
	/* a referenced module is kept once, not copied for each frame */
	r = frame_put(s, &f, by_ref);
	return r < 0 ? r : 1;
}

int load_node(struct rdb *s, uint32_t id, const uint8_t *v, size_t vlen)
{
	const uint8_t *end = v + vlen;
	uint64_t parent, frame;
	int r;

	/* The record holds id - parent (see batch_write). */
	if (get_varint(&v, end, &parent) < 0 || get_varint(&v, end, &frame) < 0 || v != end ||
	    parent == 0 || parent > id || frame == 0 || frame >= s->nframes) {
		seterr(s, "%s: store is damaged: node %u", s->dir, id);
		return -EIO;
	}
	r = node_append(s, id - (uint32_t)parent, (uint32_t)frame);
	return r < 0 ? r : 1;
}

/* A run of nodes first..first+n-1 (see batch_write): varint n, then n
 * varints id - parent, then n zigzag varints of the frame minus the
 * previous node's frame (a column each: zstd finds more in them). */
int load_node_run(struct rdb *s, uint32_t first, const uint8_t *v, size_t vlen)
{
	const uint8_t *end = v + vlen, *frames;
	uint64_t n, d;
	int64_t frame = 0;
	int r;

	if (get_varint(&v, end, &n) < 0 || n == 0 || n > NODE_RUN || n > UINT32_MAX - first)
		goto damaged;
	frames = v;
	for (uint64_t i = 0; i < n; i++) /* find where the frame column starts */
		if (get_varint(&frames, end, &d) < 0)
			goto damaged;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = first + i;
		uint64_t up, fz;
		if (get_varint(&v, end, &up) < 0 || get_varint(&frames, end, &fz) < 0)
			goto damaged;
		frame += unzigzag(fz);
		if (up == 0 || up > id || frame <= 0 || frame >= (int64_t)s->nframes)
			goto damaged;
		r = node_append(s, id - (uint32_t)up, (uint32_t)frame);
		if (r < 0)
			return r;
	}
	if (frames != end)
		goto damaged;
	return (int)n;
damaged:
	seterr(s, "%s: store is damaged: nodes from %u", s->dir, first);
	return -EIO;
}

int rdb_batch_frame(struct store_batch *bbase, const struct store_frame *f, uint32_t *id)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct rdb *s = b->s;
	uint32_t h;
	size_t pos;
	int r;

	if (f->kind > STORE_FRAME_SPAN || (f->offset && f->kind != STORE_FRAME_UNKNOWN) ||
	    (!f->name && f->name_len) || (!f->module && f->module_len) ||
	    (!f->build_id && f->build_id_len) || (!f->file && f->file_len)) {
		seterr(s, "invalid frame");
		return -EINVAL;
	}
	r = idtab_reserve(&s->frame_tab);
	if (r < 0)
		return r;
	h = frame_hash(f);
	for (pos = h & s->frame_tab.mask; s->frame_tab.slots[pos].id;
	     pos = (pos + 1) & s->frame_tab.mask) {
		const struct slot *sl = &s->frame_tab.slots[pos];

		if (sl->h == h && frame_eq(&s->frames[sl->id], f)) {
			*id = sl->id;
			return 0;
		}
	}
	r = frame_append(s, f);
	if (r < 0)
		return r;
	idtab_put(&s->frame_tab, pos, s->nframes - 1, h);
	*id = s->nframes - 1;
	return 0;
}

int rdb_batch_node(struct store_batch *bbase, uint32_t parent, uint32_t frame, uint32_t *id)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct rdb *s = b->s;
	uint32_t h, mask, slot;
	size_t pos;
	int r;

	if (parent >= s->nnodes || frame == 0 || frame >= s->nframes) {
		seterr(s, "node (%u, %u) refers to an unknown node or frame", parent, frame);
		return -EINVAL;
	}
	/* room for the id a new node would get */
	if (!s->node_tab.slots || ((size_t)s->nnodes + 1) * 10 > (size_t)7 << s->node_tab.bits) {
		r = nodetab_presize(s, (size_t)s->nnodes + 1);
		if (r < 0)
			return r;
	}
	h = node_hash(parent, frame);
	mask = nodetab_mask(&s->node_tab);
	for (pos = h & mask; (slot = s->node_tab.slots[pos]); pos = (pos + 1) & mask) {
		uint32_t n = slot & mask;

		if ((slot & ~mask) == (h & ~mask) && s->node_parent[n] == parent &&
		    s->node_frame[n] == frame) {
			*id = n;
			return 0;
		}
	}
	r = node_append(s, parent, frame);
	if (r < 0)
		return r;
	s->node_tab.slots[pos] = (h & ~mask) | (s->nnodes - 1);
	s->node_tab.count++;
	*id = s->nnodes - 1;
	return 0;
}

uint32_t rdb_node_count(const struct store *sbase)
{
	const struct rdb *s = rdb_cof(sbase);
	return s->nnodes;
}

int rdb_node_get(const struct store *sbase, uint32_t node, uint32_t *parent, uint32_t *frame)
{
	const struct rdb *s = rdb_cof(sbase);
	if (node >= s->nnodes)
		return -ENOENT;
	*parent = s->node_parent[node];
	*frame = s->node_frame[node];
	return 0;
}

uint32_t rdb_frame_count(const struct store *sbase)
{
	const struct rdb *s = rdb_cof(sbase);
	return s->nframes;
}

int rdb_frame_get(const struct store *sbase, uint32_t frame, struct store_frame *f)
{
	const struct rdb *s = rdb_cof(sbase);
	if (frame == 0 || frame >= s->nframes)
		return -ENOENT;
	*f = s->frames[frame];
	return 0;
}

/* ---- renames (store_batch_frame_rename) ------------------------------------
 * A renamed frame's record is rewritten under its id, so every open reads
 * the new one.  Its module and build id stay, so the module references
 * of later frames (which name an earlier frame's) stay true.  Readers
 * learn which records changed from the rename record of the commit,
 * KEY_RENAME + u64 BE commit number -> varint n, n varint frame ids, then
 * n varint offsets the frames had while unnamed (what a copy names the
 * destination's frames by; a record without them reads as offsets 0). */

static void be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t be64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

int rdb_batch_frame_rename(struct store_batch *bbase, uint32_t frame,
                           const struct store_frame *named)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct rdb *s = b->s;
	const struct store_frame *old;
	struct frame_rename *fr = NULL;
	char *blob;
	int rc;

	old = frame && frame < b->frame_base ? &s->frames[frame] : NULL;
	rc = store_rename_check(frame, old, named, s->errmsg, sizeof(s->errmsg));
	if (rc)
		return rc;
	for (size_t i = 0; i < b->nrenames; i++)
		if (b->renames[i].id == frame)
			fr = &b->renames[i];
	if (!fr && b->nrenames == b->renames_cap) {
		size_t cap = b->renames_cap ? b->renames_cap * 2 : 64;
		struct frame_rename *n = realloc(b->renames, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->renames = n;
		b->renames_cap = cap;
	}
	blob = malloc(named->name_len + named->file_len + 1);
	if (!blob)
		return -ENOMEM;
	memcpy(blob, named->name, named->name_len);
	if (named->file_len)
		memcpy(blob + named->name_len, named->file, named->file_len);
	if (fr)
		free(fr->blob);
	else
		fr = &b->renames[b->nrenames++];
	fr->id = frame;
	fr->blob = blob;
	fr->f = *named;
	fr->f.name = blob;
	fr->f.file = named->file_len ? blob + named->name_len : NULL;
	fr->f.module = old->module;
	fr->f.build_id = old->build_id;
	return 0;
}

int renames_write(struct rdb_batch *b, rocksdb_writebatch_t *wb)
{
	struct rdb *s = b->s;
	struct buf buf = {0};
	uint8_t key[9];
	int r = 0;

	if (!b->nrenames)
		return 0;
	for (size_t i = 0; i < b->nrenames; i++) {
		buf.len = 0;
		r = frame_encode(&buf, &b->renames[i].f, 0);
		if (r < 0)
			goto out;
		id_key(key, KEY_FRAME, b->renames[i].id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	buf.len = 0;
	r = buf_reserve(&buf, 10 + b->nrenames * 5);
	if (r < 0)
		goto out;
	buf_varint(&buf, b->nrenames);
	for (size_t i = 0; i < b->nrenames; i++)
		buf_varint(&buf, b->renames[i].id);
	r = buf_reserve(&buf, b->nrenames * 10);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < b->nrenames; i++)
		buf_varint(&buf, s->frames[b->renames[i].id].offset);
	key[0] = KEY_RENAME;
	be64_put(key + 1, s->commits + 1);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 9, (char *)buf.p, buf.len);
out:
	free(buf.p);
	return r;
}

/* Makes f frame id in memory: its strings copied into the arena (module
 * and build id are those already there), and, in a writer, its place in
 * the frame table moved.  0 or -ENOMEM (the frame unchanged). */
static int frame_replace(struct rdb *s, uint32_t id, const struct store_frame *f)
{
	struct store_frame *nf = &s->frames[id];
	char *p = NULL;

	if (f->name_len + f->file_len) {
		p = arena_alloc(&s->arena, f->name_len + f->file_len);
		if (!p)
			return -ENOMEM;
		memcpy(p, f->name, f->name_len);
		if (f->file_len)
			memcpy(p + f->name_len, f->file, f->file_len);
	}
	if (!s->readonly && s->frame_tab.slots)
		idtab_remove(&s->frame_tab, id, frame_hash(nf));
	nf->name = p;
	nf->name_len = f->name_len;
	nf->file = f->file_len ? p + f->name_len : NULL;
	nf->file_len = f->file_len;
	nf->line = f->line;
	nf->kind = f->kind;
	nf->offset = f->offset;
	if (!s->readonly && s->frame_tab.slots) {
		if (idtab_reserve(&s->frame_tab) < 0)
			return -ENOMEM;
		frame_index(s, id);
	}
	return 0;
}

void renames_reset(struct rdb_batch *b)
{
	for (size_t i = 0; i < b->nrenames; i++)
		free(b->renames[i].blob);
	b->nrenames = 0;
}

void renames_applied(struct rdb_batch *b)
{
	for (size_t i = 0; i < b->nrenames; i++)
		(void)frame_replace(b->s, b->renames[i].id, &b->renames[i].f);
	if (b->nrenames)
		b->s->renames_upto = b->s->commits;
	renames_reset(b);
}

uint64_t rdb_renames(const struct store *sbase)
{
	return rdb_cof(sbase)->renames_upto;
}

/* Reads frame id's record again (a reader, after a rename). */
static int frame_reload(struct rdb *s, uint32_t id)
{
	uint8_t key[5];
	size_t vlen = 0;
	char *rerr = NULL;
	char *v;
	struct store_frame f;
	bool by_ref;
	int r;

	id_key(key, KEY_FRAME, id);
	v = rocksdb_get_cf(s->db, s->ropts, s->cf[CF_DEFAULT], (char *)key, 5, &vlen, &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "reading");
	if (!v || frame_decode(s, id, (const uint8_t *)v, vlen, &f, &by_ref) < 0) {
		rocksdb_free(v);
		seterr(s, "%s: store is damaged: frame %u", s->dir, id);
		return -EIO;
	}
	r = frame_replace(s, id, &f);
	rocksdb_free(v);
	if (r < 0)
		seterr(s, "%s: out of memory", s->dir);
	return r;
}

int renames_load(struct rdb *s, bool at_open)
{
	rocksdb_iterator_t *it;
	uint8_t key[9];
	char *rerr = NULL;
	int r = 0;

	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	if (!it) {
		seterr(s, "%s: cannot create an iterator", s->dir);
		return -ENOMEM;
	}
	key[0] = KEY_RENAME;
	be64_put(key + 1, s->renames_upto + 1);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen), *end = v + vlen;
		uint64_t n, id;

		if (!klen || k[0] != KEY_RENAME)
			break;
		if (klen != 9 || get_varint(&v, end, &n) < 0) {
			seterr(s, "%s: store is damaged: a rename record", s->dir);
			r = -EIO;
			break;
		}
		for (uint64_t i = 0; i < n && r == 0 && !at_open; i++) {
			if (get_varint(&v, end, &id) < 0 || id == 0 || id >= s->nframes) {
				seterr(s, "%s: store is damaged: a rename record", s->dir);
				r = -EIO;
				break;
			}
			r = frame_reload(s, (uint32_t)id);
		}
		if (r < 0)
			break;
		s->renames_upto = be64_get(k + 1);
	}
	if (r == 0) {
		rocksdb_iter_get_error(it, &rerr);
		if (rerr)
			r = rdb_fail(s, rerr, "reading");
	}
	rocksdb_iter_destroy(it);
	return r;
}

int rdb_renames_since(struct store *sbase, uint64_t since, uint64_t upto,
                      int (*fn)(void *ctx, uint32_t frame, uint64_t old_offset), void *ctx)
{
	struct rdb *s = rdb_of(sbase);
	rocksdb_iterator_t *it;
	uint8_t key[9];
	char *rerr = NULL;
	int r = 0;

	if (since >= upto)
		return 0;
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	if (!it) {
		seterr(s, "%s: cannot create an iterator", s->dir);
		return -ENOMEM;
	}
	key[0] = KEY_RENAME;
	be64_put(key + 1, since + 1);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it) && !r;
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen), *end = v + vlen;
		const uint8_t *offs;
		uint64_t n, id, off;

		if (!klen || k[0] != KEY_RENAME || klen != 9 || be64_get(k + 1) > upto)
			break;
		if (get_varint(&v, end, &n) < 0 || n > vlen)
			goto damaged;
		offs = v;
		for (uint64_t i = 0; i < n; i++) /* the offsets follow the ids */
			if (get_varint(&offs, end, &id) < 0)
				goto damaged;
		for (uint64_t i = 0; i < n && !r; i++) {
			if (get_varint(&v, end, &id) < 0 || id == 0 || id >= s->nframes)
				goto damaged;
			off = 0;
			if (offs != end && get_varint(&offs, end, &off) < 0)
				goto damaged;
			r = fn(ctx, (uint32_t)id, off);
		}
	}
	if (r == 0) {
		rocksdb_iter_get_error(it, &rerr);
		if (rerr)
			r = rdb_fail(s, rerr, "reading");
	}
	rocksdb_iter_destroy(it);
	return r;
damaged:
	rocksdb_iter_destroy(it);
	seterr(s, "%s: store is damaged: a rename record", s->dir);
	return -EIO;
}

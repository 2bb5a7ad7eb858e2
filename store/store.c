

/*
 * store.c — the flamefs store on RocksDB.
 *
 * This file is the only code that knows the on-disk key layout (see
 * store/README.md).  A store keeps every frame and every tree node in
 * memory, in arrays indexed by id, and (for the writer) in open-addressing
 * hash tables so that interning a frame or a (parent, frame) pair is O(1)
 * and allocation-free in the common case.  A batch appends new frames,
 * nodes and series to those arrays, aggregates counts per (series, bucket,
 * node) in its own hash table, and writes everything as one synced RocksDB
 * WriteBatch at commit, the counts as one sorted blob per (series, bucket)
 * that a merge operator adds into the stored blob; freeing an uncommitted batch truncates the arrays
 * back to where the batch started.  Readers open the directory as a RocksDB
 * secondary instance in a private temporary directory and catch up with
 * the writer in store_refresh().
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <rocksdb/c.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- column families ------------------------------------------------ */

/* Two column families: counts need the merge operator and their own
 * tuning; everything else shares `default`, told apart by a one-byte key
 * prefix.  RocksDB dumps every column family's options into LOG and both
 * OPTIONS files, so each one costs a fixed few KiB per store. */
enum {
	CF_DEFAULT,
	CF_COUNTS,
	CF_COUNT_ALL,
};

static const char *const cf_names[CF_COUNT_ALL] = {
        "default",
        "counts",
};

/* Key prefixes in the default column family; frames, nodes and series
 * keys are the prefix and a u32 BE id, meta keys the prefix and a name. */
#define KEY_FRAME  'f'
#define KEY_META   'm'
#define KEY_NODE   'n' /* schema 1: one node per record */
#define KEY_NODES  'N' /* schema 2: a run of up to NODE_RUN nodes per record */
#define KEY_SERIES 's'
#define NODE_RUN   4096u

/* In a frame record's kind byte (schema 2): the module and build id are
 * those of an earlier frame, named by its distance back. */
#define FRAME_MODULE_REF  0x80u
#define MODULE_LAST_SLOTS 4096u

#define META_SCHEMA         "mschema"
#define META_STORE_ID       "mstore_id"
#define META_BUCKET_SECONDS "mbucket_seconds"

/* RocksDB's InfoLogLevel: DEBUG, INFO, WARN, ERROR, ... */
#define ROCKS_LOG_WARN 2
/* BottommostLevelCompaction::kForce */
#define ROCKS_BOTTOMMOST_FORCE 2

#define ERRLEN 512

/* ---- small encoders --------------------------------------------------- */

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* A key of the default column family: prefix, then u32 BE id. */
static void id_key(uint8_t *k, uint8_t prefix, uint32_t id)
{
	k[0] = prefix;
	put_be32(k + 1, id);
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Returns 0, or -1 when the input ends early or the varint is too long. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;

	while (*p < end && shift < 64) {
		uint8_t c = *(*p)++;

		r |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = r;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A growable byte buffer for encoding records. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static void buf_varint(struct buf *b, uint64_t v)
{
	b->len += put_varint(b->p + b->len, v);
}

static void buf_bytes(struct buf *b, const void *p, size_t n)
{
	b->len += put_varint(b->p + b->len, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* ---- counts blobs --------------------------------------------------------
 * A counts value holds one (series, bucket)'s counts as a list sorted by
 * node, strictly increasing.  Each entry is
 *
 *     varint(delta << 1 | has_weight), varint(samples) [, varint(weight)]
 *
 * where delta is the node minus the previous entry's node (the first entry's
 * delta is its node, so node 0 can be stored), and the weight is present
 * only when it differs from samples (folded input has weight == samples).
 * The flag lives in the delta because a node delta is at most 32 bits, so
 * the shift can never lose a bit.  The decoder checks every varint against
 * the end of the value, that nodes stay in 32 bits and strictly increase,
 * and that nothing trails the last entry. */

struct count_cursor {
	const uint8_t *p, *end;
	bool started;
	uint32_t node;
	uint64_t samples, weight;
};

static void cursor_init(struct count_cursor *c, const void *p, size_t len)
{
	c->p = p;
	c->end = c->p + len;
	c->started = false;
	c->node = 0;
	c->samples = 0;
	c->weight = 0;
}

/* Reads the next entry: 1 when one was read, 0 at the end, -1 when the
 * value is damaged. */
static int cursor_next(struct count_cursor *c)
{
	uint64_t head, delta, node;

	if (c->p == c->end)
		return 0;
	if (get_varint(&c->p, c->end, &head) < 0)
		return -1;
	delta = head >> 1;
	if (c->started && delta == 0)
		return -1;
	node = (uint64_t)c->node + delta;
	if (node > UINT32_MAX)
		return -1;
	if (get_varint(&c->p, c->end, &c->samples) < 0)
		return -1;
	if (head & 1) {
		if (get_varint(&c->p, c->end, &c->weight) < 0 || c->weight == c->samples)
			return -1;
	} else {
		c->weight = c->samples;
	}
	c->node = (uint32_t)node;
	c->started = true;
	return 1;
}

/* Longest encoded entry: three 10-byte varints. */
#define COUNT_ENTRY_MAX 30

static size_t count_entry_put(uint8_t *p, uint32_t delta, uint64_t samples, uint64_t weight)
{
	size_t n = put_varint(p, (uint64_t)delta << 1 | (weight != samples));

	n += put_varint(p + n, samples);
	if (weight != samples)
		n += put_varint(p + n, weight);
	return n;
}

/* ---- the merge operator for counts -----------------------------------------
 * Full and partial merge are the same operation: a k-way merge of sorted
 * lists (the existing value, if any, and every operand) through a binary
 * min-heap of cursors keyed by node, adding entries with equal nodes.  It
 * is linear in the total number of entries (times log k). */

struct merge_heap {
	struct count_cursor *c; /* the cursors, unordered */
	uint32_t *h;            /* heap of indexes into c, by c[].node */
	size_t n;
};

static void heap_down(struct merge_heap *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		uint32_t t;

		if (l < m->n && m->c[m->h[l]].node < m->c[m->h[min]].node)
			min = l;
		if (r < m->n && m->c[m->h[r]].node < m->c[m->h[min]].node)
			min = r;
		if (min == i)
			return;
		t = m->h[i];
		m->h[i] = m->h[min];
		m->h[min] = t;
		i = min;
	}
}

/* Advances the heap's top cursor; drops it when exhausted.  -1 when the
 * value under it is damaged. */
static int heap_advance(struct merge_heap *m)
{
	int r = cursor_next(&m->c[m->h[0]]);

	if (r < 0)
		return -1;
	if (r == 0)
		m->h[0] = m->h[--m->n];
	if (m->n)
		heap_down(m, 0);
	return 0;
}

/* Merges `nvals` counts values into one malloc'd value (*out, *outlen).
 * Returns 0, -ENOMEM, or -EIO when an input is damaged. */
static int counts_merge(const char *const *vals, const size_t *lens, size_t nvals, char **out,
                        size_t *outlen)
{
	struct merge_heap m = {0};
	struct buf b = {0};
	size_t total = 0;
	uint32_t prev = 0;
	bool first = true;
	int r = 0;

	m.c = malloc((nvals ? nvals : 1) * sizeof(*m.c));
	m.h = malloc((nvals ? nvals : 1) * sizeof(*m.h));
	if (!m.c || !m.h) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nvals; i++) {
		int got;

		cursor_init(&m.c[i], vals[i], lens[i]);
		got = cursor_next(&m.c[i]);
		if (got < 0) {
			r = -EIO;
			goto out;
		}
		if (got)
			m.h[m.n++] = (uint32_t)i;
		total += lens[i];
	}
	for (size_t i = m.n / 2; i-- > 0;)
		heap_down(&m, i);
	/* The merged list is usually about as long as its inputs together;
	 * the buffer grows if sums need longer varints. */
	r = buf_reserve(&b, total + COUNT_ENTRY_MAX);
	if (r < 0)
		goto out;
	while (m.n) {
		uint32_t node = m.c[m.h[0]].node;
		uint64_t samples = 0, weight = 0;

		do {
			samples += m.c[m.h[0]].samples;
			weight += m.c[m.h[0]].weight;
			if (heap_advance(&m) < 0) {
				r = -EIO;
				goto out;
			}
		} while (m.n && m.c[m.h[0]].node == node);
		r = buf_reserve(&b, COUNT_ENTRY_MAX);
		if (r < 0)
			goto out;
		b.len += count_entry_put(b.p + b.len, first ? node : node - prev, samples, weight);
		prev = node;
		first = false;
	}
	*out = (char *)b.p;
	*outlen = b.len;
	b.p = NULL;
out:
	free(b.p);
	free(m.c);
	free(m.h);
	return r;
}

/* RocksDB's merge callbacks.  A damaged value or an allocation failure
 * reports failure, which RocksDB turns into a Corruption status on the read
 * or compaction that needed it.  RocksDB 7.8's C wrapper copies (result,
 * *len) even on failure, so *len is set to 0 before anything can fail. */
static char *count_full_merge(void *state, const char *key, size_t key_len, const char *existing,
                              size_t existing_len, const char *const *ops, const size_t *op_lens,
                              int nops, unsigned char *success, size_t *len)
{
	const char **vals;
	size_t *lens;
	size_t n = 0;
	char *out = NULL;

	*success = 0;
	*len = 0;
	if (nops < 0)
		return NULL;
	vals = malloc(((size_t)nops + 1) * sizeof(*vals));
	lens = malloc(((size_t)nops + 1) * sizeof(*lens));
	if (vals && lens) {
		if (existing) {
			vals[n] = existing;
			lens[n++] = existing_len;
		}
		for (int i = 0; i < nops; i++) {
			vals[n] = ops[i];
			lens[n++] = op_lens[i];
		}
		if (counts_merge(vals, lens, n, &out, len) == 0)
			*success = 1;
	}
	free(vals);
	free(lens);
	return out;
}

static char *count_partial_merge(void *state, const char *key, size_t key_len,
                                 const char *const *ops, const size_t *op_lens, int nops,
                                 unsigned char *success, size_t *len)
{
	char *out = NULL;

	*success = 0;
	*len = 0;
	if (nops >= 0 && counts_merge(ops, op_lens, (size_t)nops, &out, len) == 0)
		*success = 1;
	return out;
}

static void count_merge_delete(void *state, const char *value, size_t len)
{
	free((void *)value);
}

static void count_merge_destroy(void *state)
{
}

static const char *count_merge_name(void *state)
{
	return "flamefs.counts-merge.v1";
}

/* ---- arena for frame strings ------------------------------------------ */

struct arena_chunk {
	struct arena_chunk *prev;
	size_t size, used;
	uint8_t data[];
};

struct arena {
	struct arena_chunk *top;
};

struct arena_mark {
	struct arena_chunk *top;
	size_t used;
};

#define ARENA_CHUNK (256 * 1024)

static void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_chunk *c = a->top;

	if (!c || c->size - c->used < n) {
		size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->prev = a->top;
		c->size = size;
		c->used = 0;
		a->top = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

static struct arena_mark arena_mark(const struct arena *a)
{
	struct arena_mark m = {a->top, a->top ? a->top->used : 0};

	return m;
}

static void arena_release(struct arena *a, struct arena_mark m)
{
	while (a->top && a->top != m.top) {
		struct arena_chunk *prev = a->top->prev;

		free(a->top);
		a->top = prev;
	}
	if (a->top)
		a->top->used = m.used;
}

static void arena_free(struct arena *a)
{
	struct arena_mark none = {NULL, 0};

	arena_release(a, none);
}

/* ---- open-addressing id table ------------------------------------------
 * Linear probing over {id, hash} slots; id 0 marks an empty slot.  The
 * caller probes and compares keys itself (the keys live in the arrays the
 * ids index); the table only stores where ids are. */

struct slot {
	uint32_t id;
	uint32_t h;
};

struct idtab {
	struct slot *slots;
	size_t mask; /* slots - 1; 0 when unallocated */
	size_t count;
};

static int idtab_grow(struct idtab *t)
{
	size_t n = t->slots ? (t->mask + 1) * 2 : 1024;
	struct slot *ns = calloc(n, sizeof(*ns));

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

/* Makes room for one more entry; call before probing for an insert. */
static inline int idtab_reserve(struct idtab *t)
{
	if (!t->slots || (t->count + 1) * 10 > (t->mask + 1) * 7)
		return idtab_grow(t);
	return 0;
}

static void idtab_put(struct idtab *t, size_t pos, uint32_t id, uint32_t h)
{
	t->slots[pos].id = id;
	t->slots[pos].h = h;
	t->count++;
}

/* Removes `id` (whose hash is h) with backward-shift deletion, so that no
 * tombstones are needed and probe chains stay intact. */
static void idtab_remove(struct idtab *t, uint32_t id, uint32_t h)
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

static void idtab_free(struct idtab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->count = 0;
}

/* ---- the store ---------------------------------------------------------- */

struct series_rec {
	char *binary, *version, *event, *unit; /* malloc'd */
	uint32_t h;
	int64_t first_seen, last_seen; /* INT64_MAX / INT64_MIN when unseen */
	uint64_t samples, weight, input_bytes;
};

struct store {
	rocksdb_t *db;
	rocksdb_options_t *dbopts;
	rocksdb_options_t *cfopts;
	rocksdb_options_t *countopts;
	rocksdb_block_based_table_options_t *bbto;
	rocksdb_column_family_handle_t *cf[CF_COUNT_ALL];
	rocksdb_readoptions_t *ropts;
	rocksdb_writeoptions_t *wopts;

	bool readonly;
	char *dir;
	char *secdir;    /* reader's private secondary dir, or NULL */
	int secdir_lock; /* fd of its OWNER_LOCK, flock'd while open; -1 */
	uint32_t bucket_seconds;
	uint64_t seq;
	uint64_t live_sig; /* reader: live_files_sig() at last open */
	char errmsg[ERRLEN];

	/* Frames 1..nframes-1; slot 0 is unused.  Strings live in `arena`. */
	struct store_frame *frames;
	uint32_t nframes, frames_cap;
	struct idtab frame_tab; /* writer only */
	struct arena arena;
	/* writer: per hash of (module, build id), the last frame with it */
	uint32_t module_last[MODULE_LAST_SLOTS];

	/* Nodes 0..nnodes-1; node 0 is the root. */
	uint32_t *node_parent, *node_frame;
	uint32_t nnodes, nodes_cap;
	struct idtab node_tab; /* writer only */

	/* Series 1..nseries-1 (writer only; readers list from disk). */
	struct series_rec *series;
	uint32_t nseries, series_cap;
	struct idtab series_tab;

	struct store_batch *batch; /* the open batch, if any */
};

/* A batch aggregates counts per (group, node), where a group is one
 * (series, bucket): one RocksDB key of the counts column family.  Entries
 * are kept small (24 bytes) since an import can hold millions. */
struct count_group {
	uint32_t series, bucket;
	uint32_t n; /* entries in this group */
	uint32_t h; /* hash of (series, bucket) */
};

struct count_ent {
	uint32_t group, node;
	uint64_t samples, weight;
};

struct series_delta {
	bool touched;
	int64_t first_seen, last_seen;
	uint64_t samples, weight, input_bytes;
};

struct store_batch {
	struct store *s;
	/* Where the store's arrays stood when the batch started (or last
	 * committed); everything at or above is the batch's. */
	uint32_t frame_base, node_base, series_base;
	struct arena_mark mark;

	struct count_group *groups; /* ids 0..ngroups-1 */
	uint32_t ngroups, groups_cap;
	struct idtab group_tab; /* slot ids are group id + 1 */
	uint32_t last_group;    /* cache for time-ordered input */
	bool have_last;

	struct count_ent *counts;
	size_t ncounts, counts_cap;
	/* Index over counts: linear probing over 4-byte slots holding entry
	 * index + 1 (0: empty), at most half full.  Keys are compared in the
	 * entries themselves, so a slot costs half what an idtab slot does;
	 * with millions of entries that is most of an import's memory after
	 * the entries.  Commit frees it to make room for the WriteBatch; it
	 * is rebuilt on the next add. */
	uint32_t *count_slots;
	size_t count_mask; /* slots - 1; 0 when unallocated */
	bool count_tab_stale;

	struct series_delta *delta; /* indexed by series id */
	uint32_t ndelta;
};

static void seterr(struct store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void seterr(struct store *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
}

/* Turns a RocksDB error string into a message and -EIO; frees it. */
static int rdb_fail(struct store *s, char *rerr, const char *what)
{
	seterr(s, "%s: %s: %s", s->dir, what, rerr ? rerr : "unknown error");
	rocksdb_free(rerr);
	return -EIO;
}

/* A reader whose secondary instance could not be reopened has no db until
 * the next successful store_refresh(). */
static int need_db(struct store *s)
{
	if (s->db)
		return 0;
	seterr(s, "%s: store is not open (a refresh failed)", s->dir);
	return -EIO;
}

/* ---- frames in memory ----------------------------------------------------- */

static uint32_t frame_hash(const struct store_frame *f)
{
	uint64_t h = XXH3_64bits_withSeed(f->name, f->name_len, (uint64_t)f->kind << 32 | f->line);

	/* Only the tables in memory use this hash, so empty fields (most
	 * build ids and files) can be skipped. */
	h = XXH3_64bits_withSeed(f->module, f->module_len, h);
	if (f->build_id_len)
		h = XXH3_64bits_withSeed(f->build_id, f->build_id_len, h);
	if (f->file_len)
		h = XXH3_64bits_withSeed(f->file, f->file_len, h);
	return (uint32_t)(h ^ (h >> 32));
}

static bool mem_eq(const void *a, size_t alen, const void *b, size_t blen)
{
	return alen == blen && (!alen || !memcmp(a, b, alen));
}

static bool frame_eq(const struct store_frame *a, const struct store_frame *b)
{
	return a->kind == b->kind && a->line == b->line &&
	       mem_eq(a->name, a->name_len, b->name, b->name_len) &&
	       mem_eq(a->module, a->module_len, b->module, b->module_len) &&
	       mem_eq(a->build_id, a->build_id_len, b->build_id, b->build_id_len) &&
	       mem_eq(a->file, a->file_len, b->file, b->file_len);
}

/* Copies f's strings into the arena and appends it as frame nframes. */
static int frame_append(struct store *s, const struct store_frame *f)
{
	size_t total = f->name_len + f->module_len + f->build_id_len + f->file_len;
	struct store_frame *nf;
	uint8_t *p = NULL;

	if (s->nframes == UINT32_MAX)
		return -EOVERFLOW;
	if (s->nframes == s->frames_cap) {
		uint32_t cap = s->frames_cap ? s->frames_cap * 2 : 1024;
		struct store_frame *nfs;

		if (cap < s->frames_cap)
			cap = UINT32_MAX;
		nfs = realloc(s->frames, (size_t)cap * sizeof(*nfs));
		if (!nfs)
			return -ENOMEM;
		s->frames = nfs;
		s->frames_cap = cap;
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
	COPY_FIELD(module, const char *);
	COPY_FIELD(build_id, const uint8_t *);
	COPY_FIELD(file, const char *);
#undef COPY_FIELD
	s->nframes++;
	return 0;
}

static int frame_index(struct store *s, uint32_t id)
{
	size_t pos;
	uint32_t h;
	int r = idtab_reserve(&s->frame_tab);

	if (r < 0)
		return r;
	h = frame_hash(&s->frames[id]);
	pos = h & s->frame_tab.mask;
	while (s->frame_tab.slots[pos].id)
		pos = (pos + 1) & s->frame_tab.mask;
	idtab_put(&s->frame_tab, pos, id, h);
	return 0;
}

/* Frame record: kind u8, varint line, then name, module, build_id, file as
 * (varint length, bytes). */
/* ref: 0, or how far back the frame with the same module and build id is */
static int frame_encode(struct buf *b, const struct store_frame *f, uint32_t ref)
{
	int r = buf_reserve(b, 1 + 10 + 4 * 10 + f->name_len + f->module_len + f->build_id_len +
	                               f->file_len);

	if (r < 0)
		return r;
	b->p[b->len++] = (uint8_t)(f->kind | (ref ? FRAME_MODULE_REF : 0));
	buf_varint(b, f->line);
	buf_bytes(b, f->name, f->name_len);
	if (ref) {
		buf_varint(b, ref);
	} else {
		buf_bytes(b, f->module, f->module_len);
		buf_bytes(b, f->build_id, f->build_id_len);
	}
	buf_bytes(b, f->file, f->file_len);
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
static uint32_t module_ref(struct store *s, uint32_t id)
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

static int get_bytes(const uint8_t **p, const uint8_t *end, const void **out, size_t *len)
{
	uint64_t n;

	if (get_varint(p, end, &n) < 0 || n > (uint64_t)(end - *p))
		return -1;
	*out = n ? *p : NULL;
	*len = n;
	*p += n;
	return 0;
}

/* Decodes frame id's record; a module reference must name a frame that
 * s already holds (frames load in id order). */
static int frame_decode(const struct store *s, uint32_t id, const uint8_t *p, size_t len,
                        struct store_frame *f)
{
	const uint8_t *end = p + len;
	const void *v;
	uint64_t line, ref;

	memset(f, 0, sizeof(*f));
	if (len < 1)
		return -1;
	f->kind = (uint8_t)(*p & ~FRAME_MODULE_REF);
	bool by_ref = *p++ & FRAME_MODULE_REF;
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
	return p == end ? 0 : -1;
}

/* ---- nodes in memory ------------------------------------------------------ */

static uint32_t node_hash(uint32_t parent, uint32_t frame)
{
	uint64_t k = (uint64_t)parent << 32 | frame;
	uint64_t h = XXH3_64bits(&k, sizeof(k));

	return (uint32_t)(h ^ (h >> 32));
}

static int node_append(struct store *s, uint32_t parent, uint32_t frame)
{
	if (s->nnodes == UINT32_MAX)
		return -EOVERFLOW;
	if (s->nnodes == s->nodes_cap) {
		uint32_t cap = s->nodes_cap ? s->nodes_cap * 2 : 4096;
		uint32_t *np, *nf;

		if (cap < s->nodes_cap)
			cap = UINT32_MAX;
		np = realloc(s->node_parent, (size_t)cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		s->node_parent = np;
		nf = realloc(s->node_frame, (size_t)cap * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		s->node_frame = nf;
		s->nodes_cap = cap;
	}
	s->node_parent[s->nnodes] = parent;
	s->node_frame[s->nnodes] = frame;
	s->nnodes++;
	return 0;
}

static int node_index(struct store *s, uint32_t id)
{
	size_t pos;
	uint32_t h;
	int r = idtab_reserve(&s->node_tab);

	if (r < 0)
		return r;
	h = node_hash(s->node_parent[id], s->node_frame[id]);
	pos = h & s->node_tab.mask;
	while (s->node_tab.slots[pos].id)
		pos = (pos + 1) & s->node_tab.mask;
	idtab_put(&s->node_tab, pos, id, h);
	return 0;
}

/* ---- series in memory (writer) -------------------------------------------- */

static uint32_t series_hash(const char *binary, const char *version, const char *event)
{
	uint64_t h = XXH3_64bits(binary, strlen(binary));

	h = XXH3_64bits_withSeed(version, strlen(version), h);
	h = XXH3_64bits_withSeed(event, strlen(event), h);
	return (uint32_t)(h ^ (h >> 32));
}

static void series_rec_clear(struct series_rec *r)
{
	free(r->binary);
	free(r->version);
	free(r->event);
	free(r->unit);
	memset(r, 0, sizeof(*r));
}

/* Series record: binary, version, event, unit as (varint length, bytes),
 * then zigzag first_seen, zigzag last_seen, varint samples, weight,
 * input_bytes. */
static int series_encode(struct buf *b, const struct series_rec *r)
{
	size_t lb = strlen(r->binary), lv = strlen(r->version);
	size_t le = strlen(r->event), lu = strlen(r->unit);
	int ret = buf_reserve(b, lb + lv + le + lu + 9 * 10);

	if (ret < 0)
		return ret;
	buf_bytes(b, r->binary, lb);
	buf_bytes(b, r->version, lv);
	buf_bytes(b, r->event, le);
	buf_bytes(b, r->unit, lu);
	buf_varint(b, zigzag(r->first_seen));
	buf_varint(b, zigzag(r->last_seen));
	buf_varint(b, r->samples);
	buf_varint(b, r->weight);
	buf_varint(b, r->input_bytes);
	return 0;
}

static char *dup_bytes(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* Decodes into r, whose strings it mallocs.  Returns 0, -ENOMEM, or -1
 * for a damaged record. */
static int series_decode(const uint8_t *p, size_t len, struct series_rec *r)
{
	const uint8_t *end = p + len;
	const void *v[4];
	size_t l[4];
	uint64_t first, last;
	char **dst[4] = {&r->binary, &r->version, &r->event, &r->unit};

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < 4; i++) {
		if (get_bytes(&p, end, &v[i], &l[i]) < 0)
			return -1;
	}
	if (get_varint(&p, end, &first) < 0 || get_varint(&p, end, &last) < 0 ||
	    get_varint(&p, end, &r->samples) < 0 || get_varint(&p, end, &r->weight) < 0 ||
	    get_varint(&p, end, &r->input_bytes) < 0 || p != end)
		return -1;
	r->first_seen = unzigzag(first);
	r->last_seen = unzigzag(last);
	for (int i = 0; i < 4; i++) {
		*dst[i] = dup_bytes(v[i], l[i]);
		if (!*dst[i]) {
			series_rec_clear(r);
			return -ENOMEM;
		}
	}
	return 0;
}

static int series_index(struct store *s, uint32_t id)
{
	struct series_rec *r = &s->series[id];
	size_t pos;
	int ret = idtab_reserve(&s->series_tab);

	if (ret < 0)
		return ret;
	r->h = series_hash(r->binary, r->version, r->event);
	pos = r->h & s->series_tab.mask;
	while (s->series_tab.slots[pos].id)
		pos = (pos + 1) & s->series_tab.mask;
	idtab_put(&s->series_tab, pos, id, r->h);
	return 0;
}

static int series_grow(struct store *s)
{
	uint32_t cap;
	struct series_rec *n;

	if (s->nseries < s->series_cap)
		return 0;
	if (s->nseries == UINT32_MAX)
		return -EOVERFLOW;
	cap = s->series_cap ? s->series_cap * 2 : 16;
	if (cap < s->series_cap)
		cap = UINT32_MAX;
	n = realloc(s->series, (size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->series = n;
	s->series_cap = cap;
	return 0;
}

/* ---- loading from RocksDB -------------------------------------------------- */

/* Walks the records whose keys are prefix + be32 id, starting at `from`,
 * and calls fn for each; fn returns how many ids the record holds (a run
 * of nodes holds many) or -errno.  Ids must be dense: a gap means damage. */
static int load_ids(struct store *s, uint8_t prefix, const char *what, uint32_t from,
                    int (*fn)(struct store *s, uint32_t id, const uint8_t *v, size_t vlen))
{
	rocksdb_iterator_t *it;
	uint8_t key[5];
	uint32_t want = from;
	char *rerr = NULL;
	int r = 0;

	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	if (!it) {
		seterr(s, "%s: cannot create an iterator", s->dir);
		return -ENOMEM;
	}
	id_key(key, prefix, from);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);

		if (klen && k[0] != prefix)
			break;
		if (klen != 5 || get_be32(k + 1) != want) {
			seterr(s, "%s: store is damaged: %s id %u missing", s->dir, what, want);
			r = -EIO;
			goto out_iter;
		}
		r = fn(s, want, v, vlen);
		if (r < 0)
			goto out_iter;
		want += (uint32_t)r;
		r = 0;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "reading");
out_iter:
	rocksdb_iter_destroy(it);
	return r;
}

static int load_frame(struct store *s, uint32_t id, const uint8_t *v, size_t vlen)
{
	struct store_frame f;
	int r;

	if (frame_decode(s, id, v, vlen, &f) < 0) {
		seterr(s, "%s: store is damaged: frame %u", s->dir, id);
		return -EIO;
	}
	r = frame_append(s, &f);
	if (r == 0 && !s->readonly) {
		r = frame_index(s, id);
		(void)module_ref(s, id); /* remembers id's module */
	}
	return r < 0 ? r : 1;
}

static int load_node(struct store *s, uint32_t id, const uint8_t *v, size_t vlen)
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
	if (r == 0 && !s->readonly)
		r = node_index(s, id);
	return r < 0 ? r : 1;
}

/* A run of nodes first..first+n-1 (see batch_write): varint n, then n
 * varints id - parent, then n zigzag varints of the frame minus the
 * previous node's frame (a column each: zstd finds more in them). */
static int load_node_run(struct store *s, uint32_t first, const uint8_t *v, size_t vlen)
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
		if (r == 0 && !s->readonly)
			r = node_index(s, id);
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

static int load_series(struct store *s, uint32_t id, const uint8_t *v, size_t vlen)
{
	int r = series_grow(s);

	if (r < 0)
		return r;
	r = series_decode(v, vlen, &s->series[id]);
	if (r == -1) {
		seterr(s, "%s: store is damaged: series %u", s->dir, id);
		return -EIO;
	}
	if (r < 0)
		return r;
	s->nseries++;
	r = series_index(s, id);
	return r < 0 ? r : 1;
}

static int load_new(struct store *s)
{
	int r = load_ids(s, KEY_FRAME, "frame", s->nframes, load_frame);

	if (r == 0) /* schema 1's records, then schema 2's runs after them */
		r = load_ids(s, KEY_NODE, "node", s->nnodes, load_node);
	if (r < 0)
		return r;
	return load_ids(s, KEY_NODES, "node", s->nnodes, load_node_run);
}

/* ---- options ------------------------------------------------------------------ */

static int make_options(struct store *s)
{
	rocksdb_mergeoperator_t *mo;
	int levels[7];

	s->dbopts = rocksdb_options_create();
	s->cfopts = rocksdb_options_create();
	s->countopts = rocksdb_options_create();
	s->bbto = rocksdb_block_based_options_create();
	s->ropts = rocksdb_readoptions_create();
	s->wopts = rocksdb_writeoptions_create();
	if (!s->dbopts || !s->cfopts || !s->countopts || !s->bbto || !s->ropts || !s->wopts)
		return -ENOMEM;

	rocksdb_options_set_info_log_level(s->dbopts, ROCKS_LOG_WARN);
	rocksdb_options_set_keep_log_file_num(s->dbopts, 1);
	rocksdb_options_set_max_log_file_size(s->dbopts, 64 * 1024);
	rocksdb_options_set_max_manifest_file_size(s->dbopts, 256 * 1024);
	rocksdb_options_set_manifest_preallocation_size(s->dbopts, 64 * 1024);
	rocksdb_options_set_max_total_wal_size(s->dbopts, 64 << 20);
	rocksdb_options_set_recycle_log_file_num(s->dbopts, 0);
	rocksdb_options_set_stats_dump_period_sec(s->dbopts, 0);
	rocksdb_options_set_stats_persist_period_sec(s->dbopts, 0);
	rocksdb_options_set_max_background_jobs(s->dbopts, 2);
	if (s->readonly) {
		rocksdb_options_set_max_open_files(s->dbopts, -1);
		/* A secondary's catch-up (every store_refresh) loads the table
		 * handlers of each column family through a pool of this many
		 * threads, created and joined on every call even when there is
		 * nothing new: 16 by default, ~60 thread creations per refresh.
		 * The reader's stores are small; one thread loads them inline. */
		rocksdb_options_set_max_file_opening_threads(s->dbopts, 1);
	} else /* the vector memtable below takes one writer thread only */
		rocksdb_options_set_allow_concurrent_memtable_write(s->dbopts, 0);

	/* Measured on 200 MB of synthetic perf text: block size and restart
	 * interval change the counts by a few percent; 32 KiB and 256 were
	 * the best pair.  The default column family (frames, nodes) is read
	 * whole at open and almost never by key, so its blocks are as big as
	 * zstd's gain from them: 256 KiB blocks made the dictionary of real
	 * recordings 20-25% smaller than 32 KiB ones (store/README.md). */
	rocksdb_block_based_options_set_block_restart_interval(s->bbto, 256);
	rocksdb_block_based_options_set_format_version(s->bbto, 5);

	for (int i = 0; i < 7; i++)
		levels[i] = rocksdb_zstd_compression;
	for (int i = 0; i < 2; i++) {
		rocksdb_options_t *o = i ? s->countopts : s->cfopts;

		/* the factory copies the table options */
		rocksdb_block_based_options_set_block_size(s->bbto, (i ? 32 : 256) * 1024);
		rocksdb_options_set_block_based_table_factory(o, s->bbto);
		rocksdb_options_set_compression(o, rocksdb_zstd_compression);
		rocksdb_options_set_compression_per_level(o, levels, 7);
		rocksdb_options_set_bottommost_compression(o, rocksdb_zstd_compression);
		/* window_bits, level, strategy, max_dict_bytes */
		rocksdb_options_set_compression_options(o, -14, 6, 0, 0);
		rocksdb_options_set_bottommost_compression_options(o, -14, 9, 0, 0, 1);
		rocksdb_options_set_level_compaction_dynamic_level_bytes(o, 1);
		rocksdb_options_set_write_buffer_size(o, i ? 32 << 20 : 8 << 20);
		/* The writer only appends to its memtable (a commit is one
		 * big WriteBatch; reads come from readers, which keep the
		 * skip list): a vector sorted once at flush costs a third of
		 * what a skip list insert does (~3000 instructions per key
		 * in RocksDB 7.8, even for keys in order).  A read through
		 * the writer sorts a copy; the writer reads only at open,
		 * when its memtable is empty or tiny, and in tests. */
		if (!s->readonly)
			rocksdb_options_set_memtable_vector_rep(o);
	}
	mo = rocksdb_mergeoperator_create(NULL, count_merge_destroy, count_full_merge,
	                                  count_partial_merge, count_merge_delete,
	                                  count_merge_name);
	if (!mo)
		return -ENOMEM;
	rocksdb_options_set_merge_operator(s->countopts, mo);
	rocksdb_writeoptions_set_sync(s->wopts, 1);
	return 0;
}

/* ---- open / close ------------------------------------------------------------- */

char *store_default_dir(void)
{
	const char *e = getenv("FLAMEFS_STORE");
	char *out = NULL;

	if (e && *e)
		return strdup(e);
	e = getenv("XDG_DATA_HOME");
	if (e && *e) {
		if (asprintf(&out, "%s/flamefs", e) < 0)
			return NULL;
		return out;
	}
	e = getenv("HOME");
	if (e && *e) {
		if (asprintf(&out, "%s/.local/share/flamefs", e) < 0)
			return NULL;
		return out;
	}
	return NULL;
}

/* mkdir -p with mode 0700 for every directory it creates. */
static int mkdir_p(const char *dir)
{
	char *p = strdup(dir);
	int r = 0;

	if (!p)
		return -ENOMEM;
	for (char *c = p + 1;; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char save = *c;

		*c = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			r = -errno;
			goto out;
		}
		*c = save;
		if (!save)
			break;
	}
out:
	free(p);
	return r;
}

/* 1 when dir has no entries, 0 when it has some, -errno on failure. */
static int dir_is_empty(const char *dir)
{
	DIR *d;
	struct dirent *e;
	int r = 1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			r = 0;
			break;
		}
	}
	closedir(d);
	return r;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

static void remove_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Who holds RocksDB's LOCK file: a pid, or 0 when unknown. */
static long lock_holder(const char *dir, const char *rerr)
{
	char path[PATH_MAX];
	struct flock fl;
	int fd;
	long pid = 0;

	/* When this process holds the lock, opening and closing LOCK here
	 * would drop that fcntl lock: never touch the file then. */
	if (strstr(rerr, "lock hold by current process"))
		return (long)getpid();
	if (snprintf(path, sizeof(path), "%s/LOCK", dir) < (int)sizeof(path)) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			memset(&fl, 0, sizeof(fl));
			fl.l_type = F_WRLCK;
			fl.l_whence = SEEK_SET;
			if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
				pid = (long)fl.l_pid;
			close(fd);
		}
	}
	return pid;
}

static int meta_get_u32(struct store *s, const char *key, uint32_t *v, bool *found)
{
	char *rerr = NULL;
	size_t len = 0;
	char *val =
	        rocksdb_get_cf(s->db, s->ropts, s->cf[CF_DEFAULT], key, strlen(key), &len, &rerr);

	if (rerr)
		return rdb_fail(s, rerr, "reading meta");
	*found = val != NULL;
	if (!val)
		return 0;
	if (len != 4) {
		rocksdb_free(val);
		seterr(s, "%s: store is damaged: meta %s", s->dir, key + 1);
		return -EIO;
	}
	*v = get_be32((const uint8_t *)val);
	rocksdb_free(val);
	return 0;
}

static int meta_init(struct store *s)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	uint8_t schema[4], bucket[4], id[16];
	char *rerr = NULL;
	int r = 0;

	if (!wb)
		return -ENOMEM;
	if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
		r = -errno;
		seterr(s, "%s: getrandom: %s", s->dir, strerror(errno));
		goto out_wb;
	}
	put_be32(schema, STORE_SCHEMA_VERSION);
	put_be32(bucket, STORE_DEFAULT_BUCKET_SECONDS);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_SCHEMA, strlen(META_SCHEMA),
	                          (char *)schema, 4);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_STORE_ID, strlen(META_STORE_ID),
	                          (char *)id, 16);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_BUCKET_SECONDS,
	                          strlen(META_BUCKET_SECONDS), (char *)bucket, 4);
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "writing meta");
out_wb:
	rocksdb_writebatch_destroy(wb);
	return r;
}

static int meta_check(struct store *s)
{
	uint32_t schema = 0, bucket = 0;
	bool found;
	int r = meta_get_u32(s, META_SCHEMA, &schema, &found);

	if (r < 0)
		return r;
	if (!found) {
		seterr(s, "%s: not a flamefs store", s->dir);
		return -EINVAL;
	}
	if (schema > STORE_SCHEMA_VERSION) {
		seterr(s, "%s: schema version %u is newer than this flamefs understands (%u)",
		       s->dir, schema, STORE_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (schema < STORE_SCHEMA_OLDEST) {
		seterr(s, "%s: schema version %u is not supported by this flamefs (%u)", s->dir,
		       schema, STORE_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	/* Schema 1 differs only in having no module references in frame
	 * records: this flamefs reads it as it is, and a writer marks the
	 * store 2 before it can write one. */
	if (schema < STORE_SCHEMA_VERSION && !s->readonly) {
		uint8_t v[4];
		char *rerr = NULL;

		put_be32(v, STORE_SCHEMA_VERSION);
		rocksdb_put_cf(s->db, s->wopts, s->cf[CF_DEFAULT], META_SCHEMA, strlen(META_SCHEMA),
		               (char *)v, 4, &rerr);
		if (rerr)
			return rdb_fail(s, rerr, "writing meta");
	}
	r = meta_get_u32(s, META_BUCKET_SECONDS, &bucket, &found);
	if (r < 0)
		return r;
	if (!found || bucket == 0) {
		seterr(s, "%s: store is damaged: no bucket_seconds", s->dir);
		return -EIO;
	}
	s->bucket_seconds = bucket;
	return 0;
}

/* Checks the column families of an existing RocksDB directory. */
static int check_cfs(struct store *s)
{
	char *rerr = NULL;
	size_t n = 0;
	char **names = rocksdb_list_column_families(s->dbopts, s->dir, &n, &rerr);
	int found = 0;
	bool old = false;

	if (rerr) {
		seterr(s, "%s: not a flamefs store (%s)", s->dir, rerr);
		rocksdb_free(rerr);
		return -EINVAL;
	}
	/* Development builds kept meta, frames, nodes and series in column
	 * families of their own, and counts one per (series, bucket, node). */
	for (size_t i = 0; i < n; i++)
		old |= !strcmp(names[i], "meta");
	for (int c = 0; c < CF_COUNT_ALL; c++) {
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(names[i], cf_names[c])) {
				found++;
				break;
			}
		}
	}
	rocksdb_list_column_families_destroy(names, n);
	if (old) {
		seterr(s,
		       "%s: store has the layout of a pre-release flamefs; import its data again "
		       "into a new store",
		       s->dir);
		return -EPROTONOSUPPORT;
	}
	if (found != CF_COUNT_ALL || n != CF_COUNT_ALL) {
		seterr(s, "%s: not a flamefs store", s->dir);
		return -EINVAL;
	}
	return 0;
}

/* A reader's directory holds this file, flock'd for as long as the
 * reader is open (the lock goes with the process, however it ends). */
#define OWNER_LOCK  "owner.lock"
#define READER_STEM "flamefs-reader-"

/* Removes the reader directories under base that this user owns and that
 * no live reader holds: a reader killed before store_close leaves its
 * directory behind.  A directory without the lock file yet is being set
 * up by another reader (the file appears only once locked) and is left. */
static void remove_stale_secdirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX];
		struct stat st;
		int fd;

		if (strncmp(e->d_name, READER_STEM, strlen(READER_STEM)) != 0 ||
		    snprintf(path, sizeof(path), "%s/%s", base, e->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (strlen(path) + sizeof("/" OWNER_LOCK) > sizeof(path))
			continue;
		strcat(path, "/" OWNER_LOCK);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			path[strlen(path) - strlen("/" OWNER_LOCK)] = '\0';
			remove_tree(path);
		}
		close(fd);
	}
	closedir(d);
}

/* Locks a new file in s->secdir and gives it the name OWNER_LOCK only
 * then, so no other reader can take the directory for a stale one. */
static int lock_secdir(struct store *s)
{
	char tmp[PATH_MAX], final[PATH_MAX];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s/.%s", s->secdir, OWNER_LOCK) >= (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/%s", s->secdir, OWNER_LOCK) >= (int)sizeof(final))
		return -ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(tmp, final) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	s->secdir_lock = fd;
	return 0;
}

static int make_secdir(struct store *s)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	char *p = NULL;

	if (!base || !*base || access(base, W_OK | X_OK) < 0) {
		base = getenv("TMPDIR");
		if (!base || !*base)
			base = "/tmp";
	}
	remove_stale_secdirs(base);
	if (asprintf(&p, "%s/" READER_STEM "XXXXXX", base) < 0)
		return -ENOMEM;
	if (!mkdtemp(p)) {
		int r = -errno;

		seterr(s, "%s: cannot create a reader directory under %s: %s", s->dir, base,
		       strerror(errno));
		free(p);
		return r;
	}
	s->secdir = p;
	int r = lock_secdir(s);
	if (r < 0)
		seterr(s, "%s: cannot lock the reader directory %s: %s", s->dir, p, strerror(-r));
	return r;
}

/* A signature of the set of live SST files: it changes whenever the
 * writer flushes or compacts. */
static uint64_t live_files_sig(struct store *s)
{
	const rocksdb_livefiles_t *lf = rocksdb_livefiles(s->db);
	uint64_t sig = 0;
	int n;

	if (!lf)
		return 0;
	n = rocksdb_livefiles_count(lf);
	for (int i = 0; i < n; i++) {
		const char *name = rocksdb_livefiles_name(lf, i);

		sig += XXH3_64bits(name, strlen(name));
	}
	rocksdb_livefiles_destroy(lf);
	return sig ^ (uint64_t)n;
}

static void close_db(struct store *s)
{
	for (int i = 0; i < CF_COUNT_ALL; i++) {
		if (s->cf[i])
			rocksdb_column_family_handle_destroy(s->cf[i]);
		s->cf[i] = NULL;
	}
	if (s->db)
		rocksdb_close(s->db);
	s->db = NULL;
}

/* Opens the reader's secondary instance in s->secdir. */
static int open_secondary(struct store *s)
{
	const rocksdb_options_t *opts[CF_COUNT_ALL];
	char *rerr = NULL;

	for (int i = 0; i < CF_COUNT_ALL; i++)
		opts[i] = i == CF_COUNTS ? s->countopts : s->cfopts;
	s->db = rocksdb_open_as_secondary_column_families(
	        s->dbopts, s->dir, s->secdir, CF_COUNT_ALL, cf_names, opts, s->cf, &rerr);
	if (rerr) {
		seterr(s, "%s: cannot open store: %s", s->dir, rerr);
		rocksdb_free(rerr);
		s->db = NULL;
		memset(s->cf, 0, sizeof(s->cf));
		return -EIO;
	}
	s->live_sig = live_files_sig(s);
	return 0;
}

static int open_db(struct store *s, bool creating)
{
	const rocksdb_options_t *opts[CF_COUNT_ALL];
	char *rerr = NULL;

	for (int i = 0; i < CF_COUNT_ALL; i++)
		opts[i] = i == CF_COUNTS ? s->countopts : s->cfopts;
	if (s->readonly) {
		int r = make_secdir(s);

		if (r < 0)
			return r;
		return open_secondary(s);
	} else {
		rocksdb_options_set_create_if_missing(s->dbopts, creating);
		rocksdb_options_set_create_missing_column_families(s->dbopts, creating);
		s->db = rocksdb_open_column_families(s->dbopts, s->dir, CF_COUNT_ALL, cf_names,
		                                     opts, s->cf, &rerr);
	}
	if (rerr) {
		if (!s->readonly && strstr(rerr, "LOCK")) {
			long pid = lock_holder(s->dir, rerr);

			if (pid > 0)
				seterr(s, "%s: store is in use by another writer (pid %ld)", s->dir,
				       pid);
			else
				seterr(s, "%s: store is in use by another writer", s->dir);
			rocksdb_free(rerr);
			return -EBUSY;
		}
		seterr(s, "%s: cannot open store: %s", s->dir, rerr);
		rocksdb_free(rerr);
		return -EIO;
	}
	return 0;
}

int store_open(const char *dir, int flags, struct store **out, char *err, size_t errlen)
{
	struct store *s;
	struct stat st;
	char path[PATH_MAX];
	bool creating = false;
	int r;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		if (errlen)
			snprintf(err, errlen, "%s: out of memory", dir);
		return r;
	}
	s->readonly = flags & STORE_READONLY;
	s->secdir_lock = -1;
	s->dir = strdup(dir);
	if (!s->dir) {
		r = -ENOMEM;
		seterr(s, "%s: out of memory", dir);
		goto fail;
	}
	r = make_options(s);
	if (r < 0) {
		seterr(s, "%s: out of memory", dir);
		goto fail;
	}

	if (stat(dir, &st) < 0) {
		if (errno != ENOENT || !(flags & STORE_CREATE) || s->readonly) {
			r = -errno;
			if (errno == ENOENT)
				seterr(s, "%s: no such store", dir);
			else
				seterr(s, "%s: %s", dir, strerror(errno));
			goto fail;
		}
		r = mkdir_p(dir);
		if (r < 0) {
			seterr(s, "%s: cannot create: %s", dir, strerror(-r));
			goto fail;
		}
		creating = true;
	} else if (!S_ISDIR(st.st_mode)) {
		r = -ENOTDIR;
		seterr(s, "%s: not a flamefs store", dir);
		goto fail;
	} else {
		if (snprintf(path, sizeof(path), "%s/CURRENT", dir) >= (int)sizeof(path)) {
			r = -ENAMETOOLONG;
			seterr(s, "%s: path too long", dir);
			goto fail;
		}
		if (access(path, F_OK) < 0) {
			r = dir_is_empty(dir);
			if (r < 0) {
				seterr(s, "%s: %s", dir, strerror(-r));
				goto fail;
			}
			if (!r || !(flags & STORE_CREATE) || s->readonly) {
				r = -EINVAL;
				seterr(s, "%s: not a flamefs store", dir);
				goto fail;
			}
			creating = true;
		} else {
			r = check_cfs(s);
			if (r < 0)
				goto fail;
		}
	}

	r = open_db(s, creating);
	if (r < 0)
		goto fail;
	if (creating) {
		r = meta_init(s);
		if (r < 0)
			goto fail;
	}
	r = meta_check(s);
	if (r < 0)
		goto fail;

	r = node_append(s, STORE_ROOT_NODE, 0);
	if (r < 0)
		goto fail_nomem;
	/* Frame 0 means "no frame" (the root's). */
	r = frame_append(s, &(struct store_frame){0});
	if (r < 0)
		goto fail_nomem;
	if (!s->readonly) {
		r = series_grow(s);
		if (r < 0)
			goto fail_nomem;
		memset(&s->series[0], 0, sizeof(s->series[0]));
		s->nseries = 1;
		r = load_ids(s, KEY_SERIES, "series", 1, load_series);
		if (r < 0)
			goto fail;
	}
	r = load_new(s);
	if (r < 0)
		goto fail;
	s->seq = rocksdb_get_latest_sequence_number(s->db);
	*out = s;
	return 0;

fail_nomem:
	seterr(s, "%s: out of memory", dir);
fail:
	if (errlen)
		snprintf(err, errlen, "%s", s->errmsg);
	store_close(s);
	return r;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	store_batch_free(s->batch);
	close_db(s);
	if (s->secdir) {
		remove_tree(s->secdir);
		free(s->secdir);
	}
	if (s->secdir_lock >= 0)
		close(s->secdir_lock);
	if (s->dbopts)
		rocksdb_options_destroy(s->dbopts);
	if (s->cfopts)
		rocksdb_options_destroy(s->cfopts);
	if (s->countopts)
		rocksdb_options_destroy(s->countopts);
	if (s->bbto)
		rocksdb_block_based_options_destroy(s->bbto);
	if (s->ropts)
		rocksdb_readoptions_destroy(s->ropts);
	if (s->wopts)
		rocksdb_writeoptions_destroy(s->wopts);
	for (uint32_t i = 0; i < s->nseries; i++)
		series_rec_clear(&s->series[i]);
	free(s->series);
	idtab_free(&s->series_tab);
	free(s->frames);
	idtab_free(&s->frame_tab);
	arena_free(&s->arena);
	free(s->node_parent);
	free(s->node_frame);
	idtab_free(&s->node_tab);
	free(s->dir);
	free(s);
}

const char *store_errmsg(const struct store *s)
{
	return s->errmsg;
}

uint32_t store_bucket_seconds(const struct store *s)
{
	return s->bucket_seconds;
}

/* ---- batches ------------------------------------------------------------------- */

static void batch_mark(struct store_batch *b)
{
	b->frame_base = b->s->nframes;
	b->node_base = b->s->nnodes;
	b->series_base = b->s->nseries;
	b->mark = arena_mark(&b->s->arena);
}

struct store_batch *store_batch_new(struct store *s)
{
	struct store_batch *b;

	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return NULL;
	}
	if (s->batch) {
		seterr(s, "%s: a batch is already open", s->dir);
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		seterr(s, "%s: out of memory", s->dir);
		return NULL;
	}
	b->s = s;
	batch_mark(b);
	s->batch = b;
	return b;
}

/* Forgets every frame, node and series the batch created. */
static void batch_rollback(struct store_batch *b)
{
	struct store *s = b->s;

	while (s->nnodes > b->node_base) {
		uint32_t id = --s->nnodes;

		idtab_remove(&s->node_tab, id, node_hash(s->node_parent[id], s->node_frame[id]));
	}
	while (s->nframes > b->frame_base) {
		uint32_t id = --s->nframes;

		idtab_remove(&s->frame_tab, id, frame_hash(&s->frames[id]));
	}
	arena_release(&s->arena, b->mark);
	while (s->nseries > b->series_base) {
		uint32_t id = --s->nseries;

		idtab_remove(&s->series_tab, id, s->series[id].h);
		series_rec_clear(&s->series[id]);
	}
}

static void count_index_free(struct store_batch *b)
{
	free(b->count_slots);
	b->count_slots = NULL;
	b->count_mask = 0;
}

/* Frees every count the batch holds, with their indexes. */
static void batch_counts_reset(struct store_batch *b)
{
	free(b->counts);
	b->counts = NULL;
	b->ncounts = b->counts_cap = 0;
	count_index_free(b);
	b->count_tab_stale = false;
	free(b->groups);
	b->groups = NULL;
	b->ngroups = b->groups_cap = 0;
	idtab_free(&b->group_tab);
	b->have_last = false;
}

void store_batch_free(struct store_batch *b)
{
	if (!b)
		return;
	batch_rollback(b);
	b->s->batch = NULL;
	batch_counts_reset(b);
	free(b->delta);
	free(b);
}

int store_batch_series(struct store_batch *b, const struct store_series_key *k, uint32_t *id)
{
	struct store *s = b->s;
	struct series_rec *r;
	uint32_t h;
	size_t pos;
	int ret;

	if (!k->binary || !k->version || !k->event || !k->unit) {
		seterr(s, "series key with a missing field");
		return -EINVAL;
	}
	ret = idtab_reserve(&s->series_tab);
	if (ret < 0)
		return ret;
	h = series_hash(k->binary, k->version, k->event);
	for (pos = h & s->series_tab.mask; s->series_tab.slots[pos].id;
	     pos = (pos + 1) & s->series_tab.mask) {
		if (s->series_tab.slots[pos].h != h)
			continue;
		r = &s->series[s->series_tab.slots[pos].id];
		if (strcmp(r->binary, k->binary) || strcmp(r->version, k->version) ||
		    strcmp(r->event, k->event))
			continue;
		if (strcmp(r->unit, k->unit)) {
			seterr(s, "series %s/%s/%s has unit \"%s\", not \"%s\"", k->binary,
			       k->version, k->event, r->unit, k->unit);
			return -EINVAL;
		}
		*id = s->series_tab.slots[pos].id;
		return 0;
	}
	ret = series_grow(s);
	if (ret < 0)
		return ret;
	r = &s->series[s->nseries];
	memset(r, 0, sizeof(*r));
	r->binary = strdup(k->binary);
	r->version = strdup(k->version);
	r->event = strdup(k->event);
	r->unit = strdup(k->unit);
	if (!r->binary || !r->version || !r->event || !r->unit) {
		series_rec_clear(r);
		return -ENOMEM;
	}
	r->h = h;
	r->first_seen = INT64_MAX;
	r->last_seen = INT64_MIN;
	idtab_put(&s->series_tab, pos, s->nseries, h);
	*id = s->nseries++;
	return 0;
}

int store_batch_frame(struct store_batch *b, const struct store_frame *f, uint32_t *id)
{
	struct store *s = b->s;
	uint32_t h;
	size_t pos;
	int r;

	if (f->kind > STORE_FRAME_JIT || (!f->name && f->name_len) ||
	    (!f->module && f->module_len) || (!f->build_id && f->build_id_len) ||
	    (!f->file && f->file_len)) {
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

int store_batch_node(struct store_batch *b, uint32_t parent, uint32_t frame, uint32_t *id)
{
	struct store *s = b->s;
	uint32_t h;
	size_t pos;
	int r;

	if (parent >= s->nnodes || frame == 0 || frame >= s->nframes) {
		seterr(s, "node (%u, %u) refers to an unknown node or frame", parent, frame);
		return -EINVAL;
	}
	r = idtab_reserve(&s->node_tab);
	if (r < 0)
		return r;
	h = node_hash(parent, frame);
	for (pos = h & s->node_tab.mask; s->node_tab.slots[pos].id;
	     pos = (pos + 1) & s->node_tab.mask) {
		uint32_t n = s->node_tab.slots[pos].id;

		if (s->node_tab.slots[pos].h == h && s->node_parent[n] == parent &&
		    s->node_frame[n] == frame) {
			*id = n;
			return 0;
		}
	}
	r = node_append(s, parent, frame);
	if (r < 0)
		return r;
	idtab_put(&s->node_tab, pos, s->nnodes - 1, h);
	*id = s->nnodes - 1;
	return 0;
}

static struct series_delta *batch_delta(struct store_batch *b, uint32_t series)
{
	if (series >= b->ndelta) {
		uint32_t n = b->s->nseries > series ? b->s->nseries : series + 1;
		struct series_delta *d;

		if (n < 16)
			n = 16;
		d = realloc(b->delta, (size_t)n * sizeof(*d));
		if (!d)
			return NULL;
		memset(d + b->ndelta, 0, (size_t)(n - b->ndelta) * sizeof(*d));
		b->delta = d;
		b->ndelta = n;
	}
	return &b->delta[series];
}

/* floor(when / bucket_seconds) as an offset-binary u32, so that keys sort
 * by time even before 1970.  -ERANGE when it does not fit. */
static int bucket_of(const struct store *s, int64_t when, uint32_t *bucket)
{
	int64_t bs = s->bucket_seconds;
	int64_t idx = when / bs - (when % bs < 0);

	if (idx < INT32_MIN || idx > INT32_MAX)
		return -ERANGE;
	*bucket = (uint32_t)idx ^ 0x80000000u;
	return 0;
}

static int64_t bucket_start(const struct store *s, uint32_t bucket)
{
	return (int64_t)(int32_t)(bucket ^ 0x80000000u) * s->bucket_seconds;
}

/* A 64-bit finalizer (MurmurHash3's fmix64) folded to 32 bits: enough
 * mixing for linear probing over small integer keys. */
static uint32_t mix_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

static uint32_t count_hash(uint32_t group, uint32_t node)
{
	return mix_hash((uint64_t)group << 32 | node);
}

/* Finds or creates the group of (series, bucket). */
static int batch_group(struct store_batch *b, uint32_t series, uint32_t bucket, uint32_t *id)
{
	struct count_group *g;
	uint32_t h;
	size_t pos;
	int r;

	if (b->have_last) {
		g = &b->groups[b->last_group];
		if (g->series == series && g->bucket == bucket) {
			*id = b->last_group;
			return 0;
		}
	}
	r = idtab_reserve(&b->group_tab);
	if (r < 0)
		return r;
	h = mix_hash((uint64_t)series << 32 | bucket);
	for (pos = h & b->group_tab.mask; b->group_tab.slots[pos].id;
	     pos = (pos + 1) & b->group_tab.mask) {
		g = &b->groups[b->group_tab.slots[pos].id - 1];
		if (b->group_tab.slots[pos].h == h && g->series == series && g->bucket == bucket)
			goto found;
	}
	if (b->ngroups == b->groups_cap) {
		uint32_t cap = b->groups_cap ? b->groups_cap * 2 : 64;
		struct count_group *n;

		if (cap <= b->groups_cap || cap >= UINT32_MAX / 2)
			return -EOVERFLOW;
		n = realloc(b->groups, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->groups = n;
		b->groups_cap = cap;
	}
	g = &b->groups[b->ngroups++];
	g->series = series;
	g->bucket = bucket;
	g->n = 0;
	g->h = h;
	idtab_put(&b->group_tab, pos, b->ngroups, h);
found:
	b->last_group = (uint32_t)(g - b->groups);
	b->have_last = true;
	*id = b->last_group;
	return 0;
}

/* Sizes the count index for `want` entries (at most half full) and
 * indexes counts[0..ncounts) in it. */
static int count_index_build(struct store_batch *b, size_t want)
{
	size_t n = b->count_slots ? b->count_mask + 1 : 1024;
	uint32_t *ns;

	while (n < want * 2) {
		if (n > SIZE_MAX / 2 / sizeof(*ns))
			return -ENOMEM;
		n *= 2;
	}
	ns = calloc(n, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < b->ncounts; i++) {
		const struct count_ent *e = &b->counts[i];
		size_t pos = count_hash(e->group, e->node) & (n - 1);

		while (ns[pos])
			pos = (pos + 1) & (n - 1);
		ns[pos] = (uint32_t)i + 1;
	}
	free(b->count_slots);
	b->count_slots = ns;
	b->count_mask = n - 1;
	return 0;
}

/* Makes room in the count index for one more entry. */
static inline int count_index_reserve(struct store_batch *b)
{
	if (b->count_slots && (b->ncounts + 1) * 2 <= b->count_mask + 1)
		return 0;
	return count_index_build(b, b->ncounts + 1);
}

int store_batch_add(struct store_batch *b, uint32_t series, int64_t when, uint32_t node,
                    uint64_t samples, uint64_t weight)
{
	struct store *s = b->s;
	struct series_delta *d;
	struct count_ent *e;
	uint32_t bucket, group;
	size_t pos;
	int r;

	if (series == 0 || series >= s->nseries || node >= s->nnodes) {
		seterr(s, "count for an unknown series %u or node %u", series, node);
		return -EINVAL;
	}
	if (bucket_of(s, when, &bucket) < 0) {
		seterr(s, "time %lld is out of range", (long long)when);
		return -ERANGE;
	}
	d = batch_delta(b, series);
	if (!d)
		return -ENOMEM;
	if (b->count_tab_stale) {
		count_index_free(b);
		r = count_index_build(b, b->ncounts + 1);
		if (r < 0)
			return r;
		b->count_tab_stale = false;
	}
	r = batch_group(b, series, bucket, &group);
	if (r < 0)
		return r;
	r = count_index_reserve(b);
	if (r < 0)
		return r;
	for (pos = count_hash(group, node) & b->count_mask; b->count_slots[pos];
	     pos = (pos + 1) & b->count_mask) {
		e = &b->counts[b->count_slots[pos] - 1];
		if (e->group == group && e->node == node)
			goto found;
	}
	if (b->ncounts == b->counts_cap) {
		size_t cap = b->counts_cap ? b->counts_cap * 2 : 4096;
		struct count_ent *n;

		if (cap >= UINT32_MAX)
			return -EOVERFLOW;
		n = realloc(b->counts, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->counts = n;
		b->counts_cap = cap;
	}
	e = &b->counts[b->ncounts++];
	e->group = group;
	e->node = node;
	e->samples = 0;
	e->weight = 0;
	b->groups[group].n++;
	b->count_slots[pos] = (uint32_t)b->ncounts;
found:
	e->samples += samples;
	e->weight += weight;
	if (!d->touched) {
		d->touched = true;
		d->first_seen = when;
		d->last_seen = when;
	}
	if (when < d->first_seen)
		d->first_seen = when;
	if (when > d->last_seen)
		d->last_seen = when;
	d->samples += samples;
	d->weight += weight;
	return 0;
}

int store_batch_input_bytes(struct store_batch *b, uint32_t series, uint64_t bytes)
{
	struct series_delta *d;

	if (series == 0 || series >= b->s->nseries) {
		seterr(b->s, "input bytes for an unknown series %u", series);
		return -EINVAL;
	}
	d = batch_delta(b, series);
	if (!d)
		return -ENOMEM;
	d->input_bytes += bytes;
	return 0;
}

/* The series record as it will be after the batch. */
static struct series_rec series_after(const struct series_rec *r, const struct series_delta *d)
{
	struct series_rec n = *r;

	if (!d)
		return n;
	if (d->touched) {
		if (d->first_seen < n.first_seen)
			n.first_seen = d->first_seen;
		if (d->last_seen > n.last_seen)
			n.last_seen = d->last_seen;
	}
	n.samples += d->samples;
	n.weight += d->weight;
	n.input_bytes += d->input_bytes;
	return n;
}

/* Orders group ids by their key, (series, bucket). */
static int group_cmp(const void *a, const void *b, void *ctx)
{
	const struct count_group *g = ctx;
	const struct count_group *x = &g[*(const uint32_t *)a];
	const struct count_group *y = &g[*(const uint32_t *)b];

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return 0;
}

/* ---- sorting a group's entries --------------------------------------------
 * An introsort of u64 keys in place: qsort's calls through a comparison
 * function were 337M of the 1.3G instructions a 1.1 GB import's commit
 * took, for 876,630 entries. */

static void u64_swap(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

static void u64_insertion_sort(uint64_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t v = a[i];
		size_t j = i;

		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

static void u64_sift_down(uint64_t *a, size_t n, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (a[i] >= a[c])
			return;
		u64_swap(&a[i], &a[c]);
		i = c;
	}
}

static void u64_heap_sort(uint64_t *a, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		u64_sift_down(a, n, i);
	for (size_t i = n; i-- > 1;) {
		u64_swap(&a[0], &a[i]);
		u64_sift_down(a, i, 0);
	}
}

/* Quicksort with a median-of-three pivot moved to a[0] and Hoare's
 * partition (both sides are then non-empty); heapsort once `depth` runs
 * out, insertion sort for short ranges.  Recurses on the smaller side. */
static void u64_intro_sort(uint64_t *a, size_t n, unsigned depth)
{
	while (n > 16) {
		size_t m = n / 2, lo = 0, hi = n - 1, i, j;

		if (depth-- == 0) {
			u64_heap_sort(a, n);
			return;
		}
		if (a[lo] > a[m])
			u64_swap(&a[lo], &a[m]);
		if (a[m] > a[hi])
			u64_swap(&a[m], &a[hi]);
		if (a[lo] > a[m])
			u64_swap(&a[lo], &a[m]);
		u64_swap(&a[0], &a[m]); /* the median is the pivot, at a[0] */
		uint64_t pivot = a[0];

		i = 0;
		j = n;
		for (;;) {
			do
				j--;
			while (a[j] > pivot);
			while (a[i] < pivot)
				i++;
			if (i >= j)
				break;
			u64_swap(&a[i], &a[j]);
			i++;
		}
		/* a[0..j] <= pivot <= a[j+1..n), with 0 <= j < n - 1 */
		if (j + 1 < n - (j + 1)) {
			u64_intro_sort(a, j + 1, depth);
			a += j + 1;
			n -= j + 1;
		} else {
			u64_intro_sort(a + j + 1, n - (j + 1), depth);
			n = j + 1;
		}
	}
	u64_insertion_sort(a, n);
}

static void u64_sort(uint64_t *a, size_t n)
{
	u64_intro_sort(a, n, 2 * (64 - (unsigned)__builtin_clzll((unsigned long long)n | 1)));
}

/* Adds one merge operand per (series, bucket) to wb, keys in order (the
 * memtable inserts sorted keys fastest).  The count index is dropped first
 * to make room; store_batch_add rebuilds it if the batch is used again
 * without a successful commit. */
static int batch_write_counts(struct store_batch *b, rocksdb_writebatch_t *wb)
{
	struct store *s = b->s;
	struct buf buf = {0};
	uint32_t *order = NULL;
	uint64_t *sorted = NULL, *start = NULL;
	uint8_t key[8];
	int r = 0;

	count_index_free(b);
	b->count_tab_stale = true;
	if (!b->ncounts)
		return 0;
	order = malloc((size_t)b->ngroups * sizeof(*order));
	start = malloc((size_t)b->ngroups * sizeof(*start));
	/* Per entry: node << 32 | entry index, so that sorting a group's
	 * slice orders it by node. */
	sorted = malloc(b->ncounts * sizeof(*sorted));
	if (!order || !start || !sorted) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t g = 0; g < b->ngroups; g++)
		order[g] = g;
	qsort_r(order, b->ngroups, sizeof(*order), group_cmp, b->groups);
	/* start[g]: where group g's slice begins (in key order). */
	{
		uint64_t at = 0;

		for (uint32_t i = 0; i < b->ngroups; i++) {
			start[order[i]] = at;
			at += b->groups[order[i]].n;
		}
	}
	for (size_t i = 0; i < b->ncounts; i++) {
		const struct count_ent *e = &b->counts[i];

		sorted[start[e->group]++] = (uint64_t)e->node << 32 | i;
	}
	/* start[g] is now the end of g's slice. */
	for (uint32_t i = 0; i < b->ngroups; i++) {
		const struct count_group *g = &b->groups[order[i]];
		uint64_t end = start[order[i]], begin = end - g->n;
		uint32_t prev = 0;

		if (!g->n)
			continue;
		u64_sort(sorted + begin, g->n);
		buf.len = 0;
		r = buf_reserve(&buf, (size_t)g->n * COUNT_ENTRY_MAX);
		if (r < 0)
			goto out;
		for (uint64_t j = begin; j < end; j++) {
			const struct count_ent *e = &b->counts[(uint32_t)sorted[j]];

			buf.len += count_entry_put(buf.p + buf.len,
			                           j == begin ? e->node : e->node - prev,
			                           e->samples, e->weight);
			prev = e->node;
		}
		put_be32(key, g->series);
		put_be32(key + 4, g->bucket);
		rocksdb_writebatch_merge_cf(wb, s->cf[CF_COUNTS], (char *)key, sizeof(key),
		                            (char *)buf.p, buf.len);
	}
out:
	free(buf.p);
	free(sorted);
	free(start);
	free(order);
	return r;
}

static int batch_write(struct store_batch *b, rocksdb_writebatch_t *wb)
{
	struct store *s = b->s;
	struct buf buf = {0};
	uint8_t key[5];
	int r = 0;

	for (uint32_t id = b->frame_base; id < s->nframes; id++) {
		buf.len = 0;
		r = frame_encode(&buf, &s->frames[id], module_ref(s, id));
		if (r < 0)
			goto out;
		id_key(key, KEY_FRAME, id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	/* New nodes go in runs of up to NODE_RUN (see load_node_run), which
	 * spares RocksDB's per-record overhead and lets zstd see each column
	 * whole.  The parent is a distance back from the node: callees are
	 * usually created soon after their callers, so this is small. */
	for (uint32_t first = b->node_base, n; first < s->nnodes; first += n) {
		n = s->nnodes - first < NODE_RUN ? s->nnodes - first : NODE_RUN;
		buf.len = 0;
		r = buf_reserve(&buf, 10 + (size_t)n * 15);
		if (r < 0)
			goto out;
		buf_varint(&buf, n);
		for (uint32_t id = first; id < first + n; id++)
			buf_varint(&buf, id - s->node_parent[id]);
		int64_t prev = 0;
		for (uint32_t id = first; id < first + n; id++) {
			buf_varint(&buf, zigzag((int64_t)s->node_frame[id] - prev));
			prev = s->node_frame[id];
		}
		id_key(key, KEY_NODES, first);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	for (uint32_t id = 1; id < s->nseries; id++) {
		const struct series_delta *d = id < b->ndelta ? &b->delta[id] : NULL;
		struct series_rec n;

		if (id < b->series_base && (!d || (!d->touched && !d->input_bytes)))
			continue;
		n = series_after(&s->series[id], d);
		buf.len = 0;
		r = series_encode(&buf, &n);
		if (r < 0)
			goto out;
		id_key(key, KEY_SERIES, id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	r = batch_write_counts(b, wb);
out:
	free(buf.p);
	return r;
}

int store_batch_commit(struct store_batch *b)
{
	struct store *s = b->s;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	char *rerr = NULL;
	int r;

	if (!wb) {
		seterr(s, "%s: out of memory", s->dir);
		return -ENOMEM;
	}
	r = batch_write(b, wb);
	if (r < 0) {
		seterr(s, "%s: out of memory", s->dir);
		goto out_wb;
	}
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "commit");
		goto out_wb;
	}
	/* Committed: make the batch's ids permanent and start afresh. */
	for (uint32_t id = 1; id < s->nseries && id < b->ndelta; id++)
		s->series[id] = series_after(&s->series[id], &b->delta[id]);
	if (b->delta)
		memset(b->delta, 0, (size_t)b->ndelta * sizeof(*b->delta));
	batch_counts_reset(b);
	batch_mark(b);
	s->seq = rocksdb_get_latest_sequence_number(s->db);
out_wb:
	rocksdb_writebatch_destroy(wb);
	return r;
}

/* ---- reading ------------------------------------------------------------------- */

int store_refresh(struct store *s)
{
	char *rerr = NULL;
	uint64_t seq;
	int r;

	if (s->readonly && !s->db) {
		r = open_secondary(s);
		if (r < 0)
			return r;
	} else if (s->readonly) {
		rocksdb_try_catch_up_with_primary(s->db, &rerr);
		if (rerr)
			return rdb_fail(s, rerr, "catching up with the writer");
		/* RocksDB 7.8's secondary keeps entries it replayed from a WAL
		 * in its memtable after the writer has flushed that WAL, so a
		 * count would be merged twice (memtable + SST).  When the SST
		 * set changed, start a fresh secondary instead, which replays
		 * only the live WALs. */
		if (live_files_sig(s) != s->live_sig) {
			close_db(s);
			r = open_secondary(s);
			if (r < 0)
				return r;
		}
	}
	if (s->readonly) {
		r = load_new(s);
		if (r < 0)
			return r;
	}
	seq = rocksdb_get_latest_sequence_number(s->db);
	r = seq != s->seq;
	s->seq = seq;
	return r;
}

uint64_t store_sequence(const struct store *s)
{
	return s->seq;
}

static int series_cmp(const void *a, const void *b)
{
	const struct store_series *x = a, *y = b;
	int c = strcmp(x->binary, y->binary);

	if (!c)
		c = strcmp(x->version, y->version);
	if (!c)
		c = strcmp(x->event, y->event);
	return c;
}

void store_series_free(struct store_series *list, size_t n)
{
	if (!list)
		return;
	for (size_t i = 0; i < n; i++) {
		free(list[i].binary);
		free(list[i].version);
		free(list[i].event);
		free(list[i].unit);
	}
	free(list);
}

int store_series_list(struct store *s, struct store_series **out, size_t *n)
{
	rocksdb_iterator_t *it;
	struct store_series *list = NULL;
	size_t len = 0, cap = 0;
	char *rerr = NULL;
	int r = 0;

	*out = NULL;
	*n = 0;
	if (need_db(s) < 0)
		return -EIO;
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	if (!it)
		return -ENOMEM;
	for (rocksdb_iter_seek(it, (const char[]){KEY_SERIES}, 1); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);
		struct series_rec rec;
		struct store_series *e;

		if (klen && k[0] != KEY_SERIES)
			break;

		if (len == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct store_series *nl = realloc(list, nc * sizeof(*nl));

			if (!nl) {
				r = -ENOMEM;
				goto fail;
			}
			list = nl;
			cap = nc;
		}
		if (klen != 5) {
			r = -1;
		} else {
			r = series_decode(v, vlen, &rec);
		}
		if (r == -1) {
			seterr(s, "%s: store is damaged: a series record", s->dir);
			r = -EIO;
			goto fail;
		}
		if (r < 0)
			goto fail;
		if (!rec.samples) {
			/* Emptied by store_prune(): not a series any more. */
			series_rec_clear(&rec);
			continue;
		}
		e = &list[len++];
		e->id = get_be32(k + 1);
		e->binary = rec.binary;
		e->version = rec.version;
		e->event = rec.event;
		e->unit = rec.unit;
		e->first_seen = rec.samples ? rec.first_seen : 0;
		e->last_seen = rec.samples ? rec.last_seen : 0;
		e->samples = rec.samples;
		e->weight = rec.weight;
		e->input_bytes = rec.input_bytes;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "listing series");
		goto fail;
	}
	rocksdb_iter_destroy(it);
	if (len)
		qsort(list, len, sizeof(*list), series_cmp);
	*out = list;
	*n = len;
	return 0;
fail:
	rocksdb_iter_destroy(it);
	store_series_free(list, len);
	return r;
}

uint32_t store_node_count(const struct store *s)
{
	return s->nnodes;
}

int store_node_get(const struct store *s, uint32_t node, uint32_t *parent, uint32_t *frame)
{
	if (node >= s->nnodes)
		return -ENOENT;
	*parent = s->node_parent[node];
	*frame = s->node_frame[node];
	return 0;
}

uint32_t store_frame_count(const struct store *s)
{
	return s->nframes;
}

int store_frame_get(const struct store *s, uint32_t frame, struct store_frame *f)
{
	if (frame == 0 || frame >= s->nframes)
		return -ENOENT;
	*f = s->frames[frame];
	return 0;
}

/* Bucket index of `t`, clamped to the range keys can hold. */
static uint32_t bucket_clamped(const struct store *s, int64_t t)
{
	int64_t bs = s->bucket_seconds;
	int64_t idx = t / bs - (t % bs < 0);

	if (idx < INT32_MIN)
		idx = INT32_MIN;
	if (idx > INT32_MAX)
		idx = INT32_MAX;
	return (uint32_t)idx ^ 0x80000000u;
}

int store_series_counts(struct store *s, uint32_t series, int64_t from, int64_t to,
                        store_count_fn fn, void *ctx)
{
	rocksdb_iterator_t *it;
	uint8_t start[8];
	uint32_t lo, hi;
	char *rerr = NULL;
	int r = 0;

	if (from > to)
		return 0;
	if (need_db(s) < 0)
		return -EIO;
	lo = bucket_clamped(s, from);
	hi = bucket_clamped(s, to);
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_COUNTS]);
	if (!it)
		return -ENOMEM;
	put_be32(start, series);
	put_be32(start + 4, lo);
	for (rocksdb_iter_seek(it, (const char *)start, sizeof(start)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);
		struct count_cursor c;
		uint32_t bucket;
		int64_t bstart;
		int got;

		if (klen >= 4 && get_be32(k) != series)
			break;
		if (klen != 8) {
			seterr(s, "%s: store is damaged: a counts key of series %u", s->dir,
			       series);
			r = -EIO;
			goto out;
		}
		bucket = get_be32(k + 4);
		if (bucket > hi)
			break;
		bstart = bucket_start(s, bucket);
		cursor_init(&c, v, vlen);
		while ((got = cursor_next(&c)) > 0) {
			r = fn(ctx, bstart, c.node, c.samples, c.weight);
			if (r)
				goto out;
		}
		if (got < 0) {
			seterr(s, "%s: store is damaged: the counts of series %u at %lld", s->dir,
			       series, (long long)bstart);
			r = -EIO;
			goto out;
		}
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "reading counts");
out:
	rocksdb_iter_destroy(it);
	return r;
}

/* ---- footprint ------------------------------------------------------------------ */

/* Adds st_blocks * 512 of everything under the directory fd, like du. */
static int du_fd(int dfd, uint64_t *total)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	struct stat st;
	int r = 0;

	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	if (fstat(dirfd(d), &st) == 0)
		*total += (uint64_t)st.st_blocks * 512;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile (compaction) */
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (sub >= 0)
				du_fd(sub, total);
			continue;
		}
		*total += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return r;
}

/* RocksDB's estimate of the SST bytes of one key prefix of the default
 * column family. */
/* The uncompressed bytes (keys and values) of the default column family's
 * frames, nodes and other records, by one scan. */
static int raw_bytes(struct store *s, uint64_t *frames, uint64_t *nodes, uint64_t *other)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	char *rerr = NULL;

	*frames = *nodes = *other = 0;
	if (!it) {
		seterr(s, "%s: out of memory", s->dir);
		return -ENOMEM;
	}
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		(void)rocksdb_iter_value(it, &vlen);
		bool node = klen && (k[0] == KEY_NODE || k[0] == KEY_NODES);
		uint64_t *to = klen && k[0] == KEY_FRAME ? frames : node ? nodes : other;
		*to += klen + vlen;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return rdb_fail(s, rerr, "scan");
	return 0;
}

/* The compressed bytes of the column family's data blocks (its SST files
 * without their index, filter and properties blocks), from RocksDB's
 * aggregated table properties; 0 when they are not reported. */
static uint64_t data_block_bytes(struct store *s, int cf)
{
	static const char field[] = "; data block size=";
	char *props =
	        rocksdb_property_value_cf(s->db, s->cf[cf], "rocksdb.aggregated-table-properties");
	uint64_t v = 0;

	if (props) {
		const char *at = strstr(props, field);
		if (at)
			v = strtoull(at + sizeof(field) - 1, NULL, 10);
		rocksdb_free(props);
	}
	return v;
}

/* part of total in proportion part_raw / all_raw, without overflow */
static uint64_t share(uint64_t total, uint64_t part_raw, uint64_t all_raw)
{
	return all_raw ? (uint64_t)((long double)total * part_raw / all_raw) : 0;
}

int store_footprint(struct store *s, struct store_footprint *out)
{
	uint64_t total = 0;
	int fd, r;

	memset(out, 0, sizeof(*out));
	if (need_db(s) < 0)
		return -EIO;
	fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		seterr(s, "%s: %s", s->dir, strerror(errno));
		return r;
	}
	r = du_fd(fd, &out->dir_bytes);
	if (r < 0) {
		seterr(s, "%s: %s", s->dir, strerror(-r));
		return r;
	}
	if (rocksdb_property_int_cf(s->db, s->cf[CF_COUNTS], "rocksdb.total-sst-files-size",
	                            &out->counts_bytes) != 0)
		out->counts_bytes = 0;
	if (rocksdb_property_int_cf(s->db, s->cf[CF_DEFAULT], "rocksdb.total-sst-files-size",
	                            &total) != 0)
		total = 0;
	/* Frames, nodes, series and meta share the default column family,
	 * whose data blocks (256 KiB) hold several kinds at once: frames and
	 * nodes get the data blocks' bytes in proportion to their
	 * uncompressed bytes (an estimate; their sum is within the series
	 * records' share of exact).  The rest of the SST bytes, with the
	 * files' index and properties blocks, is "other". */
	uint64_t rf, rn, ro, data = data_block_bytes(s, CF_DEFAULT);
	r = raw_bytes(s, &rf, &rn, &ro);
	if (r < 0)
		return r;
	if (data == 0 || data > total)
		data = total;
	out->frames_bytes = share(data, rf, rf + rn + ro);
	out->nodes_bytes = share(data, rn, rf + rn + ro);
	out->other_bytes = total - out->frames_bytes - out->nodes_bytes;
	return 0;
}

int store_series_disk_bytes(struct store *s, uint32_t series, uint64_t *bytes)
{
	uint8_t start[4], limit[8];
	const char *starts[1] = {(const char *)start};
	const char *limits[1] = {(const char *)limit};
	size_t slen[1] = {4}, llen[1];
	char *rerr = NULL;

	if (need_db(s) < 0)
		return -EIO;
	put_be32(start, series);
	if (series == UINT32_MAX) {
		memset(limit, 0xff, sizeof(limit));
		llen[0] = 8;
	} else {
		put_be32(limit, series + 1);
		llen[0] = 4;
	}
	*bytes = 0;
	rocksdb_approximate_sizes_cf(s->db, s->cf[CF_COUNTS], 1, starts, slen, limits, llen, bytes,
	                             &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "approximate sizes");
	return 0;
}

int store_compact(struct store *s)
{
	rocksdb_flushoptions_t *fo;
	rocksdb_compactoptions_t *co;
	char *rerr = NULL;
	int r = 0;

	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return -EROFS;
	}
	fo = rocksdb_flushoptions_create();
	co = rocksdb_compactoptions_create();
	if (!fo || !co) {
		r = -ENOMEM;
		seterr(s, "%s: out of memory", s->dir);
		goto out;
	}
	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_compactoptions_set_bottommost_level_compaction(co, ROCKS_BOTTOMMOST_FORCE);
	rocksdb_compactoptions_set_exclusive_manual_compaction(co, 1);
	for (int i = 0; i < CF_COUNT_ALL; i++) {
		rocksdb_flush_cf(s->db, fo, s->cf[i], &rerr);
		if (rerr) {
			r = rdb_fail(s, rerr, "flush");
			goto out;
		}
	}
	for (int i = 0; i < CF_COUNT_ALL; i++)
		rocksdb_compact_range_cf_opt(s->db, s->cf[i], co, NULL, 0, NULL, 0);
	s->seq = rocksdb_get_latest_sequence_number(s->db);
out:
	if (fo)
		rocksdb_flushoptions_destroy(fo);
	if (co)
		rocksdb_compactoptions_destroy(co);
	return r;
}

/* ---- retention ------------------------------------------------------------------ */

/* Sums one counts value into *samples and *weight (saturating).  Returns
 * 0, or -1 for a damaged value. */
static int counts_sum(const void *v, size_t len, uint64_t *samples, uint64_t *weight)
{
	struct count_cursor c;
	int got;

	cursor_init(&c, v, len);
	while ((got = cursor_next(&c)) > 0) {
		*samples = c.samples > UINT64_MAX - *samples ? UINT64_MAX : *samples + c.samples;
		*weight = c.weight > UINT64_MAX - *weight ? UINT64_MAX : *weight + c.weight;
	}
	return got < 0 ? -1 : 0;
}

static bool prune_selects(const struct series_rec *r, const struct store_prune_opts *o,
                          struct store_prune_stats *st)
{
	if (!r->binary || !r->samples)
		return false;
	if (o->binary && strcmp(o->binary, r->binary) != 0)
		return false;
	if (o->version && strcmp(o->version, r->version) != 0)
		return false;
	if (o->wall_clock_only && r->last_seen < STORE_WALL_CLOCK_MIN) {
		st->other_clock++;
		return false;
	}
	return true;
}

/* Deletes the buckets of series `id` below `cut` into wb and works out
 * the series record after that into *after.  Returns 1 when something
 * is deleted, 0 when nothing is, or -EIO. */
static int prune_series(struct store *s, rocksdb_writebatch_t *wb, rocksdb_iterator_t *it,
                        uint32_t id, uint32_t cut, struct series_rec *after,
                        struct store_prune_stats *st)
{
	uint64_t samples = 0, weight = 0, buckets = 0;
	uint8_t key[8];
	char *rerr = NULL;

	put_be32(key, id);
	put_be32(key + 4, 0);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);

		if (klen != 8 || get_be32(k) != id || get_be32(k + 4) >= cut)
			break;
		if (counts_sum(v, vlen, &samples, &weight) < 0) {
			seterr(s, "%s: store is damaged: the counts of series %u at %lld", s->dir,
			       id, (long long)bucket_start(s, get_be32(k + 4)));
			return -EIO;
		}
		rocksdb_writebatch_delete_cf(wb, s->cf[CF_COUNTS], (const char *)k, klen);
		buckets++;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "reading counts");
	if (!buckets)
		return 0;

	/* The first bucket kept, if any, is where the series now starts. */
	*after = s->series[id];
	put_be32(key + 4, cut);
	rocksdb_iter_seek(it, (const char *)key, sizeof(key));
	size_t klen = 0;
	const uint8_t *k =
	        rocksdb_iter_valid(it) ? (const uint8_t *)rocksdb_iter_key(it, &klen) : NULL;
	if (k && klen == 8 && get_be32(k) == id && samples < after->samples) {
		after->samples -= samples;
		after->weight -= weight < after->weight ? weight : after->weight;
		int64_t first = bucket_start(s, get_be32(k + 4));
		if (first > after->first_seen)
			after->first_seen = first;
	} else {
		after->samples = 0;
		after->weight = 0;
		after->first_seen = INT64_MAX;
		after->last_seen = INT64_MIN;
		st->series_emptied++;
	}
	st->buckets += buckets;
	st->samples += samples;
	st->weight += weight;
	st->series++;
	return 1;
}

int store_prune(struct store *s, const struct store_prune_opts *o, struct store_prune_stats *st)
{
	rocksdb_writebatch_t *wb = NULL;
	rocksdb_iterator_t *it = NULL;
	struct series_rec *after = NULL;
	bool *changed = NULL;
	struct buf buf = {0};
	char *rerr = NULL;
	int r = 0;

	memset(st, 0, sizeof(*st));
	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return -EROFS;
	}
	if (s->batch) {
		seterr(s, "%s: cannot prune while a batch is open", s->dir);
		return -EBUSY;
	}
	/* Only whole buckets go: one that straddles `before` stays. */
	uint32_t cut = bucket_clamped(s, o->before);
	wb = rocksdb_writebatch_create();
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_COUNTS]);
	after = calloc(s->nseries ? s->nseries : 1, sizeof(*after));
	changed = calloc(s->nseries ? s->nseries : 1, sizeof(*changed));
	if (!wb || !it || !after || !changed) {
		seterr(s, "%s: out of memory", s->dir);
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t id = 1; id < s->nseries; id++) {
		if (!prune_selects(&s->series[id], o, st))
			continue;
		r = prune_series(s, wb, it, id, cut, &after[id], st);
		if (r < 0)
			goto out;
		if (r == 0)
			continue;
		changed[id] = true;
		uint8_t key[5];
		buf.len = 0;
		r = series_encode(&buf, &after[id]);
		if (r < 0) {
			seterr(s, "%s: out of memory", s->dir);
			goto out;
		}
		id_key(key, KEY_SERIES, id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	r = 0;
	if (!st->buckets)
		goto out;
	if (o->dry_run)
		goto out;
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "prune");
		goto out;
	}
	/* Written: the in-memory records follow (their strings stay). */
	for (uint32_t id = 1; id < s->nseries; id++)
		if (changed[id])
			s->series[id] = after[id];
	s->seq = rocksdb_get_latest_sequence_number(s->db);
out:
	free(buf.p);
	free(changed);
	free(after);
	if (it)
		rocksdb_iter_destroy(it);
	if (wb)
		rocksdb_writebatch_destroy(wb);
	return r;
}

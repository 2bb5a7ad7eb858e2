/*
 * hashing.c — frames and tree nodes in memory: their content hashes
 * (XXH3-128 of a frame's fields with their lengths; of a node's parent
 * hash and frame hash), the arrays indexed by database id, the writer's
 * tables from hash to id, and loading the runs (frame_runs, node_runs)
 * past what is in memory, with binary results, computing the hashes.
 */
#include "central-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- content hashes ---------------------------------------------------- */

static void put_le64(XXH3_state_t *st, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	XXH3_128bits_update(st, b, sizeof(b));
}

static void put_field(XXH3_state_t *st, const void *p, size_t len)
{
	put_le64(st, len);
	if (len)
		XXH3_128bits_update(st, p, len);
}

/* For tests only: $FLAMEFS_TEST_HASH_BITS=N keeps the first N bits of
 * every hash (1..127), so that collisions happen and their refusal can
 * be tested.  Unset, hashes are whole. */
static unsigned hash_bits(void)
{
	static int bits = -1;

	if (bits < 0) {
		const char *e = getenv("FLAMEFS_TEST_HASH_BITS");
		int v = e && *e ? atoi(e) : 128;

		bits = v >= 1 && v < 128 ? v : 128;
	}
	return (unsigned)bits;
}

static void canonical(XXH128_hash_t v, struct hash128 *h)
{
	XXH128_canonical_t c;
	unsigned bits = hash_bits();

	XXH128_canonicalFromHash(&c, v);
	memcpy(h->b, c.digest, 16);
	for (unsigned i = 0; i < 16 && bits < 128; i++) {
		unsigned keep = bits > 8 * i ? bits - 8 * i : 0;

		if (keep < 8)
			h->b[i] &= (uint8_t)(0xff00u >> keep);
	}
}

/* kind (1 byte), line (4 bytes LE), then name, module, build id and file,
 * each as an 8-byte LE length and its bytes, then (only when it is not 0)
 * the offset, 8 bytes LE: no two different frames serialize alike. */
void central_frame_hash(const struct store_frame *f, struct hash128 *h)
{
	XXH3_state_t st;
	uint8_t head[5] = {f->kind, (uint8_t)f->line, (uint8_t)(f->line >> 8),
	                   (uint8_t)(f->line >> 16), (uint8_t)(f->line >> 24)};

	XXH3_128bits_reset(&st);
	XXH3_128bits_update(&st, head, sizeof(head));
	put_field(&st, f->name, f->name ? f->name_len : 0);
	put_field(&st, f->module, f->module ? f->module_len : 0);
	put_field(&st, f->build_id, f->build_id ? f->build_id_len : 0);
	put_field(&st, f->file, f->file ? f->file_len : 0);
	if (f->offset)
		put_le64(&st, f->offset);
	canonical(XXH3_128bits_digest(&st), h);
}

void central_node_hash(const struct hash128 *parent, const struct hash128 *frame, struct hash128 *h)
{
	uint8_t b[32];

	memcpy(b, parent->b, 16);
	memcpy(b + 16, frame->b, 16);
	canonical(XXH3_128bits(b, sizeof(b)), h);
}

uint64_t central_hash64(const struct hash128 *h)
{
	uint64_t v = 0;

	for (int i = 8; i < 16; i++)
		v = v << 8 | h->b[i];
	return v;
}

void central_hex(const struct hash128 *h, char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", h->b[i]);
}

static bool bytes_eq(const void *a, size_t al, const void *b, size_t bl)
{
	if (!a)
		al = 0;
	if (!b)
		bl = 0;
	return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

bool central_frame_equal(const struct store_frame *a, const struct store_frame *b)
{
	return a->kind == b->kind && a->line == b->line && a->offset == b->offset &&
	       bytes_eq(a->name, a->name_len, b->name, b->name_len) &&
	       bytes_eq(a->module, a->module_len, b->module, b->module_len) &&
	       bytes_eq(a->build_id, a->build_id_len, b->build_id, b->build_id_len) &&
	       bytes_eq(a->file, a->file_len, b->file, b->file_len);
}

/* ---- tables -------------------------------------------------------------- */

bool htab_full(const struct htab *t)
{
	return !t->slots || (t->count + 1) * 2 > t->mask + 1;
}

void htab_free(struct htab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->count = 0;
}

/* Rebuilds a table of `n` ids, doubling it; key(ctx, id) gives an id's
 * 64-bit key. */
int htab_rebuild(struct htab *t, uint32_t n, uint64_t (*key)(const struct pg *, uint32_t),
                 const struct pg *s)
{
	size_t size = t->slots ? (t->mask + 1) * 2 : 1024;
	uint32_t *slots;

	while (size < (size_t)n * 2 + 2)
		size *= 2;
	slots = calloc(size, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	free(t->slots);
	t->slots = slots;
	t->mask = size - 1;
	t->count = 0;
	for (uint32_t id = 0; id < n; id++) {
		size_t pos = key(s, id) & t->mask;

		while (t->slots[pos])
			pos = (pos + 1) & t->mask;
		t->slots[pos] = id + 1;
		t->count++;
	}
	return 0;
}

static uint64_t frame_key(const struct pg *s, uint32_t id)
{
	return central_hash64(&s->fhash[id]);
}

static uint64_t node_key(const struct pg *s, uint32_t id)
{
	return central_hash64(&s->nhash[id]);
}

void htab_add(struct htab *t, uint64_t key, uint32_t id)
{
	size_t pos = key & t->mask;

	while (t->slots[pos])
		pos = (pos + 1) & t->mask;
	t->slots[pos] = id + 1;
	t->count++;
}

uint32_t central_frame_find(const struct pg *s, const struct hash128 *h)
{
	const struct htab *t = &s->frame_tab;

	if (!t->slots)
		return UINT32_MAX;
	for (size_t pos = central_hash64(h) & t->mask; t->slots[pos]; pos = (pos + 1) & t->mask)
		if (!memcmp(s->fhash[t->slots[pos] - 1].b, h->b, 16))
			return t->slots[pos] - 1;
	return UINT32_MAX;
}

uint32_t central_node_find(const struct pg *s, const struct hash128 *h)
{
	const struct htab *t = &s->node_tab;

	if (!t->slots)
		return UINT32_MAX;
	for (size_t pos = central_hash64(h) & t->mask; t->slots[pos]; pos = (pos + 1) & t->mask)
		if (!memcmp(s->nhash[t->slots[pos] - 1].b, h->b, 16))
			return t->slots[pos] - 1;
	return UINT32_MAX;
}

/* ---- arrays -------------------------------------------------------------- */

static int grow(void **p, size_t elem, uint32_t cap)
{
	void *n = realloc(*p, (size_t)cap * elem);

	if (!n)
		return -ENOMEM;
	*p = n;
	return 0;
}

int central_frame_append(struct pg *s, const struct store_frame *f, const struct hash128 *h)
{
	size_t nl = f->name ? f->name_len : 0, ml = f->module ? f->module_len : 0;
	size_t bl = f->build_id ? f->build_id_len : 0, fl = f->file ? f->file_len : 0;
	struct store_frame *d;
	char *blob;
	uint32_t id = s->nframes;

	if (id == UINT32_MAX - 1)
		return -EOVERFLOW;
	if (id == s->frames_cap) {
		uint32_t cap = s->frames_cap ? s->frames_cap * 2 : 1024;

		if (grow((void **)&s->frames, sizeof(*s->frames), cap) < 0 ||
		    grow((void **)&s->blob, sizeof(*s->blob), cap) < 0 ||
		    (!s->readonly && grow((void **)&s->fhash, sizeof(*s->fhash), cap) < 0))
			return -ENOMEM;
		s->frames_cap = cap;
	}
	if (!s->readonly && htab_full(&s->frame_tab) &&
	    htab_rebuild(&s->frame_tab, id, frame_key, s) < 0)
		return -ENOMEM;
	blob = malloc(nl + ml + bl + fl + 4);
	if (!blob)
		return -ENOMEM;
	d = &s->frames[id];
	memset(d, 0, sizeof(*d));
	d->name = blob;
	memcpy(blob, f->name ? f->name : "", nl);
	blob[nl] = '\0';
	d->name_len = nl;
	d->module = blob + nl + 1;
	memcpy(blob + nl + 1, f->module ? f->module : "", ml);
	blob[nl + 1 + ml] = '\0';
	d->module_len = ml;
	d->file = blob + nl + ml + 2;
	memcpy(blob + nl + ml + 2, f->file ? f->file : "", fl);
	blob[nl + ml + 2 + fl] = '\0';
	d->file_len = fl;
	d->build_id = (const uint8_t *)blob + nl + ml + fl + 3;
	if (bl)
		memcpy(blob + nl + ml + fl + 3, f->build_id, bl);
	d->build_id_len = bl;
	d->line = f->line;
	d->kind = f->kind;
	d->offset = f->offset;
	s->blob[id] = blob;
	if (!s->readonly) {
		s->fhash[id] = *h;
		htab_add(&s->frame_tab, central_hash64(h), id);
	}
	s->nframes++;
	return 0;
}

int central_node_append(struct pg *s, uint32_t parent, uint32_t frame, const struct hash128 *h)
{
	uint32_t id = s->nnodes;

	if (id == UINT32_MAX - 1)
		return -EOVERFLOW;
	if (id == s->nodes_cap) {
		uint32_t cap = s->nodes_cap ? s->nodes_cap * 2 : 4096;

		if (grow((void **)&s->node_parent, sizeof(uint32_t), cap) < 0 ||
		    grow((void **)&s->node_frame, sizeof(uint32_t), cap) < 0 ||
		    (!s->readonly && grow((void **)&s->nhash, sizeof(*s->nhash), cap) < 0))
			return -ENOMEM;
		s->nodes_cap = cap;
	}
	if (!s->readonly && htab_full(&s->node_tab) &&
	    htab_rebuild(&s->node_tab, id, node_key, s) < 0)
		return -ENOMEM;
	s->node_parent[id] = parent;
	s->node_frame[id] = frame;
	if (!s->readonly) {
		s->nhash[id] = *h;
		htab_add(&s->node_tab, central_hash64(h), id);
	}
	s->nnodes++;
	return 0;
}

void central_truncate(struct pg *s, uint32_t frames, uint32_t nodes)
{
	bool rebuild = false;

	while (s->nnodes > nodes) {
		s->nnodes--;
		rebuild = true;
	}
	while (s->nframes > frames) {
		s->nframes--;
		free(s->blob[s->nframes]);
		rebuild = true;
	}
	/* Dropping from an open-addressing table means re-inserting what
	 * follows; a batch's entries are dropped all at once, so the tables
	 * are rebuilt instead, once. */
	if (rebuild && !s->readonly) {
		htab_free(&s->frame_tab);
		htab_free(&s->node_tab);
		if (htab_rebuild(&s->frame_tab, s->nframes, frame_key, s) < 0 ||
		    htab_rebuild(&s->node_tab, s->nnodes, node_key, s) < 0) {
			/* Without memory for the tables, lookups find nothing;
			 * the next append rebuilds them. */
			htab_free(&s->frame_tab);
			htab_free(&s->node_tab);
		}
	}
}

void central_intern_free(struct pg *s)
{
	for (uint32_t i = 0; i < s->nframes; i++)
		free(s->blob[i]);
	free(s->blob);
	free(s->frames);
	free(s->fhash);
	free(s->node_parent);
	free(s->node_frame);
	free(s->nhash);
	htab_free(&s->frame_tab);
	htab_free(&s->node_tab);
	central_names_free(s);
}

/* ---- loading ---------------------------------------------------------------- */

/* Runs per SELECT when loading (of up to CENTRAL_RUN each): bounds
 * libpq's result in memory. */
#define LOAD_RUNS 64

static int damaged(struct pg *s, const char *what, uint32_t id)
{
	central_seterr(s, "%s: store is damaged: %s %u", s->base.where, what, id);
	return -EIO;
}

/* A binary one-dimensional array without NULLs: its element count, and
 * a cursor at its first element; -1 when malformed. */
struct arr {
	const char *p, *end;
};

static long arr_open(const PGresult *res, int row, int col, struct arr *a)
{
	const char *p = PQgetvalue(res, row, col);
	int len = PQgetlength(res, row, col);

	if (PQgetisnull(res, row, col) || PQfformat(res, col) != 1 || len < 12 || be32(p + 4) != 0)
		return -1;
	a->end = p + len;
	if (be32(p) == 0) {
		a->p = p + 12;
		return 0;
	}
	if (be32(p) != 1 || len < 20 || be32(p + 16) != 1)
		return -1;
	a->p = p + 20;
	return (long)be32(p + 12);
}

/* The next element: its bytes and length; -1 past the end. */
static int arr_next(struct arr *a, const char **v, size_t *len)
{
	uint32_t n;

	if (a->end - a->p < 4)
		return -1;
	n = be32(a->p);
	if (n > (uint32_t)(a->end - a->p - 4))
		return -1;
	*v = a->p + 4;
	*len = n;
	a->p += 4 + n;
	return 0;
}

static int arr_u32(struct arr *a, uint32_t *v)
{
	const char *p;
	size_t len;

	if (arr_next(a, &p, &len) < 0 || len != 4)
		return -1;
	*v = be32(p);
	return 0;
}

/* One run of frames: row `row` of res (its offsets NULL: all 0). */
static int frame_run(struct pg *s, const PGresult *res, int row)
{
	struct arr a[7];
	long n = arr_open(res, row, 1, &a[0]);
	const char *first = central_value_bin(s, res, row, 0, 4, "a frame run's first id");
	bool offsets = false;

	if (!first)
		return -EIO;
	if (PQnfields(res) != 8 || be32(first) != s->nframes || n <= 0)
		return damaged(s, "frame", s->nframes);
	for (int c = 1; c < 6; c++)
		if (arr_open(res, row, c + 1, &a[c]) != n)
			return damaged(s, "frame", s->nframes);
	if (!PQgetisnull(res, row, 7)) {
		if (arr_open(res, row, 7, &a[6]) != n)
			return damaged(s, "frame", s->nframes);
		offsets = true;
	}
	for (long i = 0; i < n; i++) {
		struct store_frame f = {0};
		struct hash128 h = {{0}};
		const char *v;
		size_t len;
		uint32_t line;

		if (arr_next(&a[0], &v, &len) < 0 || len != 2 || arr_u32(&a[1], &line) < 0)
			return damaged(s, "frame", s->nframes);
		f.kind = (uint8_t)v[1];
		f.line = line;
		if (arr_next(&a[2], &f.name, &f.name_len) < 0 ||
		    arr_next(&a[3], &f.module, &f.module_len) < 0 ||
		    arr_next(&a[4], (const char **)&f.build_id, &f.build_id_len) < 0 ||
		    arr_next(&a[5], &f.file, &f.file_len) < 0)
			return damaged(s, "frame", s->nframes);
		if (offsets) {
			if (arr_next(&a[6], &v, &len) < 0 || len != 8)
				return damaged(s, "frame", s->nframes);
			f.offset = (uint64_t)be32(v) << 32 | be32(v + 4);
			if (f.offset && f.kind != STORE_FRAME_UNKNOWN)
				return damaged(s, "frame", s->nframes);
		}
		/* Frame 0, "no frame", has the hash of 16 zero bytes. */
		if (!s->readonly && s->nframes > 0)
			central_frame_hash(&f, &h);
		if (central_frame_append(s, &f, &h) < 0) {
			central_seterr(s, "%s: out of memory", s->base.where);
			return -ENOMEM;
		}
	}
	return 0;
}

static int node_run(struct pg *s, const PGresult *res, int row)
{
	struct arr ap, af;
	long n = arr_open(res, row, 1, &ap);
	const char *first = central_value_bin(s, res, row, 0, 4, "a node run's first id");

	if (!first)
		return -EIO;
	if (PQnfields(res) != 3 || be32(first) != s->nnodes || n <= 0 ||
	    arr_open(res, row, 2, &af) != n)
		return damaged(s, "node", s->nnodes);
	for (long i = 0; i < n; i++) {
		struct hash128 h = {{0}};
		uint32_t id = s->nnodes, parent, frame;

		if (arr_u32(&ap, &parent) < 0 || arr_u32(&af, &frame) < 0)
			return damaged(s, "node", id);
		/* The root is its own parent; every other node's parent was
		 * committed before it. */
		if ((id && (parent >= id || frame == 0)) || frame >= s->nframes)
			return damaged(s, "node", id);
		if (!s->readonly && id > 0)
			central_node_hash(&s->nhash[parent], &s->fhash[frame], &h);
		if (central_node_append(s, parent, frame, &h) < 0) {
			central_seterr(s, "%s: out of memory", s->base.where);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Loads the runs `sql` selects from id `*have` on, LOAD_RUNS at a time. */
static int load_runs(struct pg *s, const char *what, const char *sql, const uint32_t *have,
                     int (*run)(struct pg *s, const PGresult *res, int row))
{
	for (;;) {
		char from[16];
		const char *vals[1] = {from};
		PGresult *res;
		int n, r;

		snprintf(from, sizeof(from), "%u", *have);
		r = central_exec(s, what, sql, 1, vals, true, &res);
		if (r < 0)
			return r;
		n = PQntuples(res);
		for (int i = 0; i < n && r == 0; i++)
			r = run(s, res, i);
		PQclear(res);
		if (r < 0)
			return r;
		if (n < LOAD_RUNS)
			return 0;
	}
}

int central_load_new(struct pg *s)
{
	int r = load_runs(s, "loading frames",
	                  s->schema >= 6
	                          ? "SELECT r.first, kinds, lines, names, modules, build_ids,"
	                            " files, o.offsets FROM frame_runs r LEFT JOIN"
	                            " frame_offsets o ON o.first = r.first"
	                            " WHERE r.first >= $1 ORDER BY r.first LIMIT 64"
	                          : "SELECT first, kinds, lines, names, modules, build_ids,"
	                            " files, NULL::int8[] FROM frame_runs WHERE first >= $1"
	                            " ORDER BY first LIMIT 64",
	                  &s->nframes, frame_run);

	if (r == 0)
		r = load_runs(s, "loading nodes",
		              "SELECT first, parents, frames FROM node_runs WHERE first >= $1"
		              " ORDER BY first LIMIT 64",
		              &s->nnodes, node_run);
	if (r == 0)
		r = central_load_names(s);
	return r;
}

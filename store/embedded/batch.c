/*
 * batch.c — batches: counts aggregated per (series, bucket, node) in
 * memory, and one atomic, synced WriteBatch at commit.  Freeing an
 * uncommitted batch forgets every id it handed out.
 */
#include "embedded-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- batches ------------------------------------------------------------------- */

static void batch_mark(struct rdb_batch *b)
{
	b->frame_base = b->s->nframes;
	b->node_base = b->s->nnodes;
	b->series_base = b->s->nseries;
	b->mark = arena_mark(&b->s->arena);
}

struct store_batch *rdb_batch_new(struct store *sbase)
{
	struct rdb *s = rdb_of(sbase);
	struct rdb_batch *b;

	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return NULL;
	}
	if (s->batch) {
		seterr(s, "%s: a batch is already open", s->dir);
		return NULL;
	}
	if (schema_upgrade(s) < 0)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b) {
		seterr(s, "%s: out of memory", s->dir);
		return NULL;
	}
	b->base.store = &s->base;
	b->s = s;
	batch_mark(b);
	s->batch = b;
	return &b->base;
}

/* Forgets every frame, node and series the batch created. */
static void batch_rollback(struct rdb_batch *b)
{
	struct rdb *s = b->s;

	while (s->nnodes > b->node_base) {
		uint32_t id = --s->nnodes;

		node_unindex(s, id);
	}
	while (s->nframes > b->frame_base) {
		uint32_t id = --s->nframes;

		idtab_remove(&s->frame_tab, id, frame_hash(&s->frames[id]));
	}
	arena_release(&s->arena, b->mark);
	while (s->nseries > b->series_base) {
		series_unindex(s, --s->nseries);
	}
}

static void count_index_free(struct rdb_batch *b)
{
	free(b->count_slots);
	b->count_slots = NULL;
	b->count_mask = 0;
}

/* Frees every count the batch holds, with their indexes. */
static void batch_counts_reset(struct rdb_batch *b)
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

void rdb_batch_free(struct store_batch *bbase)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	if (!b)
		return;
	batch_rollback(b);
	renames_reset(b);
	free(b->renames);
	b->s->batch = NULL;
	batch_counts_reset(b);
	detail_reset(b);
	free(b->delta);
	free(b);
}

static struct series_delta *batch_delta(struct rdb_batch *b, uint32_t series)
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
static int batch_group(struct rdb_batch *b, uint32_t series, uint32_t bucket, uint32_t *id)
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
static int count_index_build(struct rdb_batch *b, size_t want)
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
static inline int count_index_reserve(struct rdb_batch *b)
{
	if (b->count_slots && (b->ncounts + 1) * 2 <= b->count_mask + 1)
		return 0;
	return count_index_build(b, b->ncounts + 1);
}

int batch_count(struct rdb_batch *b, uint32_t series, int64_t when, int64_t when_us, bool exact,
                uint32_t node, uint64_t samples, uint64_t weight, uint32_t *groupp)
{
	struct rdb *s = b->s;
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
	/* No sum wraps: a count that would take its entry or its series past
	 * 2^64 - 1 is refused and changes nothing. */
	if (samples > UINT64_MAX - e->samples || weight > UINT64_MAX - e->weight ||
	    samples > UINT64_MAX - d->samples || weight > UINT64_MAX - d->weight) {
		seterr(s, "series %u: its counts would add up to more than 2^64 - 1", series);
		return -EOVERFLOW;
	}
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
	if (exact) {
		if (!d->has_exact_us || when_us < d->exact_first_us)
			d->exact_first_us = when_us;
		if (!d->has_exact_us || when_us > d->exact_last_us)
			d->exact_last_us = when_us;
		d->has_exact_us = true;
	} else {
		if (!d->has_add_us || when_us < d->add_first_us)
			d->add_first_us = when_us;
		if (!d->has_add_us || when_us > d->add_last_us)
			d->add_last_us = when_us;
		d->has_add_us = true;
	}
	d->samples += samples;
	d->weight += weight;
	if (groupp)
		*groupp = group;
	return 0;
}

int rdb_batch_add(struct store_batch *bbase, uint32_t series, int64_t when, uint32_t node,
                  uint64_t samples, uint64_t weight)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	int64_t us = when >= INT64_MAX / 1000000   ? INT64_MAX
	             : when <= INT64_MIN / 1000000 ? INT64_MIN
	                                           : when * 1000000;

	return batch_count(b, series, when, us, false, node, samples, weight, NULL);
}

int rdb_batch_input_bytes(struct store_batch *bbase, uint32_t series, uint64_t bytes)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct series_delta *d;

	if (series == 0 || series >= b->s->nseries) {
		seterr(b->s, "input bytes for an unknown series %u", series);
		return -EINVAL;
	}
	d = batch_delta(b, series);
	if (!d)
		return -ENOMEM;
	if (bytes > UINT64_MAX - d->input_bytes) {
		seterr(b->s, "series %u: its input bytes would add up to more than 2^64 - 1",
		       series);
		return -EOVERFLOW;
	}
	d->input_bytes += bytes;
	return 0;
}

/* The batch's first and last moment of a series in microseconds: the
 * exact moments of samples, and the `when`s of counts, except that in a
 * copy (whose counts come at their bucket's start) a bucket's `when` is
 * taken over by the exact moments of the detail that came with it, and
 * every `when` by the source's moments when the copy gave them
 * (batch_moments).  INT64_MAX, INT64_MIN when the batch gives none. */
static void delta_moments(const struct rdb_batch *b, const struct series_delta *d, int64_t *first,
                          int64_t *last)
{
	int64_t bus = (int64_t)b->s->bucket_seconds * 1000000;

	*first = INT64_MAX;
	*last = INT64_MIN;
	if (d->has_moments) {
		*first = d->moments_first_us;
		*last = d->moments_last_us;
	} else if (d->has_add_us) {
		*first = d->add_first_us;
		*last = d->add_last_us;
	}
	if (!d->has_exact_us)
		return;
	if (b->source[0] && d->has_add_us && !d->has_moments) {
		/* the add and the detail of the same bucket */
		if (d->exact_first_us - d->add_first_us < bus &&
		    d->exact_first_us >= d->add_first_us)
			*first = d->exact_first_us;
		if (d->exact_last_us - d->add_last_us < bus && d->exact_last_us >= d->add_last_us)
			*last = d->exact_last_us;
	}
	if (d->exact_first_us < *first)
		*first = d->exact_first_us;
	if (d->exact_last_us > *last)
		*last = d->exact_last_us;
}

int rdb_batch_moments(struct store_batch *bbase, uint32_t series, int64_t first_us, int64_t last_us)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct series_delta *d;

	if (series == 0 || series >= b->s->nseries) {
		seterr(b->s, "moments for an unknown series %u", series);
		return -EINVAL;
	}
	if (first_us > last_us) {
		seterr(b->s, "series %u: first moment %lld after its last %lld", series,
		       (long long)first_us, (long long)last_us);
		return -EINVAL;
	}
	d = batch_delta(b, series);
	if (!d)
		return -ENOMEM;
	if (!d->has_moments || first_us < d->moments_first_us)
		d->moments_first_us = first_us;
	if (!d->has_moments || last_us > d->moments_last_us)
		d->moments_last_us = last_us;
	d->has_moments = true;
	return 0;
}

/* The series record as it will be after the batch. */
static struct series_rec series_after(const struct rdb_batch *b, const struct series_rec *r,
                                      const struct series_delta *d)
{
	struct series_rec n = *r;

	if (!d)
		return n;
	if (d->touched || d->has_moments) {
		int64_t first, last;

		if (d->touched && d->first_seen < n.first_seen)
			n.first_seen = d->first_seen;
		if (d->touched && d->last_seen > n.last_seen)
			n.last_seen = d->last_seen;
		delta_moments(b, d, &first, &last);
		if (first < n.first_us)
			n.first_us = first;
		if (last > n.last_us)
			n.last_us = last;
	}
	n.samples += d->samples;
	n.weight += d->weight;
	n.input_bytes += d->input_bytes;
	n.recent += d->recent;
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
 * An introsort of u64 keys in place: a big import's commit sorts many
 * entries, and qsort's call through a comparison function for each
 * comparison was a large share of its instructions. */

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
static int batch_write_counts(struct rdb_batch *b, rocksdb_writebatch_t *wb)
{
	struct rdb *s = b->s;
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

static int batch_write(struct rdb_batch *b, rocksdb_writebatch_t *wb)
{
	struct rdb *s = b->s;
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

		if (id < b->series_base &&
		    (!d || (!d->touched && !d->input_bytes && !d->recent && !d->has_moments)))
			continue;
		n = series_after(b, &s->series[id], d);
		buf.len = 0;
		r = series_encode(&buf, &n);
		if (r < 0)
			goto out;
		id_key(key, KEY_SERIES, id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	r = changes_put(b, wb);
	if (r == 0)
		r = renames_write(b, wb);
	if (r == 0)
		r = batch_write_counts(b, wb);
	if (r == 0)
		r = detail_write(b, wb);
out:
	free(buf.p);
	return r;
}

/* Refuses a batch that would take a series' stored totals past 2^64 - 1.
 * Every count is part of its series' totals, so while no total passes
 * 2^64 - 1, no merge of counts can either. */
static int batch_check_totals(struct rdb_batch *b)
{
	struct rdb *s = b->s;

	for (uint32_t id = 1; id < s->nseries && id < b->ndelta; id++) {
		const struct series_rec *r = &s->series[id];
		const struct series_delta *d = &b->delta[id];
		const char *what = d->samples > UINT64_MAX - r->samples           ? "samples"
		                   : d->weight > UINT64_MAX - r->weight           ? "weight"
		                   : d->input_bytes > UINT64_MAX - r->input_bytes ? "input bytes"
		                                                                  : NULL;

		if (what) {
			seterr(s,
			       "series %s/%s/%s: its total %s would pass 2^64 - 1 "
			       "(18446744073709551615)",
			       r->binary, r->version, r->event, what);
			return -EOVERFLOW;
		}
	}
	return 0;
}

int rdb_batch_commit(struct store_batch *bbase)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct rdb *s = b->s;
	rocksdb_writebatch_t *wb;
	char *rerr = NULL;
	int r = batch_check_totals(b);

	if (r < 0)
		return r;
	wb = rocksdb_writebatch_create();
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
	s->commits++;
	renames_applied(b);
	if (b->ngroups && s->change_commits < UINT_MAX)
		s->change_commits++;
	for (uint32_t id = 1; id < s->nseries && id < b->ndelta; id++)
		s->series[id] = series_after(b, &s->series[id], &b->delta[id]);
	b->source[0] = 0;
	if (b->delta)
		memset(b->delta, 0, (size_t)b->ndelta * sizeof(*b->delta));
	batch_counts_reset(b);
	detail_reset(b);
	batch_mark(b);
	size_t written = 0;
	rocksdb_writebatch_data(wb, &written);
	settle(s, written); /* in the background; the commit is durable */
	s->seq = rocksdb_get_latest_sequence_number(s->db);
	rollup_after_commit(s);
out_wb:
	rocksdb_writebatch_destroy(wb);
	return r;
}

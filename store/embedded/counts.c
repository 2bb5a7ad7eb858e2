/*
 * counts.c — the counts column family: its keys (series, time bucket),
 * its values (one sorted, delta-encoded list of {node, samples, weight}
 * per key), the merge operator that adds such lists, and reading them
 * back (store_series_counts).
 */
#include "embedded-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The blob format and its cursor are in ../counts-blob.c, shared with the
 * central store. */

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
	int r = count_cursor_next(&m->c[m->h[0]]);

	if (r < 0)
		return -1;
	if (r == 0)
		m->h[0] = m->h[--m->n];
	if (m->n)
		heap_down(m, 0);
	return 0;
}

/* Merges `nvals` counts values into one malloc'd value (*out, *outlen).
 * Returns 0, -ENOMEM, -EIO when an input is damaged, or -EOVERFLOW when a
 * sum would pass 2^64 - 1 (nothing is merged: the whole merge fails). */
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

		count_cursor_init(&m.c[i], vals[i], lens[i]);
		got = count_cursor_next(&m.c[i]);
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
			/* The writer keeps every series' totals, and so every
			 * sum here, below 2^64: a sum past it is damage. */
			if (__builtin_add_overflow(samples, m.c[m.h[0]].samples, &samples) ||
			    __builtin_add_overflow(weight, m.c[m.h[0]].weight, &weight)) {
				r = -EOVERFLOW;
				goto out;
			}
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

/* The merge operator of the counts column family; NULL on ENOMEM.  The
 * options it is set on own it. */
rocksdb_mergeoperator_t *counts_merge_operator(void)
{
	return rocksdb_mergeoperator_create(NULL, count_merge_destroy, count_full_merge,
	                                    count_partial_merge, count_merge_delete,
	                                    count_merge_name);
}

/* floor(when / bucket_seconds) as an offset-binary u32, so that keys sort
 * by time even before 1970.  -ERANGE when it does not fit. */
int bucket_of(const struct rdb *s, int64_t when, uint32_t *bucket)
{
	int64_t bs = s->bucket_seconds;
	int64_t idx = when / bs - (when % bs < 0);

	if (idx < INT32_MIN || idx > INT32_MAX)
		return -ERANGE;
	*bucket = (uint32_t)idx ^ 0x80000000u;
	return 0;
}

int64_t bucket_start(const struct rdb *s, uint32_t bucket)
{
	return (int64_t)(int32_t)(bucket ^ 0x80000000u) * s->bucket_seconds;
}

/* Bucket index of `t`, clamped to the range keys can hold. */
uint32_t bucket_clamped(const struct rdb *s, int64_t t)
{
	int64_t bs = s->bucket_seconds;
	int64_t idx = t / bs - (t % bs < 0);

	if (idx < INT32_MIN)
		idx = INT32_MIN;
	if (idx > INT32_MAX)
		idx = INT32_MAX;
	return (uint32_t)idx ^ 0x80000000u;
}

int rdb_series_counts(struct store *sbase, uint32_t series, int64_t from, int64_t to,
                      store_count_fn fn, void *ctx)
{
	struct rdb *s = rdb_of(sbase);
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
		count_cursor_init(&c, v, vlen);
		while ((got = count_cursor_next(&c)) > 0) {
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

/* Sums one counts value into *samples and *weight (saturating).  Returns
 * 0, or -1 for a damaged value. */
int counts_sum(const void *v, size_t len, uint64_t *samples, uint64_t *weight)
{
	struct count_cursor c;
	int got;

	count_cursor_init(&c, v, len);
	while ((got = count_cursor_next(&c)) > 0) {
		*samples = c.samples > UINT64_MAX - *samples ? UINT64_MAX : *samples + c.samples;
		*weight = c.weight > UINT64_MAX - *weight ? UINT64_MAX : *weight + c.weight;
	}
	return got < 0 ? -1 : 0;
}

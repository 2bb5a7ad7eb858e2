/*
 * samples.c — the recent tier: every sample's detail (its moment to the
 * microsecond, stack node, weight, process and thread), in blocks per
 * (series, bucket) in the default column family under KEY_DETAIL.
 *
 * A sample is counted once, in its bucket's counts, when it is added
 * (batch_count); the blocks only keep its detail, until store_rollup()
 * forgets the blocks of buckets older than the keep window.  Reads of
 * counts never look at blocks.  A commit puts one block (a piece) per
 * (series, bucket) it holds detail for, keyed by its commit number, in
 * the WriteBatch that carries its counts; once a bucket has closed, the
 * writer seals its pieces into one block (piece 0) in one write.  Reads
 * join a bucket's pieces in time order.  The format is in store/README.md
 * ("The recent tier").
 */
#include "embedded-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define US_PER_S 1000000

/* The flag byte of a sample in a block. */
#define F_NODE_SAME  0u /* the previous sample's node */
#define F_NODE_INDEX 1u /* varint: index among the block's nodes so far */
#define F_NODE_NEW   2u /* varint: node id, which joins the block's nodes */
#define F_NODE_MASK  3u
#define F_WEIGHT     4u /* varint weight (else the previous one) */
#define F_PID        8u /* varint pid (else the previous one) */
#define F_TID_SAME   0u /* the previous sample's tid */
#define F_TID_PID    1u /* tid == pid */
#define F_TID_OWN    2u /* varint tid */
#define F_TID_SHIFT  4
#define F_TID_MASK   3u
#define F_UNUSED     0xc0u

/* ---- time ------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

static int64_t bucket_us(const struct rdb *s)
{
	return (int64_t)s->bucket_seconds * US_PER_S;
}

int bucket_of_us(const struct rdb *s, int64_t us, uint32_t *bucket)
{
	int64_t idx = floor_div(us, bucket_us(s));

	if (idx < INT32_MIN || idx > INT32_MAX)
		return -ERANGE;
	*bucket = (uint32_t)idx ^ 0x80000000u;
	return 0;
}

static uint32_t bucket_of_us_clamped(const struct rdb *s, int64_t us)
{
	int64_t idx = floor_div(us, bucket_us(s));

	if (idx < INT32_MIN)
		idx = INT32_MIN;
	if (idx > INT32_MAX)
		idx = INT32_MAX;
	return (uint32_t)idx ^ 0x80000000u;
}

/* The bucket's start in microseconds; false when it does not fit. */
static bool bucket_start_us(const struct rdb *s, uint32_t bucket, int64_t *us)
{
	return !__builtin_mul_overflow(bucket_start(s, bucket), (int64_t)US_PER_S, us);
}

/* A detail key: prefix, u32 BE series, u32 BE bucket, u64 BE piece (the
 * commit that wrote it; 0: sealed). */
#define DETAIL_KEY_LEN 17

static void detail_key(uint8_t k[DETAIL_KEY_LEN], uint32_t series, uint32_t bucket, uint64_t piece)
{
	k[0] = KEY_DETAIL;
	put_be32(k + 1, series);
	put_be32(k + 5, bucket);
	put_be32(k + 9, (uint32_t)(piece >> 32));
	put_be32(k + 13, (uint32_t)piece);
}

/* True for a well-formed detail key of `series` (any series when 0). */
static bool detail_key_ok(const uint8_t *k, size_t klen, uint32_t series)
{
	return klen == DETAIL_KEY_LEN && k[0] == KEY_DETAIL &&
	       (series == 0 || get_be32(k + 1) == series);
}

/* ---- blocks ------------------------------------------------------------------ */

/* Orders detail by (series, bucket, time, arrival). */
static int detail_cmp(const void *a, const void *b)
{
	const struct detail_ent *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	if (x->t_rel != y->t_rel)
		return x->t_rel < y->t_rel ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

static bool detail_sorted(const struct detail_ent *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (detail_cmp(&v[i - 1], &v[i]) > 0)
			return false;
	return true;
}

/* The block's node table while encoding: node -> index, open addressing
 * over slots holding index + 1. */
struct node_index {
	uint32_t *slots;
	uint32_t mask;
	uint32_t *nodes; /* by index */
	uint32_t n;
};

static uint32_t node_slot_hash(uint32_t node)
{
	return node * 0x9e3779b1u;
}

/* Encodes the n samples v (time order, t_rel >= 0) as one block appended
 * to b.  0 or -ENOMEM. */
static int block_encode(struct buf *b, const struct detail_ent *v, size_t n)
{
	struct node_index ix = {0};
	size_t slots = 16;
	uint32_t prev_node = 0, prev_pid = 0, prev_tid = 0;
	uint64_t prev_weight = 0;
	int64_t prev_t = 0;
	uint8_t *flags;
	int r;

	while (slots < n * 2)
		slots *= 2;
	ix.slots = calloc(slots, sizeof(*ix.slots));
	ix.nodes = malloc((n ? n : 1) * sizeof(*ix.nodes));
	flags = malloc(n ? n : 1);
	r = buf_reserve(b, 10 + n * (10 + 1 + 10 + 10 + 10 + 10));
	if (!ix.slots || !ix.nodes || !flags || r < 0) {
		r = -ENOMEM;
		goto out;
	}
	ix.mask = (uint32_t)(slots - 1);
	buf_varint(b, n);
	for (size_t i = 0; i < n; i++) {
		buf_varint(b, (uint64_t)(v[i].t_rel - prev_t));
		prev_t = v[i].t_rel;
	}
	/* the flags, then the columns they call for */
	size_t at_flags = b->len;
	b->len += n;
	for (size_t i = 0; i < n; i++) {
		const struct detail_ent *e = &v[i];
		uint8_t f = 0;

		/* the first sample's "previous" node is the root */
		if (e->node != prev_node) {
			uint32_t pos = node_slot_hash(e->node) & ix.mask;

			while (ix.slots[pos] && ix.nodes[ix.slots[pos] - 1] != e->node)
				pos = (pos + 1) & ix.mask;
			if (ix.slots[pos]) {
				f |= F_NODE_INDEX;
				buf_varint(b, ix.slots[pos] - 1);
			} else {
				f |= F_NODE_NEW;
				buf_varint(b, e->node);
				ix.nodes[ix.n++] = e->node;
				ix.slots[pos] = ix.n;
			}
		}
		flags[i] = f;
		prev_node = e->node;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].weight != prev_weight) {
			flags[i] |= F_WEIGHT;
			buf_varint(b, v[i].weight);
			prev_weight = v[i].weight;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].pid != prev_pid) {
			flags[i] |= F_PID;
			buf_varint(b, v[i].pid);
			prev_pid = v[i].pid;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t m = F_TID_SAME;

		if (v[i].tid != prev_tid) {
			if (v[i].tid == v[i].pid) {
				m = F_TID_PID;
			} else {
				m = F_TID_OWN;
				buf_varint(b, v[i].tid);
			}
			prev_tid = v[i].tid;
		}
		flags[i] |= (uint8_t)(m << F_TID_SHIFT);
	}
	memcpy(b->p + at_flags, flags, n);
	r = 0;
out:
	free(ix.slots);
	free(ix.nodes);
	free(flags);
	return r;
}

int detail_count(const void *v, size_t len, uint64_t *n)
{
	const uint8_t *p = v;

	if (get_varint(&p, p + len, n) < 0 || *n > len)
		return -1;
	return 0;
}

/* Decodes a block, appending its samples to (*v, *n, *cap) with seq
 * numbers from *n on.  0, -ENOMEM, or -1 when it is damaged. */
static int block_decode(const void *val, size_t len, struct detail_ent **v, size_t *n, size_t *cap)
{
	const uint8_t *p = val, *end = p + len, *flags;
	uint32_t *nodes = NULL, nnodes = 0;
	uint32_t prev_node = 0, prev_pid = 0, prev_tid = 0;
	uint64_t cnt, x, prev_weight = 0;
	int64_t t = 0;
	struct detail_ent *out;
	int r = -1;

	/* each sample takes at least two bytes: its time and its flags */
	if (get_varint(&p, end, &cnt) < 0 || cnt > (uint64_t)(end - p) / 2)
		return -1;
	if (*n + cnt > *cap) {
		size_t nc = *cap ? *cap : 256;
		struct detail_ent *nv;

		while (nc < *n + cnt)
			nc *= 2;
		nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	out = *v + *n;
	for (uint64_t i = 0; i < cnt; i++) {
		if (get_varint(&p, end, &x) < 0 || x > (uint64_t)INT64_MAX ||
		    __builtin_add_overflow(t, (int64_t)x, &t))
			return -1;
		out[i].t_rel = t;
	}
	if ((uint64_t)(end - p) < cnt)
		return -1;
	flags = p;
	p += cnt;
	nodes = malloc((cnt ? cnt : 1) * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	for (uint64_t i = 0; i < cnt; i++) {
		if (flags[i] & F_UNUSED)
			goto out;
		switch (flags[i] & F_NODE_MASK) {
		case F_NODE_SAME: break;
		case F_NODE_INDEX:
			if (get_varint(&p, end, &x) < 0 || x >= nnodes)
				goto out;
			prev_node = nodes[x];
			break;
		case F_NODE_NEW:
			if (get_varint(&p, end, &x) < 0 || x > UINT32_MAX)
				goto out;
			prev_node = nodes[nnodes++] = (uint32_t)x;
			break;
		default: goto out;
		}
		out[i].node = prev_node;
	}
	for (uint64_t i = 0; i < cnt; i++) {
		if ((flags[i] & F_WEIGHT) && get_varint(&p, end, &prev_weight) < 0)
			goto out;
		out[i].weight = prev_weight;
	}
	for (uint64_t i = 0; i < cnt; i++) {
		if (flags[i] & F_PID) {
			if (get_varint(&p, end, &x) < 0 || x > UINT32_MAX)
				goto out;
			prev_pid = (uint32_t)x;
		}
		out[i].pid = prev_pid;
	}
	for (uint64_t i = 0; i < cnt; i++) {
		switch ((flags[i] >> F_TID_SHIFT) & F_TID_MASK) {
		case F_TID_SAME: break;
		case F_TID_PID: prev_tid = out[i].pid; break;
		case F_TID_OWN:
			if (get_varint(&p, end, &x) < 0 || x > UINT32_MAX)
				goto out;
			prev_tid = (uint32_t)x;
			break;
		default: goto out;
		}
		out[i].tid = prev_tid;
		out[i].series = out[i].bucket = 0;
		out[i].seq = (uint32_t)(*n + i);
	}
	if (p != end)
		goto out;
	*n += cnt;
	r = 0;
out:
	free(nodes);
	return r;
}

/* ---- joining pieces ----------------------------------------------------------- */

/* Joins blocks into one, in time order (ties: the order of the inputs).
 * 0, -ENOMEM or -EIO (a damaged input). */
static int detail_merge(const char *const *vals, const size_t *lens, size_t nvals, char **out,
                        size_t *outlen)
{
	struct detail_ent *v = NULL;
	size_t n = 0, cap = 0;
	struct buf b = {0};
	int r = 0;

	for (size_t i = 0; i < nvals; i++) {
		r = block_decode(vals[i], lens[i], &v, &n, &cap);
		if (r < 0) {
			r = r == -1 ? -EIO : r;
			goto out;
		}
	}
	if (!detail_sorted(v, n))
		qsort(v, n, sizeof(*v), detail_cmp);
	r = block_encode(&b, v, n);
	if (r < 0)
		goto out;
	*out = (char *)b.p;
	*outlen = b.len;
	b.p = NULL;
out:
	free(b.p);
	free(v);
	return r;
}

/* ---- writing ------------------------------------------------------------------- */

static int detail_reserve(struct rdb_batch *b, size_t more)
{
	size_t cap;
	struct detail_ent *n;

	if (b->ndetail + more <= b->detail_cap)
		return 0;
	cap = b->detail_cap ? b->detail_cap : 1024;
	while (cap < b->ndetail + more)
		cap *= 2;
	if (cap > UINT32_MAX) /* seq is 32 bits */
		return -EOVERFLOW;
	n = realloc(b->detail, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	b->detail = n;
	b->detail_cap = cap;
	return 0;
}

int rdb_batch_sample(struct store_batch *bbase, uint32_t series, const struct store_sample *smp)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct rdb *s = b->s;
	bool keep = s->keep_samples > 0;
	struct detail_ent *e;
	uint32_t group;
	int64_t start;
	int r;

	if (keep && (r = detail_reserve(b, 1)) < 0) {
		seterr(s, "%s: out of memory", s->dir);
		return r;
	}
	r = batch_count(b, series, floor_div(smp->time_us, US_PER_S), smp->time_us, true, smp->node,
	                1, smp->weight, &group);
	if (r < 0 || !keep)
		return r;
	if (!bucket_start_us(s, b->groups[group].bucket, &start))
		return 0; /* counted; a moment this far out has no detail */
	e = &b->detail[b->ndetail];
	e->series = series;
	e->bucket = b->groups[group].bucket;
	e->node = smp->node;
	e->pid = smp->pid;
	e->tid = smp->tid;
	e->seq = (uint32_t)b->ndetail;
	e->t_rel = smp->time_us - start;
	e->weight = smp->weight;
	b->ndetail++;
	b->delta[series].recent++;
	return 0;
}

int rdb_batch_detail(struct store_batch *bbase, uint32_t series, int64_t bstart,
                     const struct store_sample *v, size_t n)
{
	struct rdb_batch *b = rdb_batch_of(bbase);
	struct rdb *s = b->s;
	struct series_delta *d;
	uint32_t bucket, sb;
	int64_t start;
	int r;

	if (series == 0 || series >= s->nseries) {
		seterr(s, "detail for an unknown series %u", series);
		return -EINVAL;
	}
	if (bucket_of(s, bstart, &bucket) < 0 || bucket_start(s, bucket) != bstart ||
	    !bucket_start_us(s, bucket, &start)) {
		seterr(s, "detail for a bucket at %lld, which is not a bucket's start",
		       (long long)bstart);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].node >= s->nnodes || bucket_of_us(s, v[i].time_us, &sb) < 0 ||
		    sb != bucket) {
			seterr(s,
			       "detail of series %u at %lld: a sample at %lld us (node %u) is not "
			       "in the bucket",
			       series, (long long)bstart, (long long)v[i].time_us, v[i].node);
			return -EINVAL;
		}
	}
	if (s->keep_samples == 0 || n == 0)
		return 0;
	/* the delta array, through a zero count-free lookup */
	if (series >= b->ndelta) {
		uint32_t nd = s->nseries;
		struct series_delta *dd = realloc(b->delta, (size_t)nd * sizeof(*dd));

		if (!dd)
			return -ENOMEM;
		memset(dd + b->ndelta, 0, (size_t)(nd - b->ndelta) * sizeof(*dd));
		b->delta = dd;
		b->ndelta = nd;
	}
	r = detail_reserve(b, n);
	if (r < 0) {
		seterr(s, "%s: out of memory", s->dir);
		return r;
	}
	d = &b->delta[series];
	for (size_t i = 0; i < n; i++) {
		struct detail_ent *e = &b->detail[b->ndetail];

		e->series = series;
		e->bucket = bucket;
		e->node = v[i].node;
		e->pid = v[i].pid;
		e->tid = v[i].tid;
		e->seq = (uint32_t)b->ndetail;
		e->t_rel = v[i].time_us - start;
		e->weight = v[i].weight;
		b->ndetail++;
		if (!d->has_exact_us || v[i].time_us < d->exact_first_us)
			d->exact_first_us = v[i].time_us;
		if (!d->has_exact_us || v[i].time_us > d->exact_last_us)
			d->exact_last_us = v[i].time_us;
		d->has_exact_us = true;
	}
	d->recent += n;
	return 0;
}

int detail_write(struct rdb_batch *b, rocksdb_writebatch_t *wb)
{
	struct rdb *s = b->s;
	struct buf buf = {0};
	uint8_t key[DETAIL_KEY_LEN];
	int r = 0;

	if (!b->ndetail)
		return 0;
	if (!detail_sorted(b->detail, b->ndetail))
		qsort(b->detail, b->ndetail, sizeof(*b->detail), detail_cmp);
	for (size_t i = 0, j; i < b->ndetail; i = j) {
		for (j = i + 1; j < b->ndetail && b->detail[j].series == b->detail[i].series &&
		                b->detail[j].bucket == b->detail[i].bucket;
		     j++)
			;
		buf.len = 0;
		r = block_encode(&buf, b->detail + i, j - i);
		if (r < 0)
			goto out;
		detail_key(key, b->detail[i].series, b->detail[i].bucket, s->commits + 1);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, sizeof(key),
		                          (char *)buf.p, buf.len);
	}
out:
	free(buf.p);
	return r;
}

int detail_prune(struct rdb *s, rocksdb_writebatch_t *wb, uint32_t series, uint32_t cut,
                 uint64_t *samples)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	uint8_t key[DETAIL_KEY_LEN];
	char *rerr = NULL;
	int r = 0;

	if (!it) {
		seterr(s, "%s: out of memory", s->dir);
		return -ENOMEM;
	}
	detail_key(key, series, 0, 0);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const char *v;
		uint64_t n;

		if (!detail_key_ok(k, klen, series) || get_be32(k + 5) >= cut)
			break;
		v = rocksdb_iter_value(it, &vlen);
		if (detail_count(v, vlen, &n) < 0) {
			seterr(s, "%s: store is damaged: the detail of series %u at %lld", s->dir,
			       series, (long long)bucket_start(s, get_be32(k + 5)));
			r = -EIO;
			break;
		}
		*samples += n;
		if (wb)
			rocksdb_writebatch_delete_cf(wb, s->cf[CF_DEFAULT], (const char *)k, klen);
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr && r == 0)
		r = rdb_fail(s, rerr, "reading detail");
	else
		rocksdb_free(rerr);
	rocksdb_iter_destroy(it);
	return r;
}

void detail_reset(struct rdb_batch *b)
{
	free(b->detail);
	b->detail = NULL;
	b->ndetail = b->detail_cap = 0;
}

/* ---- reading ------------------------------------------------------------------- */

int rdb_series_samples(struct store *sbase, uint32_t series, int64_t from_us, int64_t to_us,
                       store_sample_fn fn, void *ctx)
{
	struct rdb *s = rdb_of(sbase);
	rocksdb_iterator_t *it;
	struct detail_ent *v = NULL;
	size_t cap = 0, n = 0;
	uint8_t start[DETAIL_KEY_LEN];
	uint32_t lo, hi, cur = 0;
	bool have = false, end = false;
	char *rerr = NULL;
	int r = 0;

	if (from_us >= to_us)
		return 0;
	if (need_db(s) < 0)
		return -EIO;
	lo = bucket_of_us_clamped(s, from_us);
	hi = bucket_of_us_clamped(s, to_us - 1);
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	if (!it)
		return -ENOMEM;
	detail_key(start, series, lo, 0);
	rocksdb_iter_seek(it, (const char *)start, sizeof(start));
	/* A bucket's pieces are adjacent keys: gather them, then walk. */
	while (!end) {
		const uint8_t *k = NULL;
		size_t klen = 0;

		if (rocksdb_iter_valid(it)) {
			k = (const uint8_t *)rocksdb_iter_key(it, &klen);
			if (klen < 5 || k[0] != KEY_DETAIL || get_be32(k + 1) != series)
				k = NULL;
			else if (klen != DETAIL_KEY_LEN) {
				seterr(s, "%s: store is damaged: a detail key of series %u", s->dir,
				       series);
				r = -EIO;
				goto out;
			} else if (get_be32(k + 5) > hi)
				k = NULL;
		}
		end = k == NULL;
		if (have && (end || get_be32(k + 5) != cur)) {
			/* bucket `cur` is whole: order it, check it, walk it */
			int64_t bstart = 0, blen = bucket_us(s);
			bool bad = !bucket_start_us(s, cur, &bstart);

			if (!detail_sorted(v, n))
				qsort(v, n, sizeof(*v), detail_cmp);
			for (size_t i = 0; !bad && i < n; i++)
				bad = v[i].t_rel >= blen || v[i].node >= s->nnodes;
			if (bad) {
				r = -1;
				goto damaged;
			}
			for (size_t i = 0; i < n; i++) {
				struct store_sample smp = {
				        .time_us = bstart + v[i].t_rel,
				        .node = v[i].node,
				        .pid = v[i].pid,
				        .tid = v[i].tid,
				        .weight = v[i].weight,
				};

				if (smp.time_us < from_us)
					continue;
				if (smp.time_us >= to_us)
					goto out;
				r = fn(ctx, &smp);
				if (r)
					goto out;
			}
			n = 0;
			have = false;
		}
		if (end)
			break;
		size_t vlen;
		const char *val = rocksdb_iter_value(it, &vlen);

		cur = get_be32(k + 5);
		have = true;
		r = block_decode(val, vlen, &v, &n, &cap);
		if (r < 0)
			goto damaged;
		rocksdb_iter_next(it);
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "reading detail");
	goto out;
damaged:
	if (r == -1) {
		seterr(s, "%s: store is damaged: the detail of series %u at %lld", s->dir, series,
		       (long long)bucket_start(s, cur));
		r = -EIO;
	}
out:
	free(v);
	rocksdb_iter_destroy(it);
	return r;
}

/* ---- the keep window ----------------------------------------------------------- */

int keep_load(struct rdb *s)
{
	uint8_t v[8];
	bool found;
	int r = meta_get_fixed(s, META_KEEP_SAMPLES, v, sizeof(v), &found);
	uint64_t x = 0;

	if (r < 0)
		return r;
	if (!found) {
		s->keep_samples = STORE_DEFAULT_KEEP_SAMPLES;
		return 0;
	}
	for (int i = 0; i < 8; i++)
		x = x << 8 | v[i];
	if (x > INT64_MAX / US_PER_S) {
		seterr(s, "%s: store is damaged: meta keep_samples", s->dir);
		return -EIO;
	}
	s->keep_samples = (int64_t)x;
	return 0;
}

int64_t rdb_keep_samples(const struct store *sbase)
{
	return rdb_cof(sbase)->keep_samples;
}

int rdb_set_keep_samples(struct store *sbase, int64_t seconds)
{
	struct rdb *s = rdb_of(sbase);
	uint8_t v[8];
	char *rerr = NULL;
	int r;

	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return -EROFS;
	}
	if (seconds < 0 || seconds > INT64_MAX / US_PER_S) {
		seterr(s, "keep window of %lld seconds is out of range", (long long)seconds);
		return -EINVAL;
	}
	r = schema_upgrade(s);
	if (r < 0)
		return r;
	for (int i = 0; i < 8; i++)
		v[i] = (uint8_t)((uint64_t)seconds >> (56 - 8 * i));
	rocksdb_put_cf(s->db, s->wopts, s->cf[CF_DEFAULT], META_KEEP_SAMPLES,
	               strlen(META_KEEP_SAMPLES), (char *)v, sizeof(v), &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "writing meta");
	s->keep_samples = seconds;
	s->seq = rocksdb_get_latest_sequence_number(s->db);
	s->rolled_cut[0] = s->rolled_cut[1] = INT64_MIN; /* the next commit looks again */
	return 0;
}

/* ---- roll-up ------------------------------------------------------------------- */

static bool perf_clock_us(int64_t us)
{
	return us < (int64_t)STORE_WALL_CLOCK_MIN * US_PER_S;
}

/* The newest moment on each clock ([0] perf's, [1] Unix time), from the
 * series records; INT64_MIN where there is none. */
static void newest_moments(const struct rdb *s, int64_t newest[2])
{
	newest[0] = newest[1] = INT64_MIN;
	for (uint32_t id = 1; id < s->nseries; id++) {
		int64_t last = s->series[id].last_us;

		if (!s->series[id].samples || last == INT64_MIN)
			continue;
		int c = perf_clock_us(last) ? 0 : 1;
		if (last > newest[c])
			newest[c] = last;
	}
}

/* The bucket index below which roll-up forgets detail on a clock whose
 * newest moment is `newest` (INT64_MIN: none). */
static int64_t rollup_cut(const struct rdb *s, int64_t newest)
{
	int64_t keep_us = s->keep_samples * US_PER_S;

	if (newest == INT64_MIN)
		return INT64_MIN;
	if (s->keep_samples == 0)
		return INT64_MAX;
	if (newest < INT64_MIN + keep_us)
		return INT64_MIN;
	return floor_div(newest - keep_us, bucket_us(s));
}

static int rollup_run(struct rdb *s, struct store_rollup_stats *st);

/* The bucket index below which a bucket has closed on a clock whose
 * newest moment is `newest`: it ended a whole bucket before it. */
static int64_t seal_cut(const struct rdb *s, int64_t newest)
{
	return newest == INT64_MIN ? INT64_MIN : floor_div(newest, bucket_us(s)) - 1;
}

void rollup_after_commit(struct rdb *s)
{
	int64_t newest[2];
	bool due = false;

	newest_moments(s, newest);
	for (int c = 0; c < 2; c++)
		due |= rollup_cut(s, newest[c]) > s->rolled_cut[c] ||
		       seal_cut(s, newest[c]) > s->sealed_cut[c];
	if (!due)
		return;
	/* A failure leaves the detail for the next commit's try; the
	 * commit itself is durable either way.  The batch that committed is
	 * empty now. */
	char msg[sizeof(s->errmsg)];
	struct store_rollup_stats st;
	memcpy(msg, s->errmsg, sizeof(msg));
	if (rollup_run(s, &st) < 0) {
		memcpy(s->errmsg, msg, sizeof(msg));
		/* not again before the window or a bucket moves on */
		for (int c = 0; c < 2; c++) {
			s->rolled_cut[c] = rollup_cut(s, newest[c]);
			s->sealed_cut[c] = seal_cut(s, newest[c]);
		}
	}
}

int rdb_rollup(struct store *sbase, struct store_rollup_stats *st)
{
	struct rdb *s = rdb_of(sbase);
	struct store_rollup_stats zero = {0};

	if (!st)
		st = &zero;
	memset(st, 0, sizeof(*st));
	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return -EROFS;
	}
	if (s->batch) {
		seterr(s, "%s: cannot roll up while a batch is open", s->dir);
		return -EBUSY;
	}
	return rollup_run(s, st);
}

/* A bucket's pieces gathered for sealing: their keys and values, copied
 * out of the iterator. */
struct seal_set {
	uint8_t (*keys)[DETAIL_KEY_LEN];
	char **vals;
	size_t *lens;
	size_t n, cap;
};

static void seal_clear(struct seal_set *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->vals[i]);
	p->n = 0;
}

static int seal_add(struct seal_set *p, const uint8_t *k, const char *v, size_t len)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		void *a = realloc(p->keys, cap * sizeof(*p->keys));

		if (!a)
			return -ENOMEM;
		p->keys = a;
		a = realloc(p->vals, cap * sizeof(*p->vals));
		if (!a)
			return -ENOMEM;
		p->vals = a;
		a = realloc(p->lens, cap * sizeof(*p->lens));
		if (!a)
			return -ENOMEM;
		p->lens = a;
		p->cap = cap;
	}
	p->vals[p->n] = malloc(len ? len : 1);
	if (!p->vals[p->n])
		return -ENOMEM;
	memcpy(p->vals[p->n], v, len);
	memcpy(p->keys[p->n], k, DETAIL_KEY_LEN);
	p->lens[p->n++] = len;
	return 0;
}

/* Puts into wb the one block that replaces a closed bucket's pieces (its
 * sealed block, piece 0) and the deletion of the others.  Nothing for a
 * bucket of one piece.  0, -ENOMEM, or -1 when a piece is damaged. */
static int seal_flush(struct rdb *s, rocksdb_writebatch_t *wb, struct seal_set *p, uint64_t *sealed)
{
	char *out = NULL;
	size_t outlen = 0;
	uint8_t key[DETAIL_KEY_LEN];
	int r = 0;

	if (p->n > 1) {
		r = detail_merge((const char *const *)p->vals, p->lens, p->n, &out, &outlen);
		if (r == -EIO)
			r = -1;
		if (r == 0) {
			memcpy(key, p->keys[0], DETAIL_KEY_LEN);
			memset(key + 9, 0, 8);
			for (size_t i = 0; i < p->n; i++)
				if (memcmp(p->keys[i], key, DETAIL_KEY_LEN))
					rocksdb_writebatch_delete_cf(wb, s->cf[CF_DEFAULT],
					                             (const char *)p->keys[i],
					                             DETAIL_KEY_LEN);
			rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (const char *)key,
			                          DETAIL_KEY_LEN, out, outlen);
			(*sealed)++;
		}
		free(out);
	}
	seal_clear(p);
	return r;
}

/* store_rollup() once its caller has checked that it may write: in one
 * write, forgets the detail of the buckets behind the keep window and
 * seals the pieces of the buckets that have closed since the last time. */
static int rollup_run(struct rdb *s, struct store_rollup_stats *st)
{
	rocksdb_writebatch_t *wb = NULL;
	rocksdb_iterator_t *it = NULL;
	uint64_t *gone = NULL, sealed = 0;
	struct seal_set set = {0};
	struct buf buf = {0};
	int64_t newest[2] = {INT64_MIN, INT64_MIN};
	uint32_t cur = 0;                      /* the bucket being sealed */
	uint32_t last_id = 0, last_bucket = 0; /* the last bucket forgotten */
	char *rerr = NULL;
	int r = 0;

	memset(st, 0, sizeof(*st));
	newest_moments(s, newest);
	wb = rocksdb_writebatch_create();
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	gone = calloc(s->nseries ? s->nseries : 1, sizeof(*gone));
	if (!wb || !it || !gone) {
		seterr(s, "%s: out of memory", s->dir);
		r = -ENOMEM;
		goto out;
	}
	/* Per series, per clock: the buckets [lo, hi) to forget, then
	 * [hi or where the last sealing stopped, seal_to) to seal: seeks and
	 * walks over those only, never over the detail that stays as it is. */
	int64_t wall_first = -floor_div(-(int64_t)STORE_WALL_CLOCK_MIN * US_PER_S, bucket_us(s));
	int64_t lo[2] = {INT32_MIN, wall_first}, hi[2], seal_to[2], seal_from[2];

	for (int c = 0; c < 2; c++) {
		int64_t top = c == 0 ? wall_first : (int64_t)INT32_MAX + 1;

		hi[c] = rollup_cut(s, newest[c]);
		seal_to[c] = seal_cut(s, newest[c]);
		if (hi[c] > top)
			hi[c] = top;
		if (seal_to[c] > top)
			seal_to[c] = top;
		if (hi[c] < lo[c])
			hi[c] = lo[c];
		seal_from[c] = s->sealed_cut[c] > hi[c] ? s->sealed_cut[c] : hi[c];
	}
	for (uint32_t id = 1; id < s->nseries; id++) {
		for (int c = 0; c < 2; c++) {
			uint8_t key[DETAIL_KEY_LEN];
			int64_t from = hi[c] > lo[c] ? lo[c] : seal_from[c];

			if ((from >= seal_to[c] && from >= hi[c]) || from > INT32_MAX)
				continue;
			detail_key(key, id, (uint32_t)(int32_t)from ^ 0x80000000u, 0);
			for (rocksdb_iter_seek(it, (const char *)key, sizeof(key));
			     rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
				size_t klen, vlen;
				const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
				const char *val;
				uint64_t n;

				if (!detail_key_ok(k, klen, id))
					break;
				int64_t idx = (int32_t)(get_be32(k + 5) ^ 0x80000000u);
				if (idx >= hi[c] && idx < seal_from[c]) {
					/* past what goes: on to what is to be sealed */
					if (seal_from[c] >= seal_to[c] || seal_from[c] > INT32_MAX)
						break;
					detail_key(key, id,
					           (uint32_t)(int32_t)seal_from[c] ^ 0x80000000u,
					           0);
					rocksdb_iter_seek(it, (const char *)key, sizeof(key));
					if (!rocksdb_iter_valid(it))
						break;
					k = (const uint8_t *)rocksdb_iter_key(it, &klen);
					if (!detail_key_ok(k, klen, id))
						break;
					idx = (int32_t)(get_be32(k + 5) ^ 0x80000000u);
				}
				if (idx >= hi[c] && idx >= seal_to[c])
					break;
				val = rocksdb_iter_value(it, &vlen);
				if (idx >= hi[c]) {
					if (set.n && get_be32(k + 5) != cur &&
					    (r = seal_flush(s, wb, &set, &sealed)) < 0)
						goto damaged;
					cur = get_be32(k + 5);
					if ((r = seal_add(&set, k, val, vlen)) < 0)
						goto nomem;
					continue;
				}
				if (detail_count(val, vlen, &n) < 0) {
					cur = get_be32(k + 5);
					r = -1;
					goto damaged;
				}
				rocksdb_writebatch_delete_cf(wb, s->cf[CF_DEFAULT], (const char *)k,
				                             klen);
				gone[id] += n;
				/* a (series, bucket) once, however many pieces */
				st->slices += !(id == last_id && get_be32(k + 5) == last_bucket);
				last_id = id;
				last_bucket = get_be32(k + 5);
				st->samples += n;
				st->bytes += vlen;
			}
			if (set.n && (r = seal_flush(s, wb, &set, &sealed)) < 0)
				goto damaged;
		}
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "reading detail");
		goto out;
	}
	if (!st->slices && !sealed)
		goto done;
	for (uint32_t id = 1; id < s->nseries; id++) {
		struct series_rec n;
		uint8_t key[5];

		if (!gone[id])
			continue;
		n = s->series[id];
		n.recent = gone[id] < n.recent ? n.recent - gone[id] : 0;
		buf.len = 0;
		r = series_encode(&buf, &n);
		if (r < 0)
			goto nomem;
		id_key(key, KEY_SERIES, id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "roll-up");
		goto out;
	}
	for (uint32_t id = 1; id < s->nseries; id++)
		if (gone[id])
			s->series[id].recent = gone[id] < s->series[id].recent
			                               ? s->series[id].recent - gone[id]
			                               : 0;
	size_t written = 0;
	rocksdb_writebatch_data(wb, &written);
	settle(s, written);
	s->seq = rocksdb_get_latest_sequence_number(s->db);
done:
	/* below these buckets: no detail left, and every closed bucket one
	 * block */
	for (int c = 0; c < 2; c++) {
		s->rolled_cut[c] = rollup_cut(s, newest[c]);
		if (seal_to[c] > s->sealed_cut[c])
			s->sealed_cut[c] = seal_to[c];
	}
	goto out;
nomem:
	seterr(s, "%s: out of memory", s->dir);
	r = -ENOMEM;
	goto out;
damaged:
	if (r == -1) {
		seterr(s, "%s: store is damaged: the detail of a series at %lld", s->dir,
		       (long long)bucket_start(s, cur));
		r = -EIO;
	}
out:
	seal_clear(&set);
	free(set.keys);
	free(set.vals);
	free(set.lens);
	free(buf.p);
	free(gone);
	if (it)
		rocksdb_iter_destroy(it);
	if (wb)
		rocksdb_writebatch_destroy(wb);
	return r;
}

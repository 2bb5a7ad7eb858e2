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
 * join a bucket's pieces in canonical order.  Each piece and sealed
 * block is a samples block (../samples-block.c, the database's format
 * too); the keys are in store/README.md ("The recent tier").
 */
#include "embedded-internal.h"
#include "samples-block-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define US_PER_S 1000000

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

int detail_count(const void *v, size_t len, uint64_t *n)
{
	return samples_block_count(v, len, n) < 0 ? -1 : 0;
}

/* Encodes the n samples v, already in canonical order, of the bucket
 * that starts at start_us as one block: *out (malloc'd, *len bytes).
 * 0, -EINVAL (a sample outside the bucket) or -ENOMEM. */
static int block_encode(const struct rdb *s, const struct store_sample *v, size_t n,
                        int64_t start_us, uint8_t **out, size_t *len)
{
	return samples_block_encode(v, n, start_us, bucket_us(s), out, len);
}

/* Joins a bucket's pieces into one block of all their samples in
 * canonical order.  0, -ENOMEM or -EIO (a damaged piece). */
static int detail_merge(const struct rdb *s, int64_t start_us, const char *const *vals,
                        const size_t *lens, size_t nvals, uint8_t **out, size_t *outlen)
{
	struct store_sample *v = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	for (size_t i = 0; i < nvals && r == 0; i++)
		r = samples_block_decode(vals[i], lens[i], start_us, bucket_us(s), &v, &n, &cap);
	if (r == 0) {
		samples_block_sort(v, n);
		r = block_encode(s, v, n, start_us, out, outlen);
		r = r == -EINVAL ? -EIO : r;
	}
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
	e = &b->detail[b->ndetail++];
	e->series = series;
	e->bucket = b->groups[group].bucket;
	e->smp = *smp;
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
		struct detail_ent *e = &b->detail[b->ndetail++];

		e->series = series;
		e->bucket = bucket;
		e->smp = v[i];
		if (!d->has_exact_us || v[i].time_us < d->exact_first_us)
			d->exact_first_us = v[i].time_us;
		if (!d->has_exact_us || v[i].time_us > d->exact_last_us)
			d->exact_last_us = v[i].time_us;
		d->has_exact_us = true;
	}
	d->recent += n;
	return 0;
}

/* One (series, bucket) of a batch's detail: its key (series << 32 |
 * bucket), its samples' count and where they start in the grouped
 * array. */
struct group {
	uint64_t key;
	size_t n, at;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static bool samples_sorted(const struct store_sample *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (samples_block_cmp(&v[i - 1], &v[i]) > 0)
			return false;
	return true;
}

/* Gathers b's detail by (series, bucket) into *out (malloc'd, ndetail
 * samples), each group in the canonical order, and the groups in key
 * order into *groups (malloc'd, *ngroups): the order of series, bucket,
 * then samples_block_cmp, but a counting sort by group and a sort of each
 * group only when its samples did not come in order (they mostly do: a
 * recording's samples arrive by time, only the series interleave).
 * 0 or -ENOMEM. */
static int detail_group(const struct rdb_batch *b, struct store_sample **out, struct group **groups,
                        size_t *ngroups)
{
	size_t n = b->ndetail, ng = 0, gcap = 0, mask = 63;
	uint32_t *gid = malloc(n * sizeof(*gid));
	uint32_t *slot = calloc(mask + 1, sizeof(*slot)); /* group + 1; 0: free */
	struct group *g = NULL, *sorted = NULL;
	struct store_sample *v = malloc(n * sizeof(*v));
	int r = -ENOMEM;

	if (!gid || !slot || !v)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t key = (uint64_t)b->detail[i].series << 32 | b->detail[i].bucket;
		if ((ng + 1) * 2 > mask + 1) {
			size_t nmask = mask * 2 + 1;
			uint32_t *ns = calloc(nmask + 1, sizeof(*ns));
			if (!ns)
				goto out;
			for (size_t k = 0; k < ng; k++) {
				size_t h = (size_t)(g[k].key * 0x9e3779b97f4a7c15ull >> 32) & nmask;
				while (ns[h])
					h = (h + 1) & nmask;
				ns[h] = (uint32_t)k + 1;
			}
			free(slot);
			slot = ns;
			mask = nmask;
		}
		size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull >> 32) & mask;
		while (slot[h] && g[slot[h] - 1].key != key)
			h = (h + 1) & mask;
		if (!slot[h]) {
			if (ng == gcap) {
				size_t nc = gcap ? gcap * 2 : 64;
				struct group *ngp = realloc(g, nc * sizeof(*g));
				if (!ngp)
					goto out;
				g = ngp;
				gcap = nc;
			}
			g[ng] = (struct group){.key = key};
			slot[h] = (uint32_t)++ng;
		}
		gid[i] = slot[h] - 1;
		g[gid[i]].n++;
	}
	/* where each group starts once the groups are in key order */
	sorted = malloc(ng * sizeof(*sorted));
	if (!sorted)
		goto out;
	memcpy(sorted, g, ng * sizeof(*g));
	for (size_t k = 0; k < ng; k++)
		sorted[k].at = k; /* its index in g, for a moment */
	qsort(sorted, ng, sizeof(*sorted), group_cmp);
	for (size_t k = 0, at = 0; k < ng; k++) {
		g[sorted[k].at].at = at;
		sorted[k].at = at;
		at += sorted[k].n;
	}
	for (size_t i = 0; i < n; i++) /* stable: each group keeps its arrival order */
		v[g[gid[i]].at++] = b->detail[i].smp;
	for (size_t k = 0; k < ng; k++)
		if (!samples_sorted(v + sorted[k].at, sorted[k].n))
			samples_block_sort(v + sorted[k].at, sorted[k].n);
	*out = v;
	v = NULL;
	*groups = sorted;
	*ngroups = ng;
	r = 0;
out:
	free(gid);
	free(slot);
	free(g);
	free(v);
	return r;
}

int detail_write(struct rdb_batch *b, rocksdb_writebatch_t *wb)
{
	struct rdb *s = b->s;
	struct store_sample *v = NULL;
	struct group *g = NULL;
	uint8_t key[DETAIL_KEY_LEN], *block;
	size_t len, ng = 0;
	int64_t start = 0;
	int r = 0;

	if (!b->ndetail)
		return 0;
	r = detail_group(b, &v, &g, &ng);
	if (r < 0)
		return r;
	for (size_t k = 0; k < ng; k++) {
		uint32_t series = (uint32_t)(g[k].key >> 32), bucket = (uint32_t)g[k].key;

		/* batch_sample and batch_detail keep only buckets whose start
		 * fits, and only moments inside them */
		bucket_start_us(s, bucket, &start);
		r = block_encode(s, v + g[k].at, g[k].n, start, &block, &len);
		if (r < 0) {
			seterr(s, "%s: encoding the detail of series %u at %lld: %s", s->dir,
			       series, (long long)bucket_start(s, bucket), strerror(-r));
			break;
		}
		detail_key(key, series, bucket, s->commits + 1);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, sizeof(key),
		                          (char *)block, len);
		free(block);
	}
	free(g);
	if (r == 0 && s->piece_commits < UINT_MAX)
		s->piece_commits++;
	free(v);
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
	struct store_sample *v = NULL;
	size_t cap = 0, n = 0, pieces = 0;
	uint8_t start[DETAIL_KEY_LEN];
	uint32_t lo, hi, cur = 0;
	int64_t bstart = 0;
	bool end = false;
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
		if (pieces && (end || get_be32(k + 5) != cur)) {
			/* bucket `cur` is whole: order it, check it, walk it */
			if (pieces > 1)
				samples_block_sort(v, n);
			for (size_t i = 0; i < n; i++) {
				if (v[i].node >= s->nnodes) {
					r = -1;
					goto damaged;
				}
				if (v[i].time_us < from_us)
					continue;
				if (v[i].time_us >= to_us)
					goto out;
				r = fn(ctx, &v[i]);
				if (r)
					goto out;
			}
			n = pieces = 0;
		}
		if (end)
			break;
		size_t vlen;
		const char *val = rocksdb_iter_value(it, &vlen);

		cur = get_be32(k + 5);
		if (!bucket_start_us(s, cur, &bstart)) {
			r = -1;
			goto damaged;
		}
		r = samples_block_decode(val, vlen, bstart, bucket_us(s), &v, &n, &cap);
		if (r < 0)
			goto damaged;
		pieces++;
		rocksdb_iter_next(it);
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr)
		r = rdb_fail(s, rerr, "reading detail");
	goto out;
damaged:
	if (r == -1 || r == -EIO) {
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

static int rollup_run(struct rdb *s, struct store_rollup_stats *st, bool seal_open);

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
	if (rollup_run(s, &st, false) < 0) {
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
	return rollup_run(s, st, false);
}

int detail_seal_all(struct rdb *s)
{
	struct store_rollup_stats st;

	if (s->readonly || s->batch)
		return 0;
	return rollup_run(s, &st, true);
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
	uint8_t *out = NULL, key[DETAIL_KEY_LEN];
	size_t outlen = 0;
	int64_t start;
	int r = 0;

	if (p->n > 1) {
		if (!bucket_start_us(s, get_be32(p->keys[0] + 5), &start))
			r = -1;
		else
			r = detail_merge(s, start, (const char *const *)p->vals, p->lens, p->n,
			                 &out, &outlen);
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
			                          DETAIL_KEY_LEN, (const char *)out, outlen);
			(*sealed)++;
		}
		free(out);
	}
	seal_clear(p);
	return r;
}

/* One roll-up being built: its write and what it forgets and seals.
 * Bucket indexes per clock ([0] perf's, [1] Unix time): the detail of
 * [lo, hi) goes, the pieces of [seal_from, seal_to) are sealed, and the
 * buckets below closed_to have closed (closed_to is seal_to unless the
 * open buckets are sealed too). */
struct rollup {
	struct rdb *s;
	struct store_rollup_stats *st;
	rocksdb_writebatch_t *wb;
	rocksdb_iterator_t *it;
	uint64_t *gone; /* by series: samples whose detail goes */
	uint64_t sealed;
	struct seal_set set;
	uint32_t cur;                  /* the bucket being sealed (or found damaged) */
	uint32_t last_id, last_bucket; /* the last bucket forgotten */
	int64_t newest[2], lo[2], hi[2], seal_from[2], seal_to[2], closed_to[2];
	bool seal_open; /* seal every bucket's pieces, the open ones too */
};

/* The ranges of buckets a roll-up walks: only those, never the detail
 * that stays as it is. */
static void rollup_ranges(struct rollup *ru)
{
	const struct rdb *s = ru->s;
	int64_t wall_first = -floor_div(-(int64_t)STORE_WALL_CLOCK_MIN * US_PER_S, bucket_us(s));

	newest_moments(s, ru->newest);
	ru->lo[0] = INT32_MIN;
	ru->lo[1] = wall_first;
	for (int c = 0; c < 2; c++) {
		int64_t top = c == 0 ? wall_first : (int64_t)INT32_MAX + 1;

		ru->hi[c] = rollup_cut(s, ru->newest[c]);
		ru->seal_to[c] = seal_cut(s, ru->newest[c]);
		if (ru->hi[c] > top)
			ru->hi[c] = top;
		if (ru->seal_to[c] > top)
			ru->seal_to[c] = top;
		ru->closed_to[c] = ru->seal_to[c];
		if (ru->seal_open)
			ru->seal_to[c] = top;
		if (ru->hi[c] < ru->lo[c])
			ru->hi[c] = ru->lo[c];
		ru->seal_from[c] = s->sealed_cut[c] > ru->hi[c] ? s->sealed_cut[c] : ru->hi[c];
	}
}

static int64_t key_bucket_index(const uint8_t *k)
{
	return (int32_t)(get_be32(k + 5) ^ 0x80000000u);
}

static uint32_t index_bucket(int64_t idx)
{
	return (uint32_t)(int32_t)idx ^ 0x80000000u;
}

/* Puts the deletion of one block of series `id` (key k, value val) into
 * the write and counts what goes.  0, or -1 when it is damaged. */
static int rollup_forget(struct rollup *ru, uint32_t id, const uint8_t *k, size_t klen,
                         const char *val, size_t vlen)
{
	uint32_t bucket = get_be32(k + 5);
	uint64_t n;

	if (detail_count(val, vlen, &n) < 0) {
		ru->cur = bucket;
		return -1;
	}
	rocksdb_writebatch_delete_cf(ru->wb, ru->s->cf[CF_DEFAULT], (const char *)k, klen);
	ru->gone[id] += n;
	/* a (series, bucket) once, however many pieces */
	ru->st->slices += !(id == ru->last_id && bucket == ru->last_bucket);
	ru->last_id = id;
	ru->last_bucket = bucket;
	ru->st->samples += n;
	ru->st->bytes += vlen;
	return 0;
}

/* Walks the detail of series `id` on clock c: forgets what is behind the
 * window, then seeks to what is to be sealed and seals it bucket by
 * bucket.  0, -ENOMEM, or -1 when a block is damaged (ru->cur). */
static int rollup_series(struct rollup *ru, uint32_t id, int c)
{
	rocksdb_iterator_t *it = ru->it;
	uint8_t key[DETAIL_KEY_LEN];
	int64_t from = ru->hi[c] > ru->lo[c] ? ru->lo[c] : ru->seal_from[c];
	int r = 0;

	if ((from >= ru->seal_to[c] && from >= ru->hi[c]) || from > INT32_MAX)
		return 0;
	detail_key(key, id, index_bucket(from), 0);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const char *val;

		if (!detail_key_ok(k, klen, id))
			break;
		int64_t idx = key_bucket_index(k);
		if (idx >= ru->hi[c] && idx < ru->seal_from[c]) {
			/* past what goes: on to what is to be sealed */
			if (ru->seal_from[c] >= ru->seal_to[c] || ru->seal_from[c] > INT32_MAX)
				break;
			detail_key(key, id, index_bucket(ru->seal_from[c]), 0);
			rocksdb_iter_seek(it, (const char *)key, sizeof(key));
			if (!rocksdb_iter_valid(it))
				break;
			k = (const uint8_t *)rocksdb_iter_key(it, &klen);
			if (!detail_key_ok(k, klen, id))
				break;
			idx = key_bucket_index(k);
		}
		if (idx >= ru->hi[c] && idx >= ru->seal_to[c])
			break;
		val = rocksdb_iter_value(it, &vlen);
		if (idx < ru->hi[c]) {
			if ((r = rollup_forget(ru, id, k, klen, val, vlen)) < 0)
				return r;
			continue;
		}
		if (ru->set.n && get_be32(k + 5) != ru->cur &&
		    (r = seal_flush(ru->s, ru->wb, &ru->set, &ru->sealed)) < 0)
			return r;
		ru->cur = get_be32(k + 5);
		if ((r = seal_add(&ru->set, k, val, vlen)) < 0)
			return r;
	}
	if (ru->set.n)
		r = seal_flush(ru->s, ru->wb, &ru->set, &ru->sealed);
	return r;
}

/* Puts the series records whose `recent` went down into the write, writes
 * it, and follows it in memory.  0 or -errno (with the message set). */
static int rollup_write(struct rollup *ru)
{
	struct rdb *s = ru->s;
	struct buf buf = {0};
	char *rerr = NULL;
	size_t written = 0;
	int r = 0;

	/* Series records are written in this build's form: a store of an
	 * older schema is marked first (a roll-up of compact() or of a
	 * writer that has not written yet). */
	for (uint32_t id = 1; id < s->nseries && r == 0; id++)
		if (ru->gone[id] && s->schema < STORE_SCHEMA_VERSION)
			r = schema_upgrade(s);
	if (r < 0)
		return r;
	for (uint32_t id = 1; id < s->nseries; id++) {
		struct series_rec n;
		uint8_t key[5];

		if (!ru->gone[id])
			continue;
		n = s->series[id];
		n.recent = ru->gone[id] < n.recent ? n.recent - ru->gone[id] : 0;
		buf.len = 0;
		r = series_encode(&buf, &n);
		if (r < 0) {
			seterr(s, "%s: out of memory", s->dir);
			goto out;
		}
		id_key(key, KEY_SERIES, id);
		rocksdb_writebatch_put_cf(ru->wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	rocksdb_write(s->db, s->wopts, ru->wb, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "roll-up");
		goto out;
	}
	for (uint32_t id = 1; id < s->nseries; id++)
		if (ru->gone[id])
			s->series[id].recent = ru->gone[id] < s->series[id].recent
			                               ? s->series[id].recent - ru->gone[id]
			                               : 0;
	rocksdb_writebatch_data(ru->wb, &written);
	settle(s, written);
	s->seq = rocksdb_get_latest_sequence_number(s->db);
out:
	free(buf.p);
	return r;
}

/* store_rollup() once its caller has checked that it may write: in one
 * write, forgets the detail of the buckets behind the keep window and
 * seals the pieces of the buckets that have closed since the last time
 * (with seal_open, of every bucket after those too). */
static int rollup_run(struct rdb *s, struct store_rollup_stats *st, bool seal_open)
{
	struct rollup ru = {.s = s, .st = st, .seal_open = seal_open};
	uint64_t fold_next = s->fold_from;
	char *rerr = NULL;
	int folded = 0, r = 0;

	memset(st, 0, sizeof(*st));
	rollup_ranges(&ru);
	ru.wb = rocksdb_writebatch_create();
	ru.it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	ru.gone = calloc(s->nseries ? s->nseries : 1, sizeof(*ru.gone));
	if (!ru.wb || !ru.it || !ru.gone) {
		r = -ENOMEM;
		goto fail;
	}
	for (uint32_t id = 1; id < s->nseries && r == 0; id++)
		for (int c = 0; c < 2 && r == 0; c++)
			r = rollup_series(&ru, id, c);
	if (r < 0)
		goto fail;
	rocksdb_iter_get_error(ru.it, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "reading detail");
		goto out;
	}
	/* A writer that committed change records twice or more folds them
	 * with its seals, and at its close or a compaction (seal_open) the
	 * last run too, whose bucket may be open; an import's one commit
	 * stays the last record its write-ahead log holds. */
	if (seal_open || s->change_commits > 1) {
		r = changes_fold(s, ru.wb, seal_open, &fold_next);
		if (r < 0)
			goto fail;
		folded = r;
	}
	if ((st->slices || ru.sealed || folded) && (r = rollup_write(&ru)) < 0)
		goto out;
	s->fold_from = fold_next;
	/* below these buckets: no detail left, and every closed bucket one
	 * block */
	for (int c = 0; c < 2; c++) {
		s->rolled_cut[c] = rollup_cut(s, ru.newest[c]);
		if (ru.closed_to[c] > s->sealed_cut[c])
			s->sealed_cut[c] = ru.closed_to[c];
	}
	goto out;
fail:
	if (r == -ENOMEM)
		seterr(s, "%s: out of memory", s->dir);
	else if (r == -1) {
		seterr(s, "%s: store is damaged: the detail of a series at %lld", s->dir,
		       (long long)bucket_start(s, ru.cur));
		r = -EIO;
	}
out:
	seal_clear(&ru.set);
	free(ru.set.keys);
	free(ru.set.vals);
	free(ru.set.lens);
	free(ru.gone);
	if (ru.it)
		rocksdb_iter_destroy(ru.it);
	if (ru.wb)
		rocksdb_writebatch_destroy(ru.wb);
	return r;
}

/*
 * copy.c — store_copy(): push and merge, from any store into any other, by
 * content.
 *
 * The source names the (series, bucket) pairs that changed since a cursor
 * (all of them from the start); the copy re-reads each of those buckets
 * whole and hands its counts to a batch of the destination, translating
 * frames, stack nodes and series by what they are: a frame by its fields,
 * a node by (translated parent, translated frame), a series by its key
 * with its host.  The batch is marked as a copy from the source's id
 * (batch_source), which a database uses to replace that source's earlier
 * value of each bucket and to record, in the same transaction, how far
 * the copies reached; a directory adds, so it takes a source once.  With
 * store_copy_opts.samples each bucket's detail (the recent tier) goes in
 * the same batch as its counts (batch_detail), its nodes translated the
 * same way; counts never come from it, so nothing is counted twice.
 * Each series copied also carries the source's first and last moment
 * (batch_moments), which the destination takes in place of its counts'
 * bucket starts, widening the series' [first, last] to include them.
 * Names the source found for frames after its last copy (renames_since)
 * go with the transaction that moves its record: the destination's
 * unnamed frames of the same module, build id and file offset take them
 * (copy_renames), so they arrive whole and once.
 */
#include "store-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct pair {
	uint32_t series;
	int64_t bucket;
};

struct unnamed {
	uint32_t id;
	struct store_frame f;
};

struct copy {
	struct store *dst, *src;
	const struct store_copy_opts *o;
	struct store_copy_stats *st;
	char *err;
	size_t errlen;

	struct pair *pairs;
	size_t npairs, cap;

	struct store_series *list; /* the source's series */
	size_t nlist;
	struct store_series **by_id; /* source series id -> its entry, or NULL */
	uint32_t nby_id;

	/* Source id -> destination id; 0: not yet.  Between batches they
	 * keep only ids below the destination's counts at the batch's start
	 * (committed, final), so they can outlive a batch and, through
	 * o->cache, a copy. */
	uint32_t *node_map, *frame_map, *series_map;
	uint32_t node_base, frame_base; /* dst's counts when the batch began */
	uint32_t *path;                 /* map_node's walk up */
	struct store_batch *b;
	uint32_t cur_series; /* destination series of the bucket being copied */
	int fail;            /* the first error inside a count callback */
	/* With o->samples: the detail of the run of buckets being copied,
	 * its nodes translated. */
	struct store_sample *detail;
	size_t ndetail, detail_cap;

	/* The source's commits this copy covers: after since, up to upto. */
	uint64_t since, upto;
	/* copy_renames: the destination's unnamed frames that know their
	 * offset, sorted by (module, build id, offset). */
	struct unnamed *unnamed;
	size_t nunnamed;
	bool unnamed_built;
	bool rename_said; /* copy_rename set the message of its failure */

	/* The source's identity in dst (copy.c, "the source's identity"). */
	char key[64];
	struct source_mark mark;
	bool lineage;        /* dst records the mark */
	char split_from[64]; /* mark.split_from's storage */
};

static void copy_err(struct copy *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void copy_err(struct copy *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
}

static int add_pair(void *ctx, uint32_t series, int64_t bucket)
{
	struct copy *c = ctx;

	if (c->npairs == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 1024;
		struct pair *np = realloc(c->pairs, nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		c->pairs = np;
		c->cap = nc;
	}
	c->pairs[c->npairs++] = (struct pair){series, bucket};
	return 0;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

/* Sorts the pairs, drops duplicates and those of series no longer listed
 * (pruned to nothing). */
static void pairs_settle(struct copy *c)
{
	size_t n = 0;

	if (c->npairs)
		qsort(c->pairs, c->npairs, sizeof(*c->pairs), pair_cmp);
	for (size_t i = 0; i < c->npairs; i++) {
		const struct pair *p = &c->pairs[i];

		if (p->series >= c->nby_id || !c->by_id[p->series])
			continue;
		if (n && pair_cmp(&c->pairs[n - 1], p) == 0)
			continue;
		c->pairs[n++] = *p;
	}
	c->npairs = n;
}

struct store_copy_cache {
	char src[33], dst[33]; /* the stores' ids */
	uint32_t *node_map, *frame_map;
	size_t nodes, frames; /* their lengths */
};

struct store_copy_cache *store_copy_cache_new(void)
{
	return calloc(1, sizeof(struct store_copy_cache));
}

void store_copy_cache_free(struct store_copy_cache *cache)
{
	if (!cache)
		return;
	free(cache->node_map);
	free(cache->frame_map);
	free(cache);
}

/* A map of n entries: the cache's when it has one (grown, its new tail
 * zero), else a new zeroed one; NULL when out of memory. */
static uint32_t *map_take(uint32_t **cached, size_t *len, size_t n)
{
	uint32_t *m = *cached;
	size_t had = m ? *len : 0;

	*cached = NULL;
	*len = 0;
	if (had < n) {
		uint32_t *g = realloc(m, n * sizeof(*m));

		if (!g) {
			free(m);
			return NULL;
		}
		m = g;
		memset(m + had, 0, (n - had) * sizeof(*m));
	}
	*len = n > had ? n : had;
	return m;
}

/* After a batch (committed or not): forgets every id the batch handed
 * out, i.e. from the destination's counts when it began on, which a
 * commit may have renumbered. */
static void maps_settle(struct copy *c)
{
	uint32_t nodes = store_node_count(c->src), frames = store_frame_count(c->src);

	for (uint32_t i = 0; i < nodes; i++)
		if (c->node_map[i] >= c->node_base)
			c->node_map[i] = 0;
	for (uint32_t i = 0; i < frames; i++)
		if (c->frame_map[i] >= c->frame_base)
			c->frame_map[i] = 0;
	memset(c->series_map, 0, (size_t)c->nby_id * sizeof(*c->series_map));
}

static int map_frame(struct copy *c, uint32_t frame, uint32_t *out)
{
	struct store_frame f;
	int r;

	if (frame >= store_frame_count(c->src))
		return -EIO;
	if (c->frame_map[frame]) {
		*out = c->frame_map[frame];
		return 0;
	}
	r = store_frame_get(c->src, frame, &f);
	if (r == 0)
		r = store_batch_frame(c->b, &f, &c->frame_map[frame]);
	*out = c->frame_map[frame];
	c->st->frames++;
	return r;
}

/* The destination's node for source node `node`: walks up to the first
 * ancestor already translated (or the root), then down, interning. */
static int map_node(struct copy *c, uint32_t node, uint32_t *out)
{
	uint32_t depth = 0, x = node, parent, frame, dparent;
	int r;

	if (node >= store_node_count(c->src))
		return -EIO;
	while (x != STORE_ROOT_NODE && !c->node_map[x]) {
		r = store_node_get(c->src, x, &parent, &frame);
		if (r < 0)
			return r;
		c->path[depth++] = x;
		x = parent;
	}
	dparent = x == STORE_ROOT_NODE ? STORE_ROOT_NODE : c->node_map[x];
	while (depth) {
		uint32_t n = c->path[--depth], dframe;

		r = store_node_get(c->src, n, &parent, &frame);
		if (r == 0)
			r = map_frame(c, frame, &dframe);
		if (r == 0)
			r = store_batch_node(c->b, dparent, dframe, &c->node_map[n]);
		if (r < 0)
			return r;
		c->st->nodes++;
		dparent = c->node_map[n];
	}
	*out = dparent;
	return 0;
}

static int copy_count(void *ctx, int64_t bucket, uint32_t node, uint64_t samples, uint64_t weight)
{
	struct copy *c = ctx;
	uint32_t dnode;
	int r = map_node(c, node, &dnode);

	if (r == 0)
		r = store_batch_add(c->b, c->cur_series, bucket, dnode, samples, weight);
	if (r < 0) {
		c->fail = r;
		return r;
	}
	c->st->samples += samples;
	c->st->weight += weight;
	return 0;
}

static int copy_sample(void *ctx, const struct store_sample *smp)
{
	struct copy *c = ctx;
	struct store_sample *e;
	int r;

	if (c->ndetail == c->detail_cap) {
		size_t nc = c->detail_cap ? c->detail_cap * 2 : 4096;
		struct store_sample *n = realloc(c->detail, nc * sizeof(*n));

		if (!n) {
			c->fail = -ENOMEM;
			return -ENOMEM;
		}
		c->detail = n;
		c->detail_cap = nc;
	}
	e = &c->detail[c->ndetail];
	*e = *smp;
	r = map_node(c, smp->node, &e->node);
	if (r < 0) {
		c->fail = r;
		return r;
	}
	c->ndetail++;
	return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* Hands the detail of source series `series`' buckets [from, to]
 * (seconds, bucket starts) to the batch with the counts: per bucket of
 * the destination, in time order.  A store that replaces gets every
 * source bucket, even one without detail now (its earlier detail goes);
 * one that adds gets the buckets with detail.  0 or -errno (c->fail set
 * when the destination failed). */
static int copy_detail(struct copy *c, uint32_t series, int64_t from, int64_t to)
{
	int64_t sbs = store_bucket_seconds(c->src), dbs = store_bucket_seconds(c->dst);
	int64_t from_us, to_us;
	int r;

	if (!c->dst->ops->batch_detail) {
		copy_err(c, "%s does not keep samples: copy without them", store_where(c->dst));
		c->fail = -EOPNOTSUPP;
		return -EOPNOTSUPP;
	}
	if (__builtin_mul_overflow(from, (int64_t)1000000, &from_us) ||
	    __builtin_mul_overflow(to + sbs, (int64_t)1000000, &to_us))
		return 0; /* no detail this far from 1970 */
	c->ndetail = 0;
	c->fail = 0;
	r = store_series_samples(c->src, series, from_us, to_us, copy_sample, c);
	if (r < 0)
		return r;
	if (c->dst->ops->replaces_sources) {
		/* same bucket size (store_copy checks) */
		size_t i = 0;

		for (int64_t b = from; b <= to; b += sbs) {
			size_t j = i;

			while (j < c->ndetail && c->detail[j].time_us < (b + sbs) * 1000000)
				j++;
			r = c->dst->ops->batch_detail(c->b, c->cur_series, b, c->detail + i, j - i);
			if (r < 0) {
				c->fail = r;
				return r;
			}
			i = j;
		}
		return 0;
	}
	for (size_t i = 0, j; i < c->ndetail; i = j) {
		int64_t b = floor_div(c->detail[i].time_us, dbs * 1000000);

		for (j = i + 1;
		     j < c->ndetail && floor_div(c->detail[j].time_us, dbs * 1000000) == b; j++)
			;
		r = c->dst->ops->batch_detail(c->b, c->cur_series, b * dbs, c->detail + i, j - i);
		if (r < 0) {
			c->fail = r;
			return r;
		}
	}
	return 0;
}

static int map_series(struct copy *c, uint32_t id, bool with_bytes)
{
	const struct store_series *e = c->by_id[id];
	struct store_series_key k = {e->host, e->binary, e->version, e->event, e->unit, e->labels};
	int r;

	if (c->series_map[id])
		return 0;
	r = store_batch_series(c->b, &k, &c->series_map[id]);
	if (r == 0 && with_bytes && e->input_bytes)
		r = store_batch_input_bytes(c->b, c->series_map[id], e->input_bytes);
	return r;
}

/* Gives the destination source series `series`' first and last moment,
 * so that they, not its buckets' starts, become the copy's moments. */
static int copy_moments(struct copy *c, uint32_t series)
{
	const struct store_series *e = c->by_id[series];

	if (!c->dst->ops->batch_moments || e->first_us > e->last_us)
		return 0; /* no moment known */
	return c->dst->ops->batch_moments(c->b, c->cur_series, e->first_us, e->last_us);
}

/* The message for a failure of `s` (the store at fault). */
static int store_fail(struct copy *c, struct store *s, int r)
{
	const char *m = store_errmsg(s);

	copy_err(c, "%s", m && *m ? m : strerror(-r));
	return r;
}

/* ---- names found later ---------------------------------------------------- */

static int unnamed_cmp(const void *pa, const void *pb)
{
	return store_frame_place_cmp(&((const struct unnamed *)pa)->f,
	                             &((const struct unnamed *)pb)->f);
}

/* The destination's committed unnamed frames with an offset, sorted. */
static int unnamed_build(struct copy *c)
{
	size_t cap = 0;

	c->unnamed_built = true;
	for (uint32_t id = 1; id < c->frame_base; id++) {
		struct store_frame f;

		if (store_frame_get(c->dst, id, &f) < 0 || f.kind != STORE_FRAME_UNKNOWN ||
		    !f.offset)
			continue;
		if (c->nunnamed == cap) {
			struct unnamed *n;

			cap = cap ? cap * 2 : 256;
			n = realloc(c->unnamed, cap * sizeof(*n));
			if (!n) {
				copy_err(c, "out of memory");
				return -ENOMEM;
			}
			c->unnamed = n;
		}
		c->unnamed[c->nunnamed++] = (struct unnamed){id, f};
	}
	if (c->nunnamed)
		qsort(c->unnamed, c->nunnamed, sizeof(*c->unnamed), unnamed_cmp);
	return 0;
}

/* One frame the source named: every unnamed frame of the destination
 * that was the same code (module, build id, offset) takes its name. */
static int copy_rename(void *ctx, uint32_t frame, uint64_t old_offset)
{
	struct copy *c = ctx;
	struct unnamed key = {0}, *hit;
	size_t lo, hi;
	int r;

	if (!old_offset || frame >= store_frame_count(c->src))
		return 0;
	r = store_frame_get(c->src, frame, &key.f);
	if (r < 0 || key.f.kind == STORE_FRAME_UNKNOWN)
		return r < 0 ? r : 0;
	if (!c->unnamed_built) {
		r = unnamed_build(c);
		if (r < 0) {
			c->rename_said = true;
			return r;
		}
	}
	key.f.offset = old_offset;
	hit = c->nunnamed ? bsearch(&key, c->unnamed, c->nunnamed, sizeof(key), unnamed_cmp) : NULL;
	if (!hit)
		return 0;
	/* bsearch finds one of the equal run; take all of it */
	lo = hi = (size_t)(hit - c->unnamed);
	while (lo > 0 && !unnamed_cmp(&c->unnamed[lo - 1], &key))
		lo--;
	while (hi + 1 < c->nunnamed && !unnamed_cmp(&c->unnamed[hi + 1], &key))
		hi++;
	key.f.offset = 0;
	for (size_t i = lo; i <= hi; i++) {
		r = store_batch_frame_rename(c->b, c->unnamed[i].id, &key.f);
		if (r < 0) {
			c->rename_said = true;
			return store_fail(c, c->dst, r);
		}
		c->st->renamed++;
	}
	return 0;
}

/* In the transaction that moves the record: the names the source found
 * after the destination's record of it. */
static int copy_renames(struct copy *c)
{
	int r;

	if (!c->src->ops->renames_since || !c->dst->ops->batch_frame_rename)
		return 0;
	r = c->src->ops->renames_since(c->src, c->since, c->upto, copy_rename, c);
	if (r < 0 && !c->rename_said)
		store_fail(c, c->src, r);
	return r;
}

/* Copies pairs [lo, hi) in one batch, moving the source's record from
 * `expect` to `upto`; with_bytes: also the series' input bytes; last:
 * the copy's last transaction, which records the source's lineage. */
static int copy_chunk(struct copy *c, size_t lo, size_t hi, uint64_t expect, uint64_t upto,
                      bool with_bytes, bool last)
{
	uint32_t bs = store_bucket_seconds(c->src);
	int r;

	c->node_base = store_node_count(c->dst);
	c->frame_base = store_frame_count(c->dst);
	c->b = store_batch_new(c->dst);
	if (!c->b)
		return store_fail(c, c->dst, -EIO);
	r = c->dst->ops->batch_source(c->b, c->key, expect, upto);
	/* The lineage moves with the record, in the last transaction only. */
	if (r == 0 && c->lineage && last)
		r = c->dst->ops->batch_lineage(c->b, &c->mark);
	if (r < 0)
		goto fail_dst;
	/* Input bytes go with the transaction that moves the record, for
	 * every series the copy holds. */
	for (size_t i = 0; with_bytes && i < c->npairs && r == 0; i++)
		r = map_series(c, c->pairs[i].series, true);
	if (r < 0)
		goto fail_dst;
	for (size_t i = lo; i < hi;) {
		uint32_t series = c->pairs[i].series;
		int64_t from = c->pairs[i].bucket;
		size_t j = i + 1;

		/* A run of adjacent buckets is one read. */
		while (j < hi && c->pairs[j].series == series &&
		       c->pairs[j].bucket == c->pairs[j - 1].bucket + bs)
			j++;
		r = map_series(c, series, false);
		if (r < 0)
			goto fail_dst;
		c->cur_series = c->series_map[series];
		r = copy_moments(c, series);
		if (r < 0)
			goto fail_dst;
		c->fail = 0;
		r = store_series_counts(c->src, series, from, c->pairs[j - 1].bucket + bs - 1,
		                        copy_count, c);
		if (r == 0 && c->o->samples)
			r = copy_detail(c, series, from, c->pairs[j - 1].bucket);
		if (r < 0) {
			if (r == -EOPNOTSUPP && c->fail == r)
				goto out; /* copy_detail said why */
			if (c->fail == r)
				goto fail_dst;
			store_fail(c, c->src, r);
			goto out;
		}
		c->st->buckets += j - i;
		i = j;
	}
	if (last) {
		r = copy_renames(c);
		if (r < 0)
			goto out;
	}
	r = store_batch_commit(c->b);
	if (r < 0)
		goto fail_dst;
	c->st->commits++;
	goto out;
fail_dst:
	store_fail(c, c->dst, r);
out:
	store_batch_free(c->b);
	c->b = NULL;
	maps_settle(c);
	return r;
}

static int copy_prepare(struct copy *c)
{
	uint32_t nodes = store_node_count(c->src), frames = store_frame_count(c->src);
	struct store_copy_cache *cache = c->o->cache;
	int r = store_series_list(c->src, &c->list, &c->nlist);

	if (r < 0)
		return store_fail(c, c->src, r);
	for (size_t i = 0; i < c->nlist; i++)
		if (c->list[i].id >= c->nby_id)
			c->nby_id = c->list[i].id + 1;
	c->by_id = calloc(c->nby_id + 1, sizeof(*c->by_id));
	c->series_map = calloc(c->nby_id + 1, sizeof(*c->series_map));
	if (cache &&
	    (strcmp(cache->src, store_id(c->src)) || strcmp(cache->dst, store_id(c->dst)))) {
		/* Another pair of stores: start afresh. */
		free(cache->node_map);
		free(cache->frame_map);
		memset(cache, 0, sizeof(*cache));
		snprintf(cache->src, sizeof(cache->src), "%s", store_id(c->src));
		snprintf(cache->dst, sizeof(cache->dst), "%s", store_id(c->dst));
	}
	if (cache) {
		c->node_map = map_take(&cache->node_map, &cache->nodes, (size_t)nodes + 1);
		c->frame_map = map_take(&cache->frame_map, &cache->frames, (size_t)frames + 1);
	} else {
		c->node_map = calloc((size_t)nodes + 1, sizeof(*c->node_map));
		c->frame_map = calloc((size_t)frames + 1, sizeof(*c->frame_map));
	}
	c->path = calloc((size_t)nodes + 1, sizeof(*c->path));
	if (!c->by_id || !c->series_map || !c->node_map || !c->frame_map || !c->path) {
		copy_err(c, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nlist; i++)
		c->by_id[c->list[i].id] = &c->list[i];
	return 0;
}

/* ---- the source's identity ----------------------------------------------

   A database keeps one record per source, under the source's store id:
   how far its copies reached (the source's commit number) and that
   commit's nonce.  A store copied with cp -a, or restored from a backup,
   has the same id and numbers its commits as the original does, but
   never with the same nonces; so the record names the store pushing now
   when that store holds the recorded commit with the recorded nonce.  When
   it does not, the store is a copy (store/README.md, "Source identity"):
   - behind the record (its last commit is older than the one recorded),
     and no other copy resynced under the key: a restored backup, which
     sends everything it holds again under the key, replacing its buckets;
   - else a clone: it takes a key of its own (id~16 random hex digits) and
     sends everything under it; when another copy had resynced under the
     original key, the rows that key got before that resync came from this
     clone's history and go with this copy's commit. */

struct identity {
	struct copy *c;
	uint64_t src_upto;
	const struct source_record *mine;
	struct source_record rec[8], orig, first;
	bool have_orig, have_first, any;
	int fail;
};

static int identity_record(void *ctx, const struct source_record *r)
{
	struct identity *id = ctx;
	const char *base = store_id(id->c->src);
	uint64_t nonce;

	id->any = true;
	if (!strcmp(r->key, base)) {
		id->orig = *r;
		id->have_orig = true;
	}
	if (!id->have_first) {
		id->first = *r;
		id->have_first = true;
	}
	if (id->mine)
		return 0;
	if (!r->has_nonce) {
		/* recorded by an older flamefs: the key alone names it */
		if (!strcmp(r->key, base))
			id->mine = &id->orig;
		return 0;
	}
	if (r->upto > id->src_upto)
		return 0;
	{
		int e = id->c->src->ops->commit_nonce(id->c->src, r->upto, &nonce);

		if (e < 0 && e != -ENOENT) {
			id->fail = e;
			return e;
		}
		if (e == 0 && nonce == r->nonce) {
			id->rec[0] = *r;
			id->mine = &id->rec[0];
		}
	}
	return 0;
}

/* Chooses the key `src` is recorded under in `dst`, where its copy
 * starts (*since) and what the record must read for the commit to go
 * through (*expect), and fills *mark; st->note says what was unusual. */
static int identity_resolve(struct copy *c, char key[64], uint64_t *since, uint64_t *expect,
                            struct source_mark *mark)
{
	struct identity id = {.c = c};
	const char *base = store_id(c->src);
	int r;

	memset(mark, 0, sizeof(*mark));
	snprintf(key, 64, "%s", base);
	*since = *expect = 0;
	/* The source's last commit: asking for changes past every commit
	 * lists none and gives the number. */
	r = c->src->ops->changes(c->src, UINT64_MAX, &id.src_upto, add_pair, c);
	if (r < 0)
		return store_fail(c, c->src, r);
	c->npairs = 0;
	r = c->dst->ops->source_records(c->dst, base, identity_record, &id);
	if (r < 0)
		return id.fail ? store_fail(c, c->src, id.fail) : store_fail(c, c->dst, r);
	if (id.mine) {
		snprintf(key, 64, "%s", id.mine->key);
		*since = *expect = id.mine->upto;
		return 0;
	}
	if (!id.any)
		return 0;
	if (!id.have_orig)
		id.orig = id.first;
	if (id.orig.resync == 0 && id.src_upto < id.orig.upto) {
		snprintf(key, 64, "%s", id.orig.key);
		*expect = id.orig.upto;
		mark->resync = true;
		snprintf(c->st->note, sizeof(c->st->note),
		         "%s is behind what it copied to %s (its last commit is %llu, the "
		         "database's record %llu, which it does not hold): a restored backup; "
		         "sending everything it holds again",
		         store_where(c->src), store_where(c->dst), (unsigned long long)id.src_upto,
		         (unsigned long long)id.orig.upto);
		return 0;
	}
	{
		char suffix[17];
		uint64_t rnd;

		if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			copy_err(c, "getrandom: %s", strerror(errno));
			return -errno;
		}
		snprintf(suffix, sizeof(suffix), "%016llx", (unsigned long long)rnd);
		snprintf(key, 64, "%s~%s", base, suffix);
	}
	if (id.orig.resync) {
		snprintf(c->split_from, sizeof(c->split_from), "%s", id.orig.key);
		mark->split_from = c->split_from;
		mark->split_before = id.orig.resync;
	}
	snprintf(c->st->note, sizeof(c->st->note),
	         "another copy of %s (store id %s) also copies to %s: this one (its commit "
	         "%llu is not the recorded %llu) now copies as source %s, sending everything "
	         "it holds",
	         store_where(c->src), base, store_where(c->dst), (unsigned long long)id.src_upto,
	         (unsigned long long)id.orig.upto, key);
	return 0;
}

/* A directory adds what it takes, so it takes a source once: 1 when the
 * source is already in, unchanged (nothing to do), 0 when never taken,
 * -EEXIST when it changed since. */
static int check_once(struct copy *c, uint64_t taken, uint64_t upto)
{
	if (!taken)
		return 0;
	if (taken == upto)
		return 1;
	copy_err(c,
	         "it already holds a copy of %s (store %s) as of that store's commit %llu, "
	         "which has changed since (commit %llu); a directory adds what it takes, so "
	         "taking it again would count its earlier samples twice: copy into a fresh "
	         "store, or push to a database, which replaces each source's buckets",
	         store_where(c->src), store_id(c->src), (unsigned long long)taken,
	         (unsigned long long)upto);
	return -EEXIST;
}

/* The two stores can be copied between: not one store twice, and of one
 * bucket size where the destination replaces buckets. */
static int copy_check_pair(struct copy *c)
{
	struct store *dst = c->dst, *src = c->src;

	if (strcmp(store_id(dst), store_id(src)) == 0) {
		copy_err(c, "%s and %s are the same store (id %s)", store_where(dst),
		         store_where(src), store_id(src));
		return -EINVAL;
	}
	if (dst->ops->replaces_sources && store_bucket_seconds(dst) != store_bucket_seconds(src)) {
		copy_err(c,
		         "%s has %u-second buckets and %s %u-second ones: a copy that replaces "
		         "buckets needs the same size",
		         store_where(dst), store_bucket_seconds(dst), store_where(src),
		         store_bucket_seconds(src));
		return -EINVAL;
	}
	return 0;
}

/* Where the copy starts (*since) and what the destination holds of the
 * source (*taken, a commit of the source's); *per drops to 0 (one
 * transaction) when everything is sent again under a key. */
static int copy_cursor(struct copy *c, uint64_t *since, uint64_t *taken, uint32_t *per)
{
	int r;

	if (c->lineage) {
		uint64_t from;

		r = identity_resolve(c, c->key, &from, taken, &c->mark);
		if (r < 0)
			return r;
		/* A copy that sends everything again under a key (a restored
		 * backup) or under a new one (a clone) is one transaction, so
		 * that an interrupted one leaves no half behind. */
		if (c->st->note[0])
			*per = 0;
		if (c->o->incremental)
			*since = from;
		return 0;
	}
	r = c->dst->ops->source_cursor(c->dst, store_id(c->src), taken);
	if (r < 0) {
		store_fail(c, c->dst, r);
		return r;
	}
	/* The destination's record is the truth: it commits with the data. */
	if (c->o->incremental && c->dst->ops->replaces_sources)
		*since = *taken;
	return 0;
}

/* The (series, bucket) pairs changed since `since`, the source's commit
 * they reach (*upto) and, with lineage, that commit's nonce, which goes
 * with the record. */
static int copy_read_changes(struct copy *c, uint64_t since, uint64_t *upto)
{
	struct store *src = c->src;
	uint64_t nonce;
	int r;

	r = src->ops->changes(src, since, upto, add_pair, c);
	if (r < 0) {
		if (r == -ENOMEM)
			copy_err(c, "out of memory");
		else
			store_fail(c, src, r);
		return r;
	}
	if (!c->lineage)
		return 0;
	r = src->ops->commit_nonce(src, *upto, &nonce);
	if (r < 0 && r != -ENOENT) {
		store_fail(c, src, r);
		return r;
	}
	c->mark.has_nonce = r == 0;
	c->mark.nonce = r == 0 ? nonce : 0;
	return 0;
}

/* The settled pairs in transactions of `per` buckets (0: all in one).
 * Only the last one moves the record, so an interrupted copy is redone
 * from it, and a database replaces what the earlier ones wrote.  Each one
 * expects the record as it was read, so two copies of one source at once
 * cannot leave older buckets behind a newer record. */
static int copy_chunks(struct copy *c, uint32_t per, uint64_t taken, uint64_t upto)
{
	bool replaces = c->dst->ops->replaces_sources;
	int r;

	/* A directory adds, so it takes a source in one transaction: a
	 * second one after an interruption would add the first again. */
	if (!per || !replaces)
		per = c->npairs ? (uint32_t)(c->npairs < UINT32_MAX ? c->npairs : UINT32_MAX) : 1;
	for (size_t lo = 0;;) {
		size_t hi = c->npairs - lo > per ? lo + per : c->npairs;
		bool last = hi == c->npairs;

		/* Input bytes: a database replaces the source's total of each
		 * series with every copy that moves the record; a directory
		 * adds them, with the one copy it takes. */
		r = copy_chunk(c, lo, hi, taken, last ? upto : taken, last && (replaces || !taken),
		               last);
		if (r < 0)
			return r;
		if (c->o->progress)
			c->o->progress(c->o->ctx, hi, c->npairs);
		if (last)
			return 0;
		lo = hi;
	}
}

/* Ends the source's snapshot and records in the source how far the
 * destination reached; a source open read-only (a recorder holds it) goes
 * without, since the destination's record decides. */
static int copy_remember(struct copy *c, uint64_t upto)
{
	struct store *src = c->src;
	int r;

	if (src->ops->snapshot) {
		r = src->ops->snapshot(src, false);
		if (r < 0) {
			store_fail(c, src, r);
			return r;
		}
	}
	r = src->ops->set_dest_cursor(src, store_id(c->dst), upto);
	if (r == -EROFS)
		r = 0;
	else if (r < 0)
		store_fail(c, src, r);
	return r;
}

/* Ends the source's snapshot if still open and frees the copy's state;
 * the node and frame maps go to o->cache when there is one. */
static void copy_release(struct copy *c)
{
	const struct store_copy_opts *o = c->o;

	if (c->src->ops->snapshot)
		c->src->ops->snapshot(c->src, false); /* ends it, if still open */
	store_series_free(c->list, c->nlist);
	free(c->by_id);
	free(c->series_map);
	if (o->cache && c->node_map && c->frame_map) {
		/* They hold only committed ids (maps_settle): the next copy's. */
		o->cache->node_map = c->node_map;
		o->cache->frame_map = c->frame_map;
	} else {
		free(c->node_map);
		free(c->frame_map);
		if (o->cache)
			o->cache->nodes = o->cache->frames = 0;
	}
	free(c->path);
	free(c->pairs);
	free(c->detail);
	free(c->unnamed);
}

int store_copy(struct store *dst, struct store *src, const struct store_copy_opts *o,
               struct store_copy_stats *st, char *err, size_t errlen)
{
	struct copy c = {.dst = dst, .src = src, .o = o, .st = st, .err = err, .errlen = errlen};
	uint64_t since = 0, taken = 0, upto = 0;
	uint32_t per = o->buckets_per_commit;
	int r;

	memset(st, 0, sizeof(*st));
	if (errlen)
		err[0] = 0;
	r = copy_check_pair(&c);
	if (r < 0)
		return r;
	c.lineage = dst->ops->replaces_sources && dst->ops->source_records &&
	            dst->ops->batch_lineage && src->ops->commit_nonce;
	snprintf(c.key, sizeof(c.key), "%s", store_id(src));
	/* One state of the source for the whole copy (a database that
	 * hosts push into while it is read). */
	if (src->ops->snapshot) {
		r = src->ops->snapshot(src, true);
		if (r < 0)
			return store_fail(&c, src, r);
	}
	r = copy_cursor(&c, &since, &taken, &per);
	if (r == 0)
		r = copy_prepare(&c);
	if (r == 0)
		r = copy_read_changes(&c, since, &upto);
	if (r == 0 && !dst->ops->replaces_sources)
		r = check_once(&c, taken, upto);
	if (r != 0) {
		/* 1: a directory already holds the source as it is */
		st->nothing_new = r == 1;
		r = r == 1 ? 0 : r;
		goto out;
	}
	pairs_settle(&c);
	for (size_t i = 0; i < c.npairs; i++)
		st->series += i == 0 || c.pairs[i].series != c.pairs[i - 1].series;
	if (!c.npairs && since == upto)
		st->nothing_new = true;
	else {
		c.since = since;
		c.upto = upto;
		r = copy_chunks(&c, per, taken, upto);
	}
	if (r == 0)
		r = copy_remember(&c, upto);
out:
	copy_release(&c);
	return r;
}

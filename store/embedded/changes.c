/*
 * changes.c — what push and merge need from an embedded store: its
 * identity, a number for every commit and a record of the (series,
 * bucket) pairs each commit wrote, and the cursors that remember how far
 * copies went.
 *
 * Every commit takes the next commit number (meta "mcommits", u64 BE;
 * absent means 1, so that a store written before commits were numbered
 * differs from "never copied", 0, and its first numbered commit is 2) and
 * writes, in its own WriteBatch, a change record: key 'c' + u64 BE commit
 * number, value varint(n) then n pairs varint(series), varint(bucket
 * index).  An incremental copy reads the records after its cursor and
 * re-reads those buckets whole; a copy from the start walks the counts
 * keys instead, so stores written before change records existed (schema
 * 2) copy whole.  Cursors are meta records: "mdest:<id>" (how far copies
 * from this store to store <id> reached) and "msrc:<id>" (how far copies
 * from store <id> into this one reached), each a u64 BE commit number of
 * the source.
 *
 * Each commit also writes 8 random bytes under 'k' + u64 BE commit number,
 * its nonce: a copy of the store (cp -a, a backup restored) goes on
 * numbering its commits as the original does, but never with the same
 * nonces, so a database that recorded the nonce of the last commit a push
 * sent can tell whether the store pushing now holds that commit
 * (store_copy(), "Source identity").  A nonce goes when its commit's change
 * record does (changes_prune).
 *
 * Change records are folded (changes_fold) so that they grow with the
 * buckets written, not with the commits: a run of consecutive records
 * whose largest bucket is the same becomes one record, under the run's
 * last commit number, naming the union of the run's pairs (sorted by
 * bucket, then series).  A reader whose cursor is anywhere in the run
 * then reads the whole union, a superset of what changed after its
 * cursor, and a copy re-reads those buckets whole anyway (a database
 * replaces them; a directory never copies incrementally), so it misses
 * nothing; a cursor at or past the run's last commit skips it, as it
 * skipped every record of the run.  The format is the one every record
 * has, so an older flamefs reads a folded record as it reads any other.
 * Nonces are not folded: a database may hold the nonce of any commit.
 */
#include "embedded-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Reads an 8-byte meta value: 0 (with *v = absent when there is none)
 * or -errno. */
static int meta_get_u64(struct rdb *s, const char *key, uint64_t *v, uint64_t absent)
{
	uint8_t be[8];
	bool found;
	int r = meta_get_fixed(s, key, be, sizeof(be), &found);

	if (r == 0)
		*v = found ? get_be64(be) : absent;
	return r;
}

int changes_load(struct rdb *s)
{
	uint8_t id[16];
	bool found;
	int r = meta_get_fixed(s, META_STORE_ID, id, sizeof(id), &found);

	if (r < 0)
		return r;
	if (!found) {
		seterr(s, "%s: store is damaged: meta %s", s->dir, &META_STORE_ID[1]);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(id); i++)
		snprintf(s->id_hex + 2 * i, 3, "%02x", id[i]);
	return meta_get_u64(s, META_COMMITS, &s->commits, 1);
}

const char *rdb_id(const struct store *sbase)
{
	return rdb_cof(sbase)->id_hex;
}

int changes_put(struct rdb_batch *b, rocksdb_writebatch_t *wb)
{
	struct rdb *s = b->s;
	struct buf buf = {0};
	uint8_t key[9], v[8];
	char mkey[64];
	int r;

	put_be64(v, s->commits + 1);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], META_COMMITS, strlen(META_COMMITS),
	                          (char *)v, 8);
	if (getrandom(v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
		seterr(s, "%s: getrandom: %s", s->dir, strerror(errno));
		return -EIO;
	}
	key[0] = KEY_NONCE;
	put_be64(key + 1, s->commits + 1);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 9, (char *)v, 8);
	if (b->source[0]) {
		snprintf(mkey, sizeof(mkey), "%s%s", META_SOURCE, b->source);
		put_be64(v, b->source_upto);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], mkey, strlen(mkey), (char *)v, 8);
	}
	if (!b->ngroups)
		return 0;
	r = buf_reserve(&buf, 10 + (size_t)b->ngroups * 10);
	if (r < 0)
		return r;
	buf_varint(&buf, b->ngroups);
	for (uint32_t g = 0; g < b->ngroups; g++) {
		buf_varint(&buf, b->groups[g].series);
		buf_varint(&buf, b->groups[g].bucket);
	}
	key[0] = KEY_CHANGE;
	put_be64(key + 1, s->commits + 1);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 9, (char *)buf.p, buf.len);
	free(buf.p);
	return 0;
}

/* Every (series, bucket) key of the counts column family. */
static int changes_all(struct rdb *s, int (*fn)(void *, uint32_t, int64_t), void *ctx)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_COUNTS]);
	char *rerr = NULL;
	int r = 0;

	if (!it) {
		seterr(s, "%s: out of memory", s->dir);
		return -ENOMEM;
	}
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && !r; rocksdb_iter_next(it)) {
		size_t klen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);

		if (klen != 8) {
			seterr(s, "%s: store is damaged: a counts key of %zu bytes", s->dir, klen);
			r = -EIO;
			break;
		}
		r = fn(ctx, get_be32(k), bucket_start(s, get_be32(k + 4)));
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr && !r)
		r = rdb_fail(s, rerr, "listing counts");
	else if (rerr)
		rocksdb_free(rerr);
	rocksdb_iter_destroy(it);
	return r;
}

/* The pairs the change records after commit `since` name. */
static int changes_after(struct rdb *s, uint64_t since, int (*fn)(void *, uint32_t, int64_t),
                         void *ctx)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	uint8_t start[9];
	char *rerr = NULL;
	int r = 0;

	if (!it) {
		seterr(s, "%s: out of memory", s->dir);
		return -ENOMEM;
	}
	start[0] = KEY_CHANGE;
	put_be64(start + 1, since + 1);
	for (rocksdb_iter_seek(it, (char *)start, 9); rocksdb_iter_valid(it) && !r;
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);
		const uint8_t *end = v + vlen;
		uint64_t n, series, bucket;

		if (!klen || k[0] != KEY_CHANGE)
			break;
		if (klen != 9 || get_varint(&v, end, &n) < 0)
			goto damaged;
		for (uint64_t i = 0; i < n && !r; i++) {
			if (get_varint(&v, end, &series) < 0 || get_varint(&v, end, &bucket) < 0 ||
			    series > UINT32_MAX || bucket > UINT32_MAX)
				goto damaged;
			r = fn(ctx, (uint32_t)series, bucket_start(s, (uint32_t)bucket));
		}
		if (!r && v != end)
			goto damaged;
		continue;
	damaged:
		seterr(s, "%s: store is damaged: the change record of commit %llu", s->dir,
		       (unsigned long long)(klen == 9 ? get_be64(k + 1) : 0));
		r = -EIO;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr && !r)
		r = rdb_fail(s, rerr, "listing changes");
	else if (rerr)
		rocksdb_free(rerr);
	rocksdb_iter_destroy(it);
	return r;
}

int rdb_changes(struct store *sbase, uint64_t since, uint64_t *upto,
                int (*fn)(void *ctx, uint32_t series, int64_t bucket_start), void *ctx)
{
	struct rdb *s = rdb_of(sbase);
	int r = need_db(s);

	/* A reader reads the counter as it is now; the writer knows it. */
	if (r == 0 && s->readonly)
		r = meta_get_u64(s, META_COMMITS, &s->commits, 1);
	if (r < 0)
		return r;
	*upto = s->commits;
	if (since >= s->commits && since)
		return 0;
	return since ? changes_after(s, since, fn, ctx) : changes_all(s, fn, ctx);
}

int changes_prune(struct rdb *s, rocksdb_writebatch_t *wb, uint32_t cut, bool wall_clock_only)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	uint8_t start = KEY_CHANGE;
	char *rerr = NULL;
	uint64_t after = 0; /* the commit of the last record deleted */
	int n = 0;

	if (!it)
		return -ENOMEM;
	/* Records come in commit order, which is mostly time order: stop at
	 * the first one that names a bucket still kept. */
	for (rocksdb_iter_seek(it, (char *)&start, 1); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);
		const uint8_t *end = v + vlen;
		uint64_t cnt, series, bucket;
		bool gone = klen == 9 && get_varint(&v, end, &cnt) == 0;

		if (!klen || k[0] != KEY_CHANGE)
			break;
		for (uint64_t i = 0; gone && i < cnt; i++)
			gone = get_varint(&v, end, &series) == 0 &&
			       get_varint(&v, end, &bucket) == 0 && bucket < cut &&
			       !(wall_clock_only &&
			         bucket_start(s, (uint32_t)bucket) < STORE_WALL_CLOCK_MIN);
		if (!gone)
			break;
		rocksdb_writebatch_delete_cf(wb, s->cf[CF_DEFAULT], k, klen);
		/* the nonces of the commits the record stands for: a folded
		 * record's run, and commits that changed nothing before it */
		{
			uint8_t lo[9], hi[9];

			lo[0] = hi[0] = KEY_NONCE;
			put_be64(lo + 1, after + 1);
			memcpy(hi + 1, k + 1, 8);
			after = get_be64(hi + 1);
			if (after < UINT64_MAX) {
				put_be64(hi + 1, after + 1);
				rocksdb_writebatch_delete_range_cf(wb, s->cf[CF_DEFAULT],
				                                   (char *)lo, 9, (char *)hi, 9);
			}
		}
		n++;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return rdb_fail(s, rerr, "listing changes");
	return n;
}

int rdb_batch_source(struct store_batch *bbase, const char *source, uint64_t expect, uint64_t upto)
{
	struct rdb_batch *b = rdb_batch_of(bbase);

	(void)expect; /* a directory takes a source once (store_copy) */
	if (strlen(source) != 32)
		return -EINVAL;
	memcpy(b->source, source, 33);
	b->source_upto = upto;
	return 0;
}

int rdb_commit_nonce(struct store *sbase, uint64_t commit, uint64_t *nonce)
{
	struct rdb *s = rdb_of(sbase);
	uint8_t key[9];
	char *rerr = NULL, *val;
	size_t len = 0;
	int r = need_db(s);

	if (r < 0)
		return r;
	key[0] = KEY_NONCE;
	put_be64(key + 1, commit);
	val = rocksdb_get_cf(s->db, s->ropts, s->cf[CF_DEFAULT], (char *)key, 9, &len, &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "reading a commit's nonce");
	if (!val)
		return -ENOENT;
	r = len == 8 ? 0 : -EIO;
	if (r == 0)
		*nonce = get_be64((const uint8_t *)val);
	else
		seterr(s, "%s: store is damaged: the nonce of commit %llu", s->dir,
		       (unsigned long long)commit);
	rocksdb_free(val);
	return r;
}

static int cursor_get(struct store *sbase, const char *prefix, const char *id, uint64_t *upto)
{
	struct rdb *s = rdb_of(sbase);
	char key[64];
	int r = need_db(s);

	if (r < 0)
		return r;
	snprintf(key, sizeof(key), "%s%s", prefix, id);
	return meta_get_u64(s, key, upto, 0);
}

int rdb_source_cursor(struct store *sbase, const char *source, uint64_t *upto)
{
	return cursor_get(sbase, META_SOURCE, source, upto);
}

int rdb_dest_cursor(struct store *sbase, const char *dest, uint64_t *upto)
{
	return cursor_get(sbase, META_DEST, dest, upto);
}

int rdb_set_dest_cursor(struct store *sbase, const char *dest, uint64_t upto)
{
	struct rdb *s = rdb_of(sbase);
	char key[64], *rerr = NULL;
	uint8_t v[8];

	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return -EROFS;
	}
	snprintf(key, sizeof(key), "%s%s", META_DEST, dest);
	put_be64(v, upto);
	rocksdb_put_cf(s->db, s->wopts, s->cf[CF_DEFAULT], key, strlen(key), (char *)v, 8, &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "writing a push cursor");
	return 0;
}

/* ---- folding ------------------------------------------------------------------- */

/* A run of consecutive change records with the same largest bucket. */
struct fold_run {
	uint64_t *commits; /* the records' commit numbers, in order */
	size_t ncommits, commits_cap;
	uint64_t *pairs; /* bucket << 32 | series, as read */
	size_t npairs, pairs_cap;
	uint32_t max_bucket;
};

static int run_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	np = realloc(*p, n * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = n;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Puts into wb the run as one record under its last commit and the
 * deletion of the others; nothing for a run of one record.  The number of
 * records deleted, or -errno. */
static int run_flush(struct rdb *s, rocksdb_writebatch_t *wb, struct fold_run *run)
{
	struct buf buf = {0};
	uint8_t key[9];
	size_t n = 0;
	int r;

	if (run->ncommits < 2)
		return 0;
	qsort(run->pairs, run->npairs, sizeof(*run->pairs), u64_cmp);
	for (size_t i = 0; i < run->npairs; i++)
		if (i == 0 || run->pairs[i] != run->pairs[n - 1])
			run->pairs[n++] = run->pairs[i];
	r = buf_reserve(&buf, 10 + n * 10);
	if (r < 0)
		return r;
	buf_varint(&buf, n);
	for (size_t i = 0; i < n; i++) {
		buf_varint(&buf, (uint32_t)run->pairs[i]);
		buf_varint(&buf, run->pairs[i] >> 32);
	}
	key[0] = KEY_CHANGE;
	for (size_t i = 0; i + 1 < run->ncommits; i++) {
		put_be64(key + 1, run->commits[i]);
		rocksdb_writebatch_delete_cf(wb, s->cf[CF_DEFAULT], (char *)key, 9);
	}
	put_be64(key + 1, run->commits[run->ncommits - 1]);
	rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 9, (char *)buf.p, buf.len);
	free(buf.p);
	return (int)(run->ncommits - 1 < INT_MAX ? run->ncommits - 1 : INT_MAX);
}

/* Reads one change record into the run's pairs: 0, -ENOMEM, or -1 when it
 * is damaged. */
static int run_read(struct fold_run *run, const uint8_t *v, size_t vlen, uint32_t *max_bucket)
{
	const uint8_t *end = v + vlen;
	uint64_t n, series, bucket;

	*max_bucket = 0;
	if (get_varint(&v, end, &n) < 0 || n > vlen)
		return -1;
	if (run_grow((void **)&run->pairs, &run->pairs_cap, run->npairs + n, sizeof(*run->pairs)))
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		if (get_varint(&v, end, &series) < 0 || get_varint(&v, end, &bucket) < 0 ||
		    series > UINT32_MAX || bucket > UINT32_MAX)
			return -1;
		run->pairs[run->npairs + i] = bucket << 32 | series;
		if (bucket > *max_bucket)
			*max_bucket = (uint32_t)bucket;
	}
	if (v != end)
		return -1;
	run->npairs += n;
	return 0;
}

int changes_fold(struct rdb *s, rocksdb_writebatch_t *wb, bool all, uint64_t *next)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_DEFAULT]);
	struct fold_run run = {0};
	uint8_t start[9];
	char *rerr = NULL;
	int folded = 0, r = 0;

	if (!it)
		return -ENOMEM;
	start[0] = KEY_CHANGE;
	*next = s->fold_from;
	put_be64(start + 1, s->fold_from);
	for (rocksdb_iter_seek(it, (char *)start, 9); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);
		size_t before = run.npairs;
		uint32_t max_bucket;

		if (!klen || k[0] != KEY_CHANGE)
			break;
		/* A damaged record stays as it is, for the reader to report;
		 * folding stops before it. */
		if (klen != 9)
			break;
		r = run_read(&run, v, vlen, &max_bucket);
		if (r == -1) {
			run.npairs = before;
			r = 0;
			break;
		}
		if (r < 0)
			goto out;
		if (run.ncommits && max_bucket != run.max_bucket) {
			uint64_t *moved = run.pairs + before;
			size_t nmoved = run.npairs - before;

			run.npairs = before;
			r = run_flush(s, wb, &run);
			if (r < 0)
				goto out;
			folded += r;
			memmove(run.pairs, moved, nmoved * sizeof(*run.pairs));
			run.npairs = nmoved;
			run.ncommits = 0;
		}
		if (run_grow((void **)&run.commits, &run.commits_cap, run.ncommits + 1,
		             sizeof(*run.commits))) {
			r = -ENOMEM;
			goto out;
		}
		run.commits[run.ncommits++] = get_be64(k + 1);
		run.max_bucket = max_bucket;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "listing changes");
		goto out;
	}
	/* The last run may still grow (its bucket is open) unless all. */
	if (run.ncommits && all) {
		r = run_flush(s, wb, &run);
		if (r < 0)
			goto out;
		folded += r;
	}
	r = folded;
	if (run.ncommits)
		*next = all ? run.commits[run.ncommits - 1] : run.commits[0];
out:
	rocksdb_iter_destroy(it);
	free(run.commits);
	free(run.pairs);
	return r;
}

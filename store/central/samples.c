/*
 * samples.c — the recent tier in the central store: a batch's detail
 * (store_batch_sample counts a sample and keeps its detail; a copy's
 * batch_detail keeps a bucket's detail, replacing what the same source
 * gave it before), reading it back in time order over a window (one
 * query a series, or one for a listed set of series,
 * store_samples_prefetch), the window of detail kept (flamefs_meta's
 * keep_samples) and the roll-up that forgets the detail of older
 * buckets in one transaction.  Blocks are encoded and decoded by
 * ../samples-block.c; commit.c writes a batch's detail with its counts,
 * in the same transaction.
 */
#include "central-internal.h"
#include "samples-block-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define US 1000000

/* Seconds past which a time's microseconds would not fit int64. */
#define US_SECONDS_MAX 9223372036854LL

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

int64_t central_bucket_of_us(const struct pg *s, int64_t time_us)
{
	int64_t bs = s->bucket_seconds;

	return floor_div(floor_div(time_us, US), bs) * bs;
}

int64_t central_us_of(int64_t seconds)
{
	if (seconds > US_SECONDS_MAX)
		return US_SECONDS_MAX * US;
	if (seconds < -US_SECONDS_MAX)
		return -US_SECONDS_MAX * US;
	return seconds * US;
}

/* The bucket's span in microseconds, and whether a bucket's
 * microseconds fit int64 (every bucket a sample's time can fall in
 * does; a copy may name others). */
static int64_t span_us(const struct pg *s)
{
	return (int64_t)s->bucket_seconds * US;
}

static bool bucket_in_range(const struct pg *s, int64_t bucket)
{
	return bucket >= -US_SECONDS_MAX && bucket <= US_SECONDS_MAX - s->bucket_seconds;
}

/* ---- a batch's detail ------------------------------------------------------------ */

static int detail_push(struct pg_batch *b, uint32_t series, const struct store_sample *smp)
{
	if (b->ndetail == b->detail_cap) {
		size_t cap = b->detail_cap ? 2 * b->detail_cap : 4096;
		struct detail_ent *d = realloc(b->detail, cap * sizeof(*d));

		if (!d) {
			central_seterr(b->s, "%s: out of memory", b->s->base.where);
			return -ENOMEM;
		}
		b->detail = d;
		b->detail_cap = cap;
	}
	b->detail[b->ndetail].series = series;
	b->detail[b->ndetail].smp = *smp;
	b->ndetail++;
	return 0;
}

int central_batch_sample(struct store_batch *bbase, uint32_t series, const struct store_sample *smp)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s = b->s;
	struct cseries *r = central_series_by_id(s, series);
	int e;

	if (!r || smp->node >= s->nnodes) {
		central_seterr(s, "sample for an unknown series %u or node %u", series, smp->node);
		return -EINVAL;
	}
	/* its bucket's microseconds must fit int64 */
	if (smp->time_us < -US_SECONDS_MAX * US ||
	    !bucket_in_range(s, central_bucket_of_us(s, smp->time_us))) {
		central_seterr(s, "%s: a sample at %lld us is out of range", s->base.where,
		               (long long)smp->time_us);
		return -ERANGE;
	}
	e = central_batch_count(b, series, floor_div(smp->time_us, US), smp->node, 1, smp->weight,
	                        smp->time_us, true);
	if (e < 0 || s->keep_samples == 0)
		return e;
	e = detail_push(b, series, smp);
	if (e == 0) {
		r->recent++;
		r->detailed = true;
	}
	return e;
}

int central_batch_detail(struct store_batch *bbase, uint32_t series, int64_t bucket_start,
                         const struct store_sample *v, size_t n)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s = b->s;
	struct cseries *r = central_series_by_id(s, series);
	size_t had = b->ndetail;
	int e = 0;

	if (!r) {
		central_seterr(s, "detail for an unknown series %u", series);
		return -EINVAL;
	}
	if (!bucket_in_range(s, bucket_start) ||
	    central_bucket_of_us(s, bucket_start * US) != bucket_start) {
		central_seterr(s, "%s: detail for %lld, which is not the start of a bucket",
		               s->base.where, (long long)bucket_start);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].node >= s->nnodes ||
		    central_bucket_of_us(s, v[i].time_us) != bucket_start) {
			central_seterr(s,
			               "%s: detail of the bucket at %lld holds a sample at %lld us "
			               "or of an unknown node %u",
			               s->base.where, (long long)bucket_start,
			               (long long)v[i].time_us, v[i].node);
			return -EINVAL;
		}
	if (b->replace) {
		if (b->ndkeys == b->dkeys_cap) {
			size_t cap = b->dkeys_cap ? 2 * b->dkeys_cap : 256;
			struct detail_key *k = realloc(b->dkeys, cap * sizeof(*k));

			if (!k)
				goto nomem;
			b->dkeys = k;
			b->dkeys_cap = cap;
		}
		b->dkeys[b->ndkeys].series = series;
		b->dkeys[b->ndkeys].bucket = bucket_start;
		b->ndkeys++;
		r->detailed = true;
	}
	if (s->keep_samples == 0)
		return 0;
	for (size_t i = 0; i < n && e == 0; i++)
		e = detail_push(b, series, &v[i]);
	if (e < 0) {
		b->ndetail = had;
		if (b->replace)
			b->ndkeys--;
		return e;
	}
	for (size_t i = 0; i < n; i++)
		central_series_moment(r, v[i].time_us, true);
	r->recent += n;
	r->detailed = r->detailed || n;
	return 0;
nomem:
	central_seterr(s, "%s: out of memory", s->base.where);
	return -ENOMEM;
}

/* ---- reading ------------------------------------------------------------------- */

/* One series' rows (bucket, block, ...) in bucket order: the samples of
 * the bucket being gathered, the window, and the first error or stop. */
struct sreading {
	struct store_sample *v;
	size_t n, cap;
	unsigned rows;
	int64_t cur;
	bool have, stop;
	int r;
	int64_t from_us, to_us;
	store_sample_fn fn;
	void *ctx;
};

/* Hands out the gathered bucket's samples inside the window, in time
 * order (several rows of a bucket are merged by sorting). */
static void sr_flush(struct sreading *rd)
{
	if (rd->rows > 1)
		samples_block_sort(rd->v, rd->n);
	for (size_t i = 0; i < rd->n && !rd->stop; i++) {
		if (rd->v[i].time_us < rd->from_us || rd->v[i].time_us >= rd->to_us)
			continue;
		rd->r = rd->fn(rd->ctx, &rd->v[i]);
		rd->stop = rd->r != 0;
	}
	rd->n = 0;
	rd->rows = 0;
}

static void sr_row(struct pg *s, struct sreading *rd, uint32_t series, const PGresult *res)
{
	const char *bv;
	int64_t bucket;
	int e;

	if (rd->stop || rd->r)
		return;
	bv = central_value_bin(s, res, 0, 0, 8, "a bucket");
	bucket = bv ? (int64_t)be64(bv) : 0;
	if (!bv || PQnfields(res) < 2 || PQfformat(res, 1) != 1 || PQgetisnull(res, 0, 1) ||
	    !bucket_in_range(s, bucket)) {
		if (bv)
			central_seterr(
			        s,
			        "%s: unexpected reply from the server: the samples of series "
			        "%u at %lld are not what a flamefs store holds",
			        s->base.where, series, (long long)bucket);
		rd->r = -EIO;
		return;
	}
	if (rd->have && bucket != rd->cur) {
		sr_flush(rd);
		if (rd->stop)
			return;
	}
	rd->cur = bucket;
	rd->have = true;
	e = samples_block_decode(PQgetvalue(res, 0, 1), (size_t)PQgetlength(res, 0, 1), bucket * US,
	                         span_us(s), &rd->v, &rd->n, &rd->cap);
	if (e < 0) {
		central_seterr(s, "%s: %s: the samples of series %u at %lld", s->base.where,
		               e == -ENOMEM ? "out of memory" : "store is damaged", series,
		               (long long)bucket);
		rd->r = e;
		return;
	}
	rd->rows++;
}

static void sr_end(struct sreading *rd)
{
	if (rd->have && !rd->stop && !rd->r)
		sr_flush(rd);
	rd->have = false;
}

/* The buckets a window [from_us, to_us) touches, as the text of two
 * parameters; false when it touches none. */
static bool window_buckets(const struct pg *s, int64_t from_us, int64_t to_us, char lo[24],
                           char hi[24])
{
	if (from_us >= to_us)
		return false;
	snprintf(lo, 24, "%" PRId64, central_bucket_of_us(s, from_us));
	snprintf(hi, 24, "%" PRId64, central_bucket_of_us(s, to_us - 1));
	return true;
}

void central_samples_prefetch_end(struct pg *s)
{
	central_stream_end(s, &s->spf);
}

int central_samples_prefetch(struct store *sbase, const uint32_t *ids, size_t n, int64_t from_us,
                             int64_t to_us)
{
	struct pg *s = pg_of(sbase);
	char w[3][24];
	const char *const vals[3] = {w[0], w[1], w[2]};

	central_prefetch_end(s);
	if (n < 2 || s->schema < 3 || !s->conn || getenv("FLAMEFS_TEST_NO_PREFETCH") ||
	    !window_buckets(s, from_us, to_us, w[0], w[1]))
		return 0;
	snprintf(w[2], sizeof(w[2]), "%" PRIu64, s->seq);
	s->spf.from = from_us;
	s->spf.to = to_us;
	return central_stream_open(
	        s, &s->spf, ids, n,
	        "SELECT d.bucket, d.block, d.series FROM unnest($1::int4[])"
	        " WITH ORDINALITY AS k(series, ord) JOIN samples d ON d.series ="
	        " k.series WHERE d.bucket BETWEEN $2::int8 AND $3::int8 AND d.commit <= $4"
	        " ORDER BY k.ord, d.bucket",
	        vals);
}

static int samples_row(struct pg *s, uint32_t series, const PGresult *res, void *arg)
{
	struct sreading *rd = arg;

	sr_row(s, rd, series, res);
	return rd->r;
}

/* Series `series`'s rows from the stream (the next series of the list). */
static int prefetched(struct pg *s, uint32_t series, struct sreading *rd)
{
	rd->r = central_stream_take(s, &s->spf, series, "samples", samples_row, rd);
	sr_end(rd);
	free(rd->v);
	if (rd->r < 0 || s->spf.pos == s->spf.n)
		central_samples_prefetch_end(s);
	return rd->r;
}

int central_series_samples(struct store *sbase, uint32_t series, int64_t from_us, int64_t to_us,
                           store_sample_fn fn, void *ctx)
{
	struct pg *s = pg_of(sbase);
	char v[4][24];
	const char *vals[4] = {v[0], v[1], v[2], v[3]};
	struct sreading rd = {.from_us = from_us, .to_us = to_us, .fn = fn, .ctx = ctx};
	PGresult *res;

	if (s->spf.on) {
		if (s->spf.pos < s->spf.n && s->spf.ids[s->spf.pos] == series &&
		    s->spf.from == from_us && s->spf.to == to_us)
			return prefetched(s, series, &rd);
	}
	central_prefetch_end(s);
	if (s->schema < 3 || !window_buckets(s, from_us, to_us, v[1], v[2]))
		return 0;
	s->snapshot_read = s->snapshot;
	snprintf(v[0], sizeof(v[0]), "%" PRIu32, series);
	snprintf(v[3], sizeof(v[3]), "%" PRIu64, s->seq);
	if (!s->conn ||
	    !PQsendQueryParams(
	            s->conn,
	            "SELECT bucket, block FROM samples WHERE series = $1"
	            " AND bucket BETWEEN $2::int8 AND $3::int8 AND commit <= $4 ORDER BY bucket",
	            4, NULL, vals, NULL, NULL, 1) ||
	    !PQsetSingleRowMode(s->conn)) {
		char msg[CENTRAL_ERRLEN / 2];

		central_seterr(s, "%s: reading the samples of series %u: %s", s->base.where, series,
		               central_pqerr(s->conn, NULL, msg, sizeof(msg)));
		return -EIO;
	}
	while ((res = PQgetResult(s->conn))) {
		ExecStatusType st = PQresultStatus(res);

		if (st == PGRES_SINGLE_TUPLE) {
			sr_row(s, &rd, series, res);
		} else if (st == PGRES_TUPLES_OK) {
			sr_end(&rd);
		} else if (!rd.r) {
			char msg[CENTRAL_ERRLEN / 2];

			central_seterr(s, "%s: reading the samples of series %u: %s", s->base.where,
			               series, central_pqerr(s->conn, res, msg, sizeof(msg)));
			rd.r = -EIO;
		}
		PQclear(res);
	}
	free(rd.v);
	return rd.r;
}

/* ---- the window, and the roll-up ------------------------------------------------ */

int64_t central_keep_samples(const struct store *sbase)
{
	return pg_cof(sbase)->keep_samples;
}

static int writer_only(struct pg *s, const char *what)
{
	if (s->readonly) {
		central_seterr(s, "%s: store is open read-only", s->base.where);
		return -EROFS;
	}
	if (s->batch) {
		central_seterr(s, "%s: cannot %s while a batch is open", s->base.where, what);
		return -EBUSY;
	}
	return 0;
}

int central_set_keep_samples(struct store *sbase, int64_t seconds)
{
	struct pg *s = pg_of(sbase);
	char v[24];
	const char *vals[1] = {v};
	int r = writer_only(s, "set the window of detail kept");

	if (r < 0)
		return r;
	if (seconds < 0 || seconds > US_SECONDS_MAX) {
		central_seterr(s, "%s: a window of %lld s of detail is out of range", s->base.where,
		               (long long)seconds);
		return -EINVAL;
	}
	snprintf(v, sizeof(v), "%" PRId64, seconds);
	r = central_exec_again(s, "setting the window of detail kept",
	                       "INSERT INTO flamefs_meta VALUES ('keep_samples', $1)"
	                       " ON CONFLICT (key) DO UPDATE SET value = $1",
	                       1, vals, false, NULL);
	if (r < 0)
		return -EIO;
	s->keep_samples = seconds;
	return 0;
}

/* The last bucket (its start) whose detail a roll-up forgets on a clock
 * whose newest moment is newest_us: the bucket must end at or before
 * newest_us - keep. */
static int64_t last_forgotten(const struct pg *s, int64_t newest_us, int64_t keep)
{
	/* floor((newest_us - keep * US) / US) without the product: both
	 * terms are below 2^43 seconds, so nothing here overflows */
	return floor_div(newest_us, US) - keep - s->bucket_seconds;
}

/* One try of the roll-up's transaction. */
static int rollup_once(struct pg *s, struct store_rollup_stats *st)
{
	char lock[64], cut[2][24], wall[24];
	const char *vals[3] = {cut[0], cut[1], wall};
	PGresult *res;
	int64_t newest[2], keep = s->keep_samples;
	bool have[2];
	uint64_t seq;
	int r;

	memset(st, 0, sizeof(*st));
	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%lld)",
	         (long long)CENTRAL_WRITER_LOCK);
	snprintf(wall, sizeof(wall), "%lld", (long long)STORE_WALL_CLOCK_MIN);
	r = central_exec(s, "roll-up", "BEGIN", 0, NULL, false, NULL);
	if (r == 0)
		r = central_exec(s, "taking the writers' lock", lock, 0, NULL, false, NULL);
	/* The window and the newest moment on each clock, as the
	 * transaction sees them. */
	if (r == 0)
		r = central_exec(
		        s, "finding the newest samples",
		        "SELECT (SELECT value FROM flamefs_meta WHERE key = 'keep_samples'),"
		        " max(last_us) FILTER (WHERE last_us >= $1::int8 * 1000000),"
		        " max(last_us) FILTER (WHERE last_us < $1::int8 * 1000000)"
		        " FROM series_recent",
		        1, vals + 2, false, &res);
	if (r < 0)
		goto fail;
	if (!PQgetisnull(res, 0, 0)) {
		uint64_t k;

		r = central_value_u64(s, res, 0, 0, US_SECONDS_MAX, "the window of detail kept",
		                      &k);
		keep = (int64_t)k;
	}
	for (int c = 0; c < 2 && r == 0; c++) {
		have[c] = !PQgetisnull(res, 0, 1 + c);
		if (have[c])
			r = central_value_i64(s, res, 0, 1 + c, "a series' last moment",
			                      &newest[c]);
	}
	PQclear(res);
	if (r < 0)
		goto fail;
	s->keep_samples = keep;
	/* A clock without samples forgets nothing: its cut-off lies below
	 * every bucket. */
	for (int c = 0; c < 2; c++)
		snprintf(cut[c], sizeof(cut[c]), "%" PRId64,
		         have[c] ? last_forgotten(s, newest[c], keep) : INT64_MIN / 2);
	r = central_exec(s, "forgetting old detail",
	                 "WITH d AS (DELETE FROM samples WHERE CASE WHEN bucket >= $3::int8"
	                 " THEN bucket <= $1::int8 ELSE bucket <= $2::int8 END"
	                 " RETURNING series, bucket, n, octet_length(block) AS bytes),"
	                 " t AS (SELECT series, count(DISTINCT bucket) AS slices, sum(n) AS n,"
	                 " sum(bytes) AS bytes FROM d GROUP BY series),"
	                 " u AS (UPDATE series_recent x SET samples = x.samples - t.n"
	                 " FROM t WHERE x.series = t.series)"
	                 " SELECT coalesce(sum(slices), 0), coalesce(sum(n), 0),"
	                 " coalesce(sum(bytes), 0) FROM t",
	                 3, vals, false, &res);
	if (r < 0)
		goto fail;
	r = central_value_u64(s, res, 0, 0, UINT64_MAX, "a count of buckets", &st->slices);
	if (r == 0)
		r = central_value_u64(s, res, 0, 1, UINT64_MAX, "a count of samples", &st->samples);
	if (r == 0)
		r = central_value_u64(s, res, 0, 2, UINT64_MAX, "a count of bytes", &st->bytes);
	PQclear(res);
	if (r < 0)
		goto fail;
	if (!st->slices) {
		central_exec(s, "roll-up", "ROLLBACK", 0, NULL, false, NULL);
		return 0;
	}
	/* Readers see the detail go with a new commit number. */
	r = central_commit_counter(s, true, &seq);
	if (r == 0)
		r = central_exec(s, "roll-up", "COMMIT", 0, NULL, false, NULL);
	if (r < 0)
		goto fail;
	r = central_load_new(s);
	if (r == 0)
		s->seq = seq;
	return r;
fail:
	if (s->conn && PQstatus(s->conn) == CONNECTION_OK) {
		res = PQexec(s->conn, "ROLLBACK");
		PQclear(res);
	}
	memset(st, 0, sizeof(*st));
	return r;
}

int central_rollup(struct store *sbase, struct store_rollup_stats *st)
{
	struct pg *s = pg_of(sbase);
	double start = central_now(), delay = 0.1;
	struct store_rollup_stats none;
	int r = writer_only(s, "roll up");

	if (!st)
		st = &none;
	memset(st, 0, sizeof(*st));
	if (r < 0)
		return r;
	/* As a prune: a lost connection is waited for and the transaction
	 * run again; forgetting by a cut-off twice forgets once. */
	for (;;) {
		r = rollup_once(s, st);
		if (r != -ECONNRESET)
			return r == 0 || r == -ENOMEM ? r : -EIO;
		if (central_reconnect(s, start, &delay) < 0)
			return -EIO;
	}
}

/*
 * read.c — reading series and counts.  store_series_list() reads the
 * series rows, whose totals the commits keep, so it never touches
 * counts.  store_series_counts() streams a series' counts rows in bucket
 * order (single-row mode, binary), decodes each row's counts blob, merges the rows of one bucket
 * (direct writes add a row per commit; copies one per source) and hands
 * out (bucket, node) in order, exactly as the embedded store does.  Only
 * rows of commits the store has loaded are read, so every node a count
 * names is one the caller can look up.
 */
#include "central-internal.h"
#include "counts-blob-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int central_series_list(struct store *sbase, struct store_series **out, size_t *n)
{
	struct pg *s = pg_of(sbase);
	struct store_series *list;
	PGresult *res;
	int rows, r;

	*out = NULL;
	*n = 0;
	for (;;) {
		/* Before schema 3 (a reader of a database no writer upgraded
		 * yet) series have no moments of their own and no detail. */
		r = central_exec_again(
		        s, "listing series",
		        s->schema >= 4   ? "SELECT id, host, binary_name, version, event, unit,"
		                           " coalesce(first_seen, 0), coalesce(last_seen, 0),"
		                           " s.samples, weight, input_bytes, first_us, last_us,"
		                           " coalesce(x.samples, 0), labels FROM series s"
		                           " LEFT JOIN series_recent x"
		                           " ON x.series::text = s.id::text"
		                           " WHERE s.samples > 0"
		        : s->schema >= 3 ? "SELECT id, host, binary_name, version, event, unit,"
		                           " coalesce(first_seen, 0), coalesce(last_seen, 0),"
		                           " s.samples, weight, input_bytes, first_us, last_us,"
		                           " coalesce(x.samples, 0), ''::bytea FROM series s"
		                           " LEFT JOIN series_recent x"
		                           " ON x.series::text = s.id::text"
		                           " WHERE s.samples > 0"
		                         : "SELECT id, host, binary_name, version, event, unit,"
		                           " coalesce(first_seen, 0), coalesce(last_seen, 0),"
		                           " samples, weight, input_bytes, NULL, NULL, 0, ''::bytea"
		                           " FROM series WHERE samples > 0",
		        0, NULL, false, &res);
		/* A reader's list is its first read in a snapshot (right after
		 * opening or refreshing): one whose connection died meanwhile
		 * can take a new snapshot, since nothing was read in the old. */
		if (r != -ECONNRESET || central_reader_recover(s) < 0)
			break;
	}
	if (r < 0)
		return -EIO;
	s->snapshot_read = s->snapshot;
	rows = PQntuples(res);
	list = calloc(rows ? (size_t)rows : 1, sizeof(*list));
	if (!list) {
		PQclear(res);
		return -ENOMEM;
	}
	for (int i = 0; i < rows; i++) {
		struct store_series *e = &list[i];
		uint64_t id = 0;

		if (central_value_u64(s, res, i, 0, INT32_MAX, "a series id", &id) < 0 ||
		    central_value_i64(s, res, i, 6, "a series' first time", &e->first_seen) < 0 ||
		    central_value_i64(s, res, i, 7, "a series' last time", &e->last_seen) < 0 ||
		    central_value_u64(s, res, i, 8, UINT64_MAX, "a series' samples", &e->samples) <
		            0 ||
		    central_value_u64(s, res, i, 9, UINT64_MAX, "a series' weight", &e->weight) <
		            0 ||
		    central_value_u64(s, res, i, 10, UINT64_MAX, "a series' input bytes",
		                      &e->input_bytes) < 0 ||
		    (!PQgetisnull(res, i, 11) &&
		     central_value_i64(s, res, i, 11, "a series' first moment", &e->first_us) <
		             0) ||
		    (!PQgetisnull(res, i, 12) &&
		     central_value_i64(s, res, i, 12, "a series' last moment", &e->last_us) < 0) ||
		    central_value_u64(s, res, i, 13, INT64_MAX, "a series' recent samples",
		                      &e->recent_samples) < 0) {
			PQclear(res);
			store_series_free(list, (size_t)i + 1);
			return -EIO;
		}
		e->id = (uint32_t)id;
		/* a series no schema 3 writer has timed: its first and last
		 * second */
		if (PQgetisnull(res, i, 11))
			e->first_us = central_us_of(e->first_seen);
		if (PQgetisnull(res, i, 12))
			e->last_us = central_us_of(e->last_seen);
		e->host = central_str_of_bytea(res, i, 1);
		e->binary = central_str_of_bytea(res, i, 2);
		e->version = central_str_of_bytea(res, i, 3);
		e->event = central_str_of_bytea(res, i, 4);
		e->unit = strdup(PQgetvalue(res, i, 5));
		e->labels = central_str_of_bytea(res, i, 14);
		if (!e->host || !e->binary || !e->version || !e->event || !e->unit || !e->labels) {
			PQclear(res);
			store_series_free(list, (size_t)i + 1);
			return -ENOMEM;
		}
		if (!store_labels_valid(e->labels)) {
			central_seterr(s, "%s: store is damaged: the labels of series %u",
			               s->base.where, e->id);
			PQclear(res);
			store_series_free(list, (size_t)i + 1);
			return -EIO;
		}
	}
	PQclear(res);
	/* Sorted here, byte-wise like the embedded store, whatever the
	 * database's collation. */
	if (rows)
		qsort(list, (size_t)rows, sizeof(*list), store_series_cmp);
	*out = list;
	*n = (size_t)rows;
	return 0;
}

/* ---- counts ------------------------------------------------------------------- */

struct ent {
	uint32_t node;
	uint64_t samples, weight;
};

struct bucket_acc {
	struct ent *e;
	size_t n, cap;
	unsigned rows;
};

/* Appends one row's entries (its counts blob) to the bucket's; -EIO when
 * the blob is damaged. */
static int acc_row(struct bucket_acc *a, const PGresult *res)
{
	struct count_cursor c;
	int len = PQgetlength(res, 0, 1), got;

	count_cursor_init(&c, PQgetvalue(res, 0, 1), (size_t)len);
	while ((got = count_cursor_next(&c)) > 0) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? 2 * a->cap : 1024;
			struct ent *e = realloc(a->e, cap * sizeof(*e));

			if (!e)
				return -ENOMEM;
			a->e = e;
			a->cap = cap;
		}
		a->e[a->n].node = c.node;
		a->e[a->n].samples = c.samples;
		a->e[a->n].weight = c.weight;
		a->n++;
	}
	if (got < 0)
		return -EIO;
	a->rows++;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	return x->node < y->node ? -1 : x->node > y->node;
}

/* Hands out one bucket's counts in node order, summing rows. */
static int acc_flush(struct bucket_acc *a, int64_t bucket, store_count_fn fn, void *ctx)
{
	size_t o = 0;
	int r = 0;

	if (a->rows > 1 && a->n) {
		qsort(a->e, a->n, sizeof(*a->e), ent_cmp);
		for (size_t i = 1; i < a->n; i++) {
			if (a->e[i].node == a->e[o].node) {
				a->e[o].samples += a->e[i].samples;
				a->e[o].weight += a->e[i].weight;
			} else {
				a->e[++o] = a->e[i];
			}
		}
		a->n = o + 1;
	}
	for (size_t i = 0; i < a->n && r == 0; i++)
		r = fn(ctx, bucket, a->e[i].node, a->e[i].samples, a->e[i].weight);
	a->n = 0;
	a->rows = 0;
	return r;
}

/* The first second of the bucket that holds t, clamped far from the
 * ends of int64. */
static int64_t bucket_floor(const struct pg *s, int64_t t)
{
	int64_t bs = s->bucket_seconds;

	if (t <= INT64_MIN / 2)
		return INT64_MIN / 2;
	if (t >= INT64_MAX / 2)
		return INT64_MAX / 2;
	return (t / bs - (t % bs < 0)) * bs;
}

/* Reading one series' rows (bucket, entries, ...) in bucket order: the
 * bucket being summed, and the first error or stop. */
struct reading {
	struct bucket_acc a;
	int64_t cur;
	bool have, stop;
	int r;
};

static void reading_row(struct pg *s, struct reading *rd, uint32_t series, const PGresult *res,
                        store_count_fn fn, void *ctx)
{
	const char *bv;
	int64_t bucket;
	int e;

	if (rd->stop || rd->r)
		return;
	bv = central_value_bin(s, res, 0, 0, 8, "a bucket");
	bucket = bv ? (int64_t)be64(bv) : 0;
	if (!bv || PQnfields(res) < 2 || PQfformat(res, 1) != 1 || PQgetisnull(res, 0, 1)) {
		if (bv)
			central_seterr(s,
			               "%s: unexpected reply from the server: the counts of series "
			               "%u at %lld are not what a flamefs store holds",
			               s->base.where, series, (long long)bucket);
		rd->r = -EIO;
		return;
	}
	if (rd->have && bucket != rd->cur) {
		rd->r = acc_flush(&rd->a, rd->cur, fn, ctx);
		if (rd->r) {
			rd->stop = true;
			return;
		}
	}
	rd->cur = bucket;
	rd->have = true;
	e = acc_row(&rd->a, res);
	if (e < 0) {
		central_seterr(s, "%s: %s: the counts of series %u at %lld", s->base.where,
		               e == -ENOMEM ? "out of memory" : "store is damaged", series,
		               (long long)bucket);
		rd->r = e;
	}
}

/* The series' last bucket. */
static void reading_end(struct reading *rd, store_count_fn fn, void *ctx)
{
	if (rd->have && !rd->stop && !rd->r)
		rd->r = acc_flush(&rd->a, rd->cur, fn, ctx);
	rd->have = false;
}

/* ---- prefetch ----------------------------------------------------------------- */

/* The series a prefetch streams, in the caller's order, over one window:
 * one query whose rows come ordered by the series' place in the list,
 * then bucket (single-row mode, so memory holds one row at a time), and
 * each store_series_counts() call that follows for the next series in
 * the list takes that series' rows from the stream. */
void central_stream_end(struct pg *s, struct pg_stream *st)
{
	PGresult *res;

	if (!st->on)
		return;
	PQclear(st->next);
	st->next = NULL;
	/* Cancelling would abort the reader's snapshot: read to the end. */
	if (!st->done && s->conn)
		while ((res = PQgetResult(s->conn)))
			PQclear(res);
	free(st->ids);
	st->ids = NULL;
	st->on = false;
}

void central_prefetch_end(struct pg *s)
{
	central_samples_prefetch_end(s);
	central_stream_end(s, &s->pf);
}

int central_stream_open(struct pg *s, struct pg_stream *st, const uint32_t *ids, size_t n,
                        const char *sql, const char *const w[3])
{
	char *arr = NULL;
	const char *vals[4] = {NULL, w[0], w[1], w[2]};
	size_t len = 0, cap = 3 + n * 11;

	arr = malloc(cap);
	st->ids = malloc(n * sizeof(*ids));
	if (!arr || !st->ids) {
		free(arr);
		free(st->ids);
		st->ids = NULL;
		return -ENOMEM;
	}
	memcpy(st->ids, ids, n * sizeof(*ids));
	arr[len++] = '{';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(arr + len, cap - len, "%s%" PRIu32, i ? "," : "", ids[i]);
	arr[len++] = '}';
	arr[len] = '\0';
	vals[0] = arr;
	s->snapshot_read = s->snapshot;
	if (!PQsendQueryParams(s->conn, sql, 4, NULL, vals, NULL, NULL, 1) ||
	    !PQsetSingleRowMode(s->conn)) {
		/* The reads go one by one. */
		free(arr);
		free(st->ids);
		st->ids = NULL;
		while (s->conn && (st->next = PQgetResult(s->conn)))
			PQclear(st->next);
		st->next = NULL;
		return 0;
	}
	free(arr);
	st->n = n;
	st->pos = 0;
	st->done = false;
	st->next = NULL;
	st->on = true;
	return 0;
}

int central_stream_take(struct pg *s, struct pg_stream *st, uint32_t series, const char *what,
                        central_stream_row_fn row, void *arg)
{
	int r = 0;

	st->pos++;
	while (!st->done) {
		PGresult *res = st->next ? st->next : PQgetResult(s->conn);
		ExecStatusType rs;

		st->next = NULL;
		if (!res) {
			st->done = true;
			break;
		}
		rs = PQresultStatus(res);
		if (rs == PGRES_SINGLE_TUPLE) {
			const char *sv = central_value_bin(s, res, 0, 2, 4, "a series id");

			if (!sv) {
				r = -EIO;
				PQclear(res);
				break;
			}
			if (be32(sv) != series) {
				/* the next series': kept for its call */
				st->next = res;
				break;
			}
			r = row(s, series, res, arg);
		} else if (rs != PGRES_TUPLES_OK) {
			char msg[CENTRAL_ERRLEN / 2];

			central_seterr(s, "%s: reading the %s of series %u: %s", s->base.where,
			               what, series, central_pqerr(s->conn, res, msg, sizeof(msg)));
			r = -EIO;
		}
		PQclear(res);
		if (r < 0)
			break;
	}
	return r;
}

int central_series_prefetch(struct store *sbase, const uint32_t *ids, size_t n, int64_t from,
                            int64_t to)
{
	struct pg *s = pg_of(sbase);
	char w[3][24];
	const char *const vals[3] = {w[0], w[1], w[2]};

	central_prefetch_end(s);
	/* $FLAMEFS_TEST_NO_PREFETCH: the reads one by one, for
	 * tests/bench/fleet.sh --round-trips to compare. */
	if (n < 2 || from > to || !s->conn || getenv("FLAMEFS_TEST_NO_PREFETCH"))
		return 0;
	s->pf.from = bucket_floor(s, from);
	s->pf.to = bucket_floor(s, to);
	snprintf(w[0], sizeof(w[0]), "%" PRId64, s->pf.from);
	snprintf(w[1], sizeof(w[1]), "%" PRId64, s->pf.to);
	snprintf(w[2], sizeof(w[2]), "%" PRIu64, s->seq);
	return central_stream_open(s, &s->pf, ids, n,
	                           "SELECT c.bucket, c.entries, c.series FROM unnest($1::int4[])"
	                           " WITH ORDINALITY AS k(series, ord) JOIN counts c ON c.series ="
	                           " k.series WHERE c.bucket BETWEEN $2 AND $3 AND c.commit <= $4"
	                           " ORDER BY k.ord, c.bucket",
	                           vals);
}

struct counts_row {
	struct reading *rd;
	store_count_fn fn;
	void *ctx;
};

static int counts_row(struct pg *s, uint32_t series, const PGresult *res, void *arg)
{
	struct counts_row *c = arg;

	reading_row(s, c->rd, series, res, c->fn, c->ctx);
	return c->rd->r;
}

/* Series `series`'s rows from the stream (the next series of the list). */
static int prefetched(struct pg *s, uint32_t series, store_count_fn fn, void *ctx)
{
	struct reading rd = {.have = false};
	struct counts_row c = {&rd, fn, ctx};

	rd.r = central_stream_take(s, &s->pf, series, "counts", counts_row, &c);
	reading_end(&rd, fn, ctx);
	free(rd.a.e);
	if (rd.r < 0 || s->pf.pos == s->pf.n)
		central_prefetch_end(s);
	return rd.r;
}

int central_series_counts(struct store *sbase, uint32_t series, int64_t from, int64_t to,
                          store_count_fn fn, void *ctx)
{
	struct pg *s = pg_of(sbase);
	char v[4][24];
	const char *vals[4] = {v[0], v[1], v[2], v[3]};
	struct reading rd = {.have = false};
	PGresult *res;

	if (from > to)
		return 0;
	if (s->pf.on && s->pf.pos < s->pf.n && s->pf.ids[s->pf.pos] == series &&
	    bucket_floor(s, from) == s->pf.from && bucket_floor(s, to) == s->pf.to)
		return prefetched(s, series, fn, ctx);
	/* any stream (of counts or of samples) ends first */
	central_prefetch_end(s);
	s->snapshot_read = s->snapshot;
	snprintf(v[0], sizeof(v[0]), "%" PRIu32, series);
	snprintf(v[1], sizeof(v[1]), "%" PRId64, bucket_floor(s, from));
	snprintf(v[2], sizeof(v[2]), "%" PRId64, bucket_floor(s, to));
	snprintf(v[3], sizeof(v[3]), "%" PRIu64, s->seq);
	if (!s->conn ||
	    !PQsendQueryParams(s->conn,
	                       "SELECT bucket, entries FROM counts WHERE series = $1"
	                       " AND bucket BETWEEN $2 AND $3 AND commit <= $4 ORDER BY bucket",
	                       4, NULL, vals, NULL, NULL, 1) ||
	    !PQsetSingleRowMode(s->conn)) {
		char msg[CENTRAL_ERRLEN / 2];

		central_seterr(s, "%s: reading the counts of series %u: %s", s->base.where, series,
		               central_pqerr(s->conn, NULL, msg, sizeof(msg)));
		return -EIO;
	}
	while ((res = PQgetResult(s->conn))) {
		ExecStatusType st = PQresultStatus(res);

		if (st == PGRES_SINGLE_TUPLE) {
			reading_row(s, &rd, series, res, fn, ctx);
		} else if (st == PGRES_TUPLES_OK) {
			reading_end(&rd, fn, ctx);
		} else if (!rd.r) {
			char msg[CENTRAL_ERRLEN / 2];

			central_seterr(s, "%s: reading the counts of series %u: %s", s->base.where,
			               series, central_pqerr(s->conn, res, msg, sizeof(msg)));
			rd.r = -EIO;
		}
		PQclear(res);
	}
	free(rd.a.e);
	return rd.r;
}

/*
 * maint.c — retention and housekeeping: store_prune() as one DELETE per
 * cut-off with the series totals recomputed from what is left (in one
 * transaction under the writers' lock; a dry run rolls it back),
 * store_compact() as VACUUM (ANALYZE), and the footprint as the tables'
 * pg_total_relation_size().
 */
#include "central-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rollback(struct pg *s)
{
	PGresult *res = PQexec(s->conn, "ROLLBACK");

	PQclear(res);
}

/* Appends id to the text array a[*len..] ("{" first), within cap bytes:
 * each id is printed from the number parsed, so at most 10 digits and a
 * comma; the caller sized cap for that. */
static void ids_add(char *a, size_t *len, size_t cap, uint32_t id)
{
	int n = snprintf(a + *len, cap - *len, "%s%" PRIu32, *len > 1 ? "," : "", id);

	if (n > 0 && (size_t)n < cap - *len)
		*len += (size_t)n;
}

/* Room for n ids in a text array: braces, NUL, and up to 11 bytes each. */
static size_t ids_cap(int n)
{
	return 3 + (size_t)(n > 0 ? n : 0) * 11;
}

/* The selected series' ids as a text array "{1,2}" into *out
 * (malloc'd); counts the ones left alone for wall_clock_only. */
static int prune_select(struct pg *s, const struct store_prune_opts *o,
                        struct store_prune_stats *st, char **out)
{
	char *hex[2] = {o->binary ? central_hex_of(o->binary) : NULL,
	                o->version ? central_hex_of(o->version) : NULL};
	const char *vals[2] = {hex[0], hex[1]};
	PGresult *res;
	size_t cap, len = 0;
	char *a;
	int r = (o->binary && !hex[0]) || (o->version && !hex[1]) ? -ENOMEM : 0;

	if (r == 0)
		r = central_exec(
		        s, "selecting series to prune",
		        "SELECT id, coalesce(last_seen, 0) FROM series WHERE samples > 0"
		        " AND ($1::text IS NULL OR binary_name = decode($1, 'hex'))"
		        " AND ($2::text IS NULL OR version = decode($2, 'hex')) ORDER BY id",
		        2, vals, false, &res);
	free(hex[0]);
	free(hex[1]);
	if (r < 0)
		return r;
	cap = ids_cap(PQntuples(res));
	a = malloc(cap);
	if (!a) {
		PQclear(res);
		return -ENOMEM;
	}
	a[len++] = '{';
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		uint64_t id;
		int64_t last;

		r = central_value_u64(s, res, i, 0, INT32_MAX, "a series id", &id);
		if (r == 0)
			r = central_value_i64(s, res, i, 1, "a series' last time", &last);
		if (r < 0)
			break;
		if (o->wall_clock_only && last < STORE_WALL_CLOCK_MIN) {
			st->other_clock++;
			continue;
		}
		ids_add(a, &len, cap, (uint32_t)id);
	}
	a[len++] = '}';
	a[len] = '\0';
	PQclear(res);
	if (r < 0) {
		free(a);
		return r;
	}
	*out = a;
	return 0;
}

/* A prune needs a writable store and no open batch. */
static int prune_may_start(struct pg *s)
{
	if (s->readonly) {
		central_seterr(s, "%s: store is open read-only", s->base.where);
		return -EROFS;
	}
	if (s->batch) {
		central_seterr(s, "%s: cannot prune while a batch is open", s->base.where);
		return -EBUSY;
	}
	return 0;
}

/* The first bucket kept, in decimal: only whole buckets go, and the one
 * that holds `before` stays. */
static void prune_cut(const struct pg *s, int64_t before, char cut[24])
{
	int64_t bs = s->bucket_seconds, c;

	if (before <= INT64_MIN / 2)
		before = INT64_MIN / 2;
	if (before >= INT64_MAX / 2)
		before = INT64_MAX / 2;
	c = (before / bs - (before % bs < 0)) * bs;
	snprintf(cut, 24, "%" PRId64, c);
}

/* BEGIN, the writers' lock, and the series the prune may touch (*ids,
 * the caller's to free). */
static int prune_begin(struct pg *s, const struct store_prune_opts *o, struct store_prune_stats *st,
                       char **ids)
{
	char lock[64];
	int r;

	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%lld)",
	         (long long)CENTRAL_WRITER_LOCK);
	r = central_exec(s, "prune", "BEGIN", 0, NULL, false, NULL);
	if (r == 0)
		r = central_exec(s, "taking the writers' lock", lock, 0, NULL, false, NULL);
	if (r == 0)
		r = prune_select(s, o, st, ids);
	return r;
}

/* Deletes the counts of ids older than cut; *res holds per series the
 * buckets, samples and weight deleted.  The detail of those buckets goes
 * with them (each series' series_recent is recomputed after). */
static int prune_delete(struct pg *s, const char *ids, const char *cut, PGresult **res)
{
	const char *vals[2] = {ids, cut};
	int r;

	r = central_exec(s, "deleting old counts",
	                 "WITH d AS (DELETE FROM counts WHERE series = ANY($1::int4[])"
	                 " AND bucket < $2 RETURNING series, bucket, total_samples,"
	                 " total_weight) SELECT series, count(DISTINCT bucket),"
	                 " sum(flamefs_u64(total_samples)), sum(flamefs_u64(total_weight))"
	                 " FROM d GROUP BY series",
	                 2, vals, false, res);
	if (r == 0 && s->schema >= 3)
		r = central_exec(
		        s, "deleting old detail",
		        "DELETE FROM samples WHERE series = ANY($1::int4[]) AND bucket < $2", 2,
		        vals, false, NULL);
	if (r < 0 && *res) {
		PQclear(*res);
		*res = NULL;
	}
	return r;
}

/* Counts what prune_delete's result says into st and replaces *ids with
 * the series it pruned.  Clears res. */
static int prune_tally(struct pg *s, PGresult *res, struct store_prune_stats *st, char **ids)
{
	size_t len = 0, cap = ids_cap(PQntuples(res));
	char *a;
	int r = 0;

	free(*ids);
	a = *ids = malloc(cap);
	if (!a) {
		PQclear(res);
		return -ENOMEM;
	}
	a[len++] = '{';
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		uint64_t id, buckets, samples, weight;

		r = central_value_u64(s, res, i, 0, INT32_MAX, "a series id", &id);
		if (r == 0)
			r = central_value_u64(s, res, i, 1, UINT64_MAX, "a count of buckets",
			                      &buckets);
		if (r == 0)
			r = central_value_u64(s, res, i, 2, UINT64_MAX, "pruned samples", &samples);
		if (r == 0)
			r = central_value_u64(s, res, i, 3, UINT64_MAX, "pruned weight", &weight);
		if (r < 0)
			break;
		st->series++;
		st->buckets += buckets;
		st->samples += samples;
		st->weight += weight;
		ids_add(a, &len, cap, (uint32_t)id);
	}
	a[len++] = '}';
	a[len] = '\0';
	PQclear(res);
	return r;
}

/* The totals of the pruned series ids from the counts left, and their
 * recent tier's figures: the first moment moves to the first bucket
 * left, as first_seen does, and the detail held is what is left of it. */
static int prune_recompute(struct pg *s, const char *ids, struct store_prune_stats *st)
{
	const char *vals[1] = {ids};
	PGresult *res;
	int r;

	r = central_exec(s, "recomputing series totals",
	                 "UPDATE series s SET samples = coalesce(t.samples, 0),"
	                 " weight = coalesce(t.weight, 0),"
	                 " first_seen = CASE WHEN t.first IS NULL THEN NULL"
	                 " ELSE greatest(s.first_seen, t.first) END,"
	                 " last_seen = CASE WHEN t.first IS NULL THEN NULL ELSE s.last_seen END"
	                 " FROM (SELECT a.id, sum(flamefs_u64(c.total_samples)) AS samples,"
	                 " sum(flamefs_u64(c.total_weight)) AS weight, min(c.bucket) AS first"
	                 " FROM unnest($1::int4[]) AS a(id) LEFT JOIN counts c ON c.series = a.id"
	                 " GROUP BY a.id) t WHERE s.id = t.id RETURNING s.samples",
	                 1, vals, false, &res);
	if (r < 0)
		return r;
	for (int i = 0; i < PQntuples(res); i++)
		if (!strcmp(PQgetvalue(res, i, 0), "0"))
			st->series_emptied++;
	PQclear(res);
	if (s->schema >= 3)
		r = central_exec(
		        s, "recomputing series totals",
		        "UPDATE series_recent x SET"
		        " first_us = CASE WHEN s.first_seen IS NULL THEN NULL"
		        " ELSE greatest(x.first_us, (SELECT min(bucket) FROM counts c"
		        " WHERE c.series = x.series) * 1000000) END,"
		        " last_us = CASE WHEN s.first_seen IS NULL THEN NULL"
		        " ELSE x.last_us END,"
		        " samples = coalesce((SELECT sum(d.n) FROM samples d"
		        " WHERE d.series = x.series), 0)"
		        " FROM series s WHERE s.id = x.series AND x.series = ANY($1::int4[])",
		        1, vals, false, NULL);
	return r;
}

/* One try of the prune's transaction: 0, or -errno (-ECONNRESET: the
 * connection died, and nothing was pruned unless the COMMIT went
 * through). */
static int prune_once(struct pg *s, const struct store_prune_opts *o, struct store_prune_stats *st)
{
	char cut[24], *ids = NULL;
	PGresult *res = NULL;
	uint64_t seq;
	int r;

	memset(st, 0, sizeof(*st));
	r = prune_may_start(s);
	if (r < 0)
		return r;
	prune_cut(s, o->before, cut);
	r = prune_begin(s, o, st, &ids);
	if (r == 0)
		r = prune_delete(s, ids, cut, &res);
	if (r == 0)
		r = prune_tally(s, res, st, &ids);
	if (r < 0)
		goto fail;
	if (!st->series) {
		rollback(s);
		free(ids);
		return 0;
	}
	r = prune_recompute(s, ids, st);
	if (r < 0)
		goto fail;
	if (o->dry_run) {
		rollback(s);
		free(ids);
		return 0;
	}
	r = central_commit_counter(s, true, &seq);
	if (r == 0)
		r = central_exec(s, "prune", "COMMIT", 0, NULL, false, NULL);
	if (r < 0)
		goto fail;
	free(ids);
	/* What others committed before this prune comes with its number. */
	r = central_load_new(s);
	if (r < 0)
		return r;
	s->seq = seq;
	return 0;
fail:
	if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
		rollback(s);
	free(ids);
	memset(st, 0, sizeof(*st));
	return r == -ENOMEM || r == -ECONNRESET ? r : -EIO;
}

int central_prune(struct store *sbase, const struct store_prune_opts *o,
                  struct store_prune_stats *st)
{
	struct pg *s = pg_of(sbase);
	double start = central_now(), delay = 0.1;
	int r;

	/* A connection lost in the middle is waited for and the whole
	 * transaction run again: deleting by a cut-off twice deletes once
	 * (a COMMIT whose reply was lost leaves nothing for the second try,
	 * which then reports nothing pruned). */
	for (;;) {
		r = prune_once(s, o, st);
		if (r != -ECONNRESET)
			return r;
		if (central_reconnect(s, start, &delay) < 0)
			return -EIO;
	}
}

int central_compact(struct store *sbase)
{
	struct pg *s = pg_of(sbase);

	if (s->readonly) {
		central_seterr(s, "%s: store is open read-only", s->base.where);
		return -EROFS;
	}
	return central_exec(s, "VACUUM",
	                    "VACUUM (ANALYZE) flamefs_meta, frame_runs, frame_offsets, node_runs,"
	                    " series, counts, samples, series_recent, sources, destinations,"
	                    " writers",
	                    0, NULL, false, NULL) < 0
	               ? -EIO
	               : 0;
}

int central_footprint(struct store *sbase, struct store_footprint *out)
{
	struct pg *s = pg_of(sbase);
	PGresult *res;
	char sql[512];
	int r;

	/* Before schema 3 (a reader's database no writer upgraded yet)
	 * there is no recent tier. */
	snprintf(sql, sizeof(sql),
	         "SELECT pg_total_relation_size('frame_runs')%s,"
	         " pg_total_relation_size('node_runs'), pg_total_relation_size('counts'),"
	         " %s, pg_total_relation_size('flamefs_meta')"
	         " + pg_total_relation_size('series')"
	         " + pg_total_relation_size('sources')"
	         " + pg_total_relation_size('destinations')"
	         " + pg_total_relation_size('writers')%s",
	         s->schema >= 6 ? " + pg_total_relation_size('frame_offsets')" : "",
	         s->schema >= 3 ? "pg_total_relation_size('samples'),"
	                          " (SELECT coalesce(sum(samples), 0) FROM series_recent)"
	                        : "0, 0",
	         s->schema >= 3 ? " + pg_total_relation_size('series_recent')" : "");
	r = central_exec(s, "measuring the tables", sql, 0, NULL, false, &res);

	memset(out, 0, sizeof(*out));
	if (r < 0)
		return -EIO;
	/* each below 2^62, so that the sum cannot wrap */
	r = central_value_u64(s, res, 0, 0, UINT64_MAX / 4, "a table's size", &out->frames_bytes);
	if (r == 0)
		r = central_value_u64(s, res, 0, 1, UINT64_MAX / 4, "a table's size",
		                      &out->nodes_bytes);
	if (r == 0)
		r = central_value_u64(s, res, 0, 2, UINT64_MAX / 4, "a table's size",
		                      &out->counts_bytes);
	if (r == 0)
		r = central_value_u64(s, res, 0, 3, UINT64_MAX / 4, "a table's size",
		                      &out->samples_bytes);
	if (r == 0)
		r = central_value_u64(s, res, 0, 4, INT64_MAX, "a count of samples", &out->samples);
	if (r == 0)
		r = central_value_u64(s, res, 0, 5, UINT64_MAX / 8, "a table's size",
		                      &out->other_bytes);
	out->dir_bytes = out->frames_bytes + out->nodes_bytes + out->counts_bytes +
	                 out->samples_bytes + out->other_bytes;
	PQclear(res);
	if (r < 0)
		memset(out, 0, sizeof(*out));
	return r;
}

int central_series_disk_bytes(struct store *sbase, uint32_t series, uint64_t *bytes)
{
	struct pg *s = pg_of(sbase);
	char id[16];
	const char *vals[1] = {id};
	PGresult *res;
	int r;

	snprintf(id, sizeof(id), "%" PRIu32, series);
	r = central_exec(s, "measuring a series",
	                 "SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM counts c"
	                 " WHERE series = $1",
	                 1, vals, false, &res);
	if (r < 0)
		return -EIO;
	r = central_value_u64(s, res, 0, 0, UINT64_MAX, "a series' size", bytes);
	PQclear(res);
	return r;
}

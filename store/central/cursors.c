/*
 * cursors.c — what store_copy() needs from a central store: which (series,
 * bucket) the commits after a given one wrote (the commit column of
 * counts), how far copies from a source store reached (sources.upto,
 * set by the copy's own commit, see commit.c), and this store's memory
 * of how far its copies to other stores reached (destinations).
 */
#include "central-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int central_changes(struct store *sbase, uint64_t since, uint64_t *upto,
                    int (*fn)(void *ctx, uint32_t series, int64_t bucket_start), void *ctx)
{
	struct pg *s = pg_of(sbase);
	char v[2][24];
	const char *vals[2] = {v[0], v[1]};
	PGresult *res;
	int r;

	/* Up to the commit whose frames and nodes are loaded: what
	 * store_series_counts() reads. */
	snprintf(v[0], sizeof(v[0]), "%" PRIu64, since);
	snprintf(v[1], sizeof(v[1]), "%" PRIu64, s->seq);
	r = central_exec(s, "reading changes",
	                 "SELECT DISTINCT series, bucket FROM counts WHERE commit > $1"
	                 " AND commit <= $2 ORDER BY series, bucket",
	                 2, vals, false, &res);
	if (r < 0)
		return -EIO;
	*upto = s->seq;
	r = 0;
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		uint64_t series;
		int64_t bucket;

		if (central_value_u64(s, res, i, 0, INT32_MAX, "a series id", &series) < 0 ||
		    central_value_i64(s, res, i, 1, "a bucket", &bucket) < 0)
			r = -EIO;
		else
			r = fn(ctx, (uint32_t)series, bucket);
	}
	PQclear(res);
	return r;
}

static int cursor(struct pg *s, const char *sql, const char *what, const char *id, uint64_t *upto)
{
	const char *vals[1] = {id};
	PGresult *res;

	int r;

	*upto = 0;
	if (central_exec_again(s, what, sql, 1, vals, false, &res) < 0)
		return -EIO;
	r = PQntuples(res) == 1 ? central_value_u64(s, res, 0, 0, INT64_MAX, "a cursor", upto) : 0;
	PQclear(res);
	return r;
}

int central_source_cursor(struct store *sbase, const char *source, uint64_t *upto)
{
	return cursor(pg_of(sbase), "SELECT upto FROM sources WHERE store_id = $1",
	              "reading a source's cursor", source, upto);
}

int central_dest_cursor(struct store *sbase, const char *dest, uint64_t *upto)
{
	return cursor(pg_of(sbase), "SELECT upto FROM destinations WHERE store_id = $1",
	              "reading a destination's cursor", dest, upto);
}

int central_set_dest_cursor(struct store *sbase, const char *dest, uint64_t upto)
{
	struct pg *s = pg_of(sbase);
	char v[24];
	const char *vals[2] = {dest, v};

	if (s->readonly) {
		central_seterr(s, "%s: store is open read-only", s->base.where);
		return -EROFS;
	}
	if (s->batch) {
		central_seterr(s, "%s: a batch is open", s->base.where);
		return -EBUSY;
	}
	if (upto > INT64_MAX) {
		central_seterr(s, "%s: commit number %" PRIu64 " is out of range", s->base.where,
		               upto);
		return -ERANGE;
	}
	snprintf(v, sizeof(v), "%" PRIu64, upto);
	if (central_exec_again(s, "recording a destination's cursor",
	                       "INSERT INTO destinations (store_id, upto) VALUES ($1, $2)"
	                       " ON CONFLICT (store_id) DO UPDATE SET upto = excluded.upto",
	                       2, vals, false, NULL) < 0)
		return -EIO;
	return 0;
}

int central_source_records(struct store *sbase, const char *base,
                           int (*fn)(void *ctx, const struct source_record *r), void *ctx)
{
	struct pg *s = pg_of(sbase);
	const char *vals[1] = {base};
	PGresult *res;
	int r;

	/* A record's lineage ("<nonce or -> <resync commit>") lives in
	 * flamefs_meta, so that the schema's tables stay as older flamefs
	 * versions know them. */
	if (central_exec_again(s, "reading a source's records",
	                       "SELECT s.store_id, s.upto, coalesce(m.value, '- 0') FROM sources s"
	                       " LEFT JOIN flamefs_meta m ON m.key = 'lineage:' || s.id"
	                       " WHERE s.store_id = $1 OR s.store_id LIKE $1 || '~%' ORDER BY s.id",
	                       1, vals, false, &res) < 0)
		return -EIO;
	r = 0;
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		struct source_record rec;
		const char *key = PQgetvalue(res, i, 0), *v = PQgetvalue(res, i, 2);
		char nonce[17], extra;
		unsigned long long resync;

		memset(&rec, 0, sizeof(rec));
		if (!central_source_key_ok(key) || strlen(key) >= sizeof(rec.key) ||
		    central_value_u64(s, res, i, 1, INT64_MAX, "a source's cursor", &rec.upto) <
		            0 ||
		    sscanf(v, "%16s %llu%c", nonce, &resync, &extra) != 2) {
			central_seterr(s, "%s: store is damaged: the record of source %s",
			               s->base.where, base);
			r = -EIO;
			break;
		}
		snprintf(rec.key, sizeof(rec.key), "%s", key);
		rec.resync = resync;
		if (strcmp(nonce, "-") != 0) {
			char *end;

			rec.nonce = strtoull(nonce, &end, 16);
			rec.has_nonce = strlen(nonce) == 16 && !*end &&
			                strspn(nonce, "0123456789abcdef") == 16;
			if (!rec.has_nonce) {
				central_seterr(s, "%s: store is damaged: the nonce of source %s",
				               s->base.where, key);
				r = -EIO;
				break;
			}
		}
		r = fn(ctx, &rec);
	}
	PQclear(res);
	return r;
}

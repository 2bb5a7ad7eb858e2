/*
 * prune.c — retention: deleting whole time buckets before a cut-off,
 * with the series totals lowered in the same write.
 */
#include "embedded-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- retention ------------------------------------------------------------------ */

static bool prune_selects(const struct series_rec *r, const struct store_prune_opts *o,
                          struct store_prune_stats *st)
{
	if (!r->binary || !r->samples)
		return false;
	if (o->binary && strcmp(o->binary, r->binary) != 0)
		return false;
	if (o->version && strcmp(o->version, r->version) != 0)
		return false;
	if (o->wall_clock_only && r->last_seen < STORE_WALL_CLOCK_MIN) {
		st->other_clock++;
		return false;
	}
	return true;
}

/* Deletes the buckets of series `id` below `cut` into wb and works out
 * the series record after that into *after.  Returns 1 when something
 * is deleted, 0 when nothing is, or -EIO. */
static int prune_series(struct rdb *s, rocksdb_writebatch_t *wb, rocksdb_iterator_t *it,
                        uint32_t id, uint32_t cut, struct series_rec *after,
                        struct store_prune_stats *st)
{
	uint64_t samples = 0, weight = 0, buckets = 0;
	uint8_t key[8];
	char *rerr = NULL;

	put_be32(key, id);
	put_be32(key + 4, 0);
	for (rocksdb_iter_seek(it, (const char *)key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);

		if (klen != 8 || get_be32(k) != id || get_be32(k + 4) >= cut)
			break;
		if (counts_sum(v, vlen, &samples, &weight) < 0) {
			seterr(s, "%s: store is damaged: the counts of series %u at %lld", s->dir,
			       id, (long long)bucket_start(s, get_be32(k + 4)));
			return -EIO;
		}
		rocksdb_writebatch_delete_cf(wb, s->cf[CF_COUNTS], (const char *)k, klen);
		buckets++;
	}
	rocksdb_iter_get_error(it, &rerr);
	if (rerr)
		return rdb_fail(s, rerr, "reading counts");
	if (!buckets)
		return 0;
	/* the detail of the same buckets, in the same write */
	uint64_t recent = 0;
	int r = detail_prune(s, wb, id, cut, &recent);
	if (r < 0)
		return r;

	/* The first bucket kept, if any, is where the series now starts. */
	*after = s->series[id];
	put_be32(key + 4, cut);
	rocksdb_iter_seek(it, (const char *)key, sizeof(key));
	size_t klen = 0;
	const uint8_t *k =
	        rocksdb_iter_valid(it) ? (const uint8_t *)rocksdb_iter_key(it, &klen) : NULL;
	if (k && klen == 8 && get_be32(k) == id && samples < after->samples) {
		after->samples -= samples;
		after->weight -= weight < after->weight ? weight : after->weight;
		int64_t first = bucket_start(s, get_be32(k + 4));
		if (first > after->first_seen)
			after->first_seen = first;
		if (first < INT64_MAX / 1000000 && first * 1000000 > after->first_us)
			after->first_us = first * 1000000;
		after->recent -= recent < after->recent ? recent : after->recent;
	} else {
		after->samples = 0;
		after->weight = 0;
		after->first_seen = INT64_MAX;
		after->last_seen = INT64_MIN;
		after->first_us = INT64_MAX;
		after->last_us = INT64_MIN;
		after->recent = 0;
		st->series_emptied++;
	}
	st->buckets += buckets;
	st->samples += samples;
	st->weight += weight;
	st->series++;
	return 1;
}

int rdb_prune(struct store *sbase, const struct store_prune_opts *o, struct store_prune_stats *st)
{
	struct rdb *s = rdb_of(sbase);
	rocksdb_writebatch_t *wb = NULL;
	rocksdb_iterator_t *it = NULL;
	struct series_rec *after = NULL;
	bool *changed = NULL;
	struct buf buf = {0};
	char *rerr = NULL;
	int r = 0;

	memset(st, 0, sizeof(*st));
	if (s->readonly) {
		seterr(s, "%s: store is open read-only", s->dir);
		return -EROFS;
	}
	if (s->batch) {
		seterr(s, "%s: cannot prune while a batch is open", s->dir);
		return -EBUSY;
	}
	if (!o->dry_run) {
		r = schema_upgrade(s);
		if (r < 0)
			return r;
	}
	/* Only whole buckets go: one that straddles `before` stays. */
	uint32_t cut = bucket_clamped(s, o->before);
	wb = rocksdb_writebatch_create();
	it = rocksdb_create_iterator_cf(s->db, s->ropts, s->cf[CF_COUNTS]);
	after = calloc(s->nseries ? s->nseries : 1, sizeof(*after));
	changed = calloc(s->nseries ? s->nseries : 1, sizeof(*changed));
	if (!wb || !it || !after || !changed) {
		seterr(s, "%s: out of memory", s->dir);
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t id = 1; id < s->nseries; id++) {
		if (!prune_selects(&s->series[id], o, st))
			continue;
		r = prune_series(s, wb, it, id, cut, &after[id], st);
		if (r < 0)
			goto out;
		if (r == 0)
			continue;
		changed[id] = true;
		uint8_t key[5];
		buf.len = 0;
		r = series_encode(&buf, &after[id]);
		if (r < 0) {
			seterr(s, "%s: out of memory", s->dir);
			goto out;
		}
		id_key(key, KEY_SERIES, id);
		rocksdb_writebatch_put_cf(wb, s->cf[CF_DEFAULT], (char *)key, 5, (char *)buf.p,
		                          buf.len);
	}
	r = 0;
	if (o->dry_run)
		goto out;
	/* The change records of what is gone (a push has nothing left to
	 * send for them), when every series was selected. */
	int dropped = 0;
	if (!o->binary && !o->version) {
		dropped = changes_prune(s, wb, cut, o->wall_clock_only);
		if (dropped < 0) {
			r = dropped;
			if (r == -ENOMEM)
				seterr(s, "%s: out of memory", s->dir);
			goto out;
		}
	}
	if (!st->buckets && !dropped)
		goto out;
	rocksdb_write(s->db, s->wopts, wb, &rerr);
	if (rerr) {
		r = rdb_fail(s, rerr, "prune");
		goto out;
	}
	/* Written: the in-memory records follow (their strings stay). */
	for (uint32_t id = 1; id < s->nseries; id++)
		if (changed[id])
			s->series[id] = after[id];
	settle(s, SETTLE_NOW);
	s->seq = rocksdb_get_latest_sequence_number(s->db);
out:
	free(buf.p);
	free(changed);
	free(after);
	if (it)
		rocksdb_iter_destroy(it);
	if (wb)
		rocksdb_writebatch_destroy(wb);
	return r;
}

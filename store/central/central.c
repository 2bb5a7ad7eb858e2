/*
 * central.c — opening and closing a PostgreSQL store, catching up with
 * other writers in store_refresh(), the in-memory getters, and the
 * backend's table of functions (central_ops).  A reader needs only
 * SELECT rights: it loads meta, frames and nodes inside one read-only
 * repeatable-read transaction, which a hot standby serves too.
 */
#include "central-internal.h"

#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the commit counter (with the schema and the recent tier's
 * window) and the frames and nodes past those loaded, in one REPEATABLE
 * READ transaction, which stays open (s->snapshot) when
 * keep is true.  Returns 1 when the counter moved, 0 when not, or -errno. */
static int catch_up(struct pg *s, bool keep)
{
	PGresult *res;
	uint64_t seq;
	int r = central_exec(s, "reading", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0,
	                     NULL, false, NULL);

	if (r < 0)
		return r;
	r = central_meta_refresh(s, &seq);
	if (r < 0)
		goto fail;
	r = central_load_new(s);
	if (r < 0)
		goto fail;
	if (keep) {
		s->snapshot = true;
		s->snapshot_read = false;
	} else {
		r = central_exec(s, "reading", "COMMIT", 0, NULL, false, NULL);
	}
	if (r < 0)
		return r;
	r = seq != s->seq;
	s->seq = seq;
	return r;
fail:
	if (s->conn && PQstatus(s->conn) == CONNECTION_OK) {
		res = PQexec(s->conn, "ROLLBACK");
		PQclear(res);
	}
	return r;
}

/* Ends the open snapshot, if any.  A connection that died with it is
 * not an error here: the next catch-up reconnects. */
static void end_snapshot(struct pg *s)
{
	central_prefetch_end(s);
	if (!s->snapshot)
		return;
	s->snapshot = s->snapshot_copy = s->snapshot_read = false;
	if (s->conn && PQstatus(s->conn) == CONNECTION_OK) {
		PGresult *res = PQexec(s->conn, "COMMIT");

		PQclear(res);
	}
}

static int open_once(const char *conn, int flags, struct store **out, char *err, size_t errlen)
{
	struct pg *s;
	int r;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		if (errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->base.ops = &central_ops;
	s->readonly = flags & STORE_READONLY;
	s->conninfo = strdup(conn);
	s->base.where = central_redact(conn);
	if (!s->conninfo || !s->base.where) {
		r = -ENOMEM;
		central_seterr(s, "out of memory");
		goto fail;
	}
	r = central_connect(s);
	/* A server that answers but is shutting down or starting up (a
	 * restart), or that takes the connection and drops it, is waited
	 * for, with backoff, as a commit would; one that does not answer at
	 * all is an error at once. */
	if (r == -ECONNREFUSED && central_restarting(s->errmsg)) {
		double delay = 0.1;

		r = central_reconnect(s, central_now(), &delay) < 0 ? -ECONNREFUSED : 0;
	}
	if (r < 0)
		goto fail;
	r = central_schema(s, flags);
	if (r < 0)
		goto fail;
	if (!s->readonly) {
		r = central_random_hex(s->writer_id);
		if (r < 0) {
			central_seterr(s, "%s: getrandom: %s", s->base.where, strerror(-r));
			goto fail;
		}
		r = central_load_series(s);
		if (r < 0)
			goto fail;
	}
	s->seq = UINT64_MAX; /* so that catch_up() records the counter */
	/* A reader reads in the snapshot it opened with, until its first
	 * refresh. */
	r = catch_up(s, s->readonly);
	if (r < 0)
		goto fail;
	if (s->nframes == 0 || s->nnodes == 0) {
		central_seterr(s, "%s: store is damaged: no root node or frame 0", s->base.where);
		r = -EIO;
		goto fail;
	}
	*out = &s->base;
	return 0;
fail:
	if (errlen)
		snprintf(err, errlen, "%s", s->errmsg[0] ? s->errmsg : strerror(-r));
	central_close_store(&s->base);
	return r;
}

int central_open(const char *conn, int flags, struct store **out, char *err, size_t errlen)
{
	double start = central_now(), delay = 0.1;
	bool lost = false;
	int r;

	*out = NULL;
	r = central_pq_load(err, errlen);
	if (r < 0)
		return r;
	/* A server that went away while the store was being opened (a
	 * restart, after the connection was made) is waited for, with
	 * backoff, and the store opened afresh, as a commit would be. */
	for (;;) {
		struct timespec ts;
		double left;

		r = open_once(conn, flags, out, err, errlen);
		left = start + central_retry_seconds() - central_now();
		/* Once it was there, a refused connection is the restart. */
		lost = lost || r == -ECONNRESET;
		if (!(r == -ECONNRESET || (lost && r == -ECONNREFUSED)) || left <= 0) {
			if (r == 0 && lost)
				store_log("%s: opened after %.1f s", (*out)->where,
				          central_now() - start);
			return r;
		}
		if (delay > left)
			delay = left;
		store_log("%s; trying again in %.1f s",
		          errlen && err[0] ? err : "the server went away", delay);
		ts.tv_sec = (time_t)delay;
		ts.tv_nsec = (long)((delay - (double)ts.tv_sec) * 1e9);
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		delay *= 2;
	}
}

void central_close_store(struct store *sbase)
{
	struct pg *s = pg_of(sbase);

	if (!s)
		return;
	if (s->batch)
		central_batch_free(&s->batch->base);
	PQclear(s->pf.next);
	free(s->pf.ids);
	PQclear(s->spf.next);
	free(s->spf.ids);
	if (s->conn)
		PQfinish(s->conn);
	central_intern_free(s);
	for (uint32_t i = 0; i < s->nseries; i++)
		central_series_clear(&s->series[i]);
	free(s->series);
	free(s->series_by_id);
	htab_free(&s->series_tab);
	free(s->conninfo);
	free(s->base.where);
	free(s->base.host);
	free(s);
}

/* Catches up (keep: and keeps the transaction open), on a fresh
 * connection when the old one is gone; a snapshot still open ends
 * first. */
static int refresh(struct pg *s, bool keep)
{
	int r;

	end_snapshot(s);
	if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
		if (s->conn)
			PQreset(s->conn);
		if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
			r = central_connect(s);
			if (r < 0)
				return r;
		}
	}
	r = catch_up(s, keep);
	if (r == -ECONNRESET) {
		/* One more time on a fresh connection: a restarted server or
		 * a promoted standby. */
		r = central_connect(s);
		if (r == 0)
			r = catch_up(s, keep);
	}
	return r < 0 ? -EIO : r;
}

int central_refresh(struct store *sbase)
{
	struct pg *s = pg_of(sbase);

	/* A writer's batch holds provisional ids past the loaded ones; the
	 * commit catches up instead.  Inside a copy's snapshot, nothing
	 * moves.  A reader moves to a new snapshot. */
	if (s->batch || s->snapshot_copy)
		return 0;
	return refresh(s, s->readonly);
}

int central_reader_recover(struct pg *s)
{
	double start = central_now(), delay = 0.1;
	int r;

	if (!s->readonly || !s->snapshot || s->snapshot_copy || s->snapshot_read)
		return -ECONNRESET;
	s->snapshot = false;
	for (;;) {
		r = central_reconnect(s, start, &delay);
		if (r < 0)
			return r;
		r = catch_up(s, true);
		if (r != -ECONNRESET)
			return r < 0 ? r : 0;
	}
}

int central_snapshot(struct store *sbase, bool begin)
{
	struct pg *s = pg_of(sbase);
	int r;

	if (begin) {
		if (s->batch || s->snapshot_copy) {
			central_seterr(s, "%s: a batch or a snapshot is open", s->base.where);
			return -EBUSY;
		}
		r = refresh(s, true);
		if (r < 0)
			return r;
		s->snapshot_copy = true;
		return 0;
	}
	if (!s->snapshot_copy)
		return 0;
	s->snapshot = s->snapshot_copy = s->snapshot_read = false;
	return central_exec(s, "ending a read", "COMMIT", 0, NULL, false, NULL) < 0 ? -EIO : 0;
}

static const char *central_errmsg(const struct store *sbase)
{
	return pg_cof(sbase)->errmsg;
}

static const char *central_notice(const struct store *sbase)
{
	(void)sbase;
	return NULL;
}

static uint32_t central_bucket_seconds(const struct store *sbase)
{
	return pg_cof(sbase)->bucket_seconds;
}

static uint64_t central_sequence(const struct store *sbase)
{
	return pg_cof(sbase)->seq;
}

static uint32_t central_node_count(const struct store *sbase)
{
	return pg_cof(sbase)->nnodes;
}

static int central_node_get(const struct store *sbase, uint32_t node, uint32_t *parent,
                            uint32_t *frame)
{
	const struct pg *s = pg_cof(sbase);

	if (node >= s->nnodes)
		return -ENOENT;
	*parent = s->node_parent[node];
	*frame = s->node_frame[node];
	return 0;
}

static uint32_t central_frame_count(const struct store *sbase)
{
	return pg_cof(sbase)->nframes;
}

static int central_frame_get(const struct store *sbase, uint32_t frame, struct store_frame *f)
{
	const struct pg *s = pg_cof(sbase);

	if (frame == 0 || frame >= s->nframes)
		return -ENOENT;
	*f = *central_frame_shown(s, frame);
	return 0;
}

static const char *central_id(const struct store *sbase)
{
	return pg_cof(sbase)->store_id;
}

const struct store_ops central_ops = {
        .name = "central",
        .close = central_close_store,
        .errmsg = central_errmsg,
        .notice = central_notice,
        .bucket_seconds = central_bucket_seconds,
        .batch_new = central_batch_new,
        .batch_free = central_batch_free,
        .batch_series = central_batch_series,
        .batch_frame = central_batch_frame,
        .batch_frame_rename = central_batch_frame_rename,
        .batch_node = central_batch_node,
        .batch_add = central_batch_add,
        .batch_sample = central_batch_sample,
        .batch_input_bytes = central_batch_input_bytes,
        .batch_commit = central_batch_commit,
        .refresh = central_refresh,
        .sequence = central_sequence,
        .renames = central_renames,
        .series_list = central_series_list,
        .node_count = central_node_count,
        .node_get = central_node_get,
        .frame_count = central_frame_count,
        .frame_get = central_frame_get,
        .series_counts = central_series_counts,
        .series_prefetch = central_series_prefetch,
        .series_samples = central_series_samples,
        .samples_prefetch = central_samples_prefetch,
        .keep_samples = central_keep_samples,
        .set_keep_samples = central_set_keep_samples,
        .rollup = central_rollup,
        .footprint = central_footprint,
        .series_disk_bytes = central_series_disk_bytes,
        .compact = central_compact,
        .prune = central_prune,
        .replaces_sources = true,
        .id = central_id,
        .changes = central_changes,
        .renames_since = central_renames_since,
        .batch_source = central_batch_source,
        .source_cursor = central_source_cursor,
        .source_records = central_source_records,
        .batch_lineage = central_batch_lineage,
        .batch_detail = central_batch_detail,
        .batch_moments = central_batch_moments,
        .dest_cursor = central_dest_cursor,
        .set_dest_cursor = central_set_dest_cursor,
        .snapshot = central_snapshot,
};

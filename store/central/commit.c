/*
 * commit.c — writing a batch as one transaction.  Under the writers'
 * advisory lock it loads what other writers committed since this one
 * last looked, renumbers the batch's provisional frames and nodes after
 * them (a frame or node someone else already stored is reused; one that
 * shares a hash with different content refuses the commit), resolves the
 * batch's new series, bumps the commit counter, has write.c write the
 * new frames, nodes, counts, detail and series totals, and records
 * a random token for this writer.  When the connection dies, it
 * reconnects with backoff, and if the token shows the commit went
 * through, it stops there; else it runs the whole transaction again from
 * the batch, still in memory.
 */
#include "central-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the transaction ----------------------------------------------------------- */

static int run(struct pg *s, const char *what, const char *sql)
{
	return central_exec(s, what, sql, 0, NULL, false, NULL);
}

/* Renumbers the batch's frames and nodes after the `theirs` rows other
 * writers committed since the batch began: loads them, then interns the
 * batch's own again on top, and remaps the batch's counts. */
static int merge_theirs(struct pg_batch *b)
{
	struct pg *s = b->s;
	uint32_t nf = s->nframes - b->frame_base, nn = s->nnodes - b->node_base;
	struct store_frame *ff = NULL;
	char **fb = NULL;
	struct hash128 *fh = NULL, *nh = NULL;
	uint32_t *np = NULL, *nfr = NULL, *fmap = NULL, *nmap = NULL;
	uint32_t i = 0, j = 0, theirs_f, theirs_n;
	int r = -ENOMEM;

	ff = malloc((nf + 1) * sizeof(*ff));
	fb = malloc((nf + 1) * sizeof(*fb));
	fh = malloc((nf + 1) * sizeof(*fh));
	fmap = malloc((nf + 1) * sizeof(*fmap));
	nh = malloc((nn + 1) * sizeof(*nh));
	np = malloc((nn + 1) * sizeof(*np));
	nfr = malloc((nn + 1) * sizeof(*nfr));
	nmap = malloc((nn + 1) * sizeof(*nmap));
	if (!ff || !fb || !fh || !fmap || !nh || !np || !nfr || !nmap)
		goto out;
	for (uint32_t k = 0; k < nf; k++) {
		ff[k] = s->frames[b->frame_base + k];
		fb[k] = s->blob[b->frame_base + k];
		fh[k] = s->fhash[b->frame_base + k];
		s->blob[b->frame_base + k] = NULL;
	}
	for (uint32_t k = 0; k < nn; k++) {
		np[k] = s->node_parent[b->node_base + k];
		nfr[k] = s->node_frame[b->node_base + k];
		nh[k] = s->nhash[b->node_base + k];
	}
	central_truncate(s, b->frame_base, b->node_base);
	/* From here on a failure leaves the batch without its own frames and
	 * nodes: it cannot be committed any more, by a retry or otherwise. */
	b->broken = true;
	r = central_load_new(s);
	if (r < 0)
		goto out;
	theirs_f = s->nframes;
	theirs_n = s->nnodes;
	for (; i < nf; i++) {
		uint32_t found = central_frame_find(s, &fh[i]);

		if (found != UINT32_MAX && !central_frame_equal(&s->frames[found], &ff[i])) {
			char hex[33];

			central_hex(&fh[i], hex);
			central_seterr(s,
			               "frame \"%s\" and frame %u share the content hash %s (a "
			               "collision): refused",
			               ff[i].name, found, hex);
			r = -EEXIST;
			goto out;
		}
		if (found == UINT32_MAX) {
			r = central_frame_append(s, &ff[i], &fh[i]);
			if (r < 0)
				goto out;
			found = s->nframes - 1;
		}
		fmap[i] = found;
		free(fb[i]);
	}
	for (; j < nn; j++) {
		uint32_t parent = np[j] < b->node_base ? np[j] : nmap[np[j] - b->node_base];
		uint32_t frame = nfr[j] < b->frame_base ? nfr[j] : fmap[nfr[j] - b->frame_base];
		uint32_t found = central_node_find(s, &nh[j]);

		if (found != UINT32_MAX &&
		    (s->node_parent[found] != parent || s->node_frame[found] != frame)) {
			char hex[33];

			central_hex(&nh[j], hex);
			central_seterr(s,
			               "stack node (%u, %u) and node %u share the content hash %s "
			               "(a collision): refused",
			               parent, frame, found, hex);
			r = -EEXIST;
			goto out;
		}
		if (found == UINT32_MAX) {
			r = central_node_append(s, parent, frame, &nh[j]);
			if (r < 0)
				goto out;
			found = s->nnodes - 1;
		}
		nmap[j] = found;
	}
	for (size_t k = 0; k < b->ncounts; k++)
		if (b->counts[k].node >= b->node_base)
			b->counts[k].node = nmap[b->counts[k].node - b->node_base];
	for (size_t k = 0; k < b->ndetail; k++)
		if (b->detail[k].smp.node >= b->node_base)
			b->detail[k].smp.node = nmap[b->detail[k].smp.node - b->node_base];
	/* The rows before the batch's own are now everyone's. */
	b->frame_base = theirs_f;
	b->node_base = theirs_n;
	b->broken = false;
	r = 0;
out:
	for (; i < nf; i++)
		if (fb)
			free(fb[i]);
	free(ff);
	free(fb);
	free(fh);
	free(fmap);
	free(nh);
	free(np);
	free(nfr);
	free(nmap);
	return r;
}

/* Whether other writers committed frames or nodes past the batch's
 * base: 1, 0 or -errno. */
static int others_wrote(struct pg_batch *b)
{
	struct pg *s = b->s;
	PGresult *res;
	uint64_t frames, nodes;
	int r = central_exec(s, "reading the newest ids",
	                     "SELECT (SELECT first + cardinality(kinds) FROM frame_runs"
	                     " ORDER BY first DESC LIMIT 1), (SELECT first + cardinality(parents)"
	                     " FROM node_runs ORDER BY first DESC LIMIT 1)",
	                     0, NULL, false, &res);

	if (r < 0)
		return r;
	r = central_value_u64(s, res, 0, 0, UINT32_MAX, "where the frames end", &frames);
	if (r == 0)
		r = central_value_u64(s, res, 0, 1, UINT32_MAX, "where the stack nodes end",
		                      &nodes);
	if (r == 0)
		r = frames != b->frame_base || nodes != b->node_base;
	PQclear(res);
	return r;
}

/* The database id of each series the batch created (provisional id
 * first..next-1): *ids[k] for provisional id first + k. */
static int resolve_series(struct pg_batch *b, uint32_t **ids)
{
	struct pg *s = b->s;
	uint32_t n = s->nseries - b->series_base;
	int r = 0;

	*ids = calloc(n + 1, sizeof(**ids));
	if (!*ids)
		return -ENOMEM;
	for (uint32_t k = 0; k < n && r == 0; k++) {
		const struct cseries *e = &s->series[b->series_base + k];
		char *hex[5] = {central_hex_of(e->host), central_hex_of(e->binary),
		                central_hex_of(e->version), central_hex_of(e->event),
		                central_hex_of(e->labels)};
		const char *vals[6] = {hex[0], hex[1], hex[2], hex[3], hex[4], e->unit};
		PGresult *res = NULL;

		if (!hex[0] || !hex[1] || !hex[2] || !hex[3] || !hex[4])
			r = -ENOMEM;
		if (r == 0)
			r = central_exec(
			        s, "looking up a series",
			        "SELECT id, unit FROM series WHERE host = decode($1, 'hex')"
			        " AND binary_name = decode($2, 'hex')"
			        " AND version = decode($3, 'hex') AND event = decode($4, 'hex')"
			        " AND labels = decode($5, 'hex')",
			        5, vals, false, &res);
		if (r == 0 && PQntuples(res) == 0) {
			PQclear(res);
			r = central_exec(
			        s, "adding a series",
			        "INSERT INTO series (id, host, binary_name, version, event, unit, "
			        "labels)"
			        " SELECT coalesce(max(id), 0) + 1, decode($1, 'hex'), decode($2, "
			        "'hex'),"
			        " decode($3, 'hex'), decode($4, 'hex'), $6, decode($5, 'hex')"
			        " FROM series RETURNING id, unit",
			        6, vals, false, &res);
		}
		for (int c = 0; c < 5; c++)
			free(hex[c]);
		if (r < 0)
			break;
		r = central_series_id(s, res, 0, 0, &(*ids)[k]);
		if (r == 0 && strcmp(PQgetvalue(res, 0, 1), e->unit)) {
			central_seterr(s, "series %s/%s/%s of host %s has unit \"%s\", not \"%s\"",
			               e->binary, e->version, e->event, e->host,
			               PQgetvalue(res, 0, 1), e->unit);
			r = -EINVAL;
		}
		PQclear(res);
	}
	return r;
}

/* The source row of a copy: its id (made when new), as the decimal
 * number it checked. */
static int source_row(struct pg_batch *b, char out[16])
{
	struct pg *s = b->s;
	const char *vals[1] = {b->source};
	PGresult *res;
	uint64_t id;
	int r = central_exec(s, "looking up the source store",
	                     "SELECT id FROM sources WHERE store_id = $1", 1, vals, false, &res);

	if (r < 0)
		return r;
	if (PQntuples(res) == 0) {
		PQclear(res);
		r = central_exec(
		        s, "adding the source store",
		        "INSERT INTO sources (id, store_id, upto) SELECT coalesce(max(id), 0)"
		        " + 1, $1, 0 FROM sources RETURNING id",
		        1, vals, false, &res);
		if (r < 0)
			return r;
	}
	r = central_value_u64(s, res, 0, 0, INT32_MAX, "a source store's id", &id);
	PQclear(res);
	if (r == 0)
		snprintf(out, 16, "%" PRIu64, id);
	return r;
}

/* A copy's lineage, with its source record (row `source`): the nonce of
 * the source's commit it reached, and the commit of the last resync under
 * this key (this one's when it resyncs; else the one recorded stays).  A
 * clone that leaves a key whose record another copy resynced takes away
 * that key's rows written before the resync: they came from the clone's
 * history, which it sends again under its own key (store/README.md,
 * "Source identity"). */
static int record_lineage(struct pg_batch *b, const char *source, int64_t commit)
{
	struct pg *s = b->s;
	char nonce[17] = "-", resync[24] = "0", before[24];
	const char *vals[4] = {source, nonce, resync, b->mark.resync ? "t" : "f"};
	int r;

	if (b->mark.has_nonce)
		snprintf(nonce, sizeof(nonce), "%016" PRIx64, b->mark.nonce);
	if (b->mark.resync)
		snprintf(resync, sizeof(resync), "%" PRId64, commit);
	r = central_exec(s, "recording the source's lineage",
	                 "INSERT INTO flamefs_meta (key, value) VALUES ('lineage:' || $1,"
	                 " $2 || ' ' || $3) ON CONFLICT (key) DO UPDATE SET value = $2 || ' ' ||"
	                 " CASE WHEN $4::bool THEN $3 ELSE coalesce(nullif(split_part("
	                 "flamefs_meta.value, ' ', 2), ''), '0') END",
	                 4, vals, false, NULL);
	if (r < 0 || !b->mark.split_from[0])
		return r;
	snprintf(before, sizeof(before), "%" PRIu64, b->mark.split_before);
	{
		const char *v2[2] = {b->mark.split_from, before};

		r = central_exec(
		        s, "taking a clone's rows from the key it leaves",
		        "WITH o AS (SELECT id FROM sources WHERE store_id = $1),"
		        " d AS (DELETE FROM counts c USING o WHERE c.source = o.id"
		        " AND c.commit < $2::int8 RETURNING c.series, c.total_samples, "
		        "c.total_weight),"
		        " t AS (SELECT series, sum(flamefs_u64(total_samples)) AS samples,"
		        " sum(flamefs_u64(total_weight)) AS weight FROM d GROUP BY series)"
		        " UPDATE series SET samples = series.samples - t.samples,"
		        " weight = series.weight - t.weight FROM t WHERE series.id = t.series",
		        2, v2, false, NULL);
		if (r == 0)
			r = central_exec(
			        s, "taking a clone's rows from the key it leaves",
			        "WITH o AS (SELECT id FROM sources WHERE store_id = $1),"
			        " d AS (DELETE FROM samples x USING o WHERE x.source = o.id"
			        " AND x.commit < $2::int8 RETURNING x.series, x.n),"
			        " t AS (SELECT series, sum(n) AS n FROM d GROUP BY series)"
			        " UPDATE series_recent x SET samples = x.samples - t.n"
			        " FROM t WHERE x.series = t.series",
			        2, v2, false, NULL);
		if (r == 0)
			r = central_exec(
			        s, "taking a clone's rows from the key it leaves",
			        "UPDATE flamefs_meta SET value = split_part(value, ' ', 1)"
			        " || ' 0' WHERE key = (SELECT 'lineage:' || id FROM sources"
			        " WHERE store_id = $1)",
			        1, v2, false, NULL);
	}
	return r;
}

/* Whether the batch changes anything at all. */
static bool batch_empty(const struct pg_batch *b)
{
	const struct pg *s = b->s;

	if (b->ncounts || b->ndetail || b->replace || b->nrenames || s->nframes > b->frame_base ||
	    s->nnodes > b->node_base)
		return false;
	for (uint32_t i = 0; i < s->nseries; i++)
		if (s->series[i].touched || s->series[i].input_bytes)
			return false;
	return true;
}

/* One attempt.  Returns 0 when committed (*commit: its number), 1 when
 * `check` found this batch's token, i.e. an earlier attempt committed,
 * or -errno. */
static int commit_once(struct pg_batch *b, bool check, int64_t *commit, uint32_t **ids)
{
	struct pg *s = b->s;
	char lock[64], num[24], source[16] = "0";
	PGresult *res;
	uint64_t seq;
	int r;

	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%lld)",
	         (long long)CENTRAL_WRITER_LOCK);
	r = run(s, "commit", "BEGIN");
	if (r == 0)
		r = run(s, "taking the writers' lock", lock);
	if (r < 0)
		return r;
	if (check) {
		const char *vals[2] = {s->writer_id, b->token};

		r = central_exec(s, "checking an earlier attempt",
		                 "SELECT commit FROM writers WHERE writer = $1 AND token = $2", 2,
		                 vals, false, &res);
		if (r < 0)
			return r;
		if (PQntuples(res) == 1) {
			r = central_value_i64(s, res, 0, 0, "an earlier commit's number", commit);
			PQclear(res);
			run(s, "commit", "ROLLBACK");
			return r < 0 ? r : 1;
		}
		PQclear(res);
	}
	r = others_wrote(b);
	if (r > 0)
		r = merge_theirs(b);
	if (r < 0)
		return r;
	free(*ids);
	*ids = NULL;
	r = resolve_series(b, ids);
	if (r < 0)
		return r;
	r = central_commit_counter(s, true, &seq);
	if (r < 0)
		return r;
	*commit = (int64_t)seq;
	if (b->replace) {
		r = source_row(b, source);
		if (r < 0)
			return r;
	}
	central_counts_sum(b);
	r = central_copy_frames_nodes(b);
	if (r == 0)
		r = central_write_counts(b, *ids, *commit, source);
	/* the names other writers found first stay (names.c) */
	if (r == 0 && b->nrenames)
		r = central_load_names(s);
	if (r == 0)
		r = central_names_write(b, *commit);
	if (r == 0 && b->replace) {
		char upto[24], expect[24];
		const char *vals[3] = {source, upto, expect};
		PGresult *res2 = NULL;

		snprintf(upto, sizeof(upto), "%llu", (unsigned long long)b->upto);
		snprintf(expect, sizeof(expect), "%llu", (unsigned long long)b->expect);
		/* Compare and set: a copy of the same source that committed
		 * since this one read the record may have sent newer buckets
		 * than this one holds. */
		r = central_exec(s, "recording the copy",
		                 "UPDATE sources SET upto = $2, updated = now()"
		                 " WHERE id = $1 AND upto = $3",
		                 3, vals, false, &res2);
		if (r == 0 && strcmp(PQcmdTuples(res2), "1") != 0) {
			central_seterr(s,
			               "%s: another copy of store %s committed while this one ran "
			               "(it expected the record at commit %s); nothing of this one "
			               "was written: run it again",
			               s->base.where, b->source, expect);
			r = -EAGAIN;
		}
		PQclear(res2);
	}
	if (r == 0 && b->replace)
		r = record_lineage(b, source, *commit);
	if (r == 0) {
		const char *vals[3] = {s->writer_id, b->token, num};

		snprintf(num, sizeof(num), "%lld", (long long)*commit);
		r = central_exec(s, "recording the commit",
		                 "INSERT INTO writers (writer, token, commit) VALUES ($1, $2, $3)"
		                 " ON CONFLICT (writer) DO UPDATE SET token = excluded.token,"
		                 " commit = excluded.commit, at = now()",
		                 3, vals, false, NULL);
	}
	/* Tokens only matter to a writer that retries a commit: a month
	 * old, they are forgotten. */
	if (r == 0)
		r = run(s, "forgetting old commit tokens",
		        "DELETE FROM writers WHERE at < now() - interval '30 days'");
	if (r == 0)
		r = run(s, "commit", "COMMIT");
	return r;
}

/* What a failed commit was about: "host H, series B/V/E (and N more)". */
static void batch_context(const struct pg_batch *b, char *out, size_t len)
{
	const struct pg *s = b->s;
	const struct cseries *first = NULL;
	unsigned more = 0;

	for (uint32_t i = 0; i < s->nseries; i++) {
		if (!s->series[i].touched && !s->series[i].input_bytes)
			continue;
		if (!first)
			first = &s->series[i];
		else
			more++;
	}
	if (!first)
		snprintf(out, len, "host %s", s->base.host);
	else if (more)
		snprintf(out, len, "host %s, series %s/%s/%s and %u more", first->host,
		         first->binary, first->version, first->event, more);
	else
		snprintf(out, len, "host %s, series %s/%s/%s", first->host, first->binary,
		         first->version, first->event);
}

/* After the commit: the batch's series get their database ids. */
static void settle_series(struct pg_batch *b, const uint32_t *ids)
{
	struct pg *s = b->s;

	for (uint32_t k = b->series_base; k < s->nseries; k++)
		s->series[k].id = ids[k - b->series_base];
	htab_free(&s->series_tab);
	if (s->series_by_id)
		memset(s->series_by_id, 0, (size_t)s->series_by_id_len * sizeof(*s->series_by_id));
	for (uint32_t i = 0; i < s->nseries; i++)
		if (central_series_index(s, i) < 0)
			break; /* lookups miss; the next batch_series adds again */
}

/* For tests: $FLAMEFS_TEST_LOSE_REPLY set makes every commit act as if
 * its connection died once, after the server committed, so that the
 * token check is what keeps it from counting twice. */
static bool lose_reply(void)
{
	const char *e = getenv("FLAMEFS_TEST_LOSE_REPLY");

	return e && *e;
}

int central_batch_commit(struct store_batch *bbase)
{
	struct pg_batch *b = pg_batch_of(bbase);
	struct pg *s = b->s;
	double start = central_now(), delay = 0.1;
	int64_t commit = 0;
	uint32_t *ids = NULL;
	bool check = false;
	int r;

	if (b->broken) {
		central_seterr(s,
		               "%s: this batch lost its frames and stacks when an earlier commit "
		               "of it failed; nothing of it was written: start it again",
		               s->base.where);
		return -EIO;
	}
	if (batch_empty(b))
		return 0;
	if (!b->token[0] && central_random_hex(b->token) < 0) {
		central_seterr(s, "%s: getrandom failed", s->base.where);
		return -EIO;
	}
	for (;;) {
		s->errmsg[0] = '\0';
		r = commit_once(b, check, &commit, &ids);
		if (r == 0 && !check && lose_reply()) {
			/* For tests: as if the connection died after COMMIT
			 * went through but before its reply came. */
			central_seterr(s,
			               "%s: commit: the reply was lost (FLAMEFS_TEST_LOSE_REPLY)",
			               s->base.where);
			r = -ECONNRESET;
		}
		if (r >= 0)
			break;
		if (r != -ECONNRESET && s->conn && PQstatus(s->conn) == CONNECTION_OK) {
			PGresult *res = PQexec(s->conn, "ROLLBACK");

			PQclear(res);
		}
		if (r != -ECONNRESET || b->broken)
			break;
		/* The server went away: the commit may or may not have
		 * happened.  The next attempt looks for the token first. */
		check = true;
		if (central_reconnect(s, start, &delay) < 0)
			break;
	}
	if (r < 0) {
		char ctx[512], inner[CENTRAL_ERRLEN];
		size_t wl = strlen(s->base.where);
		const char *m = s->errmsg;

		if (!strncmp(m, s->base.where, wl) && !strncmp(m + wl, ": ", 2))
			m += wl + 2;
		snprintf(inner, sizeof(inner), "%s", m);
		batch_context(b, ctx, sizeof(ctx));
		central_seterr(s, "%s: commit of %s failed: %s", s->base.where, ctx, inner);
		free(ids);
		return r == -ENOMEM || r == -EEXIST || r == -EAGAIN ? r : -EIO;
	}
	if (r == 1) {
		/* An earlier attempt committed: its ids are the ones in
		 * memory, but not its series ids, which are read again. */
		free(ids);
		ids = NULL;
		r = resolve_series(b, &ids);
		if (r < 0) {
			free(ids);
			return r;
		}
	}
	settle_series(b, ids);
	free(ids);
	s->seq = (uint64_t)commit;
	/* Committed: a failure here only leaves the old names in memory
	 * until the next open or refresh. */
	(void)central_names_applied(b, commit);
	central_batch_reset(b);
	return 0;
}

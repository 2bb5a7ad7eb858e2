/*
 * schema.c — the database's schema: telling a flamefs store from an
 * empty database or someone else's, creating schema 2 in one
 * transaction, refusing a schema from the future, upgrading an older one
 * step by step (each step one transaction), and reading the meta rows
 * (store id, bucket size, commit counter).  store/README.md documents the
 * tables.
 */
#include "central-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What SQL reads a counts blob with (schema 2): flamefs_counts(entries)
 * decodes one into rows (node, samples, weight; int8 bit patterns as in
 * the other counts columns) and refuses a damaged one, and the view
 * count_entries shows every counts row's entries, a row each. */
static const char counts_sql[] =
        "CREATE FUNCTION flamefs_counts(entries bytea, OUT node int4, OUT samples int8,"
        " OUT weight int8) RETURNS SETOF record IMMUTABLE STRICT PARALLEL SAFE"
        " LANGUAGE plpgsql AS $f$"
        " DECLARE i int := 0; n int := length(entries); c int; k int; sh int; v int8;"
        " head int8; cur int8 := 0; first bool := true;"
        " BEGIN"
        " WHILE i < n LOOP"
        "  FOR k IN 0 .. 2 LOOP"
        "   IF k = 2 AND head & 1 = 0 THEN weight := samples; EXIT; END IF;"
        "   v := 0; sh := 0;"
        "   LOOP"
        "    IF i >= n OR sh >= 64 THEN"
        "     RAISE EXCEPTION 'flamefs: damaged counts entries at byte %', i; END IF;"
        "    c := get_byte(entries, i); i := i + 1;"
        "    v := v | ((c & 127)::int8 << sh); sh := sh + 7;"
        "    EXIT WHEN c < 128;"
        "   END LOOP;"
        "   IF k = 0 THEN head := v; ELSIF k = 1 THEN samples := v; ELSE weight := v; END IF;"
        "  END LOOP;"
        "  IF head < 0 OR (NOT first AND head >> 1 = 0) OR cur + (head >> 1) > 2147483647"
        "   OR (head & 1 = 1 AND weight = samples) THEN"
        "   RAISE EXCEPTION 'flamefs: damaged counts entries at byte %', i; END IF;"
        "  cur := cur + (head >> 1); first := false; node := cur;"
        "  RETURN NEXT;"
        " END LOOP;"
        " END $f$;"
        "CREATE VIEW count_entries AS SELECT c.series, c.bucket, c.source, c.commit,"
        " e.node, e.samples, e.weight FROM counts c, flamefs_counts(c.entries) e;";

/* Schema 2.  Frames and nodes are kept in runs, one row per commit's
 * run of up to 4096 (arrays, lz4), with the views `frames` and `nodes`
 * of a row each for SQL; their content hashes are computed, not stored.
 * A counts row holds its entries as one counts blob (../counts-blob-internal.h,
 * the embedded store's format: delta-coded nodes and varints, ~3 bytes an
 * entry where schema 1's three arrays took ~12 after lz4), with the view
 * `count_entries` of an entry each for SQL.  Counts hold unsigned 64-bit
 * values as int8 bit patterns (flamefs_u64() reads them back); series
 * totals are numeric(20), checked below 2^64.  Counts rows are kept in
 * the row (storage MAIN, lz4 from 128 bytes on) unless the row outgrows
 * a page: an out-of-line value costs a TOAST row and index entry of its
 * own, more than a bucket's short blob takes, and a read of the bucket an
 * index lookup per value. */
static const char schema_sql[] =
        "CREATE TABLE flamefs_meta (key text PRIMARY KEY, value text NOT NULL);"
        "CREATE TABLE frame_runs (first int4 PRIMARY KEY, kinds int2[] NOT NULL,"
        " lines int4[] NOT NULL, names bytea[] NOT NULL, modules bytea[] NOT NULL,"
        " build_ids bytea[] NOT NULL, files bytea[] NOT NULL)"
        " WITH (toast_tuple_target = 128);"
        "CREATE TABLE node_runs (first int4 PRIMARY KEY, parents int4[] NOT NULL,"
        " frames int4[] NOT NULL) WITH (toast_tuple_target = 128);"
        "CREATE VIEW frames AS SELECT r.first + i - 1 AS id, r.kinds[i] AS kind,"
        " r.lines[i] AS line, r.names[i] AS name, r.modules[i] AS module,"
        " r.build_ids[i] AS build_id, r.files[i] AS file"
        " FROM frame_runs r, generate_subscripts(r.kinds, 1) AS i;"
        "CREATE VIEW nodes AS SELECT r.first + i - 1 AS id, r.parents[i] AS parent,"
        " r.frames[i] AS frame FROM node_runs r, generate_subscripts(r.parents, 1) AS i;"
        "CREATE TABLE series (id int4 PRIMARY KEY, host bytea NOT NULL,"
        " binary_name bytea NOT NULL, version bytea NOT NULL, event bytea NOT NULL,"
        " unit text NOT NULL, first_seen int8, last_seen int8,"
        " samples numeric(20) NOT NULL DEFAULT 0, weight numeric(20) NOT NULL DEFAULT 0,"
        " input_bytes numeric(20) NOT NULL DEFAULT 0,"
        " CHECK (samples < 18446744073709551616 AND weight < 18446744073709551616"
        " AND input_bytes < 18446744073709551616),"
        " UNIQUE (host, binary_name, version, event));"
        "CREATE FUNCTION flamefs_u64(v int8) RETURNS numeric IMMUTABLE STRICT"
        " LANGUAGE sql AS 'SELECT CASE WHEN v < 0 THEN v + 18446744073709551616"
        " ELSE v::numeric END';"
        "CREATE TABLE sources (id int4 PRIMARY KEY, store_id text NOT NULL UNIQUE,"
        " upto int8 NOT NULL, updated timestamptz NOT NULL DEFAULT now());"
        "CREATE TABLE destinations (store_id text PRIMARY KEY, upto int8 NOT NULL);"
        "CREATE TABLE writers (writer text PRIMARY KEY, token text NOT NULL,"
        " commit int8 NOT NULL, at timestamptz NOT NULL DEFAULT now());"
        "CREATE INDEX writers_at ON writers (at);";
static const char schema_counts_sql[] =
        "CREATE TABLE counts (series int4 NOT NULL, bucket int8 NOT NULL,"
        " source int4 NOT NULL, commit int8 NOT NULL, entries bytea NOT NULL,"
        " total_samples int8 NOT NULL, total_weight int8 NOT NULL)"
        " WITH (toast_tuple_target = 128);"
        "ALTER TABLE counts ALTER entries SET STORAGE MAIN;"
        "CREATE INDEX counts_series_bucket ON counts (series, bucket);"
        "CREATE INDEX counts_commit ON counts (commit);"
        "CREATE UNIQUE INDEX counts_source ON counts (series, bucket, source)"
        " WHERE source <> 0;"
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings"
        " WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN"
        " ALTER TABLE counts ALTER entries SET COMPRESSION lz4;"
        " ALTER TABLE frame_runs ALTER kinds SET COMPRESSION lz4,"
        " ALTER lines SET COMPRESSION lz4, ALTER names SET COMPRESSION lz4,"
        " ALTER modules SET COMPRESSION lz4, ALTER build_ids SET COMPRESSION lz4,"
        " ALTER files SET COMPRESSION lz4;"
        " ALTER TABLE node_runs ALTER parents SET COMPRESSION lz4,"
        " ALTER frames SET COMPRESSION lz4;"
        " END IF; END $$;"
        "INSERT INTO frame_runs VALUES (0, ARRAY[0::int2], ARRAY[0], ARRAY[''::bytea],"
        " ARRAY[''::bytea], ARRAY[''::bytea], ARRAY[''::bytea]);"
        "INSERT INTO node_runs VALUES (0, ARRAY[0], ARRAY[0]);"
        "CREATE TABLE source_input (source int4 NOT NULL, series int4 NOT NULL,"
        " input_bytes numeric(20) NOT NULL, PRIMARY KEY (source, series));";

/* Upgrade steps: steps[i].sql takes schema steps[i].from to from + 1, in
 * the transaction that also records the new version; the table ends with
 * a NULL.
 * 1 -> 2: a counts row's three arrays (nodes int4[], samples int8[],
 * weights int8[] or NULL) become one counts blob, `entries`, encoded here
 * by a function the step drops again, and the series keys' text columns
 * become bytea (their UTF-8 bytes).  Values are int8 bit patterns, so
 * the varints shift them as unsigned (`>> 7` masked). */
static const struct {
	int from;
	const char *sql, *more; /* more: a second part, or NULL */
} steps[] = {
        {1,
         "CREATE FUNCTION flamefs_pack_v1(nodes int4[], samples int8[], weights int8[])"
         " RETURNS bytea LANGUAGE plpgsql AS $f$"
         " DECLARE out bytea := ''::bytea; prev int8 := 0; w int8; v int8; vals int8[];"
         " BEGIN"
         " FOR i IN 1 .. coalesce(array_length(nodes, 1), 0) LOOP"
         "  w := coalesce(weights[i], samples[i]);"
         "  vals := ARRAY[((nodes[i]::int8 - prev) << 1) | (w <> samples[i])::int::int8,"
         "   samples[i]];"
         "  IF w <> samples[i] THEN vals := vals || w; END IF;"
         "  prev := nodes[i];"
         "  FOREACH v IN ARRAY vals LOOP"
         "   WHILE v < 0 OR v >= 128 LOOP"
         "    out := out || set_byte('\\x00'::bytea, 0, ((v & 127) | 128)::int);"
         "    v := (v >> 7) & x'01ffffffffffffff'::int8;"
         "   END LOOP;"
         "   out := out || set_byte('\\x00'::bytea, 0, v::int);"
         "  END LOOP;"
         " END LOOP;"
         " RETURN out;"
         " END $f$;"
         "ALTER TABLE counts ADD COLUMN entries bytea;"
         "UPDATE counts SET entries = flamefs_pack_v1(nodes, samples, weights);"
         "ALTER TABLE counts DROP COLUMN nodes, DROP COLUMN samples, DROP COLUMN weights,"
         " ALTER entries SET NOT NULL, ALTER entries SET STORAGE MAIN;"
         "DROP FUNCTION flamefs_pack_v1(int4[], int8[], int8[]);"
         "CREATE TABLE source_input (source int4 NOT NULL, series int4 NOT NULL,"
         " input_bytes numeric(20) NOT NULL, PRIMARY KEY (source, series));"
         "ALTER TABLE series ALTER host TYPE bytea USING convert_to(host, 'UTF8'),"
         " ALTER binary_name TYPE bytea USING convert_to(binary_name, 'UTF8'),"
         " ALTER version TYPE bytea USING convert_to(version, 'UTF8'),"
         " ALTER event TYPE bytea USING convert_to(event, 'UTF8');"
         "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings"
         " WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN"
         " ALTER TABLE counts ALTER entries SET COMPRESSION lz4; END IF; END $$;",
         counts_sql},
        {0, NULL, NULL},
};

static int in_txn(struct pg *s, const char *what, const char *sql)
{
	return central_exec(s, what, sql, 0, NULL, false, NULL);
}

static void rollback(struct pg *s)
{
	PGresult *res = PQexec(s->conn, "ROLLBACK");

	PQclear(res);
}

/* 1 when flamefs_meta exists, 0 when it does not; *tables: how many
 * tables, views and the like the database holds outside the catalogs. */
static int has_meta(struct pg *s, long *tables)
{
	PGresult *res;
	int r = central_exec(
	        s, "reading the catalog",
	        "SELECT to_regclass('flamefs_meta') IS NOT NULL, (SELECT count(*) FROM pg_class c"
	        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN"
	        " ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog',"
	        " 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'"
	        " AND n.nspname NOT LIKE 'pg_temp%')",
	        0, NULL, false, &res);

	if (r < 0)
		return r;
	{
		uint64_t n;

		r = central_value_u64(s, res, 0, 1, LONG_MAX, "a count of tables", &n);
		*tables = (long)n;
		if (r == 0)
			r = PQgetvalue(res, 0, 0)[0] == 't';
	}
	PQclear(res);
	return r;
}

static int create(struct pg *s)
{
	char id[33], lock[64];
	const char *vals[1] = {id};
	long tables;
	int r = central_random_hex(id);

	if (r < 0) {
		central_seterr(s, "%s: getrandom: %s", s->base.where, strerror(-r));
		return r;
	}
	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%lld)",
	         (long long)CENTRAL_WRITER_LOCK);
	r = in_txn(s, "creating the schema", "BEGIN");
	if (r == 0)
		r = in_txn(s, "creating the schema", lock);
	if (r < 0)
		goto fail;
	/* Another writer may have created it while this one waited. */
	r = has_meta(s, &tables);
	if (r < 0)
		goto fail;
	if (r == 1) {
		rollback(s);
		return 0;
	}
	r = in_txn(s, "creating the schema", schema_sql);
	if (r == 0)
		r = in_txn(s, "creating the schema", schema_counts_sql);
	if (r == 0)
		r = in_txn(s, "creating the schema", counts_sql);
	if (r == 0)
		r = central_exec(
		        s, "creating the schema",
		        "INSERT INTO flamefs_meta VALUES ('schema', '2'), ('store_id', $1),"
		        " ('bucket_seconds', '60'), ('commits', '0')",
		        1, vals, false, NULL);
	if (r == 0)
		r = in_txn(s, "creating the schema", "COMMIT");
	if (r == 0)
		return 0;
fail:
	rollback(s);
	return r;
}

static int upgrade(struct pg *s, long from)
{
	char lock[64], ver[24];
	const char *vals[1] = {ver};
	int r;

	snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%lld)",
	         (long long)CENTRAL_WRITER_LOCK);
	for (long v = from; v < CENTRAL_SCHEMA_VERSION; v++) {
		const char *sql = NULL, *more = NULL;

		for (size_t i = 0; steps[i].sql; i++)
			if (steps[i].from == v) {
				sql = steps[i].sql;
				more = steps[i].more;
			}
		if (!sql) {
			central_seterr(s, "%s: no upgrade from schema version %ld", s->base.where,
			               v);
			return -EPROTONOSUPPORT;
		}
		snprintf(ver, sizeof(ver), "%ld", v + 1);
		r = in_txn(s, "upgrading the schema", "BEGIN");
		if (r == 0)
			r = in_txn(s, "upgrading the schema", lock);
		if (r == 0)
			r = in_txn(s, "upgrading the schema", sql);
		if (r == 0 && more)
			r = in_txn(s, "upgrading the schema", more);
		if (r == 0)
			r = central_exec(s, "upgrading the schema",
			                 "UPDATE flamefs_meta SET value = $1 WHERE key = 'schema'",
			                 1, vals, false, NULL);
		if (r == 0)
			r = in_txn(s, "upgrading the schema", "COMMIT");
		if (r < 0) {
			rollback(s);
			return r;
		}
	}
	return 0;
}

/* Reads the meta rows; *schema gets the version. */
static int read_meta(struct pg *s, long *schema)
{
	PGresult *res;
	bool have_id = false, have_bucket = false, have_commits = false;
	int r = central_exec(s, "reading flamefs_meta", "SELECT key, value FROM flamefs_meta", 0,
	                     NULL, false, &res);

	if (r < 0)
		return r;
	*schema = -1;
	for (int i = 0; i < PQntuples(res); i++) {
		const char *k = PQgetvalue(res, i, 0), *v = PQgetvalue(res, i, 1);
		char *end;

		if (!strcmp(k, "schema")) {
			*schema = strtol(v, &end, 10);
			if (*end || end == v)
				*schema = -1;
		} else if (!strcmp(k, "store_id") && strlen(v) == 32) {
			memcpy(s->store_id, v, 33);
			have_id = true;
		} else if (!strcmp(k, "bucket_seconds")) {
			unsigned long b = strtoul(v, &end, 10);

			have_bucket = !*end && b > 0 && b <= 86400;
			s->bucket_seconds = (uint32_t)b;
		} else if (!strcmp(k, "commits")) {
			have_commits = central_value_u64(s, res, i, 1, INT64_MAX,
			                                 "the commit counter", &s->seq) == 0;
		}
	}
	PQclear(res);
	if (*schema < 0) {
		central_seterr(s, "%s: not a flamefs store (flamefs_meta has no schema version)",
		               s->base.where);
		return -EINVAL;
	}
	if (*schema > CENTRAL_SCHEMA_VERSION) {
		central_seterr(s,
		               "%s: schema version %ld is newer than this flamefs understands (%d)",
		               s->base.where, *schema, CENTRAL_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (!have_id || !have_bucket || !have_commits) {
		central_seterr(s, "%s: store is damaged: flamefs_meta lacks %s", s->base.where,
		               !have_id       ? "store_id"
		               : !have_bucket ? "bucket_seconds"
		                              : "commits");
		return -EIO;
	}
	return 0;
}

int central_schema(struct pg *s, int flags)
{
	long tables, schema;
	int r = has_meta(s, &tables);

	if (r < 0)
		return r;
	if (r == 0) {
		if (tables > 0) {
			central_seterr(s,
			               "%s: not a flamefs store (the database holds %ld other "
			               "tables and no flamefs_meta)",
			               s->base.where, tables);
			return -EINVAL;
		}
		if (!(flags & STORE_CREATE) || (flags & STORE_READONLY)) {
			central_seterr(s,
			               "%s: not a flamefs store yet (an empty database: an import "
			               "or record creates the schema)",
			               s->base.where);
			return -ENOENT;
		}
		r = create(s);
		if (r < 0)
			return r;
	}
	r = read_meta(s, &schema);
	if (r < 0)
		return r;
	if (schema < CENTRAL_SCHEMA_VERSION) {
		if (flags & STORE_READONLY) {
			central_seterr(
			        s,
			        "%s: schema version %ld is older than this flamefs reads (%d);"
			        " a writer upgrades it",
			        s->base.where, schema, CENTRAL_SCHEMA_VERSION);
			return -EPROTONOSUPPORT;
		}
		r = upgrade(s, schema);
		if (r == 0)
			r = read_meta(s, &schema);
	}
	return r;
}

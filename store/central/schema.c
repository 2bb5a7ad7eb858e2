/*
 * schema.c — the database's schema: telling a flamefs store from an
 * empty database or someone else's, creating schema 4 in one
 * transaction, refusing a schema from the future (unless it says this
 * flamefs's readers read it), upgrading an older one step by step (each
 * step one transaction), and reading the meta rows (store id, bucket
 * size, commit counter, the recent tier's window).  store/README.md
 * documents the tables.
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

/* Schema 3: the recent tier.  `samples` holds, per (series, bucket,
 * source), one samples block (../samples-block-internal.h: about 3-4
 * bytes a sample) and its sample count; rows written directly add up, a
 * row per commit, as counts rows do, and a copy keeps one per source.
 * `series_recent` holds each series' first and last moment in
 * microseconds and how many samples' detail the tier holds, kept by
 * every commit as the totals are; a series an older flamefs wrote
 * starts from its first and last second.  A table of its own rather than
 * columns of `series`: the step only creates and inserts, so it never
 * waits for (or makes wait) the readers that hold `series` in their
 * snapshots, as an ALTER TABLE would.  flamefs_samples(bucket, block) decodes a block for SQL
 * (raising "flamefs: damaged samples block" for a damaged one) and the
 * view sample_entries shows a row per sample.  oldest_reader: the
 * oldest schema whose readers read this database correctly. */
static const char samples_sql[] =
        "CREATE TABLE samples (series int4 NOT NULL, bucket int8 NOT NULL,"
        " source int4 NOT NULL, commit int8 NOT NULL, n int4 NOT NULL CHECK (n > 0),"
        " block bytea NOT NULL) WITH (toast_tuple_target = 128);"
        "ALTER TABLE samples ALTER block SET STORAGE MAIN;"
        "CREATE INDEX samples_series_bucket ON samples (series, bucket);"
        "CREATE UNIQUE INDEX samples_source ON samples (series, bucket, source)"
        " WHERE source <> 0;"
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings"
        " WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN"
        " ALTER TABLE samples ALTER block SET COMPRESSION lz4; END IF; END $$;"
        "CREATE TABLE series_recent (series int4 PRIMARY KEY, first_us int8,"
        " last_us int8, samples int8 NOT NULL DEFAULT 0);"
        "INSERT INTO series_recent SELECT id, first_seen * 1000000, last_seen * 1000000, 0"
        " FROM series WHERE abs(first_seen) < 9223372036854"
        " AND abs(last_seen) < 9223372036854;"
        "INSERT INTO flamefs_meta VALUES ('oldest_reader', '3')"
        " ON CONFLICT (key) DO UPDATE SET value = '3';"
        "CREATE FUNCTION flamefs_samples(bucket int8, block bytea, OUT time_us int8,"
        " OUT node int4, OUT pid int8, OUT tid int8, OUT weight int8)"
        " RETURNS SETOF record IMMUTABLE STRICT PARALLEL SAFE LANGUAGE plpgsql AS $f$"
        " DECLARE i int := 0; len int := length(block); c int; sh int; v int8;"
        " x int8[]; nx int := 0; n int8; k int8; m int8; at int; cur int8 := 0;"
        " nodes int8[]; pids int8[]; tids int8[]; w0 int8; z int8; t int8;"
        " ni int; wi int; hasw bool;"
        " BEGIN"
        " WHILE i < len LOOP"
        "  v := 0; sh := 0;"
        "  LOOP"
        "   IF i >= len OR sh >= 64 THEN"
        "    RAISE EXCEPTION 'flamefs: damaged samples block at byte %', i; END IF;"
        "   c := get_byte(block, i); i := i + 1;"
        "   v := v | ((c & 127)::int8 << sh); sh := sh + 7;"
        "   EXIT WHEN c < 128;"
        "  END LOOP;"
        "  nx := nx + 1; x[nx] := v;"
        " END LOOP;"
        " n := x[1]; hasw := x[2] = 1; k := x[3]; at := 4;"
        " IF n IS NULL OR n < 1 OR x[2] NOT IN (0, 1) OR k IS NULL OR k < 1 OR k > n THEN"
        "  RAISE EXCEPTION 'flamefs: damaged samples block (its header)'; END IF;"
        " FOR j IN 1 .. k LOOP cur := cur + x[at]; nodes[j] := cur; at := at + 1; END LOOP;"
        " m := x[at]; at := at + 1; cur := 0;"
        " IF m IS NULL OR m < 1 OR m > n THEN"
        "  RAISE EXCEPTION 'flamefs: damaged samples block (its threads)'; END IF;"
        " FOR j IN 1 .. m LOOP"
        "  cur := cur + x[at]; z := x[at + 1]; pids[j] := cur;"
        "  tids[j] := cur + (((z >> 1) & 9223372036854775807) # (-(z & 1))); at := at + 2;"
        " END LOOP;"
        " w0 := x[at]; at := at + 1;"
        " ni := at + n; wi := ni + CASE WHEN k * m > 1 THEN n ELSE 0 END;"
        " IF wi + (CASE WHEN hasw THEN n ELSE 0 END) <> nx + 1 THEN"
        "  RAISE EXCEPTION 'flamefs: damaged samples block (its length)'; END IF;"
        " t := bucket * 1000000;"
        " FOR j IN 0 .. n - 1 LOOP"
        "  t := t + x[at + j]; time_us := t;"
        "  z := CASE WHEN k * m > 1 THEN x[ni + j] ELSE 0 END;"
        "  IF z < 0 OR z >= k * m THEN"
        "   RAISE EXCEPTION 'flamefs: damaged samples block (an index)'; END IF;"
        "  node := nodes[(z / m)::int + 1]; pid := pids[(z % m)::int + 1];"
        "  tid := tids[(z % m)::int + 1];"
        "  IF hasw THEN z := x[wi + j];"
        "   weight := w0 + (((z >> 1) & 9223372036854775807) # (-(z & 1)));"
        "  ELSE weight := w0; END IF;"
        "  IF node IS NULL OR pid IS NULL THEN"
        "   RAISE EXCEPTION 'flamefs: damaged samples block (an index)'; END IF;"
        "  RETURN NEXT;"
        " END LOOP;"
        " END $f$;"
        "CREATE VIEW sample_entries AS SELECT d.series, d.bucket, d.source, d.commit,"
        " e.time_us, e.node, e.pid, e.tid, e.weight"
        " FROM samples d, flamefs_samples(d.bucket, d.block) e;";

/* Schema 4: labels.  A series' canonical labels (store.h: "k=v" pairs
 * sorted by key, joined by '\n'; '' for none) are part of its key, so
 * the unique key takes them.  flamefs_labels(labels) splits them into
 * (key, value) rows and the view series_labels shows a row per label of
 * each series, for SQL that groups by one.  Adding the column waits for
 * the readers whose snapshot has read `series` (a mount refreshes, ending
 * its snapshot, every second); past lock_timeout the step fails and the
 * next writer tries again.
 * oldest_reader: a schema-3 reader would show two label sets of one
 * series as two series of one key, so it is refused. */
static const char labels_sql[] =
        "SET LOCAL lock_timeout = '60s';"
        "ALTER TABLE series ADD COLUMN labels bytea NOT NULL DEFAULT ''::bytea;"
        "ALTER TABLE series DROP CONSTRAINT series_host_binary_name_version_event_key;"
        "ALTER TABLE series ADD CONSTRAINT series_key"
        " UNIQUE (host, binary_name, version, event, labels);"
        "CREATE FUNCTION flamefs_labels(labels bytea, OUT key text, OUT value bytea)"
        " RETURNS SETOF record IMMUTABLE STRICT PARALLEL SAFE LANGUAGE plpgsql AS $f$"
        " DECLARE i int := 0; n int := length(labels); j int; eq int;"
        " BEGIN"
        " WHILE i < n LOOP"
        "  j := i; eq := -1;"
        "  WHILE j < n AND get_byte(labels, j) <> 10 LOOP"
        "   IF eq < 0 AND get_byte(labels, j) = 61 THEN eq := j; END IF;"
        "   j := j + 1;"
        "  END LOOP;"
        "  IF eq < 0 THEN RAISE EXCEPTION 'flamefs: damaged labels at byte %', i; END IF;"
        "  key := convert_from(substring(labels FROM i + 1 FOR eq - i), 'UTF8');"
        "  value := substring(labels FROM eq + 2 FOR j - eq - 1);"
        "  RETURN NEXT;"
        "  i := j + 1;"
        " END LOOP;"
        " END $f$;"
        "CREATE VIEW series_labels AS SELECT s.id AS series, l.key, l.value"
        " FROM series s, flamefs_labels(s.labels) AS l;"
        "INSERT INTO flamefs_meta VALUES ('oldest_reader', '4')"
        " ON CONFLICT (key) DO UPDATE SET value = '4';";

/* Schema 5: spans.  flamefs_samples() gains the columns span and parent
 * (../samples-block-internal.h, flag bits 1 and 2; unsigned 64-bit ids
 * as int8 bit patterns, flamefs_u64() reads them back) and
 * sample_entries shows them; the step replaces both, since a function's
 * columns cannot change in place.  A span id adds with wrapping, done on
 * 32-bit halves because int8 arithmetic raises on overflow.
 * oldest_reader stays: a schema-4 reader reads every row a schema-5
 * writer writes, except that it refuses a block with span columns as
 * damaged; it never misreads one. */
static const char spans_sql[] =
        "DROP VIEW sample_entries;"
        "DROP FUNCTION flamefs_samples(int8, bytea);"
        "CREATE FUNCTION flamefs_samples(bucket int8, block bytea, OUT time_us int8,"
        " OUT node int4, OUT pid int8, OUT tid int8, OUT weight int8, OUT span int8,"
        " OUT parent int8)"
        " RETURNS SETOF record IMMUTABLE STRICT PARALLEL SAFE LANGUAGE plpgsql AS $f$"
        " DECLARE i int := 0; len int := length(block); c int; sh int; v int8;"
        " x int8[]; nx int := 0; n int8; k int8; m int8; at int; cur int8 := 0;"
        " nodes int8[]; pids int8[]; tids int8[]; w0 int8; z int8; t int8;"
        " ni int; wi int; si int; qi int; hasw bool; hass bool; hasp bool;"
        " lasts int8[]; th int; q int8; lo int8; hi int8; anys bool := false;"
        " anyp bool := false;"
        " BEGIN"
        " WHILE i < len LOOP"
        "  v := 0; sh := 0;"
        "  LOOP"
        "   IF i >= len OR sh >= 64 THEN"
        "    RAISE EXCEPTION 'flamefs: damaged samples block at byte %', i; END IF;"
        "   c := get_byte(block, i); i := i + 1;"
        "   v := v | ((c & 127)::int8 << sh); sh := sh + 7;"
        "   EXIT WHEN c < 128;"
        "  END LOOP;"
        "  nx := nx + 1; x[nx] := v;"
        " END LOOP;"
        " n := x[1]; k := x[3]; at := 4;"
        " IF n IS NULL OR n < 1 OR x[2] IS NULL OR x[2] < 0 OR x[2] > 7"
        "  OR k IS NULL OR k < 1 OR k > n THEN"
        "  RAISE EXCEPTION 'flamefs: damaged samples block (its header)'; END IF;"
        " hasw := x[2] & 1 = 1; hass := x[2] & 2 = 2; hasp := x[2] & 4 = 4;"
        " FOR j IN 1 .. k LOOP cur := cur + x[at]; nodes[j] := cur; at := at + 1; END LOOP;"
        " m := x[at]; at := at + 1; cur := 0;"
        " IF m IS NULL OR m < 1 OR m > n THEN"
        "  RAISE EXCEPTION 'flamefs: damaged samples block (its threads)'; END IF;"
        " FOR j IN 1 .. m LOOP"
        "  cur := cur + x[at]; z := x[at + 1]; pids[j] := cur;"
        "  tids[j] := cur + (((z >> 1) & 9223372036854775807) # (-(z & 1))); at := at + 2;"
        " END LOOP;"
        " w0 := x[at]; at := at + 1;"
        " ni := at + n; wi := ni + CASE WHEN k * m > 1 THEN n ELSE 0 END;"
        " si := wi + CASE WHEN hasw THEN n ELSE 0 END;"
        " qi := si + CASE WHEN hass THEN n ELSE 0 END;"
        " IF qi + (CASE WHEN hasp THEN n ELSE 0 END) <> nx + 1 THEN"
        "  RAISE EXCEPTION 'flamefs: damaged samples block (its length)'; END IF;"
        " lasts := array_fill(0::int8, ARRAY[m::int]);"
        " t := bucket * 1000000;"
        " FOR j IN 0 .. n - 1 LOOP"
        "  t := t + x[at + j]; time_us := t;"
        "  z := CASE WHEN k * m > 1 THEN x[ni + j] ELSE 0 END;"
        "  IF z < 0 OR z >= k * m THEN"
        "   RAISE EXCEPTION 'flamefs: damaged samples block (an index)'; END IF;"
        "  th := (z % m)::int + 1;"
        "  node := nodes[(z / m)::int + 1]; pid := pids[th]; tid := tids[th];"
        "  IF hasw THEN z := x[wi + j];"
        "   weight := w0 + (((z >> 1) & 9223372036854775807) # (-(z & 1)));"
        "  ELSE weight := w0; END IF;"
        "  IF node IS NULL OR pid IS NULL THEN"
        "   RAISE EXCEPTION 'flamefs: damaged samples block (an index)'; END IF;"
        "  span := 0; parent := 0;"
        "  IF hass THEN z := x[si + j];"
        "   q := ((z >> 1) & 9223372036854775807) # (-(z & 1));"
        "   lo := (lasts[th] & 4294967295) + (q & 4294967295);"
        "   hi := ((lasts[th] >> 32) & 4294967295) + ((q >> 32) & 4294967295) + (lo >> 32);"
        "   span := ((hi & 4294967295) << 32) | (lo & 4294967295);"
        "   lasts[th] := span; anys := anys OR span <> 0;"
        "  END IF;"
        "  IF hasp THEN z := x[qi + j];"
        "   q := ((z >> 1) & 9223372036854775807) # (-(z & 1));"
        "   IF q <> 0 THEN"
        "    lo := (span & 4294967295) + (q & 4294967295);"
        "    hi := ((span >> 32) & 4294967295) + ((q >> 32) & 4294967295) + (lo >> 32);"
        "    parent := ((hi & 4294967295) << 32) | (lo & 4294967295);"
        "    IF parent = 0 THEN parent := span; END IF;"
        "   END IF;"
        "   anyp := anyp OR parent <> 0;"
        "  END IF;"
        "  IF j = n - 1 AND ((hass AND NOT anys) OR (hasp AND NOT anyp)) THEN"
        "   RAISE EXCEPTION 'flamefs: damaged samples block (a column of zeros)'; END IF;"
        "  RETURN NEXT;"
        " END LOOP;"
        " END $f$;"
        "CREATE VIEW sample_entries AS SELECT d.series, d.bucket, d.source, d.commit,"
        " e.time_us, e.node, e.pid, e.tid, e.weight, e.span, e.parent"
        " FROM samples d, flamefs_samples(d.bucket, d.block) e;";

/* Schema 2.  Frames and nodes are kept in runs, one row per commit's
 * run of up to 4096 (arrays, lz4), with the views `frames` and `nodes`
 * of a row each for SQL; their content hashes are computed, not stored.
 * A counts row holds its entries as one counts blob (../counts-blob-internal.h,
 * the embedded store's format: delta-coded nodes and varints, a few
 * bytes an entry, smaller than schema 1's three arrays after lz4), with the view
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

/* Schema 6: unnamed frames' offsets (struct store_frame's `offset`).
 * `frame_offsets` holds, for a run of frame_runs (same `first`) in which
 * some frame has an offset, every offset of the run (0 for the others);
 * a run without one has no row (every run an older flamefs wrote).  A
 * table of its own rather than a column of frame_runs, for the reason
 * samples_sql gives: the step only creates, so it never waits for the
 * readers that hold frame_runs in their snapshots.  The view frames
 * shows the offsets as file_offset.  oldest_reader stays: a schema-5
 * reader reads a schema-6 database, seeing each unnamed frame with
 * offset 0 (the view merges sibling frames of one name, so its trees and
 * totals are the same); a schema-5 writer refuses it. */
static const char offsets_sql[] =
        "CREATE TABLE frame_offsets (first int4 PRIMARY KEY, offsets int8[] NOT NULL)"
        " WITH (toast_tuple_target = 128);"
        "CREATE OR REPLACE VIEW frames AS SELECT r.first + i - 1 AS id, r.kinds[i] AS kind,"
        " r.lines[i] AS line, r.names[i] AS name, r.modules[i] AS module,"
        " r.build_ids[i] AS build_id, r.files[i] AS file,"
        " coalesce(o.offsets[i], 0) AS file_offset"
        " FROM frame_runs r LEFT JOIN frame_offsets o ON o.first = r.first,"
        " generate_subscripts(r.kinds, 1) AS i;"
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings"
        " WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN"
        " ALTER TABLE frame_offsets ALTER offsets SET COMPRESSION lz4; END IF; END $$;";

/* Schema 7: names found later (store_batch_frame_rename()).  A row of
 * `frame_names` gives a frame the kind, line, name and file it shows from
 * commit `commit` on; frame_runs keeps what the frame was committed with,
 * which stays its identity (store/README.md, "Names found later").  The
 * view frames shows the names (and a named frame's file_offset as 0).
 * The step only creates, as offsets_sql does.  oldest_reader stays: a
 * schema-6 reader reads a schema-7 database with every frame as it was
 * committed (unnamed), whole; a schema-6 writer refuses it. */
static const char names_sql[] =
        "CREATE TABLE frame_names (id int4 PRIMARY KEY, commit int8 NOT NULL,"
        " kind int2 NOT NULL, line int4 NOT NULL, name bytea NOT NULL, file bytea NOT NULL);"
        "CREATE INDEX frame_names_commit ON frame_names (commit);"
        "CREATE OR REPLACE VIEW frames AS SELECT r.first + i - 1 AS id,"
        " coalesce(n.kind, r.kinds[i]) AS kind, coalesce(n.line, r.lines[i]) AS line,"
        " coalesce(n.name, r.names[i]) AS name, r.modules[i] AS module,"
        " r.build_ids[i] AS build_id, coalesce(n.file, r.files[i]) AS file,"
        " CASE WHEN n.id IS NULL THEN coalesce(o.offsets[i], 0) ELSE 0 END AS file_offset"
        " FROM frame_runs r LEFT JOIN frame_offsets o ON o.first = r.first"
        " CROSS JOIN generate_subscripts(r.kinds, 1) AS i"
        " LEFT JOIN frame_names n ON n.id = r.first + i - 1;";

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
        {2, samples_sql, NULL},
        {3, labels_sql, NULL},
        {4, spans_sql, NULL},
        {5, offsets_sql, NULL},
        {6, names_sql, NULL},
        {0, NULL, NULL},
};

/* A meta value that is a whole decimal number in [0, max], or -1. */
static long meta_number(const char *v, long max)
{
	char *end;
	long n;

	if (!*v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	return *end || errno || n > max ? -1 : n;
}

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
		        "INSERT INTO flamefs_meta VALUES ('schema', '7'), ('store_id', $1),"
		        " ('bucket_seconds', '60'), ('commits', '0')",
		        1, vals, false, NULL);
	if (r == 0)
		r = in_txn(s, "creating the schema", samples_sql);
	if (r == 0)
		r = in_txn(s, "creating the schema", labels_sql);
	if (r == 0)
		r = in_txn(s, "creating the schema", spans_sql);
	if (r == 0)
		r = in_txn(s, "creating the schema", offsets_sql);
	if (r == 0)
		r = in_txn(s, "creating the schema", names_sql);
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
		/* Another writer may have taken this step while this one
		 * waited for the lock. */
		if (r == 0) {
			PGresult *res;

			r = central_exec(s, "upgrading the schema",
			                 "SELECT value FROM flamefs_meta WHERE key = 'schema'", 0,
			                 NULL, false, &res);
			if (r == 0) {
				long now = PQntuples(res) == 1
				                   ? meta_number(PQgetvalue(res, 0, 0), LONG_MAX)
				                   : -1;

				PQclear(res);
				if (now > v) {
					rollback(s);
					v = now - 1;
					continue;
				}
			}
		}
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

/* The most seconds keep_samples may say: their microseconds fit int64. */
#define KEEP_MAX 9223372036854L

/* The meta rows that may move while a store is open: the schema (a
 * writer upgrades it), the oldest schema whose readers read it, the
 * recent tier's window.  Each -1 when absent. */
struct moving_meta {
	long schema, oldest_reader, keep;
	bool bad_keep;
};

static void moving_row(struct moving_meta *m, const char *k, const char *v)
{
	if (!strcmp(k, "schema"))
		m->schema = meta_number(v, LONG_MAX);
	else if (!strcmp(k, "oldest_reader"))
		m->oldest_reader = meta_number(v, LONG_MAX);
	else if (!strcmp(k, "keep_samples"))
		m->bad_keep = (m->keep = meta_number(v, KEEP_MAX)) < 0;
}

/* Whether this flamefs reads (or, as a writer, writes: upgrade says it
 * may upgrade an older one) a database of m's schema; sets s->schema and
 * s->keep_samples.  0, or -EPROTONOSUPPORT / -EIO / -EINVAL with the
 * message set. */
static int moving_apply(struct pg *s, const struct moving_meta *m, bool upgrade)
{
	if (m->schema < 0) {
		central_seterr(s, "%s: not a flamefs store (flamefs_meta has no schema version)",
		               s->base.where);
		return -EINVAL;
	}
	/* A newer schema that says readers of this one read it correctly
	 * is read as this one; a writer never writes a newer one. */
	if (m->schema > CENTRAL_SCHEMA_VERSION &&
	    (!s->readonly || m->oldest_reader < 0 || m->oldest_reader > CENTRAL_SCHEMA_VERSION)) {
		central_seterr(s,
		               "%s: schema version %ld is newer than this flamefs understands (%d)",
		               s->base.where, m->schema, CENTRAL_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (m->schema < (s->readonly ? CENTRAL_SCHEMA_READS_FROM : CENTRAL_SCHEMA_VERSION) &&
	    !upgrade) {
		central_seterr(s,
		               "%s: schema version %ld is older than this flamefs reads (%d);"
		               " a writer upgrades it",
		               s->base.where, m->schema, CENTRAL_SCHEMA_READS_FROM);
		return -EPROTONOSUPPORT;
	}
	if (m->bad_keep) {
		central_seterr(s, "%s: store is damaged: flamefs_meta's keep_samples",
		               s->base.where);
		return -EIO;
	}
	s->schema = m->schema;
	s->keep_samples = m->keep < 0 ? STORE_DEFAULT_KEEP_SAMPLES : m->keep;
	return 0;
}

/* Reads the meta rows; *schema gets the version. */
static int read_meta(struct pg *s, long *schema)
{
	PGresult *res;
	bool have_id = false, have_bucket = false, have_commits = false;
	struct moving_meta m = {-1, -1, -1, false};
	int r = central_exec(s, "reading flamefs_meta", "SELECT key, value FROM flamefs_meta", 0,
	                     NULL, false, &res);

	if (r < 0)
		return r;
	for (int i = 0; i < PQntuples(res); i++) {
		const char *k = PQgetvalue(res, i, 0), *v = PQgetvalue(res, i, 1);
		char *end;

		moving_row(&m, k, v);
		if (!strcmp(k, "store_id") && strlen(v) == 32) {
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
	*schema = m.schema;
	/* an older schema is the caller's to upgrade or refuse */
	r = moving_apply(s, &m, true);
	if (r < 0)
		return r;
	if (!have_id || !have_bucket || !have_commits) {
		central_seterr(s, "%s: store is damaged: flamefs_meta lacks %s", s->base.where,
		               !have_id       ? "store_id"
		               : !have_bucket ? "bucket_seconds"
		                              : "commits");
		return -EIO;
	}
	return 0;
}

int central_meta_refresh(struct pg *s, uint64_t *seq)
{
	PGresult *res;
	struct moving_meta m = {-1, -1, -1, false};
	bool have_commits = false;
	int r = central_exec(s, "reading the commit counter",
	                     "SELECT key, value FROM flamefs_meta WHERE key IN ('commits',"
	                     " 'schema', 'oldest_reader', 'keep_samples')",
	                     0, NULL, false, &res);

	if (r < 0)
		return r;
	for (int i = 0; i < PQntuples(res) && r == 0; i++) {
		const char *k = PQgetvalue(res, i, 0);

		moving_row(&m, k, PQgetvalue(res, i, 1));
		if (!strcmp(k, "commits")) {
			r = central_value_u64(s, res, i, 1, INT64_MAX, "the commit counter", seq);
			have_commits = r == 0;
		}
	}
	PQclear(res);
	if (r < 0)
		return r;
	if (!have_commits) {
		central_seterr(s, "%s: store is damaged: flamefs_meta has no commit counter",
		               s->base.where);
		return -EIO;
	}
	/* A writer's schema moves only by its own upgrade at open. */
	return moving_apply(s, &m, !s->readonly);
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
	if (schema < (s->readonly ? CENTRAL_SCHEMA_READS_FROM : CENTRAL_SCHEMA_VERSION)) {
		if (s->readonly) {
			central_seterr(
			        s,
			        "%s: schema version %ld is older than this flamefs reads (%d);"
			        " a writer upgrades it",
			        s->base.where, schema, CENTRAL_SCHEMA_READS_FROM);
			return -EPROTONOSUPPORT;
		}
		r = upgrade(s, schema);
		if (r == 0)
			r = read_meta(s, &schema);
	}
	return r;
}

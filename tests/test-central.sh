#!/bin/bash
# test-central.sh — the central store (store/central/) end to end against a
# private PostgreSQL 15 that it starts (Unix socket in a temporary
# directory, no TCP port) and stops: test-central's unit tests, then
# flamefs-collect with --store postgresql://...: every good fixture's
# import exports (folded and pprof) byte for byte what the same import
# into an embedded store exports; stats; prune; compact; store/README.md's SQL
# (top functions across hosts, regressions from A to B) gives the
# expected numbers; a non-flamefs database and a future schema are
# refused; the password never shows; a read-only role reads but cannot
# write; an unreachable server is named; a server that drops connections
# is waited for; a server restarted during
# imports loses and doubles nothing; push and merge --samples roll the
# database's recent tier up to its keep window.
# Usage: test-central.sh BUILD_DIR.  SKIP (77) without PostgreSQL 15.
set -u
build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=$build/flamefs-collect
unit=$build/tests/test-central
. "$here/lib.sh"

# ---- a private server (tests/lib-pg.sh) -------------------------------------------
. "$here/lib-pg.sh"
[ -x "$collect" ] || { echo "flamefs-collect not found in $build; build it first"; exit 1; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
pg_skip_unless_available "$tmp"
sock=$PG_SOCK
# a database of the superuser's; its URI
newdb() { pg_createdb "$1" >/dev/null; pg_uri "$1" postgres; }

n=0
same() { # FILE EXPECTED WHAT
	n=$((n + 1))
	if ! cmp -s "$1" "$2"; then
		bad "$3"
		diff -u "$2" "$1" | head -20
	fi
}
has() { # FILE TEXT WHAT
	n=$((n + 1))
	grep -qF -- "$2" "$1" || { bad "$3: lacks \"$2\""; head -5 "$1"; }
}
lacks() { # FILE TEXT WHAT
	n=$((n + 1))
	! grep -qF -- "$2" "$1" || { bad "$3: shows \"$2\""; grep -F -- "$2" "$1" | head -3; }
}

# ---- the backend's unit tests --------------------------------------------------
n=$((n + 1))
FLAMEFS_TEST_README=$here/../store/README.md "$unit" "$sock" postgres "$PG_PORT" >"$tmp/unit.out" 2>&1 || { bad "test-central"; cat "$tmp/unit.out"; }
n=$((n + 1))
FLAMEFS_TEST_HASH_BITS=1 "$unit" "$sock" postgres "$PG_PORT" >>"$tmp/unit.out" 2>&1 ||
	{ bad "test-central with 1-bit hashes"; cat "$tmp/unit.out"; }
grep -E '^(PASS|FAIL)' "$tmp/unit.out"

# ---- every good fixture: central == embedded -------------------------------------
k=0
fixtures=(perf/caches.perf perf/edge.perf perf/loop-minimal.perf perf/loop.perf
	perf/nocallchain.perf perf/noevent.perf perf/parts.perf perf/spell-g-noperiod.perf
	folded/basic.folded folded/comments.folded folded/crlf.folded
	legacy/go-heap.txt legacy/go-block.txt legacy/go-mutex.txt
	legacy/tcmalloc-sample-65536.heap legacy/heap.pb.gz legacy/allocs.pb.gz
	bad-input/deep.pb.gz bad-input/nonutf8.pb bad-input/value-max.pb)
fx=$(newdb fx)
# All of them into one store: one import command each (a file a commit,
# as one command a file would make them; the message names a file that fails).
paths=("${fixtures[@]/#/$here/data/}")
n=$((n + 1))
"$collect" import --store "$tmp/emb" --time 1700000040 "${paths[@]}" >"$tmp/imp.out" 2>&1 ||
	{ bad "embedded import of the fixtures"; cat "$tmp/imp.out"; }
n=$((n + 1))
"$collect" import --store "$fx" --time 1700000040 "${paths[@]}" >"$tmp/imp.out" 2>&1 ||
	{ bad "central import of the fixtures"; cat "$tmp/imp.out"; }
# Each one alone into a store of its own, too.
for f in "${fixtures[@]}"; do
	k=$((k + 1))
	one=$(newdb one$k)
	rm -rf "$tmp/one"
	"$collect" import --store "$tmp/one" --time 1700000040 "$here/data/$f" >/dev/null 2>&1
	"$collect" import --store "$one" --time 1700000040 "$here/data/$f" >/dev/null 2>&1
	"$collect" export --store "$tmp/one" --format folded >"$tmp/e1" 2>&1
	"$collect" export --store "$one" --format folded >"$tmp/p1" 2>&1
	same "$tmp/p1" "$tmp/e1" "$f alone: folded export differs"
	pg_psql -c "DROP DATABASE one$k" >/dev/null
done
for fmt in folded pprof; do
	"$collect" export --store "$tmp/emb" --format $fmt >"$tmp/e.$fmt" 2>&1
	"$collect" export --store "$fx" --format $fmt >"$tmp/p.$fmt" 2>&1
	same "$tmp/p.$fmt" "$tmp/e.$fmt" "all fixtures: $fmt export differs"
done
n=$((n + 1))
[ -s "$tmp/p.folded" ] || bad "the folded export is empty"
# stats: the same series, samples and weights (the disk column differs)
"$collect" stats --store "$tmp/emb" >"$tmp/e.stats" 2>&1 || bad "embedded stats"
"$collect" stats --store "$fx" >"$tmp/p.stats" 2>&1 || bad "central stats"
cut -c1-78 "$tmp/e.stats" | sed -n '/^BINARY/,/^$/p' >"$tmp/e.cols"
cut -c1-78 "$tmp/p.stats" | sed -n '/^BINARY/,/^$/p' >"$tmp/p.cols"
same "$tmp/p.cols" "$tmp/e.cols" "stats columns differ"
has "$tmp/p.stats" "store on disk:" "central stats"
# no misleading 0 (issue #43): IMPORTED is — where the embedded store's is
# (a pprof's other sample types), and neither it nor DISK is ever 0
awk 'NR > 1 && NF == 9 { print $1, $2, $3, $7 }' "$tmp/e.stats" >"$tmp/e.imported"
awk 'NR > 1 && NF == 9 { print $1, $2, $3, $7 }' "$tmp/p.stats" >"$tmp/p.imported"
same "$tmp/p.imported" "$tmp/e.imported" "central stats: IMPORTED differs from the embedded store's"
has "$tmp/p.imported" " —" "central stats: IMPORTED of a sample type without input"
n=$((n + 1))
awk 'NR > 1 && NF == 9 && ($7 == "0" || $8 == "0") { bad = 1 } END { exit bad }' "$tmp/p.stats" ||
	bad "central stats: IMPORTED or DISK shows 0: $(awk 'NR > 1 && NF == 9 && ($7 == "0" || $8 == "0")' "$tmp/p.stats" | head -3)"

# ---- a hot standby serves readers --------------------------------------------------
if pg_standby_start standby >"$tmp/standby.out" 2>&1 && pg_standby_sync >>"$tmp/standby.out" 2>&1; then
	sb=$(pg_standby_uri fx postgres)
	"$collect" export --store "$sb" --format folded >"$tmp/sb.folded" 2>&1
	same "$tmp/sb.folded" "$tmp/p.folded" "export from the hot standby"
	"$collect" stats --store "$sb" >"$tmp/sb.stats" 2>&1 || bad "stats from the hot standby"
	"$collect" import --store "$sb" "$here/data/folded/basic.folded" >"$tmp/sb.out" 2>&1 &&
		bad "an import into a standby succeeded"
	has "$tmp/sb.out" "read-only transaction" "import into a standby"
	pg_standby_stop
else
	bad "the standby did not start"
	cat "$tmp/standby.out"
fi

# ---- size against the embedded store, after VACUUM and compact -------------------
"$collect" compact --store "$fx" >"$tmp/compact.out" 2>&1 || { bad "compact"; cat "$tmp/compact.out"; }
"$collect" compact --store "$tmp/emb" >/dev/null 2>&1
pgsize=$(psql "$fx" -qXAt -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = 'public' AND c.relkind = 'r'")
embsize=$(du -sb "$tmp/emb" | cut -f1)
echo "size: central $pgsize bytes, embedded $embsize bytes (fixtures, after VACUUM / compact)"

# ---- store/README.md's SQL ------------------------------------------------------------
sq=$(newdb sq)
printf 'app;main;compute 60\napp;main;io 40\n' >"$tmp/a.folded"
printf 'app;main;compute 70\napp;main;io 20\napp;main;parse 10\n' >"$tmp/b.folded"
"$collect" import --store "$sq" --version A --time 1700000040 "$tmp/a.folded" >/dev/null 2>&1
# the first import's series becomes another host's; the second is this one's
psql "$sq" -qXc "UPDATE series SET host = 'other-host'"
"$collect" import --store "$sq" --version A --time 1700000040 "$tmp/a.folded" >/dev/null 2>&1
"$collect" import --store "$sq" --version B --time 1700000100 "$tmp/b.folded" >/dev/null 2>&1
# the statements exactly as store/README.md shows them
awk '/^```sql top-functions/{on=1; next} /^```/{on=0} on' "$here/../store/README.md" >"$tmp/top.sql"
awk '/^```sql regressions/{on=1; next} /^```/{on=0} on' "$here/../store/README.md" >"$tmp/regress.sql"
psql "$sq" -qXAt -F' ' -f "$tmp/top.sql" >"$tmp/top.out" 2>&1
printf 'compute 120\nio 80\n' >"$tmp/top.want"
same "$tmp/top.out" "$tmp/top.want" "README: top functions across hosts"
psql "$sq" -qXAt -F' ' -f "$tmp/regress.sql" >"$tmp/regress.out" 2>&1
printf 'compute 60.00 70.00 10.00\nparse 0.00 10.00 10.00\nio 40.00 20.00 -20.00\n' >"$tmp/regress.want"
same "$tmp/regress.out" "$tmp/regress.want" "README: regressions from A to B"
n=$((n + 1))
[ "$(psql "$sq" -qXAt -c "SELECT count(*) FROM series WHERE binary_name = 'app' AND version = 'A'")" = 2 ] ||
	bad "two hosts' series of one binary/version"

# ---- upgrading schema 1 (three arrays a counts row) to 2 (one blob), 3, 4, 5, 6 and 7 ----
up=$(newdb up)
"$collect" import --store "$up" --time 1700000040 "$here/data/perf/spell-g.perf" >/dev/null 2>&1
"$collect" import --store "$up" --time 1700000100 "$tmp/a.folded" >/dev/null 2>&1
"$collect" import --store "$up" --time 1700000160 "$tmp/b.folded" >/dev/null 2>&1
# both events' stacks, and stats without its disk figures
up_state() {
	"$collect" export --store "$up" --event samples --format folded 2>&1
	"$collect" export --store "$up" --event cpu-clock --format folded 2>&1
	"$collect" stats --store "$up" 2>&1 | awk '!/^(store on disk|bytes:)/ { NF = NF > 8 ? 7 : NF; print }'
}
up_state >"$tmp/up.want"
psql "$up" -qXAt -c "SELECT count(*) FROM count_entries WHERE weight <> samples" >"$tmp/up.weighted"
n=$((n + 1))
[ "$(cat "$tmp/up.weighted")" -gt 0 ] || bad "upgrade: no entry whose weight differs from its samples"
# the database as schema 1 wrote it: the same counts as arrays (and no
# recent tier, which schema 3 added, nor labels, which schema 4 added)
psql "$up" -qX -v ON_ERROR_STOP=1 >"$tmp/down.out" 2>&1 <<'SQL' || { bad "downgrade to schema 1"; cat "$tmp/down.out"; }
BEGIN;
DROP TABLE frame_names CASCADE;
DROP TABLE frame_offsets CASCADE;
DROP VIEW series_labels;
DROP FUNCTION flamefs_labels(bytea);
ALTER TABLE series DROP CONSTRAINT series_key, DROP COLUMN labels;
ALTER TABLE series ADD UNIQUE (host, binary_name, version, event);
DROP VIEW sample_entries;
DROP FUNCTION flamefs_samples(int8, bytea);
DROP TABLE samples, series_recent;
DELETE FROM flamefs_meta WHERE key = 'oldest_reader';
ALTER TABLE counts ADD nodes int4[], ADD samples int8[], ADD weights int8[];
UPDATE counts c SET
  nodes = (SELECT coalesce(array_agg(e.node ORDER BY e.node), '{}') FROM flamefs_counts(c.entries) e),
  samples = (SELECT coalesce(array_agg(e.samples ORDER BY e.node), '{}') FROM flamefs_counts(c.entries) e),
  weights = (SELECT CASE WHEN bool_and(e.weight = e.samples) THEN NULL
                    ELSE array_agg(e.weight ORDER BY e.node) END FROM flamefs_counts(c.entries) e);
ALTER TABLE counts ALTER nodes SET NOT NULL, ALTER samples SET NOT NULL;
DROP VIEW count_entries;
ALTER TABLE counts DROP COLUMN entries;
DROP FUNCTION flamefs_counts(bytea);
DROP TABLE source_input;
ALTER TABLE series ALTER host TYPE text USING convert_from(host, 'UTF8'),
  ALTER binary_name TYPE text USING convert_from(binary_name, 'UTF8'),
  ALTER version TYPE text USING convert_from(version, 'UTF8'),
  ALTER event TYPE text USING convert_from(event, 'UTF8');
UPDATE flamefs_meta SET value = '1' WHERE key = 'schema';
COMMIT;
SQL
"$collect" export --store "$up" --event samples >"$tmp/up.old" 2>&1 && bad "a reader read schema 1"
has "$tmp/up.old" "$up: schema version 1 is older than this flamefs reads (2); a writer upgrades it" \
	"schema 1, reader"
"$collect" compact --store "$up" >"$tmp/up.compact" 2>&1 || { bad "compact (a writer) of schema 1"; cat "$tmp/up.compact"; }
n=$((n + 1))
[ "$(psql "$up" -qXAt -c "SELECT value FROM flamefs_meta WHERE key = 'schema'")" = 7 ] || bad "upgrade: schema is not 7"
up_state >"$tmp/up.got"
same "$tmp/up.got" "$tmp/up.want" "upgrade 1 -> 2 -> 3 -> 4: exports and stats"
psql "$up" -qXAt -c "SELECT count(*) FROM count_entries WHERE weight <> samples" >"$tmp/up.weighted2"
same "$tmp/up.weighted2" "$tmp/up.weighted" "upgrade 1 -> 2: weighted entries"
# a damaged blob is refused by the reader and by SQL's decoder
psql "$up" -qXc "UPDATE counts SET entries = '\x8080' WHERE ctid = (SELECT min(ctid) FROM counts)"
up_state >"$tmp/up.bad"
has "$tmp/up.bad" "store is damaged: the counts of series" "damaged blob, reader"
psql "$up" -qXAt -c "SELECT count(*) FROM count_entries" >"$tmp/up.badsql" 2>&1 && bad "SQL decoded a damaged blob"
has "$tmp/up.badsql" "flamefs: damaged counts entries at byte 2" "damaged blob, SQL"

# ---- series keys that are not UTF-8 (a process name, a host name) ----------------------
# The embedded store keeps them byte for byte; so must a database, whose
# series columns are bytea, and a push must carry them.
nu=$(newdb nu)
printf 'caf\351;main;x 5\ncaf\351;main;y 7\nok;main;z 3\n' >"$tmp/nu.folded"
"$collect" import --store "$tmp/nuemb" --host "$(printf 'h\351')" --version "$(printf 'v\377')" \
	"$tmp/nu.folded" >"$tmp/nu.out" 2>&1 || { bad "import of non-UTF-8 keys"; cat "$tmp/nu.out"; }
"$collect" push --store "$tmp/nuemb" --to "$nu" >"$tmp/nu.out" 2>&1 ||
	{ bad "push of non-UTF-8 keys"; cat "$tmp/nu.out"; }
"$collect" import --store "$nu" --host "$(printf 'h\351')" --version "$(printf 'v\377')" \
	"$tmp/nu.folded" >"$tmp/nu.out" 2>&1 || { bad "direct import of non-UTF-8 keys"; cat "$tmp/nu.out"; }
"$collect" export --store "$tmp/nuemb" --format folded | awk '{ $NF *= 2; print }' >"$tmp/nu.want"
"$collect" export --store "$nu" --format folded >"$tmp/nu.got" 2>&1
same "$tmp/nu.got" "$tmp/nu.want" "non-UTF-8 keys: the database's export = 2 x the directory's"
"$collect" stats --store "$tmp/nuemb" | awk 'NF == 9 && NR > 1 { print $1, $2, $NF }' >"$tmp/nu.want"
"$collect" stats --store "$nu" | awk 'NF == 9 && NR > 1 { print $1, $2, $NF }' >"$tmp/nu.got"
same "$tmp/nu.got" "$tmp/nu.want" "non-UTF-8 keys: stats rows"
n=$((n + 1))
[ "$(psql "$nu" -qXAt -c "SELECT count(*) FROM series WHERE binary_name = '\x636166e9' AND host = '\x68e9' AND version = '\x76ff'")" = 1 ] ||
	bad "non-UTF-8 keys: the series row's bytes"

# ---- input bytes: every push replaces the source's totals, nothing twice ---------------
ib=$(newdb ib)
input_of() { "$collect" stats --store "$1" | awk '/^bytes:/ { for (i = 2; i <= NF; i++) if ($i ~ /^input=/) print substr($i, 7) }'; }
"$collect" import --store "$tmp/ib1" --host ib1 --time 1700000040 "$tmp/a.folded" >/dev/null 2>&1
"$collect" push --store "$tmp/ib1" --to "$ib" >/dev/null 2>&1 || bad "push (input bytes)"
n=$((n + 1))
[ "$(input_of "$ib")" = "$(input_of "$tmp/ib1")" ] || bad "input bytes after a first push: $(input_of "$ib") != $(input_of "$tmp/ib1")"
"$collect" import --store "$tmp/ib1" --host ib1 --time 1700000100 "$tmp/b.folded" >/dev/null 2>&1
"$collect" push --store "$tmp/ib1" --to "$ib" >/dev/null 2>&1 || bad "second push (input bytes)"
"$collect" push --store "$tmp/ib1" --to "$ib" >/dev/null 2>&1 || bad "third push (input bytes)"
"$collect" push --store "$tmp/ib1" --to "$ib" --full >/dev/null 2>&1 || bad "full push (input bytes)"
n=$((n + 1))
[ "$(input_of "$ib")" = "$(input_of "$tmp/ib1")" ] || bad "input bytes after later pushes: $(input_of "$ib") != $(input_of "$tmp/ib1")"
"$collect" import --store "$tmp/ib2" --host ib2 --time 1700000040 "$tmp/b.folded" >/dev/null 2>&1
"$collect" push --store "$tmp/ib2" --to "$ib" >/dev/null 2>&1 || bad "push of a second host (input bytes)"
n=$((n + 1))
[ "$(input_of "$ib")" = "$(($(input_of "$tmp/ib1") + $(input_of "$tmp/ib2")))" ] ||
	bad "input bytes of two hosts: $(input_of "$ib") != the sum of $(input_of "$tmp/ib1") and $(input_of "$tmp/ib2")"

# ---- prune -------------------------------------------------------------------------
"$collect" prune --store "$sq" --before 1700000100 --dry-run >"$tmp/prune.out" 2>&1 || bad "prune --dry-run"
n=$((n + 1))
[ "$(psql "$sq" -qXAt -c "SELECT count(*) FROM counts")" = 3 ] || bad "a dry run deleted"
"$collect" prune --store "$sq" --before 1700000100 >"$tmp/prune.out" 2>&1 || { bad "prune"; cat "$tmp/prune.out"; }
n=$((n + 1))
[ "$(psql "$sq" -qXAt -c "SELECT count(*) || ' ' || sum(samples) FROM series WHERE samples > 0")" = "1 100" ] ||
	bad "prune left the wrong series"
"$collect" export --store "$sq" --format folded >"$tmp/pruned.out" 2>&1
printf 'app;main;compute 70\napp;main;io 20\napp;main;parse 10\n' >"$tmp/pruned.want"
same "$tmp/pruned.out" "$tmp/pruned.want" "export after prune"

# ---- refusals ------------------------------------------------------------------------
other=$(newdb other)
psql "$other" -qXc "CREATE TABLE invoices (id int)"
"$collect" import --store "$other" "$tmp/a.folded" >"$tmp/other.out" 2>&1 && bad "import into a non-flamefs database"
has "$tmp/other.out" "$other: not a flamefs store" "non-flamefs database"
n=$((n + 1))
[ "$(psql "$other" -qXAt -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" = 1 ] ||
	bad "a refused database was changed"
empty=$(newdb empty)
"$collect" stats --store "$empty" >"$tmp/empty.out" 2>&1 && bad "stats of an empty database"
has "$tmp/empty.out" "not a flamefs store yet" "empty database"
psql "$sq" -qXc "UPDATE flamefs_meta SET value = '9' WHERE key = 'schema'"
psql "$sq" -qXc "UPDATE flamefs_meta SET value = '9' WHERE key = 'oldest_reader'"
"$collect" stats --store "$sq" >"$tmp/future.out" 2>&1 && bad "stats of a future schema"
has "$tmp/future.out" "$sq: schema version 9 is newer than this flamefs understands (7)" "future schema"
"$collect" import --store "$sq" "$tmp/a.folded" >"$tmp/future.out" 2>&1 && bad "import into a future schema"
has "$tmp/future.out" "schema version 9 is newer" "future schema, import"
"$collect" stats --store "postgresql:///x?host=$tmp/nowhere" >"$tmp/unreach.out" 2>&1 && bad "stats of no server"
has "$tmp/unreach.out" "postgresql:///x?host=$tmp/nowhere: cannot connect: " "unreachable server"

# ---- roles and the password ----------------------------------------------------------
pw='S3cret-pw-4711'
pg_role fwriter "$pw" >/dev/null
pg_role freader "$pw-ro" >/dev/null
pg_createdb fleet fwriter >/dev/null
wuri="postgresql://fwriter:$pw@/fleet?host=$sock&port=$PG_PORT"
ruri="postgresql://freader:$pw-ro@/fleet?host=$sock&port=$PG_PORT"
"$collect" import --store "$wuri" --time 1700000040 "$tmp/a.folded" >"$tmp/pw.out" 2>&1 || { bad "import as the writer role"; cat "$tmp/pw.out"; }
has "$tmp/pw.out" "postgresql://fwriter:***@/fleet" "the import names the store"
# the GRANTs of store/README.md
awk '/^```sql grants/{on=1; next} /^```/{on=0} on' "$here/../store/README.md" |
	sed 's/flamefs_reader/freader/g; s/flamefs_writer/fwriter/g' >"$tmp/grants.sql"
psql "$wuri" -qX -v ON_ERROR_STOP=1 -f "$tmp/grants.sql" >"$tmp/grants.out" 2>&1 || { bad "the README's GRANTs"; cat "$tmp/grants.out"; }
"$collect" stats --store "$ruri" >>"$tmp/pw.out" 2>&1 || { bad "stats as the read-only role"; tail -3 "$tmp/pw.out"; }
"$collect" export --store "$ruri" --format folded >"$tmp/ro.folded" 2>>"$tmp/pw.out" || bad "export as the read-only role"
same "$tmp/ro.folded" "$tmp/a.folded" "export as the read-only role"
"$collect" import --store "$ruri" --time 1700000100 "$tmp/b.folded" >"$tmp/ro.out" 2>&1 && bad "import as the read-only role"
has "$tmp/ro.out" "permission denied" "read-only import"
has "$tmp/ro.out" "host " "read-only import names the host"
has "$tmp/ro.out" "series app/default/samples" "read-only import names the series"
cat "$tmp/ro.out" >>"$tmp/pw.out"
"$collect" stats --store "postgresql://fwriter:wrong-$pw@/fleet?host=$sock&port=$PG_PORT" >>"$tmp/pw.out" 2>&1 && bad "a wrong password was taken"
"$collect" stats --store "postgresql:///fleet?host=$sock&port=$PG_PORT&user=fwriter&password=wrong-$pw" >>"$tmp/pw.out" 2>&1 && bad "a wrong password was taken (query)"
has "$tmp/pw.out" "password=***" "a password parameter is hidden"
lacks "$tmp/pw.out" "$pw" "password"
# libpq's own PGPASSFILE is honoured
pg_passfile "$tmp/pgpass" fwriter "$pw" fleet
PGPASSFILE=$tmp/pgpass "$collect" stats --store "postgresql://fwriter@/fleet?host=$sock&port=$PG_PORT" >"$tmp/pass.out" 2>&1 ||
	{ bad "PGPASSFILE"; cat "$tmp/pass.out"; }

# ---- 16 writers at once, with overlapping stacks ----------------------------------------
many=$(newdb many)
"$build/tests/gen-folded" 400 4000 app 1 >"$tmp/common.folded"
rm -rf "$tmp/manyemb"
for i in $(seq 1 16); do
	{ cat "$tmp/common.folded"; "$build/tests/gen-folded" 200 2000 app $((i + 1)); } >"$tmp/w$i.folded"
done
# the reference: the same 16 files, one command for the 4 of each minute
for m in 0 1 2 3; do
	"$collect" import --store "$tmp/manyemb" --time $((1700000040 + 60 * m)) \
		"$tmp/w$((m + 4)).folded" "$tmp/w$((m + 8)).folded" "$tmp/w$((m + 12)).folded" \
		"$tmp/w$((m == 0 ? 16 : m)).folded" >/dev/null 2>&1 || bad "the 16 writers' reference import"
done
pids=()
for i in $(seq 1 16); do
	"$collect" import --store "$many" --time $((1700000040 + 60 * (i % 4))) "$tmp/w$i.folded" >"$tmp/w$i.out" 2>&1 &
	pids+=($!)
done
for i in $(seq 1 16); do
	n=$((n + 1))
	wait "${pids[$((i - 1))]}" || { bad "concurrent import $i"; cat "$tmp/w$i.out"; }
done
"$collect" export --store "$many" --format folded >"$tmp/many.p" 2>&1
"$collect" export --store "$tmp/manyemb" --format folded >"$tmp/many.e" 2>&1
same "$tmp/many.p" "$tmp/many.e" "16 concurrent writers: counts differ"
n=$((n + 1))
[ "$(psql "$many" -qXAt -c "SELECT count(*) = max(id) + 1 AND count(DISTINCT (parent, frame)) = count(*) FROM nodes")" = t ] ||
	bad "16 concurrent writers: node ids not dense or a stack stored twice"
n=$((n + 1))
[ "$(psql "$many" -qXAt -c "SELECT count(*) = max(id) + 1 AND count(DISTINCT (kind, line, name, module, build_id, file)) = count(*) FROM frames")" = t ] ||
	bad "16 concurrent writers: frame ids not dense or a frame stored twice"

"$build/tests/gen-folded" 2000 200000 busy 7 >"$tmp/big.folded"
# ---- a server that takes a connection and drops it -----------------------------------------
# In a restart's window the server can accept a connection and close it
# before it says anything (libpq: "server closed the connection
# unexpectedly"), or end the session it was starting with SQLSTATE 57P01
# ("terminating connection due to administrator command", a fast
# shutdown): an open waits for both as for a server starting up.  A
# proxy on a socket of its own ends the first DROP connections that way
# (HOW: close, or fatal after the startup packet), then passes bytes both
# ways to the real server.
cat >"$tmp/drop.py" <<'PY'
import os, socket, struct, sys, threading
listen, target, drop = sys.argv[1], sys.argv[2], int(sys.argv[3])
how = sys.argv[4] if len(sys.argv) > 4 else "close"
def recv_exact(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise OSError("closed")
        b += d
    return b
def fatal(c):
    # Read the startup packet (refusing SSL or GSS encryption first, if
    # asked), then answer as a backend ended by a fast shutdown does.
    try:
        while True:
            n, = struct.unpack("!I", recv_exact(c, 4))
            body = recv_exact(c, n - 4)
            if struct.unpack("!I", body[:4])[0] in (80877103, 80877104):
                c.sendall(b"N")
                continue
            break
        fields = b"SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0"
        c.sendall(b"E" + struct.pack("!I", 4 + len(fields)) + fields)
    except OSError:
        pass
srv = socket.socket(socket.AF_UNIX)
srv.bind(listen)
srv.listen(16)
print(os.getpid(), flush=True)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
seen = 0
while True:
    c, _ = srv.accept()
    seen += 1
    if drop < 0 or seen <= drop:
        if how == "fatal":
            fatal(c)
        c.close()
        continue
    u = socket.socket(socket.AF_UNIX)
    u.connect(target)
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
PY
dropdb_uri=$(newdb dropped)
drop_uri() { echo "${dropdb_uri//host=$sock/host=$tmp/$1}"; }
for d in drop3 dropall fatal3; do mkdir -p "$tmp/$d"; done
python3 "$tmp/drop.py" "$tmp/drop3/.s.PGSQL.$PG_PORT" "$sock/.s.PGSQL.$PG_PORT" 3 >"$tmp/drop3.pid" &
python3 "$tmp/drop.py" "$tmp/dropall/.s.PGSQL.$PG_PORT" "$sock/.s.PGSQL.$PG_PORT" -1 >"$tmp/dropall.pid" &
python3 "$tmp/drop.py" "$tmp/fatal3/.s.PGSQL.$PG_PORT" "$sock/.s.PGSQL.$PG_PORT" 3 fatal >"$tmp/fatal3.pid" &
for _ in $(seq 100); do
	[ -S "$tmp/drop3/.s.PGSQL.$PG_PORT" ] && [ -S "$tmp/dropall/.s.PGSQL.$PG_PORT" ] &&
		[ -S "$tmp/fatal3/.s.PGSQL.$PG_PORT" ] && break
	sleep 0.05
done
"$collect" import --store "$tmp/dropemb" --time 1700000040 "$tmp/big.folded" >/dev/null 2>&1
"$collect" export --store "$tmp/dropemb" --format folded >"$tmp/drop.e" 2>&1
n=$((n + 1))
if FLAMEFS_PG_RETRY_SECONDS=30 "$collect" import --store "$(drop_uri drop3)" --time 1700000040 \
	"$tmp/big.folded" >"$tmp/drop3.out" 2>&1; then
	"$collect" export --store "$dropdb_uri" --format folded >"$tmp/drop.p" 2>&1
	same "$tmp/drop.p" "$tmp/drop.e" "an import past 3 dropped connections: counts differ"
else
	bad "an import past 3 dropped connections failed"
	cat "$tmp/drop3.out"
fi
n=$((n + 1))
t0=$(date +%s%N)
FLAMEFS_PG_RETRY_SECONDS=1 "$collect" stats --store "$(drop_uri dropall)" >"$tmp/dropall.out" 2>&1 &&
	bad "a server that drops every connection was read"
t1=$(date +%s%N)
if [ $(((t1 - t0) / 1000000)) -lt 1000 ] ||
	! grep -q "did not come back within 1 s: .*server closed the connection unexpectedly" "$tmp/dropall.out"; then
	bad "a server that drops every connection: not waited for 1 s ($(((t1 - t0) / 1000000)) ms), or not named"
	cat "$tmp/dropall.out"
fi
n=$((n + 1))
fataldb_uri=$(newdb fatal)
if FLAMEFS_PG_RETRY_SECONDS=30 "$collect" import --store "${fataldb_uri//host=$sock/host=$tmp/fatal3}" \
	--time 1700000040 "$tmp/big.folded" >"$tmp/fatal3.out" 2>&1; then
	"$collect" export --store "$fataldb_uri" --format folded >"$tmp/fatal.p" 2>&1
	same "$tmp/fatal.p" "$tmp/drop.e" "an import past 3 sessions ended by a shutdown (57P01): counts differ"
else
	bad "an import past 3 sessions ended by a shutdown (57P01) failed"
	cat "$tmp/fatal3.out"
fi
kill "$(cat "$tmp/drop3.pid")" "$(cat "$tmp/dropall.pid")" "$(cat "$tmp/fatal3.pid")" 2>/dev/null
wait

# ---- sessions ended in the middle of a commit ---------------------------------------------
# A backend ended by a fast shutdown (or pg_terminate_backend) in the
# middle of a COPY answers 57P01 while libpq still says the connection is
# fine: the commit is run again on a new session, as after a dropped
# connection.  A trigger on counts ends the session of the first 3
# commits that write counts (a sequence counts them: it is not rolled
# back with them).
killdb_uri=$(newdb killed)
printf 'app;main 1\n' >"$tmp/k0.folded"
rm -rf "$tmp/killemb"
for st in "$killdb_uri" "$tmp/killemb"; do
	"$collect" import --store "$st" --time 1700000000 "$tmp/k0.folded" >/dev/null 2>&1
done
psql "$killdb_uri" -qX -v ON_ERROR_STOP=1 >"$tmp/kill.sql.out" 2>&1 <<'SQL' || bad "the killing trigger"
CREATE SEQUENCE flamefs_test_kills;
CREATE FUNCTION flamefs_test_kill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('flamefs_test_kills') <= 3 THEN
		PERFORM pg_terminate_backend(pg_backend_pid());
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER flamefs_test_kill BEFORE INSERT ON counts
	FOR EACH STATEMENT EXECUTE FUNCTION flamefs_test_kill();
SQL
n=$((n + 1))
if FLAMEFS_PG_RETRY_SECONDS=30 "$collect" import --store "$killdb_uri" --time 1700000040 \
	"$tmp/big.folded" >"$tmp/kill.out" 2>&1; then
	"$collect" import --store "$tmp/killemb" --time 1700000040 "$tmp/big.folded" >/dev/null 2>&1
	"$collect" export --store "$killdb_uri" --format folded >"$tmp/kill.p" 2>&1
	"$collect" export --store "$tmp/killemb" --format folded >"$tmp/kill.e" 2>&1
	same "$tmp/kill.p" "$tmp/kill.e" "a commit past 3 sessions ended in its COPY (57P01): counts differ"
	[ "$(psql "$killdb_uri" -qXAt -c "SELECT last_value FROM flamefs_test_kills")" = 4 ] ||
		bad "a commit past 3 sessions ended in its COPY: the trigger did not run 4 times"
else
	bad "a commit past 3 sessions ended in its COPY (57P01) failed"
	cat "$tmp/kill.out"
fi

# ---- a server restarted while imports run ------------------------------------------------
busy=$(newdb busy)
rm -rf "$tmp/bigemb"
for i in 1 2 3 4 5 6; do
	"$collect" import --store "$tmp/bigemb" --time $((1700000040 + 60 * i)) "$tmp/big.folded" >/dev/null 2>&1
done
: >"$tmp/busy.out"
: >"$tmp/busy.fail"
(
	# One that starts while the server is down (no socket, or one
	# that no longer listens) cannot connect, says so and is run
	# again, as cron would; one that fails any other way, or once
	# connected, is a failure.
	for i in 1 2 3 4 5 6; do
		for try in $(seq 50); do
			FLAMEFS_PG_RETRY_SECONDS=60 "$collect" import --store "$busy" --time $((1700000040 + 60 * i)) \
				"$tmp/big.folded" >"$tmp/busy1.out" 2>&1 && break
			cat "$tmp/busy1.out" >>"$tmp/busy.out"
			grep -Eq "cannot connect: .*(No such file or directory|Connection refused)" "$tmp/busy1.out" ||
				{ echo "import $i failed" >>"$tmp/busy.fail"; break; }
			sleep 0.1
		done
	done
) &
bg=$!
sleep 0.5
pg_restart
sleep 0.3
pg_restart
wait $bg
n=$((n + 1))
# (libpq's own words for a missing socket hold "failed": the verdict is
# busy.fail's, busy.out only shows what was said)
[ -s "$tmp/busy.fail" ] && { bad "an import failed across a restart"; cat "$tmp/busy.fail" "$tmp/busy.out"; }
"$collect" export --store "$busy" --format folded >"$tmp/busy.p" 2>&1
"$collect" export --store "$tmp/bigemb" --format folded >"$tmp/busy.e" 2>&1
same "$tmp/busy.p" "$tmp/busy.e" "imports across a server restart: counts differ"

# ---- push --samples rolls the database's recent tier up ---------------------------
# Nothing else forgets a database's old detail: the copy that brought it
# does (store_rollup), by the rule of store/README.md: a bucket's detail
# goes once it ends at or before the newest moment minus the keep window.
# The expectation is computed here from the directory's own samples.
tier=$(newdb tier)
"$build/tests/gen-samples" "$tmp/tier" 600 --cpus 1 --series 4 >"$tmp/tier.gen" || bad "gen-samples"
"$collect" samples --store "$tmp/tier" --folded | sort >"$tmp/tier.all"
"$collect" export --store "$tmp/tier" --format folded >"$tmp/tier.counts"
"$collect" push --store "$tmp/tier" --to "$tier" --samples >"$tmp/tier.push1" 2>&1 ||
	{ bad "push --samples"; cat "$tmp/tier.push1"; }
lacks "$tmp/tier.push1" "rolled up" "push --samples without --verbose"
"$collect" samples --store "$tier" --folded | sort >"$tmp/tier.db1"
same "$tmp/tier.db1" "$tmp/tier.all" "push --samples: the database's detail (within the default 2 h window)"
# a window of 2 minutes: what the next copy forgets, from the samples themselves
psql "$tier" -qX -c "INSERT INTO flamefs_meta VALUES ('keep_samples', '120')
  ON CONFLICT (key) DO UPDATE SET value = '120'" >/dev/null
newest=$(awk '{ split($1, t, "."); if (t[1] > m) m = t[1] } END { print m }' "$tmp/tier.all")
awk -v T="$newest" '{ split($1, t, "."); if (t[1] - t[1] % 60 + 180 > T) print }' "$tmp/tier.all" >"$tmp/tier.kept"
gone=$(($(wc -l <"$tmp/tier.all") - $(wc -l <"$tmp/tier.kept")))
n=$((n + 1))
[ "$gone" -gt 0 ] && [ -s "$tmp/tier.kept" ] || bad "the 2-minute window should forget some detail and keep some ($gone gone)"
"$collect" push --store "$tmp/tier" --to "$tier" --samples --verbose >"$tmp/tier.push2" 2>&1 ||
	{ bad "push --samples --verbose"; cat "$tmp/tier.push2"; }
has "$tmp/tier.push2" "nothing new" "a second push"
has "$tmp/tier.push2" "forgot the detail of $gone samples in" "push --verbose says what the roll-up forgot"
has "$tmp/tier.push2" "older than its keep window (2 min); their counts stay" "push --verbose names the window"
"$collect" samples --store "$tier" --folded | sort >"$tmp/tier.db2"
same "$tmp/tier.db2" "$tmp/tier.kept" "after the roll-up the database keeps the detail of the window"
"$collect" export --store "$tier" --format folded >"$tmp/tier.dbcounts"
same "$tmp/tier.dbcounts" "$tmp/tier.counts" "the roll-up leaves the counts as they were"
n=$((n + 1))
[ "$(psql "$tier" -qXAt -c "SELECT sum(samples) FROM series_recent")" = "$(wc -l <"$tmp/tier.kept")" ] ||
	bad "series_recent.samples after the roll-up"
# merge does the same; a roll-up with nothing to forget says so
"$collect" merge --store "$tier" --samples -v "$tmp/tier" >"$tmp/tier.merge" 2>&1 ||
	{ bad "merge --samples -v"; cat "$tmp/tier.merge"; }
has "$tmp/tier.merge" "no detail older than its keep window (2 min)" "merge -v: nothing more to forget"
# without --samples, no roll-up runs: the detail a window of 0 would drop stays
psql "$tier" -qX -c "UPDATE flamefs_meta SET value = '0' WHERE key = 'keep_samples'" >/dev/null
"$collect" push --store "$tmp/tier" --to "$tier" --verbose >"$tmp/tier.push3" 2>&1 ||
	{ bad "push without --samples"; cat "$tmp/tier.push3"; }
lacks "$tmp/tier.push3" "rolled up" "push without --samples"
"$collect" samples --store "$tier" --folded | sort >"$tmp/tier.db3"
same "$tmp/tier.db3" "$tmp/tier.kept" "a push without --samples leaves the detail"

echo "$((n - failures))/$n checks passed"
[ "$failures" = 0 ]

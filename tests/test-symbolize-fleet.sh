#!/usr/bin/env bash
# test-symbolize-fleet.sh — names found later in a fleet (issue #42), on a
# private PostgreSQL (tests/lib-pg.sh) with the stripped program of
# tests/lib-stripped.sh:
#   - host a pushes its unnamed frames; `symbolize --store postgresql://…
#     --debug-dir` names them in the database (debug info only on the
#     machine that runs symbolize); a mount of the database open across it
#     shows the names under @host/a/ without a remount, its folded equal to
#     the unstripped import's and its total unchanged;
#   - host c pushes the same unnamed frames into that database: they show
#     the names (a push never un-names);
#   - host b pushes unnamed, symbolizes its own directory, and its next
#     push names the frames in its database ("named N frames"), once;
#   - a push loop and a database symbolize at once: neither loses
#     anything (the totals are exactly rounds x the reference's) and every
#     frame ends named.
#   usage: test-symbolize-fleet.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
. "$(dirname "$0")/lib-stripped.sh"
. "$(dirname "$0")/lib-pg.sh"
build=${1:?usage: test-symbolize-fleet.sh BUILD_DIR}
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
e2e_setup symbolize-fleet

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
pid=
e2e_on_exit() {
	[ -n "$pid" ] && { fusermount3 -u -z "$mnt" 2>/dev/null; kill "$pid" 2>/dev/null; }
}
chmod 755 "$tmp"
pg_skip_unless_available "$tmp"
stripped_setup
for d in fleet fleet_b fleet_both; do pg_createdb $d || { bad "createdb $d"; finish; }; done
db=$(pg_uri fleet postgres)
dbb=$(pg_uri fleet_b postgres)
dbboth=$(pg_uri fleet_both postgres)
# the reference's lines of prog, sorted
grep "^prog;" "$tmp/ref.folded" | sort >"$tmp/ref.prog"

# ---- host a pushes unnamed; the database is symbolized ----
"$collect" import --store "$tmp/a" --host a "$tmp/perf.data" 2>/dev/null
"$collect" push --store "$tmp/a" --to "$db" >"$tmp/push-a.out" 2>&1 || bad "push a: $(cat "$tmp/push-a.out")"
"$collect" export --store "$db" --format folded >"$tmp/db-before.folded"
check "the database holds host a's frames unnamed" \
	test -z "$(grep -E ';(leaf_a|leaf_b|middle)( |;)' "$tmp/db-before.folded")"
mkdir -p "$mnt"
"$flamefs" -f "$db" "$mnt" 2>"$tmp/flamefs.err" &
pid=$!
for _ in $(seq 100); do [ -e "$mnt/@host/a/prog" ] && break; sleep 0.1; done
v=$(ls "$mnt/@host/a/prog" | head -1)
total_before=$(cat "$mnt/@host/a/prog/$v/total")
check "the mount shows host a's program ($v, total $total_before)" test -n "$v" -a -n "$total_before"
start=$(date +%s.%N)
"$collect" symbolize --store "$db" --debug-dir "$tmp/debug" 2>"$tmp/sym-db.err"
end=$(date +%s.%N)
check "symbolize --store postgresql:// names every frame ($(head -1 "$tmp/sym-db.err"))" \
	grep -q "named 4 of 4 unnamed frames in 1 of 1 modules; 0 modules still" "$tmp/sym-db.err"
echo "  database symbolize: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }') s;" \
	"frame_names $(pg_psql -d fleet -Atc "SELECT pg_total_relation_size('frame_names')") bytes," \
	"$(pg_psql -d fleet -Atc "SELECT count(*) FROM frame_names") rows"
seen=
for _ in $(seq 50); do
	[ -d "$mnt/@host/a/prog/$v/__libc_start_call_main/main/middle/leaf_a" ] && { seen=1; break; }
	sleep 0.2
done
check "the mount open across it shows the names under @host/a/" test -n "$seen"
check "... its total unchanged" test "$(cat "$mnt/@host/a/prog/$v/total")" = "$total_before"
sort "$mnt/@host/a/prog/$v/folded" >"$tmp/a.prog"
check "... and @host/a/'s folded equals the unstripped import's" cmp "$tmp/a.prog" "$tmp/ref.prog"
"$collect" export --store "$db" --format folded >"$tmp/db-after.folded"
check "the database's folded export equals the unstripped import's" cmp "$tmp/db-after.folded" "$tmp/ref.folded"
check "SQL's frames view shows the names" \
	test "$(pg_psql -d fleet -Atc "SELECT count(*) FROM frames WHERE convert_from(name, 'UTF8') IN ('leaf_a', 'leaf_b', 'middle', 'main') AND file_offset = 0")" -ge 4

# ---- host c pushes the same frames unnamed: they stay named ----
"$collect" import --store "$tmp/c" --host c "$tmp/perf.data" 2>/dev/null
frames_before=$(pg_psql -d fleet -Atc "SELECT count(*) FROM frames")
"$collect" push --store "$tmp/c" --to "$db" >"$tmp/push-c.out" 2>&1 || bad "push c: $(cat "$tmp/push-c.out")"
seen=
for _ in $(seq 50); do
	[ -d "$mnt/@host/c/prog/$v/__libc_start_call_main/main/middle/leaf_a" ] && { seen=1; break; }
	sleep 0.2
done
check "host c's unnamed frames show the database's names under @host/c/" test -n "$seen"
sort "$mnt/@host/c/prog/$v/folded" >"$tmp/c.prog"
check "... its folded equals the unstripped import's" cmp "$tmp/c.prog" "$tmp/ref.prog"
check "... and the database gained no frame" \
	test "$(pg_psql -d fleet -Atc "SELECT count(*) FROM frames")" = "$frames_before"
fusermount3 -u "$mnt"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=

# ---- host b symbolizes after pushing: its next push names them ----
"$collect" import --store "$tmp/b" --host b "$tmp/perf.data" 2>/dev/null
"$collect" push --store "$tmp/b" --to "$dbb" >/dev/null 2>&1
"$collect" symbolize --store "$tmp/b" --debug-dir "$tmp/debug" 2>/dev/null
"$collect" push --store "$tmp/b" --to "$dbb" >"$tmp/push-b.out" 2>&1
check "host b's next push names the frames it named ($(grep named "$tmp/push-b.out"))" \
	grep -q "named 4 frames with the names" "$tmp/push-b.out"
"$collect" export --store "$dbb" --format folded >"$tmp/dbb.folded"
check "... the database's folded equals the unstripped import's" cmp "$tmp/dbb.folded" "$tmp/ref.folded"
"$collect" push --store "$tmp/b" --to "$dbb" >"$tmp/push-b2.out" 2>&1
check "... once: the push after it has nothing new" grep -q "nothing new" "$tmp/push-b2.out"

# ---- a push loop and a database symbolize at once ----
rounds=6
"$collect" import --store "$tmp/d" --host d --time 1700000000 "$tmp/perf.data" 2>/dev/null
"$collect" push --store "$tmp/d" --to "$dbboth" >/dev/null 2>&1
(
	for i in $(seq 2 $rounds); do
		"$collect" import --store "$tmp/d" --host d --time $((1700000000 + 120 * i)) "$tmp/perf.data" 2>/dev/null &&
			"$collect" push --store "$tmp/d" --to "$dbboth" >/dev/null 2>&1 || echo "round $i failed"
	done
) >"$tmp/loop.out" 2>&1 &
loop=$!
"$collect" symbolize --store "$dbboth" --debug-dir "$tmp/debug" 2>"$tmp/sym-both.err" ||
	bad "symbolize beside the pushes: $(cat "$tmp/sym-both.err")"
wait "$loop"
check "every push of the loop went through" test ! -s "$tmp/loop.out"
"$collect" export --store "$dbboth" --format folded | sort >"$tmp/both.folded"
awk -v n=$rounds '{ w = $NF; $NF = ""; sub(/ $/, ""); print $0 " " w * n }' "$tmp/ref.folded" | sort >"$tmp/both.want"
check "a push and a symbolize at once: $rounds rounds exactly, every frame named" \
	cmp "$tmp/both.folded" "$tmp/both.want"
finish

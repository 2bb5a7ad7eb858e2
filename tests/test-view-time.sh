#!/usr/bin/env bash
# test-view-time.sh — issue #39's views over time on a real mount, from a
# store whose samples keep their moments (written through the store API
# by samples-fill: phase A for 2.000 s at 100 Hz, then B for 3.000 s, then
# A again for 2.000 s, a phase C across a bucket boundary, and counts
# without a moment in a later bucket):
#   - @range/<from>/<to>/ to the millisecond (Unix seconds with a fraction,
#     ISO 8601 with a fraction and Z) holds exactly the samples of its
#     half-open window: each phase alone, one and two 10 ms samples, the
#     edges to the sample;
#   - the window file at a window's root and version directory says exact,
#     or which bucket's samples without a moment were taken whole, and
#     export --from/--to says the same on stderr;
#   - <window>/@diff/<from>/<to>/: phase A's functions gone, B's new, its
#     folded equal to the two windows' folded joined, regressions, the
#     whole view's diff at its root and the pprof's total B - A;
#   - timeline: 1 s intervals over the 2 minutes shown, each second's 100
#     samples and 1.000 cores busy, partial first and last intervals scaled,
#     a subtree's seconds, the bucket without detail flagged whole;
#   - heatmap.svg: well-formed (xmllint), its cell counts summing to the
#     window's samples, each cell's link resolving to that 20 ms of the same
#     directory, drawn by headless Chromium;
#   - the same store written into a PostgreSQL database (lib-pg.sh's private
#     server; skipped where there is none): the windows, window files,
#     window diff, timelines and heatmaps of its mount equal the directory's
#     byte for byte (the reads set-based: store_series_prefetch and
#     store_samples_prefetch);
#   - a roll-up while mounted: the window over phase B, its detail
#     forgotten, shows its whole bucket and says so in its window file;
#   - a store kept with --keep-samples 1m whose keep window starts inside a
#     bucket: heatmap.svg draws every sample that bucket still keeps whole.
#   usage: test-view-time.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
. "$(dirname "$0")/lib-pg.sh"
build=${1:?usage: test-view-time.sh BUILD_DIR}
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
fill=$build/tests/samples-fill
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
e2e_setup view-time
mkdir -p "$mnt"
pid=
dbpid=
kpid=
e2e_on_exit() {
	[ -n "$kpid" ] && { fusermount3 -u -z "$tmp/kmnt" 2>/dev/null; kill "$kpid" 2>/dev/null; }
	[ -n "$dbpid" ] && { fusermount3 -u -z "$tmp/dbmnt" 2>/dev/null; kill "$dbpid" 2>/dev/null; }
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
}

t0=1795000020 # a bucket start: 2026-11-18T11:07:00Z
python3 - "$t0" >"$tmp/in.txt" <<'PY'
import sys
t0 = int(sys.argv[1]) * 1000000
def phase(start_ms, n, stack):
    for k in range(n):
        print(t0 + start_ms * 1000 + k * 10000, 10000000, stack)
phase(5000, 200, "main;phaseA;a_work")   # [5.000, 7.000)
phase(7000, 300, "main;phaseB;b_work")   # [7.000, 10.000)
phase(10000, 200, "main;phaseA;a_work")  # [10.000, 12.000)
phase(58000, 400, "main;phaseC;c_work")  # [58.000, 62.000): two buckets
print("-", t0 // 1000000 + 125, 5, 50000000, "main;old;hist")  # no moment
PY
"$fill" "$store" app 1 <"$tmp/in.txt" || bad "samples-fill"
# Names the mount escapes (%40...): the heatmap's links must reach them.
for k in 0 1 2; do echo "$((t0 * 1000000 + 3000000 + k * 20000)) 5 main;@at;x y"; done |
	"$fill" "$store" app "v@2" || bad "samples-fill v@2"
"$flamefs" -f "$store" "$mnt" 2>"$tmp/flamefs.err" &
pid=$!
for _ in $(seq 100); do [ -e "$mnt/app" ] && break; sleep 0.1; done

r=$mnt/@range
s() { echo "$((t0 + $1))${2:+.$2}"; } # s SECONDS [FRACTION]: Unix seconds after t0
# same_bytes A B: the two files' contents are equal.  Read through pipes:
# a root's files have no size in stat until rendered (fs/README.md, "Sizes
# of files rendered on demand"), and cmp compares sizes first.
same_bytes() { cmp -s <(cat "$1") <(cat "$2"); }

# ---- exact windows ----------------------------------------------------------------------------
check "@range over phase B holds only B's function (300 samples)" \
	test "$(cat "$r/$(s 7)/$(s 10)/app/1/folded")" = "app;main;phaseB;b_work 3000000000"
check "... named in ISO 8601 with a fraction" \
	test "$(cat "$r/2026-11-18T11:07:07.000Z/2026-11-18T11:07:10Z/app/1/folded")" = "app;main;phaseB;b_work 3000000000"
check "@range over the first phase A holds only A's" \
	test "$(cat "$r/$(s 5)/$(s 7)/app/1/folded")" = "app;main;phaseA;a_work 2000000000"
check "[7.005, 7.025) holds the samples at 7.010 and 7.020" \
	test "$(cat "$r/$(s 7 005)/$(s 7 025)/app/1/folded")" = "app;main;phaseB;b_work 20000000"
check "[7.010, 7.020) is half-open: 7.010 in, 7.020 out" \
	test "$(cat "$r/$(s 7 010)/$(s 7 020)/app/1/folded")" = "app;main;phaseB;b_work 10000000"
check "[6.985, 7.005) holds A's last sample (6.990) and B's first (7.000)" \
	test "$(cat "$r/$(s 6 985)/$(s 7 005)/app/1/folded" | tr '\n' ' ')" = "app;main;phaseA;a_work 10000000 app;main;phaseB;b_work 10000000 "
check "phase C across the bucket boundary: [59.5, 60.5) holds 100 samples" \
	test "$(cat "$r/$(s 59 5)/$(s 60 5)/app/1/total")" = 1000000000
check "the window's root sums the same" \
	test "$(cat "$r/$(s 59 5)/$(s 60 5)/folded")" = "app;main;phaseC;c_work 1000000000"

# ---- the window file --------------------------------------------------------------------------
win=$r/$(s 7)/$(s 10)
check "window at the window's root: exact, the window asked, 300 samples" \
	grep -qx "exact yes" "$win/window" -a "$(grep -c '^from 1795000027 2026-11-18T11:07:07Z$' "$win/window")" = 1 -a \
	"$(grep -c '^samples 300 weight 3000000000$' "$win/window")" = 1
check "... and in its version directory" grep -qx "exact yes" "$win/app/1/window"
check "ls of a window's root lists window" grep -qx window <(ls "$win")
nx=$r/$(s 100)/$(s 130)
check "a window cutting the bucket without detail: not exact, its 5 samples taken whole" \
	test "$(grep -c '^exact no$' "$nx/window")" = 1 -a \
	"$(grep -c '^cut 1795000140 2026-11-18T11:09:00Z timed 0 weight 0 taken_whole 5 weight 50000000 detail no$' "$nx/window")" = 1
check "... and its first line says so" grep -q "^# window .*NOT exact: 5 samples of 1 bucket" "$nx/window"
check "... and the timeline's header" grep -q "^# window .*NOT exact: 5 samples of 1 bucket" "$nx/app/1/timeline"
"$collect" export --store "$store" --from "$(s 100)" --to "$(s 130)" >"$tmp/nx.folded" 2>"$tmp/nx.err"
check "export says it on stderr" grep -q "is not exact: 5 samples of 1 bucket of 60 s .* 2026-11-18T11:09:00Z (5)" "$tmp/nx.err"
check "export's folded is the window's" same_bytes "$tmp/nx.folded" "$nx/folded"
"$collect" export --store "$store" --from "$(s 7 005)" --to 2026-11-18T11:07:07.025Z >"$tmp/ms.folded" 2>"$tmp/ms.err"
check "export --from/--to to the millisecond: exact, nothing on stderr" \
	test "$(cat "$tmp/ms.folded")" = "app;main;phaseB;b_work 20000000" -a ! -s "$tmp/ms.err"

# ---- a diff between two windows ---------------------------------------------------------------
d=$r/$(s 5)/$(s 7)/@diff/$(s 7)/$(s 10)
check "window diff: A's function gone, B's new" \
	test "$(cat "$d/app/1/folded" | tr '\n' ' ')" = "app;main;phaseA;a_work 2000000000 0 app;main;phaseB;b_work 0 3000000000 "
join -a1 -a2 -e0 -o 0,1.2,2.2 <(sed 's/ \([0-9]*\)$/\t\1/' "$r/$(s 5)/$(s 7)/app/1/folded" | tr '\t' ' ' | sort) \
	<(sort "$r/$(s 7)/$(s 10)/app/1/folded") >"$tmp/joined"
check "its folded is the two windows' folded joined" same_bytes "$tmp/joined" "$d/app/1/folded"
check "total is A B" test "$(cat "$d/app/1/total")" = "2000000000 3000000000"
check "regressions name B's function" grep -qx "+100.0% app;main;phaseB;b_work" "$d/app/1/regressions"
check "the whole view's diff at its root" same_bytes "$d/folded" "$d/app/1/folded"
check "ls of the diff's root: diff files, regressions and the binary" \
	test "$(ls "$d" | tr '\n' ' ')" = "app flame.svg folded name pprof regressions self total "
if command -v go >/dev/null; then
	tot=$(go tool pprof -raw "$d/app/1/pprof" 2>/dev/null | awk '/^Samples:/ { s = 1; next } s && /^ *-?[0-9]+ +-?[0-9]+: / { w += $2 } END { print w + 0 }')
	check "pprof holds B - A (got $tot)" test "$tot" = 1000000000
fi
check "a deeper directory of the diff" test "$(cat "$d/app/1/main/phaseB/total")" = "0 3000000000"

# ---- timelines --------------------------------------------------------------------------------
tl=$(grep -v '^#' "$r/$(s 5)/$(s 12)/app/1/timeline")
want=$(for i in 5 6 7 8 9 10 11; do echo "$((t0 + i)) 1 100 1000000000 1.000 0 $(date -u -d "@$((t0 + i))" +%Y-%m-%dT%H:%M:%SZ)"; done)
check "timeline of [5, 12): a line a second, 100 samples, 1.000 cores busy" test "$tl" = "$want"
check "... its header: 7 intervals of 1 s, cores busy" \
	grep -q "^# 7 intervals of 1 s over \[2026-11-18T11:07:05Z, 2026-11-18T11:07:12Z) (7 s); clock unix .*per_second: cores busy" "$r/$(s 5)/$(s 12)/app/1/timeline"
check "partial first and last intervals are scaled: [5.5, 7.25)" \
	test "$(grep -v '^#' "$r/$(s 5 5)/$(s 7 25)/app/1/timeline" | cut -d' ' -f1-6 | tr '\n' ' ')" = \
	"$(s 5 5) 0.5 50 500000000 1.000 0 $(s 6) 1 100 1000000000 1.000 0 $(s 7) 0.25 25 250000000 1.000 0 "
check "phase B's directory: its three seconds" \
	test "$(grep -v '^#' "$mnt/app/1/main/phaseB/timeline" | cut -d' ' -f1,3 | tr '\n' ' ')" = "$(s 7) 100 $(s 8) 100 $(s 9) 100 "
check "the version's timeline: 1 s intervals, the bucket without detail one line flagged untimed over its 60 s" \
	test "$(grep -c '^# .* intervals of 1 s ' "$mnt/app/1/timeline")" = 1 -a \
	"$(grep -c "^$(s 120) 60 5 50000000 0.001 5 " "$mnt/app/1/timeline")" = 1
sum=$(grep -v '^#' "$mnt/app/1/timeline" | awk '{ w += $4 } END { printf "%.0f", w }')
check "the timeline's weights add up to total" test "$sum" = "$(cat "$mnt/app/1/total")"
check "timeline.svg is well-formed, a bar per line" xmllint --noout "$mnt/app/1/timeline.svg"
check "... a bar per line" test "$(grep -c '<rect class="bar"' "$mnt/app/1/timeline.svg")" = "$(grep -vc '^#' "$mnt/app/1/timeline")"

# ---- heatmap.svg ------------------------------------------------------------------------------
h=$r/$(s 5)/$(s 12)/app/1/heatmap.svg
cp "$h" "$tmp/heat.svg"
check "heatmap.svg is well-formed (xmllint)" xmllint --noout "$tmp/heat.svg"
cells=$(xmllint --xpath "//*[local-name()='rect'][@class='c']/*[local-name()='title']/text()" "$tmp/heat.svg" 2>/dev/null |
	awk '{ s += $1 } END { print s + 0 }')
check "its cells' counts sum to the window's samples (got $cells)" test "$cells" = 700
check "350 cells of 2 samples (100 Hz into 20 ms rows)" \
	test "$(grep -c '<rect class="c"' "$tmp/heat.svg")" = 350
link=$(grep -o 'xlink:href="[^"]*"' "$tmp/heat.svg" | head -1 | sed 's/xlink:href="//; s/"$//')
check "the first cell links to its 20 ms: $link" test "$link" = "../../../../../@range/$(s 5)/$(s 5 02)/app/1/"
check "... which resolves from the heatmap's directory to that 20 ms's 2 samples" \
	test "$(cat "$(dirname "$h")/$link/total")" = 20000000
hb=$mnt/app/1/main/phaseB/heatmap.svg
lb=$(grep -o 'xlink:href="[^"]*"' "$hb" | head -1 | sed 's/xlink:href="//; s/"$//')
check "a subtree's heatmap links to the same subtree: $lb" \
	test "$(cat "$(dirname "$hb")/$lb/folded")" = "app;main;phaseB;b_work 20000000"
host=$(ls "$mnt/@host" | head -1)
hh=$mnt/@host/$host/@range/$(s 5)/$(s 12)/app/1/heatmap.svg
check "a host's heatmap is the root's (its links go up to its view's root)" same_bytes "$hh" "$h"
lh=$(grep -o 'xlink:href="[^"]*"' "$hh" | head -1 | sed 's/xlink:href="//; s/"$//')
check "... and resolve inside @host/$host: $lh" \
	test "$(cd "$(dirname "$hh")/$lh" && pwd)" = "$mnt/@host/$host/@range/$(s 5)/$(s 5 02)/app/1"
he=$mnt/app/v%402/main/%40at/heatmap.svg
le=$(grep -o 'xlink:href="[^"]*"' "$he" | head -1 | sed 's/xlink:href="//; s/"$//')
lu=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.unquote(sys.argv[1]))' "$le")
check "a link through escaped names (v%402, %40at) is a URL that decodes to them: $le" \
	test "$(cat "$(dirname "$he")/$lu/folded")" = "app;main;@at;x y 5"
check "the version's heatmap says the 5 samples without a moment are not drawn" \
	grep -q ">5 samples of this directory have no moment here" "$mnt/app/1/heatmap.svg"
if command -v chromium >/dev/null; then
	chrome --window-size=1200,560 --screenshot="$tmp/heat.png" "file://$tmp/heat.svg" >/dev/null
	check "chromium draws heatmap.svg: its fullest cells' colour (175,30,20) in over 1000 pixels" \
		python3 "$(dirname "$0")/png-colour.py" "$tmp/heat.png" 175 30 20 1001
else
	skip "chromium is not installed: heatmap.svg not drawn"
fi

# ---- the same over a database -----------------------------------------------------------------
if [ -n "$(pg__missing)" ]; then
	skip "no PostgreSQL 15 here: the database's windows not compared ($(pg__missing))"
elif ! pg_start "$tmp" pg >"$tmp/pg.out" 2>&1; then
	skip "cannot start a PostgreSQL 15 server: $(tail -3 "$tmp/pg.out")"
else
	pg_createdb views >/dev/null
	db=$(pg_uri views postgres)
	"$fill" "$db" app 1 <"$tmp/in.txt" || bad "samples-fill into the database"
	for k in 0 1 2; do echo "$((t0 * 1000000 + 3000000 + k * 20000)) 5 main;@at;x y"; done |
		"$fill" "$db" app "v@2" || bad "samples-fill v@2 into the database"
	mkdir -p "$tmp/dbmnt"
	"$flamefs" -f "$db" "$tmp/dbmnt" 2>"$tmp/dbflamefs.err" &
	dbpid=$!
	for _ in $(seq 100); do [ -e "$tmp/dbmnt/app" ] && break; sleep 0.1; done
	same=0 differ=
	for f in "@range/$(s 7)/$(s 10)/app/1/folded" "@range/$(s 7 005)/$(s 7 025)/app/1/folded" \
		"@range/$(s 6 985)/$(s 7 005)/folded" "@range/$(s 7)/$(s 10)/window" \
		"@range/$(s 100)/$(s 130)/app/1/window" "@range/$(s 59 5)/$(s 60 5)/app/1/window" \
		"@range/$(s 5)/$(s 7)/@diff/$(s 7)/$(s 10)/app/1/folded" \
		"@range/$(s 5)/$(s 7)/@diff/$(s 7)/$(s 10)/folded" "@range/$(s 5)/$(s 12)/app/1/timeline" \
		"@range/$(s 5 5)/$(s 7 25)/app/1/timeline" app/1/timeline app/1/main/phaseB/timeline \
		timeline "@range/$(s 5)/$(s 12)/app/1/heatmap.svg" app/1/heatmap.svg \
		app/v%402/main/%40at/heatmap.svg; do
		if same_bytes "$mnt/$f" "$tmp/dbmnt/$f" && [ -n "$(head -c 1 "$mnt/$f")" ]; then
			same=$((same + 1))
		else
			differ="$differ $f"
			diff "$mnt/$f" "$tmp/dbmnt/$f" | head -6
		fi
	done
	check "the database's mount: 16 windows, window files, diffs, timelines and heatmaps equal the directory's byte for byte (differ:${differ:- none})" \
		test "$same" = 16
fi

# ---- a roll-up while mounted ------------------------------------------------------------------
# Keep 65 s before the newest moment (125 s, the counts without one):
# the detail of bucket 0 ([0, 60) ends at 60) goes, bucket 1's stays.
exec 7<"$win/app/1/folded" # open before: its snapshot stays
"$fill" "$store" --rollup 65 >"$tmp/rollup.out" 2>&1 || bad "roll-up: $(cat "$tmp/rollup.out")"
check "the roll-up forgot bucket 0's detail: app 1's 900 samples and v@2's 3 ($(cat "$tmp/rollup.out"))" \
	grep -qx "903 samples rolled up" "$tmp/rollup.out"
waited=$(date +%s%N)
for _ in $(seq 100); do grep -qx "exact no" "$win/app/1/window" 2>/dev/null && break; sleep 0.1; done
echo "# the view showed the roll-up after $((($(date +%s%N) - waited) / 1000000)) ms"
check "within 10 s the window over phase B is not exact: its bucket's 900 samples taken whole" \
	grep -q "^cut 1795000020 2026-11-18T11:07:00Z timed 0 weight 0 taken_whole 900 weight 9000000000 detail no$" "$win/app/1/window"
check "phase C across the bucket boundary: [59.5, 60.5) takes bucket 0 whole (900 samples), bucket 1's by moment (50)" \
	test "$(grep -c "^# window .*NOT exact: 900 samples of 1 bucket" "$r/$(s 59 5)/$(s 60 5)/app/1/window")" = 1 -a \
	"$(grep -c "^cut 1795000080 2026-11-18T11:08:00Z timed 50 weight 500000000 taken_whole 0 weight 0 detail yes$" "$r/$(s 59 5)/$(s 60 5)/app/1/window")" = 1
check "... its folded holds the whole bucket (phases A, B and C's part)" \
	test "$(cat "$win/app/1/folded" | tr '\n' ' ')" = "app;main;phaseA;a_work 4000000000 app;main;phaseB;b_work 3000000000 app;main;phaseC;c_work 2000000000 "
check "a file opened before the roll-up reads its own snapshot" \
	test "$(cat <&7)" = "app;main;phaseB;b_work 3000000000"
exec 7<&-

# ---- heatmap.svg after roll-up, the keep window starting inside a bucket -----------------------
# perf script samples every 250 ms over [100, 250) of perf's clock, kept
# 1 minute back from the newest (249.75): buckets 60 and 120 are rolled
# up, bucket 180 ([180, 240)) keeps its detail from 180.000 on, so 280
# samples have their moment.
python3 - >"$tmp/keep.perf" <<'PY'
for k in range(600):
    print("prog  10/10  [000]  %.6f:    1000000 cpu-clock: \n\t  1168 f (/tmp/prog)\n\t  1227 main (/tmp/prog)\n" % (100 + k * 0.25))
PY
"$collect" import --store "$tmp/keep" --keep-samples 1m "$tmp/keep.perf" >/dev/null 2>&1 || bad "import keep.perf"
check "--keep-samples 1m keeps 280 samples whole" \
	test "$("$collect" samples --store "$tmp/keep" --folded | wc -l)" = 280
mkdir -p "$tmp/kmnt"
"$flamefs" -f "$tmp/keep" "$tmp/kmnt" 2>"$tmp/kflamefs.err" &
kpid=$!
for _ in $(seq 100); do [ -e "$tmp/kmnt/prog" ] && break; sleep 0.1; done
check "heatmap.svg draws the 280 samples kept whole, from 180 on" \
	grep -q '>280 samples in \[180, 249.750001)' "$tmp/kmnt/prog/default/heatmap.svg"
check "... and says the 320 rolled up are not drawn" \
	grep -q '>320 samples of this directory have no moment here' "$tmp/kmnt/prog/default/heatmap.svg"
# The rolled-up first bucket [60, 120) holds samples from 100 on: its row
# covers [100, 120) at their rate (1 ms each 250 ms), not the whole minute.
check "timeline: the rolled-up first bucket's row begins at the first sample (100 20 80 ... 0.004)" \
	grep -qx '100 20 80 80000000 0.004 80 -' "$tmp/kmnt/prog/default/timeline"
finish

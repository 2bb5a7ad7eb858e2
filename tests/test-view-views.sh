#!/usr/bin/env bash
# test-view-views.sh — issue #13's views on a real mount, read with real
# tools (ls, cat, find, go tool pprof, callgrind_annotate, xmllint):
#   - @last lists 1m 5m 15m 1h 6h 1d 7d, any other duration resolves, and a
#     window holds only what was imported in it;
#   - @range/FROM/TO (Unix seconds or ISO 8601) holds exactly the buckets
#     that overlap [FROM, TO), an empty window shows nothing;
#   - <binary>/@diff/A/B: the union's folded is difffolded's "stack A B"
#     (brute force), total "A B", the regressions, a pprof whose total is
#     B - A, a differential flame.svg;
#   - <version>/@functions/F: self and total as export --functions gives
#     them, callers/ whose top level adds up to total, callees/ whose total
#     is total, their pprof read by go tool pprof;
#   - flame.svg and callgrind in call-tree directories (xmllint,
#     callgrind_annotate), names beginning with @ escaped, the @ directories
#     unlisted but resolving, a diff that follows an import within 2 s, and
#     @last/1m moving on when a minute begins (on a mount of its own, made
#     first: the test's other checks run while the minute goes by);
#   - top in call-tree directories: head and awk read it, its self and
#     total equal @functions/F's for every function and a brute-force
#     reading of folded in a subdirectory, kernel frames say so, and a
#     frame named top keeps its own directory;
#   - the whole view at the root and at every window's root: folded is
#     every binary's primary series of the most common event summed (here
#     the folded imports' "samples"; loop's cpu-clock is left out), total
#     and top agree with it, go tool pprof reads the same total, flame.svg
#     is well-formed, its @functions agree with its top, and an import
#     shows there within 4 s.
#   usage: test-view-views.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
build=${1:?usage: test-view-views.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
e2e_setup views
mkdir -p "$mnt"
pid=
tpid=
e2e_on_exit() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$tpid" ] && { fusermount3 -u -z "$tmnt" 2>/dev/null; kill "$tpid" 2>/dev/null; }
}
imp() { "$collect" import --store "$store" "$@" >/dev/null 2>&1 || bad "import $*"; }

t0=1795000020 # a bucket start
printf 'main;a;f;f;g 10\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\nmain;c;g;f;g 2\nmain;@plt 1\n' >"$tmp/v1.folded"
printf 'main;a;f;f;g 20\nmain;a;f;h 5\nmain;b;f 7\nmain;b 3\nmain;d 9\n' >"$tmp/v2.folded"
imp --binary app --version 1 --time $t0 "$tmp/v1.folded"
imp --binary app --version 2 --time $((t0 + 60)) "$tmp/v2.folded"
for i in 0 1 2 3; do
	echo "main;w$i $((1 << i))" >"$tmp/w$i.folded"
	imp --binary win --version 1 --time $((t0 + 60 * i + 13)) "$tmp/w$i.folded"
done
now=$(date +%s)
echo "main;recent 5" >"$tmp/recent.folded"
echo "main;old 7" >"$tmp/old.folded"
imp --binary live --version 1 --time $((now - 30)) "$tmp/recent.folded"
imp --binary live --version 1 --time $((now - 900)) "$tmp/old.folded"
printf 'x;y 3\nx;top 2\nx;timeline 1\n' >"$tmp/at.folded"
imp --binary @weird --version @v "$tmp/at.folded"
imp --format perf --binary loop --version 1 "$here/data/perf/loop.perf"

# @last/1m moving on when a minute begins needs the clock to pass a minute:
# a store of its own, mounted first, so that the rest of the test runs
# while the minute goes by (checked at the end).  Imported and checked
# before the minute's last 5 s.
tmnt=$tmp/tick-mnt
mkdir -p "$tmnt"
while [ $(($(date +%s) % 60)) -ge 55 ]; do sleep 0.5; done
echo "main;tick 5" >"$tmp/tick.folded"
"$collect" import --store "$tmp/tick-store" --binary tick --version 1 "$tmp/tick.folded" >/dev/null 2>&1 ||
	bad "import of the tick"
tick_next=$(($(date +%s) / 60 * 60 + 60)) # the next minute begins
"$flamefs" -f "$tmp/tick-store" "$tmnt" 2>"$tmp/tick-daemon.err" &
tpid=$!
for _ in $(seq 50); do mountpoint -q "$tmnt" && break; sleep 0.1; done
tick_now=$(cat "$tmnt/@last/1m/tick/1/total" 2>/dev/null)
if [ "$(date +%s)" -lt "$tick_next" ]; then
	check "@last/1m holds what was imported this minute" test "$tick_now" = 5
	check "... and lists it" test -n "$(ls "$tmnt/@last/1m" | grep -x tick)"
else
	bad "@last/1m: the tick was not read within its minute (the machine is too slow?): '$tick_now'"
fi

"$flamefs" -f "$store" "$mnt" 2>"$tmp/daemon.err" &
pid=$!
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { bad "flamefs did not mount: $(cat "$tmp/daemon.err")"; exit 1; }

sum_folded() { awk '{ s += $NF } END { print s + 0 }' "$1"; }

# First thing on a fresh mount: a diff before any version's tree exists
# (its space must not take the synthetic directories' number space).
check "a @diff looked up first on a fresh mount" test "$(cat "$mnt/app/@diff/1/2/total" 2>&1)" = "28 44"

# ---- the root and escaping -----------------------------------------------------------------
check "ls MNT: the whole view's files and the binaries, @weird escaped; @last and @range are not listed" \
	test "$(ls -A "$mnt" | tr '\n' ' ')" = "%40weird app callgrind flame.svg folded heatmap.svg live loop name pprof self timeline timeline.svg top total win "
check "... but resolve by name" test -d "$mnt/@last" -a -d "$mnt/@range" -a -d "$mnt/app/@diff" -a -d "$mnt/app/1/@functions"
check "find walks the call trees, not the views" \
	test -z "$(find "$mnt" -name '@*')" -a -n "$(find "$mnt" -name '%40*')"
check "the escaped binary's version %40v and its name" \
	test "$(cat "$mnt/%40weird/%40v/name")" = "@weird"
check "a frame named @plt is %40plt" test -d "$mnt/app/1/main/%40plt"

# ---- @last ------------------------------------------------------------------------------------
check "ls @last: 1m 5m 15m 1h 6h 1d 7d" \
	test "$(ls -U "$mnt/@last" | tr '\n' ' ')" = "1m 5m 15m 1h 6h 1d 7d "
check "@last/5m lists only the binaries with counts in it (@weird was imported now)" \
	test "$(ls "$mnt/@last/5m" | tr '\n' ' ')" = "%40weird callgrind flame.svg folded heatmap.svg live name pprof self timeline timeline.svg top total window "
check "@last/5m/live/1/total: the recent count" test "$(cat "$mnt/@last/5m/live/1/total")" = 5
check "@last/1h/live/1/total: both" test "$(cat "$mnt/@last/1h/live/1/total")" = 12
check "@last/90s resolves though unlisted" test "$(cat "$mnt/@last/90s/live/1/total")" = 5
check "@last/1d12h resolves" test "$(cat "$mnt/@last/1d12h/live/1/total")" = 12
check "@last/soon does not" test ! -e "$mnt/@last/soon"
check "@last/5m/live/1/folded" test "$(cat "$mnt/@last/5m/live/1/folded")" = "live;main;recent 5"

# ---- @range -----------------------------------------------------------------------------------
r() { cat "$mnt/@range/$1/$2/win/1/total" 2>/dev/null || echo none; }
check "@range: one bucket" test "$(r $t0 $((t0 + 60)))" = 1
check "@range: the buckets that overlap" test "$(r $((t0 + 30)) $((t0 + 61)))" = 3
check "@range: all four" test "$(r $((t0 - 600)) $((t0 + 600)))" = 15
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
check "@range in ISO 8601" test "$(r "$(iso $((t0 + 60)))" "$(iso $((t0 + 180)))")" = 6
check "@range: an empty window shows nothing" \
	test -z "$(ls "$mnt/@range/$((t0 + 60))/$((t0 + 60))")"
check "@range: no binary outside its time" test ! -e "$mnt/@range/$((t0 + 600))/$((t0 + 900))/win"
check "@range: total = the folded sum" \
	test "$(sum_folded "$mnt/@range/$t0/$((t0 + 120))/win/1/folded")" = 3
check "@range/bogus does not resolve" test ! -e "$mnt/@range/yesterday"

# ---- @diff ------------------------------------------------------------------------------------
d=$mnt/app/@diff/1/2
check "ls app: the versions (@diff resolves, unlisted)" test "$(ls -A "$mnt/app" | tr '\n' ' ')" = "1 2 "
check "ls app/@diff and app/@diff/1: the versions" \
	test "$(ls "$mnt/app/@diff" | tr '\n' ' ')$(ls "$mnt/app/@diff/1" | tr '\n' ' ')" = "1 2 1 2 "
perl -e '
	my %c;
	for my $i (0, 1) {
		open(my $f, "<", $ARGV[$i]) or die;
		while (<$f>) { /^(.*) (\d+)$/ or next; $c{"app;$1"}[$i] += $2 }
	}
	for (sort keys %c) { printf "%s %d %d\n", $_, $c{$_}[0] // 0, $c{$_}[1] // 0 }
' "$tmp/v1.folded" "$tmp/v2.folded" >"$tmp/diff.want"
check "@diff/1/2/folded: stack A B, as difffolded prints" cmp -s "$d/folded" "$tmp/diff.want"
check "@diff/1/2/total: A B" test "$(cat "$d/total")" = "28 44"
check "@diff/1/2/main/a/total" test "$(cat "$d/main/a/total")" = "15 25"
check "@diff/1/2/regressions: d first" test "$(head -1 "$d/regressions")" = "+20.5% app;main;d"
check "no regressions below the root" test ! -e "$d/main/regressions"
check "no callgrind in a diff" test ! -e "$d/callgrind"
check "@diff flame.svg is well-formed and differential" \
	sh -c "xmllint --noout '$d/flame.svg' && grep -q Differential '$d/flame.svg'"
check "every diff directory: A and B totals are self + children's, column by column" python3 - "$d" <<'PY'
import os, sys
bad = 0
for dirpath, subdirs, files in os.walk(sys.argv[1]):
    t = [int(x) for x in open(os.path.join(dirpath, "total")).read().split()]
    s = [int(x) for x in open(os.path.join(dirpath, "self")).read().split()]
    for c in subdirs:
        ct = [int(x) for x in open(os.path.join(dirpath, c, "total")).read().split()]
        s = [s[0] + ct[0], s[1] + ct[1]]
    bad += s != t
sys.exit(1 if bad else 0)
PY

# ---- @functions -------------------------------------------------------------------------------
fn=$mnt/app/1/@functions
"$collect" export --store "$store" --binary app --version 1 --functions >"$tmp/functions"
check "ls @functions: every function" \
	test "$(ls "$fn" | tr '\n' ' ')" = "$(awk '{ print $3 }' "$tmp/functions" | sed 's/^@/%40/' | sort | tr '\n' ' ')"
ok_f=1
while read -r self total name; do
	e=$fn/$(printf '%s' "$name" | sed 's/^@/%40/')
	[ "$(cat "$e/self")" = "$self" ] && [ "$(cat "$e/total")" = "$total" ] || { ok_f=0; echo "  $name: self/total"; }
	[ "$(cat "$e/callees/total")" = "$total" ] || { ok_f=0; echo "  $name: callees total"; }
	top=0
	for c in "$e/callers/"*/; do top=$((top + $(cat "$c/total"))); done
	[ "$top" = "$total" ] || { ok_f=0; echo "  $name: callers' top level $top, total $total"; }
done <"$tmp/functions"
check "@functions/F: self and total as export --functions; callers' top level and callees/ add up to total" test $ok_f = 1
check "callers of f, inverted from its innermost occurrence" \
	test "$(cat "$fn/f/callers/folded" | tr '\n' '|')" = "f;a;main;app 5|f;b;main;app 7|f;f;a;main;app 10|f;g;c;main;app 2|"
check "find @functions/f/callers: the callers' directories" \
	test "$(cd "$fn/f/callers" && find . -type d | sort | tr '\n' ' ')" = ". ./a ./a/main ./a/main/app ./b ./b/main ./b/main/app ./f ./f/a ./f/a/main ./f/a/main/app ./g ./g/c ./g/c/main ./g/c/main/app "
check "callgrind_annotate reads a version's callgrind: inclusive f = 24" \
	sh -c "callgrind_annotate --inclusive=yes '$mnt/app/1/callgrind' | grep -q '^24 .*:f '"
check "xmllint: the version's and callees' flame.svg" \
	xmllint --noout "$mnt/app/1/flame.svg" "$fn/f/callees/flame.svg" "$mnt/loop/1/flame.svg"

# ---- top ---------------------------------------------------------------------------------------
check "ls a version: top is a file beside folded" test -f "$mnt/app/1/top"
check "head -3 top: the header and the hottest function, g (self 12 of 28)" \
	test "$(head -3 "$mnt/app/1/top" | tail -1 | awk '{ print $1, $2, $5, $6 }')" = "12 42.86 user g"
check "top's header names the unit" grep -q '^# .* unit count (samples), total 28$' "$mnt/app/1/top"
ok_t=1
while read -r self total name; do
	line=$(awk -v n="$name" '!/^#/ && $6 == n { print $1, $3 }' "$mnt/app/1/top")
	[ "$line" = "$self $total" ] || { ok_t=0; echo "  top $name: '$line', @functions '$self $total'"; }
done <"$tmp/functions"
check "top: self and total of every function are @functions/F's" test $ok_t = 1
check "top lists each function once" \
	test "$(grep -vc '^#' "$mnt/app/1/top")" = "$(wc -l <"$tmp/functions")"
# Brute force in a subdirectory: functions from main/a down, in folded.
brute_top() { # DIR DEPTH: "self total name" per function, sorted by name
	awk -v d="$2" '{ w = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); delete seen
		for (i = d; i <= n; i++) { if (!(f[i] in seen)) tot[f[i]] += w; seen[f[i]] = 1 }
		self[f[n]] += (n >= d) ? w : 0 }
		END { for (k in tot) print self[k] + 0, tot[k], k }' "$1/folded" | sort -k3
}
for sub in main main/a main/a/f main/b; do
	check "top of app/1/$sub equals a brute-force reading of its folded" \
		test "$(awk '!/^#/ { print $1, $3, $6 }' "$mnt/app/1/$sub/top" | sort -k3)" = \
		"$(brute_top "$mnt/app/1/$sub" $(($(printf '%s' "$sub" | tr -cd / | wc -c) + 2)))"
done
check "top: loop's kernel frames are kernel, [unknown] unknown" \
	sh -c "awk '\$6 == \"ptep_clear_flush\" { k = \$5 } \$6 == \"[unknown]\" { u = \$5 } END { exit !(k == \"kernel\" && u == \"unknown\") }' '$mnt/loop/1/top'"
check "top of a clock unit says the total in seconds" grep -q '^# .* unit nanoseconds (cpu-clock), total [0-9]* = [0-9]*\.[0-9]\{9\} s$' "$mnt/loop/1/top"
check "a frame named top is the directory %74op, top the file" \
	test -d "$mnt/%40weird/%40v/x/%74op" -a -f "$mnt/%40weird/%40v/x/top" -a "$(cat "$mnt/%40weird/%40v/x/%74op/name")" = top
check "... and top ranks it: y 3, top 2, timeline 1, x 0" \
	test "$(awk '!/^#/ { print $6 }' "$mnt/%40weird/%40v/x/top" | tr '\n' ' ')" = "y top timeline x "
# (top's st_size is 0 until rendered, as pprof's: read it, do not test -s;
# see "files without a size" below.)
check "top in a window and in callers/ and callees/ trees" \
	sh -c "grep -q ' recent\$' '$mnt/@last/1h/live/1/top' && grep -q ' main\$' '$fn/f/callers/top' && grep -q ' g\$' '$fn/f/callees/top'"

# ---- the whole view at the root ------------------------------------------------------------------
# Merges folded files: sums equal stacks, bytewise order.
merge_folded() { cat "$@" | awk '{ w = $NF; sub(/ [0-9]+$/, ""); s[$0] += w } END { for (k in s) print k, s[k] }' | sort; }
check "the root's folded: app 1 and 2, live, win and @weird summed, loop (cpu-clock) left out" \
	test "$(cat "$mnt/folded")" = "$(merge_folded "$mnt"/app/1/folded "$mnt"/app/2/folded "$mnt"/live/1/folded "$mnt"/win/1/folded "$mnt"/%40weird/%40v/folded)"
check "the root's total is its folded's sum" test "$(cat "$mnt/total")" = "$(sum_folded "$mnt/folded")"
check "the root's top equals a brute-force reading of its folded" \
	test "$(awk '!/^#/ { print $1, $3, $6 }' "$mnt/top" | sort -k3)" = "$(brute_top "$mnt" 2)"
check "the root's top names the unit and total" grep -q "^# .* unit count (samples), total $(cat "$mnt/total")\$" "$mnt/top"
check "xmllint: the root's flame.svg" xmllint --noout "$mnt/flame.svg"
check "callgrind_annotate reads the root's callgrind" sh -c "callgrind_annotate '$mnt/callgrind' >/dev/null"
for w in @last/1h "@range/$t0/$((t0 + 120))" "@range/$((t0 + 60))/$((t0 + 240))"; do
	want=$(merge_folded $(for b in "$mnt/$w"/*/; do [ -f "$b/top" ] && continue; for v in "$b"*/; do case $(basename "$v") in *@*) continue ;; esac; echo "$v/folded"; done; done))
	check "$w: its root's folded is its binaries' primary versions' summed" test "$(cat "$mnt/$w/folded")" = "$want"
	check "$w: total and top agree" test "$(cat "$mnt/$w/total")" = "$(sum_folded "$mnt/$w/folded")" -a \
		"$(awk '!/^#/ { print $1, $3, $6 }' "$mnt/$w/top" | sort -k3)" = "$(brute_top "$mnt/$w" 2)"
done
ok_r=1
while read -r self _ total _ _ name; do
	e=$mnt/@functions/$(printf '%s' "$name" | sed 's/^@/%40/; s/^top$/%74op/; s/^timeline$/%74imeline/')
	[ "$(cat "$e/self") $(cat "$e/total")" = "$self $total" ] || { ok_r=0; echo "  /@functions/$name: $(cat "$e/self") $(cat "$e/total"), top: $self $total"; }
done < <(grep -v '^#' "$mnt/top")
check "the root's @functions: every function of the root's top, with its self and total" test $ok_r = 1
check "ls /@functions lists as many functions as the root's top" \
	test "$(ls "$mnt/@functions" | wc -l)" = "$(grep -vc '^#' "$mnt/top")"
check "/@functions/f/callers/ ends at every binary that calls f, and adds up to its total" \
	test "$(awk '{ s += $NF } END { print s }' "$mnt/@functions/f/callers/folded")" = "$(cat "$mnt/@functions/f/total")" -a \
	"$(cat "$mnt/@functions/f/callees/total")" = "$(cat "$mnt/@functions/f/total")"
check "ls @last/1h: the whole window's files, then its binaries" \
	test "$(ls "$mnt/@last/1h" | tr '\n' ' ')" = "%40weird callgrind flame.svg folded heatmap.svg live name pprof self timeline timeline.svg top total window "

# ---- files without a size before rendering, read with other tools -------------------------------
# The root's files, and pprof, top, flame.svg ... anywhere, have st_size 0
# until rendered (read with direct_io to the end), then their cached
# rendering's size.  Tools that read to the end get every byte either way;
# @last/1d's files are read here for the first time.
tools_ok=1
for f in "$mnt/@last/1d/top" "$mnt/@last/1d/pprof" "$mnt/@last/1d/folded" "$mnt/@last/1d/timeline" \
	"$mnt/live/1/callgrind" "$mnt/live/1/pprof"; do
	want=$(cat "$f" | md5sum)
	for tool in "cp '$f' '$tmp/cp.out' && cat '$tmp/cp.out'" "python3 -c 'import sys; sys.stdout.buffer.write(open(sys.argv[1], \"rb\").read())' '$f'" \
		"tail -c +1 '$f'" "dd if='$f' bs=4096 status=none"; do
		got=$(sh -c "$tool" | md5sum)
		[ "$got" = "$want" ] || { tools_ok=0; echo "  $tool: not what cat reads"; }
	done
	[ "$(wc -c <"$f")" = "$(cat "$f" | wc -c)" ] || { tools_ok=0; echo "  wc -c < $f: $(wc -c <"$f")"; }
	[ "$(tail -n 2 "$f" | md5sum)" = "$(cat "$f" | tail -n 2 | md5sum)" ] || { tools_ok=0; echo "  tail -n 2 $f"; }
done
check "cp, python's read(), tail, dd and wc -c read what cat reads from files without a size" test $tools_ok = 1
size_known=1
for f in folded top pprof flame.svg callgrind timeline timeline.svg self total name \
	app/1/top app/1/pprof app/1/flame.svg app/1/callgrind app/1/timeline; do
	n=$(cat "$mnt/$f" | wc -c)
	[ "$(stat -c %s "$mnt/$f")" = "$n" ] || { size_known=0; echo "  $f: stat says $(stat -c %s "$mnt/$f"), cat reads $n"; }
done
check "once read, the root's files and a version's pprof, top ... have their size in stat (ls -l, tar)" test $size_known = 1
if command -v tar >/dev/null; then
	mkdir -p "$tmp/untar"
	tar cf "$tmp/root.tar" -C "$mnt" top pprof folded && tar xf "$tmp/root.tar" -C "$tmp/untar"
	check "tar of the root's top, pprof and folded (read before) holds their bytes" \
		sh -c "cmp -s '$tmp/untar/top' - < '$mnt/top' && cmp -s '$tmp/untar/pprof' - < '$mnt/pprof' && cmp -s '$tmp/untar/folded' - < '$mnt/folded'"
fi

# ---- ls @range: the days that hold data --------------------------------------------------------
days=$(for t in $t0 $((t0 + 193)) $((now - 900)) $((now - 30)) $(date +%s); do date -u -d "@$t" +%F; done | sort -u)
check "ls @range: the UTC days the wall-clock series span (loop's perf clock left out)" \
	test "$(ls "$mnt/@range")" = "$days"
d0=$(date -u -d "@$t0" +%F)
d1=$(date -u -d "@$((t0 + 86400))" +%F)
check "ls @range/DAY: the next day, a ready-made window" test "$(ls "$mnt/@range/$d0")" = "$d1"
check "@range/DAY/NEXT holds that day: win's 4 buckets" test "$(cat "$mnt/@range/$d0/$d1/win/1/total")" = 15
check "@range/<unix seconds>/ lists nothing (not a day's start)" test -z "$(ls "$mnt/@range/$((t0 + 1))")"

# ---- timeline --------------------------------------------------------------------------------
check "timeline of win/1: one line per bucket with counts, over its 60 s, its samples untimed (a folded import has no moments; a sample per count)" \
	test "$(grep -v '^#' "$mnt/win/1/timeline" | cut -d' ' -f1-4,6,7)" = "$(for i in 0 1 2 3; do echo "$((t0 + 60 * i)) 60 $((1 << i)) $((1 << i)) $((1 << i)) $(date -u -d "@$((t0 + 60 * i))" +%Y-%m-%dT%H:%M:%SZ)"; done)"
check "timeline of win/1/main/w2: its one bucket" \
	test "$(grep -v '^#' "$mnt/win/1/main/w2/timeline" | cut -d' ' -f1,3,4)" = "$((t0 + 120)) 4 4"
check "timeline's header: the resolution, the span, the clock" \
	grep -q '^# 4 intervals of 1 s over \[2026-11-18T11:07:00Z, 2026-11-18T11:11:00Z) (240 s); clock unix (seconds, UTC); unit count (samples); per_second: weight per second$' "$mnt/win/1/timeline"
check "loop's timeline is on perf's clock" grep -q '^# .* clock perf ' "$mnt/loop/1/timeline"
# Times on perf's clock are written as its seconds wherever people read them, never as "-".
check "loop's heatmap.svg names its span and cells in perf's seconds" \
	sh -c "grep -q ' samples in \\[599\\.' '$mnt/loop/1/heatmap.svg' &&
		! grep -q -e '\\[-' -e '>-</text>' '$mnt/loop/1/heatmap.svg'"
check "loop's timeline.svg names its bars in perf's seconds" \
	sh -c "grep -q '<title>599\\.' '$mnt/loop/1/timeline.svg' && ! grep -q '>-</text>' '$mnt/loop/1/timeline.svg'"
check "a window on perf's clock: its header in perf's seconds" \
	test "$(head -1 "$mnt/@range/540/600/loop/1/window")" = "# window [540, 600): exact"
check "... and its from and to lines' UTC column is still - (not a wall-clock time)" \
	test "$(sed -n '2,3p' "$mnt/@range/540/600/loop/1/window" | tr '\n' ' ')" = "from 540 - to 600 - "
check "the root's timeline: the buckets' weights add up to its total" \
	test "$(awk '!/^#/ { s += $4 } END { print s }' "$mnt/timeline")" = "$(cat "$mnt/total")"
check "an @range window's timeline holds only its buckets" \
	test "$(grep -v '^#' "$mnt/@range/$((t0 + 60))/$((t0 + 180))/win/1/timeline" | cut -d' ' -f1)" = "$(printf '%s\n' $((t0 + 60)) $((t0 + 120)))"
check "xmllint: timeline.svg of the root, a version and a frame" \
	xmllint --noout "$mnt/timeline.svg" "$mnt/win/1/timeline.svg" "$mnt/app/1/main/a/timeline.svg"
check "timeline.svg of win/1 draws 4 bars" test "$(grep -c '<rect class="bar"' "$mnt/win/1/timeline.svg")" = 4
check "a frame named timeline is the directory %74imeline, timeline the file" \
	test -d "$mnt/%40weird/%40v/x/%74imeline" -a -f "$mnt/%40weird/%40v/x/timeline"

if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	pprof_total() {
		go tool pprof -raw "$1" 2>/dev/null |
			awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
			     s && /:/ { split($0, a, ":"); split(a[1], v, " "); t += v[2] }
			     END { printf "%.0f\n", t }'
	}
	check "go tool pprof: callers/ of f totals 24" test "$(pprof_total "$fn/f/callers/pprof")" = 24
	check "go tool pprof: callees/ of f totals 24" test "$(pprof_total "$fn/f/callees/pprof")" = 24
	check "go tool pprof: the diff totals B - A" test "$(pprof_total "$d/pprof")" = 16
	check "go tool pprof: a window" test "$(pprof_total "$mnt/@last/1h/live/1/pprof")" = 12
	check "go tool pprof: the root's pprof totals its total" test "$(pprof_total "$mnt/pprof")" = "$(cat "$mnt/total")"
	check "go tool pprof: a window's root" test "$(pprof_total "$mnt/@last/1h/pprof")" = "$(cat "$mnt/@last/1h/total")"
else
	echo "SKIP: go tool pprof checks (go not installed)"
fi

# ---- live: an import shows in the diff, the functions and the windows ------------------------
# Held by the kernel before the import: rebuilt from the new trees.
check "callers of d in version 2 before the import" \
	test "$(cat "$mnt/app/2/@functions/d/callers/total")" = 9
check "its callees before" test "$(cat "$mnt/app/2/@functions/d/callees/total")" = 9
check "the root's @functions/d/callers before the import" test "$(cat "$mnt/@functions/d/callers/total")" = 9
echo "main;d 11" >"$tmp/more.folded"
imp --binary app --version 2 --time $((t0 + 60)) "$tmp/more.folded"
seen=0
for _ in $(seq 40); do
	[ "$(cat "$d/total" 2>/dev/null)" = "28 55" ] && { seen=1; break; }
	sleep 0.1
done
check "an import shows in @diff/1/2/total within 4 s" test $seen = 1
check "... and in the root's @functions/d/total and callers (held across the import)" \
	test "$(cat "$mnt/@functions/d/total") $(awk '{ s += $NF } END { print s }' "$mnt/@functions/d/callers/folded")" = "20 20"
check "... and in the root's folded and top (held by the kernel across the import)" \
	test "$(grep '^app;main;d ' "$mnt/folded")" = "app;main;d 20" -a "$(awk '$6 == "d" { print $1 }' "$mnt/top")" = 20
check "... and in @functions of version 2" test "$(cat "$mnt/app/2/@functions/d/total")" = 20
c=$(cat "$mnt/app/2/@functions/d/callers/main/total"); echo "     callers/main/total: $c; callers/total: $(cat "$mnt/app/2/@functions/d/callers/total")"
check "... and in its callers" test "$c" = 20
check "... and in the callers and callees trees held across the import" \
	test "$(cat "$mnt/app/2/@functions/d/callers/total") $(cat "$mnt/app/2/@functions/d/callees/total")" = "20 20"

# ---- @last moves with the clock ---------------------------------------------------------------
# (the tick store, mounted at the start) Once the next minute began, the
# tick's counts are not in @last/1m, though nothing was imported and the
# kernel holds the directory (the daemon rebuilds and invalidates at the
# bucket's end).
minute_wait=$SECONDS
while [ "$(date +%s)" -lt "$tick_next" ]; do sleep 0.5; done
sleep 2.5
echo "# waited $((SECONDS - minute_wait)) s for the next minute"
after=$(cat "$tmnt/@last/1m/tick/1/total" 2>/dev/null)
check "... and not once the next minute began (got '${after}')" test "$after" = 0 -o -z "$after"
check "... nor in its listing" test -z "$(ls "$tmnt/@last/1m" | grep -x tick)"
check "@last/5m still holds it" test "$(cat "$tmnt/@last/5m/tick/1/total")" = 5
fusermount3 -u "$tmnt"
wait "$tpid" 2>/dev/null
check "the tick store's daemon exited 0" test $? = 0
tpid=

fusermount3 -u "$mnt"
wait "$pid" 2>/dev/null
check "the daemon exited 0" test $? = 0
pid=
# On a sanitizer build, the daemon's reports end up here.
check "no sanitizer report from the daemons" \
	sh -c "! grep -E 'ERROR: AddressSanitizer|LeakSanitizer|runtime error' '$tmp/daemon.err' '$tmp/tick-daemon.err'"
grep -E -A20 'ERROR: AddressSanitizer|LeakSanitizer|runtime error' "$tmp/daemon.err" "$tmp/tick-daemon.err" | head -40
echo "$failures failures"
[ "$failures" = 0 ]

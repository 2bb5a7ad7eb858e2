#!/usr/bin/env bash
# test-import-perf.sh — golden tests for the perf-script importer.
#
# For every tests/data/perf/*.perf fixture (real `perf script` recordings
# and hand-written edge cases): the committed *.folded.expected must equal
# what the independent Perl reference (tests/ref/stackcollapse-ref.pl)
# prints, and importing the fixture into a fresh store and exporting it as
# folded text must give the same bytes.  Then the options (--event,
# --all-events, --binary) and bad input: a non-zero exit, a "FILE:LINE:"
# message, and nothing added to the store.
#   usage: test-import-perf.sh BUILD_DIR        exit 0 pass, 1 fail
. "$(dirname "$0")/lib-import.sh"
data=$here/data/perf
ref=$here/ref/stackcollapse-ref.pl
command -v perl >/dev/null || { echo "SKIP: perl not installed"; exit 77; }

# import_export NAME FIXTURE [IMPORT OPTIONS...] -- [EXPORT OPTIONS...]
import_export() {
	local name=$1 fixture=$2
	shift 2
	local iopts=() eopts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do iopts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	eopts=("$@")
	rm -rf "$tmp/store"
	if ! "$collect" import --store "$tmp/store" --format perf "${iopts[@]}" \
		"$fixture" >"$tmp/import.out" 2>&1; then
		bad "$name: import failed"
		cat "$tmp/import.out"
		return 1
	fi
	"$collect" export --store "$tmp/store" --format folded "${eopts[@]}" \
		>"$tmp/$name.got" 2>"$tmp/export.err" ||
		{ bad "$name: export failed"; cat "$tmp/export.err"; return 1; }
}

for fixture in "$data"/*.perf; do
	base=$(basename "$fixture" .perf)
	case $base in bad-*) continue ;; esac
	expected=$data/$base.folded.expected
	n=$((n + 1))
	perl "$ref" "$fixture" >"$tmp/$base.ref" ||
		{ bad "$base: reference failed"; continue; }
	if [ ! -f "$expected" ]; then
		bad "$base: missing $expected"
		continue
	fi
	same "$tmp/$base.ref" "$expected" "$base: reference output differs from committed expected"
	import_export "$base" "$fixture" && same "$tmp/$base.got" "$expected" "$base: export differs from expected"
done

# --event keeps only that event; with no ':' it also takes EV:modifiers.
two=$data/two-events.perf
for ev in task-clock cpu-clock; do
	n=$((n + 1))
	perl "$ref" --event "$ev" "$two" >"$tmp/ref-$ev"
	[ -s "$tmp/ref-$ev" ] || bad "reference for --event $ev is empty"
	import_export "event-$ev" "$two" --event "$ev" &&
		same "$tmp/event-$ev.got" "$tmp/ref-$ev" "--event $ev"
done

# parts.perf: folded text cannot show modules, so the tree must: samples
# that differ only in pcs and offsets share nodes, and ones that differ in
# a module, a function or the java tidying do not (13 frames, 17 nodes
# counted by hand; app has 7 distinct stacks, java 1).
n=$((n + 1))
if import_export parts-tree "$data/parts.perf"; then
	"$collect" stats --store "$tmp/store" >"$tmp/stats" 2>&1
	grep -q '^2 series, 13 frames, 17 stack nodes$' "$tmp/stats" &&
		awk '$1 == "app" && $6 == 7 { a = 1 } $1 == "java" && $6 == 1 { j = 1 }
			END { exit !(a && j) }' "$tmp/stats" ||
		{ bad "parts.perf: wrong stack tree"; cat "$tmp/stats"; }
fi

# --all-events: one series per event, each equal to its --event output.
# Series are named without perf's modifiers: cpu-clock:u is cpu-clock.
for input in "$two" "$data/nocallchain.perf"; do
	n=$((n + 1))
	name=$(basename "$input" .perf)
	import_export "all-$name" "$input" --all-events || continue
	for ev in task-clock cpu-clock:u; do
		perl "$ref" --event "$ev" "$input" >"$tmp/ref-all-$ev"
		[ -s "$tmp/ref-all-$ev" ] || bad "$name: reference for $ev is empty"
		"$collect" export --store "$tmp/store" --format folded --event "${ev%%:*}" \
			>"$tmp/all-$ev.got" 2>&1
		same "$tmp/all-$ev.got" "$tmp/ref-all-$ev" "$name: --all-events, event $ev"
	done
	"$collect" stats --store "$tmp/store" >"$tmp/stats" 2>&1
	grep -q ' task-clock ' "$tmp/stats" && grep -q ' cpu-clock ' "$tmp/stats" &&
		! grep -q 'cpu-clock:' "$tmp/stats" ||
		{ bad "$name: --all-events: stats lacks a series or keeps a modifier"; cat "$tmp/stats"; }
done

# cpu-clock in any spelling is pprof's cpu/nanoseconds (issue 16).
if command -v go >/dev/null; then
	for ev in cpu-clock:ppp cpu-clock:u cpu-clock; do
		n=$((n + 1))
		rm -rf "$tmp/store"
		sed "s/ cpu-clock:u: / $ev: /" "$two" >"$tmp/spelled.perf"
		"$collect" import --store "$tmp/store" --event "$ev" "$tmp/spelled.perf" >/dev/null 2>&1 &&
			"$collect" export --store "$tmp/store" --format pprof -o "$tmp/spelled.pb.gz" ||
			{ bad "$ev: import or pprof export failed"; continue; }
		go tool pprof -raw "$tmp/spelled.pb.gz" 2>/dev/null | grep -q '^samples/count cpu/nanoseconds' ||
			{ bad "$ev: pprof sample types are not samples/count cpu/nanoseconds"
			  go tool pprof -raw "$tmp/spelled.pb.gz" 2>&1 | head -5; }
	done
fi

# Layouts (tests/data/perf/layouts, made by make.sh there from one -g and
# one plain recording, with several -F field sets): each is detected as
# perf script and gives the same export as with --format perf, indented as
# perf writes it and flush left (as older perf and converters write it).
# The -g ones and the plain ones with a time and an event equal the
# reference; the plain ones without them have the stacks of nog-1 (the
# same recording), weighted by period (nog-3) or counted (nog-4, nog-6).
lay=$data/layouts
stacks() { sed 's/ [0-9]*$//' "$1"; }
for fixture in "$lay"/*.perf; do
	base=$(basename "$fixture" .perf)
	sed 's/^[[:space:]]*//' "$fixture" >"$tmp/$base-flush.perf"
	for f in "$fixture" "$tmp/$base-flush.perf"; do
		name=$(basename "$f" .perf)
		n=$((n + 1))
		rm -rf "$tmp/auto"
		"$collect" import --store "$tmp/auto" "$f" >"$tmp/auto.out" 2>&1 &&
			grep -q 'of perf)' "$tmp/auto.out" ||
			{ bad "$name: not detected as perf script"; cat "$tmp/auto.out"; continue; }
		"$collect" export --store "$tmp/auto" --format folded >"$tmp/$name.auto" 2>&1
		import_export "$name" "$f" || continue
		same "$tmp/$name.auto" "$tmp/$name.got" "$name: detected, export differs from --format perf's"
		[ -s "$tmp/$name.got" ] || bad "$name: nothing imported"
	done
	n=$((n + 1))
	same "$tmp/$base-flush.got" "$tmp/$base.got" "$base: flush left, export differs from indented"
	case $base in
	g-* | nog-1 | nog-2 | nog-5)
		perl "$ref" "$fixture" >"$tmp/$base.ref" || bad "$base: reference failed"
		same "$tmp/$base.got" "$tmp/$base.ref" "$base: export differs from the reference" ;;
	nog-3) same "$tmp/$base.got" "$tmp/nog-1.got" "$base: export differs from nog-1's" ;;
	*)
		stacks "$tmp/$base.got" >"$tmp/$base.stacks"
		stacks "$tmp/nog-1.got" >"$tmp/nog-1.stacks"
		same "$tmp/$base.stacks" "$tmp/nog-1.stacks" "$base: stacks differ from nog-1's"
		got=$(awk '{ s += $NF } END { print s }' "$tmp/$base.got")
		[ "$got" = "$(grep -c . "$fixture")" ] || bad "$base: $got samples, expected one a line" ;;
	esac
done

# spell-*.perf (above, against the reference): one event in three
# spellings (cpu-clock:u, cpu-clock, cpu-clock:ppp), every sample kept.
for fixture in "$data"/spell-*.perf; do
	base=$(basename "$fixture" .perf)
	n=$((n + 1))
	want=$(grep -c -E '^ *loop ' "$fixture")
	import_export "$base-count" "$fixture" || continue
	got=$("$collect" stats --store "$tmp/store" | awk 'NR > 1 && NF == 9 { s += $4 } END { print s }')
	[ "$got" = "$want" ] || bad "$base: $got samples kept of $want"
	grep -q 'kept only' "$tmp/import.out" && bad "$base: samples of another spelling were skipped"
done

# --binary: every process lands in one series named by the option.
n=$((n + 1))
perl "$ref" --binary mybin "$data/system.perf" >"$tmp/ref-binary"
import_export binary "$data/system.perf" --binary mybin -- --binary mybin &&
	same "$tmp/binary.got" "$tmp/ref-binary" "--binary mybin"

# stdin and the default (first event only) warning.
n=$((n + 1))
rm -rf "$tmp/store"
if "$collect" import --store "$tmp/store" --format perf - <"$two" >"$tmp/stdin.out" 2>&1; then
	grep -q 'kept only event cpu-clock (in every spelling)' "$tmp/stdin.out" ||
		{ bad "stdin: no filtering notice"; cat "$tmp/stdin.out"; }
	"$collect" export --store "$tmp/store" --format folded >"$tmp/stdin.got" 2>&1
	same "$tmp/stdin.got" "$data/two-events.folded.expected" "stdin import"
else
	bad "stdin import failed"
	cat "$tmp/stdin.out"
fi

# samples prints perf script text: imported again, it gives the same
# folded (the pc column is 0; frames without a module show [unknown]).
for base in loop system system-pidtid tmpl two-events caches nocallchain; do
	rm -rf "$tmp/rt1" "$tmp/rt2"
	"$collect" import --store "$tmp/rt1" --format perf --keep-samples 1d "$data/$base.perf" >/dev/null 2>&1 ||
		{ bad "$base: import for the round trip"; continue; }
	"$collect" samples --store "$tmp/rt1" >"$tmp/rt.txt" 2>&1 || { bad "$base: samples"; continue; }
	if "$collect" import --store "$tmp/rt2" --format perf "$tmp/rt.txt" >"$tmp/rt.out" 2>&1; then
		"$collect" export --store "$tmp/rt1" --format folded | sort >"$tmp/rt1.folded"
		"$collect" export --store "$tmp/rt2" --format folded | sort >"$tmp/rt2.folded"
		same "$tmp/rt2.folded" "$tmp/rt1.folded" "$base: samples' text imported again"
	else
		bad "$base: samples' text does not import again: $(head -1 "$tmp/rt.out")"
	fi
done

# stats gives the recent tier its bytes once compact has written them,
# even when they share one data block with the frames (loop.perf: 698
# samples kept whole).
rm -rf "$tmp/rt1"
"$collect" import --store "$tmp/rt1" --format perf --keep-samples 1d "$data/loop.perf" >/dev/null 2>&1 &&
	"$collect" compact --store "$tmp/rt1" >/dev/null 2>&1 || bad "loop.perf: import and compact for stats"
recent=$("$collect" stats --store "$tmp/rt1" | sed -n 's/^bytes: .* recent=\([0-9]*\) .*/\1/p')
check_recent() { [ -n "$recent" ] && [ "$recent" -gt 0 ]; }
if check_recent; then n=$((n + 1)); else bad "stats: 698 samples kept whole take recent=${recent:-?} bytes"; fi

# Bad input: error with FILE:LINE:, and the store keeps only what an
# earlier good import put there.
bad_inputs perf "$data/loop.perf" "$data/loop.folded.expected" "$data"/bad-*.perf

echo "$n perf import checks, $failures failed"
[ "$failures" -eq 0 ]

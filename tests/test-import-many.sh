#!/usr/bin/env bash
# test-import-many.sh — `import FILE...`: several files in one command.
#
# Checks, on profiles written by real tools (the committed Go debug=1 heap
# profile and pprof protos of tests/data/legacy, a perf script fixture):
#   - each file is its own atomic batch: a bad file in the middle is named
#     with its line, the files before it stay imported, the command stops
#     there and exits 1; --keep-going imports the rest and still exits 1;
#   - --one-batch is all or nothing: with a bad file the store is left
#     exactly as it was, without one it equals the separate imports;
#   - samples without a time of their own are placed at each file's
#     modification time, so a series of dumps is a time series that
#     --from/--to cut exactly; --time overrides it; pprof's own time_nanos
#     wins over both;
#   - one command over N files stores exactly what N commands store;
#   - the options that exclude each other are refused.
#   usage: test-import-many.sh BUILD_DIR        exit 0 pass, 1 fail
. "$(dirname "$0")/lib-import.sh"
data=$here/data

# export_all STORE [EXPORT OPTIONS...]: every event's folded lines, an
# event with none in the window left out.
export_all() {
	local st=$1 ev out
	shift
	for ev in $("$collect" stats --store "$st" 2>/dev/null | awk 'NR > 1 && NF == 9 { print $3 }' | sort -u); do
		out=$("$collect" export --store "$st" --event "$ev" "$@" 2>&1)
		[ -n "$out" ] && printf '== %s\n%s\n' "$ev" "$out"
	done
	return 0
}

# check NAME CMD...: one check.

heap=$data/legacy/go-heap.txt
t0=1764000000 # a minute boundary (divisible by 60)
mkdir -p "$tmp/in"
for i in 0 1 2; do
	cp "$heap" "$tmp/in/dump.$i.heap"
	touch -d "@$((t0 + 120 * i + 7))" "$tmp/in/dump.$i.heap"
done
printf 'heap profile: 1: 2 [3: 4] @ heapprofile\n1: 2 [3: 4] @ 0x1 0x2\nnot a sample\n' >"$tmp/in/bad.heap"
printf 'app;main;other 3\n' >"$tmp/in/good.folded"

# ---- a series of dumps becomes a time series ---------------------------------
rm -rf "$tmp/one"
"$collect" import --store "$tmp/one" "$tmp/in/dump.0.heap" >/dev/null 2>&1 ||
	bad "one dump: import failed"
export_all "$tmp/one" >"$tmp/one.folded"
rm -rf "$tmp/s"
check "three dumps in one command: exit 0" \
	"$collect" import --store "$tmp/s" "$tmp/in"/dump.*.heap
for i in 0 1 2; do
	from=$((t0 + 120 * i)) to=$((t0 + 120 * i + 60))
	export_all "$tmp/s" --from "$from" --to "$to" >"$tmp/win.$i"
	n=$((n + 1))
	same "$tmp/win.$i" "$tmp/one.folded" "dump $i: its minute [$from, $to) holds exactly one dump"
done
export_all "$tmp/s" --from $((t0 + 60)) --to $((t0 + 120)) >"$tmp/gap"
check "the minute between two dumps is empty" test "$(grep -vc '^==' "$tmp/gap")" = 0
# --time puts every file at one time
rm -rf "$tmp/s"
"$collect" import --store "$tmp/s" --time $((t0 + 600)) "$tmp/in"/dump.*.heap >/dev/null 2>&1
export_all "$tmp/s" --from $((t0 + 600)) --to $((t0 + 660)) >"$tmp/at"
export_all "$tmp/s" >"$tmp/all"
check "--time: every dump in its minute" cmp -s "$tmp/at" "$tmp/all"
check "--time: three dumps' weight" test "$(awk '!/^==/ { s += $NF } END { print s }' "$tmp/all")" = \
	"$(awk '!/^==/ { s += 3 * $NF } END { print s }' "$tmp/one.folded")"
# a pprof profile's own time_nanos wins over the file's time
rm -rf "$tmp/p1" "$tmp/p2"
cp "$data/legacy/heap.pb.gz" "$tmp/in/heap.pb.gz"
touch -d "@$t0" "$tmp/in/heap.pb.gz"
"$collect" import --store "$tmp/p1" "$tmp/in/heap.pb.gz" >/dev/null 2>&1
"$collect" import --store "$tmp/p2" "$data/legacy/heap.pb.gz" >/dev/null 2>&1
export_all "$tmp/p1" --from $t0 --to $((t0 + 60)) >"$tmp/p1.win"
check "pprof with time_nanos: not moved to the file's time" test "$(grep -vc '^==' "$tmp/p1.win")" = 0

# ---- each file its own batch; stop at the first failure ---------------------
rm -rf "$tmp/s"
n=$((n + 1))
if "$collect" import --store "$tmp/s" "$tmp/in/good.folded" "$tmp/in/bad.heap" \
	"$tmp/in/dump.0.heap" >"$tmp/out" 2>&1; then
	bad "a bad file in the middle: exit 0"
fi
check "the bad file is named with its line" grep -q "bad.heap:3: expected a heap sample" "$tmp/out"
check "the command says where it stopped" grep -q "stopped at .*bad.heap; 1 file(s) after it not read" "$tmp/out"
"$collect" export --store "$tmp/s" >"$tmp/got" 2>&1
check "the file before the bad one stays imported, the one after is not read" \
	test "$(cat "$tmp/got")" = "app;main;other 3"
# --keep-going
rm -rf "$tmp/s"
n=$((n + 1))
if "$collect" import --store "$tmp/s" --keep-going "$tmp/in/good.folded" "$tmp/in/bad.heap" \
	"$tmp/in/nonexistent" "$tmp/in/dump.0.heap" >"$tmp/out" 2>&1; then
	bad "--keep-going with bad files: exit 0"
fi
check "--keep-going: a missing file is named" grep -q "nonexistent: No such file" "$tmp/out"
check "--keep-going: the count of failures" grep -q "from 2 of 4 files into .*; 2 failed" "$tmp/out"
check "--keep-going: the good files are imported" \
	test "$("$collect" export --store "$tmp/s" --event inuse_space | awk '{ s += $NF } END { print s }')" = \
	"$("$collect" export --store "$tmp/one" --event inuse_space | awk '{ s += $NF } END { print s }')"
check "--keep-going: the folded file too" \
	test "$("$collect" export --store "$tmp/s" --event samples 2>/dev/null)" = "app;main;other 3"

# ---- --one-batch: all or nothing ---------------------------------------------
rm -rf "$tmp/s"
"$collect" import --store "$tmp/s" "$tmp/in/dump.0.heap" >/dev/null 2>&1
export_all "$tmp/s" >"$tmp/before"
n=$((n + 1))
if "$collect" import --store "$tmp/s" --one-batch "$tmp/in/dump.1.heap" "$tmp/in/good.folded" \
	"$tmp/in/bad.heap" >"$tmp/out" 2>&1; then
	bad "--one-batch with a bad file: exit 0"
fi
check "--one-batch: says nothing was imported" grep -q "nothing was imported" "$tmp/out"
export_all "$tmp/s" >"$tmp/after"
n=$((n + 1))
same "$tmp/after" "$tmp/before" "--one-batch with a bad file: the store changed"
rm -rf "$tmp/s" "$tmp/sep"
check "--one-batch: exit 0" "$collect" import --store "$tmp/s" --one-batch "$tmp/in"/dump.*.heap "$tmp/in/good.folded"
for f in "$tmp/in"/dump.*.heap "$tmp/in/good.folded"; do
	"$collect" import --store "$tmp/sep" "$f" >/dev/null 2>&1
done
export_all "$tmp/s" >"$tmp/a"
export_all "$tmp/sep" >"$tmp/b"
n=$((n + 1))
same "$tmp/a" "$tmp/b" "--one-batch: differs from separate imports"
for i in 0 1 2; do
	export_all "$tmp/s" --from $((t0 + 120 * i)) --to $((t0 + 120 * i + 60)) >"$tmp/win"
	n=$((n + 1))
	same "$tmp/win" "$tmp/one.folded" "--one-batch: dump $i is not at its own time"
done

# ---- one command over many files = one command per file ----------------------
mkdir -p "$tmp/many"
files=()
for i in $(seq 1 40); do
	case $((i % 4)) in
	0) src=$data/legacy/heap.pb.gz ;;
	1) src=$data/legacy/allocs.pb.gz ;;
	2) src=$data/pprof/cpu.pb.gz ;;
	3) src=$data/legacy/go-block.txt ;;
	esac
	f=$tmp/many/p$i.${src##*.}
	cp "$src" "$f"
	touch -d "@$((t0 + 60 * i))" "$f"
	files+=("$f")
done
rm -rf "$tmp/m1" "$tmp/m2"
check "40 files in one command" "$collect" import --store "$tmp/m1" "${files[@]}"
for f in "${files[@]}"; do
	"$collect" import --store "$tmp/m2" "$f" >/dev/null 2>&1 || bad "$f alone: import failed"
done
export_all "$tmp/m1" >"$tmp/a"
export_all "$tmp/m2" >"$tmp/b"
n=$((n + 1))
same "$tmp/a" "$tmp/b" "40 files: one command differs from 40 commands"
"$collect" stats --store "$tmp/m1" | awk 'NR > 1 && NF == 9 { print $1, $2, $3, $4, $5, $6 }' >"$tmp/a"
"$collect" stats --store "$tmp/m2" | awk 'NR > 1 && NF == 9 { print $1, $2, $3, $4, $5, $6 }' >"$tmp/b"
n=$((n + 1))
same "$tmp/a" "$tmp/b" "40 files: stats differ"

# ---- on a terminal: one progress line for the files, not a line each ------------
if command -v script >/dev/null; then
	rm -rf "$tmp/tty"
	script -q -e -c "$(printf '%q ' "$collect" import --store "$tmp/tty" "${files[@]}")" "$tmp/tty.log" >/dev/null 2>&1
	tr '\r' '\n' <"$tmp/tty.log" | sed 's/\x1b\[K//g' | grep -v '^$' | grep -v '^Script ' >"$tmp/tty.out"
	check "terminal: no per-file line for 40 files" test "$(grep -c ' from .*/p[0-9]*\.[a-z]* into ' "$tmp/tty.out")" = 0
	check "terminal: the last line sums the 40 files" \
		grep -q "^flamefs-collect: imported [0-9]* samples (.*) from 40 files into $tmp/tty\$" "$tmp/tty.out"
	check "terminal: a progress line counts the files, if one was shown" \
		test "$(grep -c -v -e '^flamefs-collect: ' -e '^\[[0-9]*/40\] [0-9.]* MB read, [0-9]* samples' "$tmp/tty.out")" = 0
else
	echo "SKIP (part): no script(1) for a terminal"
fi

# ---- refused option combinations ---------------------------------------------
n=$((n + 1))
if "$collect" import --store "$tmp/x" --one-batch --keep-going "$tmp/in/good.folded" >"$tmp/out" 2>&1; then
	bad "--one-batch --keep-going: accepted"
fi
grep -q "exclude each other" "$tmp/out" || bad "--one-batch --keep-going: no reason given"
n=$((n + 1))
if "$collect" import --store "$tmp/x" - - </dev/null >"$tmp/out" 2>&1; then
	bad "stdin twice: accepted"
fi
grep -q "standard input (-) can be imported once" "$tmp/out" || bad "stdin twice: no reason given"
check "no store is made by refused options" test ! -e "$tmp/x"

echo "$n multi-file import checks, $failures failed"
[ "$failures" -eq 0 ]

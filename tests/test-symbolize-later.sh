#!/usr/bin/env bash
# test-symbolize-later.sh — frames named after they were stored (issue #42):
# a program built by the test with -g, its debug part split off with
# objcopy --only-keep-debug into a .build-id tree and the binary stripped,
# run under perf record -g (a fixed number of loop iterations, so the
# verdict does not depend on the machine's load); then:
#   - import: its frames are unnamed ("[prog]", one node per level in the
#     view), each kept at a function start (stats says nothing of it: the
#     folded export shows no function of the program);
#   - symbolize --dry-run changes nothing; symbolize --debug-dir names
#     every frame in one commit, and the folded export equals, byte for
#     byte, that of the same perf.data imported while the unstripped binary
#     was in place; a mount open across the symbolize shows the names
#     after its refresh, its totals unchanged;
#   - a debug file named by its build id directly in the directory
#     (no .build-id tree) names them too;
#   - a real `debuginfod -F DIR` on a local port (DEBUGINFOD_URLS, a
#     private DEBUGINFOD_CACHE_PATH) names them with no --debug-dir (SKIP
#     of that part without debuginfod);
#   - nothing to name in a module without debug info: the summary says so;
#   - the same perf.data as perf script --show-mmap-events text: its
#     unnamed frames are placed in the file (the end line points at
#     symbolize), symbolize --debug-dir names them and the folded export
#     equals the reference byte for byte;
#   - the plain perf script text (no mapping records) of the PIE program,
#     whose pcs perf prints as file offsets, read against the file at the
#     path: the same, with no notice; the same text with the program's
#     pcs turned into addresses (as older perf printed them): one notice
#     naming the file and --show-mmap-events, nothing for symbolize;
#   - plain perf script text of the program built -no-pie (ET_EXEC), its
#     pcs as perf prints them (offsets) and as addresses: symbolize names
#     every frame, folded equal to its perf.data import with symbols.
#   usage: test-symbolize-later.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
. "$(dirname "$0")/lib-stripped.sh"
build=${1:?usage: test-symbolize-later.sh BUILD_DIR}
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
e2e_setup symbolize-later

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
pid=
dpid=
e2e_on_exit() {
	[ -n "$pid" ] && { fusermount3 -u -z "$mnt" 2>/dev/null; kill "$pid" 2>/dev/null; }
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
}

stripped_setup

# import while stripped: unnamed
"$collect" import --store "$store" "$tmp/perf.data" 2>/dev/null
"$collect" export --store "$store" --format folded >"$tmp/before.folded"
check "imported stripped: no function of the program is named" \
	test -z "$(grep -E ';(leaf_a|leaf_b|middle|main)( |;)' "$tmp/before.folded")"
check "... its frames are [prog]" grep -q "\[prog\];\[prog\]" "$tmp/before.folded"
check "... the same total as the reference" \
	test "$(folded_total "$tmp/before.folded")" = "$(folded_total "$tmp/ref.folded")"

mkdir -p "$mnt"
"$flamefs" -f "$store" "$mnt" 2>"$tmp/flamefs.err" &
pid=$!
for _ in $(seq 100); do [ -e "$mnt/prog" ] && break; sleep 0.1; done
v=$(ls "$mnt/prog" | head -1)
total_before=$(cat "$mnt/prog/$v/total")
check "the mount shows one [prog] node under __libc_start_call_main" \
	test "$(ls "$mnt/prog/$v/__libc_start_call_main" | grep -c '^\[prog\]$')" = 1

# a dry run changes nothing
"$collect" symbolize --store "$store" --debug-dir "$tmp/debug" --dry-run >"$tmp/dry.out" 2>"$tmp/dry.err"
check "symbolize --dry-run says what it would name" grep -q "would name 4 of 4 unnamed frames" "$tmp/dry.err"
"$collect" export --store "$store" --format folded >"$tmp/dry.folded"
check "... and names nothing" cmp -s "$tmp/dry.folded" "$tmp/before.folded"

# symbolize from the .build-id tree
"$collect" symbolize --store "$store" --debug-dir "$tmp/debug" 2>"$tmp/sym.err"
check "symbolize --debug-dir: every frame named ($(cat "$tmp/sym.err" | head -1))" \
	grep -q "named 4 of 4 unnamed frames in 1 of 1 modules; 0 modules still" "$tmp/sym.err"
"$collect" export --store "$store" --format folded >"$tmp/after.folded"
check "the folded export equals the one imported with symbols, byte for byte" \
	cmp "$tmp/after.folded" "$tmp/ref.folded"
seen=
for _ in $(seq 50); do
	[ -d "$mnt/prog/$v/__libc_start_call_main/main/middle/leaf_a" ] && { seen=1; break; }
	sleep 0.2
done
check "the mount open across symbolize shows the names" test -n "$seen"
check "... its total unchanged" test "$(cat "$mnt/prog/$v/total")" = "$total_before"
check "... and its folded equals the reference's" \
	cmp -s <(cat "$mnt/prog/$v/folded" | sort) <(grep "^prog;" "$tmp/ref.folded" | sort)
check "a second symbolize finds nothing left to name" \
	sh -c "'$collect' symbolize --store '$store' --debug-dir '$tmp/debug' 2>&1 | grep -q 'named 0 of 0'"

# a debug file directly in a directory, found by its build id
"$collect" import --store "$tmp/flat-store" "$tmp/perf.data" 2>/dev/null
"$collect" symbolize --store "$tmp/flat-store" --debug-dir "$tmp/flat" 2>"$tmp/flat.err"
"$collect" export --store "$tmp/flat-store" --format folded >"$tmp/flat.folded"
check "a debug file of that build id directly in --debug-dir names them too" \
	cmp -s "$tmp/flat.folded" "$tmp/ref.folded"

# nothing found: said so
"$collect" import --store "$tmp/none" "$tmp/perf.data" 2>/dev/null
"$collect" symbolize --store "$tmp/none" --debug-dir "$tmp/flat-store" 2>"$tmp/none.err"
check "without debug info: 0 named, the module listed with its build id" \
	grep -q "named 0 of 4 unnamed frames in 0 of 1 modules; 1 modules still without names: $tmp/prog ($bid)" "$tmp/none.err"

# perf script text with --show-mmap-events: frames placed in the file
perf script -i "$tmp/perf.data" --show-mmap-events >"$tmp/mmap.perf" 2>/dev/null
check "perf script --show-mmap-events prints the program's mapping" \
	grep -q "PERF_RECORD_MMAP2* .*x.* $tmp/prog\$" "$tmp/mmap.perf"
"$collect" import --store "$tmp/text" "$tmp/mmap.perf" 2>"$tmp/text.err"
"$collect" export --store "$tmp/text" --format folded >"$tmp/text-before.folded"
check "perf script text imported: no function of the program is named" \
	test -z "$(grep -E ';(leaf_a|leaf_b|middle|main)( |;)' "$tmp/text-before.folded")"
check "... its frames are [prog], the total the reference's" \
	test "$(folded_total "$tmp/text-before.folded")" = "$(folded_total "$tmp/ref.folded")" -a \
	-n "$(grep "\[prog\];\[prog\]" "$tmp/text-before.folded")"
check "... and the end line points at symbolize" \
	grep -q "run flamefs-collect symbolize (perf script text keeps offsets only where the files it names are here, or when printed with --show-mmap-events" "$tmp/text.err"
"$collect" symbolize --store "$tmp/text" --debug-dir "$tmp/debug" 2>"$tmp/text-sym.err"
check "symbolize names every frame of the text import ($(head -1 "$tmp/text-sym.err"))" \
	grep -q "named 4 of 4 unnamed frames in 1 of 1 modules; 0 modules still" "$tmp/text-sym.err"
"$collect" export --store "$tmp/text" --format folded >"$tmp/text.folded"
check "... and its folded export equals the reference, byte for byte" \
	cmp "$tmp/text.folded" "$tmp/ref.folded"

# the same text without mapping records: perf (5.1 and later) prints a file's
# pcs as offsets in it, which the stripped program at its path places
perf script -i "$tmp/perf.data" >"$tmp/plain.perf" 2>/dev/null
check "the plain text has no mapping records and [unknown] ($tmp/prog) frames" \
	test -z "$(grep PERF_RECORD "$tmp/plain.perf")" -a -n "$(grep -F "[unknown] ($tmp/prog)" "$tmp/plain.perf")"
check "the test program is PIE" sh -c "readelf -h '$tmp/prog' | grep -q 'DYN'"
"$collect" import --store "$tmp/plain" "$tmp/plain.perf" 2>"$tmp/plain.err"
"$collect" export --store "$tmp/plain" --format folded >"$tmp/plain-before.folded"
check "plain perf script text imported: no function of the program is named, frames [prog]" \
	test -z "$(grep -E ';(leaf_a|leaf_b|middle|main)( |;)' "$tmp/plain-before.folded")" -a \
	-n "$(grep "\[prog\];\[prog\]" "$tmp/plain-before.folded")"
check "... the total the reference's" \
	test "$(folded_total "$tmp/plain-before.folded")" = "$(folded_total "$tmp/ref.folded")"
check "... and no notice of pcs that are addresses" test -z "$(grep "are addresses" "$tmp/plain.err")"
"$collect" symbolize --store "$tmp/plain" --debug-dir "$tmp/debug" 2>"$tmp/plain-sym.err"
check "symbolize names every frame of the plain text import ($(head -1 "$tmp/plain-sym.err"))" \
	grep -q "named 4 of 4 unnamed frames in 1 of 1 modules; 0 modules still" "$tmp/plain-sym.err"
"$collect" export --store "$tmp/plain" --format folded >"$tmp/plain.folded"
check "... and its folded export equals the reference, byte for byte" \
	cmp "$tmp/plain.folded" "$tmp/ref.folded"

# older perf printed addresses: the same text with the program's pcs moved
# to where its executable mapping lay (from the MMAP2 record)
read -r mstart mpgoff < <(perl -ne 'BEGIN { $p = shift } if (/PERF_RECORD_MMAP2? \S+: \[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ 0x([0-9a-f]+) .*r-xp \Q$p\E$/) { print "$1 $2\n"; exit }' "$tmp/prog" <"$tmp/mmap.perf")
check "the program's executable mapping lies at 0x$mstart, file offset 0x$mpgoff" test -n "$mstart" -a -n "$mpgoff"
perl -pe 'BEGIN { ($s, $o, $p) = (hex(shift), hex(shift), shift) }
	s/^(\s*)([0-9a-f]+)( \[unknown\] \(\Q$p\E\))$/sprintf("%s%x%s", $1, hex($2) - $o + $s, $3)/e' \
	"${mstart:-0}" "${mpgoff:-0}" "$tmp/prog" <"$tmp/plain.perf" >"$tmp/addr.perf"
"$collect" import --store "$tmp/addr" "$tmp/addr.perf" 2>"$tmp/addr.err"
check "pcs that are addresses: the import says so once, naming the file ($(grep -o 'pcs of.*' "$tmp/addr.err"))" \
	test "$(grep -c "pcs of 1 position-independent file (first $tmp/prog) are addresses: without mapping records their unnamed frames keep no offset for symbolize (print with perf script --show-mmap-events)" "$tmp/addr.err")" = 1
"$collect" symbolize --store "$tmp/addr" --debug-dir "$tmp/debug" 2>"$tmp/addr-sym.err"
check "... symbolize finds nothing it can name ($(head -1 "$tmp/addr-sym.err"))" \
	grep -q "named 0 of 0 unnamed frames" "$tmp/addr-sym.err"
"$collect" export --store "$tmp/addr" --format folded >"$tmp/addr.folded"
check "... its folded export is the unnamed one" cmp "$tmp/addr.folded" "$tmp/plain-before.folded"

# a real debuginfod server serving the .build-id tree
if command -v debuginfod >/dev/null; then
	port=$((20000 + RANDOM % 20000))
	debuginfod -F "$tmp/debug" -p "$port" -d "$tmp/debuginfod.sqlite" >"$tmp/debuginfod.log" 2>&1 &
	dpid=$!
	up=
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/buildid/$bid/debuginfo" -o /dev/null 2>/dev/null && { up=1; break; }
		sleep 0.2
	done
	check "debuginfod serves the debug file by build id" test -n "$up"
	"$collect" import --store "$tmp/dfd" "$tmp/perf.data" 2>/dev/null
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$tmp/dcache" DEBUGINFOD_TIMEOUT=10 \
		"$collect" symbolize --store "$tmp/dfd" 2>"$tmp/dfd.err"
	"$collect" export --store "$tmp/dfd" --format folded >"$tmp/dfd.folded"
	check "symbolize through debuginfod (DEBUGINFOD_URLS) names them: $(head -1 "$tmp/dfd.err")" \
		cmp -s "$tmp/dfd.folded" "$tmp/ref.folded"
	check "... and the debug file landed in DEBUGINFOD_CACHE_PATH" \
		test -n "$(find "$tmp/dcache" -name debuginfo 2>/dev/null)"
else
	skip "debuginfod is not installed: the debuginfod part"
fi

# a fixed-position executable (-no-pie): plain perf script text of it
np=$tmp/np
mkdir -p "$np"
stripped_build "$np" -no-pie
check "the -no-pie program is ET_EXEC" sh -c "readelf -h '$np/prog' | grep -q 'EXEC'"
perf record -q -g -o "$np/perf.data" "$np/prog" 1000000 40 >/dev/null 2>&1
cp "$np/prog" "$np/prog.stripped"
cp "$np/prog.full" "$np/prog"
"$collect" import --store "$np/ref" "$np/perf.data" 2>/dev/null
"$collect" export --store "$np/ref" --format folded >"$np/ref.folded"
cp "$np/prog.stripped" "$np/prog"
check "the -no-pie reference names leaf_a and leaf_b under middle" \
	grep -q "main;middle;leaf_a " "$np/ref.folded"
perf script -i "$np/perf.data" >"$np/plain.perf" 2>/dev/null
"$collect" import --store "$np/plain" "$np/plain.perf" 2>"$np/plain.err"
"$collect" export --store "$np/plain" --format folded >"$np/before.folded"
check "-no-pie plain text imported: nothing of the program named, the reference's total" \
	test -z "$(grep -E ';(leaf_a|leaf_b|middle|main)( |;)' "$np/before.folded")" -a \
	"$(folded_total "$np/before.folded")" = "$(folded_total "$np/ref.folded")"
"$collect" symbolize --store "$np/plain" --debug-dir "$np/debug" 2>"$np/sym.err"
check "symbolize names every frame of it ($(head -1 "$np/sym.err"))" \
	grep -q "named 4 of 4 unnamed frames in 1 of 1 modules; 0 modules still" "$np/sym.err"
"$collect" export --store "$np/plain" --format folded >"$np/after.folded"
check "... and its folded export equals the -no-pie reference, byte for byte" \
	cmp "$np/after.folded" "$np/ref.folded"
# older perf printed a fixed-position program's pcs as addresses: placed too
perf script -i "$np/perf.data" --show-mmap-events >"$np/mmap.perf" 2>/dev/null
read -r mstart mpgoff < <(perl -ne 'BEGIN { $p = shift } if (/PERF_RECORD_MMAP2? \S+: \[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ 0x([0-9a-f]+) .*r-xp \Q$p\E$/) { print "$1 $2\n"; exit }' "$np/prog" <"$np/mmap.perf")
check "the -no-pie program's executable mapping lies at 0x$mstart, file offset 0x$mpgoff" test -n "$mstart" -a -n "$mpgoff"
perl -pe 'BEGIN { ($s, $o, $p) = (hex(shift), hex(shift), shift) }
	s/^(\s*)([0-9a-f]+)( \[unknown\] \(\Q$p\E\))$/sprintf("%s%x%s", $1, hex($2) - $o + $s, $3)/e' \
	"${mstart:-0}" "${mpgoff:-0}" "$np/prog" <"$np/plain.perf" >"$np/addr.perf"
check "... its pcs turned into addresses" sh -c "! cmp -s '$np/addr.perf' '$np/plain.perf'"
"$collect" import --store "$np/addr" "$np/addr.perf" 2>"$np/addr.err"
check "-no-pie pcs that are addresses: no notice" test -z "$(grep "are addresses" "$np/addr.err")"
"$collect" symbolize --store "$np/addr" --debug-dir "$np/debug" 2>"$np/addr-sym.err"
"$collect" export --store "$np/addr" --format folded >"$np/addr.folded"
check "... symbolize names every frame ($(head -1 "$np/addr-sym.err")), folded equal to the reference" \
	cmp "$np/addr.folded" "$np/ref.folded"
finish

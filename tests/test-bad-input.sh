#!/usr/bin/env bash
# test-bad-input.sh — the bad-input catalogue of flamefs-collect import:
# truncated files, binary garbage, NUL bytes, counts past 64 bits, lines
# over 1 MB, non-UTF-8 names, stacks 10,000 frames deep, pprof ids that
# point nowhere, empty files, and the limits (collector/import/README.md):
# names cut at 64 KiB, stacks at 16,384 frames or 1 MiB of names, control
# bytes in events and units, gzip bombs and small files with huge stacks
# refused or cut within a bounded RSS (GNU time's %M).  Big inputs are
# generated here; the small pprof ones are in tests/data/bad-input
# (make-pprof.py).
#
# Each case either stores exactly (the export is compared byte for byte)
# or is refused: exit status 1, a message "flamefs-collect: FILE:LINE: …"
# (pprof: "FILE: <where>: …") saying what was expected, the store that
# already held data unchanged (stats and every event's export identical)
# and an empty store left empty.  An exit status of 128 or more, or any
# sanitizer report, fails the case.  The deep stack is also mounted with
# flamefs when /dev/fuse is there.
#   usage: tests/test-bad-input.sh BUILD_DIR     (exit 0 pass, 1 fail)
. "$(dirname "$0")/lib-import.sh"
data=$here/data/bad-input
flamefs=$build/fs/flamefs
in=$tmp/in
mkdir -p "$in"

# ---- the store that holds earlier data ---------------------------------
# basic.folded (app, samples/count) and loop.perf (loop, cpu-clock in
# nanoseconds); compacted, so that reopening it changes nothing on disk.
base=$tmp/base
"$collect" import --store "$base" "$here/data/folded/basic.folded" >/dev/null 2>&1 &&
	"$collect" import --store "$base" "$here/data/perf/loop.perf" >/dev/null 2>&1 &&
	"$collect" compact --store "$base" >/dev/null 2>&1 ||
	{ bad "cannot build the base store"; exit 1; }

# snapshot STORE: what must not change: the series table and every
# event's folded and pprof export.  With FLAMEFS_BAD_INPUT_EXPORTS=0 (the
# sanitizer stage of tests/run.sh, where each of these five commands
# costs a sanitized start; the exports of an unchanged store are the same
# code path every time, and stage 1 compares them) the series table only.
snapshot() {
	"$collect" stats --store "$1" 2>&1 | grep -v -e '^store on disk' -e '^bytes:'
	[ "${FLAMEFS_BAD_INPUT_EXPORTS:-1}" != 0 ] || return 0
	for ev in samples cpu-clock; do
		echo "== $ev"
		"$collect" export --store "$1" --format folded --event "$ev" 2>&1
		"$collect" export --store "$1" --format pprof --event "$ev" 2>&1 | zcat | md5sum
	done
}
snapshot "$base" >"$tmp/base.snap"

# crashed WHAT RC OUTFILE: true (and a failure) on a crash or sanitizer report.
crashed() {
	if [ "$2" -ge 128 ] || grep -q -e 'Sanitizer' -e 'runtime error:' -e 'LeakSanitizer' "$3"; then
		bad "$1: crashed (exit $2)"
		head -20 "$3"
		return 0
	fi
	return 1
}

# refused CASE WHERE FILE [IMPORT_ARGS...]: FILE must be refused with exit
# 1 and "flamefs-collect: FILE WHERE" (WHERE an extended regex for what
# follows the name, e.g. ':12: expected'), changing nothing, both in the
# base store and (unless base_only is set) in an empty one.
refused() {
	local case=$1 where=$2 file=$3 name rc
	shift 3
	name=$(basename "$file")
	n=$((n + 1))
	rm -rf "$tmp/s" "$tmp/e"
	cp -a "$base" "$tmp/s"
	"$collect" import --store "$tmp/s" "$@" "$file" >"$tmp/out" 2>&1
	rc=$?
	crashed "$case" "$rc" "$tmp/out" && return
	if [ "$rc" -ne 1 ]; then
		bad "$case: exit status $rc, expected 1"
		head -5 "$tmp/out"
		return
	fi
	local re="^flamefs-collect: (.*/)?${name//./\\.}$where"
	if ! grep -E -q -e "$re" "$tmp/out"; then
		bad "$case: message does not match $re"
		head -5 "$tmp/out"
		return
	fi
	snapshot "$tmp/s" >"$tmp/s.snap"
	if ! cmp -s "$tmp/s.snap" "$tmp/base.snap"; then
		bad "$case: the store changed"
		diff "$tmp/base.snap" "$tmp/s.snap" | head -20
		return
	fi
	if [ -z "${base_only:-}" ]; then
		"$collect" import --store "$tmp/e" "$@" "$file" >"$tmp/out2" 2>&1
		rc=$?
		crashed "$case (empty store)" "$rc" "$tmp/out2" && return
		[ "$rc" -eq 1 ] || { bad "$case: exit status $rc into an empty store"; return; }
		if [ -d "$tmp/e" ] && [ -n "$("$collect" export --store "$tmp/e" 2>/dev/null)" ]; then
			bad "$case: a refused import left stacks in an empty store"
			return
		fi
	fi
	ok "$case: $(grep -m1 -E -e "$re" "$tmp/out" | cut -c1-200)"
}

# stored CASE EXPECTED FILE [IMPORT_ARGS...] [-- EXPORT_ARGS...]: FILE must
# import into a fresh store, and the folded export must equal EXPECTED.
stored() {
	local case=$1 expected=$2 file=$3 rc
	shift 3
	local iargs=() eargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do iargs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	eargs=("$@")
	n=$((n + 1))
	rm -rf "$tmp/s"
	"$collect" import --store "$tmp/s" "${iargs[@]}" "$file" >"$tmp/out" 2>&1
	rc=$?
	crashed "$case" "$rc" "$tmp/out" && return
	if [ "$rc" -ne 0 ]; then
		bad "$case: import failed (exit $rc): $(head -3 "$tmp/out")"
		return
	fi
	# notice=REGEX: a line the import must print (a limit's notice)
	if [ -n "${notice:-}" ] && ! grep -E -q -e "$notice" "$tmp/out"; then
		bad "$case: no line matches $notice: $(head -3 "$tmp/out")"
		return
	fi
	"$collect" export --store "$tmp/s" --format folded "${eargs[@]}" >"$tmp/got" 2>"$tmp/out"
	rc=$?
	crashed "$case (export)" "$rc" "$tmp/out" && return
	if ! cmp -s "$tmp/got" "$expected"; then
		bad "$case: export differs from what was imported"
		cmp "$tmp/got" "$expected" | head -3
		return
	fi
	ok "$case: stored exactly ($(stat -c %s "$file") bytes in, $(stat -c %s "$tmp/got") bytes of folded out)"
}

# A header, one stack line per argument (callee first) and a blank line.
perf_sample() { # COMM PERIOD FRAME...
	local comm=$1 period=$2
	shift 2
	printf '%s 100 1000.000001: %s cpu-clock: \n' "$comm" "$period"
	for f in "$@"; do printf '\t    4004d6 %s+0x1d (/usr/bin/app)\n' "$f"; done
	printf '\n'
}

# ---- truncated files ---------------------------------------------------
perf=$here/data/perf/loop.perf
# byte offset of the start of line N of a file
offset() { head -n "$(($2 - 1))" "$1" | wc -c; }
stack_line=$(grep -n -m 40 $'^\t' "$perf" | tail -1 | cut -d: -f1)
# cut inside the function name (the pc column is indented 12 or more bytes)
half=$(($(sed -n "${stack_line}p" "$perf" | wc -c) * 2 / 3))
head -c "$(($(offset "$perf" "$stack_line") + half))" "$perf" >"$in/cut-mid-stack.perf"
refused "perf cut in the middle of a stack line" ":$stack_line: expected .*truncated" \
	"$in/cut-mid-stack.perf"
header_line=$(grep -n -m 20 '^loop' "$perf" | tail -1 | cut -d: -f1)
head -c "$(($(offset "$perf" "$header_line") + 20))" "$perf" >"$in/cut-mid-header.perf"
refused "perf cut in the middle of a sample header" ":$header_line: expected a complete sample header.*truncated" \
	"$in/cut-mid-header.perf"
head -c "$(($(offset "$perf" "$header_line") + 8))" "$perf" >"$in/cut-early-header.perf"
refused "perf cut just after a header's process name" ":$header_line: expected .*truncated" \
	"$in/cut-early-header.perf"
# Cut at the end of a line: perf text has no length to check against, so
# this is a shorter recording whose last stack lost its callers.
{ perf_sample app 10 leaf mid main; perf_sample app 5 leaf mid; } >"$in/cut-at-line-end.perf"
head -c -1 "$in/cut-at-line-end.perf" >"$in/cut-at-line-end2.perf"
printf 'app;main;mid;leaf 10\napp;mid;leaf 5\n' >"$tmp/cut-at-line-end.expected"
stored "perf cut at the end of a stack line (a shorter stack, as documented)" \
	"$tmp/cut-at-line-end.expected" "$in/cut-at-line-end2.perf" --format perf -- --event cpu-clock

gz=$here/data/pprof/cpu.pb.gz
gzlen=$(stat -c %s "$gz")
for cut in 10 $((gzlen / 4)) $((gzlen / 2)) $((gzlen - 9)) $((gzlen - 1)); do
	head -c "$cut" "$gz" >"$in/cut-$cut.pb.gz"
	refused "pprof gzip cut at byte $cut of $gzlen" ': gzip data is truncated' "$in/cut-$cut.pb.gz"
done
zcat "$gz" >"$in/cpu.pb"
pblen=$(stat -c %s "$in/cpu.pb")
for cut in 3 $((pblen / 3)) $((pblen / 2)) $((pblen - 1)); do
	head -c "$cut" "$in/cpu.pb" >"$in/cut-$cut.pb"
	refused "pprof protobuf cut at byte $cut of $pblen" ': expected a pprof profile' \
		"$in/cut-$cut.pb" --format pprof
done
# every cut of the uncompressed profile: none may crash or be stored.  One
# import --keep-going takes them all (each file is parsed on its own and
# refused on its own, with its message), into a store that must stay empty.
n=$((n + 1))
bad_cut=
cuts=()
mkdir -p "$in/cuts"
for ((cut = 1; cut < pblen; cut += 7)); do
	head -c "$cut" "$in/cpu.pb" >"$in/cuts/cut-$cut.pb"
	cuts+=("$in/cuts/cut-$cut.pb")
done
rm -rf "$tmp/c"
"$collect" import --store "$tmp/c" --format pprof --keep-going "${cuts[@]}" >"$tmp/out" 2>&1
rc=$?
crashed "pprof protobuf cut at every 7th byte" "$rc" "$tmp/out" && bad_cut=" (crashed)"
[ "$rc" -eq 1 ] || bad_cut="$bad_cut (exit $rc, expected 1)"
for ((cut = 1; cut < pblen; cut += 7)); do
	grep -q "^flamefs-collect: .*/cut-$cut\.pb: " "$tmp/out" || bad_cut="$bad_cut $cut(no message)"
done
if [ -d "$tmp/c" ] && [ -n "$("$collect" export --store "$tmp/c" 2>/dev/null)" ]; then
	bad_cut="$bad_cut (stacks stored)"
fi
if [ -z "$bad_cut" ]; then
	ok "pprof protobuf cut at every 7th byte: ${#cuts[@]} cuts, each refused with a message, nothing stored"
else
	bad "pprof protobuf cuts not refused cleanly:$bad_cut"
	head -5 "$tmp/out"
fi

# ---- binary garbage and NUL bytes --------------------------------------
awk 'BEGIN { srand(42); for (i = 0; i < 65536; i++) printf "%c", int(rand() * 255) + 1 }' \
	>"$in/garbage.bin"
refused "binary garbage, detected format" ': (expected|[0-9]+: expected|gzip)' "$in/garbage.bin"
refused "binary garbage as perf" ':[0-9]+: expected' "$in/garbage.bin" --format perf
refused "binary garbage as folded" ':[0-9]+: expected' "$in/garbage.bin" --format folded
refused "binary garbage as pprof" ': expected a pprof profile' "$in/garbage.bin" --format pprof
printf '\x1f\x8b\x08\x00' >"$in/gzip-garbage.pb.gz"
cat "$in/garbage.bin" >>"$in/gzip-garbage.pb.gz"
refused "gzip header then garbage" ': (expected gzip data|gzip data is truncated)' "$in/gzip-garbage.pb.gz"
# bash strings cannot hold NUL: write it with printf
{ perf_sample app 1 leaf main; printf 'app 100 1000.000001: 1 cpu-clock: \n\t    4004d6 le\0af+0x1d (/usr/bin/app)\n\n'; } >"$in/nul.perf"
refused "perf NUL byte in a stack line" ':6: expected a sample header or a stack line, got ".*\\x00' "$in/nul.perf"
{ perf_sample app 1 leaf main; printf 'ap\0p 100 1000.000001: 1 cpu-clock: \n\t    4004d6 leaf+0x1d (/usr/bin/app)\n\n'; } >"$in/nul-header.perf"
refused "perf NUL byte in a header" ':5: expected' "$in/nul-header.perf"
printf 'app;main 1\napp;ma\0in 2\n' >"$in/nul.folded"
refused "folded NUL byte in a frame" ':2: expected' "$in/nul.folded"
printf 'app;main 1\n\0\0\0\0\n' >"$in/nuls.folded"
refused "pprof NUL byte in a function name" ': string 7 \(at byte [0-9]+ of the protobuf\) holds a NUL byte' \
	"$data/bad-nul-name.pb"
refused "folded line of NUL bytes" ':2: expected' "$in/nuls.folded" --format folded

# ---- counts past 64 bits -----------------------------------------------
printf 'app;main;f 18446744073709551616\n' >"$in/count-2-64.folded"
refused "folded count 2^64" ':1: expected a count below 2\^64' "$in/count-2-64.folded"
printf 'app;main;f 99999999999999999999999999\n' >"$in/count-huge.folded"
refused "folded count of 26 digits" ':1: expected a count below 2\^64' "$in/count-huge.folded"
printf 'app;main;f 18446744073709551615\n' >"$in/count-max.folded"
printf 'app;main;f 18446744073709551615\n' >"$tmp/count-max.expected"
stored "folded count 2^64 - 1" "$tmp/count-max.expected" "$in/count-max.folded"
printf 'app;main;f 18446744073709551615\napp;main;g 1\n' >"$in/count-sum.folded"
refused "folded counts summing past 2^64 - 1 across lines" ':2: expected counts that add up to less than 2\^64' \
	"$in/count-sum.folded"
printf 'app;main;f 9223372036854775808\nother;x 9223372036854775808\napp;main;f 9223372036854775807\n' \
	>"$in/count-sum-ok.folded"
printf 'app;main;f 18446744073709551615\n' >"$tmp/count-sum-ok.expected"
stored "folded counts summing to exactly 2^64 - 1 (another binary's in between)" \
	"$tmp/count-sum-ok.expected" "$in/count-sum-ok.folded" -- --binary app
perf_sample app 18446744073709551616 leaf main >"$in/period-2-64.perf"
refused "perf period 2^64" ':1: period 18446744073709551616 does not fit in 64 bits' "$in/period-2-64.perf"
perf_sample app 18446744073709551615 leaf main >"$in/period-max.perf"
printf 'app;main;leaf 18446744073709551615\n' >"$tmp/period-max.expected"
stored "perf period 2^64 - 1" "$tmp/period-max.expected" "$in/period-max.perf" -- --event cpu-clock
{ perf_sample app 9223372036854775808 leaf main; perf_sample app 9223372036854775808 other main; } \
	>"$in/period-sum.perf"
refused "perf periods summing past 2^64 - 1" ':5: expected counts that add up to less than 2\^64' \
	"$in/period-sum.perf"
printf 'app 100 99999999999999.000001: 1 cpu-clock: \n\t    4004d6 leaf (/usr/bin/app)\n\n' \
	>"$in/time-far.perf"
refused "perf sample time beyond the store's buckets" ':1: sample time 99999999999999 s is out of range' \
	"$in/time-far.perf"
printf 'app 100 99999999999999999999.000001: 1 cpu-clock: \n\t    4004d6 leaf (/usr/bin/app)\n\n' \
	>"$in/time-2-64.perf"
refused "perf sample time past 64 bits" ':1: sample time does not fit in 64 bits' "$in/time-2-64.perf"
# Across imports: a commit that would take a series' totals past 2^64 - 1
# is refused whole, the store unchanged; the view's sums across series
# refuse the whole tree (export names the way out).
n=$((n + 1))
rm -rf "$tmp/x"
printf 'app;main;f 18446744073709551615\n' >"$in/total-max.folded"
printf 'app;main;g 1\n' >"$in/total-one.folded"
if "$collect" import --store "$tmp/x" "$in/total-max.folded" >/dev/null 2>&1 &&
	"$collect" export --store "$tmp/x" >"$tmp/x.before" 2>/dev/null &&
	! "$collect" import --store "$tmp/x" "$in/total-one.folded" >/dev/null 2>"$tmp/out" &&
	grep -q "commit failed: series app/default/samples: its total samples would pass 2^64 - 1" "$tmp/out" &&
	"$collect" export --store "$tmp/x" >"$tmp/x.after" 2>/dev/null && cmp -s "$tmp/x.before" "$tmp/x.after" &&
	"$collect" stats --store "$tmp/x" | grep -q ' 18446744073709551615 '; then
	ok "a second import that would take a series' total past 2^64 - 1 is refused whole: $(cut -c1-160 "$tmp/out")"
else
	bad "a series' total past 2^64 - 1 across imports: $(head -c 300 "$tmp/out")"
fi
n=$((n + 1))
rm -rf "$tmp/x"
printf 'a;f 9223372036854775808\n' >"$in/half-a.folded"
printf 'b;f 9223372036854775808\n' >"$in/half-b.folded"
if "$collect" import --store "$tmp/x" "$in/half-a.folded" >/dev/null 2>&1 &&
	"$collect" import --store "$tmp/x" "$in/half-b.folded" >/dev/null 2>&1 &&
	! "$collect" export --store "$tmp/x" >"$tmp/x.out" 2>"$tmp/out" && [ ! -s "$tmp/x.out" ] &&
	grep -q "the counts of these 2 series add up to more than 2^64 - 1" "$tmp/out" &&
	[ "$("$collect" export --store "$tmp/x" --binary b 2>/dev/null)" = "b;f 9223372036854775808" ]; then
	ok "the view's sums across two series past 2^64 - 1 refuse the whole tree: $(cut -c1-160 "$tmp/out")"
else
	bad "the view's sums across series past 2^64 - 1: $(head -c 300 "$tmp/out")"
fi
printf 'app;main 1\n' >"$in/time-far.folded"
refused "folded --time beyond the store's buckets" ':1: sample time .* is out of range' \
	"$in/time-far.folded" --time 999999999999999
stored "pprof value 2^63 - 1" "$data/value-max.cpu.folded.expected" "$data/value-max.pb" -- --event cpu
refused "pprof values summing past 2^64 - 1" ': sample 2: the "cpu" values add up to more than 2\^64 - 1' \
	"$data/bad-value-sum.pb"
printf 'loop;main 1\n' >"$in/unit.folded"
# (into an empty store this one is fine: the unit clashes with loop.perf's)
base_only=1 refused "folded into a series the store holds in another unit" ':1: series loop/default/cpu-clock has another unit' \
	"$in/unit.folded" --event cpu-clock

# ---- lines over 1 MB ---------------------------------------------------
big=$(head -c 2097152 /dev/zero | tr '\0' 'x')
{
	printf 'app 100 1000.000001: 3 cpu-clock: \n\t    4004d6 %s+0x1d (/usr/bin/app)\n' "$big"
	printf '\t    4004d0 main+0x1 (/usr/bin/app)\n\n'
} >"$in/long-line.perf"
# A name over IMPORT_MAX_NAME (64 KiB) keeps its first 65,531 bytes and
# "[cut]" (collector/import/README.md, Limits).
cut=${big:0:65531}[cut]
printf 'app;main;%s 3\n' "$cut" >"$tmp/long-line.perf.expected"
stored "perf stack line of 2 MB (its name cut to 64 KiB)" "$tmp/long-line.perf.expected" \
	"$in/long-line.perf" -- --event cpu-clock
printf 'app;main;%s;leaf 4\n' "$big" >"$in/long-line.folded"
printf 'app;main;%s;leaf 4\n' "$cut" >"$tmp/long-line.folded.expected"
stored "folded line of 2 MB (its name cut to 64 KiB)" "$tmp/long-line.folded.expected" \
	"$in/long-line.folded"
unset big cut
# Over the 64 MiB line limit (LINEREADER_MAX_LINE): refused, not buffered forever.
{ printf 'app;'; head -c $((65 << 20)) /dev/zero | tr '\0' 'y'; printf ' 1\n'; } >"$in/huge-line.folded"
refused "folded line of 65 MiB" ':1: expected a line shorter than 67108864 bytes' \
	"$in/huge-line.folded" --format folded
rm -f "$in/huge-line.folded"

# ---- non-UTF-8 names ---------------------------------------------------
printf 'app;caf\xe9;\xff\xfe\xfd;\xc3\x28 x;ok\xe2\x82\xac 3\napp;\x80 1\n' >"$in/latin1.folded"
sort "$in/latin1.folded" >"$tmp/latin1.expected"
stored "folded names that are not UTF-8" "$tmp/latin1.expected" "$in/latin1.folded"
perf_sample $'\xe9t\xe9' 2 $'f\xff\xfe' $'caf\xe9' main >"$in/latin1.perf"
printf '\xe9t\xe9;main;caf\xe9;f\xff\xfe 2\n' >"$tmp/latin1.perf.expected"
stored "perf names that are not UTF-8" "$tmp/latin1.perf.expected" "$in/latin1.perf" -- --event cpu-clock
stored "pprof names that are not UTF-8" "$data/nonutf8.cpu.folded.expected" "$data/nonutf8.pb" -- --event cpu

# ---- stacks 10,000 frames deep -----------------------------------------
awk 'BEGIN { s = "app"; for (i = 0; i < 10000; i++) s = s ";f" i; print s " 5" }' >"$in/deep.folded"
stored "folded stack 10,000 frames deep" "$in/deep.folded" "$in/deep.folded"
awk 'BEGIN { print "app 100 1000.000001: 7 cpu-clock: "
	for (i = 9999; i >= 0; i--) printf "\t    %x f%d+0x1 (/usr/bin/app)\n", 4096 + i, i
	print "" }' >"$in/deep.perf"
awk 'BEGIN { s = "app"; for (i = 0; i < 10000; i++) s = s ";f" i; print s " 7" }' >"$tmp/deep.perf.expected"
stored "perf stack 10,000 frames deep" "$tmp/deep.perf.expected" "$in/deep.perf" -- --event cpu-clock
stored "pprof stack 10,000 frames deep" "$data/deep.cpu.folded.expected" "$data/deep.pb.gz" -- --event cpu

# The view of the deep folded stack.  A path to the deepest directory is
# about 60 KB, far over PATH_MAX (4096), so it is reached the way find
# does, one directory at a time: find must see every level, the deepest
# directory's total must be the stack's count, and the daemon must live.
n=$((n + 1))
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null || [ ! -x "$flamefs" ]; then
	echo "SKIP: deep stack in the view: /dev/fuse or flamefs not available"
else
	rm -rf "$tmp/deep" "$tmp/mnt" && mkdir -p "$tmp/mnt"
	"$collect" import --store "$tmp/deep" "$in/deep.folded" >/dev/null 2>&1
	"$flamefs" -f "$tmp/deep" "$tmp/mnt" 2>"$tmp/daemon.err" &
	fpid=$!
	for _ in $(seq 300); do mountpoint -q "$tmp/mnt" && break; sleep 0.1; done
	if ! mountpoint -q "$tmp/mnt"; then
		bad "deep view: flamefs did not mount: $(cat "$tmp/daemon.err")"
	else
		# levels: app, default, f0 .. f9999 below the mount point.  Each
		# lookup is one step from its parent's inode, whatever the depth.
		find "$tmp/mnt" -type d -printf 'depth %d\n' \
			\( -name f9999 -execdir cat f9999/total \; \) >"$tmp/find.out" 2>"$tmp/find.err"
		depth=$(sed -n 's/^depth //p' "$tmp/find.out" | sort -n | tail -1)
		deepest=$(grep -v '^depth ' "$tmp/find.out")
		top=$(cat "$tmp/mnt/app/default/total" 2>/dev/null)
		# the deepest path that fits in PATH_MAX is usable by any tool
		path=$tmp/mnt/app/default d=0
		while [ $((${#path} + 12)) -lt 4096 ]; do path=$path/f$d; d=$((d + 1)); done
		reach=$(cat "$path/total" 2>/dev/null)
		if [ "$depth" != 10002 ] || [ "$deepest" != 5 ] || [ "$top" != 5 ] || [ "$reach" != 5 ]; then
			bad "deep view: depth $depth (want 10002), deepest total '$deepest', top total '$top', total at f$((d - 1)) by path '$reach' (want 5 each)"
			head -5 "$tmp/find.err"
		elif ! kill -0 "$fpid" 2>/dev/null; then
			bad "deep view: flamefs died: $(cat "$tmp/daemon.err")"
		else
			ok "deep view: find sees all 10,002 levels; total is 5 at the top, at f$((d - 1)) (the deepest within PATH_MAX, ${#path} bytes) and at f9999 (through find -execdir)"
		fi
	fi
	fusermount3 -u "$tmp/mnt" 2>/dev/null || fusermount3 -u -z "$tmp/mnt" 2>/dev/null
	wait "$fpid" 2>/dev/null
	rc=$?
	if [ "$rc" -ge 128 ] || grep -q -e Sanitizer -e 'runtime error:' "$tmp/daemon.err"; then
		bad "deep view: flamefs crashed (exit $rc)"
		head -20 "$tmp/daemon.err"
	fi
fi

# ---- limits (collector/import/README.md, Limits) -----------------------
# A stack deeper than 16,384 frames keeps its innermost 16,383 under
# [truncated]; so does one whose names add up past 1 MiB, as many frames
# as fit in 1 MiB with the marker; event and unit names are stored with
# each control byte as U+FFFD.
cutmsg='stacks deeper than 16384 frames or with more than 1 MiB of frame names were cut'
awk 'BEGIN { s = "app"; for (i = 0; i < 20000; i++) s = s ";f" i; print s " 5" }' >"$in/deeper.folded"
awk 'BEGIN { s = "app;[truncated]"; for (i = 20000 - 16383; i < 20000; i++) s = s ";f" i; print s " 5" }' \
	>"$tmp/deeper.expected"
notice=$cutmsg stored "folded stack 20,000 frames deep: cut to 16,384" "$tmp/deeper.expected" "$in/deeper.folded"
awk 'BEGIN { print "app 100 1000.000001: 7 cpu-clock: "
	for (i = 19999; i >= 0; i--) printf "\t    %x f%d+0x1 (/usr/bin/app)\n", 4096 + i, i
	print "" }' >"$in/deeper.perf"
sed 's/ 5$/ 7/' "$tmp/deeper.expected" >"$tmp/deeper.perf.expected"
notice=$cutmsg stored "perf stack 20,000 frames deep: cut to 16,384" "$tmp/deeper.perf.expected" \
	"$in/deeper.perf" -- --event cpu-clock
# 40 names of 60,000 bytes: 17 fit in 1 MiB beside "[truncated]"
python3 - "$in/wide.folded" "$tmp/wide.expected" <<'PY'
import sys
names = [b"%02d" % i + b"n" * 59998 for i in range(40)]
open(sys.argv[1], "wb").write(b"app;" + b";".join(names) + b" 2\n")
open(sys.argv[2], "wb").write(b"app;[truncated];" + b";".join(names[-17:]) + b" 2\n")
PY
notice=$cutmsg stored "folded stack of 40 names of 60 KB: cut to 1 MiB" "$tmp/wide.expected" "$in/wide.folded"
fffd=$'\xef\xbf\xbd' # U+FFFD
ctlmsg='event or unit names held control bytes; each was stored as U\+FFFD'
printf 'app;main 1\n' >"$in/ctl-event.folded"
notice=$ctlmsg stored "folded --event holding an escape byte: stored as U+FFFD" "$in/ctl-event.folded" \
	"$in/ctl-event.folded" --event $'cpu\e[2J' -- --event "cpu$fffd[2J"
{ perf_sample app 3 leaf main; perf_sample app 3 leaf main | sed 's/cpu-clock:/cpu\x07clock:/'; } \
	>"$in/ctl-event.perf"
printf 'app;main;leaf 3\n' >"$tmp/ctl-event.perf.expected"
notice=$ctlmsg stored "perf event holding a BEL byte: stored as U+FFFD" "$tmp/ctl-event.perf.expected" \
	"$in/ctl-event.perf" --all-events -- --event "cpu${fffd}clock"
python3 - "$here/data/pprof" "$in/ctl-unit.pb" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from pbwire import f_bytes, f_int, f_packed
strings = [b"", b"cpu", b"nano\nseconds", b"main"]
body = f_bytes(1, f_int(1, 1) + f_int(2, 2))
body += f_bytes(5, f_int(1, 1) + f_int(2, 3)) + f_bytes(4, f_int(1, 1) + f_bytes(4, f_int(1, 1)))
body += f_bytes(2, f_packed(1, [1]) + f_packed(2, [5]))
open(sys.argv[2], "wb").write(body + b"".join(f_bytes(6, s) for s in strings))
PY
printf 'ctl-unit;main 5\n' >"$tmp/ctl-unit.expected"
notice=$ctlmsg stored "pprof unit holding a newline: stored as U+FFFD" "$tmp/ctl-unit.expected" "$in/ctl-unit.pb"
n=$((n + 1))
units=$("$collect" export --store "$tmp/s" --format pprof | zcat | tr -c '[:print:]\200-\377' '\n' | grep -a -c "nano${fffd}seconds")
if [ "$units" = 1 ]; then
	ok "pprof unit holding a newline: the store's pprof has the unit nano${fffd}seconds"
else
	bad "pprof unit holding a newline: the store's pprof export holds nano${fffd}seconds $units times, expected once"
fi

# A pprof of 1 KB: one 1 MB function name, one sample of 1,000 locations
# (the same one 1,000 times, or 1,000 of them): each name is cut to
# 64 KiB and the stack to the 15 of them that fit in 1 MiB beside its
# leaf and [truncated], so the import and its export stay small.
# bounded CASE LIMIT_KB FILE [IMPORT_ARGS...]: the import's max RSS (GNU
# time's %M) must be at most LIMIT_KB; its output is left in $tmp/out.
bounded() {
	local case=$1 limit=$2 file=$3 rc kb
	shift 3
	n=$((n + 1))
	if [ ! -x /usr/bin/time ]; then
		echo "SKIP: $case: /usr/bin/time (GNU time) not installed"
		return
	fi
	rm -rf "$tmp/r"
	/usr/bin/time -f %M -o "$tmp/rss" "$collect" import --store "$tmp/r" "$@" "$file" >"$tmp/out" 2>&1
	rc=$?
	crashed "$case" "$rc" "$tmp/out" && return
	kb=$(tail -1 "$tmp/rss")
	if [ "$kb" -gt "$limit" ]; then
		bad "$case: import took $kb KB of RSS, expected at most $limit KB (exit $rc)"
		return
	fi
	ok "$case: import exit $rc in $kb KB of RSS (at most $limit KB)"
}
python3 - "$here/data/pprof" "$in" "$tmp/wide-pprof.expected" <<'PY'
import gzip, sys
sys.path.insert(0, sys.argv[1])
from pbwire import f_bytes, f_int, f_packed
strings = [b"", b"cpu", b"nanoseconds", b"x" * (1 << 20), b"main"]
def profile(distinct):
    body = f_bytes(1, f_int(1, 1) + f_int(2, 2))
    body += f_bytes(5, f_int(1, 1) + f_int(2, 3)) + f_bytes(5, f_int(1, 2) + f_int(2, 4))
    nloc = 1000 if distinct else 1
    for i in range(1, nloc + 1):
        body += f_bytes(4, f_int(1, i) + f_bytes(4, f_int(1, 1)))
    body += f_bytes(4, f_int(1, 5000) + f_bytes(4, f_int(1, 2)))
    locs = list(range(1, 1001)) if distinct else [1] * 1000
    body += f_bytes(2, f_packed(1, [5000] + locs) + f_packed(2, [7]))  # leaf first
    return gzip.compress(body + b"".join(f_bytes(6, s) for s in strings), mtime=0)
open(sys.argv[2] + "/wide-same.pb.gz", "wb").write(profile(False))
open(sys.argv[2] + "/wide-many.pb.gz", "wb").write(profile(True))
cut = b"x" * 65531 + b"[cut]"
open(sys.argv[3], "wb").write(b"app;[truncated];" + b";".join([cut] * 15) + b";main 7\n")
PY
for f in wide-same wide-many; do
	notice=$cutmsg stored "pprof of $(stat -c %s "$in/$f.pb.gz") bytes, a 1 MB name in 1,000 frames ($f): cut to 1 MiB" \
		"$tmp/wide-pprof.expected" "$in/$f.pb.gz" --binary app -- --event cpu
	bounded "pprof, a 1 MB name in 1,000 frames ($f)" 200000 "$in/$f.pb.gz"
done

# A folded line of 30 million frames (60 MB) and a perf stack line of
# 100,000 inlined "[unknown]" pieces, each named after its 60 KB module
# (6 GB of names): their importers gather frames from the leaf only
# until the limits, so both store 1 MiB or 16,384 frames in bounded RSS.
python3 - "$in" "$tmp" <<'PY'
import sys
inn, tmp = sys.argv[1], sys.argv[2]
open(inn + "/extreme.folded", "wb").write(b"app" + b";a" * 30000000 + b" 1\n")
open(tmp + "/extreme.folded.expected", "wb").write(b"app;[truncated]" + b";a" * 16383 + b" 1\n")
mod = b"/" + b"m" * 60000
open(inn + "/arrows.perf", "wb").write(
    b"app 100 1000.000001: 1 cpu-clock: \n\t    4004d6 " + b"->".join([b"[unknown]"] * 100000)
    + b" (" + mod + b")\n\n")
name = b"[" + mod[1:] + b"]_[i]"
open(tmp + "/arrows.perf.expected", "wb").write(b"app;[truncated];" + b";".join([name] * 17) + b" 1\n")
PY
notice=$cutmsg stored "folded line of 30 million frames: cut to 16,384" "$tmp/extreme.folded.expected" \
	"$in/extreme.folded"
bounded "folded line of 30 million frames" 200000 "$in/extreme.folded"
rm -f "$in/extreme.folded"
notice=$cutmsg stored "perf line of 100,000 pieces named after a 60 KB module: cut to 1 MiB" \
	"$tmp/arrows.perf.expected" "$in/arrows.perf" -- --event cpu-clock
bounded "perf line of 100,000 pieces named after a 60 KB module" 200000 "$in/arrows.perf"

# A gperftools CPU profile and a legacy heap profile of one sample of
# 20,000 pcs (no mappings: each is "[unknown]"): cut to 16,384 frames.
python3 - "$in" "$tmp" <<'PY'
import struct, sys
words = lambda *a: struct.pack("<%dQ" % len(a), *a)
pcs = [0x401000 + i for i in range(20000)]
open(sys.argv[1] + "/deep.prof", "wb").write(
    words(0, 3, 0, 10000, 0) + words(5, len(pcs), *pcs) + words(0, 1, 0))
open(sys.argv[1] + "/deep.heap", "w").write(
    "heap profile: 1: 2 [ 3: 4] @ heap/1048576\n1: 2 [3: 4] @ "
    + " ".join("0x%x" % p for p in pcs) + "\n")
stack = "deep;[truncated]" + ";[unknown]" * 16383
open(sys.argv[2] + "/deep.prof.expected", "w").write(stack + " 50000000\n")
open(sys.argv[2] + "/deep.heap.expected", "w").write(stack + " 524289\n")
PY
notice=$cutmsg stored "gperftools CPU profile of 20,000 pcs: cut to 16,384 frames" "$tmp/deep.prof.expected" \
	"$in/deep.prof"
notice=$cutmsg stored "legacy heap profile of 20,000 pcs: cut to 16,384 frames" "$tmp/deep.heap.expected" \
	"$in/deep.heap" -- --event inuse_space

# gzip bombs, made here: gzip members concatenated, each inflating to
# 16 MiB.  Each is refused before its protobuf is kept, in a bounded RSS:
# 64 members of 8M empty samples (1 GiB, past the 2 GiB unpacking
# estimate at about 32 MB), a string whose length says 3 GiB (refused at
# its length), and 70 strings of 16 MiB (1.1 GiB, past the 1 GiB limit on
# the protobuf, which is measured without being kept).
python3 - "$in" <<'PY'
import gzip, sys
def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7f) | (0x80 if n > 0x7f else 0))
        n >>= 7
        if not n:
            return bytes(out)
member = gzip.compress(b"\x12\x00" * (8 << 20), mtime=0)
open(sys.argv[1] + "/bomb-samples.pb.gz", "wb").write(member * 64)
open(sys.argv[1] + "/bomb-string.pb.gz", "wb").write(
    gzip.compress(b"\x32" + varint(3 << 30) + bytes(1 << 20), mtime=0))
member = gzip.compress(b"\x32" + varint(16 << 20) + bytes(16 << 20), mtime=0)
open(sys.argv[1] + "/bomb-size.pb.gz", "wb").write(member * 70)
PY
bombre() { # CASE REGEX FILE: refused in at most 200 MB of RSS, the store left empty
	bounded "$1" 200000 "$3"
	if ! grep -E -q -e "^flamefs-collect: (.*/)?$(basename "$3"): $2" "$tmp/out"; then
		bad "$1: message does not match $2: $(head -2 "$tmp/out")"
	elif [ -d "$tmp/r" ] && [ -n "$("$collect" export --store "$tmp/r" 2>/dev/null)" ]; then
		bad "$1: a refused import left stacks in an empty store"
	else
		ok "$1: $(head -1 "$tmp/out" | cut -c1-200)"
	fi
}
bombre "gzip bomb of $(stat -c %s "$in/bomb-samples.pb.gz") bytes: 512M empty samples" \
	'unpacking would take over [0-9]+ MiB \(limit 2048 MiB\) by byte [0-9]+ of the protobuf: [0-9]+ samples' \
	"$in/bomb-samples.pb.gz"
bombre "gzip bomb of $(stat -c %s "$in/bomb-string.pb.gz") bytes: a 3 GiB string" \
	'unpacking would take over [0-9]+ MiB \(limit 2048 MiB\) by byte [0-9]+ of the protobuf: .* 1 strings' \
	"$in/bomb-string.pb.gz"
bombre "gzip bomb of $(stat -c %s "$in/bomb-size.pb.gz") bytes: 1.1 GiB of protobuf" \
	'decompresses past 1073741824 bytes \(limit 1024 MiB of protobuf\)' "$in/bomb-size.pb.gz"
rm -f "$in"/bomb-*.pb.gz
python3 - "$here/data/pprof" "$in" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from pbwire import f_bytes, f_int, f_packed
def write(name, types, strings):
    body = b"".join(f_bytes(1, f_int(1, t) + f_int(2, u)) for t, u in types)
    body += f_bytes(2, f_packed(2, [1] * len(types)))
    open(sys.argv[2] + "/" + name, "wb").write(body + b"".join(f_bytes(6, s) for s in strings))
write("types-257.pb", [(i + 2, 1) for i in range(257)],
      [b"", b"count"] + [b"t%d" % i for i in range(257)])
write("type-long.pb", [(2, 1)], [b"", b"count", b"e" * 1025])
PY
refused "pprof with 257 sample types" ': has 257 sample types; expected at most 256' "$in/types-257.pb"
refused "pprof sample type of 1,025 bytes" ': sample type 0: its type is 1025 bytes long; expected at most 1024' \
	"$in/type-long.pb"

# ---- pprof ids that point nowhere --------------------------------------
refused "pprof location id that does not exist" ': sample 0: location id 99 does not exist; expected an id from the location table' \
	"$data/bad-location-id.pb"
refused "pprof function id that does not exist" ': location 1 \(id 2\), line 0: function id 77 does not exist' \
	"$data/bad-function-id.pb"
refused "pprof mapping id that does not exist" ': location 1 \(id 2\): mapping id 5 does not exist' \
	"$data/bad-mapping-id.pb"
refused "pprof string index past the string table" ': function 1: name is string index 500, expected one below' \
	"$data/bad-string-index.pb"

# ---- empty files -------------------------------------------------------
: >"$in/empty.txt"
for f in perf folded pprof auto; do
	refused "empty file, --format $f" ': empty input, expected' "$in/empty.txt" --format "$f"
done
refused "empty file, format detected" ': empty input, expected' "$in/empty.txt"
printf '# only a comment\n\n   \n' >"$in/comments.txt"
refused "comments and blank lines only (perf)" ': no samples found in perf input' "$in/comments.txt" --format perf
printf '\n\n' >"$in/blank.folded"
refused "blank lines only (folded)" ': no samples found in folded input' "$in/blank.folded" --format folded

echo "$((n - failures))/$n bad-input cases passed"
[ "$failures" -eq 0 ]

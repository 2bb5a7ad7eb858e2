#!/usr/bin/env bash
# test-quality.sh — how good the stacks are (issue #24), on perf script
# input whose stacks are cut short, partly and not at all:
#   - stats --quality: per series the exact ROOTED% and UNKNOWN% (an entry
#     frame outermost, or an unnamed frame right below one; a leaf that is
#     [unknown] or a bare module name), FIRST and LAST, HOST last;
#     stats without it keeps its 9 columns; its second table, per series
#     the unnamed weight by module (here "[unknown]": perf gave no module);
#   - import prints one warning line below 50% rooted (naming the series
#     with the most weight cut short, the cause and --call-graph dwarf),
#     none at or above 50%, none for folded input;
#   - the view: `quality` at version roots only, its lines exact (with
#     "unnamed W P% BUILD_ID MODULE" per module), the
#     hint lines below 50%; a frame named quality is %71uality.
#   usage: test-quality.sh BUILD_DIR     exit 0 pass, 1 fail
. "$(dirname "$0")/lib-e2e.sh"
build=${1:?usage: test-quality.sh BUILD_DIR}
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
e2e_setup quality

# sample COMM TIME FRAME...: one perf script sample (leaf first), period 250000.
sample() {
	local comm=$1 t=$2
	shift 2
	printf '%s  100  %s:     250000 cpu-clock: \n' "$comm" "$t"
	for f in "$@"; do
		case $f in
		'[unknown]') printf '\t               0 [unknown] ([unknown])\n' ;;
		*) printf '\t            1234 %s+0x1 (/usr/bin/%s)\n' "$f" "$comm" ;;
		esac
	done
	printf '\n'
}
{
	# cut short: three, one of them with an unnamed leaf
	sample xz 1000.1 lzma_encode lzma_block
	sample xz 1000.2 lzma_encode lzma_block
	sample xz 1000.3 '[unknown]' lzma_block
	sample xz 1061.7 lzma_encode lzma_block
	# rooted: _start outermost, and [unknown] right below __libc_start_call_main
	sample xz 1000.4 lzma_encode main __libc_start_call_main _start
	sample xz 1061.5 lzma_encode main __libc_start_call_main '[unknown]'
	sample xz 1061.6 quality main _start
} >"$tmp/cut.perf"
{
	sample good 1000.1 work main _start
	sample good 1000.2 work start_thread clone3
	sample good 1000.3 lzma_block
} >"$tmp/good.perf"

"$collect" import --store "$store" --binary xz --version 1 --format perf "$tmp/cut.perf" 2>"$tmp/cut.err"
check "import of cut stacks exits 0" test $? = 0
check "... and prints one warning line after the import's own line" test "$(wc -l <"$tmp/cut.err")" = 2
check "... naming the share, the series, the cause and what to do" \
	grep -q '^flamefs-collect: warning: only 42.86% of xz 1 (cpu-clock) has stacks that reach an entry point .*frame pointers are missing under perf record -g; record with --call-graph dwarf, or with flamefs-collect record' "$tmp/cut.err"
"$collect" import --store "$store" --binary good --version 1 --format perf "$tmp/good.perf" 2>"$tmp/good.err"
check "import of mostly rooted stacks (66.67%) warns nothing" test "$(wc -l <"$tmp/good.err")" = 1
# Two series cut short: the warning names the one with the most weight cut
# short (big, 40% rooted), not the tiny one at 0%.
{
	for t in 1 2 3 4 5 6; do sample big 1000.$t work loop; done
	for t in 7 8 9; do sample big 1000.$t work main _start; done
	sample big 1001.1 work start_thread clone3
	sample tiny 1000.5 work loop
} >"$tmp/two.perf"
"$collect" import --store "$tmp/two" --version 1 --format perf "$tmp/two.perf" 2>"$tmp/two.err"
check "import of two cut series warns once, naming the one with the most weight cut short" \
	sh -c "test \"\$(wc -l <'$tmp/two.err')\" = 2 && grep -q '^flamefs-collect: warning: only 40.00% of big 1 (cpu-clock) has stacks' '$tmp/two.err'"
"$collect" export --store "$store" --binary xz --version 1 | sed 's/^xz;//' >"$tmp/xz.folded"
"$collect" import --store "$store" --binary fold --version 1 "$tmp/xz.folded" 2>"$tmp/fold.err"
check "import of the same stacks as folded warns nothing (perf's advice)" test "$(wc -l <"$tmp/fold.err")" = 1
"$collect" import --store "$store" --binary xz --version 1 --format perf "$tmp/good.perf" 2>"$tmp/again.err"
check "a second import that lifts the cut series to 50% (3 of 7, then 2 of 3 more) warns nothing" \
	test "$(wc -l <"$tmp/again.err")" = 1

# ---- stats --quality -------------------------------------------------------------------------
"$collect" stats --store "$store" --quality >"$tmp/q"
cat "$tmp/q"
row() { awk -v b="$1" 'NF == 0 { exit } $1 == b { print $4, $5, $6, $7, $8, $9 }' "$tmp/q"; }
check "stats --quality header, HOST last" \
	test "$(head -1 "$tmp/q" | tr -s ' ')" = "BINARY VERSION EVENT WEIGHT FIRST LAST ROOTED% UNKNOWN% HOST"
# FIRST and LAST: the first and last sample's own moments (perf's clock).
check "xz: weight, first, last (perf's clock), 50.00% rooted, 10.00% unknown leaf" \
	test "$(row xz)" = "2500000 1000.100 1061.700 50.00 10.00 $(hostname)"
check "good: 66.67% rooted, no unknown leaf" test "$(row good)" = "750000 1000.100 1000.300 66.67 0.00 $(hostname)"
check "fold: the cut stacks again (folded input carries no frame kinds: names decide)" \
	test "$(row fold | cut -d' ' -f1,4,5)" = "1750000 42.86 14.29"
check "stats --quality's second table: each series' unnamed weight by module, its share, build id and debug package" \
	test "$(awk 'seen && NF { print $1, $4, $5, $6, $7, $8 } NF == 0 { seen = 1 }' "$tmp/q")" = \
	"$(printf 'BINARY UNNAMED SHARE%% BUILD_ID MODULE DEBUG_PACKAGE\nfold 250000 14.29 - [unknown] -\nxz 250000 10.00 - [unknown] -')"
check "stats without --quality keeps its 9 columns, HOST last" \
	test "$("$collect" stats --store "$store" | awk 'NR > 1 && NF == 9 && $9 == "'"$(hostname)"'"' | wc -l)" = 3
"$collect" stats --store "$store" --quality --by-host >/dev/null 2>&1
check "--quality and --by-host exclude each other (a usage error, 2)" test $? = 2

# ---- the view ----------------------------------------------------------------------------------
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available: no view checks"
	echo "$failures failures"
	[ "$failures" = 0 ]
	exit
fi
pid=
e2e_on_exit() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; }
mkdir -p "$mnt"
"$flamefs" -f "$store" "$mnt" 2>"$tmp/daemon.err" &
pid=$!
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { bad "flamefs did not mount: $(cat "$tmp/daemon.err")"; exit 1; }
check "quality at a version root" test "$(cat "$mnt/fold/1/quality")" = "$(printf 'total 1750000\nrooted 750000 42.86%%\nunknown_leaf 250000 14.29%%\nunnamed 250000 14.29%% - [unknown]\n# fewer than half the stacks reach an entry point (_start, start_thread,\n# clone, ret_from_fork...): they were cut short, usually because frame\n# pointers are missing under perf record -g; record with --call-graph dwarf,\n# or with flamefs-collect record')"
check "no hint at 50% rooted" test "$(cat "$mnt/xz/1/quality")" = "$(printf 'total 2500000\nrooted 1250000 50.00%%\nunknown_leaf 250000 10.00%%\nunnamed 250000 10.00%% - [unknown]')"
check "no quality below a version root" test ! -e "$mnt/xz/1/_start/quality" -a -f "$mnt/xz/1/_start/top"
check "a frame named quality is %71uality" test -d "$mnt/xz/1/_start/main/%71uality"
check "quality in a window's version root" \
	test "$(head -1 "$mnt/@range/0/2000/xz/1/quality")" = "total 2500000"
fusermount3 -u "$mnt"
wait "$pid" 2>/dev/null
pid=
echo "$failures failures"
[ "$failures" = 0 ]

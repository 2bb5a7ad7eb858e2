#!/usr/bin/env bash
# views.sh — issue #13's targets on the generated 100k-stack store: the
# first ls of a version's @functions (<= 0.5 s), a function's total after
# its first use (<= 5 ms), the root's flame.svg (<= 1 s), a @diff root
# (<= 1 s), flame.svg's size against flamegraph.pl's (when FLAMEGRAPH_PL
# names one), and the daemon's RSS per call-tree node it holds.
#   usage: sudo bash tests/bench/views.sh [BUILD_DIR]   (prints a table; no pass/fail)
#   BUILD_DIR: a build to measure as it is; default: build-bench (release)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
BENCH_BUILD=${1:-} bench_setup views --root fs/flamefs flamefs-collect tests/gen-folded
bench_machine
collect=$fc
tmp=$work
pid=
trap '[ -n "$pid" ] && fusermount3 -u -z "$tmp/mnt" 2>/dev/null; bench_cleanup' EXIT
"$build/tests/gen-folded" 100000 10000000 app 1 >"$tmp/v1.folded"
"$build/tests/gen-folded" 100000 10000000 app 2 >"$tmp/v2.folded"
"$collect" import --store "$tmp/store" --binary app --version 1 "$tmp/v1.folded" >/dev/null 2>&1
"$collect" import --store "$tmp/store" --binary app --version 2 "$tmp/v2.folded" >/dev/null 2>&1
mkdir "$tmp/mnt"
"$flamefs" -f "$tmp/store" "$tmp/mnt" &
pid=$!
for _ in $(seq 50); do mountpoint -q "$tmp/mnt" && break; sleep 0.1; done
ms() { # ms COMMAND...: wall milliseconds of one run
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
v=$tmp/mnt/app/1
f=$(ls "$v/@functions" | sed -n 100p)
echo "| | target | measured |"
echo "|---|---|---|"
echo "| first \`ls\` of @functions ($(ls "$v/@functions" | wc -l) functions) | ≤ 500 ms | $(ms ls "$tmp/mnt/app/2/@functions") ms |"
cat "$v/@functions/$f/total" >/dev/null
echo "| @functions/F/total after the first use | ≤ 5 ms | $(ms cat "$v/@functions/$f/total") ms |"
echo "| root flame.svg ($(wc -c <"$v/flame.svg") bytes) | ≤ 1000 ms | $(ms cat "$tmp/mnt/app/2/flame.svg") ms |"
echo "| @diff/1/2/total (two version trees built before) | ≤ 1000 ms | $(ms cat "$tmp/mnt/app/@diff/1/2/total") ms |"
echo "| @diff/1/2/flame.svg after it | | $(ms cat "$tmp/mnt/app/@diff/1/2/flame.svg") ms |"
if [ -n "${FLAMEGRAPH_PL:-}" ]; then
	perl "$FLAMEGRAPH_PL" "$v/folded" >"$tmp/fg.svg"
	perl "$FLAMEGRAPH_PL" --minwidth 1.18 "$v/folded" >"$tmp/fg01.svg"
	echo "| flame.svg against flamegraph.pl's (default, same 0.1% cut) | no larger | $(wc -c <"$v/flame.svg") B ($(wc -c <"$tmp/fg.svg") B, $(wc -c <"$tmp/fg01.svg") B) |"
fi
echo "| daemon RSS | | $(ps -o rss= -p $pid) KB |"

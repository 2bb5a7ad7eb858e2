#!/usr/bin/env bash
# view-time.sh — issue #39's view targets on a generated 10-minute
# recording kept whole in the recent tier (samples-fill --gen: 99 Hz on
# CPUS CPUs, default 8, STACKS stacks of 6 to 12 frames, default 64, every
# sample with its moment): `cat` of a 10 s window's folded of the version
# (target <= 50 ms) and of its heatmap.svg (<= 200 ms), beside the whole
# version's folded as the baseline, and the version's timeline.  Each figure
# is the median of ROUNDS (default 7) first reads: the daemon is mounted
# afresh for each round, and each round's window is another 10 s.
#   usage: sudo bash tests/bench/view-time.sh [BUILD_DIR]   (prints a table; no pass/fail)
#   BUILD_DIR: a build to measure as it is; default: build-bench (release)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
BENCH_BUILD=${1:-} bench_setup view-time --root fs/flamefs tests/samples-fill
bench_machine
cpus=${CPUS:-8}
stacks=${STACKS:-64}
rounds=${ROUNDS:-7}
tmp=$work
pid=
umount_() {
	[ -n "$pid" ] || return 0
	fusermount3 -u "$tmp/mnt" 2>/dev/null || fusermount3 -u -z "$tmp/mnt" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	pid=
}
trap 'umount_; bench_cleanup' EXIT
start=1795000020000000 # a bucket start, microseconds
t0=$((start / 1000000))
"$build/tests/samples-fill" "$tmp/store" app 1 --gen 600 99 "$cpus" "$start" "$stacks"
mkdir -p "$tmp/mnt"
mount_() {
	"$flamefs" -f "$tmp/store" "$tmp/mnt" 2>/dev/null &
	pid=$!
	for _ in $(seq 100); do [ -e "$tmp/mnt/app" ] && return 0; sleep 0.05; done
	echo "view-time.sh: the mount did not come up" >&2
	exit 1
}
ms() { # ms FILE: wall milliseconds of one cat, to three decimals
	local t0 t1
	t0=$(date +%s%N)
	cat "$1" >/dev/null
	t1=$(date +%s%N)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.1f", d / 1e6 }'
}
med() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base= win= heat= heatw= heat_cold= tl=
for i in $(seq "$rounds"); do
	mount_
	f=$((t0 + 30 + 61 * i)).250 # a 10 s window cutting two buckets
	to=$((t0 + 40 + 61 * i)).250
	win="$win $(ms "$tmp/mnt/@range/$f/$to/app/1/folded")"
	heatw="$heatw $(ms "$tmp/mnt/@range/$f/$to/app/1/heatmap.svg")"
	heat_cold="$heat_cold $(ms "$tmp/mnt/app/1/heatmap.svg")"
	umount_
	mount_
	base="$base $(ms "$tmp/mnt/app/1/folded")"
	heat="$heat $(ms "$tmp/mnt/app/1/heatmap.svg")"
	tl="$tl $(ms "$tmp/mnt/app/1/timeline")"
	umount_
done
mount_
samples=$(awk '/^samples / { print $2 }' "$tmp/mnt/@range/$t0/$((t0 + 600))/window")
wsamples=$(awk '/^samples / { print $2 }' "$tmp/mnt/@range/$((t0 + 91)).250/$((t0 + 101)).250/window")
hbytes=$(wc -c <"$tmp/mnt/app/1/heatmap.svg")
umount_
echo "# recording: 600 s at 99 Hz on $cpus CPUs, $stacks stacks, $samples samples kept with their moments; median of $rounds first reads, each on a fresh mount"
echo "# load average: $(bench_load)"
echo "| file | target | measured (ms) |"
echo "|---|---|---|"
echo "| version folded, whole recording (baseline: tree built from counts) | | $(echo $base | med) |"
echo "| 10 s @range window's folded ($wsamples samples; two cut buckets read from the recent tier) | ≤ 50 | $(echo $win | med) |"
echo "| heatmap.svg of the version, 10 minutes, tree built ($hbytes bytes) | ≤ 200 | $(echo $heat | med) |"
echo "| heatmap.svg of the version, first open on a fresh mount (tree built by it) | ≤ 200 | $(echo $heat_cold | med) |"
echo "| heatmap.svg of the 10 s window | | $(echo $heatw | med) |"
echo "| timeline of the version (5 s intervals over 10 minutes, from the detail) | | $(echo $tl | med) |"

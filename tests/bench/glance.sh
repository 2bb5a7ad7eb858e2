#!/usr/bin/env bash
# glance.sh — issue #24's targets on a generated store about the size of a
# system-wide recording (75 binaries of 4,000 generated stacks each, one of
# 100,000: about 400k stacks in all): `cat /top` the first time (the whole
# machine's tree built) <= 1 s and after <= 50 ms, `head top` of a version
# root <= 100 ms, `cat timeline` <= 100 ms, and what the root's other
# files and `ls /` cost.
#   usage: sudo bash tests/bench/glance.sh [BUILD_DIR]   (prints a table; no pass/fail)
#   BUILD_DIR: a build to measure as it is; default: build-bench (release)
#   BENCH_DIR=DIR keeps the work directory and reuses the store in it, so
#   two builds can be measured on the same store one after the other.
#   GLANCE_DUMPS=N imports bin1's stacks N times, a minute apart (N time
#   buckets of the same 450,000 nodes; default 1), to see what per-bucket
#   data costs.
#   GLANCE_FRESH=N then reads `head top` of bin1/1 on N fresh mounts
#   (nothing built), with the daemon's CPU for it: median (min, max).
#   GLANCE_BASE=BUILD_DIR alternates them with that build's daemon (a
#   baseline measured in the same run) and prints the ratio of the medians.
#   e.g. GLANCE_FRESH=20 GLANCE_BASE=/tmp/main/build sudo -E bash tests/bench/glance.sh
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
BENCH_BUILD=${1:-} bench_setup glance --root fs/flamefs flamefs-collect tests/gen-folded
bench_machine
pid=
trap '[ -n "$pid" ] && fusermount3 -u -z "$work/mnt" 2>/dev/null; bench_cleanup' EXIT
if [ ! -f "$work/store.done" ]; then
	rm -rf "$work/store"
	for i in $(seq 1 75); do
		n=4000
		[ "$i" = 1 ] && n=100000
		"$build/tests/gen-folded" $n $((n * 50)) "bin$i" "$i" >"$work/b$i.folded"
		dumps=1
		[ "$i" = 1 ] && dumps=${GLANCE_DUMPS:-1}
		for k in $(seq 0 $((dumps - 1))); do
			"$fc" import --store "$work/store" --binary "bin$i" --version 1 \
				--time $((1795000000 + 60 * k)) "$work/b$i.folded" >/dev/null 2>&1
		done
	done
	touch "$work/store.done"
fi
stacks=$(cat "$work"/b*.folded | wc -l)
mkdir -p "$work/mnt"
"$flamefs" -f "$work/store" "$work/mnt" &
pid=$!
for _ in $(seq 50); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
ms() { # ms COMMAND...: wall milliseconds of one run
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
m=$work/mnt
rss() { awk -v k="$1:" '$1 == k { printf "%.1f MB", $2 / 1024 }' /proc/$pid/status; }
echo "# $stacks stacks in 75 binaries (bin1's in ${GLANCE_DUMPS:-1} time buckets), $(du -sh "$work/store" | cut -f1) store"
echo "| | target | measured |"
echo "|---|---|---|"
echo "| first \`ls /\` (nothing built) | | $(ms ls "$m") ms |"
echo "| \`cat /top\` the first time (the whole tree built) | ≤ 1000 ms | $(ms cat "$m/top") ms |"
echo "| \`cat /top\` after (render cache; $(grep -vc '^#' "$m/top") functions) | ≤ 50 ms | $(ms cat "$m/top") ms |"
echo "| daemon RSS with the whole tree built | | $(rss VmRSS) |"
first=$(ms cat "$m/folded")
echo "| \`cat /folded\` the first time after top ($(wc -c <"$m/folded") bytes) | | $first ms |"
echo "| \`cat /folded\` after (render cache) | | $(ms cat "$m/folded") ms |"
echo "| \`cat /flame.svg\` the first time | | $(ms cat "$m/flame.svg") ms |"
echo "| \`head top\` of bin1/1 (100k stacks) the first time (tree built) | ≤ 100 ms | $(ms sh -c "head -12 '$m/bin1/1/top'") ms |"
echo "| \`head top\` of bin1/1 after | ≤ 100 ms | $(ms sh -c "head -12 '$m/bin1/1/top'") ms |"
echo "| \`head top\` of bin2/1 (4k stacks) the first time | ≤ 100 ms | $(ms sh -c "head -12 '$m/bin2/1/top'") ms |"
echo "| \`cat /timeline\` (the whole tree built) | ≤ 100 ms | $(ms cat "$m/timeline") ms |"
echo "| \`cat timeline\` of bin1/1 (its tree built) | ≤ 100 ms | $(ms cat "$m/bin1/1/timeline") ms |"
echo "| \`cat timeline\` of bin3/1 the first time (tree built) | ≤ 100 ms | $(ms cat "$m/bin3/1/timeline") ms |"
echo "| \`cat /timeline.svg\` | | $(ms cat "$m/timeline.svg") ms |"
# A deep directory of bin1/1: down the first callee 12 levels (or to a leaf).
deep=$m/bin1/1
for _ in $(seq 12); do
	next=$(find "$deep" -mindepth 1 -maxdepth 1 -type d ! -name '@*' | sort | head -1)
	[ -n "$next" ] || break
	deep=$next
done
echo "| \`cat timeline\` $(($(echo "${deep#"$m/bin1/1"}" | tr -cd / | wc -c))) levels below bin1/1 | ≤ 100 ms | $(ms cat "$deep/timeline") ms |"
echo "| \`cat timeline.svg\` there | | $(ms cat "$deep/timeline.svg") ms |"
echo "| daemon RSS (the render cache holds /folded) | | $(rss VmRSS) |"
echo "| daemon peak RSS (VmHWM) | | $(rss VmHWM) |"

# fresh FLAMEFS: `head top` of bin1/1 on a fresh mount: "WALL_MS CPU_MS".
fresh() {
	local p cpu t tick
	tick=$(getconf CLK_TCK)
	"$1" -f "$work/store" "$work/mnt" &
	p=$!
	pid=$p # unmounted by the EXIT trap if interrupted
	for _ in $(seq 50); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
	sleep 0.3
	t=$(ms sh -c "head -12 '$m/bin1/1/top'")
	cpu=$(awk -v tick="$tick" '{ print int(($14 + $15) * 1000 / tick) }' "/proc/$p/stat")
	fusermount3 -u "$work/mnt"
	wait "$p"
	pid=
	echo "$t $cpu"
}
# summary FILE COLUMN: "median (min, max)" of a column of numbers.
summary() {
	sort -n -k"$2,$2" "$1" | awk -v c="$2" '{ v[NR] = $c }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      printf "%s (%s, %s)", m, v[1], v[NR] }'
}
if [ "${GLANCE_FRESH:-0}" -gt 0 ]; then
	fusermount3 -u "$work/mnt"
	wait "$pid"
	pid=
	: >"$work/fresh.this"
	: >"$work/fresh.base"
	for _ in $(seq "$GLANCE_FRESH"); do
		[ -n "${GLANCE_BASE:-}" ] && fresh "$GLANCE_BASE/fs/flamefs" >>"$work/fresh.base"
		fresh "$flamefs" >>"$work/fresh.this"
	done
	echo
	if [ -n "${GLANCE_BASE:-}" ]; then
		echo "| $GLANCE_FRESH fresh mounts each, alternately | target | $GLANCE_BASE | $build |"
		echo "|---|---|---|---|"
		echo "| \`head top\` of bin1/1, ms: median (min, max) | ≤ 100 ms | $(summary "$work/fresh.base" 1) | $(summary "$work/fresh.this" 1) |"
		echo "| the daemon's CPU (user + sys), ms | | $(summary "$work/fresh.base" 2) | $(summary "$work/fresh.this" 2) |"
		mb=$(summary "$work/fresh.base" 1 | cut -d' ' -f1)
		mt=$(summary "$work/fresh.this" 1 | cut -d' ' -f1)
		echo "| ratio of the medians (this / base) | | | $(awk -v a="$mt" -v b="$mb" 'BEGIN { printf "%.2f", a / b }') |"
	else
		echo "| $GLANCE_FRESH fresh mounts | target | measured |"
		echo "|---|---|---|"
		echo "| \`head top\` of bin1/1, ms: median (min, max) | ≤ 100 ms | $(summary "$work/fresh.this" 1) |"
		echo "| the daemon's CPU (user + sys), ms | | $(summary "$work/fresh.this" 2) |"
	fi
fi

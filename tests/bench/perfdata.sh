#!/usr/bin/env bash
# perf.data import benchmark (issue 14).  Prints numbers; asserts nothing.
#   usage: sudo bash tests/bench/perfdata.sh [SECONDS]
#   env:   BENCH_DIR=DIR (keep the work dir), REUSE=1 (keep a recording
#          already there), DATA=FILE (measure that perf.data instead of
#          recording one), BENCH_BASELINE=PROGRAM (another build's
#          flamefs-collect, timed alternately with this one)
# Records SECONDS (default 20) of the whole machine running the compile
# loop of tests/bench/lib.sh with `perf record -e cpu-clock -F 999 -a -g`,
# then measures on that one perf.data:
#   - agreement: the share of the weight that lies on stacks identical in
#     `flamefs-collect import rec.data` (exported folded) and in
#     `perf script | stackcollapse-ref.pl` (the in-tree stand-in for
#     stackcollapse-perf.pl; target >= 98%);
#   - time: `perf script` alone (to /dev/null) against the import (each
#     the median of RUNS=5 runs taken in turn, wall and CPU time of the
#     command and its children; target: the import takes <= 1/5 of it).
#     The import is timed as a user runs it and again without its
#     debug-package advice (no apt-cache on PATH): apt-cache rebuilds its
#     cache at every run where apt keeps none (Docker's docker-clean), which
#     costs more than the import.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-20}
. "$top/tests/lib.sh"
. "$top/tests/bench/lib.sh"
bench_setup perfdata --root --tools "perf perl"
echo "# machine: $(nproc) cores, $(uname -r), $(perf version 2>/dev/null)"
echo "# work dir: $work"

data=${DATA:-$work/rec.data}
if [ -z "${DATA:-}" ] && { [ -z "${REUSE:-}" ] || [ ! -s "$data" ]; }; then
	perf record -q -e cpu-clock -F 999 -a -g -o "$data" -- \
		bash -c "$(declare -f workload); work=$work; top=$top; workload $secs" >/dev/null 2>&1
fi
if [ -n "${DATA:-}" ]; then
	echo "# recording: $data, $(stat -c %s "$data") bytes"
else
	echo "# recording: $secs s system-wide, $(stat -c %s "$data") bytes"
fi

# timeit CMD...: "wall cpu" seconds (cpu = user + system, from GNU time),
# for a machine shared with other work, where wall time alone misleads
timeit() {
	/usr/bin/time -f '%e %U %S' -o "$work/time.txt" "$@" >/dev/null 2>&1
	awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' "$work/time.txt"
}

cat "$data" >/dev/null
runs=${RUNS:-5}
mkdir -p "$work/noapt"
: >"$work/ps.t"
: >"$work/im.t"
: >"$work/na.t"
: >"$work/bl.t"
: >"$work/bn.t"
for ((i = 0; i < runs; i++)); do
	timeit perf script -i "$data" >>"$work/ps.t"
	rm -rf "$work/s"
	timeit "$fc" import --store "$work/s" "$data" >>"$work/im.t"
	rm -rf "$work/s"
	timeit env PATH="$work/noapt" "$fc" import --store "$work/s" "$data" >>"$work/na.t"
	if [ -n "${BENCH_BASELINE:-}" ]; then
		rm -rf "$work/b"
		timeit "$BENCH_BASELINE" import --store "$work/b" "$data" >>"$work/bl.t"
		rm -rf "$work/b"
		timeit env PATH="$work/noapt" "$BENCH_BASELINE" import --store "$work/b" "$data" \
			>>"$work/bn.t"
	fi
done
rm -rf "$work/s"
"$fc" import --store "$work/s" "$data" >/dev/null 2>&1
ps=$(cut -d' ' -f1 "$work/ps.t" | median); psc=$(cut -d' ' -f2 "$work/ps.t" | median)

perf script -i "$data" 2>/dev/null | perl "$top/tests/ref/stackcollapse-ref.pl" >"$work/ref.folded"
"$fc" export --store "$work/s" >"$work/ours.folded"
agree=$(awk 'NR == FNR { ref[substr($0, 1, length($0) - length($NF) - 1)] = $NF; total += $NF; next }
	{ k = substr($0, 1, length($0) - length($NF) - 1); if (k in ref) same += ($NF < ref[k] ? $NF : ref[k]) }
	END { printf "%.2f", total ? 100 * same / total : 0 }' "$work/ref.folded" "$work/ours.folded")

echo
echo "(median of $runs runs; wall seconds, and CPU seconds = user + system)"
echo "# perf.data: $(awk -v b="$(stat -c %s "$data")" 'BEGIN { print b / 1e6 }') MB; perf script: $ps s wall, $psc s CPU"
echo "| import | wall / CPU | import / perf script, wall / CPU (target <= 1/5) | weight on identical stacks |"
echo "|---|---|---|---|"
# row LABEL FILE: a row of the import timed in FILE
row() {
	local w c
	w=$(cut -d' ' -f1 "$2" | median)
	c=$(cut -d' ' -f2 "$2" | median)
	printf '| %s | %s / %s s | 1/%.1f / 1/%.1f | %s |\n' "$1" "$w" "$c" \
		"$(awk -v a="$ps" -v b="$w" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
		"$(awk -v a="$psc" -v b="$c" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$3"
}
row "this build" "$work/im.t" "$agree%"
row "this build, no debug-package advice" "$work/na.t" ""
if [ -n "${BENCH_BASELINE:-}" ]; then
	row "baseline" "$work/bl.t" ""
	row "baseline, no debug-package advice" "$work/bn.t" ""
fi

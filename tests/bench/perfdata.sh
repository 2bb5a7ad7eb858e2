#!/usr/bin/env bash
# perf.data import benchmark (issue 14).  Prints numbers; asserts nothing.
#   usage: sudo bash tests/bench/perfdata.sh [SECONDS]
#   env:   BENCH_DIR=DIR (keep the work dir), REUSE=1 (keep a recording
#          already there)
# Records SECONDS (default 20) of the whole machine running the compile
# loop of tests/bench/lib.sh with `perf record -e cpu-clock -F 999 -a -g`,
# then measures on that one perf.data:
#   - agreement: the share of the weight that lies on stacks identical in
#     `flamefs-collect import rec.data` (exported folded) and in
#     `perf script | stackcollapse-ref.pl` (the in-tree stand-in for
#     stackcollapse-perf.pl; target >= 98%);
#   - time: `perf script` alone (to /dev/null) against the import (each
#     the median of RUNS=5 runs, wall and CPU time; target: the import
#     takes <= 1/5 of it).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-20}
. "$top/tests/lib.sh"
. "$top/tests/bench/lib.sh"
bench_setup perfdata --root --tools "perf perl"
echo "# machine: $(nproc) cores, $(uname -r), $(perf version 2>/dev/null)"
echo "# work dir: $work"

data=$work/rec.data
if [ -z "${REUSE:-}" ] || [ ! -s "$data" ]; then
	perf record -q -e cpu-clock -F 999 -a -g -o "$data" -- \
		bash -c "$(declare -f workload); work=$work; top=$top; workload $secs" >/dev/null 2>&1
fi
echo "# recording: $secs s system-wide, $(stat -c %s "$data") bytes"

# timeit CMD...: "wall cpu" seconds (cpu = user + system, from GNU time),
# for a machine shared with other work, where wall time alone misleads
timeit() {
	/usr/bin/time -f '%e %U %S' -o "$work/time.txt" "$@" >/dev/null 2>&1
	awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' "$work/time.txt"
}

cat "$data" >/dev/null
runs=${RUNS:-5}
for ((i = 0; i < runs; i++)); do timeit perf script -i "$data"; done >"$work/ps.t"
for ((i = 0; i < runs; i++)); do rm -rf "$work/s"; timeit "$fc" import --store "$work/s" "$data"; done >"$work/im.t"
ps=$(cut -d' ' -f1 "$work/ps.t" | median); psc=$(cut -d' ' -f2 "$work/ps.t" | median)
im=$(cut -d' ' -f1 "$work/im.t" | median); imc=$(cut -d' ' -f2 "$work/im.t" | median)

perf script -i "$data" 2>/dev/null | perl "$top/tests/ref/stackcollapse-ref.pl" >"$work/ref.folded"
"$fc" export --store "$work/s" >"$work/ours.folded"
agree=$(awk 'NR == FNR { ref[substr($0, 1, length($0) - length($NF) - 1)] = $NF; total += $NF; next }
	{ k = substr($0, 1, length($0) - length($NF) - 1); if (k in ref) same += ($NF < ref[k] ? $NF : ref[k]) }
	END { printf "%.2f", total ? 100 * same / total : 0 }' "$work/ref.folded" "$work/ours.folded")

echo
echo "(median of $runs runs; wall seconds, and CPU seconds = user + system)"
echo "| perf.data | perf script wall / CPU | import wall / CPU | import / perf script, wall / CPU | weight on identical stacks |"
echo "|---|---|---|---|---|"
printf '| %.1f MB, %s s -a -g | %s / %s s | %s / %s s | 1/%.1f / 1/%.1f | %s%% |\n' \
	"$(awk -v b="$(stat -c %s "$data")" 'BEGIN { print b / 1e6 }')" "$secs" "$ps" "$psc" "$im" "$imc" \
	"$(awk -v a="$ps" -v b="$im" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
	"$(awk -v a="$psc" -v b="$imc" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$agree"

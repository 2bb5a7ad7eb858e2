#!/usr/bin/env bash
# The recent tier's size: a synthetic system-wide recording at 99 Hz
# (tests/bench/gen-samples.c: a few hundred programs, half the ticks idle,
# mostly cpu-clock's constant weight, threads repeating), drained into a
# store once a second, written twice: with every sample's detail
# (store_batch_sample) and as counts alone (store_batch_add, the
# per-bucket store before the recent tier: the baseline).  Both stores are
# compacted; the detail's bytes on disk are the difference of the two
# directories (du), beside the store's own estimate (stats' "recent
# tier", RocksDB's size of the detail keys).  Target: <= 4 bytes a sample.
# Prints markdown; asserts nothing.
#   usage: bash tests/bench/samples.sh
#   env:   DUR=SECONDS of recording (default 1800), CPUS=N (default 2),
#          SERIES=N programs (default 300), BENCH_DIR, BENCH_BUILD (lib.sh)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
DUR=${DUR:-1800}
CPUS=${CPUS:-2}
SERIES=${SERIES:-300}

. "$top/tests/bench/lib.sh"
bench_setup samples tests/gen-samples

gen="$build/tests/gen-samples"
val() { sed -n "s/^$1=//p" "$2"; }

"$gen" "$work/detail" "$DUR" --cpus "$CPUS" --series "$SERIES" >"$work/detail.txt"
"$gen" "$work/counts" "$DUR" --cpus "$CPUS" --series "$SERIES" --counts-only >"$work/counts.txt"

n=$(val samples "$work/detail.txt")
with=$(val dir_bytes "$work/detail.txt")
without=$(val dir_bytes "$work/counts.txt")
est=$(val recent_bytes "$work/detail.txt")
bench_machine
echo "# recording: ${DUR} s at 99 Hz on $CPUS CPUs, $SERIES programs: $n samples, one commit a second"
echo
echo "| store | compacted: bytes | a sample | settled, before compact | written (WAL, flushes, compactions) | write CPU (s) |"
echo "|---|---:|---:|---:|---:|---:|"
row() {
	awk -v name="$1" -v n="$n" -v b="$(val dir_bytes "$2")" -v s="$(val settled_dir_bytes "$2")" \
		-v w="$(val written_bytes "$2")" -v c="$(val write_cpu_s "$2")" \
		'BEGIN { printf "| %s | %d | %.2f | %d | %d | %s |\n", name, b, b / n, s, w, c }'
}
row "counts only (baseline)" "$work/counts.txt"
row "counts + every sample kept whole" "$work/detail.txt"
awk -v n="$n" -v d="$((with - without))" -v e="$est" \
	'BEGIN { printf "| the recent tier alone: difference (store estimate) | %d (%d) | %.2f (%.2f) | | | |\n", d, e, d / n, e / n }'
echo
echo "counts (history) in both: $(val counts_bytes "$work/counts.txt") and $(val counts_bytes "$work/detail.txt") bytes;" \
	"samples held whole: $(val recent_samples "$work/detail.txt")"
# The recent tier never holds more than the keep window (default 2 h,
# rolled up by the writer): its bound at this rate and these bytes a sample.
awk -v n="$n" -v dur="$DUR" -v d="$((with - without))" \
	'BEGIN { k = n / dur * 7200; printf "with the default 2 h keep window: at most %.0f samples, %.1f MB of detail at %.2f bytes a sample\n", k, k * d / n / 1e6, d / n }'

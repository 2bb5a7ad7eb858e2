#!/usr/bin/env bash
# perf script text import against the Perl collapser (issue 43).  Prints
# numbers; asserts nothing.
#   usage: sudo bash tests/bench/perf-text.sh FILE...
#   env:   RUNS=N (default 5), BENCH_BUILD=DIR (the build to measure),
#          BENCH_BASELINE=PROGRAM (another build's flamefs-collect, timed
#          in turn with this one), BENCH_DIR=DIR (keep the work dir)
# For each FILE (`perf script` output of a `perf record -g` recording),
# in one run: tests/ref/stackcollapse-ref.pl (the in-tree stand-in for
# stackcollapse-perf.pl), this build's import into a fresh store and, with
# BENCH_BASELINE, the baseline's, taken in turn RUNS times; each under
# `chrt -f 50` (a busy machine cannot preempt it) with `perf stat -e
# task-clock` (CPU of all its threads).  Prints the median wall and CPU
# seconds of each, the ratios Perl / import (target >= 30 at 40 MB and at
# >= 150 MB), and the medians of the import's --timings phases.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: sudo bash $0 FILE..." >&2; exit 2; }
. "$top/tests/bench/lib.sh"
bench_setup perf-text --root --tools "perf perl chrt"
bench_machine
runs=${RUNS:-5}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# timed NAME CMD...: appends "wall cpu" of one run of CMD to $work/NAME.t
timed() {
	local name=$1 t0 t1
	shift
	rm -rf "$work/s"
	t0=$EPOCHREALTIME
	chrt -f 50 perf stat -x, -e task-clock -o "$work/stat.txt" "$@" >/dev/null 2>"$work/err.txt" || {
		cat "$work/err.txt" >&2; exit 1; }
	t1=$EPOCHREALTIME
	printf '%s %s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
		"$(awk -F, '/task-clock/ { printf "%.3f", $1 / 1000 }' "$work/stat.txt")" >>"$work/$name.t"
	grep -o 'timings: .*' "$work/err.txt" >>"$work/$name.timings" || true
}

for f in "$@"; do
	rm -f "$work"/*.t "$work"/*.timings
	cat "$f" >/dev/null
	names=(perl import)
	[ -n "${BENCH_BASELINE:-}" ] && names+=(baseline)
	for ((i = 0; i < runs; i++)); do
		timed perl perl "$top/tests/ref/stackcollapse-ref.pl" "$f"
		timed import "$fc" import --timings --store "$work/s" "$f"
		[ -n "${BENCH_BASELINE:-}" ] &&
			timed baseline "$BENCH_BASELINE" import --timings --store "$work/s" "$f"
	done
	echo
	echo "## $f: $(stat -c %s "$f") bytes, median of $runs runs taken in turn"
	pw=$(cut -d' ' -f1 "$work/perl.t" | median); pc=$(cut -d' ' -f2 "$work/perl.t" | median)
	printf '| %-8s | %8s | %8s | %s |\n' "" "wall s" "CPU s" "Perl / it, wall / CPU"
	for n in "${names[@]}"; do
		w=$(cut -d' ' -f1 "$work/$n.t" | median); c=$(cut -d' ' -f2 "$work/$n.t" | median)
		printf '| %-8s | %8s | %8s | %s |\n' "$n" "$w" "$c" \
			"$(awk -v a="$pw" -v b="$w" -v x="$pc" -v y="$c" 'BEGIN { printf "%.1fx / %.1fx", a / b, x / y }')"
	done
	for n in "${names[@]}"; do
		[ "$n" = perl ] && continue
		printf '%s --timings, medians (ms):' "$n"
		for ph in open parse commit settle; do
			printf ' %s %s' "$ph" "$(grep -o "$ph [0-9.]*" "$work/$n.timings" | cut -d' ' -f2 | median)"
		done
		echo
	done
done

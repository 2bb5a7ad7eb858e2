#!/usr/bin/env bash
# Many-files and fixed-cost benchmark (issue 20).  Prints numbers; asserts
# nothing.
#   usage: sudo bash tests/bench/many.sh [FILES]      (FILES: default 1000)
#   env:   BENCH_BASELINE=PROGRAM (another build's flamefs-collect: the
#          tiny import into the existing store is then also measured with
#          it, the two alternating, N=BENCH_AB_RUNS times, default 15),
#          BENCH_DIR=DIR (keep the work dir), BENCH_RT=1 (run each
#          measured import and the Perl collapser under `chrt -f 50`, so
#          that other work on a busy machine cannot preempt them: a
#          stand-in for a quiet machine; the CPU times do not need it)
# Measures, on this machine, in one run:
#   - FILES Go heap profiles (runtime/pprof protos written by a Go program
#     made here, a few KB each): one `import` call for all of them against
#     one call per file (the baseline), into a store that already holds
#     the first one; the two stores' exports are compared;
#   - the fixed cost of one import, with its breakdown from --timings
#     (open: the file, the store and its dictionary; parse; commit;
#     settle: the flush and compaction a close waits for) and the process
#     around it (exec, dynamic linking, exit), for a 1 KB folded file and a
#     40 MB perf script slice (tests/bench/gen-perf), each into a new store
#     and into an existing one (holding the 40 MB slice); the median of 7.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
nfiles=${1:-1000}
. "$top/tests/lib.sh"
. "$top/tests/bench/lib.sh"
bench_setup many --tools "go perl"
bench_machine
bench_wait_quiet || echo "# (the machine stayed busy: these numbers are upper bounds)"
echo "# work dir: $work"
rt=()
if [ -n "${BENCH_RT:-}" ]; then
	rt=(chrt -f 50)
	echo "# BENCH_RT: imports and the Perl collapser run under ${rt[*]}"
fi

now() { echo "$EPOCHREALTIME"; }
# timed OUT ERR CMD...: runs CMD (stdout to OUT, stderr to ERR) and sets t0
# and t1 to the clock just before and after it, read by a shell of the same
# scheduling class as CMD (with BENCH_RT, one that a busy machine does not
# delay between the two readings and the fork, exec and wait around CMD)
timed() {
	"${rt[@]}" bash -c 'a=$EPOCHREALTIME; "${@:3}" >"$1" 2>"$2"; b=$EPOCHREALTIME; echo "$a $b" >"$2.t"' \
		_ "$@"
	read -r t0 t1 <"$2.t"
}
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }

# ---- FILES Go heap profiles ---------------------------------------------------
dumps=$work/dumps
if [ ! -s "$dumps/heap.$nfiles.pb.gz" ]; then
	mkdir -p "$work/gen" "$dumps"
	cat >"$work/gen/main.go" <<'EOF'
// Writes N heap profiles (runtime/pprof, proto) while allocating, as a
// service that dumps a profile every few seconds would.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
)

var keep [][]byte

//go:noinline
func small(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 64+i%512))
	}
}

//go:noinline
func big(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 1<<16))
	}
}

func main() {
	n, _ := strconv.Atoi(os.Args[2])
	for i := 1; i <= n; i++ {
		small(2000)
		big(4)
		if len(keep) > 50000 {
			keep = nil
		}
		f, err := os.Create(fmt.Sprintf("%s/heap.%d.pb.gz", os.Args[1], i))
		if err != nil {
			panic(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			panic(err)
		}
		f.Close()
	}
}
EOF
	(cd "$work/gen" && { [ -f go.mod ] || go mod init gen >/dev/null 2>&1; } &&
		HOME=$work GOCACHE=$work/gocache go build -o gen . && ./gen "$dumps" "$nfiles")
fi
files=()
for ((i = 1; i <= nfiles; i++)); do files+=("$dumps/heap.$i.pb.gz"); done
bytes=$(cat "${files[@]}" | wc -c)
echo
echo "## $nfiles Go heap profiles ($(awk -v b="$bytes" -v n="$nfiles" 'BEGIN { printf "%.1f MB, %.1f KB each", b / 1e6, b / n / 1e3 }'))"
cat "${files[@]}" >/dev/null
rm -rf "$work/one" "$work/each"
"$fc" import --store "$work/one" "${files[0]}" 2>/dev/null
cp -a "$work/one" "$work/each"
t0=$(now)
"$fc" import --store "$work/one" "${files[@]:1}" 2>/dev/null
t1=$(now)
for f in "${files[@]:1}"; do "$fc" import --store "$work/each" "$f" 2>/dev/null; done
t2=$(now)
one=$(ms "$t0" "$t1") each=$(ms "$t1" "$t2")
same=no
cmp -s <("$fc" export --store "$work/one" --event inuse_space) \
	<("$fc" export --store "$work/each" --event inuse_space) && same=yes
echo "| | one call | one call per file | ratio |"
echo "|---|---|---|---|"
printf '| %d files into a store holding one | %.2f s (%.1f ms a file) | %.2f s (%.1f ms a file) | %s |\n' \
	$((nfiles - 1)) "$(awk -v m="$one" 'BEGIN { print m / 1000 }')" \
	"$(awk -v m="$one" -v n=$((nfiles - 1)) 'BEGIN { print m / n }')" \
	"$(awk -v m="$each" 'BEGIN { print m / 1000 }')" \
	"$(awk -v m="$each" -v n=$((nfiles - 1)) 'BEGIN { print m / n }')" \
	"$(awk -v a="$one" -v b="$each" 'BEGIN { printf "1/%.1f", b / a }')"
echo "(the two stores' inuse_space exports are identical: $same)"

# ---- the fixed cost of one import ----------------------------------------------
"$build/tests/gen-perf" 40000000 20000 >"$work/slice.perf"
for i in $(seq 1 20); do echo "app;main;f$i;g 1$i"; done | head -c 1000 >"$work/small.folded"
printf 'app;main;last 1\n' >>"$work/small.folded"
rm -rf "$work/existing"
"$fc" import --store "$work/existing" "$work/slice.perf" 2>/dev/null
cp -a "$work/existing" "$work/existing.orig"
echo
echo "## the fixed cost of one import (median of 7; ms)"
echo "| input | store | wall | CPU | open | parse | commit | settle | process (wall - the four) |"
echo "|---|---|---|---|---|---|---|---|---|"
# row LABEL FILE new|existing: one line of the table; sets row_wall and
# row_cpu, the medians (ms)
row() {
	local i t0 t1 line walls=() cpus=() o=() p=() c=() s=() r=()
	for i in 1 2 3 4 5 6 7; do
		rm -rf "$work/s"
		[ "$3" = existing ] && cp -a "$work/existing.orig" "$work/s"
		timed /dev/null "$work/err.txt" /usr/bin/time -o "$work/cpu.txt" -f 'cpu %U %S' \
			"$fc" import --timings --store "$work/s" "$2"
		line=$(cat "$work/err.txt" "$work/cpu.txt" | grep -E 'timings:|^cpu ' | tr '\n' ' ')
		cpus+=("$(sed -E 's/.*cpu ([0-9.]+) ([0-9.]+).*/\1 \2/' <<<"$line" | awk '{ printf "%.0f", ($1 + $2) * 1000 }')")
		read -r op pa co se < <(sed -E 's/.*open ([0-9.]+) ms, parse ([0-9.]+) ms, commit ([0-9.]+) ms, settle ([0-9.]+) ms.*/\1 \2 \3 \4/' <<<"$line")
		walls+=("$(ms "$t0" "$t1")") o+=("$op") p+=("$pa") c+=("$co") s+=("$se")
		r+=("$(awk -v w="$(ms "$t0" "$t1")" -v a="$op" -v b="$pa" -v c="$co" -v d="$se" 'BEGIN { printf "%.1f", w - a - b - c - d }')")
	done
	row_wall=$(printf '%s\n' "${walls[@]}" | median)
	row_cpu=$(printf '%s\n' "${cpus[@]}" | median)
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$3" \
		"$row_wall" "$row_cpu" "$(printf '%s\n' "${o[@]}" | median)" \
		"$(printf '%s\n' "${p[@]}" | median)" "$(printf '%s\n' "${c[@]}" | median)" \
		"$(printf '%s\n' "${s[@]}" | median)" "$(printf '%s\n' "${r[@]}" | median)"
}
row "1 KB folded" "$work/small.folded" new
row "1 KB folded" "$work/small.folded" existing
tiny_wall=$row_wall
row "40 MB perf script" "$work/slice.perf" new
row "40 MB perf script" "$work/slice.perf" existing
slice_wall=$row_wall slice_cpu=$row_cpu
# ab LABEL PROGRAM...: the tiny import into a copy of the existing store
# with each PROGRAM in turn, BENCH_AB_RUNS times; a line per program with
# the median wall and CPU (perf stat's task-clock when perf is there: the
# other measure of CPU has 10 ms steps)
ab() {
	local i p n=${BENCH_AB_RUNS:-15} label=$1
	local -A w c
	shift
	for ((i = 0; i < n; i++)); do
		for p in "$@"; do
			rm -rf "$work/s"
			cp -a "$work/existing.orig" "$work/s"
			if command -v perf >/dev/null; then
				# the wall from perf's duration_time: the command's
				# alone, without perf's own start
				timed /dev/null "$work/err.txt" perf stat -x, -e task-clock,duration_time \
					-o "$work/cpu.txt" "$p" import --store "$work/s" "$work/small.folded"
				c[$p]+="$(awk -F, '/task-clock/ { printf "%.2f", $1 }' "$work/cpu.txt") "
				w[$p]+="$(awk -F, '/duration_time/ { printf "%.1f", $1 / 1e6 }' "$work/cpu.txt") "
			else
				timed /dev/null "$work/err.txt" /usr/bin/time -o "$work/cpu.txt" -f '%U %S' \
					"$p" import --store "$work/s" "$work/small.folded"
				c[$p]+="$(awk '{ printf "%.0f", ($1 + $2) * 1000 }' "$work/cpu.txt") "
				w[$p]+="$(ms "$t0" "$t1") "
			fi
		done
	done
	for p in "$@"; do
		printf '| %s | %s | %s (%s-%s) | %s (%s-%s) |\n' "$label" "$p" \
			"$(tr ' ' '\n' <<<"${w[$p]}" | grep . | median)" \
			"$(tr ' ' '\n' <<<"${w[$p]}" | grep . | sort -n | head -n 1)" \
			"$(tr ' ' '\n' <<<"${w[$p]}" | grep . | sort -n | tail -n 1)" \
			"$(tr ' ' '\n' <<<"${c[$p]}" | grep . | median)" \
			"$(tr ' ' '\n' <<<"${c[$p]}" | grep . | sort -n | head -n 1)" \
			"$(tr ' ' '\n' <<<"${c[$p]}" | grep . | sort -n | tail -n 1)"
	done
}
if [ -n "${BENCH_BASELINE:-}" ]; then
	echo
	echo "## 1 KB folded into the existing store, alternating with the baseline (median of ${BENCH_AB_RUNS:-15}; ms)"
	echo "| input | program | wall (min-max) | CPU (min-max) |"
	echo "|---|---|---|---|"
	ab "1 KB folded" "$BENCH_BASELINE" "$fc"
fi
echo "(existing: a store holding the 40 MB slice: $("$fc" stats --store "$work/existing.orig" | tail -n 3 | head -n 1))"
# the baseline for the slice's per-byte throughput, in the same run
timed /dev/null "$work/err.txt" /usr/bin/time -o "$work/cpu.txt" -f '%U %S' \
	perl "$top/tests/ref/stackcollapse-ref.pl" "$work/slice.perf"
perl_cpu=$(awk '{ printf "%.0f", ($1 + $2) * 1000 }' "$work/cpu.txt")
perl_wall=$(ms "$t0" "$t1")
echo "(the Perl collapser, tests/ref/stackcollapse-ref.pl, on the 40 MB slice: $perl_wall ms wall, $perl_cpu ms CPU," \
	"$(awk -v b="$(stat -c %s "$work/slice.perf")" -v m="$perl_wall" 'BEGIN { printf "%.1f MB/s", b / m / 1e3 }'))"
echo
echo "## targets (issue 43)"
echo "- a tiny import into an existing store <= 20 ms (wall, median of 7): $tiny_wall ms," \
	"$(awk -v w="$tiny_wall" 'BEGIN { print (w <= 20) ? "met" : "MISSED" }')"
echo "- the 40 MB slice into an existing store >= 30x the Perl collapser (same run): wall $perl_wall / $slice_wall ms =" \
	"$(awk -v p="$perl_wall" -v i="$slice_wall" 'BEGIN { printf "%.1fx, %s", p / i, (p >= 30 * i) ? "met" : "MISSED" }');" \
	"CPU $perl_cpu / $slice_cpu ms = $(awk -v p="$perl_cpu" -v i="$slice_cpu" 'BEGIN { printf "%.1fx", p / i }')"
echo "# load average at the end: $(bench_load)"

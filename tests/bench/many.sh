#!/usr/bin/env bash
# Many-files and fixed-cost benchmark (issue 20).  Prints numbers; asserts
# nothing.
#   usage: sudo bash tests/bench/many.sh [FILES]      (FILES: default 1000)
#   env:   BENCH_DIR=DIR (keep the work dir)
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

now() { echo "$EPOCHREALTIME"; }
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
"$top/build-bench/tests/gen-perf" 40000000 20000 >"$work/slice.perf"
for i in $(seq 1 20); do echo "app;main;f$i;g 1$i"; done | head -c 1000 >"$work/small.folded"
printf 'app;main;last 1\n' >>"$work/small.folded"
rm -rf "$work/existing"
"$fc" import --store "$work/existing" "$work/slice.perf" 2>/dev/null
cp -a "$work/existing" "$work/existing.orig"
echo
echo "## the fixed cost of one import (median of 7; ms)"
echo "| input | store | wall | open | parse | commit | settle | process (wall - the four) |"
echo "|---|---|---|---|---|---|---|---|"
# row LABEL FILE new|existing
row() {
	local i t0 t1 line walls=() o=() p=() c=() s=() r=()
	for i in 1 2 3 4 5 6 7; do
		rm -rf "$work/s"
		[ "$3" = existing ] && cp -a "$work/existing.orig" "$work/s"
		t0=$(now)
		line=$("$fc" import --timings --store "$work/s" "$2" 2>&1 | grep 'timings:')
		t1=$(now)
		read -r op pa co se < <(sed -E 's/.*open ([0-9.]+) ms, parse ([0-9.]+) ms, commit ([0-9.]+) ms, settle ([0-9.]+) ms.*/\1 \2 \3 \4/' <<<"$line")
		walls+=("$(ms "$t0" "$t1")") o+=("$op") p+=("$pa") c+=("$co") s+=("$se")
		r+=("$(awk -v w="$(ms "$t0" "$t1")" -v a="$op" -v b="$pa" -v c="$co" -v d="$se" 'BEGIN { printf "%.1f", w - a - b - c - d }')")
	done
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$3" \
		"$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${o[@]}" | median)" \
		"$(printf '%s\n' "${p[@]}" | median)" "$(printf '%s\n' "${c[@]}" | median)" \
		"$(printf '%s\n' "${s[@]}" | median)" "$(printf '%s\n' "${r[@]}" | median)"
}
row "1 KB folded" "$work/small.folded" new
row "1 KB folded" "$work/small.folded" existing
row "40 MB perf script" "$work/slice.perf" new
row "40 MB perf script" "$work/slice.perf" existing
echo "(existing: a store holding the 40 MB slice: $("$fc" stats --store "$work/existing.orig" | tail -n 3 | head -n 1))"
# the baseline for the slice's per-byte throughput, in the same run
t0=$(now)
perl "$top/tests/ref/stackcollapse-ref.pl" "$work/slice.perf" >/dev/null
t1=$(now)
echo "(the Perl collapser, tests/ref/stackcollapse-ref.pl, on the 40 MB slice: $(ms "$t0" "$t1") ms," \
	"$(awk -v b="$(stat -c %s "$work/slice.perf")" -v m="$(ms "$t0" "$t1")" 'BEGIN { printf "%.1f MB/s", b / m / 1e3 }'))"
echo "# load average at the end: $(bench_load)"

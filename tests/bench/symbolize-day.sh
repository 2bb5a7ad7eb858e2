#!/bin/bash
# symbolize-day.sh — `flamefs-collect symbolize` of a 24-hour store (issue
# #42's target: its time and the bytes it fetches, stated; a view's first
# read unchanged).  Builds three programs of 56 functions each (-g, the
# debug part split off with objcopy --only-keep-debug as tests/lib-stripped.sh
# does, then stripped) and a stripped copy of this build's flamefs-collect
# when it has debug info (BENCH_BUILD=build, debugoptimized); records them
# with perf record -g (the three programs, then the flamefs-collect copy
# importing their perf script text), and spreads the recorded stacks over
# 1,440 minutes: PER_MIN samples a minute (default 300), each a recorded
# sample (with its stack) in turn, timed inside its minute, written as perf
# script text with the mmap events and imported in one run, so the store
# holds a day of minutes, the last 2 hours also as samples (--keep-samples'
# default).  A real `debuginfod -F` serves the debug files on a local port.
# Measured: symbolize's wall and CPU time and peak RSS, the bytes the server
# sent (its /metrics) and the client cache's size, the store's size before and
# after, and the first read of a fresh mount (the root's and a program's
# folded, median of ROUNDS mounts, default 5) before and after.  Prints
# markdown; asserts nothing.
#   usage: sudo [BENCH_BUILD=build] [PER_MIN=300] [ROUNDS=5] bash tests/bench/symbolize-day.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
bench_setup symbolize-day --root --tools "perf cc objcopy strip readelf debuginfod python3 curl fusermount3" \
	flamefs-collect fs/flamefs
per_min=${PER_MIN:-300}
rounds=${ROUNDS:-5}
pid= dpid=
umount_() {
	[ -n "$pid" ] || return 0
	fusermount3 -u "$work/mnt" 2>/dev/null || fusermount3 -u -z "$work/mnt" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	pid=
}
trap 'umount_; [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; bench_cleanup' EXIT
bench_machine

# ---- the modules: built with symbols, debug part kept aside, stripped ----
mkdir -p "$work/bin" "$work/debug" "$work/mnt"
keep_debug() { # FULL STRIPPED: the debug file into the .build-id tree, then strip
	local bid
	bid=$(readelf -n "$1" | awk '/Build ID:/ { print $3 }')
	mkdir -p "$work/debug/.build-id/${bid:0:2}"
	objcopy --only-keep-debug "$1" "$work/debug/.build-id/${bid:0:2}/${bid:2}.debug"
	strip -o "$2" "$1"
}
gen_prog() { # K: C source of program pK, 48 leaves under 8 middles
	local k=$1 i
	echo '#include <stdlib.h>'
	echo 'static volatile unsigned long sink;'
	for i in $(seq 0 47); do
		echo "__attribute__((noinline)) void p${k}_leaf_$i(unsigned long n)"
		echo "{ for (unsigned long j = 0; j < n; j++) sink += j ^ (sink >> $((i % 7 + 1))); }"
	done
	printf 'static void (*const leaves[48])(unsigned long) = {'
	for i in $(seq 0 47); do printf 'p%s_leaf_%s, ' "$k" "$i"; done
	echo '};'
	for i in $(seq 0 7); do
		echo "__attribute__((noinline)) void p${k}_mid_$i(unsigned long n, int r)"
		echo "{ leaves[(r * 7 + $i) % 48](n); leaves[(r * 5 + $((3 * i))) % 48](n); }"
	done
	printf 'static void (*const mids[8])(unsigned long, int) = {'
	for i in $(seq 0 7); do printf 'p%s_mid_%s, ' "$k" "$i"; done
	echo '};'
	echo 'int main(int argc, char **argv)'
	echo '{ unsigned long n = strtoul(argv[1], NULL, 10); int rounds = atoi(argv[2]);'
	echo '  for (int r = 0; r < rounds; r++) mids[r % 8](n, r); return argc < 3; }'
}
for k in 1 2 3; do
	gen_prog $k >"$work/p$k.c"
	cc -O0 -g -fno-omit-frame-pointer -o "$work/p$k.full" "$work/p$k.c" || exit 1
	keep_debug "$work/p$k.full" "$work/bin/p$k"
done
fc_copy=
if readelf -S "$fc" | grep -q '\.debug_info'; then
	fc_copy=$work/bin/flamefs-collect
	keep_debug "$fc" "$fc_copy"
else
	echo "# $fc has no debug info: its stripped copy is left out (BENCH_BUILD=build, a debugoptimized build)"
fi

# ---- a recording, spread over a day ----
perf record -q -g -F 999 -o "$work/a.data" -- sh -c \
	"for k in 1 2 3; do $work/bin/p\$k 20000 30000; done" >/dev/null 2>&1 || { echo "perf record failed"; exit 1; }
perf script --show-mmap-events -i "$work/a.data" >"$work/pool.txt" 2>/dev/null
if [ -n "$fc_copy" ]; then
	perf record -q -g -F 999 -o "$work/b.data" -- sh -c \
		"for i in 1 2 3 4 5; do $fc_copy import --store $work/scratch\$i $work/pool.txt || exit 1; done" \
		>/dev/null 2>&1 ||
		{ echo "perf record of the flamefs-collect copy failed"; exit 1; }
	perf script --show-mmap-events -i "$work/b.data" >>"$work/pool.txt" 2>/dev/null
fi
# The pool's samples (blank-line separated, header line first) re-timed:
# minute m of 1,440 gets PER_MIN of them in turn, spread inside it; the
# mmap events go first.  Times are seconds from 1000; --clock-offset puts
# minute 0 at the start of the day before the last whole minute.
python3 - "$per_min" "$work/pool.txt" "$work/day.txt" "$work/pool.n" <<'PY'
import re, sys
per, pool, out, nout = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
stamp = re.compile(r" [0-9]+\.[0-9]+: ")
mmaps, blocks, cur = [], [], []
for line in open(pool, errors="replace"):
    if "PERF_RECORD_" in line:
        mmaps.append(stamp.sub(" 999.000000: ", line, count=1))
    elif line.strip() == "":
        if cur:
            blocks.append("".join(cur))
        cur = []
    else:
        cur.append(line)
if cur:
    blocks.append("".join(cur))
# each block as the text before and after its header's time
parts = []
for b in blocks:
    m = stamp.search(b)
    if m:
        parts.append((b[: m.start()], b[m.end():]))
with open(out, "w") as f:
    f.writelines(mmaps)
    for m in range(1440):
        for j in range(per):
            head, tail = parts[(m * per + j) % len(parts)]
            f.write("%s %.6f: %s\n" % (head, 1000 + m * 60 + j * 60.0 / per + 0.000001, tail))
open(nout, "w").write("%d\n" % len(parts))
PY
now=$(date +%s)
day0=$(((now / 60) * 60 - 86400))
t0=$(date +%s%N)
"$fc" import --store "$work/store" --clock-offset $((day0 - 1000)) "$work/day.txt" >/dev/null 2>"$work/import.err" ||
	{ cat "$work/import.err"; exit 1; }
import_s=$(awk -v d=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", d / 1e9 }')
"$fc" compact --store "$work/store" >/dev/null 2>&1
echo "# the day: $(cat "$work/pool.n") recorded samples (perf record -g -F 999) spread as $per_min a minute over 1,440 minutes:" \
	"$((per_min * 1440)) samples, $(stat -c %s "$work/day.txt") bytes of perf script text, imported in $import_s s"

# ---- the server ----
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -d "$work/debuginfod.sqlite" -p "$port" -t 0 -g 0 "$work/debug" >"$work/debuginfod.log" 2>&1 &
dpid=$!
metric() { # the sum of the server's /metrics lines matching RE
	curl -s "http://127.0.0.1:$port/metrics" | awk -v re="$1" '$0 ~ re { s += $NF } END { printf "%.0f\n", s }'
}
# ready once it serves each debug file (its first scan done); the probes'
# transfers are counted out below
nfiles=0
for f in "$work"/debug/.build-id/*/*.debug; do
	b=$(basename "$(dirname "$f")")$(basename "$f" .debug)
	nfiles=$((nfiles + 1))
	for _ in $(seq 600); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/buildid/$b/debuginfo")" = 200 ] && break
		sleep 0.1
	done
done
for _ in $(seq 100); do
	[ "$(metric '^http_responses_transfer_bytes_count.*code="200",type="debuginfo"')" -ge "$nfiles" ] && break
	sleep 0.1
done
sent0=$(metric '^http_responses_transfer_bytes_sum.*code="200",type="debuginfo"')
n200_0=$(metric '^http_responses_transfer_bytes_count.*code="200",type="debuginfo"')
n404_0=$(metric '^http_responses_transfer_bytes_count.*code="404",type="debuginfo"')

# ---- first reads of a fresh mount ----
mount_() {
	"$flamefs" -f "$work/store" "$work/mnt" 2>/dev/null &
	pid=$!
	for _ in $(seq 200); do [ -e "$work/mnt/folded" ] && return 0; sleep 0.05; done
	echo "symbolize-day.sh: the mount did not come up" >&2
	exit 1
}
ms() { # wall milliseconds of one cat
	local a b
	a=$(date +%s%N)
	cat "$1" >/dev/null
	b=$(date +%s%N)
	awk -v d=$((b - a)) 'BEGIN { printf "%.1f", d / 1e6 }'
}
med() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mount_
prog_dir=$work/mnt/p1/$(ls "$work/mnt/p1" | grep -v '^@' | head -1)
umount_
reads() { # prints "ROOT_MS PROG_MS", medians of fresh mounts
	local root= prog= i
	for i in $(seq "$rounds"); do
		mount_
		root="$root $(ms "$work/mnt/folded")"
		prog="$prog $(ms "$prog_dir/folded")"
		umount_
	done
	echo "$(echo $root | med) $(echo $prog | med)"
}
snapshot() { # NAME: the root's folded and the program's, and the store's bytes
	mount_
	cat "$work/mnt/folded" >"$work/$1.root"
	cat "$prog_dir/folded" >"$work/$1.prog"
	umount_
	du -sb "$work/store" | cut -f1 >"$work/$1.bytes"
}
read -r root_before prog_before < <(reads)
snapshot before
unnamed() { grep -o '\[[^];]*\]' "$1" | wc -l; }

# ---- symbolize ----
# the baseline: the same store named from the debug files on local disk
cp -a "$work/store" "$work/store-local"
env -u DEBUGINFOD_URLS "${rusage[@]}" "$work/local.rusage" \
	"$fc" symbolize --store "$work/store-local" --debug-dir "$work/debug" 2>"$work/local.err" ||
	{ cat "$work/local.err"; exit 1; }
read -r lwall luser lsys lrss <"$work/local.rusage"
DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$work/cache" \
	"${rusage[@]}" "$work/sym.rusage" "$fc" symbolize --store "$work/store" 2>"$work/sym.err" ||
	{ cat "$work/sym.err"; exit 1; }
read -r wall user sys rss <"$work/sym.rusage"
sent=$(($(metric '^http_responses_transfer_bytes_sum.*code="200",type="debuginfo"') - sent0))
n200=$(($(metric '^http_responses_transfer_bytes_count.*code="200",type="debuginfo"') - n200_0))
n404=$(($(metric '^http_responses_transfer_bytes_count.*code="404",type="debuginfo"') - n404_0))
cache=$(du -sb "$work/cache" | cut -f1)
"$fc" compact --store "$work/store" >/dev/null 2>&1
read -r root_after prog_after < <(reads)
snapshot after

total() { awk '{ s += $NF } END { printf "%.0f\n", s }' "$1"; }
echo "# symbolize: $(head -1 "$work/sym.err" | sed 's/^flamefs-collect: symbolize: //')"
echo "# the day's store: $(grep -c . "$work/before.root") folded lines at the root; p1's folded: ${prog_dir#$work/mnt/}"
echo
echo "| symbolize of the 24-hour store | from debuginfod | baseline: --debug-dir, no server |"
echo "|---|---|---|"
echo "| wall | $(printf %.2f "$wall") s | $(printf %.2f "$lwall") s |"
echo "| CPU (user + sys) | $(printf '%.2f + %.2f' "$user" "$sys") s | $(printf '%.2f + %.2f' "$luser" "$lsys") s |"
echo "| peak RSS | $((rss / 1024)) MiB | $((lrss / 1024)) MiB |"
echo "| bytes the server sent (its /metrics, debuginfo 200s) | $sent in $n200 files ($n404 answers 404) | 0 |"
echo "| client cache after | $cache bytes | |"
echo "| the closing line | $(head -1 "$work/sym.err" | sed 's/^flamefs-collect: symbolize: //; s/;.*//') | $(head -1 "$work/local.err" | sed 's/^flamefs-collect: symbolize: //; s/;.*//') |"
echo
echo "| the store | before | after |"
echo "|---|---|---|"
echo "| bytes (du -sb, compacted) | $(cat "$work/before.bytes") | $(cat "$work/after.bytes") |"
echo "| bracketed frames in the root's folded | $(unnamed "$work/before.root") | $(unnamed "$work/after.root") |"
echo "| root's total | $(total "$work/before.root") | $(total "$work/after.root") |"
echo
echo "| first read of a fresh mount (median of $rounds, ms) | before | after |"
echo "|---|---|---|"
echo "| root folded ($(wc -c <"$work/before.root") / $(wc -c <"$work/after.root") bytes) | $root_before | $root_after |"
echo "| p1's folded ($(wc -c <"$work/before.prog") / $(wc -c <"$work/after.prog") bytes) | $prog_before | $prog_after |"

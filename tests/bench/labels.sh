#!/usr/bin/env bash
# Labels (issue 40), A/B: the recorder's CPU and the store's size with the
# default labels (L: cgroup, container, thread, exe) against --no-labels
# (N), on one load of 20 services, each in a cgroup of its own, recorded
# in turns round after round so that a change of the machine's load falls
# on both arms alike.  With BENCH_A=DIR, a third arm (A) records with the
# flamefs-collect of another build (e.g. main's, before labels).  Prints
# numbers as markdown; asserts nothing.
#   usage: sudo bash tests/bench/labels.sh
#   env:   DUR=SECONDS  each recording (default 20)
#          ROUNDS=N     turns of each arm (default 3)
#          HZ=HZ        -F (default 99)
#          BENCH_A=DIR  a build directory holding the flamefs-collect of A
#          BENCH_BUILD, BENCH_DIR as for every benchmark (lib.sh)
#
# Load: 20 services svc-00 … svc-19, each a shell loop in its own cgroup
# under the cgroup2 mount (svc-NN.service; every fifth a docker-shaped
# scope), doing in turn one of: sha256sum of a 4 MiB file, gzip of it,
# sort of a 20,000-line file, and a C program whose two named threads
# spin (tests/labels-target threads); each loop sleeps 50 ms between
# runs, so processes start all the time (about 20 execs a second).  Each
# arm records twice into fresh stores: system-wide (-a), for the
# recorder's CPU, the user+sys of the whole recorder from wait4
# (tests/bench/rusage.py), arms in turns; and the 20 services alone (-p
# the 20 loops, their children followed), every arm at once, for the
# store's size, which whatever else runs on the machine would change
# under -a: `stats`' dir bytes after
# `compact` (the whole directory, RocksDB's fixed files included), its
# data bytes (frames, nodes, counts, series and the recent tier), and its
# series count.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
DUR=${DUR:-20}
ROUNDS=${ROUNDS:-3}
HZ=${HZ:-99}

. "$top/tests/bench/lib.sh"
bench_setup labels --root --tools "python3 gzip sha256sum sort" flamefs-collect tests/labels-target
cgmount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$cgmount" ] || { echo "labels.sh: no cgroup2 mount" >&2; exit 1; }
cgroot=$cgmount/flamefs-bench-$$
arms="L N"
if [ -n "${BENCH_A:-}" ]; then
	[ -x "$BENCH_A/flamefs-collect" ] || { echo "labels.sh: $BENCH_A/flamefs-collect is not built" >&2; exit 1; }
	arms="A L N"
fi

cleanup_cgroups() {
	bench_stop_bg
	[ -d "$cgroot" ] || return 0
	for d in "$cgroot"/*/; do
		[ -d "$d" ] || continue
		while read -r p; do echo "$p" >"$cgmount/cgroup.procs" 2>/dev/null || true; done <"$d/cgroup.procs"
		rmdir "$d" 2>/dev/null || true
	done
	rmdir "$cgroot" 2>/dev/null || true
}
trap 'cleanup_cgroups; bench_cleanup' EXIT

head -c 4M /dev/urandom >"$work/blob"
seq 20000 | shuf >"$work/lines"
mkdir "$cgroot"
for i in $(seq 0 19); do
	n=$(printf '%02d' "$i")
	if [ $((i % 5)) -eq 4 ]; then
		cg=$cgroot/docker-$(printf 'svc-%s' "$n" | sha256sum | cut -c1-64).scope
	else
		cg=$cgroot/svc-$n.service
	fi
	mkdir "$cg"
	case $((i % 4)) in
	0) job="sha256sum '$work/blob' >/dev/null" ;;
	1) job="gzip -1 -c '$work/blob' >/dev/null" ;;
	2) job="sort '$work/lines' >/dev/null" ;;
	3) job="'$build/tests/labels-target' threads 20000000 >/dev/null" ;;
	esac
	bench_bg bash -c "echo \$\$ >'$cg/cgroup.procs' && while :; do $job; sleep 0.05; done"
done
# The 20 loops' shells, for -p.
services=$(for f in "$cgroot"/*/cgroup.procs; do
	for p in $(cat "$f"); do
		if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = bash ]; then echo "$p"; fi
	done | sort -n | head -n 1
done | paste -sd,)
sleep 2

echo "# flamefs-collect record: labels against --no-labels"
echo
bench_machine
echo "L: $fc ($(git -C "$top" rev-parse --short HEAD)), default labels"
echo "N: the same, --no-labels"
[ -n "${BENCH_A:-}" ] && echo "A: $BENCH_A/flamefs-collect"
echo "recording: -a -F $HZ, $DUR s each, $ROUNDS rounds of $arms; 20 services in 20 cgroups"
echo "load average with the load running: $(bench_load)"
echo

declare -A cpu samples bytes data series
cpu_run() { # ARM ROUND
	local arm=$1 r=$2 s="$work/s-$1-$2" bin=$fc extra=()
	[ "$arm" = A ] && bin=$BENCH_A/flamefs-collect
	[ "$arm" = N ] && extra=(--no-labels)
	rm -rf "$s"
	"${rusage[@]}" "$work/t-$arm-$r" "$bin" record --store "$s" -a -F "$HZ" -d "$DUR" \
		"${extra[@]}" >/dev/null 2>"$work/log-$arm-$r" ||
		echo "($arm round $r exited with $?: $work/log-$arm-$r)"
	cpu[$arm,$r]=$(awk '{ printf "%.3f", $2 + $3 }' < <(tail -n 1 "$work/t-$arm-$r"))
	rm -rf "$s"
}
# The size: every arm records the same 20 loops (-p) at the same time, so
# that each arm's store holds the same stretch of the same load (arms in
# turns saw 10-20% more or fewer samples from one another); each store is
# compacted by its own build.
size_round() { # ROUND
	local r=$1 arm bin extra pids=()
	for arm in $arms; do
		bin=$fc extra=()
		[ "$arm" = A ] && bin=$BENCH_A/flamefs-collect
		[ "$arm" = N ] && extra=(--no-labels)
		rm -rf "$work/p-$arm-$r"
		"$bin" record --store "$work/p-$arm-$r" -p "$services" -F "$HZ" -d "$DUR" "${extra[@]}" \
			>/dev/null 2>"$work/logp-$arm-$r" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || echo "(round $r, -p, a recorder exited with $?)"; done
	for arm in $arms; do
		local s="$work/p-$arm-$r"
		bin=$fc
		[ "$arm" = A ] && bin=$BENCH_A/flamefs-collect
		"$bin" compact --store "$s" >/dev/null 2>&1 || true
		"$fc" stats --store "$s" >"$work/stats-$arm-$r" 2>/dev/null || true
		samples[$arm,$r]=$(awk 'NR == 1 { next } NF == 0 { exit } { s += $4 } END { printf "%.0f\n", s }' "$work/stats-$arm-$r")
		series[$arm,$r]=$(awk '/ series, [0-9]+ frames/ { print $1 }' "$work/stats-$arm-$r")
		bytes[$arm,$r]=$(grep -o 'dir=[0-9]*' "$work/stats-$arm-$r" | cut -d= -f2)
		data[$arm,$r]=$(awk '/^bytes: / { for (i = 3; i <= 7; i++) { split($i, kv, "="); d += kv[2] } print d }' "$work/stats-$arm-$r")
		rm -rf "$s"
	done
}

printf '| round |'
for a in $arms; do printf ' %s CPU s | %s samples | %s series | %s dir bytes | %s data bytes |' "$a" "$a" "$a" "$a" "$a"; done
echo
printf '|---|'
for a in $arms; do printf -- '---|---|---|---|---|'; done
echo
for r in $(seq 1 "$ROUNDS"); do
	for a in $arms; do cpu_run "$a" "$r"; done
	size_round "$r"
	printf '| %s |' "$r"
	for a in $arms; do printf ' %s | %s | %s | %s | %s |' "${cpu[$a,$r]}" "${samples[$a,$r]}" "${series[$a,$r]}" "${bytes[$a,$r]}" "${data[$a,$r]}"; done
	echo
done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "| arm | median CPU s (-a) | % of one core | median dir bytes (-p) | median data bytes (-p) | data bytes per sample |"
echo "|---|---|---|---|---|---|"
declare -A mc mb md
for a in $arms; do
	mc[$a]=$(for r in $(seq 1 "$ROUNDS"); do echo "${cpu[$a,$r]}"; done | median)
	mb[$a]=$(for r in $(seq 1 "$ROUNDS"); do echo "${bytes[$a,$r]}"; done | median)
	md[$a]=$(for r in $(seq 1 "$ROUNDS"); do echo "${data[$a,$r]}"; done | median)
	n=$(for r in $(seq 1 "$ROUNDS"); do echo "${samples[$a,$r]}"; done | median)
	awk -v a="$a" -v m="${mc[$a]}" -v b="${mb[$a]}" -v x="${md[$a]}" -v n="$n" -v d="$DUR" \
		'BEGIN { printf "| %s | %.3f | %.2f%% | %.0f | %.0f | %.1f |\n", a, m, 100 * m / d, b, x, (n > 0 ? x / n : 0) }'
done
echo
ratios() { # ARM BASE
	awk -v a="$1" -v b="$2" -v l="${mc[$1]}" -v n="${mc[$2]}" -v bl="${mb[$1]}" -v bn="${mb[$2]}" \
		-v dl="${md[$1]}" -v dn="${md[$2]}" 'BEGIN {
		printf "%s / %s: CPU %.2fx (target <= 1.1x), store size %.2fx by directory, %.2fx by data (target <= 1.2x)\n",
			a, b, (n > 0 ? l / n : 0), (bn > 0 ? bl / bn : 0), (dn > 0 ? dl / dn : 0) }'
}
ratios L N
[ -n "${BENCH_A:-}" ] && ratios L A
true

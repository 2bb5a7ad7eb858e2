#!/usr/bin/env bash
# The recorder's CPU, A/B: the same load recorded in turns by two builds of
# flamefs-collect (A, e.g. main's; B, this tree's) and by B with
# --keep-samples 0 (B0: no samples kept whole, counts only, as A), round
# after round, so that a change of the machine's load falls on every arm
# alike.  Prints numbers as markdown; asserts nothing.
#   usage: sudo BENCH_A=DIR bash tests/bench/record-ab.sh
#   env:   BENCH_A=DIR   a build directory holding A's flamefs-collect
#          BENCH_A_REV=REV  what A was built from, for the output
#          DUR=SECONDS   each recording (default 20)
#          ROUNDS=N      turns of A, B and B0 (default 5)
#          HZ=HZ         -F (default 99); EVENTS=LIST  -e (default cpu)
#          BENCH_BUILD, BENCH_DIR as for every benchmark (lib.sh)
#
# Load: two CPU burners (contrib/demo-server), and with EVENTS holding
# offcpu a thread pair that hands a token back and forth through a pipe
# (a context switch each way).  Each recording is system-wide (-a) into a
# fresh store; its CPU is the user+sys of the whole process from wait4
# (tests/bench/rusage.py): BPF load, start-up, drains, last drain.  The
# samples stored come from `stats` (its SAMPLES column); B's samples with and without their
# moment from its --verbose summary.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
DUR=${DUR:-20}
ROUNDS=${ROUNDS:-5}
HZ=${HZ:-99}
EVENTS=${EVENTS:-cpu}
: "${BENCH_A:?set BENCH_A to the build directory of the flamefs-collect to compare with}"

. "$top/tests/bench/lib.sh"
bench_setup record-ab --root --tools "python3 cc" flamefs-collect contrib/demo-server
fa="$BENCH_A/flamefs-collect"
[ -x "$fa" ] || { echo "record-ab.sh: $fa is not built" >&2; exit 1; }

store_samples() {
	{ "$fc" stats --store "$1" 2>/dev/null || true; } |
		awk 'NR == 1 { next } NF == 0 { exit } { s += $4 } END { printf "%.0f\n", s }'
}

# The ping-pong load for offcpu: two threads, a context switch each way.
cat >"$work/pingpong.c" <<'EOF'
#include <pthread.h>
#include <unistd.h>
static int ab[2], ba[2];
static void *other(void *p)
{
	char c;
	(void)p;
	for (;;) {
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			return NULL;
	}
}
int main(void)
{
	pthread_t t;
	char c = 'x';
	if (pipe(ab) || pipe(ba) || pthread_create(&t, NULL, other, NULL))
		return 1;
	for (;;) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
	}
}
EOF
cc -O2 -pthread -o "$work/pingpong" "$work/pingpong.c"

echo "# flamefs-collect record: CPU, A/B"
echo
bench_machine
echo "A: $fa${BENCH_A_REV:+ ($BENCH_A_REV)}"
echo "B: $fc ($(git -C "$top" rev-parse --short HEAD))"
echo "recording: -a -F $HZ -e $EVENTS, $DUR s each, $ROUNDS rounds of A, B, B0 (B --keep-samples 0)"
for i in 1 2; do
	bench_bg "$build/contrib/demo-server" 100000 >/dev/null 2>&1
done
if [[ $EVENTS == *offcpu* ]]; then
	bench_bg "$work/pingpong"
fi
sleep 1
echo "load average with the load running: $(bench_load)"
echo

declare -A cpu samples with without
run() { # ARM ROUND
	local arm=$1 r=$2 s="$work/s-$1-$2" bin=$fc extra=()
	[ "$arm" = A ] && bin=$fa
	[ "$arm" = B0 ] && extra=(--keep-samples 0)
	rm -rf "$s"
	"${rusage[@]}" "$work/t-$arm-$r" "$bin" record --verbose --store "$s" -a -F "$HZ" \
		-e "$EVENTS" -d "$DUR" "${extra[@]}" >/dev/null 2>"$work/log-$arm-$r" ||
		echo "($arm round $r exited with $?: $work/log-$arm-$r)"
	cpu[$arm,$r]=$(awk '{ printf "%.3f", $2 + $3 }' < <(tail -n 1 "$work/t-$arm-$r"))
	samples[$arm,$r]=$(store_samples "$s")
	with[$arm,$r]=$(grep -o 'moments: [0-9]*' "$work/log-$arm-$r" | cut -d' ' -f2 || true)
	without[$arm,$r]=$(grep -o '[0-9]* without a moment' "$work/log-$arm-$r" | cut -d' ' -f1 || true)
	rm -rf "$s"
}

echo "| round | A CPU s | B CPU s | B0 CPU s | A samples | B samples (with moment / without) | B0 samples |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
	for arm in A B B0; do
		run "$arm" "$r"
	done
	echo "| $r | ${cpu[A,$r]} | ${cpu[B,$r]} | ${cpu[B0,$r]} | ${samples[A,$r]} |" \
		"${samples[B,$r]} (${with[B,$r]:-?} / ${without[B,$r]:-?}) | ${samples[B0,$r]} |"
done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "| arm | median CPU s | % of one core | CPU µs per sample stored |"
echo "|---|---|---|---|"
for arm in A B B0; do
	m=$(for r in $(seq 1 "$ROUNDS"); do echo "${cpu[$arm,$r]}"; done | median)
	n=$(for r in $(seq 1 "$ROUNDS"); do echo "${samples[$arm,$r]}"; done | median)
	awk -v a="$arm" -v m="$m" -v n="$n" -v d="$DUR" \
		'BEGIN { printf "| %s | %.3f | %.2f%% | %.1f |\n", a, m, 100 * m / d, (n > 0 ? 1e6 * m / n : 0) }'
done

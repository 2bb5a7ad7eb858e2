#!/usr/bin/env bash
# The recorder's CPU under process churn, A/B: this tree's `record -a -F 99`
# and another build's (BASE=PATH to its flamefs-collect) side by side on
# the same churn loop as tests/bench/churn.sh, at the same time, so that a
# machine shared with other work loads both alike.  Prints markdown;
# asserts nothing.
#   usage: sudo BASE=/path/to/flamefs-collect bash tests/bench/churn-ab.sh
#   env:   DUR=SECONDS each round (default 40, at least 20), ROUNDS=N
#          (default 3), LOOPS=N churn loops (default 1), BENCH_DIR,
#          BENCH_BUILD (lib.sh)
#
# For each recorder and round: its CPU over the whole run (user+sys from
# wait4, start-up included: reading every process in /proc and building
# the first unwind tables) and in steady state, from the 10th second to
# two seconds before the end (utime+stime from /proc/PID/stat, in clock
# ticks), each per 1,000 processes started meanwhile (the kernel's fork
# count), and the share of weight cut short ([truncated]) over the churn
# loop's own programs (gcc, cc1, as, python3, sh, true) and over all.  The
# run summary's lines on loader's hooks and re-reads follow.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
DUR=${DUR:-40}
ROUNDS=${ROUNDS:-3}
LOOPS=${LOOPS:-1}
[ "$DUR" -ge 20 ] || { echo "churn-ab.sh: DUR must be at least 20" >&2; exit 1; }
[ -x "${BASE:-}" ] || { echo "churn-ab.sh: BASE=PATH to the baseline's flamefs-collect" >&2; exit 1; }

. "$top/tests/bench/lib.sh"
bench_setup churn-ab --root --tools "gcc /usr/bin/python3" flamefs-collect

bench_churn_load
tck=$(getconf CLK_TCK)
ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
child_of() { # PID: its one child (the recorder under rusage.py)
	local c line f
	for c in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$c" || continue
		f=(${line##*) })
		[ "${f[1]}" = "$1" ] && { echo "${c//[^0-9]/}"; return 0; }
	done
	return 0 # not started yet: nothing printed
}
# truncated FOLDED: "loop% all%" of the weight under [truncated]
truncated() {
	awk '{ w = $NF; t += w; split($0, f, ";"); loop = f[1] ~ /^(gcc|x86_64-linux-gnu-gcc-12|cc1|as|x86_64-linux-gnu-as|python3(\.[0-9]+)?|sh|dash|true)$/
	       if (loop) lt += w; if ($0 ~ /;\[truncated\]/) { tr += w; if (loop) ltr += w } }
	     END { printf "%.2f %.2f\n", lt ? 100 * ltr / lt : 0, t ? 100 * tr / t : 0 }' "$1"
}

bench_machine
echo "# churn A/B: $LOOPS loop(s) of gcc -c + python3 -c pass + sh -c 'true x5'; record -a -F 99 for ${DUR} s, both at once"
echo "# base: $BASE"
echo "# new:  $fc"
echo
echo "| round | build | processes (rate) | CPU, whole run | per 1,000 | CPU, seconds 10-$((DUR - 2)) | per 1,000 | [truncated]: loop's programs / all |"
echo "|---|---|---|---|---|---|---|---|"
for r in $(seq "$ROUNDS"); do
	for _ in $(seq "$LOOPS"); do bench_bg bash "$work/churn-loop.sh" >/dev/null 2>&1; done
	sleep 2
	rm -rf "$work"/store-*-"$r"
	f0=$(bench_forks)
	"${rusage[@]}" "$work/time-base-$r" "$BASE" record --verbose --store "$work/store-base-$r" -a -F 99 -d "$DUR" \
		2>"$work/err-base-$r" &
	wb=$!
	"${rusage[@]}" "$work/time-new-$r" "$fc" record --verbose --store "$work/store-new-$r" -a -F 99 -d "$DUR" \
		2>"$work/err-new-$r" &
	wn=$!
	pb='' pn=''
	for _ in $(seq 50); do # the recorders, once rusage.py has started them
		[ -n "$pb" ] || pb=$(child_of "$wb")
		[ -n "$pn" ] || pn=$(child_of "$wn")
		[ -n "$pb" ] && [ -n "$pn" ] && break
		sleep 0.1
	done
	[ -n "$pb" ] && [ -n "$pn" ] || { echo "churn-ab.sh: a recorder did not start" >&2; exit 1; }
	sleep 9
	g0=$(bench_forks) b0=$(ticks "$pb") n0=$(ticks "$pn")
	sleep $((DUR - 12))
	g1=$(bench_forks) b1=$(ticks "$pb") n1=$(ticks "$pn")
	wait "$wb" "$wn" || true
	f1=$(bench_forks)
	bench_stop_bg
	for b in base new; do
		if [ "$b" = base ]; then
			bin=$BASE s=$((b1 - b0))
		else
			bin=$fc s=$((n1 - n0))
		fi
		"$bin" export --store "$work/store-$b-$r" >"$work/folded-$b-$r"
		read -r wall user sys _ <"$work/time-$b-$r"
		read -r ltr atr < <(truncated "$work/folded-$b-$r")
		awk -v r="$r" -v b="$b" -v p=$((f1 - f0)) -v q=$((g1 - g0)) -v d=$((DUR - 12)) -v w="$wall" \
			-v c="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" -v s="$s" -v t="$tck" \
			-v ltr="$ltr" -v atr="$atr" 'BEGIN {
			printf "| %d | %s | %d (%.0f/s) | %.3f s (%.2f%%) | %.1f ms | %.2f s (%.2f%%) | %.1f ms | %s%% / %s%% |\n",
				r, b, p, p / w, c, 100 * c / w, p ? 1e6 * c / p : 0, s / t, 100 * s / t / d, q ? 1e6 * s / t / q : 0, ltr, atr }'
	done
done
echo
for r in $(seq "$ROUNDS"); do
	for b in base new; do
		echo "$b, round $r:"
		grep -h "loader's hooks\|unwind tables" "$work/err-$b-$r" | sed 's/^/    /'
	done
done

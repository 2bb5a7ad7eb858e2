#!/usr/bin/env bash
# JIT-map benchmark for `flamefs-collect record` (issue #23, "Targets":
# Java), side by side with perf on the same execution.  Prints numbers as
# markdown; asserts nothing (a "met"/"missed" note per round).
#   usage: sudo bash tests/bench/jit.sh
#   env:   ROUNDS (default 3), SECS (default 8: the Java loop), HZ (default
#          499), BENCH_DIR, BENCH_BUILD (see lib.sh)
#
# tests/java/Work.java (hot ~3/4, side ~1/4 of its loop) runs with
# -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions
# -XX:+DumpPerfMapAtExit, which writes /tmp/perf-PID.map only as the JVM
# exits.  Each round records one execution with both tools: flamefs runs
# `perf record -e cpu-clock -c PERIOD -g -- java …` as its COMMAND (perf's
# own samples are in flamefs's series of perf, left out), then
# `perf script` names perf's samples from the map.  It prints the shares of
# the samples under Work.hot and Work.side for both, flamefs's summary of
# the late JIT frames, and its own CPU (its summary's getrusage figure:
# wait4 would add the JVM's).  Then the same with --jit-wait 0, the
# behaviour before issue 23: the JIT frames stored as they are named at
# each drain.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-8}
HZ=${HZ:-499}
period=$((1000000000 / HZ))

. "$top/tests/bench/lib.sh"
bench_setup jit --root --tools "perf java javac" flamefs-collect
cleanup() {
	local p
	for p in $(sed -n 's/^pid \([0-9]*\)$/\1/p' "$work"/*.out 2>/dev/null); do
		rm -f "/tmp/perf-$p.map"
	done
	bench_cleanup
}
trap cleanup EXIT

javac -encoding UTF-8 -d "$work/classes" "$top/tests/java/Work.java"
jvm=(java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit
	-cp "$work/classes" Work $((SECS * 1000)))

# share FILE REGEX: weight of the folded lines matching REGEX over all.
share() {
	RE=$2 awk '{ w = $NF; t += w; sub(/ [0-9]+$/, ""); if ($0 ~ ENVIRON["RE"]) s += w }
		END { printf "%.3f", t ? s / t : 0 }' "$1"
}

# run NAME [RECORD OPTIONS...]: one execution under both tools; prints a
# table row.
run() {
	local name=$1 i=$2
	shift 2
	local d=$work/$name.$i
	"$fc" record --store "$d.store" -F "$HZ" "$@" -- perf record -q -e cpu-clock -c $period -g \
		-o "$d.data" -- "${jvm[@]}" >"$d.out" 2>"$d.err"
	perf script -i "$d.data" 2>/dev/null >"$d.script"
	local ph ps hot side unk cpu late
	read -r ph ps < <(awk 'BEGIN { RS = "" }
		{ n++; if (/Work\.hot/) h++; else if (/Work\.side/) s++ }
		END { printf "%.3f %.3f\n", n ? h / n : 0, n ? s / n : 0 }' "$d.script")
	"$fc" export --store "$d.store" --binary java >"$d.f" 2>/dev/null
	hot=$(share "$d.f" ';double Work\.hot($|;)')
	side=$(share "$d.f" ';double Work\.side($|;)')
	unk=$(share "$d.f" ';JavaCalls::call_helper;(.*;)?\[(unknown|perf-[0-9]+\.map)\]($|;)')
	cpu=$(sed -n 's/.*collector CPU \([0-9.]*\) s in all.*/\1/p' "$d.err")
	late=$(sed -n 's/.*JIT frames without a perf map entry: \([0-9]*\) samples (\([0-9]*\) held, at most \([0-9.]*\) KiB); \([0-9]*\) named later, \([0-9]*\) stored unnamed at.*, \([0-9]*\) stored unnamed over --jit-memory, \([0-9]*\) over --jit-wait/\1 \/ \2 \/ \4 \/ \5+\6+\7 \/ \3/p' "$d.err")
	local met
	met=$(awk -v a="$hot" -v b="$ph" -v c="$side" -v e="$ps" 'BEGIN {
		d1 = a - b; d2 = c - e; if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2
		print (d1 <= 0.05 && d2 <= 0.05) ? "met" : "missed" }')
	echo "| $name | $i | $hot | $side | $ph | $ps | $met | $unk | $late | $cpu |"
}

bench_machine
echo "# load average: $(bench_load)"
echo "# Work.java ${SECS} s, flamefs at $HZ Hz, perf -c $period (the same rate), $ROUNDS rounds"
echo
echo "| flamefs | round | Work.hot | Work.side | perf Work.hot | perf Work.side | within 5 points | unnamed under JavaCalls::call_helper | late: seen / held / named later / unnamed (exit+memory+wait) / peak KiB | collector CPU s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for i in $(seq "$ROUNDS"); do
	run default "$i"
	run jit-wait-0 "$i" --jit-wait 0
done

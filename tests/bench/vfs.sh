#!/usr/bin/env bash
# `record -e vfs` benchmark (issue #40): what the vfs events cost a
# program that does nothing but I/O.  Prints numbers as markdown; asserts
# nothing.
#   usage: sudo bash tests/bench/vfs.sh
#   env:   COUNT=BLOCKS (default 262144: 1 GiB in 4 KiB blocks), REPS=N
#          (default 7 rounds), BENCH_BUILD, BENCH_DIR (tests/bench/lib.sh)
#
# `dd if=/dev/zero of=/dev/shm/… bs=4k count=COUNT` at full speed, each
# round running, one after the other: dd alone; dd under
# `record -e vfs -- dd …` (the default N, 1 MiB); dd under
# `record -e vfs:1 -- dd …` (unsampled: a stack at every call); dd beside
# `record -e vfs -p PID` of an idle process (dd not followed: what every
# other process pays while vfs is recorded, the system-call exit
# tracepoint with a program that returns at once).  The time
# is dd's own (its "copied, S s" line), so the recorder's start-up and last
# drain are not in it.  Each dd block is two calls, a read of /dev/zero and
# a write to the tmpfs, so an unsampled run takes 2 x COUNT stacks.  The
# median of the rounds per mode; the slowdown against dd alone; the cost of
# one unsampled event, (median unsampled - median alone) / (2 x COUNT).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
bench_setup vfs --root --tmpfs --nice flamefs-collect
count=${COUNT:-262144}
reps=${REPS:-7}

bench_machine
bench_wait_quiet 2.0 60 || echo "# (busier than wanted; figures are medians of interleaved rounds)"

# run MODE: one dd, alone or recorded; prints dd's seconds.
run() {
	local out=$work/x err=$work/dd.err
	rm -f "$out"
	case $1 in
	none) dd if=/dev/zero of="$out" bs=4k count="$count" 2>"$err" ;;
	other)
		rm -rf "$work/store"
		sleep 600 &
		local idle=$! rec
		"$fc" record --store "$work/store" -e vfs -p "$idle" 2>"$work/other.err" &
		rec=$!
		for _ in $(seq 600); do grep -q 'Ctrl-C stops' "$work/other.err" 2>/dev/null && break; sleep 0.05; done
		dd if=/dev/zero of="$out" bs=4k count="$count" 2>"$err"
		kill -INT "$rec"
		wait "$rec"
		kill "$idle"
		wait "$idle" 2>/dev/null
		;;
	*)
		# dd's stderr is the recorder's
		rm -rf "$work/store"
		"$fc" record --store "$work/store" -e "$1" -- \
			dd if=/dev/zero of="$out" bs=4k count="$count" 2>"$err" ||
			{ cat "$err" >&2; exit 1; }
		;;
	esac
	sed -n 's/.* copied, \([0-9.]*\) s, .*/\1/p' "$err"
}

modes=(none other vfs vfs:1)
declare -A times
for ((i = 0; i < reps; i++)); do
	for m in "${modes[@]}"; do
		times[$m]+="$(run "$m") "
	done
done
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
med() { tr ' ' '\n' <<<"${times[$1]}" | grep . | median; }
base=$(med none)
echo
echo "dd if=/dev/zero of=/dev/shm/... bs=4k count=$count, $reps rounds, median of dd's own time:"
echo
echo "| | dd time (s) | MB/s | slowdown | rounds (s) |"
echo "|---|---|---|---|---|"
for m in "${modes[@]}"; do
	t=$(med "$m")
	awk -v m="$m" -v t="$t" -v b="$base" -v c="$count" -v all="${times[$m]}" 'BEGIN {
		name = m == "none" ? "dd alone" : m == "other" ? "dd beside record -e vfs -p IDLE (not followed)" : "record -e " m " -- dd"
		printf "| %s | %.3f | %.0f | %+.1f%% | %s|\n", name, t, c * 4096 / t / 1e6, (t / b - 1) * 100, all }'
done
echo
awk -v t="$(med vfs:1)" -v b="$base" -v c="$count" 'BEGIN {
	printf "one unsampled event (a stack per call): %.0f ns ((median vfs:1 - median alone) / %d calls)\n",
		(t - b) * 1e9 / (2 * c), 2 * c }'
echo "# load average at the end: $(bench_load)"

#!/usr/bin/env bash
# `record -e vfs` benchmark (issue #40): what the vfs events cost a
# program that does nothing but I/O.  Prints numbers as markdown; asserts
# nothing.
#   usage: sudo bash tests/bench/vfs.sh
#   env:   COUNT=BLOCKS (default 262144: 1 GiB in 4 KiB blocks), REPS=N
#          (default 7 rounds), MODES (default "none other vfs vfs:1": dd
#          alone, beside a recording of another process, and recorded with
#          each -e spec that follows), BENCH_BUILD, BENCH_DIR
#          (tests/bench/lib.sh)
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

# run MODE: one dd, alone or recorded; prints dd's CPU time (user + sys,
# from wait4: the system calls and the BPF program they run are dd's; a
# busy machine inflates wall time, not this) and its own wall time.
run() {
	local out=$work/x err=$work/dd.err ru=$work/ru
	local dd=("${rusage[@]}" "$ru" dd if=/dev/zero of="$out" bs=4k count="$count")
	rm -f "$out"
	case $1 in
	none) "${dd[@]}" 2>"$err" ;;
	other)
		rm -rf "$work/store"
		sleep 600 &
		local idle=$! rec
		"$fc" record --store "$work/store" -e vfs -p "$idle" 2>"$work/other.err" &
		rec=$!
		for _ in $(seq 600); do grep -q 'Ctrl-C stops' "$work/other.err" 2>/dev/null && break; sleep 0.05; done
		"${dd[@]}" 2>"$err"
		kill -INT "$rec"
		wait "$rec"
		kill "$idle"
		wait "$idle" 2>/dev/null
		;;
	*)
		# dd's stderr is the recorder's
		rm -rf "$work/store"
		"$fc" record --store "$work/store" -e "$1" -- "${dd[@]}" 2>"$err" ||
			{ cat "$err" >&2; exit 1; }
		;;
	esac
	awk '{ printf "%.6f", $2 + $3 }' "$ru"
	printf ' %s\n' "$(sed -n 's/.* copied, \([0-9.]*\) s, .*/\1/p' "$err")"
}

modes=()
read -ra modes <<<"${MODES:-none other vfs vfs:1}"
declare -A cpu wall
for ((i = 0; i < reps; i++)); do
	for m in "${modes[@]}"; do
		read -r c w <<<"$(run "$m")"
		cpu[$m]+="$c "
		wall[$m]+="$w "
	done
done
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
base=$(med "${cpu[none]}")
wbase=$(med "${wall[none]}")
echo
echo "dd if=/dev/zero of=/dev/shm/... bs=4k count=$count, $reps rounds, medians of dd's CPU time (user + sys)"
echo "and of its own wall time:"
echo
echo "| | dd CPU (s) | CPU slowdown | dd wall (s) | wall slowdown | CPU of each round (s) |"
echo "|---|---|---|---|---|---|"
for m in "${modes[@]}"; do
	awk -v m="$m" -v t="$(med "${cpu[$m]}")" -v b="$base" -v w="$(med "${wall[$m]}")" -v wb="$wbase" \
		-v all="${cpu[$m]}" 'BEGIN {
		name = m == "none" ? "dd alone" : m == "other" ? "dd beside record -e vfs -p IDLE (not followed)" : "record -e " m " -- dd"
		printf "| %s | %.3f | %+.1f%% | %.3f | %+.1f%% | %s|\n", name, t, (t / b - 1) * 100, w, (w / wb - 1) * 100, all }'
done
echo
[ -n "${cpu[vfs:1]:-}" ] && awk -v t="$(med "${cpu[vfs:1]}")" -v b="$base" -v c="$count" 'BEGIN {
	printf "one unsampled event (a stack per call): %.0f ns of dd'"'"'s CPU ((median vfs:1 - median alone) / %d calls)\n",
		(t - b) * 1e9 / (2 * c), 2 * c }'
echo "# load average at the end: $(bench_load)"

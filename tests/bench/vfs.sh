#!/usr/bin/env bash
# `record -e vfs` benchmark (issue #40): what the vfs events cost a
# program that does nothing but I/O.  Prints numbers as markdown; asserts
# nothing.
#   usage: sudo bash tests/bench/vfs.sh
#   env:   COUNT=BLOCKS (default 262144: 1 GiB in 4 KiB blocks), REPS=N
#          (default 7 rounds), MODES (default "none hook other vfs:1G vfs:1M
#          vfs vfs:1"), BENCH_BUILD, BENCH_DIR (tests/bench/lib.sh)
#
# `dd if=/dev/zero of=/dev/shm/… bs=4k count=COUNT` at full speed, the
# modes interleaved in each round:
#   none    dd alone;
#   hook    dd while a program that does nothing is attached to the
#           tp_btf sys_exit tracepoint (tests/bench/sys-hook.c): the floor
#           of any program there, the kernel's slow system-call path and
#           the program's call; hook2 the same on sys_enter and sys_exit
#           (what a latency event stamping each call's entry would pay);
#   other   dd beside `record -e vfs -p PID` of an idle process (dd not
#           followed: what every other process pays while vfs is recorded);
#   SPEC    dd as the COMMAND of `record -e SPEC` (vfs:1G: the per-call
#           program with ~no stack, hooked all the time; vfs:1M: the default
#           N, 1 MiB, hooked all the time; vfs: the default, N 1 MiB hooked
#           1/8 of the time (the duty cycle, docs/events.md); vfs:1: a stack
#           at every call).  Under the duty cycle dd's slowdown depends on
#           how much of its run was hooked: COUNT large enough that dd runs
#           several seconds (the default's 1 GiB takes ~1 s) evens it out.
# The time is dd's CPU time (user + sys from wait4: the system calls and the
# programs they run are dd's; a busy machine inflates wall time, not this),
# and its own wall time (its "copied, S s" line).  Each dd block is two
# calls, a read of /dev/zero and a write to the tmpfs, so an unsampled run
# takes 2 x COUNT stacks.  The median of the rounds per mode; the slowdown
# against dd alone; the cost of one unsampled event, (median vfs:1 - median
# alone) / (2 x COUNT).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
bench_setup vfs --root --tmpfs --nice flamefs-collect tests/sys-hook
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
	hook | hook2)
		local tps=(sys_exit) hook
		[ "$1" = hook2 ] && tps=(sys_enter sys_exit)
		coproc hook { exec "$build/tests/sys-hook" btf "${tps[@]}"; }
		read -r _ <&"${hook[0]}" || { echo "vfs.sh: sys-hook failed" >&2; exit 1; }
		"${dd[@]}" 2>"$err"
		exec {hook[1]}>&-
		wait "$hook_PID"
		;;
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
read -ra modes <<<"${MODES:-none hook other vfs:1G vfs:1M vfs vfs:1}"
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
		name = m == "none" ? "dd alone" : m == "other" ? "dd beside record -e vfs -p IDLE (not followed)" : \
			m == "hook" ? "dd, an empty tp_btf program on sys_exit" : \
			m == "hook2" ? "dd, empty tp_btf programs on sys_enter and sys_exit" : "record -e " m " -- dd"
		printf "| %s | %.3f | %+.1f%% | %.3f | %+.1f%% | %s|\n", name, t, (t / b - 1) * 100, w, (w / wb - 1) * 100, all }'
done
echo
[ -n "${cpu[vfs:1]:-}" ] && awk -v t="$(med "${cpu[vfs:1]}")" -v b="$base" -v c="$count" 'BEGIN {
	printf "one unsampled event (a stack per call): %.0f ns of dd'"'"'s CPU ((median vfs:1 - median alone) / %d calls)\n",
		(t - b) * 1e9 / (2 * c), 2 * c }'
echo "# load average at the end: $(bench_load)"

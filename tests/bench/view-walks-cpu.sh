#!/usr/bin/env bash
# Walks over a mount against a tmpfs copy, in CPU time.  Prints a markdown
# table; asserts nothing.
#   usage: sudo bash tests/bench/view-walks-cpu.sh STORE [ROUNDS]
# Environment: BENCH_A (a baseline flamefs binary, optional: copy
#   build/fs/flamefs of the commit to compare against somewhere first),
#   BENCH_B (the flamefs measured, default build/fs/flamefs), BENCH_DIR
#   (work directory, default a new /var/tmp dir; the tmpfs copy is mounted
#   under it).
#
# On a machine shared with other work, wall clock measures the queue, not
# the walk, so this compares CPU time: the walker's user + system
# (/usr/bin/time) plus the daemon's (utime + stime from /proc/PID/stat,
# before and after), against the walker's on a tmpfs copy of the same tree
# (made with `cp -r` of a mount of B).  Each walk starts on a fresh mount
# (`flamefs -f`) with the page cache dropped; per round and daemon:
# `grep -r ';main;' MNT` twice (first and second walk) on one mount, then
# `find MNT` twice on another, then the same walks of the copy.  Rounds
# alternate the daemons (A, B, A, B, ...) so that a change in the
# machine's load falls on both.  The store is one `tests/bench/view.sh`
# builds (VIEW_ONLY=walks VIEW_REAL_PERF=FILE BENCH_DIR=DIR leaves it in
# DIR/s-real).
set -u
store=${1:?usage: view-walks-cpu.sh STORE [ROUNDS]}
rounds=${2:-2}
here=$(cd "$(dirname "$0")/../.." && pwd)
B=${BENCH_B:-$here/build/fs/flamefs}
A=${BENCH_A:-}
work=${BENCH_DIR:-$(mktemp -d /var/tmp/flamefs-walks.XXXXXX)}
mnt=$work/mnt copy=$work/tmpfs
[ -d "$store" ] || { echo "view-walks-cpu.sh: no store at $store" >&2; exit 2; }
[ -x "$B" ] || { echo "view-walks-cpu.sh: no flamefs at $B (build first)" >&2; exit 2; }
[ -z "$A" ] || [ -x "$A" ] || { echo "view-walks-cpu.sh: BENCH_A=$A is not executable" >&2; exit 2; }
mkdir -p "$mnt" "$copy"
hz=$(getconf CLK_TCK)

mount_fresh() { # FLAMEFS: mounts the store on $mnt, sets $pid
	fusermount3 -u "$mnt" 2>/dev/null
	sync
	echo 3 >/proc/sys/vm/drop_caches
	"$1" -f "$store" "$mnt" 2>>"$work/daemon.err" &
	pid=$!
	for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
	echo "view-walks-cpu.sh: $1 did not mount" >&2
	exit 1
}
unmount() { fusermount3 -u "$mnt"; wait "$pid"; }
dcpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# cpu CMD...: the walker's user + system seconds of CMD
cpu() {
	/usr/bin/time -o "$work/t.out" -f "%U %S" "$@" >/dev/null 2>&1
	awk '{printf "%.2f", $1 + $2}' "$work/t.out"
}
# walk CMD...: "walker daemon" CPU seconds of CMD against the mounted daemon
walk() {
	local d0 w d1
	d0=$(dcpu)
	w=$(cpu "$@")
	d1=$(dcpu)
	awk -v w="$w" -v a="$d0" -v b="$d1" -v hz="$hz" 'BEGIN { printf "%.2f %.2f", w, (b - a) / hz }'
}

if ! mountpoint -q "$copy"; then
	mount -t tmpfs -o size=75%,nr_inodes=0 flamefs-walks "$copy"
fi
if [ ! -d "$copy/tree" ]; then
	mount_fresh "$B"
	cp -r "$mnt" "$copy/tree"
	unmount
fi

declare -A R
daemons=()
[ -n "$A" ] && daemons+=(A)
daemons+=(B)
for ((r = 1; r <= rounds; r++)); do
	for d in "${daemons[@]}"; do
		bin=$B
		[ "$d" = A ] && bin=$A
		mount_fresh "$bin"
		R[$d.grep1.$r]=$(walk grep -r ';main;' "$mnt")
		R[$d.grep2.$r]=$(walk grep -r ';main;' "$mnt")
		unmount
		mount_fresh "$bin"
		R[$d.find1.$r]=$(walk find "$mnt")
		R[$d.find2.$r]=$(walk find "$mnt")
		unmount
		sync
		echo 3 >/proc/sys/vm/drop_caches
		R[copy.grep.$r.$d]=$(cpu grep -r ';main;' "$copy/tree")
		R[copy.find.$r.$d]=$(cpu find "$copy/tree")
	done
done

echo "store: $store ($(find "$copy/tree" | wc -l) entries, $(du -sb --apparent-size "$copy/tree" | cut -f1) bytes of files and directories)"
echo "A: ${A:-none}; B: $B; rounds: $rounds; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| walk, CPU seconds (walker + daemon; round by round) | daemon | walker | daemon CPU | total | tmpfs copy (walker) | total / copy |"
echo "|---|---|---|---|---|---|---|"
for w in grep1 grep2 find1 find2; do
	for d in "${daemons[@]}"; do
		for ((r = 1; r <= rounds; r++)); do
			read -r wk dm <<<"${R[$d.$w.$r]}"
			c=${R[copy.${w%[12]}.$r.$d]}
			awk -v w="$w" -v d="$d" -v r="$r" -v wk="$wk" -v dm="$dm" -v c="$c" 'BEGIN {
				name = (w ~ /grep/ ? "`grep -r`" : "`find`") (w ~ /1$/ ? ", first walk" : ", second walk")
				printf "| %s, round %d | %s | %.2f | %.2f | %.2f | %.2f | %.1fx |\n", name, r, d, wk, dm, wk + dm, c, (wk + dm) / (c > 0 ? c : 0.01)
			}'
		done
	done
done

#!/usr/bin/env bash
# test-vfs.sh — `record -e vfs` (issue #40): bytes read and written through
# the VFS, by stack, sampled by bytes (collector/record/profile-events.bpf.h).
# tests/vfs-target (after a warm-up thread's writes to /dev/null) writes CALLS blocks of SIZE bytes to a file on a tmpfs
# from write_all() and reads them back from read_all():
#   (a) -p PID, 1000 calls of 4096 bytes, N 1 MiB given (the default N, hooked
#       all the time: an N given turns the duty cycle off): the vfs-write
#       weight under write_all and the vfs-read weight under read_all are the
#       4096000 bytes within one sampling interval (a thread's bytes since its
#       last stack are not charged: less than 3N/2), never more than what the
#       thread moved, every such stack ending in [fs:tmpfs], none cut short;
#       the summary's bytes moved are exactly the target's; by default (u)
#       no kernel frame but [fs:tmpfs], vfs-write:uk has the system call's
#       entry and no tracing frames, and no vfs-read series;
#   (b) -- COMMAND with vfs:1 (unsampled): exactly 4096000 under each, one
#       stack per call, no duty cycle;
#   (c) fewer bytes than one interval, 10 calls of 100 bytes: with N
#       1 MiB given, a thread's first threshold is drawn in [1, N], so the
#       stored weight is 0 or the bytes moved up to the call that reached
#       it (at most 1000), and the summary still counts all 1000 moved; with
#       vfs:64 (every threshold below 100) each call takes a stack: 1000;
#   (d) refusals: vfs:0, vfs:2G, vfs:x, vfs given twice;
#   (e) a 32-bit process (tests/vfs-compat.c, built here when cc -m32 can):
#       its calls are not counted, neither its writes nor its 1000 getpid
#       calls, whose number is a 64-bit task's writev;
#   (f) the duty cycle (-e vfs-write, no N): tests/vfs-paced writes 10000
#       blocks of 64 KiB to /dev/null, one each 2 ms (~20 drain intervals,
#       ~20 hooked windows of 125 ms): the weight under paced_write is its
#       655360000 bytes within 10% (a steady writer: each whole interval's
#       estimate is its bytes up to the threads' carry, at most 3N/2 = 1.5
#       MiB times the scale 8, 1.9% of the total; the last interval, cut
#       short, can miss or double at most its 32.8 MB, 5%); the summary's
#       hooked share is in [0.10, 0.20] (nominal 0.125, windows close late
#       under load) with at least 15 attaches.
#   usage: tests/test-vfs.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-vfs.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
target=$build/tests/vfs-target
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup vfs
e2e_on_exit() {
	[ -n "${victim:-}" ] && kill "$victim" 2>/dev/null
	umount "$tmp/shm" 2>/dev/null
}
mkdir "$tmp/shm"
if ! mount -t tmpfs -o size=64m tmpfs "$tmp/shm" 2>"$tmp/mount.err"; then
	echo "SKIP: cannot mount a tmpfs for the target's file: $(cat "$tmp/mount.err")"
	exit 77
fi
e2e_need_bpf -e vfs

MiB=1048576
N=$((1000 * 4096))
buildid=$(readelf -n "$target" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
# weight STORE EVENT REGEX: summed weight of the event's folded lines of this
# build's vfs-target matching REGEX.
weight() {
	"$collect" export --store "$1" --event "$2" --binary vfs-target --version "${buildid:0:12}" 2>/dev/null |
		stack_weight - "$3"
}
# moved ERR EVENT: the bytes the summary says the event's calls moved.
moved() {
	sed -n "s/^flamefs-collect: $2: \([0-9]*\) bytes moved, .*/\1/p" "$1"
}
# between LABEL GOT LO HI: LO <= GOT <= HI, exact integers.
between() {
	if [ -n "$2" ] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ]; then
		ok "$1: $2 (in [$3, $4])"
	else
		bad "$1: ${2:-nothing}, expected [$3, $4]"
	fi
}

# record_p STORE EVENTS CALLS SIZE: vfs-target, loaded and waiting on a FIFO,
# recorded with -p from before its first write; its output in STORE.out.
record_p() {
	local s=$1 ev=$2
	rm -f "$tmp/go"
	mkfifo "$tmp/go"
	"$target" "$tmp/shm/file" "$3" "$4" <>"$tmp/go" >"$s.out" &
	victim=$!
	for _ in $(seq 200); do grep -q '/libc\.so' "/proc/$victim/maps" 2>/dev/null && break; sleep 0.05; done
	"$collect" record --verbose --store "$s" -e "$ev" -p "$victim" -d 120 >/dev/null 2>"$s.err" &
	rec=$!
	for _ in $(seq 600); do grep -q 'Ctrl-C stops' "$s.err" 2>/dev/null && break; sleep 0.05; done
	echo go >"$tmp/go"
	wait "$victim"
	victim=
	kill -INT "$rec" 2>/dev/null
	wait "$rec"
}

# ---- (a) -p, default sampling -----------------------------------------------------
s=$tmp/a
record_p "$s" vfs:1M 1000 4096
check "(a) the target moved $N bytes each way" grep -qx "written $N" "$s.out"
# The thread's bytes: the FIFO's "go" line, then the file's.
between "(a) vfs-read under read_all, N=1M" "$(weight "$s" vfs-read ';read_all;')" $((N - 3 * MiB / 2)) $((N + 3))
between "(a) vfs-write under write_all, N=1M" "$(weight "$s" vfs-write ';write_all;')" $((N - 3 * MiB / 2)) $N
between "(a) summary: vfs-read bytes moved" "$(moved "$s.err" vfs-read)" $((N + 3)) $((N + 3))
warm=$((16 * MiB))
out=$(stat -c %s "$s.out")
between "(a) summary: vfs-write bytes moved (the file's, the warm-up's and stdout's)" \
	"$(moved "$s.err" vfs-write)" $((N + warm + out)) $((N + warm + out))
# The warm-up's first stacks may be cut short (on /dev/null: [fs:devtmpfs]);
# none of the file's.
cut=$(for ev in vfs-read vfs-write; do "$collect" export --store "$s" --event $ev; done | grep -c '\[truncated\].*\[fs:tmpfs\] [0-9]*$')
if [ "$cut" -eq 0 ]; then
	ok "(a) no stack of the tmpfs file's calls cut short (the warm-up had the tables built)"
else
	bad "(a) $cut stacks of the tmpfs file's calls cut short"
fi
for ev in vfs-read vfs-write; do
	fn=read_all
	[ "$ev" = vfs-write ] && fn=write_all
	lines=$("$collect" export --store "$s" --event "$ev" | grep -c ";$fn;")
	notmp=$("$collect" export --store "$s" --event "$ev" | grep ";$fn;" | grep -vc ';__GI___libc_write;\[fs:tmpfs\] [0-9]*$\|;read;\[fs:tmpfs\] [0-9]*$')
	if [ "$lines" -ge 1 ] && [ "$notmp" -eq 0 ]; then
		ok "(a) $ev: $lines stack(s) under $fn, each ending in the libc call then [fs:tmpfs] (STACKS u by default)"
	else
		bad "(a) $ev: $lines stacks under $fn, $notmp of them not ending in [fs:tmpfs] after the libc call"
		"$collect" export --store "$s" --event "$ev"
	fi
done
[ "$failures" -eq 0 ] || cat "$s.err"

s=$tmp/uk
record_p "$s" vfs-write:uk:1M 1000 4096
if "$collect" export --store "$s" --event vfs-write | grep ';write_all;' |
	grep -q ';entry_SYSCALL_64[a-z_]*;do_syscall_64;\[fs:tmpfs\] [0-9]*$'; then
	ok "(a) vfs-write:uk: the system call's entry, then [fs:tmpfs] (no tracing frames)"
else
	bad "(a) vfs-write:uk: $("$collect" export --store "$s" --event vfs-write | grep ';write_all;' | head -3)"
fi
if "$collect" export --store "$s" --event vfs-read 2>/dev/null | grep -q .; then
	bad "(a) -e vfs-write alone recorded vfs-read"
else
	ok "(a) -e vfs-write alone: no vfs-read series"
fi

# ---- (b) -- COMMAND, unsampled ------------------------------------------------------
s=$tmp/b
"$collect" record --verbose --store "$s" -e vfs:1 -- "$target" "$tmp/shm/file" 1000 4096 </dev/null \
	>"$s.out" 2>"$s.err"
between "(b) vfs-read under read_all, N=1" "$(weight "$s" vfs-read ';read_all;')" $N $N
between "(b) vfs-write under write_all, N=1" "$(weight "$s" vfs-write ';write_all;')" $N $N
between "(b) vfs-write stacks: one per call (1000 writes, the warm-up's 16, stdout's)" \
	"$(sed -n 's/^flamefs-collect: vfs-write: .* charged to \([0-9]*\) stacks.*/\1/p' "$s.err")" 1017 1017
if grep -q 'sys_exit hooked' "$s.err"; then
	bad "(b) vfs:1: the duty cycle is on: $(grep 'sys_exit hooked' "$s.err")"
else
	ok "(b) vfs:1: hooked all the time (no duty-cycle summary)"
fi
[ "$failures" -eq 0 ] || cat "$s.err"

# ---- (c) fewer bytes than one interval ----------------------------------------------
s=$tmp/c
record_p "$s" vfs-write:1M 10 100
between "(c) default N, 1000 bytes: vfs-write under write_all is 0 or up to the bytes moved" \
	"$(weight "$s" vfs-write ';write_all;')" 0 1000
between "(c) default N: the summary counts every byte moved" "$(moved "$s.err" vfs-write)" \
	$((1000 + warm + $(stat -c %s "$s.out"))) $((1000 + warm + $(stat -c %s "$s.out")))
s=$tmp/c64
record_p "$s" vfs-write:64 10 100
between "(c) vfs-write:64, 10 calls of 100 bytes: each call a stack, 1000 under write_all" \
	"$(weight "$s" vfs-write ';write_all;')" 1000 1000

# ---- (d) refusals ---------------------------------------------------------------------
for spec in vfs:0 vfs:2G vfs:x vfs,vfs-write; do
	"$collect" record --store "$tmp/d" -e "$spec" -- true 2>"$tmp/d.err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -qE 'expected STACKS \(u, k or uk\) or N \(bytes, 1 to 1G, with K, M or G\)|given twice' "$tmp/d.err"; then
		ok "(d) -e $spec: refused: $(cat "$tmp/d.err")"
	else
		bad "(d) -e $spec: exit $rc, $(cat "$tmp/d.err")"
	fi
done
# ---- (e) a 32-bit process ---------------------------------------------------------------
if ${CC:-cc} -m32 -O1 -nostdlib -static -ffreestanding -fno-pic -fno-stack-protector \
	-o "$tmp/compat" "$here/vfs-compat.c" 2>"$tmp/cc.err"; then
	s=$tmp/e
	"$collect" record --verbose --store "$s" -e vfs-write:1 -- "$tmp/compat" >"$s.out" 2>"$s.err"
	between "(e) a 32-bit process: its 409600 bytes written, 409600 on stdout" "$(stat -c %s "$s.out")" 409600 409600
	between "(e) a 32-bit process: no vfs-write counted (not its writes, not its getpid as writev)" \
		"$(moved "$s.err" vfs-write)" 0 0
else
	skip "(e) no 32-bit x86 build here ($(head -1 "$tmp/cc.err")): a 32-bit process not checked"
fi
# ---- (f) the duty cycle: a steady writer over ~20 intervals -----------------------------
s=$tmp/f
total=$((10000 * 65536))
"$collect" record --verbose --store "$s" -e vfs-write -- "$build/tests/vfs-paced" 10000 65536 2000 \
	</dev/null >"$s.out" 2>"$s.err"
check "(f) vfs-paced wrote $total bytes" grep -qx "written $total" "$s.out"
got=$("$collect" export --store "$s" --event vfs-write --binary vfs-paced 2>/dev/null | stack_weight - ';paced_write;')
between "(f) duty cycle: vfs-write under paced_write, the truth within 10%" "$got" \
	$((total - total / 10)) $((total + total / 10))
share=$(sed -n 's/^flamefs-collect: vfs: sys_exit hooked .* (share \([0-9.]*\);.*/\1/p' "$s.err")
if [ -n "$share" ] && awk -v x="$share" 'BEGIN { exit !(x >= 0.10 && x <= 0.20) }'; then
	ok "(f) duty cycle: hooked share $share (in [0.10, 0.20])"
else
	bad "(f) duty cycle: hooked share ${share:-missing}, expected [0.10, 0.20]"
fi
between "(f) duty cycle: attaches" \
	"$(sed -n 's/^flamefs-collect: vfs: sys_exit hooked .*), \([0-9]*\) attaches.*/\1/p' "$s.err")" 15 1000
[ "$failures" -eq 0 ] || cat "$s.err"
finish

#!/usr/bin/env bash
# test-trust.sh — the files another user controls, as `record` (root) and
# `import` open them (issue #45), with real BPF recordings of real
# processes run as nobody:
#   a. two programs with one GNU build id and different functions, one run
#      by root and one by nobody, recorded together: each is named by its
#      own symbols (a module is one file, never shared by build id);
#   b. stripped programs whose .gnu_debuglink names a FIFO beside them, and
#      one whose link is a path with '..' to a FIFO: the recorder keeps
#      draining (drains and samples stored as expected), refuses both links
#      and finishes;
#   c. perf maps: one owned by another user than the process's is ignored,
#      its own user's is used; one in the process's private /tmp (a mount
#      namespace with a tmpfs) is read there, not from the recorder's /tmp;
#   d. imports: a perf.data whose binary was replaced by a FIFO, and a
#      gperftools profile naming a path with '..' under --binary-path: both
#      finish with a message naming the file not opened.
# `timeout` only bounds a run that would hang; each verdict is the
# summary's or the import's message, and the names stored.
#   usage: tests/test-trust.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-trust.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
jit_target=$build/tests/jit-target
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup trust
chmod 0755 "$tmp" # nobody runs the programs built here
pids=()
e2e_on_exit() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -f /tmp/perf-"${forged_pid:-x}".map /tmp/perf-"${own_pid:-x}".map /tmp/perf-"${ns_pid:-x}".map
}
skips=0
skip() { echo "SKIP - $*"; skips=$((skips + 1)); }
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

[ "$(uname -m)" = x86_64 ] || { echo "SKIP: jit-target and the test programs are x86-64 here"; exit 77; }
command -v gcc >/dev/null && command -v objcopy >/dev/null ||
	{ echo "SKIP: gcc and objcopy are needed to build the test programs"; exit 77; }
e2e_need_bpf

# summary FILE FIELD: a number from record's summary.
summary() {
	case $2 in
	seen) sed -n 's/.*; seen \([0-9]*\), dropped.*/\1/p' "$1" ;;
	recorded) sed -n 's/.*: recorded \([0-9]*\) samples.*/\1/p' "$1" ;;
	drains) sed -n 's/.* in \([0-9]*\) drains over.*/\1/p' "$1" ;;
	links) sed -n 's/.* \([0-9]*\) debug links refused.*/\1/p' "$1" ;;
	jit) sed -n 's/.* \([0-9]*\) perf maps ignored.*/\1/p' "$1" ;;
	esac
}
# start_bg FILE CMD...: runs CMD (a program, not a function: $! is then
# its own pid) in the background, its output to FILE.
start_bg() {
	local out=$1
	shift
	"$@" >"$out" 2>&1 &
	pids+=($!)
}
# first_line FILE: waits (bounded) for a first line in FILE and prints it.
first_line() {
	for _ in $(seq 100); do
		[ -s "$1" ] && { head -1 "$1"; return 0; }
		sleep 0.05
	done
	return 1
}
# a program that burns CPU in PREFIX_leaf under PREFIX_work, with build id BID.
build_prog() { # build_prog OUT PREFIX BID [CFLAGS...]
	local out=$1 pre=$2 bid=$3
	shift 3
	cat >"$out.c" <<EOF
volatile unsigned long sink;
__attribute__((noinline)) void ${pre}_leaf(void)
{
	for (unsigned long i = 0; i < 50000000ul; i++)
		sink += i;
}
__attribute__((noinline)) void ${pre}_work(void)
{
	for (;;) {
		${pre}_leaf();
		__asm__ volatile("" ::: "memory");
	}
}
int main(void)
{
	${pre}_work();
	return 0;
}
EOF
	gcc -O1 -fno-omit-frame-pointer -fno-inline "$@" -Wl,--build-id=0x$bid -o "$out" "$out.c"
}

# ---- a. one build id, two files ---------------------------------------------
bid=f1a3ef5000000000000000000000000000000045
build_prog "$tmp/victim" victim $bid
build_prog "$tmp/attacker" FORGED_BY_ATTACKER $bid -DPAD
chown 65534:65534 "$tmp/attacker"
check "the two programs claim one build id" \
	test "$(readelf -n "$tmp/victim" | grep -o 'Build ID: .*')" = \
	"$(readelf -n "$tmp/attacker" | grep -o 'Build ID: .*')"
start_bg "$tmp/attacker.out" "${nobody[@]}" "$tmp/attacker"
apid=${pids[-1]}
start_bg "$tmp/victim.out" "$tmp/victim"
vpid=${pids[-1]}
timeout -k 5 120 "$collect" record --verbose --store "$tmp/a" -F 199 -d 2 -p "$apid,$vpid" 2>"$tmp/a.err" ||
	bad "record -p of both: $(tail -3 "$tmp/a.err")"
kill "$apid" "$vpid" 2>/dev/null
"$collect" export --store "$tmp/a" --binary victim >"$tmp/a.victim" 2>/dev/null
"$collect" export --store "$tmp/a" --binary attacker >"$tmp/a.attacker" 2>/dev/null
check "root's victim is named by its own symbols (main;victim_work;victim_leaf)" \
	grep -q ';main;victim_work;victim_leaf ' "$tmp/a.victim"
check "and never by the other file's (no FORGED_BY_ATTACKER frame in victim)" \
	test "$(grep -c FORGED_BY_ATTACKER "$tmp/a.victim")" -eq 0
check "nobody's program is named by its own symbols" \
	grep -q ';main;FORGED_BY_ATTACKER_work;FORGED_BY_ATTACKER_leaf ' "$tmp/a.attacker"
check "and never by root's (no victim_ frame in attacker)" \
	test "$(grep -c victim_ "$tmp/a.attacker")" -eq 0

# ---- b. debug links to a FIFO -----------------------------------------------
# linked: stripped, its debug link a plain name, a FIFO beside it.
build_prog "$tmp/linked" linked 0b1d000000000000000000000000000000000045
objcopy --only-keep-debug "$tmp/linked" "$tmp/linked.dbg"
strip --strip-all "$tmp/linked"
(cd "$tmp" && objcopy --add-gnu-debuglink=linked.dbg linked)
rm "$tmp/linked.dbg"
mkfifo "$tmp/linked.dbg"
# dotdot: its debug link "../<tmp>/dotdot.fifo" (objcopy keeps only base
# names, so the section is written by hand: name, NUL, padding, a CRC
# that is not 0, as objcopy's never is).
build_prog "$tmp/dotdot" dotdot 0b1d000000000000000000000000000000000046
strip --strip-all "$tmp/dotdot"
mkfifo "$tmp/dotdot.fifo"
link="../../../../../../../..$tmp/dotdot.fifo"
{
	printf '%s\0' "$link"
	pad=$(((4 - (${#link} + 1) % 4) % 4))
	head -c "$pad" /dev/zero
	printf '\1\2\3\4'
} >"$tmp/dotdot.link"
objcopy --add-section .gnu_debuglink="$tmp/dotdot.link" "$tmp/dotdot"
check "dotdot's debug link is the path with '..'" \
	test "$(readelf --string-dump=.gnu_debuglink "$tmp/dotdot" | grep -c -F "$link")" -eq 1
chown 65534:65534 "$tmp/linked" "$tmp/dotdot" "$tmp/linked.dbg" "$tmp/dotdot.fifo"
start_bg "$tmp/linked.out" "${nobody[@]}" "$tmp/linked"
lpid=${pids[-1]}
start_bg "$tmp/dotdot.out" "${nobody[@]}" "$tmp/dotdot"
dpid=${pids[-1]}
timeout -k 5 120 "$collect" record --verbose --store "$tmp/b" -F 199 -d 3 -p "$lpid,$dpid" 2>"$tmp/b.err"
rc=$?
kill "$lpid" "$dpid" 2>/dev/null
check "record with both links finishes by itself (exit 0, got $rc)" test "$rc" -eq 0
seen=$(summary "$tmp/b.err" seen)
recorded=$(summary "$tmp/b.err" recorded)
drains=$(summary "$tmp/b.err" drains)
links=$(summary "$tmp/b.err" links)
check "it drained all along: at least 2 drains in 3 s (got ${drains:-none})" test "${drains:-0}" -ge 2
check "every sample seen was stored (seen ${seen:-?}, recorded ${recorded:-?}, at least 100)" \
	test -n "$seen" -a "${seen:-0}" = "${recorded:-x}" -a "${seen:-0}" -ge 100
check "both debug links were refused (summary: ${links:-none})" test "${links:-0}" -eq 2
"$collect" export --store "$tmp/b" >"$tmp/b.folded" 2>/dev/null
check "the stripped programs' frames are stored as [linked] and [dotdot]" \
	test "$(grep -c '^linked;.*\[linked\]' "$tmp/b.folded")" -ge 1 -a \
	"$(grep -c '^dotdot;.*\[dotdot\]' "$tmp/b.folded")" -ge 1

# ---- c. perf maps --------------------------------------------------------------
# jit-target 'never' runs generated code and writes no map: the maps are
# written here, each covering the whole user address space.
start_bg "$tmp/forged.out" "${nobody[@]}" "$jit_target" 100000 never
forged_pid=$(first_line "$tmp/forged.out") && forged_pid=${forged_pid#/tmp/perf-} && forged_pid=${forged_pid%.map}
start_bg "$tmp/own.out" "${nobody[@]}" "$jit_target" 100000 never
own_pid=$(first_line "$tmp/own.out") && own_pid=${own_pid#/tmp/perf-} && own_pid=${own_pid%.map}
printf '0 7fffffffffff FOREIGN_JIT\n' >/tmp/perf-"$forged_pid".map
chown 12345:12345 /tmp/perf-"$forged_pid".map
printf '0 7fffffffffff OWN_USERS_JIT\n' >/tmp/perf-"$own_pid".map
chown 65534:65534 /tmp/perf-"$own_pid".map
timeout -k 5 120 "$collect" record --verbose --store "$tmp/c" -F 199 -d 2 -p "$forged_pid,$own_pid" 2>"$tmp/c.err" ||
	bad "record of the jit-targets: $(tail -3 "$tmp/c.err")"
kill "$forged_pid" "$own_pid" 2>/dev/null
"$collect" export --store "$tmp/c" >"$tmp/c.folded" 2>/dev/null
check "a perf map owned by the process's user names its JIT frames (OWN_USERS_JIT)" \
	grep -q ';OWN_USERS_JIT ' "$tmp/c.folded"
check "one owned by another user is ignored (no FOREIGN_JIT frame)" \
	test "$(grep -c FOREIGN_JIT "$tmp/c.folded")" -eq 0
check "and counted (perf maps ignored: $(summary "$tmp/c.err" jit))" test "$(summary "$tmp/c.err" jit)" -eq 1

# A process with a private /tmp: its own map is read, not ours.
if unshare -m --propagation private true 2>/dev/null; then
	start_bg "$tmp/ns.out" unshare -m --propagation private sh -c \
		'mount -t tmpfs -o mode=1777 tmpfs /tmp && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$0" 100000 now' \
		"$jit_target"
	ns_pid=$(first_line "$tmp/ns.out") && ns_pid=${ns_pid#/tmp/perf-} && ns_pid=${ns_pid%.map}
	printf '0 7fffffffffff OUTER_TMP_JIT\n' >/tmp/perf-"$ns_pid".map
	chown 65534:65534 /tmp/perf-"$ns_pid".map
	timeout -k 5 120 "$collect" record --verbose --store "$tmp/n" -F 199 -d 2 -p "$ns_pid" 2>"$tmp/n.err" ||
		bad "record of the namespaced jit-target: $(tail -3 "$tmp/n.err")"
	kill "$ns_pid" 2>/dev/null
	"$collect" export --store "$tmp/n" >"$tmp/n.folded" 2>/dev/null
	check "a perf map in the process's private /tmp names its frames (jitted_spin)" \
		grep -q ';jitted_spin ' "$tmp/n.folded"
	check "the recorder's own /tmp/perf-PID.map is not read for it (no OUTER_TMP_JIT)" \
		test "$(grep -c OUTER_TMP_JIT "$tmp/n.folded")" -eq 0
else
	skip "unshare -m is not allowed here: the private /tmp part is not run"
fi

# ---- d. imports ------------------------------------------------------------------
if command -v perf >/dev/null && mkdir "$tmp/bin" && cp "$tmp/victim" "$tmp/bin/spin" &&
	timeout 60 perf record -q -N -F 499 -o "$tmp/spin.data" -- timeout 1 "$tmp/bin/spin" 2>"$tmp/perf.err"; [ -s "$tmp/spin.data" ]; then
	rm "$tmp/bin/spin"
	mkfifo "$tmp/bin/spin"
	timeout -k 5 60 "$collect" import --store "$tmp/d" "$tmp/spin.data" 2>"$tmp/d.err"
	rc=$?
	check "a perf.data import whose binary is now a FIFO finishes (exit 0, got $rc)" test "$rc" -eq 0
	check "and names the file not opened ($(grep -o 'not opened.*' "$tmp/d.err"))" \
		grep -q "file the profile names not opened .*first $tmp/bin/spin" "$tmp/d.err"
	"$collect" export --store "$tmp/d" >"$tmp/d.folded" 2>/dev/null
	check "its frames are named [spin]" grep -q '^spin;.*\[spin\]' "$tmp/d.folded"
else
	skip "perf record cannot run here: the perf.data part is not run ($(head -1 "$tmp/perf.err" 2>/dev/null))"
fi

# A gperftools profile (64-bit words: header, one sample, end, maps text)
# naming /../fifo, which --binary-path DIR would join into DIR/../fifo.
mkdir -p "$tmp/bp"
mkfifo "$tmp/fifo"
python3 - "$tmp/g.prof" <<'EOF'
import struct, sys
words = [0, 3, 0, 10000, 0, 1, 1, 0x401010, 0, 1, 0]
maps = b"00400000-00500000 r-xp 00000000 08:01 1234 /../fifo\n"
open(sys.argv[1], "wb").write(struct.pack("<%dQ" % len(words), *words) + maps)
EOF
timeout -k 5 60 "$collect" import --store "$tmp/g" --binary-path "$tmp/bp" "$tmp/g.prof" 2>"$tmp/g.err"
rc=$?
check "a gperftools import naming /../fifo with --binary-path finishes (exit 0, got $rc)" test "$rc" -eq 0
check "and names the path refused ($(grep -o 'not opened.*' "$tmp/g.err"))" \
	grep -q 'file the profile names not opened .*first /\.\./fifo' "$tmp/g.err"

echo "$failures failed, $skips skipped"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# test-events.sh — `record -e` (issue #12) against a program with known
# costs (tests/events-target.c): each event's weight under the function that
# caused it must be within 25% of the truth the program knows:
#   off-cpu  napper: 150 naps of 10 ms = 1.5 s;
#   rss      toucher: 192 MiB of fresh memory touched;
#   block    direct_writer: 32 MiB written with O_DIRECT (block-time > 0);
#   net      net_send: 64 MiB sent, net_recv: 64 MiB received, over TCP.
# With -- COMMAND, -p PID and -a; the series are named off-cpu, rss, block,
# block-time and net with their units; an unknown event and a bad modifier
# are refused with a message naming them; EVENT:STACKS:N sampling keeps the
# totals (rss:u:8).
# All of it with tracefs unmounted, as on a fresh machine or CI: the test runs
# in a private mount namespace (unshare -m) and unmounts tracefs there, so a
# tracefs mounted on the host stays as it is.  There, every event attaches;
# without CAP_SYS_ADMIN, rss (the one classic tracepoint, whose id is read from
# a privately mounted tracefs) is left out with a message naming what is
# missing while the raw-tracepoint events still record; with tracefs mounted,
# rss needs no CAP_SYS_ADMIN.
#   usage: tests/test-events.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-events.sh BUILD_DIR}
tracefs=/sys/kernel/tracing
if [ -z "${FLAMEFS_EVENTS_PRIVATE_NS:-}" ]; then
	if unshare -m --propagation private true 2>/dev/null; then
		FLAMEFS_EVENTS_PRIVATE_NS=1 exec unshare -m --propagation private bash "$0" "$@"
	fi
	if mountpoint -q "$tracefs"; then
		echo "SKIP: tracefs is mounted at $tracefs and no private mount namespace (unshare -m) to unmount it in"
		exit 77
	fi
fi
while mountpoint -q "$tracefs"; do
	umount "$tracefs" || { echo "FAIL - cannot unmount $tracefs in the private mount namespace"; exit 1; }
done
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
target=$build/tests/events-target
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup events
# O_DIRECT needs a disk-backed filesystem: the one /var/tmp is on.
ddir=$(mktemp -d /var/tmp/flamefs-events.XXXXXX)
e2e_on_exit() { rm -rf "$ddir"; }

e2e_need_bpf -e cpu,offcpu

# ---- refusals ---------------------------------------------------------------------
"$collect" record --verbose --store "$tmp/r" -e cpu,bogus -- true 2>"$tmp/bogus.err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q 'unknown event "bogus"; expected cpu, offcpu, rss, block, block-time, net, vfs, vfs-read or vfs-write' "$tmp/bogus.err"; then
	ok "-e bogus: refused with exit 2, naming the event and the choices"
else
	bad "-e bogus: exit $rc, $(cat "$tmp/bogus.err")"
fi
"$collect" record --verbose --store "$tmp/r" -e rss:x -- true 2>"$tmp/mod.err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q 'expected STACKS (u, k or uk) or N' "$tmp/mod.err"; then
	ok "-e rss:x: refused with exit 2, naming what was expected"
else
	bad "-e rss:x: exit $rc, $(cat "$tmp/mod.err")"
fi

# ---- helpers ------------------------------------------------------------------------
# weight STORE EVENT REGEX: summed weight of the event's folded lines matching
# REGEX, of this build's events-target only (others may run beside -a).
buildid=$(readelf -n "$target" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
weight() {
	"$collect" export --store "$1" --event "$2" --binary events-target --version "${buildid:0:12}" 2>/dev/null |
		stack_weight - "$3"
}
# within LABEL GOT WANT: GOT within 25% of WANT.
within() {
	if awk -v g="$2" -v w="$3" 'BEGIN { d = (g - w) / w; if (d < 0) d = -d; exit !(d <= 0.25) }'; then
		ok "$1: $2 (truth $3, within 25%)"
	else
		bad "$1: $2, truth $3 (off by more than 25%)"
	fi
}
MiB=1048576

# check STORE LABEL: the four costs under their functions.
check_all() {
	local s=$1 label=$2
	within "$label: off-cpu under napper (ns)" "$(weight "$s" off-cpu ';napper;')" \
		"$(awk '$1 == "napped" { print $2 }' "$tmp/$label.out")"
	within "$label: rss under toucher (bytes)" "$(weight "$s" rss ';toucher;')" $((192 * MiB))
	within "$label: block under direct_writer (bytes)" "$(weight "$s" block ';direct_writer;')" $((32 * MiB))
	local bt
	bt=$(weight "$s" block-time ';direct_writer;')
	if [ "$bt" -gt 0 ]; then
		ok "$label: block-time under direct_writer ($bt ns)"
	else
		bad "$label: no block-time under direct_writer"
	fi
	within "$label: net sent under net_send (bytes)" "$(weight "$s" net ';net_send;')" $((64 * MiB))
	within "$label: net received under net_recv (bytes)" "$(weight "$s" net ';net_recv;')" $((64 * MiB))
}

# ---- -- COMMAND ------------------------------------------------------------------------
s1=$tmp/s1
if "$collect" record --verbose --store "$s1" -e cpu,offcpu,rss,block,block-time,net -- "$target" all "$ddir" \
	>"$tmp/-- COMMAND.out" 2>"$tmp/s1.err"; then
	ok "-- COMMAND with six events: exit 0"
else
	bad "-- COMMAND with six events: exit $?"
	cat "$tmp/s1.err"
fi
check_all "$s1" "-- COMMAND"
if grep -q 'left out' "$tmp/s1.err"; then
	bad "-- COMMAND with tracefs unmounted: an event was left out: $(grep 'left out' "$tmp/s1.err")"
else
	ok "-- COMMAND with tracefs unmounted: every event attached"
fi
if mountpoint -q "$tracefs"; then
	bad "the recording left tracefs mounted at $tracefs"
else
	ok "tracefs still unmounted after the recording (rss's id was read from a private mount)"
fi
stats=$("$collect" stats --store "$s1")
for ev in cpu-clock off-cpu rss block block-time net; do
	if grep -qE "^events-target +[0-9a-f]+ +$ev " <<<"$stats"; then
		ok "-- COMMAND: series $ev"
	else
		bad "-- COMMAND: no series $ev"
		echo "$stats"
	fi
done
"$collect" export --store "$s1" --event off-cpu --format pprof -o "$tmp/off.pb.gz" 2>/dev/null
if command -v go >/dev/null && [ -s "$tmp/off.pb.gz" ]; then
	if go tool pprof -raw "$tmp/off.pb.gz" 2>/dev/null | grep -q "off-cpu/nanoseconds"; then
		ok "pprof of off-cpu: go tool pprof reads sample type off-cpu/nanoseconds"
	else
		bad "pprof of off-cpu: no off-cpu/nanoseconds sample type"
		go tool pprof -raw "$tmp/off.pb.gz" 2>&1 | head -5
	fi
fi
if "$collect" export --store "$s1" --event off-cpu | grep -q 'bpf_prog_\|bpf_trace_run'; then
	bad "the tracing machinery's own frames are in the kernel stacks"
else
	ok "kernel stacks end at the workload's frames (no bpf_prog_/bpf_trace_run frames)"
fi

# ---- -p PID, with sampling ---------------------------------------------------------
# The process runs (loaded, waiting on a FIFO) before the recorder
# attaches to it; it naps once the recorder says it is recording.  (Begun
# during the naps, the recording saw less than half of them on a loaded
# machine: its start-up time, not what -p records.)
s2=$tmp/s2
mkfifo "$tmp/go"
"$target" nap-after-input <>"$tmp/go" >"$tmp/p.out" &
victim=$!
for _ in $(seq 200); do grep -q '/libc\.so' "/proc/$victim/maps" 2>/dev/null && break; sleep 0.05; done
"$collect" record --verbose --store "$s2" -e offcpu,rss:u:8 -p "$victim" -d 60 >/dev/null 2>"$tmp/s2.err" &
rec=$!
for _ in $(seq 600); do grep -q 'Ctrl-C stops' "$tmp/s2.err" && break; sleep 0.05; done
echo go >"$tmp/go"
wait "$victim"
kill -INT "$rec" 2>/dev/null
wait "$rec"
within "-p PID: off-cpu under napper, attached before the naps" "$(weight "$s2" off-cpu ';napper;')" \
	"$(awk '$1 == "napped" { print $2 }' "$tmp/p.out")"
[ "$failures" -eq 0 ] || cat "$tmp/s2.err"
s3=$tmp/s3
"$collect" record --verbose --store "$s3" -e rss:u:8 -- "$target" touch >/dev/null 2>"$tmp/s3.err"
within "rss:u:8: sampled every 8th event, scaled" "$(weight "$s3" rss ';toucher')" $((192 * MiB))
if "$collect" export --store "$s3" --event rss | grep -q 'entry_SYSCALL\|asm_exc_page_fault'; then
	bad "rss:u:8: kernel frames stored with STACKS u"
else
	ok "rss:u:8: user stacks only"
fi

# ---- an event that cannot attach ------------------------------------------------
# Without CAP_SYS_ADMIN, tracefs cannot be mounted, even privately: rss is left
# out, naming the tracepoint, the missing mount and the capability; the raw
# tracepoints (offcpu, block, net) need no mount and still record.
if command -v setpriv >/dev/null; then
	s5=$tmp/s5
	setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin \
		"$collect" record --verbose --store "$s5" -e offcpu,rss,block,net -- "$target" nap \
		>"$tmp/s5.out" 2>"$tmp/s5.err"
	rc=$?
	want="event rss left out: cannot attach the tracepoint kmem/rss_stat: tracefs is not mounted at $tracefs"
	if [ "$rc" -eq 0 ] && grep -qF "$want" "$tmp/s5.err" && grep -q 'unshare(CLONE_NEWNS): Operation not permitted; needs CAP_SYS_ADMIN' "$tmp/s5.err" &&
		[ "$(grep -c 'left out' "$tmp/s5.err")" -eq 1 ]; then
		ok "no CAP_SYS_ADMIN, tracefs unmounted: rss left out naming the tracepoint, the mount and the capability; the others attached"
	else
		bad "no CAP_SYS_ADMIN, tracefs unmounted: exit $rc, $(cat "$tmp/s5.err")"
	fi
	within "no CAP_SYS_ADMIN: off-cpu under napper still recorded" "$(weight "$s5" off-cpu ';napper;')" \
		"$(awk '$1 == "napped" { print $2 }' "$tmp/s5.out")"
	# With tracefs mounted (in this namespace only), its id is read there.
	if mount -t tracefs tracefs "$tracefs" 2>/dev/null; then
		s6=$tmp/s6
		setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin \
			"$collect" record --verbose --store "$s6" -e rss -- "$target" touch >/dev/null 2>"$tmp/s6.err"
		umount "$tracefs"
		if grep -q 'left out' "$tmp/s6.err"; then
			bad "tracefs mounted, no CAP_SYS_ADMIN: $(grep 'left out' "$tmp/s6.err")"
		else
			within "tracefs mounted, no CAP_SYS_ADMIN: rss under toucher" "$(weight "$s6" rss ';toucher')" $((192 * MiB))
		fi
	else
		echo "SKIP: tracefs cannot be mounted here; rss with tracefs mounted not checked"
	fi
else
	echo "SKIP: no setpriv; rss without CAP_SYS_ADMIN not checked"
fi

# ---- -a ----------------------------------------------------------------------------------
s4=$tmp/s4
"$collect" record --verbose --store "$s4" -a -e net,offcpu -d 15 >/dev/null 2>"$tmp/s4.err" &
rec=$!
# Attached once it says so (at most 30 s), then 1 s for its snapshot of
# the running processes.
for _ in $(seq 300); do grep -q "Ctrl-C stops" "$tmp/s4.err" && break; sleep 0.1; done
sleep 1
# The first run of a program under -a is walked by frame pointers alone
# until the recorder has read its maps (tests/bench/churn.sh measures
# that); the runs after it are known at their exec from its template.  So
# napper runs first and again last, their 3 s bearing that latency within
# 25%, and net, whose 64 MiB take a fraction of a second, between them.
# (CI met half of net's bytes cut short when net ran first, the machine
# loaded: "975 by frame pointers alone (process not yet known)"; napper
# alone first lost 31% beside two busy loops.)
"$target" nap >"$tmp/a1.out"
"$target" net >/dev/null
"$target" nap >"$tmp/a2.out"
kill -INT "$rec" 2>/dev/null
wait "$rec"
within "-a: net sent under net_send" "$(weight "$s4" net '^events-target;.*;net_send;')" $((64 * MiB))
within "-a: off-cpu under napper (two runs)" "$(weight "$s4" off-cpu '^events-target;.*;napper;')" \
	"$(awk '$1 == "napped" { s += $2 } END { printf "%.0f", s }' "$tmp/a1.out" "$tmp/a2.out")"
[ "$failures" -eq 0 ] || cat "$tmp/s4.err"

[ "$failures" -eq 0 ]

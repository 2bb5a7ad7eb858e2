#!/usr/bin/env bash
# test-jit.sh — `flamefs-collect record` names JIT frames whose perf map
# comes late (collector/record/late.c), with real BPF and real
# runtimes:
#   - Java (tests/java/Work.java, hot ~3/4 and side ~1/4) with
#     -XX:+DumpPerfMapAtExit, which writes /tmp/perf-PID.map only as the
#     JVM exits: the shares of Work.hot and Work.side are within 4
#     standard errors (from the sample counts, 2000 or more each) of
#     `perf record -g` + `perf script`'s on the same execution (record
#     runs perf record -- java as its COMMAND);
#   - the same JVM followed with -p, the recording going on after it
#     exits: the map is read at its exit, and its stacks are named in the
#     store before the recording ends;
#   - `jcmd PID Compiler.perfmap` while the JVM runs (no map at exit):
#     what waited is named in the store while the JVM still runs;
#   - node --perf-basic-prof (its map written as it compiles) still names
#     JS:*hotLoop;
#   - the bounds, with tests/jit-target (its map written at exit): a tiny
#     --jit-memory and a short --jit-wait store the stacks unnamed at once
#     or after the wait, counted in the summary; --jit-wait 0 holds nothing.
# Every run checks that each sample is stored once: the summary's seen =
# recorded, and its JIT line adds up.
#   usage: tests/test-jit.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-jit.sh BUILD_DIR}
build=$(cd "$build" && pwd) # node runs in another directory
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
jit_target=$build/tests/jit-target
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup jit
pids=()
e2e_on_exit() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	perf_maps_clean
}

[ "$(uname -m)" = x86_64 ] || { echo "SKIP: jit-target and the JVM frame-pointer walk are x86-64 here"; exit 77; }
e2e_need_bpf

F=499
period=$((1000000000 / F))

# ---- helpers ------------------------------------------------------------------
# folded STORE: the store's folded lines.
folded() { "$collect" export --store "$1" 2>/dev/null; }
# share FILE REGEX: weight of the folded lines matching REGEX over all.
# (The regex goes through the environment: awk -v would take its
# backslashes as escapes.)
share() {
	RE=$2 awk '{ w = $NF; t += w; sub(/ [0-9]+$/, ""); if ($0 ~ ENVIRON["RE"]) s += w }
		END { printf "%.4f\n", t ? s / t : 0 }' "$1"
}
# cmp_num A OP B: A < B or A > B, as numbers.
cmp_num() { awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN { exit !(op == "<" ? a < b : a > b) }'; }
# weight FILE REGEX: summed weight of the folded lines matching REGEX.
weight() { stack_weight "$1" "$2"; }
# late ERR FIELD: a number of the summary's JIT line (seen held named
# unnamed memory time).
late() {
	awk -v f="$2" '/JIT frames without a perf map entry/ {
		gsub(/[(),;]/, " ")
		n = split($0, a, " ")
		for (i = 1; i <= n; i++) {
			if (a[i] == "entry:") v["seen"] = a[i + 1]
			if (a[i + 1] == "held") v["held"] = a[i]
			if (a[i + 1] == "named" && a[i + 2] == "later") v["named"] = a[i]
			if (a[i + 1] == "stored" && a[i + 3] == "at") v["unnamed"] = a[i]
			if (a[i + 3] == "over" && a[i + 4] == "--jit-memory") v["memory"] = a[i]
			if (a[i + 1] == "over" && a[i + 2] == "--jit-wait") v["time"] = a[i]
		}
		print v[f] + 0
	}' "$1"
}
# accounted NAME ERR: every sample seen is recorded, and every one with a
# late frame ended one way.
accounted() {
	local err=$2 rec seen
	rec=$(sed -n 's/.*: recorded \([0-9]*\) samples.*/\1/p' "$err")
	seen=$(sed -n 's/.*; seen \([0-9]*\), dropped.*/\1/p' "$err")
	if [ -z "$rec" ] || [ "$rec" != "$seen" ]; then
		bad "$1: recorded ${rec:-?} samples, the BPF side saw ${seen:-?}"
		return
	fi
	local s n u m t
	s=$(late "$err" seen) n=$(late "$err" named) u=$(late "$err" unnamed)
	m=$(late "$err" memory) t=$(late "$err" time)
	if [ "$s" -eq $((n + u + m + t)) ]; then
		ok "$1: $rec samples seen and recorded; of $s with late JIT frames $n named later, $u unnamed at exit/end, $m over --jit-memory, $t over --jit-wait"
	else
		bad "$1: late JIT samples do not add up: seen $s, named $n + unnamed $u + memory $m + time $t"
		grep 'JIT frames' "$err"
	fi
}
# perf_maps_clean: removes the perf maps our runs left in /tmp, and only
# those (other tests may be reading theirs): each program prints its pid
# ("pid N": Work.java, hot.js) or its map's path (jit-target) first, into
# $tmp/*.out, or is a -p pid noted in $tmp/pids.
perf_maps_clean() {
	local p
	for p in $(cat "$tmp"/*.out "$tmp/pids" 2>/dev/null | sed -n 's|^pid \([0-9]*\)$|\1|p; s|^/tmp/perf-\([0-9]*\)\.map$|\1|p; s|^\([0-9]*\)$|\1|p'); do
		rm -f "/tmp/perf-$p.map"
	done
}

# ---- jit-target: the bounds ---------------------------------------------------
# Its one JIT function is named jitted_spin in a map written as it exits;
# a sample stored before that has [unknown] (no map yet) in its place, or
# [perf-PID.map] (a stray address of its page that no entry covers).
rounds=500 # about 2.5 s: the first drains hold, the last one names
# jt NAME RECORD-OPTIONS...: records jit-target into $tmp/NAME (folded
# lines in $tmp/NAME.f), checks the accounting, and sets n u m t h (the
# summary's named, unnamed, over memory, over time, held).  The samples
# counted unnamed (u + m + t) must be stored with an unnamed frame: the
# weight with one is at least theirs, and at most 1% more (other
# [unknown]s: a thread's outermost frame, frames of ASan's runtime).
jt() {
	local name=$1 unk want all
	shift
	"$collect" record --verbose --store "$tmp/$name" -F $F "$@" -- "$jit_target" "${JT_ROUNDS:-$rounds}" exit \
		>"$tmp/$name.out" 2>"$tmp/$name.err" || { bad "$name: record failed"; cat "$tmp/$name.err"; }
	accounted "$name" "$tmp/$name.err"
	folded "$tmp/$name" >"$tmp/$name.f"
	n=$(late "$tmp/$name.err" named) u=$(late "$tmp/$name.err" unnamed)
	m=$(late "$tmp/$name.err" memory) t=$(late "$tmp/$name.err" time)
	h=$(late "$tmp/$name.err" held)
	unk=$(weight "$tmp/$name.f" '\[(unknown|perf-[0-9]+\.map)\](;|$)')
	all=$(weight "$tmp/$name.f" '.')
	want=$(((u + m + t) * period))
	if [ "$unk" -ge "$want" ] && [ $(((unk - want) * 100)) -le "$all" ]; then
		ok "$name: the $((u + m + t)) samples counted unnamed are stored so ($unk ns unnamed of $all, want $want)"
	else
		bad "$name: unnamed frames weigh $unk of $all, want $want ($u + $m + $t samples)"
		grep -E '\[(unknown|perf-[0-9]+\.map)\]' "$tmp/$name.f" | head -5
	fi
	perf_maps_clean
}

# Default bounds: every JIT sample named, from the map written at exit.
jt jit-target
js=$(share "$tmp/jit-target.f" ';jitted_spin($|;)')
# (A sample in the map's own write, or in ASan's exit, may have a stray
# address of the JIT page that no entry covers: under 4%.  It was under 2%
# until CI on a slower machine met 27 of 986 in the ASan build, the exit
# taking longer there against the same run.)
if [ "$h" -gt 100 ] && [ $((m + t)) -eq 0 ] && [ $((u * 25)) -le "$h" ] && cmp_num "$js" ">" 0.9; then
	ok "jit-target, map at exit: $h samples held, $u stored unnamed; jitted_spin holds $js"
else
	bad "jit-target, map at exit: held $h, unnamed $u + $m + $t, jitted_spin $js"
fi

# --jit-memory 1: nothing fits; every stack is stored at once, as named
# then (no map yet), but for the last drain's, named at the end.
jt jit-memory-1 --jit-memory 1
if [ "$m" -gt 100 ] && [ "$h" -eq 0 ]; then
	ok "--jit-memory 1: $m samples over the bound stored at once, none held"
else
	bad "--jit-memory 1: over the bound $m, held $h"
fi

# --jit-wait 1: what is still unnamed at the next drain is stored so.  The
# target spins three times as long (about 7 s) before its map comes, so
# that a recorder whose drains a busy machine delays by a second or two
# still finds samples held past the wait (once, all 988 were named: the
# map came before a late drain looked).
JT_ROUNDS=$((rounds * 3)) jt jit-wait-1 --jit-wait 1
if [ "$t" -gt 100 ] && [ "$n" -gt 0 ]; then
	ok "--jit-wait 1: $t samples stored unnamed after a drain's wait, $n named"
else
	bad "--jit-wait 1: over time $t, named $n"
fi

# --jit-wait 0: nothing waits; what is unnamed is over the wait.
jt jit-wait-0 --jit-wait 0
if [ "$h" -eq 0 ] && [ "$t" -gt 100 ]; then
	ok "--jit-wait 0: nothing held, $t samples stored unnamed at once"
else
	bad "--jit-wait 0: held $h, stored unnamed over the wait $t"
fi

# ---- node --perf-basic-prof: the map as it compiles -----------------------------
if command -v node >/dev/null; then
	cat >"$tmp/hot.js" <<'EOF'
console.log("pid " + process.pid);
function hotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i); return s; }
const end = Date.now() + 2000; let t = 0;
while (Date.now() < end) t += hotLoop(100000);
console.log(t > 0 ? "done" : "?");
EOF
	# In $tmp: node leaves an isolate-*-v8.log in its directory.
	(cd "$tmp" && "$collect" record --verbose --store "$tmp/node" -F $F -- node --perf-basic-prof "$tmp/hot.js" \
		>"$tmp/node.out" 2>"$tmp/node.err") || { bad "node: record failed"; cat "$tmp/node.err"; }
	accounted "node --perf-basic-prof" "$tmp/node.err"
	folded "$tmp/node" >"$tmp/node.f"
	s=$(share "$tmp/node.f" ';JS:\*hotLoop [^;]*hot\.js[^;]*($|;)')
	if cmp_num "$s" ">" 0.5; then
		ok "node --perf-basic-prof: JS:*hotLoop holds $s of the weight"
	else
		bad "node --perf-basic-prof: JS:*hotLoop holds $s of the weight"
		sort -t' ' -k2 -nr "$tmp/node.f" | head -5
	fi
	perf_maps_clean
else
	echo "SKIP - node --perf-basic-prof: no node here"
fi

# ---- Java -----------------------------------------------------------------------
if ! command -v java >/dev/null || ! command -v javac >/dev/null || ! command -v jcmd >/dev/null; then
	echo "SKIP: no java, javac or jcmd here (Debian: openjdk-17-jdk-headless)"
	[ "$failures" -eq 0 ] && exit 77
	exit 1
fi
mkdir -p "$tmp/classes"
javac -encoding UTF-8 -d "$tmp/classes" "$here/java/Work.java" 2>"$tmp/javac.err" || {
	bad "javac Work.java failed"
	cat "$tmp/javac.err"
	exit 1
}
jvm=(java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$tmp/classes" Work)
jvm_cpu=("${jvm[@]:0:4}" -Dwork.cpu=true "${jvm[@]:4}")

# One execution, two samplers: record runs `perf record -g -- java …` as
# its COMMAND (as tests/bench/unwind.sh does), so both sample the same JVM;
# perf's own samples are in our series of perf, left out.  perf names the
# JIT frames from the map perf script reads after the run.  A fixed period
# (-c) so that each perf sample weighs the same.
# The two shares differ only by sampling: the samplers take their samples
# at different moments of the same run, and both name the JIT code from
# the one map written at exit, so an address is named alike in both.  So
# the bound is 4 standard errors of the difference of two shares,
# sqrt(p(1-p)(1/n + 1/n')), from the sample counts of this run, and the
# loop runs for 5 s of its thread's CPU time (-Dwork.cpu=true), not of
# wall time, so that a busy machine does not shrink the counts: at least
# 2000 samples each, which puts the bound under 0.06 for Work.hot.
perf_hot= perf_side= perf_n=
if ! command -v perf >/dev/null; then
	bad "java: perf is missing (Debian: linux-perf)"
fi
"$collect" record --verbose --store "$tmp/java" -F $F -- perf record -q -e cpu-clock -c $period -g \
	-o "$tmp/java.data" -- "${jvm_cpu[@]}" 5000 >"$tmp/java.out" 2>"$tmp/java.err" ||
	{ bad "record -- perf record -- java failed"; cat "$tmp/java.err"; }
perf script -i "$tmp/java.data" 2>/dev/null >"$tmp/java.script"
read -r perf_n perf_hot perf_side < <(awk 'BEGIN { RS = "" }
	{ n++; if (/Work\.hot/) h++; else if (/Work\.side/) s++ }
	END { printf "%d %.4f %.4f\n", n, n ? h / n : 0, n ? s / n : 0 }' "$tmp/java.script")
accounted "java -XX:+DumpPerfMapAtExit" "$tmp/java.err"
"$collect" export --store "$tmp/java" --binary java >"$tmp/java.f" 2>/dev/null
hot=$(share "$tmp/java.f" ';double Work\.hot($|;)')
side=$(share "$tmp/java.f" ';double Work\.side($|;)')
# our samples of the JVM: each weighs one period
n=$(awk -v p=$period '{ t += $NF } END { printf "%.0f\n", t / p }' "$tmp/java.f")
if awk -v h="$hot" -v s="$side" -v ph="${perf_hot:-0}" -v ps="${perf_side:-0}" -v n="$n" -v pn="${perf_n:-0}" 'BEGIN {
	if (n < 2000 || pn < 2000 || ph <= 0.4 || ps <= 0.1) exit 1
	f = 1 / n + 1 / pn; p = (h + ph) / 2; q = (s + ps) / 2
	bh = 4 * sqrt(p * (1 - p) * f); bs = 4 * sqrt(q * (1 - q) * f)
	printf "       bounds (4 standard errors): Work.hot %.4f, Work.side %.4f\n", bh, bs
	d1 = h - ph; d2 = s - ps
	exit !(d1 < bh && d1 > -bh && d2 < bs && d2 > -bs) }'; then
	ok "java -XX:+DumpPerfMapAtExit: Work.hot $hot, Work.side $side of $n samples; perf script on the same run: $perf_hot, $perf_side of $perf_n"
else
	bad "java -XX:+DumpPerfMapAtExit: Work.hot $hot, Work.side $side of $n samples; perf script: ${perf_hot:-?}, ${perf_side:-?} of ${perf_n:-?} (want 2000 samples or more each, within 4 standard errors)"
	sort -t' ' -k2 -nr "$tmp/java.f" | head -5 | cut -c1-300
	grep 'JIT frames' "$tmp/java.err"
fi
perf_maps_clean

# -p, the recording going on after the JVM exits: the map is read at the
# exit of its main thread, and the stacks are in the store while the
# recording still runs.
"${jvm[@]}" 2500 >/dev/null 2>&1 &
jpid=$!
pids+=("$jpid")
echo "$jpid" >>"$tmp/pids"
"$collect" record --verbose --store "$tmp/javap" -F $F -p "$jpid" -d 8 >/dev/null 2>"$tmp/javap.err" &
rpid=$!
pids+=("$rpid")
for _ in $(seq 60); do
	kill -0 "$jpid" 2>/dev/null || break
	sleep 0.1
done
wait "$jpid" 2>/dev/null
sleep 2.5 # two drains after the exit
folded "$tmp/javap" >"$tmp/javap-during.f"
alive=no
kill -0 "$rpid" 2>/dev/null && alive=yes
wait "$rpid" || bad "record -p JVM failed"
accounted "java -p, exits mid-recording" "$tmp/javap.err"
hot=$(share "$tmp/javap-during.f" ';double Work\.hot($|;)')
unk=$(share "$tmp/javap-during.f" ';JavaCalls::call_helper;(.*;)?\[(unknown|perf-[0-9]+\.map)\]($|;)')
if [ "$alive" = yes ] && cmp_num "$hot" ">" 0.5 && cmp_num "$unk" "<" 0.02; then
	ok "java -p: after the JVM's exit, while recording, Work.hot holds $hot of the store (unnamed under JavaCalls::call_helper $unk)"
else
	bad "java -p: recording still running: $alive; Work.hot $hot, unnamed $unk of the store after the exit"
	grep 'JIT frames' "$tmp/javap.err"
fi
perf_maps_clean

# jcmd Compiler.perfmap while the JVM runs (no map at exit): what waited is
# named before the JVM ends.
java -XX:+PreserveFramePointer -cp "$tmp/classes" Work 3000 5000 >/dev/null 2>&1 &
jpid=$!
pids+=("$jpid")
echo "$jpid" >>"$tmp/pids"
"$collect" record --verbose --store "$tmp/jcmd" -F $F -p "$jpid" -d 9 >/dev/null 2>"$tmp/jcmd.err" &
rpid=$!
pids+=("$rpid")
sleep 2.5
jcmd "$jpid" Compiler.perfmap >"$tmp/jcmd.out" 2>&1 || { bad "jcmd Compiler.perfmap failed"; cat "$tmp/jcmd.out"; }
sleep 4 # the loop ends at 3 s, the JVM sleeps until 8 s: two drains at least
folded "$tmp/jcmd" >"$tmp/jcmd-during.f"
alive=no
kill -0 "$jpid" 2>/dev/null && alive=yes
wait "$jpid" 2>/dev/null
wait "$rpid" || bad "record -p JVM (jcmd) failed"
accounted "java, jcmd Compiler.perfmap" "$tmp/jcmd.err"
hot=$(share "$tmp/jcmd-during.f" ';double Work\.hot($|;)')
n=$(late "$tmp/jcmd.err" named)
if [ "$alive" = yes ] && cmp_num "$hot" ">" 0.5 && [ "$n" -gt 100 ]; then
	ok "jcmd Compiler.perfmap: while the JVM still ran, Work.hot held $hot of the store; $n samples named after waiting"
else
	bad "jcmd Compiler.perfmap: JVM still running: $alive; Work.hot $hot of the store; $n named after waiting"
	grep 'JIT frames' "$tmp/jcmd.err"
fi
perf_maps_clean

[ "$failures" -eq 0 ] && echo "all jit checks passed" && exit 0
echo "$failures check(s) failed"
exit 1

#!/usr/bin/env bash
# Live-collector benchmark.  Prints numbers as markdown; asserts nothing.
#   usage: sudo bash tests/bench/record.sh
#   env:   DUR=SECONDS (default 20), BENCH_DIR=DIR (default: a fresh
#          directory under /var/tmp, removed at the end unless BENCH_DIR)
#
# With both cores kept busy by two CPU burners (contrib/demo-server), for
# 99 Hz and 999 Hz, system-wide (-a) for DUR seconds, it measures:
#   - `flamefs-collect record`: CPU time (user+sys of the process from
#     wait4, to the microsecond: tests/bench/rusage.py; so the
#     BPF load, the start-up and the last drain are included) per second
#     of recording and per sample stored; peak RSS; a per-second CPU
#     timeline read from /proc/PID/stat, split into the first two seconds
#     (symbol tables loaded once) and the steady state after them;
#   - the perf baseline on the same load, duration and frequency:
#     `perf record -e cpu-clock -F HZ -a -g -- sleep DUR`, `perf script`,
#     then tests/ref/stackcollapse-ref.pl (our stand-in for
#     stackcollapse-perf.pl), the user+sys of the three steps summed;
#   - the time from start to the first sample, in a separate short run
#     (see "How the first-sample time is measured" in the output);
# and finally profiles the collector itself (`perf record --call-graph
# dwarf -p PID` during a 99 Hz run) to show where its CPU time goes.
#
# Costs that are charged to the sampled processes, not to any of the
# measured commands, on both sides alike: the perf/BPF sampling interrupt
# itself (the eBPF program, perf's ring-buffer write).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
DUR=${DUR:-20}
FREQS=${FREQS:-"99 999"}

. "$top/tests/bench/lib.sh"
bench_setup record --root --tools "perf perl cc python3" flamefs-collect contrib/demo-server
burner_bin="$build/contrib/demo-server"

# ---- helpers ------------------------------------------------------------

# A sleep that forks nothing (a -a recording sees every new process).
mkfifo "$work/tick"
exec {tick_fd}<>"$work/tick"
pause() { read -r -t "$1" -u "$tick_fd" _ || true; }

# Prefixes each line with the wall clock at which it was read.
stamp() {
	local l
	while IFS= read -r l; do
		printf '%s %s\n' "$EPOCHREALTIME" "$l"
	done
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# Sum of the SAMPLES column of `flamefs-collect stats` (0 when no store).
store_samples() {
	{ "$fc" stats --store "$1" 2>/dev/null || true; } |
		awk 'NR == 1 { next } NF == 0 { exit } { s += $(NF - 4) } END { print s + 0 }'
}

# rusage.py run by the interpreter itself, so that the measured command is
# its direct child even where python3 is a wrapper script (pyenv's shims)
# the line rusage.py wrote -> "wall user sys rss_kb"
time_fields() { tail -n 1 "$1"; }

cpu_of() { # time file -> user+sys
	awk '{ printf "%.3f", $2 + $3 }' < <(time_fields "$1")
}

clk_tck=$(getconf CLK_TCK)

# Pid of the one child of $1 (the command under rusage.py).
child_of() {
	local i c
	for i in $(seq 1 200); do
		c=$(cat "/proc/$1/task/$1/children" 2>/dev/null || true)
		c=${c%% *}
		[ -n "$c" ] && { echo "$c"; return 0; }
		pause 0.005
	done
	return 1
}

# ---- the probe for the first-sample time --------------------------------
# Spends its first 2 s in 400 functions slot_0000..slot_0399, one per 5 ms
# of wall clock since it started, then 4 s in slot_late (alive until the collector's drains meet it).  The first slot
# that has a stored sample says, to 5 ms, when sampling first caught it.
# It prints its own start (unix seconds, CLOCK_REALTIME, like bash's
# $EPOCHREALTIME) on standard output.
probe_src="$work/slotprobe.c"
{
	cat <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <time.h>
static volatile uint64_t sink;
static double t0;
static double mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static __attribute__((noinline)) void publish(uint64_t h) { sink += h; }
static inline __attribute__((always_inline)) void burn_until(double end)
{
	uint64_t h = 1469598103934665603ull;
	while (mono() < end)
		for (uint64_t i = 0; i < 20000; i++)
			h = (h ^ i) * 1099511628211ull;
	publish(h);
}
EOF
	for i in $(seq 0 399); do
		printf 'static __attribute__((noinline)) void slot_%04d(void) { burn_until(t0 + %d * 0.005); }\n' \
			"$i" $((i + 1))
	done
	echo 'static __attribute__((noinline)) void slot_late(void) { burn_until(t0 + 6.0); }'
	echo 'static void (*const slots[])(void) = {'
	for i in $(seq 0 399); do printf 'slot_%04d,\n' "$i"; done
	cat <<'EOF'
};
int main(void)
{
	struct timespec rt;
	t0 = mono();
	clock_gettime(CLOCK_REALTIME, &rt);
	printf("%lld.%06ld\n", (long long)rt.tv_sec, rt.tv_nsec / 1000);
	fflush(stdout);
	for (unsigned i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		slots[i]();
	slot_late();
	return 0;
}
EOF
} >"$probe_src"
probe="$work/slotprobe"
cc -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -o "$probe" "$probe_src"

# ---- machine and load ---------------------------------------------------

echo "# flamefs-collect record benchmark"
echo
echo "machine: $(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME")"
echo "load average before the burners start: $(cut -d' ' -f1-3 /proc/loadavg); processes: $(ls -d /proc/[0-9]* | wc -l)"
echo "recording: system-wide (-a), $DUR s, frequencies: $FREQS Hz; build: $build (release)"
echo

for i in 1 2; do
	bench_bg "$burner_bin" 100000 >/dev/null 2>&1
done
pause 1

# ---- 1. the collector ---------------------------------------------------

declare -A c_wall c_cpu c_rss c_samples c_armed c_own c_first2 c_steady c_seen c_dropped c_lost
run_collector() { # HZ
	local hz=$1 s="$work/store-$hz" tf="$work/rec-$hz.time" log="$work/rec-$hz.log"
	local fifo="$work/rec-$hz.fifo" t0 tpid spid cpid line
	rm -rf "$s" "$fifo"
	mkfifo "$fifo"
	stamp <"$fifo" >"$log" &
	spid=$!
	t0=$EPOCHREALTIME
	"${rusage[@]}" "$tf" \
		"$fc" record --verbose --store "$s" -a -F "$hz" -d "$DUR" >/dev/null 2>"$fifo" &
	tpid=$!
	# CPU timeline: utime+stime once a second, to split start-up from the
	# steady state.
	cpid=$(child_of "$tpid") || cpid=
	: >"$work/rec-$hz.timeline"
	while [ -n "$cpid" ] && [ -r "/proc/$cpid/stat" ]; do
		local -a f=()
		read -r -a f <"/proc/$cpid/stat" 2>/dev/null || break
		[ "${#f[@]}" -gt 15 ] || break
		echo "$EPOCHREALTIME ${f[13]} ${f[14]}" >>"$work/rec-$hz.timeline"
		pause 1
	done
	wait "$tpid" || echo "(the collector exited with $?; its log: $log)"
	wait "$spid" || true
	rm -f "$fifo"

	read -r c_wall[$hz] u sy c_rss[$hz] < <(time_fields "$tf")
	c_cpu[$hz]=$(calc '%.3f' "$u + $sy")
	c_samples[$hz]=$(store_samples "$s")
	line=$(grep -m1 'recording at' "$log" | cut -d' ' -f1)
	c_armed[$hz]=$(calc '%.0f' "($line - $t0) * 1000")
	c_own[$hz]=$(grep -o '[0-9.]*% of one core while recording' "$log" | cut -d'%' -f1)
	c_seen[$hz]=$(grep -o 'seen [0-9]*' "$log" | cut -d' ' -f2)
	c_dropped[$hz]=$(grep -o 'dropped [0-9]*' "$log" | cut -d' ' -f2)
	c_lost[$hz]=$(grep -o 'lost: [0-9]* kernel to hash collisions, [0-9]* to errors' "$log" | awk '{ print $2 + $7 }')
	# Timeline: CPU in the first ~2 s of recording (start-up, first drains)
	# and the rate over the rest.
	read -r c_first2[$hz] c_steady[$hz] < <(awk -v t0="$line" -v hz="$clk_tck" '
		{ t[NR] = $1; c[NR] = ($2 + $3) / hz }
		END {
			a = 0
			for (i = 1; i <= NR; i++) if (t[i] - t0 <= 2.05) a = i
			if (a == 0 || NR <= a + 1) { print "n/a n/a"; exit }
			printf "%.3f %.2f\n", c[a], 100 * (c[NR] - c[a]) / (t[NR] - t[a])
		}' "$work/rec-$hz.timeline")
}

# ---- 2. the perf pipeline -----------------------------------------------

declare -A p_rec p_script p_coll p_total p_samples p_rss p_bytes
run_perf() { # HZ
	local hz=$1 d="$work/perf-$hz.data" txt="$work/perf-$hz.txt"
	"${rusage[@]}" "$work/pr-$hz.time" \
		perf record -q -e cpu-clock -F "$hz" -a -g -o "$d" -- sleep "$DUR" >/dev/null 2>&1
	"${rusage[@]}" "$work/ps-$hz.time" \
		perf script -i "$d" >"$txt" 2>/dev/null
	"${rusage[@]}" "$work/pc-$hz.time" \
		perl "$top/tests/ref/stackcollapse-ref.pl" "$txt" >"$work/perf-$hz.folded"
	p_rec[$hz]=$(cpu_of "$work/pr-$hz.time")
	p_script[$hz]=$(cpu_of "$work/ps-$hz.time")
	p_coll[$hz]=$(cpu_of "$work/pc-$hz.time")
	p_total[$hz]=$(calc '%.3f' "${p_rec[$hz]} + ${p_script[$hz]} + ${p_coll[$hz]}")
	p_samples[$hz]=$(grep -c '^[^[:space:]#]' "$txt" || true)
	p_rss[$hz]=$(cat "$work/pr-$hz.time" "$work/ps-$hz.time" "$work/pc-$hz.time" |
		awk '{ if ($4 > m) m = $4 } END { print m }')
	p_bytes[$hz]=$(stat -c %s "$d")
	rm -f "$d" "$txt"
}

# ---- 3. time to the first sample ----------------------------------------

declare -A l_armed l_first l_visible l_poll
run_latency() { # HZ
	local hz=$1 s="$work/lat-$hz" fifo="$work/lat-$hz.fifo" log="$work/lat-$hz.log"
	local t0 rpid spid ppid armed pstart slot n polls=0 tpoll0 tvis=
	rm -rf "$s" "$fifo"
	mkfifo "$fifo"
	stamp <"$fifo" >"$log" &
	spid=$!
	t0=$EPOCHREALTIME
	"$fc" record --verbose --store "$s" -a -F "$hz" -d 7 >/dev/null 2>"$fifo" &
	rpid=$!
	"$probe" >"$work/lat-$hz.probe" &
	ppid=$!
	tpoll0=$EPOCHREALTIME
	while kill -0 "$rpid" 2>/dev/null; do
		polls=$((polls + 1))
		n=$(store_samples "$s")
		if [ "$n" -gt 0 ]; then
			tvis=$EPOCHREALTIME
			break
		fi
		pause 0.05 # poll gently: the collector also samples the pollers
	done
	l_poll[$hz]=$(calc '%.0f' "(${tvis:-$EPOCHREALTIME} - $tpoll0) * 1000 / $polls")
	wait "$rpid" || true
	wait "$ppid" || true
	wait "$spid" || true
	rm -f "$fifo"
	armed=$(grep -m1 'recording at' "$log" | cut -d' ' -f1)
	l_armed[$hz]=$(calc '%.0f' "($armed - $t0) * 1000")
	pstart=$(head -n 1 "$work/lat-$hz.probe")
	slot=$("$fc" export --store "$s" --binary slotprobe 2>/dev/null |
		grep -o 'slot_[0-9][0-9][0-9][0-9]' | sort | head -n 1 | cut -c6- || true)
	if [ -n "$slot" ]; then
		# The sample fell in [slot, slot + 5 ms) of the probe's clock.
		l_first[$hz]=$(calc '%.0f' "($pstart - $t0) * 1000 + (${slot#"${slot%%[1-9]*}"} + 0) * 5")
		l_first[$hz]="${l_first[$hz]}..$((${l_first[$hz]} + 5))"
	else
		l_first[$hz]="n/a (no probe sample in its first 2 s)"
	fi
	if [ -n "$tvis" ]; then
		l_visible[$hz]=$(calc '%.0f' "($tvis - $t0) * 1000")
	else
		l_visible[$hz]="n/a"
	fi
}

for hz in $FREQS; do
	run_collector "$hz"
	run_perf "$hz"
	run_latency "$hz"
done

# ---- report -------------------------------------------------------------

mark() { # value op limit
	awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
		if (v !~ /^[0-9.]+$/) { print "?"; exit }
		ok = (op == "<=") ? (v + 0 <= l + 0) : (v + 0 >= l + 0)
		print ok ? "met" : "**missed**" }'
}

echo "load average while the benchmarks ran (2 burners + the runs): $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## 1. Collector vs perf pipeline ($DUR s, -a, both cores busy)"
echo
hdr="| | $(for hz in $FREQS; do printf '%s Hz | ' "$hz"; done)target |"
echo "$hdr"
echo "|---|$(for hz in $FREQS; do printf -- '---|'; done)---|"
row() { # label target values...
	local label=$1 target=$2
	shift 2
	printf '| %s |' "$label"
	printf ' %s |' "$@"
	printf ' %s |\n' "$target"
}
vals() { local hz; for hz in $FREQS; do eval "printf '%s\n' \"\${$1[$hz]}\""; done; }
mapfile -t v < <(vals c_samples); row "collector: samples stored (stats SAMPLES sum)" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do echo "${c_seen[$hz]} / ${c_dropped[$hz]} / ${c_lost[$hz]}"; done)
row "collector: seen / dropped / stacks lost (its own report)" "" "${v[@]}"
mapfile -t v < <(vals c_cpu); row "collector CPU, user+sys (s, whole run)" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do
	x=$(calc '%.2f' "100 * ${c_cpu[$hz]} / $DUR")
	echo "$x % ($( [ "$hz" = 99 ] && mark "$x" "<=" 1 || echo "-"))"; done)
row "collector CPU per second of recording (% of one core)" "<= 1 % at 99 Hz" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do echo "${c_own[$hz]} %"; done)
row "  same, the collector's own figure (main loop only, no start-up)" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do echo "${c_first2[$hz]} s"; done)
row "  CPU spent by 2 s after sampling started (start-up + first drains)" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do
	x=${c_steady[$hz]}
	echo "$x % ($( [ "$hz" = 99 ] && mark "$x" "<=" 1 || echo "-"))"; done)
row "  steady state after those 2 s (% of one core)" "<= 1 % at 99 Hz" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do calc '%.1f µs' "1e6 * ${c_cpu[$hz]} / (${c_samples[$hz]} > 0 ? ${c_samples[$hz]} : 1)"; echo; done)
row "collector CPU per sample" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do
	x=$(calc '%.1f' "${c_rss[$hz]} / 1024")
	echo "$x MiB ($(mark "$x" "<=" 64))"; done)
row "collector peak RSS" "<= 64 MB" "${v[@]}"
mapfile -t v < <(vals p_samples); row "perf: samples (perf script)" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do calc '%.1f MB' "${p_bytes[$hz]} / 1e6"; echo; done)
row "perf: perf.data size" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do echo "${p_rec[$hz]} + ${p_script[$hz]} + ${p_coll[$hz]}"; done)
row "perf pipeline CPU (s): record + script + collapse" "" "${v[@]}"
mapfile -t v < <(vals p_total); row "perf pipeline CPU total (s)" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do calc '%.1f µs' "1e6 * ${p_total[$hz]} / (${p_samples[$hz]} > 0 ? ${p_samples[$hz]} : 1)"; echo; done)
row "perf pipeline CPU per sample" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do calc '%.1f MiB' "${p_rss[$hz]} / 1024"; echo; done)
row "perf pipeline: largest peak RSS of the three steps" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do
	x=$(calc '%.3f' "${c_cpu[$hz]} / (${p_total[$hz]} > 0 ? ${p_total[$hz]} : 1)")
	echo "$x ($(mark "$x" "<=" 0.1))"; done)
row "**ratio collector CPU / perf pipeline CPU**" "<= 0.1" "${v[@]}"
echo

echo "## 2. Time from start to the first sample (fresh store, -a, both cores busy)"
echo
echo "| | $(for hz in $FREQS; do printf '%s Hz | ' "$hz"; done)target |"
echo "|---|$(for hz in $FREQS; do printf -- '---|'; done)---|"
mapfile -t v < <(for hz in $FREQS; do echo "${l_armed[$hz]} ms"; done)
row "start → sampling armed (\"recording at\" line; main runs: $(for hz in $FREQS; do printf '%s ' "${c_armed[$hz]}"; done)ms)" "" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do
	x=${l_first[$hz]%%..*}
	echo "${l_first[$hz]} ms ($(mark "$x" "<=" 200))"; done)
row "start → first sample taken (probe slot)" "<= 200 ms" "${v[@]}"
mapfile -t v < <(for hz in $FREQS; do echo "${l_visible[$hz]} ms (poll every ~${l_poll[$hz]} ms)"; done)
row "start → first sample visible in the store (stats)" "" "${v[@]}"
echo
cat <<EOF
How the first-sample time is measured: the script notes the wall clock
(\$EPOCHREALTIME), starts \`flamefs-collect record -a -d 7\` on a fresh store
and at once a probe program.  The probe prints its own start (CLOCK_REALTIME)
and then runs, for 2 s, one function per 5 ms of wall clock since its start
(slot_0000, slot_0001, ...).  The first slot that has a stored sample gives
the moment, to 5 ms, at which a sample was first taken and kept, relative to
the collector's launch; the probe competes with the two burners, so this
includes the wait for a sampling tick to land on it.  "Armed" is when the
collector printed "recording at" (written right after the per-CPU events are
attached), read from its stderr through a pipe.  "Visible" is when
\`flamefs-collect stats\` (a secondary reader) first
showed a sample, polled every 50 ms plus the time a poll takes: the collector
commits once a second, so that is bounded below by its drain interval.
EOF
echo

# ---- 4. where the collector's time goes ---------------------------------

echo "## 3. Where the collector's CPU goes (99 Hz, -a, $DUR s, perf record --call-graph dwarf -p PID at 999 Hz)"
echo
s="$work/prof-store"
rm -rf "$s"
"$fc" record --verbose --store "$s" -a -F 99 -d "$DUR" >/dev/null 2>"$work/prof.log" &
rpid=$!
perf record -q -F 999 --call-graph dwarf,16384 -o "$work/prof.data" -p "$rpid" >/dev/null 2>&1 &
perfpid=$!
wait "$rpid" || true
pause 0.5
kill -INT "$perfpid" 2>/dev/null || true
wait "$perfpid" || true
echo "collector said: $(grep -o 'collector CPU.*' "$work/prof.log" || echo '?')"
echo
echo "By DSO (self):"
echo '```'
perf report -i "$work/prof.data" --no-children --sort dso --stdio -g none 2>/dev/null |
	grep -v '^#' | grep -v '^$' | head -n 12 || true
echo '```'
echo "By symbol (self), top 25:"
echo '```'
perf report -i "$work/prof.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
	grep -v '^#' | grep -v '^$' | head -n 25 || true
echo '```'
echo "By symbol including callees (children), top 30:"
echo '```'
perf report -i "$work/prof.data" --children --sort sym --stdio -g none 2>/dev/null |
	grep -v '^#' | grep -v '^$' | head -n 30 || true
echo '```'

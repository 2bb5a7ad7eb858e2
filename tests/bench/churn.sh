#!/usr/bin/env bash
# The recorder on a build machine: `record -a -F 99` under heavy process
# churn, against `perf record --call-graph dwarf` on the same load.
# Prints numbers as markdown; asserts nothing.
#   usage: sudo bash tests/bench/churn.sh
#   env:   DUR=SECONDS (default 120; 0: the soak only), LOOPS=N churn loops (default 1),
#          SOAK=MINUTES (default 0: no soak; 30 for the soak below),
#          SOAK_BASE=PATH another flamefs-collect to soak beside ours (a baseline),
#          BENCH_DIR, BENCH_BUILD (lib.sh)
#
# The churn loop is what a CI runner or a build host runs: each iteration
# compiles a small C file with gcc (driver, cc1, as), starts Debian's
# /usr/bin/python3 (not a wrapper: pyenv's shim adds a shell and env), and
# runs /bin/true five times from /bin/sh: about ten processes, most of them
# living a few milliseconds.
#
# For our recorder it reports the processes started (the kernel's fork
# count, /proc/stat), the collector's CPU (user+sys from wait4, to the
# microsecond) as a share of one core and per 1,000 processes, its peak
# RSS, the share of weight cut short ([truncated]) overall and per program
# with >= 1% of the weight, the share whose outermost frame is an entry
# point (the same measure for both tools), and the stacks lost to
# collisions (the run summary).  perf's baseline runs on the same load,
# its stacks read by `perf script` and folded by tests/ref/stackcollapse-ref.pl.
#
# With SOAK=M (M >= 12) it then records -a under the same churn for M
# minutes and prints the collector's RSS each minute and the largest
# deviation over the last 20 minutes (or all but the first 10) from its
# value at minute 10.  Outside CI: `sudo SOAK=30 bash tests/bench/churn.sh`.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
DUR=${DUR:-120}
LOOPS=${LOOPS:-1}
SOAK=${SOAK:-0}

. "$top/tests/bench/lib.sh"
bench_setup churn --root --tools "perf perl gcc /usr/bin/python3" flamefs-collect


# ---- the churn load -----------------------------------------------------------
bench_churn_load
start_churn() {
	local i
	for i in $(seq "$LOOPS"); do
		bench_bg bash "$work/churn-loop.sh" >/dev/null 2>&1
	done
}

# ---- shares of a folded file ------------------------------------------------------
# rooted: the outermost frame below the binary is an entry point (or an
# unnamed frame right below one, as `stats --quality` counts it).
shares() { # FOLDED -> "total truncated% rooted%"
	awk '
		function entry(f) {
			return f ~ /^(_start|__libc_start_call_main|__libc_start_main(@@.*)?|start_thread|clone3?|__clone3?|ret_from_fork(_asm)?|entry_SYSCALL_64(_after_hwframe)?|_dl_start_user|_dl_start)$/
		}
		{
			w = $NF; line = $0; sub(/ [0-9]+$/, "", line)
			n = split(line, f, ";")
			t += w
			if (line ~ /;\[truncated\]/) tr += w
			if (n >= 2 && entry(f[2])) ro += w
		}
		END { printf "%.0f %.2f %.2f\n", t, t ? 100 * tr / t : 0, t ? 100 * ro / t : 0 }' "$1"
}
# per program with >= 1% of the weight: "program weight% truncated%"
by_program() {
	awk '
		{ w = $NF; line = $0; sub(/ [0-9]+$/, "", line); split(line, f, ";")
		  t += w; pw[f[1]] += w; if (line ~ /;\[truncated\]/) pt[f[1]] += w }
		END { for (p in pw) if (pw[p] * 100 >= t) printf "%s %.1f %.1f\n", p, 100 * pw[p] / t, 100 * pt[p] / pw[p] }' "$1" |
		sort -k2 -nr
}

bench_machine
echo "# churn: $LOOPS loop(s) of gcc -c + python3 -c pass + sh -c 'true x5'; record -a -F 99 for ${DUR} s"
echo

# ---- ours ---------------------------------------------------------------------------
if [ "$DUR" -gt 0 ]; then
start_churn
sleep 3
f0=$(bench_forks)
"${rusage[@]}" "$work/ours.time" "$fc" record --verbose --store "$work/store" -a -F 99 -d "$DUR" \
	2>"$work/ours.err" &
rec=$!
# The peak RSS, polled each second by builtins alone: this script is deep
# in bash's recursion (a long list inside an `if`, 160+ frames), and each
# fork of it (a $(...), sleep, pgrep) was charged to the load as a
# [truncated] bash stack: on a machine with costly page-table copies, 13%
# of the weight.  The recorder is the wrapper's only child.
peak=0 pid=
exec {tick}<> <(:)
while kill -0 "$rec" 2>/dev/null; do
	if [ -z "$pid" ]; then
		for c in /proc/[0-9]*/stat; do
			read -r line 2>/dev/null <"$c" || continue
			f=(${line##*) }) # after "pid (comm) ": state, ppid
			[ "${f[1]}" = "$rec" ] && pid=${c//[^0-9]/} && break
		done
	fi
	if [ -n "$pid" ]; then
		while read -r k v _; do
			[ "$k" = VmRSS: ] && [ "$v" -gt "$peak" ] && peak=$v
		done 2>/dev/null <"/proc/$pid/status" || true
	fi
	read -r -t 1 -u "$tick" _ || true
done
exec {tick}<&-
wait "$rec" || true
f1=$(bench_forks)
bench_stop_bg
procs=$((f1 - f0))
read -r wall user sys rss < <(tail -n 1 "$work/ours.time")
"$fc" export --store "$work/store" >"$work/ours.folded"
read -r o_total o_tr o_ro < <(shares "$work/ours.folded")
collisions=$(grep -o 'stacks lost: [^;]*' "$work/ours.err" | sed 's/stacks lost: //')
events_lost=$(grep -o 'process events lost: [0-9]*' "$work/ours.err" | awk '{ print $4 }')

# ---- perf --call-graph dwarf, same load ------------------------------------------------
start_churn
sleep 3
g0=$(bench_forks)
"${rusage[@]}" "$work/perf.time" perf record -q -e cpu-clock -F 99 -a --call-graph dwarf \
	-o "$work/perf.data" -- sleep "$DUR" >/dev/null 2>&1 || true
g1=$(bench_forks)
bench_stop_bg
"${rusage[@]}" "$work/script.time" bash -c \
	"perf script -i '$work/perf.data' 2>/dev/null | perl '$top/tests/ref/stackcollapse-ref.pl' >'$work/perf.folded'"
read -r p_total p_tr p_ro < <(shares "$work/perf.folded")
read -r _ pu ps prss < <(tail -n 1 "$work/perf.time")
read -r _ su ss _ < <(tail -n 1 "$work/script.time")
perf_size=$(stat -c %s "$work/perf.data")

cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
echo "| churn, ${DUR} s, -F 99 -a | flamefs record | perf record --call-graph dwarf |"
echo "|---|---|---|"
echo "| processes started (rate) | $procs ($(awk -v p="$procs" -v d="$wall" 'BEGIN { printf "%.0f/s", p / d }')) | $((g1 - g0)) ($(awk -v p="$((g1 - g0))" -v d="$DUR" 'BEGIN { printf "%.0f/s", p / d }')) |"
echo "| collector CPU (share of one core) | $cpu s ($(awk -v c="$cpu" -v d="$wall" 'BEGIN { printf "%.2f%%", 100 * c / d }')) | record $(awk -v u="$pu" -v s="$ps" 'BEGIN { printf "%.3f", u + s }') s + script $(awk -v u="$su" -v s="$ss" 'BEGIN { printf "%.3f", u + s }') s |"
echo "| CPU per 1,000 processes | $(awk -v c="$cpu" -v p="$procs" 'BEGIN { printf "%.1f ms", p ? 1e6 * c / p : 0 }') | |"
echo "| peak RSS | $((peak / 1024)) MiB (wait4: $((rss / 1024)) MiB) | $((prss / 1024)) MiB, data $((perf_size / 1048576)) MiB |"
echo "| weight [truncated] | ${o_tr}% | (perf marks none) |"
echo "| weight rooted at an entry point | ${o_ro}% | ${p_ro}% |"
echo "| stacks lost | $collisions; process events lost ${events_lost:-0} | |"
echo
echo "Programs with >= 1% of our weight (weight %, [truncated] % of the program):"
echo
echo "| program | weight | [truncated] |"
echo "|---|---|---|"
by_program "$work/ours.folded" | awk '{ printf "| %s | %s%% | %s%% |\n", $1, $2, $3 }'
echo
echo "Run summary:"
sed 's/^/    /' "$work/ours.err"
fi

# ---- the soak --------------------------------------------------------------------------
# rss_row PID: "VmRSS RssAnon RssFile" in KiB (0 0 0 once it has gone).
rss_row() {
	awk '/^(VmRSS|RssAnon|RssFile):/ { v[$1] = $2 } END { printf "%d %d %d", v["VmRSS:"], v["RssAnon:"], v["RssFile:"] }' \
		"/proc/$1/status" 2>/dev/null || echo "0 0 0"
}
# worst LABEL RSS...: the largest rise and the largest fall of minutes $from..$SOAK
# against minute 10 (a fall is the kernel reclaiming file pages or --module-grace
# freeing files; a leak is a rise).
worst() {
	local label=$1
	shift
	awk -v label="$label" -v from="$from" -v last="$SOAK" -v list="$*" 'BEGIN {
		n = split(list, v, " "); base = v[10]; up = 0; down = 0
		for (i = from; i <= last && i <= n; i++) {
			d = (v[i] - base) / base * 100
			if (d > up) up = d
			if (-d > down) down = -d
		}
		printf "%sat minute 10: %d KiB; over minutes %d-%d at most +%.1f%%, at least -%.1f%%; minute %d: %+.1f%%\n",
			label, base, from, last, up, down, last, (v[last] - base) / base * 100 }'
}
if [ "$SOAK" -ge 12 ]; then
	echo
	echo "## Soak: record -a -F 99 under churn for $SOAK minutes"
	[ -z "${SOAK_BASE:-}" ] || echo "(beside it, the same command of the baseline $SOAK_BASE, on the same load)"
	start_churn
	"$fc" record --verbose --store "$work/soak" -a -F 99 -d "$((SOAK * 60 + 30))" 2>"$work/soak.err" &
	rec=$!
	base_rec=
	if [ -n "${SOAK_BASE:-}" ]; then
		"$SOAK_BASE" record --store "$work/soak-base" -a -F 99 -d "$((SOAK * 60 + 30))" 2>"$work/soak-base.err" &
		base_rec=$!
	fi
	sleep 2
	if [ -n "$base_rec" ]; then
		echo "| minute | VmRSS (KiB) | RssAnon | RssFile | baseline VmRSS | RssAnon | RssFile |"
		echo "|---|---|---|---|---|---|---|"
	else
		echo "| minute | VmRSS (KiB) | RssAnon | RssFile |"
		echo "|---|---|---|---|"
	fi
	rss_at=() anon_at=() base_at=()
	for m in $(seq 1 "$SOAK"); do
		sleep 60
		read -r v a f <<<"$(rss_row "$rec")"
		rss_at[m]=$v
		anon_at[m]=$a
		if [ -n "$base_rec" ]; then
			read -r bv ba bf <<<"$(rss_row "$base_rec")"
			base_at[m]=$bv
			echo "| $m | $v | $a | $f | $bv | $ba | $bf |"
		else
			echo "| $m | $v | $a | $f |"
		fi
	done
	wait "$rec" || true
	[ -z "$base_rec" ] || wait "$base_rec" || true
	bench_stop_bg
	from=$((SOAK - 20 > 10 ? SOAK - 20 : 11))
	echo
	worst "VmRSS " "${rss_at[@]}"
	worst "RssAnon " "${anon_at[@]}"
	[ -z "$base_rec" ] || worst "baseline: VmRSS " "${base_at[@]}"
	sed 's/^/    /' "$work/soak.err"
	if [ -n "$base_rec" ]; then
		echo "  baseline:"
		sed 's/^/    /' "$work/soak-base.err"
	fi
fi

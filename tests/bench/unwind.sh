#!/usr/bin/env bash
# DWARF-unwinding benchmark for `flamefs-collect record` (issue #11,
# "Targets"), side by side with perf in the same run.  Prints numbers as
# markdown; asserts nothing (each target gets a "met"/"missed" note).
#   usage: sudo bash tests/bench/unwind.sh
#   env:   BENCH_DIR=DIR (default: a fresh directory under /var/tmp,
#          removed at the end unless BENCH_DIR), HZ (default 999: parts 1-3),
#          SECS (default 8: length of each workload in parts 1-3; the
#          compile loop in part 3: CC_SECS, default 20),
#          DUR (default 30: parts 4 and 5), LOAD_MAX (default 3.0),
#          LOAD_WAIT (default 60 s), PARTS (default "1 2 3 4 5")
#
# Parts:
#   1. tests/unwind-target.c `tree` (-O2 -fomit-frame-pointer
#      -fno-optimize-sibling-calls, libc without frame pointers either),
#      which measures the CPU time of its hot and cold branches itself:
#      the share of weight under _start;__libc_start_main;
#      __libc_start_call_main;main;work;hot_leaf, against that truth, for
#      flamefs --unwind auto and fp, perf --call-graph dwarf and perf -g.
#   2. Debian's /usr/bin/python3 on a JSON workload: % of its weight under
#      Py_BytesMain, flamefs vs perf --call-graph dwarf.
#   3. Agreement with perf on workloads whose stacks fit perf's 8 KB stack
#      copy (the tree, xz -9, a gcc -O2 compile loop): the weight on
#      identical folded stacks, sum over stacks of min(share ours, share
#      perf), after the naming normalisation described in the output.
#   4. Collector CPU at -a -F 99 for DUR s with both cores busy (python3
#      JSON loop, xz loop, compile loop), user+sys from wait4
#      (tests/bench/rusage.py), against the perf --call-graph dwarf
#      pipeline (record + script + collapse) on the same load.
#   5. Peak RSS of `record -a` while a loop execs 50+ distinct binaries
#      (and python3 runs), the "unwind tables:" summary, and how long
#      libc's and python3's tables take to build (`unwind-table
#      --summary`, median of 5).
#
# In parts 1-3 the two tools record the same execution: flamefs runs
# `perf record ... -- WORKLOAD` as its COMMAND, so it follows perf and the
# workload; perf's own samples are left out of ours.  Each tool samples on
# its own cpu-clock timer, so the two are independent draws from the same
# run; part 3 prints perf against itself (its odd against its even samples)
# as the agreement that sampling noise alone leaves.
#
# The load average is printed at the start of each part.  When the 1-min
# load is above LOAD_MAX the part waits up to LOAD_WAIT s for it to fall;
# if it is still above, the part runs twice and both runs are printed.
# Everything but the measured commands runs under `nice`.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
HZ=${HZ:-999}
SECS=${SECS:-8}
CC_SECS=${CC_SECS:-20}
DUR=${DUR:-30}
LOAD_MAX=${LOAD_MAX:-3.0}
LOAD_WAIT=${LOAD_WAIT:-60}
PARTS=${PARTS:-"1 2 3 4 5"}
export LC_ALL=C

[ -x /usr/bin/python3 ] || { echo "unwind.sh: /usr/bin/python3 is missing" >&2; exit 1; }
. "$top/tests/lib.sh"
. "$top/tests/bench/lib.sh"
bench_setup unwind --root --tools "perf perl gcc xz python3 readelf" --nice flamefs-collect tests/unwind-target
target="$build/tests/unwind-target"
collapse="$top/tests/ref/stackcollapse-ref.pl"

# ---- helpers ------------------------------------------------------------

# A sleep that forks nothing (a -a recording sees every new process).
rm -f "$work/tick"
mkfifo "$work/tick"
exec {tick_fd}<>"$work/tick"
pause() { read -r -t "$1" -u "$tick_fd" _ || true; }

calc() { awk "BEGIN { printf \"$1\", $2 }"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
load3() { cut -d' ' -f1-3 /proc/loadavg; }
above() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# rusage.py run by the interpreter itself, so that the measured command is
# its direct child even where python3 is a wrapper script (pyenv's shims)
cpu_of() { awk '{ printf "%.3f", $2 + $3 }' "$1"; } # rusage line -> user+sys
rss_of() { awk '{ printf "%.1f", $4 / 1024 }' "$1"; } # rusage line -> MiB

mark() { # value op limit
	awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
		if (v !~ /^-?[0-9.]+$/) { print "?"; exit }
		ok = (op == "<=") ? (v + 0 <= l + 0) : (v + 0 >= l + 0)
		print ok ? "met" : "**missed**" }'
}

# wait_quiet: waits (up to LOAD_WAIT s) for the 1-min load to fall to
# LOAD_MAX; prints the load; returns 1 when it is still above.
wait_quiet() {
	local waited=0
	while above "$(load1)" "$LOAD_MAX" && [ "$waited" -lt "$LOAD_WAIT" ]; do
		pause 5
		waited=$((waited + 5))
	done
	echo "load average at the start: $(load3) (waited ${waited} s for <= $LOAD_MAX; $(ls -d /proc/[0-9]* 2>/dev/null | wc -l) processes)"
	echo
	! above "$(load1)" "$LOAD_MAX"
}

# run_part FN: runs FN RUN once, twice when the load was high at its start.
run_part() {
	if wait_quiet; then
		"$1" 1
		echo
		echo "load average at the end: $(load3)"
	else
		"$1" 1
		echo
		echo "(load was above $LOAD_MAX at the start: run again)"
		echo
		wait_quiet || true
		"$1" 2
		echo
		echo "load average at the end: $(load3)"
	fi
}

# Folded-stack helpers.  weight FILE REGEX: summed weight of matching lines.
weight() { stack_weight "$1" "$2"; }
pct() { # part whole -> percent
	awk -v p="$1" -v w="$2" 'BEGIN { if (w > 0) printf "%.1f", 100 * p / w; else print "n/a" }'
}

# walks LOG: the collector's "user stacks:" summary, in short.
walks() {
	if grep -q 'user stacks: by frame pointers' "$1"; then
		echo "all by frame pointers"
		return
	fi
	sed -n 's/.*user stacks: \([0-9]*\) walked by CFI, \([0-9]*\) by CFI and frame pointers (\([0-9]*\) of them.*), \([0-9]*\) by frame pointers alone.*, \([0-9]*\) cut short.*/CFI \1, CFI+FP \2 (\3 while a table was built), FP alone \4, truncated \5/p' "$1"
}

# dual NAME OURS_ARGS PERF_ARGS -- COMMAND...: one execution of COMMAND
# recorded by both: flamefs (record OURS_ARGS -- perf record PERF_ARGS --
# COMMAND) and perf.  Leaves NAME.ours (flamefs export, perf's own samples
# left out), NAME.perf.txt (perf script --no-inline), NAME.perf (collapsed)
# and NAME.log (the collector's summary).
dual() {
	local name=$1 ours=$2 theirs=$3
	shift 4
	rm -rf "$work/$name.store"
	# shellcheck disable=SC2086
	"$fc" record --verbose --store "$work/$name.store" -F "$HZ" $ours -- \
		perf record -q -e cpu-clock -F "$HZ" $theirs -o "$work/$name.data" -- "$@" \
		>"$work/$name.out" 2>"$work/$name.log" || echo "(record of $name exited with $?: $work/$name.log)"
	nice "$fc" export --store "$work/$name.store" 2>/dev/null |
		nice awk '{ split($0, a, ";") } a[1] != "perf" && a[1] != "perf-exec"' >"$work/$name.ours"
	nice perf script -i "$work/$name.data" --no-inline 2>/dev/null >"$work/$name.perf.txt"
	nice perl "$collapse" "$work/$name.perf.txt" |
		nice awk '{ split($0, a, ";") } a[1] != "perf" && a[1] != "perf-exec"' >"$work/$name.perf"
}

# The JSON workload (not named json.py: that would shadow the module).
cat >"$work/jsonload.py" <<'EOF'
import json, sys, time
d = [[i, [str(j) for j in range(20)], {"x": 1.5, "y": None, "z": [[k, str(k)] for k in range(5)]}]
     for i in range(2000)]
end = time.time() + float(sys.argv[1])
while time.time() < end:
    json.loads(json.dumps(d))
EOF
# xz's input: 4 MB of base64 text of random bytes (compresses to ~76%).
head -c 3000000 /dev/urandom | base64 >"$work/xz.in"
cat >"$work/xzloop.sh" <<EOF
end=\$((SECONDS + \$1))
while [ \$SECONDS -lt \$end ]; do xz -9 -c "$work/xz.in" >/dev/null; done
EOF
# A compile loop: gcc -O2 on a small file (tests/unwind-target.c).
cat >"$work/ccloop.sh" <<EOF
end=\$((SECONDS + \$1))
while [ \$SECONDS -lt \$end ]; do gcc -O2 -c "$top/tests/unwind-target.c" -o "$work/cc.\$\$.o"; done
rm -f "$work/cc.\$\$.o"
EOF

# ---- the machine --------------------------------------------------------

echo "# flamefs-collect record: DWARF unwinding benchmark (issue #11)"
echo
echo "machine: $(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME"); $(perf --version); $(/usr/bin/python3 --version) ($(readlink -f /usr/bin/python3)); $(xz --version | head -1); $(gcc --version | head -1)"
echo "build: $build (release), commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?'); parts 1-3 at $HZ Hz, $SECS s per workload; parts 4-5: $DUR s"
echo "other engineers build on this machine at the same time: see the load averages."
echo

# ---- 1. the known tree --------------------------------------------------

start='^unwind-target;_start;__libc_start_main(_impl)?(@@?GLIBC_[0-9.]+)?;__libc_start_call_main;main;work;'
tree_rows() { # RUN
	local run=$1 mode ours theirs name truth hot cold cpu tshare split
	for mode in dwarf fp; do
		if [ "$mode" = dwarf ]; then ours="--unwind auto" theirs="--call-graph dwarf"
		else ours="--unwind fp" theirs="-g"; fi
		name=tree-$mode-$run
		truth=$work/$name.truth
		dual "$name" "$ours" "$theirs" -- "${rusage[@]}" "$work/$name.time" "$target" tree "$SECS" "$truth"
		hot=$(awk '$1 == "hot" { print $2 }' "$truth")
		cold=$(awk '$1 == "cold" { print $2 }' "$truth")
		cpu=$(cpu_of "$work/$name.time")
		tshare=$(calc '%.1f' "100 * $hot / 1e9 / $cpu")
		split=$(calc '%.1f' "100 * $hot / ($hot + $cold)")
		local f label w w2 all h c share hs d tgt
		for f in ours perf; do
			if [ $f = ours ]; then label="flamefs $ours"; else label="perf $theirs"; fi
			all=$(weight "$work/$name.$f" '^unwind-target;')
			w=$(weight "$work/$name.$f" "${start}hot_leaf(;|\$)")
			w2=$(weight "$work/$name.$f" '^unwind-target;(.*;)?__libc_start_call_main;main;work;hot_leaf(;|$)')
			h=$(weight "$work/$name.$f" ';work;hot_leaf(;|$)')
			c=$(weight "$work/$name.$f" ';work;cold_leaf(;|$)')
			share=$(pct "$w" "$all")
			hs=$(pct "$h" $((h + c)))
			d=$(calc '%+.1f' "$share - $tshare")
			if [ "$f$mode" = oursdwarf ]; then tgt="$(d=${d#[+-]}; mark "$d" "<=" 10)"
			else tgt="- (reference)"; fi
			printf '| %s | %s | %s | %s %% | %s %% | %s | %s | %s %% | %s %% / %s %% | %s |\n' \
				"$run" "$label" "$((all / (1000000000 / HZ)))" "$share" "$tshare" "$d" \
				"$tgt" "$(pct "$w2" "$all")" "$hs" "$split" "$( [ $f = ours ] && walks "$work/$name.log" || echo -)"
		done
	done
}
part1() {
	[ "$1" = 1 ] && {
		echo "| run | tool | samples | under _start;…;main;work;hot_leaf (of the process) | truth (hot ns / process CPU) | diff (points) | ±10 | under __libc_start_call_main;main;work;hot_leaf, any frames above | hot:(hot+cold) sampled / truth | flamefs's walks (its summary) |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
	}
	tree_rows "$1"
}

if [[ " $PARTS " == *" 1 "* ]]; then
	echo "## 1. Known tree, -O2 -fomit-frame-pointer -fno-optimize-sibling-calls ($SECS s, $HZ Hz)"
	echo
	cat <<EOF
\`$target tree $SECS TRUTH\` under rusage.py: main → work → hot_leaf → spin
takes three units of CPU for every one of main → work → cold_leaf → spin,
and writes the thread CPU time of each branch (truth).  Truth share = hot ns
/ the process's user+sys (wait4); the sampled share = weight of folded
stacks starting \`unwind-target;_start;__libc_start_main;__libc_start_call_main;main;work;hot_leaf\`
/ all of unwind-target's weight.  flamefs auto and perf dwarf record one
execution, flamefs fp and perf -g another.  The column after the target
does not require the two outermost frames (_start, __libc_start_main),
which perf --call-graph dwarf drops from every stack in some runs.
EOF
	echo
	run_part part1
	echo
fi

# ---- 2. Debian's python3 ------------------------------------------------

part2() {
	local run=$1 name all w f
	name=py-$run
	[ "$run" = 1 ] && {
		echo "| run | tool | samples | under Py_BytesMain | target |"
		echo "|---|---|---|---|---|"
	}
	dual "$name" "--unwind auto" "--call-graph dwarf" -- /usr/bin/python3 "$work/jsonload.py" 5
	for f in ours perf; do
		all=$(weight "$work/$name.$f" '^python3')
		w=$(weight "$work/$name.$f" '^python3[^;]*;(.*;)?Py_BytesMain(;|$)')
		printf '| %s | %s | %s | %s %% | %s |\n' "$run" \
			"$( [ $f = ours ] && echo 'flamefs (auto)' || echo 'perf --call-graph dwarf')" \
			"$((all / (1000000000 / HZ)))" "$(pct "$w" "$all")" \
			"$( [ $f = ours ] && echo ">= 90 %: $(mark "$(pct "$w" "$all")" ">=" 90)" || echo "(issue: 77-85 %)")"
	done
	echo "| $run | flamefs walks: $(walks "$work/$name.log") | | | |"
}
if [[ " $PARTS " == *" 2 "* ]]; then
	echo "## 2. Debian's /usr/bin/python3, json.dumps/json.loads of a nested list (5 s, $HZ Hz)"
	echo
	echo "Both tools record the same execution.  Weight of the process's stacks that pass through Py_BytesMain / all of its weight."
	echo
	run_part part2
	echo
fi

# ---- 3. agreement with perf ---------------------------------------------

# Kernel symbol names, to drop the kernel part (a suffix) of folded stacks
# for the "user frames only" column.
awk '{ print $3 }' /proc/kallsyms | sort -u >"$work/ksyms"

# alias_map OURS PERF OUT: perf names a process by its comm, the name it was
# executed as (gcc, as, python3); flamefs by the basename of
# /proc/PID/exe (x86_64-linux-gnu-gcc-12, x86_64-linux-gnu-as,
# python3.11).  Each comm that is not one of ours is resolved as the
# workloads here run it (/usr/bin, else PATH, else gcc's own programs),
# through symlinks.
alias_map() {
	local c p r
	: >"$3"
	while read -r c; do
		grep -qxF "$c" <(cut -d';' -f1 "$1" | sort -u) && continue
		p=
		[ -x "/usr/bin/$c" ] && p=/usr/bin/$c
		[ -n "$p" ] || p=$(command -v "$c" 2>/dev/null || true)
		case "$p" in /*) ;; *) p=$(gcc -print-prog-name="$c" 2>/dev/null || true) ;; esac
		case "$p" in /*) r=$(basename "$(readlink -f "$p")") ;; *) continue ;; esac
		if [ "$r" != "$c" ]; then echo "$c $r" >>"$3"; fi
	done < <(cut -d';' -f1 "$2" | sort -u)
	return 0
}

# agree OURS PERF ALIASES FILTER USERONLY [TRIM]: sum over normalised
# stacks of min(share in OURS, share in PERF), in %.  Normalisation: symbol
# versions (@GLIBC_2.2.5, @@GLIBC_2.34) removed from perf's frames; perf's
# process names mapped through ALIASES; only processes matching FILTER;
# with USERONLY=1 the trailing kernel frames dropped on both sides; with
# TRIM=1 the frames above __libc_start_call_main (_start,
# __libc_start_main) dropped on both sides; BOTH: aliases for both files
# (perf against perf).
agree() {
	nice awk -v filter="$4" -v useronly="$5" -v trim="${6:-0}" -v ks="$work/ksyms" -v al="$3" \
		-v both="${7:-/dev/null}" '
		BEGIN {
			while ((getline l < ks) > 0) k[l] = 1
			while ((getline l < al) > 0) { split(l, x, " "); alias[x[1]] = x[2] }
			while ((getline l < both) > 0) { split(l, x, " "); alias2[x[1]] = x[2] }
		}
		{
			w = $NF; s = $0; sub(/ [0-9]+$/, "", s)
			n = split(s, f, ";")
			if (FILENAME == ARGV[2] && (f[1] in alias)) f[1] = alias[f[1]]
			if (f[1] in alias2) f[1] = alias2[f[1]]
			if (f[1] !~ filter) next
			if (useronly) while (n > 1 && (f[n] in k)) n--
			from = 2
			if (trim) for (i = 2; i <= n && i <= 4; i++) if (f[i] == "__libc_start_call_main") from = i
			key = f[1]
			for (i = from; i <= n; i++) {
				g = f[i]
				gsub(/@@?[A-Za-z][A-Za-z0-9_]*_[0-9][0-9.]*$/, "", g)
				key = key ";" g
			}
			side = (FILENAME == ARGV[1]) ? 1 : 2
			W[side, key] += w; T[side] += w; keys[key] = 1
		}
		END {
			if (T[1] == 0 || T[2] == 0) { print "n/a"; exit }
			for (key in keys) {
				p = W[1, key] / T[1]; q = W[2, key] / T[2]
				sum += (p < q ? p : q)
			}
			printf "%.1f\n", 100 * sum
		}' "$1" "$2"
}

# split_perf TXT ODD EVEN: perf script text cut into odd and even samples.
split_perf() {
	nice awk -v odd="$2" -v even="$3" 'BEGIN { RS = ""; ORS = "\n\n" }
		{ if (NR % 2) print > odd; else print > even }' "$1"
}

# thin FOLDED: each of our samples kept with probability 1/2 (a draw of
# half the samples from the same distribution: compares with perf's odd
# or even samples at equal sample counts).
thin() {
	nice awk -v per=$((1000000000 / HZ)) 'BEGIN { srand(11) }
		{ n = int($NF / per + 0.5); k = 0; for (i = 0; i < n; i++) if (rand() < 0.5) k++
		  if (k) { s = $0; sub(/ [0-9]+$/, "", s); print s, k * per } }' "$1"
}

# complete FOLDED FILTER ALIASES: % of the weight whose stack reaches the
# outermost frame: _start (named, or the stripped binary's [NAME] above
# __libc_start_main), or start_thread / clone3 for threads.
complete() {
	awk -v filter="$2" -v al="$3" '
		BEGIN { while ((getline l < al) > 0) { split(l, x, " "); m[x[1]] = x[2] } }
		{ split($0, a, ";"); p = (a[1] in m) ? m[a[1]] : a[1]; if (p !~ filter) next
		  w = $NF; t += w
		  split($0, f, /[; ]/)
		  if (f[2] == "_start" || f[2] ~ /^(start_thread|clone3?|_dl_start_user)$/ ||
		      (f[2] ~ /^\[.*\]$/ && f[2] != "[truncated]" && f[3] ~ /^__libc_start_main/)) c += w }
		END { if (t > 0) printf "%.1f\n", 100 * c / t; else print "n/a" }' "$1"
}

agree_row() { # RUN LABEL NAME FILTER
	local run=$1 label=$2 name=$3 filter=$4 full user trim self half aliases
	alias_map "$work/$name.ours" "$work/$name.perf" "$work/$name.alias"
	full=$(agree "$work/$name.ours" "$work/$name.perf" "$work/$name.alias" "$filter" 0)
	user=$(agree "$work/$name.ours" "$work/$name.perf" "$work/$name.alias" "$filter" 1)
	trim=$(agree "$work/$name.ours" "$work/$name.perf" "$work/$name.alias" "$filter" 0 1)
	split_perf "$work/$name.perf.txt" "$work/$name.odd.txt" "$work/$name.even.txt"
	nice perl "$collapse" "$work/$name.odd.txt" >"$work/$name.odd"
	nice perl "$collapse" "$work/$name.even.txt" >"$work/$name.even"
	thin "$work/$name.ours" >"$work/$name.half"
	self=$(agree "$work/$name.even" "$work/$name.odd" /dev/null "$filter" 0 "" "$work/$name.alias")
	half=$(agree "$work/$name.half" "$work/$name.odd" "$work/$name.alias" "$filter" 0)
	aliases=$(awk '{ printf "%s%s→%s", (NR > 1 ? ", " : ""), $1, $2 }' "$work/$name.alias")
	printf '| %s | %s | %s / %s | %s / %s | %s %% / %s %% | **%s %%** (%s) | %s %% | %s %% | %s %% / %s %% | %s |\n' "$run" "$label" \
		"$(awk -v f="$filter" '{ split($0, a, ";") } a[1] ~ f' "$work/$name.ours" | wc -l)" \
		"$(awk -v f="$filter" -v al="$work/$name.alias" 'BEGIN { while ((getline l < al) > 0) { split(l, x, " "); m[x[1]] = x[2] } }
			{ split($0, a, ";"); p = (a[1] in m) ? m[a[1]] : a[1] } p ~ f' "$work/$name.perf" | wc -l)" \
		"$(( $(weight "$work/$name.ours" '.') / (1000000000 / HZ) ))" \
		"$(( $(weight "$work/$name.perf" '.') / (1000000000 / HZ) ))" \
		"$(complete "$work/$name.ours" "$filter" /dev/null)" \
		"$(complete "$work/$name.perf" "$filter" "$work/$name.alias")" \
		"$full" "$(mark "$full" ">=" 95)" "$user" "$trim" "$half" "$self" "${aliases:--}"
}
part3() {
	local run=$1
	[ "$run" = 1 ] && {
		echo "| run | workload | distinct stacks ours / perf | samples ours / perf | complete stacks ours / perf | **same stacks (Σ min)**, target ≥ 95 % | same, user frames only | same, from __libc_start_call_main down | at half the samples: ours vs perf odd / perf even vs perf odd (noise) | process names normalised (perf → flamefs) |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
	}
	# The tree: part 1's dwarf execution when there was one.
	[ -f "$work/tree-dwarf-$run.ours" ] ||
		dual "tree-dwarf-$run" "--unwind auto" "--call-graph dwarf" -- \
			"${rusage[@]}" "$work/tree-dwarf-$run.time" "$target" tree "$SECS" "$work/tree-dwarf-$run.truth"
	agree_row "$run" "tree (unwind-target)" "tree-dwarf-$run" '^unwind-target$'
	dual "xz-$run" "--unwind auto" "--call-graph dwarf" -- bash "$work/xzloop.sh" "$SECS"
	agree_row "$run" "xz -9 (4 MB of base64)" "xz-$run" '.'
	dual "cc-$run" "--unwind auto" "--call-graph dwarf" -- bash "$work/ccloop.sh" "$CC_SECS"
	agree_row "$run" "gcc -O2 -c loop" "cc-$run" '.'
	[ -f "$work/py-$run.ours" ] &&
		agree_row "$run" "(python3 JSON, part 2: not required)" "py-$run" '.'
	true
}
if [[ " $PARTS " == *" 3 "* ]]; then
	echo "## 3. Agreement with perf --call-graph dwarf (same execution, $HZ Hz, $SECS s each, the compile loop $CC_SECS s)"
	echo
	cat <<'EOF'
Ours: `flamefs-collect export` (no inline frames).  Perf: `perf record -e
cpu-clock --call-graph dwarf` + `perf script --no-inline` +
tests/ref/stackcollapse-ref.pl.  Agreement = Σ over folded stacks of
min(share ours, share perf).  Normalised, and only this: symbol versions
that perf prints and flamefs drops (`__libc_start_main@@GLIBC_2.34` →
`__libc_start_main`, any `@VER`/`@@VER` suffix of the form NAME_DIGITS);
perf's process name (the comm: the name a program was executed as,
`gcc`, `as`, `python3`) mapped to flamefs's (the basename of
/proc/PID/exe: `x86_64-linux-gnu-gcc-12`, `x86_64-linux-gnu-as`,
`python3.11`) by resolving the comm the way these workloads run it
(/usr/bin, else PATH, else `gcc -print-prog-name`, then symlinks); the mappings used are in the last
column.  Perf's own process is left out of ours.  "User frames only"
drops the kernel frames (a trailing run of /proc/kallsyms names) on both
sides.  Sampling noise: the two tools sample at different moments, so
even identical unwinders leave rare stacks unmatched.  The next column
measures that: perf's even samples against its odd ones (what sampling
alone allows), beside ours thinned to half (each sample kept with
probability 1/2) against perf's odd samples, at equal sample counts; the
gap between the two is the disagreement that is not noise.  "Complete
stacks": weight whose stack reaches the outermost frame (_start, or a
stripped binary's [NAME] above __libc_start_main; start_thread or clone3
for threads); perf --call-graph dwarf
loses the two outermost frames (_start, __libc_start_main) of every stack
in some runs (a perf artefact: the "complete stacks" column shows it), so "from __libc_start_call_main
down" compares the stacks without those two frames on both sides.
EOF
	echo
	run_part part3
	echo
fi

# ---- 4. collector CPU ---------------------------------------------------

start_load() { # python3 JSON loop, xz loop, compile loop: both cores busy
	bench_bg nice bash -c "while :; do /usr/bin/python3 '$work/jsonload.py' 60; done" >/dev/null 2>&1
	bench_bg nice bash "$work/xzloop.sh" 100000 >/dev/null 2>&1
	bench_bg nice bash "$work/ccloop.sh" 100000 >/dev/null 2>&1
	pause 2
}
part4() {
	local run=$1 m ours_auto ours_fp pr ps pc ptotal
	[ "$run" = 1 ] && {
		echo "| run | what | CPU user+sys (s) | % of one core | peak RSS | target |"
		echo "|---|---|---|---|---|---|"
	}
	start_load
	echo "| $run | load running: python3 JSON loop, xz -9 loop, gcc -O2 loop (niced); load average now $(load3) | | | | |"
	for m in auto fp; do
		rm -rf "$work/cpu-$m-$run.store"
		"${rusage[@]}" "$work/cpu-$m-$run.time" \
			"$fc" record --verbose --store "$work/cpu-$m-$run.store" -a -F 99 -d "$DUR" --unwind "$m" \
			>/dev/null 2>"$work/cpu-$m-$run.log" || echo "| $run | (record --unwind $m exited with $?) | | | | |"
	done
	"${rusage[@]}" "$work/pr-$run.time" \
		perf record -q -e cpu-clock -F 99 -a --call-graph dwarf -o "$work/cpu-$run.data" -- sleep "$DUR" >/dev/null 2>&1
	local loadend
	loadend=$(load3)
	bench_stop_bg
	"${rusage[@]}" "$work/ps-$run.time" \
		perf script -i "$work/cpu-$run.data" --no-inline >"$work/cpu-$run.txt" 2>/dev/null
	"${rusage[@]}" "$work/pc-$run.time" \
		perl "$collapse" "$work/cpu-$run.txt" >"$work/cpu-$run.folded"
	ours_auto=$(cpu_of "$work/cpu-auto-$run.time")
	ours_fp=$(cpu_of "$work/cpu-fp-$run.time")
	pr=$(cpu_of "$work/pr-$run.time")
	ps=$(cpu_of "$work/ps-$run.time")
	pc=$(cpu_of "$work/pc-$run.time")
	ptotal=$(calc '%.3f' "$pr + $ps + $pc")
	local x
	x=$(calc '%.2f' "100 * $ours_auto / $DUR")
	echo "| $run | flamefs record -a -F 99 -d $DUR (--unwind auto) | $ours_auto | $x % | $(rss_of "$work/cpu-auto-$run.time") MiB | <= 1 %: $(mark "$x" "<=" 1) |"
	echo "| $run | flamefs record -a -F 99 -d $DUR --unwind fp (reference) | $ours_fp | $(calc '%.2f' "100 * $ours_fp / $DUR") % | $(rss_of "$work/cpu-fp-$run.time") MiB | |"
	echo "| $run | perf record -a -F 99 --call-graph dwarf -- sleep $DUR | $pr | $(calc '%.2f' "100 * $pr / $DUR") % | $(rss_of "$work/pr-$run.time") MiB | |"
	echo "| $run | perf script --no-inline ($(stat -c %s "$work/cpu-$run.data" | awk '{ printf "%.0f MB", $1 / 1e6 }') of perf.data, $(grep -c '^[^[:space:]#]' "$work/cpu-$run.txt" || true) samples) | $ps | | $(rss_of "$work/ps-$run.time") MiB | |"
	echo "| $run | stackcollapse-ref.pl | $pc | | $(rss_of "$work/pc-$run.time") MiB | |"
	echo "| $run | perf pipeline total | $ptotal | $(calc '%.2f' "100 * $ptotal / $DUR") % | | |"
	x=$(calc '%.3f' "$ours_auto / $ptotal")
	echo "| $run | **ratio flamefs (auto) / perf pipeline** | $x (1/$(calc '%.0f' "$ptotal / ($ours_auto > 0 ? $ours_auto : 1)")) | | | <= 0.05: $(mark "$x" "<=" 0.05) |"
	echo "| $run | flamefs (auto) said | $(grep -o 'recorded [0-9]* samples' "$work/cpu-auto-$run.log"); $(grep -o '[0-9.]*% of one core while recording' "$work/cpu-auto-$run.log"); $(grep -o 'user stacks:.*' "$work/cpu-auto-$run.log" | sed 's/user stacks: //') | | | | |"
	echo "| $run | flamefs (auto) tables | $(grep -o 'unwind tables:.*' "$work/cpu-auto-$run.log" | sed 's/unwind tables: //') | | | | |"
	nice "$fc" export --store "$work/cpu-auto-$run.store" >"$work/cpu-auto-$run.folded" 2>/dev/null || true
	echo "| $run | flamefs (auto): weight marked [truncated], by binary of the load | $(nice awk '
		{ w = $NF; split($0, a, ";"); b = a[1]
		  if (b != "xz" && b != "cc1" && b != "python3.11" && b != "x86_64-linux-gnu-as") next
		  t[b] += w; if ($0 ~ /;\[truncated\](;| )/) c[b] += w }
		END { for (b in t) printf "%s %.0f %% of %d samples; ", b, 100 * c[b] / t[b], t[b] / (1e9 / 99) + 0.5 }' \
		"$work/cpu-auto-$run.folded")(python3.11 includes other users' processes) | | | | |"
	echo "| $run | load average at the end of the perf record run | $loadend | | | |"
	rm -f "$work/cpu-$run.data" "$work/cpu-$run.txt"
}
if [[ " $PARTS " == *" 4 "* ]]; then
	echo "## 4. Collector CPU: -a -F 99 for $DUR s, both cores busy"
	echo
	cat <<'EOF'
user+sys of each measured command from wait4 (tests/bench/rusage.py), so
start-up (BPF load, table builds) and the last drain are included.  The
three runs follow each other on the same load.  Not charged to any
measured command, on both sides alike: the sampling interrupt itself (the
BPF program's walk, perf's 8 KB stack copy).  perf record uses -e cpu-clock
as flamefs does; perf script runs with --no-inline (without it, perf
resolves inline frames through addr2line and costs far more).
EOF
	echo
	run_part part4
	echo
fi

# ---- 5. memory with many tables -----------------------------------------

# 50+ distinct ELF programs that print a version and exit.
cands="ls cat cp mv rm ln mkdir rmdir touch chmod chown chgrp sort uniq cut tr
head tail wc tee date df du env expr factor fold id join md5sum sha1sum sha256sum
nl od paste pr printf seq shuf split stat sum tac test timeout truncate uname
basename dirname readlink realpath sleep stty sync base64 comm csplit dd dircolors
expand fmt groups hostid install link logname mkfifo mknod mktemp nice nohup nproc
numfmt pathchk pinky ptx runcon stdbuf tsort tty unexpand unlink users who whoami
yes grep sed gawk find xargs diff cmp gzip bzip2 xz tar make readelf objdump nm
strip ar as ld gcc cpp perl git curl ssh wget file less bash dash"
progs=()
declare -A seen_real
for b in $cands; do
	p=$(command -v "$b" 2>/dev/null || true)
	case "$p" in /*) ;; *) continue ;; esac
	r=$(readlink -f "$p")
	[ -n "${seen_real[$r]:-}" ] && continue
	[ "$(head -c 4 "$r" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	seen_real[$r]=1
	progs+=("$p")
done

part5() {
	local run=$1 log tf line x
	[ "$run" = 1 ] && {
		echo "| run | distinct programs exec'd | unwind tables: files | rows | MiB | built in (s) | peak RSS | target |"
		echo "|---|---|---|---|---|---|---|---|"
	}
	log=$work/rss-$run.log
	tf=$work/rss-$run.time
	bench_bg nice bash -c "while :; do /usr/bin/python3 '$work/jsonload.py' 60; done" >/dev/null 2>&1
	printf '%s\n' "${progs[@]}" >"$work/progs"
	bench_bg nice bash -c 'while :; do while read -r b; do "$b" --version </dev/null >/dev/null 2>&1; done <"$0"; done' \
		"$work/progs" >/dev/null 2>&1
	pause 1
	rm -rf "$work/rss-$run.store"
	"${rusage[@]}" "$tf" "$fc" record --verbose --store "$work/rss-$run.store" -a -F 99 -d "$DUR" \
		>/dev/null 2>"$log" || echo "| $run | (record exited with $?: $log) | | | | | | |"
	bench_stop_bg
	line=$(grep -o 'unwind tables: .*' "$log" || echo '')
	x=$(rss_of "$tf")
	printf '| %s | %s | %s | %s | %s | %s | %s MiB | <= 64 MB: %s |\n' "$run" "${#progs[@]}" \
		"$(sed -n 's/unwind tables: \([0-9]*\) files.*/\1/p' <<<"$line")" \
		"$(sed -n 's/.*files (\([0-9]*\) rows.*/\1/p' <<<"$line")" \
		"$(sed -n 's/.*rows; \([0-9.]*\) MiB of.*/\1/p' <<<"$line")" \
		"$(sed -n 's/.*built in \([0-9.]*\) s.*/\1/p' <<<"$line")" \
		"$x" "$(mark "$(calc '%.1f' "$x * 1.048576")" "<=" 64)"
	echo "| $run | flamefs said: $line | | | | | | |"
	echo "| $run | $(grep -o 'symbolized .* ELF files' "$log") | | | | | | |"
}

table_ms() { # FILE -> median of 5 `unwind-table --summary` times, ms
	local i
	for i in 1 2 3 4 5; do
		"$fc" unwind-table --summary "$1" | sed -n 's/.*, \([0-9.]*\) ms$/\1/p'
	done | sort -n | sed -n 3p
}
if [[ " $PARTS " == *" 5 "* ]]; then
	echo "## 5. Memory with many tables: record -a -F 99 -d $DUR while ${#progs[@]} distinct programs are exec'd in a loop"
	echo
	echo "A loop runs \`PROG --version\` for each of: $(for p in "${progs[@]}"; do printf '%s ' "$(basename "$p")"; done)"
	echo "over and over, while python3's JSON loop runs (both niced).  Peak RSS: ru_maxrss of record (wait4)."
	echo
	run_part part5
	echo
	libc=$(ldd "$target" | awk '/libc\.so/ { print $3 }')
	py=$(readlink -f /usr/bin/python3)
	echo "Table build time, \`flamefs-collect unwind-table --summary FILE\` (median of 5; load average $(load3)):"
	echo
	echo "| file | table | median build time |"
	echo "|---|---|---|"
	for f in "$libc" "$py"; do
		echo "| $f | $("$fc" unwind-table --summary "$f" | sed 's/^# [^:]*: //; s/, [0-9.]* ms$//') | $(table_ms "$f") ms |"
	done
	echo
fi
echo "load average at the end: $(load3)"

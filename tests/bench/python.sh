#!/usr/bin/env bash
# Python-frames benchmark for `flamefs-collect record` (issue #23, "Targets"),
# with perf in the same run.  Prints numbers as markdown; asserts nothing
# (each target gets a "met"/"missed" note).
#   usage: sudo bash tests/bench/python.sh
#   env:   BENCH_DIR=DIR (default: a fresh directory under /var/tmp, removed
#          at the end unless BENCH_DIR), BENCH_BUILD=DIR (use that build as
#          it is), SECS (default 6: each workload of parts 1-3), DUR
#          (default 20: part 4), PARTS (default "1 2 3 4")
#
# Parts:
#   1. The known tree (pure Python: main → work → hot ~3/4, main → side →
#      cold ~1/4, measured by the program with thread CPU clocks), recorded
#      by flamefs while flamefs follows `perf record -g --call-graph dwarf`
#      of the same run: hot's share against the truth, and the share of the
#      process's weight under a Python frame, for both (perf 6.1 cannot
#      name 3.11's Python frames: 0%).
#   2. A recursion 300 deep: the depth flamefs keeps and its mark.
#   3. 4 threads, each in its own function: each one's share.
#   4. Cost: collector CPU (user+sys from wait4, tests/bench/rusage.py) and
#      do_sample's mean BPF run time (record -v), at -a -F 99 for DUR s with
#      2 busy Python processes, --python=on against --python=off.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${SECS:-6}
DUR=${DUR:-20}
PARTS=${PARTS:-"1 2 3 4"}
py=/usr/bin/python3.11
export LC_ALL=C

[ -x "$py" ] || { echo "python.sh: $py is missing" >&2; exit 1; }
. "$top/tests/lib.sh"
. "$top/tests/bench/lib.sh"
bench_setup python --root --tools "perf" flamefs-collect

# weight FOLDED REGEX: summed weight of the folded lines matching REGEX.
weight() { stack_weight "$1" "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b ? a / b : 0 }'; }
pyframe=';[^;]+ \((/[^;]*|<[^;]*>)\)(;|$)'

cat >"$work/tree.py" <<'EOF'
import sys, time
def hot():
    x = 0
    for i in range(3000):
        x += i * i
    return x
def cold():
    x = 0
    for i in range(3000):
        x += i * i
    return x
def work():
    return hot()
def side():
    return cold()
def main(seconds, truth):
    clock = time.thread_time_ns
    t_hot = t_cold = 0
    end = time.time() + seconds
    while time.time() < end:
        a = clock()
        for _ in range(3):
            work()
        b = clock()
        side()
        c = clock()
        t_hot += b - a
        t_cold += c - b
    with open(truth, "w") as f:
        f.write("hot %d\ncold %d\n" % (t_hot, t_cold))
main(float(sys.argv[1]), sys.argv[2])
EOF

bench_machine
echo "# load average: $(bench_load)"

if [[ " $PARTS " == *" 1 "* ]]; then
	"$fc" record --verbose --store "$work/s1" -F 999 -- perf record -q -e cpu-clock -F 999 --call-graph dwarf \
		-o "$work/p1.data" -- "$py" "$work/tree.py" "$SECS" "$work/truth1" 2>"$work/r1.err" >/dev/null
	"$fc" export --store "$work/s1" --binary python3.11 >"$work/f1" 2>/dev/null
	perf script -i "$work/p1.data" 2>/dev/null | perl -ne '
		if (/^\S/) { @s = () } elsif (/^\s+[0-9a-f]+ (.+?) \(/) { ($f = $1) =~ s/\+0x[0-9a-f]+$//; unshift @s, $f }
		elsif (/^$/ && @s) { $c{join(";", "python3.11", @s)}++; @s = () }
		END { print "$_ $c{$_}\n" for keys %c }' >"$work/pf1"
	th=$(awk '$1 == "hot" { print $2 }' "$work/truth1")
	tc=$(awk '$1 == "cold" { print $2 }' "$work/truth1")
	hot=$(weight "$work/f1" ';work \([^;]*\);hot \(')
	cold=$(weight "$work/f1" ';side \([^;]*\);cold \(')
	all=$(weight "$work/f1" '^python3.11;')
	pyw=$(weight "$work/f1" "$pyframe")
	phot=$(weight "$work/pf1" ';work \(')
	pall=$(weight "$work/pf1" '^python3.11;')
	truth=$(ratio "$th" $((th + tc)))
	got=$(ratio "$hot" $((hot + cold)))
	echo
	echo "## 1. Known tree, ${SECS} s at 999 Hz"
	echo
	echo "| | target | flamefs | perf --call-graph dwarf |"
	echo "|---|---|---|---|"
	echo "| hot's share (truth $truth) | within 0.05 | $got ($(awk -v a="$got" -v b="$truth" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 0.05 ? "met" : "missed") }')) | $( [ "$phot" -gt 0 ] && ratio "$phot" "$pall" || echo "no Python frames") |"
	echo "| weight under a Python frame | >= 0.95 | $(ratio "$pyw" "$all") ($(awk -v a="$pyw" -v b="$all" 'BEGIN { print (b && a / b >= 0.95 ? "met" : "missed") }')) | $(ratio "$(weight "$work/pf1" "$pyframe")" "$pall") |"
	grep 'python:' "$work/r1.err" | sed 's/^/    /'
fi

if [[ " $PARTS " == *" 2 "* ]]; then
	cat >"$work/deep.py" <<'EOF'
import sys, time
def leaf(until):
    x = 0
    while time.time() < until:
        for i in range(1000):
            x += i
def down(n, until):
    if n == 0:
        return leaf(until)
    return down(n - 1, until)
down(300, time.time() + float(sys.argv[1]))
EOF
	"$fc" record --verbose --store "$work/s2" -F 999 -- "$py" "$work/deep.py" "$SECS" 2>"$work/r2.err"
	"$fc" export --store "$work/s2" >"$work/f2" 2>/dev/null
	depth=$(awk '/leaf \(/ { n = gsub(/;down \(/, "&"); if (n > m) m = n } END { print m + 0 }' "$work/f2")
	marked=$(weight "$work/f2" '\[python: cut short\];.*leaf \(')
	leafw=$(weight "$work/f2" 'leaf \(')
	echo
	echo "## 2. Recursion 300 deep"
	echo
	echo "| target | down frames kept | share of leaf's weight marked [python: cut short] |"
	echo "|---|---|---|"
	echo "| whole, or cut at >= 200 and marked | $depth ($( [ "$depth" -ge 200 ] && echo met || echo missed)) | $(ratio "$marked" "$leafw") |"
fi

if [[ " $PARTS " == *" 3 "* ]]; then
	cat >"$work/threads.py" <<'EOF'
import sys, threading, time
def spin(until):
    x = 0
    while time.time() < until:
        for i in range(1000):
            x += i
def t0(u): spin(u)
def t1(u): spin(u)
def t2(u): spin(u)
def t3(u): spin(u)
until = time.time() + float(sys.argv[1])
ts = [threading.Thread(target=f, args=(until,)) for f in (t0, t1, t2, t3)]
for t in ts: t.start()
for t in ts: t.join()
EOF
	"$fc" record --verbose --store "$work/s3" -F 999 -- "$py" "$work/threads.py" "$SECS" 2>"$work/r3.err"
	"$fc" export --store "$work/s3" >"$work/f3" 2>/dev/null
	all=$(weight "$work/f3" ';spin \(')
	echo
	echo "## 3. Four threads"
	echo
	echo "| thread | share (target: each its share, ~0.25) |"
	echo "|---|---|"
	for f in t0 t1 t2 t3; do
		echo "| $f | $(ratio "$(weight "$work/f3" ";$f \\([^;]*\\);spin \\(")" "$all") |"
	done
fi

if [[ " $PARTS " == *" 4 "* ]]; then
	echo
	echo "## 4. Cost: -a -F 99 for $DUR s, 2 busy Python processes"
	echo
	echo "| --python | collector user+sys | % of a core | do_sample mean run | stacks with Python frames |"
	echo "|---|---|---|---|---|"
	declare -A cpu
	for round in 1 2; do
		for mode in on off; do
			"$py" "$work/tree.py" $((DUR + 5)) "$work/truth4a" &
			a=$!
			"$py" "$work/threads.py" $((DUR + 5)) &
			b=$!
			sleep 1
			"${rusage[@]}" "$work/ru-$mode" "$fc" record -vv --store "$work/s4-$mode-$round" -a -F 99 \
				-d "$DUR" --python="$mode" 2>"$work/r4.err" >/dev/null
			kill "$a" "$b" 2>/dev/null || true
			wait "$a" "$b" 2>/dev/null || true
			read -r wall user sys _ <"$work/ru-$mode"
			c=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
			cpu[$mode$round]=$c
			run=$(sed -n 's/.*do_sample: .*, \([0-9.]*\) us each.*/\1/p' "$work/r4.err")
			pys=$(sed -n 's/.*; \([0-9]*\) user stacks.*/\1/p' "$work/r4.err")
			echo "| $mode (round $round) | $c s | $(awk -v c="$c" -v w="$wall" 'BEGIN { printf "%.2f%%", 100 * c / w }') | ${run:-?} us | ${pys:--} |"
		done
	done
	r=$(awk -v a="${cpu[on1]}" -v b="${cpu[on2]}" -v c="${cpu[off1]}" -v d="${cpu[off2]}" \
		'BEGIN { printf "%.2f", (c + d) ? (a + b) / (c + d) : 0 }')
	echo
	echo "on / off: ${r}x (target <= 1.3x: $(awk -v r="$r" 'BEGIN { print (r <= 1.3 ? "met" : "missed") }'))"
fi

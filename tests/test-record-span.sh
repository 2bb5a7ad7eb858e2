#!/usr/bin/env bash
# test-record-span.sh — record --span (issue 41, first slice): samples
# taken inside a span carry the label span=<name of the innermost span>,
# read back with tests/labels-folded and `stats --by span`.  Real BPF and
# contrib/spans-demo's USDT probes, attached through libbpf's USDT support
# (the uprobe PMU: no tracefs, which this machine need not mount).
#
#  (a) spans-demo (one thread, then with two CPU hogs beside it) under
#      --span flamefs_demo:span__enter:span__exit:name=arg3: the span label
#      splits the demo's spin() weight as the demo's own per-name CPU
#      accounting (thread CPU clocks at every span boundary) says, within
#      0.05 each; every spin() sample (spin runs only inside spans) has a
#      span label, and the innermost span's: span=plan stacks are under
#      plan() and not execute(), span=execute under execute(), span=request
#      under neither; stats --by span lists the three names.
#  (b) number=arg2 (the parent id): top-level spans are "0", nested ones
#      the decimal id of their request.
#  (c) bad specs are refused (exit 2, a message); a probe the file lacks
#      fails to attach (exit 1, the probe named).
#  (d) an end without a start is ignored and counted: the probes swapped
#      (START span__exit, END span__enter) on one request make exactly two
#      ends with nothing open (the request's and the plan's enters), which
#      the summary reports.
#  (e) -p on a running spans-demo (one worker thread), for 2 s while it
#      runs on: the probes come from /proc/PID/exe; at most 2 ends without
#      a start (the spans open when it was followed), no span too deep (the
#      end probes are attached before the starts, and the probes stop
#      before they are detached), the three names in stats --by span.
#  (f) SQL spans behind a semaphore (tests/span-sql-target: 200 statements,
#      a SELECT and an UPDATE alternately, each with its own literals):
#      the semaphore is set in every statement (the kernel's uprobe
#      reference counter, asked for by libbpf), and :sql gives exactly two
#      span names, pg_stat_statements' forms with $1, $2; without a
#      recorder the semaphore stays 0.
#  (g) -e cpu,offcpu with spans-demo -s 2000 (2 ms asleep inside each
#      execute): the off-CPU time inside spans is all span=execute's, at
#      least 95% of the 50 x 2 ms slept (an interval is counted from the
#      switch out, after the call began: one asan run counted 99.36 ms) and
#      at most the sleep the demo measured plus 10% (scheduling delay
#      counts too).
#  (h) depth overflow: span-sql-target's 100 nests of 20 spans ("level 1"
#      .. "level 20", two sites of each probe): exactly 400 spans counted
#      too deep, none unmatched, and every sample in the innermost work is
#      span="level 16", the deepest kept.
#   usage: tests/test-record-span.sh BUILD_DIR   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-record-span.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
demo=$build/contrib/spans-demo
folded=$build/tests/labels-folded
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup record-span
[ -x "$demo" ] || { echo "SKIP: contrib/spans-demo not built (no <sys/sdt.h>: install systemtap-sdt-dev)"; exit 77; }
e2e_need_bpf

hogs=()
e2e_on_exit() {
	for h in "${hogs[@]}"; do kill "$h" 2>/dev/null; done
}

if grep -q ' tracefs ' /proc/mounts; then
	echo "       (tracefs is mounted here; the probes attach through the uprobe PMU either way)"
else
	echo "       (tracefs is not mounted: the probes attach through the uprobe PMU)"
fi

spec=flamefs_demo:span__enter:span__exit:name=arg3

span_re() { echo "(^|\\|)span=$1(\\||\$)"; }
# spin() is the demo's work, called only between a span's probes; a stack
# in it may have kernel frames above (interrupts).  Samples in the probes'
# own traps are not checked: one taken in a start's trap, before the push,
# belongs to the span outside, as one after an end's pop does.
spin=';spin(;|$)'
in_spin='(.*;)?spin(;|$)'

# ---- (a) the split ----------------------------------------------------------
# $1: what, $2: store; the demo runs 1000 requests of 20,000-iteration units.
split_check() {
	local what=$1 st=$2
	"$collect" record --store "$st" -F 999 --span "$spec" -- "$demo" -n 1000 -t 1 -u 20000 \
		>"$st.out" 2>"$st.err" || { bad "$what: record failed: $(cat "$st.err")"; return; }
	grep -E '^(span|total) ' "$st.out"
	"$folded" "$st" | grep -P '\tspans-demo\t' >"$st.folded"
	local name w total=0 nospan spin_all
	declare -A got
	for name in request plan execute; do
		w=$(labels_sum "$st.folded" "$(span_re "$name")" "$spin")
		got[$name]=$w
		total=$((total + w))
	done
	nospan=$(awk -F '\t' '$1 !~ /(^|\|)span=/ { n = $3; sub(/.* /, "", n); s = $3; sub(/ [0-9]+$/, "", s)
		if (s ~ /;spin(;|$)/) t += n } END { printf "%.0f\n", t }' "$st.folded")
	spin_all=$(labels_sum "$st.folded" '' "$spin")
	echo "       $what: spin weight (ns) by span: request ${got[request]}, plan ${got[plan]}, execute ${got[execute]}; without a span $nospan; all $spin_all"
	check "$what: spin() samples are stored ($spin_all ns)" test "$spin_all" -gt 100000000
	check "$what: every spin() sample has a span label (none without: $nospan)" test "$nospan" = 0
	for name in request plan execute; do
		local share truth
		share=$(awk -v a="${got[$name]}" -v t="$total" 'BEGIN { printf "%.4f", t ? a / t : 0 }')
		truth=$(awk -v name="$name" '$1 == "span" { split($2, nm, "="); split($5, c, "="); cpu[nm[2]] = c[2]; tot += c[2] }
			END { printf "%.4f", tot ? cpu[name] / tot : 0 }' "$st.out")
		check "$what: span=$name has $share of the spans' CPU, the demo's accounting $truth (within 0.05)" \
			awk -v s="$share" -v t="$truth" 'BEGIN { exit !(t > 0 && s >= t - 0.05 && s <= t + 0.05) }'
	done
	check "$what: span=plan's spin() stacks are all under plan(), none under execute()" \
		test "$(labels_sum "$st.folded" "$(span_re plan)" ";plan;$in_spin")" = "${got[plan]}" -a \
		"$(labels_sum "$st.folded" "$(span_re plan)" ";execute;$in_spin")" = 0
	check "$what: span=execute's spin() stacks are all under execute(), none under plan()" \
		test "$(labels_sum "$st.folded" "$(span_re execute)" ";execute;$in_spin")" = "${got[execute]}" -a \
		"$(labels_sum "$st.folded" "$(span_re execute)" ";plan;$in_spin")" = 0
	check "$what: span=request's spin() stacks are under request(), none in plan() or execute()" \
		test "$(labels_sum "$st.folded" "$(span_re request)" ";request;$in_spin")" = "${got[request]}" -a \
		"$(labels_sum "$st.folded" "$(span_re request)" ";(plan|execute);$in_spin")" = 0
	"$collect" stats --store "$st" --by span >"$st.stats"
	check "$what: stats --by span lists request, plan and execute" \
		awk '$1 == "request" { a = 1 } $1 == "plan" { b = 1 } $1 == "execute" { c = 1 } END { exit !(a && b && c) }' "$st.stats"
}
split_check "(a) one thread" "$tmp/one"
for i in 1 2; do
	(while :; do :; done) &
	hogs+=($!)
done
split_check "(a) two CPU hogs beside it" "$tmp/hogs"
for h in "${hogs[@]}"; do kill "$h"; wait "$h" 2>/dev/null; done
hogs=()

# ---- (b) a number names the span -------------------------------------------
"$collect" record --store "$tmp/num" -F 999 --span flamefs_demo:span__enter:span__exit:number=arg2 \
	-- "$demo" -n 3 -t 1 -u 400000 >"$tmp/num.out" 2>"$tmp/num.err" ||
	bad "(b) record failed: $(cat "$tmp/num.err")"
"$collect" stats --store "$tmp/num" --by span >"$tmp/num.stats"
cat "$tmp/num.stats"
"$folded" "$tmp/num" | grep -P '\tspans-demo\t' >"$tmp/num.folded"
check "(b) number=arg2: top-level spans (request) are span=0" \
	test "$(labels_sum "$tmp/num.folded" "$(span_re 0)" ";(plan|execute);$in_spin")" = 0 -a \
	"$(labels_sum "$tmp/num.folded" "$(span_re 0)" ";request;$in_spin")" -gt 0
check "(b) number=arg2: nested spans are named by their request's id (1, 4, 7)" \
	awk -F '\t' '$1 ~ /(^|\|)span=/ { l = $1; sub(/.*span=/, "", l); sub(/\|.*/, "", l); s[l] = 1 }
		END { for (k in s) if (k != 0 && k != 1 && k != 4 && k != 7) exit 1; exit !(1 in s) }' "$tmp/num.folded"

# With sql the names go through sqlnorm_text: words that are no statement
# PostgreSQL plans are kept as they are (the dash: samples outside spans).
"$collect" record --store "$tmp/sql" -F 999 --span "$spec:sql" -- "$demo" -n 20 -t 1 -u 20000 \
	>/dev/null 2>"$tmp/sql.err" || bad "(b) record with :sql failed: $(cat "$tmp/sql.err")"
"$collect" stats --store "$tmp/sql" --by span >"$tmp/sql.stats"
check "(b) name=arg3:sql: the names are request, plan and execute, and no other" \
	awk 'NR > 1 && NF == 6 && $1 != "\xe2\x80\x94" && $1 != "request" && $1 != "plan" && $1 != "execute" { bad = 1 }
		$1 == "execute" { e = 1 } END { exit bad || !e }' "$tmp/sql.stats"

# ---- (c) bad input ------------------------------------------------------------
for badspec in 'flamefs_demo:span__enter' 'flamefs_demo:span__enter:span__exit' \
	'flamefs_demo:span__enter:span__exit:name=arg0' 'flamefs_demo:span__enter:span__exit:name=arg13' \
	'flamefs_demo:span__enter:span__exit:name=arg3:number=arg1' \
	'flamefs_demo:span__enter:span__exit:nam=arg3' 'flamefs_demo:span__enter:span__exit:number=arg1:sql'; do
	"$collect" record --store "$tmp/bad" --span "$badspec" -- true 2>"$tmp/bad.err"
	rc=$?
	check "(c) --span $badspec: refused, exit 2 ($rc), with a message ($(head -c 120 "$tmp/bad.err"))" \
		test $rc = 2 -a -s "$tmp/bad.err"
done
"$collect" record --store "$tmp/bad" -a --span "$spec" -d 1 2>"$tmp/bad.err"
check "(c) -a without in=PATH: refused, exit 2" test $? = 2
"$collect" record --store "$tmp/bad" --span flamefs_demo:no__such:span__exit:name=arg3 -- "$demo" -n 1 \
	>/dev/null 2>"$tmp/bad.err"
rc=$?
cat "$tmp/bad.err"
check "(c) a probe the file lacks: exit 1 naming it" test $rc = 1 -a "$(grep -c 'no__such' "$tmp/bad.err")" -ge 1

# ---- (d) ends without a start -----------------------------------------------
"$collect" record --store "$tmp/swap" -F 99 --span flamefs_demo:span__exit:span__enter:number=arg1 \
	-- "$demo" -n 1 -t 1 -u 1000 >/dev/null 2>"$tmp/swap.err"
rc=$?
grep 'span' "$tmp/swap.err"
check "(d) swapped probes: exit 0 ($rc), exactly 2 span ends without a start reported" \
	test $rc = 0 -a "$(grep -c '2 span ends without a start' "$tmp/swap.err")" = 1

# ---- (e) -p, while the program runs -----------------------------------------
# It runs until killed: beside CPU hogs the recorder may take seconds to
# start.
"$demo" -d 600 -t 1 -u 20000 >"$tmp/p.out" 2>&1 &
dpid=$!
hogs+=($dpid)
sleep 0.5
"$collect" record --store "$tmp/p" -F 999 -d 2 -p "$dpid" --span "$spec" >/dev/null 2>"$tmp/p.err"
rc=$?
kill "$dpid" 2>/dev/null
wait "$dpid"
grep 'span' "$tmp/p.err"
unmatched=$(sed -n 's/.* \([0-9][0-9]*\) span ends without a start.*/\1/p' "$tmp/p.err")
check "(e) -p: exit 0 ($rc), at most 2 ends without a start (${unmatched:-0}), none too deep" \
	test $rc = 0 -a "${unmatched:-0}" -le 2 -a "$(grep -c 'nested deeper' "$tmp/p.err")" = 0
"$collect" stats --store "$tmp/p" --by span >"$tmp/p.stats"
check "(e) -p: stats --by span lists request, plan and execute" \
	awk '$1 == "request" { a = 1 } $1 == "plan" { b = 1 } $1 == "execute" { c = 1 } END { exit !(a && b && c) }' "$tmp/p.stats"

# ---- (f) SQL, a semaphore ------------------------------------------------------
sqlt=$build/tests/span-sql-target
"$sqlt" 3 10 >"$tmp/sqlt.alone"
check "(f) without a recorder the semaphore is 0 ($(cat "$tmp/sqlt.alone"))" \
	grep -qx 'queries=3 semaphore_on=0' "$tmp/sqlt.alone"
"$collect" record --store "$tmp/sqlt" -F 999 --span flamefs_test:query__start:query__done:name=arg1:sql \
	-- "$sqlt" 200 2000000 >"$tmp/sqlt.out" 2>"$tmp/sqlt.err" || bad "(f) record failed: $(cat "$tmp/sqlt.err")"
check "(f) the semaphore was set in all 200 statements ($(cat "$tmp/sqlt.out"))" \
	grep -qx 'queries=200 semaphore_on=200' "$tmp/sqlt.out"
"$collect" stats --store "$tmp/sqlt" --by span >"$tmp/sqlt.stats"
cat "$tmp/sqlt.stats"
check "(f) :sql: 200 statements with their own literals make exactly 2 span names, normalised" \
	test "$(grep -c '^SELECT abalance FROM pgbench_accounts WHERE aid = \$1 ' "$tmp/sqlt.stats")" = 1 -a \
	"$(grep -c '^UPDATE pgbench_accounts SET abalance = abalance + \$1 WHERE aid = \$2 ' "$tmp/sqlt.stats")" = 1 -a \
	"$(grep -Evc $'^(SPAN |\xe2\x80\x94 |$|[0-9]+ values of span)' "$tmp/sqlt.stats")" = 2

# ---- (g) off-CPU time in spans ---------------------------------------------------
"$collect" record --store "$tmp/off" -e cpu,offcpu --span "$spec" -- "$demo" -n 50 -t 1 -s 2000 \
	>"$tmp/off.out" 2>"$tmp/off.err" || bad "(g) record failed: $(cat "$tmp/off.err")"
"$folded" "$tmp/off" off-cpu | grep -P '\tspans-demo\t' >"$tmp/off.folded"
slept=$(awk '$1 == "span" && $2 == "name=execute" { for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "sleep_ns") print kv[2] } }' "$tmp/off.out")
ex=$(labels_sum "$tmp/off.folded" "$(span_re execute)")
others=$(labels_sum "$tmp/off.folded" "$(span_re '(request|plan)')")
echo "       off-cpu (ns) in span=execute $ex, in request and plan $others; the demo slept $slept in execute"
check "(g) off-CPU time inside spans is execute's: 95 ms <= $ex <= 1.1 x $slept, request and plan none" \
	awk -v e="$ex" -v o="$others" -v s="${slept:-0}" 'BEGIN { exit !(e >= 95000000 && e <= 1.1 * s && o == 0) }'

# ---- (h) deeper than the 16 spans kept -------------------------------------------
"$collect" record -v --store "$tmp/deep" -F 999 --span flamefs_test:query__start:query__done:name=arg1 \
	-- "$sqlt" 100 2000000 20 >"$tmp/deep.out" 2>"$tmp/deep.err" || bad "(h) record failed: $(cat "$tmp/deep.err")"
grep 'spans:' "$tmp/deep.err"
check "(h) 100 x 20 nested spans: exactly 400 too deep, no end unmatched, no name lost" \
	grep -q 'spans: 1 spans attached; 0 ends without a start, 400 spans deeper than 16, 0 names not read or kept' "$tmp/deep.err"
"$folded" "$tmp/deep" | grep -P '\tspan-sql-target\t' >"$tmp/deep.folded"
# The innermost work: spin() is inlined into the 21st nested() frame.
inner_sum() {
	LRE=$1 awk -F '\t' '{ n = $3; sub(/.* /, "", n); s = $3; sub(/ [0-9]+$/, "", s)
		if (gsub(/;nested/, "&", s) >= 21 && $1 ~ ENVIRON["LRE"]) t += n }
		END { printf "%.0f\n", t }' "$tmp/deep.folded"
}
inner=$(inner_sum '')
deep16=$(inner_sum "$(span_re 'level 16')")
echo "       the innermost work: $inner ns, of which span=level 16: $deep16"
check "(h) the innermost work ($inner ns) is all span=\"level 16\"" test "$inner" -gt 0 -a "$deep16" = "$inner"

finish

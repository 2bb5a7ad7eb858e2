#!/usr/bin/env bash
# make.sh — how the perf script layout fixtures here and the spell-*.perf
# fixtures in .. were made (kept for reference; the tests do not run it).
# Needs perf and a C compiler; run in a scratch directory:
#   bash make.sh DIR_OF_THIS_FILE
set -eu
out=${1:?usage: make.sh OUT_DIR}
gcc -O1 -g -fno-omit-frame-pointer -o loop "$out/../loop.c"
perf record -q -e cpu-clock -F 499 -g -o g.data ./loop >/dev/null
perf record -q -e cpu-clock -F 499 -o nog.data ./loop >/dev/null
# the first N samples (blank-line separated with -g, one line without)
first() { awk -v n="$1" 'BEGIN { RS = ""; ORS = "\n\n" } NR <= n'; }
i=0
for fields in "" comm,pid,tid,time,event,ip,sym,dso comm,tid,period,event,ip,sym,dso \
	comm,pid,ip,sym,dso comm,pid,time,period,event,ip,sym,symoff,dso \
	comm,pid,tid,event,ip,sym,dso; do
	i=$((i + 1))
	f=${fields:+-F $fields}
	perf script -i g.data $f | first 25 >"$out/g-$i.perf"
	perf script -i nog.data $f | head -60 >"$out/nog-$i.perf"
done
# one event in three spellings, with callchains and without, with the
# period and without it
for sp in cpu-clock:u cpu-clock cpu-clock:ppp; do
	perf record -q -e "$sp" -F 499 -g -o "g-$sp.data" ./loop >/dev/null
	perf record -q -e "$sp" -F 499 -o "nog-$sp.data" ./loop >/dev/null
done
for sp in cpu-clock:u cpu-clock cpu-clock:ppp; do
	perf script -i "g-$sp.data" | first 12
done >"$out/../spell-g.perf"
for sp in cpu-clock:u cpu-clock cpu-clock:ppp; do
	perf script -i "g-$sp.data" -F comm,pid,time,event,ip,sym,dso | first 12
done >"$out/../spell-g-noperiod.perf"
for sp in cpu-clock:u cpu-clock cpu-clock:ppp; do
	perf script -i "nog-$sp.data" | head -30
done >"$out/../spell-nog.perf"
for sp in cpu-clock:u cpu-clock cpu-clock:ppp; do
	perf script -i "nog-$sp.data" -F comm,pid,time,event,ip,sym,dso | head -30
done >"$out/../spell-nog-noperiod.perf"
for f in "$out"/../spell-*.perf; do
	perl "$out/../../../ref/stackcollapse-ref.pl" "$f" >"${f%.perf}.folded.expected"
done

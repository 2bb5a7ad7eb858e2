#!/usr/bin/env bash
# test-record-moments.sh — every sample's moment (issue 39), recorded and
# imported, seen through `flamefs-collect samples`.
#
#  (a) record tests/phase-target (A for 2.0 s, B for 3.0 s, A again for
#      2.0 s; it writes each switch's wall time): every sample of phase_a
#      lies in an A phase and every one of phase_b in the B phase (one
#      sampling period of slack at each edge), each with the target's pid
#      and tid; each phase has as many samples as its CPU time (measured
#      by the target) at 99 Hz, so that CPU hogs beside it do not change
#      the verdict;
#      --from/--to (Unix seconds and ISO 8601) give exactly the samples of
#      the full listing inside the window.
#  (b) perf record the same target; import its perf.data, and perf script's
#      text of it (pid/tid, and perf's default: tid alone): every sample's
#      time, pid and tid equal perf script's own for the same file.
#  (c) counts unchanged: `export` of the recording, per stack, equals the
#      detail `samples` prints plus the samples the recorder counted
#      without a moment (its --verbose summary); with a 4K ring at 999 Hz,
#      where most samples find it full, export's weight is the detail's and
#      theirs, and samples lists exactly those kept whole.
#   usage: tests/test-record-moments.sh BUILD_DIR   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-record-moments.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
target=$build/tests/phase-target
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup record-moments
e2e_need_bpf

period=10101 # µs between samples at 99 Hz
# phase NAME: a switch's wall time (µs) from the target's output.
phase() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/phases"; }
# iso US: ISO 8601 UTC to the millisecond, rounded down.
iso() { printf '%s.%03dZ' "$(date -u -d "@$(($1 / 1000000))" +%Y-%m-%dT%H:%M:%S)" $((($1 % 1000000) / 1000)); }

# ---- (a) the phases, recorded --------------------------------------------------
store=$tmp/rec
if ! "$collect" record --store "$store" -F 99 --keep-samples 1h -v -- "$target" "$tmp/phases" \
	2>"$tmp/rec.err"; then
	bad "record failed"
	cat "$tmp/rec.err"
	finish
fi
pid=$(phase pid)
start=$(phase start) a2b=$(phase a2b) b2a=$(phase b2a) end=$(phase end)
"$collect" samples --store "$store" --binary phase-target --folded >"$tmp/all" 2>"$tmp/s.err"
check "samples --folded lists the recording's samples" test -s "$tmp/all"
# Per line: TIME PID TID WEIGHT STACK.  Classify by phase function.
awk -v pid="$pid" -v s="$start" -v ab="$a2b" -v ba="$b2a" -v e="$end" -v P="$period" '
	{
		split($1, t, "."); us = t[1] * 1000000 + t[2]
		if ($2 != pid || $3 != pid) wrongid++
		if (prev != "" && us < prev) unordered++
		prev = us
		if ($5 ~ /(^|;)phase_a(;|$)/) {
			if (us >= s - P && us <= ab + P) a1++
			else if (us >= ba - P && us <= e + P) a2++
			else { outside++; print "A outside its phases:", $0 > "/dev/stderr" }
		} else if ($5 ~ /(^|;)phase_b(;|$)/) {
			if (us >= ab - P && us <= ba + P) b++
			else { outside++; print "B outside its phase:", $0 > "/dev/stderr" }
		}
	}
	END { printf "%d %d %d %d %d %d\n", a1, b, a2, outside, wrongid, unordered }' \
	"$tmp/all" >"$tmp/counts" 2>"$tmp/outside"
read -r a1 nb a2 outside wrongid unordered <"$tmp/counts"
echo "       phase A $a1, B $nb, A again $a2 samples; $outside outside their phase"
check "every sample of phase_a and phase_b lies in its phase (one period at each edge)" \
	test "$outside" -eq 0
head -5 "$tmp/outside"
check "every sample has the target's pid and tid ($pid)" test "$wrongid" -eq 0
check "samples are listed in time order" test "$unordered" -eq 0
# Each phase's samples against the CPU time the target measured in it
# (x 99 Hz): within 30% and 5 samples, whatever else runs beside it.
cpu() { awk -v k="$1" '$1 == "cpu" && $2 == k { print $3 }' "$tmp/phases"; }
awk -v a1="$a1" -v b="$nb" -v a2="$a2" -v c1="$(cpu a1)" -v cb="$(cpu b)" -v c2="$(cpu a2)" '
	function near(n, ns,   want) {
		want = ns / 1e9 * 99
		printf "       %d samples, %.1f expected from %.3f s of CPU\n", n, want, ns / 1e9
		return n >= 0.7 * want - 5 && n <= 1.3 * want + 5
	}
	BEGIN { exit !(near(a1, c1) + near(b, cb) + near(a2, c2) == 3) }' &&
	ok "per-phase samples match each phase's CPU time at 99 Hz" ||
	bad "per-phase samples out of proportion to the CPU time (A $a1, B $nb, A $a2)"

# A window: exactly the lines of the full listing inside it.
from=$((a2b + 500000)) to=$((b2a - 500000))
awk -v f="$from" -v t="$to" '{ split($1, p, "."); us = p[1] * 1000000 + p[2]
	if (us >= f && us < t) print }' "$tmp/all" >"$tmp/want"
"$collect" samples --store "$store" --binary phase-target --folded \
	--from "$((from / 1000000)).$(printf %06d $((from % 1000000)))" \
	--to "$((to / 1000000)).$(printf %06d $((to % 1000000)))" >"$tmp/got"
check "--from/--to in Unix seconds give the listing's samples inside the window" \
	cmp -s "$tmp/want" "$tmp/got"
check "the window holds only phase_b" test -s "$tmp/got" -a "$(grep -c phase_a "$tmp/got")" -eq 0
fms=$((from / 1000 * 1000)) tms=$((to / 1000 * 1000))
awk -v f="$fms" -v t="$tms" '{ split($1, p, "."); us = p[1] * 1000000 + p[2]
	if (us >= f && us < t) print }' "$tmp/all" >"$tmp/want"
"$collect" samples --store "$store" --binary phase-target --folded --from "$(iso "$from")" \
	--to "$(iso "$to")" >"$tmp/got"
check "--from/--to in ISO 8601 ($(iso "$from")) give the same" cmp -s "$tmp/want" "$tmp/got"
"$collect" samples --store "$store" --binary phase-target >"$tmp/script"
check "the perf script form: a header per sample, its stack below" \
	grep -qE "^phase-target $pid/$pid [0-9]+\.[0-9]{6}: 10101010 cpu-clock:$" "$tmp/script"
for t in 1.5.5 2026-11-24T14:02 2026-11-24T14:02:03.250+01:00 yesterday -5; do
	"$collect" samples --store "$store" --from "$t" >/dev/null 2>"$tmp/bad.err"
	check "samples --from $t is refused as a usage error, saying what it expects" \
		test $? -eq 2 -a -n "$(grep -F 'expected Unix seconds' "$tmp/bad.err")"
done
check "samples --binary of no series is an error" \
	sh -c "! '$collect' samples --store '$store' --binary no-such-binary 2>/dev/null"
check "the perf script form has as many samples as the folded one" \
	test "$(grep -c '^phase-target ' "$tmp/script")" -eq "$(wc -l <"$tmp/all")"

# ---- (c) counts unchanged -----------------------------------------------------------
line=$(grep 'moments: ' "$tmp/rec.err")
with=$(sed -E 's/.*moments: ([0-9]+) samples stored with.*/\1/' <<<"$line")
without=$(sed -E 's/.* ([0-9]+) without a moment.*/\1/' <<<"$line")
echo "       recorder: $with samples with their moment, $without without"
check "the recorder stored samples with their moments" test "${with:-0}" -gt 0
"$collect" export --store "$store" --binary phase-target | sort >"$tmp/export"
awk '{ w[$5] += $4 } END { for (k in w) printf "phase-target;%s %.0f\n", k, w[k] }' "$tmp/all" |
	sort >"$tmp/detail"
if [ "${without:-1}" -eq 0 ]; then
	check "export's folded equals the detail per stack (every sample had its moment)" \
		cmp -s "$tmp/export" "$tmp/detail"
else
	e=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$tmp/export")
	d=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$tmp/detail")
	check "export's weight = the detail's + the samples without a moment" \
		test "$e" -eq $((d + without * 10101010))
fi

# ---- (c') a ring too small: samples without a moment, counted once ---------------
# At 999 Hz a 4 KiB ring (56 records) cannot carry a second's samples: most
# are counted at their drain without a moment, in the same drains as the
# records of the same stacks.
store2=$tmp/small
"$collect" record --store "$store2" -F 999 --samples-memory 4K --keep-samples 1h -v -- \
	"$target" "$tmp/phases3" 2>"$tmp/rec2.err" || bad "record with a 4K ring failed"
line=$(grep 'moments: ' "$tmp/rec2.err")
with=$(sed -E 's/.*moments: ([0-9]+) samples stored with.*/\1/' <<<"$line")
without=$(sed -E 's/.* ([0-9]+) without a moment.*/\1/' <<<"$line")
full=$(sed -E 's/.*without a moment \(([0-9]+) for a full.*/\1/' <<<"$line")
echo "       4K ring: $with samples with their moment, $without without ($full for a full ring)"
check "a full ring leaves samples without their moment, and says so" \
	test "${without:-0}" -gt 0 -a "${with:-0}" -gt 0 -a "${full:-0}" -eq "${without:-0}"
"$collect" samples --store "$store2" --binary phase-target --folded >"$tmp/all2"
check "samples lists exactly those with their moment" test "$(wc -l <"$tmp/all2")" -eq "$with"
e=$("$collect" export --store "$store2" --binary phase-target | awk '{ s += $NF } END { printf "%.0f\n", s }')
d=$(awk '{ s += $4 } END { printf "%.0f\n", s }' "$tmp/all2")
check "export's weight = the detail's + the samples without a moment ($e = $d + $without x 1001001)" \
	test "$e" -eq $((d + without * 1001001))

# ---- (b) perf.data and perf script, against perf script ---------------------
if ! command -v perf >/dev/null || ! perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
	skip "perf cannot record here: the importers' part"
	finish
fi
export HOME=$tmp/home # perf's build-id cache
mkdir -p "$HOME"
perf record -q -g -F 499 -o "$tmp/p.data" -- "$target" "$tmp/phases2" >/dev/null 2>&1
perf script -i "$tmp/p.data" -F pid,tid,time 2>/dev/null |
	awk '{ sub(/:$/, "", $2); split($1, p, "/"); print $2, p[1], p[2] }' | sort >"$tmp/perf.ids"
perf script -i "$tmp/p.data" -F tid,time 2>/dev/null |
	awk '{ sub(/:$/, "", $2); print $2, 0, $1 }' | sort >"$tmp/perf.tids"
check "perf script printed the recording's samples" test -s "$tmp/perf.ids"
# ids STORE: every stored sample's "TIME PID TID", sorted.
ids() { "$collect" samples --store "$1" --folded | awk '{ print $1, $2, $3 }' | sort; }
"$collect" import --store "$tmp/pd" --keep-samples 1d "$tmp/p.data" 2>"$tmp/pd.err"
check "import says nothing of its roll-up (it ran, after the commit)" \
	test -z "$(grep -i roll-up "$tmp/pd.err")"
"$collect" import --store "$tmp/pd1" --one-batch --keep-samples 1d "$tmp/p.data" 2>"$tmp/pd1.err"
check "import --one-batch too" test -z "$(grep -i roll-up "$tmp/pd1.err")"
ids "$tmp/pd" >"$tmp/pd.ids"
check "perf.data: every sample's time, pid and tid equal perf script's ($(wc -l <"$tmp/perf.ids") samples)" \
	cmp -s "$tmp/perf.ids" "$tmp/pd.ids"
perf script -i "$tmp/p.data" -F +pid 2>/dev/null >"$tmp/p.txt"
"$collect" import --store "$tmp/pt" --keep-samples 1d "$tmp/p.txt" 2>/dev/null
ids "$tmp/pt" >"$tmp/pt.ids"
check "perf script text with pid/tid: every sample's time, pid and tid equal perf script's" \
	cmp -s "$tmp/perf.ids" "$tmp/pt.ids"
perf script -i "$tmp/p.data" --ns -F +pid 2>/dev/null >"$tmp/pn.txt"
"$collect" import --store "$tmp/pn" --keep-samples 1d "$tmp/pn.txt" 2>/dev/null
ids "$tmp/pn" >"$tmp/pn.ids"
check "perf script --ns text: nanoseconds rounded down to perf's own microseconds" \
	cmp -s "$tmp/perf.ids" "$tmp/pn.ids"
perf script -i "$tmp/p.data" 2>/dev/null >"$tmp/p0.txt"
"$collect" import --store "$tmp/p0" --keep-samples 1d "$tmp/p0.txt" 2>/dev/null
ids "$tmp/p0" >"$tmp/p0.ids"
check "perf script text with the tid alone: every sample's time and tid equal perf script's (pid 0)" \
	cmp -s "$tmp/perf.tids" "$tmp/p0.ids"
# --clock-offset moves every moment by exactly that many seconds.
"$collect" import --store "$tmp/po" --keep-samples 1d --clock-offset 1000000000 "$tmp/p.data" 2>/dev/null
ids "$tmp/po" | awk '{ split($1, p, "."); printf "%.0f.%s %s %s\n", p[1] - 1000000000, p[2], $2, $3 }' |
	sort >"$tmp/po.ids"
check "perf.data with --clock-offset: the same moments, offset to the microsecond" \
	cmp -s "$tmp/perf.ids" "$tmp/po.ids"
# --keep-samples 0: counts only, nothing kept whole.
"$collect" import --store "$tmp/pz" --keep-samples 0 "$tmp/p.data" 2>/dev/null
check "import --keep-samples 0 keeps no sample whole" test -z "$(ids "$tmp/pz")"
check "... and still counts them" test -n "$("$collect" export --store "$tmp/pz")"

finish

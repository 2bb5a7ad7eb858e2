#!/usr/bin/env bash
# test-spans-demo.sh — contrib/spans-demo, the USDT span provider of issue 41.
#
# (a) its .note.stapsdt holds exactly the two documented probes of provider
#     flamefs_demo: span__enter with three 8-byte register arguments (id,
#     parent, name), span__exit with one, each at one site, no semaphore;
# (b) its own accounting over a fixed number of requests: every span name
#     has exactly the request count (times the threads), the designed loop
#     iterations exactly, and a CPU share within 0.05 of 0.10/0.30/0.60,
#     with one thread and with two, and with two CPU hogs beside it; the
#     durations it prints nest (a request's holds its plan's and execute's)
#     and -s puts its sleep inside execute alone;
# (c) the rate mode runs exactly the spans asked and never faster than the
#     rate (absolute pacing); bad options are refused with a message;
# (d) the notes' locations are where a uprobe must go: uprobes placed there
#     through tracefs (address to file offset by the LOAD segments, as a
#     recorder does) and counted by perf stat fire exactly once per span
#     enter and once per exit (50,000 each); the CPU a span costs with them
#     is printed, beside the cost without.  SKIP of this part without perf,
#     tracefs or uprobe events.
#   usage: test-spans-demo.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib.sh"
build=${1:?usage: test-spans-demo.sh BUILD_DIR}
demo=$build/contrib/spans-demo
[ -x "$demo" ] || { echo "SKIP: contrib/spans-demo not built (no <sys/sdt.h>: install systemtap-sdt-dev)"; exit 77; }
command -v readelf >/dev/null || { echo "SKIP: no readelf"; exit 77; }
tmp=$(mktemp -d)
hogs=()
uprobes=()
cleanup() {
	for h in "${hogs[@]}"; do kill "$h" 2>/dev/null; done
	for u in "${uprobes[@]}"; do echo "-:$u" >>"$tracefs/uprobe_events" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# (a) the notes, as "provider name semaphore args" lines.
readelf -n "$demo" | awk '
	/^ *stapsdt/ { if (p != "") print p, n, s, a; p = n = s = a = "" }
	/Provider:/ { p = $2 }
	/Name:/ { n = $2 }
	/Semaphore:/ { s = $NF }
	/Arguments:/ { $1 = ""; a = substr($0, 2) }
	END { if (p != "") print p, n, s, a }' | sort >"$tmp/notes"
cat "$tmp/notes"
check "two stapsdt notes, both of provider flamefs_demo" \
	test "$(awk '$1 == "flamefs_demo"' "$tmp/notes" | wc -l)" = 2 -a "$(wc -l <"$tmp/notes")" = 2
check "span__enter: no semaphore, three 8-byte register arguments" \
	grep -Eq '^flamefs_demo span__enter 0x0+ 8@%[a-z0-9]+ 8@%[a-z0-9]+ 8@%[a-z0-9]+$' "$tmp/notes"
check "span__exit: no semaphore, one 8-byte register argument" \
	grep -Eq '^flamefs_demo span__exit 0x0+ 8@%[a-z0-9]+$' "$tmp/notes"

# (b) the accounting.  $1: label, then the demo's options.
accounting() {
	local what=$1 n=$2 t=$3 u=20000
	shift 3
	if ! "$demo" -n "$n" -t "$t" -u "$u" >"$tmp/out" 2>"$tmp/err"; then
		bad "$what: spans-demo failed: $(cat "$tmp/err")"
		return
	fi
	cat "$tmp/out"
	local name units
	for name in request:10 plan:30 execute:60; do
		units=${name#*:}
		name=${name%:*}
		awk -v name="$name" -v spans=$((n * t)) -v iters=$((n * t * units * u)) -v design="0.$units" '
			$1 == "span" && $2 == "name=" name {
				for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
				found = 1
			}
			END {
				if (!found) { print "no line for " name; exit 1 }
				if (f["spans"] != spans) { print name ": spans " f["spans"] " != " spans; exit 1 }
				if (f["iterations"] != iters) { print name ": iterations " f["iterations"] " != " iters; exit 1 }
				if (f["design"] != design) { print name ": design " f["design"]; exit 1 }
			}' "$tmp/out" >"$tmp/why" ||
			{ bad "$what: $name: $(cat "$tmp/why")"; continue; }
		# The share from cpu_ns over the three names' sum (not the
		# printed rounding).
		awk -v name="$name" -v design="0.$units" '
			$1 == "span" { split($2, nm, "="); split($5, c, "="); cpu[nm[2]] = c[2]; tot += c[2] }
			END {
				share = cpu[name] / tot
				d = share - design; if (d < 0) d = -d
				printf "%s share %.6f design %s\n", name, share, design
				exit !(tot > 0 && d <= 0.05)
			}' "$tmp/out" >"$tmp/why"
		check "$what: $name: $(cat "$tmp/why") (within 0.05), spans and iterations exact" \
			test $? = 0
	done
	check "$what: total requests = $((n * t)), threads = $t" \
		grep -Eq "^total requests=$((n * t)) threads=$t " "$tmp/out"
}
accounting "one thread" 200 1
accounting "two threads" 100 2
for i in 1 2; do
	(while :; do :; done) &
	hogs+=($!)
done
accounting "two CPU hogs beside it" 200 1
for h in "${hogs[@]}"; do kill "$h"; wait "$h" 2>/dev/null; done
hogs=()

# (b2) the durations it prints: a request's includes its plan's and its
# execute's; with -s 2000 (2 ms asleep in each execute) execute's sleep is
# at least 2 ms a span, within its durations, and the others' is 0.
if "$demo" -n 50 -s 2000 >"$tmp/sleep" 2>"$tmp/err"; then
	cat "$tmp/sleep"
	check "durations: request >= plan + execute, every max <= its sum, max x spans >= sum" \
		awk '$1 == "span" { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
			n = f["name"]; wall[n] = f["wall_ns"]; mx[n] = f["max_wall_ns"]; sp[n] = f["spans"]; sl[n] = f["sleep_ns"]
			if (!(mx[n] <= wall[n] && mx[n] * sp[n] >= wall[n])) bad = 1 }
			END { exit !(!bad && wall["request"] >= wall["plan"] + wall["execute"]) }' "$tmp/sleep"
	check "-s 2000: execute slept >= 50 x 2 ms inside its spans, request and plan 0" \
		awk '$1 == "span" { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
			n = f["name"]; sl[n] = f["sleep_ns"]; wall[n] = f["wall_ns"] }
			END { exit !(sl["execute"] >= 100000000 && sl["execute"] <= wall["execute"] && sl["request"] == 0 && sl["plan"] == 0) }' "$tmp/sleep"
else
	bad "spans-demo -s failed: $(cat "$tmp/err")"
fi

# (c) the rate mode: 50,000 spans at 100,000 a second take at least 0.5 s.
if "$demo" -r 100000 -n 50000 >"$tmp/rate" 2>"$tmp/err"; then
	cat "$tmp/rate"
	check "rate mode: exactly 50000 spans, no faster than 100000 a second" \
		awk '$1 == "rate" { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } ok = f["spans"] == 50000 && f["seconds"] >= 0.5 && f["cpu_ns"] > 0 }
			END { exit !ok }' "$tmp/rate"
else
	bad "rate mode failed: $(cat "$tmp/err")"
fi
# (d) uprobes at the notes.  $1: probe name; prints the file offset of
# its location.
note_offset() {
	local loc type off va pa fsz rest
	loc=$(readelf -n "$demo_copy" | awk -v name="$1" '/Name:/ { n = $2 } /Location:/ && n == name { sub(",", "", $2); print $2; exit }')
	[ -n "$loc" ] || return
	while read -r type off va pa fsz rest; do
		[ "$type" = LOAD ] || continue
		if ((loc >= va && loc < va + fsz)); then
			printf '0x%x\n' $((loc - va + off))
			return
		fi
	done < <(readelf -lW "$demo_copy")
}
tracefs=/sys/kernel/tracing
[ -w "$tracefs/uprobe_events" ] || tracefs=/sys/kernel/debug/tracing
if ! command -v perf >/dev/null; then
	skip "uprobes at the notes: no perf"
elif [ ! -w "$tracefs/uprobe_events" ]; then
	skip "uprobes at the notes: no writable uprobe_events in tracefs"
else
	demo_copy=$tmp/spans-demo
	cp "$demo" "$demo_copy"
	group=flamefs_spans_demo_$$
	ok_probes=1
	for probe in span__enter span__exit; do
		off=$(note_offset "$probe")
		if [ -z "$off" ] || ! echo "p:$group/$probe $demo_copy:$off" >>"$tracefs/uprobe_events"; then
			bad "uprobe for $probe at the note's location ($off)"
			ok_probes=0
			continue
		fi
		uprobes+=("$group/$probe")
	done
	if [ "$ok_probes" = 1 ]; then
		"$demo_copy" -r 100000 -n 50000 >"$tmp/base" 2>&1
		perf stat -x, -e "$group:span__enter" -e "$group:span__exit" -- \
			"$demo_copy" -r 100000 -n 50000 >"$tmp/probed" 2>"$tmp/stat"
		cat "$tmp/base" "$tmp/probed" "$tmp/stat"
		check "uprobes at the notes: span__enter fired exactly 50000 times" \
			grep -Eq "^50000,,$group:span__enter," "$tmp/stat"
		check "uprobes at the notes: span__exit fired exactly 50000 times" \
			grep -Eq "^50000,,$group:span__exit," "$tmp/stat"
		echo "cost of a span with two uprobes: $(sed -n 's/.*cpu_ns_per_span=//p' "$tmp/probed") ns of the thread's CPU, without: $(sed -n 's/.*cpu_ns_per_span=//p' "$tmp/base") ns"
	fi
fi

for args in "-n 0" "-n x" "-d -1" "-t 0" "-r abc" "-s 1x" "extra"; do
	# shellcheck disable=SC2086
	"$demo" $args >"$tmp/out" 2>"$tmp/err"
	rc=$?
	check "spans-demo $args is refused (exit $rc, \"$(head -1 "$tmp/err")\")" \
		test "$rc" = 2 -a -s "$tmp/err" -a ! -s "$tmp/out"
done
finish

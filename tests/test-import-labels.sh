#!/usr/bin/env bash
# Labels from imports (#40): --label KEY=VALUE on folded and gperftools
# input; pprof's string labels from a real Go program (pprof.Do), whose
# per-label totals must equal `go tool pprof -raw`'s exactly; perf script
# text and perf.data of a program with two named threads, with
# --by-thread; bad --label values and a pprof whose label keys collide;
# export --label as the slice.  Parts that need go or perf print "skip:".
#   usage: tests/test-import-labels.sh BUILD_DIR     (exit 0 pass, 1 fail)
. "$(dirname "$0")/lib-import.sh"

# sum STORE ARGS...: the summed weight of `export --format folded ARGS`.
sum() {
	local st=$1
	shift
	"$collect" export --store "$st" --format folded "$@" | awk '{ s += $NF } END { printf "%d\n", s }'
}

# expect WHAT WANT GOT
expect() {
	if [ "$2" = "$3" ]; then ok "$1: $3"; else bad "$1: got \"$3\", expected \"$2\""; fi
}

# ---- --label on folded and gperftools input --------------------------------
printf 'main;parse;lex 30\nmain;parse 5\nmain;eval;add 17\n' >"$tmp/in.folded"
gperf=$here/fuzz/corpus/gperf-cpu/libprofiler-64le
for input in "$tmp/in.folded" "$gperf"; do
	name=$(basename "$input")
	st=$tmp/st-$name
	"$collect" import --store "$tmp/plain-$name" "$input" >/dev/null 2>&1 ||
		{ bad "$name: plain import failed"; continue; }
	"$collect" export --store "$tmp/plain-$name" --format folded >"$tmp/plain.folded"
	check "$name: import --label env=prod --label team=db" \
		"$collect" import --store "$st" --label env=prod --label team=db "$input"
	check "$name: import --label env=dev" "$collect" import --store "$st" --label env=dev "$input"
	for sel in "--label env=prod" "--label team=db --label env=prod" "--label env=dev"; do
		# shellcheck disable=SC2086 # $sel is two or four words
		"$collect" export --store "$st" --format folded $sel >"$tmp/sel.folded"
		same "$tmp/sel.folded" "$tmp/plain.folded" "$name: export $sel is the file as imported"
	done
	whole=$(sum "$tmp/plain-$name")
	expect "$name: both imports sum" "$((2 * whole))" "$(sum "$st")"
	[ "$whole" -gt 0 ] || bad "$name: imported nothing"
	if "$collect" export --store "$st" --label env=dev --label team=db >"$tmp/none.out" 2>&1; then
		bad "$name: export --label env=dev --label team=db matched a series"
	else
		grep -q 'no series matches --label env=dev --label team=db$' "$tmp/none.out" &&
			ok "$name: no series has env=dev and team=db" ||
			bad "$name: no-match message: $(cat "$tmp/none.out")"
	fi
done

"$collect" import --store "$tmp/bt" --by-thread "$tmp/in.folded" >"$tmp/bt.out" 2>&1 ||
	bad "--by-thread on folded input failed: $(cat "$tmp/bt.out")"
grep -q "in.folded: --by-thread: folded input names no threads; its samples have no thread label" \
	"$tmp/bt.out" && ok "--by-thread on folded input says it labels nothing" ||
	bad "--by-thread on folded input: $(cat "$tmp/bt.out")"

# ---- bad --label values: refused before anything is read ---------------------
# (a usage error: one line, a pointer to --help)
try="try 'flamefs-collect import --help'"
while IFS='|' read -r arg want; do
	rm -rf "$tmp/badst"
	if "$collect" import --store "$tmp/badst" --label "$arg" "$tmp/in.folded" >"$tmp/bad.out" 2>&1; then
		bad "--label \"$arg\" accepted"
	elif [ "$(cat "$tmp/bad.out")" = "flamefs-collect import: $want; $try" ]; then
		ok "--label \"$arg\" refused: $want"
	else
		bad "--label \"$arg\": got \"$(cat "$tmp/bad.out")\", expected \"flamefs-collect import: $want; $try\""
	fi
	[ -e "$tmp/badst" ] && bad "--label \"$arg\" made a store"
done <<'EOF2'
env|--label: expected KEY=VALUE, got "env"
=x|--label: key "" is not a label key; expected 1 to 32 bytes of a-z, 0-9 and _, starting with a letter
Env=x|--label: key "Env" is not a label key; expected 1 to 32 bytes of a-z, 0-9 and _, starting with a letter
1env=x|--label: key "1env" is not a label key; expected 1 to 32 bytes of a-z, 0-9 and _, starting with a letter
http.route=x|--label: key "http.route" is not a label key; expected 1 to 32 bytes of a-z, 0-9 and _, starting with a letter
abcdefghijabcdefghijabcdefghijabc=x|--label: key "abcdefghijabcdefghijabcdefghijabc" is not a label key; expected 1 to 32 bytes of a-z, 0-9 and _, starting with a letter
env=|--label env: value of 0 bytes; expected 1 to 1024 bytes without control characters
EOF2
rm -rf "$tmp/badst"
long=$(head -c 1025 /dev/zero | tr '\0' v)
"$collect" import --store "$tmp/badst" --label "env=$long" "$tmp/in.folded" >"$tmp/bad.out" 2>&1 &&
	bad "--label with a 1025-byte value accepted"
expect "--label with a 1025-byte value" \
	"flamefs-collect import: --label env: value of 1025 bytes; expected 1 to 1024 bytes without control characters; $try" \
	"$(cat "$tmp/bad.out")"
"$collect" import --store "$tmp/badst" --label "env=a$(printf '\t')b" "$tmp/in.folded" >"$tmp/bad.out" 2>&1 &&
	bad "--label with a tab accepted"
expect "--label with a tab" \
	"flamefs-collect import: --label env: value holds control byte 0x09 at byte 1; expected 1 to 1024 bytes without control characters; $try" \
	"$(cat "$tmp/bad.out")"
"$collect" import --store "$tmp/badst" --label env=a --label env=b "$tmp/in.folded" >"$tmp/bad.out" 2>&1 &&
	bad "--label env twice accepted"
expect "--label env twice" "flamefs-collect import: --label env: given twice; expected each key once; $try" \
	"$(cat "$tmp/bad.out")"
check "a 1024-byte value is taken" \
	"$collect" import --store "$tmp/okst" --label "env=${long:1}" "$tmp/in.folded"
expect "export --label env=<1024 bytes>" "52" "$(sum "$tmp/okst" --label "env=${long:1}")"
"$collect" export --store "$tmp/okst" --label "Env=x" >"$tmp/bad.out" 2>&1 && bad "export --label Env=x accepted"
grep -q 'key "Env" is not a label key' "$tmp/bad.out" && ok "export --label Env=x refused" ||
	bad "export --label Env=x: $(cat "$tmp/bad.out")"

# ---- pprof labels: a real Go program ----------------------------------------
if ! command -v go >/dev/null; then
	echo "skip: go not installed; the pprof label checks did not run"
else
	export HOME=$tmp GOCACHE=$tmp/gocache GOFLAGS= GO111MODULE=off
	if ! go build -o "$tmp/go-labels" "$here/go-labels/main.go" 2>"$tmp/go.err"; then
		bad "go build go-labels: $(cat "$tmp/go.err")"
	elif ! "$tmp/go-labels" "$tmp/l.pb.gz" || ! "$tmp/go-labels" "$tmp/c.pb.gz" collide; then
		bad "go-labels failed"
	else
		check "import the Go profile" "$collect" import --store "$tmp/go" "$tmp/l.pb.gz"
		# go tool pprof -raw: per label value, the samples and cpu
		# columns summed over the samples that carry it.
		go tool pprof -raw "$tmp/l.pb.gz" 2>"$tmp/raw.err" | awk '
			/^Samples:/ { s = 1; next }
			/^Locations/ { s = 0 }
			s && /^ *-?[0-9]+ +-?[0-9]+:/ { c = $1; v = $2; sub(":", "", v); next }
			s && /:\[/ {
				for (i = 1; i <= NF; i++) {
					split($i, kv, ":\\[")
					val = kv[2]; sub("\\]$", "", val)
					n[kv[1] "=" val] += c; w[kv[1] "=" val] += v
				}
			}
			END { for (k in n) print k, n[k], w[k] }' | sort >"$tmp/raw.sums"
		[ -s "$tmp/raw.sums" ] || bad "go tool pprof -raw gave no labelled samples: $(cat "$tmp/raw.err")"
		while read -r kv samples cpu; do
			key=${kv%%=*} value=${kv#*=}
			[ "$key" = Http.Route ] && key=http_route # the key as flamefs stores it
			expect "pprof $kv: cpu" "$cpu" "$(sum "$tmp/go" --event cpu --label "$key=$value")"
			expect "pprof $kv: samples" "$samples" "$(sum "$tmp/go" --event samples --label "$key=$value")"
		done <"$tmp/raw.sums"
		a=$(sum "$tmp/go" --event cpu --label handler=a)
		b=$(sum "$tmp/go" --event cpu --label handler=b)
		total=$(sum "$tmp/go" --event cpu)
		# a ran three times b's CPU time: a's share 0.75, within 0.1
		awk -v a="$a" -v b="$b" 'BEGIN { r = a / (a + b); exit !(r > 0.65 && r < 0.85) }' &&
			ok "handler=a holds $a of a+b=$((a + b)) (expected 3/4)" ||
			bad "handler=a holds $a of a+b=$((a + b)), expected 3/4 within 0.1"
		[ "$total" -ge $((a + b)) ] || bad "the whole ($total) is less than its labels' ($((a + b)))"
		"$collect" export --store "$tmp/go" --event cpu --label handler=a --format folded >"$tmp/ha"
		grep -q 'main\.burnB' "$tmp/ha" && bad "handler=a holds main.burnB"
		grep -q 'main\.burnA' "$tmp/ha" && ok "handler=a holds main.burnA" || bad "handler=a lacks main.burnA"

		# two pprof keys that become one label key: refused, nothing stored
		if "$collect" import --store "$tmp/go" "$tmp/c.pb.gz" >"$tmp/c.out" 2>&1; then
			bad "a profile with label keys Handler and handler was imported"
		else
			grep -q 'c.pb.gz: label keys "Handler" and "handler" both become label key handler' \
				"$tmp/c.out" && ok "colliding label keys refused: $(head -1 "$tmp/c.out")" ||
				bad "colliding label keys: $(cat "$tmp/c.out")"
		fi
		# --label naming a key the profile gives: refused
		if "$collect" import --store "$tmp/go2" --label handler=z "$tmp/l.pb.gz" >"$tmp/c.out" 2>&1; then
			bad "--label handler=z accepted on a profile labelled handler"
		else
			grep -q 'l.pb.gz: --label handler=z names a label the input gives its samples too (handler=' \
				"$tmp/c.out" && ok "--label on a key of the profile refused" ||
				bad "--label handler=z: $(cat "$tmp/c.out")"
		fi
		# --label with another key joins the profile's labels
		check "import the Go profile --label env=z" \
			"$collect" import --store "$tmp/go3" --label env=z "$tmp/l.pb.gz"
		expect "handler=a env=z" "$a" "$(sum "$tmp/go3" --event cpu --label handler=a --label env=z)"
	fi
fi

# ---- pprof: a label per sample, past the store's bound ---------------------
if ! command -v python3 >/dev/null; then
	echo "skip: python3 not installed; the label-set bound check did not run"
elif python3 "$here/data/labels/many-labels.py" "$tmp/many.pb.gz" 5000; then
	check "import 5,001 samples with 5,000 label sets" "$collect" import --store "$tmp/many" "$tmp/many.pb.gz"
	expect "every sample counted" 50020 "$(sum "$tmp/many" --event cpu)"
	expect "req=r3 (within the bound)" 10 "$(sum "$tmp/many" --event cpu --label req=r3)"
	# the store keeps the first 256 sets; the other 4,744 count under (other)
	expect "req=(other)" 47440 "$(sum "$tmp/many" --event cpu --label "req=(other)")"
	"$collect" export --store "$tmp/many" --label req=r4999 >/dev/null 2>&1 &&
		bad "req=r4999, past the bound, has a series of its own"
	expect "cpu series: 256 sets, (other), none" 258 \
		"$("$collect" stats --store "$tmp/many" | awk '$3 == "cpu"' | wc -l)"
else
	bad "many-labels.py failed"
fi

# ---- perf: two named threads, --by-thread ------------------------------------
target=$build/tests/import-threads-target
if ! command -v perf >/dev/null; then
	echo "skip: perf not installed; the --by-thread checks did not run"
elif ! perf record -q -F 499 -g -o "$tmp/t.data" "$target" 600 >"$tmp/perf.out" 2>&1; then
	echo "skip: perf record failed here: $(tail -1 "$tmp/perf.out")"
else
	perf script -i "$tmp/t.data" >"$tmp/t.perf" 2>/dev/null
	comm=$(basename "$target" | cut -c1-15) # the kernel's comm: 15 bytes
	# perf's own sums of the period per thread name
	awk '/^[^ \t#]/ { w[$1] += $4 } END { for (t in w) print t, w[t] }' "$tmp/t.perf" |
		sort >"$tmp/perf.sums"
	grep -q '^worker-a ' "$tmp/perf.sums" && grep -q '^worker-b ' "$tmp/perf.sums" ||
		bad "perf script lacks worker-a or worker-b: $(cat "$tmp/perf.sums")"
	check "import perf script --by-thread --binary $comm" \
		"$collect" import --store "$tmp/pt" --by-thread --binary "$comm" "$tmp/t.perf"
	check "import perf.data --by-thread" "$collect" import --store "$tmp/pd" --by-thread "$tmp/t.data"
	check "import perf.data" "$collect" import --store "$tmp/pd0" "$tmp/t.data"
	while read -r thread want; do
		[ "$thread" = worker-a ] || [ "$thread" = worker-b ] || continue
		fn=spin_${thread#worker-} other=spin_a
		[ "$fn" = spin_a ] && other=spin_b
		for st in pt pd; do
			expect "$st: thread=$thread weight" "$want" \
				"$(sum "$tmp/$st" --binary "$comm" --label "thread=$thread")"
			"$collect" export --store "$tmp/$st" --label "thread=$thread" >"$tmp/th.folded"
			grep -q ";$fn" "$tmp/th.folded" && ok "$st: thread=$thread holds $fn" ||
				bad "$st: thread=$thread lacks $fn"
			grep -q ";$other" "$tmp/th.folded" && bad "$st: thread=$thread holds $other"
		done
		# without --by-thread perf.data names the binary after the thread
		expect "perf.data without --by-thread: binary $thread" "$want" \
			"$(sum "$tmp/pd0" --binary "$thread")"
	done <"$tmp/perf.sums"
	a=$(sum "$tmp/pd" --label thread=worker-a)
	b=$(sum "$tmp/pd" --label thread=worker-b)
	awk -v a="$a" -v b="$b" 'BEGIN { r = a / (a + b); exit !(r > 0.70 && r < 0.80) }' &&
		ok "thread=worker-a holds $a of $((a + b)) (expected 3/4 within 0.05)" ||
		bad "thread=worker-a holds $a of $((a + b)), expected 3/4 within 0.05"
fi

finish

#!/usr/bin/env bash
# Golden test of the pprof importer: imports the fixtures in
# tests/data/pprof into fresh stores and compares
# `flamefs-collect export --format folded` with the *.folded.expected
# files, which raw2folded.py derived from `go tool pprof -raw` (when go is
# installed it is run again here, live).  Then checks that every malformed
# input is refused with a message naming the file and what was expected,
# and leaves the store empty.
#   usage: tests/test-import-pprof.sh BUILD_DIR     (exit 0 pass, 1 fail)
. "$(dirname "$0")/lib-import.sh"
data=$here/data/pprof

# import NAME FILE [ARGS...]: imports FILE into a new store $tmp/NAME.
import() {
	local name=$1 file=$2
	shift 2
	rm -rf "$tmp/$name"
	if ! "$collect" import --store "$tmp/$name" "$@" "$file" \
		>"$tmp/$name.out" 2>"$tmp/$name.err"; then
		bad "import $file: $(cat "$tmp/$name.err")"
		return 1
	fi
}

# expect_same WHAT EXPECTED ACTUAL
expect_same() {
	if diff -u "$2" "$3" >"$tmp/diff"; then
		ok "$1"
	else
		bad "$1"
		cat "$tmp/diff"
	fi
}

export_folded() {
	local name=$1
	shift
	LC_ALL=C "$collect" export --store "$tmp/$name" --format folded "$@"
}

# ---- the Go CPU profile ----------------------------------------------------
if import go "$data/cpu.pb.gz"; then
	for ev in cpu samples; do
		export_folded go --event "$ev" >"$tmp/go.$ev" || bad "export go $ev"
		expect_same "cpu.pb.gz --event $ev" "$data/cpu.$ev.folded.expected" "$tmp/go.$ev"
	done
	# The series is named after the first mapping (burn), version default.
	export_folded go --binary burn --version default --event cpu >"$tmp/go.named" 2>&1
	expect_same "cpu.pb.gz series burn/default" "$data/cpu.cpu.folded.expected" "$tmp/go.named"
	# The fixture's point: main.hot burns about three times main.cold.
	ratio=$(awk '/;main\.hot;/ { h += $NF } /;main\.cold;/ { c += $NF }
		END { if (c > 0) printf "%.2f", h / c; else print 0 }' "$tmp/go.cpu")
	if awk -v r="$ratio" 'BEGIN { exit !(r >= 2 && r <= 5) }'; then
		ok "main.hot / main.cold = $ratio"
	else
		bad "main.hot / main.cold = $ratio, expected about 3"
	fi
fi

# ---- the hand-made profile: inline lines, two mappings, no-line locations --
if import inl "$data/inline.pb"; then
	for ev in cpu samples; do
		export_folded inl --event "$ev" >"$tmp/inl.$ev" || bad "export inline $ev"
		expect_same "inline.pb --event $ev" "$data/inline.$ev.folded.expected" "$tmp/inl.$ev"
	done
	# samples = the samples/count value; zero values are not counted, so
	# the cpu series has the samples of the stacks it has weight for.
	want=$(awk 'NR == FNR { cpu[$1] = 1; next } ($1 in cpu) { s += $NF }
		END { print s }' "$data/inline.cpu.folded.expected" "$data/inline.samples.folded.expected")
	got=$("$collect" stats --store "$tmp/inl" 2>/dev/null |
		awk '$1 == "demo" && $3 == "cpu" { print $4 }')
	if [ "$got" = "$want" ]; then
		ok "inline.pb cpu series has $got samples"
	else
		bad "inline.pb cpu series has \"$got\" samples, expected $want"
	fi
	# Version: the first mapping's build id, first 12 hex digits, lower case.
	export_folded inl --binary demo --version 0123456789ab --event cpu >"$tmp/inl.named" 2>&1
	expect_same "inline.pb series demo/0123456789ab" "$data/inline.cpu.folded.expected" "$tmp/inl.named"
fi
if import inlgz "$data/inline.pb.gz"; then
	export_folded inlgz --event cpu >"$tmp/inlgz.cpu"
	expect_same "inline.pb.gz equals inline.pb" "$data/inline.cpu.folded.expected" "$tmp/inlgz.cpu"
fi
if import inlstdin - --format pprof <"$data/inline.pb"; then
	export_folded inlstdin --binary demo --event cpu >"$tmp/inlstdin.cpu" 2>&1
	expect_same "inline.pb from stdin" "$data/inline.cpu.folded.expected" "$tmp/inlstdin.cpu"
fi
# --binary replaces the series binary and so the first folded frame.
if import over "$data/inline.pb" --binary other --version v1; then
	export_folded over --binary other --version v1 --event cpu >"$tmp/over.cpu" 2>&1
	sed 's/^demo;/other;/' "$data/inline.cpu.folded.expected" >"$tmp/over.expected"
	expect_same "inline.pb --binary other --version v1" "$tmp/over.expected" "$tmp/over.cpu"
fi

# ---- live check against go tool pprof --------------------------------------
if command -v go >/dev/null && command -v python3 >/dev/null; then
	export HOME=$tmp GOCACHE=$tmp/gocache GOFLAGS= GO111MODULE=off
	for p in go:cpu.pb.gz inl:inline.pb; do
		name=${p%%:*} file=${p#*:}
		[ -d "$tmp/$name" ] || continue
		for ev in cpu samples; do
			if go tool pprof -symbolize=none -raw "$data/$file" >"$tmp/raw" 2>"$tmp/raw.err" &&
				python3 "$data/raw2folded.py" "$ev" <"$tmp/raw" >"$tmp/live"; then
				expect_same "$file --event $ev vs live go tool pprof -raw" "$tmp/live" "$tmp/$name.$ev"
			else
				bad "go tool pprof -raw $file: $(cat "$tmp/raw.err")"
			fi
		done
	done
else
	echo "skip: go or python3 not installed; live go tool pprof comparison not run"
fi

# ---- sample types with empty names -------------------------------------------
# blank-types.py made these from real runtime/pprof profiles (cpu.pb.gz and
# ../legacy/heap.pb.gz) by pointing sample types' names and/or units at the
# empty string.  A type without a name is "sample<i>" (i counts from 0);
# each type's total equals go tool pprof -raw's for the same column.
while read -r file names; do
	import blank "$data/$file" || continue
	got=$("$collect" stats --store "$tmp/blank" | awk 'NR > 1 && NF == 9 { print $3 }' | sort | tr '\n' ' ')
	want=$(printf '%s\n' $names | sort | tr '\n' ' ')
	if [ "$got" = "$want" ]; then
		ok "$file: series $got"
	else
		bad "$file: series \"$got\", expected \"$want\""
	fi
	command -v go >/dev/null || continue
	# the column sums of go tool pprof -raw, by position
	go tool pprof -raw "$data/$file" 2>/dev/null | awk '
		/^Samples:/ { getline; nt = split($0, t, " "); s = 1; next }
		/^Locations/ { s = 0 }
		s && /:/ { split($0, part, ":"); split(part[1], v, " "); for (i = 1; i <= nt; i++) sum[i] += v[i] }
		END { for (i = 1; i <= nt; i++) printf "%.0f\n", sum[i] }' >"$tmp/blank.sums"
	i=0
	for name in $names; do
		i=$((i + 1))
		want=$(sed -n "${i}p" "$tmp/blank.sums")
		got=$("$collect" stats --store "$tmp/blank" | awk -v e="$name" 'NR > 1 && NF == 9 && $3 == e { print $5 }')
		if [ -n "$want" ] && [ "$got" = "$want" ]; then
			ok "$file: $name total $got"
		else
			bad "$file: $name total \"$got\", go tool pprof -raw says \"$want\""
		fi
	done
done <<'EOF'
notype-cpu.pb.gz sample0 sample1
notype-cpu-nounit.pb sample0 sample1
notype-heap-first.pb sample0 alloc_space inuse_objects inuse_space
notype-heap-13.pb.gz alloc_objects sample1 inuse_objects sample3
nounit-heap.pb alloc_objects alloc_space inuse_objects inuse_space
EOF

# ---- inputs that must be refused --------------------------------------------
# FILE and a fragment the message must hold besides the file name.
while read -r file want; do
	rm -rf "$tmp/bad"
	if "$collect" import --store "$tmp/bad" --format pprof "$data/$file" \
		>"$tmp/bad.out" 2>"$tmp/bad.err"; then
		bad "$file was accepted"
		continue
	fi
	msg=$(cat "$tmp/bad.err")
	if ! grep -qF "$data/$file" "$tmp/bad.err"; then
		bad "$file: message does not name the file: $msg"
	elif ! grep -qF "expected" "$tmp/bad.err" || ! grep -qF "$want" "$tmp/bad.err"; then
		bad "$file: message lacks \"expected\" or \"$want\": $msg"
	else
		ok "$file refused: $(head -n 1 "$tmp/bad.err")"
	fi
	if [ -d "$tmp/bad" ]; then
		"$collect" export --store "$tmp/bad" --format folded >"$tmp/bad.export" 2>&1
		if [ -s "$tmp/bad.export" ]; then
			bad "$file: the store is not empty after a refused import"
			cat "$tmp/bad.export"
		fi
	fi
done <<'EOF'
empty.pb empty
bad-garbage.pb pprof profile
bad-truncated.pb truncated
bad-truncated.pb.gz truncated
bad-location-id.pb location id 99
bad-function-id.pb function id 77
bad-mapping-id.pb mapping id 5
bad-string-index.pb string index 500
bad-value-count.pb one per sample type
EOF

if [ "$failures" -gt 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all pprof import checks passed"
exit 0

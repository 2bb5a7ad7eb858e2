#!/usr/bin/env bash
# test-import-legacy.sh — gperftools CPU and heap profiles, Go's legacy
# (debug=1) text profiles, pprof delta profiles and the strict format
# detection, checked against a second implementation (`go tool pprof`)
# and against what the profiled programs are known to do.
#
# gperftools profiles are made here with the real libprofiler.so and
# libtcmalloc.so (CPUPROFILE, HEAPPROFILE) on tests/gperf-target.c; the
# Go files in tests/data/legacy/ were written by go-profiles.go with
# runtime/pprof and net/http/pprof (allocs?seconds=1 for the delta).
#   usage: test-import-legacy.sh BUILD_DIR        exit 0 pass, 1 fail
. "$(dirname "$0")/lib-import.sh"
data=$here/data/legacy
target=$build/tests/gperf-target
[ -x "$target" ] || { echo "gperf-target not built"; exit 1; }
command -v go >/dev/null || { echo "SKIP: go not installed (the second opinion)"; exit 77; }

# stat_of STORE EVENT COLUMN: a column of `stats` (4 samples, 5 weight,
# 7 input bytes) for EVENT, summed over binaries.
stat_of() {
	"$collect" stats --store "$1" 2>/dev/null |
		awk -v e="$2" -v c="$3" 'NF == 9 && $3 == e { s += $c } END { printf "%.0f\n", s }'
}

# events STORE: the store's events, one a line.
events() {
	"$collect" stats --store "$1" 2>/dev/null | awk 'NR > 1 && NF == 9 { print $3 }'
}

# raw_sums PROFILE [BINARY]: "TYPE POSITIVE NEGATIVE SAMPLES" per sample
# type, from go tool pprof -raw.
raw_sums() {
	go tool pprof -raw "$@" 2>/dev/null | awk '
		/^Samples:/ { getline; n = split($0, t, " "); s = 1; next }
		/^Locations/ { s = 0 }
		s && /:/ { for (i = 1; i <= n; i++) if ($i > 0) p[i] += $i; else m[i] -= $i }
		END { for (i = 1; i <= n; i++) { sub(/\/.*/, "", t[i]); printf "%s %.0f %.0f\n", t[i], p[i], m[i] } }'
}

# raw_cum COLUMN PROFILE [BINARY]: "FUNCTION CUMULATIVE" lines, exact, from
# go tool pprof -raw: the samples' values in COLUMN (1 the first sample
# type), each sample counted once per function on its stack (every line
# of a location, inlined ones too), never pprof's rounded -top figures.
raw_cum() {
	local col=$1
	shift
	go tool pprof -raw "$@" 2>/dev/null | awk -v col="$col" '
		/^Samples:/ { getline; s = 1; next }
		/^Locations/ { s = 0; l = 1; next }
		/^Mappings/ { l = 0 }
		s && /:/ { ns++; split($0, part, ":"); split(part[1], val, " ")
			v[ns] = val[col]; locs[ns] = part[2] }
		l && /^ *[0-9]+: 0x/ { id = $1; sub(/:/, "", id); if (NF >= 4) fn[id] = $4; next }
		l && NF >= 3 && !/^ *[0-9]+: / { fn[id] = fn[id] " " $1 }
		END {
			for (k = 1; k <= ns; k++) {
				n = split(locs[k], ids, " "); delete seen
				for (i = 1; i <= n; i++) { m = split(fn[ids[i]], fs, " ")
					for (j = 1; j <= m; j++) if (!(fs[j] in seen)) { seen[fs[j]] = 1; cum[fs[j]] += v[k] } }
			}
			for (name in cum) printf "%s %.0f\n", name, cum[name]
		}'
}

# same_totals NAME STORE PROFILE [BINARY]: every sample type's positive
# total is its series' weight, and a negative total the "-TYPE" series'.
same_totals() {
	local name=$1 st=$2 type pos neg
	shift 2
	raw_sums "$@" >"$tmp/raw"
	[ -s "$tmp/raw" ] || { bad "$name: go tool pprof -raw gave nothing"; return; }
	while read -r type pos neg; do
		n=$((n + 1))
		if [ "$type" = samples ]; then # a CPU profile's count: our samples
			[ "$(stat_of "$st" cpu 4)" = "$pos" ] ||
				bad "$name: $(stat_of "$st" cpu 4) samples, pprof says $pos"
			continue
		fi
		[ "$(stat_of "$st" "$type" 5)" = "$pos" ] ||
			bad "$name: $type weight $(stat_of "$st" "$type" 5), pprof says $pos"
		[ "$(stat_of "$st" "-$type" 5)" = "$neg" ] ||
			bad "$name: -$type weight $(stat_of "$st" "-$type" 5), pprof says -$neg"
	done <"$tmp/raw"
}

# weight_of STORE EVENT REGEX: summed weight of the folded lines matching.
weight_of() {
	"$collect" export --store "$1" --event "$2" 2>/dev/null |
		awk -v re="$3" '$0 ~ re { s += $NF } END { printf "%.0f\n", s }'
}

import() { # STORE FILE [OPTIONS...]
	local st=$1 file=$2
	shift 2
	rm -rf "$st"
	"$collect" import --store "$st" "$@" "$file" >"$tmp/import.out" 2>&1 ||
		{ bad "import of $(basename "$file") failed: $(head -3 "$tmp/import.out")"; return 1; }
}

# ---- gperftools CPU profile (libprofiler.so) ---------------------------
libdir=$(dirname "$(ls /usr/lib/*/libprofiler.so.0 /usr/lib/libprofiler.so.0 2>/dev/null | head -1)" 2>/dev/null)
# A sanitizer build's target cannot take gperftools' preloaded libraries
# (ASan must come first and owns malloc): import the profiles committed as
# fuzz seeds instead, which libprofiler.so and libtcmalloc.so wrote.
if ldd "$target" 2>/dev/null | grep -q -e libasan -e libubsan; then
	echo "SKIP (part): sanitizer build, gperftools cannot be preloaded; importing committed gperftools profiles"
	for f in "$here"/fuzz/corpus/gperf-cpu/libprofiler-64le "$here"/fuzz/corpus/legacy/tcmalloc-heap; do
		n=$((n + 1))
		import "$tmp/s" "$f" && [ "$(stat_of "$tmp/s" "$(events "$tmp/s" | tail -1)" 5)" -gt 0 ] ||
			bad "$(basename "$f"): imported nothing"
	done
	libdir=
fi
if [ -n "$libdir" ] && [ -e "$libdir/libtcmalloc.so.4" ]; then
	mkdir -p "$tmp/run" "$tmp/elsewhere"
	cp "$target" "$tmp/run/gperf-target"
	CPUPROFILE=$tmp/cpu.prof CPUPROFILE_FREQUENCY=250 LD_PRELOAD=$libdir/libprofiler.so.0 \
		"$tmp/run/gperf-target" 300 >/dev/null 2>&1
	if [ -s "$tmp/cpu.prof" ] && import "$tmp/s" "$tmp/cpu.prof"; then
		n=$((n + 1))
		grep -q 'of gperftools-cpu)' "$tmp/import.out" || bad "cpu.prof: not detected as gperftools-cpu"
		same_totals cpu.prof "$tmp/s" "$tmp/run/gperf-target" "$tmp/cpu.prof"
		# the known tree: work_a 3/4 of burn, work_c 1/4
		a=$(weight_of "$tmp/s" cpu ';main;work_a;burn ')
		c=$(weight_of "$tmp/s" cpu ';main;work_b;work_c;burn ')
		n=$((n + 1))
		awk -v a="$a" -v c="$c" 'BEGIN { s = a / (a + c); exit !(a > 0 && s > 0.68 && s < 0.82) }' ||
			bad "cpu.prof: work_a has $a ns and work_c $c; expected 3/4 and 1/4"
		# pprof's cumulative per function (symbolized by binutils) equals
		# ours, in exact nanoseconds (go tool pprof -raw, column 2)
		raw_cum 2 "$tmp/run/gperf-target" "$tmp/cpu.prof" >"$tmp/cum"
		for fn in work_a work_b work_c burn main; do
			n=$((n + 1))
			want=$(awk -v f="$fn" '$1 == f { print $2 }' "$tmp/cum")
			got=$(weight_of "$tmp/s" cpu "(^|;)$fn(;| )")
			[ -n "$want" ] && [ "$got" = "$want" ] ||
				bad "cpu.prof: $fn cumulative $got ns, go tool pprof says ${want:-nothing}"
		done
		# --binary-path: the executable moved away is found there
		mv "$tmp/run/gperf-target" "$tmp/elsewhere/"
		n=$((n + 1))
		if import "$tmp/s2" "$tmp/cpu.prof"; then
			[ "$(weight_of "$tmp/s2" cpu ';work_a;')" = 0 ] &&
				[ "$(weight_of "$tmp/s2" cpu '[[]gperf-target[]]')" -gt 0 ] ||
				bad "cpu.prof without its executable: expected [gperf-target] frames"
		fi
		n=$((n + 1))
		if import "$tmp/s2" "$tmp/cpu.prof" --binary-path "$tmp/nothing:$tmp/elsewhere"; then
			[ "$(weight_of "$tmp/s2" cpu ';main;work_a;burn ')" = "$a" ] ||
				bad "--binary-path: expected the same stacks as with the executable in place"
		fi
	else
		bad "libprofiler.so wrote no profile or it did not import"
	fi

	# ---- gperftools heap profile (libtcmalloc.so) ------------------
	HEAPPROFILE=$tmp/heap LD_PRELOAD=$libdir/libtcmalloc.so.4 "$target" 1 >/dev/null 2>&1
	heap=$(ls "$tmp"/heap.*.heap 2>/dev/null | tail -1)
	if [ -n "$heap" ] && import "$tmp/s" "$heap"; then
		same_totals heap "$tmp/s" "$target" "$heap"
		# each site's bytes, exactly
		for want in "inuse_space site_x 4194304" "inuse_objects site_x 1024" \
			"alloc_space site_x 4194304" "alloc_objects site_x 1024" \
			"inuse_space site_y 4194304" "inuse_objects site_y 256" \
			"alloc_space site_y 8388608" "alloc_objects site_y 768"; do
			set -- $want
			n=$((n + 1))
			got=$(weight_of "$tmp/s" "$1" ";main;$2 ")
			[ "$got" = "$3" ] || bad "heap: $1 at $2 is $got, expected $3"
		done
	else
		bad "libtcmalloc.so wrote no heap profile or it did not import"
	fi
elif ! ldd "$target" 2>/dev/null | grep -q -e libasan -e libubsan; then
	echo "SKIP (part): google-perftools is not installed (contrib/install-deps.sh)"
fi

# ---- Go legacy text profiles (runtime/pprof, debug=1) ------------------
for f in "$data"/go-*.txt; do
	base=$(basename "$f" .txt)
	import "$tmp/s" "$f" || continue
	n=$((n + 1))
	grep -q 'of legacy)' "$tmp/import.out" || bad "$base: not detected as legacy"
	# folded output of every series, against the committed golden file
	for ev in $(events "$tmp/s"); do
		echo "== $ev"
		"$collect" export --store "$tmp/s" --event "$ev"
	done >"$tmp/$base.got"
	same "$tmp/$base.got" "$data/$base.expected" "$base: export differs from $base.expected"
	# pprof refuses threadcreate's "5 @" line; the others must agree with it
	[ "$base" = go-threadcreate ] || same_totals "$base" "$tmp/s" "$f"
done

# ---- sampled heap profiles: pprof's unsampling, exactly -----------------
# go-heap-{small,medium,large}.txt (above: "@ heap/1048576", the default
# MemProfileRate, whose rate pprof halves) and tcmalloc's "@ heap_v2/RATE"
# at two rates: every sample type's total equals go tool pprof -raw's.
for f in "$data"/tcmalloc-sample-*.heap; do
	base=$(basename "$f" .heap)
	import "$tmp/s" "$f" || continue
	n=$((n + 1))
	grep -q 'of legacy)' "$tmp/import.out" || bad "$base: not detected as legacy"
	same_totals "$base" "$tmp/s" "$f"
done
n=$((n + 1))
[ "$(ls "$data"/go-heap-*.txt "$data"/tcmalloc-sample-*.heap | wc -l)" -ge 5 ] ||
	bad "the sampled heap fixtures are missing"

# ---- pprof: delta profiles and the default sample type -----------------
if import "$tmp/s" "$data/allocs-delta.pb.gz"; then
	same_totals allocs-delta "$tmp/s" "$data/allocs-delta.pb.gz"
	n=$((n + 1))
	[ "$(stat_of "$tmp/s" -inuse_space 5)" -gt 0 ] ||
		bad "allocs-delta: no negative inuse_space; the fixture should have some"
fi
for want in "heap.pb.gz inuse_space" "allocs.pb.gz alloc_space" "go-heap.txt inuse_space" \
	"go-block.txt delay"; do
	set -- $want
	n=$((n + 1))
	import "$tmp/s" "$data/$1" || continue
	# the input's bytes go to the default type, the view's primary event
	got=$("$collect" stats --store "$tmp/s" | awk 'NR > 1 && NF == 9 && $7 != "—" { print $3 }')
	[ "$got" = "$2" ] || bad "$1: primary (input bytes) on \"$got\", expected $2"
	fsbin=$build/fs/flamefs
	[ -x "$fsbin" ] || fsbin=$build/flamefs
	if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null && [ -x "$fsbin" ]; then
		mkdir -p "$tmp/mnt"
		n=$((n + 1))
		if "$fsbin" "$tmp/s" "$tmp/mnt" 2>"$tmp/mount.err"; then
			# The binary: the root's one directory (its files are the whole view's).
			bin=$(find "$tmp/mnt" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | head -1)
			total=$(cat "$tmp/mnt/$bin/default/total" 2>/dev/null)
			[ "$total" = "$(stat_of "$tmp/s" "$2" 5)" ] ||
				bad "$1: the view's version root shows $total, expected $2's weight"
			fusermount3 -u "$tmp/mnt"
		else
			bad "$1: flamefs could not mount it: $(head -1 "$tmp/mount.err")"
		fi
	else
		echo "SKIP (part): no FUSE here; the view's version root is not checked"
	fi
done

# ---- detection: refused and misread inputs -----------------------------
n=$((n + 1))
printf 'hello world 12\nthis is not a profile\n' >"$tmp/prose.txt"
if "$collect" import --store "$tmp/s3" "$tmp/prose.txt" >"$tmp/out" 2>&1; then
	bad "prose.txt: imported"
else
	grep -q 'prose.txt: expected a profile in a format flamefs reads.*tried perf.data, gperftools CPU profile, pprof.*legacy text.*perf script.*folded' "$tmp/out" ||
		{ bad "prose.txt: message does not list what was tried"; cat "$tmp/out"; }
fi
n=$((n + 1))
head -c 4096 /dev/urandom | tr '\000' '\001' | sed '1s/^./\x02/' >"$tmp/random.bin"
if "$collect" import --store "$tmp/s3" "$tmp/random.bin" >"$tmp/out" 2>&1; then
	bad "random.bin: imported"
fi
# A Go heap profile was once taken for perf script (binaries "0:", "1:").
n=$((n + 1))
if import "$tmp/s" "$data/go-heap.txt"; then
	"$collect" stats --store "$tmp/s" | awk 'NR > 1 && NF == 9 { print $1 }' | sort -u >"$tmp/bins"
	[ "$(cat "$tmp/bins")" = go-heap ] || bad "go-heap.txt: binaries $(tr '\n' ' ' <"$tmp/bins")"
fi

# ---- bad input: a message with where, and nothing stored ---------------
# refused NAME FILE REGEX [OPTIONS]: import fails with REGEX in the message
# and leaves a store holding go-heap.txt as it was.
import "$tmp/base" "$data/go-heap.txt"
"$collect" export --store "$tmp/base" --event inuse_space >"$tmp/base.folded"
refused() {
	local name=$1 file=$2 re=$3
	shift 3
	n=$((n + 1))
	rm -rf "$tmp/b"
	cp -a "$tmp/base" "$tmp/b"
	if "$collect" import --store "$tmp/b" "$@" "$file" >"$tmp/out" 2>&1; then
		bad "$name: imported"
		return
	fi
	grep -E -q "$re" "$tmp/out" || { bad "$name: message lacks $re"; cat "$tmp/out"; }
	"$collect" export --store "$tmp/b" --event inuse_space >"$tmp/b.folded"
	same "$tmp/b.folded" "$tmp/base.folded" "$name: the store changed"
}
if [ -s "$tmp/cpu.prof" ]; then
	len=$(stat -c %s "$tmp/cpu.prof")
	# in the header, in a sample's count, depth and pcs (before the maps)
	for cut in 12 41 44 70; do
		head -c "$cut" "$tmp/cpu.prof" >"$tmp/cut-$cut.prof"
		refused "cpu.prof cut at $cut" "$tmp/cut-$cut.prof" \
			"cut-$cut.prof: offset [0-9]+: expected .*" --format gperftools-cpu
	done
fi
printf 'heap profile: 1: 2 [3: 4] @ heapprofile\n1: 2 [3: 4] @ 0x1 0x2\nnot a sample\n' >"$tmp/bad-line.heap"
refused "heap with a bad line" "$tmp/bad-line.heap" 'bad-line.heap:3: expected a heap sample'
printf 'heap profile: 1: 2 [3: 4] @ heapprofile\n0: 2 [3: 4] @ 0x1\n' >"$tmp/bad-zero.heap"
refused "heap size without count" "$tmp/bad-zero.heap" 'bad-zero.heap:2: expected a size of 0'
printf 'heap profile: 1: 2 [3: 4] @ nonsense\n' >"$tmp/bad-tag.heap"
refused "heap with an unknown tag" "$tmp/bad-tag.heap" 'bad-tag.heap:1: expected heapprofile'
printf -- '--- contention:\ncycles/second=x\n' >"$tmp/bad-attr.txt"
refused "contention with a bad attribute" "$tmp/bad-attr.txt" 'bad-attr.txt:2: expected cycles/second'
printf 'goroutine profile: total 1\n1 @ 0x1\x00\n' >"$tmp/bad-nul.txt"
refused "NUL byte" "$tmp/bad-nul.txt" 'bad-nul.txt:2: expected text without NUL'
printf 'just text\n' >"$tmp/no-header.txt"
refused "legacy forced on other text" "$tmp/no-header.txt" 'no-header.txt:1: expected a legacy profile header' \
	--format legacy

echo "$n legacy import checks, $failures failed"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# test-names.sh — one name per function, whatever the source (issue 20).
#
# The same binary, tests/gperf-target (frame pointers, a known call tree
# through libc), profiled five ways: `flamefs-collect record` (skipped
# where BPF cannot load), `perf record -g` imported as perf.data, the same
# perf.data as `perf script` text, gperftools' CPU profiler
# (libprofiler.so.0, CPUPROFILE) and its heap profiler (libtcmalloc.so.4,
# HEAPPROFILE).  Every source must name the functions it must hold (main,
# the target's own, __libc_start_call_main, and __libc_start_main where its
# unwinder reaches it: gperftools', with frame pointers through libc)
# exactly alike: each must appear, and every name of those functions, or
# of glibc's start-up in any spelling (*libc_start*), must be one of one
# fixed set, so that all sources agree.  No name anywhere may carry a symbol
# version ("@@", "@GLIBC", "@VERSION"); "@plt" may appear, as perf
# prints it.  Which frames exist does not depend on where samples land:
# every CPU sample of the target is under main, and its unwinders all
# reach __libc_start_call_main.
#   usage: test-names.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-import.sh"
target=$build/tests/gperf-target
[ -x "$target" ] || { echo "gperf-target not built"; exit 1; }
mkdir -p "$tmp/bin"
cp "$target" "$tmp/bin/gperf-target"
# A sanitizer build's target cannot take gperftools' preloaded libraries
# (ASan must come first and owns malloc): the profiled program is then
# built here without sanitizers, with the flags tests/meson.build gives it;
# what is tested, flamefs-collect, stays the sanitizer build.
if ldd "$target" 2>/dev/null | grep -q -e libasan -e libubsan; then
	if ! cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-ipa-icf \
		-o "$tmp/bin/gperf-target" "$here/gperf-target.c" 2>"$tmp/cc.err"; then
		echo "SKIP: sanitizer build and no plain C compiler for the profiled program: $(head -1 "$tmp/cc.err")"
		exit 77
	fi
fi
export HOME=$tmp/home # perf's build-id cache: our own
mkdir -p "$HOME"
ran=0

# names STORE: every frame name of the store's default export, one a line
names() {
	"$collect" export --store "$1" 2>/dev/null |
		sed -E 's/ [0-9]+$//' | tr ';' '\n' | sort -u
}

# Every name of these functions any source may give: the target's own,
# and glibc's start-up under its one name each.
allowed="main work_a work_b work_c burn site_x site_y __libc_start_call_main __libc_start_main"

# check SOURCE STORE MUST...: the store has every name MUST, every name it
# has of a known function (or of glibc's start-up, *libc_start*, in any
# spelling) is in $allowed, and no name has a symbol version
check() {
	local src=$1 store=$2
	shift 2
	names "$store" >"$tmp/$src.names"
	n=$((n + 1))
	[ -s "$tmp/$src.names" ] || { bad "$src: no frames"; return; }
	grep -E '^(main|work_[abc]|burn|site_[xy])$|libc_start|^(main|work_[abc]|burn|site_[xy])[@.]' \
		"$tmp/$src.names" >"$tmp/$src.known"
	printf '%s\n' $allowed | sort >"$tmp/allowed"
	printf '%s\n' "$@" | sort -u >"$tmp/$src.must"
	comm -23 "$tmp/$src.must" "$tmp/$src.known" >"$tmp/$src.missing"
	[ -s "$tmp/$src.missing" ] && bad "$src: missing $(tr '\n' ' ' <"$tmp/$src.missing")"
	n=$((n + 1))
	comm -23 "$tmp/$src.known" "$tmp/allowed" >"$tmp/$src.other"
	[ -s "$tmp/$src.other" ] && bad "$src: other names of known functions: $(tr '\n' ' ' <"$tmp/$src.other")"
	n=$((n + 1))
	if grep -E '@@|@[A-Za-z0-9_.]+$' "$tmp/$src.names" | grep -v -E '@plt$' >"$tmp/$src.ver"; then
		bad "$src: names with a symbol version: $(head -3 "$tmp/$src.ver" | tr '\n' ' ')"
	fi
	ran=$((ran + 1))
}

cpu_names=(main work_a work_b work_c burn __libc_start_call_main)

# ---- record (BPF) ----
if "$collect" record --store "$tmp/rec" -F 499 -- "$tmp/bin/gperf-target" 150 >/dev/null 2>"$tmp/rec.err"; then
	check record "$tmp/rec" "${cpu_names[@]}"
else
	echo "SKIP - record: $(head -1 "$tmp/rec.err")"
fi

# ---- perf record -g: perf.data, and its perf script text ----
if command -v perf >/dev/null &&
	perf record -q -F 1999 -e cpu-clock:u -g -o "$tmp/g.data" -- "$tmp/bin/gperf-target" 150 >/dev/null 2>&1; then
	"$collect" import --store "$tmp/pd" "$tmp/g.data" >/dev/null 2>&1 || bad "perf.data: import failed"
	check perf.data "$tmp/pd" "${cpu_names[@]}"
	perf script -i "$tmp/g.data" >"$tmp/g.txt" 2>/dev/null
	"$collect" import --store "$tmp/pt" "$tmp/g.txt" >/dev/null 2>&1 || bad "perf script: import failed"
	check perf-script "$tmp/pt" "${cpu_names[@]}"
else
	echo "SKIP - perf: not installed or cannot record"
fi

# ---- gperftools: CPU and heap ----
libdir=$(dirname "$(ls /usr/lib/*/libprofiler.so.0 /usr/lib/libprofiler.so.0 2>/dev/null | head -1)" 2>/dev/null)
if [ -n "$libdir" ] && [ -e "$libdir/libprofiler.so.0" ] && [ -e "$libdir/libtcmalloc.so.4" ]; then
	CPUPROFILE=$tmp/cpu.prof CPUPROFILE_FREQUENCY=250 LD_PRELOAD=$libdir/libprofiler.so.0 \
		"$tmp/bin/gperf-target" 150 >/dev/null 2>&1
	"$collect" import --store "$tmp/gc" "$tmp/cpu.prof" >/dev/null 2>&1 || bad "gperftools CPU: import failed"
	check gperftools-cpu "$tmp/gc" "${cpu_names[@]}" __libc_start_main
	HEAPPROFILE=$tmp/heap LD_PRELOAD=$libdir/libtcmalloc.so.4 "$tmp/bin/gperf-target" 1 >/dev/null 2>&1
	heap=$(ls "$tmp"/heap.*.heap 2>/dev/null | tail -1)
	"$collect" import --store "$tmp/gh" "$heap" >/dev/null 2>&1 || bad "gperftools heap: import failed"
	check gperftools-heap "$tmp/gh" main site_x site_y __libc_start_call_main __libc_start_main
else
	echo "SKIP - gperftools: libprofiler.so.0 or libtcmalloc.so.4 not installed"
fi

[ "$ran" -gt 0 ] || { echo "SKIP: no profiler could run here"; exit 77; }
echo "$n name checks over $ran sources, $failures failed"
[ "$failures" -eq 0 ]

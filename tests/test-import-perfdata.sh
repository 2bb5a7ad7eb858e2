#!/usr/bin/env bash
# test-import-perfdata.sh — the perf.data importer (collector/import/perfdata.c)
# against perf itself.
#
# Records tests/gperf-target (a known call tree, frame pointers) with the
# real `perf record`: with -g, without callchains, with --call-graph dwarf,
# with two events, in pipe mode; imports each perf.data and compares the
# stored stacks with `perf script | tests/ref/stackcollapse-ref.pl` of the
# same file (the second implementation): equal for -g and no callchains,
# equal below main for dwarf (perf and libdw name glibc's start-up frames
# differently), the known shares of the tree, the event options, a
# binary found only in the build-id cache, and truncated files refused
# with FILE: offset N: and nothing stored.  Skips (77) where perf cannot
# record.
#   usage: test-import-perfdata.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-import.sh"
ref=$here/ref/stackcollapse-ref.pl
target=$build/tests/gperf-target
[ -x "$target" ] || { echo "gperf-target not built"; exit 1; }
command -v perf >/dev/null || { echo "SKIP: perf not installed"; exit 77; }
command -v perl >/dev/null || { echo "SKIP: perl not installed"; exit 77; }
# perf keeps its build-id cache in $HOME/.debug: one of our own
export HOME=$tmp/home
mkdir -p "$HOME"
if ! perf record -q -o "$tmp/probe.data" -- true >/dev/null 2>&1; then
	echo "SKIP: perf record cannot record here (perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))"
	exit 77
fi

# refc [STACKCOLLAPSE OPTIONS...]: perf script's text folded by the
# reference, with symbol versions dropped: perf prints whichever alias of
# an address it meets first ("cfree@GLIBC_2.2.5", "memcpy@@GLIBC_2.14"),
# flamefs names ELF symbols without versions whatever the source
# (symbolize_symbol); "@plt" stays, as both print it.
refc() {
	perl "$ref" "$@" | perl -pe 's/(?<=[^;@])\@\@?(?!plt[; ])[A-Za-z0-9_.]+(?=[; ])//g'
}

# rec NAME [PERF RECORD OPTIONS...]: records the target into $tmp/NAME.data
rec() {
	local name=$1
	shift
	perf record -q -F 1999 "$@" -o "$tmp/$name.data" -- "$tmp/bin/gperf-target" 150 \
		>/dev/null 2>"$tmp/$name.rec.err" ||
		{ bad "$name: perf record failed: $(head -2 "$tmp/$name.rec.err")"; return 1; }
}

# imp NAME [IMPORT OPTIONS...]: imports $tmp/NAME.data into a fresh store
# and exports it to $tmp/NAME.got ([EXPORT OPTIONS] after --)
imp() {
	local name=$1
	shift
	local iopts=() eopts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do iopts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	eopts=("$@")
	rm -rf "$tmp/s"
	"$collect" import --store "$tmp/s" "${iopts[@]}" "$tmp/$name.data" >"$tmp/$name.out" 2>&1 ||
		{ bad "$name: import failed: $(head -3 "$tmp/$name.out")"; return 1; }
	grep -q 'of perf.data)' "$tmp/$name.out" || bad "$name: not detected as perf.data"
	"$collect" export --store "$tmp/s" "${eopts[@]}" >"$tmp/$name.got" 2>&1
}

mkdir -p "$tmp/bin"
cp "$target" "$tmp/bin/gperf-target"

# User-space events (:u) make the comparisons exact: kernel frames come
# from interrupts at random and the kernel's symbol aliases (__pi_*,
# __pfx_*) are named by kallsyms lookups that differ from perf's.  The
# kernel's part is compared once, on weight, below.
ev=cpu-clock:u

# -g and no callchains: the same folded stacks as perf script's
for mode in g nog; do
	n=$((n + 1))
	if [ $mode = g ]; then rec $mode -e $ev -g || continue; else rec $mode -e $ev || continue; fi
	imp $mode || continue
	perf script -i "$tmp/$mode.data" 2>/dev/null | refc >"$tmp/$mode.ref"
	[ -s "$tmp/$mode.ref" ] || { bad "$mode: perf script gave no samples"; continue; }
	same "$tmp/$mode.got" "$tmp/$mode.ref" "$mode: import differs from perf script | stackcollapse"
done

# the known tree: work_a holds 3/4 of burn
n=$((n + 1))
if [ -s "$tmp/g.got" ]; then
	awk '/;main;work_a;burn / { a += $NF } /;main;work_b;work_c;burn / { c += $NF }
		END { s = a / (a + c); exit !(a > 0 && s > 0.68 && s < 0.82) }' "$tmp/g.got" ||
		{ bad "g: work_a/work_c shares are not 3:1"; grep -E 'work_[ac]' "$tmp/g.got" | head; }
fi

# with the kernel: at least 95% of the weight on stacks identical to perf's
n=$((n + 1))
if rec kernel -e cpu-clock -g && imp kernel; then
	perf script -i "$tmp/kernel.data" 2>/dev/null | refc >"$tmp/kernel.ref"
	awk 'NR == FNR { r[substr($0, 1, length($0) - length($NF) - 1)] = $NF; t += $NF; next }
		{ k = substr($0, 1, length($0) - length($NF) - 1); if (k in r) s += ($NF < r[k] ? $NF : r[k]) }
		END { exit !(t > 0 && s / t >= 0.95) }' "$tmp/kernel.ref" "$tmp/kernel.got" ||
		{ bad "kernel: less than 95% of the weight on perf's stacks"; diff "$tmp/kernel.ref" "$tmp/kernel.got" | head -20; }
fi

# --call-graph dwarf: unwound from the stack copies; the stacks of the
# target's own functions below main must be perf's (glibc's names for its
# frames depend on which of its aliases a lookup meets first)
n=$((n + 1))
if rec dwarf -e $ev --call-graph dwarf && imp dwarf; then
	below_main() {
		sed -n 's/^\(gperf-target\);.*;main;/\1;main;/p' "$1" |
			grep -E ';main(;(work_a|work_b|work_c|burn|site_x|site_y))* [0-9]+$' | sort
	}
	perf script -i "$tmp/dwarf.data" 2>/dev/null | refc >"$tmp/dwarf.ref"
	below_main "$tmp/dwarf.got" >"$tmp/dwarf.got.main"
	below_main "$tmp/dwarf.ref" >"$tmp/dwarf.ref.main"
	[ -s "$tmp/dwarf.ref.main" ] || bad "dwarf: perf script unwound nothing to main"
	same "$tmp/dwarf.got.main" "$tmp/dwarf.ref.main" "dwarf: stacks below main differ from perf's"
	grep -q ';main;work_b;work_c;burn ' "$tmp/dwarf.got" ||
		bad "dwarf: no unwound stack main;work_b;work_c;burn"
fi

# two events: the first only by default (with a notice), --event, --all-events
n=$((n + 1))
if rec two -e cpu-clock:u -e task-clock:u -g; then
	if imp two; then
		grep -q 'kept only event cpu-clock' "$tmp/two.out" || bad "two: no notice of the event kept"
		perf script -i "$tmp/two.data" 2>/dev/null | refc --event cpu-clock >"$tmp/two.ref"
		[ -s "$tmp/two.ref" ] || bad "two: perf script has no cpu-clock samples"
		same "$tmp/two.got" "$tmp/two.ref" "two events, default: differs from perf's cpu-clock"
	fi
	n=$((n + 1))
	if imp two --event task-clock; then
		perf script -i "$tmp/two.data" 2>/dev/null | refc --event task-clock >"$tmp/two-t.ref"
		same "$tmp/two.got" "$tmp/two-t.ref" "--event task-clock"
	fi
	n=$((n + 1))
	if imp two --all-events -- --event task-clock; then
		same "$tmp/two.got" "$tmp/two-t.ref" "--all-events, task-clock series"
		"$collect" stats --store "$tmp/s" >"$tmp/stats"
		grep -q ' cpu-clock ' "$tmp/stats" && grep -q ' task-clock ' "$tmp/stats" ||
			{ bad "--all-events: a series is missing"; cat "$tmp/stats"; }
	fi
fi

# perf record -k CLOCK_MONOTONIC writes CLOCK_DATA: samples get wall-clock
# times (prune's --older-than takes them); without it, perf's own clock
# (seconds since boot), which --older-than leaves alone, as for perf text
n=$((n + 1))
if rec clock -e $ev -g -k CLOCK_MONOTONIC && imp clock; then
	perf script -i "$tmp/clock.data" 2>/dev/null | refc >"$tmp/clock.ref"
	same "$tmp/clock.got" "$tmp/clock.ref" "clock: import differs from perf script"
	"$collect" prune --store "$tmp/s" --older-than 1m --dry-run >"$tmp/prune" 2>&1
	! grep -q 'left alone' "$tmp/prune" || { bad "clock: samples not on the wall clock"; cat "$tmp/prune"; }
	n=$((n + 1))
	imp nog && "$collect" prune --store "$tmp/s" --older-than 1m --dry-run >"$tmp/prune" 2>&1
	grep -q 'left alone: 1 series on perf' "$tmp/prune" ||
		{ bad "nog: samples not on perf's clock"; cat "$tmp/prune"; }
fi

# pipe mode (perf record -o -): attrs as records, no feature sections
n=$((n + 1))
if perf record -q -F 1999 -e $ev -g -o - -- "$tmp/bin/gperf-target" 150 >"$tmp/pipe.data" 2>/dev/null &&
	imp pipe; then
	perf script -i "$tmp/pipe.data" 2>/dev/null | refc >"$tmp/pipe.ref"
	same "$tmp/pipe.got" "$tmp/pipe.ref" "pipe mode: import differs from perf script"
fi

# The executable gone, found by build id in perf's cache ($HOME/.debug,
# filled by perf record); with the cache gone too, "[gperf-target]" frames.
n=$((n + 1))
if [ -s "$tmp/g.data" ] && ls "$HOME"/.debug/.build-id/*/*/elf >/dev/null 2>&1; then
	mv "$tmp/bin/gperf-target" "$tmp/gperf-target.moved"
	imp g && same "$tmp/g.got" "$tmp/g.ref" "build-id cache: stacks differ with the executable gone"
	n=$((n + 1))
	mv "$HOME/.debug" "$HOME/debug.moved"
	if imp g; then
		grep -q '\[gperf-target\]' "$tmp/g.got" && ! grep -q ';work_a;' "$tmp/g.got" ||
			bad "no executable, no cache: expected [gperf-target] frames"
	fi
	mv "$HOME/debug.moved" "$HOME/.debug"
	mv "$tmp/gperf-target.moved" "$tmp/bin/gperf-target"
else
	bad "perf record left no build-id cache in $HOME/.debug"
fi

# JIT code named by /tmp/perf-PID.map, as perf script names it (x86_64).
# Without callchains every sample is a leaf, and the few taken while the
# target starts and exits land anywhere: the loader, libc, PLT stubs.
# Those are named exactly as perf 6.1 names them (modules.c's
# module_plt_syms: "NAME@plt" in relocation order, "@plt" for libc's
# IRELATIVE entries, .plt.got unnamed), with one exception folded here:
# perf's lookup names an executable's first PLT entry "_init" by accident
# (its sizeless _init, extended over the PLT, sits above that entry in
# its symbol tree), which flamefs names after its relocation.
jit=$build/tests/jit-target
if [ -x "$jit" ] && [ "$(uname -m)" = x86_64 ]; then
	n=$((n + 1))
	plt0=$(readelf -rW "$jit" | awk '/.rela.plt/ { f = 1; next } f && /JUMP_SLOT/ { sub(/@.*/, "", $5); print $5 "@plt"; exit }')
	fold_plt0() { sed -e "s/;_init /;[plt0] /" -e "s/;$plt0 /;[plt0] /" "$1" | sort; }
	if perf record -q -F 1999 -e $ev -o "$tmp/jit.data" -- "$jit" 300 >"$tmp/jit.map" 2>/dev/null; then
		if imp jit; then
			perf script -i "$tmp/jit.data" 2>/dev/null | refc >"$tmp/jit.ref"
			fold_plt0 "$tmp/jit.ref" | awk '{ v = $NF; $NF = ""; w[$0] += v } END { for (k in w) print k w[k] }' | sort >"$tmp/jit.ref.f"
			fold_plt0 "$tmp/jit.got" | awk '{ v = $NF; $NF = ""; w[$0] += v } END { for (k in w) print k w[k] }' | sort >"$tmp/jit.got.f"
			same "$tmp/jit.got.f" "$tmp/jit.ref.f" "jit: import differs from perf script"
			grep -q '^jit-target;jitted_spin ' "$tmp/jit.got" ||
				{ bad "jit: no samples named jitted_spin"; head -5 "$tmp/jit.got"; }
		fi
	else
		bad "jit: perf record failed"
	fi
	rm -f "$(cat "$tmp/jit.map" 2>/dev/null)"
fi

# Bad input: cut files and garbage refused with the offset, nothing stored.
if [ -s "$tmp/g.data" ]; then
	rm -rf "$tmp/base"
	"$collect" import --store "$tmp/base" "$tmp/nog.data" >/dev/null 2>&1
	"$collect" export --store "$tmp/base" >"$tmp/base.folded"
	len=$(stat -c %s "$tmp/g.data")
	dstart=$(od -A n -t u8 -j 40 -N 8 "$tmp/g.data" | tr -d ' ')
	for cut in 7 50 100 $((dstart + 30)) $((len / 2)); do
		n=$((n + 1))
		head -c "$cut" "$tmp/g.data" >"$tmp/cut-$cut.data"
		rm -rf "$tmp/b"
		cp -a "$tmp/base" "$tmp/b"
		if "$collect" import --store "$tmp/b" --format perf.data "$tmp/cut-$cut.data" >"$tmp/out" 2>&1; then
			bad "perf.data cut at $cut: imported"
			continue
		fi
		grep -E -q "cut-$cut.data: offset [0-9]+: (expected|the data section|feature)" "$tmp/out" ||
			{ bad "perf.data cut at $cut: message lacks the offset"; cat "$tmp/out"; }
		"$collect" export --store "$tmp/b" >"$tmp/b.folded"
		same "$tmp/b.folded" "$tmp/base.folded" "perf.data cut at $cut: the store changed"
	done
	# a record whose size is below its header's
	n=$((n + 1))
	cp "$tmp/g.data" "$tmp/badsize.data"
	printf '\x04\x00' | dd of="$tmp/badsize.data" bs=1 seek=$((dstart + 6)) conv=notrunc 2>/dev/null
	"$collect" import --store "$tmp/b" "$tmp/badsize.data" >"$tmp/out" 2>&1 &&
		bad "a record of 4 bytes: imported"
	grep -q "badsize.data: offset $dstart: expected a record of" "$tmp/out" ||
		{ bad "bad record size: message"; cat "$tmp/out"; }
fi

echo "$n perf.data checks, $failures failed"
[ "$failures" -eq 0 ]

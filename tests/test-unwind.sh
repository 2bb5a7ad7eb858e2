#!/usr/bin/env bash
# test-unwind.sh — `record` walks user stacks by DWARF CFI (issue #11).
# Records programs built without frame pointers (tests/unwind-target.c,
# unwind-throw.cc; libc has none either) and checks in the stored stacks:
#   - the known tree _start;__libc_start_main;__libc_start_call_main;main;
#     work;hot_leaf with its measured share (±0.10), with --unwind auto and
#     dwarf; --unwind fp cannot walk it (so the modes are really used);
#   - a signal handler's frames continue through __restore_rt into the
#     interrupted frames; calls caught inside the PLT keep their caller;
#   - a library dlopen()ed after the start, a process that execs, C++
#     exceptions thrown through several frames (libgcc_s's unwinder);
#   - Debian's python3 on a JSON workload: >= 90% under Py_BytesMain;
#   - the summary line counts the walks, and few are cut short.
# Also compares the compiled tables of libc, python3 and the target with
# readelf --debug-dump=frames-interp, row by row (a second reading of the
# same CFI).
#   usage: tests/test-unwind.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-unwind.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
target=$build/tests/unwind-target
thrower=$build/tests/unwind-throw
dl=$build/tests/unwind-dl.so
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup unwind

if [ "$(uname -m)" != x86_64 ]; then
	echo "SKIP: CFI unwinding is x86-64 only"
	exit 77
fi
e2e_need_bpf

# ---- the compiled tables against readelf's reading --------------------------
# readelf -wF prints each FDE's rows (LOC CFA ... ra); at every LOC our table
# must give the same CFA rule and return-address slot, or say why not (a rule
# the compact form cannot hold is "bad", a PLT expression "plt").
compare_tables() {
	local file=$1 label=$2
	if ! "$collect" unwind-table "$file" >"$tmp/ours" 2>"$tmp/ours.err"; then
		bad "unwind-table $label: $(cat "$tmp/ours.err")"
		return
	fi
	readelf --debug-dump=frames-interp "$file" 2>/dev/null >"$tmp/theirs"
	awk -v label="$label" '
		FNR == NR {
			if (length($1) == 16 && $1 ~ /^[0-9a-f]+$/) { pc[++n] = $1; rule[n] = $2 }
			next
		}
		/^ +LOC/ {
			ncol = NF; ra = 0; rbp = 0; rbx = 0
			for (i = 1; i <= NF; i++) { if ($i == "ra") ra = i; if ($i == "rbp") rbp = i; if ($i == "rbx") rbx = i }
			next
		}
		length($1) == 16 && $1 ~ /^[0-9a-f]+$/ && ra {
			# "r10 (r10)": a register rule is two words; make it one
			gsub(/ \([a-z0-9]+\)/, "")
			$0 = $0
			loc = $1 # both print 16 hex digits: strings compare as numbers
			lo = 1; hi = n
			if (loc ~ /^0+$/)
				next # an FDE of discarded code, not in any segment
			# "x" keeps awk from reading "00000000000270e7" as a number
			while (lo < hi) { mid = int((lo + hi + 1) / 2); if ("x" pc[mid] <= "x" loc) lo = mid; else hi = mid - 1 }
			ours = rule[lo]; want = $2
			# the return address in rdi (r5, as in glibc __vfork): "ra=rdi"
			if ((want ~ /^rs?p\+/ && $(ra) == "r5") != (ours ~ /,ra=rdi/)) {
				if (++wrong <= 5) printf "       %s at %s: readelf %s (ra %s), ours %s\n", label, loc, $2, $(ra), ours
			}
			if (want ~ /^rs?p\+/ || want ~ /^rbp\+/ || want ~ /^rbx\+/) {
				if ($(ra) == "u") want = "end"
				else if ($(ra) != "c-8" && !(want ~ /^rs?p\+/ && $(ra) == "r5")) want = "bad"
			} else if (want == "exp") {
				want = "plt|signal|bad"
			} else {
				want = "bad"
			}
			checked++
			if (ours == "bad" && want != "bad")
				bads++
			ours_cfa = ours
			sub(/[,(].*/, "", ours_cfa)
			gsub(/\+/, "\\+", want)
			if (ours_cfa !~ "^(" want ")$" && !(want !~ /end/ && ours == "bad")) {
				if (++wrong <= 5) printf "       %s at %s: readelf %s (ra %s), ours %s\n", label, loc, $2, $(ra), ours
			}
			# rbp saved at c-N must be in our rule too
			if (rbp && $(rbp) ~ /^c-[0-9]+$/ && ours ~ /^rs?p|^rbp|^rbx/ && ours !~ "rbp=" $(rbp)) {
				if (++wrong <= 5) printf "       %s at %s: readelf rbp %s, ours %s\n", label, loc, $(rbp), ours
			}
			# rbx: saved at c-16 .. c-56 is said as such, elsewhere "lost"
			if (rbx && ours ~ /^rs?p|^rbp|^rbx/) {
				slot = $(rbx); off = substr(slot, 3) + 0
				wbx = slot ~ /^c-[0-9]+$/ && off >= 16 && off <= 56 && off % 8 == 0 ? "rbx=" slot : slot ~ /^c-|^exp|^r[0-9a-z]/ ? "rbx=lost" : ""
				if ((wbx != "" && ours !~ wbx) || (wbx == "" && ours ~ /rbx=/)) {
					if (++wrong <= 5) printf "       %s at %s: readelf rbx %s, ours %s\n", label, loc, slot, ours
				}
			}
		}
		END {
			# A rule we cannot express stops the walk: allowed, but rare.
			if (bads * 100 > checked) { printf "       %d rows bad\n", bads; wrong++ }
			printf "%d %d\n", checked, wrong
		}' "$tmp/ours" "$tmp/theirs" >"$tmp/cmp"
	local checked wrong
	read -r checked wrong < <(tail -1 "$tmp/cmp")
	head -n -1 "$tmp/cmp"
	if [ "${checked:-0}" -gt 20 ] && [ "${wrong:-1}" -eq 0 ]; then
		ok "unwind-table $label: $checked rows agree with readelf -wF"
	else
		bad "unwind-table $label: ${wrong:-?} of ${checked:-0} rows differ from readelf -wF"
	fi
}
compare_tables "$target" unwind-target
libc=$(ldd "$target" | awk '/libc\.so/ { print $3 }')
[ -n "$libc" ] && compare_tables "$libc" "$(basename "$libc")"
[ -x /usr/bin/python3 ] && compare_tables "$(readlink -f /usr/bin/python3)" python3
# the dynamic loader: its lazy binder keeps the CFA in rbx (rbx+N rows)
ldso=$(ldd "$target" | awk '/ld-linux/ { print $1 }')
[ -n "$ldso" ] && compare_tables "$(readlink -f "$ldso")" ld.so

# ---- helpers ------------------------------------------------------------------
# rec NAME ARGS...: records into $tmp/NAME at 499 Hz; the summary in NAME.err.
rec() {
	local name=$1
	shift
	if "$collect" record --verbose --store "$tmp/$name" -F 499 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
		ok "$name: record exit 0"
	else
		bad "$name: record exit $?"
		cat "$tmp/$name.err"
	fi
	"$collect" export --store "$tmp/$name" >"$tmp/$name.folded" 2>/dev/null
}
# weight NAME REGEX: summed weight of NAME's folded lines matching REGEX.
weight() { stack_weight "$tmp/$1.folded" "$2"; }
# excused NAME: the weight of the walks NAME's recording made without a
# table.  The collector builds a file's table when the first sample meets
# its code (collector/unwind/unwinder.c); until the worker thread has built it,
# walks in that code go by frame pointers, which these programs and libc
# have none of, and are cut short.  On a loaded machine that takes a good
# part of a second (with four CPU hogs, 4 to 39 of 40-75 samples of the
# dlopen run; with two, 0.83 of plt's and 0.86 of dlopen's weight walked
# whole).  The collector counts these walks ("N of them while a table was
# being built", "N by frame pointers alone"), each one sample period.
excused() {
	sed -n 's/.*(\([0-9]*\) of them while a table was being built), \([0-9]*\) by frame pointers alone.*/\1 \2/p' \
		"$tmp/$1.err" | awk '{ printf "%.0f\n", ($1 + $2) * int(1e9 / 499) } END { if (!NR) print 0 }'
}
# share NAME PART WHOLE MIN LABEL: weight(PART) / weight(WHOLE) >= MIN,
# the walks made without a table left out of WHOLE (never below PART).
share() {
	local part whole x
	part=$(weight "$1" "$2")
	whole=$(weight "$1" "$3")
	x=$(excused "$1")
	if [ "$whole" -gt 0 ] && awk -v p="$part" -v w="$whole" -v x="$x" -v m="$4" \
		'BEGIN { w -= x; if (w < p) w = p; exit !(p / w >= m) }'; then
		ok "$5 ($(awk -v p="$part" -v w="$whole" 'BEGIN { printf "%.3f", p / w }'); $x walked without a table)"
	else
		bad "$5: $part of $whole ($x walked without a table), want >= $4"
		sort -t' ' -k2 -nr "$tmp/$1.folded" | head -5 | cut -c1-300
		grep 'user stacks' "$tmp/$1.err"
	fi
}
start='^unwind-target;_start;__libc_start_main(_impl)?;__libc_start_call_main;main;'

# ---- the known tree, three ways -------------------------------------------------
for mode in auto dwarf; do
	rec "tree-$mode" --unwind "$mode" -- "$target" tree 2.5 "$tmp/truth-$mode"
	share "tree-$mode" "${start}work;" ';work;' 0.90 \
		"tree --unwind $mode: _start;__libc_start_main;__libc_start_call_main;main;work above the work"
	hot=$(weight "tree-$mode" "${start}work;hot_leaf(;|$)")
	cold=$(weight "tree-$mode" "${start}work;cold_leaf(;|$)")
	th=$(awk '$1 == "hot" { print $2 }' "$tmp/truth-$mode")
	tc=$(awk '$1 == "cold" { print $2 }' "$tmp/truth-$mode")
	if [ $((hot + cold)) -gt 0 ] && [ "${th:-0}" -gt 0 ] &&
		awk -v h="$hot" -v c="$cold" -v th="$th" -v tc="$tc" 'BEGIN {
			got = h / (h + c); want = th / (th + tc); d = got - want; if (d < 0) d = -d
			printf "       hot_leaf share sampled %.3f measured %.3f\n", got, want
			exit !(d <= 0.10) }'; then
		ok "tree --unwind $mode: hot_leaf's share within 0.10 of the measured truth"
	else
		bad "tree --unwind $mode: hot_leaf's share off (hot $hot cold $cold, truth $th $tc)"
	fi
	if grep -qE "user stacks: [1-9][0-9]* walked by CFI" "$tmp/tree-$mode.err"; then
		ok "tree --unwind $mode: the summary counts CFI walks"
	else
		bad "tree --unwind $mode: no CFI walks counted"
		cat "$tmp/tree-$mode.err"
	fi
done
rec tree-fp --unwind fp -- "$target" tree 1.5 "$tmp/truth-fp"
fpw=$(weight tree-fp "${start}work;")
allw=$(weight tree-fp '^unwind-target;')
if [ "$allw" -gt 0 ] && [ $((fpw * 2)) -lt "$allw" ]; then
	ok "tree --unwind fp: frame pointers cannot walk it ($fpw of $allw under _start), so --unwind picks the walker"
else
	bad "tree --unwind fp: $fpw of $allw under _start; frame pointers should not reach it"
fi
grep -q "user stacks: by frame pointers" "$tmp/tree-fp.err" &&
	ok "tree --unwind fp: the summary says frame pointers" ||
	bad "tree --unwind fp: summary does not say frame pointers"

# ---- a signal handler -------------------------------------------------------------
rec signal -- "$target" signal 2
share signal "${start}sig_victim;.*;__restore_rt;handler;sig_spin" ';handler;sig_spin' 0.90 \
	"signal: the handler's stacks go on through __restore_rt into main;sig_victim"

# ---- calls through the PLT ----------------------------------------------------------
rec plt -- "$target" plt 2
if [ "$(weight plt ';lib_tiny@plt$')" -gt 0 ]; then
	ok "plt: samples inside the PLT entry lib_tiny@plt"
else
	bad "plt: no sample inside the PLT"
fi
share plt "${start}plt_loop;lib_tiny@plt$" ';lib_tiny@plt$' 0.90 \
	"plt: a pc inside the PLT keeps main;plt_loop as its callers"
share plt "${start}plt_loop" '^unwind-target;' 0.93 "plt: the whole run under main;plt_loop"

# ---- vfork: the return address in rdi ---------------------------------------------------
# (AddressSanitizer's runtime intercepts vfork with its own assembly, which
# keeps the return address elsewhere: not glibc's rule, not checked there.)
if nm "$target" 2>/dev/null | grep -q __asan_init; then
	echo "SKIP: vfork: the target is built with AddressSanitizer, whose vfork interceptor replaces glibc's __vfork"
else
	rec vfork -- "$target" vfork 2
	share vfork "${start}vfork_loop;(vfork@plt;)?__vfork;" ';__vfork;' 0.90 \
		"vfork: samples in the kernel's vfork keep main;vfork_loop above __vfork (its return address in rdi)"
fi

# ---- dlopen after the start ----------------------------------------------------------
rec dlopen -- "$target" dlopen 2 "$dl"
share dlopen "${start}dl_work;lib_spin;lib_inner" ';lib_inner' 0.90 \
	"dlopen: a library loaded after the start is walked (main;dl_work;lib_spin;lib_inner)"
# The dlopen is read at its hook if the process was sampled since its
# list was written, else at the first walk after it, which asks user space
# to read the process at once (issue #42: a process is read when it is
# sampled); either way lib_inner is named above, and the summary counts
# the dlopen once, on one side.
read -r dl_read dl_later < <(sed -n 's/.*loader.s hooks: .*, \([0-9]*\) dlopens), \([0-9]*\) dlopens left to the process.s next walk.*/\1 \2/p' \
	"$tmp/dlopen.err")
rereads=$(sed -n 's/.* \([0-9]*\) processes read again at a walk.s request.*/\1/p' "$tmp/dlopen.err")
if [ -n "${dl_read:-}" ] && [ $((dl_read + ${dl_later:-0})) -ge 1 ] &&
	{ [ "${dl_later:-0}" = 0 ] || [ "${rereads:-0}" -ge "$dl_later" ]; }; then
	ok "dlopen: read at the hook $dl_read, left to the next walk $dl_later, read at a walk's request $rereads"
else
	bad "dlopen: read at the hook '${dl_read:-}', left to the next walk '${dl_later:-}', read at a walk's request '${rereads:-}': want one dlopen counted, each left one read at a walk"
	grep "loader's hooks\|unwind tables" "$tmp/dlopen.err"
fi

# ---- exec, and C++ exceptions ------------------------------------------------------------
if [ -x "$thrower" ]; then
	rec exec -- "$target" exec 1 "$thrower" 2
	share exec "${start}pre_exec;" ';pre_exec;' 0.90 "exec: before the exec, main;pre_exec"
	share exec '^unwind-throw;_start;__libc_start_main(_impl)?;__libc_start_call_main;main;throw_loop' \
		'^unwind-throw;' 0.90 "exec: after it, the new program's stacks (unwind-throw;...;main;throw_loop)"
	share exec ';throw_loop;thrower1;thrower2;thrower3;__cxa_throw;_Unwind_RaiseException' \
		';_Unwind_RaiseException' 0.90 \
		"C++: exceptions thrown through thrower1..3 walked through libgcc_s's unwinder"
else
	echo "SKIP: no C++ compiler at build time: exec and exception checks not run"
fi

# ---- Debian's python3 ------------------------------------------------------------------
if [ -x /usr/bin/python3 ]; then
	cat >"$tmp/workload.py" <<'EOF'
import json, time
d = [{"a": i, "b": [str(j) for j in range(20)], "c": {"x": 1.5, "y": None}} for i in range(2000)]
end = time.time() + 3
while time.time() < end:
    json.loads(json.dumps(d))
EOF
	rec python3 -- /usr/bin/python3 "$tmp/workload.py"
	grep -q "Traceback" "$tmp/python3.err" && cat "$tmp/python3.err"
	share python3 ';Py_BytesMain;' '^python3' 0.90 "python3 (Debian's): the JSON workload under Py_BytesMain"
else
	echo "SKIP: /usr/bin/python3 missing: python3 check not run"
fi

# ---- the lazy binder, in children of a process followed with -p ---------------------
# A function's first call through the PLT goes through ld.so's
# _dl_runtime_resolve_xsavec, which aligns the stack and keeps the CFA in
# rbx: walked by following rbx through its callees' saves (an rbx+N row),
# it keeps the caller (before: [truncated];_dl_runtime_resolve_xsavec, 10%
# of a fork loop's stacks).  A process followed with -p had never met ld.so
# itself; each child it forked copied its list with ld.so's table unbuilt
# and walked its first samples there by frame pointers (the asking child's
# ancestors are now rewritten too).  Each child calls five functions the
# parent never called.
if command -v cc >/dev/null; then
	cat >"$tmp/lazy.c" <<'EOC'
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
__attribute__((noinline)) static void spawn(void)
{
	pid_t p = fork();
	if (p == 0) {
		umask(getppid() & 0 ? 0 : 022);
		(void)getuid();
		(void)getegid();
		_exit(0);
	}
	waitpid(p, NULL, 0);
}
int main(int argc, char **argv)
{
	time_t end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end)
		spawn();
	return 0;
}
EOC
	cc -O2 -fno-omit-frame-pointer -Wl,-z,lazy -o "$tmp/lazy" "$tmp/lazy.c"
	"$tmp/lazy" 6 &
	lazy_pid=$!
	sleep 0.5
	rec binder -F 999 -p "$lazy_pid" -d 3
	wait "$lazy_pid"
	# every stack through the binder; those rooted at main;spawn
	through=$(weight binder '^lazy;.*;_dl_fixup(;|$)')
	rooted=$(weight binder '^lazy;_start;.*;main;spawn;_dl_runtime_resolve[a-z_]*;_dl_fixup(;|$)')
	if [ "$through" -gt 0 ] && [ $((rooted * 10)) -ge $((through * 9)) ]; then
		ok "lazy binder under -p: $rooted of $through of the weight through _dl_fixup rooted at main;spawn;_dl_runtime_resolve* (>= 90%)"
	else
		bad "lazy binder under -p: $rooted of $through of the weight through _dl_fixup rooted at main;spawn;_dl_runtime_resolve* (want >= 90%, and some)"
		grep _dl_fixup "$tmp/binder.folded" | sort -t' ' -k2 -nr | head -5 | cut -c1-250
		grep "user stacks" "$tmp/binder.err"
	fi
else
	echo "SKIP: no C compiler: the lazy binder check not run"
fi

# ---- processes that live a few milliseconds ----------------------------------------
# The assembler runs ~4 ms; its libraries (libbfd, libopcodes) are mapped
# by the loader after the exec's snapshot.  Without the loader's hook (a
# uprobe on _dl_debug_state) its first sample in them was cut short: 55%
# of its weight [truncated]; with it, 2.8%, until the lazy binder was
# walked (above).
as_bin=$(command -v as || true)
if [ -n "$as_bin" ] && command -v cc >/dev/null; then
	printf 'int f(int x) { return x * 3 + 1; }\n' >"$tmp/small.c"
	cc -O2 -S "$tmp/small.c" -o "$tmp/small.s"
	rec asloop -F 999 -- bash -c "for i in \$(seq 300); do '$as_bin' '$tmp/small.s' -o '$tmp/small.o'; done"
	as_name=$(basename "$(readlink -f "$as_bin")")
	tr=$(weight asloop "^$as_name;\\[truncated\\];")
	all=$(weight asloop "^$as_name;")
	if [ "$all" -gt 0 ] && [ $((tr * 20)) -le "$all" ]; then
		ok "short-lived processes: $tr of $all of $as_name's weight [truncated] (<= 5%)"
	else
		bad "short-lived processes: $tr of $all of $as_name's weight [truncated] (want <= 5%)"
		grep "^$as_name;" "$tmp/asloop.folded" | sort -t' ' -k2 -nr | head -5 | cut -c1-200
	fi
else
	echo "SKIP: no assembler or C compiler: short-lived process check not run"
fi

# ---- deeper than a stack keeps ------------------------------------------------------
# 200 levels of deep(): the walk keeps the innermost 127 frames (spin and
# 126 deep) and marks the rest [truncated].
rec deep -- "$target" deep 1
if awk '/;spin [0-9]+$/ && /^unwind-target;\[truncated\];/ {
		line = $0; sub(/ [0-9]+$/, "", line); n = split(line, f, ";")
		if (n - 2 >= 127) found = 1 }
	END { exit !found }' "$tmp/deep.folded"; then
	ok "deep: 127 user frames kept under [truncated] when the stack is deeper"
else
	bad "deep: no stack of 127 frames under [truncated]"
	sort -t' ' -k2 -nr "$tmp/deep.folded" | head -2 | cut -c1-200
fi

# ---- bad CFI, and the memory cap ----------------------------------------------------
# A copy of the target with its .eh_frame overwritten: the file is refused
# (counted), the recording goes on, by frame pointers for that file.
cp "$target" "$tmp/broken-target"
read -r off size < <(readelf -SW "$target" |
	awk '{ for (i = 1; i < NF; i++) if ($i == ".eh_frame") print $(i + 3), $(i + 4) }')
off=$((16#$off)) size=$((16#$size))
head -c "$size" /dev/zero | tr '\0' '\377' | dd of="$tmp/broken-target" bs=1 seek="$off" conv=notrunc status=none
if "$collect" unwind-table "$tmp/broken-target" >/dev/null 2>"$tmp/broken.err"; then
	bad "unwind-table: a corrupt .eh_frame was accepted"
elif grep -qE "broken-target: \.eh_frame at offset [0-9]+: " "$tmp/broken.err"; then
	ok "unwind-table: a corrupt .eh_frame is refused with the file and offset: $(cat "$tmp/broken.err")"
else
	bad "unwind-table: unclear refusal: $(cat "$tmp/broken.err")"
fi
rec broken -- env LD_LIBRARY_PATH="$build/tests" "$tmp/broken-target" tree 1 "$tmp/truth-broken"
if grep -qE "unwind tables: .* [1-9][0-9]* refused" "$tmp/broken.err" &&
	[ "$(weight broken '^broken-target;')" -gt 0 ]; then
	ok "a file with corrupt CFI is refused and counted; its samples are still stored"
else
	bad "corrupt CFI: not counted as refused, or nothing stored"
	cat "$tmp/broken.err"
	"$collect" stats --store "$tmp/broken" 2>&1 | head -5
	head -5 "$tmp/broken.folded"
fi
rec cap --unwind-memory 64K -- "$target" tree 1 "$tmp/truth-cap"
if grep -qE "unwind tables: .* [1-9][0-9]* over --unwind-memory" "$tmp/cap.err" &&
	[ "$(weight cap '^unwind-target;')" -gt 0 ]; then
	ok "--unwind-memory 64K: libc's table does not fit, is counted, and the recording goes on"
else
	bad "--unwind-memory 64K: no table counted over the cap"
	cat "$tmp/cap.err"
fi

# ---- few walks cut short ------------------------------------------------------------------
for name in tree-auto signal plt dlopen; do
	tr=$(weight "$name" ';\[truncated\];')
	all=$(weight "$name" '.')
	x=$(excused "$name") # less the walks made without a table
	tr=$((tr > x ? tr - x : 0))
	if [ "$all" -gt 0 ] && [ $((tr * 20)) -le "$all" ]; then
		ok "$name: $tr of $all weight [truncated] (<= 5%)"
	else
		bad "$name: $tr of $all weight [truncated]"
	fi
done

[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# test-quality-names.sh — saying what names are missing (issue #42): a real
# program built with symbols and a stripped copy of it (each with its own
# build id), run under perf record -g and under flamefs-collect record:
#   - the stripped one: `export --format quality` (the view's quality file)
#     and stats --quality list its module with the build id readelf -n
#     gives (perf.data, record, and perf script text while the program is
#     at its path; perf script text imported without it carries none: "-"), its
#     unnamed weight exactly the weight of the folded lines whose leaf is
#     "[spin-stripped]", its share within 0.05 points of that weight's
#     share; import and record end with one line naming the module;
#   - the named one: no row for its module, no such line;
#   - Debian's python3.11 (owned by python3.11-minimal, its release
#     interpreter stripped): recorded running a loop, its row names
#     python3.11-dbg as apt-cache policy says it is here (SKIP without
#     dpkg, apt-cache or the package in the archive).
# Work is counted in loop iterations, so the verdict does not depend on
# the machine's load.
#   usage: test-quality-names.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
build=${1:?usage: test-quality-names.sh BUILD_DIR}
collect=$build/flamefs-collect
e2e_setup quality-names

for t in cc strip readelf perf; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done

cat >"$tmp/spin.c" <<'EOF'
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long inner(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * i ^ (s >> 3);
	return s;
}
__attribute__((noinline)) static void outer(unsigned long n)
{
	for (int k = 0; k < 20; k++)
		sink += inner(n + (unsigned long)k); /* not one call hoisted out */
}
int main(int argc, char **argv)
{
	unsigned long n = strtoul(argv[1], NULL, 10);
	for (int r = 0; r < atoi(argv[2]); r++)
		outer(n);
	return 0;
}
EOF
# -g puts this run's directory and the source's name into the debug info,
# so each build has its own build id: no cache of an earlier run (perf's
# build-id cache, say) can name the stripped copy.
cp "$tmp/spin.c" "$tmp/spin-s.c"
cc -O1 -g -fno-omit-frame-pointer -o "$tmp/spin-named" "$tmp/spin.c" &&
	cc -O1 -g -fno-omit-frame-pointer -o "$tmp/spin-stripped" "$tmp/spin-s.c" &&
	strip "$tmp/spin-stripped" || { bad "cannot build the test program"; exit 1; }
bid() { readelf -n "$1" | awk '/Build ID:/ { print $3 }'; }
bid_stripped=$(bid "$tmp/spin-stripped")
bid_named=$(bid "$tmp/spin-named")
check "the two builds have build ids, not the same" \
	test -n "$bid_stripped" -a -n "$bid_named" -a "$bid_stripped" != "$bid_named"
work="2000000 25" # 10^9 iterations of inner's loop

# unnamed_exact FOLDED LEAF: "W SHARE" of the folded lines whose leaf is LEAF.
unnamed_exact() {
	LEAF=$2 awk '{ w = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); t += w
		if (f[n] == ENVIRON["LEAF"]) u += w }
		END { printf "%.0f %.4f\n", u, t ? 100 * u / t : 0 }' "$1"
}
# quality_row STORE BINARY MODULE: stats --quality's row of MODULE in
# BINARY's series (one): "UNNAMED SHARE% BUILD_ID VERSION".
quality_row() {
	"$collect" stats --store "$1" --quality |
		awk -v b="$2" -v m="$3" 'seen && $1 == b && $7 == m { print $4, $5, $6, $2 } NF == 0 { seen = 1 }'
}
# file_row STORE BINARY VERSION MODULE: the quality file's (export --format
# quality) line of MODULE: "W SHARE% BUILD_ID".
file_row() {
	"$collect" export --store "$1" --binary "$2" --version "$3" --format quality |
		awk -v m="$4" '$1 == "unnamed" && $5 == m { print $2, $3, $4 }'
}
# close_share A B: |A - B| <= 0.05 (percentage points).
close_share() { awk -v a="${1%\%}" -v b="$2" 'BEGIN { d = a - b; exit !(d <= 0.05 && d >= -0.05) }'; }

# check_stripped STORE FROM BUILD_ID: the rows of the stripped program.
check_stripped() {
	local st=$1 from=$2 want_bid=$3 row frow version
	row=$(quality_row "$st" spin-stripped "$tmp/spin-stripped")
	version=$(echo "$row" | cut -d' ' -f4)
	check "$from: stats --quality: one row for the module" test "$(echo "$row" | wc -l)" = 1 -a -n "$version"
	"$collect" export --store "$st" --binary spin-stripped --version "$version" >"$tmp/$from.folded"
	read -r uw us < <(unnamed_exact "$tmp/$from.folded" "[spin-stripped]")
	frow=$(file_row "$st" spin-stripped "$version" "$tmp/spin-stripped")
	echo "  $from: folded $uw ($us%), stats: $row, quality file: $frow"
	check "$from: enough samples of the stripped program unnamed (weight $uw)" test "${uw:-0}" -gt 0
	check "$from: stats --quality: the module's unnamed weight is the folded leaves' exactly" \
		test "$(echo "$row" | cut -d' ' -f1)" = "$uw"
	check "$from: stats --quality: its share within 0.05 of the exact $us%" \
		close_share "$(echo "$row" | cut -d' ' -f2)" "$us"
	check "$from: stats --quality: build id $want_bid" test "$(echo "$row" | cut -d' ' -f3)" = "$want_bid"
	check "$from: the quality file: the same weight, share and build id" \
		test "$frow" = "$(echo "$row" | awk '{ print $1, $2 "%", $3 }')"
	check "$from: the quality file's hint below the rows" \
		grep -q '^# .* of the weight ends in code without function names' \
		<("$collect" export --store "$st" --binary spin-stripped --version "$version" --format quality)
}
endline='without function names, most in '

# ---- perf record -g: perf.data and perf script -----------------------------------------------
for v in stripped named; do
	perf record -q -N -F 999 -g -o "$tmp/$v.data" "$tmp/spin-$v" $work 2>"$tmp/$v.perf.err" ||
		{ bad "perf record failed: $(cat "$tmp/$v.perf.err")"; exit 1; }
	perf script -i "$tmp/$v.data" >"$tmp/$v.txt" 2>/dev/null
	"$collect" import --store "$tmp/pd-$v" "$tmp/$v.data" 2>"$tmp/pd-$v.err"
	check "perf.data of spin-$v imports" test $? = 0
	"$collect" import --store "$tmp/ps-$v" --format perf "$tmp/$v.txt" 2>"$tmp/ps-$v.err"
	check "perf script of spin-$v imports" test $? = 0
done
cat "$tmp/pd-stripped.err"
check_stripped "$tmp/pd-stripped" perf.data "$bid_stripped"
check_stripped "$tmp/ps-stripped" "perf script" "$bid_stripped"
mv "$tmp/spin-stripped" "$tmp/spin-stripped.away"
"$collect" import --store "$tmp/ps-away" --format perf "$tmp/stripped.txt" 2>/dev/null
mv "$tmp/spin-stripped.away" "$tmp/spin-stripped"
check_stripped "$tmp/ps-away" "perf script without the program" -
for f in pd ps; do
	check "$f import of the stripped program ends with one line naming its module" \
		test "$(grep -c "^flamefs-collect: warning: .*% of the cpu-clock weight ends in code $endline$tmp/spin-stripped (" "$tmp/$f-stripped.err")" = 1
	check "$f import of the named program: no such line" \
		test "$(grep -c "without function names" "$tmp/$f-named.err")" = 0
	check "$f import of the named program: no row for its module" \
		test -z "$(quality_row "$tmp/$f-named" spin-named "$tmp/spin-named")" -a \
		-z "$(file_row "$tmp/$f-named" spin-named default "$tmp/spin-named")"
done

# ---- flamefs-collect record ---------------------------------------------------------------------
e2e_need_bpf
for v in stripped named; do
	"$collect" record --store "$tmp/rec-$v" -F 499 -- "$tmp/spin-$v" $work 2>"$tmp/rec-$v.err"
	check "record of spin-$v exits 0" test $? = 0
done
cat "$tmp/rec-stripped.err"
check_stripped "$tmp/rec-stripped" record "$bid_stripped"
check "record of the stripped program: its summary's warning line names the module" \
	test "$(grep -c "^flamefs-collect: warning: .*% of the CPU weight ends in code $endline$tmp/spin-stripped (" "$tmp/rec-stripped.err")" = 1
check "... in a summary of at most two lines" test "$(grep -vc 'recording at' "$tmp/rec-stripped.err")" -le 2
check "record of the named program: no such line" \
	test "$(grep -c "without function names" "$tmp/rec-named.err")" = 0
check "record of the named program: no row for its module" \
	test -z "$(quality_row "$tmp/rec-named" spin-named "$tmp/spin-named")"

# ---- Debian's python3.11 -----------------------------------------------------------------------
py=/usr/bin/python3.11
owner=$(dpkg -S "$py" 2>/dev/null | cut -d: -f1)
state=$(LC_ALL=C apt-cache policy python3.11-dbg 2>/dev/null |
	awk '/Installed:/ { i = $2 } /Candidate:/ { c = $2 } END { print (i != "" && i != "(none)") ? "installed" : (c != "" && c != "(none)") ? "available" : "" }')
if [ ! -x "$py" ] || [ "$owner" != python3.11-minimal ] || [ -z "$state" ]; then
	skip "python3.11: $py owned by '${owner:-nobody}', python3.11-dbg '${state:-not known to apt}': no package hint to check"
elif [ "$state" = installed ]; then
	skip "python3.11-dbg is installed: the interpreter's frames are named, nothing to hint"
else
	printf 'for k in range(%d):\n    sum(i * i for i in range(1000))\n' 20000 >"$tmp/loop.py"
	"$collect" record --store "$tmp/rec-py" -F 499 -- "$py" "$tmp/loop.py" 2>"$tmp/rec-py.err"
	check "record of python3.11 exits 0" test $? = 0
	cat "$tmp/rec-py.err"
	"$collect" stats --store "$tmp/rec-py" --quality | tee "$tmp/py.q"
	check "stats --quality: $py with its build id and python3.11-dbg ($state)" \
		grep -q "^python3.11 .* $(bid "$py") $py python3.11-dbg ($state)\$" "$tmp/py.q"
	# record's line asks apt only when apt answers from a binary cache no
	# older than its package lists (else apt-cache parses every list).
	cache=/var/cache/apt/pkgcache.bin
	current=no
	if [ -f "$cache" ] && [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -newer "$cache" 2>/dev/null)" ]; then
		current=yes
	fi
	if grep -q "of the CPU weight ends in code" "$tmp/rec-py.err"; then
		if [ $current = yes ]; then
			check "record's line names python3.11-dbg (apt's cache is current)" \
				grep -q "$py ([0-9.]*%; install python3.11-dbg)" "$tmp/rec-py.err"
		else
			check "record's line names no package: apt has no current cache, and was not run" \
				grep -q "$py ([0-9.]*%)" "$tmp/rec-py.err"
		fi
	fi
fi
finish

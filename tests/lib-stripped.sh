# lib-stripped.sh — sourced by the tests of names found later (issue #42):
# a program built with -g, its debug part split off with objcopy
# --only-keep-debug, the binary stripped, and one perf recording of it
# (a fixed number of loop iterations, so the verdict does not depend on
# the machine's load).
#
#   stripped_setup   needs $tmp and $collect, and lib.sh's check and bad;
#                    prints SKIP and exits 77 without cc, objcopy, strip,
#                    readelf or a working perf record.  Leaves:
#                    $tmp/prog          the stripped program ($tmp/prog.full:
#                                       with symbols), build id in $bid
#                    $tmp/debug         a .build-id tree of its debug file
#                    $tmp/flat          the same file directly in a directory
#                    $tmp/perf.data     perf record -g of it
#                    $tmp/ref.folded    the folded export of that perf.data
#                                       imported with the unstripped binary in
#                                       place (what symbolize must reach)
#   folded_total FILE
#                    the sum of a folded file's weights

stripped_setup() {
	local t
	for t in cc objcopy strip readelf perf; do
		command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
	done
	cat >"$tmp/prog.c" <<'C'
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) unsigned long leaf_a(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * i ^ (s >> 3);
	return s;
}
__attribute__((noinline)) unsigned long leaf_b(unsigned long n)
{
	unsigned long s = 1;
	for (unsigned long i = 0; i < n; i++)
		s += (i ^ s) * 7 + (s >> 5);
	return s;
}
__attribute__((noinline)) void middle(unsigned long n, int k)
{
	for (int j = 0; j < 10; j++)
		sink += (k & 1) ? leaf_a(n) : leaf_b(n);
}
int main(int argc, char **argv)
{
	unsigned long n = strtoul(argv[1], NULL, 10);
	for (int k = 0; k < atoi(argv[2]); k++)
		middle(n, k);
	return 0;
}
C
	# -g puts this run's directory into the debug info: a build id of its own.
	cc -O0 -g -fno-omit-frame-pointer -o "$tmp/prog.full" "$tmp/prog.c" ||
		{ bad "cannot build the test program"; finish; }
	bid=$(readelf -n "$tmp/prog.full" | awk '/Build ID:/ { print $3 }')
	mkdir -p "$tmp/debug/.build-id/${bid:0:2}" "$tmp/flat"
	objcopy --only-keep-debug "$tmp/prog.full" "$tmp/debug/.build-id/${bid:0:2}/${bid:2}.debug"
	cp "$tmp/debug/.build-id/${bid:0:2}/${bid:2}.debug" "$tmp/flat/prog-symbols"
	strip -o "$tmp/prog" "$tmp/prog.full"
	check "the stripped program keeps its build id and has no symbols" \
		test "$(readelf -n "$tmp/prog" | awk '/Build ID:/ { print $3 }')" = "$bid" -a \
		-z "$(readelf -s "$tmp/prog" | grep -w leaf_a)"
	perf record -q -g -o "$tmp/perf.data" "$tmp/prog" 1000000 40 >/dev/null 2>&1 ||
		{ echo "SKIP: perf record does not work here"; exit 77; }
	# the reference: the same perf.data while the unstripped binary is in place
	cp "$tmp/prog" "$tmp/prog.stripped"
	cp "$tmp/prog.full" "$tmp/prog"
	"$collect" import --store "$tmp/ref" "$tmp/perf.data" 2>/dev/null
	"$collect" export --store "$tmp/ref" --format folded >"$tmp/ref.folded"
	cp "$tmp/prog.stripped" "$tmp/prog"
	check "the reference names leaf_a and leaf_b under middle" \
		grep -q "main;middle;leaf_a " "$tmp/ref.folded"
}

folded_total() { awk '{ s += $NF } END { printf "%.0f\n", s }' "$1"; }

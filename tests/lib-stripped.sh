# lib-stripped.sh — sourced by the tests of names found later (issue #42:
# test-symbolize-later.sh, test-symbolize-fleet.sh, test-record-names-later.sh):
# a small C program built with -g, its debug part split off with objcopy
# --only-keep-debug, and the program stripped.
#
#   stripped_build DIR [CC_FLAG...]
#                        writes DIR/prog.c and builds, with the flags given
#                        (-no-pie, say) after the usual ones:
#                          DIR/prog.full  with symbols and debug info
#                          DIR/prog       the same, stripped (same build id)
#                          DIR/debug/.build-id/xx/rest.debug   its debug file
#                          DIR/flat/prog-symbols               the same file
#                        and sets $bid (the build id, hex).  Fails the test
#                        (bad, finish) when it cannot build.
#   stripped_setup       needs $tmp and $collect, and lib.sh's check and bad;
#                        prints SKIP and exits 77 without cc, objcopy, strip,
#                        readelf or a working perf record.  Runs
#                        stripped_build "$tmp", then leaves:
#                          $tmp/perf.data     perf record -g of the program
#                          $tmp/ref.folded    the folded export of that
#                                             perf.data imported with the
#                                             unstripped binary in place
#                                             (what symbolize must reach)
#   folded_total FILE    the sum of a folded file's weights
#
# The program: prog N K [GATE] runs middle(N, k) for k < K, each calling
# leaf_a (odd k) or leaf_b (even k) ten times, N loop iterations each: its
# work is counted in iterations, not seconds.  With GATE it then writes
# GATE.done, waits (sleeping) until GATE exists, and does the same work again.
stripped_build() {
	local d=$1
	shift
	cat >"$d/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
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
	if (argc > 3) {
		char done[4096];
		snprintf(done, sizeof(done), "%s.done", argv[3]);
		fclose(fopen(done, "w"));
		struct timespec t = {0, 10000000};
		while (access(argv[3], F_OK) != 0)
			nanosleep(&t, NULL);
		for (int k = 0; k < atoi(argv[2]); k++)
			middle(n, k);
	}
	return 0;
}
C
	# -g puts this run's directory into the debug info: a build id of its own.
	cc -O0 -g -fno-omit-frame-pointer "$@" -o "$d/prog.full" "$d/prog.c" ||
		{ bad "cannot build the test program"; finish; }
	bid=$(readelf -n "$d/prog.full" | awk '/Build ID:/ { print $3 }')
	mkdir -p "$d/debug/.build-id/${bid:0:2}" "$d/flat"
	objcopy --only-keep-debug "$d/prog.full" "$d/debug/.build-id/${bid:0:2}/${bid:2}.debug"
	cp "$d/debug/.build-id/${bid:0:2}/${bid:2}.debug" "$d/flat/prog-symbols"
	strip -o "$d/prog" "$d/prog.full"
	check "the stripped program keeps its build id and has no symbols" \
		test "$(readelf -n "$d/prog" | awk '/Build ID:/ { print $3 }')" = "$bid" -a \
		-z "$(readelf -s "$d/prog" | grep -w leaf_a)"
}

stripped_setup() {
	local t
	for t in cc objcopy strip readelf perf; do
		command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
	done
	stripped_build "$tmp"
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

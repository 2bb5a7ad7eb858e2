# lib-stripped.sh — sourced by the tests of names found later (issue #42:
# test-symbolize-later.sh, test-symbolize-fleet.sh, test-record-names-later.sh,
# test-record-db.sh):
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
#                          DIR/names      the program's functions, one a line
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
#   wait_for WHAT CMD... runs CMD every 0.1 s until it succeeds; fails the
#                        test (bad "timed out waiting for WHAT", finish) after
#                        1200 tries: a bound for a machine stalled, not a
#                        measure
#   committed            the drains committed so far in $tmp/drains (record
#                        --log-drains); drains_past N: at least N
#   prog_stacks FOLDED   each stack of the program's process (binary "prog")
#                        with at least three of its frames (its work, not the
#                        wait at the gate), every function of the program
#                        ($tmp/names) as "[prog]" and the rest left out, with
#                        its summed weight, sorted: the same whether the
#                        frames are named or not
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
	nm "$d/prog.full" | awk '$2 ~ /^[Tt]$/ { print $3 }' >"$d/names"
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
	for t in cc objcopy strip readelf nm perf; do
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

wait_for() {
	local what=$1 i
	shift
	for i in $(seq 1200); do
		"$@" && return 0
		sleep 0.1
	done
	bad "timed out waiting for $what"
	finish
}

committed() { cat "$tmp/drains" 2>/dev/null | grep -c ' committed '; }
drains_past() { test "$(committed)" -ge "$1"; }

prog_stacks() {
	awk -v names="$tmp/names" '
		BEGIN { while ((getline n < names) > 0) own[n] = 1 }
		$1 ~ /^prog;/ {
			w = $NF; $NF = ""; sub(/ $/, "")
			k = split($0, f, ";"); s = ""; c = 0
			for (i = 2; i <= k; i++)
				if (f[i] in own || f[i] == "[prog]") { s = s "[prog];"; c++ }
			if (c >= 3) sum[s] += w
		}
		END { for (s in sum) print s, sum[s] }' "$1" | sort
}

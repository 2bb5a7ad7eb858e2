# lib.sh — what the test scripts share, sourced by each (lib-e2e.sh and
# lib-install.sh source it for theirs; tests/bench/lib.sh for the
# benchmarks): one way to report a check, and the arithmetic of folded
# stacks.  See tests/README.md.
#
#   ok DESCRIPTION          prints "ok   - DESCRIPTION"
#   bad DESCRIPTION         prints "FAIL - DESCRIPTION" and counts it in $failures
#   check DESCRIPTION CMD…  ok or bad by the exit status of CMD…
#   skip DESCRIPTION        prints "SKIP - DESCRIPTION" and counts it in $skips
#                           (a part of a test that cannot run here; a whole
#                           test that cannot run prints "SKIP: why" and exits 77)
#   finish                  exits 1 if any check failed, else 0
#   stack_weight FILE RE [NOT]  the weight (last field) of the folded stacks in
#                           FILE (- for stdin) whose stack matches the awk
#                           regular expression RE and not NOT (taken as they
#                           are: no escapes processed), as an integer
#   folded_sum FILE…        the folded FILEs' stacks with their weights summed
#                           per stack, one line each, sorted (compare two
#                           stores' exports with it)
#   median                  the median of the numbers on stdin, one a line
#                           (the lower middle one of an even count)
#   chrome ARGS…            headless Chromium with ARGS (--screenshot=PNG URL…),
#                           its profile in $tmp/chrome, at most 120 s; a
#                           picture's colours: tests/png-colour.py
#
# Weights are summed as awk numbers, exact below 2^53.
export LC_ALL=C
failures=${failures:-0}
skips=${skips:-0}

ok() { echo "ok   - $*"; }
bad() {
	echo "FAIL - $*"
	failures=$((failures + 1))
}
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
skip() {
	echo "SKIP - $*"
	skips=$((skips + 1))
}
finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}

stack_weight() {
	RE=$2 NOT=${3:-} awk '{ w = $NF; sub(/ [0-9]+$/, "")
		if ($0 ~ ENVIRON["RE"] && (ENVIRON["NOT"] == "" || $0 !~ ENVIRON["NOT"])) s += w }
		END { printf "%.0f\n", s }' "$1"
}

folded_sum() {
	cat "$@" | awk 'NF { n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n } END { for (k in s) printf "%s %.0f\n", k, s[k] }' |
		sort
}

median() {
	sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

chrome() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$tmp/chrome" "$@" 2>/dev/null
}

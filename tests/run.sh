#!/usr/bin/env bash
# The whole test suite: install dependencies, then build and test three
# ways, and end with one line "N passed, N failed, N skipped" over all:
#   1. build-ci    gcc, -Werror: every test;
#   2. build-asan  gcc with AddressSanitizer and UndefinedBehaviorSanitizer
#                  (any finding, leaks included, fails the test): every test
#                  that runs our programs (not suite 'once')
#                  (the crash test with 6 kills of each writer, not 50: the
#                  kill moments are checked in stage 1, this stage looks for
#                  memory errors on the paths a kill leaves; bad-input
#                  checks a refused import's store by its series table,
#                  not also by four exports of it, which stage 1 compares);
#   3. build-fuzz  clang with libFuzzer: each fuzz target for
#                  $FLAMEFS_FUZZ_SECONDS (default 20 here, 60 in meson test)
#                  on a copy of its corpus (longer runs: tests/fuzz/run.sh).
# Stages 1 and 2 run one test at a time: most tests are forks and execs,
# which did not run two at a time on the 2-core CI machine (a guest whose
# page tables the host keeps: two loops of 300 /bin/true at once took 2.5
# times as long as one, not the same time), and several measure or race
# on purpose (those are marked is_parallel : false for `meson test -j` on
# a bigger machine).  The fuzzers, one process each and CPU-bound, run one
# per core.
#   usage: bash tests/run.sh         (as root, or as a user with sudo)
# FLAMEFS_STAGES="ci asan fuzz" picks stages (all three by default).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# Root is needed (packages, BPF, perf -a, FUSE as root).  Root runs this
# as it is (a fresh Debian has no sudo); anyone else is taken through sudo,
# keeping the FLAMEFS_* variables.
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "$(basename "$0"): needs root: run it as root, or install sudo" >&2
		exit 1
	fi
	keep=$(compgen -e | grep '^FLAMEFS_' | paste -sd, -) || true
	exec sudo ${keep:+--preserve-env="$keep"} bash "$top/tests/run.sh" "$@"
fi
cd "$top"
bash contrib/install-deps.sh
# The tests start python3 hundreds of times (the crash test alone ~200);
# through pyenv's shim, a bash script that runs several more, a start
# took 0.39 s instead of 0.03 (quiet 2-core machine), and several times
# that under the tests' own load.  They use Debian's
# python3 (install-deps.sh installs it; they need only its standard
# library): pyenv's shims are left out of PATH.
PATH=$(tr ':' '\n' <<<"$PATH" | grep -v '/\.pyenv/shims/*$' | paste -sd: -)
export PATH

# One initdb for the whole run: every PostgreSQL test's cluster is a copy
# of the one made in $FLAMEFS_PG_TEMPLATE (tests/lib-pg.sh), removed at
# the end (one given from outside is kept).
if [ -z "${FLAMEFS_PG_TEMPLATE:-}" ]; then
	FLAMEFS_PG_TEMPLATE=$(mktemp -d "${TMPDIR:-/tmp}/flamefs-pg-template.XXXXXX")
	# shellcheck disable=SC2064 # the directory, now
	trap "rm -rf '$FLAMEFS_PG_TEMPLATE'" EXIT
fi
export FLAMEFS_PG_TEMPLATE

stages=${FLAMEFS_STAGES:-ci asan fuzz}
passed=0 failed=0 skipped=0

# setup DIR ARGS...: configures (or reconfigures) a build directory.
setup() {
	local dir=$1
	shift
	if [ -d "$dir/meson-private" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

# run_tests STAGE DIR JOBS [MESON TEST ARGS...]: runs the tests, JOBS at a
# time, and adds their counts to the totals; a build or runner failure
# counts as one failure.
run_tests() {
	local stage=$1 dir=$2 jobs=$3
	shift 3
	echo "==== stage $stage ($dir) ===="
	set +e
	meson test -C "$dir" --print-errorlogs --num-processes "$jobs" --timeout-multiplier 3 "$@" 2>&1 |
		tee "$dir/test-output.txt"
	local status=${PIPESTATUS[0]}
	set -e
	local summary ok fail skip tmo up
	summary=$(grep -E '^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass): ' "$dir/test-output.txt" || true)
	num() { echo "$summary" | awk -v k="$1" -F': *' '$1 == k { print $2 }' | tr -d ' '; }
	ok=$(num Ok) fail=$(num Fail) skip=$(num Skipped) tmo=$(num Timeout) up=$(num 'Unexpected Pass')
	ok=${ok:-0} fail=$((${fail:-0} + ${tmo:-0} + ${up:-0})) skip=${skip:-0}
	[ "$status" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
	echo "stage $stage: $ok passed, $fail failed, $skip skipped"
	passed=$((passed + ok)) failed=$((failed + fail)) skipped=$((skipped + skip))
}

# build STAGE DIR: builds, or counts one failure for the stage.
build() {
	if ! ninja -C "$2"; then
		echo "stage $1: build failed"
		failed=$((failed + 1))
		return 1
	fi
}

for stage in $stages; do
	case $stage in
	ci)
		dir=${FLAMEFS_BUILD:-build-ci}
		setup "$dir" -Dwerror=true
		build ci "$dir" && run_tests ci "$dir" 1
		;;
	asan)
		dir=build-asan
		setup "$dir" -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false
		build asan "$dir" &&
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0 \
				UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
				LSAN_OPTIONS=suppressions=$top/tests/lsan.supp:print_suppressions=0 \
				FLAMEFS_CRASH_RUNS=${FLAMEFS_ASAN_CRASH_RUNS:-6} FLAMEFS_BAD_INPUT_EXPORTS=0 \
				run_tests asan "$dir" 1 --no-suite fuzz --no-suite once
		;;
	fuzz)
		dir=build-fuzz
		CC=clang setup "$dir" -Dwerror=true -Dfuzz=true
		build fuzz "$dir" &&
			FLAMEFS_FUZZ_SECONDS=${FLAMEFS_FUZZ_SECONDS:-20} run_tests fuzz "$dir" "$(nproc)" --suite fuzz
		;;
	*)
		echo "unknown stage '$stage' (stages: ci asan fuzz)"
		failed=$((failed + 1))
		;;
	esac
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

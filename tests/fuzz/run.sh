#!/usr/bin/env bash
# run.sh — fuzz every target (or the ones named) for SECONDS each (default
# 600), one after the other at nice 10, on copies of the seed corpora.
# Builds build-fuzz (CC=clang, -Dfuzz=true) first if needed.  Any crash
# fails the run and prints the input; see README.md for what to do then.
#   usage: tests/fuzz/run.sh [SECONDS] [perf|folded|pprof|escape|pycode ...]
#   env:   FLAMEFS_FUZZ_BUILD (default: build-fuzz in the source tree)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
seconds=${1:-600}
[ $# -gt 0 ] && shift
case $seconds in
'' | *[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(perf folded pprof escape pycode)
build=${FLAMEFS_FUZZ_BUILD:-$top/build-fuzz}

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$top" -Dfuzz=true || exit 1
elif ! meson introspect --buildoptions "$build" | grep -q '"name": "fuzz", "value": true'; then
	meson configure "$build" -Dfuzz=true || exit 1 # fails unless it was set up with clang
fi
ninja -C "$build" || exit 1

failed=()
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/fuzz-$t
	if [ ! -x "$bin" ]; then
		echo "no fuzz target $t in $build (targets: perf folded pprof escape)" >&2
		exit 2
	fi
	FLAMEFS_FUZZ_SECONDS=$seconds nice -n 10 bash "$here/run-target.sh" "$bin" "$t" "$here" ||
		failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAIL: ${failed[*]}"
	exit 1
fi
echo "PASS: ${targets[*]}: no crash in ${seconds}s each"

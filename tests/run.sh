#!/usr/bin/env bash
# The whole test suite: install dependencies, build with -Werror, run every
# test, and end with one line "N passed, N failed, N skipped".
#   usage: sudo bash tests/run.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash contrib/install-deps.sh
build=${FLAMEFS_BUILD:-build-ci}
if [ -d "$build" ]; then
	meson setup --reconfigure "$build" -Dwerror=true >/dev/null
else
	meson setup "$build" -Dwerror=true >/dev/null
fi
ninja -C "$build"
set +e
meson test -C "$build" --print-errorlogs --num-processes 1 --timeout-multiplier 3 2>&1 | tee "$build/test-output.txt"
status=${PIPESTATUS[0]}
set -e
summary=$(grep -E '^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass): ' "$build/test-output.txt" || true)
num() { echo "$summary" | awk -v k="$1" -F': *' '$1 == k { print $2 }' | tr -d ' ' ; }
ok=$(num Ok); fail=$(num Fail); skip=$(num Skipped); tmo=$(num Timeout); up=$(num 'Unexpected Pass')
ok=${ok:-0}; fail=$(( ${fail:-0} + ${tmo:-0} + ${up:-0} )); skip=${skip:-0}
[ "$status" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
echo "$ok passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# run-target.sh — runs one libFuzzer target for $FLAMEFS_FUZZ_SECONDS
# (default 60) on a copy of its seed corpus and regression inputs, in a
# temporary directory that is removed afterwards, so the committed corpus
# never grows.  Any crash, leak, sanitizer report or timeout fails the
# test, and the input that caused it is printed (base64) so a CI log is
# enough to reproduce it.
#   usage: run-target.sh TARGET_BINARY NAME SOURCE_DIR
set -u
bin=${1:?usage: $0 TARGET_BINARY NAME SOURCE_DIR}
name=${2:?}
src=${3:?}
seconds=${FLAMEFS_FUZZ_SECONDS:-60}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/tmp" "$work/artifacts"
for d in "$src/corpus/$name" "$src/regressions/$name"; do
	[ -d "$d" ] && find "$d" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$work/corpus/" \;
done
dict=()
[ -f "$src/$name.dict" ] && dict=(-dict="$src/$name.dict")

echo "fuzzing $name for ${seconds}s on $(ls "$work/corpus" | wc -l) seed inputs"
TMPDIR=$work/tmp timeout -k 30 $((seconds + 300)) "$bin" \
	-max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -max_len=262144 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dict[@]}" \
	"$work/corpus" >"$work/log" 2>&1
rc=$?
grep -E '^#[0-9]+.*(INITED|DONE)|^stat::|^Done' "$work/log"
if [ "$rc" -ne 0 ]; then
	tail -n 60 "$work/log"
	for f in "$work/artifacts"/*; do
		[ -f "$f" ] || continue
		echo "FAIL: $name: $(basename "$f") ($(stat -c %s "$f") bytes), gzip then base64 (base64 -d | gunzip):"
		gzip -9c "$f" | base64 -w 76 | head -n 4000
	done
	echo "FAIL: $name exited with $rc; put the input in tests/fuzz/regressions/$name/ and fix"
	exit 1
fi
echo "PASS: $name: no crash in ${seconds}s"

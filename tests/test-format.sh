#!/usr/bin/env bash
# Checks that every C source and header in the repository is formatted as
# .clang-format says.  Skips (77) where clang-format is not installed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if ! command -v clang-format >/dev/null; then
	echo "SKIP: clang-format not installed"
	exit 77
fi
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build*')
if clang-format --dry-run --Werror $files; then
	echo "PASS: $(echo "$files" | wc -w) files formatted"
	exit 0
fi
echo "FAIL: run clang-format -i on the files above"
exit 1

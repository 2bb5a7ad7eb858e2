# lib-import.sh — sourced by the importer golden tests (test-import-*.sh).
# Takes the build directory as the script's $1, finds flamefs-collect in it,
# makes a temporary directory ($tmp, removed on exit), and offers a count
# of checks ($n), same, and the bad-input loop; the reporters (ok, bad,
# check, $failures) are lib.sh's.
set -u
build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=$build/flamefs-collect
[ -x "$collect" ] || collect=$build/collector/flamefs-collect
[ -x "$collect" ] || { echo "flamefs-collect not found in $build; build it first"; exit 1; }
. "$here/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0

# same FILE EXPECTED WHAT: compares, showing a diff on failure.
same() {
	if ! cmp -s "$1" "$2"; then
		bad "$3"
		diff -u "$2" "$1" | head -40
	fi
}

# bad_inputs FORMAT GOOD GOOD_EXPECTED FIXTURE...: each fixture must fail to
# import with a "FIXTURE:LINE:" message, leave a store holding GOOD exactly
# as it was (GOOD_EXPECTED is its folded export), and leave an empty store
# empty.
bad_inputs() {
	local format=$1 good=$2 expected=$3 fixture file base out
	shift 3
	for fixture in "$@"; do
		file=$(basename "$fixture")
		base=${file%.*}
		n=$((n + 1))
		rm -rf "$tmp/store"
		"$collect" import --store "$tmp/store" --format "$format" "$good" >/dev/null 2>&1 ||
			{ bad "$base: good import failed"; continue; }
		if "$collect" import --store "$tmp/store" --format "$format" "$fixture" >"$tmp/bad.out" 2>&1; then
			bad "$base: import succeeded on bad input"
			continue
		fi
		grep -q "$file:[0-9][0-9]*:" "$tmp/bad.out" ||
			{ bad "$base: message lacks FILE:LINE:"; cat "$tmp/bad.out"; }
		"$collect" export --store "$tmp/store" --format folded >"$tmp/bad.got" 2>&1
		same "$tmp/bad.got" "$expected" "$base: store changed by a failed import"
		rm -rf "$tmp/store2"
		"$collect" import --store "$tmp/store2" --format "$format" "$fixture" >/dev/null 2>&1
		out=$("$collect" export --store "$tmp/store2" --format folded 2>/dev/null)
		[ -z "$out" ] || bad "$base: a failed import left stacks in an empty store"
	done
}

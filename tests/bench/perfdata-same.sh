#!/usr/bin/env bash
# perfdata-same.sh — whether two builds of flamefs-collect store the same
# thing for each perf.data given: each file is imported into a fresh store
# by each build, and the import's output (the time it took left out) and
# the folded, pprof (decompressed) and callgrind exports must be byte for
# byte the same.  Prints one line per file and a count; exits 1 when any
# differs.  For a change to the importer that must not change what it
# stores (a cache).
#   usage: perfdata-same.sh OLD/flamefs-collect NEW/flamefs-collect FILE...
#   env:   IMPORT_OPTS="..." (options for both imports, e.g. --keep-samples 0)
set -u
old=${1:?usage: $0 OLD NEW FILE...}
new=${2:?usage: $0 OLD NEW FILE...}
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
same=0 differ=0
# run BUILD TAG FILE: imports FILE with BUILD into a fresh store, the
# import's output and the exports into $work/TAG.*
run() {
	rm -rf "$work/s"
	# shellcheck disable=SC2086
	"$1" import --store "$work/s" ${IMPORT_OPTS:-} "$3" 2>&1 |
		sed -E 's/ in [0-9.]+ m?s\b/ in T/g; s/[0-9.]+ ?(MB|kB|B)\/s/R/g' >"$work/$2.out"
	echo "rc ${PIPESTATUS[0]}" >>"$work/$2.out"
	"$1" export --store "$work/s" >"$work/$2.folded" 2>&1
	"$1" export --store "$work/s" --format pprof 2>&1 | gzip -dc >"$work/$2.pprof" 2>/dev/null
	"$1" export --store "$work/s" --format callgrind >"$work/$2.cg" 2>&1
}
for f in "$@"; do
	run "$old" a "$f"
	run "$new" b "$f"
	bad=
	for x in out folded pprof cg; do
		cmp -s "$work/a.$x" "$work/b.$x" || bad="$bad $x"
	done
	if [ -z "$bad" ]; then
		same=$((same + 1))
		echo "same: $f ($(wc -l <"$work/a.folded") stacks)"
	else
		differ=$((differ + 1))
		echo "DIFFERS ($bad ): $f"
		diff "$work/a.out" "$work/b.out" | head -5
		diff "$work/a.folded" "$work/b.folded" | head -5
	fi
done
echo "$same same, $differ differ"
[ "$differ" -eq 0 ]

#!/usr/bin/env bash
# test-import-folded.sh — golden tests for the folded-stack importer.
#
# Each tests/data/folded/*.folded fixture is imported into a fresh store
# and exported as folded text; the result must equal the committed
# *.folded.expected, which must in turn equal what a small independent
# reference (the perl function below: count after the last space, sum
# equal stacks, drop zero counts, sort bytewise) prints.  Also: --binary
# keeps the first frame as a stack frame, the perf fixtures' expected
# outputs survive a folded round trip, and bad lines fail with FILE:LINE:
# and leave the store untouched.
#   usage: test-import-folded.sh BUILD_DIR        exit 0 pass, 1 fail
. "$(dirname "$0")/lib-import.sh"
data=$here/data/folded
command -v perl >/dev/null || { echo "SKIP: perl not installed"; exit 77; }

# ref [PREFIX] < folded: the reference merge.
ref() {
	perl -e '
		my $prefix = shift // "";
		my %sum;
		while (my $l = <STDIN>) {
			$l =~ s/\s+\z//;
			next if $l eq "" || $l =~ /^#/;
			$l =~ /^(.+) (\d+)$/ or die "bad line: $l\n";
			$sum{"$prefix$1"} += $2;
		}
		for (sort keys %sum) { print "$_ $sum{$_}\n" if $sum{$_} }
	' "$@"
}

# import_export NAME FILE [IMPORT OPTIONS...]
import_export() {
	local name=$1 file=$2
	shift 2
	rm -rf "$tmp/store"
	if ! "$collect" import --store "$tmp/store" --format folded "$@" "$file" \
		>"$tmp/import.out" 2>&1; then
		bad "$name: import failed"
		cat "$tmp/import.out"
		return 1
	fi
	"$collect" export --store "$tmp/store" --format folded >"$tmp/$name.got" 2>&1 ||
		{ bad "$name: export failed"; cat "$tmp/$name.got"; return 1; }
}

for fixture in "$data"/*.folded; do
	base=$(basename "$fixture" .folded)
	case $base in bad-*) continue ;; esac
	n=$((n + 1))
	expected=$data/$base.folded.expected
	ref <"$fixture" >"$tmp/$base.ref"
	[ -f "$expected" ] || { bad "$base: missing $expected"; continue; }
	same "$tmp/$base.ref" "$expected" "$base: reference differs from committed expected"
	import_export "$base" "$fixture" && same "$tmp/$base.got" "$expected" "$base: export differs"
done

# --binary: every frame stays a frame, under the given binary.
n=$((n + 1))
ref "mybin;" <"$data/basic.folded" >"$tmp/binary.ref"
import_export binary "$data/basic.folded" --binary mybin &&
	same "$tmp/binary.got" "$tmp/binary.ref" "--binary mybin"

# Round trip: perf expected outputs imported as folded export unchanged.
for expected in "$here"/data/perf/*.folded.expected; do
	n=$((n + 1))
	base=$(basename "$expected" .folded.expected)
	import_export "rt-$base" "$expected" && same "$tmp/rt-$base.got" "$expected" "round trip of perf/$base"
done

# flamefs's \xNN escapes (escaped.folded above round-trips them): only
# those that stand for a byte flamefs escapes are decoded, in either case;
# any other backslash is a byte of the name (and exported escaped).
n=$((n + 1))
printf '%s\n' 'app;C:\x86\dir;A\x3Bb;z\x00 5' >"$tmp/foreign.folded"
printf '%s\n' 'app;C:\x5cx86\x5cdir;A\x3bb;z\x5cx00 5' >"$tmp/foreign.ref"
import_export foreign "$tmp/foreign.folded" &&
	same "$tmp/foreign.got" "$tmp/foreign.ref" "only flamefs's escapes are decoded"

# Auto-detection picks the folded importer.
n=$((n + 1))
rm -rf "$tmp/store"
if "$collect" import --store "$tmp/store" "$data/basic.folded" >/dev/null 2>&1; then
	"$collect" export --store "$tmp/store" --format folded >"$tmp/auto.got" 2>&1
	same "$tmp/auto.got" "$data/basic.folded.expected" "auto-detected folded import"
else
	bad "auto-detected folded import failed"
fi

# Bad lines.
bad_inputs folded "$data/basic.folded" "$data/basic.folded.expected" "$data"/bad-*.folded

echo "$n folded import checks, $failures failed"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# test-merge.sh — `flamefs-collect merge` between directories (store_copy
# into the embedded store, which adds what it takes).
#
# Checks, with the committed folded and perf script fixtures imported at
# several times (so that stores hold several time buckets):
#   - merging two stores into a new one gives, for every binary and for
#     every time window, the line-wise sum of the two sources' exports;
#   - a store merged again unchanged is "nothing new" and changes nothing;
#     one that changed since is refused, with a message, and the
#     destination is left as it was;
#   - a directory takes a source in one transaction, --buckets-per-commit
#     or not; a store is not merged into itself; a missing source
#     is named; push refuses a directory as its destination;
#   - the merged store keeps the sources' frames by content: merging the
#     same store into two destinations and those into a third equals
#     merging twice the data (no id confusion across stores).
#   usage: test-merge.sh BUILD_DIR        exit 0 pass, 1 fail
. "$(dirname "$0")/lib-import.sh"
data=$here/data

# folded_sum FILE...: the line-wise sum of folded files, sorted.
folded_sum() {
	cat "$@" | awk '{ n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n } END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort
}

# exp STORE [EXPORT OPTIONS...]: the store's folded export, sorted.
exp() {
	local st=$1
	shift
	"$collect" export --store "$st" "$@" 2>/dev/null | sort
}


t0=1700000000
imp() { # STORE TIME FILE [OPTIONS]
	"$collect" import --store "$1" --time "$2" "${@:4}" "$3" >/dev/null 2>"$tmp/imp.err" ||
		{ bad "import $3 into $1"; cat "$tmp/imp.err"; }
}
imp "$tmp/a" $t0 "$data/folded/basic.folded"
imp "$tmp/a" $((t0 + 120)) "$data/folded/comments.folded"
imp "$tmp/b" $((t0 + 60)) "$data/folded/basic.folded"
imp "$tmp/b" $((t0 + 600)) "$data/folded/basic.folded" --binary other

out=$("$collect" merge --store "$tmp/c" "$tmp/a" "$tmp/b" 2>&1)
check "merge a b into a new store" [ $? = 0 ]
grep -q "merged .*/a -> .*/c: [1-9][0-9]* buckets of [1-9][0-9]* series" <<<"$out" || bad "merge a report: $out"
exp "$tmp/a" >"$tmp/a.txt"
exp "$tmp/b" >"$tmp/b.txt"
folded_sum "$tmp/a.txt" "$tmp/b.txt" >"$tmp/ab.txt"
exp "$tmp/c" >"$tmp/c.txt"
same "$tmp/c.txt" "$tmp/ab.txt" "merged export = sum of the sources"
for bin in app other; do
	for w in "--from $t0 --to $((t0 + 59))" "--from $((t0 + 60)) --to $((t0 + 179))" "--from $((t0 + 600))"; do
		# shellcheck disable=SC2086
		{ exp "$tmp/a" --binary $bin $w; exp "$tmp/b" --binary $bin $w; } | grep -v '^$' >"$tmp/w.src"
		folded_sum "$tmp/w.src" >"$tmp/w.want"
		# shellcheck disable=SC2086
		exp "$tmp/c" --binary $bin $w | grep -v '^$' >"$tmp/w.got"
		n=$((n + 1))
		same "$tmp/w.got" "$tmp/w.want" "window $w of $bin"
	done
done
"$collect" stats --store "$tmp/c" >"$tmp/c.stats" 2>&1

# Again, unchanged: nothing new, nothing changes.
out=$("$collect" merge --store "$tmp/c" "$tmp/a" 2>&1)
check "merge unchanged again succeeds" [ $? = 0 ]
grep -q "nothing new" <<<"$out" || bad "unchanged source not reported as nothing new: $out"
exp "$tmp/c" >"$tmp/c2.txt"
same "$tmp/c2.txt" "$tmp/c.txt" "merging an unchanged store again changed the destination"

# Changed since: refused, destination untouched.
imp "$tmp/a" $((t0 + 180)) "$data/folded/basic.folded"
if "$collect" merge --store "$tmp/c" "$tmp/a" >"$tmp/err" 2>&1; then
	bad "merging a changed store into a directory again was accepted"
fi
grep -q "has changed since" "$tmp/err" || { bad "refusal message"; cat "$tmp/err"; }
exp "$tmp/c" >"$tmp/c3.txt"
same "$tmp/c3.txt" "$tmp/c.txt" "a refused merge changed the destination"

# --buckets-per-commit is for databases: a directory adds, so it takes a
# source in one transaction (a second after an interruption would add the
# first again).
out=$("$collect" merge --store "$tmp/d" --buckets-per-commit 1 "$tmp/b" 2>&1)
nb=$(sed -n 's/.*: \([0-9]*\) buckets of .*/\1/p' <<<"$out")
[ "${nb:-0}" -ge 2 ] && grep -q "in 1 transaction$" <<<"$out" || bad "--buckets-per-commit 1 into a directory: $out"
exp "$tmp/d" >"$tmp/d.txt"
same "$tmp/d.txt" "$tmp/b.txt" "merge with --buckets-per-commit = the source"

# By content, across stores whose ids differ: a and b merged separately
# into e and f, then e and f into g, equals c.
"$collect" merge --store "$tmp/e" "$tmp/b" >/dev/null 2>&1 || bad "merge b into e"
"$collect" merge --store "$tmp/f" "$tmp/c" >/dev/null 2>&1 || bad "merge c into f"
"$collect" merge --store "$tmp/g" "$tmp/e" "$tmp/f" >/dev/null 2>&1 || bad "merge e f into g"
folded_sum "$tmp/b.txt" "$tmp/c.txt" >"$tmp/g.want"
exp "$tmp/g" >"$tmp/g.txt"
same "$tmp/g.txt" "$tmp/g.want" "chained merges by content"

# Both tiers: merge brings each sample's moment too, unless --no-samples.
python3 - >"$tmp/timed.perf" <<'PY'
for k in range(200):
    print("prog  10/%d  [000]  %.6f:    1000000 cpu-clock: \n\t  1168 f (/tmp/prog)\n\t  1227 main (/tmp/prog)\n" % (10 + k % 3, 100 + k * 0.25))
PY
"$collect" import --store "$tmp/timed" --keep-samples 1d "$tmp/timed.perf" >/dev/null 2>&1 || bad "import timed.perf"
"$collect" samples --store "$tmp/timed" --folded >"$tmp/timed.samples" 2>&1 || bad "samples of the source"
"$collect" merge --store "$tmp/both" "$tmp/timed" >/dev/null 2>&1 || bad "merge both tiers"
"$collect" merge --store "$tmp/counts" --no-samples "$tmp/timed" >/dev/null 2>&1 || bad "merge --no-samples"
check "merge brings every sample's moment, thread and weight (200 lines, as the source's)" \
	test "$(wc -l <"$tmp/timed.samples")" = 200 -a \
	"$("$collect" samples --store "$tmp/both" --folded 2>&1)" = "$(cat "$tmp/timed.samples")"
check "merge --no-samples brings the counts only" \
	test -z "$("$collect" samples --store "$tmp/counts" --folded 2>/dev/null)" -a \
	"$(exp "$tmp/counts")" = "$(exp "$tmp/timed")"

# Refusals.
"$collect" merge --store "$tmp/a" "$tmp/a" >"$tmp/err" 2>&1 && bad "a store merged into itself"
grep -q "are the same store" "$tmp/err" || { bad "self-merge message"; cat "$tmp/err"; }
"$collect" merge --store "$tmp/c" "$tmp/nonesuch" >"$tmp/err" 2>&1 && bad "missing source accepted"
grep -q "nonesuch" "$tmp/err" || { bad "missing source not named"; cat "$tmp/err"; }
"$collect" push --store "$tmp/a" --to "$tmp/c" >"$tmp/err" 2>&1 && bad "push into a directory accepted"
grep -q "expected a database" "$tmp/err" || { bad "push --to DIR message"; cat "$tmp/err"; }
"$collect" merge --store "$tmp/c" >"$tmp/err" 2>&1
check "merge without a source is a usage error (2)" [ $? = 2 ]
"$collect" push --store "$tmp/a" >"$tmp/err" 2>&1
check "push without --to is a usage error (2)" [ $? = 2 ]

echo "$n checks, $failures failed"
[ "$failures" = 0 ]

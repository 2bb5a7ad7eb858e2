#!/usr/bin/env bash
# test-record-names-later.sh — record names frames later by itself (issue
# #42): a stripped program built by the test (lib-stripped.sh), recorded with
# --debug-dir pointing at an empty directory, so its frames are stored
# unnamed ("[prog]"); then:
#   - once its first half of work is stored (the program waits at a gate),
#     its debug file is moved into the --debug-dir while the recording goes
#     on: the recorder names the frames by itself (-v says so) before the
#     program goes on, and the folded export, taken while the recording still
#     runs, has main;middle;leaf_a and leaf_b with the same weights as before
#     (each stack of the program's frames, read with every function of the
#     program as "[prog]");
#   - the second half of its work, sampled after the names were found, goes
#     under the same stacks and frames: no stack twice in the export, every
#     frame of the program named, and none named a second time (-v);
#   - a debug file put directly into the --debug-dir (no .build-id tree) just
#     before the program ends is used by the pass at the end of the recording.
# Work is counted in loop iterations and every wait is for an event (a file,
# a line), so the verdict does not depend on the machine's load.
#   usage: test-record-names-later.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
. "$(dirname "$0")/lib-stripped.sh"
build=${1:?usage: test-record-names-later.sh BUILD_DIR}
collect=$build/flamefs-collect
e2e_setup record-names-later

for t in cc objcopy strip readelf nm; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
e2e_need_bpf
rpid=
e2e_on_exit() {
	# the program too: waiting at its gate it would outlive the test
	# shellcheck disable=SC2046 # a list of pids
	[ -n "$rpid" ] && kill $(cat /proc/"$rpid"/task/*/children 2>/dev/null) "$rpid" 2>/dev/null
}

stripped_build "$tmp"
debug_file=$tmp/debug/.build-id/${bid:0:2}/${bid:2}.debug

mkdir -p "$tmp/dd"
"$collect" record --store "$store" -v --debug-dir "$tmp/dd" -F 499 --user-only \
	--log-drains "$tmp/drains" -- "$tmp/prog" 3000000 20 "$tmp/gate" 2>"$tmp/rec.err" &
rpid=$!
wait_for "the first half of the work" test -e "$tmp/gate.done"
# every sample of the first half committed: two drains after it ended
n0=$(committed)
wait_for "two drains" drains_past $((n0 + 2))
"$collect" export --store "$store" --format folded >"$tmp/before.folded"
check "stored while stripped: the program's frames are [prog]" \
	grep -q '^prog;\[prog\];.*\[prog\];\[prog\];\[prog\] ' "$tmp/before.folded"
check "... and none of its functions is named" \
	test -z "$(grep -E ';(leaf_a|leaf_b|middle|main)( |;)' "$tmp/before.folded")"
check "... nothing named yet" test -z "$(grep 'named later' "$tmp/rec.err")"

mkdir -p "$tmp/dd/.build-id/${bid:0:2}"
mv "$debug_file" "$tmp/dd/.build-id/${bid:0:2}/"
wait_for "the recorder to name the frames" grep -q "named later .* of $tmp/prog, from" "$tmp/rec.err"
check "-v says it named every frame of the program, from the --debug-dir ($(grep -m1 'named later' "$tmp/rec.err"))" \
	grep -qE "named later ([0-9]+) of \\1 frames of $tmp/prog, from $tmp/dd/.build-id/" "$tmp/rec.err"
"$collect" export --store "$store" --format folded >"$tmp/mid.folded"
check "named while recording: main;middle;leaf_a and main;middle;leaf_b" \
	sh -c "grep -q ';main;middle;leaf_a ' '$tmp/mid.folded' && grep -q ';main;middle;leaf_b ' '$tmp/mid.folded'"
check "... no frame of the program left unnamed" test -z "$(grep -F '[prog]' "$tmp/mid.folded")"
prog_stacks "$tmp/before.folded" >"$tmp/before.stacks"
prog_stacks "$tmp/mid.folded" >"$tmp/mid.stacks"
check "... every stack's weight unchanged ($(wc -l <"$tmp/before.stacks") stacks, $(awk '{ s += $2 } END { print s }' "$tmp/before.stacks") ns)" \
	cmp -s "$tmp/before.stacks" "$tmp/mid.stacks"
check "... and there is work in them" test -s "$tmp/before.stacks"

touch "$tmp/gate"
wait "$rpid"
rc=$?
rpid=
check "the recording ends well" test "$rc" = 0
"$collect" export --store "$store" --format folded >"$tmp/after.folded"
check "the second half, sampled after the names were found, went under the same stacks" \
	test -z "$(awk '{ $NF = ""; print }' "$tmp/after.folded" | sort | uniq -d)"
check "... which grew" test "$(grep ';main;middle;leaf_a ' "$tmp/after.folded" | awk '{ print $NF }')" \
	-gt "$(grep ';main;middle;leaf_a ' "$tmp/mid.folded" | awk '{ print $NF }')"
check "... with no frame of the program unnamed" test -z "$(grep -F '[prog]' "$tmp/after.folded")"
check "... named from the names found, not stored unnamed and named again: one -v line for the program" \
	test "$(grep -c "named later .* of $tmp/prog, from" "$tmp/rec.err")" = 1

# a debug file put in at the very end: named by the last pass
rm -f "$tmp/gate" "$tmp/gate.done"
mkdir -p "$tmp/dd2"
"$collect" record --store "$tmp/store2" -v --debug-dir "$tmp/dd2" -F 499 --user-only \
	-- "$tmp/prog" 3000000 4 "$tmp/gate" 2>"$tmp/rec2.err" &
rpid=$!
wait_for "the first half of the work" test -e "$tmp/gate.done"
cp "$tmp/flat/prog-symbols" "$tmp/dd2/"
touch "$tmp/gate"
wait "$rpid"
rpid=
"$collect" export --store "$tmp/store2" --format folded >"$tmp/end.folded"
check "a debug file put in at the end names the frames (file directly in --debug-dir)" \
	sh -c "grep -q ';main;middle;leaf_a ' '$tmp/end.folded' && ! grep -qF '[prog]' '$tmp/end.folded'"
check "... and -v says so" grep -q "named later .* of $tmp/prog, from $tmp/dd2/prog-symbols" "$tmp/rec2.err"

finish

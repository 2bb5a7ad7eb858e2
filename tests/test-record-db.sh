#!/usr/bin/env bash
# test-record-db.sh — record straight into a database (`--store
# postgresql://…`, a private PostgreSQL from lib-pg.sh) names frames later by
# itself (issue #42), as it does into a directory (test-record-names-later.sh).
# The stripped program of lib-stripped.sh is recorded with --debug-dir
# pointing at an empty directory, so its frames are stored unnamed
# ("[prog]"); then:
#   - a mount of the database, opened once the first half of the work is
#     stored (the program waits at a gate), shows the frames unnamed;
#   - the debug file is moved into the --debug-dir while the recording goes
#     on: the recorder names the frames by itself (-v says so) before the
#     program goes on; the database's folded export has main;middle;leaf_a
#     and leaf_b with every stack's weight unchanged (each stack of the
#     program's frames, read with every function of the program as
#     "[prog]"), and the mount, still open, shows the names with the same
#     weights;
#   - the second half, sampled after the names were found, goes under the
#     same stacks: no stack twice, no frame of the program unnamed, and the
#     database holds one frame per function of the program (the frames met
#     again are stored as first met, and show the name);
#   - the database's stacks are the ones a recording of the same program
#     into a directory store gives, with the same names (the stacks that hold
#     at least 5% of the program's weight, as chains of its functions);
#   - frames another writer (symbolize --store) named first, while the
#     program waits, keep those names; the recorder does not fail and its
#     later samples go under them.
# Work is counted in loop iterations and every wait is for an event (a file,
# a line, a commit), so the verdict does not depend on the machine's load.
#   usage: test-record-db.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
. "$(dirname "$0")/lib-stripped.sh"
. "$(dirname "$0")/lib-pg.sh"
build=${1:?usage: test-record-db.sh BUILD_DIR}
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
e2e_setup record-db

for t in cc objcopy strip readelf nm; do
	command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
rpid=
fpid=
e2e_on_exit() {
	# the program too: waiting at its gate it would outlive the test
	# shellcheck disable=SC2046 # a list of pids
	[ -n "$rpid" ] && kill $(cat /proc/"$rpid"/task/*/children 2>/dev/null) "$rpid" 2>/dev/null
	[ -n "$fpid" ] && { fusermount3 -u -z "$mnt" 2>/dev/null; kill "$fpid" 2>/dev/null; }
}
e2e_need_bpf
chmod 755 "$tmp"
pg_skip_unless_available "$tmp"
pg_createdb rec || { bad "createdb rec"; finish; }
db=$(pg_uri rec postgres)

stripped_build "$tmp"
debug_file=$tmp/debug/.build-id/${bid:0:2}/${bid:2}.debug

# main_stacks FOLDED: the program's stacks with at least three of its named
# functions, as the chain of its functions alone, that hold at least 5% of
# the weight of all such stacks
main_stacks() {
	awk -v names="$tmp/names" '
		BEGIN { while ((getline n < names) > 0) own[n] = 1 }
		$1 ~ /^prog;/ {
			w = $NF; $NF = ""; sub(/ $/, "")
			k = split($0, f, ";"); s = ""; c = 0
			for (i = 2; i <= k; i++)
				if (f[i] in own) { s = s (c ? ";" : "") f[i]; c++ }
			if (c >= 3) { sum[s] += w; t += w }
		}
		END { for (s in sum) if (sum[s] * 20 >= t) print s }' "$1" | sort
}

# ---- the reference: the same program recorded into a directory store ----
mkdir -p "$tmp/dd0"
cp "$tmp/flat/prog-symbols" "$tmp/dd0/"
"$collect" record --store "$tmp/dir" --debug-dir "$tmp/dd0" -F 499 --user-only \
	-- "$tmp/prog" 3000000 20 2>"$tmp/rec0.err" || bad "the directory recording: $(cat "$tmp/rec0.err")"
"$collect" export --store "$tmp/dir" --format folded >"$tmp/dir.folded"
main_stacks "$tmp/dir.folded" >"$tmp/dir.main"
check "the directory recording names the program: $(paste -sd' ' "$tmp/dir.main")" \
	sh -c "grep -qx '.*main;middle;leaf_a' '$tmp/dir.main' && grep -qx '.*main;middle;leaf_b' '$tmp/dir.main'"

# ---- recording straight into the database ----
mkdir -p "$tmp/dd"
"$collect" record --store "$db" -v --debug-dir "$tmp/dd" -F 499 --user-only \
	--log-drains "$tmp/drains" -- "$tmp/prog" 3000000 20 "$tmp/gate" 2>"$tmp/rec.err" &
rpid=$!
wait_for "the first half of the work" test -e "$tmp/gate.done"
# every sample of the first half committed: two drains after it ended
n0=$(committed)
wait_for "two drains" drains_past $((n0 + 2))
"$collect" export --store "$db" --format folded >"$tmp/before.folded"
check "stored into the database while stripped: the program's frames are [prog]" \
	grep -q '^prog;\[prog\];.*\[prog\];\[prog\];\[prog\] ' "$tmp/before.folded"
check "... and none of its functions is named" \
	test -z "$(grep -E ';(leaf_a|leaf_b|middle|main)( |;)' "$tmp/before.folded")"
check "... nothing named yet" test -z "$(grep 'named later' "$tmp/rec.err")"

mkdir -p "$mnt"
"$flamefs" -f "$db" "$mnt" 2>"$tmp/flamefs.err" &
fpid=$!
wait_for "the mount to show the program" test -d "$mnt/prog"
v=$(ls "$mnt/prog" | head -1)
check "the mount shows the program's frames unnamed ($v)" grep -qF '[prog]' "$mnt/prog/$v/folded"

mkdir -p "$tmp/dd/.build-id/${bid:0:2}"
mv "$debug_file" "$tmp/dd/.build-id/${bid:0:2}/"
wait_for "the recorder to name the frames in the database" \
	grep -q "named later .* of $tmp/prog, from" "$tmp/rec.err"
check "-v says it named every frame of the program, from the --debug-dir ($(grep -m1 'named later' "$tmp/rec.err"))" \
	grep -qE "named later ([0-9]+) of \\1 frames of $tmp/prog, from $tmp/dd/.build-id/" "$tmp/rec.err"
"$collect" export --store "$db" --format folded >"$tmp/mid.folded"
check "named in the database while recording: main;middle;leaf_a and main;middle;leaf_b" \
	sh -c "grep -q ';main;middle;leaf_a ' '$tmp/mid.folded' && grep -q ';main;middle;leaf_b ' '$tmp/mid.folded'"
check "... no frame of the program left unnamed" test -z "$(grep -F '[prog]' "$tmp/mid.folded")"
prog_stacks "$tmp/before.folded" >"$tmp/before.stacks"
prog_stacks "$tmp/mid.folded" >"$tmp/mid.stacks"
check "... every stack's weight unchanged ($(wc -l <"$tmp/before.stacks") stacks, $(awk '{ s += $2 } END { print s }' "$tmp/before.stacks") ns)" \
	cmp -s "$tmp/before.stacks" "$tmp/mid.stacks"
check "... and there is work in them" test -s "$tmp/before.stacks"
mount_named() { grep -q ';main;middle;leaf_a ' "$mnt/prog/$v/folded" && ! grep -qF '[prog]' "$mnt/prog/$v/folded"; }
wait_for "the open mount to show the names" mount_named
cp "$mnt/prog/$v/folded" "$tmp/mount.folded"
prog_stacks "$tmp/mount.folded" >"$tmp/mount.stacks"
check "the mount open across it shows the names without a remount, every stack's weight unchanged" \
	cmp -s "$tmp/before.stacks" "$tmp/mount.stacks"

touch "$tmp/gate"
wait "$rpid"
rc=$?
rpid=
check "the recording ends well" test "$rc" = 0
"$collect" export --store "$db" --format folded >"$tmp/after.folded"
check "the second half, sampled after the names were found, went under the same stacks" \
	test -z "$(awk '{ $NF = ""; print }' "$tmp/after.folded" | sort | uniq -d)"
check "... which grew" test "$(grep ';main;middle;leaf_a ' "$tmp/after.folded" | awk '{ print $NF }')" \
	-gt "$(grep ';main;middle;leaf_a ' "$tmp/mid.folded" | awk '{ print $NF }')"
check "... with no frame of the program unnamed" test -z "$(grep -F '[prog]' "$tmp/after.folded")"
check "... named from the names found, not stored unnamed and named again: one -v line for the program" \
	test "$(grep -c "named later .* of $tmp/prog, from" "$tmp/rec.err")" = 1
pg_psql -d rec -Atc "SELECT convert_from(name, 'UTF8') FROM frames
	WHERE convert_from(module, 'UTF8') = '$tmp/prog' ORDER BY 1" >"$tmp/db.frames"
check "the database holds one frame per function of the program ($(paste -sd' ' "$tmp/db.frames"))" \
	sh -c "grep -qx leaf_a '$tmp/db.frames' && test -z \"\$(uniq -d '$tmp/db.frames')\""
check "... none of them unnamed" \
	test "$(pg_psql -d rec -Atc "SELECT count(*) FROM frames WHERE convert_from(module, 'UTF8') = '$tmp/prog' AND kind = 3")" = 0
check "... each named in frame_names" \
	test "$(pg_psql -d rec -Atc "SELECT count(*) FROM frame_names n JOIN frames f ON f.id = n.id
		WHERE convert_from(f.module, 'UTF8') = '$tmp/prog'")" = "$(wc -l <"$tmp/db.frames")"
main_stacks "$tmp/after.folded" >"$tmp/db.main"
check "the database's stacks and names are the directory recording's ($(paste -sd' ' "$tmp/db.main"))" \
	cmp -s "$tmp/dir.main" "$tmp/db.main"
mount_done() { cmp -s <(sort "$tmp/after.folded" | grep '^prog;') <(sort "$mnt/prog/$v/folded"); }
wait_for "the mount to catch up with the end" mount_done
check "the mount's folded equals the database's export at the end" mount_done

# ---- a frame another writer named first keeps its name ----
# While the program waits at the gate, `symbolize --store` names its frames
# in the database from a debug file that calls leaf_a "first_a"; then the
# real debug file appears in the recorder's --debug-dir. The recorder finds
# nothing left to name, does not fail, and the second half goes under the
# first names.
fusermount3 -u "$mnt"
kill "$fpid" 2>/dev/null
wait "$fpid" 2>/dev/null
fpid=
pg_createdb rec2 || { bad "createdb rec2"; finish; }
db2=$(pg_uri rec2 postgres)
mkdir -p "$tmp/other" "$tmp/dd2"
objcopy --redefine-sym leaf_a=first_a "$tmp/flat/prog-symbols" "$tmp/other/prog-symbols"
rm -f "$tmp/gate" "$tmp/gate.done" "$tmp/drains"
"$collect" record --store "$db2" -v --debug-dir "$tmp/dd2" -F 499 --user-only \
	--log-drains "$tmp/drains" -- "$tmp/prog" 3000000 4 "$tmp/gate" 2>"$tmp/rec2.err" &
rpid=$!
wait_for "the first half of the work" test -e "$tmp/gate.done"
n0=$(committed)
wait_for "two drains" drains_past $((n0 + 2))
"$collect" symbolize --store "$db2" --debug-dir "$tmp/other" 2>"$tmp/sym2.err"
check "another writer names the program's frames first ($(head -1 "$tmp/sym2.err"))" \
	grep -q "named [0-9]* of [0-9]* unnamed frames" "$tmp/sym2.err"
cp "$tmp/flat/prog-symbols" "$tmp/dd2/"
n1=$(committed)
wait_for "two drains" drains_past $((n1 + 2))
touch "$tmp/gate"
wait "$rpid"
rc=$?
rpid=
check "the recording ends well (rc $rc)" test "$rc" = 0
"$collect" export --store "$db2" --format folded >"$tmp/first.folded"
check "the first names stay: main;middle;first_a, no leaf_a" \
	sh -c "grep -q ';main;middle;first_a ' '$tmp/first.folded' && ! grep -q ';leaf_a ' '$tmp/first.folded'"
check "... the second half went under them: no stack twice" \
	test -z "$(awk '{ $NF = ""; print }' "$tmp/first.folded" | sort | uniq -d)"
check "... and no frame of the program unnamed" test -z "$(grep -F '[prog]' "$tmp/first.folded")"

finish

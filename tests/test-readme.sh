#!/usr/bin/env bash
# test-readme.sh — the README's two commands work for everyone on a fresh
# Debian 12: as root, where there is no sudo, and as a user with sudo.
#
#   1. The README's first shell block holds exactly two commands, and
#      neither starts with sudo; its first answer (a `top`) comes within
#      150 lines, and its table of contents links every page of docs/.
#   2. As a user (uid 65534) with a sudo on PATH, each command hands
#      itself to sudo at once, with the script's absolute path and the
#      FLAMEFS_* variables kept, and does nothing else as that user.  The
#      sudo here is a stand-in that records its arguments.
#   3. As root with no sudo on PATH (a sudo that fails if called stands in
#      for "none"): tests/run.sh with no stages (FLAMEFS_STAGES=" ", so
#      that it does not run this test again) runs to its summary, and the
#      demo runs to its end (record, perf, import, mount, walk) on this
#      build.  The demo part is skipped, visibly, where BPF, perf or
#      /dev/fuse are missing.
#
#   usage: tests/test-readme.sh BUILD_DIR    exit 0 ok, 1 failure, 77 skip
set -u
build=$(cd "${1:?usage: test-readme.sh BUILD_DIR}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/lib-e2e.sh"
e2e_setup readme
chmod 755 "$tmp"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (to act as another user)"; exit 77; }

# ---- 1: the commands --------------------------------------------------------------
cmds=$(awk '/^```sh$/ { n++; next } /^```$/ { if (n == 1) exit } n == 1' "$top/README.md" |
	sed 's/[[:space:]]*#.*//' | grep -v '^[[:space:]]*$')
check "the README's first block has two commands" test "$(wc -l <<<"$cmds")" = 2
if grep -q '^[[:space:]]*sudo\b' <<<"$cmds"; then
	bad "a README command starts with sudo (a fresh Debian logged in as root has none): $cmds"
else
	ok "no README command needs sudo to be installed"
fi

# A first answer early (issue #43): the quick start's "what is hot" command
# within the first 150 lines, and every page of docs/ in the table of
# contents.
first=$(awk '/^```sh$/ { code = 1; next } /^```$/ { code = 0 } code && /\/top/ { print NR; exit }' "$top/README.md")
check "the README's first answer (a top) is on line ${first:-none}, within its first 150" \
	test -n "$first" -a "${first:-999}" -le 150
for page in "$top"/docs/*.md; do
	check "the README's table links docs/$(basename "$page")" \
		grep -qF "](docs/$(basename "$page"))" "$top/README.md"
done

# ---- 2: a user with sudo ----------------------------------------------------------
fake=$tmp/fakebin
mkdir -p "$fake" "$tmp/u"
chmod 777 "$tmp/u"
cat >"$fake/sudo" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >"$tmp/u/sudo.args"
exit 0
EOF
chmod 755 "$fake/sudo"
while IFS= read -r cmd; do
	script=$(awk '{ print $2 }' <<<"$cmd")
	rm -f "$tmp/u/sudo.args"
	(cd "$top" && setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -i PATH="$fake:/usr/bin:/bin" HOME="$tmp/u" FLAMEFS_STAGES=ci FLAMEFS_X="a b" \
		bash -c "$cmd" >"$tmp/u/user.out" 2>&1)
	rc=$?
	want="--preserve-env=FLAMEFS_STAGES,FLAMEFS_X bash $top/$script"
	got=$(cat "$tmp/u/sudo.args" 2>/dev/null)
	if [ "$rc" = 0 ] && [ "$got" = "$want" ]; then
		ok "as a user: '$cmd' hands itself to sudo ($got)"
	else
		bad "as a user: '$cmd': exit $rc, sudo called with '$got', expected '$want': $(head -c 300 "$tmp/u/user.out")"
	fi
done <<<"$cmds"

# ---- 3: root without sudo ---------------------------------------------------------
nosudo=$tmp/nosudo
mkdir -p "$nosudo"
printf '#!/bin/sh\necho "sudo was called" >&2\nexit 99\n' >"$nosudo/sudo"
chmod 755 "$nosudo/sudo"
rootpath="$nosudo:$PATH"
out=$(cd "$top" && PATH=$rootpath FLAMEFS_STAGES=" " bash tests/run.sh 2>&1)
rc=$?
if [ "$rc" = 0 ] && grep -q '^0 passed, 0 failed, 0 skipped$' <<<"$out" && ! grep -q 'sudo was called' <<<"$out"; then
	ok "as root without sudo: tests/run.sh runs (no stages: to its summary)"
else
	bad "as root without sudo: tests/run.sh: exit $rc: $(tail -c 300 <<<"$out")"
fi
if [ ! -c /dev/fuse ] || ! command -v perf >/dev/null ||
	! "$build/flamefs-collect" record --store "$tmp/probe" -d 0.2 -- true 2>/dev/null; then
	echo "SKIP - the demo: BPF, perf or /dev/fuse unavailable here"
else
	out=$(cd "$top" && PATH=$rootpath FLAMEFS_BUILD=$build bash contrib/demo.sh 2>&1)
	rc=$?
	# The heaviest path the demo shows goes through hash_body (about half
	# the workload's CPU, parse_headers a third): a table row per step,
	# "TOTAL SHARE%  FRAME".  [truncated] holds a handful of early samples
	# and must not be on it.
	steps=$(sed -n '/the heaviest path of/,/^$/p' <<<"$out" | awk '$2 ~ /%$/ { print $3 }' | paste -sd' ')
	if [ "$rc" = 0 ] && grep -q 'fusermount3 -u mnt' <<<"$out" &&
		[[ " $steps " == *" main serve handle_request hash_body spin "* ]] &&
		[[ " $steps " != *"[truncated]"* ]] && ! grep -q 'sudo was called' <<<"$out"; then
		ok "as root without sudo: the demo runs to its end, along the heaviest path ($steps)"
		# The demo keeps its store and says how to mount it again and
		# how to remove it: both commands, as printed, work.
		again=$(grep -A1 '^The store is kept in ' <<<"$out" | sed -n '2s/^  //p')
		gone=$(grep -A1 'remove it all with:$' <<<"$out" | sed -n '2s/^  //p')
		kept=$(sed -n 's/^The store is kept in \(.*\)\/store .*/\1/p' <<<"$out")
		if [ -n "$again" ] && [ -n "$kept" ] && [ -d "$kept/store" ] && [[ $gone == "rm -rf $kept" ]] &&
			! mountpoint -q "$kept/mnt" && (cd / && eval "$again") >"$tmp/again.out" 2>&1 &&
			grep -qx demo-server "$tmp/again.out"; then
			ok "the demo's store is kept, unmounted, and its command mounts it again ($again)"
		else
			bad "the demo's kept store: dir '$kept', mount command '$again', removal '$gone': $(head -c 300 "$tmp/again.out" 2>/dev/null)"
		fi
		[ -n "$kept" ] && mountpoint -q "$kept/mnt" && fusermount3 -u "$kept/mnt"
		if [ -n "$kept" ] && [[ $gone == "rm -rf $kept" ]] && (cd / && eval "$gone") && [ ! -e "$kept" ]; then
			ok "and its removal command removes it"
		else
			bad "the demo's removal command '$gone' did not remove '$kept'"
		fi
	else
		bad "as root without sudo: the demo: exit $rc, heaviest path \"$steps\"; its last lines:"
		tail -n 25 <<<"$out" | cat -v
	fi
fi

[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all README command checks passed"

#!/usr/bin/env bash
# test-security.sh — the security promises of issue #5, each checked on the
# real programs: the mount is read-only, no frame name makes a path that
# leaves its directory, store directories are created with mode 0700,
# `record` refuses cleanly without CAP_BPF/CAP_PERFMON, and without
# `-o allow_other` no other user can read the view.
#   usage: tests/test-security.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-security.sh BUILD_DIR}
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
. "$(dirname "$0")/lib-e2e.sh"
e2e_setup security
chmod 0755 "$tmp" # other users must reach the mountpoint to be refused by FUSE
mkdir -p "$mnt"
pid=
e2e_on_exit() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
}
skips=0
skip() { echo "SKIP - $*"; skips=$((skips + 1)); }
mode_of() { stat -c %a "$1"; }

# ---- store directories: mode 0700, whatever the umask -----------------------
printf 'app;main 1\n' >"$tmp/one.folded"
(umask 000 && "$collect" import --store "$tmp/a/b/c" "$tmp/one.folded" >/dev/null 2>"$tmp/err")
check "import into a new nested store path succeeds" test -d "$tmp/a/b/c"
for d in "$tmp/a" "$tmp/a/b" "$tmp/a/b/c"; do
	check "created directory ${d#"$tmp"/} has mode 0700 under umask 000 (got $(mode_of "$d"))" \
		test "$(mode_of "$d")" = 700
done
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$tmp/a/b/c/CURRENT" 2>&1)
check "another user cannot read a file in the store (got: $out)" \
	test -n "$out" -a -z "${out##*Permission denied*}"

# ---- record without the capabilities it needs ------------------------------
if command -v capsh >/dev/null; then
	out=$(capsh --drop=cap_sys_admin,cap_bpf,cap_perfmon -- -c \
		"exec '$collect' record --store '$tmp/rec' -d 1 -- true" 2>&1)
	rc=$?
	check "record without CAP_BPF and CAP_PERFMON exits 1 (got $rc)" test "$rc" -eq 1
	check "and says so in one line naming both (got: $out)" \
		test "$out" = "flamefs-collect: record needs CAP_BPF and CAP_PERFMON (or root); this process lacks CAP_BPF and CAP_PERFMON"
	check "and creates no store" test ! -e "$tmp/rec"
	out=$(capsh --drop=cap_sys_admin,cap_bpf -- -c \
		"exec '$collect' record --store '$tmp/rec' -d 1 -- true" 2>&1)
	rc=$?
	check "record with CAP_PERFMON but without CAP_BPF exits 1 and names only CAP_BPF (got $rc: $out)" \
		test "$rc" -eq 1 -a "${out##*lacks }" = "CAP_BPF"
else
	skip "capsh not installed: record's capability check not exercised with dropped capabilities"
fi
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$collect" record --store "$tmp/rec" -d 1 -- true 2>&1)
rc=$?
check "record as an unprivileged user exits 1 naming what is missing (got $rc: $out)" \
	test "$rc" -eq 1 -a "${out##*lacks }" = "CAP_BPF and CAP_PERFMON"

# ---- the view ----------------------------------------------------------------
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	skip "/dev/fuse not available: read-only, path-escape and allow_other checks not run"
	echo "$failures failed, $skips skipped"
	[ "$failures" -eq 0 ] || exit 1
	exit 77
fi

# Frame names that would leave their directory if used as path components.
{
	echo 'app;..;..;etc 1'
	echo 'app;.;x 2'
	echo 'app;../../../../tmp 3'
	echo 'app;a/../../b 4'
	echo 'app;/;/etc/passwd 5'
	echo 'app;...;%2E%2E 6'
	echo 'app;total;self;folded 7'
} >"$tmp/evil.folded"
"$collect" import --store "$store" "$tmp/evil.folded" >/dev/null 2>"$tmp/err" ||
	bad "import of hostile names: $(cat "$tmp/err")"

mount_fs() { # mount_fs [OPTION...]
	"$flamefs" -f "$@" "$store" "$mnt" 2>"$tmp/daemon.err" &
	pid=$!
	for _ in $(seq 50); do
		mountpoint -q "$mnt" && return 0
		sleep 0.1
	done
	bad "flamefs did not mount: $(cat "$tmp/daemon.err")"
	exit 1
}
unmount_fs() {
	fusermount3 -u "$mnt" && wait "$pid"
	pid=
}

mount_fs
root=$mnt/app/default

# Read-only, as the kernel sees it and as every write path answers.
opts=$(awk -v m="$mnt" '$2 == m { print $4 }' /proc/mounts)
check "the kernel lists the mount as ro (options: $opts)" test "${opts%%,*}" = ro
for what in "touch $root/newfile" "mkdir $root/newdir" "rm -f $root/total" \
	"rmdir $root/%2E." "mv $root/total $root/moved" "ln -s x $root/link" \
	"chmod 777 $root/total" "truncate -s 0 $root/folded"; do
	err=$(sh -c "$what" 2>&1)
	case $err in
	*"Read-only file system"*) ok "'${what%% *}' is refused with EROFS" ;;
	*) bad "'${what%% *}' should fail with EROFS, got: ${err:-success}" ;;
	esac
done
err=$( (echo x >"$root/total") 2>&1)
check "writing into a file fails with EROFS (got: $err)" test -n "$err" -a -z "${err##*Read-only file system*}"

# Every entry stays inside the mount: no name is ".", ".." or holds "/",
# and every directory's canonical path lies below its parent's.
find "$mnt" -mindepth 1 >"$tmp/all" 2>"$tmp/find.err"
check "find walks the whole view without errors" test ! -s "$tmp/find.err"
escaped=0
while IFS= read -r p; do
	real=$(realpath -e -- "$p" 2>/dev/null) || {
		escaped=$((escaped + 1))
		echo "  does not resolve: $p"
		continue
	}
	case $real in
	"$mnt"/*) ;;
	*)
		escaped=$((escaped + 1))
		echo "  leaves the mount: $p -> $real"
		;;
	esac
	[ "$real" = "$p" ] || {
		escaped=$((escaped + 1))
		echo "  is not its own canonical path: $p -> $real"
	}
done <"$tmp/all"
check "all $(wc -l <"$tmp/all") paths resolve to themselves inside the mount" test "$escaped" -eq 0
names=$(find "$mnt" -type d -print0 | xargs -0 -n1 ls -A | sort -u)
dots=$(ls -a "$root" | grep -c -F -x -e . -e ..)
check "a directory lists exactly one '.' and one '..' (got $dots)" test "$dots" -eq 2
check "no frame is listed as a bare '.' or '..'" \
	test "$(echo "$names" | grep -c -F -x -e . -e ..)" -eq 0
check "'..' as a frame is the directory %2E. holding its own subtree" \
	test "$(cat "$root/%2E./%2E./etc/total" 2>/dev/null)" = 1
check "'a/../../b' is one directory a%2F..%2F..%2Fb" \
	test "$(cat "$root/a%2F..%2F..%2Fb/total" 2>/dev/null)" = 4
check "'/' is one directory %2F and '/etc/passwd' one below it" \
	test "$(cat "$root/%2F/%2Fetc%2Fpasswd/total" 2>/dev/null)" = 5
check "a frame called 'total' is a directory, not the file" \
	test "$(cat "$root/%74otal/%73elf/%66olded/total" 2>/dev/null)" = 7
check "the root total is untouched by the names below it" test "$(cat "$root/total")" = 28

# Other users: refused without allow_other, let in with it.
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups ls "$mnt" 2>&1)
check "without allow_other another user cannot list the mount (got: $out)" \
	test -n "$out" -a -z "${out##*Permission denied*}"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$root/total" 2>&1)
check "without allow_other another user cannot read a file (got: $out)" \
	test -n "$out" -a -z "${out##*Permission denied*}"
unmount_fs

mount_fs -o allow_other
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$root/total" 2>&1)
check "with -o allow_other another user can read (got: $out)" test "$out" = 28
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups touch "$root/x" 2>&1)
check "and still cannot write (got: $out)" test -n "$out" -a -z "${out##*Read-only file system*}"
unmount_fs

out=$("$flamefs" -f -o rw "$store" "$mnt" 2>&1)
rc=$?
check "mounting with -o rw is refused as a usage error, exit 2 (got $rc: $out)" test "$rc" -eq 2
check "and nothing was mounted" test "$(mountpoint -q "$mnt" && echo yes)" != yes

echo "$failures failed, $skips skipped"
[ "$failures" -eq 0 ]

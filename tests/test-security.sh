#!/usr/bin/env bash
# test-security.sh — the security promises of issue #5, each checked on the
# real programs: the mount is read-only, no frame name makes a path that
# leaves its directory, store directories are created with mode 0700,
# `record` refuses cleanly without CAP_BPF/CAP_PERFMON, and without
# `-o allow_other` no other user can read the view, and with
# `-o allow_other,default_permissions` only those the store directory
# lets read.  And issue #45's, on
# the view's side: no name, unit or event of a profile puts markup into an
# SVG or a control byte or a line into a text file, and a small profile
# cannot make the daemon render (or hold) a huge file.
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
# (the advice names the very file to give them to)
self=$(readlink -f "$collect")
if command -v capsh >/dev/null; then
	out=$(capsh --drop=cap_sys_admin,cap_bpf,cap_perfmon -- -c \
		"exec '$collect' record --store '$tmp/rec' -d 1 -- true" 2>&1)
	rc=$?
	check "record without CAP_BPF and CAP_PERFMON exits 1 (got $rc)" test "$rc" -eq 1
	check "and says so in one line naming both (got: $out)" \
		test "$out" = "flamefs-collect: record needs CAP_BPF and CAP_PERFMON; this process lacks CAP_BPF and CAP_PERFMON: run as root, or setcap cap_bpf,cap_perfmon+ep $self"
	check "and creates no store" test ! -e "$tmp/rec"
	out=$(capsh --drop=cap_sys_admin,cap_bpf -- -c \
		"exec '$collect' record --store '$tmp/rec' -d 1 -- true" 2>&1)
	rc=$?
	check "record with CAP_PERFMON but without CAP_BPF exits 1 and names only CAP_BPF (got $rc: $out)" \
		test "$rc" -eq 1 -a "${out##*lacks }" = "CAP_BPF: run as root, or setcap cap_bpf,cap_perfmon+ep $self"
else
	skip "capsh not installed: record's capability check not exercised with dropped capabilities"
fi
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$collect" record --store "$tmp/rec" -d 1 -- true 2>&1)
rc=$?
check "record as an unprivileged user exits 1 naming what is missing (got $rc: $out)" \
	test "$rc" -eq 1 -a "${out##*lacks }" = "CAP_BPF and CAP_PERFMON: run as root, or setcap cap_bpf,cap_perfmon+ep $self"

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

# With -o allow_other,default_permissions the kernel checks the view's
# modes, which are the store directory's: its owner and group, read (and
# search) where it lets read.  A group can be let in, and no one else.
chgrp 4242 "$store" && chmod 0750 "$store"
mount_fs -o allow_other,default_permissions
check "a file's mode and group are the store's (0750 -> 440, gid 4242; got $(stat -c '%a %g' "$root/total"))" \
	test "$(stat -c '%a %g' "$root/total")" = "440 4242"
check "a directory's: 550 (got $(stat -c %a "$root"))" test "$(stat -c %a "$root")" = 550
out=$(setpriv --reuid=65534 --regid=65534 --groups=4242 cat "$root/total" 2>&1)
check "a member of the store's group can read (got: $out)" test "$out" = 28
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$root/total" 2>&1)
check "a user outside it cannot (got: $out)" test -n "$out" -a -z "${out##*Permission denied*}"
unmount_fs
chmod 0700 "$store"
mount_fs -o allow_other,default_permissions
out=$(setpriv --reuid=65534 --regid=65534 --groups=4242 cat "$root/total" 2>&1)
check "a store of mode 0700 lets no other user in, group or not (got: $out)" \
	test -n "$out" -a -z "${out##*Permission denied*}"
unmount_fs
chgrp 0 "$store"

out=$("$flamefs" -f -o rw "$store" "$mnt" 2>&1)
rc=$?
check "mounting with -o rw is refused as a usage error, exit 2 (got $rc: $out)" test "$rc" -eq 2
check "and nothing was mounted" test "$(mountpoint -q "$mnt" && echo yes)" != yes

# ---- issue #45: every string escaped for where it lands --------------------
# A pprof whose sample type and unit are markup and whose frame names hold
# <, &, quotes, newline (with a forged folded line after it), CR, ';', ESC,
# a backslash and a C1 control; and a perf event named with markup.
pprof_data=$(cd "$(dirname "$0")/data/pprof" && pwd)
hostile=$tmp/hostile
python3 "$pprof_data/make-hostile.py" markup >"$tmp/markup.pb.gz"
printf 'web  100 [000] 1.000000:    1000 <script>alert(5)</script>: \n\t  401000 serve (/usr/bin/web)\n\t  401100 _start (/usr/bin/web)\n\n' >"$tmp/event.perf"
"$collect" import --store "$hostile" "$tmp/markup.pb.gz" "$tmp/event.perf" >/dev/null 2>"$tmp/err" ||
	bad "import of the hostile profiles: $(cat "$tmp/err")"
# The renderer's own script and event attributes: a plain flame graph's.
"$collect" export --store "$store" --format svg >"$tmp/plain.svg"
svg_counts() { # SVG: "<script elements> <on* attributes>"
	xmllint --xpath "concat(count(//*[local-name()='script']),' ',count(//@*[starts-with(local-name(),'on')]))" "$1" 2>/dev/null
}
flame_base=$(svg_counts "$tmp/plain.svg")
check "a plain flame.svg has the renderer's one script and one onload (got '$flame_base')" \
	test "$flame_base" = "1 1"
store_saved=$store
store=$hostile
mount_fs
store=$store_saved
find "$mnt" -name '*.svg' -type f >"$tmp/svgs"
nsvg=$(wc -l <"$tmp/svgs")
svg_bad=0
while IFS= read -r f; do
	want="0 0"
	[ "${f##*/}" = flame.svg ] && want=$flame_base
	if ! xmllint --noout "$f" 2>"$tmp/xml.err"; then
		echo "  not well-formed: $f: $(head -1 "$tmp/xml.err")"
		svg_bad=$((svg_bad + 1))
	elif [ "$(svg_counts "$f")" != "$want" ]; then
		echo "  $f: scripts and on* attributes $(svg_counts "$f"), want $want"
		svg_bad=$((svg_bad + 1))
	fi
done <"$tmp/svgs"
check "all $nsvg SVGs of the view parse and hold only the renderer's script" \
	test "$nsvg" -ge 20 -a "$svg_bad" -eq 0
sub=$(xmllint --xpath "string(//*[@id='subtitle'])" "$mnt/app/default/flame.svg" 2>/dev/null)
fffd=$'\xef\xbf\xbd' # U+FFFD, what a control byte becomes in XML
unit_xml="</title>$fffd# forged$fffd<script>alert(2)</script>"
check "flame.svg's subtitle shows the markup event and unit as text (got: $sub)" \
	test "$sub" = "</title><script>alert(1)</script> ($unit_xml)"
title=$(xmllint --xpath "string(//*[local-name()='g'][*[local-name()='title'][starts-with(., 'a<b>')]]/*[local-name()='title'])" \
	"$mnt/app/default/flame.svg" 2>/dev/null)
check "a tooltip shows the name and the unit as text (got: $title)" \
	test "$title" = "a<b>&\"c\"'d (10 $unit_xml, 1 sample, 1.52%)"
sub=$(xmllint --xpath "string(//*[local-name()='text'][starts-with(., 'Timeline')])" "$mnt/web/default/timeline.svg" 2>/dev/null)
check "timeline.svg names the perf event as text (got: $sub)" \
	test "${sub% s intervals)}" != "$sub" -a "${sub%, *}" = "Timeline of web (<script>alert(5)</script>, count per second"

# Text files: one line per stack or function, no control byte but newline.
app=$mnt/app/default
folded_lines=$(wc -l <"$app/folded")
folded_sum=$(awk '{ s += $NF } END { print s }' "$app/folded")
check "folded has one line per stack: 11 (got $folded_lines)" test "$folded_lines" -eq 11
check "and its weights add up to total: 660 (got $folded_sum, total $(cat "$app/total"))" \
	test "$folded_sum" = 660 -a "$(cat "$app/total")" = 660
check "every folded line is app;main and at most two more frames, then a weight" \
	test "$(grep -cvE '^app;main(;[^;]+){1,2} [0-9]+$' "$app/folded")" -eq 0
# \xNN decodes every frame back to the profile's names.
python3 - "$app/folded" >"$tmp/decoded" <<'PY'
import re, sys
names = set()
for line in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    stack = line.rsplit(b" ", 1)[0]
    for frame in stack.split(b";")[2:]:
        names.add(re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), frame))
print(sorted(names))
PY
want=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import importlib; h = importlib.import_module("make-hostile"); print(sorted(set(h.NAMES[1:])))' "$pprof_data")
check "folded's frames decode to exactly the profile's names" test "$(cat "$tmp/decoded")" = "$want"
ctl=0
evil_dir=$app/main/$(ls "$app/main" | grep '^evil')
for f in "$app"/folded "$app"/top "$app"/callgrind "$app"/timeline "$mnt"/top "$mnt"/callgrind \
	"$mnt"/folded "$evil_dir"/name "$evil_dir"/top "$evil_dir"/folded "$mnt"/web/default/top \
	"$mnt"/web/default/timeline "$mnt"/web/default/callgrind; do
	if grep -qaP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$f"; then
		echo "  raw control byte in $f"
		ctl=$((ctl + 1))
	fi
done
check "folded, top, callgrind, timeline and name hold no raw control byte" test "$ctl" -eq 0
check "top lists the 10 functions after its 2 header lines (got $(wc -l <"$app/top") lines)" \
	test "$(wc -l <"$app/top")" -eq 12
check "top has its 2 header lines, the unit's newlines escaped (got $(grep -c '^#' "$app/top"))" \
	test "$(grep -c '^#' "$app/top")" -eq 2
check "timeline is its header lines and 1 bucket (got $(wc -l <"$app/timeline") lines)" \
	test "$(grep -vc '^#' "$app/timeline")" -eq 1 -a "$(grep -c '^#' "$app/timeline")" -ge 2
check "callgrind has the unit on its event: line only" \
	test "$(grep -c 'forged' "$app/callgrind")" -eq 1 -a "$(grep -c '^event: .*forged' "$app/callgrind")" -eq 1
check "the name file of the newline frame is one line" test "$(wc -l <"$evil_dir/name")" -eq 1
if callgrind_annotate "$app/callgrind" >"$tmp/annotate" 2>&1; then
	check "callgrind_annotate reads callgrind: PROGRAM TOTALS 660" \
		grep -qE '^ *660 .*PROGRAM TOTALS' "$tmp/annotate"
else
	bad "callgrind_annotate fails on callgrind: $(head -3 "$tmp/annotate")"
fi
# The trees derived from trees (here a function's callers) escape as well.
callers=$app/@functions/$(ls "$app/@functions" | grep '^evil')/callers
check "the newline function's callers/folded is its 2 stacks, no raw control byte" \
	test "$(wc -l <"$callers/folded")" -eq 2 -a \
	"$(grep -caP '[\x00-\x08\x0b-\x1f\x7f]' "$callers/folded")" -eq 0
check "and its flame.svg parses with the renderer's script only" \
	test "$(xmllint --noout "$callers/flame.svg" 2>&1 && svg_counts "$callers/flame.svg")" = "$flame_base"
cp "$app/folded" "$tmp/view.folded"
unmount_fs
# export -> import -> export keeps every stack and name.
"$collect" import --store "$tmp/again" --binary app "$tmp/view.folded" >/dev/null 2>&1
"$collect" export --store "$hostile" --binary app >"$tmp/one.folded"
"$collect" export --store "$tmp/again" >"$tmp/two.folded"
sed 's/^app;app;/app;/' "$tmp/two.folded" >"$tmp/two-trimmed.folded"
check "folded exported and imported again gives the same folded" \
	cmp -s "$tmp/one.folded" "$tmp/two-trimmed.folded"

# ---- issue #45: a small profile cannot make a huge rendering ----------------
# A few KB of pprof: one 64 KiB name in 5,000 locations, in 334 samples
# of 15 (the import keeps at most 1 MiB of names in one stack), each
# under a root of its own; its folded lines hold 5000 * 65537 bytes, past
# the 256 MiB cap.
python3 "$pprof_data/make-hostile.py" bomb 65536 5000 >"$tmp/bomb.pb.gz"
"$collect" import --store "$tmp/bomb" "$tmp/bomb.pb.gz" >/dev/null 2>"$tmp/err" ||
	bad "import of the bomb: $(cat "$tmp/err")"
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$pid/status"; }
store=$tmp/bomb
mount_fs
store=$store_saved
b=$mnt/bomb/default
cat "$b/total" >/dev/null
rss0=$(hwm)
err=$(cat "$b/folded" 2>&1 >/dev/null)
check "the 327 MB folded is refused with EFBIG (got: $err)" test -z "${err##*File too large*}" -a -n "$err"
check "and the daemon says why, in one line of its log for the one open" test \
	"$(grep -c "folded of \"bomb\".*passes the limit of 268435456 bytes (-o max_render); refused with EFBIG" "$tmp/daemon.err")" = 1
svg_size=$(cat "$b/flame.svg" | wc -c)
check "flame.svg of the 5,000 frames renders bounded: $svg_size bytes < 16 MiB" test "$svg_size" -gt 0 -a "$svg_size" -lt 16777216
cat "$b/pprof" "$b/callgrind" "$b/top" "$b/timeline" "$b/timeline.svg" >/dev/null 2>&1
rss1=$(hwm)
echo "     daemon peak RSS (VmHWM): $rss0 kB after building the tree, $rss1 kB after reading every file"
check "the daemon's peak RSS grew by less than 64 MiB reading them (+$((rss1 - rss0)) kB)" \
	test $((rss1 - rss0)) -lt 65536
unmount_fs
store=$tmp/bomb
mount_fs -o max_render=1M
store=$store_saved
err=$(cat "$b/flame.svg" 2>&1 >/dev/null)
check "with -o max_render=1M the 6 MB flame.svg is refused with EFBIG (got: $err)" \
	test -z "${err##*File too large*}" -a -n "$err"
check "and the 64 KiB top is still served (2 header lines, x and the 334 roots)" \
	test "$(wc -l <"$b/top")" -eq 337
unmount_fs
out=$("$flamefs" -f -o max_render=lots "$tmp/bomb" "$mnt" 2>&1)
rc=$?
check "-o max_render=lots is a usage error, exit 2 (got $rc: $out)" test "$rc" -eq 2
out=$("$collect" export --store "$tmp/bomb" 2>&1 >/dev/null)
rc=$?
check "export of the bomb's folded exits 1 naming the limit (got $rc: $out)" \
	test "$rc" -eq 1 -a -z "${out##*passes the limit of 268435456 bytes (--max-render)*}"
out=$("$collect" export --store "$tmp/bomb" --format svg --max-render 1M 2>&1 >/dev/null)
rc=$?
check "export --max-render 1M of the flame graph exits 1 (got $rc: $out)" \
	test "$rc" -eq 1 -a -z "${out##*passes the limit of 1048576 bytes*}"

echo "$failures failed, $skips skipped"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# test-view-valgrind.sh — the FUSE daemon under valgrind, end to end.
#
# Mounts a small store (folded stacks with awkward names, and a two-event
# perf recording) with `flamefs -f` running under valgrind's memcheck,
# walks it (ls -l of every directory, cat of every file including the
# pprof ones, a second walk served from the caches), issue #13's views
# (a window, a range, a diff, every function's callers and callees),
# imports more data
# while mounted and waits until the view shows it (so the refresh path
# runs: catch-up, series reload, trees and renderings dropped, a file
# opened before the refresh read after it), then unmounts lazily while a
# file is still open and lets the daemon exit.  Fails on any invalid
# access, use of uninitialised memory, or definitely or indirectly lost
# block (valgrind --error-exitcode, --errors-for-leak-kinds=definite,
# indirect).  Slow (valgrind): the store is kept small.
#   usage: tests/test-view-valgrind.sh BUILD_DIR    exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-view-valgrind.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
. "$here/lib-e2e.sh"

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
if ! command -v valgrind >/dev/null; then
	echo "SKIP: valgrind not installed"
	exit 77
fi
# valgrind runs no program at all while a uprobe sits in the dynamic
# loader: `flamefs-collect record` (its loader hook, _dl_debug_state) or
# any other tracer.  valgrind translates the probe's int3 and the program
# dies of SIGTRAP in ld.so before main.  That is this machine's state, not
# the daemon's: say so and skip.
if ! valgrind -q /bin/true >/dev/null 2>&1; then
	echo "SKIP: valgrind cannot run /bin/true here now (a uprobe in ld.so, e.g. a running" \
		"flamefs-collect record: $(bpftool link show 2>/dev/null | grep -c uprobe) uprobe links)"
	exit 77
fi
# A sanitizer build cannot run under valgrind.
if nm "$flamefs" 2>/dev/null | grep -q __asan_init; then
	echo "SKIP: $flamefs is built with AddressSanitizer; valgrind needs a normal build"
	exit 77
fi

e2e_setup valgrind
mkdir -p "$mnt"
pid=
e2e_on_exit() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
}

# ---- a small store ---------------------------------------------------------------
{
	echo "app;main;foo;bar 10"
	echo "app;main;foo 2"
	echo "app;main 1"
	echo "app;main;operator/;leaf 5"
	echo "app;main;..;x 3"
	echo "app;main;total;z 4"
	echo "app;main;100%;w 1"
	printf 'app;main;caf\xc3\xa9;\xff\xfe 3\n'
	echo "app;main;$(printf 'n%.0s' $(seq 300));leaf 7"
	echo "app;main;foo.part.0 3"
	echo "app;main;foo.part.0;z 1"
	echo "app;main;k 5"
	echo "app;main;k 40;r 1"
	awk 'BEGIN { srand(3); for (i = 0; i < 25; i++) {
		s = "app;main"; d = 1 + int(rand() * 3)
		for (j = 0; j < d; j++) s = s ";fn" int(rand() * 4)
		print s, 1 + int(rand() * 20) } }'
} >"$tmp/in.folded"
if ! "$collect" import --store "$store" --format folded "$tmp/in.folded" >"$tmp/import.out" 2>&1; then
	cat "$tmp/import.out"
	bad "import folded"
	exit 1
fi
# Two events, so there are <version>@<event> directories too.
if ! "$collect" import --store "$store" --all-events "$here/data/perf/two-events.perf" \
	>"$tmp/import2.out" 2>&1; then
	cat "$tmp/import2.out"
	bad "import perf"
	exit 1
fi

# Samples with moments (issue 39), across two buckets, and counts without
# one: exact windows, their window files, timelines, heatmaps and a diff
# of two windows read the recent tier.
for k in $(seq 0 59); do
	echo "$((1795000020000000 + 50000000 + k * 250000)) $((k + 1)) main;m$((k % 3));leaf"
done >"$tmp/moments.txt"
echo "- 1795000085 4 40 main;old" >>"$tmp/moments.txt"
if ! "$build/tests/samples-fill" "$store" mo 1 <"$tmp/moments.txt" >"$tmp/fill.out" 2>&1; then
	cat "$tmp/fill.out"
	bad "samples-fill"
	exit 1
fi

# ---- mount under valgrind ----------------------------------------------------------
# valgrind-rocksdb.supp: RocksDB 7.8's own leak on a secondary's reopen
# (8 bytes per column family; see the file), nothing else.
valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
	--errors-for-leak-kinds=definite,indirect --num-callers=30 --log-file="$tmp/vg.log" \
	--suppressions="$here/valgrind-rocksdb.supp" \
	"$flamefs" -f "$store" "$mnt" 2>"$tmp/daemon.err" &
pid=$!
for _ in $(seq 600); do
	mountpoint -q "$mnt" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if ! mountpoint -q "$mnt"; then
	if grep -q 'signal 5 (SIGTRAP)' "$tmp/vg.log" && grep -q 'dl-debug.c' "$tmp/vg.log"; then
		echo "SKIP: a uprobe appeared in ld.so (a flamefs-collect record started meanwhile?):" \
			"valgrind's daemon died of SIGTRAP in _dl_debug_state before main"
		exit 77
	fi
	bad "flamefs did not mount under valgrind: $(cat "$tmp/daemon.err")"
	cat "$tmp/vg.log"
	exit 1
fi
ok "mounted under valgrind"

# walk LABEL: ls -l of every directory, cat of every file (the perf
# recording's trees only to depth 3: valgrind makes each request slow);
# every read must succeed.  Prints "DIRS FILES ERRORS".
walk() {
	local label=$1 errs=0 files=0 dirs=0
	while IFS= read -r -d '' d; do
		dirs=$((dirs + 1))
		ls -la "$d" >/dev/null 2>>"$tmp/$label.err" || errs=$((errs + 1))
	done < <(find "$mnt" -maxdepth 1 -print0; find "$mnt/app" -type d -print0
		find "$mnt"/[!a]* -maxdepth 3 -type d -print0) 2>>"$tmp/$label.err"
	while IFS= read -r -d '' f; do
		files=$((files + 1))
		cat "$f" >/dev/null 2>>"$tmp/$label.err" || errs=$((errs + 1))
	done < <(find "$mnt/app" -type f -print0
		find "$mnt"/[!a]* -maxdepth 4 -type f -print0) 2>>"$tmp/$label.err"
	[ -s "$tmp/$label.err" ] && errs=$((errs + 1))
	echo "$dirs $files $errs"
}

read -r dirs files errs < <(walk walk1)
check_walk() {
	if [ "$3" = 0 ] && [ "$2" -gt 100 ]; then
		ok "$4: $1 directories listed, $2 files read"
	else
		bad "$4: $1 directories, $2 files, $3 errors: $(head -3 "$tmp/$5.err")"
	fi
}
check_walk "$dirs" "$files" "$errs" "first walk" walk1
read -r dirs files errs < <(walk walk2)
check_walk "$dirs" "$files" "$errs" "second walk (caches)" walk2
# views LABEL: issue #13's views of app (a window, a range, a diff, the
# function view with every function's callers and callees), walked whole.
views() {
	local label=$1 errs=0 files=0 f
	ls "$mnt/app/default/@functions" >"$tmp/$label.funcs" 2>>"$tmp/$label.err" || errs=1
	while IFS= read -r -d '' f; do
		files=$((files + 1))
		cat "$f" >/dev/null 2>>"$tmp/$label.err" || errs=$((errs + 1))
	done < <(find "$mnt/@last/1h/app/default" "$mnt/@range/0/9999999999/app/default" \
		"$mnt/app/@diff/default/default" "$mnt/app/default/@functions/"* \
		"$mnt/@range/1795000072.5/1795000083.25" \
		"$mnt/@range/1795000070/1795000075.5/@diff/1795000075.5/1795000090" -type f -print0) \
		2>>"$tmp/$label.err"
	[ -s "$tmp/$label.err" ] && errs=$((errs + 1))
	echo "$(wc -l <"$tmp/$label.funcs") $files $errs"
}
read -r nf files errs < <(views views1)
if [ "$errs" = 0 ] && [ "$nf" -gt 2 ] && [ "$files" -gt 100 ]; then
	ok "views: a window, a range, a diff and $nf functions' callers and callees: $files files read"
else
	bad "views: $nf functions, $files files, $errs errors: $(head -3 "$tmp/views1.err")"
fi
v=$mnt/app/default
if [ "$(cat "$v/total")" = "$(awk '{ s += $NF } END { print s }' "$tmp/in.folded")" ]; then
	ok "total is the input's sum"
else
	bad "total $(cat "$v/total") is not the input's sum"
fi
gzip -t <(cat "$v/pprof") 2>/dev/null && ok "pprof is a whole gzip stream" || bad "pprof is not a gzip stream"
# less polls the file (FUSE poll): the poll handle must not leak.
cmp -s <(less -FX "$v/folded" </dev/null 2>/dev/null) <(cat "$v/folded") && ok "less reads folded" ||
	bad "less read something else"

# ---- live import while mounted: the refresh path -----------------------------------
before=$(cat "$v/total")
exec 7<"$v/folded" # opened in this generation, read after the refresh
echo "app;main;late;later 1000" >"$tmp/late.folded"
"$collect" import --store "$store" --format folded "$tmp/late.folded" >/dev/null 2>&1 ||
	bad "live import"
seen=0
for _ in $(seq 300); do
	if [ "$(cat "$v/total")" = "$((before + 1000))" ]; then
		seen=1
		break
	fi
	sleep 0.1
done
[ "$seen" = 1 ] && ok "the live import shows while mounted" || bad "the live import did not show in 30 s"
if cmp -s <(cat <&7) <(LC_ALL=C sort "$tmp/in.folded" | awk '{ n = $NF; $NF = ""; sub(/ $/, ""); c[$0] += n } END { for (s in c) print s, c[s] }' | LC_ALL=C sort); then
	ok "a file opened before the refresh reads its own snapshot"
else
	bad "a file opened before the refresh changed"
fi
exec 7<&-
read -r dirs files errs < <(walk walk3)
check_walk "$dirs" "$files" "$errs" "walk after the refresh" walk3
read -r nf files errs < <(views views2)
if [ "$errs" = 0 ] && [ "$files" -gt 100 ]; then
	ok "views after the refresh (rebuilt seeded): $files files read"
else
	bad "views after the refresh: $files files, $errs errors: $(head -3 "$tmp/views2.err")"
fi
[ -d "$v/main/late/later" ] && ok "new directory main/late/later" || bad "main/late/later missing"

# ---- lazy unmount with a file still open, then exit ------------------------------------
python3 - "$v/folded" <<'EOF' &
import sys, time
with open(sys.argv[1], "rb") as f:
    f.read(10)
    time.sleep(1.5)
    f.read()
EOF
reader=$!
sleep 0.7
fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt"
wait "$reader"
exited=0
for _ in $(seq 600); do
	if ! kill -0 "$pid" 2>/dev/null; then
		exited=1
		break
	fi
	sleep 0.1
done
if [ "$exited" = 0 ]; then
	bad "flamefs did not exit after the unmount"
	kill -TERM "$pid"
fi
wait "$pid"
rc=$?
pid=
sed -n '/HEAP SUMMARY/,$p' "$tmp/vg.log" | sed 's/^==[0-9]*== /  /'
errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$tmp/vg.log" | tail -n 1)
if [ "$rc" = 0 ] && [ "${errors:-x}" = 0 ]; then
	ok "valgrind: no invalid access, no definitely or indirectly lost block, exit 0"
else
	bad "valgrind: exit $rc, ${errors:-?} errors"
	grep -v '^==[0-9]*== *$' "$tmp/vg.log" | sed -n '/Invalid\|uninitialised\|definitely lost in\|indirectly lost in\|Syscall param/,+25p' | head -150
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all valgrind view checks passed"
exit 0

#!/usr/bin/env bash
# test-view.sh — end-to-end test of the flamefs view: imports folded stacks
# (with nasty frame names) and a real `perf record -g` recording into a
# store, mounts it with the real flamefs daemon, and checks the layout, the
# invariants of every directory, the pprof files (with `go tool pprof` when
# installed), name escaping, read-only behaviour, ordinary tools, live
# updates, error cases and unmounting during a read.
#   usage: tests/test-view.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-view.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
export LC_ALL=C

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi

tmp=$(mktemp -d /tmp/flamefs-test-view.XXXXXX)
mnt=$tmp/mnt
store=$tmp/store
mkdir -p "$mnt" "$tmp/mnt2"
pid=
cleanup() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	fusermount3 -u -z "$tmp/mnt2" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

. "$(dirname "$0")/lib.sh"

mount_fs() {
	"$flamefs" -f "$store" "$mnt" 2>"$tmp/daemon.err" &
	pid=$!
	for _ in $(seq 50); do
		mountpoint -q "$mnt" && return 0
		sleep 0.1
	done
	bad "mount: flamefs did not mount: $(cat "$tmp/daemon.err")"
	exit 1
}

# ---- input: folded stacks with nasty names ----------------------------------
long=$(printf 'std::map<std::basic_string<char>, std::vector<int> >::%.0s' $(seq 19))
long=${long:0:1000}
{
	echo "app;main;foo;bar 10"
	echo "app;main;foo 2"
	echo "app;main 1"
	echo "app;main;operator/;leaf 5"
	echo "app;main;..;x 3"
	echo "app;main;.;y 2"
	echo "app;main;.hidden 2"
	echo "app;main;total;z 4"
	echo "app;main;folded 6"
	echo "app;main;100%;w 1"
	echo "app;main;%41 1"
	printf 'app;main;caf\xc3\xa9;\xff\xfe 3\n'
	echo "app;main;$long;leaf 7"
	echo "app;main;${long}X;leaf 8"
	echo "app;main;a b;c 1"
	echo "app;main;a;x 5"
	echo "app;main;a!;y 6"
	# sibling names that extend others by a byte below ';' (the keyed
	# order in render.c): the own line's weight decides against "k 40;"
	echo "app;main;foo.part.0 3"
	echo "app;main;foo.part.0;z 1"
	echo "app;main;k 5"
	echo "app;main;k 40;r 1"
	echo "app;main;k 5x;q 2"
	echo "app;main;k;s 1"
	# a generated bulk: 3000 distinct stacks
	awk 'BEGIN { srand(7); for (i = 0; i < 3000; i++) {
		s = "app;main"; d = 2 + int(rand() * 8)
		for (j = 0; j < d; j++) s = s ";fn" int(rand() * 12)
		seen[s] += 1 + int(rand() * 50) }
		for (s in seen) print s, seen[s] }'
} >"$tmp/in.raw"
# Merge duplicate stacks the way a store does, then sort.
awk '{ n = $NF; $NF = ""; sub(/ $/, ""); c[$0] += n } END { for (s in c) print s, c[s] }' \
	"$tmp/in.raw" | sort >"$tmp/in.folded"
if ! "$collect" import --store "$store" --format folded "$tmp/in.folded" >"$tmp/import.out" 2>&1; then
	cat "$tmp/import.out"
	bad "import folded"
	exit 1
fi
want_total=$(awk '{ s += $NF } END { print s }' "$tmp/in.folded")

# ---- input: a real perf recording --------------------------------------------
have_perf=0
if command -v perf >/dev/null &&
	perf record -q -g -e cpu-clock -e page-faults -o "$tmp/perf.data" -- \
		sh -c 'head -c 60000000 /dev/urandom | gzip -1 >/dev/null' >/dev/null 2>&1 &&
	perf script -i "$tmp/perf.data" >"$tmp/perf.txt" 2>/dev/null &&
	"$collect" import --store "$store" --format perf --all-events --binary gz \
		"$tmp/perf.txt" >"$tmp/import-perf.out" 2>&1; then
	have_perf=1
else
	echo "SKIP: perf record not usable here; perf checks skipped"
fi

mount_fs
v=$mnt/app/default

# ---- layout ------------------------------------------------------------------
check "root lists binary app" grep -qx app <(ls "$mnt")
check "binary lists version default" test "$(ls "$mnt/app")" = default
check "version dir has the view files" \
	test "$(ls "$v" | grep -E '^(folded|self|total|pprof|name)$' | tr '\n' ' ')" = "folded name pprof self total "
check "version name file is the binary" test "$(cat "$v/name")" = app
check "root folded equals the input" cmp -s "$v/folded" "$tmp/in.folded"
check "root total equals the input's sum" test "$(cat "$v/total")" = "$want_total"
check "main/foo/folded" test "$(cat "$v/main/foo/folded")" = "$(printf 'app;main;foo 2\napp;main;foo;bar 10')"
check "self of main" test "$(cat "$v/main/self")" = 1

# ---- nasty names ---------------------------------------------------------------
check "operator/ escaped" test -d "$v/main/operator%2F"
check "operator/ name file" test "$(cat "$v/main/operator%2F/name")" = "operator/"
check ".. escaped" test "$(cat "$v/main/%2E./name")" = ".."
check ". escaped" test "$(cat "$v/main/%2E/name")" = "."
check ".hidden escaped" test "$(cat "$v/main/%2Ehidden/name")" = ".hidden"
check "total escaped" test "$(cat "$v/main/%74otal/total")" = 4
check "folded escaped" test "$(cat "$v/main/%66olded/self")" = 6
check "% escaped" test "$(cat "$v/main/100%25/name")" = "100%"
check "%41 escaped" test "$(cat "$v/main/%2541/name")" = "%41"
check "non-UTF-8 kept" test "$(cat "$v/main/caf"$'\xc3\xa9'"/"$'\xff\xfe'"/self")" = 3
longdirs=$(ls "$v/main" | grep -c '%~[0-9a-f]\{16\}$')
check "two long names shortened to two directories" test "$longdirs" = 2
ok_long=1
for d in "$v"/main/*%~*; do
	n=$(basename "$d")
	[ "${#n}" -le 255 ] || ok_long=0
	name=$(cat "$d/name")
	case $name in "$long" | "${long}X") ;; *) ok_long=0 ;; esac
	[ "$(cat "$d/leaf/folded")" = "app;main;$name;leaf $(cat "$d/total")" ] || ok_long=0
done
check "long names: <=255 bytes, full name in name file, folded paths full" test "$ok_long" = 1
check "unknown escaped name is ENOENT" test ! -e "$v/main/%41"

# ---- invariants over every directory ------------------------------------------
inv() { # inv VERSION_DIR
	python3 - "$1" <<'EOF'
import os, sys
root = sys.argv[1]
bad = 0; dirs = 0
files = {"folded", "self", "total", "pprof", "name"}
def rd(p):
    with open(p, "rb") as f:
        return f.read()
for d, subdirs, names in os.walk(root):
    dirs += 1
    if not files <= set(names):
        print("missing files in", d); bad += 1; continue
    self_ = int(rd(d + "/self")); total = int(rd(d + "/total"))
    kids = sum(int(rd(os.path.join(d, s, "total"))) for s in subdirs)
    folded = rd(d + "/folded")
    lines = folded.split(b"\n")[:-1]
    fsum = sum(int(l.rsplit(b" ", 1)[1]) for l in lines)
    if total != self_ + kids:
        print("total != self + children in", d, total, self_, kids); bad += 1
    if fsum != total:
        print("sum(folded) != total in", d, fsum, total); bad += 1
    if lines != sorted(lines):
        print("folded not sorted in", d); bad += 1
    if os.stat(d + "/folded").st_size != len(folded):
        print("st_size wrong in", d); bad += 1
    if bad > 5:
        break
print(f"{dirs} directories checked")
sys.exit(1 if bad else 0)
EOF
}
check "invariants hold in every directory of app" inv "$v"

# ---- pprof ----------------------------------------------------------------------
pprof_total() { # sum of the weight (second value) in `go tool pprof -raw`
	go tool pprof -raw "$1" 2>/dev/null |
		awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		     s && /:/ { split($0, a, ":"); split(a[1], v, " "); t += v[2] }
		     END { printf "%.0f\n", t }'
}
if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	ok_pp=1
	for d in "$v" "$v/main" "$v/main/foo" "$v/main/operator%2F"; do
		[ "$(pprof_total "$d/pprof")" = "$(cat "$d/total")" ] || { ok_pp=0; echo "  pprof total differs in $d"; }
	done
	check "pprof totals equal total" test "$ok_pp" = 1
	# -traces: every trace, turned into a folded line, matches the folded file
	go tool pprof -traces -sample_index=1 "$v/pprof" 2>/dev/null | python3 -c '
import sys
out = {}; cur = []; val = None
for line in sys.stdin.read().split("\n"):
    if line.startswith("-----------") or not line.strip():
        if cur:
            k = ";".join(reversed(cur)); out[k] = out.get(k, 0) + val
        cur = []; val = None; continue
    if val is None and line.strip()[0].isdigit() and "  " in line.strip():
        v, f = line.strip().split(None, 1); val = int(v.rstrip("ns")) if v.rstrip("ns").isdigit() else None
        if val is None: continue
        cur.append(f.strip()); continue
    if val is not None:
        cur.append(line.strip())
for k in sorted(out):
    print(k, out[k])
' >"$tmp/traces.folded"
	# pprof prints each frame name as is; compare the plain-ASCII stacks
	grep -av '[^ -~]' "$tmp/in.folded" | grep -v 'std::map' | sort >"$tmp/a"
	grep -av '[^ -~]' "$tmp/traces.folded" | grep -v 'std::map' | sort >"$tmp/b"
	check "pprof -traces agree with folded" cmp -s "$tmp/a" "$tmp/b"
	top=$(go tool pprof -top -sample_index=1 "$v/main/foo/pprof" 2>/dev/null | awk '$NF == "bar" { print $1 }')
	check "pprof -top flat of bar equals bar/self" test "$top" = "$(cat "$v/main/foo/bar/self")"
else
	echo "SKIP: go not installed; pprof checks skipped"
fi

# ---- read-only ----------------------------------------------------------------------
erofs() { "$@" 2>&1 | grep -q "Read-only file system"; }
check "create fails with EROFS" erofs touch "$v/newfile"
check "write fails with EROFS" erofs sh -c "echo 1 > '$v/total'"
check "mkdir fails with EROFS" erofs mkdir "$v/d"
check "rm fails with EROFS" erofs rm -f "$v/total"
check "rmdir fails with EROFS" erofs rmdir "$v/main/foo/bar"
check "mv fails with EROFS" erofs mv "$v/main/foo" "$v/main/foo2"
check "chmod fails with EROFS" erofs chmod 600 "$v/total"

# ---- ordinary tools read the right bytes ------------------------------------------------
ref=$tmp/in.folded
f=$v/folded
check "cat" cmp -s <(cat "$f") "$ref"
check "head -n 3" cmp -s <(head -n 3 "$f") <(head -n 3 "$ref")
check "head -c 100" cmp -s <(head -c 100 "$f") <(head -c 100 "$ref")
check "tail -n 3" cmp -s <(tail -n 3 "$f") <(tail -n 3 "$ref")
check "tail -c 77" cmp -s <(tail -c 77 "$f") <(tail -c 77 "$ref")
check "wc" test "$(wc <"$f")" = "$(wc <"$ref")"
check "cp" sh -c "cp '$f' '$tmp/copy' && cmp -s '$tmp/copy' '$ref'"
check "dd bs=7" cmp -s <(dd if="$f" bs=7 status=none) "$ref"
check "less" cmp -s <(less -FX "$f" </dev/null) "$ref"
check "python read" python3 -c "import sys; sys.exit(open('$f','rb').read() != open('$ref','rb').read())"
check "grep -r finds foo;bar" test "$(grep -r -h -a 'app;main;foo;bar ' "$v/main/foo" | sort -u)" = "app;main;foo;bar 10"
ndirs=$(find "$v" -type d | wc -l)
check "find: one total per directory" test "$(find "$v" -name total | wc -l)" = "$ndirs"
check "ls -l size of total is exact" test "$(stat -c %s "$v/total")" = "$(($(cat "$v/total" | wc -c)))"
# pprof's size is not known without rendering it: stat says 0 until a
# rendering is cached, then that rendering's size, and the file is opened
# with direct_io, so tools read it up to EOF either way.
pp=$tmp/pprof.cat
cat "$v/pprof" >"$pp"
check "stat size of pprof once read: its rendering's" test "$(stat -c %s "$v/pprof")" = "$(wc -c <"$pp")"
check "pprof: cat gives a whole gzip stream" gzip -t "$pp"
check "pprof: cp" sh -c "cp '$v/pprof' '$tmp/pprof.cp' && cmp -s '$tmp/pprof.cp' '$pp'"
check "pprof: dd bs=7" cmp -s <(dd if="$v/pprof" bs=7 status=none) "$pp"
check "pprof: head -c 100" cmp -s <(head -c 100 "$v/pprof") <(head -c 100 "$pp")
check "pprof: tail -c 77" cmp -s <(tail -c 77 "$v/pprof") <(tail -c 77 "$pp")
check "pprof: python read" python3 -c "import sys; sys.exit(open('$v/pprof','rb').read() != open('$pp','rb').read())"
# Repeated opens are served from the render cache and the page cache.
check "folded read again (cached) is right" cmp -s <(cat "$f"; cat "$f") <(cat "$ref" "$ref")
# Entry types come with the listing (d_type), so find needs no stat per file.
dtypes() { # dir: "name type" per entry, type from readdir(3) itself
	python3 - "$1" <<'PY'
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class Dirent(ctypes.Structure):
    _fields_ = [("ino", ctypes.c_uint64), ("off", ctypes.c_int64), ("reclen", ctypes.c_ushort),
                ("type", ctypes.c_ubyte), ("name", ctypes.c_char * 256)]
libc.opendir.restype = ctypes.c_void_p
libc.readdir.restype = ctypes.POINTER(Dirent)
libc.readdir.argtypes = [ctypes.c_void_p]
libc.closedir.argtypes = [ctypes.c_void_p]
d = libc.opendir(sys.argv[1].encode())
while True:
    e = libc.readdir(d)
    if not e:
        break
    print(e.contents.name.decode(), e.contents.type)
libc.closedir(d)
PY
}
check "readdir gives d_type (files 8, dirs 4)" test "$(dtypes "$v/main" | grep -E '^(total|main|foo) ' | sort | tr '\n' ' ')" = "foo 4 total 8 "

# ---- perf: a real recording, two events -------------------------------------------------
if [ "$have_perf" = 1 ]; then
	pv=$(ls "$mnt/gz" | head -n 1)
	evs=$(ls "$mnt/gz" | grep -c '@' || true)
	check "perf binary dir lists versions and version@event dirs (got: $(ls "$mnt/gz" | tr '\n' ' '))" \
		test "$evs" -ge 2
	check "perf version dir shows cpu-clock" \
		test "$(cat "$mnt/gz/$pv/total")" = "$(cat "$mnt/gz/$pv@cpu-clock/total")"
	check "perf: folded equals export" cmp -s "$mnt/gz/$pv/folded" \
		<("$collect" export --store "$store" --format folded --binary gz --event cpu-clock 2>/dev/null)
	check "invariants hold in every directory of the perf tree" inv "$mnt/gz/$pv"
	for e in "$mnt"/gz/*@*; do
		check "invariants hold for $(basename "$e")" inv "$e"
		if command -v go >/dev/null; then
			check "pprof total of $(basename "$e")" test "$(pprof_total "$e/pprof")" = "$(cat "$e/total")"
		fi
	done
fi

# ---- live update -------------------------------------------------------------------------
echo "app;main;late 1000" >"$tmp/late.folded"
before=$(cat "$v/total")
"$collect" import --store "$store" --format folded "$tmp/late.folded" >/dev/null 2>&1
start=$(date +%s%N)
seen=0
while [ $(($(date +%s%N) - start)) -lt 2000000000 ]; do
	if [ "$(cat "$v/total")" = "$((before + 1000))" ] && [ -d "$v/main/late" ]; then
		seen=1
		break
	fi
	sleep 0.1
done
check "new data shows within 2 s without remount ($((($(date +%s%N) - start) / 1000000)) ms)" test "$seen" = 1
check "folded after update" test "$(grep -c '^app;main;late 1000$' "$v/folded")" = 1

# ---- error cases -------------------------------------------------------------------------
errcase() { # errcase DESCRIPTION STORE MOUNTPOINT (not mounted afterwards)
	local what=$1 out rc was=0
	mountpoint -q "$3" 2>/dev/null && was=1
	out=$(timeout 20 "$flamefs" "$2" "$3" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
		[ -n "$out" ] && { [ "$was" = 1 ] || ! mountpoint -q "$3" 2>/dev/null; }; then
		ok "$what: $out"
	else
		bad "$what (rc=$rc): $out"
	fi
}
mkdir -p "$tmp/notastore"
echo hello >"$tmp/notastore/file"
errcase "missing store" "$tmp/nostore" "$tmp/mnt2"
errcase "not a store" "$tmp/notastore" "$tmp/mnt2"
errcase "missing mountpoint" "$store" "$tmp/nomnt"
errcase "mountpoint is a file" "$store" "$tmp/notastore/file"
errcase "busy mountpoint" "$store" "$mnt"
check "not-a-store dir left untouched" test "$(ls "$tmp/notastore")" = file
out=$("$flamefs" -o rw "$store" "$tmp/mnt2" 2>&1)
check "rw is refused" test $? -ne 0 -a -n "$out"
check "--help has EXAMPLES" sh -c "'$flamefs' --help | grep -q EXAMPLES"
check "--version" sh -c "'$flamefs' --version | grep -q '^flamefs '"

# ---- unmount while a file is being read ----------------------------------------------------
# The reader says when it has the file open (python may take a second
# to start on a busy machine), then reads the rest after the unmount.
python3 - "$v/folded" "$tmp/partial" "$tmp/reading" <<'EOF' &
import sys, time
with open(sys.argv[1], "rb") as f:
    head = f.read(10)
    open(sys.argv[3], "w").close()
    time.sleep(2)
    rest = f.read()
open(sys.argv[2], "wb").write(head + rest)
EOF
reader=$!
for _ in $(seq 100); do
	[ -e "$tmp/reading" ] && break
	sleep 0.1
done
fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt"
wait "$reader"
check "reader got the whole file across a lazy unmount" cmp -s "$tmp/partial" <(cat "$tmp/in.folded" "$tmp/late.folded" | sort)
exited=0
for _ in $(seq 100); do
	if ! kill -0 "$pid" 2>/dev/null; then exited=1; break; fi
	sleep 0.1
done
check "daemon exits after unmount" test "$exited" = 1
wait "$pid"
check "daemon exit status 0" test $? = 0
pid=

# ---- SIGTERM unmounts cleanly --------------------------------------------------------------
mount_fs
kill -TERM "$pid"
wait "$pid"
rc=$?
check "SIGTERM: exit status 0" test "$rc" = 0
check "SIGTERM: unmounted" test -z "$(mountpoint -q "$mnt" && echo mounted)"
pid=

# ---- daemon mode (no -f) and -o pass-through ----------------------------------------------
if "$flamefs" -o noauto,_netdev,ro,nofail "$store" "$mnt" 2>"$tmp/bg.err"; then
	check "background mount serves files" test "$(cat "$v/total")" = "$((want_total + 1000))"
	fusermount3 -u "$mnt"
else
	bad "background mount: $(cat "$tmp/bg.err")"
fi

# ---- /etc/fstab: mount(8) runs mount.fuse3, which runs `flamefs STORE MNT -o ro,...` ----
# mount(8) resets PATH for its helpers, so call mount.fuse3 directly with
# the build's flamefs first on PATH: the same argument order and options an
# fstab line "STORE MNT fuse.flamefs ro,noauto,_netdev,nofail 0 0" gives.
if command -v mount.fuse3 >/dev/null; then
	if PATH="$(dirname "$flamefs"):$PATH" mount.fuse3 "$store" "$mnt" -t flamefs \
		-o ro,noauto,_netdev,nofail 2>"$tmp/fstab.err"; then
		check "mount.fuse3 (fstab) mount serves files" test "$(cat "$v/total")" = "$((want_total + 1000))"
		fusermount3 -u "$mnt"
	else
		bad "mount.fuse3 (fstab) mount: $(cat "$tmp/fstab.err")"
	fi
else
	echo "SKIP: mount.fuse3 not installed"
fi

finish

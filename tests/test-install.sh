#!/usr/bin/env bash
# test-install.sh — `meson install` into a temporary root, then the
# installed programs used as a user would: --version and --help of every
# command, an import/export round trip, the store from $FLAMEFS_STORE, a
# mount through mount.fuse3 and through mount(8) and /etc/fstab (in a
# private mount namespace, so the installed flamefs is the one mount(8)
# finds), and the installed flamefs-top and flamefs-flamegraph on that mount.
#   usage: tests/test-install.sh BUILD_DIR VERSION   exit 0 ok, 1 failure
# Parts that need /dev/fuse or unshare(1) print SKIP and are left out.
set -u
build=${1:?usage: test-install.sh BUILD_DIR VERSION}
version=${2:?usage: test-install.sh BUILD_DIR VERSION}
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
. "$here/lib-install.sh"

tmp=$(mktemp -d /tmp/flamefs-test-install.XXXXXX)
mnt=$tmp/mnt
store=$tmp/store
mkdir -p "$mnt"
cleanup() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! install_tree "$tmp/root"; then
	echo "FAIL - meson install --destdir"
	exit 1
fi
ok "meson install --destdir (prefix $prefix)"

# ---- what is installed where --------------------------------------------------
for p in flamefs flamefs-collect flamefs-top flamefs-flamegraph; do
	check "bin/$p installed and executable" test -x "$bindir/$p"
done
check "man pages in man1" test -f "$mandir/flamefs.1" -a -f "$mandir/flamefs-collect.1"
check "bash completions named after the commands" \
	test -f "$compdir/flamefs" -a -f "$compdir/flamefs-collect"
for u in flamefs-record.service flamefs@.service flamefs-compact.service flamefs-compact.timer; do
	check "systemd unit $u" test -f "$unitdir/$u"
done
check "example drop-ins with the documentation, not as units" \
	test -f "$exampledir/frequency.conf" -a ! -e "$unitdir/flamefs-record.service.d"

collect=$bindir/flamefs-collect
flamefs=$bindir/flamefs

# ---- --version and --help ---------------------------------------------------------
check "flamefs-collect --version" test "$("$collect" --version)" = "flamefs-collect $version"
check "flamefs-collect -V" test "$("$collect" -V)" = "flamefs-collect $version"
check "flamefs --version" \
	test "$("$flamefs" --version | sed 's/ (libfuse .*)$//')" = "flamefs $version"
check "flamefs -V" test "$("$flamefs" -V | sed 's/ (libfuse .*)$//')" = "flamefs $version"
help_ok() { # help_ok COMMAND...: exit 0, a usage line and an EXAMPLES section
	local out
	out=$("$@" 2>&1) || return 1
	grep -q '^Usage: \|^usage: ' <<<"$out" && grep -q '^EXAMPLES$' <<<"$out"
}
check "flamefs --help" help_ok "$flamefs" --help
check "flamefs -h" help_ok "$flamefs" -h
check "flamefs-collect --help" help_ok "$collect" --help
for c in import record stats export compact; do
	check "flamefs-collect $c --help" help_ok "$collect" "$c" --help
	check "flamefs-collect $c -h" help_ok "$collect" "$c" -h
done
check "flamefs-top --help" help_ok "$bindir/flamefs-top" --help
check "flamefs-flamegraph --help" help_ok "$bindir/flamefs-flamegraph" --help
"$collect" bogus >/dev/null 2>&1
check "flamefs-collect with an unknown command exits 2" test $? -eq 2
"$collect" compact --bogus >/dev/null 2>&1
check "flamefs-collect compact --bogus exits 2" test $? -eq 2
"$bindir/flamefs-top" --bogus >/dev/null 2>&1
check "flamefs-top --bogus exits 2" test $? -eq 2

# ---- import and export with the installed binaries --------------------------------
long=long_$(printf 'x%.0s' $(seq 300))
cat >"$tmp/in.folded" <<EOF
app;main;compute;hot_leaf 80
app;main;compute 10
app;main;io;hot_leaf 40
app;main;io;read file 20
app;main;operator/ 15
app;main;rec;rec;rec 25
app;main;100% 5
app;main;$long;tail 5
EOF
if "$collect" import --store "$store" "$tmp/in.folded" >"$tmp/import.out" 2>&1; then
	ok "import"
else
	bad "import: $(cat "$tmp/import.out")"
fi
"$collect" export --store "$store" >"$tmp/export.folded" 2>"$tmp/export.err"
check "export gives back the imported stacks, sorted" \
	cmp -s "$tmp/export.folded" <(sort "$tmp/in.folded")
"$collect" export --store "$store" --format pprof -o "$tmp/export.pb.gz" 2>>"$tmp/export.err"
check "export --format pprof -o writes a gzip file" \
	test "$(head -c 2 "$tmp/export.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b
FLAMEFS_STORE=$tmp/envstore "$collect" import --binary envapp "$tmp/in.folded" 2>/dev/null
check "FLAMEFS_STORE names the store when --store is not given" \
	grep -q '^envapp ' <("$collect" stats --store "$tmp/envstore")

# ---- the view, mounted with the installed flamefs ----------------------------------
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null || ! command -v mount.fuse3 >/dev/null; then
	echo "SKIP: /dev/fuse, fusermount3 or mount.fuse3 missing: no mount, flamefs-top or flamefs-flamegraph checks"
	finish
fi

wait_mounted() {
	for _ in $(seq 50); do
		mountpoint -q "$mnt" && return 0
		sleep 0.1
	done
	return 1
}

# allow_other needs root, or user_allow_other in /etc/fuse.conf.
other=,allow_other
if [ "$(id -u)" -ne 0 ] && ! grep -qs '^user_allow_other' /etc/fuse.conf; then
	echo "note: not root and no user_allow_other in /etc/fuse.conf: mounting without allow_other"
	other=
fi
# mount.fuse3 run directly keeps PATH, so any prefix works.
if PATH="$bindir:$PATH" mount.fuse3 "$store" "$mnt" -t flamefs -o "ro$other,noauto" \
	2>"$tmp/mount.err" && wait_mounted; then
	ok "mount.fuse3 -t flamefs mounts with the installed flamefs"
else
	bad "mount.fuse3 -t flamefs: $(cat "$tmp/mount.err")"
	finish
fi
v=$mnt/app/default
check "the mount is ro${other:+ and allow_other}" \
	grep -q " $mnt fuse.flamefs ro,.*${other#,}" /proc/self/mounts
check "total of the version is the input's sum" test "$(cat "$v/total")" = 200

# flamefs-top: the expected rankings of the input above.
row() { printf '%14s %6s%%  %s\n' "$@"; }
{
	row 120 60.00 hot_leaf
	row 25 12.50 rec
	row 20 10.00 "read file"
	row 15 7.50 "operator/"
	row 10 5.00 compute
	row 5 2.50 "100%"
	row 5 2.50 tail
} >"$tmp/top-self.want"
"$bindir/flamefs-top" "$v" >"$tmp/top-self.got" 2>&1
check "flamefs-top ranks functions by self (names decoded, ties by name)" \
	cmp -s "$tmp/top-self.got" "$tmp/top-self.want"
{
	row 200 100.00 main
	row 120 60.00 hot_leaf
	row 90 45.00 compute
	row 60 30.00 io
	row 25 12.50 rec
	row 20 10.00 "read file"
	row 15 7.50 "operator/"
	row 5 2.50 "100%"
	row 5 2.50 "$long"
	row 5 2.50 tail
} >"$tmp/top-total.want"
"$bindir/flamefs-top" --total -n 0 "$v" >"$tmp/top-total.got" 2>&1
check "flamefs-top --total (recursion once, a shortened name read whole)" \
	cmp -s "$tmp/top-total.got" "$tmp/top-total.want"
{
	row 80 40.00 "compute;hot_leaf"
	row 40 20.00 "io;hot_leaf"
	row 25 12.50 "rec;rec;rec"
} >"$tmp/top-paths.want"
(cd "$v/main" && "$bindir/flamefs-top" -p -n 3) >"$tmp/top-paths.got" 2>&1
check "flamefs-top --paths -n 3 in the current directory" \
	cmp -s "$tmp/top-paths.got" "$tmp/top-paths.want"
if [ "$failures" -ne 0 ]; then
	diff -u "$tmp/top-self.want" "$tmp/top-self.got"
	diff -u "$tmp/top-total.want" "$tmp/top-total.got"
	diff -u "$tmp/top-paths.want" "$tmp/top-paths.got"
fi
"$bindir/flamefs-top" "$mnt/app" >/dev/null 2>"$tmp/top.err"
check "flamefs-top refuses a directory that is not a call tree (exit 1)" \
	test $? -eq 1 -a -s "$tmp/top.err"

# flamefs-flamegraph: the renderer found here, a preferred one, and none.
fg=$bindir/flamefs-flamegraph
if [ -n "$("$fg" --list)" ]; then
	if "$fg" -o "$tmp/fg.svg" "$v" 2>"$tmp/fg.err"; then
		check "flamefs-flamegraph ($("$fg" --list | head -n 1)) draws an SVG with a known frame" \
			grep -q 'hot_leaf' "$tmp/fg.svg"
		check "... and it is an SVG" grep -q '<svg' "$tmp/fg.svg"
	else
		bad "flamefs-flamegraph: $(cat "$tmp/fg.err")"
	fi
else
	echo "SKIP: no flame graph renderer installed (flamegraph.pl, inferno-flamegraph, or go and dot)"
fi
mkdir -p "$tmp/stub"
cat >"$tmp/stub/flamegraph.pl" <<'EOF'
#!/bin/sh
# A stand-in renderer: prints its arguments and its input inside <svg>.
echo "<svg>"
for a; do echo "arg: $a"; done
eval "cat \"\${$#}\""
echo "</svg>"
EOF
chmod +x "$tmp/stub/flamegraph.pl"
PATH="$tmp/stub:$PATH" "$fg" -r flamegraph.pl --title T "$v/main/io" -- --width 99 >"$tmp/stub.svg" 2>"$tmp/stub.err"
check "flamefs-flamegraph -r flamegraph.pl feeds it the directory's folded" \
	grep -q '^app;main;io;read file 20$' "$tmp/stub.svg"
check "... with the title and the extra arguments" \
	grep -q '^arg: --width$' "$tmp/stub.svg"
# A PATH with the basic tools but no renderer: the view's own flame.svg,
# with the title given.
mkdir -p "$tmp/bare"
for t in sh cat grep mktemp rm mv sed; do ln -s "$(command -v "$t")" "$tmp/bare/$t"; done
PATH="$tmp/stub:$PATH" "$fg" --title 'a <b> & c|d' "$v" >"$tmp/own.svg" 2>"$tmp/own.err"
check "flamefs-flamegraph prefers the view's own flame.svg, titled" \
	grep -q '<text id="title" [^>]*>a &lt;b&gt; &amp; c|d</text>' "$tmp/own.svg"
PATH=$tmp/bare "$fg" -o "$tmp/bare.svg" "$v/main" 2>"$tmp/bare.err"
check "... with no other renderer installed" grep -q 'hot_leaf' "$tmp/bare.svg"
# A directory with folded and pprof but no flame.svg (an older view).
mkdir -p "$tmp/old"
cp "$v/folded" "$v/pprof" "$tmp/old/"
PATH=$tmp/bare "$fg" "$tmp/old" >/dev/null 2>"$tmp/none.err"
rc=$?
check "flamefs-flamegraph without a renderer exits 1 and says what to install" \
	test $rc -eq 1 -a -n "$(grep flamegraph.pl "$tmp/none.err")" -a -n "$(grep graphviz "$tmp/none.err")"
"$fg" -r flamegraph.pl "$mnt/app" >/dev/null 2>&1
check "flamefs-flamegraph -r with a missing renderer or a bad directory exits 1" test $? -eq 1

fusermount3 -u "$mnt"
check "unmounted" sh -c "! mountpoint -q '$mnt'"

# ---- mount(8) and /etc/fstab ---------------------------------------------------------
# mount(8) runs mount.fuse3 without PATH, and its shell then finds flamefs
# in its default path (/usr/local/bin among others).  In a private mount
# namespace the installed bin directory is put on /usr/local/bin and a
# test fstab on /etc/fstab, so that what runs is the installed flamefs from
# exactly the fstab line docs/view.md gives.
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
	echo "SKIP: not root or unshare -m not permitted: no mount(8)/fstab check"
	finish
fi
echo "$store $mnt fuse.flamefs ro,allow_other,noauto 0 0" >"$tmp/fstab"
cat >"$tmp/ns.sh" <<EOF
set -u
mount --make-rprivate /
mount --bind "$bindir" /usr/local/bin
mount --bind "$tmp/fstab" /etc/fstab
fails=0
if mount "$mnt" 2>"$tmp/ns.err" && [ "\$(cat "$mnt/app/default/main/total")" = 200 ]; then
	echo "ok   - mount MOUNTPOINT from an fstab line mounts the view"
	grep " $mnt " /proc/self/mounts | grep -q ' fuse.flamefs ro,' ||
		{ echo "FAIL - fstab mount is not fuse.flamefs ro"; fails=1; }
	umount "$mnt" || { echo "FAIL - umount of the fstab mount"; fails=1; }
else
	echo "FAIL - fstab mount: \$(cat "$tmp/ns.err")"
	fails=1
fi
if mount -t fuse.flamefs -o ro,allow_other "$store" "$mnt" 2>"$tmp/ns.err" &&
	[ "\$(cat "$mnt/app/default/self")" = 0 ]; then
	echo "ok   - mount -t fuse.flamefs"
	umount "$mnt" || { echo "FAIL - umount"; fails=1; }
else
	echo "FAIL - mount -t fuse.flamefs: \$(cat "$tmp/ns.err")"
	fails=1
fi
exit \$fails
EOF
if unshare -m bash "$tmp/ns.sh"; then
	ok "mount(8) and fstab in a private namespace"
else
	bad "mount(8) and fstab in a private namespace"
fi

finish

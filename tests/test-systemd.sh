#!/usr/bin/env bash
# test-systemd.sh — the installed systemd units (contrib/systemd/):
# `systemd-analyze verify` is silent on each of them, with the example
# drop-ins in place too, in a private mount namespace where the installed
# tree sits at its real prefix (so ExecStart= binaries and man pages are
# where the units say).  Then each unit's command line is run as systemd
# would run it, with the store and mount point moved to a temporary
# directory: the recorder records (when BPF is usable here), the view
# mounts and unmounts on SIGTERM, and the compaction script stops and
# restarts an active recorder around `compact` (with a stand-in systemctl).
#   usage: tests/test-systemd.sh BUILD_DIR   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-systemd.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
. "$here/lib-install.sh"

if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP: systemd-analyze not installed"
	exit 77
fi
tmp=$(mktemp -d /tmp/flamefs-test-systemd.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	fusermount3 -u -z "$tmp/mnt" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! install_tree "$tmp/root"; then
	echo "FAIL - meson install --destdir"
	exit 1
fi
root=$tmp/root
units="flamefs-record.service flamefs@mnt-prof.service flamefs-compact.service flamefs-compact.timer"

# ---- the units point at the installed programs ------------------------------------
rec=$unitdir/flamefs-record.service
check "record: ExecStart= is the installed flamefs-collect recording everything into /var/lib/flamefs" \
	grep -qx "ExecStart=$prefix/bin/flamefs-collect record -a --store /var/lib/flamefs .*" "$rec"
check "view: ExecStart= is the installed flamefs" \
	grep -qx "ExecStart=$prefix/bin/flamefs -f .*%f" "$unitdir/flamefs@.service"
check "compact: runs the installed flamefs-collect compact" \
	grep -q "$prefix/bin/flamefs-collect compact --store /var/lib/flamefs" "$unitdir/flamefs-compact.service"

# ---- systemd-analyze verify ------------------------------------------------------------
if [ "$prefix" = /usr ] || [ "$prefix" = / ]; then
	echo "SKIP: prefix $prefix cannot be stood in for in a namespace: no systemd-analyze verify"
elif [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
	echo "SKIP: not root or unshare -m not permitted: no systemd-analyze verify"
else
	ulive=${unitdir#"$root"}
	cat >"$tmp/verify.sh" <<EOF
set -u
mount --make-rprivate /
mkdir -p "$prefix" && mount --bind "$root$prefix" "$prefix" || exit 2
cd "$ulive" || exit 2
echo "== the units as installed"
systemd-analyze verify $units 2>&1 || echo "exit status \$?"
# The example drop-ins, as an admin would put them.
mount -t tmpfs tmpfs /etc/systemd/system || exit 2
mkdir -p /etc/systemd/system/flamefs-record.service.d
cp "${exampledir#"$root"}"/*.conf /etc/systemd/system/flamefs-record.service.d/ || exit 2
echo "== with the example drop-ins"
systemd-analyze verify flamefs-record.service 2>&1 || echo "exit status \$?"
EOF
	out=$(unshare -m bash "$tmp/verify.sh" 2>&1)
	rc=$?
	# Only the two headings may be printed.
	check "systemd-analyze verify is silent on $units, and with the example drop-ins" \
		test $rc -eq 0 -a "$(grep -vc '^== ' <<<"$out")" -eq 0
	[ "$(grep -vc '^== ' <<<"$out")" -eq 0 ] || echo "$out"
fi

# ---- the command lines, run as systemd runs them ---------------------------------
# unit_exec UNIT KEY [DROPIN...]: the KEY= command line with continuation
# lines joined, "$$" as "$", ${VAR} and $VAR from the unit's (and the
# drop-ins') Environment= lines, /var/lib/flamefs as $tmp/store, %f as
# $tmp/mnt and the prefix's bin directory as the installed one.
unit_exec() {
	local unit=$1 key=$2 line f var val
	shift 2
	line=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$unit" | sed -n "s/^$key=//p" | tail -n 1)
	local -A env=()
	for f in "$unit" "$@"; do # a later assignment wins, as in systemd
		while IFS='=' read -r var val; do
			env[$var]=$val
		done < <(sed -n 's/^Environment=//p' "$f" | sed 's/^"\(.*\)"$/\1/')
	done
	for var in "${!env[@]}"; do
		line=${line//\$\{$var\}/${env[$var]}}
		line=${line//\$$var/${env[$var]}}
	done
	line=${line//\$\$/\$}
	line=${line//\/var\/lib\/flamefs/$tmp\/store}
	line=${line//$prefix\/bin\//$bindir\/}
	printf '%s\n' "${line//%f/$tmp/mnt}"
}

collect=$bindir/flamefs-collect
printf 'app;main;work 7\n' >"$tmp/in.folded"

# The recorder, for 2 s, with the defaults and with frequency.conf.
cmd=$(unit_exec "$rec" ExecStart)
check "record: the default frequency is 99 Hz" grep -q -- ' -F 99 *$' <<<"$cmd"
cmd49=$(unit_exec "$rec" ExecStart "$exampledir/frequency.conf")
check "record: frequency.conf makes it 49 Hz" grep -q -- ' -F 49 *$' <<<"$cmd49"
# A busy shell, so that a quiet machine still has samples in 2 s.
sh -c 'while :; do :; done' &
spin=$!
# shellcheck disable=SC2086 # the command line is split into words as systemd does
$cmd49 -d 2 >"$tmp/record.out" 2>&1
rc=$?
kill "$spin"
wait "$spin" 2>/dev/null
if grep -q 'needs CAP_BPF\|no BPF sampler\|failed to load\|Operation not permitted' "$tmp/record.out"; then
	echo "SKIP: BPF not usable here: the recorder's command line is not run ($(head -n 1 "$tmp/record.out"))"
else
	check "record: the unit's command line records the system into the store" \
		test $rc -eq 0 -a -n "$("$collect" stats --store "$tmp/store" 2>/dev/null | grep ' cpu-clock ')"
	[ $rc -eq 0 ] || cat "$tmp/record.out"
	# retention.conf: an import 40 days old goes at the first drain.
	cmdret=$(unit_exec "$rec" ExecStart "$exampledir/retention.conf")
	check "record: retention.conf adds --retention=30d" grep -q -- ' --retention=30d *$' <<<"$cmdret"
	printf 'ancient;main 3\n' >"$tmp/ancient.folded"
	"$collect" import --store "$tmp/store" --time $(($(date +%s) - 40 * 86400)) "$tmp/ancient.folded" >/dev/null 2>&1
	# shellcheck disable=SC2086
	$cmdret -d 1 >"$tmp/record-ret.out" 2>&1
	check "record: with retention.conf the 40-day-old import is pruned" \
		test $? -eq 0 -a -z "$("$collect" stats --store "$tmp/store" 2>/dev/null | grep '^ancient ')"
	# events.conf: more than CPU; a sleeper gives off-CPU time in 2 s.
	cmdev=$(unit_exec "$rec" ExecStart "$exampledir/events.conf")
	check "record: events.conf adds -e cpu,offcpu,rss,block,net" \
		grep -q -- ' -e cpu,offcpu,rss,block,net --offcpu-min 100us *$' <<<"$cmdev"
	sh -c 'while :; do sleep 0.05; done' &
	napper=$!
	# shellcheck disable=SC2086
	$cmdev -d 2 >"$tmp/record-ev.out" 2>&1
	rc=$?
	kill "$napper"
	wait "$napper" 2>/dev/null
	check "record: with events.conf the store holds an off-cpu series" \
		test $rc -eq 0 -a -n "$("$collect" stats --store "$tmp/store" 2>/dev/null | grep ' off-cpu ')"
	[ $rc -eq 0 ] || cat "$tmp/record-ev.out"
fi

# The view: mounts in the foreground, unmounts on SIGTERM (systemctl stop).
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: not root: the view unit's command line (allow_other, as the unit runs it) is not run"
elif [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	"$collect" import --store "$tmp/store" "$tmp/in.folded" >/dev/null 2>&1
	mkdir -p "$tmp/mnt"
	cmd=$(unit_exec "$unitdir/flamefs@.service" ExecStart)
	# shellcheck disable=SC2086
	$cmd 2>"$tmp/view.err" &
	pid=$!
	for _ in $(seq 50); do
		mountpoint -q "$tmp/mnt" && break
		sleep 0.1
	done
	check "view: the unit's command line mounts the store on %f" \
		test "$(cat "$tmp/mnt/app/default/main/work/total" 2>/dev/null)" = 7
	check "view: mounted ro,default_permissions,allow_other" \
		grep -qE " $tmp/mnt fuse.flamefs ro,.*default_permissions.*allow_other" /proc/self/mounts
	chmod 0755 "$tmp" # the mount point is reachable; the view's modes decide
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$tmp/mnt/app/default/main/work/total" 2>&1)
	check "view: another user cannot read a store of mode 0700 (got: $out)" \
		test -n "$out" -a -z "${out##*Permission denied*}"
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	pid=
	check "view: SIGTERM unmounts and exits 0" test $rc -eq 0 -a -z "$(grep " $tmp/mnt " /proc/self/mounts)"
else
	echo "SKIP: /dev/fuse or fusermount3 missing: the view unit's command line is not run"
fi

# The compaction script, with a stand-in systemctl that logs its calls and
# says the recorder is active.
mkdir -p "$tmp/stub"
cat >"$tmp/stub/systemctl" <<EOF
#!/bin/sh
echo "systemctl \$*" >>"$tmp/calls"
[ "\$1" = is-active ] && echo active
exit 0
EOF
chmod +x "$tmp/stub/systemctl"
cat >"$tmp/stub/flamefs-collect" <<EOF
#!/bin/sh
echo "flamefs-collect \$*" >>"$tmp/calls"
exec "$collect" "\$@"
EOF
chmod +x "$tmp/stub/flamefs-collect"
cmd=$(unit_exec "$unitdir/flamefs-compact.service" ExecStart)
cmd=${cmd//$bindir\/flamefs-collect/$tmp/stub/flamefs-collect}
script=${cmd#/bin/sh -c \'}
script=${script%\'}
PATH="$tmp/stub:$PATH" sh -c "$script" >"$tmp/compact.out" 2>&1
rc=$?
printf '%s\n' "systemctl is-active flamefs-record.service" "systemctl stop flamefs-record.service" \
	"flamefs-collect compact --store $tmp/store" "systemctl start flamefs-record.service" >"$tmp/calls.want"
check "compact: stops an active recorder, compacts, starts it again, exit 0" \
	test $rc -eq 0 -a "$(cat "$tmp/calls" 2>/dev/null)" = "$(cat "$tmp/calls.want")"
[ $rc -eq 0 ] || cat "$tmp/compact.out"

finish

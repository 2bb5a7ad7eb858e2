#!/usr/bin/env bash
# test-prune.sh — retention: `flamefs-collect prune` deletes whole time
# buckets older than a cut-off (by age, by time, or everything of a
# binary), lowers the totals, leaves perf-clock series alone under
# --older-than, refuses bad arguments and a busy store, writes nothing on
# --dry-run, and a mounted view drops a pruned series without a remount.
#   usage: tests/test-prune.sh BUILD_DIR      exit 0 ok, 1 failure
set -u
build=${1:?usage: test-prune.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
. "$here/lib-e2e.sh"
e2e_setup prune
mkdir -p "$mnt"
pid=
holder=
e2e_on_exit() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
}
# series STORE: "binary samples" per listed series.
series() { "$collect" stats --store "$1" | awk 'NR > 1 && NF == 9 && $4 ~ /^[0-9]+$/ { print $1, $4 }'; }

now=$(date +%s)
printf 'app;main;old 5\napp;main;older 1\n' >"$tmp/old.folded"
printf 'app;main;new 7\n' >"$tmp/new.folded"
printf 'db;main;query 3\n' >"$tmp/db.folded"
"$collect" import --store "$store" --time $((now - 10 * 86400)) "$tmp/old.folded" 2>/dev/null
"$collect" import --store "$store" --time "$now" "$tmp/new.folded" 2>/dev/null
"$collect" import --store "$store" --time $((now - 3 * 86400)) "$tmp/db.folded" 2>/dev/null
"$collect" import --store "$store" "$here/data/perf/loop.perf" 2>/dev/null
"$collect" export --store "$store" --binary app >"$tmp/app.before"

# ---- arguments -----------------------------------------------------------------
usage_error() { # usage_error WHAT EXPECTED-TEXT ARGS...
	local what=$1 want=$2
	shift 2
	out=$("$collect" prune --store "$store" "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 2 ] && [ -z "${out##*"$want"*}" ]; then
		ok "$what: exit 2, '$want'"
	else
		bad "$what: exit $rc: $out"
	fi
}
usage_error "unknown unit" 'not a duration' --older-than 7x
usage_error "empty duration" 'not a duration' --older-than ''
usage_error "signed duration" 'not a duration' --older-than -1d
usage_error "bare number after a unit" 'not a duration' --older-than 12h5
usage_error "duration too long" 'too long' --older-than 99999999999999999999d
usage_error "no cut-off" 'exactly one of' --binary app
usage_error "two cut-offs" 'exactly one of' --older-than 1d --all --binary app
usage_error "--all without --binary" '--all needs --binary' --all
usage_error "--before not a number" 'expected a time in seconds' --before yesterday
"$collect" prune --help | grep -q EXAMPLES && ok "--help has EXAMPLES" || bad "--help has no EXAMPLES"
check "nothing changed by refused calls" \
	cmp -s <("$collect" export --store "$store" --binary app) "$tmp/app.before"

# ---- --dry-run -------------------------------------------------------------------
out=$("$collect" prune --store "$store" --older-than 1d12h --dry-run 2>&1)
check "dry run says what would go (got: $out)" \
	test "$(echo "$out" | head -1)" = "would delete 2 time buckets of 2 series (1 emptied): 9 samples, weight 9"
check "dry run names the perf-clock series it leaves alone" \
	test "$(echo "$out" | tail -1)" = "left alone: 1 series on perf's clock (prune them with --before or --all)"
check "dry run deletes nothing" \
	cmp -s <("$collect" export --store "$store" --binary app) "$tmp/app.before"

# ---- --older-than: only buckets wholly older; perf's clock untouched --------------
out=$("$collect" prune --store "$store" --older-than 7d 2>&1)
check "prune --older-than 7d (got: $out)" \
	test "$(echo "$out" | head -1)" = "deleted 1 time buckets of 1 series (0 emptied): 6 samples, weight 6"
check "app keeps only what is newer than 7 days" \
	test "$("$collect" export --store "$store" --binary app)" = "app;main;new 7"
check "db (3 days old) and loop (perf's clock) stay" \
	test "$(series "$store" | tr '\n' ' ')" = "app 7 db 3 loop 698 "
out=$("$collect" prune --store "$store" --older-than 7d 2>&1)
check "a second run deletes nothing" \
	test "$(echo "$out" | head -1)" = "deleted 0 time buckets of 0 series (0 emptied): 0 samples, weight 0"
out=$("$collect" prune --store "$store" --older-than 2d 2>&1)
check "db emptied by --older-than 2d disappears from stats" \
	test "$(series "$store" | tr '\n' ' ')" = "app 7 loop 698 "

# ---- --before in perf's clock, --all --binary ------------------------------------------
out=$("$collect" prune --store "$store" --before 1000000 --binary loop 2>&1)
check "--before prunes a perf-clock series (got: $out)" \
	test "$(series "$store" | tr '\n' ' ')" = "app 7 "
"$collect" import --store "$store" "$here/data/perf/loop.perf" 2>/dev/null
check "a pruned series comes back with only what is imported after" \
	test "$(series "$store" | tr '\n' ' ')" = "app 7 loop 698 "
check "and its stacks are exactly the recording's" \
	cmp -s <("$collect" export --store "$store" --binary loop) "$here/data/perf/loop.folded.expected"

# ---- a busy store -------------------------------------------------------------------
mkfifo "$tmp/fifo"
"$collect" import --store "$store" --format folded - <"$tmp/fifo" 2>/dev/null &
holder=$!
exec 9>"$tmp/fifo"
# The importer opens the store once it has read its 64 KiB prefix.
yes 'app;main;late 1' | head -n 4500 >&9
sleep 0.5
out=$("$collect" prune --store "$store" --older-than 1d 2>&1)
rc=$?
check "prune while another writer holds the store fails with exit 1 (got $rc: $out)" \
	test "$rc" -eq 1 -a -n "$out" -a -z "${out##*another writer*}"
exec 9>&-
wait "$holder"
holder=

# ---- a mounted view drops a pruned series ------------------------------------------------
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP - /dev/fuse not available: the live view part is not run"
else
	"$flamefs" -f "$store" "$mnt" 2>"$tmp/daemon.err" &
	pid=$!
	for _ in $(seq 50); do
		mountpoint -q "$mnt" && break
		sleep 0.1
	done
	# The binaries: the root's directories (its files are the whole view's).
	bins() { find "$mnt" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | tr '\n' ' '; }
	check "the view lists app and loop" test "$(bins)" = "app loop "
	check "app's total before" test "$(cat "$mnt/app/default/total")" = 4507
	"$collect" prune --store "$store" --all --binary app >/dev/null 2>&1
	gone=0
	for _ in $(seq 40); do
		if [ "$(bins)" = "loop " ]; then
			gone=1
			break
		fi
		sleep 0.1
	done
	check "app disappears from the mounted view within 4 s, without a remount" test "$gone" = 1
	check "loop is intact in the view" \
		test "$(cat "$mnt/loop/default/total")" = "$("$collect" export --store "$store" --binary loop | awk '{ s += $NF } END { print s }')"
	fusermount3 -u "$mnt"
	wait "$pid"
	pid=
fi

echo "$failures failed"
[ "$failures" -eq 0 ]

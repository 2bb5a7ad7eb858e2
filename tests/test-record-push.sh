#!/usr/bin/env bash
# test-record-push.sh — `record --push DATABASE`: the recorder copies its
# store into a central database in the background (issue 22), against a
# private PostgreSQL 15 (tests/lib-pg.sh).
#
# Checks, recording tests/record-target with eBPF:
#   - with the database up, pushing every second: the database's export of
#     record-target equals the local store's byte for byte once the
#     recorder has exited (its last push follows the last drain), the
#     series carry --host, and more than one push ran;
#   - with the database down for the whole recording: recording works,
#     one message says the data waits, the local store holds it; a later
#     `push` sends it and the database again equals the local store;
#   - with the database stopped in the middle and started again before the
#     end: the recorder reports it reached the database again, and the
#     database equals the local store at the end (nothing lost, nothing
#     twice);
#   - usage errors: --push of a directory, --push-every without --push.
#   usage: test-record-push.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-record-push.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=$build/flamefs-collect
target=$build/tests/record-target
. "$here/lib-e2e.sh"
. "$here/lib-pg.sh"
e2e_setup record-push
bg=
rec=
e2e_on_exit() {
	[ -n "$rec" ] && kill "$rec" 2>/dev/null
	[ -n "$bg" ] && kill "$bg" 2>/dev/null
}
e2e_need_bpf
mkdir -p "$tmp/pg"
pg_skip_unless_available "$tmp/pg"
pg_createdb fleet || exit 1
D=$(pg_uri fleet postgres)
export FLAMEFS_PG_RETRY_SECONDS=2

# exp STORE: record-target's folded, every event, sorted.
exp() { "$collect" export --store "$1" --binary record-target 2>/dev/null | sort; }
same() {
	if cmp -s "$2" "$3"; then ok "$1"; else
		bad "$1"
		diff -u "$3" "$2" | head -20
	fi
}

# ---- the database up ----------------------------------------------------------------
"$collect" record --verbose --store "$tmp/a" --host rec-a -F 199 --push "$D" --push-every 1s \
	-- "$target" 3 /dev/null >/dev/null 2>"$tmp/a.err"
rc=$?
check "record --push: exit 0" [ $rc = 0 ]
[ $rc = 0 ] || cat "$tmp/a.err"
exp "$tmp/a" >"$tmp/a.local"
exp "$D" >"$tmp/a.db"
check "the local store has record-target's stacks" [ -s "$tmp/a.local" ]
same "record --push: the database equals the local store" "$tmp/a.db" "$tmp/a.local"
pushes=$(sed -n 's/.*push: \([0-9]*\) pushes sent.*/\1/p' "$tmp/a.err")
check "more than one push ran during a 3 s recording (${pushes:-none})" [ "${pushes:-0}" -ge 2 ]
check "the summary gives the pushes' CPU" \
	grep -Eq 'CPU [0-9]+\.[0-9] ms for the first, [0-9]+\.[0-9] ms a push after it' "$tmp/a.err"
check "the database's series carry --host" sh -c "'$collect' stats --store '$D' --by-host | grep -q '^rec-a '"

# ---- the database down for the whole recording ----------------------------------------
pg_stop
"$collect" record --verbose --store "$tmp/b" --host rec-b -F 199 --push "$D" --push-every 1s \
	-- "$target" 2 /dev/null >/dev/null 2>"$tmp/b.err"
check "record --push with the database down: exit 0" [ $? = 0 ]
check "one message says the data waits" [ "$(grep -c 'the data waits in the local store' "$tmp/b.err")" = 1 ]
check "the failure is named: cannot connect" grep -q "cannot connect" "$tmp/b.err"
check "the summary says the newest data is only local" grep -q "only in the local store" "$tmp/b.err"
exp "$tmp/b" >"$tmp/b.local"
check "the local store has the recording" [ -s "$tmp/b.local" ]
pg_start "$tmp/pg" >/dev/null || { bad "start the server again"; exit 1; }
"$collect" push --store "$tmp/b" --to "$D" >/dev/null 2>&1 || bad "push afterwards"
"$collect" export --store "$D" --binary record-target 2>/dev/null >/dev/null
{ cat "$tmp/a.local" "$tmp/b.local"; } | awk '{ n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n } END { for (k in s) printf "%s %.0f\n", k, s[k] }' |
	sort >"$tmp/ab.want"
exp "$D" >"$tmp/ab.db"
same "after a later push: the database = both stores" "$tmp/ab.db" "$tmp/ab.want"

# ---- stopped in the middle, started before the end ---------------------------------------
# The target runs until the recorder, stopped with SIGINT once it has
# said it reached the database again, is done.  Either a push failed and a
# later one got through ("reached again"), or, when the server was back
# within the connection's own retries, the push that met the stop waited
# for it ("reconnected after"): which one depends on how fast the server
# stops and starts, and both say so.
again='push: .* reached again|push: .*: reconnected after'
"$target" 60 /dev/null >/dev/null &
bg=$!
"$collect" record --verbose --store "$tmp/c" --host rec-c -F 199 --push "$D" --push-every 1s -p "$bg" \
	>/dev/null 2>"$tmp/c.err" &
rec=$!
sleep 2
pg_stop
sleep 2
pg_start "$tmp/pg" >/dev/null || { bad "start the server again"; exit 1; }
for _ in $(seq 100); do
	grep -Eq "$again" "$tmp/c.err" && break
	sleep 0.2
done
check "the recorder says it reached the database again" grep -Eq "$again" "$tmp/c.err"
kill -INT "$rec"
wait "$rec"
check "record --push across a server restart: exit 0" [ $? = 0 ]
rec=
kill "$bg" 2>/dev/null
wait "$bg" 2>/dev/null
bg=
grep -Eq "$again" "$tmp/c.err" || cat "$tmp/c.err"
exp "$tmp/c" >"$tmp/c.local"
cat "$tmp/a.local" "$tmp/b.local" "$tmp/c.local" |
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n } END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort >"$tmp/abc.want"
exp "$D" >"$tmp/abc.db"
same "after the restart: the database = the three stores, nothing twice" "$tmp/abc.db" "$tmp/abc.want"

# ---- usage errors -----------------------------------------------------------------------
"$collect" record --verbose --store "$tmp/d" --push "$tmp/x" -- true >/dev/null 2>"$tmp/u.err"
check "--push of a directory is a usage error (2)" [ $? = 2 ]
grep -q "expected a database" "$tmp/u.err" || bad "--push DIR message: $(cat "$tmp/u.err")"
"$collect" record --verbose --store "$tmp/d" --push-every 5s -- true >/dev/null 2>"$tmp/u.err"
check "--push-every without --push is a usage error (2)" [ $? = 2 ]

[ "$failures" = 0 ]

#!/usr/bin/env bash
# test-pg-harness.sh — the private PostgreSQL server of lib-pg.sh, checked
# with psql alone: it starts on a Unix socket and no TCP port; the superuser
# needs no password and other roles need theirs (given through PGPASSFILE,
# never printed); committed rows survive an immediate shutdown and a
# SIGKILLed postmaster while an open transaction's do not; a pg_basebackup
# -R standby follows the primary, refuses writes, and takes them once
# promoted; two servers on one port in two directories; the SKIP paths; and
# that no server process outlives a test, whether it exits, fails or is
# SIGKILLed.
#   usage: tests/test-pg-harness.sh [BUILD_DIR]   exit 0 ok, 1 failure, 77 skip
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-e2e.sh"
. "$here/lib-pg.sh"
e2e_setup pg-harness
pg_skip_unless_available "$tmp"
psql=$PG_BIN/psql

# postmaster_pid DATA
postmaster_pid() { head -n 1 "$1/postmaster.pid"; }
# tcp_listeners PID...: ss lines of TCP sockets listened on by the PIDs.
tcp_listeners() {
	local p
	for p in "$@"; do ss -ltnpH | grep -E "pid=$p," || true; done
}
# gone PID: the process has exited (a zombie not yet reaped counts).
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.Z' "/proc/$1/status"; }
# not_in TEXT FILE
not_in() { ! grep -qF -- "$1" "$2"; }
# query CMD...: runs the psql command, output with stderr, never failing.
query() { "$@" 2>&1 || true; }

# ---- start, socket only ---------------------------------------------------
check "the server answers on its socket" [ "$(pg_psql -Atc 'SELECT 6 * 7')" = 42 ]
pm=$(postmaster_pid "$PG_DATA")
check "listen_addresses is empty" [ "$(pg_psql -Atc 'SHOW listen_addresses')" = "" ]
check "unix_socket_directories is PG_SOCK" \
	[ "$(pg_psql -Atc 'SHOW unix_socket_directories')" = "$PG_SOCK" ]
check "the postmaster $pm listens on $PG_SOCK/.s.PGSQL.$PG_PORT" \
	grep -qF "$PG_SOCK/.s.PGSQL.$PG_PORT " <(ss -lxpH | grep -E "pid=$pm,")
# shellcheck disable=SC2046 # a list of pids
tcp=$(tcp_listeners $(pg__procs "$PG_DATA"))
check "no TCP port is open by the server's processes" [ -z "$tcp" ]
[ -z "$tcp" ] || echo "$tcp"
check "the URI names the socket directory and the port" \
	[ "$(pg_uri flamefs bob)" = "postgresql:///flamefs?host=$PG_SOCK&port=$PG_PORT&user=bob" ]
check "psql connects as the superuser through pg_uri without a password" \
	[ "$(PGPASSFILE=/nonexistent "$psql" -X -Atc 'SELECT current_user' "$(pg_uri postgres postgres)")" = postgres ]

# ---- password roles ------------------------------------------------------------
pw="s3cret: with 'quotes' \\ and spaces"
out=$(pg_role alice "$pw" 2>&1; pg_createdb alicedb alice 2>&1)
check "pg_role and pg_createdb print nothing" [ -z "$out" ]
pg_passfile "$tmp/pgpass" alice "$pw"
check "the password file is mode 0600" [ "$(stat -c %a "$tmp/pgpass")" = 600 ]
uri=$(pg_uri alicedb alice)
# HOME without a .pgpass, no PGPASSWORD: the password can only come from PGPASSFILE.
as_alice() { env -u PGPASSWORD HOME="$tmp" "$@"; }
out=$(query as_alice env PGPASSFILE="$tmp/pgpass" "$psql" -X -q -At -v ON_ERROR_STOP=1 "$uri" \
	-c 'CREATE TABLE mine (x int)' -c 'INSERT INTO mine VALUES (1)' -c 'SELECT current_user, count(*) FROM mine')
check "alice connects with PGPASSFILE and creates a table in her database" [ "$out" = "alice|1" ]
[ "$out" = "alice|1" ] || echo "$out"
out=$(query as_alice env -u PGPASSFILE "$psql" -X -w -Atc 'SELECT 1' "$uri")
check "alice without a password file is refused: no password supplied" \
	grep -q "fe_sendauth: no password supplied" <<<"$out"
out=$(query as_alice env PGPASSFILE="$tmp/nonexistent" "$psql" -X -w -Atc 'SELECT 1' "$uri")
check "alice with a missing password file is refused" grep -q "no password supplied" <<<"$out"
pg_passfile "$tmp/wrongpass" alice "not $pw"
out=$(query as_alice env PGPASSFILE="$tmp/wrongpass" "$psql" -X -w -Atc 'SELECT 1' "$uri")
check "alice with a wrong password is refused" \
	grep -q 'password authentication failed for user "alice"' <<<"$out"
pg_passfile "$tmp/otherdb" alice "$pw" postgres
out=$(query as_alice env PGPASSFILE="$tmp/otherdb" "$psql" -X -w -Atc 'SELECT 1' "$uri")
check "a password-file line for another database does not apply" grep -q "no password supplied" <<<"$out"
out=$(query as_alice env PGPASSFILE="$tmp/otherdb" "$psql" -X -w -Atc 'SELECT 1' "$(pg_uri postgres alice)")
check "... and the one for its database does" [ "$out" = 1 ]
chmod 644 "$tmp/pgpass"
out=$(query as_alice env PGPASSFILE="$tmp/pgpass" "$psql" -X -w -Atc 'SELECT 1' "$uri")
check "libpq ignores a group-readable password file" grep -q "has group or world access" <<<"$out"
chmod 600 "$tmp/pgpass"
check "the stored password is a SCRAM verifier" \
	grep -q '^SCRAM-SHA-256\$' <<<"$(pg_psql -Atc "SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'")"
check "the password is in no server log" not_in "$pw" "$PG_LOG"

# ---- crashes -------------------------------------------------------------------
pg_psql -c 'CREATE TABLE t (id int PRIMARY KEY)' -c 'INSERT INTO t SELECT generate_series(1, 100)'
count() { pg_psql -Atc 'SELECT count(*), coalesce(max(id), 0) FROM t'; }
# open_transaction ID: a session that inserted ID and sleeps before committing.
open_transaction() {
	pg_psql -c "INSERT INTO t VALUES ($1); SELECT pg_sleep(60)" >/dev/null 2>&1 &
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(pg_psql -Atc "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'INSERT INTO t VALUES ($1)%'")" = 1 ] &&
			return 0
		sleep 0.1
	done
	return 1
}
# crash HOW: 100 more committed rows and one open transaction, then pg_kill HOW.
crash() {
	local base
	base=$(pg_psql -Atc 'SELECT max(id) FROM t')
	pg_psql -c "INSERT INTO t SELECT generate_series($base + 1, $base + 100)"
	check "$1: an open transaction is running" open_transaction 100000
	pm=$(postmaster_pid "$PG_DATA")
	# shellcheck disable=SC2086 # an optional option
	pg_kill $2
	wait
	check "$1: no process of the server remains" [ -z "$(pg__procs "$PG_DATA")" ]
	check "$1: the postmaster $pm is gone" gone "$pm"
	check "$1: the server starts again" pg_start "$tmp"
	check "$1: the start ran crash recovery" grep -q "automatic recovery in progress" "$PG_LOG"
	check "$1: the committed rows are back, the open transaction's is not" \
		[ "$(count)" = "$((base + 100))|$((base + 100))" ]
}
: >"$PG_LOG"
crash "immediate shutdown" ""
: >"$PG_LOG"
crash "SIGKILLed postmaster" -9
check "pg_restart: a fast restart keeps the rows" pg_restart
check "pg_restart: without recovery" [ "$(grep -c "automatic recovery" "$PG_LOG")" = 1 ]
check "pg_restart: the rows are there" [ "$(count)" = "300|300" ]
pg_stop
check "pg_restart of a stopped server starts it" pg_restart
stop_start() { pg_stop && pg_start "$tmp" && [ "$(count)" = "300|300" ]; }
check "pg_stop then pg_start keeps the rows" stop_start

# ---- standby -------------------------------------------------------------------
check "pg_standby_start makes and starts a standby" pg_standby_start standby
check "the standby is in recovery" [ "$(pg_standby_psql -Atc 'SELECT pg_is_in_recovery()')" = t ]
check "the standby streams from the primary" \
	[ "$(pg_psql -Atc 'SELECT count(*) FROM pg_stat_replication')" = 1 ]
spm=$(postmaster_pid "$PG_STANDBY_DATA")
# shellcheck disable=SC2046 # a list of pids
tcp=$(tcp_listeners $(pg__procs "$PG_STANDBY_DATA"))
check "no TCP port is open by the standby" [ -z "$tcp" ]
check "the standby listens on its own socket" \
	grep -qF "$PG_STANDBY_SOCK/.s.PGSQL.$PG_STANDBY_PORT " <(ss -lxpH | grep -E "pid=$spm,")
check "the standby URI" [ "$(pg_standby_uri)" = "postgresql:///postgres?host=$PG_STANDBY_SOCK&port=$PG_STANDBY_PORT" ]
pg_psql -c 'INSERT INTO t VALUES (1000)'
check "pg_standby_sync" pg_standby_sync
check "the standby sees the row committed on the primary" \
	[ "$(pg_standby_psql -Atc 'SELECT count(*), max(id) FROM t')" = "301|1000" ]
pg_standby_passfile "$tmp/standby-pass" alice "$pw" alicedb
out=$(query as_alice env PGPASSFILE="$tmp/standby-pass" "$psql" -X -w -Atc 'SELECT count(*) FROM mine' \
	"$(pg_standby_uri alicedb alice)")
check "alice logs in on the standby with pg_standby_passfile" [ "$out" = 1 ]
out=$(query pg_standby_psql -c 'INSERT INTO t VALUES (1001)')
check "the standby refuses writes" grep -q "read-only transaction" <<<"$out"
check "pg_standby_promote" pg_standby_promote
check "the promoted standby left recovery" [ "$(pg_standby_psql -Atc 'SELECT pg_is_in_recovery()')" = f ]
check "the promoted standby accepts a write" pg_standby_psql -c 'INSERT INTO t VALUES (1001)'
check "... and keeps it" [ "$(pg_standby_psql -Atc 'SELECT count(*), max(id) FROM t')" = "302|1001" ]
check "the primary did not get it" [ "$(count)" = "301|1000" ]

# ---- two servers, one port, two directories ---------------------------------
other=$(bash -c '. "$1/lib-pg.sh"; pg_start "$2" other >/dev/null || exit 1
	pg_psql -Atc "SELECT current_setting('\''port'\''), current_setting('\''data_directory'\'')"' \
	_ "$here" "$tmp")
check "a second server on the same port in another directory (and stopped at its exit)" \
	[ -n "$other" ] && [ -z "$(pg__procs "$tmp/other/data")" ]
# (not told apart by system_identifier: with $FLAMEFS_PG_TEMPLATE both are copies of one initdb)
check "... was another cluster" [ "${other#*|}" = "$tmp/other/data" ] && [ "${other#*|}" != "$(pg_psql -Atc 'SHOW data_directory')" ]

# ---- cleanup -------------------------------------------------------------------
# A test with its own EXIT trap that fails: its status and trap are kept.
sub=$(mktemp -d /tmp/flamefs-test-pg-sub.XXXXXX)
bash -c '. "$1/lib-pg.sh"; trap "touch $2/trap-ran" EXIT; pg_start "$2/d" >/dev/null || exit 9
	pg_standby_start sb >/dev/null || exit 9; false; exit 3' _ "$here" "$sub"
rc=$?
check "a failing test's exit status is kept (3: $rc)" [ "$rc" = 3 ]
check "... its own EXIT trap ran" [ -e "$sub/trap-ran" ]
check "... and its primary and standby are stopped" [ -z "$(pg__procs "$sub/d/pg/data")$(pg__procs "$sub/d/sb/data")" ]
# SIGTERM (meson's timeout): the server stops through the EXIT trap.
bash -c '. "$1/lib-pg.sh"; pg_start "$2/t" >/dev/null || exit 9; kill -TERM $$; sleep 60' _ "$here" "$sub"
rc=$?
check "a SIGTERMed test exits 143 ($rc)" [ "$rc" = 143 ]
check "... and its server is stopped" [ -z "$(pg__procs "$sub/t/pg/data")" ]
# SIGKILL: no trap runs; the watchdog stops the server within seconds.
pm=$(bash -c '. "$1/lib-pg.sh"; pg_start "$2/k" >/dev/null || exit 9; head -n 1 "$PG_DATA/postmaster.pid"
	kill -KILL $$' _ "$here" "$sub")
check "a SIGKILLed test's server was running ($pm)" [ -n "$pm" ]
for ((i = 0; i < 100; i++)); do
	[ -z "$(pg__procs "$sub/k/pg/data")" ] && break
	sleep 0.1
done
check "... the watchdog stopped it" [ -z "$(pg__procs "$sub/k/pg/data")" ]
check "... postmaster $pm included" gone "$pm"
rm -rf "$sub"

# The SKIP paths.
out=$(PG_BIN=/nonexistent bash -c '. "$1/lib-pg.sh"; pg_skip_unless_available; echo not reached' _ "$here")
rc=$?
check "no PostgreSQL: SKIP, exit 77 ($rc)" [ "$rc" = 77 ]
check "... naming what is missing" grep -q "^SKIP: PostgreSQL 15 is not installed (/nonexistent/initdb missing" <<<"$out"
sub=$(mktemp -d /tmp/flamefs-test-pg-sub.XXXXXX)
out=$(PG_PORT=99999 bash -c '. "$1/lib-pg.sh"; pg_skip_unless_available "$2"; echo not reached' _ "$here" "$sub")
rc=$?
check "a server that cannot start: SKIP, exit 77 ($rc)" [ "$rc" = 77 ]
check "... with the end of its log" grep -q "99999 is outside the valid range" <<<"$out"
[ "$rc" = 77 ] || echo "$out"
rm -rf "$sub"

pg_cleanup
check "pg_cleanup leaves no process of the primary" [ -z "$(pg__procs "$PG_DATA")" ]
check "... nor of the standby" [ -z "$(pg__procs "$PG_STANDBY_DATA")" ]
check "... and pg_cleanup again is harmless" pg_cleanup

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all pg-harness checks passed"

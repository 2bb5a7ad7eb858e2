#!/usr/bin/env bash
# test-record-pg-xact.sh — record --span pg (pg-query + pg-xact + pg-lock)
# on a real PostgreSQL 15 (issue 41): transactions and lock waits as spans
# beside the statements, read back whole from the spans record
# (tests/spans-list: each span's pid, start, duration, id, parent, chain).
#
# PostgreSQL's order, which the checks hold to: a statement's span
# (query__start .. query__done, exec_simple_query) opens before its
# transaction starts (start_xact_command), so BEGIN's transaction starts
# inside BEGIN's span and commits inside END's (finish_xact_command, before
# query__done); a statement outside a transaction block holds its whole
# implicit transaction.  Each backend also runs one transaction at its
# start (InitPostgres reads the catalogs), before any statement.
#
#  (a) pgbench -M simple -t 200, one client: its backend (the one pid of the
#      UPDATE spans) has exactly 201 transaction spans, pgbench's 200 (its
#      "actually processed" count) and its start's, which has no parent and
#      starts before its first statement; each of the 200 has as parent a
#      BEGIN span of the backend (each a different one), and exactly one
#      child of each of the script's other 6 statements; each of the 5 DML
#      statements lies inside its transaction's time and has the chain
#      "transaction;STATEMENT", END starts inside it and ends after it.
#      pgbench's other connection's "select count(*) from pgbench_branches"
#      holds its implicit transaction (chain "STATEMENT;transaction").
#  (b) an abort: one psql session runs SELECT pg_backend_pid(), BEGIN,
#      SELECT 1/0 (an error) and ROLLBACK: its backend has 3 transaction
#      spans (its start's, the first statement's, and the aborted one,
#      parent BEGIN's span, ended by transaction__abort inside the failing
#      statement's time).  The failing statement has no query__done (its
#      error leaves exec_simple_query): pg-query is flat, so ROLLBACK's
#      start closes it, unended, at that moment (both times from one clock
#      reading; the record's microseconds cut them: within 999 ns), and
#      ROLLBACK is nested in nothing.
#  (c) lock waits, named by the lock's tag type: session A holds a row
#      lock (BEGIN; UPDATE ... WHERE bid = 1), session B's UPDATE of that
#      row waits on it (on A's transaction id) until A commits; then A
#      holds an advisory lock and B waits for it until A unlocks it.  Each
#      time B's backend has exactly one lock-wait span, "lock-wait
#      transactionid" with the chain "UPDATE ...;transaction;lock-wait
#      transactionid", then "lock-wait advisory", and its duration lies
#      between the time from seeing B wait (pg_locks, granted = false) to
#      A's release being sent and the time from B's start to its end.  The
#      wait is made by events, no sleep: A releases after 50 more queries
#      of pg_locks have seen B waiting.
#   usage: tests/test-record-pg-xact.sh BUILD_DIR   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-record-pg-xact.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
list=$build/tests/spans-list
export LC_ALL=C
tx=200

. "$here/lib-e2e.sh"
. "$here/lib-pg.sh"
. "$here/lib-pg-span.sh"
e2e_setup record-pg-xact
pgspan_need transaction__start

# The syntax: shortcuts take only in=PATH; fixed= and END|END are checked.
pgspan_refused pg:sql 2 'a ready-made span takes only :in=PATH' "--span pg:sql is refused, a message"
pgspan_refused 'p:s:e|:fixed=x:in=/bin/true' 2 'none empty' "an empty end probe in END|END is refused"
pgspan_refused 'p:s:e:fixed=x:name=arg1:in=/bin/true' 2 'expected one name=argN, number=argN or fixed=NAME' \
	"fixed= with name=argN is refused"
pgspan_refused 'p:s:e:name=arg1:pglock:in=/bin/true' 2 'pglock names a number' "pglock with name=argN is refused"
pgspan_refusals pg-xact transaction__

apid=
e2e_on_exit() {
	[ -n "$pgspan_rec" ] && kill "$pgspan_rec" 2>/dev/null
	[ -n "$apid" ] && kill "$apid" 2>/dev/null
}

PG_PORT=${PG_PORT:-54337}
pg_skip_unless_available "$tmp"
pg_createdb bench || { bad "cannot create the database"; finish; }
pgb() { "$PG_BIN/pgbench" -h "$PG_SOCK" -p "$PG_PORT" -U postgres "$@"; }
pgb -i -q -s 1 bench >"$tmp/init.out" 2>&1 || { bad "pgbench -i failed: $(tail -3 "$tmp/init.out")"; finish; }
# psql without ON_ERROR_STOP (b needs an error), on database bench
psql_b() { "$PG_BIN/psql" -X -q -At -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d bench "$@"; }

st=$tmp/st
pgspan_record_start "$st" "$tmp/rec.err" -F 99 --span pg

# ---- (a) pgbench ----
pgb -n -c 1 -M simple -t $tx bench >"$tmp/bench.out" 2>&1 || bad "pgbench failed: $(tail -3 "$tmp/bench.out")"
done_tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\)\/.*/\1/p' "$tmp/bench.out")
check "pgbench processed its $tx transactions ($done_tx)" test "$done_tx" = $tx

# ---- (b) an abort ----
psql_b -c 'SELECT pg_backend_pid()' -c 'BEGIN' -c 'SELECT 1/0' -c 'ROLLBACK' >"$tmp/abort.out" 2>"$tmp/abort.err"
abort_pid=$(head -n 1 "$tmp/abort.out")
check "the abort session ran, its error said (backend $abort_pid)" grep -q 'division by zero' "$tmp/abort.err"

# ---- (c) lock waits ----
# lock_wait NAME HOLD RELEASE WAIT: session A runs HOLD, session B runs WAIT,
# which waits on A's lock until A runs RELEASE; sets NAME_pid (B's backend),
# NAME_lo (ns from seeing B wait to sending RELEASE) and NAME_hi (ns of B's
# run).
lock_wait() {
	local name=$1 hold=$2 release=$3 wait_sql=$4 t tb tw tc te bpid i
	rm -f "$tmp/a.in" "$tmp/a.locked"
	mkfifo "$tmp/a.in"
	psql_b <"$tmp/a.in" >"$tmp/a-$name.out" 2>&1 &
	apid=$!
	exec 7>"$tmp/a.in"
	echo "$hold \\! touch $tmp/a.locked" >&7
	t=0
	until [ -e "$tmp/a.locked" ] || [ $t -ge 600 ]; do sleep 0.1; t=$((t + 1)); done
	check "$name: session A holds its lock" test -e "$tmp/a.locked"
	tb=$(date +%s%N)
	psql_b -c 'SELECT pg_backend_pid()' -c "$wait_sql" >"$tmp/b-$name.out" 2>&1 &
	bpid=$!
	t=0
	until [ "$(psql_b -c 'SELECT count(*) FROM pg_locks WHERE NOT granted')" = 1 ] || [ $t -ge 6000 ]; do
		t=$((t + 1))
	done
	tw=$(date +%s%N)
	for i in $(seq 50); do psql_b -c 'SELECT count(*) FROM pg_locks WHERE NOT granted' >/dev/null; done
	tc=$(date +%s%N)
	echo "$release" >&7
	exec 7>&-
	wait "$bpid"
	te=$(date +%s%N)
	wait "$apid"
	apid=
	printf -v "${name}_pid" '%s' "$(head -n 1 "$tmp/b-$name.out")"
	printf -v "${name}_lo" '%s' $((tc - tw))
	printf -v "${name}_hi" '%s' $((te - tb))
	check "$name: session B waited (seen after $t queries) and ran" test $t -lt 6000 -a -n "$(head -n 1 "$tmp/b-$name.out")"
}
lock_wait row "BEGIN; UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1;" "COMMIT;" \
	"UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1"
lock_wait advisory "SELECT pg_advisory_lock(41);" "SELECT pg_advisory_unlock(41);" \
	"SELECT pg_advisory_lock(41)"

pgspan_record_stop
check "record -a --span pg exits 0 (rc $pgspan_rc)" test "$pgspan_rc" = 0
grep -E '^flamefs-collect: spans' "$tmp/rec.err" | sed 's/^/       /'
check "3 spans attached, every name read" grep -q 'spans: 3 spans attached.* 0 names not read or kept' "$tmp/rec.err"
"$list" "$st" >"$tmp/spans" || bad "spans-list failed"
# name TAB pid TAB start_us TAB dur_ns TAB id TAB parent TAB chain
awk -F '\t' '$1 != "#COUNTS" { v = ""; n = split($1, l, "|"); for (i = 1; i <= n; i++) if (l[i] ~ /^span=/) v = substr(l[i], 6)
	print v "\t" $4 "\t" $3 "\t" $6 "\t" $7 "\t" $8 "\t" $9 }' "$tmp/spans" >"$tmp/s"

# ---- (a) checks ----
upd="UPDATE pgbench_accounts SET abalance = abalance + \$1 WHERE aid = \$2"
pids=$(awk -F '\t' -v s="$upd" '$1 == s { print $2 }' "$tmp/s" | sort -u)
check "the UPDATE spans are of one backend ($(echo $pids))" test "$(echo "$pids" | wc -w)" = 1
P=$(echo "$pids" | head -n 1)
awk -F '\t' -v p="$P" '$2 == p' "$tmp/s" >"$tmp/p"
n=$(awk -F '\t' '$1 == "transaction"' "$tmp/p" | wc -l)
check "pgbench's backend has $tx + 1 transaction spans ($n)" test "$n" = $((tx + 1))
check "one of them, with no parent, starts before the backend's first statement" \
	awk -F '\t' '$1 == "transaction" && $6 == 0 { n++; t = $3 } $1 != "transaction" && (f == "" || $3 < f) { f = $3 }
		END { exit !(n == 1 && t < f) }' "$tmp/p"
check "the $tx others each have a BEGIN span of the backend as parent, each a different one" \
	awk -F '\t' '$1 == "BEGIN" { b[$5] = 1; next } $1 == "transaction" && $6 != 0 { n++; if (($6 in b) && !($6 in u)) ok++; u[$6] = 1 }
		END { exit !(n == tx && ok == tx) }' tx=$tx <(awk -F '\t' '$1 == "BEGIN"' "$tmp/p") <(awk -F '\t' '$1 == "transaction"' "$tmp/p")
stmts=(
	"$upd"
	"SELECT abalance FROM pgbench_accounts WHERE aid = \$1"
	"UPDATE pgbench_tellers SET tbalance = tbalance + \$1 WHERE tid = \$2"
	"UPDATE pgbench_branches SET bbalance = bbalance + \$1 WHERE bid = \$2"
	"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (\$1, \$2, \$3, \$4, CURRENT_TIMESTAMP)"
	"END"
)
printf '%s\n' "${stmts[@]}" >"$tmp/names"
# For each statement span: its transaction (by parent id) and where it lies.
awk -F '\t' 'FILENAME == ARGV[1] { want[$0] = 1; next }
	$1 == "transaction" { ts[$5] = $3 * 1000; te[$5] = $3 * 1000 + $4 + 999; next }
	($1 in want) { s[NR] = $0 }
	END {
		for (k in s) {
			split(s[k], f, "\t")
			if (!(f[6] in ts)) { print "no transaction\t" f[1]; continue }
			kids[f[6] "\t" f[1]]++
			start = f[3] * 1000; end = f[3] * 1000 + f[4]
			if (start < ts[f[6]]) print "starts before its transaction\t" f[1]
			else if (f[1] != "END" && end > te[f[6]]) print "ends after its transaction\t" f[1]
			else if (f[1] == "END" && end + 999 < te[f[6]]) print "END ends before its transaction\t" f[1]
			else if (f[1] != "END" && f[7] != "transaction;" f[1]) print "chain " f[7] "\t" f[1]
			else ok[f[1]]++
		}
		for (k in kids) if (kids[k] != 1) print "transaction with " kids[k] " of\t" k
		for (w in want) { c[w] = 0; for (k in kids) { split(k, g, "\t"); if (g[2] == w) c[w]++ } printf "%d\t%d\t%s\n", ok[w], c[w], w > "/dev/stderr" }
	}' "$tmp/names" "$tmp/p" >"$tmp/bad-stmts" 2>"$tmp/stmt-counts"
check "every statement span lies in its transaction, as PostgreSQL runs it" test ! -s "$tmp/bad-stmts"
head -n 5 "$tmp/bad-stmts" | sed 's/^/       /'
while IFS=$'\t' read -r okn txn s; do
	check "\"$s\": $tx spans in $tx different transactions, all in place ($okn, $txn)" \
		test "$okn" = $tx -a "$txn" = $tx
done <"$tmp/stmt-counts"
cnt="select count(*) from pgbench_branches"
check "\"$cnt\" (pgbench's other connection) holds its implicit transaction" \
	awk -F '\t' -v s="$cnt" '$1 == s { id[$5] = 1; next } $1 == "transaction" && ($6 in id) && $7 == s ";transaction" { f = 1 }
		END { exit !f }' <(awk -F '\t' -v s="$cnt" '$1 == s' "$tmp/s") <(awk -F '\t' '$1 == "transaction"' "$tmp/s")

# ---- (b) checks ----
awk -F '\t' -v p="$abort_pid" '$2 == p' "$tmp/s" >"$tmp/b"
sed 's/^/       abort session: /' "$tmp/b"
check "the abort session's backend has 3 transaction spans" \
	test "$(awk -F '\t' '$1 == "transaction"' "$tmp/b" | wc -l)" = 3
check "the aborted one's parent is its BEGIN and it ends in SELECT 1/0's time" \
	awk -F '\t' '$1 == "BEGIN" { b = $5 } $1 == "SELECT $1/$2" { s = $3 * 1000; e = s + $4 + 999 }
		$1 == "transaction" && $7 == "transaction" && $6 != 0 { p = $6; te = $3 * 1000 + $4 }
		END { exit !(b && p == b && te >= s && te <= e) }' "$tmp/b"
check "SELECT 1/0's span is closed unended where ROLLBACK's starts; ROLLBACK is nested in nothing" \
	awk -F '\t' '$1 == "SELECT $1/$2" { e = $3 * 1000 + $4; u = $7 == "SELECT $1/$2;[unended]" }
		$1 == "ROLLBACK" { r = $3 * 1000; c = $7; p = $6 }
		END { exit !(u && e >= r - 999 && e <= r + 999 && c == "ROLLBACK" && p == 0) }' "$tmp/b"
check "no other span of the abort session is unended" \
	test "$(grep -c '\[unended\]$' "$tmp/b")" = 1

# ---- (c) checks ----
# lock_check NAME SPAN CHAIN: B's backend of lock_wait NAME has exactly one
# lock-wait span, named SPAN with chain CHAIN, its duration within bounds.
lock_check() {
	local name=$1 span=$2 chain=$3 pid lo hi d
	pid=${name}_pid lo=${name}_lo hi=${name}_hi
	pid=${!pid} lo=${!lo} hi=${!hi}
	awk -F '\t' -v p="$pid" '$2 == p && $1 ~ /^lock-wait/' "$tmp/s" >"$tmp/l-$name"
	sed "s/^/       $name: /" "$tmp/l-$name"
	check "$name: B's backend has exactly one lock-wait span, \"$span\"" \
		test "$(wc -l <"$tmp/l-$name")" = 1 -a "$(cut -f 1 "$tmp/l-$name")" = "$span"
	check "$name: its chain is \"$chain\"" test "$(cut -f 7 "$tmp/l-$name")" = "$chain"
	d=$(cut -f 4 "$tmp/l-$name" | head -n 1)
	check "$name: its duration ${d:-?} ns lies between $lo ns (seen waiting to the release) and $hi ns (B's run)" \
		test -n "$d" -a "${d:-0}" -ge "$lo" -a "${d:-0}" -le "$hi"
}
lock_check row "lock-wait transactionid" \
	"UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = \$1;transaction;lock-wait transactionid"
lock_check advisory "lock-wait advisory" "SELECT pg_advisory_lock(\$1);transaction;lock-wait advisory"
check "no other lock-wait span in the recording" test "$(awk -F '\t' '$1 ~ /^lock-wait/' "$tmp/s" | wc -l)" = 2
finish

#!/usr/bin/env bash
# test-record-pg-span.sh — record --span pg-query on a real PostgreSQL 15
# (issue 41): a private server (lib-pg.sh) with pg_stat_statements loaded,
# `pgbench -i`, then pgbench's built-in TPC-B-like script (one client,
# simple query protocol) under `record -a --span pg-query -F 1999`, in runs
# of 2,000 transactions (-t) until the backends have used 2.5 s of CPU
# (the postmaster's cutime + cstime: about 3,500 samples in the 5 DML
# statements' spans, however fast the machine; 40 runs at most).  Then:
#
#  (a) pg_stat_statements saw the script's 7 statements (BEGIN, the three
#      UPDATEs, the SELECT, the INSERT, END) each exactly as many times as
#      the runs' transactions, and the
#      store has a span label for each with exactly pg_stat_statements'
#      text (literals as $N); no span label of a pgbench table keeps a
#      literal (every one of the 7 x TX statements was normalised).
#  (b) samples sit in the right statement: among the 7 spans' samples,
#      heap_update only under the three UPDATEs (and some there),
#      heap_insert only under the INSERT, ExecutorRun never under BEGIN or
#      END; `stats --by span` lists the 7.
#  (c) each of the 5 statements other than BEGIN and END takes a CPU share
#      (its span's samples among the 5's) within 0.10 of its share of
#      pg_stat_statements' total_exec_time + total_plan_time.  Why they
#      differ: the span (query__start to query__done, exec_simple_query)
#      also holds parsing, analysis, rewriting and the sending of results,
#      about the same few tens of microseconds for each statement, which
#      pg_stat_statements does not time; its times are wall-clock, with
#      the waits (a preemption on a busy machine, I/O, WAL) that CPU
#      samples leave out.  BEGIN and END are named but not compared: END's
#      span holds the commit (finish_xact_command), which its exec time,
#      ProcessUtility's, does not.  At least 2,000 samples in the 5 spans,
#      so the shares are not a matter of a few samples.
#
# Settings for the comparison: one client (no row-lock waits on the one
# branch), shared_buffers 128MB (scale 1 fits: no reads), full_page_writes
# off and synchronous_commit off (no WAL full pages, no commit flush), so
# the exec times are mostly the CPU they measure.
#   usage: tests/test-record-pg-span.sh BUILD_DIR   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-record-pg-span.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
folded=$build/tests/labels-folded
export LC_ALL=C
chunk=2000
hz=1999

. "$here/lib-e2e.sh"
. "$here/lib-pg.sh"
. "$here/lib-pg-span.sh"
e2e_setup record-pg-span
pgspan_need query__start
[ -f "$(dirname "$PG_BIN")/lib/pg_stat_statements.so" ] ||
	{ echo "SKIP: no pg_stat_statements (package postgresql-15)"; exit 77; }

# The shortcut takes only in=PATH; a file without the probes fails to attach.
pgspan_refusals pg-query query__
e2e_on_exit() { [ -n "$pgspan_rec" ] && kill "$pgspan_rec" 2>/dev/null; }

PG_PORT=${PG_PORT:-54336}
pg_skip_unless_available "$tmp"
pg_psql -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" \
	-c "ALTER SYSTEM SET shared_buffers = '128MB'" -c "ALTER SYSTEM SET full_page_writes = off" ||
	{ bad "cannot configure the server"; finish; }
# Not through ALTER SYSTEM: the name is unknown until the library is loaded.
echo "pg_stat_statements.track_planning = on" >>"$PG_DATA/postgresql.conf"
pg_restart || { bad "the server did not restart with pg_stat_statements"; finish; }
pg_createdb bench && pg_psql -d bench -c 'CREATE EXTENSION pg_stat_statements' ||
	{ bad "cannot create the database"; finish; }
pgb() { PGOPTIONS='-c synchronous_commit=off' "$PG_BIN/pgbench" -h "$PG_SOCK" -p "$PG_PORT" -U postgres "$@"; }
pgb -i -q -s 1 bench >"$tmp/init.out" 2>&1 || { bad "pgbench -i failed: $(tail -3 "$tmp/init.out")"; finish; }
pg_psql -d bench -Atc 'SELECT pg_stat_statements_reset()' >/dev/null

st=$tmp/st
pgspan_record_start "$st" "$tmp/rec.err" -F $hz --span pg-query
# the postmaster's cutime + cstime in clock ticks: its exited backends' CPU
pm=$(head -n 1 "$PG_DATA/postmaster.pid")
kids=$(pgrep -c -P "$pm")
ticks() { sed 's/.*) //' "/proc/$pm/stat" | awk '{ print $14 + $15 }'; }
want=$((25 * $(getconf CLK_TCK) / 10))
t0=$(ticks)
runs=0
while [ $(($(ticks) - t0)) -lt "$want" ] && [ $runs -lt 40 ]; do
	pgb -n -c 1 -M simple -t $chunk bench >"$tmp/bench.out" 2>&1 || { bad "pgbench failed: $(tail -3 "$tmp/bench.out")"; break; }
	runs=$((runs + 1))
	# its backend exits after it: wait until the postmaster has reaped it
	t=0
	while [ "$(pgrep -c -P "$pm")" -gt "$kids" ] && [ $t -lt 100 ]; do
		sleep 0.1
		t=$((t + 1))
	done
done
tx=$((runs * chunk))
echo "       $runs runs of $chunk transactions; the backends used $(($(ticks) - t0)) ticks of CPU"
pgspan_record_stop
check "record -a --span pg-query exits 0 (rc $pgspan_rc)" test "$pgspan_rc" = 0
grep -E '^flamefs-collect: (recorded|spans)' "$tmp/rec.err" | sed 's/^/       /'
grep -E '^(tps|latency)' "$tmp/bench.out" | sed 's/^/       pgbench: /'
check "every span's name was read and kept" grep -q ' 0 names not read or kept' "$tmp/rec.err"

# ---- (a) the names -----------------------------------------------------------
stmts=(
	"BEGIN"
	"UPDATE pgbench_accounts SET abalance = abalance + \$1 WHERE aid = \$2"
	"SELECT abalance FROM pgbench_accounts WHERE aid = \$1"
	"UPDATE pgbench_tellers SET tbalance = tbalance + \$1 WHERE tid = \$2"
	"UPDATE pgbench_branches SET bbalance = bbalance + \$1 WHERE bid = \$2"
	"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (\$1, \$2, \$3, \$4, CURRENT_TIMESTAMP)"
	"END"
)
# calls, exec ms, plan ms, text; the script's statements only
pg_psql -d bench -F $'\t' -Atc "SELECT calls, total_exec_time, total_plan_time, query FROM pg_stat_statements
	WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'bench') AND calls >= $tx" >"$tmp/pgss"
sed 's/^/       pg_stat_statements: /' "$tmp/pgss"
check "pg_stat_statements has 7 statements run $tx times or more" test "$(wc -l <"$tmp/pgss")" = 7
"$folded" "$st" | awk -F '\t' '$2 == "postgres"' >"$tmp/folded"
# span=VALUE of each line (labels are "k=v|k=v"), then the line
awk -F '\t' '{ v = ""; n = split($1, l, "|"); for (i = 1; i <= n; i++) if (l[i] ~ /^span=/) v = substr(l[i], 6)
	print v "\t" $3 }' "$tmp/folded" >"$tmp/byspan"
for s in "${stmts[@]}"; do
	check "pg_stat_statements ran \"$s\" exactly $tx times" \
		awk -F '\t' -v s="$s" -v tx="$tx" '$4 == s { found = 1; ok = $1 == tx } END { exit !(found && ok) }' "$tmp/pgss"
	check "a span is named \"$s\"" awk -F '\t' -v s="$s" '$1 == s { f = 1 } END { exit !f }' "$tmp/byspan"
done
check "no span name of a pgbench table keeps a literal" \
	awk -F '\t' '$1 ~ /pgbench_/ && $1 ~ /[=+(,] *-?[0-9]/ { print "       literal: " $1; bad = 1 } END { exit bad }' "$tmp/byspan"

# ---- (b) samples in the right statement --------------------------------------
# weight of the 7 statements' samples whose stack matches RE, by statement
in_stmt() {
	local s
	for s in "${stmts[@]}"; do printf '%s\n' "$s"; done >"$tmp/names"
	RE=$1 awk -F '\t' 'NR == FNR { want[$0] = 1; next }
		($1 in want) { n = $2; sub(/.* /, "", n); k = $2; sub(/ [0-9]+$/, "", k)
			if (k ~ ENVIRON["RE"]) w[$1] += n }
		END { for (s in w) printf "%.0f\t%s\n", w[s], s }' "$tmp/names" "$tmp/byspan"
}
in_stmt '(^|;)heap_update(;|$)' >"$tmp/upd"
in_stmt '(^|;)heap_insert(;|$)' >"$tmp/ins"
in_stmt '(^|;)ExecutorRun(;|$)' >"$tmp/exe"
check "heap_update samples are in the UPDATE spans ($(awk -F '\t' '{ t += $1 } END { printf "%.0f", t }' "$tmp/upd") ns)" \
	test -s "$tmp/upd"
check "heap_update samples are in no span but the three UPDATEs" \
	awk -F '\t' '$2 !~ /^UPDATE / { print "       " $0; bad = 1 } END { exit bad }' "$tmp/upd"
check "heap_insert samples are in no span but the INSERT" \
	awk -F '\t' '$2 !~ /^INSERT / { print "       " $0; bad = 1 } END { exit bad }' "$tmp/ins"
check "ExecutorRun samples are in neither BEGIN's nor END's span" \
	awk -F '\t' '$2 == "BEGIN" || $2 == "END" { print "       " $0; bad = 1 } END { exit bad }' "$tmp/exe"
"$collect" stats --store "$st" --by span >"$tmp/stats" 2>&1
for s in "${stmts[@]}"; do
	check "stats --by span lists \"$s\"" grep -qF -- "$s " "$tmp/stats"
done

# ---- (c) CPU shares against pg_stat_statements -------------------------------
awk -F '\t' -v s="$(printf '%s\n' "${stmts[@]:1:5}")" -v hz=$hz '
	BEGIN { n = split(s, l, "\n"); for (i = 1; i <= n; i++) want[l[i]] = 1 }
	FILENAME ~ /pgss$/ { if ($4 in want) { t[$4] = $2 + $3; e[$4] = $2; tt += $2 + $3; et += $2 }; next }
	($1 in want) { c = $2; sub(/.* /, "", c); w[$1] += c; wt += c }
	END {
		printf "%d\n", wt * hz / 1e9 + 0.5 > "/dev/stderr"
		for (k in want)
			printf "%.4f\t%.4f\t%.4f\t%s\n", wt ? w[k] / wt : 0, tt ? t[k] / tt : 0, et ? e[k] / et : 0, k
	}' "$tmp/pgss" "$tmp/byspan" >"$tmp/shares" 2>"$tmp/nsamples"
samples=$(cat "$tmp/nsamples")
echo "       CPU share, (exec + plan) share, exec share, statement ($samples samples):"
sed 's/^/       /' "$tmp/shares"
check "the 5 statements' spans hold 2000 samples or more ($samples)" test "$samples" -ge 2000
while IFS=$'\t' read -r cpu both exec s; do
	check "\"$s\": CPU share $cpu, exec + plan share $both (within 0.10)" \
		awk -v a="$cpu" -v b="$both" 'BEGIN { exit !(b > 0 && a - b <= 0.10 && b - a <= 0.10) }'
done <"$tmp/shares"
finish

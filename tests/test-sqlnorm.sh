#!/usr/bin/env bash
# test-sqlnorm.sh — collector/record/sqlnorm.c against a real
# pg_stat_statements (PostgreSQL 15), exactly.
#
# A private server with shared_preload_libraries = pg_stat_statements:
# (a) every case of tests/data/sqlnorm/corpus.sql (cases separated by a line
#     "----8<----": quoting corner cases, comments, typed literals, type
#     modifiers, ORDER BY positions, DDL and other utility statements,
#     multi-statement strings, unicode) is sent alone as one query string
#     after pg_stat_statements_reset(); the set of texts pg_stat_statements
#     then shows must equal the set sqlnorm-tool gives for its statements,
#     byte for byte;
# (b) pgbench's built-in TPC-B-like script, simple protocol, 200
#     transactions on 2 clients: the server's log (log_statement = all)
#     gives every statement as sent; the set of their normalised texts must
#     equal pg_stat_statements' texts for the run;
# (c) 300 statements from tests/sqlnorm-gen.py (seed 1: the same ones each
#     run), each alone as in (a); at least 140 must be accepted by
#     PostgreSQL, and every accepted one must match.
# What differs, and so is not in the corpus: see collector/record/sqlnorm.c's
# header (BEGIN ATOMIC bodies, GROUPING SETS items, a column named like a
# normalisation form, duplicate constant locations, PREPARE/EXECUTE, which
# pg_stat_statements does not show under track = top).
#   usage: test-sqlnorm.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skip
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: test-sqlnorm.sh BUILD_DIR}
. "$here/lib.sh"
. "$here/lib-pg.sh"
tool=$build/tests/sqlnorm-tool
[ -x "$tool" ] || { echo "sqlnorm-tool not built"; exit 1; }
tmp=$(mktemp -d /tmp/flamefs-test-sqlnorm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pg_skip_unless_available "$tmp"
[ -x "$PG_BIN/pgbench" ] || { echo "SKIP: no pgbench in $PG_BIN"; exit 77; }
cat >>"$PG_DATA/postgresql.conf" <<-CONF
	shared_preload_libraries = 'pg_stat_statements'
	pg_stat_statements.track = top
	pg_stat_statements.max = 5000
	log_statement = 'all'
	log_line_prefix = ''
	log_destination = 'stderr'
	logging_collector = off
CONF
pg_restart || { echo "FAIL - server did not restart with pg_stat_statements"; exit 1; }
pg_psql -c 'CREATE EXTENSION pg_stat_statements' \
	-c 'CREATE TABLE t (a int, b bool, c text, d numeric, e timestamp, f int[])' \
	-c 'CREATE UNIQUE INDEX ON t (a)' >/dev/null || { echo "FAIL - setup"; exit 1; }

# pgss_texts: pg_stat_statements' texts but the reset's, each followed by a
# NUL, sorted (sent as hex, so that no byte of a text is lost on the way).
pgss_texts() {
	pg_psql -At -c "SELECT encode(convert_to(query, 'UTF8'), 'hex') FROM pg_stat_statements
		WHERE query !~ 'pg_stat_statements_reset'" |
		perl -ne 'chomp; print pack("H*", $_), "\0"' | sort -zu
}

# (a) the corpus.
awk -v dir="$tmp" 'BEGIN { n = 1 } /^----8<----$/ { n++; next } { f = sprintf("%s/case%03d.sql", dir, n); if (started[n]++) printf "\n" >>f; printf "%s", $0 >>f }' \
	"$here/data/sqlnorm/corpus.sql"
cases=0
for f in "$tmp"/case*.sql; do
	cases=$((cases + 1))
	name=$(basename "$f" .sql)
	pg_psql -c 'SELECT pg_stat_statements_reset()' >/dev/null
	if ! pg_psql -c "$(cat "$f")" >/dev/null 2>"$tmp/err"; then
		bad "$name: PostgreSQL refused it: $(head -1 "$tmp/err")"
		continue
	fi
	pgss_texts >"$tmp/want"
	"$tool" "$f" | sort -zu >"$tmp/got"
	if cmp -s "$tmp/want" "$tmp/got"; then
		ok "$name: $(tr '\0\n' '|~' <"$tmp/got" | cut -c1-100)"
	else
		bad "$name: differs"
		echo "  statement:    $(tr '\n' '~' <"$f")"
		echo "  pg:           $(tr '\0\n' '|~' <"$tmp/want")"
		echo "  sqlnorm:      $(tr '\0\n' '|~' <"$tmp/got")"
	fi
done
check "the corpus has 40 cases or more ($cases)" test "$cases" -ge 40

# (b) pgbench, TPC-B-like, simple protocol.
pgb() { "$PG_BIN/pgbench" -h "$PG_SOCK" -p "$PG_PORT" -U postgres "$@" postgres; }
if pgb -i -s 1 -q >"$tmp/pgb-init" 2>&1; then
	pg_psql -c 'SELECT pg_stat_statements_reset()' >/dev/null
	log_from=$(wc -c <"$PG_LOG")
	if pgb -b tpcb-like -M simple -c 2 -t 100 -n >"$tmp/pgb" 2>&1; then
		pgss_texts >"$tmp/want"
		# Statements as sent: the log's "statement: " lines after the
		# reset, each normalised on its own.
		tail -c +$((log_from + 1)) "$PG_LOG" | sed -n 's/^LOG:  statement: //p' |
			grep -v 'pg_stat_statements' >"$tmp/sent"
		: >"$tmp/got0"
		while IFS= read -r q; do
			printf '%s' "$q" | "$tool" - >>"$tmp/got0"
		done <"$tmp/sent"
		sort -zu "$tmp/got0" >"$tmp/got"
		tr '\0' '\n' <"$tmp/want" | sed 's/^/  pg: /'
		check "pgbench: $(wc -l <"$tmp/sent") statements sent, the normalised set equals pg_stat_statements' ($(tr -cd '\0' <"$tmp/want" | wc -c) texts)" \
			cmp -s "$tmp/want" "$tmp/got"
		check "pgbench: the log holds the script's statements with literals (e.g. UPDATE pgbench_accounts SET abalance = abalance + N)" \
			grep -Eq '^UPDATE pgbench_accounts SET abalance = abalance \+ -?[0-9]+ WHERE aid = [0-9]+;?$' "$tmp/sent"
	else
		bad "pgbench run failed: $(tail -3 "$tmp/pgb")"
	fi
else
	bad "pgbench -i failed: $(tail -3 "$tmp/pgb-init")"
fi
# (c) generated statements.
if command -v python3 >/dev/null; then
	python3 "$here/sqlnorm-gen.py" 1 300 >"$tmp/gen"
	compared=0 refused=0 differ=0
	while IFS= read -r -d '' line; do
		printf '%s' "$line" >"$tmp/q"
		pg_psql -c 'SELECT pg_stat_statements_reset()' >/dev/null
		if ! pg_psql -c "$line" >/dev/null 2>&1; then
			refused=$((refused + 1))
			continue
		fi
		compared=$((compared + 1))
		pgss_texts >"$tmp/want"
		"$tool" "$tmp/q" | sort -zu >"$tmp/got"
		if ! cmp -s "$tmp/want" "$tmp/got"; then
			differ=$((differ + 1))
			echo "  statement: $(tr '\n' '~' <"$tmp/q")"
			echo "  pg:        $(tr '\0\n' '|~' <"$tmp/want")"
			echo "  sqlnorm:   $(tr '\0\n' '|~' <"$tmp/got")"
		fi
	done <"$tmp/gen"
	check "generated: $compared statements compared ($refused refused by PostgreSQL), $differ differ" \
		test "$compared" -ge 140 -a "$differ" = 0
else
	skip "generated statements: no python3"
fi
finish

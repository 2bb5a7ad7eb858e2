#!/usr/bin/env bash
# PostgreSQL statement spans (issue 41): pgbench's throughput with
# `record -a --span pg-query -F 99` beside it (R) against without (N), and
# the recorder's CPU.  A private PostgreSQL 15 server (tests/lib-pg.sh) at
# scale SCALE; each run is pgbench's built-in TPC-B-like script, TX
# transactions a client (-t: the same work in every run), simple query
# protocol (the one with the query__start probe), synchronous_commit off
# and shared_buffers 128MB (Debian's default): the server is bound by its
# CPU, not by a disk's flush, the hardest case for a recorder.  The arms alternate, the
# first arm of each round swapped, so that a change of the machine's load
# falls on both alike; the medians of ROUNDS runs.  The recorder's CPU is
# the user+sys of the whole recorder from wait4 (tests/bench/rusage.py),
# over its wall time.  Prints markdown; asserts nothing.
#   usage: sudo bash tests/bench/pg-span.sh
#   env:   ROUNDS=N     runs of each arm (default 5)
#          TX=N         transactions a client (default 3000)
#          CLIENTS=N    pgbench -c and -j (default 1)
#          SCALE=N      pgbench -i -s (default 1)
#          HZ=HZ        -F (default 99)
#          BENCH_BUILD, BENCH_DIR as for every benchmark (lib.sh)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-5}
TX=${TX:-3000}
CLIENTS=${CLIENTS:-1}
SCALE=${SCALE:-1}
HZ=${HZ:-99}

. "$top/tests/bench/lib.sh"
bench_setup pg-span --root --tools "python3 readelf" flamefs-collect
. "$top/tests/lib-pg.sh"
why=$(pg__missing)
[ -z "$why" ] || { echo "pg-span.sh: $why" >&2; exit 1; }
[ -x "$PG_BIN/pgbench" ] || { echo "pg-span.sh: no $PG_BIN/pgbench" >&2; exit 1; }
# lib-pg.sh reaches a directory under $TMPDIR or /tmp by itself; the work
# directory may be elsewhere.
chgrp postgres "$work" && chmod g+x "$work"
PG_PORT=${PG_PORT:-54338}
trap 'pg_cleanup; bench_cleanup' EXIT
pg_start "$work" >/dev/null || { echo "pg-span.sh: the server did not start" >&2; exit 1; }
pg_psql -c "ALTER SYSTEM SET shared_buffers = '128MB'" -c "ALTER SYSTEM SET synchronous_commit = off" >/dev/null
pg_restart >/dev/null
pg_createdb bench
pgb() { "$PG_BIN/pgbench" -h "$PG_SOCK" -p "$PG_PORT" -U postgres "$@"; }
pgb -i -q -s "$SCALE" bench >/dev/null 2>&1

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# run ARM ROUND: one pgbench run, its tps into $work/ARM.tps; with R the
# recorder beside it, its "wall user sys" into $work/R.cpu.
run() {
	local arm=$1 i=$2 rec= t=0
	if [ "$arm" = R ]; then
		: >"$work/R.$i.err"
		"${rusage[@]}" "$work/R.$i.ru" "$fc" record --store "$work/st.$i" -a -F "$HZ" --span pg-query \
			-d 3600 >/dev/null 2>"$work/R.$i.err" &
		rec=$!
		until grep -q 'Ctrl-C stops' "$work/R.$i.err"; do
			kill -0 "$rec" 2>/dev/null || { cat "$work/R.$i.err" >&2; exit 1; }
			[ $t -lt 1200 ] || { echo "pg-span.sh: the recorder did not start" >&2; exit 1; }
			sleep 0.1
			t=$((t + 1))
		done
	fi
	pgb -n -M simple -c "$CLIENTS" -j "$CLIENTS" -t "$TX" bench >"$work/$arm.$i.out" 2>&1
	if [ -n "$rec" ]; then
		# The recorder's own process: rusage.py's child.
		kill -INT "$(pgrep -P "$rec")"
		wait "$rec"
		awk '{ print $1, $2, $3 }' "$work/R.$i.ru" >>"$work/R.cpu"
		rm -rf "$work/st.$i"
	fi
	awk '/^tps = / { print $3 }' "$work/$arm.$i.out" >>"$work/$arm.tps"
}

bench_machine
echo "# load average before: $(bench_load)"
echo "# pgbench -n -M simple -c $CLIENTS -j $CLIENTS -t $TX, scale $SCALE; record -a -F $HZ --span pg-query; $ROUNDS rounds"
: >"$work/N.tps"
: >"$work/R.tps"
: >"$work/R.cpu"
for ((i = 1; i <= ROUNDS; i++)); do
	if [ $((i % 2)) = 1 ]; then run N "$i"; run R "$i"; else run R "$i"; run N "$i"; fi
	echo "# round $i: N $(sed -n "${i}p" "$work/N.tps") tps, R $(sed -n "${i}p" "$work/R.tps") tps, load $(bench_load)"
done
n=$(median <"$work/N.tps")
r=$(median <"$work/R.tps")
cpu=$(awk '{ print $2 + $3 }' "$work/R.cpu" | median)
share=$(awk '{ print ($2 + $3) / $1 * 100 }' "$work/R.cpu" | median)
echo
echo "| without (N) | with record --span pg-query (R) | R / N | N runs | R runs | recorder CPU (median) | of one core |"
echo "|---|---|---|---|---|---|---|"
printf '| %.1f tps | %.1f tps | %.3f× | %s | %s | %.3f s | %.2f%% |\n' "$n" "$r" \
	"$(awk -v a="$r" -v b="$n" 'BEGIN { print a / b }')" \
	"$(sort -n "$work/N.tps" | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 }')" \
	"$(sort -n "$work/R.tps" | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 }')" "$cpu" "$share"

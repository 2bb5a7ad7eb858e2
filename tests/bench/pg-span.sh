#!/usr/bin/env bash
# PostgreSQL statement spans (issue 41): pgbench's throughput with
# `record -a --span pg-query -F 99` beside it (R) against without (N), and
# with the recorder alone (P: `record -a -F 99`, no span), to tell the
# probes' cost from the sampler's; and the recorder's CPU.  A private PostgreSQL 15 server (tests/lib-pg.sh) at
# scale SCALE; each run is pgbench's built-in TPC-B-like script, TX
# transactions a client (-t: the same work in every run), simple query
# protocol (the one with the query__start probe), synchronous_commit off
# and shared_buffers 128MB (Debian's default): the server is bound by its
# CPU, not by a disk's flush, the hardest case for a recorder.  The arms alternate, the
# first arm of each round swapped, so that a change of the machine's load
# falls on all alike; the medians of ROUNDS runs.  The recorder's CPU is
# the user+sys of the whole recorder from wait4 (tests/bench/rusage.py),
# over its wall time.  A throughput on a busy machine is mostly its load;
# the server's CPU a transaction is not: the backends' user+sys, which the
# postmaster collects as each exits (its cutime + cstime in
# /proc/PID/stat, in clock ticks), over the run's transactions, shows what
# the probes cost the traced backend.  Prints markdown; asserts nothing.
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

# children_ticks PID: the postmaster's cutime + cstime (its exited backends').
children_ticks() {
	# the fields after the command's ")": state is 3, cutime 16, cstime 17
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $14 + $15 }'
}

# run ARM ROUND: one pgbench run, its tps into $work/ARM.tps and the
# server's CPU a transaction into $work/ARM.us; with P or R the recorder
# beside it, its "wall user sys" into $work/ARM.cpu.
run() {
	local arm=$1 i=$2 rec= t=0
	if [ "$arm" != N ]; then
		local span=()
		[ "$arm" = R ] && span=(--span pg-query)
		: >"$work/$arm.$i.err"
		"${rusage[@]}" "$work/$arm.$i.ru" "$fc" record --store "$work/st.$i" -a -F "$HZ" "${span[@]}" \
			-d 3600 >/dev/null 2>"$work/$arm.$i.err" &
		rec=$!
		until grep -q 'Ctrl-C stops' "$work/$arm.$i.err"; do
			kill -0 "$rec" 2>/dev/null || { cat "$work/$arm.$i.err" >&2; exit 1; }
			[ $t -lt 1200 ] || { echo "pg-span.sh: the recorder did not start" >&2; exit 1; }
			sleep 0.1
			t=$((t + 1))
		done
	fi
	local c0 c1 pm kids
	pm=$(head -n 1 "$PG_DATA/postmaster.pid")
	kids=$(pgrep -c -P "$pm")
	c0=$(children_ticks "$pm")
	pgb -n -M simple -c "$CLIENTS" -j "$CLIENTS" -t "$TX" bench >"$work/$arm.$i.out" 2>&1
	# pgbench's backends exit after it does: wait until they are reaped
	t=0
	while [ "$(pgrep -c -P "$pm")" -gt "$kids" ] && [ $t -lt 100 ]; do
		sleep 0.1
		t=$((t + 1))
	done
	c1=$(children_ticks "$pm")
	awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" -v n=$((TX * CLIENTS)) \
		'BEGIN { printf "%.1f\n", (b - a) / hz / n * 1e6 }' >>"$work/$arm.us"
	if [ -n "$rec" ]; then
		# The recorder's own process: rusage.py's child.
		kill -INT "$(pgrep -P "$rec")"
		wait "$rec"
		awk '{ print $1, $2, $3 }' "$work/$arm.$i.ru" >>"$work/$arm.cpu"
		rm -rf "$work/st.$i"
	fi
	awk '/^tps = / { print $3 }' "$work/$arm.$i.out" >>"$work/$arm.tps"
}

bench_machine
echo "# load average before: $(bench_load)"
echo "# pgbench -n -M simple -c $CLIENTS -j $CLIENTS -t $TX, scale $SCALE; record -a -F $HZ [--span pg-query]; $ROUNDS rounds"
for a in N P R; do : >"$work/$a.tps"; : >"$work/$a.us"; : >"$work/$a.cpu"; done
orders=("N P R" "R N P" "P R N")
for ((i = 1; i <= ROUNDS; i++)); do
	line="# round $i:"
	for a in ${orders[$(((i - 1) % 3))]}; do run "$a" "$i"; done
	for a in N P R; do line+=" $a $(tail -n 1 "$work/$a.tps") tps $(tail -n 1 "$work/$a.us") us/tx,"; done
	echo "$line load $(bench_load)"
done
echo
echo "| arm | tps (median) | / N | runs | server CPU a transaction (median) | − N | recorder CPU (median) | of one core |"
echo "|---|---|---|---|---|---|---|---|"
n=$(median <"$work/N.tps")
nus=$(median <"$work/N.us")
for a in N P R; do
	t=$(median <"$work/$a.tps")
	us=$(median <"$work/$a.us")
	cpu=- share=-
	if [ "$a" != N ]; then
		cpu=$(awk '{ print $2 + $3 }' "$work/$a.cpu" | median | awk '{ printf "%.3f s", $1 }')
		share=$(awk '{ print ($2 + $3) / $1 * 100 }' "$work/$a.cpu" | median | awk '{ printf "%.2f%%", $1 }')
	fi
	case $a in N) what="N: without a recorder" ;; P) what="P: record -a -F $HZ" ;; R) what="R: record -a -F $HZ --span pg-query" ;; esac
	printf '| %s | %.1f | %.3f× | %s | %.1f µs | %+.1f µs | %s | %s |\n' "$what" "$t" \
		"$(awk -v a="$t" -v b="$n" 'BEGIN { print a / b }')" \
		"$(sort -n "$work/$a.tps" | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 }')" \
		"$us" "$(awk -v a="$us" -v b="$nus" 'BEGIN { print a - b }')" "$cpu" "$share"
done

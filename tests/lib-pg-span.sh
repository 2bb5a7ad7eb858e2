# lib-pg-span.sh — sourced (after lib-e2e.sh and lib-pg.sh) by the tests
# of `record --span` on a real PostgreSQL 15 (test-record-pg-*.sh): what
# they need of the server's binaries, the refusals of a ready-made span's
# syntax, and a recorder that runs in the background while the test
# drives the server.
#
#   pgspan_need PROBE
#                    exits 77 with "SKIP: reason" unless PostgreSQL 15
#                    ($PG_BIN), its pgbench and, in $PG_BIN/postgres, the
#                    USDT probe PROBE (e.g. query__start: a server built
#                    with --enable-dtrace, as Debian's is) are here, and
#                    BPF works.  Sets pgspan_postgres (the server's path).
#   pgspan_refused SPEC EXIT TEXT WHAT
#                    checks that `record -a --span SPEC` exits EXIT with
#                    TEXT in its message (WHAT names the check).
#   pgspan_refusals SHORTCUT PROBE_PREFIX
#                    checks that `--span SHORTCUT:sql` is refused (exit 2,
#                    "a ready-made span takes only :in=PATH") and that
#                    `--span SHORTCUT:in=/bin/true` fails to attach (exit 1,
#                    "cannot attach postgresql:PROBE_PREFIX...").
#   pgspan_record_start STORE ERR RECORD-OPTIONS...
#                    starts `record --verbose --store STORE -a
#                    RECORD-OPTIONS... -d 3600` in the background (stdout to
#                    ERR.out, stderr to ERR) and returns once it is sampling
#                    ("Ctrl-C stops" in ERR); a recorder that exits or
#                    takes 120 s to start is a failure (finish).  Sets
#                    pgspan_rec to its pid, which the test's e2e_on_exit
#                    should kill.
#   pgspan_record_stop
#                    stops it with SIGINT, as Ctrl-C would, and waits; sets
#                    pgspan_rc to its exit status and clears pgspan_rec.
# They use $collect and $tmp, and check, bad and finish (lib.sh).

pgspan_need() {
	pg_skip_unless_available
	pgspan_postgres=$PG_BIN/postgres
	[ -x "$PG_BIN/pgbench" ] || { echo "SKIP: no $PG_BIN/pgbench (package postgresql-15)"; exit 77; }
	readelf -n "$pgspan_postgres" 2>/dev/null | grep -q "Name: $1" ||
		{ echo "SKIP: $pgspan_postgres has no USDT probe $1 (not built with --enable-dtrace)"; exit 77; }
	e2e_need_bpf
}

pgspan_refused() {
	local spec=$1 want=$2 text=$3 rc
	"$collect" record --store "$tmp/bad" -a --span "$spec" -d 1 >/dev/null 2>"$tmp/bad.err"
	rc=$?
	check "$4 (exit $rc, want $want)" test $rc = "$want" -a -n "$(grep -F -- "$text" "$tmp/bad.err")"
}

pgspan_refusals() {
	pgspan_refused "$1:sql" 2 'a ready-made span takes only :in=PATH' "--span $1:sql is refused, a message"
	pgspan_refused "$1:in=/bin/true" 1 "cannot attach postgresql:$2" "--span $1:in=/bin/true fails to attach, the probe named"
}

pgspan_rec= pgspan_rc=
pgspan_record_start() {
	local store=$1 err=$2 t=0
	shift 2
	"$collect" record --verbose --store "$store" -a "$@" -d 3600 >"$err.out" 2>"$err" &
	pgspan_rec=$!
	until grep -qs 'Ctrl-C stops' "$err"; do
		if ! kill -0 "$pgspan_rec" 2>/dev/null || [ $t -ge 1200 ]; then
			bad "the recorder did not start: $(cat "$err")"
			finish
		fi
		sleep 0.1
		t=$((t + 1))
	done
}

pgspan_record_stop() {
	kill -INT "$pgspan_rec"
	wait "$pgspan_rec"
	pgspan_rc=$?
	pgspan_rec=
}

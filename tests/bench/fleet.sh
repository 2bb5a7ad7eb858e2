#!/usr/bin/env bash
# Fleet benchmark (issue 22, "Targets"): 64 hosts push into one PostgreSQL
# store, against the embedded store measured in the same run.  Prints
# numbers and PASS/FAIL lines for the correctness checks; it is not a
# meson test.
#   usage: sudo bash tests/bench/fleet.sh [--quick | --round-trips | --thousand]
#     --quick     a 20 s recording instead of FLEET_RECORD_SECS (a first pass)
#     --round-trips  only the view's first reads over a 10 ms link (below)
#     --thousand  only the 1,000-host fleet (K, below)
#   env:  BENCH_DIR=DIR    work directory, kept (default: a new /var/tmp dir,
#                          removed at exit)
#         REUSE=1          reuse DIR/rec.perf from an earlier run in BENCH_DIR
#         FLEET_RECORD_SECS  length of the recording (default 270: ~200 MB of
#                          perf script text here)
#         FLEET_HOSTS      simulated hosts (default 64)
#         FLEET_SLICES     slices the recording is cut into (default 600)
#         FLEET_JOBS       pushes and imports at a time (default 4)
#         FLEET_PUSH_SECS  length of the record --push run (default 190)
# A private PostgreSQL 15 server (tests/lib-pg.sh) runs in the work
# directory for the run.
#
# One real recording (record_workload: `perf record -e cpu-clock -F 999 -a
# -g` of a compile loop, `perf script`) feeds everything:
#  1. correctness at scale: it is cut into FLEET_SLICES slices by sample
#     time; host h's minute m (of one hour) gets slice (h, m) (a fixed
#     pseudo-random choice), its sample times moved into minute m, imported
#     with --host hH --clock-offset into the host's own embedded store.  All
#     hosts push into one database, FLEET_JOBS at a time.  Checks: the
#     database's export (--event cpu-clock) = the line-wise sum of the
#     hosts' exports, byte for byte; @host/<name>/<binary>/default/folded
#     in a mount of the database = that host's export of the binary, for
#     every binary of three hosts.
#  2. push: the whole recording, its times stretched over one hour (60
#     minute buckets), is one busy host's store; `push` into an empty
#     database (wall, user, sys).  Then one more minute of it (1/60 of the
#     recording, at minute 60) is imported and pushed: the steady push.
#  3. size: that host's embedded store after `compact` against the
#     database's tables (pg_total_relation_size, `stats` bytes:) after
#     `compact` (VACUUM), both against the input bytes.
#  4. view: the 64-host database mounted, against the 64 local stores
#     merged into one directory (`merge`) mounted: first `ls` of the
#     busiest binary's version directory (fresh mount, page cache dropped,
#     PostgreSQL restarted), `cat folded` of that version, cold (fresh
#     mount) and warm (second read), then the daemon's VmRSS / VmHWM.
#  R. (--round-trips, alone) the view 10 ms away: a network namespace
#     joined to the host by a veth pair with netem delaying each way 5 ms;
#     the server listens on the host's end (TCP), FLEET_RT_HOSTS (256)
#     hosts x 4 binaries of folded data in one database; inside the
#     namespace, a fresh mount's first read of the root's folded, of one
#     binary's version folded and of @host/h1/folded, each timed and its
#     statements counted in the server's log, with the counts read in one
#     query per tree (store_series_prefetch) and, for comparison, one by
#     one ($FLAMEFS_TEST_NO_PREFETCH).
#  K. (--thousand, alone) 1,000 hosts: a FLEET_K_RECORD_SECS (60) s
#     recording of the compile loop cut into FLEET_K_SLICES (120) slices;
#     FLEET_K_HOSTS (1000) hosts of FLEET_K_MINUTES (10) minutes, host h's
#     minute m a pseudo-random slice moved into that minute, imported under
#     host name hH into a store of its own and compacted (FLEET_JOBS at a
#     time, default 2 here), all pushed into one database; then, from the
#     database 10 ms away (delay_link, as R), over its socket and from the
#     same data merged into a directory: a fresh mount's first `cat /top`,
#     first `ls` of the busiest version and its `folded`, the statements
#     each read costs (the server's log), the daemon's VmRSS and VmHWM;
#     the database's size after VACUUM against the sum of the hosts'
#     compacted stores, and table by table (heap, indexes, TOAST).
#  5. the steady push of a recording host: `record -a -F 99 --push` into
#     the 64-host database, --push-every 60s, for FLEET_PUSH_SECS (190)
#     under the workload; the push thread's CPU per push from record's
#     summary, the first push apart.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
quick=0
[ "${1:-}" = --quick ] && quick=1
. "$top/tests/lib.sh"
. "$top/tests/bench/lib.sh"
. "$top/tests/lib-pg.sh"

# delay_link: puts the server (pg_start'ed) 10 ms away from the commands
# run under "${in[@]}": a network namespace joined by a veth pair with
# netem delaying each way 5 ms where the kernel has netem, else a proxy
# on 127.0.0.1 that holds each chunk 5 ms each way.  Sets in, link, and
# delayed_uri DB prints the database's URI as seen from there.
delay_link() {
	ns=flamefs-rt$$
	in=()
	if command -v tc >/dev/null && command -v ip >/dev/null && ip netns add $ns 2>/dev/null &&
		ip link add rt$$a type veth peer name rt$$b && ip link set rt$$b netns $ns &&
		tc qdisc add dev rt$$a root netem delay 5ms 2>/dev/null &&
		ip netns exec $ns tc qdisc add dev rt$$b root netem delay 5ms 2>/dev/null; then
		ip addr add 10.77.0.1/24 dev rt$$a
		ip link set rt$$a up
		ip netns exec $ns ip addr add 10.77.0.2/24 dev rt$$b
		ip netns exec $ns ip link set rt$$b up
		ip netns exec $ns ip link set lo up
		printf "listen_addresses = '10.77.0.1'\n" >>"$PG_DATA/postgresql.conf"
		echo "host all postgres 10.77.0.0/24 trust" >>"$PG_DATA/pg_hba.conf"
		pg_restart >/dev/null
		in=(ip netns exec $ns)
		delayed_uri() { echo "postgresql://postgres@10.77.0.1:$PG_PORT/$1"; }
		link="veth pair + netem 5 ms each way"
	else
		# No netem in this kernel: a proxy on 127.0.0.1 holds each chunk
		# 5 ms each way before passing it on to the server's socket.
		ip netns del $ns 2>/dev/null || true
		ip link del rt$$a 2>/dev/null || true
		cat >"$work/delay.py" <<'PY'
import asyncio, sys
port, sock, delay = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]) / 1000

async def pipe(r, w):
    loop = asyncio.get_running_loop()
    q = asyncio.Queue()
    async def read():
        while True:
            d = await r.read(65536)
            await q.put((loop.time() + delay, d))
            if not d:
                return
    async def write():
        while True:
            t, d = await q.get()
            if t > loop.time():
                await asyncio.sleep(t - loop.time())
            if not d:
                w.close()
                return
            w.write(d)
            await w.drain()
    await asyncio.gather(read(), write())

async def handle(cr, cw):
    sr, sw = await asyncio.open_unix_connection(sock)
    await asyncio.gather(pipe(cr, sw), pipe(sr, cw), return_exceptions=True)

async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", port)
    async with srv:
        await srv.serve_forever()

asyncio.run(main())
PY
		python3 "$work/delay.py" $((PG_PORT + 100)) "$PG_SOCK/.s.PGSQL.$PG_PORT" 5 &
		proxy=$!
		sleep 0.5
		delayed_uri() { echo "postgresql://postgres@127.0.0.1:$((PG_PORT + 100))/$1?sslmode=disable"; }
		link="a proxy holding each chunk 5 ms each way (no netem in this kernel)"
	fi
}
delay_cleanup() {
	ip netns del flamefs-rt$$ 2>/dev/null || true
	ip link del rt$$a 2>/dev/null || true
	[ -z "${proxy:-}" ] || kill $proxy 2>/dev/null || true
}

if [ "${1:-}" = --round-trips ]; then
	bench_setup fleet-rt --root --tools "fusermount3 python3" fs/flamefs flamefs-collect
	trap 'delay_cleanup; pg_cleanup; bench_cleanup' EXIT
	chgrp postgres "$work" && chmod g+x "$work"
	pg_start "$work/pg" >/dev/null || { echo "fleet.sh: PostgreSQL did not start" >&2; exit 1; }
	delay_link
	db=$(delayed_uri rt)
	pg_createdb rt >/dev/null
	nh=${FLEET_RT_HOSTS:-256}
	for h in $(seq 1 "$nh"); do
		for b in 0 1 2 3; do printf 'app%s;main;work%s %s\n' $b $((h % 7)) $h; done >"$work/h.folded"
		"$fc" import --store "$work/local" --host "h$h" --time 1764000000 "$work/h.folded" >/dev/null
	done
	"$fc" push --store "$work/local" --to "$(pg_uri rt postgres)" >/dev/null
	pg_psql -c "ALTER DATABASE rt SET log_statement = 'all'" >/dev/null
	echo "# round trips: $nh hosts x 4 binaries = $((nh * 4)) series, 10 ms away: $link"
	echo "mode        first read of             ms   statements (mount to unmount)  counts queries"
	for mode in prefetch one-by-one; do
		for f in folded app0/default/folded @host/h1/folded; do
			env=()
			[ $mode = one-by-one ] && env=(env FLAMEFS_TEST_NO_PREFETCH=1)
			mkdir -p "$work/mnt"
			b_all=$(wc -l <"$PG_LOG")
			"${in[@]}" "${env[@]}" bash -c '
				"$1" -f "$2" "$3" 2>/dev/null &
				for _ in $(seq 100); do mountpoint -q "$3" && break; sleep 0.1; done
				t=$EPOCHREALTIME
				cat "$3/$4" >/dev/null
				awk -v a="$t" -v b="$EPOCHREALTIME" "BEGIN { printf \"%.0f\n\", (b - a) * 1000 }"
				fusermount3 -u "$3"; wait' _ "$flamefs" "$db" "$work/mnt" "$f" >"$work/ms"
			n_all=$(tail -n +$((b_all + 1)) "$PG_LOG" | grep -c "LOG:  \(statement\|execute\)" || true)
			n_counts=$(tail -n +$((b_all + 1)) "$PG_LOG" | grep -c "FROM counts WHERE series\|JOIN counts c ON" || true)
			printf '%-11s %-24s %6s %10s %14s\n' $mode "$f" "$(cat "$work/ms")" "$n_all" "$n_counts"
		done
	done
	exit 0
fi
if [ "${1:-}" = --thousand ]; then
	bench_setup fleet-1k --root --tools "perf python3 fusermount3" fs/flamefs flamefs-collect
	trap 'delay_cleanup; pg_cleanup; bench_cleanup' EXIT
	nh=${FLEET_K_HOSTS:-1000}
	nmin=${FLEET_K_MINUTES:-10}
	nsl=${FLEET_K_SLICES:-120}
	jobs=${FLEET_JOBS:-2}
	rec_secs=${FLEET_K_RECORD_SECS:-60}
	t0=1764000000
	mnt=$work/mnt
	mkdir -p "$mnt" "$work/sl" "$work/hosts"
	now() { echo "$EPOCHREALTIME"; }
	secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
	bench_machine
	echo "# build: $build (release), commit $(git -C "$top" rev-parse --short HEAD)$(git -C "$top" diff --quiet || echo ' + uncommitted changes')"
	echo "# work dir: $work"
	bench_wait_quiet || echo "# (the machine stayed busy: these numbers are upper bounds)"
	if [ "${REUSE:-0}" = 1 ] && [ -s "$work/rec.perf" ]; then
		echo "# reusing $work/rec.perf"
		rec_secs=$(cat "$work/rec.secs" 2>/dev/null || echo "?")
	else
		record_workload "$rec_secs" "$work/rec.perf"
		echo "$rec_secs" >"$work/rec.secs"
	fi
	echo "# recording: perf record -e cpu-clock -F 999 -a -g of the compile loop, ${rec_secs} s:" \
		"$(stat -c %s "$work/rec.perf") bytes of perf script, $(grep -c '^[^[:space:]#]' "$work/rec.perf") samples"
	# The hosts: the recording cut into $nsl slices by sample time; slice
	# i written once per minute m with its times stretched over that
	# minute (sl/i.m.perf); host h's minute m is slice (h, m), a fixed
	# pseudo-random choice, so hosts share stacks as a fleet running the
	# same software does and differ in what each minute holds.
	if [ "${REUSE:-0}" = 1 ] && [ "$(cat "$work"/hosts/s*.bytes 2>/dev/null | wc -l)" = "$nh" ]; then
		echo "# reusing the $nh hosts' stores in $work/hosts"
		r_import="(reused)"
	else
		python3 - "$work/rec.perf" "$nsl" "$nmin" "$nh" "$work" <<'PY'
import random, re, sys
rec, n, nmin, nh, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
HDR = re.compile(rb"^(.*? )(\d+\.\d+)(: .*)$", re.S)
s = []
with open(rec, "rb") as f:
    for block in f.read().split(b"\n\n"):
        block = block.strip(b"\n")
        if not block or block.startswith(b"#"):
            continue
        nl = block.find(b"\n")
        first, rest = (block, b"") if nl < 0 else (block[:nl], block[nl:])
        m = HDR.match(first)
        if not m:
            sys.exit("fleet.sh: no sample time in %r" % first[:80])
        s.append((float(m.group(2)), m.group(1), m.group(3) + rest))
s.sort(key=lambda x: x[0])
t_lo, t_hi = s[0][0], s[-1][0] + 1e-6
d = (t_hi - t_lo) / n
cut = [[] for _ in range(n)]
for smp in s:
    cut[min(n - 1, int((smp[0] - t_lo) / d))].append(smp)
for i in range(n):
    for m in range(nmin):
        with open("%s/sl/%d.%d.perf" % (work, i, m), "wb") as f:
            for smp in cut[i]:
                t = m * 60 + (smp[0] - (t_lo + i * d)) * 60 / d * 0.999
                f.write(smp[1] + b"%.6f" % t + smp[2] + b"\n\n")
with open("%s/hosts.txt" % work, "w") as f:
    for h in range(1, nh + 1):
        f.write("%d %s\n" % (h, " ".join("%s/sl/%d.%d.perf" % (work, random.Random(h * 100003 + m).randrange(n), m)
                                         for m in range(nmin))))
PY
		echo "# $nh hosts x $nmin minutes: each minute one of $nsl slices of the recording" \
			"($(du -sb "$work/sl" | cut -f1) bytes of slices), under the host name hH, its times moved into the minute"
		# one host: its store, compacted, and what stats says it holds
		host_store() {
			local h=$1
			shift
			rm -rf "$work/hosts/s$h"
			"$fc" import --store "$work/hosts/s$h" --host "h$h" --clock-offset "$t0" "$@" >/dev/null 2>&1 &&
				"$fc" compact --store "$work/hosts/s$h" >/dev/null 2>&1 &&
				"$fc" stats --store "$work/hosts/s$h" | awk '/^bytes:/ { $1 = ""; print }' >"$work/hosts/s$h.bytes"
		}
		export -f host_store
		export fc work t0
		a=$(now)
		xargs -P "$jobs" -L 1 bash -c 'host_store "$@"' _ <"$work/hosts.txt" ||
			{ echo "fleet.sh: an import failed" >&2; exit 1; }
		r_import=$(secs "$a" "$(now)")
		rm -rf "$work/sl"
	fi
	# What the hosts' stores hold on disk: du as stats counts it (blocks),
	# and the SST bytes of their column families (frames, nodes, counts,
	# other: the data, without RocksDB's per-store files).
	r_emb_du=$(du -s -B1 --total "$work"/hosts/s*/ | tail -1 | cut -f1)
	r_emb_sst=$(cat "$work"/hosts/s*.bytes | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] ~ /^(frames|nodes|counts|other)$/) s += a[2] } } END { print s + 0 }')
	r_emb_parts=$(cat "$work"/hosts/s*.bytes | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "="); t[a[1]] += a[2] } }
		END { printf "frames %d, nodes %d, counts %d, other %d", t["frames"], t["nodes"], t["counts"], t["other"] }')
	echo "# imported and compacted in $r_import s ($jobs at a time): sum of the $nh stores $r_emb_du bytes on disk, $r_emb_sst in SSTs ($r_emb_parts)"

	rm -rf "$work/pg" "$work/merged"
	mkdir -p "$work/pg"
	chgrp postgres "$work" && chmod g+x "$work"
	pg_start "$work/pg" >/dev/null || { echo "fleet.sh: PostgreSQL did not start" >&2; exit 1; }
	trap 'delay_cleanup; pg_cleanup; bench_cleanup' EXIT
	delay_link
	pg_createdb k >/dev/null
	K=$(pg_uri k postgres)
	a=$(now)
	cut -d' ' -f1 "$work/hosts.txt" | xargs -P "$jobs" -I{} "$fc" push --store "$work/hosts/s{}" --to "$K" \
		>"$work/push.out" 2>&1 || { echo "fleet.sh: a push failed" >&2; tail "$work/push.out"; exit 1; }
	r_push=$(secs "$a" "$(now)")
	"$fc" compact --store "$K" >/dev/null 2>&1
	r_db=$("$fc" stats --store "$K" | awk '/^bytes:/ { split($2, a, "="); print a[2] }')
	r_series=$("$fc" stats --store "$K" | grep -oE '^[0-9]+ series' | cut -d' ' -f1)
	echo "# pushed in $r_push s ($jobs at a time); the database after VACUUM: $r_db bytes, $r_series series"
	echo
	echo "## Where the database's bytes go (after VACUUM)"
	echo "| table | rows | heap | indexes | TOAST | total |"
	echo "|---|---|---|---|---|---|"
	pg_psql -d k -AtF' ' -c "SELECT c.relname, c.reltuples::int8, pg_relation_size(c.oid), pg_indexes_size(c.oid),
		coalesce(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0), pg_total_relation_size(c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 6 DESC" |
		awk '{ printf "| %s | %d | %d | %d | %d | %d |\n", $1, $2, $3, $4, $5, $6 }'
	read -r c_rows c_entries c_stored < <(pg_psql -d k -AtF' ' -c "SELECT count(*), sum(length(entries)), sum(pg_column_size(entries)) FROM counts")
	echo
	echo "counts: $c_rows rows, their entries $c_entries bytes ($c_stored as stored);" \
		"the rest of the heap is per row (tuple header, item pointer, the keys and totals)"
	pg_psql -d k -AtF' ' -c "SELECT pg_indexes_size(c.oid), indexrelid::regclass, pg_relation_size(indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = 'counts'" |
		awk '{ printf "index %s: %d bytes\n", $2, $3 }'

	# The baseline: the same data in one directory (merged from the database).
	a=$(now)
	"$fc" merge --store "$work/merged" "$K" >/dev/null 2>&1 || { echo "fleet.sh: merge failed" >&2; exit 1; }
	"$fc" compact --store "$work/merged" >/dev/null 2>&1
	r_merge=$(secs "$a" "$(now)")
	r_merged=$("$fc" stats --store "$work/merged" | awk '/^bytes:/ { split($2, a, "="); print a[2] }')
	bin=$("$fc" stats --store "$work/merged" |
		awk 'NR > 1 && NF == 9 && $3 == "cpu-clock" && $4 + 0 > m { m = $4 + 0; b = $1 } END { print b }')
	echo
	echo "# merged into one directory in $r_merge s: $r_merged bytes; the version read below: /$bin/default"

	pg_psql -c "ALTER DATABASE k SET log_statement = 'all'" >/dev/null
	# reads STORE WHAT...: a fresh mount (page cache dropped; for the
	# database, the server restarted) under "${in[@]}", then each WHAT in
	# turn ("cat PATH" or "ls PATH"), each timed and its statements counted
	# in the server's log; then the daemon's VmRSS and VmHWM.  Prints
	# "ms statements" for the mount (until the mount point is up) and per
	# WHAT, then "rss_kb hwm_kb".
	cat >"$work/reads.sh" <<'SH'
flamefs=$1 store=$2 mnt=$3 log=$4 out=$5
shift 5
lines() { if [ -f "$log" ]; then wc -l <"$log"; else echo 0; fi; }
# statements FROM: "all refresh" since line FROM of the log; refresh:
# those of the view's once-a-second new snapshot (COMMIT, BEGIN, the
# commit counter, new frame and node runs)
statements() {
	tail -n +$(($1 + 1)) "$log" 2>/dev/null | grep "LOG:  \(statement\|execute\)" |
		awk '/COMMIT|BEGIN ISOLATION|key = .commits.|FROM (frame|node)_runs WHERE first >=/ { r++ } { n++ }
			END { print n + 0, r + 0 }'
}
b=$(lines)
t=$EPOCHREALTIME
"$flamefs" -f "$store" "$mnt" 2>>"$mnt.err" &
pid=$!
for _ in $(seq 600); do mountpoint -q "$mnt" && break; sleep 0.01; done
mountpoint -q "$mnt" || { echo "flamefs did not mount $store" >&2; exit 1; }
ms=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
sleep 0.3
echo "$ms $(statements "$b")"
i=0
for w in "$@"; do
	i=$((i + 1))
	b=$(lines)
	t=$EPOCHREALTIME
	case $w in cat\ *) cat "$mnt/${w#cat }" >"$out.$i" ;; ls\ *) ls "$mnt/${w#ls }" >"$out.$i" ;; esac
	ms=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	sleep 0.3
	echo "$ms $(statements "$b")"
done
awk '$1 == "VmRSS:" { r = $2 } $1 == "VmHWM:" { h = $2 } END { print r, h }' "/proc/$pid/status"
fusermount3 -u "$mnt"
wait
SH
	declare -A R
	for where in emb socket delayed; do
		case $where in
		emb) st=$work/merged pre=() ;;
		socket) st=$K pre=() ;;
		delayed) st=$(delayed_uri k) pre=("${in[@]}") ;;
		esac
		for run in top version; do
			[ $where = emb ] || pg_restart >/dev/null
			sync
			echo 3 >/proc/sys/vm/drop_caches
			if [ $run = top ]; then
				"${pre[@]}" bash "$work/reads.sh" "$flamefs" "$st" "$mnt" "$PG_LOG" "$work/out.$where.top" \
					"cat top" >"$work/r.out" || { echo "fleet.sh: reads from $where failed" >&2; exit 1; }
				read -r R[$where.mount] R[$where.mount.q] R[$where.mount.r] < <(sed -n 1p "$work/r.out")
				read -r R[$where.top] R[$where.top.q] R[$where.top.r] < <(sed -n 2p "$work/r.out")
				read -r R[$where.top.rss] R[$where.top.hwm] < <(sed -n 3p "$work/r.out")
			else
				"${pre[@]}" bash "$work/reads.sh" "$flamefs" "$st" "$mnt" "$PG_LOG" "$work/out.$where.version" \
					"ls $bin/default" "cat $bin/default/folded" >"$work/r.out" ||
					{ echo "fleet.sh: reads from $where failed" >&2; exit 1; }
				read -r R[$where.ls] R[$where.ls.q] R[$where.ls.r] < <(sed -n 2p "$work/r.out")
				read -r R[$where.folded] R[$where.folded.q] R[$where.folded.r] < <(sed -n 3p "$work/r.out")
				read -r R[$where.rss] R[$where.hwm] < <(sed -n 4p "$work/r.out")
			fi
		done
	done
	pg_psql -c "ALTER DATABASE k RESET log_statement" >/dev/null
	fails=0
	for f in top.1 version.1 version.2; do
		for where in socket delayed; do
			if cmp -s "$work/out.$where.$f" "$work/out.emb.$f" && [ -s "$work/out.emb.$f" ]; then
				echo "PASS: $f read from the database ($where) = from the merged directory ($(wc -c <"$work/out.emb.$f") bytes)"
			else
				echo "FAIL: $f read from the database ($where) differs from the merged directory's"
				fails=$((fails + 1))
			fi
		done
	done
	q() { # KEY: "n" or "n (r of them the view's refresh)"
		if [ "${R[$1.r]:-0}" = 0 ]; then echo "${R[$1.q]}"; else echo "${R[$1.q]} (${R[$1.r]} the refresh's)"; fi
	}
	mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
	mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
	met() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t ? "met" : "**missed**") }'; }
	echo
	echo "## 1,000 hosts ($nh hosts x $nmin minutes, $r_series series; the database 10 ms away: $link)"
	echo "| measurement | target | database, 10 ms away | database, local socket | embedded (merged directory) |"
	echo "|---|---|---|---|---|"
	echo "| mount (store opened: series listed, dictionary loaded) | | ${R[delayed.mount]} ms | ${R[socket.mount]} ms | ${R[emb.mount]} ms |"
	echo "| ... its statements (the first snapshot: BEGIN, the commit counter, frame and node runs, the series) | | ${R[delayed.mount.q]} | ${R[socket.mount.q]} | |"
	echo "| first \`cat /top\` (fresh mount) | <= 1 s | ${R[delayed.top]} ms $(met "${R[delayed.top]}" 1000) | ${R[socket.top]} ms | ${R[emb.top]} ms |"
	echo "| ... its statements | a constant | $(q delayed.top) | $(q socket.top) | |"
	echo "| first \`ls /$bin/default\` (fresh mount) | <= 0.5 s | ${R[delayed.ls]} ms $(met "${R[delayed.ls]}" 500) | ${R[socket.ls]} ms | ${R[emb.ls]} ms |"
	echo "| ... its statements | a constant | $(q delayed.ls) | $(q socket.ls) | |"
	echo "| then \`cat /$bin/default/folded\` | | ${R[delayed.folded]} ms | ${R[socket.folded]} ms | ${R[emb.folded]} ms |"
	echo "| ... its statements | | $(q delayed.folded) | $(q socket.folded) | |"
	echo "| daemon VmRSS / VmHWM after /top | | $(mib "${R[delayed.top.rss]}") / $(mib "${R[delayed.top.hwm]}") | $(mib "${R[socket.top.rss]}") / $(mib "${R[socket.top.hwm]}") | $(mib "${R[emb.top.rss]}") / $(mib "${R[emb.top.hwm]}") |"
	echo "| daemon VmRSS / VmHWM after ls + folded | | $(mib "${R[delayed.rss]}") / $(mib "${R[delayed.hwm]}") | $(mib "${R[socket.rss]}") / $(mib "${R[socket.hwm]}") | $(mib "${R[emb.rss]}") / $(mib "${R[emb.hwm]}") |"
	r=$(ratio "$r_db" "$r_emb_du")
	echo "| database size after VACUUM against the sum of the $nh compacted stores (on disk) | <= 4x | $(mb "$r_db") | | $(mb "$r_emb_du") (${r}x) $(met "$r" 4) |"
	echo "| ... against the stores' SST bytes alone | | | | $(mb "$r_emb_sst") ($(ratio "$r_db" "$r_emb_sst")x) |"
	echo "| ... the same data merged into one directory | | | | $(mb "$r_merged") ($(ratio "$r_db" "$r_merged")x) |"
	echo
	echo "# import + compact $r_import s, push $r_push s, merge $r_merge s ($jobs at a time)"
	echo "# statements: from the server's log (log_statement = all), between the read's start and 0.3 s after its end;"
	echo "# the view takes a new snapshot once a second (COMMIT, BEGIN, the commit counter, new frame and node runs)"
	echo "# correctness: $([ $fails = 0 ] && echo "all PASS" || echo "$fails FAIL")"
	exit 0
fi
bench_setup fleet --root --tools "perf python3 fusermount3" fs/flamefs flamefs-collect
rec_secs=${FLEET_RECORD_SECS:-270}
[ $quick = 1 ] && rec_secs=20
nhosts=${FLEET_HOSTS:-64}
nslices=${FLEET_SLICES:-600}
jobs=${FLEET_JOBS:-4}
t0=1764000000 # a whole hour: 490000 * 3600
ev=cpu-clock
mnt=$work/mnt
mkdir -p "$mnt"

fs_pid=
unmount() {
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	fi
	if [ -n "$fs_pid" ]; then
		wait "$fs_pid" 2>/dev/null || true
		fs_pid=
	fi
}
trap 'unmount; pg_cleanup; bench_cleanup' EXIT
trap 'exit 130' INT TERM

bench_machine
echo "# build: $build (release), commit $(git -C "$top" rev-parse --short HEAD)$(git -C "$top" diff --quiet || echo ' + uncommitted changes')"
echo "# work dir: $work"
bench_wait_quiet || echo "# (the machine stayed busy: these numbers are upper bounds)"

# ---- helpers --------------------------------------------------------------------
cat >"$work/fleet.py" <<'EOF'
import random, re, sys

HDR = re.compile(rb"^(.*? )(\d+\.\d+)(: .*)$", re.S)

def samples(path):
    """(time, head, tail+body) of each sample of a perf script file."""
    out = []
    with open(path, "rb") as f:
        for block in f.read().split(b"\n\n"):
            block = block.strip(b"\n")
            if not block or block.startswith(b"#"):
                continue
            nl = block.find(b"\n")
            first, rest = (block, b"") if nl < 0 else (block[:nl], block[nl:])
            m = HDR.match(first)
            if not m:
                sys.exit("fleet.py: %s: no sample time in %r" % (path, first[:80]))
            out.append((float(m.group(2)), m.group(1), m.group(3) + rest))
    out.sort(key=lambda s: s[0])
    return out

def write(f, smp, t):
    f.write(smp[1] + b"%.6f" % t + smp[2] + b"\n\n")

cmd = sys.argv[1]
if cmd == "hosts":      # hosts REC NSLICES NHOSTS OUTDIR: OUTDIR/hH.perf
    rec, n, nh, outdir = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    s = samples(rec)
    t_lo, t_hi = s[0][0], s[-1][0] + 1e-6
    d = (t_hi - t_lo) / n
    cut = [[] for _ in range(n)]
    for smp in s:
        cut[min(n - 1, int((smp[0] - t_lo) / d))].append(smp)
    for h in range(1, nh + 1):
        with open("%s/h%d.perf" % (outdir, h), "wb") as f:
            for m in range(60):
                i = random.Random(h * 100003 + m).randrange(n)
                for smp in cut[i]:
                    write(f, smp, m * 60 + (smp[0] - (t_lo + i * d)) * 60 / d * 0.999)
elif cmd == "busy":     # busy REC HOUR.perf MINUTE.perf: the hour, and one more minute
    rec, hour, minute = sys.argv[2:5]
    s = samples(rec)
    t_lo, t_hi = s[0][0], s[-1][0] + 1e-6
    scale = 3600 / (t_hi - t_lo)
    with open(hour, "wb") as f:
        for smp in s:
            write(f, smp, (smp[0] - t_lo) * scale)
    with open(minute, "wb") as f:
        for smp in s:
            t = 3600 + (smp[0] - t_lo) * scale
            if t >= 3660:
                break
            write(f, smp, t)
EOF
py() { python3 "$work/fleet.py" "$@"; }
now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# ru OUT CMD...: wall user sys maxrss of CMD into OUT
ru() { local o=$1; shift; python3 "$top/tests/bench/rusage.py" "$o" "$@"; }
bytes_of() { "$fc" stats --store "$1" | awk '/^bytes:/ { for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == "'"$2"'") print a[2] } }'; }
verdict() { # verdict WHAT FILE-GOT FILE-WANT
	if cmp -s "$2" "$3"; then
		echo "PASS: $1 ($(wc -l <"$2") lines)"
	else
		echo "FAIL: $1"
		diff -u "$3" "$2" | head -10 || true
		fails=$((fails + 1))
	fi
}
fails=0

mount_store() { # STORE: a fresh mount, page cache dropped
	unmount
	sync
	echo 3 >/proc/sys/vm/drop_caches
	"$flamefs" -f "$1" "$mnt" >/dev/null 2>>"$work/flamefs.err" &
	fs_pid=$!
	local i
	for i in $(seq 400); do
		mountpoint -q "$mnt" && return 0
		kill -0 "$fs_pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "flamefs did not mount $1 (see $work/flamefs.err)" >&2
	return 1
}
status_kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$fs_pid/status"; }

# ---- the recording and the server -------------------------------------------------
if [ "${REUSE:-0}" = 1 ] && [ -s "$work/rec.perf" ]; then
	echo "# reusing $work/rec.perf"
else
	record_workload "$rec_secs" "$work/rec.perf"
fi
rec_bytes=$(stat -c %s "$work/rec.perf")
echo "# recording: $rec_bytes bytes of perf script, $(grep -c '^[^[:space:]#]' "$work/rec.perf") samples"

rm -rf "$work/pg"
mkdir -p "$work/pg"
# The server runs as postgres, which must enter the work directory (mktemp
# makes it 0700 and lib-pg.sh opens only those under $TMPDIR or /tmp).
chgrp postgres "$work" && chmod g+x "$work"
pg_start "$work/pg" >/dev/null || { echo "fleet.sh: PostgreSQL did not start" >&2; exit 1; }
# pg_start replaced the EXIT trap with pg_cleanup + ours; keep the unmount.
trap 'unmount; pg_cleanup; bench_cleanup' EXIT
pg_createdb fleet >/dev/null
pg_createdb busy >/dev/null
FLEET=$(pg_uri fleet postgres)
BUSY=$(pg_uri busy postgres)
declare -A R

# ---- 2 + 3: one busy host ----------------------------------------------------------------
py busy "$work/rec.perf" "$work/busy-hour.perf" "$work/busy-minute.perf"
rm -rf "$work/busy"
"$fc" import --store "$work/busy" --host busy --clock-offset $t0 "$work/busy-hour.perf" >/dev/null 2>&1
pg_psql -d busy -Atc 'CHECKPOINT' >/dev/null
ru "$work/push-busy.ru" "$fc" push --store "$work/busy" --to "$BUSY" >"$work/push-busy.out" 2>&1
read -r R[push.wall] R[push.user] R[push.sys] _ <"$work/push-busy.ru"
R[push.out]=$(tail -1 "$work/push-busy.out")
"$fc" import --store "$work/busy" --host busy --clock-offset $t0 "$work/busy-minute.perf" >/dev/null 2>&1
ru "$work/push-min.ru" "$fc" push --store "$work/busy" --to "$BUSY" >"$work/push-min.out" 2>&1
read -r R[min.wall] R[min.user] R[min.sys] _ <"$work/push-min.ru"
R[min.out]=$(tail -1 "$work/push-min.out")
R[min.cpu]=$(awk -v u="${R[min.user]}" -v s="${R[min.sys]}" 'BEGIN { printf "%.4f", u + s }')
# What a push costs before it copies anything: the process alone (--help:
# exec, linking RocksDB and libpq), opening the local store (stats), and a
# push with nothing new (both stores opened, the changes asked for).
cpu_of() { # CMD... -> user+sys seconds, the median of 3
	local i
	for i in 1 2 3; do
		ru "$work/cpu.ru" "$@" >/dev/null 2>&1 || true
		awk '{ printf "%.4f\n", $2 + $3 }' "$work/cpu.ru"
	done | sort -g | sed -n 2p
}
R[cpu.help]=$(cpu_of "$fc" --help)
R[cpu.stats]=$(cpu_of "$fc" stats --store "$work/busy")
R[cpu.nothing]=$(cpu_of "$fc" push --store "$work/busy" --to "$BUSY")
R[busy.input]=$(bytes_of "$work/busy" input)
"$fc" compact --store "$work/busy" >/dev/null 2>&1
"$fc" compact --store "$BUSY" >/dev/null 2>&1
R[size.emb]=$(bytes_of "$work/busy" dir)
R[size.db]=$(bytes_of "$BUSY" dir)
R[size.db.parts]=$("$fc" stats --store "$BUSY" | awk '/^bytes:/ { $1 = ""; print }')
R[size.emb.parts]=$("$fc" stats --store "$work/busy" | awk '/^bytes:/ { $1 = ""; print }')
R[size.tables]=$(pg_psql -d busy -Atc "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
	JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm')")
R[busy.series]=$("$fc" stats --store "$work/busy" | grep -oE '^[0-9]+ series' | cut -d' ' -f1)
R[busy.nodes]=$("$fc" stats --store "$work/busy" | grep -oE '[0-9]+ stack nodes' | cut -d' ' -f1)
echo "# busy host: ${R[busy.series]} series, ${R[busy.nodes]} stack nodes, input ${R[busy.input]} bytes"
echo "# push (hour): ${R[push.out]}"
echo "# push (one more minute): ${R[min.out]}"
rm -f "$work/busy-hour.perf"

# ---- 1: 64 hosts --------------------------------------------------------------------
mkdir -p "$work/hosts"
py hosts "$work/rec.perf" "$nslices" "$nhosts" "$work/hosts"
imp() { # H
	rm -rf "$work/hosts/s$1"
	"$fc" import --store "$work/hosts/s$1" --host "h$1" --clock-offset $t0 "$work/hosts/h$1.perf" >/dev/null 2>&1 &&
		rm -f "$work/hosts/h$1.perf"
}
export -f imp
export fc work t0
a=$(now)
seq 1 "$nhosts" | xargs -P "$jobs" -I{} bash -c 'imp {}'
R[hosts.import]=$(secs "$a" "$(now)")
R[hosts.input]=0
for h in $(seq 1 "$nhosts"); do
	R[hosts.input]=$((R[hosts.input] + $(bytes_of "$work/hosts/s$h" input)))
done
echo "# $nhosts hosts imported in ${R[hosts.import]} s ($jobs at a time), ${R[hosts.input]} input bytes"

a=$(now)
seq 1 "$nhosts" | xargs -P "$jobs" -I{} \
	"$fc" push --store "$work/hosts/s{}" --to "$FLEET" >"$work/push-hosts.out" 2>&1 ||
	{ echo "FAIL: a push of the $nhosts hosts failed"; tail "$work/push-hosts.out"; fails=$((fails + 1)); }
R[hosts.push]=$(secs "$a" "$(now)")
echo "# $nhosts pushes in ${R[hosts.push]} s ($jobs at a time)"

for h in $(seq 1 "$nhosts"); do
	"$fc" export --store "$work/hosts/s$h" --event $ev 2>/dev/null
done | folded_sum >"$work/want.folded"
"$fc" export --store "$FLEET" --event $ev 2>/dev/null | LC_ALL=C sort >"$work/got.folded"
verdict "the database's export = the line-wise sum of the $nhosts local exports (--event $ev)" \
	"$work/got.folded" "$work/want.folded"
# Per minute too: one window in the middle of the hour.
for h in $(seq 1 "$nhosts"); do
	"$fc" export --store "$work/hosts/s$h" --event $ev --from $((t0 + 1800)) --to $((t0 + 1859)) 2>/dev/null
done | folded_sum >"$work/want.w.folded"
"$fc" export --store "$FLEET" --event $ev --from $((t0 + 1800)) --to $((t0 + 1859)) 2>/dev/null |
	LC_ALL=C sort >"$work/got.w.folded"
verdict "minute 30 alone: database = sum of the hosts" "$work/got.w.folded" "$work/want.w.folded"

mount_store "$FLEET"
for h in 1 $(((nhosts + 1) / 2)) "$nhosts"; do
	nb=0
	bad=0
	for b in $("$fc" stats --store "$work/hosts/s$h" |
		awk 'NR > 1 && NF == 9 && $3 == "cpu-clock" && $1 ~ /^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*$/ { print $1 }' | sort -u); do
		nb=$((nb + 1))
		LC_ALL=C sort "$mnt/@host/h$h/$b/default/folded" >"$work/m.folded" 2>/dev/null || true
		"$fc" export --store "$work/hosts/s$h" --binary "$b" --event $ev 2>/dev/null | LC_ALL=C sort >"$work/l.folded"
		if ! cmp -s "$work/m.folded" "$work/l.folded" || [ ! -s "$work/l.folded" ]; then
			bad=$((bad + 1))
			echo "# h$h/$b differs"
		fi
	done
	if [ $bad = 0 ] && [ $nb -gt 0 ]; then
		echo "PASS: @host/h$h/ in the mount = host h$h's store ($nb binaries)"
	else
		echo "FAIL: @host/h$h/ in the mount: $bad of $nb binaries differ"
		fails=$((fails + 1))
	fi
done
unmount

# ---- 4: the view, 64-host database against the merged directory -----------------------
a=$(now)
rm -rf "$work/merged"
"$fc" merge --store "$work/merged" $(seq -f "$work/hosts/s%g" 1 "$nhosts") >/dev/null 2>&1
R[merge]=$(secs "$a" "$(now)")
"$fc" compact --store "$work/merged" >/dev/null 2>&1
"$fc" compact --store "$FLEET" >/dev/null 2>&1
"$fc" export --store "$work/merged" --event $ev 2>/dev/null | LC_ALL=C sort >"$work/merged.folded"
verdict "the merged directory's export = the database's" "$work/merged.folded" "$work/got.folded"
bin=$("$fc" stats --store "$work/merged" |
	awk 'NR > 1 && NF == 9 && $3 == "cpu-clock" && $4 + 0 > m { m = $4 + 0; b = $1 } END { print b }')
R[view.nodes]=$("$fc" stats --store "$work/merged" | grep -oE '[0-9]+ stack nodes' | cut -d' ' -f1)
R[fleet.db]=$(bytes_of "$FLEET" dir)
R[fleet.emb]=$(bytes_of "$work/merged" dir)
echo "# merged in ${R[merge]} s; the view measured: /$bin/default (${R[view.nodes]} stack nodes in the store)"

med() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
view() { # KEY STORE
	local k=$1 st=$2 v="$mnt/$bin/default" i
	[ "$k" = db ] && pg_restart >/dev/null
	mount_store "$st"
	a=$(now); ls "$v" >/dev/null; R[$k.ls]=$(secs "$a" "$(now)")
	a=$(now); cat "$v/folded" >/dev/null; R[$k.cold]=$(secs "$a" "$(now)")
	R[$k.warm]=$(for i in 1 2 3 4 5; do
		a=$(now); cat "$v/folded" >/dev/null; secs "$a" "$(now)"; echo; done | med)
	R[$k.fbytes]=$(stat -c %s "$v/folded")
	R[$k.rss]=$(status_kb VmRSS)
	R[$k.hwm]=$(status_kb VmHWM)
	# cold cat alone: a fresh mount (the server restarted, the page cache
	# dropped), no ls before it; the median of 3
	local colds=
	for i in 1 2 3; do
		[ "$k" = db ] && pg_restart >/dev/null
		mount_store "$st"
		a=$(now); cat "$v/folded" >/dev/null; colds="$colds $(secs "$a" "$(now)")"
	done
	unmount
	R[$k.cold1]=$(printf '%s\n' $colds | med)
}
view emb "$work/merged"
view db "$FLEET"

# ---- 5: the recorder's steady push, into the 64-host database ------------------------------
# What a host running `record -a --push` pays: the push thread's own CPU
# (CLOCK_THREAD_CPUTIME_ID, from record's summary), its first push (both
# stores opened, the 64 hosts' dictionary loaded) apart from the steady
# ones after it, each a minute of a system-wide recording of the workload.
push_secs=${FLEET_PUSH_SECS:-190}
[ $quick = 1 ] && push_secs=65
(workload "$push_secs") &
wl=$!
"$fc" record --verbose --store "$work/live" --host live -a -F 99 --push "$FLEET" --push-every 60s \
	-d "$push_secs" >/dev/null 2>"$work/live.err" || true
wait "$wl" 2>/dev/null || true
read -r R[live.pushes] R[live.first] R[live.steady] < <(sed -n \
	's/.*push: \([0-9]*\) pushes sent.*CPU \([0-9.]*\) ms for the first, \([0-9.]*\) ms a push after it.*/\1 \2 \3/p' \
	"$work/live.err")
echo "# record --push: $(grep 'push:' "$work/live.err" | tail -1)"

# ---- tables -------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
met() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t ? "met" : "**missed**") }'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
echo
echo "## Inputs"
echo "| what | value |"
echo "|---|---|"
echo "| recording (perf script text, ${rec_secs} s system-wide) | $(mb "$rec_bytes") |"
echo "| busy host: its hour | ${R[busy.series]} series, ${R[busy.nodes]} stack nodes, input $(mb "${R[busy.input]}") |"
echo "| $nhosts hosts: an hour each, $nslices slices | input $(mb "${R[hosts.input]}"), imported in ${R[hosts.import]} s, pushed in ${R[hosts.push]} s ($jobs at a time), merged into a directory in ${R[merge]} s |"
echo "| $nhosts-host store: database / merged directory after compact | $(mb "${R[fleet.db]}") / $(mb "${R[fleet.emb]}") |"
echo "| busy host's database (bytes: from stats) | ${R[size.db.parts]} |"
echo "| busy host's directory (bytes: from stats) | ${R[size.emb.parts]} |"
echo "| busy host's database: every table's pg_total_relation_size | ${R[size.tables]} |"
echo
echo "## Results"
echo "| measurement | target | measured | baseline (embedded) | ratio | |"
echo "|---|---|---|---|---|---|"
r=$(ratio "${R[size.db]}" "${R[size.emb]}")
echo "| push: busy host's hour into an empty database (wall; user+sys $(awk -v u="${R[push.user]}" -v s="${R[push.sys]}" 'BEGIN { printf "%.2f", u + s }') s) | <= 2 s | ${R[push.wall]} s | | | $(met "${R[push.wall]}" 2) |"
echo "| push: steady, one minute of \`record -a -F 99 --push\` into the 64-host database: the push thread's CPU (mean of ${R[live.pushes]:-?} pushes less the first; the first: ${R[live.first]:-?} ms) | <= 20 ms | ${R[live.steady]:-?} ms | | | $(met "${R[live.steady]:-999}" 20) |"
echo "| push: one more minute by a \`push\` process (user+sys, wall) | | $(ms "${R[min.cpu]}"), $(ms "${R[min.wall]}") | | | |"
echo "| (CPU of: the process alone \`--help\` / \`stats\` of the local store / a push with nothing new; median of 3) | | $(ms "${R[cpu.help]}") / $(ms "${R[cpu.stats]}") / $(ms "${R[cpu.nothing]}") | | | |"
echo "| size after compact: database / input, directory / input | | $(mb "${R[size.db]}") ($(ratio "${R[size.db]}" "${R[busy.input]}")) | $(mb "${R[size.emb]}") ($(ratio "${R[size.emb]}" "${R[busy.input]}")) | ${r}x | $(met "$r" 4) (<= 4x) |"
r=$(ratio "${R[db.ls]}" "${R[emb.ls]}")
echo "| view: first \`ls\` of /$bin/default (fresh mount, caches dropped) | <= 1 s | ${R[db.ls]} s | ${R[emb.ls]} s | ${r}x | $(met "${R[db.ls]}" 1) |"
r=$(ratio "${R[db.cold1]}" "${R[emb.cold1]}")
echo "| view: \`cat folded\` of the version, cold (fresh mount, median of 3; $(mb "${R[db.fbytes]}")) | <= 2x | ${R[db.cold1]} s | ${R[emb.cold1]} s | ${r}x | $(met "$r" 2) |"
r=$(ratio "${R[db.cold]}" "${R[emb.cold]}")
echo "| view: \`cat folded\` after the \`ls\` | <= 2x | ${R[db.cold]} s | ${R[emb.cold]} s | ${r}x | $(met "$r" 2) |"
r=$(ratio "${R[db.warm]}" "${R[emb.warm]}")
echo "| view: \`cat folded\`, warm (median of the next 5) | <= 2x | ${R[db.warm]} s | ${R[emb.warm]} s | ${r}x | $(met "$r" 2) |"
r=$(ratio "${R[db.hwm]}" "${R[emb.hwm]}")
echo "| view: daemon VmHWM after those reads (VmRSS: $(mib "${R[db.rss]}") / $(mib "${R[emb.rss]}")) | <= 2x | $(mib "${R[db.hwm]}") | $(mib "${R[emb.hwm]}") | ${r}x | $(met "$r" 2) |"
echo
echo "# correctness: $([ $fails = 0 ] && echo "all PASS" || echo "$fails FAIL")"

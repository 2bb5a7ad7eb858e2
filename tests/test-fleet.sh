#!/usr/bin/env bash
# test-fleet.sh — many hosts push into one PostgreSQL store, and one mount
# shows them all (issue 22), against a private PostgreSQL 15 started here
# (tests/lib-pg.sh: Unix socket only, stopped at the end).
#
# Each of 16 hosts has its own embedded store, filled from the committed
# perf script fixtures (real `perf record` output, stacks shared between
# hosts) and a folded file of its own at its own times.  Checks:
#   - 16 pushes at once, as a writer role whose password comes from
#     PGPASSFILE: all succeed; the database's export equals the line-wise
#     sum of the 16 local exports, per binary and per time window;
#     `stats --by-host` lists each host with its local store's totals;
#   - a second push is "nothing new"; new data on one host sends only its
#     changed buckets; totals stay exact;
#   - pushes killed with SIGKILL at random moments, then run again: exact;
#   - the server stopped (fast, then immediate) while 8 pushes run and
#     started again: every push completes (one that starts while there is
#     no server fails to connect, says so, and is run again), nothing is
#     counted twice;
#   - the mount (a read-only role): the root's folded = the sum of the
#     hosts, @host/<name>/ equals that host's own store, /proc/mounts and
#     every message keep the password out;
#   - the read-only role can mount and export but not push or import; a
#     database that is not a flamefs store, a schema from the future and an
#     unreachable server are refused with clear messages;
#   - merge from the database into a directory gives the same export;
#     prune on the database deletes by cut-off exactly as on a directory;
#   - a standby made with pg_basebackup -R, mounted, shows the primary's
#     data and keeps serving when it is promoted while mounted; a push to
#     it then shows up in the mount.
#   usage: test-fleet.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skip
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: $0 BUILD_DIR}
. "$here/lib-e2e.sh"
. "$here/lib-pg.sh"
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
data=$here/data
e2e_setup fleet
mkdir -p "$tmp/pg"
pg_skip_unless_available "$tmp/pg"
export FLAMEFS_PG_RETRY_SECONDS=60

pg_role fleet_writer 'w-S3cret:pw' || exit 1
pg_role fleet_reader 'r-S3cret:pw' || exit 1
pg_createdb fleet fleet_writer || exit 1
pg_passfile "$tmp/pgpass" fleet_writer 'w-S3cret:pw'
pg_passfile "$tmp/pgpass" fleet_reader 'r-S3cret:pw'
export PGPASSFILE=$tmp/pgpass
W=$(pg_uri fleet fleet_writer)
R=$(pg_uri fleet fleet_reader)
# What a reader may do, as store/README.md says.
pg_psql -d fleet -c "GRANT USAGE ON SCHEMA public TO fleet_reader;
	ALTER DEFAULT PRIVILEGES FOR ROLE fleet_writer IN SCHEMA public GRANT SELECT ON TABLES TO fleet_reader;" ||
	exit 1

# folded_sum FILE...: the line-wise sum of folded files, sorted.
folded_sum() {
	cat "$@" | awk 'NF { n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n } END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort
}
# exp STORE [EXPORT OPTIONS...]: the folded export of every event, each
# line prefixed with its event, sorted.
exp() {
	local st=$1 ev
	shift
	for ev in $("$collect" stats --store "$st" 2>/dev/null | awk 'NR > 1 && NF == 9 { print $3 }' | sort -u); do
		"$collect" export --store "$st" --event "$ev" "$@" 2>/dev/null | sed "s/^/$ev: /"
	done | sort
}
# mfolded ROOT BINARY EVENT: a mounted version's folded of one event (its
# own directory when the version has several events), sorted.
mfolded() {
	local d=$1/$2/default
	[ -d "$d@$3" ] && d=$d@$3
	sort "$d/folded" 2>/dev/null
}
# same WHAT GOT WANT
same() {
	if cmp -s "$2" "$3"; then
		ok "$1"
	else
		bad "$1"
		diff -u "$3" "$2" | head -20
	fi
}

# ---- 16 hosts, each with a store of its own ----------------------------------
t0=1700000000
fixtures=(loop.perf edge.perf parts.perf spell-g.perf)
for h in $(seq 1 16); do
	st=$tmp/host$h
	"$collect" import --store "$st" --host "h$h" "$data/perf/caches.perf" >/dev/null 2>&1 &&
		"$collect" import --store "$st" --host "h$h" "$data/perf/${fixtures[h % 4]}" >/dev/null 2>&1 &&
		printf 'app;main;host%s;work %s\napp;main;shared %s\n' "$h" "$h" $((h * 3)) >"$tmp/h$h.folded" &&
		"$collect" import --store "$st" --host "h$h" --time $((t0 + h * 60)) "$tmp/h$h.folded" >/dev/null 2>&1 ||
		{ bad "import into host $h's store"; exit 1; }
done

# exp_local H [EXPORT OPTIONS...]: exp of host H's store, kept until the
# test imports into it again (forget H): its stats and exports are a third
# of this test's processes, most of them repeats.
exp_local() {
	local h=$1 key
	shift
	key=$(printf '%s\n' "$@" | cksum | tr ' ' _)
	[ -f "$tmp/exp.$h.$key" ] || exp "$tmp/host$h" "$@" >"$tmp/exp.$h.$key"
	cat "$tmp/exp.$h.$key"
}
forget() { rm -f "$tmp/exp.$1."*; }
sum_locals() {
	local h
	for h in $(seq 1 16); do exp_local "$h" "$@"; done | folded_sum
}
# files_at PREFIX LINE T0 N: N folded files PREFIX.0 .. PREFIX.(N-1)
# holding LINE, the m-th modified at T0 + 60 m; prints their names.  One
# `import` of them all stores each at its file's time, as N imports with
# --time would.
files_at() {
	python3 - "$@" <<'PY'
import os, sys
prefix, line, t0, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for m in range(n):
    path = "%s.%d" % (prefix, m)
    with open(path, "w") as f:
        f.write(line + "\n")
    os.utime(path, (t0 + 60 * m, t0 + 60 * m))
    print(path)
PY
}

# ---- 16 pushes at once -----------------------------------------------------------
pids=()
for h in $(seq 1 16); do
	"$collect" push --store "$tmp/host$h" --to "$W" >"$tmp/push$h.out" 2>&1 &
	pids+=($!)
done
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
check "16 concurrent pushes all succeed" [ $rcs = 0 ]
[ $rcs = 0 ] || cat "$tmp"/push*.out | head -20
sum_locals >"$tmp/want"
exp "$W" >"$tmp/got"
same "the database's export = the sum of the 16 local stores" "$tmp/got" "$tmp/want"
for w in "--binary app" "--from $((t0 + 120)) --to $((t0 + 299))" "--binary app --from $((t0 + 600))"; do
	# shellcheck disable=SC2086
	sum_locals $w >"$tmp/want.w"
	# shellcheck disable=SC2086
	exp "$W" $w >"$tmp/got.w"
	same "window/filter '$w': database = sum of the hosts" "$tmp/got.w" "$tmp/want.w"
done
"$collect" stats --store "$W" --by-host >"$tmp/byhost" 2>&1
for h in 1 7 16; do
	want=$("$collect" stats --store "$tmp/host$h" --by-host 2>/dev/null | awk -v h="h$h" '$1 == h { print $2, $3 }')
	got=$(awk -v h="h$h" '$1 == h { print $2, $3 }' "$tmp/byhost")
	check "stats --by-host: h$h has its local store's series and samples ($want)" [ -n "$want" -a "$got" = "$want" ]
done
check "stats --by-host lists 16 hosts" [ "$(awk '$1 ~ /^h[0-9]+$/' "$tmp/byhost" | wc -l)" = 16 ]

# ---- again: nothing new; then one host's news only ------------------------------
out=$("$collect" push --store "$tmp/host5" --to "$W" 2>&1)
check "a repeated push is nothing new" grep -q "nothing new" <<<"$out"
printf 'app;main;late 11\n' >"$tmp/late.folded"
"$collect" import --store "$tmp/host5" --host h5 --time $((t0 + 3600)) "$tmp/late.folded" >/dev/null 2>&1
forget 5
out=$("$collect" push --store "$tmp/host5" --to "$W" 2>&1)
check "an incremental push sends only the changed bucket ($out)" grep -q ": 1 buckets of 1 series, 11 samples" <<<"$out"
sum_locals >"$tmp/want"
exp "$W" >"$tmp/got"
same "after the incremental push: database = sum" "$tmp/got" "$tmp/want"

# ---- SIGKILL at random moments, then again ----------------------------------------
for k in 1 2 3 4 5; do
	h=$((k + 8))
	mapfile -t files < <(files_at "$tmp/k$k" "app;main;killed$k 5" $((t0 + 7200)) 31)
	"$collect" import --store "$tmp/host$h" --host "h$h" "${files[@]}" >/dev/null 2>&1 ||
		bad "import 31 minutes into host $h's store"
	forget "$h"
	"$collect" push --store "$tmp/host$h" --to "$W" --buckets-per-commit 1 >/dev/null 2>&1 &
	p=$!
	sleep "0.$((RANDOM % 4))$((RANDOM % 10))"
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	"$collect" push --store "$tmp/host$h" --to "$W" >"$tmp/rerun.out" 2>&1 ||
		{ bad "push after a SIGKILL ($k)"; cat "$tmp/rerun.out"; }
done
sum_locals >"$tmp/want"
exp "$W" >"$tmp/got"
same "five pushes killed at random moments, then re-run: totals exact" "$tmp/got" "$tmp/want"

# ---- the server stopped during pushes ---------------------------------------------
for mode in fast immediate; do
	pids=()
	for h in $(seq 1 8); do
		mapfile -t files < <(files_at "$tmp/r$h-$mode" "app;main;restart$mode 3" $((t0 + 10800)) 6)
		"$collect" import --store "$tmp/host$h" --host "h$h" "${files[@]}" >/dev/null 2>&1 ||
			bad "import 6 minutes into host $h's store"
		forget "$h"
		# A push that starts while the server is down (no socket, or one
		# that no longer listens) cannot connect, says so and is run
		# again, as the recorder's next one would be; any other failure
		# is one.
		(
			for _ in $(seq 100); do
				"$collect" push --store "$tmp/host$h" --to "$W" --buckets-per-commit 1 \
					>"$tmp/rp$h.out" 2>&1 && exit 0
				grep -Eq "cannot connect: .*(No such file or directory|Connection refused)" "$tmp/rp$h.out" || exit 1
				sleep 0.1
			done
			exit 1
		) &
		pids+=($!)
	done
	sleep 0.2
	if [ $mode = fast ]; then pg_stop; else pg_kill; fi
	sleep 1
	pg_start "$tmp/pg" >/dev/null || { bad "restart the server"; exit 1; }
	rcs=0
	for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
	check "server stopped ($mode) during 8 pushes: every push completes" [ $rcs = 0 ]
	[ $rcs = 0 ] && continue
	for h in $(seq 1 8); do cat "$tmp/rp$h.out"; done | head
done
sum_locals >"$tmp/want"
exp "$W" >"$tmp/got"
same "after the restarts: nothing counted twice, nothing lost" "$tmp/got" "$tmp/want"

# ---- the view, as the read-only role ---------------------------------------------
mkdir -p "$mnt"
"$flamefs" "$R" "$mnt" 2>"$tmp/mount.err" || { bad "mount the database as the reader"; cat "$tmp/mount.err"; }
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
mfolded "$mnt" app samples >"$tmp/got"
"$collect" export --store "$W" --binary app --event samples 2>/dev/null | sort >"$tmp/want"
same "the mount's app root folded = the database's export of app" "$tmp/got" "$tmp/want"
check "@host lists the 16 hosts" [ "$(ls "$mnt/@host" 2>/dev/null | wc -l)" = 16 ]
mfolded "$mnt/@host/h7" app samples >"$tmp/got"
"$collect" export --store "$tmp/host7" --binary app --event samples 2>/dev/null | sort >"$tmp/want"
same "@host/h7/app = host 7's own store" "$tmp/got" "$tmp/want"
check "/proc/mounts names the database without a password" \
	sh -c "grep ' $mnt ' /proc/mounts | grep -q 'host=' && ! grep ' $mnt ' /proc/mounts | grep -q S3cret"

# ---- what the reader may not do; bad databases ------------------------------------
"$collect" import --store "$tmp/host1" --host h1 --time $((t0 + 30000)) "$tmp/late.folded" >/dev/null 2>&1
forget 1
"$collect" push --store "$tmp/host1" --to "$R" >"$tmp/ro.out" 2>&1
check "the read-only role cannot push" [ $? -ne 0 ]
grep -qi "permission denied" "$tmp/ro.out" || { bad "read-only push message"; cat "$tmp/ro.out"; }
"$collect" import --store "$R" "$tmp/late.folded" >"$tmp/ro2.out" 2>&1
check "the read-only role cannot import" [ $? -ne 0 ]
secret_uri="postgresql://fleet_writer:TopS3cretXYZ@/fleet?host=$PG_SOCK&port=$PG_PORT"
"$collect" stats --store "$secret_uri" >"$tmp/sec.out" 2>&1
"$collect" push --store "$tmp/host1" --to "${secret_uri/TopS3cretXYZ/Wrong0neXYZ}" >>"$tmp/sec.out" 2>&1
check "a password in the connection string is never printed" sh -c "! grep -q 'S3cretXYZ\|Wrong0neXYZ' '$tmp/sec.out'"
pg_createdb other || exit 1
pg_psql -d other -c "CREATE TABLE t (x int)" || exit 1
"$collect" stats --store "$(pg_uri other fleet_writer)" >"$tmp/other.out" 2>&1
check "a database that is not a flamefs store is refused" grep -q "not a flamefs store" "$tmp/other.out"
"$collect" stats --store "postgresql:///fleet?host=$tmp/nonesuch" >"$tmp/unreach.out" 2>&1
check "an unreachable server is named: cannot connect" grep -q "cannot connect" "$tmp/unreach.out"

# ---- merge into a directory; prune --------------------------------------------------
"$collect" merge --store "$tmp/home" "$W" >/dev/null 2>&1 || bad "merge the database into a directory"
exp "$tmp/home" >"$tmp/got"
exp "$W" >"$tmp/want"
same "merge database -> directory: the same export" "$tmp/got" "$tmp/want"
"$collect" prune --store "$W" --before $((t0 + 7200)) >/dev/null 2>&1 || bad "prune the database"
"$collect" prune --store "$tmp/home" --before $((t0 + 7200)) >/dev/null 2>&1 || bad "prune the directory"
exp "$tmp/home" >"$tmp/want"
exp "$W" >"$tmp/got"
same "prune --before on the database = on a directory" "$tmp/got" "$tmp/want"
"$collect" compact --store "$W" >"$tmp/compact.out" 2>&1
check "compact on the database (its housekeeping) succeeds" [ $? = 0 ]

fusermount3 -u "$mnt" 2>/dev/null

# ---- a standby, mounted, promoted while mounted -------------------------------------
if pg_standby_start standby >/dev/null 2>&1 && pg_standby_sync >/dev/null 2>&1; then
	pg_standby_passfile "$tmp/pgpass" fleet_writer 'w-S3cret:pw'
	pg_standby_passfile "$tmp/pgpass" fleet_reader 'r-S3cret:pw'
	S=$(pg_standby_uri fleet fleet_reader)
	"$flamefs" "$S" "$mnt" 2>"$tmp/smount.err" || { bad "mount the standby"; cat "$tmp/smount.err"; }
	for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
	mfolded "$mnt" app samples >"$tmp/got"
	"$collect" export --store "$W" --binary app --event samples 2>/dev/null | sort >"$tmp/want"
	same "the standby's mount shows the primary's data" "$tmp/got" "$tmp/want"
	pg_stop
	pg_standby_promote >/dev/null || bad "promote the standby"
	mfolded "$mnt" app samples >"$tmp/got"
	same "the mount keeps serving across the promotion" "$tmp/got" "$tmp/want"
	SW=$(pg_standby_uri fleet fleet_writer)
	printf 'app;main;after_promotion 13\n' >"$tmp/ap.folded"
	"$collect" import --store "$tmp/host2" --host h2 --time $((t0 + 20000)) "$tmp/ap.folded" >/dev/null 2>&1
	forget 2
	"$collect" push --store "$tmp/host2" --to "$SW" >"$tmp/ap.out" 2>&1 || { bad "push to the promoted standby"; cat "$tmp/ap.out"; }
	ok=
	for _ in $(seq 40); do
		mfolded "$mnt" app samples | grep -q "after_promotion 13" && ok=1 && break
		sleep 0.25
	done
	check "a push to the promoted standby shows in the mount" [ -n "$ok" ]
	fusermount3 -u "$mnt" 2>/dev/null
else
	bad "make a standby with pg_basebackup -R"
fi

[ "$failures" = 0 ]

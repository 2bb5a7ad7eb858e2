#!/usr/bin/env bash
# test-fleet-trust.sh — a fleet you can trust (issue 38), against a private
# PostgreSQL 15 started here (tests/lib-pg.sh).  Checks:
#   - snapshot reads: a mount's root `total` and `folded`, and `export`,
#     read in loops beside 50 pushes of one host whose every push replaces
#     the same two buckets (of two binaries): each read equals the state
#     after some push (never a mix of two, never a bucket or a host
#     missing), and the reads of one loop never go back in time
#     ($FLAMEFS_TEST_READER_ROUNDS rounds of it, 1 by default).
#   - samples without frames: the row "[no frames]" of the mount's top
#     (the self column sums to total) and of store/README.md's SQL.
#   usage: test-fleet-trust.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skip
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: $0 BUILD_DIR}
. "$here/lib-e2e.sh"
. "$here/lib-pg.sh"
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
e2e_setup fleet-trust
mkdir -p "$tmp/pg"
pg_skip_unless_available "$tmp/pg"
export FLAMEFS_PG_RETRY_SECONDS=60
t0=1700000040 # a bucket's first second

# e2e_on_exit: the loops this test starts in the background.
bg=()
e2e_on_exit() { [ ${#bg[@]} = 0 ] || kill "${bg[@]}" 2>/dev/null; }

# ---- snapshot reads ---------------------------------------------------------------
# State k (after the k-th push of host h1): app;main;a k at t0 and
# lib;init;c 1000k at t0 + 60, plus host h2's app;main;z 7, pushed once
# before.  Any read that mixes two states, or misses a bucket or a host,
# breaks "c = 1000 a, z = 7".
# state_of: reads folded lines on stdin; prints the state k they show, or
# "torn: ..." when they show none.
state_of() {
	awk '$1 == "app;main;a" { a = $2 } $1 == "app;main;z" { z = $2 } $1 == "lib;init;c" { c = $2 }
		END { if (z == 7 && c == 1000 * a) print a + 0; else printf "torn: a=%s c=%s z=%s\n", a, c, z }'
}
# reader NAME: reads until $tmp/stop exists; one line per read into
# $tmp/NAME.reads: the state, or what was wrong.
reader() {
	local name=$1 got t
	while [ ! -e "$tmp/stop" ]; do
		case $name in
		mount-folded) got=$(state_of <"$mnt/folded") ;;
		mount-total)
			t=$(cat "$mnt/total")
			if [ -n "$t" ] && [ $(((t - 7) % 1001)) = 0 ]; then got=$(((t - 7) / 1001)); else got="torn: total $t"; fi
			;;
		export) got=$("$collect" export --store "$D" 2>&1 | state_of) ;;
		esac
		echo "$got" >>"$tmp/$name.reads"
	done
}

# $FLAMEFS_TEST_READER_ROUNDS rounds (1; issue 38 asks for 10 without a
# torn read), each on a new database and new stores.
torn_all=0 reads_all=0
for round in $(seq 1 "${FLAMEFS_TEST_READER_ROUNDS:-1}"); do
	rm -f "$tmp/stop" "$tmp"/*.reads
	pg_createdb snap$round || exit 1
	D=$(pg_uri snap$round postgres)
	printf 'app;main;z 7\n' >"$tmp/z.folded"
	"$collect" import --store "$tmp/h2.$round" --host h2 --time $t0 "$tmp/z.folded" >/dev/null 2>&1 &&
		"$collect" push --store "$tmp/h2.$round" --to "$D" >/dev/null 2>&1 || { bad "push host h2"; exit 1; }
	printf 'app;main;a 1\n' >"$tmp/a.folded"
	printf 'lib;init;c 1000\n' >"$tmp/c.folded"
	mkdir -p "$mnt"
	"$flamefs" "$D" "$mnt" 2>"$tmp/mount.err" || { bad "mount the database"; cat "$tmp/mount.err"; exit 1; }
	for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done

	for r in mount-folded mount-total export; do
		reader $r &
		bg+=($!)
	done
	# One import of both files stores each at its file's time.
	touch -d @$t0 "$tmp/a.folded"
	touch -d @$((t0 + 60)) "$tmp/c.folded"
	cycles=0
	for k in $(seq 1 50); do
		"$collect" import --store "$tmp/h1.$round" --host h1 "$tmp/a.folded" "$tmp/c.folded" >/dev/null 2>&1 ||
			bad "import $k"
		"$collect" push --store "$tmp/h1.$round" --to "$D" >"$tmp/push.out" 2>&1 || { bad "push $k"; cat "$tmp/push.out"; }
		cycles=$((cycles + 1))
	done
	touch "$tmp/stop"
	wait "${bg[@]}"
	bg=()
	echo "$cycles pushes; reads: $(wc -l <"$tmp/mount-folded.reads") folded, $(wc -l <"$tmp/mount-total.reads") total, $(wc -l <"$tmp/export.reads") export"
	for r in mount-folded mount-total export; do
		torn=$(grep -c torn "$tmp/$r.reads")
		torn_all=$((torn_all + torn))
		reads_all=$((reads_all + $(wc -l <"$tmp/$r.reads")))
		back=$(awk '!/torn/ { if ($1 < max) n++; if ($1 > max) max = $1 } END { print n + 0 }' "$tmp/$r.reads")
		check "$r: every read during $cycles pushes is the state after some push ($torn torn)" [ "$torn" = 0 ]
		check "$r: no read goes back to an earlier state ($back did)" [ "$back" = 0 ]
		[ "$torn" = 0 ] || grep torn "$tmp/$r.reads" | sort | uniq -c | head -5
		seen=$(grep -v torn "$tmp/$r.reads" | sort -u | wc -l)
		check "$r: the reads met several states ($seen)" [ "$seen" -ge 2 ]
	done
	check "after the pushes: export shows state $cycles" \
		[ "$("$collect" export --store "$D" 2>&1 | state_of)" = "$cycles" ]
	fusermount3 -u "$mnt" 2>/dev/null
done
echo "snapshot reads: $round rounds of 50 pushes, $reads_all reads, $torn_all torn"

# ---- source identity: clones and restores --------------------------------------------
# exp STORE: the folded export, sorted
exp() { "$collect" export --store "$1" 2>/dev/null | sort; }
# sum STORE...: the line-wise sum of the stores' exports
sum() {
	local st
	for st in "$@"; do exp "$st"; done |
		awk 'NF { n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n } END { for (k in s) printf "%s %.0f\n", k, s[k] }' | sort
}
# same WHAT GOT WANT
same() {
	if cmp -s "$2" "$3"; then ok "$1"; else bad "$1"; diff -u "$3" "$2" | head -10; fi
}
# imp STORE HOST TIME LINE
imp() {
	printf '%s\n' "$4" >"$tmp/in.folded"
	"$collect" import --store "$1" --host "$2" --time "$3" "$tmp/in.folded" >/dev/null 2>&1 || bad "import into $1"
}
# push STORE DB OUT: push, its stdout and stderr into OUT
push() { "$collect" push --store "$1" --to "$2" >"$3" 2>&1 || { bad "push $1"; cat "$3"; }; }

pg_createdb ident || exit 1
I=$(pg_uri ident postgres)
# A clone whose copy has made as many commits as the other pushed.
imp "$tmp/s" hs $t0 'app;main;base 5'
push "$tmp/s" "$I" "$tmp/p.out"
cp -a "$tmp/s" "$tmp/x1"
cp -a "$tmp/s" "$tmp/x2"
imp "$tmp/x1" hs $((t0 + 120)) 'app;main;one 11'
imp "$tmp/x2" hs $((t0 + 120)) 'app;main;two 13'
push "$tmp/x1" "$I" "$tmp/p1.out"
push "$tmp/x2" "$I" "$tmp/p2.out"
check "a clone's push says it copies as a new source" grep -q "also copies to .*now copies as source" "$tmp/p2.out"
check "the other copy's push said nothing unusual" [ "$(grep -c "flamefs-collect:" "$tmp/p1.out")" = 0 ]
sum "$tmp/x1" "$tmp/x2" >"$tmp/want"
exp "$I" >"$tmp/got"
same "clone: the database = the sum of both copies" "$tmp/got" "$tmp/want"
push "$tmp/x1" "$I" "$tmp/p1.out"
push "$tmp/x2" "$I" "$tmp/p2.out"
check "clone: each copy's next push is nothing new" \
	sh -c "grep -q 'nothing new' '$tmp/p1.out' && grep -q 'nothing new' '$tmp/p2.out'"
imp "$tmp/x2" hs $((t0 + 180)) 'app;main;two 17'
push "$tmp/x2" "$I" "$tmp/p2.out"
check "clone: then an incremental push sends one bucket" grep -q ": 1 buckets of 1 series, 17 samples" "$tmp/p2.out"
sum "$tmp/x1" "$tmp/x2" >"$tmp/want"
exp "$I" >"$tmp/got"
same "clone: after more pushes, still the sum of both" "$tmp/got" "$tmp/want"

# A clone whose copy has made fewer commits than the other pushed: taken
# for a restored backup first; the other copy's next push finds its
# history overtaken and becomes a source of its own, taking its older rows
# from the shared key with it.
pg_createdb ident2 || exit 1
J=$(pg_uri ident2 postgres)
imp "$tmp/t" ht $t0 'app;main;base 5'
push "$tmp/t" "$J" "$tmp/p.out"
cp -a "$tmp/t" "$tmp/y1"
cp -a "$tmp/t" "$tmp/y2"
imp "$tmp/y1" ht $((t0 + 120)) 'app;main;one 11'
imp "$tmp/y1" ht $((t0 + 240)) 'app;main;late 19'
imp "$tmp/y2" ht $((t0 + 120)) 'app;main;two 13'
push "$tmp/y1" "$J" "$tmp/p1.out"
push "$tmp/y2" "$J" "$tmp/p2.out"
check "the copy behind says it sends everything again" grep -q "a restored backup; sending everything" "$tmp/p2.out"
push "$tmp/y1" "$J" "$tmp/p1.out"
check "the overtaken copy says it copies as a new source" grep -q "now copies as source" "$tmp/p1.out"
sum "$tmp/y1" "$tmp/y2" >"$tmp/want"
exp "$J" >"$tmp/got"
same "clone behind: after both pushed again, the sum of both copies" "$tmp/got" "$tmp/want"
push "$tmp/y2" "$J" "$tmp/p2.out"
check "clone behind: the first copy's next push is nothing new" grep -q "nothing new" "$tmp/p2.out"
exp "$J" >"$tmp/got"
same "clone behind: still the sum" "$tmp/got" "$tmp/want"

# A restored backup: A pushed, the store copied, B and C pushed, the copy
# put back, D imported: A, B, C and D each once.
pg_createdb restore || exit 1
K=$(pg_uri restore postgres)
imp "$tmp/r" hr $t0 'app;main;a 2'
push "$tmp/r" "$K" "$tmp/p.out"
cp -a "$tmp/r" "$tmp/r.bak"
imp "$tmp/r" hr $((t0 + 60)) 'app;main;b 3'
push "$tmp/r" "$K" "$tmp/p.out"
imp "$tmp/r" hr $((t0 + 120)) 'app;main;c 5'
push "$tmp/r" "$K" "$tmp/p.out"
rm -rf "$tmp/r"
cp -a "$tmp/r.bak" "$tmp/r"
imp "$tmp/r" hr $((t0 + 180)) 'app;main;d 7'
push "$tmp/r" "$K" "$tmp/p.out"
check "a restored store says so and sends everything again" grep -q "a restored backup; sending everything it holds again" "$tmp/p.out"
printf 'app;main;a 2\napp;main;b 3\napp;main;c 5\napp;main;d 7\n' >"$tmp/want"
exp "$K" >"$tmp/got"
same "restore: every sample arrives once" "$tmp/got" "$tmp/want"
push "$tmp/r" "$K" "$tmp/p.out"
check "restore: the next push is nothing new" grep -q "nothing new" "$tmp/p.out"
imp "$tmp/r" hr $((t0 + 240)) 'app;main;e 11'
push "$tmp/r" "$K" "$tmp/p.out"
check "restore: then pushes are incremental ($(cat "$tmp/p.out"))" grep -q ": 1 buckets of 1 series, 11 samples" "$tmp/p.out"
printf 'app;main;e 11\n' >>"$tmp/want"
exp "$K" >"$tmp/got"
same "restore: and exact" "$tmp/got" "$tmp/want"

# ---- merge and push: one identity -------------------------------------------------
pg_createdb merged || exit 1
M=$(pg_uri merged postgres)
imp "$tmp/m" hm $t0 'app;main;m 3'
"$collect" merge --store "$M" "$tmp/m" >"$tmp/m.out" 2>&1 || { bad "merge"; cat "$tmp/m.out"; }
push "$tmp/m" "$M" "$tmp/p.out"
check "a store merged, then pushed: the push is nothing new" grep -q "nothing new" "$tmp/p.out"
"$collect" merge --store "$M" "$tmp/m" >"$tmp/m.out" 2>&1 || { bad "merge again"; cat "$tmp/m.out"; }
check "merge again: nothing new ($(cat "$tmp/m.out"))" grep -q "nothing new" "$tmp/m.out"
imp "$tmp/m" hm $((t0 + 60)) 'app;main;m2 5'
push "$tmp/m" "$M" "$tmp/p.out"
"$collect" merge --store "$M" "$tmp/m" >"$tmp/m.out" 2>&1 || { bad "merge after a push"; cat "$tmp/m.out"; }
check "merge after a push of the news: nothing new" grep -q "nothing new" "$tmp/m.out"
imp "$tmp/m" hm $((t0 + 120)) 'app;main;m3 7'
"$collect" merge --store "$M" "$tmp/m" >"$tmp/m.out" 2>&1 || { bad "merge the news"; cat "$tmp/m.out"; }
check "merge of the news: one bucket ($(cat "$tmp/m.out"))" grep -q ": 1 buckets of 1 series, 7 samples" "$tmp/m.out"
exp "$tmp/m" >"$tmp/want"
exp "$M" >"$tmp/got"
same "merge and push: every sample counted once" "$tmp/got" "$tmp/want"

# ---- server restarts in the middle of a push ----------------------------------------
pg_createdb restart || exit 1
P=$(pg_uri restart postgres)
# files_at PREFIX LINE T0 N: N folded files holding LINE, the m-th
# modified at T0 + 60 m; prints their names (one import of them all
# stores each in its own bucket)
files_at() {
	local m
	for ((m = 0; m < $4; m++)); do
		printf '%s\n' "$2" >"$1.$m"
		touch -d @$(($3 + 60 * m)) "$1.$m"
		echo "$1.$m"
	done
}
imp "$tmp/q" hq $t0 'app;main;start 1'
push "$tmp/q" "$P" "$tmp/p.out"
# The push's commit number `at` stalls while the file $PG_DIR/stall exists
# (a file, not a row: what the push's transaction did is undone by the
# restart, and the retry must not stall again).
pg_psql -d restart -c "CREATE TABLE stall (at int8);
	CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
	IF NEW.key = 'commits' AND NEW.value::int8 = (SELECT at FROM stall)
	AND (pg_stat_file('$PG_DIR/stall', true)).size IS NOT NULL THEN PERFORM pg_sleep(600); END IF;
	RETURN NEW; END \$\$;
	CREATE TRIGGER stall BEFORE UPDATE ON flamefs_meta FOR EACH ROW EXECUTE FUNCTION stall();" ||
	{ bad "make the stalling trigger"; exit 1; }
survived=0
for k in $(seq 1 10); do
	mapfile -t files < <(files_at "$tmp/q$k" "app;main;round$k $k" $((t0 + 3600 * k)) 12)
	"$collect" import --store "$tmp/q" --host hq "${files[@]}" >/dev/null 2>&1 || bad "import round $k"
	base=$(pg_psql -d restart -Atc "SELECT value FROM flamefs_meta WHERE key = 'commits'")
	pg_psql -d restart -c "TRUNCATE stall; INSERT INTO stall VALUES ($((base + k)))" >/dev/null
	touch "$PG_DIR/stall"
	"$collect" push --store "$tmp/q" --to "$P" --buckets-per-commit 1 >"$tmp/rs.out" 2>"$tmp/rs.err" &
	p=$!
	stalled=
	for _ in $(seq 300); do
		[ "$(pg_psql -d restart -Atc "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")" = 1 ] &&
			stalled=1 && break
		sleep 0.1
	done
	[ -n "$stalled" ] || bad "round $k: the push never reached its commit $((base + k))"
	rm -f "$PG_DIR/stall"
	if [ $((k % 2)) = 1 ]; then pg_stop; else pg_kill; fi
	pg_start "$tmp/pg" >/dev/null || { bad "restart the server"; exit 1; }
	if wait "$p" && grep -q "trying again in" "$tmp/rs.err" && grep -q "reconnected after" "$tmp/rs.err"; then
		survived=$((survived + 1))
	else
		echo "round $k:"
		cat "$tmp/rs.out" "$tmp/rs.err"
	fi
done
check "a server restart at the push's k-th commit (k = 1..10): $survived of 10 pushes finish and say so" [ $survived = 10 ]
exp "$tmp/q" >"$tmp/want"
exp "$P" >"$tmp/got"
same "after 10 restarts in the middle of pushes: every sample once" "$tmp/got" "$tmp/want"
pg_psql -d restart -c "DROP TRIGGER stall ON flamefs_meta" || exit 1

# prune and merge across a restart: their statements stall in a lock
# the test holds, the server restarts under them
for cmd in prune merge; do
	imp "$tmp/q" hq $((t0 + 90000)) "app;main;$cmd 1"
	# prune waits at its DELETE, merge when it reads the sources
	table=counts
	[ $cmd = merge ] && table=sources
	pg_psql -d restart -c "BEGIN; LOCK TABLE $table IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(600)" >/dev/null 2>&1 &
	lk=$!
	# the lock is held (its session sleeps) before the command starts
	for _ in $(seq 300); do
		[ "$(pg_psql -d restart -Atc "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")" = 1 ] && break
		sleep 0.1
	done
	case $cmd in
	prune) "$collect" prune --store "$P" --before $((t0 + 3600)) >"$tmp/c.out" 2>"$tmp/c.err" & ;;
	merge) "$collect" merge --store "$P" "$tmp/q" >"$tmp/c.out" 2>"$tmp/c.err" & ;;
	esac
	p=$!
	waiting=
	for _ in $(seq 300); do
		[ "$(pg_psql -d restart -Atc "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")" -ge 1 ] &&
			waiting=1 && break
		sleep 0.1
	done
	[ -n "$waiting" ] || bad "$cmd never waited for the lock"
	pg_stop
	wait $lk 2>/dev/null
	pg_start "$tmp/pg" >/dev/null || { bad "restart the server"; exit 1; }
	if wait $p && grep -q "reconnected after" "$tmp/c.err"; then ok "$cmd across a server restart"; else
		bad "$cmd across a server restart"
		cat "$tmp/c.out" "$tmp/c.err"
	fi
done
"$collect" prune --store "$tmp/q" --before $((t0 + 3600)) >/dev/null 2>&1
exp "$tmp/q" >"$tmp/want"
exp "$P" >"$tmp/got"
same "after prune and merge across restarts: the store's samples exactly" "$tmp/got" "$tmp/want"

# ---- the view's log with its server down ----------------------------------------------
mkdir -p "$mnt"
"$flamefs" -f "$P" "$mnt" 2>"$tmp/view.log" &
vp=$!
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
pg_stop
sleep 3
pg_start "$tmp/pg" >/dev/null || { bad "restart the server"; exit 1; }
for _ in $(seq 50); do grep -q "database back" "$tmp/view.log" && break; sleep 0.1; done
check "the view logs one 'database unreachable' line for an outage" [ "$(grep -c "flamefs: database unreachable: " "$tmp/view.log")" = 1 ]
check "and one 'database back' line" [ "$(grep -c "flamefs: database back: " "$tmp/view.log")" = 1 ]
check "the view serves again: its root total = the database's" \
	[ "$(cat "$mnt/total" 2>/dev/null)" = "$(exp "$P" | awk '{ s += $NF } END { print s }')" ]
fusermount3 -u "$mnt" 2>/dev/null
wait $vp 2>/dev/null

# ---- connection strings ------------------------------------------------------------
pg_role kv_writer 'kv-S3cretXYZ' || exit 1
pg_createdb kvdb kv_writer || exit 1
pg_psql -c "CREATE ROLE kv_nologin PASSWORD 'kv-S3cretXYZ' NOLOGIN" || exit 1
KV="host=$PG_SOCK port=$PG_PORT dbname=kvdb user=kv_writer password=kv-S3cretXYZ"
imp "$tmp/kv" hk $t0 'app;main;kv 9'
"$collect" push --store "$tmp/kv" --to "$KV" >"$tmp/kv.out" 2>&1
check "push to a keyword/value string" grep -q "1 buckets of 1 series, 9 samples" "$tmp/kv.out"
check "export from it" [ "$("$collect" export --store "$KV" 2>/dev/null)" = "app;main;kv 9" ]
"$flamefs" "$KV" "$mnt" 2>"$tmp/kvm.err" || { bad "mount a keyword/value string"; cat "$tmp/kvm.err"; }
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
check "the mount shows it" [ "$(cat "$mnt/total" 2>/dev/null)" = 9 ]
check "/proc/mounts names it without the password" \
	sh -c "grep -q ' $mnt ' /proc/mounts && grep ' $mnt ' /proc/mounts | grep -q 'dbname=kvdb' && ! grep -q S3cret /proc/mounts"
fusermount3 -u "$mnt" 2>/dev/null
# refusals: libpq's own words, the password never
refused() { # WHAT WANT STORE
	"$collect" stats --store "$3" >"$tmp/ref.out" 2>&1
	if [ $? != 0 ] && grep -qF -- "$2" "$tmp/ref.out" && ! grep -q 'S3cret\|Wr0ngPw' "$tmp/ref.out"; then
		ok "$1 is refused, naming the problem"
	else
		bad "$1 is refused, naming the problem ($2), without the password"
		cat "$tmp/ref.out"
	fi
}
refused "a wrong password" 'password authentication failed for user "kv_writer"' "${KV/kv-S3cretXYZ/Wr0ngPw}"
refused "an unknown keyword" 'invalid connection option "bogus"' "$KV bogus=1"
refused "an unknown URI parameter" 'invalid URI query parameter: "bogus"' \
	"postgresql://kv_writer:kv-S3cretXYZ@/kvdb?host=$PG_SOCK&port=$PG_PORT&bogus=1"
refused "a role that may not log in" 'role "kv_nologin" is not permitted to log in' "${KV/kv_writer/kv_nologin}"

# ---- round trips -----------------------------------------------------------------
pg_createdb rt || exit 1
RT=$(pg_uri rt postgres)
for h in $(seq 1 16); do
	printf 'app;main;h%s %s\nlib;init;h%s %s\n' $h $h $h $((h * 2)) >"$tmp/rt.folded"
	"$collect" import --store "$tmp/rt" --host "h$h" --time $t0 "$tmp/rt.folded" >/dev/null 2>&1 ||
		bad "import host $h"
done
push "$tmp/rt" "$RT" "$tmp/p.out"
pg_psql -c "ALTER DATABASE rt SET log_statement = 'all'" || exit 1
"$flamefs" "$RT" "$mnt" 2>"$tmp/rtm.err" || { bad "mount"; cat "$tmp/rtm.err"; }
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
# reads WHAT FILE: the statements that read counts for the first read of FILE
reads() {
	local before after
	before=$(grep -c "FROM counts WHERE series\|JOIN counts c ON" "$PG_LOG")
	sort "$2" >"$tmp/rt.got"
	after=$(grep -c "FROM counts WHERE series\|JOIN counts c ON" "$PG_LOG")
	echo $((after - before))
}
n=$(reads root "$mnt/folded")
check "the root's folded (32 series): one query reads their counts ($n)" [ "$n" = 1 ]
exp "$RT" >"$tmp/want"
same "and it is the database's export" "$tmp/rt.got" "$tmp/want"
n=$(reads version "$mnt/app/default/folded")
check "a version's folded (16 series): one query ($n)" [ "$n" = 1 ]
n=$(reads host "$mnt/@host/h7/folded")
check "@host/h7/folded (2 series): one query ($n)" [ "$n" = 1 ]
check "and it is host h7's" [ "$(sort "$tmp/rt.got" | tr '\n' ' ')" = "app;main;h7 7 lib;init;h7 14 " ]
fusermount3 -u "$mnt" 2>/dev/null

# ---- perf samples of no thread -------------------------------------------------------
cat >"$tmp/nothread.perf" <<'EOF'
:-1    -1 [000]   100.250000:     250000 cpu-clock:
	ffffffff81000000 native_safe_halt+0x0 ([kernel.kallsyms])

:-1 -1/-1 [001]   100.500000:     250000 cpu-clock:
	ffffffff81000000 native_safe_halt+0x0 ([kernel.kallsyms])

app   100/100 [001]   100.750000:     250000 cpu-clock:
	401000 main+0x0 (/usr/bin/app)
EOF
"$collect" import --store "$tmp/nt" --host hn --clock-offset $t0 "$tmp/nothread.perf" >"$tmp/nt.out" 2>&1 ||
	{ bad "import samples of no thread"; cat "$tmp/nt.out"; }
pg_createdb nothread || exit 1
NT=$(pg_uri nothread postgres)
push "$tmp/nt" "$NT" "$tmp/p.out"
for st in "$tmp/nt" "$NT"; do
	"$collect" stats --store "$st" >"$tmp/nt.stats" 2>&1
	check "$st: the samples of no thread are the process ':-1' (2 samples)" \
		sh -c "awk '\$1 == \":-1\" { print \$4 }' '$tmp/nt.stats' | grep -qx 2"
	check "$st: they are at their time, with --clock-offset (the bucket of $((t0 + 100)): weight 500000)" \
		[ "$("$collect" export --store "$st" --binary :-1 --from $((t0 + 60)) --to $((t0 + 119)) 2>/dev/null |
			awk '{ s += $NF } END { print s }')" = 500000 ]
done

# ---- samples without frames -----------------------------------------------------------
# A folded line without ';' is a process name alone (as perf prints a
# sample whose callchain it dropped): counted on the series' root.  It is
# the row "[no frames]" of top, at the root and at the version, and of
# store/README.md's SQL, whose self columns sum to the total.
pg_createdb bare || exit 1
BARE=$(pg_uri bare postgres)
printf 'app;main;compute 60\napp 7\n' >"$tmp/bare-a.folded"
printf 'app;main;compute 50\napp;main;io 20\napp 3\n' >"$tmp/bare-b.folded"
"$collect" import --store "$tmp/bare" --host hb --version A --time $t0 "$tmp/bare-a.folded" >/dev/null 2>&1 &&
	"$collect" import --store "$tmp/bare" --host hb --version B --time $t0 "$tmp/bare-b.folded" >/dev/null 2>&1 ||
	bad "import samples without frames"
push "$tmp/bare" "$BARE" "$tmp/p.out"
awk '/^```sql top-functions/{on=1; next} /^```/{on=0} on' "$here/../store/README.md" >"$tmp/top.sql"
awk '/^```sql regressions/{on=1; next} /^```/{on=0} on' "$here/../store/README.md" >"$tmp/regress.sql"
psql "$BARE" -qXAt -F' ' -f "$tmp/top.sql" >"$tmp/top.out" 2>&1
printf 'compute 60\n[no frames] 7\n' >"$tmp/top.want"
check "store/README.md's top functions: samples without frames are the row [no frames]" \
	cmp -s "$tmp/top.out" "$tmp/top.want"
psql "$BARE" -qXAt -F' ' -f "$tmp/regress.sql" >"$tmp/regress.out" 2>&1
printf 'io 0.00 27.40 27.40\n[no frames] 10.45 4.11 -6.34\ncompute 89.55 68.49 -21.06\n' >"$tmp/regress.want"
check "store/README.md's regressions: [no frames] has its share" cmp -s "$tmp/regress.out" "$tmp/regress.want"
# top_of FILE: "<the [no frames] row's self> <the self column's sum> <total in the header>"
top_of() {
	awk 'NR == 1 { for (i = 1; i < NF; i++) if ($i == "total") t = $(i + 1) + 0 }
		/^#/ { next } { s += $1 } $5 == "-" && substr($0, length($0) - 10) == "[no frames]" { b = $1 }
		END { print b + 0, s + 0, t }' "$1"
}
mkdir -p "$mnt"
"$flamefs" "$BARE" "$mnt" 2>"$tmp/mount.err" || { bad "mount the database"; cat "$tmp/mount.err"; }
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
for d in "" app/A/ app/B/ @host/hb/; do
	case $d in app/A/) want="7 67 67" ;; app/B/) want="3 73 73" ;; *) want="10 140 140" ;; esac
	cp "$mnt/${d}top" "$tmp/bare.top" 2>/dev/null
	check "the mount's /${d}top: the row [no frames], self column = total ($want)" \
		[ "$(top_of "$tmp/bare.top")" = "$want" ]
done
check "the mount's /app/A/total is the top's total" [ "$(cat "$mnt/app/A/total")" = 67 ]
fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"

[ "$failures" = 0 ]

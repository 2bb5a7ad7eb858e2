#!/usr/bin/env bash
# test-crash.sh — crash consistency of the writer: SIGKILL at any moment
# leaves a store that opens and holds whole commits only.
#
# import: a store holding earlier data (in SSTs and in its WAL) is copied
# afresh for each run, `flamefs-collect import` of a ~60 MB perf script is
# started on the copy and killed with SIGKILL, and then `stats` and
# `export` must work and show exactly the store before the import or
# exactly the store after a complete reference import (the series table,
# the frame and node counts, and the folded export, byte for byte).  Then
# `compact` opens it as the writer (WAL recovery) and the same must still
# hold.  A kill rarely lands between the commit's write(2) calls, so the
# reference's WAL is also cut at 10 random points inside the import's
# record (a torn write): the store must then be the store before.  Three kills in five come at a random moment over the whole import
# (start-up, parsing, commit, close); two in five come right when the
# import's WAL starts to grow, i.e. in the middle of its one commit (a torn
# WAL record), plus 0-3 ms.
#
# record: `flamefs-collect record -p PID --log-drains LOG` on a busy
# tests/record-target (every third run with -e cpu,rss:uk:1: the pages its
# forked children touch are RSS gained) is killed the same way, at random
# moments over 2.5 s (its first drain commits about 1.3 s after the start,
# the second 1 s later) or right after the log says "drain N committing"
# (N = 1 or 2), plus 0-2 ms.  The LOG
# has "drain N committing samples S weight W" before each commit and
# "drain N committed ..." after it.  Let C be the sum of the committed
# drains and P the one drain that may be "committing" without
# "committed": the store must hold exactly C, or exactly C + P (that
# commit finished before the kill), in samples (series records) and in
# weight (the counts, through export), and the earlier data unchanged.
# Anything else is a partial or a lost drain.  Skipped, visibly, where
# BPF cannot load.
#
# recent tier: a writer of samples (tests/gen-samples, with a short keep
# window so that it rolls up as it writes) is killed at random moments;
# every bucket's detail must be whole or (behind the window) gone.
#
# creation: `import` and `record` on a path that does not exist yet are
# killed at 0, 2, 4, ... 100 ms (FLAMEFS_CRASH_CREATE_MS) after their start
# (51 kills; over twice the time the store takes to appear, if longer; with
# fewer runs, in as many steps).
# Right after each kill the path must hold no store at all or a store that
# `stats` opens; then the same command, run again, must succeed on the
# same path, leave no staging directory beside it, and flamefs must mount
# the store and list what the command stored.  The kills must have landed
# in all three places (before the store existed, during its creation, and
# after it) with the full 50 runs.
#
#   usage: tests/test-crash.sh BUILD_DIR    exit 0 ok, 1 failure, 77 skip
#   FLAMEFS_CRASH_RUNS (default 50) kills per part; FLAMEFS_CRASH_SEED
#   repeats a run's random moments.
set -u
build=${1:?usage: test-crash.sh BUILD_DIR}
runs=${FLAMEFS_CRASH_RUNS:-50}
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
create_ms=${FLAMEFS_CRASH_CREATE_MS:-100}
gen=$build/tests/gen-perf
target=$build/tests/record-target
killer=$(cd "$(dirname "$0")" && pwd)/crash-kill.py
export LC_ALL=C

. "$(dirname "$killer")/lib-e2e.sh"
e2e_setup crash
burner=
e2e_on_exit() { [ -n "$burner" ] && kill "$burner" 2>/dev/null; }
mkdir -p "$mnt"
can_mount=1
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	can_mount=0
	echo "# note: /dev/fuse not available: creation runs do not mount the view"
fi

seed=${FLAMEFS_CRASH_SEED:-$(($(date +%s) % 100000))}
RANDOM=$seed
echo "# seed $seed (FLAMEFS_CRASH_SEED=$seed repeats these kill moments)"
# rnd N: a random integer in [0, N)
rnd() { echo $(((RANDOM * 32768 + RANDOM) % $1)); }
ms2s() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# state STORE OUT: what a reader sees, in OUT.rows (the series table
# without the approximate DISK column, and the frame and node counts) and
# OUT.folded (the export).  Fails when the store does not open.
state() {
	"$collect" stats --store "$1" >"$2.stats" 2>"$2.err" || return 1
	awk 'NR > 1 && NF == 9 { print $1, $2, $3, $4, $5, $6, $7 } / series, / { print }' \
		"$2.stats" >"$2.rows"
	"$collect" export --store "$1" --format folded -o "$2.folded" 2>>"$2.err" || return 1
}
same() { cmp -s "$1.rows" "$2.rows" && cmp -s "$1.folded" "$2.folded"; }
field() { sed -n "s/.*$1=\([-0-9.]*\).*/\1/p" <<<"$2"; }

# ---- import --------------------------------------------------------------------
part=$SECONDS
"$gen" 60000000 20000 1 >"$tmp/big.perf"
"$gen" 3000000 3000 2 >"$tmp/base1.perf"
"$gen" 2000000 2000 3 >"$tmp/base2.perf"
base=$tmp/base
# Earlier data both in SST files (compacted) and in the WAL.
if ! "$collect" import --store "$base" "$tmp/base1.perf" 2>/dev/null ||
	! "$collect" compact --store "$base" >/dev/null 2>&1 ||
	! "$collect" import --store "$base" "$tmp/base2.perf" 2>/dev/null; then
	bad "preparing the store"
	exit 1
fi
state "$base" "$tmp/before" || { bad "before state: $(cat "$tmp/before.err")"; exit 1; }
# The import's duration: the median of three reference imports, then of
# every run that ends before its kill (the machine's load changes).
durs=()
durs_median() { printf '%s\n' "${durs[@]}" | median; }
for r in 1 2 3; do
	rm -rf "$tmp/ref"
	cp -a "$base" "$tmp/ref"
	t0=$(date +%s%N)
	# (the import left in the WAL, unsettled: the torn-WAL part cuts it)
	FLAMEFS_STORE_SETTLE=0 "$collect" import --store "$tmp/ref" "$tmp/big.perf" 2>/dev/null ||
		{ bad "reference import"; exit 1; }
	durs+=($((($(date +%s%N) - t0) / 1000000)))
done
tref=$(durs_median)
state "$tmp/ref" "$tmp/after" || { bad "after state: $(cat "$tmp/after.err")"; exit 1; }
if same "$tmp/before" "$tmp/after"; then
	bad "the reference import changed nothing"
	exit 1
fi
echo "# reference imports of $(($(stat -c %s "$tmp/big.perf") / 1000000)) MB: ${durs[*]} ms;" \
	"store before: $(wc -l <"$tmp/before.folded") stacks, after: $(wc -l <"$tmp/after.folded")"

n_before=0 n_after=0 n_done=0 n_commit=0 n_commit_before=0 n_commit_after=0 n_torn=0
ibad=0
w=$tmp/w
# import_kill RUN WHAT SPEC...: one import killed as SPEC says (killer.py),
# its store checked and classified into the counters.
import_kill() {
	local i=$1 what=$2 out rc cls
	shift 2
	local spec=("$@")
	rm -rf "$w"
	cp -a "$base" "$w"
	out=$(python3 "$killer" "${spec[@]}" -- "$collect" import --store "$w" "$tmp/big.perf")
	rc=$(field rc "$out")
	if ! state "$w" "$tmp/got"; then
		bad "import run $i (kill $what): the store does not open: $(head -c 300 "$tmp/got.err")"
		ibad=$((ibad + 1))
		return
	fi
	if same "$tmp/got" "$tmp/before"; then
		cls=before
	elif same "$tmp/got" "$tmp/after"; then
		cls=after
	else
		bad "import run $i (kill $what, $out): the store is neither before nor after the import"
		diff "$tmp/got.rows" "$tmp/before.rows" | head -5
		ibad=$((ibad + 1))
		return
	fi
	# Open it as the writer (WAL recovery, flush, compaction): same data.
	if ! "$collect" compact --store "$w" >/dev/null 2>"$tmp/compact.err" || ! state "$w" "$tmp/got2" ||
		! same "$tmp/got2" "$tmp/$cls"; then
		bad "import run $i (kill $what): after compact the store changed or failed: $(head -c 300 "$tmp/compact.err")"
		ibad=$((ibad + 1))
		return
	fi
	if [ "$rc" != -9 ]; then
		[ "${spec[0]}" = delay ] && durs+=("$(field ms "$out" | cut -d. -f1)") && tref=$(durs_median)
		n_done=$((n_done + 1)) # the import had finished: must be "after"
		[ "$cls" = after ] || { bad "import run $i: finished (rc $rc) but its data is missing"; ibad=$((ibad + 1)); }
	elif [ "$cls" = before ]; then
		n_before=$((n_before + 1))
	else
		n_after=$((n_after + 1))
	fi
	if [ "${spec[0]}" = wal ] && [ "$(field triggered "$out")" = 1 ] && [ "$rc" = -9 ]; then
		n_commit=$((n_commit + 1))
		[ "$cls" = before ] && n_commit_before=$((n_commit_before + 1))
		[ "$cls" = after ] && n_commit_after=$((n_commit_after + 1))
	fi
}
for i in $(seq "$runs"); do
	if [ $((i % 5)) -lt 2 ]; then
		extra=$(rnd 3001)
		spec=(wal "$w" "0.$(printf '%06d' "$extra")")
		what="at commit +${extra} us"
	else
		d=$(rnd $((tref * 115 / 100 + 1)))
		spec=(delay "$(ms2s "$d")")
		what="after ${d} ms"
	fi
	import_kill "$i" "$what" "${spec[@]}"
done
# The kills must span the import, landing before its commit and after it.
# When chance left one side empty (this machine ran slower or faster than
# at the reference imports), up to 10 more runs aim at it: a delay of
# 1.2-3 times the reference for "after", of 0-20% for "before".
for x in $(seq 10); do
	[ $((n_after + n_done)) -gt 0 ] && break
	d=$((tref * (120 + $(rnd 181)) / 100))
	import_kill "+$x" "after $d ms (aimed after the commit)" delay "$(ms2s "$d")"
done
for x in $(seq 10); do
	[ "$n_before" -gt 0 ] && break
	d=$(rnd $((tref / 5 + 1)))
	import_kill "+$x" "after $d ms (aimed before the commit)" delay "$(ms2s "$d")"
done
echo "# import: $runs kills: $n_before landed before the commit (store = before), $n_after after it" \
	"(store = after), $n_done after the import had exited"
echo "# import: $n_commit of them while the commit was being written (WAL growing):" \
	"$n_commit_before rolled back, $n_commit_after kept"
if [ "$ibad" = 0 ]; then
	ok "import: $runs SIGKILLs, the store always opened and held all of the import or none of it"
fi
# Where the kills landed is checked with the full 50 runs; fewer (the
# sanitizer stage) may miss a place by chance.
covered() { # covered COUNT MESSAGE
	[ "$1" -gt 0 ] && return
	if [ "$runs" -ge 50 ]; then bad "$2"; else echo "# note: $2 (not required with fewer than 50 runs)"; fi
}
covered "$n_before" "import: no kill landed before the commit (the moments do not span the import)"
covered $((n_after + n_done)) "import: no kill landed after the commit"

# A kill in the middle of the commit's write(2) calls leaves a torn record
# at the end of the WAL; the kills above rarely land there, so cut the
# reference's WAL at random points inside the import's record too.
wal=$(ls "$tmp/ref"/*.log 2>/dev/null | sort | tail -n 1)
walsize=$(stat -c %s "$wal" 2>/dev/null || echo 0)
if [ "$walsize" -lt 100000 ]; then
	bad "torn WAL: the reference import is not in the WAL ($wal, $walsize bytes)"
else
	tbad=0
	for i in $(seq 10); do
		cut=$(rnd "$walsize")
		rm -rf "$w"
		cp -a "$tmp/ref" "$w"
		truncate -s "$cut" "$w/$(basename "$wal")"
		if ! state "$w" "$tmp/got" || ! same "$tmp/got" "$tmp/before" ||
			! "$collect" compact --store "$w" >/dev/null 2>&1 || ! state "$w" "$tmp/got" ||
			! same "$tmp/got" "$tmp/before"; then
			bad "torn WAL: cut at $cut of $walsize bytes: the store is not the store before the import"
			tbad=$((tbad + 1))
		fi
	done
	[ "$tbad" = 0 ] && ok "torn WAL: the import's WAL record cut at 10 random points: the import is rolled back every time"
fi
echo "# import and torn WAL: $((SECONDS - part)) s"

# ---- creation ------------------------------------------------------------------
# mounts STORE: flamefs mounts STORE and lists its binaries, as many as
# `stats` counts.  (A 0.2 s recording of a process that a loaded machine
# barely runs may store no sample: its store has no binary to list.)  The
# reason of a failure is in $tmp/daemon.err.
mounts() {
	[ "$can_mount" = 1 ] || return 0
	local want got
	want=$("$collect" stats --store "$1" 2>/dev/null | awk 'NR > 1 && NF == 9 { b[$1] = 1 } END { print length(b) }')
	"$flamefs" -f "$1" "$mnt" 2>"$tmp/daemon.err" &
	local pid=$! listed=0
	# up to 30 s: the sanitizer build on a loaded machine starts slowly
	for _ in $(seq 300); do
		mountpoint -q "$mnt" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if mountpoint -q "$mnt"; then
		got=$(find "$mnt" -mindepth 1 -maxdepth 1 -type d | wc -l) # the binaries, not the root's files
		[ "$got" = "$want" ] && [ "$want" != "" ] && listed=1
		[ "$listed" = 1 ] || echo "lists $got binaries, stats counts '$want'" >>"$tmp/daemon.err"
		fusermount3 -u "$mnt" 2>/dev/null
	else
		echo "not mounted (the daemon exited, or 30 s went by)" >>"$tmp/daemon.err"
		kill "$pid" 2>/dev/null
	fi
	wait "$pid"
	[ "$listed" = 1 ]
}
# create_kills NAME CMD...: CMD (with the word STORE standing for the
# store's path) is killed in $runs steps over 0-$create_ms ms (or over
# twice the time the store takes to appear, if longer) on a new path, then
# run again; counts where the kills left the path.
create_kills() {
	local name=$1 ms c out rc cmd arg span step made
	shift
	c_none=0 c_stage=0 c_store=0 c_done=0 cbad=0
	# The kills span 0-$create_ms ms, or twice the time the store takes to
	# appear on this machine now when that is longer: a loaded machine can
	# take more than 100 ms to start `record` (BPF), and then no kill
	# landed after the store was made.  Measured on one unkilled run.
	c=$tmp/create-$name-probe/sub/store
	cmd=()
	for arg in "$@"; do [ "$arg" = STORE ] && cmd+=("$c") || cmd+=("$arg"); done
	made=$(python3 - "$c" "${cmd[@]}" <<'PY2'
import os, subprocess, sys, time
path, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
made = None
while made is None and p.poll() is None:
    if os.path.exists(path):
        made = time.monotonic() - t0
    time.sleep(0.001)
p.wait()
if made is None and os.path.exists(path):
    made = time.monotonic() - t0
print(int((made or 0) * 1000))
PY2
	)
	rm -rf "$tmp/create-$name-probe"
	span=$create_ms
	[ $((made * 2)) -gt "$span" ] && span=$((made * 2))
	step=$(((span + runs - 1) / runs))
	for ms in $(seq 0 "$step" "$span"); do
		c=$tmp/create-$name-$ms/sub/store
		cmd=()
		for arg in "$@"; do [ "$arg" = STORE ] && cmd+=("$c") || cmd+=("$arg"); done
		out=$(python3 "$killer" delay "$(ms2s "$ms")" -- "${cmd[@]}")
		rc=$(field rc "$out")
		if [ "$rc" != -9 ]; then
			c_done=$((c_done + 1))
		elif [ ! -e "$c" ]; then
			if ls -d "$(dirname "$c")"/.store.new-* >/dev/null 2>&1; then
				c_stage=$((c_stage + 1)) # killed while the store was being made
			else
				c_none=$((c_none + 1))
			fi
		elif ! "$collect" stats --store "$c" >/dev/null 2>"$tmp/create.err"; then
			bad "$name: kill at $ms ms left a directory that stats does not open: $(head -c 300 "$tmp/create.err")"
			cbad=$((cbad + 1))
			continue
		else
			c_store=$((c_store + 1))
		fi
		if ! "${cmd[@]}" >/dev/null 2>"$tmp/create.err"; then
			bad "$name: after a kill at $ms ms the same command fails: $(head -c 300 "$tmp/create.err")"
			cbad=$((cbad + 1))
			continue
		fi
		if ls -d "$(dirname "$c")"/.store.new-* >/dev/null 2>&1; then
			bad "$name: after a kill at $ms ms and a new run, a staging directory is left: $(ls -a "$(dirname "$c")" | tr '\n' ' ')"
			cbad=$((cbad + 1))
		fi
		if ! mounts "$c"; then
			bad "$name: after a kill at $ms ms and a new run, flamefs does not mount the store: $(head -c 300 "$tmp/daemon.err")"
			cbad=$((cbad + 1))
		fi
		rm -rf "$tmp/create-$name-$ms"
	done
	local nk=$((span / step + 1))
	echo "# $name creation (the store appears after $made ms): $nk kills at 0-$span ms: $c_none before the store's directory existed," \
		"$c_stage while it was being made (staging left), $c_store after it was made, $c_done after the command had exited"
	if [ "$cbad" = 0 ]; then
		ok "$name creation: $nk SIGKILLs at 0-$span ms left no store or a whole one; the same command then succeeded and the view mounted it"
	fi
	# A kill before the store's directory exists lands in the process's
	# start (exec, loading, reading the options): nothing to check but
	# that nothing is left, and how long that start lasts against the
	# killer's own is up to the scheduler (beside two CPU hogs the first
	# kill, at 0 ms, came after the staging directory): counted, not required.
	[ "$c_none" -gt 0 ] || echo "# note: $name creation: no kill landed before the store was made"
	covered "$c_stage" "$name creation: no kill landed while the store was being made"
	covered $((c_store + c_done)) "$name creation: no kill landed after the store was made"
}
"$gen" 2000000 2000 4 >"$tmp/create.perf"
part=$SECONDS
create_kills import "$collect" import --store STORE "$tmp/create.perf"
echo "# import creation: $((SECONDS - part)) s"

# ---- the recent tier ---------------------------------------------------------------
# tests/gen-samples writes 10 minutes of a 99 Hz recording with every
# sample's detail, one commit a (recorded) second, with a 2-minute keep
# window, so that the writer rolls up as it goes; it is killed at random
# moments over its run.  Then (and again after a writer's WAL recovery)
# every bucket must hold its detail whole (equal to its counts, node by
# node) or, only behind the keep window, none, and each series' recent
# samples must be its detail (test-store --check-tier).
tier_runs=$((runs < 20 ? runs : 20))
gen_samples=$build/tests/gen-samples
t0=$(date +%s%N)
"$gen_samples" "$tmp/tier-ref" 600 --series 30 --keep 120 >/dev/null || bad "gen-samples"
tdur=$((($(date +%s%N) - t0) / 1000000))
part=$SECONDS
tbad=0 t_none=0 t_mid=0 t_done=0
for i in $(seq 1 "$tier_runs"); do
	rm -rf "$tmp/tier"
	d=$(rnd "$tdur")
	out=$(python3 "$killer" delay "$(ms2s "$d")" -- "$gen_samples" "$tmp/tier" 600 --series 30 --keep 120)
	[ "$(field rc "$out")" = -9 ] || { t_done=$((t_done + 1)); continue; }
	got=$("$build/tests/test-store" --check-tier "$tmp/tier")
	case $? in
	2) t_none=$((t_none + 1)); continue ;;
	0) ;;
	*) bad "recent tier run $i (kill at $d ms): $got"; tbad=$((tbad + 1)); continue ;;
	esac
	t_mid=$((t_mid + 1))
	"$collect" compact --store "$tmp/tier" >/dev/null 2>&1 || { bad "recent tier run $i: compact"; tbad=$((tbad + 1)); continue; }
	got=$("$build/tests/test-store" --check-tier "$tmp/tier") ||
		{ bad "recent tier run $i (kill at $d ms), after recovery: $got"; tbad=$((tbad + 1)); }
done
echo "# recent tier: $tier_runs kills over ${tdur} ms runs: $t_mid while writing, $t_none before the store existed, $t_done after the end; $((SECONDS - part)) s"
if [ "$tbad" = 0 ]; then
	ok "recent tier: $tier_runs SIGKILLs, every bucket's detail whole (= its counts) or rolled up, never half"
fi
covered "$t_mid" "recent tier: no kill landed while samples were written"

# ---- record --------------------------------------------------------------------
if ! "$collect" record --verbose --store "$tmp/probe" -d 0.3 -- true 2>"$tmp/probe.err"; then
	echo "SKIP: record part: BPF sampling unavailable here: $(head -1 "$tmp/probe.err")"
	[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
	exit 0
fi

"$target" 100000 &
burner=$!
part=$SECONDS
create_kills record "$collect" record --verbose --store STORE -p "$burner" -F 499 -d 0.2
echo "# record creation: $((SECONDS - part)) s"
part=$SECONDS
# Sums of samples and weight over the series table.
sums() { awk '!/ series, / { s += $4; w += $5 } END { printf "%.0f %.0f\n", s, w }' "$1"; }
read -r base_s base_w < <(sums "$tmp/before.rows")
# export_weight STORE: the weight export gives for every binary's cpu-clock
# and rss series (a recording's rss may also fall under a child that
# exited before it was named).
export_weight() {
	for ev in cpu-clock rss; do
		"$collect" export --store "$1" --event "$ev" 2>/dev/null
	done | awk '{ s += $NF } END { printf "%.0f\n", s }'
}
base_e=$(export_weight "$base")
n_none=0 n_between=0 n_flight=0 n_flight_in=0 n_flight_out=0 n_drains=0 n_rdone=0
rbad=0
# Run i records while run i - 1's store is checked: a run's time is mostly
# the wait for its kill, the recorder idle between drains.  One recording
# at a time, the checks in order; each run has its own store, drain log
# and killer output (by the run's parity).
# record_start I: copies the store, picks run I's kill and starts it.
record_start() {
	local i=$1 p=$(($1 % 2)) k extra d events
	rm -rf "$w.$p" "$tmp/drains.$p.log"
	cp -a "$base" "$w.$p"
	if [ $((i % 5)) -lt 2 ]; then
		k=$((1 + $(rnd 2)))
		extra=$(rnd 2001)
		set -- drain "$tmp/drains.$p.log" "$k" "0.$(printf '%06d' "$extra")"
		rwhat[p]="at drain $k's commit +${extra} us"
	else
		d=$(rnd 2501)
		set -- delay "$(ms2s "$d")"
		rwhat[p]="after ${d} ms"
	fi
	# Every third run records two events (record -e): a drain then holds
	# both series, and is still committed whole or not at all.
	events=cpu
	[ $((i % 3)) = 0 ] && events=cpu,rss:uk:1
	python3 "$killer" "$@" -- "$collect" record --verbose --store "$w.$p" -p "$burner" -F 499 \
		-e "$events" --log-drains "$tmp/drains.$p.log" >"$tmp/kill.$p.out" &
	rkiller[p]=$!
}
# record_check I: checks the store of run I, whose kill is over.
record_check() {
	local i=$1 p=$(($1 % 2)) out rc what c_s c_w p_s p_w npend ndrains seq_ok s_s s_w e_w res
	local st=$w.$p log=$tmp/drains.$p.log
	out=$(cat "$tmp/kill.$p.out")
	what=${rwhat[p]}
	rc=$(field rc "$out")
	touch "$log"
	# C: the committed drains; P: the one drain committing, not committed.
	# Drains must be numbered 1, 2, ... and only the last may be pending.
	read -r c_s c_w p_s p_w npend ndrains seq_ok < <(awk '
		$1 != "drain" { bad = 1; next }
		$3 == "committing" { if ($2 != n + 1) bad = 1; n = $2; ps = $5; pw = $7; pend = 1 }
		$3 == "committed" { if ($2 != n || !pend || $5 != ps || $7 != pw) bad = 1
			cs += $5; cw += $7; pend = 0 }
		END { printf "%.0f %.0f %.0f %.0f %d %d %d\n", cs, cw, pend ? ps : 0, pend ? pw : 0, pend, n, !bad }' \
		"$log")
	if [ "$seq_ok" != 1 ]; then
		bad "record run $i (kill $what): malformed drain log: $(tail -3 "$log")"
		rbad=$((rbad + 1))
		return
	fi
	if ! state "$st" "$tmp/got"; then
		bad "record run $i (kill $what): the store does not open: $(head -c 300 "$tmp/got.err")"
		rbad=$((rbad + 1))
		return
	fi
	read -r s_s s_w < <(sums "$tmp/got.rows")
	s_s=$((s_s - base_s))
	s_w=$((s_w - base_w))
	# The counts, through export, must say the same as the series records.
	# (The recording's series are record-target's: the earlier data,
	# gen-perf's cpu-clock:pppH, is also event cpu-clock once perf's
	# modifiers are stripped.)
	e_w=$(($(export_weight "$st") - base_e))
	# The earlier data is untouched.
	awk -v b="$(basename "$target")" '$1 != b' "$tmp/got.rows" | grep -v ' series, ' >"$tmp/got.old"
	grep -v ' series, ' "$tmp/before.rows" >"$tmp/before.old"
	if ! cmp -s "$tmp/got.old" "$tmp/before.old"; then
		bad "record run $i (kill $what): the earlier series changed"
		rbad=$((rbad + 1))
		return
	fi
	if [ "$s_s $s_w $e_w" = "$c_s $c_w $c_w" ]; then
		res=committed
	elif [ "$npend" = 1 ] && [ "$s_s $s_w $e_w" = "$((c_s + p_s)) $((c_w + p_w)) $((c_w + p_w))" ]; then
		res=pending-kept
	else
		bad "record run $i (kill $what, $out): store holds $s_s samples / $s_w weight (export $e_w);" \
			"committed drains $c_s / $c_w, in flight: $npend drain of $p_s / $p_w"
		rbad=$((rbad + 1))
		return
	fi
	if ! "$collect" compact --store "$st" >/dev/null 2>&1 || ! state "$st" "$tmp/got2" ||
		! same "$tmp/got2" "$tmp/got"; then
		bad "record run $i (kill $what): compact changed or failed"
		rbad=$((rbad + 1))
		return
	fi
	n_drains=$((n_drains + ndrains))
	if [ "$rc" != -9 ]; then
		n_rdone=$((n_rdone + 1))
	elif [ "$npend" = 1 ]; then
		n_flight=$((n_flight + 1))
		if [ "$res" = pending-kept ]; then n_flight_in=$((n_flight_in + 1)); else n_flight_out=$((n_flight_out + 1)); fi
	elif [ "$ndrains" = 0 ]; then
		n_none=$((n_none + 1))
	else
		n_between=$((n_between + 1))
	fi
}
rwhat=() rkiller=()
for i in $(seq "$runs"); do
	record_start "$i"
	[ "$i" -gt 1 ] && record_check $((i - 1))
	wait "${rkiller[i % 2]}"
done
record_check "$runs"
echo "# record: $runs kills (every third with -e cpu,rss:uk:1), $n_drains drains logged: $n_none before any drain, $n_between between drains" \
	"(store = committed drains), $n_flight during a drain's commit ($n_flight_in kept whole, $n_flight_out" \
	"rolled back), $n_rdone after record had exited; $((SECONDS - part)) s"
if [ "$rbad" = 0 ]; then
	ok "record: $runs SIGKILLs, the store always held exactly the committed drains (+ the one in flight, whole, or not at all)"
fi
covered "$n_between" "record: no kill landed between drains"
covered "$n_flight" "record: no kill landed during a drain's commit"

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all crash checks passed"
exit 0

#!/usr/bin/env bash
# test-symbolize-debuginfod.sh — `symbolize` when the debuginfod server is
# down or silent (issue #42): a store holding two stripped programs' frames
# (prog, whose debug file the test keeps in a .build-id tree, and other,
# whose debug info is nowhere), recorded with perf record -g (counted in
# loop iterations); then:
#   (a) DEBUGINFOD_URLS at a closed local port: symbolize exits 0 at once
#       with a line naming the server and "Connection refused", and the
#       store is unchanged (folded export and `stats` byte-identical, but
#       for stats' disk figures, which a writable open may compact);
#   (b) a server that accepts and never answers (a python3 socket server
#       counting its connections): symbolize says it timed out, the store
#       is unchanged, the server saw 1 + DEBUGINFOD_RETRY_LIMIT connections
#       for the two modules (one query per pass, not one per module), and
#       the run ended within DEBUGINFOD_TIMEOUT x (1 + retries) + 15 s
#       (the slack: two process starts and a store open and export under
#       two CPU hogs take well under a second here; the bound is the only
#       time the test counts); then the same with DEBUGINFOD_TIMEOUT and
#       DEBUGINFOD_RETRY_LIMIT unset: the line shows the defaults (5 s, 1);
#   (c) --debug-dir naming prog plus a dead server: prog's frames named as
#       in the reference import, other's left as they were, the server's
#       failure said;
#   (d) a server that answers "404 not found" to every /buildid/ query, but
#       only after 3 s (a python3 http.server subclass counting its
#       queries), ten more stripped modules of build ids of their own
#       (11 or more to ask about: 33 s of server time or more unbounded),
#       --debug-dir naming prog and --debuginfod-budget 7.5: two modules
#       asked to the end, the third cut short at the budget, the others not
#       asked, said in
#       one line; exit 0, prog named in the one commit, the rest as it was,
#       and the run within the budget + 20 s (an unbounded run takes 33 s;
#       the margins of the counts: two answers end by 6.x s, 1.5 s before
#       the budget, the third cannot end before 9 s, well after it); a bad
#       budget (option or FLAMEFS_DEBUGINFOD_BUDGET) is refused with a line;
#   (e) record (BPF; a visible SKIP of this part where it cannot sample) of
#       the stripped program with DEBUGINFOD_URLS at the closed port: its
#       own naming pass meets the refusal and the recorder says so in one
#       line, once, without -v; exit 0.
#   usage: test-symbolize-debuginfod.sh BUILD_DIR   exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
. "$(dirname "$0")/lib-stripped.sh"
build=${1:?usage: test-symbolize-debuginfod.sh BUILD_DIR}
collect=$build/flamefs-collect
e2e_setup symbolize-debuginfod

command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
# each run below names its servers; none from the environment
unset DEBUGINFOD_URLS FLAMEFS_DEBUGINFOD_BUDGET
spid=
e2e_on_exit() { [ -n "$spid" ] && kill "$spid" 2>/dev/null; }

stripped_setup
# the second program: another build id (its -g names another directory),
# another name, no debug file anywhere the symbolizer looks
mkdir -p "$tmp/o"
stripped_build "$tmp/o"
obid=$bid
bid=$(readelf -n "$tmp/prog" | awk '/Build ID:/ { print $3 }')
cp "$tmp/o/prog" "$tmp/o/other"
perf record -q -g -o "$tmp/other.data" "$tmp/o/other" 1000000 20 >/dev/null 2>&1 ||
	{ bad "perf record of the second program failed"; finish; }

"$collect" import --store "$store" "$tmp/perf.data" 2>/dev/null
"$collect" import --store "$store" "$tmp/other.data" 2>/dev/null
snap() {
	"$collect" export --store "$store" --format folded >"$tmp/$1.folded"
	# stats without its disk figures (DISK, "store on disk", "bytes:"), which
	# a writable open may change by compacting: what the store holds
	"$collect" stats --store "$store" 2>&1 |
		awk '/^store on disk|^bytes:/ { next } { $8 = ""; print }' >"$tmp/$1.stats"
}
# the first opens after an import settle the store's disk figures (stats'
# DISK and "counts" bytes of the last series imported); compare from there
snap settle
snap before
snap again
check "stats and the folded export are stable between two reads" sh -c \
	"cmp -s $tmp/before.stats $tmp/again.stats && cmp -s $tmp/before.folded $tmp/again.folded"
check "the store holds both programs unnamed" \
	grep -q "\[prog\];\[prog\]" "$tmp/before.folded" -a -n "$(grep "\[other\];\[other\]" "$tmp/before.folded")"
"$collect" symbolize --store "$store" --dry-run 2>"$tmp/dry.err"
check "... 2 modules to name: $(head -1 "$tmp/dry.err")" \
	grep -q "would name 0 of [0-9]* unnamed frames in 0 of 2 modules" "$tmp/dry.err"

# a free local port, closed again
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# (a) a closed port
DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$tmp/cache-a" \
	"$collect" symbolize --store "$store" 2>"$tmp/a.err"
rc=$?
check "(a) closed port: exit status 0" test "$rc" = 0
check "(a) ... one line names the server and the failure: $(grep debuginfod "$tmp/a.err")" \
	grep -q "symbolize: debuginfod server http://127.0.0.1:$port: Connection refused; asked no server for the other modules" "$tmp/a.err"
check "(a) ... nothing named" grep -q "named 0 of [0-9]* unnamed frames in 0 of 2 modules" "$tmp/a.err"
snap a
check "(a) ... the folded export unchanged" cmp "$tmp/before.folded" "$tmp/a.folded"
check "(a) ... stats unchanged" cmp "$tmp/before.stats" "$tmp/a.stats"

# (b) a server that accepts and never answers; it counts its connections
cat >"$tmp/silent.py" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(str(len(held)))
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
PY
python3 "$tmp/silent.py" "$tmp/silent.port" "$tmp/silent.count" &
spid=$!
for _ in $(seq 100); do [ -s "$tmp/silent.port" ] && break; sleep 0.1; done
sport=$(cat "$tmp/silent.port")
conns() { cat "$tmp/silent.count" 2>/dev/null || echo 0; }

timeout=2 retries=1
t0=$(date +%s%N)
DEBUGINFOD_URLS="http://127.0.0.1:$sport" DEBUGINFOD_CACHE_PATH="$tmp/cache-b" \
	DEBUGINFOD_TIMEOUT=$timeout DEBUGINFOD_RETRY_LIMIT=$retries \
	"$collect" symbolize --store "$store" 2>"$tmp/b.err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
bound=$(((timeout * (1 + retries) + 15) * 1000))
check "(b) silent server: exit status 0" test "$rc" = 0
check "(b) ... ended in ${ms} ms, within ${bound} ms" test "$ms" -le "$bound"
check "(b) ... says it timed out: $(grep debuginfod "$tmp/b.err")" \
	grep -q "symbolize: debuginfod server http://127.0.0.1:$sport: timed out; asked no server for the other modules (DEBUGINFOD_TIMEOUT=2 s a transfer, DEBUGINFOD_RETRY_LIMIT=1)" "$tmp/b.err"
check "(b) ... one query for the two modules: $(conns) connections (1 + retries)" \
	test "$(conns)" = $((1 + retries))
snap b
check "(b) ... the folded export unchanged" cmp "$tmp/before.folded" "$tmp/b.folded"
check "(b) ... stats unchanged" cmp "$tmp/before.stats" "$tmp/b.stats"

# (b) with the defaults: 5 s a transfer, 1 retry
c0=$(conns)
t0=$(date +%s%N)
env -u DEBUGINFOD_TIMEOUT -u DEBUGINFOD_RETRY_LIMIT DEBUGINFOD_URLS="http://127.0.0.1:$sport" \
	DEBUGINFOD_CACHE_PATH="$tmp/cache-b" "$collect" symbolize --store "$store" 2>"$tmp/b2.err"
ms=$((($(date +%s%N) - t0) / 1000000))
bound=$(((5 * 2 + 15) * 1000))
check "(b) defaults: ended in ${ms} ms, within ${bound} ms" test "$ms" -le "$bound"
check "(b) ... the line shows them: $(grep debuginfod "$tmp/b2.err")" \
	grep -q "timed out; asked no server for the other modules (DEBUGINFOD_TIMEOUT=5 s a transfer, DEBUGINFOD_RETRY_LIMIT=1)" "$tmp/b2.err"
check "(b) ... 2 more connections" test "$(conns)" = $((c0 + 2))
snap b2
check "(b) ... the folded export unchanged" cmp "$tmp/before.folded" "$tmp/b2.folded"

# (c) a debug dir naming prog, and a dead server for other
DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$tmp/cache-c" \
	"$collect" symbolize --store "$store" --debug-dir "$tmp/debug" 2>"$tmp/c.err"
check "(c) debug dir + dead server: prog named, other not: $(head -1 "$tmp/c.err")" \
	grep -q "named 4 of [0-9]* unnamed frames in 1 of 2 modules; 1 modules still without names: $tmp/o/other ($obid)" "$tmp/c.err"
check "(c) ... the server's failure said" \
	grep -q "debuginfod server http://127.0.0.1:$port: Connection refused" "$tmp/c.err"
snap c
check "(c) ... prog's stacks equal the reference's" \
	cmp <(grep "^prog;" "$tmp/c.folded") <(grep "^prog;" "$tmp/ref.folded")
check "(c) ... other's stacks as they were" \
	cmp <(grep "^other;" "$tmp/c.folded") <(grep "^other;" "$tmp/before.folded")
check "(c) ... the total unchanged" \
	test "$(folded_total "$tmp/c.folded")" = "$(folded_total "$tmp/before.folded")"

# (d) a slow "not found": ten more unnamed modules (a spin loop built with a
# build id of its own each, stripped), a server that answers 404 after 3 s
mods=10
cat >"$tmp/spin.c" <<'C'
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i ^ (sink >> 3);
}
int main(int argc, char **argv)
{
	spin(strtoul(argv[1], NULL, 10));
	return argc < 2;
}
C
mkdir -p "$tmp/m"
for i in $(seq $mods); do
	cc -O0 -fno-omit-frame-pointer -Wl,--build-id=0x$(printf 'f1a3e5%034x' "$i") \
		-o "$tmp/m/spin$i.full" "$tmp/spin.c" && strip -o "$tmp/m/spin$i" "$tmp/m/spin$i.full" ||
		{ bad "cannot build the spin modules"; finish; }
done
for i in $(seq $mods); do
	perf record -q -g -o "$tmp/spin$i.data" "$tmp/m/spin$i" 20000000 >/dev/null 2>&1 ||
		{ bad "perf record of spin$i failed"; finish; }
done
# a store of its own: prog (named from --debug-dir), other and the spins
store=$tmp/store-d
"$collect" import --store "$store" "$tmp/perf.data" "$tmp/other.data" "$tmp"/spin*.data 2>/dev/null
snap d0
check "(d) the store holds the $mods spin modules unnamed" \
	test "$(grep -o '\[spin[0-9]*\]' "$tmp/d0.folded" | sort -u | wc -l)" = "$mods"
# the modules left to ask a server about: all but prog (the store may hold a
# few more than other and the spins: code of libc or the loader sampled
# while a process started, unnamed where only its .dynsym is here)
"$collect" symbolize --store "$store" --debug-dir "$tmp/debug" --dry-run 2>"$tmp/d-dry.err" >/dev/null
left=$(sed -n 's/.* \([0-9]*\) modules still without names.*/\1/p' "$tmp/d-dry.err")
nmod=$(sed -n 's/.* in 1 of \([0-9]*\) modules;.*/\1/p' "$tmp/d-dry.err")
check "(d) ... $left modules to ask about, of $nmod: $(head -1 "$tmp/d-dry.err")" \
	test -n "$left" -a "${left:-0}" -ge $((mods + 1)) -a "${nmod:-0}" = $((${left:-0} + 1))

cat >"$tmp/slow.py" <<'PY'
import http.server, os, sys, time
delay = float(sys.argv[3])
class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/buildid/"):
            with open(sys.argv[2], "a") as f:
                f.write(self.path + "\n")
            time.sleep(delay)
        try:
            self.send_error(404, "not found")
        except OSError:
            pass  # the client cut the query short
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
kill "$spid" 2>/dev/null
python3 "$tmp/slow.py" "$tmp/slow.port" "$tmp/slow.log" 3 &
spid=$!
for _ in $(seq 100); do [ -s "$tmp/slow.port" ] && break; sleep 0.1; done
lport=$(cat "$tmp/slow.port")
queries() { cat "$tmp/slow.log" 2>/dev/null | grep -c '^/buildid/'; }

budget=7.5
t0=$(date +%s%N)
DEBUGINFOD_URLS="http://127.0.0.1:$lport" DEBUGINFOD_CACHE_PATH="$tmp/cache-d" \
	"$collect" symbolize --store "$store" --debug-dir "$tmp/debug" \
	--debuginfod-budget $budget 2>"$tmp/d.err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
bound=27500 # ms: the budget + 20 s
check "(d) slow 404s: exit status 0" test "$rc" = 0
check "(d) ... ended in ${ms} ms, within ${bound} ms (unbounded: $left x 3 s)" \
	test "$ms" -le "$bound"
check "(d) ... one line says the budget was spent: $(grep budget "$tmp/d.err")" \
	grep -Eq "symbolize: debuginfod: the budget of 7.5 s of server time is spent \([0-9.]+ s on 2 modules\); did not ask about $((left - 2)) modules \(--debuginfod-budget or FLAMEFS_DEBUGINFOD_BUDGET sets the budget\)" "$tmp/d.err"
check "(d) ... the server saw 3 queries (2 answered, the third cut short): $(queries)" \
	test "$(queries)" = 3
check "(d) ... prog named, the rest not: $(head -1 "$tmp/d.err")" \
	grep -q "named 4 of [0-9]* unnamed frames in 1 of $nmod modules; $left modules still without names" "$tmp/d.err"
check "(d) ... no server failure said" test -z "$(grep 'debuginfod server' "$tmp/d.err")"
snap d
check "(d) ... prog's stacks equal the reference's" \
	cmp <(grep "^prog;" "$tmp/d.folded") <(grep "^prog;" "$tmp/ref.folded")
check "(d) ... the other modules' stacks as they were" \
	cmp <(grep -v "^prog;" "$tmp/d.folded") <(grep -v "^prog;" "$tmp/d0.folded")
check "(d) ... the total unchanged" \
	test "$(folded_total "$tmp/d.folded")" = "$(folded_total "$tmp/d0.folded")"

# a bad budget is refused before anything is asked or written
"$collect" symbolize --store "$store" --debuginfod-budget 0 2>"$tmp/e.err"
rc=$?
check "(d) --debuginfod-budget 0 refused, status $rc: $(cat "$tmp/e.err")" test "$rc" = 2
check "(d) ... with a line saying why" \
	grep -q "symbolize: --debuginfod-budget 0: not a number of seconds above 0" "$tmp/e.err"
FLAMEFS_DEBUGINFOD_BUDGET=soon "$collect" symbolize --store "$store" 2>"$tmp/e2.err"
rc=$?
check "(d) FLAMEFS_DEBUGINFOD_BUDGET=soon refused, status $rc: $(cat "$tmp/e2.err")" test "$rc" = 2
check "(d) ... with a line saying why" \
	grep -q "symbolize: FLAMEFS_DEBUGINFOD_BUDGET=soon: not a number of seconds above 0" "$tmp/e2.err"

# (e) the recorder's own pass meets a dead server: one line, without -v
if "$collect" record --store "$tmp/probe" -d 0.3 -- true 2>"$tmp/probe.err"; then
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$tmp/cache-e" \
		"$collect" record --store "$tmp/store-e" -F 499 --user-only -- "$tmp/prog" 1000000 40 \
		2>"$tmp/e-rec.err" >/dev/null
	rc=$?
	check "(e) record with a dead server: exit status 0" test "$rc" = 0
	check "(e) ... says it once: $(grep 'debuginfod server' "$tmp/e-rec.err")" \
		test "$(grep -c 'debuginfod server' "$tmp/e-rec.err")" = 1
	check "(e) ... names the server and the failure" \
		grep -q "record: naming later: debuginfod server http://127.0.0.1:$port: Connection refused; asked no server for the other modules of that pass" "$tmp/e-rec.err"
else
	echo "SKIP (e): BPF sampling unavailable here: $(head -1 "$tmp/probe.err")"
fi
finish

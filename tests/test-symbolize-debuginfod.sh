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
#       failure said.
#   usage: test-symbolize-debuginfod.sh BUILD_DIR   exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
. "$(dirname "$0")/lib-stripped.sh"
build=${1:?usage: test-symbolize-debuginfod.sh BUILD_DIR}
collect=$build/flamefs-collect
e2e_setup symbolize-debuginfod

command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
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
finish

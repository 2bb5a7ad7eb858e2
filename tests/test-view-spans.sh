#!/usr/bin/env bash
# test-view-spans.sh — spans in the view (issue #41), on a real mount of a
# store that spans-fill writes through the store API: app 1's samples
# inside spans query-a, query-b (nested in a query-a span, one of them
# unended) and query-c (another thread), one sample outside any span, and
# the seven span records; app 2 without spans.
#   - span records are no event: ls app = 1 2 (no 1@spans), and no span
#     name is a frame of app/1/folded or of the root's folded;
#   - ls /@span = - query-a query-b query-c; @span/<name>/app/1/folded
#     holds exactly the samples inside spans of that name;
#   - app/1/spans, @span/<name>/spans and @span/<name>/app/1/spans: the
#     exact lines (count, total, mean, p50, p99, max, unended, detailed);
#     app/2 has no spans file; app 3's 100,005 spans: exact percentiles
#     of a large n, and trace.json writes 100,000 and says 5 were left out;
#   - trace.json of app/1 and of the window @range/T0/T0+1 (its app/1, and
#     its root, which has app 2's sample too):
#     valid JSON (python3 -m json.tool), each X event's name, start,
#     duration, id and parent those of a record (dur = dur_ns / 1000
#     exactly), each P event's span id its sample's, the window's
#     only those that started in it, thread names worker and io, every P
#     event's stack in stackFrames;
#   - speedscope (npm, into a temp dir) in headless chromium, served over
#     http, imports trace.json and names the threads of its spans; a
#     trace.json with a broken event fails the same check (SKIP when npm,
#     the registry or chromium is missing).
#   usage: test-view-spans.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
build=${1:?usage: test-view-spans.sh BUILD_DIR}
flamefs=$build/fs/flamefs
fill=$build/tests/spans-fill
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
e2e_setup spans
pids=
e2e_on_exit() {
	fusermount3 -u -z "$mnt" 2>/dev/null
	[ -n "$pids" ] && kill $pids 2>/dev/null
}

t0=1795000020 # a bucket start
T0=$((t0 * 1000000))
T=$'\t'
W=worker
# S BIN VER LABELS TIME_US PID TID WEIGHT SPAN STACK / R ... START DUR ID:PARENT CHAIN (spans-fill.c)
cat >"$tmp/in.txt" <<EOF
R${T}app${T}1${T}span=query-a|thread=$W${T}$T0${T}100${T}101${T}1000000${T}1:0${T}query-a
R${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 10000))${T}100${T}101${T}2000000${T}2:0${T}query-a
R${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 20000))${T}100${T}101${T}3000000${T}3:0${T}query-a
R${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 30000))${T}100${T}101${T}10000000${T}4:0${T}query-a
R${T}app${T}1${T}span=query-b|thread=$W${T}$((T0 + 31000))${T}100${T}101${T}1500001${T}5:4${T}query-a;query-b
R${T}app${T}1${T}span=query-b|thread=$W${T}$((T0 + 35000))${T}100${T}101${T}2500000${T}6:4${T}query-a;query-b;[unended]
R${T}app${T}1${T}span=query-c|thread=io${T}$((T0 + 100000000))${T}100${T}102${T}5000000${T}7:0${T}query-c
S${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 500))${T}100${T}101${T}1000000${T}1${T}main;a
S${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 10500))${T}100${T}101${T}1000000${T}2${T}main;a
S${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 20500))${T}100${T}101${T}1000000${T}3${T}main;a
S${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 21500))${T}100${T}101${T}1000000${T}3${T}main;a
S${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 30500))${T}100${T}101${T}1000000${T}4${T}main;a
S${T}app${T}1${T}span=query-a|thread=$W${T}$((T0 + 39000))${T}100${T}101${T}1000000${T}4${T}main;a
S${T}app${T}1${T}span=query-b|thread=$W${T}$((T0 + 31500))${T}100${T}101${T}1000000${T}5${T}main;b
S${T}app${T}1${T}span=query-b|thread=$W${T}$((T0 + 35500))${T}100${T}101${T}1000000${T}6${T}main;b
S${T}app${T}1${T}span=query-b|thread=$W${T}$((T0 + 36500))${T}100${T}101${T}1000000${T}6${T}main;b
S${T}app${T}1${T}thread=$W${T}$((T0 + 50000))${T}100${T}101${T}1000000${T}0${T}main;idle
S${T}app${T}1${T}span=query-c|thread=io${T}$((T0 + 100000500))${T}100${T}102${T}1000000${T}7${T}main;c
S${T}app${T}2${T}thread=$W${T}$T0${T}200${T}201${T}1000000${T}0${T}main;v2
EOF
# app 3: 100,005 spans of 1..100,005 µs, one a millisecond: past trace.json's
# bound of 100,000 (VIEW_TRACE_MAX_EVENTS), and percentiles of a large n
# (%.0f: mawk's %d stops at 2^31 - 1).
N=100005
awk -v n=$N -v t=$((T0 + 1000000)) 'BEGIN { for (i = 1; i <= n; i++)
	printf "R\tapp\t3\tspan=bulk\t%.0f\t300\t301\t%.0f\t%.0f:0\tbulk\n", t + i * 1000, i * 1000, i }' >>"$tmp/in.txt"
printf 'S\tapp\t3\tspan=bulk\t%s\t300\t301\t1000000\t1\tmain;bulk\n' $((T0 + 1000500)) >>"$tmp/in.txt"
"$fill" "$store" <"$tmp/in.txt" || bad "spans-fill"

mkdir -p "$mnt"
"$flamefs" -f "$store" "$mnt" 2>"$tmp/flamefs.err" &
pids=$!
for _ in $(seq 100); do [ -e "$mnt/app" ] && break; sleep 0.1; done
[ -e "$mnt/app" ] || { bad "mount: $(cat "$tmp/flamefs.err")"; finish; }

# ---- span records are no event -------------------------------------------------------------------
check "ls app = 1 2 3: the span records make no 1@spans" test "$(ls "$mnt/app" | tr '\n' ' ')" = "1 2 3 "
check "app/1/folded: the samples only, no span record" \
	test "$(cat "$mnt/app/1/folded")" = "$(printf 'app;main;a 6000000\napp;main;b 3000000\napp;main;c 1000000\napp;main;idle 1000000')"
check "the root's folded: samples of every version, no span name" \
	test "$(cat "$mnt/folded")" = "$(printf 'app;main;a 6000000\napp;main;b 3000000\napp;main;bulk 1000000\napp;main;c 1000000\napp;main;idle 1000000\napp;main;v2 1000000')"

# ---- @span ---------------------------------------------------------------------------------------
check "ls /@span: the span names, '-' for samples outside any span" \
	test "$(ls "$mnt/@span" | tr '\n' ' ')" = "- bulk query-a query-b query-c "
check "@span/query-a/app/1/folded: the samples inside query-a spans" \
	test "$(cat "$mnt/@span/query-a/app/1/folded")" = "app;main;a 6000000"
check "@span/query-b/app/1/folded: the samples inside query-b spans" \
	test "$(cat "$mnt/@span/query-b/app/1/folded")" = "app;main;b 3000000"
check "@span/-/folded: the samples outside any span" \
	test "$(cat "$mnt/@span/-/folded")" = "$(printf 'app;main;idle 1000000\napp;main;v2 1000000')"

# ---- spans ---------------------------------------------------------------------------------------
H="# count total_ms mean_ms p50_ms p99_ms max_ms unended detailed name"
A="4 16.000000 4.000000 2.000000 10.000000 10.000000 0 4 query-a"
B="2 4.000001 2.000000 1.500001 2.500000 2.500000 1 2 query-b"
C="1 5.000000 5.000000 5.000000 5.000000 5.000000 0 1 query-c"
check "app/1/spans: every span name of the version, exact" \
	test "$(cat "$mnt/app/1/spans")" = "$(printf '%s\n%s\n%s\n%s' "$H" "$A" "$B" "$C")"
check "@span/query-b/spans: query-b's line only" \
	test "$(cat "$mnt/@span/query-b/spans")" = "$(printf '%s\n%s' "$H" "$B")"
check "@span/query-a/app/1/spans: query-a's line only" \
	test "$(cat "$mnt/@span/query-a/app/1/spans")" = "$(printf '%s\n%s' "$H" "$A")"
check "the slowest span name is one sort away (sort -k6 -g)" \
	test "$(grep -v '^#' "$mnt/app/1/spans" | sort -k6 -g | tail -1 | awk '{print $NF}')" = query-a
# 1..N µs: total N(N+1)/2 µs, mean (N+1)/2 µs; nearest ranks ceil(N/2) = 50003
# and ceil(0.99 N) = 99005.
check "app/3/spans: 100,005 spans, percentiles by nearest rank" \
	test "$(cat "$mnt/app/3/spans")" = "$(printf '%s\n%s' "$H" "100005 5000550.015000 50.003000 50.003000 99.005000 100.005000 0 100005 bulk")"
check "app/3/trace.json: 100,000 spans written, 5 left out, and says so" \
	python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))
o = t['otherData']
x = [e for e in t['traceEvents'] if e['ph'] == 'X']
assert (o['spans'], o['spans_left_out'], o['events_max'], len(x)) == (100000, 5, 100000, 100000), o
assert (o['samples'], o['samples_left_out']) == (1, 0), o
assert x[-1]['args']['dur_ns'] == 100000 * 1000, x[-1]
assert x[-1]['ts'] == int(sys.argv[2]) + 1000000 + 100000 * 1000, x[-1]
" "$mnt/app/3/trace.json" $T0
check "app/2 (no spans) has no spans or trace.json" \
	test ! -e "$mnt/app/2/spans" -a ! -e "$mnt/app/2/trace.json"
check "ls app/1 lists spans and trace.json" \
	sh -c "ls '$mnt/app/1' | grep -qx spans && ls '$mnt/app/1' | grep -qx trace.json"

# ---- trace.json ----------------------------------------------------------------------------------
# trace_check FILE FIRST_US END_US: FILE is valid JSON whose X events are
# exactly the records of in.txt that started in [FIRST_US, END_US), with
# their durations exactly, whose P events are the samples of app/1 in it,
# whose threads are named and whose samples' stacks are in stackFrames.
trace_check() {
	python3 -m json.tool "$1" >/dev/null || { echo "not JSON: $1"; return 1; }
	python3 - "$1" "$tmp/in.txt" "$2" "$3" "${4:-1}" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
lo, hi, ver = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
want_x, want_p, pids = [], [], set()
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    if f[1] != "app" or ver not in ("all", f[2]) or not lo <= int(f[4]) < hi:
        continue
    if f[0] == "R":
        name = dict(kv.split("=") for kv in f[3].split("|"))["span"]
        sid, parent = f[8].split(":")
        want_x.append((name, int(f[4]), int(f[5]), int(f[6]), int(f[7]), int(sid), int(parent)))
    else:
        want_p.append((int(f[4]), int(f[6]), int(f[7]), int(f[8])))
        pids.add(int(f[5]))
ev = t["traceEvents"]
got_x = sorted((e["name"], e["ts"], e["pid"], e["tid"], e["args"]["dur_ns"], e["args"]["id"],
                e["args"]["parent"]) for e in ev if e["ph"] == "X")
assert got_x == sorted(want_x), (got_x, sorted(want_x))
for e in ev:
    if e["ph"] == "X":
        # dur is in microseconds with three decimals: exactly dur_ns / 1000.
        assert round(e["dur"] * 1000) == e["args"]["dur_ns"], e
        assert "%.3f" % e["dur"] == "%d.%03d" % divmod(e["args"]["dur_ns"], 1000), e
unended = [e for e in ev if e["ph"] == "X" and e["args"].get("unended")]
assert [e["args"]["dur_ns"] for e in unended] == [x[4] for x in want_x if x[4] == 2500000], unended
got_p = sorted((e["ts"], e["tid"], e["args"]["weight"], e["args"]["span"]) for e in ev if e["ph"] == "P")
assert got_p == sorted(want_p), (got_p, sorted(want_p))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
tids = {(e["pid"], e["tid"]) for e in ev if e["ph"] in "XP"}
want_names = {101: "worker", 102: "io", 201: "worker"}
assert names == {k: want_names[k[1]] for k in tids}, names
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert procs == {p: "app" for p in pids}, procs
frames = t["stackFrames"]
for e in ev:
    if e["ph"] == "P":
        stack, sf = [], e["sf"]
        while sf is not None:
            stack.append(frames[sf]["name"])
            sf = frames[sf].get("parent")
        assert stack[-1] == "main" and len(stack) == 2, stack
assert t["otherData"]["spans"] == len(want_x) and t["otherData"]["spans_left_out"] == 0
assert t["otherData"]["samples"] == len(want_p) and t["otherData"]["samples_left_out"] == 0
EOF
}
check "app/1/trace.json: every record, exact durations, thread names, stacks" \
	trace_check "$mnt/app/1/trace.json" 0 $((T0 * 2))
check "@range/T0/T0+1/app/1/trace.json: the records that started in the window" \
	trace_check "$mnt/@range/$t0/$((t0 + 1))/app/1/trace.json" $T0 $((T0 + 1000000))
check "@range/T0/T0+1/trace.json (the window's root): the same, and app 2's sample" \
	trace_check "$mnt/@range/$t0/$((t0 + 1))/trace.json" $T0 $((T0 + 1000000)) all
check "@range/T0/T0+1/app/1/trace.json holds 6 X events (query-c started later)" \
	test "$(grep -c '"ph":"X"' "$mnt/@range/$t0/$((t0 + 1))/app/1/trace.json")" = 6

# ---- a real viewer: speedscope in headless chromium -----------------------------------------------
cp "$mnt/app/1/trace.json" "$tmp/trace.json"
speedscope_check() {
	local ss=$tmp/ss/node_modules/speedscope/dist/release port dom
	mkdir -p "$tmp/web"
	cp -r "$ss"/. "$tmp/web/"
	# speedscope reports a failed import with alert(), which would hold the
	# headless page until its timeout: the page writes it into its title.
	sed -i 's|<head>|<head><script>window.alert = function (m) { document.title = "alert: " + m }</script>|' \
		"$tmp/web/index.html"
	cp "$1" "$tmp/web/trace.json"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	python3 -m http.server --bind 127.0.0.1 --directory "$tmp/web" "$port" >/dev/null 2>&1 &
	local web=$!
	for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/index.html')" 2>/dev/null && break; sleep 0.1; done
	dom=$(chrome --dump-dom --virtual-time-budget=20000 --window-size=1200,800 "http://127.0.0.1:$port/index.html#profileURL=/trace.json")
	kill $web 2>/dev/null
	wait $web 2>/dev/null
	echo "$dom" >"$1.dom.html"
	# The toolbar names the profile shown: speedscope's name of the first
	# thread's spans, and "1/2" of the two threads that have spans.
	grep -q 'app (pid 100), worker (tid 101)' <<<"$dom" && grep -q '1/2' <<<"$dom"
}
if ! command -v chromium >/dev/null || ! command -v npm >/dev/null; then
	skip "speedscope: npm or chromium missing"
elif ! (mkdir -p "$tmp/ss" && cd "$tmp/ss" && timeout 300 npm install --no-audit --no-fund --silent speedscope@1.25.0 >"$tmp/npm.log" 2>&1); then
	skip "speedscope: npm install failed: $(tail -1 "$tmp/npm.log")"
else
	check "speedscope in headless chromium imports trace.json: the threads of its spans" \
		speedscope_check "$tmp/trace.json"
	# The same check fails when the import fails: an X event without ts.
	sed '0,/"ph":"X","cat":"span","name":"query-a","ts":[0-9]*,/s//"ph":"X","cat":"span","name":"query-a",/' \
		"$tmp/trace.json" >"$tmp/broken.json"
	check "...and a trace.json speedscope cannot import fails the same check" \
		sh -c "! grep -q '\"ts\":$T0,' '$tmp/broken.json'"
	check "...(the broken one is refused: speedscope alerts)" \
		eval '! speedscope_check "$tmp/broken.json" && grep -q "<title>alert: " "$tmp/broken.json.dom.html"'
fi
finish

#!/usr/bin/env bash
# test-concurrent.sh — the view while a writer commits: 16 reader
# processes walk the mounted tree for 30 s while `flamefs-collect import`
# adds the same small profile again and again.
#
# What a reader sees.  Each open() of a view file is one snapshot of one
# store generation (fs/README.md); two opens can see two generations.  So
# the checks are:
#   - every single read is exact: the store only ever holds the earlier
#     data plus k whole imports, so every total, self, Σ folded and Σ pprof
#     weight read anywhere must be base + k × increment of that directory
#     for a whole k between 0 and the imports started so far (a partial
#     import, a torn file or a stale short read fails this), and a reader
#     never sees k go down for the same file (no older generation served
#     after a newer one);
#   - the invariants total = self + Σ children's total = Σ folded counts =
#     Σ pprof weight hold on one consistent snapshot of each directory:
#     the listing and all those files are read twice in a row, and a read
#     that gives the same bytes twice is the state of one generation
#     (counts only grow, so equal values at both ends mean no change in
#     between); a directory that changed in between is read again;
#   - no read fails: data is only added, so no path a reader listed may
#     vanish (ENOENT) or fail (EIO);
#   - new data shows within 2 s: after each import exits, the root total
#     is polled until it includes it; the worst latency must stay <= 2 s.
# It prints the numbers of reads and checks done and the latencies.
#   usage: tests/test-concurrent.sh BUILD_DIR [SECONDS]   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-concurrent.sh BUILD_DIR [SECONDS]}
seconds=${2:-${FLAMEFS_CONCURRENT_SECONDS:-30}}
readers=${FLAMEFS_CONCURRENT_READERS:-16}
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
. "$(dirname "$0")/lib-e2e.sh"

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi

e2e_setup concurrent
mkdir -p "$mnt" "$tmp/out"
pid=
rpids=()
e2e_on_exit() {
	for p in "${rpids[@]}"; do kill "$p" 2>/dev/null; done
	fusermount3 -u -z "$mnt" 2>/dev/null
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
}

# ---- data: the earlier profile and the one imported again and again --------------
# Plain names, so a directory's path is its frames.  The increment shares
# some stacks with the base and adds its own (new directories appear).
awk 'BEGIN { srand(11); for (i = 0; i < 120; i++) {
	s = "app;main"; d = 1 + int(rand() * 5)
	for (j = 0; j < d; j++) s = s ";f" int(rand() * 5)
	c[s] += 1 + int(rand() * 9) }
	for (s in c) print s, c[s] }' | sort >"$tmp/base.folded"
awk 'BEGIN { srand(12); for (i = 0; i < 40; i++) {
	s = "app;main"; d = 1 + int(rand() * 5)
	for (j = 0; j < d; j++) s = s ";" (rand() < 0.7 ? "f" : "g") int(rand() * 5)
	c[s] += 1 + int(rand() * 9) }
	for (s in c) print s, c[s] }' | sort >"$tmp/inc.folded"
"$collect" import --store "$store" --format folded --time 1700000000 "$tmp/base.folded" \
	>/dev/null 2>"$tmp/import.err" || { bad "base import: $(cat "$tmp/import.err")"; exit 1; }

"$flamefs" -f "$store" "$mnt" 2>"$tmp/daemon.err" &
pid=$!
for _ in $(seq 100); do
	mountpoint -q "$mnt" && break
	sleep 0.1
done
mountpoint -q "$mnt" || { bad "flamefs did not mount: $(cat "$tmp/daemon.err")"; exit 1; }
v=$mnt/app/default
base_total=$(awk '{ s += $NF } END { print s }' "$tmp/base.folded")
inc_total=$(awk '{ s += $NF } END { print s }' "$tmp/inc.folded")
echo 0 >"$tmp/started"

# ---- the readers --------------------------------------------------------------------
cat >"$tmp/reader.py" <<'EOF'
import gzip, os, sys, time

mnt, base_f, inc_f, started_f, end_s, out_f = sys.argv[1:7]
end = float(end_s)
root = os.path.join(mnt, "app", "default")
FILES = ["callgrind", "flame.svg", "folded", "heatmap.svg", "name", "pprof", "self", "timeline", "timeline.svg", "top", "total"]

def load(path):
    tot, slf = {}, {}
    for line in open(path):
        stack, n = line.rsplit(" ", 1)
        frames = tuple(stack.split(";")[1:])
        n = int(n)
        slf[frames] = slf.get(frames, 0) + n
        for i in range(1, len(frames) + 1):
            tot[frames[:i]] = tot.get(frames[:i], 0) + n
    tot[()] = sum(tot[k] for k in tot if len(k) == 1)
    return tot, slf

btot, bself = load(base_f)
itot, iself = load(inc_f)
reads = checks = snaps = retries = 0
errors = []
last_k = {}

def fail(msg):
    errors.append(msg)
    if len(errors) > 20:
        finish()

def finish():
    with open(out_f, "w") as f:
        f.write("%d %d %d %d %d\n" % (reads, checks, snaps, retries, len(errors)))
        for e in errors[:20]:
            f.write(e + "\n")
    sys.exit(0)

def started():
    with open(started_f) as f:
        return int(f.read())

def exact(frames, what, v, b, i, read=None):
    """v must be b + k*i for a whole k in [0, started]; k must not go down.
    read: (path, bytes read), to tell in a failure an empty read (a size the
    kernel held) from a file without the samples."""
    global checks
    def why():  # only on a failure: a stat is a request of its own
        if not read:
            return ""
        try:
            return " (read %d bytes; stat now says %d)" % (read[1], os.stat(read[0]).st_size)
        except OSError as e:
            return " (read %d bytes; stat now: %s)" % (read[1], e)
    checks += 1
    if i == 0:
        k = 0
        if v != b:
            fail("%s of /%s is %d, expected %d%s" % (what, "/".join(frames), v, b, why()))
            return
    else:
        k, rem = divmod(v - b, i)
        hi = started()
        if v < b or rem or k > hi:
            fail("%s of /%s is %d: not %d + k x %d for a whole k <= %d (a partial import?)%s"
                 % (what, "/".join(frames), v, b, i, hi, why()))
            return
    key = (frames, what)
    if k < last_k.get(key, 0):
        fail("%s of /%s went back from %d imports to %d%s" % (what, "/".join(frames), last_k[key], k, why()))
    last_k[key] = max(k, last_k.get(key, 0))

def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i

def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, t = key >> 3, key & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif t == 1:
            v, i = b[i:i + 8], i + 8
        elif t == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("bad wire type")
        yield f, t, v

def pprof_weight(data):
    """Σ of each sample's last value (the weight) of a gzipped profile.proto."""
    total = 0
    for f, t, v in fields(gzip.decompress(data)):
        if f != 2:
            continue
        vals = []
        for f2, t2, v2 in fields(v):
            if f2 == 2 and t2 == 2:
                j = 0
                while j < len(v2):
                    x, j = varint(v2, j)
                    vals.append(x)
            elif f2 == 2:
                vals.append(v2)
        total += vals[-1]
    return total

def rd(path):
    global reads
    reads += 1
    with open(path, "rb") as f:
        return f.read()

def snapshot(d, frames):
    """One read of everything a directory's invariants need, each read checked."""
    global reads
    names = sorted(os.listdir(d))
    reads += 1
    kids = [n for n in names if n not in FILES and n not in ("quality", "about")]  # version roots only
    b_t, i_t = btot.get(frames, 0), itot.get(frames, 0)
    self_ = int(rd(d + "/self"))
    exact(frames, "self", self_, bself.get(frames, 0), iself.get(frames, 0))
    total = int(rd(d + "/total"))
    exact(frames, "total", total, b_t, i_t)
    folded = rd(d + "/folded")
    lines = folded.split(b"\n")
    if lines[-1] != b"":
        fail("folded of /%s does not end in a newline" % "/".join(frames))
    lines = lines[:-1]
    fsum = sum(int(l.rsplit(b" ", 1)[1]) for l in lines)
    exact(frames, "folded", fsum, b_t, i_t)
    if lines != sorted(lines):
        fail("folded of /%s is not sorted" % "/".join(frames))
    pdata = rd(d + "/pprof")
    pw = pprof_weight(pdata)
    exact(frames, "pprof", pw, b_t, i_t, (d + "/pprof", len(pdata)))
    name = rd(d + "/name")
    want = (frames[-1] if frames else "app") + "\n"
    if name != want.encode():
        fail("name of /%s is %r" % ("/".join(frames), name))
    ktot = {k: int(rd(os.path.join(d, k, "total"))) for k in kids}
    for k in kids:
        exact(frames + (k,), "total", ktot[k], btot.get(frames + (k,), 0), itot.get(frames + (k,), 0))
    return names, self_, total, fsum, pw, ktot

def check_dir(d, frames):
    global checks, snaps, retries
    for attempt in range(100):
        a = snapshot(d, frames)
        b = snapshot(d, frames)
        if a == b:
            break
        retries += 1
    else:
        fail("/%s changed between every two reads of it" % "/".join(frames))
        return []
    snaps += 1
    names, self_, total, fsum, pw, ktot = a
    checks += 4
    missing = set(FILES) - set(names)
    if missing:
        fail("/%s lacks %s" % ("/".join(frames), sorted(missing)))
    if total != self_ + sum(ktot.values()):
        fail("/%s: total %d != self %d + children %d" % ("/".join(frames), total, self_, sum(ktot.values())))
    if fsum != total:
        fail("/%s: sum(folded) %d != total %d" % ("/".join(frames), fsum, total))
    if pw != total:
        fail("/%s: pprof weight %d != total %d" % ("/".join(frames), pw, total))
    return sorted(ktot)

try:
    while time.time() < end:
        # The root and the binary directory, then the call tree, depth first.
        reads += 2
        if "app" not in os.listdir(mnt) or "default" not in os.listdir(os.path.join(mnt, "app")):
            fail("/app/default is not listed")
        todo = [((), root)]
        while todo and time.time() < end:
            frames, d = todo.pop()
            for k in reversed(check_dir(d, frames)):
                todo.append((frames + (k,), os.path.join(d, k)))
except OSError as e:
    fail("read error: %s" % e)
except Exception as e:
    import traceback
    fail("reader error: %r at %s" % (e, traceback.format_exc().strip().splitlines()[-3].strip()))
finish()
EOF

start=$(date +%s.%N)
end=$(awk -v s="$start" -v n="$seconds" 'BEGIN { printf "%.3f", s + n }')
# The readers run at a lower priority: the machine has two cores, and the
# latency measured must be the view's (refresh once a second), not the
# scheduler's with 16 busy readers in front of the importer.
for i in $(seq "$readers"); do
	nice -n 10 python3 "$tmp/reader.py" "$mnt" "$tmp/base.folded" "$tmp/inc.folded" "$tmp/started" \
		"$end" "$tmp/out/r$i" &
	rpids+=($!)
done
# `find` and `cat` of every file, as a user would.
(
	n=0 e=0
	while [ "$(date +%s)" -lt "${end%.*}" ]; do
		while IFS= read -r -d '' f; do
			n=$((n + 1))
			cat "$f" >/dev/null 2>>"$tmp/find.err" || e=$((e + 1))
		done < <(find "$mnt" -type f -print0 2>>"$tmp/find.err")
	done
	echo "$n $e" >"$tmp/out/find"
) &
rpids+=($!)

# ---- the writer: import, then time until the view shows it ---------------------------
k=0
max_ms=0
lats=()
now_ns() { date +%s%N; }
while [ "$(date +%s)" -lt "${end%.*}" ]; do
	k=$((k + 1))
	echo "$k" >"$tmp/started.new" # replaced whole: readers never see it empty
	mv "$tmp/started.new" "$tmp/started"
	if ! "$collect" import --store "$store" --format folded --time $((1700000000 + 60 * (k % 5))) \
		"$tmp/inc.folded" >/dev/null 2>"$tmp/import.err"; then
		bad "import $k failed: $(cat "$tmp/import.err")"
		break
	fi
	done_ns=$(now_ns)
	want=$((base_total + k * inc_total))
	seen=
	while [ $(($(now_ns) - done_ns)) -lt 10000000000 ]; do
		t=
		read -r t <"$v/total" 2>/dev/null
		if [ "$t" = "$want" ]; then
			seen=$(now_ns)
			break
		fi
		sleep 0.02
	done
	if [ -z "$seen" ]; then
		bad "import $k did not show in 10 s (total $t, want $want)"
		break
	fi
	ms=$(((seen - done_ns) / 1000000))
	lats+=("$ms")
	[ "$ms" -gt "$max_ms" ] && max_ms=$ms
done
for p in "${rpids[@]}"; do wait "$p"; done
rpids=()

# ---- results ---------------------------------------------------------------------------
reads=0 checks=0 snaps=0 retries=0 errs=0
for i in $(seq "$readers"); do
	f=$tmp/out/r$i
	if [ ! -s "$f" ]; then
		bad "reader $i left no result"
		continue
	fi
	read -r r c s t e <"$f"
	reads=$((reads + r)) checks=$((checks + c)) snaps=$((snaps + s)) retries=$((retries + t))
	if [ "$e" != 0 ]; then
		errs=$((errs + e))
		sed -n '2,6p' "$f" | sed "s/^/  reader $i: /"
	fi
done
read -r fn fe <"$tmp/out/find" 2>/dev/null || { fn=0; fe=1; }
echo "# $k imports in ${seconds} s; $readers readers: $reads reads, $checks checks, $snaps consistent" \
	"directory snapshots ($retries directories read again because they changed in between)"
echo "# find + cat: $fn files read, $fe errors"
echo "# latency from the end of an import to the view showing it (ms): ${lats[*]}"
echo "# max latency: $max_ms ms"
[ "$errs" = 0 ] && [ "$reads" -gt 0 ] && ok "$readers readers: $reads reads and $checks checks, no error, no partial or inconsistent state" ||
	bad "readers: $errs errors"
[ "$fe" = 0 ] && [ "$fn" -gt 0 ] && ok "find + cat of every file: $fn reads, no error" ||
	bad "find + cat: $fe errors: $(head -3 "$tmp/find.err")"
[ "$k" -ge 5 ] && ok "$k imports committed while reading" || bad "only $k imports in $seconds s"
[ "$max_ms" -le 2000 ] && ok "every import showed within 2 s (max $max_ms ms)" ||
	bad "an import took $max_ms ms to show (limit 2000 ms)"
final=$(cat "$v/total")
[ "$final" = "$((base_total + k * inc_total))" ] && ok "final total is base + $k imports" ||
	bad "final total $final, want $((base_total + k * inc_total))"

fusermount3 -u "$mnt"
wait "$pid"
check_rc=$?
pid=
[ "$check_rc" = 0 ] && ok "daemon exited 0 after unmount" || bad "daemon exit status $check_rc"

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all concurrency checks passed"
exit 0

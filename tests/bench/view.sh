#!/usr/bin/env bash
# View benchmark.  Prints numbers as markdown tables; asserts nothing.
#   usage: sudo bash tests/bench/view.sh
# Environment: BENCH_DIR (work directory, default a new /var/tmp dir),
#   VIEW_UNIQUE / VIEW_SAMPLES (generated profile, default 100000 /
#   1200000), VIEW_BIG_UNIQUE / VIEW_BIG_SAMPLES (the larger one, default
#   250000 / 1500000), VIEW_RECORD_SECS (real recording length, default 20),
#   VIEW_REAL_PERF (a `perf script` file to import as the real store instead
#   of recording one), VIEW_ONLY=walks (the real store's walks against tmpfs
#   only: its import, then the first rows of "Walks against the same tree on
#   tmpfs"; with VIEW_REAL_PERF, a few minutes instead of tens).
#
# Three stores are built and mounted with `flamefs -f STORE MNT`:
#   gen:  a generated folded profile (tests/bench/gen-folded.c): >= 100k
#         unique stacks grown from shared prefixes, >= 1M samples, ~450k
#         call-tree nodes under one version directory;
#   big:  the same generator with ~1.1M call-tree nodes.  Everything but the
#         `find` (which costs ~6 FUSE round trips per entry, i.e. tens of
#         minutes here); its deepest directories come from the input and RSS
#         is read after the other measurements;
#   real: a `perf record -e cpu-clock -F 999 -a -g` recording of a compile
#         workload, `perf script`, imported; the view measured is cc1 (the
#         compiler), or the binary with the most samples if cc1 is missing.
# For each: first `ls` of the version directory on a fresh mount (page
# cache dropped), median open+read and median `cat` process time of
# `self`/`total` in the deepest directories, generation rate of the
# version's `folded`, cached `cat folded` against `cat` of a regular file
# with the same bytes, `find MNT` over the whole tree, and the daemon's
# RSS after the find.
#
# Walks against tmpfs (issue #15): the same tree copied to a tmpfs mounted
# for the run, timed in the same run.  real: `cp -r` of the whole view
# (every file's bytes), then `find` and `grep -r ';main;'` on the mount
# (fresh mount, page cache dropped: the first walk; then a second walk)
# and on the copy (median of 3).  gen: its 2.7M entries with the same
# names and types but empty files (find reads no file), `find` only; the
# 147 s of the high-level daemon is the old figure.  deep: a 600-frame
# stack; a `stat` 500 directories down, on a fresh mount (500 lookups)
# and then the median of 200.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
bench_setup view --root fs/flamefs flamefs-collect tests/gen-folded
mnt="$work/mnt"
mkdir -p "$mnt"
unique=${VIEW_UNIQUE:-100000}
nsamples=${VIEW_SAMPLES:-1200000}
big_unique=${VIEW_BIG_UNIQUE:-250000}
big_samples=${VIEW_BIG_SAMPLES:-1500000}
rec_secs=${VIEW_RECORD_SECS:-20}
only=${VIEW_ONLY:-}

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
trap 'unmount; bench_cleanup' EXIT
trap 'exit 130' INT TERM

mount_store() { # store
	unmount
	sync
	echo 3 > /proc/sys/vm/drop_caches
	"$flamefs" -f "$1" "$mnt" 2>>"$work/flamefs.err" &
	fs_pid=$!
	local i
	for i in $(seq 200); do
		mountpoint -q "$mnt" && return 0
		kill -0 "$fs_pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "flamefs did not mount $1 (see $work/flamefs.err)" >&2
	return 1
}

# Timing helper: wall clock with time.perf_counter(), medians in Python.
cat > "$work/timing.py" <<'EOF'
import os, statistics, subprocess, sys, time

def run_wall(argv, out=subprocess.DEVNULL):
    t = time.perf_counter()
    subprocess.run(argv, stdout=out, check=True)
    return time.perf_counter() - t

cmd = sys.argv[1]
if cmd == "wall":            # wall ARGV... -> seconds
    print("%.4f" % run_wall(sys.argv[2:]))
elif cmd == "reads":         # reads N FILE... -> median ms of open().read()
    n, files = int(sys.argv[2]), sys.argv[3:]
    ts = []
    for i in range(n):
        f = files[i % len(files)]
        t = time.perf_counter()
        with open(f, "rb") as fh:
            fh.read()
        ts.append(time.perf_counter() - t)
    print("%.3f %.3f" % (statistics.median(ts) * 1e3, max(ts) * 1e3))
elif cmd == "procs":         # procs N FILE... -> median ms of `cat FILE` processes
    n, files = int(sys.argv[2]), sys.argv[3:]
    ts = [run_wall(["cat", files[i % len(files)]]) for i in range(n)]
    print("%.3f" % (statistics.median(ts) * 1e3))
elif cmd == "statdeep":      # statdeep N PATH -> ms of the first os.stat, median ms of N more
    p = sys.argv[3]
    t = time.perf_counter(); os.stat(p); first = time.perf_counter() - t
    ts = []
    for _ in range(int(sys.argv[2])):
        t = time.perf_counter(); os.stat(p); ts.append(time.perf_counter() - t)
    print("%.3f %.4f" % (first * 1e3, statistics.median(ts) * 1e3))
elif cmd == "wallmed":       # wallmed N ARGV... -> median seconds
    n = int(sys.argv[2])
    print("%.4f" % statistics.median(run_wall(sys.argv[3:]) for _ in range(n)))
elif cmd == "skeleton":      # skeleton LIST SRC DST: `find -printf '%y %p'` lines -> dirs and empty files
    src, dst = sys.argv[3], sys.argv[4]
    with open(sys.argv[2], "rb") as f:
        for line in f:
            y, p = line[0:1], line[2:-1]
            q = dst.encode() + p[len(src.encode()):]
            if y == b"d":
                os.makedirs(q, exist_ok=True)
            else:
                open(q, "wb").close()
elif cmd == "catmed":        # catmed N FILE -> median seconds of `cat FILE >/dev/null`
    n, f = int(sys.argv[2]), sys.argv[3]
    print("%.4f" % statistics.median(run_wall(["cat", f]) for _ in range(n)))
EOF
py() { python3 "$work/timing.py" "$@"; }
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", (s > 0 ? b / s / 1e6 : 0) }'; }
ok() { # value op target -> "yes"/"**no**"
	awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { r = (op == "<=") ? v <= t : v >= t; print (r ? "yes" : "**no**") }'
}

echo "# flamefs view benchmark"
echo "machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME")"
echo "build: $build (release), commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$top" diff --quiet 2>/dev/null || echo ' + uncommitted changes')"
echo "work dir: $work"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other processes share the machine; numbers are wall clock)"

# ---- inputs ---------------------------------------------------------------
declare -A R
keys=(gen big real)
if [ "$only" = walks ]; then
	keys=(real)
else
	"$build/tests/gen-folded" "$unique" "$nsamples" genapp > "$work/gen.folded"
	"$build/tests/gen-folded" "$big_unique" "$big_samples" genapp 7 > "$work/big.folded"
fi
if [ -n "${VIEW_REAL_PERF:-}" ]; then
	cp "$VIEW_REAL_PERF" "$work/real.perf"
else
	record_workload "$rec_secs" "$work/real.perf"
fi

tmpfs=$work/tmpfs
mkdir -p "$tmpfs"
mountpoint -q "$tmpfs" || mount -t tmpfs -o size=75%,nr_inodes=0 flamefs-bench "$tmpfs"
trap 'unmount; umount "$tmpfs" 2>/dev/null || true; bench_cleanup' EXIT
{
	printf 'deepapp'
	for i in $(seq 600); do printf ';f%d' "$i"; done
	echo " 1"
	for i in $(seq 1000); do printf 'deepapp;f1;g%d 1\n' "$i"; done
} > "$work/deep.folded"
rm -rf "$work/s-deep"
"$fc" import --store "$work/s-deep" "$work/deep.folded" 2>/dev/null
for k in "${keys[@]}"; do
	rm -rf "$work/s-$k"
	in="$work/$k.folded"; [ $k = real ] && in="$work/real.perf"
	t0=$(date +%s.%N)
	"$fc" import --store "$work/s-$k" "$in" 2>/dev/null
	t1=$(date +%s.%N)
	R[$k.import]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
done

# The real store's view: cc1 if present, else its binary with the most
# samples (a plain name, so its directory name needs no escaping).
real_bin=$("$fc" stats --store "$work/s-real" |
	awk 'NR > 1 && NF >= 8 && $4 ~ /^[0-9]+$/ && $1 ~ /^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*$/ { print ($1 == "cc1" ? 1e18 : $4), $1, $2 }' |
	sort -k1,1gr | head -1)
read -r _ real_name real_ver <<< "$real_bin"
declare -A VIEW=([gen]=genapp/default [big]=genapp/default [real]="$real_name/$real_ver")

echo
echo "## Inputs"
echo "| store | input | input bytes | input lines/samples | import | series | stack nodes in store | view measured |"
echo "|---|---|---|---|---|---|---|---|"
for k in "${keys[@]}"; do
	if [ $k = real ]; then
		in="$work/real.perf"
		n="$(grep -c '^[^[:space:]#]' "$in") samples (all processes)"
	else
		in="$work/$k.folded"
		n="$(wc -l < "$in") lines, $(awk '{ s += $NF } END { print s }' "$in") samples"
	fi
	st=$("$fc" stats --store "$work/s-$k")
	printf '| %s | %s | %d | %s | %s s | %s | %s | /%s |\n' "$k" "$(basename "$in")" "$(stat -c %s "$in")" "$n" \
		"${R[$k.import]}" "$(grep -oE '^[0-9]+ series' <<< "$st" | cut -d' ' -f1)" \
		"$(grep -oE '[0-9]+ stack nodes' <<< "$st" | cut -d' ' -f1)" "${VIEW[$k]}"
done

# ---- measurements ---------------------------------------------------------
status_kb() { awk -v f="$1:" '$1 == f { print $2 }' /proc/$fs_pid/status; }
if [ "$only" != walks ]; then

bench() { # key store view do_find
	local k=$1 store=$2 v="$mnt/$3" list="$work/find-$1.txt" t0 t1
	local -a deep selfs totals

	# Fresh mount, page cache dropped: first ls of the version directory.
	mount_store "$store"
	R[$k.rss0]=$(status_kb VmRSS)
	R[$k.ls1]=$(py wall ls "$v")
	R[$k.ls2]=$(py wall ls "$v")

	if [ "$4" = 1 ]; then
		# The whole tree, then the 20 deepest directories from it.
		t0=$(date +%s.%N); find "$mnt" > "$list"; t1=$(date +%s.%N)
		R[$k.find]="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
		R[$k.entries]=$(wc -l < "$list")
		R[$k.nodes]=$(grep -c '/self$' "$list" || true)
		R[$k.dirs]=$((R[$k.nodes] + $(awk -v p="$mnt/" 'index($0, p) == 1 && index(substr($0, length(p) + 1), "/") == 0' "$list" | wc -l) + 1))
		R[$k.rss]=$(status_kb VmRSS); R[$k.hwm]=$(status_kb VmHWM)
		mapfile -t deep < <(sed -n 's|/self$||p' "$list" |
			awk -F/ '{ print NF "\t" $0 }' | sort -k1,1nr -s | head -20 | cut -f2-)
	else
		# Generated names need no escaping: the deepest input stacks
		# are the deepest directories.
		R[$k.find]="-"; R[$k.entries]="-"; R[$k.dirs]="-"
		R[$k.nodes]=$(grep -oE '[0-9]+ stack nodes' <<< "$("$fc" stats --store "$store")" | cut -d' ' -f1)
		mapfile -t deep < <(awk -F';' '{ print NF "\t" $0 }' "$work/$k.folded" | sort -k1,1nr -s | head -20 |
			cut -f2- | sed 's/ [0-9]*$//; s/^[^;]*;//; s|;|/|g' | sed "s|^|$v/|")
	fi
	R[$k.depth]=$(( $(awk -F/ '{ print NF }' <<< "${deep[0]}") - $(awk -F/ '{ print NF }' <<< "$v") ))
	selfs=("${deep[@]/%//self}"); totals=("${deep[@]/%//total}")
	read -r R[$k.self_r] R[$k.self_rmax] < <(py reads 200 "${selfs[@]}")
	read -r R[$k.total_r] R[$k.total_rmax] < <(py reads 200 "${totals[@]}")
	R[$k.self_p]=$(py procs 200 "${selfs[@]}")
	R[$k.total_p]=$(py procs 200 "${totals[@]}")
	cp "${selfs[0]}" "$work/plain-self"
	R[$k.plain_p]=$(py procs 200 "$work/plain-self")

	# folded of the version root, tree already built: render rate.
	R[$k.fbytes]=$(stat -c %s "$v/folded")
	R[$k.frender]=$(py wall cat "$v/folded")
	# Cached (second and later) reads against a regular file with the
	# same bytes, both warm.
	cp "$v/folded" "/tmp/flamefs-viewbench-folded.$$"
	cat "/tmp/flamefs-viewbench-folded.$$" > /dev/null
	R[$k.fcat]=$(py catmed 5 "$v/folded")
	R[$k.plain]=$(py catmed 5 "/tmp/flamefs-viewbench-folded.$$")
	rm -f "/tmp/flamefs-viewbench-folded.$$"
	if [ "$4" != 1 ]; then
		R[$k.rss]=$(status_kb VmRSS); R[$k.hwm]=$(status_kb VmHWM)
	fi

	# Fresh mount, page cache dropped: the first read of folded builds the
	# tree and renders it.
	mount_store "$store"
	R[$k.fcold]=$(py wall cat "$v/folded")
	unmount
}
bench gen "$work/s-gen" "${VIEW[gen]}" 1
bench big "$work/s-big" "${VIEW[big]}" 0
bench real "$work/s-real" "${VIEW[real]}" 1
fi

# ---- walks against the same tree on tmpfs (issue #15) -----------------------
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
timed() { # timed CMD... -> seconds (any exit status)
	local t0 t1
	t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s.%N)
	secs "$t0" "$t1"
}
med3() { # med3 CMD... -> median seconds of 3 runs
	local a b c
	a=$(timed "$@"); b=$(timed "$@"); c=$(timed "$@")
	printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -g | sed -n 2p
}
grep_tree() { grep -r ';main;' "$1"; }

# real: the whole view, every byte, copied through the mount.
rm -rf "$tmpfs/real"
mount_store "$work/s-real"
cp -r "$mnt" "$tmpfs/real"
R[w.real.entries]=$(find "$mnt" | wc -l)
R[w.real.bytes]=$(du -sb "$tmpfs/real" | cut -f1)
mount_store "$work/s-real"
R[w.real.find1]=$(timed find "$mnt")
R[w.real.find2]=$(med3 find "$mnt")
mount_store "$work/s-real"
R[w.real.grep1]=$(timed grep_tree "$mnt")
R[w.real.grep2]=$(med3 grep_tree "$mnt")
R[w.real.rss]=$(status_kb VmRSS); R[w.real.hwm]=$(status_kb VmHWM)
unmount
R[w.real.findc]=$(med3 find "$tmpfs/real")
R[w.real.grepc]=$(med3 grep_tree "$tmpfs/real")
rm -rf "$tmpfs/real"

if [ "$only" != walks ]; then
# gen: 2.7M entries; the copy has the names and types, files empty.
mount_store "$work/s-gen"
t0=$(date +%s.%N); find "$mnt" -printf '%y %p\n' > "$work/typed-gen.txt"; t1=$(date +%s.%N)
R[w.gen.find1]=$(secs "$t0" "$t1")
R[w.gen.find2]=$(med3 find "$mnt")
R[w.gen.rss]=$(status_kb VmRSS); R[w.gen.hwm]=$(status_kb VmHWM)
R[w.gen.entries]=$(wc -l < "$work/typed-gen.txt")
unmount
rm -rf "$tmpfs/gen"
py skeleton "$work/typed-gen.txt" "$mnt" "$tmpfs/gen"
R[w.gen.findc]=$(med3 find "$tmpfs/gen")
rm -rf "$tmpfs/gen" "$work/typed-gen.txt"

# deep: a stat 500 directories down.
mount_store "$work/s-deep"
dp="$mnt/deepapp/default"
for i in $(seq 500); do dp="$dp/f$i"; done
read -r R[w.deep.first] R[w.deep.med] < <(py statdeep 200 "$dp")
unmount
fi

# ---- tables ---------------------------------------------------------------
f3() { awk -v x="$1" 'BEGIN { printf "%.3f", x }'; }
ms() { awk -v x="$1" 'BEGIN { printf "%.1f ms", x * 1000 }'; }
mb() { awk -v x="$1" -v d="$2" 'BEGIN { printf "%.1f MB", x / d }'; }
if [ "$only" != walks ]; then
for k in "${keys[@]}"; do
	R[$k.gen_cold]=$(mbps "${R[$k.fbytes]}" "${R[$k.fcold]}")
	R[$k.gen_warm]=$(mbps "${R[$k.fbytes]}" "${R[$k.frender]}")
	R[$k.ratio]=$(awk -v a="${R[$k.fcat]}" -v b="${R[$k.plain]}" 'BEGIN { printf "%.1f", a / b }')
	# (VmHWM - VmRSS right after mounting) / call-tree nodes, and the
	# VmHWM that gives for 1M nodes.
	R[$k.pernode]=$(awk -v k="${R[$k.hwm]}" -v k0="${R[$k.rss0]}" -v n="${R[$k.nodes]}" 'BEGIN { printf "%.0f", (k - k0) * 1024 / n }')
	R[$k.per1m]=$(awk -v b="${R[$k.pernode]}" -v k0="${R[$k.rss0]}" 'BEGIN { printf "%.0f", (k0 * 1024 + b * 1e6) / 1048576 }')
done

echo
echo "## Results"
echo "| measurement | target | gen | big | real |"
echo "|---|---|---|---|---|"
# row LABEL TARGET FORMAT-FUNCTION [OP LIMIT VALUE-KEY]
row() {
	local label=$1 target=$2 fmt=$3 out k
	out="| $label | $target |"
	for k in "${keys[@]}"; do
		local cell; cell=$($fmt "$k")
		if [ $# -gt 3 ]; then
			cell="$cell ($(ok "${R[$k.$6]}" "$4" "$5"))"
		fi
		out="$out $cell |"
	done
	echo "$out"
}
c_ls1() { echo "$(f3 "${R[$1.ls1]}") s"; }
c_ls2() { echo "$(f3 "${R[$1.ls2]}") s"; }
c_depth() { echo "${R[$1.depth]}"; }
c_self_r() { echo "${R[$1.self_r]} ms (max ${R[$1.self_rmax]})"; }
c_total_r() { echo "${R[$1.total_r]} ms (max ${R[$1.total_rmax]})"; }
c_self_p() { echo "${R[$1.self_p]} ms"; }
c_total_p() { echo "${R[$1.total_p]} ms"; }
c_plain_p() { echo "${R[$1.plain_p]} ms"; }
c_fbytes() { mb "${R[$1.fbytes]}" 1e6; }
c_gen_cold() { echo "${R[$1.gen_cold]} MB/s in $(f3 "${R[$1.fcold]}") s"; }
c_gen_warm() { echo "${R[$1.gen_warm]} MB/s in $(f3 "${R[$1.frender]}") s"; }
c_ratio() { echo "${R[$1.ratio]}x: $(ms "${R[$1.fcat]}") vs $(ms "${R[$1.plain]}")"; }
c_find() { echo "${R[$1.find]}"; }
c_entries() { echo "${R[$1.entries]}"; }
c_dirs() {
	if [ "${R[$1.dirs]}" = - ]; then echo "${R[$1.nodes]} stack nodes in the store"
	else echo "${R[$1.dirs]} dirs, ${R[$1.nodes]} call-tree nodes"; fi
}
c_rss0() { mb "${R[$1.rss0]}" 1024; }
c_rss() { echo "$(mb "${R[$1.rss]}" 1024) / $(mb "${R[$1.hwm]}" 1024)"; }
c_pernode() { echo "${R[$1.pernode]} B"; }
c_per1m() { echo "${R[$1.per1m]} MB"; }
row "first \`ls\` of the version dir (fresh mount, page cache dropped)" "<= 0.5 s" c_ls1 "<=" 0.5 ls1
row "second \`ls\` of the version dir" "" c_ls2
row "depth of the deepest dirs below the version dir" "" c_depth
row "\`self\`: median open()+read() in python, 200 reads over the 20 deepest dirs" "<= 1 ms" c_self_r "<=" 1 self_r
row "\`total\`: the same" "<= 1 ms" c_total_r "<=" 1 total_r
row "\`cat self\`: median wall time of the process, 200 runs" "" c_self_p
row "\`cat total\`: the same" "" c_total_p
row "\`cat\` of a regular file with the same bytes (process baseline)" "" c_plain_p
row "\`folded\` of the version dir: size" "" c_fbytes
row "\`folded\` generation, first read on a fresh mount (tree build + render)" ">= 200 MB/s" c_gen_cold ">=" 200 gen_cold
row "\`folded\` generation, first read once the tree is built (render only)" ">= 200 MB/s" c_gen_warm ">=" 200 gen_warm
row "cached \`cat folded\` / \`cat\` of a regular copy (both warm, median of 5)" "<= 3x" c_ratio "<=" 3 ratio
row "\`find MNT\` over the whole tree: time" "" c_find
row "\`find MNT \\| wc -l\`" "" c_entries
row "tree size (dirs: call-tree nodes + binaries + root)" "" c_dirs
row "daemon VmRSS right after mounting" "" c_rss0
row "daemon VmRSS / VmHWM after the find (big: after the reads)" "" c_rss
row "(VmHWM - VmRSS at mount) per call-tree node" "" c_pernode
row "VmHWM scaled to 1M call-tree nodes" "<= 200 MB" c_per1m "<=" 200 per1m
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }
echo
echo "## Walks against the same tree on tmpfs"
echo "| walk | target | flamefs | tmpfs copy | flamefs / copy |"
echo "|---|---|---|---|---|"
wrow() { # LABEL TARGET MNT-SECONDS COPY-SECONDS [LIMIT]
	local r; r=$(ratio "$3" "$4")
	printf '| %s | %s | %s s | %s s | %sx%s |\n' "$1" "$2" "$3" "$4" "$r" \
		"$([ $# -gt 4 ] && echo " ($(ok "$r" "<=" "$5"))")"
}
wrow "real: \`find MNT\` (${R[w.real.entries]} entries), first walk, fresh mount" "<= 5x" "${R[w.real.find1]}" "${R[w.real.findc]}" 5
wrow "real: \`find MNT\`, second walk (median of 3)" "" "${R[w.real.find2]}" "${R[w.real.findc]}"
wrow "real: \`grep -r ';main;' MNT\` ($(mb "${R[w.real.bytes]}" 1e6)), first, fresh mount" "<= 5x" "${R[w.real.grep1]}" "${R[w.real.grepc]}" 5
wrow "real: \`grep -r\`, second (median of 3)" "" "${R[w.real.grep2]}" "${R[w.real.grepc]}"
echo "| real: daemon VmRSS / VmHWM after the greps | | $(mb "${R[w.real.rss]}" 1024) / $(mb "${R[w.real.hwm]}" 1024) | | |"
[ "$only" = walks ] && exit 0
wrow "gen: \`find MNT\` (${R[w.gen.entries]} entries), first walk, fresh mount" "<= 5x" "${R[w.gen.find1]}" "${R[w.gen.findc]}" 5
wrow "gen: \`find MNT\`, second walk (median of 3)" "" "${R[w.gen.find2]}" "${R[w.gen.findc]}"
faster=$(ratio 147 "${R[w.gen.find1]}")
echo "| gen: first \`find\` against the high-level daemon's 147 s | >= 10x faster | ${R[w.gen.find1]} s | | ${faster}x faster ($(ok "$faster" ">=" 10)) |"
echo "| gen: daemon VmRSS / VmHWM after the walks | | $(mb "${R[w.gen.rss]}" 1024) / $(mb "${R[w.gen.hwm]}" 1024) | | |"
echo
echo "| \`stat\` 500 directories down (deep store) | target | time |"
echo "|---|---|---|"
echo "| first, fresh mount (500 lookups) | | ${R[w.deep.first]} ms |"
echo "| median of the next 200 | <= 1 ms | ${R[w.deep.med]} ms ($(ok "${R[w.deep.med]}" "<=" 1)) |"

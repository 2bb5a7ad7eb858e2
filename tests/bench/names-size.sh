#!/bin/bash
# names-size.sh — what keeping unnamed frames by (build id, offset) costs
# the store (issue #42): records `perf record -a -g` over DUR seconds
# (default 60) of mixed work (xz, python3, gcc compiles), imports the one
# perf.data into a fresh store with this build and, when BENCH_A names an
# older flamefs-collect, with that one too; compacts both and prints each
# store's frames, nodes and bytes (stats' footer).
#   usage: sudo [BENCH_A=OLD/flamefs-collect] [DUR=60] bash tests/bench/names-size.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/bench/lib.sh"
bench_setup names-size --root --tools "perf xz python3 gcc" flamefs-collect
dur=${DUR:-60}
bench_machine
cat >"$work/work.sh" <<WORK
#!/bin/bash
end=\$((SECONDS + $dur))
( while [ \$SECONDS -lt \$end ]; do head -c 20000000 /dev/urandom | base64 | xz -6 -T1 >/dev/null; done ) &
( while [ \$SECONDS -lt \$end ]; do python3 -c 'import json, re; d = [{"k": i, "v": str(i) * 5} for i in range(200000)]; s = json.dumps(d); json.loads(s); re.findall(r"\d+5", s)'; done ) &
( while [ \$SECONDS -lt \$end ]; do for f in store/embedded/intern.c store/copy.c; do gcc -O2 -I store -I store/embedded -c "$top/\$f" -o /dev/null 2>/dev/null; done; done ) &
wait
WORK
chmod +x "$work/work.sh"
perf record -q -a -g -o "$work/mixed.data" -- "$work/work.sh" >/dev/null 2>&1 ||
	{ echo "perf record failed"; exit 1; }
echo "# perf.data: $(stat -c %s "$work/mixed.data") bytes, $dur s"
size() { # NAME COLLECT
	rm -rf "$work/s-$1"
	"$2" import --store "$work/s-$1" "$work/mixed.data" >/dev/null 2>&1 || { echo "$1: import failed"; return; }
	"$2" compact --store "$work/s-$1" >/dev/null 2>&1
	echo "$1: $("$2" stats --store "$work/s-$1" | tail -3 | tr '\n' ' ')"
}
[ -n "${BENCH_A:-}" ] && size before "$BENCH_A"
size after "$fc"

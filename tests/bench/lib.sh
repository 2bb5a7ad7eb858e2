# lib.sh — sourced by the benchmarks that need a real recording.
# Needs $work (a scratch directory) and $top (the source tree).

# workload SECONDS: a CPU-heavy workload with deep, varied stacks:
# compiling flamefs over and over.
workload() {
	local end=$((SECONDS + $1)) d
	d=$(mktemp -d "$work/wl.XXXXXX")
	meson setup "$d" "$top" >/dev/null 2>&1
	while [ $SECONDS -lt $end ]; do
		ninja -C "$d" -t clean >/dev/null 2>&1
		timeout $((end - SECONDS + 1)) ninja -C "$d" -j 2 >/dev/null 2>&1 || true
	done
	rm -rf "$d"
}

# record_workload SECONDS OUT.perf: `perf record -e cpu-clock -F 999 -a -g`
# of the workload, written out as `perf script` text.
record_workload() {
	perf record -q -e cpu-clock -F 999 -a -g -o "$work/rec.data" -- \
		bash -c "$(declare -f workload); work=$work; top=$top; workload $1" >/dev/null 2>&1
	perf script -i "$work/rec.data" 2>/dev/null >"$2"
	rm -f "$work/rec.data"
}

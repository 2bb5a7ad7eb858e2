# lib.sh — the benchmarks' shared set-up, sourced by every tests/bench/*.sh
# after it sets $top (the source tree):
#   bench_setup NAME [options] [NINJA TARGET...]
#       checks root and tools, builds $build (build-bench, release) or the
#       given targets, and makes the work directory; sets build, fc,
#       flamefs, work, keep_work.  Options:
#         --root          refuse to run unless root (BPF, perf -a, FUSE)
#         --tools "A B"   refuse to run when one of these commands is missing
#         --tmpfs         make the work directory in /dev/shm, not /var/tmp
#         --nice          build at a low priority (a benchmark that measures
#                         the machine's load starts with a quiet one)
#       $BENCH_BUILD, when set, is a build directory to use as it is
#       (nothing is built).
#       $BENCH_DIR, when set, is the work directory and is kept; otherwise
#       a new one is removed at exit (bench_cleanup, or a script's own trap
#       that calls it).
#   bench_machine       the "# machine: ..." line every benchmark prints
#   bench_load          the three load averages
#   bench_wait_quiet [MAX] [SECONDS]
#       waits up to SECONDS (default $LOAD_WAIT, 60) for the 1-minute load
#       to fall to MAX (default $LOAD_MAX, 1.0); prints the load and how
#       long it waited; returns 1 when the machine is still busier.
#   bench_bg CMD [ARGS...]
#       starts CMD in the background in a session of its own (a load, a
#       burner); bench_stop_bg kills every such session and waits for it,
#       and bench_cleanup does so at exit.
#   rusage=(...)        the command that runs a program and writes its
#       CPU time and peak RSS to a file: "${rusage[@]}" OUT CMD [ARGS...]
#   workload SECONDS, record_workload SECONDS OUT.perf
#       the compile loop some benchmarks record (see below).
#   bench_churn_load    writes $work/churn-loop.sh: a loop of short
#       processes (gcc -c of $work/small.c, python3 -c pass, sh -c 'true x5')
#       forever; start it with bench_bg bash "$work/churn-loop.sh".
#   bench_forks         the processes forked since boot (/proc/stat).

# bench_setup NAME [--root] [--tools "..."] [--tmpfs] [--nice] [TARGET...]
bench_setup() {
	local name=$1 root=0 tools="meson ninja" base=/var/tmp nice_cmd=() t
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--root) root=1 ;;
		--tools) tools="$tools $2"; shift ;;
		--tmpfs) base=/dev/shm ;;
		--nice) nice_cmd=(nice) ;;
		*) break ;;
		esac
		shift
	done
	if [ "$root" = 1 ] && [ "$(id -u)" != 0 ]; then
		echo "$name.sh: needs root (BPF, perf -a, FUSE): sudo bash $0" >&2
		exit 1
	fi
	for t in $tools; do
		command -v "$t" >/dev/null || { echo "$name.sh: $t is missing" >&2; exit 1; }
	done
	if [ -n "${BENCH_BUILD:-}" ]; then
		build=$BENCH_BUILD
	else
		build="$top/build-bench"
		[ -f "$build/build.ninja" ] ||
			"${nice_cmd[@]}" meson setup "$build" "$top" -Dbuildtype=release >/dev/null
		"${nice_cmd[@]}" ninja -C "$build" "$@" >/dev/null || { ninja -C "$build" "$@"; exit 1; }
	fi
	fc="$build/flamefs-collect"
	flamefs="$build/fs/flamefs"
	if [ -n "${BENCH_DIR:-}" ]; then
		work=$BENCH_DIR
		keep_work=1
		mkdir -p "$work"
	else
		work=$(mktemp -d "$base/flamefs-$name.XXXXXX")
		keep_work=0
	fi
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_pids=()
bench_bg() {
	setsid "$@" &
	bench_pids+=($!)
}

bench_stop_bg() {
	local p
	for p in "${bench_pids[@]}"; do
		kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true
	done
	[ ${#bench_pids[@]} -eq 0 ] || wait "${bench_pids[@]}" 2>/dev/null || true
	bench_pids=()
}

rusage=("$(python3 -c 'import sys; print(sys.executable)')" "$(dirname "${BASH_SOURCE[0]}")/rusage.py")

# Stops the background jobs (bench_bg) and removes the work directory
# unless it was given (BENCH_DIR).  A script with its own EXIT trap calls
# it last.
bench_cleanup() {
	bench_stop_bg
	[ "${keep_work:-1}" = 1 ] || rm -rf "$work"
}

bench_machine() {
	echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
		"$(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
}

bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

bench_churn_load() {
	printf 'int f(int x) { return x * 3 + 1; }\nint main(void) { return f(2) != 7; }\n' >"$work/small.c"
	cat >"$work/churn-loop.sh" <<EOF
cd "$work"
while :; do
	gcc -O2 -c small.c -o small.\$\$.o
	/usr/bin/python3 -c pass
	/bin/sh -c '/bin/true; /bin/true; /bin/true; /bin/true; /bin/true'
done
EOF
}

bench_forks() { awk '$1 == "processes" { print $2 }' /proc/stat; }

bench_wait_quiet() {
	local max=${1:-${LOAD_MAX:-1.0}} limit=${2:-${LOAD_WAIT:-60}} waited=0
	while awk -v a="$(cut -d' ' -f1 /proc/loadavg)" -v b="$max" 'BEGIN { exit !(a > b) }' &&
		[ "$waited" -lt "$limit" ]; do
		sleep 5
		waited=$((waited + 5))
	done
	echo "# load average: $(bench_load) (waited ${waited} s for <= $max)"
	awk -v a="$(cut -d' ' -f1 /proc/loadavg)" -v b="$max" 'BEGIN { exit (a > b) }'
}

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

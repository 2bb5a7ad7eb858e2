#!/usr/bin/env bash
# The demo: install dependencies, build, record the bundled workload live
# with eBPF (flamefs-collect record) and, for comparison, with
# `perf record -g` imported from perf script text; then mount the store with
# flamefs, walk the heaviest path of the call tree (by total) and show it
# with ls and cat.  The store stays (unmounted) for exploring: the last
# lines print the command that mounts it again and the one that removes
# it.
#   usage: bash contrib/demo.sh      (as root, or as a user with sudo)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# Root is needed (packages, BPF, perf -a, FUSE as root).  Root runs this
# as it is (a fresh Debian has no sudo); anyone else is taken through sudo,
# keeping the FLAMEFS_* variables.
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "$(basename "$0"): needs root: run it as root, or install sudo" >&2
		exit 1
	fi
	keep=$(compgen -e | grep '^FLAMEFS_' | paste -sd, -) || true
	exec sudo ${keep:+--preserve-env="$keep"} bash "$top/contrib/demo.sh" "$@"
fi
cd "$top"
bash contrib/install-deps.sh
build=${FLAMEFS_BUILD:-build}
case $build in /*) ;; *) build=$top/$build ;; esac
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" >/dev/null || { ninja -C "$build"; exit 1; }
fc="$build/flamefs-collect"
server="$build/contrib/demo-server"

work=$(mktemp -d /tmp/flamefs-demo.XXXXXX)
mnt="$work/mnt"
# The store is kept when the demo reaches its end; a demo that fails
# half-way leaves nothing behind.
finished=
cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" 2>/dev/null || true; fi
	[ -n "$finished" ] || rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
cd "$work"

step flamefs-collect record --store store -F 999 -- demo-server 3
"$fc" record --store store -F 999 -- "$server" 3 >/dev/null

step "perf record -g -F 999 -- demo-server 2; perf script > demo.perf"
perf record -q -e cpu-clock -F 999 -g -o perf.data -- "$server" 2 >/dev/null
perf script -i perf.data 2>/dev/null > demo.perf
echo "demo.perf: $(wc -c < demo.perf) bytes of perf script text"

step flamefs-collect import --store store --version perf demo.perf
"$fc" import --store store --version perf demo.perf

step flamefs-collect stats --store store
"$fc" stats --store store | grep -v '^bytes:'

mkdir -p "$mnt"
step flamefs store mnt
"$build/fs/flamefs" store "$mnt"
bin=demo-server
step ls mnt mnt/$bin
ls "$mnt" "$mnt/$bin"
version=$(ls "$mnt/$bin" | grep -v '^perf$' | sed -n 1p)

# The heaviest path: from the version's root, step each time into the
# child directory with the largest total (names beginning with @ are the
# view's own directories; a frame's own @ is escaped as %40), until the
# function's own time (self) outweighs every callee.
heaviest_path() {
	local dir=$1 d t best bt
	while :; do
		best= bt=0
		for d in "$dir"/*/; do
			[ -d "$d" ] || continue
			case $(basename "$d") in @*) continue ;; esac
			t=$(cat "$d/total")
			if [ "$t" -gt "$bt" ]; then best=${d%/} bt=$t; fi
		done
		[ -n "$best" ] && [ "$bt" -ge "$(cat "$dir/self")" ] || break
		printf '%s\n' "$best"
		dir=$best
	done
}
mapfile -t path < <(heaviest_path "$mnt/$bin/$version")
root_total=$(cat "$mnt/$bin/$version/total")
step "the heaviest path of mnt/$bin/$version, by total (each step the child with the largest total)"
printf '%12s %6s  %s\n' total share frame
for d in "${path[@]}"; do
	t=$(cat "$d/total")
	printf '%12s %5s%%  %s\n' "$t" "$(awk -v t="$t" -v r="$root_total" 'BEGIN { printf "%.1f", 100 * t / r }')" \
		"$(basename "$d")"
done
# Where the heaviest path splits: the deepest step with several callees.
split=
for d in "${path[@]}"; do
	[ "$(find "$d" -mindepth 1 -maxdepth 1 -type d ! -name '@*' | wc -l)" -gt 1 ] && split=$d
done
split=${split:-${path[-1]}}
rel=${split#"$work/"}
step ls "$rel"
ls "$split"
step "cat $rel/*/total   (each callee's share)"
for d in "$split"/*/; do
	case $(basename "$d") in @*) continue ;; esac
	printf '%12s  %s\n' "$(cat "$d/total")" "$(basename "$d")"
done | sort -rn
# sed -n 1,5p reads to the end: head would close the pipe early, and
# under pipefail sort's or cut's SIGPIPE would end the demo.
step "the five heaviest stacks: awk '{ print \$NF \"\\t\" \$0 }' mnt/$bin/$version/folded | sort -rn | cut -f2 | sed -n 1,5p"
awk '{ print $NF "\t" $0 }' "$mnt/$bin/$version/folded" | sort -rn | cut -f2 | sed -n 1,5p
step "head -n 7 mnt/$bin/$version/top   (the hottest functions, with kind)"
sed -n 1,7p "$mnt/$bin/$version/top"
step flamefs-top -n 5 mnt/$bin/$version
sh "$top/contrib/flamefs-top" -n 5 "$mnt/$bin/$version"
step "go tool pprof -top mnt/$bin/perf/pprof | sed -n 1,12p"
if command -v go >/dev/null; then
	HOME=$work GOCACHE=$work/gocache go tool pprof -top "$mnt/$bin/perf/pprof" 2>/dev/null | sed -n 1,12p
fi
step "fusermount3 -u mnt"
fusermount3 -u "$mnt"
finished=1
flamefs=$build/fs/flamefs
printf '\nThe store is kept in %s/store (%s on disk). To explore it again:\n' "$work" "$(du -sh store | cut -f1)"
printf '  %s %s %s && ls %s\n' "$flamefs" "$work/store" "$mnt" "$mnt"
printf 'then unmount it with fusermount3 -u %s, and remove it all with:\n' "$mnt"
printf '  rm -rf %s\n' "$work"

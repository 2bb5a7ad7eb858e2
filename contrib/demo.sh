#!/usr/bin/env bash
# The demo: install dependencies, build, record the bundled workload live
# with eBPF (flamefs-collect record) and, for comparison, with
# `perf record -g` imported from perf script text; then mount the store with
# flamefs and walk the call tree with ls and cat.
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
cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" 2>/dev/null || true; fi
	rm -rf "$work"
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
version=$(ls "$mnt/$bin" | grep -v '^perf$' | head -n 1)
hr=$(find "$mnt/$bin/$version" -type d -name handle_request | head -n 1)
rel=${hr#"$work/"}
step ls "$rel"
ls "$hr"
# handle_request's callees as sampled this time (a short recording can
# miss the lightest one, parse_headers).
kids=()
for k in hash_body parse_headers; do [ -e "$hr/$k/total" ] && kids+=("$k/total"); done
step cat mnt/$bin/$version/total "${kids[@]/#/$rel/}"
cat "$mnt/$bin/$version/total" "${kids[@]/#/$hr/}"
step head -5 mnt/$bin/$version/folded
head -5 "$mnt/$bin/$version/folded"
step flamefs-top -n 5 mnt/$bin/$version
sh "$top/contrib/flamefs-top" -n 5 "$mnt/$bin/$version"
step "go tool pprof -top mnt/$bin/perf/pprof | head -12"
if command -v go >/dev/null; then
	HOME=$work GOCACHE=$work/gocache go tool pprof -top "$mnt/$bin/perf/pprof" 2>/dev/null | head -12
fi
step "fusermount3 -u mnt"
fusermount3 -u "$mnt"

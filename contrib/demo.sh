#!/usr/bin/env bash
# The demo: install dependencies, build, record the bundled workload with
# `perf record -g`, import it into a fresh store, show what was stored, then
# mount the store with flamefs and walk the call tree with ls and cat.
#   usage: sudo bash contrib/demo.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash contrib/install-deps.sh
build=${FLAMEFS_BUILD:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" >/dev/null || { ninja -C "$build"; exit 1; }

work=$(mktemp -d /tmp/flamefs-demo.XXXXXX)
mnt="$work/mnt"
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

cd "$work"
step perf record -e cpu-clock -F 999 -g -- demo-server 3
perf record -q -e cpu-clock -F 999 -g -o perf.data -- "$top/$build/contrib/demo-server" 3 >/dev/null
perf script -i perf.data 2>/dev/null > demo.perf
echo "perf script wrote $(wc -c < demo.perf) bytes"

step flamefs-collect import --store store --version demo demo.perf
"$top/$build/flamefs-collect" import --store store --version demo demo.perf

step flamefs-collect stats --store store
"$top/$build/flamefs-collect" stats --store store

mkdir -p "$mnt"
step flamefs store mnt
"$top/$build/fs/flamefs" store "$mnt"
bin=demo-server
step ls mnt mnt/$bin mnt/$bin/demo
ls "$mnt" "$mnt/$bin" "$mnt/$bin/demo"
hr=$(find "$mnt/$bin/demo" -type d -name handle_request | head -n 1)
rel=${hr#"$work/"}
step ls "$rel"
ls "$hr"
step cat mnt/$bin/demo/total "$rel/hash_body/total" "$rel/parse_headers/total"
cat "$mnt/$bin/demo/total" "$hr/hash_body/total" "$hr/parse_headers/total"
step head -5 mnt/$bin/demo/folded
head -5 "$mnt/$bin/demo/folded"
step "fusermount3 -u mnt"
fusermount3 -u "$mnt"

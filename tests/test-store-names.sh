#!/bin/bash
# test-store-names.sh — test-store-names's database tests (unnamed frames'
# offsets in the central store, copies between a directory and a
# database) on a private PostgreSQL 15 that it starts and stops
# (tests/lib-pg.sh).
# Usage: test-store-names.sh BUILD_DIR.  SKIP (77) without PostgreSQL 15.
set -u
build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
unit=$build/tests/test-store-names
. "$here/lib.sh"
. "$here/lib-pg.sh"
[ -x "$unit" ] || { echo "test-store-names not found in $build; build it first"; exit 1; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
pg_skip_unless_available "$tmp"
"$unit" "$PG_SOCK" postgres "$PG_PORT"

#!/bin/bash
# test-store-spans.sh — test-store-spans's database tests (the recent
# tier's span and parent ids in the central store, its SQL decoder against
# the C one, copies between a directory and a database) on a private
# PostgreSQL 15 that it starts and stops (tests/lib-pg.sh).
# Usage: test-store-spans.sh BUILD_DIR.  SKIP (77) without PostgreSQL 15.
set -u
build=${1:?usage: $0 BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
unit=$build/tests/test-store-spans
. "$here/lib.sh"
. "$here/lib-pg.sh"
[ -x "$unit" ] || { echo "test-store-spans not found in $build; build it first"; exit 1; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
pg_skip_unless_available "$tmp"
"$unit" "$PG_SOCK" postgres "$PG_PORT"

#!/usr/bin/env bash
# test-fleet-trust.sh — a fleet you can trust (issue 38), against a private
# PostgreSQL 15 started here (tests/lib-pg.sh).  Checks:
#   - snapshot reads: a mount's root `total` and `folded`, and `export`,
#     read in loops beside 50 pushes of one host whose every push replaces
#     the same two buckets (of two binaries): each read equals the state
#     after some push (never a mix of two, never a bucket or a host
#     missing), and the reads of one loop never go back in time.
#   usage: test-fleet-trust.sh BUILD_DIR        exit 0 pass, 1 fail, 77 skip
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: $0 BUILD_DIR}
. "$here/lib-e2e.sh"
. "$here/lib-pg.sh"
collect=$build/flamefs-collect
flamefs=$build/fs/flamefs
e2e_setup fleet-trust
mkdir -p "$tmp/pg"
pg_skip_unless_available "$tmp/pg"
export FLAMEFS_PG_RETRY_SECONDS=60
t0=1700000040 # a bucket's first second

# e2e_on_exit: the loops this test starts in the background.
bg=()
e2e_on_exit() { [ ${#bg[@]} = 0 ] || kill "${bg[@]}" 2>/dev/null; }

# ---- snapshot reads ---------------------------------------------------------------
# State k (after the k-th push of host h1): app;main;a k at t0 and
# lib;init;c 1000k at t0 + 60, plus host h2's app;main;z 7, pushed once
# before.  Any read that mixes two states, or misses a bucket or a host,
# breaks "c = 1000 a, z = 7".
pg_createdb snap || exit 1
D=$(pg_uri snap postgres)
printf 'app;main;z 7\n' >"$tmp/z.folded"
"$collect" import --store "$tmp/h2" --host h2 --time $t0 "$tmp/z.folded" >/dev/null 2>&1 &&
	"$collect" push --store "$tmp/h2" --to "$D" >/dev/null 2>&1 || { bad "push host h2"; exit 1; }
printf 'app;main;a 1\n' >"$tmp/a.folded"
printf 'lib;init;c 1000\n' >"$tmp/c.folded"
mkdir -p "$mnt"
"$flamefs" "$D" "$mnt" 2>"$tmp/mount.err" || { bad "mount the database"; cat "$tmp/mount.err"; exit 1; }
for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done

# state_of: reads folded lines on stdin; prints the state k they show, or
# "torn: ..." when they show none.
state_of() {
	awk '$1 == "app;main;a" { a = $2 } $1 == "app;main;z" { z = $2 } $1 == "lib;init;c" { c = $2 }
		END { if (z == 7 && c == 1000 * a) print a + 0; else printf "torn: a=%s c=%s z=%s\n", a, c, z }'
}
# reader NAME: reads until $tmp/stop exists; one line per read into
# $tmp/NAME.reads: the state, or what was wrong.
reader() {
	local name=$1 got t
	while [ ! -e "$tmp/stop" ]; do
		case $name in
		mount-folded) got=$(state_of <"$mnt/folded") ;;
		mount-total)
			t=$(cat "$mnt/total")
			if [ -n "$t" ] && [ $(((t - 7) % 1001)) = 0 ]; then got=$(((t - 7) / 1001)); else got="torn: total $t"; fi
			;;
		export) got=$("$collect" export --store "$D" 2>&1 | state_of) ;;
		esac
		echo "$got" >>"$tmp/$name.reads"
	done
}
for r in mount-folded mount-total export; do
	reader $r &
	bg+=($!)
done
# One import of both files stores each at its file's time.
touch -d @$t0 "$tmp/a.folded"
touch -d @$((t0 + 60)) "$tmp/c.folded"
cycles=0
for k in $(seq 1 50); do
	"$collect" import --store "$tmp/h1" --host h1 "$tmp/a.folded" "$tmp/c.folded" >/dev/null 2>&1 ||
		bad "import $k"
	"$collect" push --store "$tmp/h1" --to "$D" >"$tmp/push.out" 2>&1 || { bad "push $k"; cat "$tmp/push.out"; }
	cycles=$((cycles + 1))
done
touch "$tmp/stop"
wait "${bg[@]}"
bg=()
echo "$cycles pushes; reads: $(wc -l <"$tmp/mount-folded.reads") folded, $(wc -l <"$tmp/mount-total.reads") total, $(wc -l <"$tmp/export.reads") export"
for r in mount-folded mount-total export; do
	torn=$(grep -c torn "$tmp/$r.reads")
	back=$(awk '!/torn/ { if ($1 < max) n++; if ($1 > max) max = $1 } END { print n + 0 }' "$tmp/$r.reads")
	check "$r: every read during $cycles pushes is the state after some push ($torn torn)" [ "$torn" = 0 ]
	check "$r: no read goes back to an earlier state ($back did)" [ "$back" = 0 ]
	[ "$torn" = 0 ] || grep torn "$tmp/$r.reads" | sort | uniq -c | head -5
	seen=$(grep -v torn "$tmp/$r.reads" | sort -u | wc -l)
	check "$r: the reads met several states ($seen)" [ "$seen" -ge 2 ]
done
check "after the pushes: export shows state $cycles" \
	[ "$("$collect" export --store "$D" 2>&1 | state_of)" = "$cycles" ]
fusermount3 -u "$mnt" 2>/dev/null

[ "$failures" = 0 ]

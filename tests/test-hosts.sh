#!/usr/bin/env bash
# test-hosts.sh — every series belongs to a host, and the view sums hosts.
# Hosts a and b import the same and different fixtures (--host) into one
# store, and each also into a store of its own; a third host, @edge, only
# into the shared one.  On real mounts of the three:
#   - /<binary>/<version>/folded of the shared store is the line-wise sum of
#     @host/a's and @host/b's (summed here with awk), for every version;
#     every directory's total and self is the sum of the hosts' (0 where a
#     host lacks it); @functions/F/total, @diff/A/B/folded (column-wise) and
#     @range and @last windows sum the same way;
#   - @host/a/ is, file for file (diff -r), what the store holding only
#     host a shows at its root, and so for b; @host/a/@range/... too;
#   - ls /@host lists the hosts (escaped: %40edge), the root does not list
#     @host (like @last), and a one-host store lists what it did before,
#     with @host/<its host>/ the same tree as its root;
#   - stats --by-host: exact rows; stats: the host as the last column;
#     --host refuses bad names before a store is made;
#   - an import by b while mounted reaches the sum and @host/b within 2 s,
#     and a new host appears in ls /@host.
#   usage: test-hosts.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
build=${1:?usage: test-hosts.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
e2e_setup hosts
pids=
e2e_on_exit() {
	for m in "$tmp"/m*; do fusermount3 -u -z "$m" 2>/dev/null; done
	[ -n "$pids" ] && kill $pids 2>/dev/null
}

# imp STORE HOST ARGS...
imp() {
	local st=$1 h=$2
	shift 2
	"$collect" import --store "$st" --host "$h" "$@" >/dev/null 2>"$tmp/imp.err" ||
		bad "import --host $h $*: $(cat "$tmp/imp.err")"
}

t0=1795000020 # a bucket start
now=$(date +%s)
printf 'main;a;f;g 10\nmain;a;h 5\nmain;b 3\nmain;@plt 1\n' >"$tmp/v1a.folded"
printf 'main;a;f;g 4\nmain;c 6\nmain;@plt 2\n' >"$tmp/v1b.folded"
printf 'main;a;f;g 20\nmain;d 2\n' >"$tmp/v2a.folded"
printf 'main;a;f;g 1\nmain;d 9\nmain;e 4\n' >"$tmp/v2b.folded"
printf 'main;live 5\n' >"$tmp/livea.folded"
printf 'main;live 3\nmain;other 2\n' >"$tmp/liveb.folded"
printf 'main;solo 8\n' >"$tmp/solo.folded"
printf 'main;edge 7\n' >"$tmp/edge.folded"

for st in both onlya; do
	imp "$tmp/$st" a --binary app --version 1 --time $t0 "$tmp/v1a.folded"
	imp "$tmp/$st" a --binary app --version 2 --time $((t0 + 60)) "$tmp/v2a.folded"
	imp "$tmp/$st" a --format perf --binary loop --version 1 "$here/data/perf/loop.perf"
	imp "$tmp/$st" a --binary live --version 1 --time $((now - 30)) "$tmp/livea.folded"
done
for st in both onlyb; do
	imp "$tmp/$st" b --binary app --version 1 --time $((t0 + 120)) "$tmp/v1b.folded"
	imp "$tmp/$st" b --binary app --version 2 --time $((t0 + 180)) "$tmp/v2b.folded"
	imp "$tmp/$st" b --format perf --binary loop --version 1 "$here/data/perf/loop.perf"
	imp "$tmp/$st" b --binary live --version 1 --time $((now - 30)) "$tmp/liveb.folded"
	imp "$tmp/$st" b --binary solo --version 1 --time $((t0 + 120)) "$tmp/solo.folded"
done
imp "$tmp/both" @edge --binary edgebin --version 1 --time $((t0 + 300)) "$tmp/edge.folded"

# ---- the command line ---------------------------------------------------------------------------
for h in "" "a/b" "$(printf 'a\tb')" "$(head -c 256 /dev/zero | tr '\0' h)"; do
	if "$collect" import --store "$tmp/never" --host "$h" "$tmp/v1a.folded" 2>"$tmp/err"; then
		bad "--host '$h' accepted"
	elif ! grep -q -- "--host: expected a name of 1 to 255 bytes" "$tmp/err" || [ -e "$tmp/never" ]; then
		bad "--host '$h': $(cat "$tmp/err") (or the store was made)"
	else
		ok "--host '${h:0:20}' refused before the store is made"
	fi
done
"$collect" stats --store "$tmp/both" >"$tmp/stats"
check "stats: HOST is the last column, one row per (binary, version, event, host)" \
	test "$(awk 'NR > 1 && NF == 9 { print $1 "/" $2 "/" $9 }' "$tmp/stats" | tr '\n' ' ')" = \
	"app/1/a app/1/b app/2/a app/2/b edgebin/1/@edge live/1/a live/1/b loop/1/a loop/1/b solo/1/b "
"$collect" stats --by-host --store "$tmp/both" >"$tmp/byhost"
# @edge: one folded file, known exactly
want_edge="@edge 1 7 7 $(wc -c <"$tmp/edge.folded") $((t0 + 300)).000 $((t0 + 300)).000"
check "stats --by-host: @edge's row exact" \
	test "$(awk '$1 == "@edge" { $1 = $1; print }' "$tmp/byhost")" = "$want_edge"
# a and b: the sums of their series rows, and the rows their own stores give
for h in a b; do
	rows=$(awk -v h="$h" 'NR > 1 && NF == 9 && $9 == h { n++; s += $4; w += $5 }
		END { print n, s, w }' "$tmp/stats")
	input=$("$collect" stats --store "$tmp/only$h" | sed -n 's/.* input=//p')
	got=$(awk -v h="$h" '$1 == h { print $2, $3, $4, $5 }' "$tmp/byhost")
	check "stats --by-host: $h's row is its series summed ($rows, input $input)" \
		test "$got" = "$rows $input"
	own=$("$collect" stats --by-host --store "$tmp/only$h" | awk -v h="$h" '$1 == h { $1 = $1; print }')
	check "stats --by-host: $h's row equals its own store's" \
		test "$(awk -v h="$h" '$1 == h { $1 = $1; print }' "$tmp/byhost")" = "$own"
done
check "stats --by-host: hosts in name order, then the totals" \
	test "$(awk 'NR > 1 && NF == 7 { printf "%s ", $1 } / hosts, / { print }' "$tmp/byhost")" = \
	"@edge a b 3 hosts, 10 series, $(awk 'NR > 1 && NF == 9 { s += $4 } END { print s }' "$tmp/stats") samples"
check "stats --by-host --help documents it" sh -c "'$collect' stats --help | grep -q -- --by-host"

# ---- mounts -------------------------------------------------------------------------------------
for st in both onlya onlyb; do
	mkdir -p "$tmp/m$st"
	"$flamefs" -f "$tmp/$st" "$tmp/m$st" 2>"$tmp/daemon-$st.err" &
	pids="$pids $!"
done
for st in both onlya onlyb; do
	for _ in $(seq 50); do mountpoint -q "$tmp/m$st" && break; sleep 0.1; done
	mountpoint -q "$tmp/m$st" || { bad "flamefs $st did not mount: $(cat "$tmp/daemon-$st.err")"; exit 1; }
done
M=$tmp/mboth A=$tmp/monlya B=$tmp/monlyb

# sumfold FILE...: the line-wise sum of folded files ("stack N"), bytewise sorted.
sumfold() {
	awk '{ k = substr($0, 1, length($0) - length($NF) - 1); s[k] += $NF }
		END { for (k in s) if (s[k]) print k, s[k] }' "$@" | sort
}
# sumdiff FILE...: the same for diff folded ("stack A B").
sumdiff() {
	awk '{ k = $0; sub(/ [0-9]+ [0-9]+$/, "", k); a[k] += $(NF - 1); b[k] += $NF }
		END { for (k in a) print k, a[k], b[k] }' "$@" | sort
}
# either FILE: its contents, or nothing when it does not exist
either() { cat "$1" 2>/dev/null; }

check "ls /@host: the hosts, escaped" test "$(ls "$M/@host" | tr '\n' ' ')" = "%40edge a b "
check "the root does not list @host (as @last), but it resolves" \
	test "$(ls -A "$M" | tr '\n' ' ')" = "app callgrind edgebin flame.svg folded heatmap.svg live loop name pprof self solo timeline timeline.svg top total " -a -d "$M/@host"
check "ls /@host/a: host a's binaries" test "$(ls -A "$M/@host/a" | tr '\n' ' ')" = "app callgrind flame.svg folded heatmap.svg live loop name pprof self timeline timeline.svg top total "
check "ls /@host/%40edge: its binary" test "$(ls -A "$M/@host/%40edge" | tr '\n' ' ')" = "callgrind edgebin flame.svg folded heatmap.svg name pprof self timeline timeline.svg top total "
check "/@host/@edge is not a name (escaped only)" test ! -e "$M/@host/@edge"
check "/@host/nosuch does not exist" test ! -e "$M/@host/nosuch"
check "no @host below a host" test ! -e "$M/@host/a/@host"

for v in app/1 app/2 loop/1 live/1; do
	sumfold "$A/$v/folded" "$B/$v/folded" >"$tmp/want"
	check "$v/folded is the sum of the hosts' stores (awk)" cmp -s "$M/$v/folded" "$tmp/want"
	sumfold "$M/@host/a/$v/folded" "$M/@host/b/$v/folded" >"$tmp/want2"
	check "$v/folded is the sum of @host/a and @host/b" cmp -s "$M/$v/folded" "$tmp/want2"
	for h in a b; do
		up=$(echo "$h" | tr ab AB)
		check "@host/$h/$v/folded is what a store of host $h alone shows" \
			cmp -s "$M/@host/$h/$v/folded" "${!up}/$v/folded"
	done
	# every directory: total and self are the hosts' summed
	bad_dirs=0
	while IFS= read -r d; do
		for f in total self; do
			x=$(either "$M/@host/a/$v/$d/$f") y=$(either "$M/@host/b/$v/$d/$f")
			[ "$(cat "$M/$v/$d/$f")" = "$((${x:-0} + ${y:-0}))" ] || bad_dirs=$((bad_dirs + 1))
		done
	done < <(cd "$M/$v" && find . -type d -not -path '*/@*')
	check "$v: every directory's total and self is the hosts' sum" test "$bad_dirs" = 0
	check "$v: total = the sum of folded" \
		test "$(cat "$M/$v/total")" = "$(awk '{ s += $NF } END { print s }' "$M/$v/folded")"
done
check "solo (host b only) shows host b's tree" cmp -s "$M/solo/1/folded" "$B/solo/1/folded"
check "@host/a has no solo" test ! -e "$M/@host/a/solo"

# @host/h is the store of h alone, everything listed (binaries, versions,
# call trees, every file); and so below the views' own directories.
check "diff -r @host/a (shared store) = the root of host a's store" diff -r "$M/@host/a" "$A"
# (callgrind numbers functions in the store's frame order, which host a's
# imports set first in the shared store: b's lists the same in another order)
check "diff -r @host/b (shared store) = the root of host b's store, but callgrind" \
	diff -r -x callgrind "$M/@host/b" "$B"
check "@host/b/app/1/callgrind: the same lines as host b's, in another order" \
	test "$(sed 's/([0-9]*)//' "$M/@host/b/app/1/callgrind" | sort | md5sum)" = \
	"$(sed 's/([0-9]*)//' "$B/app/1/callgrind" | sort | md5sum)"
check "@host/a/app/1/@functions = host a's" diff -r "$M/@host/a/app/1/@functions" "$A/app/1/@functions"
check "@host/b/app/@diff/1/2 = host b's" diff -r "$M/@host/b/app/@diff/1/2" "$B/app/@diff/1/2"
check "@host/a/@range/T/T+120 = host a's" \
	diff -r "$M/@host/a/@range/$t0/$((t0 + 120))" "$A/@range/$t0/$((t0 + 120))"

# the views sum too
for f in g a main; do
	check "@functions/$f/total is the hosts' sum" \
		test "$(cat "$M/app/1/@functions/$f/total")" = \
		"$(($(either "$A/app/1/@functions/$f/total") + $(either "$B/app/1/@functions/$f/total")))"
done
sumdiff "$A/app/@diff/1/2/folded" "$B/app/@diff/1/2/folded" >"$tmp/want"
check "@diff/1/2/folded is the hosts' diffs summed column-wise" cmp -s "$M/app/@diff/1/2/folded" "$tmp/want"
r=@range/$t0/$((t0 + 120))
check "$r: only host a's buckets (b's begin at T+120)" cmp -s "$M/$r/app/1/folded" "$A/app/1/folded"
check "$r: lists what reaches into it" test "$(ls "$M/$r" | tr '\n' ' ')" = "app callgrind flame.svg folded heatmap.svg name pprof self timeline timeline.svg top total window "
sumfold "$M/$r/app/1/folded" "$M/$r/app/2/folded" >"$tmp/want"
# (A root's files have size 0 in stat, as pprof: cmp must read them.)
check "$r: its root's folded is its app versions' (the only series in it)" \
	sh -c "cat '$M/$r/folded' | cmp -s - '$tmp/want'"
sumfold "$M"/@host/*/folded >"$tmp/want"
check "the fleet root's folded is the sum of its hosts' roots' folded" \
	sh -c "cat '$M/folded' | cmp -s - '$tmp/want'"
f=$(awk '!/^#/ { print $6; exit }' "$M/top")
check "the fleet root's @functions/$f/total is the sum of its hosts' roots'" \
	test "$(cat "$M/@functions/$f/total")" = "$(for h in "$M"/@host/*/; do cat "$h/@functions/$f/total" 2>/dev/null || echo 0; done | awk '{ s += $1 } END { print s }')"
check "... and its total the sum of theirs" \
	test "$(cat "$M/total")" = "$(cat "$M"/@host/*/total | awk '{ s += $1 } END { print s }')"
r=@range/$t0/$((t0 + 240))
sumfold "$A/app/2/folded" "$B/app/2/folded" >"$tmp/want"
check "$r/app/2: both hosts summed" cmp -s "$M/$r/app/2/folded" "$tmp/want"
check "@host/b/@range/T/T+120 has no app" test ! -e "$M/@host/b/@range/$t0/$((t0 + 120))/app"
sumfold "$A/live/1/folded" "$B/live/1/folded" >"$tmp/want"
check "@last/5m/live/1: both hosts summed" cmp -s "$M/@last/5m/live/1/folded" "$tmp/want"
check "@host/b/@last/5m/live/1: host b's" cmp -s "$M/@host/b/@last/5m/live/1/folded" "$B/live/1/folded"
for f in pprof flame.svg callgrind; do
	check "@host/a/app/1/$f = host a's store's" cmp -s "$M/@host/a/app/1/$f" "$A/app/1/$f"
done

# ---- one host -----------------------------------------------------------------------------------
check "a one-host store: its root lists the whole view's files and its binaries" test "$(ls -A "$A" | tr '\n' ' ')" = "app callgrind flame.svg folded heatmap.svg live loop name pprof self timeline timeline.svg top total "
check "a one-host store: ls @host is its host" test "$(ls "$A/@host" | tr '\n' ' ')" = "a "
check "a one-host store: @host/a is its root, file for file" diff -r "$A" "$A/@host/a"
"$collect" export --store "$tmp/onlya" --binary app --version 1 --format folded -o "$tmp/exp"
check "a one-host store: app/1/folded is what export gives" cmp -s "$A/app/1/folded" "$tmp/exp"

# ---- a change while mounted ---------------------------------------------------------------------
printf 'main;a;f;g 100\n' >"$tmp/more.folded"
imp "$tmp/both" b --binary app --version 1 --time $((t0 + 120)) "$tmp/more.folded"
imp "$tmp/both" c --binary app --version 1 --time $((t0 + 120)) "$tmp/more.folded"
want=$(($(cat "$A/app/1/total") + $(cat "$B/app/1/total") + 200))
for _ in $(seq 30); do
	[ "$(cat "$M/app/1/total")" = "$want" ] && break
	sleep 0.1
done
check "an import by b and a new host c reach the sum within 3 s" test "$(cat "$M/app/1/total")" = "$want"
check "... and @host/b" test "$(cat "$M/@host/b/app/1/total")" = "$(($(cat "$B/app/1/total") + 100))"
check "... and not @host/a" test "$(cat "$M/@host/a/app/1/total")" = "$(cat "$A/app/1/total")"
check "... and ls /@host shows c" test "$(ls "$M/@host" | tr '\n' ' ')" = "%40edge a b c "
check "... whose tree is its import" test "$(cat "$M/@host/c/app/1/folded")" = "app;main;a;f;g 100"

for st in both onlya onlyb; do
	if [ -s "$tmp/daemon-$st.err" ]; then bad "daemon $st said: $(head -3 "$tmp/daemon-$st.err")"; fi
done
echo "$failures failed"
[ "$failures" = 0 ]

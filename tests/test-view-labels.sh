#!/usr/bin/env bash
# test-view-labels.sh — labels in the view (issue #40), on a real mount of a
# store that labels-fill writes through the store API: two hosts' series of
# app 1 with cgroup, container, thread, exe and cmdline labels (a cgroup
# path with '/', a thread name with a control byte), some with none.
#   - /app/1/ sums every label set of both hosts: its folded is exact;
#     @host/h1/app/1/ sums h1's label sets only;
#   - ls /@thread, /@cgroup, /@container: the values, escaped as directory
#     names ('/' as %2F; the cleaned control byte as the text \x01), with
#     "-" for the series without the label; each value's directory names
#     it back (cat name-less: its folded holds only its series' stacks);
#   - for each of the three labels, the folded of the root, of /app/1/ and
#     of /app/1/main/ equals the line-wise sum over the label's values
#     (a partition), and so does total;
#   - inside @thread/<v>/: @range windows, timeline, top, @functions and
#     @diff work as inside @host;
#   - /app/1/about and @thread/io/app/1/about: the exact lines;
#   - a store without labels has no /@cgroup; a label value written while
#     mounted appears in ls /@thread within 3 s;
#   - two folded files imported with --label thread=alpha and thread=beta:
#     each @thread value holds its file, the root their sum;
#   - over PostgreSQL (tests/lib-pg.sh): the store pushed to a database
#     shows the same @cgroup tree (diff -r) and about files.
#   usage: test-view-labels.sh BUILD_DIR     exit 0 pass, 1 fail, 77 skip
. "$(dirname "$0")/lib-e2e.sh"
build=${1:?usage: test-view-labels.sh BUILD_DIR}
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
fill=$build/tests/labels-fill
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: /dev/fuse not available"
	exit 77
fi
e2e_setup labels
pids=
e2e_on_exit() {
	for m in "$tmp"/m*; do fusermount3 -u -z "$m" 2>/dev/null; done
	[ -n "$pids" ] && kill $pids 2>/dev/null
}

t0=1795000020 # a bucket start
T=$'\t'
# HOST BINARY VERSION LABELS WHEN SAMPLES STACK (tests/labels-fill.c)
cat >"$tmp/in.txt" <<EOF
h1${T}app${T}1${T}cgroup=system.slice/a.service|thread=worker|exe=/usr/bin/app|cmdline=app --serve${T}$t0${T}10${T}main;work;a
h1${T}app${T}1${T}cgroup=system.slice/a.service|thread=io|exe=/usr/bin/app${T}$t0${T}5${T}main;io;read
h1${T}app${T}1${T}cgroup=system.slice/b.service|thread=worker|container=0123abcd|exe=/opt/app${T}$((t0 + 60))${T}7${T}main;work;b
h2${T}app${T}1${T}thread=w\\x01k${T}$((t0 + 30))${T}3${T}main;odd
h2${T}app${T}1${T}-${T}$t0${T}2${T}main;work;a
h1${T}app${T}2${T}thread=worker${T}$t0${T}4${T}main;v2
h1${T}tool${T}1${T}cgroup=system.slice/a.service${T}$t0${T}6${T}tool;x
h1${T}app${T}3f2a9c01d4e5${T}exe=/usr/bin/app${T}$t0${T}1${T}main;built
EOF
"$fill" "$store" <"$tmp/in.txt" || bad "labels-fill"
printf 'h1\tplain\t1\t-\t%s\t3\tmain;x\n' $t0 | "$fill" "$tmp/nolabels" || bad "labels-fill nolabels"

# mount STORE DIR: a flamefs on DIR, waited for.
mount_at() {
	mkdir -p "$2"
	"$flamefs" -f "$1" "$2" 2>"$2.err" &
	pids="$pids $!"
	for _ in $(seq 100); do [ -e "$2/$3" ] && return 0; sleep 0.1; done
	bad "mount of $1 at $2: $(cat "$2.err")"
	return 1
}
m=$tmp/m1
mount_at "$store" "$m" app || finish
mount_at "$tmp/nolabels" "$tmp/m2" plain

# ---- the sum over label sets --------------------------------------------------------------------
check "app/1/folded sums every label set of both hosts" \
	test "$(cat "$m/app/1/folded")" = "$(printf 'app;main;io;read 5000000\napp;main;odd 3000000\napp;main;work;a 12000000\napp;main;work;b 7000000')"
check "@host/h1/app/1/folded sums h1's label sets only" \
	test "$(cat "$m/@host/h1/app/1/folded")" = "$(printf 'app;main;io;read 5000000\napp;main;work;a 10000000\napp;main;work;b 7000000')"
check "app/1 is one version directory (labels do not split it): ls app = 1 2 3f2a9c01d4e5" \
	test "$(ls "$m/app" | tr "\n" " ")" = "1 2 3f2a9c01d4e5 "

# ---- the label directories ----------------------------------------------------------------------
check "ls /@thread: the values, '-' for none, the cleaned control byte as text" \
	test "$(ls "$m/@thread" | tr '\n' ' ')" = '- io w\x01k worker '
check "ls /@cgroup: '/' escaped as %2F" \
	test "$(ls "$m/@cgroup" | tr '\n' ' ')" = "- system.slice%2Fa.service system.slice%2Fb.service "
check "ls /@container" test "$(ls "$m/@container" | tr '\n' ' ')" = "- 0123abcd "
check "the root lists no @cgroup, @container, @thread (like @host)" \
	sh -c "! ls '$m' | grep -q '^@'"
check "@thread/io/app/1/folded holds only io's stacks" \
	test "$(cat "$m/@thread/io/app/1/folded")" = "app;main;io;read 5000000"
check "@thread/w\\x01k/ (a cleaned control byte) names its series back" \
	test "$(cat "$m/@thread/w\\x01k/app/1/folded")" = "app;main;odd 3000000"
check "@cgroup/system.slice%2Fb.service/ holds b.service's stacks" \
	test "$(cat "$m/@cgroup/system.slice%2Fb.service/app/1/folded")" = "app;main;work;b 7000000"
dirs() { find "$1" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | tr '\n' ' '; }
check "@thread/worker/ holds app only, both versions; tool (no thread label) is under @thread/-/" \
	test "$(dirs "$m/@thread/worker")/$(dirs "$m/@thread/worker/app")/$(dirs "$m/@thread/-")" = "app /1 2 /app tool "
check "@container/-/ holds the series without a container" \
	test "$(cat "$m/@container/-/app/1/folded")" = "$(printf 'app;main;io;read 5000000\napp;main;odd 3000000\napp;main;work;a 12000000')"
check "no @host, @cgroup, ... below a label value's root" \
	test ! -e "$m/@thread/io/@cgroup" -a ! -e "$m/@thread/io/@host"

# ---- a partition: the root = Σ over each label's values -----------------------------------------
for key in thread cgroup container; do
	for f in folded app/1/folded app/1/main/folded tool/1/folded; do
		parts=()
		for v in "$m/@$key"/*; do [ -e "$v/$f" ] && parts+=("$v/$f"); done
		check "$f = the sum of its @$key values' $f (${#parts[@]} parts)" \
			test "$(folded_sum "$m/$f")" = "$(folded_sum "${parts[@]}")"
	done
	sum=0
	for v in "$m/@$key"/*; do [ -e "$v/app/1/total" ] && sum=$((sum + $(cat "$v/app/1/total"))); done
	check "app/1/total = Σ @$key/*/app/1/total ($sum)" test "$(cat "$m/app/1/total")" = "$sum"
done

# ---- the views inside a label value -------------------------------------------------------------
w=$m/@thread/worker
check "@thread/worker/@range/t0/t0+60/app/1/folded: worker's stacks of the first minute only" \
	test "$(cat "$w/@range/$t0/$((t0 + 60))/app/1/folded")" = "app;main;work;a 10000000"
check "@thread/worker/@range/.../@diff: b is new in the second minute" \
	grep -qx "app;main;work;b 0 7000000" "$w/@range/$t0/$((t0 + 60))/@diff/$((t0 + 60))/$((t0 + 120))/app/1/folded"
check "@thread/worker/app/1/timeline: two intervals, 10 and 7 samples" \
	test "$(grep -v '^#' "$w/app/1/timeline" | awk '{ printf "%s ", $3 }')" = "10 7 "
check "@thread/worker/app/1/top ranks a then b" \
	test "$(grep -v '^#' "$w/app/1/top" | awk '{ printf "%s ", $NF }')" = "a b main work "
check "@thread/worker/app/1/@functions/work/total" \
	test "$(cat "$w/app/1/@functions/work/total")" = 17000000
check "@thread/worker/app/@diff/1/2/folded" \
	grep -qx "app;main;v2 0 4000000" "$w/app/@diff/1/2/folded"
check "@thread/worker/folded (the whole view of worker)" \
	test "$(cat "$w/folded")" = "$(printf 'app;main;v2 4000000\napp;main;work;a 10000000\napp;main;work;b 7000000')"

# ---- about --------------------------------------------------------------------------------------
cat >"$tmp/about.want" <<EOF
binary app
version 1
event cpu-clock
unit nanoseconds
first $t0 $(date -u -d @$t0 +%Y-%m-%dT%H:%M:%SZ)
last $((t0 + 60)) $(date -u -d @$((t0 + 60)) +%Y-%m-%dT%H:%M:%SZ)
hosts 2
host h1
host h2
exes 2
exe /opt/app
exe /usr/bin/app
cgroups 2
cgroup system.slice/a.service
cgroup system.slice/b.service
containers 1
container 0123abcd
threads 3
thread io
thread w\x5cx01k
thread worker
cmdlines 1
cmdline app --serve
EOF
check "app/1/about: every fact, one a line" diff "$tmp/about.want" "$m/app/1/about"
check "@thread/io/app/1/about: io's series only" \
	test "$(grep -E '^(hosts|host|threads|thread|cgroups|exes) ' "$m/@thread/io/app/1/about" | tr '\n' '|')" = \
	"hosts 1|host h1|exes 1|cgroups 1|threads 1|thread io|"
check "about in a window's version directory (@thread/worker/@range/...)" \
	grep -qx "threads 1" "$m/@thread/worker/@range/$t0/$((t0 + 120))/app/1/about"
printf 'h1\tapp\t3\t-\t%s\t1\tabout;x\n' $t0 | "$fill" "$tmp/esc" || bad "labels-fill esc"
if mount_at "$tmp/esc" "$tmp/m3" app; then
	check "a frame named about is a directory %61bout beside the about file" \
		test "$(cat "$tmp/m3/app/3/%61bout/name")" = about -a -n "$(cat "$tmp/m3/app/3/about")"
fi

check "about of a version that is a build id names it" \
	test "$(grep -E '^(version|build_id|exes|exe) ' "$m/app/3f2a9c01d4e5/about" | tr '\n' '|')" = \
	"version 3f2a9c01d4e5|build_id 3f2a9c01d4e5|exes 1|exe /usr/bin/app|"
check "about of a version that is no build id has no build_id line" \
	sh -c "! grep -q '^build_id' '$m/app/2/about'"

# ---- pruned: a label's directory goes away ------------------------------------------------------
printf 'h1\tapp\t1\tthread=gone|cgroup=x.slice\t%s\t2\tmain;old\nh1\tapp\t1\t-\t%s\t1\tmain;new\n' \
	$t0 $((t0 + 86400)) | "$fill" "$tmp/pr" || bad "labels-fill pr"
if mount_at "$tmp/pr" "$tmp/m5" app; then
	check "before the prune: @thread/gone and @cgroup/x.slice" \
		test "$(cat "$tmp/m5/@thread/gone/app/1/total")" = 2000000 -a -d "$tmp/m5/@cgroup/x.slice"
	"$collect" prune --store "$tmp/pr" --before $((t0 + 3600)) >"$tmp/prune.out" 2>&1 ||
		bad "prune: $(cat "$tmp/prune.out")"
	for _ in $(seq 30); do [ -e "$tmp/m5/@thread" ] || break; sleep 0.1; done
	check "after the prune took every labelled series: no /@thread, /@cgroup, @thread/gone within 3 s" \
		test ! -e "$tmp/m5/@thread" -a ! -e "$tmp/m5/@cgroup" -a ! -e "$tmp/m5/@thread/gone/app"
	check "... and app/1 holds what is left" test "$(cat "$tmp/m5/app/1/folded")" = "app;main;new 1000000"
fi

# ---- no labels; a new value while mounted ---------------------------------------------------------
check "a store without labels has no /@cgroup, /@thread" test ! -e "$tmp/m2/@cgroup" -a ! -e "$tmp/m2/@thread"
check "... and its @host still works" test "$(cat "$tmp/m2/@host/h1/plain/1/folded")" = "plain;main;x 3000000"
printf 'h1\tapp\t1\tthread=late\t%s\t1\tmain;late\n' $((t0 + 90)) | "$fill" "$store" || bad "labels-fill late"
for _ in $(seq 30); do ls "$m/@thread" | grep -qx late && break; sleep 0.1; done
check "a thread written while mounted appears in ls /@thread within 3 s" \
	sh -c "ls '$m/@thread' | grep -qx late"
check "... and the sum over threads is still the root's" \
	test "$(folded_sum "$m/app/1/folded")" = "$(folded_sum "$m"/@thread/*/app/1/folded)"

# ---- folded imports with --label ----------------------------------------------------------------
printf 'main;alpha_work 30\nmain;shared 5\n' >"$tmp/alpha.folded"
printf 'main;beta_work 10\nmain;shared 5\n' >"$tmp/beta.folded"
for th in alpha beta; do
	"$collect" import --store "$tmp/imp" --binary imp --version 1 --time $t0 --label thread=$th \
		--label cgroup=user.slice/u.scope "$tmp/$th.folded" >/dev/null 2>"$tmp/imp.err" ||
		bad "import --label thread=$th: $(cat "$tmp/imp.err")"
done
if mount_at "$tmp/imp" "$tmp/m6" imp; then
	check "imported with --label: @thread/alpha/ holds alpha's stacks only" \
		test "$(cat "$tmp/m6/@thread/alpha/imp/1/folded")" = "$(printf 'imp;main;alpha_work 30\nimp;main;shared 5')"
	check "... the root sums both: imp/1/folded" \
		test "$(cat "$tmp/m6/imp/1/folded")" = "$(printf 'imp;main;alpha_work 30\nimp;main;beta_work 10\nimp;main;shared 10')"
	check "... @cgroup/user.slice%2Fu.scope/ is the whole of it" \
		test "$(cat "$tmp/m6/@cgroup/user.slice%2Fu.scope/imp/1/folded")" = "$(cat "$tmp/m6/imp/1/folded")"
fi

# ---- the same over a database -------------------------------------------------------------------
. "$(dirname "$0")/lib-pg.sh"
if [ -n "$(pg__missing)" ]; then
	skip "no PostgreSQL 15 here: the database's @cgroup not compared ($(pg__missing))"
elif ! pg_start "$tmp" pg >"$tmp/pg.out" 2>&1; then
	skip "cannot start a PostgreSQL 15 server: $(tail -3 "$tmp/pg.out")"
else
	pg_createdb labels >/dev/null
	db=$(pg_uri labels postgres)
	"$collect" push --store "$store" --to "$db" >"$tmp/push.out" 2>&1 ||
		bad "push to the database: $(cat "$tmp/push.out")"
	mount_at "$db" "$tmp/m4" app
	# callgrind numbers functions in the order the store met their frames,
	# which a push need not keep (as in test-hosts.sh): compared apart.
	check "the database's @cgroup tree is the directory's (diff -r, but callgrind)" \
		diff -r -x callgrind "$m/@cgroup" "$tmp/m4/@cgroup"
	check "... and its callgrind files have the same cost lines (sorted)" \
		test "$(find "$m/@cgroup" -name callgrind | wc -l)" -gt 10 -a \
		"$(cd "$m/@cgroup" && find . -name callgrind | sort | xargs grep -h '^[0-9]' | sort | md5sum)" = \
		"$(cd "$tmp/m4/@cgroup" && find . -name callgrind | sort | xargs grep -h '^[0-9]' | sort | md5sum)"
	check "the database's @thread listing and app/1/about are the directory's" \
		bash -c "diff <(ls '$m/@thread') <(ls '$tmp/m4/@thread') && diff '$m/app/1/about' '$tmp/m4/app/1/about'"
fi
finish

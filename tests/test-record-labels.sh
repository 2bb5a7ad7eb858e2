#!/usr/bin/env bash
# test-record-labels.sh — who ran a sample (issue 40): the labels `record`
# gives each series, read back with tests/labels-folded (every stack with
# its series' labels) and `stats --by LABEL`.
#
#  (a) two copies of tests/labels-target, each in a cgroup the test makes
#      under the cgroup2 mount (one named like a docker scope,
#      docker-<64 hex>.scope), one running work_a and the other work_b:
#      each cgroup's series hold only their copy's function; the docker
#      one has the container label (the 64 hex digits), the other none;
#      cri-containerd-<id>.scope (under kubepods.slice), libpod-<id>.scope,
#      crio-<id>.scope and docker/<id> give their ids, libpod-conmon-… none.
#  (b) labels-target with two named threads running 3/4 and 1/4 of the
#      loop iterations: the thread label splits the samples 0.75/0.25
#      (within 0.05); a thread named with an escape sequence is stored
#      cleaned (\x1b...).
#  (c) a copy of labels-target and a hard link to it, run from their two
#      paths: the exe label names each path, with work_a's stacks.
#  (d) 20,000 short children, each with a new thread name, under
#      `record -a -F 999`: labels-target's series stay within the store's bound
#      (STORE_LABEL_SETS_MAX label sets and their (other) set), printed,
#      and every child sample is still stored.
#  (e) --no-labels: no series has labels; --cmdline: the command line.
#   usage: tests/test-record-labels.sh BUILD_DIR   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-record-labels.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
collect=${FLAMEFS_COLLECT:-$build/flamefs-collect}
target=$build/tests/labels-target
folded=$build/tests/labels-folded
export LC_ALL=C

. "$here/lib-e2e.sh"
e2e_setup record-labels
e2e_need_bpf

cgroot=
e2e_on_exit() {
	# Move anything left back to the root and remove the test's cgroups.
	if [ -n "$cgroot" ] && [ -d "$cgroot" ]; then
		find "$cgroot" -depth -type d | while read -r d; do
			while read -r p; do echo "$p" >"$cgmount/cgroup.procs" 2>/dev/null; done \
				<"$d/cgroup.procs"
			rmdir "$d" 2>/dev/null
		done
	fi
}

# ---- (a) two cgroups ---------------------------------------------------------
cgmount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
if [ -z "$cgmount" ] || ! mkdir "$cgmount/flamefs-test-$$" 2>/dev/null; then
	skip "(a) no writable cgroup2 mount here: the cgroup and container labels are not tested"
else
	cgroot=$cgmount/flamefs-test-$$
	hex=$(printf '%s' "$$-$RANDOM" | sha256sum | cut -c1-64)
	cga=$cgroot/svc-a.service
	cgb=$cgroot/docker-$hex.scope
	mkdir "$cga" "$cgb"
	rel=${cgroot#"$cgmount"/}
	"$collect" record --store "$tmp/cg" -F 499 -- bash -c "
		(echo \$BASHPID >'$cga/cgroup.procs' && exec '$target' work-a 300000000) &
		(echo \$BASHPID >'$cgb/cgroup.procs' && exec '$target' work-b 300000000) &
		wait" 2>"$tmp/cg.err" || { bad "(a) record failed"; cat "$tmp/cg.err"; }
	"$folded" "$tmp/cg" | grep -P '\tlabels-target\t' >"$tmp/cg.folded"
	la="(^|\\|)cgroup=$rel/svc-a\\.service(\\||\$)"
	lb="(^|\\|)cgroup=$rel/docker-$hex\\.scope(\\||\$)"
	a_a=$(labels_sum "$tmp/cg.folded" "$la" ';work_a;')
	a_b=$(labels_sum "$tmp/cg.folded" "$la" ';work_b;')
	b_a=$(labels_sum "$tmp/cg.folded" "$lb" ';work_a;')
	b_b=$(labels_sum "$tmp/cg.folded" "$lb" ';work_b;')
	echo "       weight (ns) in cgroup svc-a: work_a $a_a, work_b $a_b; in the docker scope: work_a $b_a, work_b $b_b"
	check "(a) svc-a's series hold work_a's stacks" test "$a_a" -gt 50000000
	check "(a) svc-a's series hold no work_b stack" test "$a_b" -eq 0
	check "(a) the docker scope's series hold work_b's stacks" test "$b_b" -gt 50000000
	check "(a) the docker scope's series hold no work_a stack" test "$b_a" -eq 0
	all=$(labels_sum "$tmp/cg.folded" "" '')
	in_a=$(labels_sum "$tmp/cg.folded" "$la" '')
	in_b=$(labels_sum "$tmp/cg.folded" "$lb" '')
	check "(a) every labels-target sample is in one of the two cgroups ($all)" \
		test "$all" -eq $((in_a + in_b))
	cont=$(labels_sum "$tmp/cg.folded" "(^|\\|)container=$hex(\\||\$)" '')
	check "(a) the docker scope gives the container label ($hex)" test "$cont" -eq "$in_b"
	nocont=$(awk -F '\t' -v re="$la" '$1 ~ re && $1 ~ /(^|\|)container=/' "$tmp/cg.folded" | wc -l)
	check "(a) svc-a has no container label" test "$nocont" -eq 0
	"$collect" stats --store "$tmp/cg" --by cgroup >"$tmp/cg.stats"
	check "(a) stats --by cgroup lists both cgroups" \
		grep -q "^$rel/svc-a.service " "$tmp/cg.stats"
	check "(a) stats --by container lists the container" \
		sh -c "'$collect' stats --store '$tmp/cg' --by container | grep -q '^$hex '"
	# The other runtimes' shapes, each a cgroup of its own with a short run.
	h2=$(printf '%s' "$hex" | sha256sum | cut -c1-64)
	mkdir -p "$cgroot/kubepods.slice/cri-containerd-$h2.scope" "$cgroot/libpod-${h2:0:40}.scope" \
		"$cgroot/crio-${h2:0:32}.scope" "$cgroot/docker/$h2" "$cgroot/libpod-conmon-$h2.scope"
	script=
	for d in kubepods.slice/cri-containerd-$h2.scope libpod-${h2:0:40}.scope crio-${h2:0:32}.scope \
		docker/$h2 libpod-conmon-$h2.scope; do
		script+="(echo \$BASHPID >'$cgroot/$d/cgroup.procs' && exec '$target' work-a 150000000) & "
	done
	"$collect" record --store "$tmp/rt" -F 499 -- bash -c "$script wait" 2>"$tmp/rt.err" ||
		{ bad "(a) record of the runtimes' shapes failed"; cat "$tmp/rt.err"; }
	"$folded" "$tmp/rt" | grep -P '\tlabels-target\t' >"$tmp/rt.folded"
	for pair in "kubepods\\.slice/cri-containerd-$h2\\.scope $h2" "libpod-${h2:0:40}\\.scope ${h2:0:40}" \
		"crio-${h2:0:32}\\.scope ${h2:0:32}" "docker/$h2 $h2"; do
		set -- $pair
		n=$(awk -F '\t' -v c="(^|\\|)cgroup=$rel/$1(\\||\$)" -v k="(^|\\|)container=$2(\\||\$)" \
			'$1 ~ c { all++; if ($1 ~ k) got++ } END { printf "%d %d\n", all, got }' "$tmp/rt.folded")
		check "(a) cgroup $rel/$1 gives container ${2:0:12}… (stacks, with the label: $n)" \
			awk -v n="$n" 'BEGIN { split(n, a, " "); exit !(a[1] > 0 && a[1] == a[2]) }'
	done
	n=$(awk -F '\t' -v c="(^|\\|)cgroup=$rel/libpod-conmon-" '$1 ~ c && $1 ~ /(^|\|)container=/' "$tmp/rt.folded" | wc -l)
	check "(a) podman's conmon scope (libpod-conmon-…) gives no container label" test "$n" -eq 0
	e2e_on_exit
	cgroot=
fi

# ---- (b) two named threads, 75/25 --------------------------------------------
"$collect" record --store "$tmp/th" -F 499 -- "$target" threads 800000000 >"$tmp/th.cpu" 2>"$tmp/th.err" ||
	{ bad "(b) record failed"; cat "$tmp/th.err"; }
# What each thread ran, as the kernel counted it (CLOCK_THREAD_CPUTIME_ID):
# 3/4 and 1/4 of the iterations take 3/4 and 1/4 of the CPU on a quiet
# machine, not always beside two CPU hogs.
truth=$(awk '$1 == "lt-big" { a = $2 } $1 == "lt-small" { b = $2 } END { if (a + b) printf "%.4f", a / (a + b); else print 0 }' "$tmp/th.cpu")
"$folded" "$tmp/th" | grep -P '\tlabels-target\t' >"$tmp/th.folded"
big=$(labels_sum "$tmp/th.folded" '(^|\|)thread=lt-big(\||$)' ';spin')
small=$(labels_sum "$tmp/th.folded" '(^|\|)thread=lt-small(\||$)' ';spin')
share=$(awk -v a="$big" -v b="$small" 'BEGIN { if (a + b) printf "%.4f", a / (a + b); else print 0 }')
echo "       weight (ns) of thread lt-big $big, lt-small $small: share $share (the threads' CPU time: $truth; 3/4 of the iterations)"
check "(b) the thread label splits the work as the threads ran it (within 0.05)" \
	awk -v s="$share" -v t="$truth" 'BEGIN { exit !(t > 0 && s >= t - 0.05 && s <= t + 0.05) }'
"$collect" stats --store "$tmp/th" --by thread >"$tmp/th.stats"
check "(b) stats --by thread lists lt-big with its weight" \
	awk -v n="$big" '$1 == "lt-big" { f = ($4 >= n) } END { exit !f }' "$tmp/th.stats"
# A thread name with an escape sequence is stored cleaned.
cat >"$tmp/esc.c" <<'EOF'
#define _GNU_SOURCE
#include <sys/prctl.h>
volatile unsigned long sink;
int main(void) { prctl(PR_SET_NAME, "e\x1b[2J\\z"); for (unsigned long i = 0; i < 300000000ul; i++) sink += i; return 0; }
EOF
if cc -O1 "$tmp/esc.c" -o "$tmp/esc" 2>/dev/null; then
	"$collect" record --store "$tmp/esc.st" -F 499 -- "$tmp/esc" 2>"$tmp/esc.err"
	"$collect" stats --store "$tmp/esc.st" --by thread >"$tmp/esc.stats"
	check "(b) a thread named \"e\\x1b[2J\\\\z\" is stored as e\\x1b[2J\\x5cz" \
		grep -qF 'e\x1b[2J\x5cz ' "$tmp/esc.stats"
	check "(b) no control byte reaches the labels" \
		sh -c "! '$folded' '$tmp/esc.st' | cut -f1 | grep -qP '[\\x00-\\x08\\x0b-\\x1f\\x7f]'"
else
	skip "(b) no C compiler for the escape-named thread"
fi

# ---- (c) exe: a copy and a hard link ------------------------------------------
mkdir "$tmp/one" "$tmp/two"
cp "$target" "$tmp/one/labels-target"
ln "$tmp/one/labels-target" "$tmp/two/labels-target"
"$collect" record --store "$tmp/exe" -F 499 -- bash -c "
	'$tmp/one/labels-target' exec-self 200000000 &
	'$tmp/two/labels-target' exec-self 200000000 &
	wait" 2>"$tmp/exe.err" || { bad "(c) record failed"; cat "$tmp/exe.err"; }
"$folded" "$tmp/exe" | grep -P '\tlabels-target\t' >"$tmp/exe.folded"
one=$(labels_sum "$tmp/exe.folded" "(^|\\|)exe=$tmp/one/labels-target(\\||\$)" ';work_a;')
two=$(labels_sum "$tmp/exe.folded" "(^|\\|)exe=$tmp/two/labels-target(\\||\$)" ';work_a;')
echo "       weight (ns) of exe $tmp/one/labels-target: $one, $tmp/two/labels-target (hard link): $two"
check "(c) the copy's path is its exe label" test "$one" -gt 20000000
check "(c) the hard link's path is its exe label" test "$two" -gt 20000000
other=$(awk -F '\t' '$1 !~ /(^|\|)exe=/' "$tmp/exe.folded" | wc -l)
check "(c) every labels-target series has an exe label" test "$other" -eq 0

# ---- (d) a fork loop under -a: the series stay bounded -------------------------
"$collect" record --store "$tmp/forks" -a -F 999 2>"$tmp/forks.err" &
recpid=$!
for _ in $(seq 100); do grep -q "recording at" "$tmp/forks.err" && break; sleep 0.1; done
"$target" forks 20000 || bad "(d) the fork loop failed"
kill -INT "$recpid"
wait "$recpid" || { bad "(d) record -a failed"; cat "$tmp/forks.err"; }
"$collect" stats --store "$tmp/forks" >"$tmp/forks.stats"
nseries=$(awk '$1 == "labels-target"' "$tmp/forks.stats" | wc -l)
total=$(awk '/ series, [0-9]+ frames/ { print $1 }' "$tmp/forks.stats")
"$collect" stats --store "$tmp/forks" --by thread >"$tmp/forks.by"
names=$(awk '$1 ~ /^lt-f[0-9]+$/' "$tmp/forks.by" | wc -l)
other=$(awk '$1 == "(other)" { print $3 }' "$tmp/forks.by")
"$folded" "$tmp/forks" | grep -P '\tlabels-target\t' >"$tmp/forks.folded"
spun=$(labels_sum "$tmp/forks.folded" '' ';spin')
echo "       20,000 children: $nseries labels-target series ($total in the store), $names thread names kept, ${other:-0} samples under (other), weight $spun in spin"
check "(d) labels-target's series stay within 256 label sets and (other) per event" \
	test "$nseries" -le 257
check "(d) the whole store stays bounded too ($total series, 20,000 children)" test "$total" -lt 2000
check "(d) past the bound the children's samples go to (other)" test "${other:-0}" -gt 0
check "(d) the children's samples are stored (spin: $spun)" test "$spun" -gt 0

# ---- (e) --no-labels, --cmdline ------------------------------------------------
"$collect" record --store "$tmp/none" --no-labels -F 499 -- "$target" work-a 100000000 2>"$tmp/none.err" ||
	{ bad "(e) record --no-labels failed"; cat "$tmp/none.err"; }
"$folded" "$tmp/none" | grep -P '\tlabels-target\t' >"$tmp/none.folded"
check "(e) --no-labels: every series has no labels" \
	awk -F '\t' '$1 != "-" { b = 1 } END { exit b || NR == 0 }' "$tmp/none.folded"
"$collect" record --store "$tmp/cmd" --cmdline -F 499 -- "$target" exec-self 100000000 2>"$tmp/cmd.err" ||
	{ bad "(e) record --cmdline failed"; cat "$tmp/cmd.err"; }
check "(e) --cmdline: the command line is a label" \
	sh -c "'$collect' stats --store '$tmp/cmd' --by cmdline | grep -qF '$target exec-self 100000000 '"
check "(e) without --cmdline no command line is kept" \
	sh -c "'$collect' stats --store '$tmp/exe' --by cmdline | awk 'NR == 2 && \$1 == \"\\xe2\\x80\\x94\" { f = 1 } END { exit !f }'"
"$collect" record --store "$tmp/bad" --labels cgroup,cmdline -- true 2>"$tmp/bad.err"
check "(e) --labels refuses cmdline (--cmdline only), exit 2" test $? -eq 2
"$collect" record --store "$tmp/bad" --labels cgroup,pid -- true 2>"$tmp/bad.err"
check "(e) --labels refuses an unknown label" grep -q 'got "pid"' "$tmp/bad.err"

finish

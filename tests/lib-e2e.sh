# lib-e2e.sh — sourced by the end-to-end tests (test-view.sh, test-record.sh,
# test-crash.sh, ...): a scratch directory removed on exit, the ok/bad/check
# reporters with their failure count, and the exit cleanup.
#
#   e2e_setup NAME   makes $tmp (/tmp/flamefs-test-NAME.XXXXXX), sets
#                    $mnt=$tmp/mnt and $store=$tmp/store (neither created),
#                    failures=0, and arms the cleanup
#   e2e_cleanup      (on exit) runs the test's e2e_on_exit if it defines
#                    one (to kill its own processes), stops the PostgreSQL
#                    servers of lib-pg.sh if loaded, lazily unmounts $mnt,
#                    waits for the children and removes $tmp
#   ok, bad, check, skip, finish, stack_weight, folded_sum, median: lib.sh
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

e2e_cleanup() {
	declare -F e2e_on_exit >/dev/null && e2e_on_exit
	declare -F pg_cleanup >/dev/null && pg_cleanup
	fusermount3 -u -z "$mnt" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}

e2e_setup() {
	tmp=$(mktemp -d "/tmp/flamefs-test-$1.XXXXXX")
	mnt=$tmp/mnt
	store=$tmp/store
	failures=0
	trap e2e_cleanup EXIT
}

# e2e_need_bpf [RECORD OPTIONS...]: a 0.3 s recording of `true` (with the
# options, e.g. -e cpu,offcpu) into $tmp/probe; prints a SKIP line and exits
# 77 where BPF sampling cannot work here, fails the test on any other error.
# Needs $collect.
e2e_need_bpf() {
	if "$collect" record --store "$tmp/probe" -d 0.3 "$@" -- true 2>"$tmp/probe.err"; then
		return 0
	fi
	if grep -qE "needs CAP_BPF|cannot load the BPF|cannot open the BPF|perf_event_open|cannot attach|no BPF sampler|has no " \
		"$tmp/probe.err"; then
		echo "SKIP: BPF sampling unavailable here: $(head -1 "$tmp/probe.err")"
		exit 77
	fi
	echo "FAIL - a 0.3 s recording of 'true' failed:"
	cat "$tmp/probe.err"
	exit 1
}

# labels_sum FILE RE [STACK_RE]: the weight of the stacks (tests/labels-folded
# lines) whose labels match RE and whose stack matches STACK_RE ("": any).
labels_sum() {
	LRE=$2 SRE=${3:-} awk -F '\t' '{ n = $3; sub(/.* /, "", n); s = $3; sub(/ [0-9]+$/, "", s)
		if ($1 ~ ENVIRON["LRE"] && (ENVIRON["SRE"] == "" || s ~ ENVIRON["SRE"])) t += n }
		END { printf "%.0f\n", t }' "$1"
}

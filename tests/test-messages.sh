#!/usr/bin/env bash
# test-messages.sh — what both programs say when they refuse, and what
# `stats` shows where a figure does not apply (issue #43).  Each case runs
# the real program and compares its exact first line, its line count and
# its exit status:
#   - a usage error is one line that ends with a pointer to --help, exit 2
#     (not the whole help);
#   - every other refusal of flamefs is one line that starts "flamefs:"
#     and says what to do (mkdir the mountpoint, make a store, use an
#     empty directory or -o nonempty), exit 1;
#   - flamefs-collect on a missing store says how to make one, and
#     symbolize on a --debug-dir that is not a directory says so;
#   - record -- COMMAND refuses a program it cannot run, making no store;
#   - record without its capabilities says how to get them;
#   - flamefs refuses a mountpoint that holds files, and -o nonempty
#     mounts over them;
#   - stats: IMPORTED and DISK show "—" where nothing applies, and no
#     "x smaller" ratio for a store bigger than its input;
#   - every command of flamefs-collect, scripted: an unknown option, an
#     option without its value and a bad value are usage errors (one line,
#     a pointer to --help, exit 2, before any store is opened), and --help
#     prints the command's usage with EXAMPLES;
#   - flamefs as a user other than root: a store it may not read, a
#     mountpoint it may not write and a /dev/fuse it may not open each say
#     so in one "flamefs:" line with what to do (libfuse's own messages
#     included).
#   usage: tests/test-messages.sh BUILD_DIR      exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-messages.sh BUILD_DIR}
flamefs=$build/fs/flamefs
collect=$build/flamefs-collect
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-e2e.sh"
e2e_setup messages

# says DESCRIPTION STATUS LINE COMMAND...: COMMAND exits STATUS and prints
# exactly one line on stderr and stdout together, LINE.
says() {
	local what=$1 want_rc=$2 want=$3 out rc
	shift 3
	out=$(timeout 20 "$@" 2>&1 </dev/null)
	rc=$?
	if [ "$rc" = "$want_rc" ] && [ "$out" = "$want" ]; then
		ok "$what: $want"
	else
		bad "$what: exit $rc (want $want_rc), got:"
		printf '%s\n' "$out" | head -5 | sed 's/^/    /'
		echo "    want: $want"
	fi
}

printf 'app;main;work 5\n' >"$tmp/one.folded"
"$collect" import --store "$store" "$tmp/one.folded" 2>/dev/null ||
	{ echo "FAIL - cannot make a store"; exit 1; }
mkdir -p "$tmp/empty" "$tmp/full" "$tmp/notastore"
echo keep >"$tmp/full/file"
echo hello >"$tmp/notastore/file"

# ---- flamefs: usage errors -----------------------------------------------------------
help="try flamefs --help"
says "flamefs with no arguments" 2 "flamefs: expected STORE MOUNTPOINT; $help" "$flamefs"
says "flamefs without MOUNTPOINT" 2 "flamefs: expected STORE MOUNTPOINT; $help" "$flamefs" "$store"
says "flamefs --bogus" 2 "flamefs: unknown option --bogus; $help" "$flamefs" --bogus "$store" "$tmp/empty"
says "flamefs -x" 2 "flamefs: unknown option -x; $help" "$flamefs" -x "$store" "$tmp/empty"
says "flamefs -o bogus" 2 "flamefs: unknown mount option bogus; $help" \
	"$flamefs" -o bogus "$store" "$tmp/empty"
says "flamefs with a third argument" 2 "flamefs: unexpected argument extra; $help" \
	"$flamefs" "$store" "$tmp/empty" extra
says "flamefs -o rw" 2 "flamefs: the view is read-only; drop the rw option" \
	"$flamefs" -o rw "$store" "$tmp/empty"
says "flamefs -o max_render=x" 2 \
	"flamefs: -o max_render: expected a size in bytes with an optional K, M or G suffix (256M), got \"x\"; $help" \
	"$flamefs" -o max_render=x "$store" "$tmp/empty"
"$flamefs" --help >"$tmp/help" 2>&1
check "flamefs --help: exit 0, its usage first and EXAMPLES" \
	sh -c "test \$? = 0 && head -1 '$tmp/help' | grep -q '^usage: flamefs ' && grep -qx EXAMPLES '$tmp/help'"

# ---- flamefs: what to do --------------------------------------------------------------
make="make one with \`flamefs-collect import\` or \`record\`"
says "flamefs: a missing store" 1 "flamefs: $tmp/nostore: no store here; $make" \
	"$flamefs" "$tmp/nostore" "$tmp/empty"
says "flamefs: a directory that is not a store" 1 "flamefs: $tmp/notastore: not a flamefs store; $make" \
	"$flamefs" "$tmp/notastore" "$tmp/empty"
says "flamefs: a missing mountpoint" 1 "flamefs: $tmp/nomnt: no such directory; mkdir it first" \
	"$flamefs" "$store" "$tmp/nomnt"
says "flamefs: a mountpoint that is a file" 1 \
	"flamefs: $tmp/full/file: not a directory; mount on an empty directory" \
	"$flamefs" "$store" "$tmp/full/file"
check "the not-a-store directory is left as it was" test "$(ls "$tmp/notastore")" = file

if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	says "flamefs: a mountpoint that holds files" 1 \
		"flamefs: $tmp/full: not empty: the mount would hide its files; use an empty directory, or -o nonempty to mount over them" \
		"$flamefs" "$store" "$tmp/full"
	check "not mounted over the files" sh -c "! mountpoint -q '$tmp/full' && test -f '$tmp/full/file'"
	if "$flamefs" -o nonempty "$store" "$tmp/full" 2>"$tmp/ne.err"; then
		check "-o nonempty mounts over the files: the view shows" \
			test "$(cat "$tmp/full/app/default/total" 2>/dev/null)" = 5
		fusermount3 -u "$tmp/full"
		check "and the files are there again after the unmount" test "$(cat "$tmp/full/file")" = keep
	else
		bad "-o nonempty: $(cat "$tmp/ne.err")"
	fi
	mnt=$tmp/empty # the cleanup unmounts it if a case below left it mounted
	if "$flamefs" "$store" "$tmp/empty" 2>"$tmp/m.err"; then
		says "flamefs: a busy mountpoint" 1 \
			"flamefs: $tmp/empty: busy: something is already mounted there; unmount it first (fusermount3 -u $tmp/empty)" \
			"$flamefs" "$store" "$tmp/empty"
		fusermount3 -u "$tmp/empty"
	else
		bad "mount on an empty directory: $(cat "$tmp/m.err")"
	fi
else
	skip "no /dev/fuse or fusermount3: the non-empty and busy mountpoint cases"
fi

# ---- flamefs as a user other than root -----------------------------------------------
# nobody (65534) may read $tmp/pub (a store, 0755) and write $tmp/open
# (0777), but not read $store (0700) nor write $tmp/empty (root's, 0755).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	asnobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	chmod 755 "$tmp"
	"$collect" import --store "$tmp/pub" "$tmp/one.folded" 2>/dev/null
	chmod 755 "$tmp/pub"
	mkdir -m 777 "$tmp/open"
	chmod 700 "$store"
	says "flamefs as nobody: a store it may not read" 1 \
		"flamefs: $store: Permission denied; run as a user who may read the store (its owner, or root)" \
		"${asnobody[@]}" "$flamefs" "$store" "$tmp/open"
	says "flamefs as nobody: a mountpoint it may not write" 1 \
		"flamefs: $tmp/empty: you may not write to it, and FUSE mounts only where its user may; mount on a directory you own, or run as root" \
		"${asnobody[@]}" "$flamefs" "$tmp/pub" "$tmp/empty"
	if [ -c /dev/fuse ] && ! "${asnobody[@]}" test -r /dev/fuse -a -w /dev/fuse; then
		says "flamefs as nobody: a /dev/fuse it may not open (libfuse's message)" 1 \
			"flamefs: failed to open /dev/fuse: Permission denied; run as root, or let your user read and write /dev/fuse (Debian makes it mode 0666)" \
			"${asnobody[@]}" "$flamefs" "$tmp/pub" "$tmp/open"
	else
		skip "nobody may open /dev/fuse here (or there is none): its message"
	fi
	mountpoint -q "$tmp/open" && fusermount3 -u "$tmp/open"
else
	skip "not root or no setpriv: flamefs's messages to a user other than root"
fi

# ---- flamefs-collect: usage errors -----------------------------------------------------
fc="flamefs-collect"
# Every command: an unknown option, an option without its value, a
# missing argument, and --help.  A missing store ($tmp/nostore) shows that
# a usage error comes before the store is looked at.
cmds="import record stats export samples compact prune push merge unwind-table symbolize"
for c in $cmds; do
	try="try '$fc $c --help'"
	st="--store $tmp/nostore"
	[ $c = unwind-table ] && st= # it reads a file, not a store
	says "$c --bogus" 2 "$fc $c: unknown option --bogus; $try" "$collect" $c $st --bogus
	case $c in
	unwind-table) ;; # no option takes a value
	push) says "push --to without a value" 2 "$fc push: option --to needs a value; $try" \
		"$collect" push --store "$tmp/nostore" --to ;;
	symbolize) says "symbolize --debug-dir without a value" 2 \
		"$fc symbolize: option --debug-dir needs a value; $try" \
		"$collect" symbolize --store "$tmp/nostore" --debug-dir ;;
	*) says "$c --store without a value" 2 "$fc $c: option --store needs a value; $try" \
		"$collect" $c --store ;;
	esac
	out=$("$collect" $c --help 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && head -1 <<<"$out" | grep -q "^Usage: $fc $c " && grep -qx EXAMPLES <<<"$out"; then
		ok "$c --help: exit 0, its usage first and EXAMPLES"
	else
		bad "$c --help: exit $rc, first line '$(head -1 <<<"$out")', EXAMPLES $(grep -cx EXAMPLES <<<"$out")"
	fi
done
says "unwind-table without a file" 2 "$fc unwind-table: no FILE given; try '$fc unwind-table --help'" \
	"$collect" unwind-table
says "unwind-table with two files" 2 "$fc unwind-table: unexpected argument b; try '$fc unwind-table --help'" \
	"$collect" unwind-table a b
for c in samples compact symbolize; do
	says "$c with an argument" 2 "$fc $c: unexpected argument extra; try '$fc $c --help'" \
		"$collect" $c --store "$tmp/nostore" extra
done

# Bad values: usage errors too, said before the store is opened.
ehelp="try '$fc export --help'"
says "export --last bogus" 2 \
	"$fc export: --last: expected a duration such as 90s, 5m, 1h or 1d12h, got \"bogus\"; $ehelp" \
	"$collect" export --store "$tmp/nostore" --last bogus
says "export --from x" 2 \
	"$fc export: --from: expected Unix seconds or an ISO 8601 UTC time, to the microsecond at most (1795010523.25, 2026-11-24T14:02:03.250Z), got \"x\"; $ehelp" \
	"$collect" export --store "$tmp/nostore" --from x
says "export --to x" 2 \
	"$fc export: --to: expected Unix seconds or an ISO 8601 UTC time, to the microsecond at most (1795010523.25, 2026-11-24T14:02:03.250Z), got \"x\"; $ehelp" \
	"$collect" export --store "$tmp/nostore" --from 1 --to x
says "export --from after --to" 2 "$fc export: --from must not come after --to; $ehelp" \
	"$collect" export --store "$tmp/nostore" --from 5 --to 1
says "export --label x" 2 "$fc export: --label: expected KEY=VALUE, got \"x\"; $ehelp" \
	"$collect" export --store "$tmp/nostore" --label x
says "import --label x" 2 "$fc import: --label: expected KEY=VALUE, got \"x\"; try '$fc import --help'" \
	"$collect" import --store "$tmp/nostore" --label x "$tmp/one.folded"
phelp="try '$fc prune --help'"
says "prune --older-than bogus" 2 \
	"$fc prune: --older-than \"bogus\": not a duration; expected a duration such as 90, 30m, 12h, 7d or 1d12h; $phelp" \
	"$collect" prune --store "$tmp/nostore" --older-than bogus
says "prune --before x" 2 "$fc prune: --before \"x\": expected a time in seconds; $phelp" \
	"$collect" prune --store "$tmp/nostore" --before x
says "prune --all without --binary" 2 \
	"$fc prune: --all needs --binary (to empty the whole store, remove its directory); $phelp" \
	"$collect" prune --store "$tmp/nostore" --all
says "push --to a directory" 2 \
	"$fc push: --to: expected a database (a connection string that starts with postgresql: or postgres:); to copy into a directory, use merge; try '$fc push --help'" \
	"$collect" push --store "$tmp/nostore" --to "$tmp/dir"
says "push --buckets-per-commit x" 2 \
	"$fc push: --buckets-per-commit: expected a whole number from 1 to 4294967295, got \"x\"; try '$fc push --help'" \
	"$collect" push --store "$tmp/nostore" --to postgresql:///none --buckets-per-commit x
says "merge --buckets-per-commit 0" 2 \
	"$fc merge: --buckets-per-commit: expected a whole number from 1 to 4294967295, got \"0\"; try '$fc merge --help'" \
	"$collect" merge --store "$tmp/nostore" --buckets-per-commit 0 "$store"
says "samples --from x" 2 \
	"$fc samples: --from: expected Unix seconds (1764000000.25) or ISO 8601 UTC (2026-11-24T14:02:03.250Z), got \"x\"; try '$fc samples --help'" \
	"$collect" samples --store "$tmp/nostore" --from x
says "record -p x" 2 "$fc record: -p: expected PID[,PID...], got \"1,x\"; try '$fc record --help'" \
	"$collect" record --store "$tmp/nostore" -p 1,x
check "... and no store was made by any of them" test ! -e "$tmp/nostore"

says "$fc with no command" 2 \
	"$fc: no command given; expected import, record, stats, export, samples, compact, prune, push, merge, unwind-table or symbolize; try '$fc --help'" \
	"$collect"
says "$fc bogus" 2 \
	"$fc: unknown command \"bogus\"; expected import, record, stats, export, samples, compact, prune, push, merge, unwind-table or symbolize; try '$fc --help'" \
	"$collect" bogus
says "import --bogus" 2 "$fc import: unknown option --bogus; try '$fc import --help'" \
	"$collect" import --bogus x
says "import --store without a value" 2 "$fc import: option --store needs a value; try '$fc import --help'" \
	"$collect" import --store
says "import --one-batch=1" 2 "$fc import: option --one-batch takes no value; try '$fc import --help'" \
	"$collect" import --one-batch=1 x
says "import without a file" 2 \
	"$fc import: no input FILE given (- reads standard input); try '$fc import --help'" \
	"$collect" import --store "$store"
says "stats --bogus" 2 "$fc stats: unknown option --bogus; try '$fc stats --help'" \
	"$collect" stats --bogus
says "stats with an argument" 2 "$fc stats: unexpected argument extra; try '$fc stats --help'" \
	"$collect" stats --store "$store" extra
says "export -x" 2 "$fc export: unknown option -x; try '$fc export --help'" "$collect" export -x
says "export --format bogus" 2 \
	"$fc export: --format: expected folded, pprof, svg, callgrind, top, timeline, timeline.svg, quality or regressions, got \"bogus\"; try '$fc export --help'" \
	"$collect" export --store "$store" --format bogus
says "export --format regressions without --base" 2 \
	"$fc export: --format regressions needs --base; try '$fc export --help'" \
	"$collect" export --store "$store" --format regressions
says "stats --by-host --quality" 2 \
	"$fc stats: --by-host, --by and --quality exclude each other; try '$fc stats --help'" \
	"$collect" stats --store "$store" --by-host --quality
says "import --format bogus" 2 \
	"$fc import: --format: expected perf, perf.data, folded, pprof, gperftools-cpu, legacy or auto, got \"bogus\"; try '$fc import --help'" \
	"$collect" import --store "$tmp/imp" --format bogus "$tmp/one.folded"
says "import --one-batch --keep-going" 2 \
	"$fc import: --one-batch and --keep-going exclude each other: one batch is imported whole or not at all; try '$fc import --help'" \
	"$collect" import --store "$tmp/imp" --label env=a --one-batch --keep-going "$tmp/one.folded"
check "... and no store was made" test ! -e "$tmp/imp"
says "compact --bogus" 2 "$fc compact: unknown option --bogus; try '$fc compact --help'" \
	"$collect" compact --bogus
says "prune without a cut-off" 2 \
	"$fc prune: give exactly one of --older-than, --before and --all; try '$fc prune --help'" \
	"$collect" prune --store "$store"
says "push without --to" 2 "$fc push: --to DATABASE is required; try '$fc push --help'" \
	"$collect" push --store "$store"
says "merge without a source" 2 "$fc merge: no SOURCE store given; try '$fc merge --help'" \
	"$collect" merge --store "$store"
says "record --bogus" 2 "$fc record: unknown option --bogus; try '$fc record --help'" \
	"$collect" record --bogus
says "record -F without a value" 2 "$fc record: option -F needs a value; try '$fc record --help'" \
	"$collect" record -F
rhelp="try '$fc record --help'"
says "record -F 0" 2 "$fc record: -F: expected a frequency from 1 to 100000 Hz, got \"0\"; $rhelp" \
	"$collect" record -F 0 -- true
says "record -d x" 2 "$fc record: -d: expected seconds > 0, got \"x\"; $rhelp" "$collect" record -d x -- true
says "record --keep-samples x" 2 \
	"$fc record: --keep-samples: expected a duration such as 30m, 6h or 1d, or 0, got \"x\"; $rhelp" \
	"$collect" record --keep-samples x -- true
says "record -e bogus" 2 \
	"$fc record: -e: unknown event \"bogus\"; expected cpu, offcpu, rss, block, block-time, net, vfs, vfs-read or vfs-write; $rhelp" \
	"$collect" record -e bogus -- true
says "record -e cpu,cpu" 2 "$fc record: -e: cpu given twice; $rhelp" "$collect" record -e cpu,cpu -- true
says "record without a target" 2 \
	"$fc record: give exactly one of -p PID, -a or -- COMMAND; try '$fc record --help'" \
	"$collect" record --store "$tmp/rec"

# ---- flamefs-collect: a missing store says how to make one --------------------------
fmake="make one with \`$fc import\` or \`$fc record\`"
for c in stats export compact samples symbolize; do
	says "$c on a missing store" 1 "$fc: $tmp/nostore: no such store; $fmake" \
		"$collect" $c --store "$tmp/nostore"
done
says "prune on a missing store" 1 "$fc: $tmp/nostore: no such store; $fmake" \
	"$collect" prune --older-than 1d --store "$tmp/nostore"
check "no store was made by asking" test ! -e "$tmp/nostore"

says "symbolize --debug-dir on a missing directory" 1 \
	"$fc: symbolize: --debug-dir $tmp/nodebug: No such file or directory; give a directory of debug files" \
	"$collect" symbolize --store "$store" --debug-dir "$tmp/nodebug"
says "symbolize --debug-dir on a file" 1 \
	"$fc: symbolize: --debug-dir $tmp/full/file: not a directory; give a directory of debug files" \
	"$collect" symbolize --store "$store" --debug-dir "$tmp/full/file"

# ---- record of a program that cannot run: refused before anything starts -------------
if [ "$(id -u)" = 0 ]; then
	says "record -- a missing program" 1 \
		"$fc: record: cannot run no-such-program-here: not found on PATH; give its path, or a program on PATH" \
		"$collect" record --store "$tmp/rec" -- no-such-program-here
	says "record -- a path that is not there" 1 \
		"$fc: record: cannot run $tmp/nope: No such file or directory; give its path, or a program on PATH" \
		"$collect" record --store "$tmp/rec" -- "$tmp/nope"
	check "... and no store was made" test ! -e "$tmp/rec"
else
	skip "not root: record's refusal of a missing program comes after its capability check"
fi

# ---- record without its capabilities ---------------------------------------------------
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	says "record as an unprivileged user" 1 \
		"$fc: record needs CAP_BPF and CAP_PERFMON; this process lacks CAP_BPF and CAP_PERFMON: run as root, or setcap cap_bpf,cap_perfmon+ep $(readlink -f "$collect")" \
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$collect" record --store "$tmp/rec" -- true
else
	skip "not root or no setpriv: record's capability message"
fi

# ---- stats: no misleading 0, no ratio where the store is not smaller -----------------
# cpu.pb.gz has two sample types: its input bytes go to the default one
# (cpu), so samples has none: "—".  A 16-byte input in a store of tens
# of KB: no "x smaller".
"$collect" import --store "$tmp/pp" "$here/data/pprof/cpu.pb.gz" 2>/dev/null ||
	bad "import of cpu.pb.gz failed"
"$collect" stats --store "$tmp/pp" >"$tmp/pp.stats" 2>&1
imported() { awk -v e="$1" 'NR > 1 && NF == 9 && $3 == e { print $7 }' "$tmp/pp.stats"; }
check "stats: IMPORTED of the sample type that got no input is — (got '$(imported samples)')" \
	test "$(imported samples)" = "—"
check "stats: IMPORTED of the default sample type is its input's size (got '$(imported cpu)')" \
	test "$(imported cpu)" = "$(stat -c %s "$here/data/pprof/cpu.pb.gz")"
"$collect" stats --store "$store" >"$tmp/one.stats" 2>&1
counts=$(sed -n 's/^bytes:.* counts=\([0-9]*\) .*/\1/p' "$tmp/one.stats")
disk=$(awk 'NR > 1 && NF == 9 { print $8 }' "$tmp/one.stats")
if [ "$counts" = 0 ]; then
	check "stats: DISK is — while the counts are not in the table files yet (got '$disk')" test "$disk" = "—"
	check "stats: and the footprint gives no parts, only that they are not in table files yet" \
		grep -q '^store on disk: [0-9.k]* bytes (its parts are not in table files yet: compact puts them there; recent tier: [0-9]* samples kept whole); ' "$tmp/one.stats"
else
	check "stats: DISK is a size once the counts are in the table files (got '$disk')" \
		grep -Eqx '[0-9]+(\.[0-9]k)?' <<<"$disk"
fi
check "stats: a store bigger than its input says no 'x smaller'" \
	sh -c "grep -q '^store on disk: .*; imported: 16 bytes\$' '$tmp/one.stats' && ! grep -q 'smaller' '$tmp/one.stats'"

# Recorded series have no input: IMPORTED is — in every row, in --by-host,
# and the footprint says nothing was imported.  The shell loop is counted
# in iterations (about 0.3 s of CPU: some 30 samples at 99 Hz).
if [ "$(id -u)" = 0 ] &&
	"$collect" record --store "$tmp/recd" -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done' \
		2>"$tmp/recd.err"; then
	"$collect" stats --store "$tmp/recd" >"$tmp/recd.stats" 2>&1
	check "stats of a recording: IMPORTED is — in each of its $(awk 'NR > 1 && NF == 9' "$tmp/recd.stats" | wc -l) rows" \
		sh -c "awk 'NR > 1 && NF == 9 { n++; if (\$7 != \"—\") bad++ } END { exit !(n > 0 && !bad) }' '$tmp/recd.stats'"
	check "stats of a recording: the footprint says nothing was imported, no ratio" \
		sh -c "grep -q '; nothing imported (recorded series have no input bytes)\$' '$tmp/recd.stats' && ! grep -q smaller '$tmp/recd.stats'"
	"$collect" stats --by-host --store "$tmp/recd" >"$tmp/recd.byhost" 2>&1
	check "stats --by-host of a recording: IMPORTED is —" \
		sh -c "awk 'NR == 2 { exit !(NF == 7 && \$5 == \"—\") }' '$tmp/recd.byhost'"
elif grep -qE "needs CAP_BPF|cannot load the BPF|cannot open the BPF|perf_event_open|cannot attach|no BPF sampler" \
	"$tmp/recd.err" 2>/dev/null; then
	skip "BPF sampling unavailable here: stats of a recording"
elif [ "$(id -u)" != 0 ]; then
	skip "not root: stats of a recording"
else
	bad "record of a shell loop failed: $(head -3 "$tmp/recd.err")"
fi

finish

#!/usr/bin/env bash
# test-man.sh — the installed manual pages flamefs(1) and flamefs-collect(1):
# man and groff render them without a warning, they carry this version and
# the sections a user looks for, and their options match the programs: every
# option a page documents is listed by --help (and, for flamefs-collect,
# accepted by the command's getopt), and every option --help lists is in
# the page.
#   usage: tests/test-man.sh BUILD_DIR VERSION   exit 0 ok, 1 failure, 77 skip
set -u
build=${1:?usage: test-man.sh BUILD_DIR VERSION}
version=${2:?usage: test-man.sh BUILD_DIR VERSION}
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
. "$here/lib-install.sh"

if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
	echo "SKIP: man or groff not installed (apt-get install man-db groff-base)"
	exit 77
fi
tmp=$(mktemp -d /tmp/flamefs-test-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! install_tree "$tmp/root"; then
	echo "FAIL - meson install --destdir"
	exit 1
fi
collect=$bindir/flamefs-collect
flamefs=$bindir/flamefs

# render PAGE: the page as text, wide enough that option lines do not wrap.
render() { MANWIDTH=200 man -l "$1" 2>/dev/null | col -bx; }

for page in flamefs flamefs-collect; do
	f=$mandir/$page.1
	w=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	check "$page.1: man --warnings is silent" test -z "$w"
	[ -z "$w" ] || echo "$w"
	w=$(groff -man -ww -z "$f" 2>&1)
	check "$page.1: groff -man -ww -z is silent" test -z "$w"
	[ -z "$w" ] || echo "$w"
	render "$f" >"$tmp/$page.txt"
	check "$page.1: footer has the version $version" \
		grep -q "^flamefs $version  " "$tmp/$page.txt"
done
for s in NAME SYNOPSIS DESCRIPTION OPTIONS LAYOUT "FILES OF A CALL-TREE DIRECTORY" \
	UNITS "NAME ESCAPING" "FSTAB AND MOUNT" "EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
	check "flamefs.1 has the section $s" grep -qx "$s" "$tmp/flamefs.txt"
done
for s in NAME SYNOPSIS "GLOBAL OPTIONS" IMPORT RECORD STATS EXPORT SAMPLES COMPACT RETENTION \
	"EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
	check "flamefs-collect.1 has the section $s" grep -qx "$s" "$tmp/flamefs-collect.txt"
done
check "flamefs.1 names the default store and FLAMEFS_STORE" \
	grep -q 'FLAMEFS_STORE' "$tmp/flamefs.txt"
check "flamefs.1 gives the fstab line" \
	grep -q '/var/lib/flamefs  /mnt/prof  fuse.flamefs  ro,allow_other,default_permissions,noauto  0 0' "$tmp/flamefs.txt"

# Options.  A page documents an option on a term line of an option list
# (indented 7 columns, starting with "-"); --help on its lines that start
# with "-" after the indent, before EXAMPLES.
opts() { grep -oE '(^|[ ,[|])--?[A-Za-z][A-Za-z-]*' | sed -E 's/^[ ,[|]//' | sort -u; }
man_opts() { # man_opts TEXTFILE SECTION
	awk -v s="$2" '/^[A-Z]/ { on = ($0 == s); next } on && /^       -/' "$1" | opts
}
help_opts() { # help_opts COMMAND...
	"$@" --help 2>&1 | awk '/^EXAMPLES/ { exit } /^ +-/' | opts
}
# accepted COMMAND... OPTION: the program's option parser knows OPTION.
# A value-taking option gets "--zzz-unknown" as its value; any other is
# followed by it, so the command stops with a usage error either way
# instead of running (no target is given to record).
accepted() {
	local opt=${*: -1} err
	err=$(cd "$tmp" && FLAMEFS_STORE=$tmp/nostore timeout 10 "$@" --zzz-unknown </dev/null 2>&1 >/dev/null)
	if [[ $opt == --* ]]; then
		! grep -q "unrecognized option '$opt'\|unknown option $opt\b" <<<"$err"
	else
		! grep -q "invalid option -- '${opt#-}'\|unknown option $opt\b" <<<"$err"
	fi
}
compare() { # compare NAME MAN_SET_FILE HELP_SET_FILE EXTRA_MAN_FILE [COMMAND...]
	local name=$1 m=$2 h=$3 extra=$4 o
	shift 4
	o=$(comm -23 "$m" "$h" | tr '\n' ' ')
	check "$name: every option in the page is in --help${o:+ (not: $o)}" test -z "$o"
	o=$(sort -u "$m" "$extra" | comm -13 - "$h" | tr '\n' ' ')
	check "$name: every option in --help is in the page${o:+ (missing: $o)}" test -z "$o"
	[ $# -gt 0 ] || return 0
	while read -r o; do
		check "$name: $o is accepted" accepted "$@" "$o"
	done <"$m"
}

man_opts "$tmp/flamefs-collect.txt" "GLOBAL OPTIONS" >"$tmp/global.man"
help_opts "$collect" >"$tmp/main.help"
check "flamefs-collect.1 documents --store, --help and --version" \
	test "$(tr '\n' ' ' <"$tmp/global.man")" = "--help --store --version -V -h "
# -V and --version come before a command (after one, --version is a
# label); --store and -h, --help after any command.
compare "flamefs-collect" "$tmp/global.man" "$tmp/main.help" /dev/null
for c in import record stats export samples compact prune push merge; do
	for o in --store -h --help; do
		check "flamefs-collect $c: $o is accepted" accepted "$collect" "$c" "$o"
	done
done
for c in import record stats export samples compact prune push merge; do
	C=$(tr a-z A-Z <<<"$c")
	man_opts "$tmp/flamefs-collect.txt" "$C" >"$tmp/$c.man"
	help_opts "$collect" "$c" >"$tmp/$c.help"
	check "flamefs-collect.1 documents options of $c" test -s "$tmp/$c.man" -o "$c" = stats -o "$c" = compact
	# --store is documented once, under GLOBAL OPTIONS.
	grep -vx -e --store "$tmp/$c.help" >"$tmp/$c.help2"
	compare "flamefs-collect $c" "$tmp/$c.man" "$tmp/$c.help2" "$tmp/global.man" "$collect" "$c"
done
man_opts "$tmp/flamefs.txt" OPTIONS >"$tmp/flamefs.man"
help_opts "$flamefs" >"$tmp/flamefs.help"
# flamefs hands unknown options to FUSE, which rejects them only when it
# mounts, so there is no cheap "accepted" check for it: test-view.sh and
# test-install.sh mount with -f, -o and the fstab options.
compare "flamefs" "$tmp/flamefs.man" "$tmp/flamefs.help" /dev/null

finish

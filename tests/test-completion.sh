#!/usr/bin/env bash
# test-completion.sh — the installed bash completion of flamefs-collect and
# flamefs: loaded on demand by bash-completion from the installed directory,
# and sourced on its own without bash-completion; in both cases it completes
# commands, options, option values, directories and files (COMP_WORDS and
# COMP_CWORD set as bash sets them, COMPREPLY checked).
#   usage: tests/test-completion.sh BUILD_DIR   exit 0 ok, 1 failure
set -u
build=${1:?usage: test-completion.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
. "$here/lib-install.sh"

tmp=$(mktemp -d /tmp/flamefs-test-completion.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! install_tree "$tmp/root"; then
	echo "FAIL - meson install --destdir"
	exit 1
fi
mkdir -p "$tmp/files/dir1" "$tmp/files/dir2"
: >"$tmp/files/file1.perf"

# The cases, run in a fresh bash per mode.  comp WANT WORD...: completes
# the last WORD (the cursor at its end) and compares the sorted COMPREPLY,
# joined by spaces, with WANT.
cat >"$tmp/cases.sh" <<'EOF'
set -u
mode=$1 compdir=$2 files=$3 bindir=$4
fails=0
comp() {
	local want=$1 func got
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	func=$(complete -p "$1" 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
	if [ -z "$func" ]; then
		echo "FAIL - [$mode] no completion function for $1"
		fails=$((fails + 1))
		return
	fi
	"$func" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort -u | tr '\n' ' ' | sed 's/ $//')
	if [ "$got" = "$want" ]; then
		echo "ok   - [$mode] $* -> $want"
	else
		echo "FAIL - [$mode] $*: want '$want', got '$got'"
		fails=$((fails + 1))
	fi
}
if [ "$mode" = bash-completion ]; then
	. /usr/share/bash-completion/bash_completion
	# On demand, from the installed directory, as for a command in PATH.
	export XDG_DATA_DIRS=${compdir%/bash-completion/completions}
	PATH=$bindir:$PATH
	for c in flamefs-collect flamefs; do
		if __load_completion "$c" && complete -p "$c" >/dev/null 2>&1; then
			echo "ok   - [$mode] bash-completion loads the installed completion of $c"
		else
			echo "FAIL - [$mode] bash-completion did not load $c from $compdir"
			fails=$((fails + 1))
		fi
	done
else
	. "$compdir/flamefs-collect"
	. "$compdir/flamefs"
fi

comp "import" flamefs-collect im
comp "compact export help import merge prune push record samples stats symbolize unwind-table" flamefs-collect ""
comp "--debug-dir --debuginfod-budget --dry-run" flamefs-collect symbolize --d
comp "--help --version" flamefs-collect --
comp "--format" flamefs-collect import --fo
comp "auto folded gperftools-cpu legacy perf perf.data pprof" flamefs-collect import --format ""
comp "callgrind folded pprof quality regressions svg timeline timeline.svg top" flamefs-collect export --format ""
comp "15m 1d 1h 1m 5m 6h 7d" flamefs-collect export --last ""
comp "--callees --callers" flamefs-collect export --call
comp "--freq" flamefs-collect record --fr
comp "--keep-samples --kernel-only" flamefs-collect record --k
comp "--output" flamefs-collect export --ou
comp "--by --by-host --help --quality --store" flamefs-collect stats --
comp "--help --store" flamefs-collect compact --
comp "--host" flamefs-collect import --ho
comp "--host" flamefs-collect record --ho
comp "" flamefs-collect import --host ""
comp "" flamefs-collect record --host w
comp "$files/dir1 $files/dir2" flamefs-collect stats --store "$files/d"
comp "$files/dir1 $files/dir2" flamefs-collect compact --store "$files/"
comp "$files/file1.perf" flamefs-collect import --store /tmp "$files/fi"
comp "$files/file1.perf" flamefs-collect export -o "$files/fi"
comp "49 499" flamefs-collect record -F 4
comp "--older-than" flamefs-collect prune --ol
comp "--dry-run" flamefs-collect prune --dr
comp "--to" flamefs-collect push --t
comp "--buckets-per-commit" flamefs-collect merge --b
comp "" flamefs-collect push --to ""
comp "" flamefs-collect prune --older-than ""
comp "--retention" flamefs-collect record --ret
comp "$files/file1.perf" flamefs-collect record --log-drains "$files/fi"
comp "pg pg-lock pg-query pg-xact" flamefs-collect record --span ""
comp "pg pg-lock pg-query pg-xact" flamefs-collect record --span pg
comp "pg-xact" flamefs-collect record --span pg-x
comp "" flamefs-collect import --binary ""
comp "--label" flamefs-collect export --lab
comp "--by-thread" flamefs-collect import --by
comp "" flamefs-collect import --label ""
comp "allow_other,default_permissions allow_other,defaults" flamefs -o allow_other,def
comp "nonempty" flamefs -o non
comp "--help --version" flamefs --
comp "$files/dir1 $files/dir2" flamefs "$files/"
comp "$files/dir1 $files/dir2" flamefs /tmp "$files/d"
exit $((fails > 0))
EOF

if [ -f /usr/share/bash-completion/bash_completion ]; then
	if bash --norc --noprofile "$tmp/cases.sh" bash-completion "$compdir" "$tmp/files" "$bindir"; then
		ok "completion with bash-completion"
	else
		bad "completion with bash-completion"
	fi
else
	echo "SKIP: bash-completion not installed (apt-get install bash-completion): only the plain-bash checks"
fi
if bash --norc --noprofile "$tmp/cases.sh" plain "$compdir" "$tmp/files" "$bindir"; then
	ok "completion in plain bash (the files sourced on their own)"
else
	bad "completion in plain bash (the files sourced on their own)"
fi
finish

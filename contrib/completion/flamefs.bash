# bash completion for flamefs(1)                              -*- shell-script -*-
#
# Completes flamefs's options, the mount options after -o, and directories
# for STORE and MOUNTPOINT.  Works with the bash-completion package
# (installed as .../bash-completion/completions/flamefs) and without it.

_flamefs()
{
	# words and cword are set by _init_completion, used or not.
	# shellcheck disable=SC2034
	local cur prev words cword
	if declare -F _init_completion >/dev/null 2>&1; then
		_init_completion || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
	fi

	if [[ $prev == -o ]]; then
		# A comma-separated list: complete its last element.
		local pre=
		[[ $cur == *,* ]] && pre=${cur%,*},
		compopt -o nospace 2>/dev/null
		COMPREPLY=($(compgen -P "$pre" -W 'ro allow_other allow_root
			default_permissions noauto auto user nouser users nofail
			_netdev defaults nonempty' -- "${cur##*,}"))
		return
	fi

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '-h --help -V --version -f -d -s -o' -- "$cur"))
		return
	fi

	# STORE, then MOUNTPOINT: both directories.
	if declare -F _filedir >/dev/null 2>&1; then
		_filedir -d
	else
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$cur"))
	fi
}

complete -F _flamefs flamefs
# ex: filetype=sh

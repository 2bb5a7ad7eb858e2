# bash completion for flamefs-collect(1)                      -*- shell-script -*-
#
# Completes the commands (import, record, stats, export, samples, compact, prune, push, merge), each
# command's options, directories after --store, files to import, values of
# --format, process ids after -p, and the command line after `record --`.
# Works with the bash-completion package (installed as
# .../bash-completion/completions/flamefs-collect) and without it (source
# this file from ~/.bashrc).

_flamefs_collect()
{
	local cur prev words cword
	if declare -F _init_completion >/dev/null 2>&1; then
		_init_completion || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi

	local commands='import record stats export samples compact prune push merge unwind-table symbolize'
	local cmd='' i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-*) ;;
		*) cmd=${words[i]}; break ;;
		esac
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$commands help" -- "$cur"))
		fi
		return
	fi

	# record -- COMMAND ARGS...: complete the command line after "--".
	if [[ $cmd == record ]]; then
		for ((i = 2; i < cword; i++)); do
			if [[ ${words[i]} == -- ]]; then
				if declare -F _command_offset >/dev/null 2>&1; then
					_command_offset $((i + 1))
				elif ((cword == i + 1)); then
					COMPREPLY=($(compgen -c -- "$cur"))
				else
					COMPREPLY=($(compgen -f -- "$cur"))
				fi
				return
			fi
		done
	fi

	# An option's value.
	case $prev in
	--store | --binary-path)
		_flamefs_collect_dirs
		return
		;;
	-o | --output | --log-drains)
		_flamefs_collect_files
		return
		;;
	--format)
		case $cmd in
		import) COMPREPLY=($(compgen -W 'perf perf.data folded pprof gperftools-cpu legacy auto' -- "$cur")) ;;
		export) COMPREPLY=($(compgen -W 'folded pprof svg callgrind top timeline timeline.svg quality regressions' -- "$cur")) ;;
		esac
		return
		;;
	-p | --pid)
		if [[ $cmd == record ]]; then
			# A comma-separated list: complete its last element.
			local pre=
			[[ $cur == *,* ]] && pre=${cur%,*},
			COMPREPLY=($(compgen -P "$pre" -W "$(ps -e -o pid= 2>/dev/null)" -- "${cur##*,}"))
			return
		fi
		;;
	-F | --freq)
		[[ $cmd == record ]] && COMPREPLY=($(compgen -W '49 99 199 499 999' -- "$cur"))
		return
		;;
	--unwind)
		COMPREPLY=($(compgen -W 'auto dwarf fp' -- "$cur"))
		return
		;;
	-e | --event)
		if [[ $cmd == record ]]; then
			# A comma-separated list: complete its last element.
			local pre=
			[[ $cur == *,* ]] && pre=${cur%,*},
			COMPREPLY=($(compgen -P "$pre" -W 'cpu offcpu offcpu:all rss block block-time net vfs vfs-read vfs-write' -- "${cur##*,}"))
		fi
		return # import and export: a free value
		;;
	--offcpu-min)
		COMPREPLY=($(compgen -W '1us 100us 1ms' -- "$cur"))
		return
		;;
	--unwind-memory | --jit-memory | --samples-memory)
		COMPREPLY=($(compgen -W '4M 16M 64M' -- "$cur"))
		return
		;;
	--keep-samples)
		COMPREPLY=($(compgen -W '0 30m 2h 6h 1d' -- "$cur"))
		return
		;;
	--jit-wait)
		COMPREPLY=($(compgen -W '0 60s 10m 1h' -- "$cur"))
		return
		;;
	--python)
		COMPREPLY=($(compgen -W 'on off' -- "$cur"))
		return
		;;
	--span)
		# A probe pair is the user's; the ready-made spans are offered.
		COMPREPLY=($(compgen -W 'pg pg-query pg-xact pg-lock' -- "$cur"))
		return
		;;
	--labels)
		local pre=
		[[ $cur == *,* ]] && pre=${cur%,*},
		COMPREPLY=($(compgen -P "$pre" -W 'cgroup container thread exe' -- "${cur##*,}"))
		return
		;;
	--by)
		COMPREPLY=($(compgen -W 'cgroup container thread exe cmdline span' -- "$cur"))
		return
		;;
	--last)
		COMPREPLY=($(compgen -W '1m 5m 15m 1h 6h 1d 7d' -- "$cur"))
		return
		;;
	--clock-offset)
		COMPREPLY=($(compgen -W 'boot' -- "$cur"))
		return
		;;
	--to | --push | --push-every | --buckets-per-commit)
		# A connection string or a number: nothing to offer.
		return
		;;
	-d | --duration | --host | --binary | --version | --event | --time | --retention | --older-than | --before | \
		--base | --from | --to | --callers | --callees | --label)
		# A free value: offer nothing rather than files.
		return
		;;
	esac

	local opts
	case $cmd in
	import)
		opts='--store --host --format --binary --version --event --all-events --time --clock-offset
		      --keep-samples --binary-path --label --by-thread --one-batch --keep-going --timings --help'
		;;
	record)
		opts='--store --host --pid --all-cpus --freq --duration --user-only --kernel-only
		      --binary --version --lines --inline --retention --keep-samples --samples-memory --log-drains --verbose --help
		      --unwind --unwind-memory --jit-wait --jit-memory --python --event --offcpu-min --push --push-every -e
		      --labels --no-labels --cmdline --span
		      -p -a -F -d -v --'
		;;
	stats) opts='--store --by-host --by --quality --help' ;;
	samples) opts='--store --from --to --binary --version --event --host --folded --help' ;;
	compact) opts='--store --help' ;;
	symbolize)
		if [[ $prev == --debug-dir ]]; then
			_flamefs_collect_dirs
			return
		fi
		[[ $prev == --debuginfod-budget ]] && return
		opts='--store --debug-dir --dry-run --debuginfod-budget --help'
		;;
	unwind-table)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--summary --help' -- "$cur"))
		else
			_flamefs_collect_files
		fi
		return
		;;
	prune) opts='--store --older-than --before --all --binary --version --dry-run --help' ;;
	push) opts='--store --to --buckets-per-commit --full --samples --verbose --help' ;;
	merge)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--store --buckets-per-commit --no-samples --samples --verbose --help' -- "$cur"))
		else
			_flamefs_collect_dirs
		fi
		return
		;;
	export) opts='--store --format --binary --version --event --label --base --last --from --to
	              --functions --callers --callees --output --help -o' ;;
	*) return ;;
	esac

	if [[ $cur == -* || $cmd != import ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi
	# import's FILE (or - for standard input).
	_flamefs_collect_files
	[[ -z $cur ]] && COMPREPLY+=(-)
}

_flamefs_collect_dirs()
{
	if declare -F _filedir >/dev/null 2>&1; then
		_filedir -d
	else
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$cur"))
	fi
}

_flamefs_collect_files()
{
	if declare -F _filedir >/dev/null 2>&1; then
		_filedir
	else
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

complete -F _flamefs_collect flamefs-collect
# ex: filetype=sh

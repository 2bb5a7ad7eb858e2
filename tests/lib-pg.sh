# lib-pg.sh — sourced by the tests of the PostgreSQL store backend: a private
# PostgreSQL 15 server for the test alone, started in the test's scratch
# directory, reachable only through a Unix socket there (no TCP port), and
# always stopped when the test exits.  It never touches the distribution's
# own cluster (15/main, /var/run/postgresql, port 5432).
#
#   pg_skip_unless_available [DIR [NAME]]
#                    prints "SKIP: reason" and exits 77 when the PostgreSQL 15
#                    binaries ($PG_BIN) or the postgres user are missing; with
#                    DIR it also starts the server (pg_start DIR NAME) and
#                    skips, showing the end of the server log, when it cannot
#   pg_start DIR [NAME]
#                    initdb (unless DIR/NAME holds a cluster already) and start
#                    a server in DIR/NAME (NAME defaults to "pg"); returns
#                    when it accepts connections, 1 with the log's tail on
#                    failure.  Sets PG_DIR (DIR/NAME), PG_DATA (its data
#                    directory), PG_SOCK (socket directory = PG_DIR), PG_PORT
#                    (54320 unless set before), PG_LOG (server log) and arms
#                    the cleanup.  Starting again after pg_stop or pg_kill
#                    keeps the data.
#   pg_stop          fast shutdown, waits until the server is gone
#   pg_kill [-9]     a crash: immediate shutdown (no checkpoint), or with -9
#                    SIGKILL to the postmaster; waits until every process of
#                    the server has exited.  The next start runs recovery.
#   pg_restart       stop (fast) if running, then start; waits for both
#   pg_psql ARGS...  psql -X -q -v ON_ERROR_STOP=1 as the superuser postgres,
#                    database postgres (a later -d DB wins), on the private
#                    server; e.g. pg_psql -Atc 'SELECT 1'
#   pg_uri [DB [USER]]
#                    prints postgresql:///DB?host=PG_SOCK&port=PG_PORT[&user=
#                    USER] (DB defaults to postgres; without USER libpq takes
#                    PGUSER or the login name, so pass postgres for the
#                    superuser)
#   pg_createdb NAME [OWNER]
#                    CREATE DATABASE; with OWNER the role owns it (and so its
#                    public schema, where PostgreSQL 15 lets only the owner
#                    create tables).  A copy of template1's files
#                    (STRATEGY FILE_COPY), not of its pages through the WAL
#                    (PostgreSQL 15's default), which wrote each database
#                    twice
#   pg_role NAME PASSWORD
#                    a LOGIN role with that password (scram-sha-256); the
#                    password goes to psql on stdin, never in argv or output
#   pg_passfile FILE USER PASSWORD [DB]
#                    appends the libpq password-file line for USER on the
#                    private server (DB defaults to *) to FILE, mode 0600:
#                    use it as PGPASSFILE=FILE
#   pg_standby_start NAME
#                    pg_basebackup -R of the running server into DIR/NAME
#                    (beside PG_DIR), streaming over the socket, started on
#                    its own socket directory; returns when it accepts
#                    (read-only) connections.  Sets PG_STANDBY_DIR,
#                    PG_STANDBY_DATA, PG_STANDBY_SOCK, PG_STANDBY_PORT
#                    (PG_PORT + 1), PG_STANDBY_LOG.
#   pg_standby_sync  waits (30 s at most) until the standby has replayed all
#                    the WAL the primary had written when called: a row
#                    committed before the call is then visible on the standby
#   pg_standby_promote
#                    pg_ctl promote -w: returns once the standby accepts writes
#   pg_standby_stop, pg_standby_psql ARGS..., pg_standby_uri [DB [USER]],
#   pg_standby_passfile FILE USER PASSWORD [DB]
#                    as pg_stop, pg_psql, pg_uri and pg_passfile, on the standby
#   pg_cleanup       stops every server these functions started (immediate
#                    shutdown) and kills what remains of them; runs on exit
#
# Authentication (pg_hba.conf, written here): the superuser postgres connects
# without a password ("trust"; the socket directory is mode 0700, so only
# root and postgres reach it), replication too; every other role needs its
# password (scram-sha-256).  There is no host line: no TCP at all.
#
# Users: as root (the tests' case) the server runs as the unprivileged
# postgres user, since initdb and postgres refuse root; pg_start makes
# DIR/NAME postgres's and, when postgres cannot enter DIR or a directory
# above it inside $TMPDIR or /tmp (mktemp -d makes them 0700), gives that
# directory to the group postgres with g+x.  As another user the server runs
# as that user.
#
# Cleanup: the first pg_start puts pg_cleanup in front of the EXIT trap the
# test has already set (a trap set later replaces it: set yours first, or
# call pg_cleanup from it; lib-e2e.sh's e2e_cleanup calls it), makes INT,
# TERM and HUP (when untrapped) exit through it, and leaves a watchdog
# that stops the servers if the test dies without running its trap (SIGKILL,
# meson's timeout).
#
# Typical use, with lib-e2e.sh:
#   . "$here/lib-e2e.sh"; . "$here/lib-pg.sh"
#   e2e_setup pgstore
#   pg_skip_unless_available "$tmp"
#   pg_role flamefs secret; pg_createdb flamefs flamefs
#   pg_passfile "$tmp/pgpass" flamefs secret
#   PGPASSFILE=$tmp/pgpass "$collect" import --store "$(pg_uri flamefs flamefs)" ...

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG__ROOTS=()   # data directories of every server started, for pg_cleanup
PG__WATCHED=() # the directories a watchdog looks after
PG__ARMED=

# pg__user: the user the servers run as.
pg__user() { if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi; }

# pg__as ARGS...: runs ARGS as the server's user, from /, in a clean
# environment (the caller's PG* variables must not reach pg_ctl or initdb).
pg__as() {
	local env=(env -i "PATH=$PG_BIN:/usr/bin:/bin" LC_ALL=C)
	if [ "$(id -u)" = 0 ]; then
		(cd / && exec setpriv --reuid=postgres --regid=postgres --init-groups "${env[@]}" HOME=/ "$@")
	else
		(cd / && exec "${env[@]}" "HOME=$HOME" "$@")
	fi
}

# pg__missing: prints why no server can run here, or nothing.
pg__missing() {
	local b
	for b in initdb pg_ctl postgres psql pg_basebackup; do
		[ -x "$PG_BIN/$b" ] || { echo "PostgreSQL 15 is not installed ($PG_BIN/$b missing; package postgresql-15)"; return; }
	done
	if [ "$(id -u)" = 0 ]; then
		getent passwd postgres >/dev/null || { echo "no user postgres to run the server as (package postgresql-common)"; return; }
		command -v setpriv >/dev/null || { echo "no setpriv (package util-linux)"; return; }
	fi
}

# pg__tail LOG: the end of a server log, indented, for a message.
pg__tail() { [ -f "$1" ] && tail -n 15 "$1" | sed 's/^/    /'; }

# pg__procs DATA: pids of the server's user's processes whose working
# directory is DATA (a postmaster and all its children live there).
pg__procs() {
	local p cwd
	for p in $(ps -u "$(pg__user)" -o pid=); do
		cwd=$(readlink "/proc/$p/cwd" 2>/dev/null) || continue
		case $cwd in "$1" | "$1 (deleted)") echo "$p" ;; esac
	done
}

# pg__wait_gone DATA: waits (10 s) for the server's processes to exit, then
# kills what remains.  Returns 1 if it had to.
pg__wait_gone() {
	local i left
	for ((i = 0; i < 100; i++)); do
		left=$(pg__procs "$1")
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	# shellcheck disable=SC2086 # a list of pids
	kill -KILL $left 2>/dev/null
	return 1
}

# pg__ctl_start DATA LOG: starts the server in DATA, waiting until it
# accepts connections.
pg__ctl_start() {
	if ! pg__as "$PG_BIN/pg_ctl" start -w -t 180 -s -D "$1" -l "$2" >/dev/null 2>&1; then
		echo "lib-pg: the server in $1 did not start; end of $2:"
		pg__tail "$2"
		return 1
	fi
}

# pg__ctl_stop DATA MODE: stops the server in DATA (if it runs), waiting.
pg__ctl_stop() {
	[ -f "$1/postmaster.pid" ] || return 0
	if ! pg__as "$PG_BIN/pg_ctl" stop -w -t 60 -s -m "$2" -D "$1" >/dev/null 2>&1; then
		# No server behind the pid file (after a crash) is not an error.
		pg__as "$PG_BIN/pg_ctl" status -D "$1" >/dev/null 2>&1 || return 0
		echo "lib-pg: the server in $1 did not stop ($2)"
		return 1
	fi
}

# pg__mkdir DIR: DIR owned by the server's user, mode 0700, reachable by
# it.  A directory above it in $TMPDIR (or /tmp) that the user cannot enter
# (mktemp -d makes them root's, 0700) goes to the group postgres with g+x;
# one elsewhere is an error.
pg__mkdir() {
	mkdir -p "$1" || return 1
	chmod 700 "$1" || return 1
	[ "$(id -u)" = 0 ] || return 0
	chown postgres:postgres "$1" || return 1
	pg__as test -w "$1" && return 0
	local up tmpdir=${TMPDIR:-/tmp}
	up=$(dirname "$1")
	while [ "$up" != / ] && [ "$up" != . ]; do
		case $up in
		"${tmpdir%/}"/?*)
			if ! pg__as test -x "$up"; then
				chgrp postgres "$up" && chmod g+x "$up" || return 1
			fi
			;;
		esac
		up=$(dirname "$up")
	done
	pg__as test -w "$1" && return 0
	echo "lib-pg: user postgres cannot reach $1: give it search permission on the directories above"
	return 1
}

# pg__conf DATA SOCK PORT: the settings of our servers, appended to DATA's
# postgresql.conf (the last setting of a name wins, so a standby copied
# from a primary appends its own socket and port).
# fsync = off: the tests crash servers (immediate shutdown, SIGKILL) but
# never the machine, and what a server wrote before it died is in the
# kernel's page cache, where the next start's recovery reads it; fsync only
# guards against the operating system's crash or a power loss.  With it
# on, each commit, checkpoint and start after a crash (or a standby's
# first) waited for the disk, which the machine's other work shares.  A
# commit still returns only once its WAL is written (synchronous_commit
# stays on), so a killed server keeps every commit it acknowledged.
pg__conf() {
	case $2 in *[\'\ ]*)
		echo "lib-pg: socket directory $2 contains a quote or a space"
		return 1
		;;
	esac
	if [ ${#2} -gt 90 ]; then # sun_path holds 107 bytes with /.s.PGSQL.PORT
		echo "lib-pg: socket directory $2 is too long for a Unix socket path"
		return 1
	fi
	cat >>"$1/postgresql.conf" <<-EOF

		# lib-pg.sh: a private test server, Unix socket only
		listen_addresses = ''
		unix_socket_directories = '$2'
		port = $3
		max_connections = 40
		shared_buffers = 16MB
		wal_level = replica
		max_wal_senders = 4
		wal_keep_size = 64MB
		max_wal_size = 128MB
		password_encryption = scram-sha-256
		fsync = off
		# (With fsync on) a start after a crash, or a standby's first from
		# a base backup, syncs the data directory first: file by file (the
		# default) that is every table of every test database, and on a
		# busy machine it outlasted pg_ctl's wait; one syncfs() instead.
		recovery_init_sync_method = syncfs
	EOF
}

# pg__arm_cleanup DIR: pg_cleanup on exit (once), and a watchdog on DIR.
pg__arm_cleanup() {
	local old sig code
	if [ -z "$PG__ARMED" ]; then
		PG__ARMED=1
		old=$(trap -p EXIT)
		old=${old#"trap -- "}
		old=${old% EXIT}
		eval "old=${old:-''}"
		# shellcheck disable=SC2064 # the old trap's text, now
		trap "pg_cleanup${old:+; $old}" EXIT
		for sig in INT:130 TERM:143 HUP:129; do
			code=${sig#*:}
			sig=${sig%:*}
			# shellcheck disable=SC2064 # the code, now
			[ -z "$(trap -p "$sig")" ] && trap "exit $code" "$sig"
		done
	fi
	local d
	for d in "${PG__WATCHED[@]}"; do [ "$d" = "$1" ] && return 0; done
	PG__WATCHED+=("$1")
	# In its own session (meson's timeout kills the test's process group),
	# with no stdio of the test's, not a child the test's `wait` waits for.
	# When the test's shell is gone it shuts down (SIGQUIT, then SIGKILL)
	# whatever processes of the server's user still work under DIR.
	# shellcheck disable=SC2016 # expanded by the watchdog's bash
	setsid -f bash -c '
		exec </dev/null >/dev/null 2>&1
		while kill -0 "$1" 2>/dev/null; do sleep 1; done
		procs() {
			for p in $(ps -u "$2" -o pid=); do
				case $(readlink "/proc/$p/cwd") in "$3"/*) echo "$p" ;; esac
			done
		}
		left=$(procs "$@")
		[ -z "$left" ] && exit 0
		kill -QUIT $left
		sleep 2
		left=$(procs "$@")
		[ -n "$left" ] && kill -KILL $left
	' pg-watchdog "$$" "$(pg__user)" "$1"
}

pg_skip_unless_available() {
	local why
	why=$(pg__missing)
	if [ -n "$why" ]; then
		echo "SKIP: $why"
		exit 77
	fi
	[ $# -gt 0 ] || return 0
	local out
	out=$(mktemp /tmp/lib-pg-start.XXXXXX) || exit 1
	if ! pg_start "$@" >"$out" 2>&1; then
		echo "SKIP: cannot start a PostgreSQL 15 server here: $(cat "$out")"
		rm -f "$out"
		exit 77
	fi
	rm -f "$out"
}

# pg__vars DIR [NAME]: the variables pg_start sets.
pg__vars() {
	PG_DIR=$1/${2:-pg}
	PG_DATA=$PG_DIR/data
	PG_SOCK=$PG_DIR
	PG_LOG=$PG_DIR/server.log
	PG_PORT=${PG_PORT:-54320}
}

# pg__remember DATA: pg_cleanup will stop the server in DATA.
pg__remember() {
	local d
	for d in "${PG__ROOTS[@]}"; do [ "$d" = "$1" ] && return 0; done
	PG__ROOTS+=("$1")
}

# pg__initdb DATA LOG: a new cluster in DATA, made by initdb (its output
# in LOG).  With $FLAMEFS_PG_TEMPLATE (a directory, tests/run.sh sets one
# for its run) initdb runs once into it and every later cluster is a copy
# of that one: initdb's output does not depend on where the cluster will
# live, and no server ever starts on the template itself.  The template is
# made beside its place and renamed into it, so that tests starting at
# once see all of it or none.
pg__initdb() {
	local data=$1 log=$2 tpl stage
	if [ -z "${FLAMEFS_PG_TEMPLATE:-}" ]; then
		pg__as "$PG_BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-locale --no-sync >"$log" 2>&1 ||
			{ echo "lib-pg: initdb failed:"; pg__tail "$log"; return 1; }
		return 0
	fi
	tpl=$FLAMEFS_PG_TEMPLATE/$(pg__user)${PG_BIN//\//_}
	if [ ! -f "$tpl/PG_VERSION" ]; then
		stage=$tpl.new.$$
		rm -rf "$stage"
		pg__mkdir "$stage" || return 1
		if ! pg__as "$PG_BIN/initdb" -D "$stage/data" -U postgres -A trust -E UTF8 --no-locale --no-sync \
			>"$log" 2>&1; then
			echo "lib-pg: initdb failed:"
			pg__tail "$log"
			rm -rf "$stage"
			return 1
		fi
		# (another test's template may have taken the place first)
		mv -T "$stage/data" "$tpl" 2>/dev/null
		rm -rf "$stage"
		[ -f "$tpl/PG_VERSION" ] || { echo "lib-pg: no cluster template in $tpl"; return 1; }
	fi
	echo "a copy of the cluster template $tpl" >"$log"
	cp -a "$tpl" "$data" || { echo "lib-pg: cannot copy the cluster template $tpl to $data"; return 1; }
}

pg_start() {
	local dir=${1:?usage: pg_start DIR [NAME]} why
	why=$(pg__missing)
	[ -z "$why" ] || { echo "lib-pg: $why"; return 1; }
	pg__vars "$@"
	pg__remember "$PG_DATA"
	pg__arm_cleanup "$dir"
	if [ ! -f "$PG_DATA/PG_VERSION" ]; then
		pg__mkdir "$PG_DIR" || return 1
		pg__initdb "$PG_DATA" "$PG_DIR/initdb.log" || return 1
		pg__conf "$PG_DATA" "$PG_SOCK" "$PG_PORT" || return 1
		cat >"$PG_DATA/pg_hba.conf" <<-EOF
			# lib-pg.sh: the superuser without a password (only root and
			# postgres reach the 0700 socket directory), everyone else with
			# theirs; no TCP.
			# TYPE  DATABASE     USER      METHOD
			local   all          postgres  trust
			local   replication  postgres  trust
			local   all          all       scram-sha-256
		EOF
	fi
	pg__ctl_start "$PG_DATA" "$PG_LOG"
}

pg_stop() { pg__ctl_stop "$PG_DATA" fast; }

pg_kill() {
	if [ "${1:-}" = -9 ]; then
		local pm
		pm=$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null)
		[ -n "$pm" ] || { echo "lib-pg: no server runs in $PG_DATA"; return 1; }
		kill -KILL "$pm"
		# Its children see the postmaster die and exit by themselves.
		pg__wait_gone "$PG_DATA" || { echo "lib-pg: children of the killed postmaster $pm had to be killed"; return 1; }
		# The postmaster, orphaned by pg_ctl, is init's child: until init
		# reaps it, its pid looks alive and the next start refuses to run
		# beside it ("lock file postmaster.pid already exists").
		local i
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pm" 2>/dev/null || return 0
			sleep 0.1
		done
		echo "lib-pg: the killed postmaster $pm was not reaped in 10 s"
		return 1
	else
		pg__ctl_stop "$PG_DATA" immediate
	fi
}

pg_restart() {
	if pg__as "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1; then
		pg_stop || return 1
	fi
	pg__ctl_start "$PG_DATA" "$PG_LOG"
}

pg_psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres "$@"; }

pg_standby_psql() {
	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_STANDBY_SOCK" -p "$PG_STANDBY_PORT" -U postgres -d postgres "$@"
}

# pg__enc TEXT: TEXT percent-encoded for a URI (slashes kept).
pg__enc() {
	local s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~/-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

# pg__uri SOCK PORT [DB [USER]]
pg__uri() {
	printf 'postgresql:///%s?host=%s&port=%s' "$(pg__enc "${3:-postgres}")" "$(pg__enc "$1")" "$2"
	[ -n "${4:-}" ] && printf '&user=%s' "$(pg__enc "$4")"
	echo
}

pg_uri() { pg__uri "$PG_SOCK" "$PG_PORT" "$@"; }
pg_standby_uri() { pg__uri "$PG_STANDBY_SOCK" "$PG_STANDBY_PORT" "$@"; }

pg_createdb() {
	local name=${1:?usage: pg_createdb NAME [OWNER]}
	if [ -n "${2:-}" ]; then
		pg_psql -v "db=$name" -v "owner=$2" <<<'CREATE DATABASE :"db" OWNER :"owner" STRATEGY = FILE_COPY;'
	else
		pg_psql -v "db=$name" <<<'CREATE DATABASE :"db" STRATEGY = FILE_COPY;'
	fi
}

# pg__psql_literal TEXT: TEXT as a single-quoted psql meta-command argument.
pg__psql_literal() {
	local s=${1//\\/\\\\}
	printf "'%s'" "${s//\'/\'\'}"
}

pg_role() {
	local name=${1:?usage: pg_role NAME PASSWORD} pw=${2:?usage: pg_role NAME PASSWORD}
	pg_psql -v "role=$name" <<-EOF
		\\set pw $(pg__psql_literal "$pw")
		CREATE ROLE :"role" LOGIN PASSWORD :'pw';
	EOF
}

# pg__pgpass_field TEXT: TEXT with : and \ escaped for a password file.
pg__pgpass_field() {
	local s=${1//\\/\\\\}
	printf '%s' "${s//:/\\:}"
}

# pg__passfile SOCK PORT FILE USER PASSWORD [DB]
pg__passfile() {
	local sock=$1 port=$2 file=$3 user=$4 pw=$5 db=${6:-*}
	[ "$db" = "*" ] || db=$(pg__pgpass_field "$db")
	(
		umask 077
		printf '%s:%s:%s:%s:%s\n' "$(pg__pgpass_field "$sock")" "$port" "$db" \
			"$(pg__pgpass_field "$user")" "$(pg__pgpass_field "$pw")" >>"$file"
	) && chmod 600 "$file"
}

pg_passfile() {
	[ $# -ge 3 ] || { echo "usage: pg_passfile FILE USER PASSWORD [DB]"; return 1; }
	pg__passfile "$PG_SOCK" "$PG_PORT" "$@"
}

pg_standby_passfile() {
	[ $# -ge 3 ] || { echo "usage: pg_standby_passfile FILE USER PASSWORD [DB]"; return 1; }
	pg__passfile "$PG_STANDBY_SOCK" "$PG_STANDBY_PORT" "$@"
}

pg_standby_start() {
	local name=${1:?usage: pg_standby_start NAME}
	[ -n "${PG_DIR:-}" ] || { echo "lib-pg: pg_standby_start needs a running primary (pg_start)"; return 1; }
	PG_STANDBY_DIR=$(dirname "$PG_DIR")/$name
	PG_STANDBY_DATA=$PG_STANDBY_DIR/data
	PG_STANDBY_SOCK=$PG_STANDBY_DIR
	PG_STANDBY_PORT=$((PG_PORT + 1))
	PG_STANDBY_LOG=$PG_STANDBY_DIR/server.log
	pg__remember "$PG_STANDBY_DATA"
	pg__mkdir "$PG_STANDBY_DIR" || return 1
	# -R: standby.signal and primary_conninfo (host=PG_SOCK) for streaming;
	# -c fast: no wait for the primary's next checkpoint.
	if ! pg__as "$PG_BIN/pg_basebackup" -D "$PG_STANDBY_DATA" -R -X stream -c fast --no-sync \
		-h "$PG_SOCK" -p "$PG_PORT" -U postgres >"$PG_STANDBY_DIR/basebackup.log" 2>&1; then
		echo "lib-pg: pg_basebackup failed:"
		pg__tail "$PG_STANDBY_DIR/basebackup.log"
		return 1
	fi
	pg__conf "$PG_STANDBY_DATA" "$PG_STANDBY_SOCK" "$PG_STANDBY_PORT" || return 1
	pg__ctl_start "$PG_STANDBY_DATA" "$PG_STANDBY_LOG"
}

pg_standby_sync() {
	local lsn i
	lsn=$(pg_psql -Atc 'SELECT pg_current_wal_lsn()') || return 1
	for ((i = 0; i < 300; i++)); do
		[ "$(pg_standby_psql -Atc "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && return 0
		sleep 0.1
	done
	echo "lib-pg: the standby did not replay up to $lsn in 30 s; end of its log:"
	pg__tail "$PG_STANDBY_LOG"
	return 1
}

pg_standby_promote() {
	if ! pg__as "$PG_BIN/pg_ctl" promote -w -t 60 -s -D "$PG_STANDBY_DATA" >/dev/null 2>&1; then
		echo "lib-pg: the standby was not promoted; end of its log:"
		pg__tail "$PG_STANDBY_LOG"
		return 1
	fi
}

pg_standby_stop() { pg__ctl_stop "$PG_STANDBY_DATA" fast; }

pg_cleanup() {
	local d i rc=0
	# Standbys first: stopping the primary first makes them retry it.
	for ((i = ${#PG__ROOTS[@]} - 1; i >= 0; i--)); do
		d=${PG__ROOTS[i]}
		pg__ctl_stop "$d" immediate >/dev/null 2>&1
		pg__wait_gone "$d" || rc=1
	done
	return $rc
}

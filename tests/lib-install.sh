# lib-install.sh — shared by the tests of what `meson install` puts on a
# machine (test-install.sh, test-man.sh, test-completion.sh,
# test-systemd.sh).  Source it after setting `build` (the build dir).
#
# install_tree DEST: runs `meson install --destdir DEST` for the build dir
# and sets, as absolute paths inside DEST:
#   prefix  the configured prefix (as on the target machine, without DEST)
#   bindir mandir compdir unitdir exampledir
# Returns non-zero, with meson's output on stderr, when the install fails.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

install_tree() {
	local dest=$1 f
	if ! meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest.log" 2>&1; then
		cat "$dest.log" >&2
		return 1
	fi
	# Where this build's prefix put things, found in the tree itself.
	f=$(find "$dest" -path '*/bin/flamefs-collect' -type f | head -n 1)
	[ -n "$f" ] || {
		echo "meson install put no bin/flamefs-collect under $dest" >&2
		return 1
	}
	bindir=$(dirname "$f")
	prefix=$(dirname "${bindir#"$dest"}")
	mandir=$(dirname "$(find "$dest" -path '*/man1/flamefs.1' | head -n 1)")
	compdir=$(dirname "$(find "$dest" -path '*/bash-completion/completions/flamefs' | head -n 1)")
	unitdir=$(dirname "$(find "$dest" -name 'flamefs-record.service' -path '*/systemd/system/*' | head -n 1)")
	exampledir=$(dirname "$(find "$dest" -name frequency.conf | head -n 1)")
	return 0
}

#!/usr/bin/env bash
# kbtf (collector/record/kbtf.c) against bpftool's reading of the same BTF:
# the offsets the recorder's BPF programs read kernel memory with, direct
# members and members inside anonymous structs and unions (every field of
# mm_struct is in one), and a clear error for a member that is not there.
#   usage: test-kbtf.sh BUILD_DIR
set -u
build=$1
btf=/sys/kernel/btf/vmlinux
if [ ! -r "$btf" ]; then
	echo "SKIP: no readable $btf"
	exit 77
fi
if ! command -v bpftool >/dev/null; then
	echo "SKIP: no bpftool to compare with"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

# The members the recorder reads (record.c, events.c), and more
# inside anonymous aggregates.
members="task_struct.tgid task_struct.pid task_struct.mm mm_struct.saved_auxv
mm_struct.start_code mm_struct.mmap_base linux_binprm.file file.f_inode inode.i_ino inode.i_sb
super_block.s_dev bio.bi_iter bvec_iter.bi_size bio.bi_opf request.q sock.__sk_common
sock_common.skc_family sock.sk_protocol"
bpftool btf dump file "$btf" >"$tmp/raw" 2>"$tmp/raw.err" || {
	bad "bpftool btf dump: $(head -1 "$tmp/raw.err")"
	exit 1
}
# bpftool's reading: a struct's members by name, anonymous ones followed
# by type id, offsets summed.
for m in $members; do
	awk -v want="$m" '
		/^\[[0-9]+\] / {
			id = substr($1, 2, length($1) - 2); kind[id] = $2; name[id] = $3; cur = id; n[id] = 0
			next
		}
		cur != "" && /^\t/ {
			k = ++n[cur]; mname[cur, k] = $1
			for (i = 2; i <= NF; i++) {
				if ($i ~ /^type_id=/) mtype[cur, k] = substr($i, 9)
				if ($i ~ /^bits_offset=/) mbits[cur, k] = substr($i, 13)
			}
		}
		function find(id, base, member,    k, r) {
			for (k = 1; k <= n[id]; k++)
				if (mname[id, k] == "\x27" member "\x27") return base + mbits[id, k]
			for (k = 1; k <= n[id]; k++)
				if (mname[id, k] == "\x27(anon)\x27" && (kind[mtype[id, k]] == "STRUCT" || kind[mtype[id, k]] == "UNION")) {
					r = find(mtype[id, k], base + mbits[id, k], member)
					if (r >= 0) return r
				}
			return -1
		}
		END {
			split(want, p, ".")
			for (id in kind) if (kind[id] == "STRUCT" && name[id] == "\x27" p[1] "\x27" && (best == "" || id + 0 < best + 0)) best = id
			r = best == "" ? -1 : find(best, 0, p[2])
			print want, (r < 0 || r % 8) ? "-" : r / 8
		}' "$tmp/raw"
done >"$tmp/theirs"
# shellcheck disable=SC2086
"$build/tests/kbtf-offset" "$btf" $members >"$tmp/ours" 2>"$tmp/ours.err"
while read -r m want; do
	got=$(awk -v m="$m" '$1 == m { print $2 }' "$tmp/ours")
	if [ "$want" = "-" ]; then
		echo "# $m: not in this kernel's BTF (bpftool); kbtf says ${got:-nothing}"
		[ "$got" = "-" ] && ok "$m: absent for both" || bad "$m: bpftool finds none, kbtf $got"
	elif [ "$got" = "$want" ]; then
		ok "$m: offset $got, as bpftool reads it"
	else
		bad "$m: kbtf ${got:-nothing}, bpftool $want ($(grep -m1 "$m" "$tmp/ours.err"))"
	fi
done <"$tmp/theirs"
# A member that is not there: an error naming the file, the struct and
# the member, not an offset.
if "$build/tests/kbtf-offset" "$btf" mm_struct.no_such_member >"$tmp/none" 2>"$tmp/none.err"; then
	bad "mm_struct.no_such_member: found ($(cat "$tmp/none"))"
elif grep -q "$btf" "$tmp/none.err" && grep -q "no_such_member" "$tmp/none.err"; then
	ok "a missing member is an error naming the file and the member: $(cat "$tmp/none.err")"
else
	bad "a missing member: $(cat "$tmp/none.err")"
fi
# A file that is not BTF.
if "$build/tests/kbtf-offset" /etc/hostname task_struct.tgid >/dev/null 2>"$tmp/bad.err"; then
	bad "/etc/hostname read as BTF"
else
	ok "a file that is not BTF is refused: $(cat "$tmp/bad.err")"
fi
[ "$failures" -eq 0 ]

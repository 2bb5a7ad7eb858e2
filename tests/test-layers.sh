#!/bin/bash
# test-layers.sh — the symbolize wing's files call one way (issue #42): from
# nm of libflamefs-symbolize.a, each object's undefined symbols that another
# object of the archive defines are its calls, and each must go to a file of
# a lower layer than the caller's.  The layers, bottom first:
#   0  names.c trust.c fdes.c ksym.c debpkg.c  (leaves)
#   1  modules.c kernel.c                      (files by build id; kernel names)
#   2  procs.c                                 (processes: mappings onto modules)
#   3  python.c                                (names read from live processes)
#   4  symbolize.c offline-maps.c later.c      (naming, the lifetime, profiles)
#   5  import-symbols.c                        (the importers' struct import_symbols)
# A call within a layer or upward fails, as does an object missing from this
# table (a new file gets its layer here), or an archive where no call is seen
# at all (nm read nothing).  Usage: test-layers.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"

build=${1:?usage: test-layers.sh BUILD_DIR}
lib=$build/collector/symbolize/libflamefs-symbolize.a
if [ ! -f "$lib" ]; then
	echo "SKIP: $lib not built"
	exit 77
fi
if ! command -v nm >/dev/null; then
	echo "SKIP: no nm"
	exit 77
fi
if ! nm -A "$lib" >"${TMPDIR:-/tmp}/layers.$$" 2>&1; then
	cat "${TMPDIR:-/tmp}/layers.$$"
	rm -f "${TMPDIR:-/tmp}/layers.$$"
	bad "nm reads $lib"
	finish
fi
out=$(awk '
BEGIN {
	split("names trust fdes ksym debpkg", l0); for (i in l0) rank[l0[i]] = 0
	split("modules kernel", l1);                for (i in l1) rank[l1[i]] = 1
	rank["procs"] = 2
	rank["python"] = 3
	split("symbolize offline-maps later", l4);  for (i in l4) rank[l4[i]] = 4
	rank["import-symbols"] = 5
}
{
	# "ARCHIVE:MEMBER.c.o: [VALUE] TYPE NAME"
	n = split($1, part, ":"); obj = part[n - 1]
	sub(/.*\//, "", obj); sub(/\.c\.o$/, "", obj); sub(/\.o$/, "", obj)
	objs[obj] = 1
	type = $(NF - 1); sym = $NF
	if (type == "U")
		und[obj, sym] = 1
	else if (type ~ /^[A-TV-Z]$/)
		def[sym] = obj
}
END {
	for (o in objs)
		if (!(o in rank)) { print "FAIL - " o ".c has no layer in test-layers.sh"; bad++ }
	for (k in und) {
		split(k, p, SUBSEP); caller = p[1]; sym = p[2]
		if (!(sym in def) || def[sym] == caller)
			continue
		callee = def[sym]; edges++
		if (!(caller in rank) || !(callee in rank))
			continue
		if (rank[callee] >= rank[caller]) {
			print "FAIL - " caller ".c (layer " rank[caller] ") calls " sym " of " callee ".c (layer " rank[callee] ")"
			bad++
		}
	}
	print "edges " edges + 0
	print "bad " bad + 0
}' "${TMPDIR:-/tmp}/layers.$$")
rm -f "${TMPDIR:-/tmp}/layers.$$"
echo "$out" | grep '^FAIL' || true
edges=$(echo "$out" | awk '$1 == "edges" { print $2 }')
nbad=$(echo "$out" | awk '$1 == "bad" { print $2 }')
check "nm shows calls between the wing's files ($edges)" test "$edges" -gt 20
check "every call goes to a lower layer" test "$nbad" -eq 0
finish

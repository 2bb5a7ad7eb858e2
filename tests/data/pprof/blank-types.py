#!/usr/bin/env python3
"""blank-types.py IN OUT WHAT [INDEX...] -- copies a pprof profile (raw or
gzipped) with its sample types' names and/or units made empty: each
ValueType of Profile.sample_type (field 1) is rewritten to string index 0,
the "" every string table starts with.  WHAT is type, unit or both; the
INDEXes (from 0) pick sample types, all of them when none are given.  The
string table itself is not touched, so the period type and everything
else keep their strings.  Writes gzip when OUT ends in .gz."""
import gzip
import sys

from pbwire import f_bytes, f_int, key, varint


def read_varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def fields(b):
    """(field, wire, raw bytes of the whole field, payload) of a message."""
    i = 0
    while i < len(b):
        start = i
        k, i = read_varint(b, i)
        field, wire = k >> 3, k & 7
        if wire == 0:
            v, i = read_varint(b, i)
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        elif wire == 2:
            n, i = read_varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise SystemExit(f"wire type {wire} at offset {start}")
        yield field, wire, b[start:i], v


def main():
    src, dst, what = sys.argv[1:4]
    pick = {int(x) for x in sys.argv[4:]}
    data = open(src, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    out = bytearray()
    index = 0
    for field, wire, raw, v in fields(data):
        if field == 1 and wire == 2:
            if not pick or index in pick:
                vt = {f: val for f, w, _, val in fields(v) if w == 0}
                typ = 0 if what in ("type", "both") else vt.get(1, 0)
                unit = 0 if what in ("unit", "both") else vt.get(2, 0)
                raw = f_bytes(1, f_int(1, typ) + f_int(2, unit))
            index += 1
        out += raw
    if dst.endswith(".gz"):
        out = gzip.compress(bytes(out), mtime=0)
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main()

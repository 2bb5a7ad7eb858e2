#!/usr/bin/env python3
"""Writes the pprof inputs of tests/test-bad-input.sh (next to itself).

Encoded by hand, like tests/data/pprof/make-fixtures.py, so they do not
depend on the code under test.  Each NAME.pb(.gz) that must store has a
NAME.EVENT.folded.expected beside it: the exact `flamefs-collect export
--format folded --event EVENT` of a fresh store holding it.

  value-max.pb          one sample whose cpu value is 2^63 - 1 (the most a
                        pprof int64 holds): stored exactly
  bad-value-sum.pb      three samples of 2^63 - 1: their sum passes 2^64 - 1
  nonutf8.pb            function and mapping names that are not UTF-8
  deep.pb.gz            one sample 10,000 locations deep
  bad-nul-name.pb       a function name holding a NUL byte
  bad-string-index.pb   a function name index past the string table
  bad-location-id.pb, bad-function-id.pb, bad-mapping-id.pb
                        ids that point nowhere
"""
import gzip
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INT64_MAX = (1 << 63) - 1


sys.path.insert(0, os.path.join(HERE, '../pprof'))
from pbwire import f_bytes, f_int, f_packed, key, varint  # noqa: E402,F401


class Profile:
    """A profile with sample types samples/count and cpu/nanoseconds,
    mapping 1 (/usr/bin/app) and one function and location per name."""

    def __init__(self):
        self.strings = [b""]
        self.body = []
        for typ, unit in ((b"samples", b"count"), (b"cpu", b"nanoseconds")):
            self.body.append(f_bytes(1, f_int(1, self.s(typ)) + f_int(2, self.s(unit))))
        self.body.append(f_bytes(3, f_int(1, 1) + f_int(2, 0x400000) + f_int(3, 0x500000)
                                 + f_int(5, self.s(b"/usr/bin/app"))))

    def s(self, text):
        if text not in self.strings:
            self.strings.append(text)
        return self.strings.index(text)

    def function(self, fid, name, name_index=None):
        idx = self.s(name) if name_index is None else name_index
        self.body.append(f_bytes(5, f_int(1, fid) + f_int(2, idx) + f_int(3, idx)))

    def location(self, lid, function_id, mapping_id=1):
        self.body.append(f_bytes(4, f_int(1, lid) + f_int(2, mapping_id)
                                 + f_bytes(4, f_int(1, function_id))))

    def sample(self, locs, values):
        self.body.append(f_bytes(2, f_packed(1, locs) + f_packed(2, values)))

    def encode(self):
        strings = b"".join(f_bytes(6, t) for t in self.strings)
        return b"".join(self.body) + strings


def named(names):
    """Functions and locations 1..n named names[0..n)."""
    p = Profile()
    for i, name in enumerate(names, 1):
        p.function(i, name)
        p.location(i, i)
    return p


def main():
    def write(name, data):
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)

    def expect(name, lines):
        write(name, b"".join(stack + b" " + str(w).encode() + b"\n" for stack, w in sorted(lines)))

    p = named([b"main", b"hot"])
    p.sample([2, 1], [1, INT64_MAX])
    write("value-max.pb", p.encode())
    expect("value-max.cpu.folded.expected", [(b"app;main;hot", INT64_MAX)])

    p = named([b"main", b"hot"])
    for _ in range(3):
        p.sample([2, 1], [1, INT64_MAX])
    write("bad-value-sum.pb", p.encode())

    names = [b"main", b"caf\xe9", b"\xff\xfe\xfd", b"\xc3\x28 bad", b"ok\xe2\x82\xac"]
    p = named(names)
    p.sample([5, 4, 3, 2, 1], [2, 20])
    p.sample([3, 1], [1, 10])
    write("nonutf8.pb", p.encode())
    expect("nonutf8.cpu.folded.expected", [(b";".join([b"app"] + names), 20),
                                           (b"app;main;\xff\xfe\xfd", 10)])

    # 10,000 frames: f0 (root) ... f9 repeating; the sample lists leaf first.
    depth = 10000
    p = named([b"f%d" % i for i in range(10)])
    locs = [(i % 10) + 1 for i in range(depth)]
    p.sample(list(reversed(locs)), [1, 7])
    write("deep.pb.gz", gzip.compress(p.encode(), mtime=0))
    expect("deep.cpu.folded.expected",
           [(b";".join([b"app"] + [b"f%d" % (i % 10) for i in range(depth)]), 7)])

    p = named([b"main", b"ma\x00in"])
    p.sample([2, 1], [1, 5])
    write("bad-nul-name.pb", p.encode())

    p = named([b"main"])
    p.function(2, b"", name_index=500)
    p.location(2, 2)
    p.sample([2, 1], [1, 1])
    write("bad-string-index.pb", p.encode())

    p = named([b"main"])
    p.sample([99, 1], [1, 1])
    write("bad-location-id.pb", p.encode())

    p = named([b"main"])
    p.location(2, 77)
    p.sample([2, 1], [1, 1])
    write("bad-function-id.pb", p.encode())

    p = named([b"main"])
    p.location(2, 1, mapping_id=5)
    p.sample([2, 1], [1, 1])
    write("bad-mapping-id.pb", p.encode())


if __name__ == "__main__":
    main()

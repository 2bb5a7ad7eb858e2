#!/usr/bin/env python3
"""Writes the hand-made pprof fixtures of tests/test-import-pprof.sh.

The protobuf bytes are encoded here by hand (no protobuf library), so
the fixtures do not depend on the code under test.  Run it from anywhere:
it writes next to itself.  cpu.pb.gz (from burn/main.go) must exist for
the truncated-gzip case.

  inline.pb             two mappings with build ids (one hex, one not),
                        a location with an inlined line, locations
                        without lines, zero values, two sample types
  bad-*.pb, empty.pb    inputs the importer must refuse
"""
import gzip
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
from pbwire import f_bytes, f_int, f_packed, key, varint  # noqa: E402,F401


class Profile:
    def __init__(self):
        self.strings = [""]
        self.body = []

    def s(self, text):
        if text not in self.strings:
            self.strings.append(text)
        return self.strings.index(text)

    def sample_type(self, typ, unit):
        self.body.append(f_bytes(1, f_int(1, self.s(typ)) + f_int(2, self.s(unit))))

    def sample(self, locs, values):
        self.body.append(f_bytes(2, f_packed(1, locs) + f_packed(2, values)))

    def mapping(self, mid, start, limit, filename, build_id):
        self.body.append(f_bytes(3, f_int(1, mid) + f_int(2, start) + f_int(3, limit)
                                 + f_int(5, self.s(filename)) + f_int(6, self.s(build_id))
                                 + f_int(7, 1) + f_int(8, 1) + f_int(9, 1)))

    def location(self, lid, mapping_id, address, lines):
        """lines: [(function_id, line)], innermost first."""
        enc = b"".join(f_bytes(4, f_int(1, fid) + f_int(2, ln)) for fid, ln in lines)
        self.body.append(f_bytes(4, f_int(1, lid) + f_int(2, mapping_id) + f_int(3, address) + enc))

    def function(self, fid, name, filename, name_index=None):
        idx = self.s(name) if name_index is None else name_index
        self.body.append(f_bytes(5, f_int(1, fid) + f_int(2, idx) + f_int(3, idx)
                                 + f_int(4, self.s(filename))))

    def raw(self, data):
        self.body.append(data)

    def encode(self, time_nanos=0, period=0):
        tail = f_int(9, time_nanos) + f_int(10, 2_000_000_000)
        tail += f_bytes(11, f_int(1, self.s("cpu")) + f_int(2, self.s("nanoseconds")))
        tail += f_int(12, period)
        strings = b"".join(f_bytes(6, t.encode()) for t in self.strings)
        return b"".join(self.body) + strings + tail


def inline_profile():
    p = Profile()
    p.sample_type("samples", "count")
    p.sample_type("cpu", "nanoseconds")
    # The main binary first: it names the series and gives the version.
    p.mapping(1, 0x400000, 0x500000, "/usr/bin/demo",
              "0123456789ABCDEF0123456789abcdef01234567")
    p.mapping(2, 0x7F0000000000, 0x7F0000100000, "/usr/lib/libdemo.so.1",
              "not-a-hex-id")
    p.function(1, "main", "demo.c")
    p.function(2, "work", "demo.c")
    p.function(3, "helper", "demo.h")
    p.function(4, "lib_compute", "lib.c")
    p.function(5, "lib_leaf", "lib.c")
    p.function(6, "lib_entry", "lib.c")
    p.location(1, 1, 0x401000, [(1, 10)])
    # helper was inlined into work at this address.
    p.location(2, 1, 0x402000, [(3, 30), (2, 20)])
    p.location(3, 2, 0x7F0000001000, [(4, 15)])
    # two levels: lib_leaf inlined into lib_compute inlined into lib_entry
    p.location(4, 2, 0x7F0000002000, [(5, 5), (4, 16), (6, 40)])
    # no lines: named after the mapping, or [unknown] without one
    p.location(5, 2, 0x7F0000003000, [])
    p.location(6, 0, 0xDEAD, [])
    p.sample([2, 1], [3, 30_000_000])
    p.sample([3, 2, 1], [5, 50_000_000])
    p.sample([4, 1], [7, 70_000_000])
    p.sample([5, 1], [2, 20_000_000])
    p.sample([6], [1, 10_000_000])
    p.sample([1], [0, 0])                 # nothing: skipped
    p.sample([3, 1], [4, 0])              # only in samples/count
    p.sample([2, 1], [1, 10_000_000])     # same stack again: merged
    return p


def main():
    def write(name, data):
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)

    good = inline_profile().encode(time_nanos=1_700_000_000_123_456_789, period=10_000_000)
    write("inline.pb", good)
    write("inline.pb.gz", gzip.compress(good, mtime=0))

    write("empty.pb", b"")
    # Cut inside a length-delimited field: protobuf must refuse it.
    write("bad-truncated.pb", good[: len(good) // 2 + 3])
    with open(os.path.join(HERE, "cpu.pb.gz"), "rb") as f:
        cpu = f.read()
    write("bad-truncated.pb.gz", cpu[: len(cpu) // 2])
    # Control bytes make format detection pick pprof; wire type 7 is invalid.
    write("bad-garbage.pb", b"\x00\x07\xff\xffnot a profile at all\x0f\x0f")

    p = inline_profile()
    p.sample([99, 1], [1, 1])
    write("bad-location-id.pb", p.encode())

    p = inline_profile()
    p.location(7, 1, 0x403000, [(77, 1)])
    write("bad-function-id.pb", p.encode())

    p = inline_profile()
    p.location(7, 5, 0x403000, [(1, 1)])
    write("bad-mapping-id.pb", p.encode())

    p = inline_profile()
    p.function(7, "", "demo.c", name_index=500)
    write("bad-string-index.pb", p.encode())

    p = inline_profile()
    p.sample([1], [1])
    write("bad-value-count.pb", p.encode())


if __name__ == "__main__":
    main()

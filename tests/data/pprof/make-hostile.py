#!/usr/bin/env python3
"""Writes the hostile pprof profiles of tests/test-security.sh (issue #45)
to standard output, gzipped; the protobuf is encoded by hand (pbwire.py).

  make-hostile.py markup
      sample type "</title><script>alert(1)</script>" (the default type)
      with a unit of markup and newlines, frame names with <, &, ", ', a newline followed by a
      forged folded line, CR, ';', ESC, a backslash, a C1 control (CSI in
      UTF-8) and markup, in 11 stacks below "main" of binary "app":
      weights 10, 20, ..., 110 (660 in all), 1 sample each
  make-hostile.py bomb NAME_BYTES DEPTH
      one function whose name is NAME_BYTES of 'x', DEPTH locations of it
      in all: a few KB whose folded lines hold DEPTH * (NAME_BYTES + 1)
      bytes.  The import keeps at most 1 MiB of names in one stack
      (collector/import/README.md, Limits), so the frames come in samples
      (weight 1000 each) of as many as fit, each under a root function of
      its own, "r0", "r1", ..., that makes its path distinct
"""
import gzip
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbwire import f_bytes, f_int, f_packed  # noqa: E402

EVIL_TYPE = b"</title><script>alert(1)</script>"
EVIL_UNIT = b"</title>\n# forged\n<script>alert(2)</script>"
NAMES = [b"main", b"a<b>&\"c\"'d", b"evil\napp;main 999999", b"cr\rret", b"semi;colon",
         b"esc\x1b[31mred", b"back\\slash", b"c1\xc2\x9bcsi", b"onload=\"alert(3)\"",
         b"<script>alert(4)</script>"]
# Location ids, leaf first; location i + 1 is NAMES[i].
STACKS = [[2, 1], [3, 1], [4, 1], [5, 1], [6, 1], [7, 1], [8, 1], [9, 1], [10, 1], [3, 5, 1],
          [6, 3, 1]]


class Profile:
    def __init__(self):
        self.strings = [b""]
        self.body = []

    def s(self, text):
        if text not in self.strings:
            self.strings.append(text)
        return self.strings.index(text)

    def sample_type(self, typ, unit):
        self.body.append(f_bytes(1, f_int(1, self.s(typ)) + f_int(2, self.s(unit))))

    def mapping(self, filename):
        self.body.append(f_bytes(3, f_int(1, 1) + f_int(2, 0x400000) + f_int(3, 0x500000)
                                 + f_int(5, self.s(filename))))

    def function(self, fid, name):
        self.body.append(f_bytes(5, f_int(1, fid) + f_int(2, self.s(name))
                                 + f_int(3, self.s(name)) + f_int(4, self.s(b"x.c"))))
        self.body.append(f_bytes(4, f_int(1, fid) + f_int(2, 1) + f_int(3, 0x401000 + fid)
                                 + f_bytes(4, f_int(1, fid))))

    def sample(self, locs, values):
        self.body.append(f_bytes(2, f_packed(1, locs) + f_packed(2, values)))

    def encode(self, default_type=0):
        strings = b"".join(f_bytes(6, t) for t in self.strings)
        return b"".join(self.body) + strings + f_int(14, default_type)


def markup():
    p = Profile()
    p.sample_type(b"samples", b"count")
    p.sample_type(EVIL_TYPE, EVIL_UNIT)
    p.mapping(b"/usr/bin/app")
    for i, name in enumerate(NAMES):
        p.function(i + 1, name)
    for k, stack in enumerate(STACKS):
        p.sample(stack, [1, 10 * (k + 1)])
    return p.encode(p.s(EVIL_TYPE))


def bomb(name_bytes, depth):
    p = Profile()
    p.sample_type(b"samples", b"count")
    p.sample_type(b"cpu", b"nanoseconds")
    p.mapping(b"/usr/bin/bomb")
    p.function(1, b"x" * name_bytes)
    per = max(1, min(16000, ((1 << 20) - 16) // name_bytes))
    nsamples = (depth + per - 1) // per
    for k in range(nsamples):
        p.function(2 + k, b"r%d" % k)
        p.sample([1] * min(per, depth - k * per) + [2 + k], [1, 1000])
    return p.encode()


if __name__ == "__main__":
    if sys.argv[1:2] == ["markup"]:
        data = markup()
    elif sys.argv[1:2] == ["bomb"] and len(sys.argv) == 4:
        data = bomb(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(__doc__)
    sys.stdout.buffer.write(gzip.compress(data, mtime=0))

#!/usr/bin/env python3
"""png-colour.py PNG R G B [MIN]: exits 0 when at least MIN (default 1)
pixels of the PNG have the colour (R, G, B), else 1 (2: not a PNG this
reads).  Decodes 8-bit RGB or RGBA PNGs without interlace, as headless
Chromium writes its screenshots; the tests use it to see that a picture
was drawn, not only written."""
import struct
import sys
import zlib


def pixels_of(path, colour):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(2)
    pos, idat, w, h, ct = 8, b"", 0, 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ct = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ct not in (2, 6):
                sys.exit(2)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    bpp = 4 if ct == 6 else 3
    stride = w * bpp
    prev = bytearray(stride)
    i = found = 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            if tuple(line[x:x + 3]) == colour:
                found += 1
        prev = line
    return found


if __name__ == "__main__":
    path, r, g, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    least = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    sys.exit(0 if pixels_of(path, (r, g, b)) >= least else 1)

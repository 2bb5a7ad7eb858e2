"""pbwire.py -- the protobuf wire format, just enough to write
profile.proto test fixtures by hand (make-fixtures.py here and
tests/data/bad-input/make-pprof.py), including malformed ones."""


def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_int(field, n):
    """A varint field; proto3 leaves zero out."""
    return key(field, 0) + varint(n) if n else b""


def f_bytes(field, data):
    return key(field, 2) + varint(len(data)) + data


def f_packed(field, nums):
    return f_bytes(field, b"".join(varint(n) for n in nums)) if nums else b""

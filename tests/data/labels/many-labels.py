#!/usr/bin/env python3
# Writes a gzipped pprof profile of N+1 samples of one stack (work): sample i
# has the string label req=r<i> and the numeric label bytes=100+i, values
# (1 sample, 10 ns of cpu); one more sample has no label, values (2, 20).
# A profile with a label per request, for test-import-labels.sh: the store's
# bound on label sets.  profile.proto encoded by hand (no protobuf module).
#   usage: many-labels.py OUT.pb.gz N
import gzip, sys
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f; n >>= 7
        if n: out.append(b | 0x80)
        else: out.append(b); return bytes(out)
def field(num, wt, payload):
    if wt == 0: return varint(num << 3) + varint(payload)
    return varint(num << 3 | 2) + varint(len(payload)) + payload
def packed(num, vals): return field(num, 2, b''.join(varint(v) for v in vals))
strings = ['']
def s(x):
    if x not in strings: strings.append(x)
    return strings.index(x)
n = int(sys.argv[2])
msg = bytearray()
msg += field(1, 2, field(1, 0, s('samples')) + field(2, 0, s('count')))
msg += field(1, 2, field(1, 0, s('cpu')) + field(2, 0, s('nanoseconds')))
for i in range(n):
    lab = field(3, 2, field(1, 0, s('req')) + field(2, 0, s('r%d' % i)))
    lab += field(3, 2, field(1, 0, s('bytes')) + field(3, 0, 100 + i))  # numeric: summed away
    msg += field(2, 2, packed(1, [1]) + packed(2, [1, 10]) + lab)
msg += field(2, 2, packed(1, [1]) + packed(2, [2, 20]))  # no label
msg += field(4, 2, field(1, 0, 1) + field(4, 2, field(1, 0, 1) + field(2, 0, 7)))
msg += field(5, 2, field(1, 0, 1) + field(2, 0, s('work')) + field(4, 0, s('w.c')))
for x in strings: msg += field(6, 2, x.encode())
open(sys.argv[1], 'wb').write(gzip.compress(bytes(msg)))

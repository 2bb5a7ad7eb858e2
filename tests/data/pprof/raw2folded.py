#!/usr/bin/env python3
"""Turns `go tool pprof -raw` output into the folded text that
`flamefs-collect export --format folded --event EVENT` must print for it.

Usage: go tool pprof -symbolize=none -raw PROFILE | raw2folded.py EVENT [BINARY]

It follows the flamefs pprof mapping rules on pprof's own reading of the
file, so it checks the importer independently of its protobuf code:
  - the first folded frame is BINARY, else the base name of the first
    mapping's file;
  - a location's lines are listed innermost first; the last is the real
    caller, every earlier one was inlined and gets "_[i]";
  - a location without lines is "[base name of its mapping]" or "[unknown]";
  - the weight is the EVENT column; zero weights are dropped; equal stacks
    are summed and lines are sorted bytewise (LC_ALL=C).
"""
import os
import re
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    event = sys.argv[1]
    binary = sys.argv[2] if len(sys.argv) == 3 else None

    section = None
    column = None
    samples = []          # (weight, [location ids, leaf first])
    locations = {}        # id -> (mapping id or None, [names, innermost first])
    mappings = []         # (id, file) in order
    current = None

    sample_re = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*):\s*((?:\d+\s*)*)$")
    loc_re = re.compile(r"^\s*(\d+): 0x[0-9a-f]+ (?:M=(\d+) )?(?:\[F\] )?(.*)$")
    map_re = re.compile(r"^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (.*)$")

    for line in sys.stdin.read().splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            if column is None:
                types = [t.split("/")[0] for t in line.split()]
                if event not in types:
                    sys.exit("raw2folded: no sample type %r in %r" % (event, line))
                column = types.index(event)
                continue
            m = sample_re.match(line)
            if m:
                values = [int(v) for v in m.group(1).split()]
                ids = [int(i) for i in m.group(2).split()]
                samples.append((values[column], ids))
            # anything else is a label line
        elif section == "Locations":
            m = loc_re.match(line)
            if m:
                current = int(m.group(1))
                rest = m.group(3).strip()
                mid = int(m.group(2)) if m.group(2) else None
                locations[current] = (mid, [rest.split()[0]] if rest else [])
            elif line.strip():
                locations[current][1].append(line.split()[0])
        elif section == "Mappings":
            m = map_re.match(line)
            if m:
                mappings.append((int(m.group(1)), m.group(2).split(" ")[0]))

    files = dict(mappings)
    if binary is None:
        binary = os.path.basename(mappings[0][1]) if mappings else ""

    def frames(lid):
        mid, names = locations[lid]
        if not names:
            base = os.path.basename(files.get(mid, "")) if mid else ""
            return ["[%s]" % base if base else "[unknown]"]
        out = [names[-1]]
        out += [n + "_[i]" for n in reversed(names[:-1])]
        return out

    totals = {}
    for weight, ids in samples:
        if weight == 0:
            continue
        stack = [binary]
        for lid in reversed(ids):
            stack += frames(lid)
        key = ";".join(stack)
        totals[key] = totals.get(key, 0) + weight

    lines = ["%s %d" % (k, v) for k, v in totals.items()]
    for line in sorted(lines, key=lambda s: s.encode()):
        print(line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""crash-kill.py — start a command and SIGKILL it at a chosen moment.

Used by tests/test-crash.sh.

  crash-kill.py delay SECONDS -- COMMAND...
      kill SECONDS after the start
  crash-kill.py wal DIR EXTRA -- COMMAND...
      kill EXTRA seconds after a RocksDB WAL (*.log) that was not in DIR
      at the start first has bytes in it: the commit of an import has
      begun (an import writes nothing to its WAL before its one commit)
  crash-kill.py drain FILE N EXTRA -- COMMAND...
      kill EXTRA seconds after FILE (record --log-drains) first holds
      "drain N committing": drain N's commit is under way

Prints one line: "rc=RC ms=MS triggered=0|1 wal=BYTES", where RC is the
exit status (-9 when the kill ended it, anything else when the command
ended first), MS the milliseconds from the start to the kill (in delay
mode, to the exit when the command ended first), and BYTES the WAL bytes seen at the moment of the kill (wal mode).
The wait for a trigger gives up when the command exits by itself.
"""
import os
import signal
import subprocess
import sys
import time


def wal_bytes(d, old):
    n = 0
    try:
        names = os.listdir(d)
    except OSError:
        return 0
    for name in names:
        if name.endswith(".log") and name not in old:
            try:
                n += os.stat(os.path.join(d, name)).st_size
            except OSError:
                pass
    return n


def has_line(path, want):
    try:
        with open(path, "rb") as f:
            return want in f.read()
    except OSError:
        return False


def main():
    argv = sys.argv[1:]
    sep = argv.index("--")
    spec, cmd = argv[:sep], argv[sep + 1:]
    mode = spec[0]
    old = set()
    if mode == "wal":
        d, extra = spec[1], float(spec[2])
        old = {n for n in os.listdir(d) if n.endswith(".log")}
    elif mode == "drain":
        path, want, extra = spec[1], ("drain %d committing " % int(spec[2])).encode(), float(spec[3])
    else:
        delay = float(spec[1])

    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    triggered = 0
    if mode == "delay":
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            triggered = 1
    else:
        while p.poll() is None:
            if mode == "wal" and wal_bytes(d, old) > 0:
                triggered = 1
                break
            if mode == "drain" and has_line(path, want):
                triggered = 1
                break
            if mode == "drain":
                time.sleep(0.0002)
        if triggered and extra > 0:
            time.sleep(extra)
    ms = (time.monotonic() - start) * 1000
    wal = 0
    if p.poll() is None:
        if mode == "wal":
            wal = wal_bytes(d, old)
        p.send_signal(signal.SIGKILL)
    rc = p.wait()
    print("rc=%d ms=%.1f triggered=%d wal=%d" % (rc, ms, triggered, wal))


main()

#!/usr/bin/env python3
"""rusage.py OUT COMMAND [ARGS...]: runs COMMAND and writes one line to OUT,
"wall user sys max_rss_kb" (seconds, to the microsecond), like
`/usr/bin/time -f '%e %U %S %M' -o OUT` but without GNU time's rounding of
user and sys CPU to the hundredth of a second, which is a third of what the
collector spends in a 20 s recording.  COMMAND is its direct child; exits
with COMMAND's status (128 + N for signal N)."""
import os
import sys
import time

if len(sys.argv) < 3:
    sys.exit("usage: rusage.py OUT COMMAND [ARGS...]")
out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        print("rusage.py: %s: %s" % (cmd[0], e.strerror), file=sys.stderr)
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
with open(out, "w") as f:
    f.write("%.6f %.6f %.6f %d\n" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)

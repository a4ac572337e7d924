#!/usr/bin/env python3
"""Runs a command and prints its wall time (s) and peak RSS (MiB) as
"<seconds> <MiB>" on stdout; the command's own output goes to stderr.

usage: measure.py COMMAND [ARGS...]
"""
import resource
import subprocess
import sys
import time

t = time.perf_counter()
rc = subprocess.call(sys.argv[1:], stdout=sys.stderr)
wall = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
if rc:
    sys.exit("measure.py: command failed with status %d: %s" % (rc, " ".join(sys.argv[1:])))
print("%.3f %.1f" % (wall, rss))

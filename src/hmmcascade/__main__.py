import os
import sys

from .cli import main

rc = main()
# Every output is closed once main() returns.  A search holds millions of records, which the
# interpreter would free one by one on the way out (seconds: 2 s for 2 million hits, measured
# 2026-11-26); leave at once instead, unless a child process still runs (then exit as usual, so
# that multiprocessing ends it).
import multiprocessing  # noqa: E402

try:
    sys.stdout.flush()
    sys.stderr.flush()
except (OSError, ValueError):  # (a closed pipe: exit as usual, which reports it)
    sys.exit(rc)
if multiprocessing.active_children():
    sys.exit(rc)
os._exit(rc if isinstance(rc, int) else 1)

"""Where a whole ``hmmcascade`` command's wall time goes, thread by thread: every thread's stack sampled
from before the package's import to the exit, printed as a timeline of the innermost hmmcascade
function each thread was in (runs of the same function joined), then (``--window``) each window's functions per thread, then the seconds per function.

    python3 benchmarks/scale/cli_timeline.py [--interval 0.002] [--min 0.05] [--window 0.25] -- search M.hmmc S.faa -o /dev/null ...

Forked processes (the text workers) are not sampled; their time shows as the parent's wait.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    interval, least, window = 0.002, 0.05, 0.0
    while argv and argv[0] != "--":
        flag, value = argv[0], argv[1]
        argv = argv[2:]
        if flag == "--interval":
            interval = float(value)
        elif flag == "--min":
            least = float(value)
        elif flag == "--window":
            window = float(value)
        else:
            raise SystemExit(f"cli_timeline: unknown option {flag}")
    argv = argv[1:]
    timeline, names, stop = [], {}, threading.Event()
    t0 = time.perf_counter()

    def sample():
        me = threading.get_ident()
        while not stop.wait(interval):
            now = time.perf_counter() - t0
            names.update((th.ident, th.name) for th in threading.enumerate())
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                where, f = None, frame
                while f is not None:
                    if "hmmcascade" in f.f_code.co_filename and "benchmarks" not in f.f_code.co_filename:
                        where = f"{Path(f.f_code.co_filename).name}:{f.f_code.co_name}"
                        break
                    f = f.f_back
                if where is None:
                    where = f"({Path(frame.f_code.co_filename).name}:{frame.f_code.co_name})"
                timeline.append((now, ident, where))

    sampler = threading.Thread(target=sample, name="sampler", daemon=True)
    sampler.start()
    from hmmcascade import cli

    t_import = time.perf_counter() - t0
    try:
        rc = cli.main(argv)
    finally:
        stop.set()
        sampler.join()
        end = time.perf_counter() - t0
        out = sys.stderr
        print(f"\n# cli_timeline: import {t_import:.2f} s, whole {end:.2f} s (sampled every {interval * 1e3:.0f} ms)",
              file=out)
        runs = {}  # thread -> [(start, end, where)]
        for t, ident, where in timeline:
            r = runs.setdefault(ident, [])
            if r and r[-1][2] == where and t - r[-1][1] <= 3 * interval:
                r[-1][1] = t
            else:
                r.append([t, t, where])
        totals = {}
        for ident, r in runs.items():
            name = names.get(ident, str(ident))
            print(f"\n## thread {name}", file=out)
            for a, b, where in r:
                totals[(name, where)] = totals.get((name, where), 0.0) + (b - a + interval)
                if b - a + interval >= least:
                    print(f"  {a:7.2f} -> {b:7.2f}  {b - a + interval:6.2f}s  {where}", file=out)
        if window > 0:  # per window: each thread's functions, most sampled first
            print(f"\n## per {window:g} s window: each thread's functions (seconds sampled)", file=out)
            per = {}
            for t, ident, where in timeline:
                d = per.setdefault(int(t / window), {}).setdefault(names.get(ident, str(ident)), {})
                d[where] = d.get(where, 0) + 1
            for w in sorted(per):
                print(f"  {w * window:6.2f} s", file=out)
                for name, d in sorted(per[w].items()):
                    top = sorted(d.items(), key=lambda kv: -kv[1])[:4]
                    print(f"      {name:22s} " + ", ".join(f"{k} {c * interval:.2f}" for k, c in top), file=out)
        print("\n## seconds per thread and function (top 40)", file=out)
        for (name, where), s in sorted(totals.items(), key=lambda kv: -kv[1])[:40]:
            print(f"  {s:7.2f}s  {name:20s} {where}", file=out)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

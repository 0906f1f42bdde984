"""The domain stage's kernel launches of one search: per kernel, how each launch's seconds go with its
jobs' cells (all of them: throughput; its largest job: a tail that one work-group walks alone).

    python3 benchmarks/domain_launches.py --models M.hmm.gz --seqs S.faa.gz --copies 10 \\
        [--kernel-options decode=wg] [--prefix fb_parser] [--json OUT]

One untimed search (builds, buffers), then one with ``Instrument(launches=True)``. Prints per kernel the
launches, their seconds, jobs and cells, the cells per second of the whole, and the launches that took the
longest with their largest job's share of their cells; ``--json`` writes every launch.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmcascade import cascade  # noqa: E402
from hmmcascade.instrument import Instrument  # noqa: E402
from run_benchmark import add_workload_arguments, open_workload, workload_options  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(ap)
    ap.add_argument("--prefix", default="", help="only kernels whose launch name starts with this")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    db, seqs, dev = open_workload(args)
    options = workload_options(args)
    cascade.search(db, seqs, dev, options=options)  # untimed
    inst = Instrument(launches=True)
    res = cascade.search(db, seqs, dev, options=options, instrument=inst)
    by = defaultdict(list)
    for name, sec, jobs, cmax, csum in inst.launches:
        if name.startswith(args.prefix):
            by[name].append((sec, jobs, cmax, csum))
    print(f"{dev.name}: {len(res.hits)} hits, options {args.kernel_options or '(defaults)'}")
    out = {}
    for name, rows in sorted(by.items()):
        sec = sum(r[0] for r in rows)
        cells = sum(r[3] for r in rows)
        print(f"{name:24s} {len(rows):5d} launches {sec:8.4f} s  {sum(r[1] for r in rows):8d} jobs  "
              f"{cells / 1e9:8.3f} Gcells  {cells / max(sec, 1e-12) / 1e9:8.2f} Gcells/s")
        for sec_l, jobs, cmax, csum in sorted(rows, reverse=True)[:args.top]:
            print(f"    {sec_l:8.4f} s  {jobs:7d} jobs  {csum / 1e6:9.2f} Mcells  largest {cmax / 1e6:8.2f} Mcells "
                  f"({cmax / max(csum, 1):.3f} of the launch)  {csum / max(sec_l, 1e-12) / 1e9:7.2f} Gcells/s")
        out[name] = [{"seconds": r[0], "jobs": r[1], "largest_cells": r[2], "cells": r[3]} for r in rows]
    if args.json:
        Path(args.json).write_text(json.dumps({"device": dev.name, "options": args.kernel_options, "launches": out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

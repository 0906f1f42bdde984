"""Wall time of ``cascade.search`` under settings of module constants or options, side by side in one run.

    python3 benchmarks/sweep_search.py --models M.hmm.gz --seqs S.faa.gz --copies 10 \\
        --set TAPER_SPLITS=1,2,3 --repeat 2

Each value of the ``--set`` constant (a name in hmmcascade.cascade) gets ``--repeat`` searches,
in turn (value after value, then again), after one warm-up search; prints each search's wall
time, hit count and kernel seconds, and the best and mean per value.  ``--set option:NAME=...``: a
field of the search's :class:`hmmcascade.options.SearchOptions` (as ``option:viterbi=warp,wg``; the
others from ``--kernel-options``; not ``inline_ptx``, a build option of the device: compare it with
``--kernel-options`` in two runs); ``--set build:PROGRAM=OPTS,OPTS``: src/hmmcascade/kernels/PROGRAM.cl built with each
space-separated option list (empty: none), e.g. ``--set "build:msv=,-DMSV_TILE=64"``.  (For choosing
defaults on the GPU machine; the comparison with pyhmmer is run_benchmark.py's.)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, replace
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmcascade import cascade  # noqa: E402
from hmmcascade.options import SearchOptions  # noqa: E402
from run_benchmark import PROGRAMS, add_workload_arguments, open_workload, workload_options  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_workload_arguments(ap)
    ap.add_argument("--set", required=True, help="NAME=v1,v2,...: a hmmcascade.cascade constant and its values, "
                    "option:NAME=v1,v2,...: a field of the search's SearchOptions (as option:side_queue=on,off), "
                    "or build:PROGRAM=OPTS,OPTS: src/hmmcascade/kernels/PROGRAM.cl built with each option list")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    name, _, values = args.set.partition("=")
    option, build = name.startswith("option:"), name.startswith("build:")
    if option or build:
        name = name.partition(":")[2]
    if option and (name not in {f.name for f in fields(SearchOptions)} or name == "inline_ptx"):
        ap.error(f"--set: {name!r} is not a search option (hmmcascade.options.SearchOptions; inline_ptx: "
                 "use --kernel-options)")
    if not values or (not option and not build and not hasattr(cascade, name)):
        ap.error(f"--set: hmmcascade.cascade has no constant {name!r}, or no values given")
    kind = str if option or build else type(getattr(cascade, name))
    vals = [kind(v) for v in values.split(",")]
    base = workload_options(args)
    options = {v: replace(base, **{name: v}) if option else base for v in vals}  # (checked before the search)
    db, seqs, dev = open_workload(args)
    for prog in PROGRAMS:
        dev.program(prog)
    builds = {v: dev.build(name, tuple(v.split())) for v in vals} if build else {}
    t = time.perf_counter()
    cascade.search(db, seqs, dev, options=base)  # warm-up (buffer pools, page-locked memory)
    print(f"warm-up search (the process's first): {time.perf_counter() - t:.2f} s", flush=True)
    times = {v: [] for v in vals}
    for r in range(args.repeat):
        for v in vals:
            if build:
                dev.use_program(name, builds[v])
            elif not option:
                setattr(cascade, name, v)
            t = time.perf_counter()
            res = cascade.search(db, seqs, dev, options=options[v])
            times[v].append(time.perf_counter() - t)
            ks = ", ".join(f"{k} {sec:.3f}" for k, sec in res.stats.kernel_s.items())
            print(f"{name}={v} run {r + 1}: {times[v][-1]:.2f} s, {len(res.hits)} hits; kernel s: {ks}", flush=True)
    for v, ts in times.items():
        print(f"{name}={v}: best {min(ts):.2f} s, mean {sum(ts) / len(ts):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

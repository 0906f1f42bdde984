"""Two source trees' searches timed alternately on one machine, in separate processes.

Each round runs, for every tree in turn, one process that opens the workload with that tree's own
``benchmarks/run_benchmark.py`` (its ``open_workload``: models pressed, kernels built), searches once
untimed, then ``--timed`` times, and prints the wall seconds of each search (from its call to its
return; the search before's result is freed before the clock starts), the hits and the last
search's statistics (kernel seconds per stage and per domain kernel).  Alternating the trees over
rounds spreads the machine's drift over both.  A tree is any folder holding ``src/hmmcascade`` and
``benchmarks/run_benchmark.py`` (``git archive COMMIT src benchmarks/run_benchmark.py | tar -x -C DIR``);
``NAME=DIR@KEY=VALUE,...`` runs that tree's search with those ``--kernel-options``.

    python3 benchmarks/alternate_trees.py --tree old=DIR --tree new=. --rounds 2 --timed 3 \\
        --models .devdata/pfam35_dev.hmm.gz --seqs .devdata/proteins_dev.faa.gz --copies 10 --json OUT

The summary gives each tree's times, median and range, and the medians' ratio to the first tree's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def probe(tree: Path, argv: list[str], timed: int) -> dict:
    """In this process: the tree's workload opened, one untimed search, ``timed`` timed ones."""
    spec = importlib.util.spec_from_file_location("tree_benchmark", tree / "benchmarks" / "run_benchmark.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # (puts the tree's src first on sys.path)
    ap = argparse.ArgumentParser()
    bench.add_workload_arguments(ap)
    args = ap.parse_args(argv)
    db, seqs, dev = bench.open_workload(args)
    options = bench.workload_options(args)
    from hmmcascade import cascade
    from hmmcascade.domaindef import launches

    made = []  # the domain stages' launch records of each search (their kernel seconds per domain kernel)
    init = launches.DomainLaunches.__init__

    def record(self, *a, **k):
        init(self, *a, **k)
        made.append(self)

    launches.DomainLaunches.__init__ = record
    times, hits, stats, domain_s = [], None, None, []
    for n in range(timed + 1):
        made.clear()
        res = None  # (the search before's result is freed here, not inside the next search's time)
        t = time.perf_counter()
        res = cascade.search(db, seqs, dev, options=options)
        dt = time.perf_counter() - t
        if n:
            times.append(round(dt, 4))
            domain_s.append({k: round(sum(m.kernel_s[k] for m in made), 4) for k in made[0].kernel_s} if made else {})
        hits, stats = len(res.hits), res.stats.as_dict()
    import hmmcascade

    return {"tree": str(tree), "module": hmmcascade.__file__, "device": dev.name, "times": times,
            "hits": hits, "domain_kernel_s": domain_s, "stats": stats}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timed", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--probe", default=None, help=argparse.SUPPRESS)
    args, workload = ap.parse_known_args()
    if args.probe:
        print(json.dumps(probe(Path(args.probe).resolve(), workload, args.timed), default=float))
        return 0
    trees = [t.split("=", 1) for t in args.tree]
    if len(trees) < 1 or any(len(t) != 2 for t in trees):
        ap.error("give --tree NAME=DIR[@KERNEL_OPTIONS] at least once")
    runs: dict[str, list[dict]] = {name: [] for name, _ in trees}
    for r in range(args.rounds):
        for name, tree in trees:
            tree, _, kopts = tree.partition("@")  # DIR@KEY=VALUE,...: that tree's search with --kernel-options
            extra = ["--kernel-options", kopts] if kopts else []
            out = subprocess.run([sys.executable, __file__, "--probe", tree, "--timed", str(args.timed), *workload,
                                  *extra],
                                 capture_output=True, text=True)
            if out.returncode:
                sys.stderr.write(out.stderr[-4000:])
                raise SystemExit(f"alternate_trees: {name} ({tree}) failed in round {r + 1}")
            rec = json.loads(out.stdout.strip().splitlines()[-1])
            runs[name].append(rec)
            dom = rec["domain_kernel_s"][-1] if rec["domain_kernel_s"] else {}
            print(f"round {r + 1} {name:8s} {rec['times']}  hits {rec['hits']}  kernels {rec['stats']['kernel_s']}"
                  f"  domain kernels {dom}", flush=True)
    summary = {}
    first = None
    for name, recs in runs.items():
        times = [t for rec in recs for t in rec["times"]]
        med = statistics.median(times)
        first = first or med
        summary[name] = {"median": med, "min": min(times), "max": max(times), "ratio_to_first": med / first,
                         "hits": sorted({rec["hits"] for rec in recs})}
        print(f"{name:8s} median {med:.3f} s  range {min(times):.3f}-{max(times):.3f}  "
              f"x{med / first:.3f} of the first  hits {summary[name]['hits']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"argv": sys.argv, "summary": summary, "runs": runs},
                                              indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

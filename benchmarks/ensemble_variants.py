"""Variants of kernel ``region_ensemble`` (src/hmmcascade/kernels/ensemble.cl) on the multi-domain regions of a
real search: each variant recomputes every region the search hands to
:meth:`hmmcascade.domaindef.multidomain.RegionEnsembles.run`, its kernel seconds are summed, and its
results are compared with the first variant's (null2 scores and envelopes, exactly).

    python3 benchmarks/ensemble_variants.py --models M.hmm.gz --seqs S.faa.gz --copies 1 \\
        --variant serial::1 --variant warp: --variant ahead8:-DENS_AHEAD=8 \\
        --variant exact-div:-DENS_EXACT_DIV

A variant is ``name:build options:lanes`` (options separated by commas; lanes per region,
default as the search chooses).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmcascade import cascade  # noqa: E402
from hmmcascade.domaindef import multidomain  # noqa: E402
from hmmcascade.instrument import Instrument  # noqa: E402
from run_benchmark import add_workload_arguments, open_workload, workload_options  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_workload_arguments(ap)
    ap.add_argument("--variant", action="append", required=True, help="name:options:lanes")
    args = ap.parse_args()

    db, seqs, dev = open_workload(args)
    variants = []
    for spec in args.variant:
        name, opts, lanes = (spec.split(":") + ["", ""])[:3]
        options = tuple(o for o in opts.split(",") if o)
        prg = dev.build("ensemble", options)
        variants.append((name, prg, int(lanes) if lanes else None))
    secs = {v[0]: 0.0 for v in variants}
    diffs = {v[0]: 0 for v in variants}
    regions = [0]
    launches = {v[0]: [] for v in variants}  # (seconds, regions, largest M x L)
    original = multidomain.RegionEnsembles.run
    lanes_default = multidomain.region_lanes

    def run_variants(stage, batch, seq, model, starts, ends, **kw):
        regions[0] += len(seq)
        first = None
        saved = dev.program("ensemble")
        try:
            for name, prg, lanes in variants:
                dev.use_program("ensemble", prg)
                multidomain.region_lanes = (lambda d, n=lanes: n) if lanes else lanes_default
                stats = stage.stats
                before = stats.ensemble_s
                before_inst, dev.instrument = dev.instrument, Instrument(launches=True)
                res = original(stage, batch, seq, model, starts, ends, backend="device", **kw)
                launches[name] += [(e[1], e[2], e[3]) for e in dev.instrument.launches if e[0] == "region_ensemble"]
                dev.instrument = before_inst
                secs[name] += stats.ensemble_s - before
                if first is None:
                    first = res
                else:
                    diffs[name] += sum(1 for a, b in zip(first, res)
                                       if a[1] != b[1] or not np.array_equal(a[0], b[0]))
        finally:
            dev.use_program("ensemble", saved)
            multidomain.region_lanes = lanes_default
        return first

    multidomain.RegionEnsembles.run = run_variants
    res = cascade.search(db, seqs, dev, options=workload_options(args))
    print(f"device {dev.name}; {len(res.hits)} hits; {regions[0]} multi-domain regions")
    for name, _, lanes in variants:
        print(f"  {name:20s} lanes {lanes or 'auto':>4}  ensemble kernel {secs[name]:7.3f} s  "
              f"regions differing from {variants[0][0]}: {diffs[name]}")
        print("      launches (s, regions, largest M x L): " +
              ", ".join(f"{a:.3f} {b} {c:.2e}" for a, b, c in launches[name]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

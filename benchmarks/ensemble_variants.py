"""Variants of kernel ``region_ensemble`` (kernels/ensemble.cl) on the multi-domain regions of a
real search: each variant recomputes every region the search hands to
:func:`hmmcascade.ensemble_gpu.region_ensembles`, its kernel seconds are summed, and its
results are compared with the first variant's (null2 scores and envelopes, exactly).

    python3 benchmarks/ensemble_variants.py --models M.hmm.gz --seqs S.faa.gz --copies 1 \\
        --variant exact:-DENS_EXACT_DIV --variant fast: --variant fast-pf4:-DENS_PREFETCH=4 \\
        --variant fast-lanes1::1

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

from hmmcascade import cascade, device, ensemble_gpu, filters, profiles  # noqa: E402
from run_benchmark import PROGRAMS, read_workload  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--seqs", required=True)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--max-models", type=int, default=0)
    ap.add_argument("--device", default=None)
    ap.add_argument("--variant", action="append", required=True, help="name:options:lanes")
    args = ap.parse_args()

    hmms, seqs = read_workload(args.models, args.seqs, args.copies, args.max_models)
    db = profiles.press(hmms)
    dev = device.open_device(args.device)
    for name in PROGRAMS:
        dev.program(name)
    variants = []
    for spec in args.variant:
        name, opts, lanes = (spec.split(":") + ["", ""])[:3]
        options = tuple(o for o in opts.split(",") if o)
        variants.append((name, dev.build("ensemble", options), int(lanes) if lanes else None))
    secs = {v[0]: 0.0 for v in variants}
    diffs = {v[0]: 0 for v in variants}
    regions = [0]
    launches = {v[0]: [] for v in variants}  # (seconds, regions, largest M x L)
    original = ensemble_gpu.region_ensembles
    lanes_default = ensemble_gpu._region_lanes
    programs = dev.__dict__.setdefault("_programs", {})
    kernels = dev.__dict__.setdefault("_kernels", {})

    def run_variants(engine, batch, seq, model, starts, ends, **kw):
        regions[0] += len(seq)
        first = None
        saved = programs["ensemble"], kernels.get(("ensemble", "region_ensemble"))
        try:
            for name, prg, lanes in variants:
                programs["ensemble"] = prg
                kernels[("ensemble", "region_ensemble")] = prg.region_ensemble
                ensemble_gpu._region_lanes = (lambda d, k, n=lanes: n) if lanes else lanes_default
                stats = engine.__dict__.setdefault("ensemble_stats", ensemble_gpu.EnsembleStats())
                before = stats.ensemble_s
                log, filters.LAUNCH_LOG = filters.LAUNCH_LOG, []
                res = original(engine, batch, seq, model, starts, ends, backend="device", **kw)
                launches[name] += [(e[1], e[2], e[3]) for e in filters.LAUNCH_LOG if e[0] == "region_ensemble"]
                filters.LAUNCH_LOG = log
                secs[name] += stats.ensemble_s - before
                if first is None:
                    first = res
                else:
                    diffs[name] += sum(1 for a, b in zip(first, res)
                                       if a[1] != b[1] or not np.array_equal(a[0], b[0]))
        finally:
            programs["ensemble"], kernels[("ensemble", "region_ensemble")] = saved
            ensemble_gpu._region_lanes = lanes_default
        return first

    ensemble_gpu.region_ensembles = run_variants
    res = cascade.search(db, seqs, dev)
    print(f"device {dev.name}; {len(res.hits)} hits; {regions[0]} multi-domain regions")
    for name, _, lanes in variants:
        print(f"  {name:20s} lanes {lanes or 'auto':>4}  ensemble kernel {secs[name]:7.3f} s  "
              f"regions differing from {variants[0][0]}: {diffs[name]}")
        print("      launches (s, regions, largest M x L): " +
              ", ".join(f"{a:.3f} {b} {c:.2e}" for a, b, c in launches[name]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

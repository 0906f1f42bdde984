"""hmmcascade vs pyhmmer.hmmsearch, side by side in one process, on the same inputs.

Workloads:
    dev      all models of --models x all proteins of --seqs (../shared/data: 2,466 x 9,366)
    dev-x10  the same proteins as 10 renamed copies (Swiss-Prot-like volume)

Prints and writes (--json) wall times, the speed ratio, GCUPS per stage, pass
rates and a time breakdown; compares hits, included hits and domains with
pyhmmer's (hmmcascade.compare).  Kernel compilation happens before the timed
search and is reported separately.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from hmmcascade import cascade, device  # noqa: E402
from hmmcascade.press import press  # noqa: E402
from hmmcascade.io import SequenceSet, read_hmms, read_sequences  # noqa: E402


def replicate(seqs: SequenceSet, copies: int) -> SequenceSet:
    """``copies`` renamed copies of every sequence (name suffix ``/copyN``)."""
    n = len(seqs)
    index = np.tile(np.arange(n), copies)
    out = seqs.subset(index)
    out.names = [f"{name}/copy{c}" for c in range(copies) for name in seqs.names]
    return out


#: every kernel program a search uses, built before the timed part
PROGRAMS = ("layout", "msv", "select", "bias", "viterbi", "forward", "domains", "ensemble", "null2")


def read_workload(models: str, seqs: str, copies: int = 1, max_models: int = 0):
    """The models (the first ``max_models``, 0 = all) and ``copies`` renamed copies of the sequences."""
    hmms = read_hmms(models)
    if max_models:
        hmms = hmms[:max_models]
    targets = read_sequences(seqs)
    if copies > 1:
        targets = replicate(targets, copies)
    return hmms, targets


def add_workload_arguments(ap) -> None:
    """The options naming a workload and a device, shared by the benchmark scripts."""
    ap.add_argument("--models", required=True)
    ap.add_argument("--seqs", required=True)
    ap.add_argument("--copies", type=int, default=1, help="renamed copies of the proteins (10 = dev-x10)")
    ap.add_argument("--max-models", type=int, default=0, help="use only the first N models (0 = all)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--kernel-options", default="", metavar="KEY=VALUE[,KEY=VALUE]",
                    help="the search's SearchOptions (hmmcascade.options), as hmmcascade search --kernel-options")


def workload_options(args):
    """The :class:`~hmmcascade.options.SearchOptions` of ``--kernel-options``."""
    from hmmcascade.options import SearchOptions

    return SearchOptions.parse(args.kernel_options)


def open_workload(args):
    """``(pressed models, sequences, device)`` for :func:`add_workload_arguments`' options, every
    program built (the device as ``--kernel-options`` say: inline PTX; the search takes
    :func:`workload_options`)."""
    hmms, seqs = read_workload(args.models, args.seqs, args.copies, args.max_models)
    db = press(hmms)
    dev = device.open_device(args.device, workload_options(args))
    for name in PROGRAMS:
        dev.program(name)
    return db, seqs, dev


def to_digital_block(seqs: SequenceSet):
    from pyhmmer.easel import Alphabet, DigitalSequence, DigitalSequenceBlock

    abc = Alphabet.amino()
    block = DigitalSequenceBlock(abc)
    for i in range(len(seqs)):
        o, L = int(seqs.offsets[i]), int(seqs.lengths[i])
        block.append(DigitalSequence(abc, name=seqs.names[i].encode(),
                                     sequence=seqs.residues[o : o + L].tobytes()))
    return block


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(ap)
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--skip-pyhmmer", action="store_true")
    ap.add_argument("--filters-only", action="store_true",
                    help="stop hmmcascade after the Forward filter (kernel benchmarks; implies --skip-pyhmmer)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--ptx-dir", default=None, help="write each kernel's device binary (PTX text on NVIDIA) here")
    args = ap.parse_args()

    t = time.perf_counter()
    hmms, seqs = read_workload(args.models, args.seqs, args.copies, args.max_models)
    t_read = time.perf_counter() - t

    t = time.perf_counter()
    db = press(hmms)
    t_press = time.perf_counter() - t

    options = workload_options(args)
    dev = device.open_device(args.device, options)
    t = time.perf_counter()
    for name in PROGRAMS:
        dev.program(name)
    t_build = time.perf_counter() - t
    if args.ptx_dir:
        import pyopencl as cl

        Path(args.ptx_dir).mkdir(parents=True, exist_ok=True)
        for name in ("msv", "bias", "viterbi", "forward"):
            binary = dev.program(name).get_info(cl.program_info.BINARIES)[0]
            Path(args.ptx_dir, f"{name}.ptx").write_bytes(binary)
    print(f"device: {dev.name}; {len(db)} models ({db.nodes} nodes) x {len(seqs)} targets "
          f"({seqs.total_residues} residues); kernels built in {t_build:.2f}s", flush=True)

    t = time.perf_counter()
    res = cascade.search(db, seqs, dev, domains=not args.filters_only, options=options)
    if args.filters_only:
        args.skip_pyhmmer = True
    t_ours = time.perf_counter() - t
    # a search's records make their Domain and Alignment objects when first read (DomainList): made
    # here, timed apart, so that the ratio can be stated with and without them
    t = time.perf_counter()
    n_dom = sum(len(h.domains[:]) for h in res.records)
    t_records = time.perf_counter() - t
    cells = db.nodes * seqs.total_residues
    s = res.stats
    report = {
        "device": dev.name, "models": len(db), "nodes": db.nodes, "targets": len(seqs),
        "residues": seqs.total_residues, "cells": cells, "read_s": t_read, "press_s": t_press,
        "build_s": t_build, "hmmcascade_s": t_ours, "hmmcascade_gcups": cells / t_ours / 1e9,
        "stats": s.as_dict(), "hits": len(res.hits),
        "stage_gcups": {k: (s.cells[k] / s.kernel_s[k] / 1e9 if s.kernel_s[k] else None) for k in s.cells},
        "pass_rates": {k: getattr(s, k) / max(len(db) * len(seqs), 1)
                       for k in ("past_msv", "past_bias", "past_vit", "past_fwd")},
    }
    report["domain_records_s"] = t_records
    print(f"hmmcascade: {t_ours:.2f}s ({report['hmmcascade_gcups']:.1f} GCUPS end to end), {len(res.hits)} hits; "
          f"their {n_dom} domain records made when first read, afterwards: {t_records:.2f}s")
    for k, v in report["stage_gcups"].items():
        print(f"  {k:8s} kernel {s.kernel_s[k]:8.3f}s  cells {s.cells[k]:.3e}  "
              f"{'-' if v is None else f'{v:.1f} GCUPS'}")
    print(f"  MSV reruns (exact kernel): {s.msv_reruns} pairs, {s.msv_rerun_s:.3f}s")
    kern = sum(s.kernel_s.values())
    # the host's work overlaps the kernels (asynchronous reads, model ranges queued ahead, a worker
    # thread scoring one batch while the device works on the next): host + kernels may pass the wall
    report["breakdown_s"] = {"kernels": kern, "host": s.host_s, "device_idle": max(t_ours - kern, 0.0),
                             "overlap": max(kern + s.host_s - t_ours, 0.0)}
    print(f"  time: kernels {kern:.2f}s, host (packing, P-values, selection, domain assembly, records; both "
          f"threads) {s.host_s:.2f}s, device idle {report['breakdown_s']['device_idle']:.2f}s, "
          f"host work overlapping kernels >= {report['breakdown_s']['overlap']:.2f}s")
    print(f"  pass counts MSV {s.past_msv} / bias {s.past_bias} / Viterbi {s.past_vit} / Forward {s.past_fwd}; "
          f"rates {report['pass_rates']}", flush=True)

    if not args.skip_pyhmmer:
        import pyhmmer

        block = to_digital_block(seqs)
        t = time.perf_counter()
        ref = {}
        for top in pyhmmer.hmmsearch(hmms, block, cpus=args.cpus, Z=len(seqs)):
            for hit in top.reported:
                ref[(top.query.name, hit.name if isinstance(hit.name, str) else hit.name.decode())] = hit
        t_ref = time.perf_counter() - t
        from hmmcascade.compare import compare_hits, summary_text

        cmp = compare_hits(res.records, ref)
        report.update({
            "pyhmmer_s": t_ref, "pyhmmer_cpus": args.cpus, "pyhmmer_gcups": cells / t_ref / 1e9,
            "speedup": t_ref / t_ours, "speedup_with_domain_records": t_ref / (t_ours + t_records),
            "pyhmmer_hits": len(ref), "missing": len(cmp["missing"]),
            "extra": cmp["extra_count"], "comparison": {k: v for k, v in cmp.items() if not isinstance(v, list)},
        })
        print(f"pyhmmer ({args.cpus} cpus): {t_ref:.2f}s ({report['pyhmmer_gcups']:.1f} GCUPS); "
              f"speedup {report['speedup']:.2f}x ({report['speedup_with_domain_records']:.2f}x counting the domain "
              f"records' making)")
        print(summary_text(cmp))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Host time per pair of the work after the envelope kernel: scores, alignments, hit records.

Runs ``cascade.search`` once, recording the inputs of every ``score_domains`` call
(regions, clustering results, envelope kernel results of each batch); then times, on those
inputs repeated ``--copies`` times (the pairs of a large search), everything from "envelope
results are on the host" to "records are sorted":

    envelope_jobs + score_domains + make_hits + threshold_hits + sort_hits

and, separately, decoding the alignment lines (done on first access, e.g. by the alignment
output or ``save_hits``).  ``--reference`` also times the per-pair, per-domain code these
replaced (kept in ``tests/test_domain_host.py``) on the same inputs and checks that both give
identical records.  Times are CPU seconds (``time.process_time``), the best of ``--runs``
warm runs.

Example (2,466 Pfam models x 300 proteins, about 1,000 pairs, as 100,000 pairs)::

    PYTHONPATH=src python benchmarks/domain_host.py --workers 1 \\
        --models .devdata/pfam35_dev.hmm.gz --seqs .devdata/proteins_dev.faa.gz --max-seqs 300 \\
        --copies 100 --reference
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hmmcascade import cascade, device, io  # noqa: E402
from hmmcascade.press import press  # noqa: E402
from hmmcascade.domaindef import engine  # noqa: E402
from hmmcascade.domaindef.records import envelope_jobs  # noqa: E402
from hmmcascade.domaindef.scoring import score_domains  # noqa: E402
from hmmcascade.options import SearchOptions  # noqa: E402
from hmmcascade.results import hit_to_dict  # noqa: E402


def capture(db, seqs, dev, th, options=None):
    """Search, keeping each score_domains call's arguments."""
    calls = []
    real = engine.score_domains

    def spy(*args, **kw):  # (kw: the engine's null2 sums)
        calls.append(args)
        return real(*args, **kw)

    engine.score_domains = spy
    try:
        t = time.perf_counter()
        res = cascade.search(db, seqs, dev, th, options=options)
        wall = time.perf_counter() - t
    finally:
        engine.score_domains = real
    return res, calls, wall


def repeat(args: tuple, copies: int) -> tuple:
    """The inputs of one batch as ``copies`` batches' worth of pairs (same targets, renumbered pairs)."""
    db, seqs, pair_seq, pair_model, fwd, null, regions, nexp, ens, _, env = args
    n = len(pair_seq)

    def tile(a):
        return np.concatenate([np.asarray(a)] * copies)

    ens_k = {(p + k * n, r): v for k in range(copies) for (p, r), v in ens.items()}
    return (db, seqs, tile(pair_seq), tile(pair_model), tile(fwd), tile(null), list(regions) * copies, tile(nexp),
            ens_k, env * copies)


def new_records(inputs, th, Z):
    """The current code; returns (records, seconds per stage, the batches' results)."""
    T = time.process_time
    t = {"envelope_jobs": 0.0, "score_domains": 0.0, "make_hits": 0.0}
    records, batches = [], []
    for db, seqs, pair_seq, pair_model, fwd, null, regions, nexp, ens, env in inputs:
        t0 = T()
        jobs = envelope_jobs(regions, ens)
        t1 = T()
        pd = score_domains(db, seqs, pair_seq, pair_model, fwd, null, regions, nexp, ens, jobs, env)
        t2 = T()
        records += cascade.make_hits(db, seqs, np.arange(len(seqs)),
                                     cascade.Survivors(None, pair_seq, pair_model, domains=pd), th, Z)
        t3 = T()
        t["envelope_jobs"] += t1 - t0
        t["score_domains"] += t2 - t1
        t["make_hits"] += t3 - t2
        batches.append(pd)
    t0 = T()
    cascade.threshold_hits(records, th, Z)
    t1 = T()
    records = cascade.sort_hits(records, th)
    t2 = T()
    t["threshold_hits"], t["sort_hits"] = t1 - t0, t2 - t1
    return records, t, batches


def old_records(inputs, th, Z):
    """The per-pair code these replaced (tests/test_domain_host.py's references)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_domain_host as ref

    T = time.process_time
    t0 = T()
    records = []
    for db, seqs, pair_seq, pair_model, fwd, null, regions, nexp, ens, env in inputs:
        out = ref._ref_block(db, seqs, pair_seq, pair_model, fwd, null, regions, nexp, ens, env)
        records += ref._ref_make_hits(db, seqs, np.arange(len(seqs)), {"seq": pair_seq, "model": pair_model,
                                                                        "domains": out}, th, Z)
    ref._ref_threshold_hits(records, th, Z)
    records = ref._ref_sort_hits(records, th)
    return records, T() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(ROOT / "resources" / "pfam35_default.hmm.gz"))
    ap.add_argument("--seqs", default=str(ROOT / "resources" / "proteins_default.faa.gz"))
    ap.add_argument("--max-models", type=int, default=0)
    ap.add_argument("--max-seqs", type=int, default=0)
    ap.add_argument("--copies", type=int, default=100, help="repeat the recorded pairs this many times")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="also time the per-domain code and compare records")
    ap.add_argument("--device", default=None)
    ap.add_argument("--workers", type=int, default=0,
                    help="host worker processes of the search (SearchOptions.workers; 0: one per CPU)")
    args = ap.parse_args()

    hmms = io.read_hmms(args.models)
    if args.max_models:
        hmms = hmms[: args.max_models]
    seqs = io.read_sequences(args.seqs)
    if args.max_seqs:
        seqs = seqs.subset(np.arange(min(args.max_seqs, len(seqs))))
    db = press(hmms)
    dev = device.open_device(args.device)
    Z = float(len(seqs))
    th = cascade.Thresholds(Z=Z)
    res, calls, wall = capture(db, seqs, dev, th, SearchOptions(workers=args.workers))
    npairs0 = sum(len(c[2]) for c in calls)
    print(f"search: {len(db)} models x {len(seqs)} targets on {dev.name}: {wall:.1f}s wall, {npairs0} pairs to "
          f"domain definition in {len(calls)} batches, {len(res.records)} records", flush=True)

    inputs = [repeat(c, args.copies) for c in calls]
    npairs = sum(len(c[2]) for c in inputs)
    best, lines_s = None, None
    for run in range(args.runs + 1):  # the first run warms up
        records, t, batches = new_records(inputs, th, Z)
        t0 = time.process_time()
        for pd in batches:
            if pd.lines is not None:
                pd.lines.text(0, "model_line")
        tl = time.process_time() - t0
        if run:
            best = t if best is None else {k: min(v, t[k]) for k, v in best.items()}
            lines_s = tl if lines_s is None else min(lines_s, tl)
        if run < args.runs:
            del records, batches
            gc.collect()
    total = sum(best.values())
    ndom = sum(len(h.domains) for h in records)
    print(f"vectorised: {npairs} pairs, {len(records)} records, {ndom} domains: {total:.3f}s = "
          f"{1e6 * total / npairs:.1f} us/pair  (" + ", ".join(f"{k} {v:.3f}s" for k, v in best.items()) + ")")
    print(f"  alignment lines, decoded on first access: {lines_s:.3f}s = {1e6 * lines_s / npairs:.1f} us/pair")
    if args.reference:
        old, t_old = old_records(inputs, th, Z)
        print(f"per-domain reference: {t_old:.3f}s = {1e6 * t_old / npairs:.1f} us/pair (alignment lines "
              f"included); speed-up {t_old / (total + lines_s):.0f}x with the lines, {t_old / total:.0f}x without")
        same = [hit_to_dict(h) for h in old] == [hit_to_dict(h) for h in records]
        print(f"records identical: {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

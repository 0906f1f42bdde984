"""How far the Forward filter's scores lie from the Forward parser's in HMMER's order, against the
rescoring's margin (hmmcascade.rescore): every pair that passes the Viterbi filter, scored by the filter's
kernels (forward_warp<C> on a GPU) and by fb_parser_wg (HMMER's order), in batches of the targets.

    python3 benchmarks/forward_rounding.py --models M.hmm.gz --seqs S.faa.gz [--batch 4000] [--json OUT]

Prints the pairs compared, how many differ, the largest difference in units in the last place of the float32
score and as a share of the margin, and at HMMER's F3 (1e-5) how many pairs lie near the threshold (decided
again by the rescoring) and how many of those the filter's own score decides otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmcascade import stats  # noqa: E402
from hmmcascade.cascade import Cascade  # noqa: E402
from hmmcascade.options import SearchOptions  # noqa: E402
from hmmcascade.reporting import Thresholds  # noqa: E402
from hmmcascade.rescore import margin_nats, near_threshold  # noqa: E402
from run_benchmark import add_workload_arguments, open_workload  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(ap)
    ap.add_argument("--batch", type=int, default=4000, help="targets per batch")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    db, seqs, dev = open_workload(args)
    c = Cascade(dev, db, options=SearchOptions.parse(args.kernel_options, SearchOptions(rescore="off")))
    order = np.argsort(seqs.lengths, kind="stable")
    order = order[seqs.lengths[order] > 0]
    every = Thresholds(F3=1.0)
    fast, exact, filt, model = [], [], [], []
    for a in range(0, len(order), args.batch):
        out, _ = c.filter_batch(seqs.subset(order[a:a + args.batch]), every)
        fsc, _ = c.domains.exact_forward(out.batch, out.seq, out.model)
        fast.append(out.fwd_nats.astype(np.float32))
        exact.append(fsc)
        filt.append(out.filtersc_nats)
        model.append(out.model.astype(np.int64))
    fast, exact, filt, model = (np.concatenate(v) for v in (fast, exact, filt, model))
    ok = np.isfinite(fast) & np.isfinite(exact)
    d = np.abs(fast[ok].astype(np.float64) - exact[ok])
    ulps = d / np.spacing(np.abs(exact[ok])).astype(np.float64)
    share = d / margin_nats(exact[ok])
    ev = db.evparams.astype(np.float64)
    F3 = Thresholds().F3
    thr = stats.pass_thresholds(stats.exp_surv, ev[:, 4], ev[:, 5], F3)
    f3 = (thr, stats.exp_surv, ev[:, 4], ev[:, 5], F3)
    near = near_threshold(fast, filt, model, *f3)
    flips = stats.passes(stats.bits(fast, filt), model, *f3) != stats.passes(stats.bits(exact, filt), model, *f3)
    report = {"device": dev.name, "pairs": int(len(fast)), "compared": int(ok.sum()), "differ": int((d > 0).sum()),
              "max_ulps": float(ulps.max()) if len(ulps) else 0.0,
              "p999_ulps": float(np.quantile(ulps, 0.999)) if len(ulps) else 0.0,
              "max_share_of_margin": float(share.max()) if len(share) else 0.0,
              "near_f3": int(near.sum()), "f3_decided_otherwise_by_the_filter": int(flips.sum()),
              "flips_outside_the_margin": int((flips & ~near).sum())}
    print(json.dumps(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

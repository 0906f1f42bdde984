"""How far the GPU's fast domain kernels' floats lie from HMMER's order: one search with the device's
defaults without the rescoring (``fb_parser_warp``; ``--fast envelope=warp``: ``envelope_warp`` too) and one
with the kernels that sum in HMMER's order (``decode=wg,envelope=wg``, the floats of pyhmmer's rows), every
record of the two compared value by value, and the Forward scores' differences against the rescoring's margin
(``hmmcascade.rescore``).

    python3 benchmarks/warp_rounding.py --models M.hmm.gz --seqs S.faa.gz [--copies N] \\
        [--fast rescore=off] [--exact decode=wg,envelope=wg] [--json OUT]

Prints per value (the sequence's score, pre-score, bias, lnP, expected domains; each domain's score, bias,
lnP, acc, envelope and null2 nats) the pairs compared, how many differ and the largest difference, absolute
and relative to the value, with the pairs where it is largest; the records or domains found by one search
only or whose coordinates differ; and the alignments whose lines (posterior probabilities, model, match,
target) differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmcascade import cascade  # noqa: E402
from hmmcascade.options import SearchOptions  # noqa: E402
from run_benchmark import add_workload_arguments, open_workload  # noqa: E402

HIT_VALUES = ("score", "pre_score", "bias", "lnP", "nexpected")
DOMAIN_VALUES = ("score", "bias", "lnP", "acc", "env_nats", "correction_nats")


def records(res) -> dict:
    return {(h.model, h.target): h for h in res.records}


def summary(name, a, b, where):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    d = np.abs(a - b)
    ok = np.isfinite(d)
    rel = d / np.maximum(np.abs(b), 1.0)
    out = {"compared": int(ok.sum()), "differing": int((d[ok] > 0).sum()),
           "max_abs": float(d[ok].max()) if ok.any() else 0.0, "max_rel": float(rel[ok].max()) if ok.any() else 0.0,
           "p999_abs": float(np.quantile(d[ok], 0.999)) if ok.any() else 0.0}
    top = np.argsort(-np.where(ok, d, -1))[:5]
    out["largest"] = [{"pair": where[i], "fast": float(a[i]), "exact": float(b[i])} for i in top if ok[i] and d[i] > 0]
    print(f"{name:22s} {out['compared']:8d} compared {out['differing']:7d} differ  max |d| {out['max_abs']:.3g}  "
          f"max |d|/max(1,|v|) {out['max_rel']:.3g}  99.9% {out['p999_abs']:.3g}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(ap)
    ap.add_argument("--fast", default="rescore=off", help="the fast search's options (default: the device's, "
                    "without the rescoring)")
    ap.add_argument("--exact", default="decode=wg,envelope=wg")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    db, seqs, dev = open_workload(args)
    res = {}
    for name in ("fast", "exact"):
        res[name] = records(cascade.search(db, seqs, dev, options=SearchOptions.parse(getattr(args, name))))
    fast, exact = res["fast"], res["exact"]
    both = [k for k in exact if k in fast]
    report = {"device": dev.name, "fast": args.fast, "exact": args.exact, "records": {
        "fast": len(fast), "exact": len(exact), "both": len(both),
        "reported_differently": sum(fast[k].reported != exact[k].reported for k in both),
        "included_differently": sum(fast[k].included != exact[k].included for k in both)}}
    print(dev.name, report["records"])
    vals = {}
    for v in HIT_VALUES:
        vals[f"hit.{v}"] = summary(f"hit.{v}", [getattr(fast[k], v) for k in both],
                                   [getattr(exact[k], v) for k in both], [list(k) for k in both])
    ndom_diff, coord_diff, line_diff, line_examples = 0, 0, {}, []
    dom_a = {v: [] for v in DOMAIN_VALUES}
    dom_b = {v: [] for v in DOMAIN_VALUES}
    where = []
    for k in both:
        da, dbb = list(fast[k].domains), list(exact[k].domains)
        if len(da) != len(dbb):
            ndom_diff += 1
            continue
        for n, (x, y) in enumerate(zip(da, dbb)):
            if (x.env_from, x.env_to, x.ali_from, x.ali_to, x.hmm_from, x.hmm_to) != \
                    (y.env_from, y.env_to, y.ali_from, y.ali_to, y.hmm_from, y.hmm_to):
                coord_diff += 1
                continue
            for line in ("pp_line", "model_line", "match_line", "target_line"):
                if getattr(x.alignment, line) != getattr(y.alignment, line):
                    line_diff[line] = line_diff.get(line, 0) + 1
                    if len(line_examples) < 6:
                        line_examples.append([k[0], k[1], n, line, getattr(x.alignment, line), getattr(y.alignment, line)])
            for v in DOMAIN_VALUES:
                dom_a[v].append(getattr(x, v))
                dom_b[v].append(getattr(y, v))
            where.append([k[0], k[1], n])
    report["records"].update(domain_counts_differ=ndom_diff, domain_coordinates_differ=coord_diff,
                             alignment_lines_differ=line_diff, alignment_line_examples=line_examples)
    print(f"domain counts differ: {ndom_diff}, domain coordinates differ: {coord_diff}, alignment lines differ: "
          f"{line_diff}")
    for v in DOMAIN_VALUES:
        vals[f"domain.{v}"] = summary(f"domain.{v}", dom_a[v], dom_b[v], where)
    # the rescoring's margin (hmmcascade.rescore) against the Forward scores' differences: the pre-score
    # is (fwd - null) / ln 2, so its difference times ln 2 is the Forward score's, to the pre-score's rounding
    from hmmcascade.rescore import margin_nats

    pre_f = np.array([fast[k].pre_score for k in both], dtype=np.float64)
    pre_e = np.array([exact[k].pre_score for k in both], dtype=np.float64)
    ratio = np.abs(pre_f - pre_e) * np.log(2.0) / margin_nats((pre_e * np.log(2.0)).astype(np.float32))
    worst = int(np.argmax(ratio)) if len(ratio) else 0
    vals["margin"] = {"max_ratio": float(ratio.max()) if len(ratio) else 0.0,
                      "ratio_p999": float(np.quantile(ratio, 0.999)) if len(ratio) else 0.0,
                      "worst": {"pair": list(both[worst]), "fast": float(pre_f[worst]), "exact": float(pre_e[worst])}
                      if len(ratio) else None}
    print(f"Forward score difference / rescoring margin: max {vals['margin']['max_ratio']:.3f}, "
          f"99.9% {vals['margin']['ratio_p999']:.3f}")
    report["values"] = vals
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

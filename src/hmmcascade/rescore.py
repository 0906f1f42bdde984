"""Sequence scores in HMMER's order where the fast Forward parser's rounding could show.

HMMER scores a target with the Forward parser whose matrix its domain definition decodes
(p7_Pipeline). On a GPU the decoding runs ``fb_parser_warp<C>`` (:mod:`.domaindef.decode`), whose
sums are in another order than HMMER's striped SSE engine: its Forward score differs from HMMER's
in the last bits (on the dev search by at most 2.8 units in the last place of the float32 score;
``benchmarks/warp_rounding.py``).
Everything else of a hit's row is the other kernels' (in HMMER's order by default: ``envelope_wg``,
``region_forward_wide``, the ensemble, null2), so that Forward score is the only float of a row
not HMMER's.  Most rows do not show it; a row shows it where its score, bias or E-value lies within
that rounding of a printed digit's boundary, of a reporting or inclusion threshold, or of another
hit's sort key.

:func:`rescore_records` finds those hits at the end of a search (every batch's records known, so
the thresholds, and domZ, are the search's own): it takes each record's Forward score as lying
anywhere within :func:`margin_nats` of the fast one, makes every printed value and decision at both
ends of that interval (:func:`~.domaindef.scoring.sequence_scores`, HMMER's float steps), and where
either end differs recomputes the Forward score with ``fb_parser_wg`` (HMMER's order, bit for bit;
``fb_parser`` for models whose rows do not fit its local memory) on a small batch of those targets,
then the record's scores, E-value and flags from it.  The records' batches kept hits that may
become reportable so (:func:`relaxed_scores`); those that stay unreported are dropped after the sort.
The tests of each record alone (:func:`own_uncertain`: Z and the thresholds are known from the start)
are made batch after batch in the search's records thread; only the order test, which compares a
record with its model's other hits, waits for the search's end.

The Forward filter's decision (F3) is HMMER's on the same Forward parser's score, which the filter's
kernels (``forward_warp<C>`` on GPUs, ``forward_filter`` on CPUs) also sum in their own order: the pairs
whose decision could change within the margin (:func:`near_threshold`) are decided again in the domain
stage on the Forward score in HMMER's order (:meth:`~.cascade.Cascade.filter_batch`, ``_decide_near_f3``).

The option ``rescore`` (:class:`~.options.SearchOptions`): "on" (the default: the pairs near F3, and
where the decoding ran its warp kernels the hits the margin flags), "off", "all" (as "on", and every
hit's score recomputed: tests).
"""

from __future__ import annotations

import numpy as np

from . import stats
from .domaindef.scoring import sequence_scores
from .profiles import CUTOFF_COLUMNS
from .reporting import by_model, passes_threshold

__all__ = ["MARGIN_NATS", "MARGIN_ULPS", "NEXP_MARGIN", "exact_forward", "margin_nats", "near_threshold",
           "own_uncertain", "relaxed_scores", "rescore_records", "unreported_dropped"]

F32 = np.float32
#: the Forward score's rounding assumed (nats): MARGIN_ULPS units in the last place of the float32 score
#: plus MARGIN_NATS.  On the dev search (H200, 2026-11-29, benchmarks/results/2026-11-29_h200_rescore.json)
#: fb_parser_warp's scores differed from HMMER's order by at most 2.8 units in the last place (the largest
#: differences, 6e-5 to 1.2e-4 bits, all in scores of 350-850 bits: the float32 sums of the row scales
#: round differently), at most 0.17 of this margin
MARGIN_ULPS = 16
MARGIN_NATS = 1e-5
#: the decoding's expected number of domains (btot[L]) assumed within this much of HMMER's, times
#: max(1, value): five times the largest difference seen on the dev search (2e-5)
NEXP_MARGIN = 1e-4
#: the seq_parts columns a record keeps for the rescoring (make_hits' keys)
PART_NAMES = ("fwd", "nul", "seqbias", "sum_score", "pre2_score", "sum_ok")


def margin_nats(fwd: np.ndarray) -> np.ndarray:
    """The Forward score's assumed rounding (nats) for fast Forward scores ``fwd`` (nats)."""
    f = np.abs(np.nan_to_num(np.asarray(fwd, dtype=F32), posinf=0.0, neginf=0.0))
    return MARGIN_ULPS * np.spacing(f).astype(np.float64) + MARGIN_NATS


def _ends(parts: dict, sign: float) -> tuple[np.ndarray, np.ndarray]:
    """The sequence score and pre-score with each Forward score moved by ``sign`` times its margin."""
    fwd = parts["fwd"].astype(np.float64)
    f = (fwd + sign * margin_nats(parts["fwd"])).astype(F32)
    return sequence_scores(f, parts["nul"], parts["seqbias"], parts["sum_score"], parts["pre2_score"], parts["sum_ok"])


def relaxed_scores(parts: dict) -> np.ndarray:
    """The highest sequence score each pair could have within the margin (for the records a batch keeps)."""
    return _ends(parts, +1.0)[0]


def _one_decimal(x: np.ndarray) -> np.ndarray:
    """What ``%.1f`` shows of ``x`` (to a tenth; NaN stays NaN)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.floor(np.asarray(x, dtype=np.float64) * 10.0 + 0.5)


def _two_digits(x: np.ndarray) -> np.ndarray:
    """What ``%.2g`` shows of positive ``x``: (decimal exponent, two digits) as one number."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        k = np.floor(np.log10(x))
        m = np.floor(x / np.power(10.0, k - 1) + 0.5)
        k = np.where(m >= 100, k + 1, k)
        m = np.where(m >= 100, 10.0, m)
        out = k * 1000.0 + m
    return np.where(np.isfinite(out), out, x)


_exp = stats.c_exp  # (the C library's exp, as HMMER's E-values)


def _flags(score, lnP, Z, th, cut_seq, exp=None):
    """(reported, included) of sequence scores: the thresholds of make_hits / threshold_hits (E-values
    with the C library's exp, or ``exp``)."""
    if th.cut:
        r = score >= cut_seq
        return r, r
    ev = (exp or _exp)(lnP) * Z
    rep = passes_threshold(score, ev, th.T, th.E)
    return rep, rep & passes_threshold(score, ev, th.incT, th.incE)


def own_uncertain(cols: dict, th, Z: float, db, inc_by_E: bool | None = None) -> dict:
    """The records whose own printed values or flags could differ within the margin, and the interval
    of each one's sort key (:func:`_uncertain` less the order test; the search makes them batch after
    batch, in its records thread): ``{"uncertain": mask, "key_lo": ..., "key_hi": ...}``.  ``inc_by_E``: the
    records sort by E-value (default: as the thresholds say), else by score."""
    parts = {k: cols[k] for k in PART_NAMES}
    m = cols["model"]
    ev = db.evparams[m].astype(np.float64)
    cut_seq = db.cutoffs[m, CUTOFF_COLUMNS[th.cut]].astype(np.float64) if th.cut else None
    ends = []
    for sign in (-1.0, 1.0):
        sc, pre = _ends(parts, sign)
        lnP = stats.exp_logsurv(sc, ev[:, 4], ev[:, 5])
        rep, inc = _flags(sc.astype(np.float64), lnP, Z, th, cut_seq, np.exp)
        bias = (pre - sc).astype(F32)
        ends.append((sc, lnP, rep, inc, bias))
    (s0, p0, r0, i0, b0), (s1, p1, r1, i1, b1) = ends
    flag = (_one_decimal(s0) != _one_decimal(s1)) | (_one_decimal(b0) != _one_decimal(b1)) | (r0 != r1) | (i0 != i1)
    # the expected number of domains (btot[L] of the same decoding), printed to a tenth
    nexp = cols["nexpected"]
    e = NEXP_MARGIN * np.maximum(1.0, np.abs(nexp))
    flag |= _one_decimal(nexp - e) != _one_decimal(nexp + e)
    flag |= _two_digits(np.exp(p0) * Z) != _two_digits(np.exp(p1) * Z)
    # the interval of the sort key within a model (E-value's lnP, or -score)
    lo, hi = (np.minimum(p0, p1), np.maximum(p0, p1)) if _inc_by_E(th, inc_by_E) else \
        (-np.maximum(s0, s1).astype(np.float64), -np.minimum(s0, s1).astype(np.float64))
    return {"uncertain": flag, "key_lo": lo, "key_hi": hi}


def _inc_by_E(th, given: bool | None = None) -> bool:
    return (th.cut is None and th.incT is None) if given is None else given


def _uncertain(cols: dict, th, Z: float, db, inc_by_E: bool | None = None) -> np.ndarray:
    """The records whose printed values, flags or order could differ within the margin (a mask):
    :func:`own_uncertain` (the columns' own where the batches made them), and the records whose sort
    key's interval overlaps a neighbour's within its model (and differs from it)."""
    own = {k: cols[k] for k in ("uncertain", "key_lo", "key_hi")} if "uncertain" in cols else \
        own_uncertain(cols, th, Z, db, inc_by_E)
    flag, lo, hi = own["uncertain"].copy(), own["key_lo"], own["key_hi"]
    m = cols["model"]
    key = cols["lnP"] if _inc_by_E(th, inc_by_E) else -cols["score"]
    order = by_model(np.argsort(key, kind="stable"), m)  # (np.lexsort((key, m))'s order)
    a, b = order[:-1], order[1:]
    near = (m[a] == m[b]) & (lo[b] <= hi[a]) & (key[a] != key[b])
    flag[a[near]] = True
    flag[b[near]] = True
    return flag


def exact_forward(cascade, seqs, targets: np.ndarray, models: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Forward parser's score (nats, float32) and the expected number of domains of each
    (``targets[i]``, ``models[i]``) pair in HMMER's order (:meth:`~.domaindef.engine.DomainEngine.exact_forward`)
    on a batch of those targets."""
    from .device_data import DeviceBatch
    from .profiles import length_params

    uniq = np.unique(np.asarray(targets, dtype=np.int64))
    uniq = uniq[np.argsort(seqs.lengths[uniq], kind="stable")]  # (a device batch is sorted by length)
    where = np.empty(int(uniq.max()) + 1, dtype=np.int64)
    where[uniq] = np.arange(len(uniq))
    sub = seqs.subset(uniq)
    batch = DeviceBatch.upload(cascade.dev, sub, length_params(sub.lengths, cascade.db))
    return cascade.domains.exact_forward(batch, where[np.asarray(targets, dtype=np.int64)], models)


def near_threshold(fwd: np.ndarray, filtersc: np.ndarray, model: np.ndarray, thr: np.ndarray, surv, loc, lam,
                   F: float) -> np.ndarray:
    """The pairs whose Forward filter decision (:func:`~.stats.passes` of the bit score) could change within
    the Forward score's margin: the test at both ends of the interval differs (a mask)."""
    fwd = np.asarray(fwd, dtype=F32)
    e = margin_nats(fwd)
    lo = stats.bits((fwd.astype(np.float64) - e).astype(F32), filtersc)
    hi = stats.bits((fwd.astype(np.float64) + e).astype(F32), filtersc)
    return stats.passes(lo, model, thr, surv, loc, lam, F) != stats.passes(hi, model, thr, surv, loc, lam, F)


def rescore_records(cascade, seqs, records: list, keys: list, cols: dict | None, th, Z: float, mode: str) -> dict:
    """The Forward score in HMMER's order for the records :func:`_uncertain` flags (``mode`` "on"), or
    for every record ("all"); their scores, E-values and flags made again from it, in the records, in
    ``cols`` (:func:`~.reporting.key_columns` of ``keys``, which threshold_hits reads) and in the batches'
    ``keys`` (which :func:`~.reporting.make_hits` filled, and sort_hits reads).  Returns counts."""
    out = {"records": len(records), "flagged": 0, "changed": 0}
    if mode == "off" or not records or cols is None or "fwd" not in cols or len(cols["model"]) != len(records):
        return out  # (a batch without key columns: records made from PairDomains lists)
    parts_of = [k for k in keys if k]
    flag = np.ones(len(records), dtype=bool) if mode == "all" else _uncertain(cols, th, Z, cascade.db)
    idx = np.flatnonzero(flag)
    out["flagged"] = len(idx)
    if not len(idx):
        return out
    fwd, nexp = exact_forward(cascade, seqs, cols["target"][idx], cols["model"][idx])
    nexp = nexp.astype(np.float64)
    old = cols["fwd"][idx]
    fwd = np.where(np.isfinite(fwd), fwd, old).astype(F32)
    sub = {n: cols[n][idx] for n in PART_NAMES}
    sub["fwd"] = fwd
    sc, pre = sequence_scores(*(sub[n] for n in PART_NAMES))
    m = cols["model"][idx]
    ev = cascade.db.evparams[m].astype(np.float64)
    lnP = stats.exp_logsurv(sc, ev[:, 4], ev[:, 5])
    cut_seq = cascade.db.cutoffs[m, CUTOFF_COLUMNS[th.cut]].astype(np.float64) if th.cut else None
    score64 = sc.astype(np.float64)
    rep, inc = _flags(score64, lnP, Z, th, cut_seq)
    evalue = _exp(lnP) * Z
    bias = (pre.astype(F32) - sc.astype(F32)).astype(np.float64)
    out["changed"] = int(np.count_nonzero((fwd != old) | (nexp != cols["nexpected"][idx])))
    # back into the batches' key columns and the records
    starts = np.cumsum([0] + [len(k["model"]) for k in parts_of])
    batch_of = np.searchsorted(starts, idx, side="right") - 1
    changed = (("fwd", fwd), ("score", score64), ("lnP", lnP), ("reported", rep), ("included", inc),
               ("nexpected", nexp))
    for b in np.unique(batch_of).tolist():
        sel = np.flatnonzero(batch_of == b)
        at = idx[sel] - starts[b]
        for name, values in changed:
            parts_of[b][name][at] = values[sel]
    for name, values in changed:
        cols[name][idx] = values
    for r, s, p, bi, lp, e, rp, ic, ne in zip(idx.tolist(), score64.tolist(), pre.astype(np.float64).tolist(),
                                              bias.tolist(), lnP.tolist(), evalue.tolist(), rep.tolist(), inc.tolist(),
                                              nexp.tolist()):
        h = records[r]
        h.score, h.pre_score, h.bias, h.lnP, h.evalue, h.reported, h.included, h.nexpected = \
            s, p, bi, lp, e, rp, ic, ne
    return out


def unreported_dropped(records: list) -> list:
    """The records without those a batch kept only because the margin might make them reportable."""
    return records if all(h.reported for h in records) else [h for h in records if h.reported]


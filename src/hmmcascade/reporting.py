"""Reporting: which of a search's hits and domains are reported and included, and in what order.

The end of HMMER's p7_Pipeline and its top hits list, on the arrays of a whole batch at once:

* :func:`make_hits`: a batch's domain-defined pairs that pass p7_pli_TargetReportable (E-value,
  score or model cutoffs), as :class:`~hmmcascade.results.Hit` records;
* :func:`threshold_hits`: p7_tophits_Threshold over the whole search (Z, domZ per model), the
  reporting and inclusion flags of hits and domains;
* :func:`sort_hits`: hmmsearch's order (model by model, E-value, then name).

:class:`Thresholds` holds the thresholds with HMMER's names and defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import chain
from operator import attrgetter

import numpy as np

from . import stats
from .domaindef.records import DomainSource, PairDomainsBatch
from .domaindef.segments import segment_ranges
from .io import SequenceSet
from .profiles import CUTOFF_COLUMNS, ProfileDB
from .results import Hit, gc_paused
from .survivors import Survivors

__all__ = ["CUTOFF_COLUMNS", "Thresholds", "by_model", "check_cutoffs", "duplicate_alignments", "key_columns",
           "make_hits", "name_rank", "passes_threshold", "sort_hits", "threshold_hits"]



@dataclass
class Thresholds:
    """Filter and reporting thresholds, with HMMER's names and defaults."""

    F1: float = 0.02
    F2: float = 1e-3
    F3: float = 1e-5
    bias_filter: bool = True
    max_mode: bool = False  #: ``--max``: all filters pass everything, no bias filter
    E: float = 10.0  #: report targets with E-value <= E ...
    T: float | None = None  #: ... or, if set, with score >= T bits
    cut: str | None = None  #: "ga", "tc" or "nc": model cutoffs (sequence and domain level) instead of E/T
    Z: float | None = None  #: search space size; default: number of targets
    domE: float = 10.0  #: report domains with conditional E-value <= domE ...
    domT: float | None = None  #: ... or, if set, with score >= domT bits
    incE: float = 0.01  #: include (mark significant) targets with E-value <= incE ...
    incT: float | None = None  #: ... or, if set, score >= incT
    incdomE: float = 0.01  #: include domains with conditional E-value <= incdomE ...
    incdomT: float | None = None  #: ... or, if set, score >= incdomT
    domZ: float | None = None  #: domain search space; default: number of reported targets (per model)

    def effective(self) -> "Thresholds":
        if not self.max_mode:
            return self
        return replace(self, F1=1.0, F2=1.0, F3=1.0, bias_filter=False)


def check_cutoffs(db: ProfileDB, cut: str) -> None:
    """HMMER refuses ``--cut_ga`` etc. when a model lacks that cutoff; so do we."""
    col = CUTOFF_COLUMNS[cut]
    missing = np.flatnonzero(np.isnan(db.cutoffs[:, col]))
    if len(missing):
        raise ValueError(f"model {db.names[missing[0]]} has no {cut.upper()} cutoff, required by --cut_{cut}")


_exp = stats.c_exp  # (the C library's exp, as HMMER's E-values)


def passes_threshold(score: np.ndarray, evalue: np.ndarray, T: float | None, E: float) -> np.ndarray:
    """Thresholds' test without model cutoffs: ``score >= T`` when T is set, else ``evalue <= E``."""
    return score >= T if T is not None else evalue <= E


def make_hits(db: ProfileDB, seqs: SequenceSet, index: np.ndarray, out: Survivors, th: Thresholds, Z: float,
              keys: dict | None = None, relaxed=None) -> list[Hit]:
    """Hit records for one batch's domain-defined pairs that pass p7_pli_TargetReportable.

    ``index`` maps batch sequence numbers to ``seqs`` numbers.  With model cutoffs, the
    reporting and inclusion flags are set here, as p7_Pipeline sets them.  ``out.domains``
    (:class:`Survivors`) is :meth:`DomainEngine.run`'s result (a :class:`~hmmcascade.domaindef.records.PairDomainsBatch`, or
    any sequence of PairDomains / None); P-values and thresholds are computed for all its pairs
    at once, records only for the reportable ones.  ``keys``, when a dict, gets the records'
    sort keys as arrays (:func:`sort_hits` ``keys``; left empty for PairDomains lists).
    ``relaxed`` (the search's rescoring: :func:`hmmcascade.rescore.relaxed_scores`, the highest sequence
    score each pair's parts allow within the rounding margin of its Forward score): also records for the
    pairs whose score could pass so, not reported (yet), and the keys get what each sequence score is made of.
    """
    pds = out.scored_domains()
    pds = [] if pds is None else pds
    if not isinstance(pds, PairDomainsBatch):
        pds = PairDomainsBatch.from_pairs(list(pds))
    P = np.flatnonzero(pds.has)
    if not len(P):
        return []
    m = np.asarray(out.model)[P].astype(np.int64)
    t = np.asarray(index)[np.asarray(out.seq)[P]].astype(np.int64)
    score = pds.seq_score[P]
    ev = db.evparams[m].astype(np.float64)
    lnP = stats.exp_logsurv(score.astype(np.float32), ev[:, 4], ev[:, 5])
    evalue = _exp(lnP) * Z
    parts = pds.seq_parts if relaxed is not None and keys is not None and "ali_from" in pds.dom else None
    if th.cut:
        col = CUTOFF_COLUMNS[th.cut]
        cut_seq = db.cutoffs[m, col].astype(np.float64)
        passed = score >= cut_seq
    else:
        passed = passes_threshold(score, evalue, th.T, th.E)
    keep_mask = passed
    if parts is not None:  # the pairs the margin could make reportable too
        c = np.flatnonzero(~passed)
        hi = relaxed({k: v[P[c]] for k, v in parts.items()}).astype(np.float64)
        keep_mask = passed.copy()
        keep_mask[c] = (hi >= cut_seq[c]) if th.cut else passes_threshold(
            hi, _exp(stats.exp_logsurv(hi.astype(np.float32), ev[c, 4], ev[c, 5])) * Z, th.T, th.E)
    keep = np.flatnonzero(keep_mask)
    if not len(keep):
        return []
    P, m, t, lnP, evalue, passed = P[keep], m[keep], t[keep], lnP[keep], evalue[keep], passed[keep]
    best = _first_max(pds.dom["score"], pds.dom_start[P], pds.ndom[P])
    # the domains' records are made when first read (DomainList); their E-values and flags are
    # set in arrays (threshold_hits, and the cutoffs below)
    # (PairDomains lists keep the records they have)
    source = DomainSource(pds, P) if "ali_from" in pds.dom else None
    dom_lists = source.hit_lists() if source is not None else pds.domains(P)
    seq_score, pre_score = pds.seq_score[P], pds.pre_score[P]
    score64 = seq_score.astype(np.float64)  # the records' score, as threshold_hits and sort_hits read it
    bias = (pre_score.astype(np.float32) - seq_score.astype(np.float32)).astype(np.float64)
    names, descs = seqs.names, seqs.descriptions
    mlist = m.tolist()
    # one str object per model name and accession, shared by its hits
    mnames, maccs, mlens = (list(map(col.__getitem__, mlist)) for col in (
        db.names.tolist(), db.accessions.tolist(), db.M.tolist()))
    # without cutoffs every record is reported; inclusion is threshold_hits' test, made here
    # (per batch, in the records thread) so that the search's threshold_hits skips it
    included = [False] * len(P) if th.cut else (passed & passes_threshold(score64, evalue, th.incT, th.incE)).tolist()
    reported = [False] * len(P) if th.cut else passed.tolist()
    with gc_paused():
        hits = [Hit(mi, ti, mn, ma, ml, str(names[ti]), "", str(descs[ti]), tl, sc, ps, bi, lp, e, ne, nr, nc,
                    no, nv, b, rep, inc, dl)  # FASTA targets carry no accession
                for mi, ti, mn, ma, ml, tl, sc, ps, bi, lp, e, ne, nr, nc, no, nv, b, rep, inc, dl in zip(
                    mlist, t.tolist(), mnames, maccs, mlens,
                    seqs.lengths[t].tolist(), seq_score.tolist(), pre_score.tolist(), bias.tolist(), lnP.tolist(),
                    evalue.tolist(), pds.nexpected[P].tolist(), pds.nregions[P].tolist(), pds.nclustered[P].tolist(),
                    pds.noverlaps[P].tolist(), pds.nenvelopes[P].tolist(), best.tolist(), reported, included,
                    dom_lists)]
    if keys is not None and "ali_from" in pds.dom:
        nd, first = pds.ndom[P], pds.dom_start[P]
        has = np.flatnonzero(nd > 0)
        iali, jali = np.zeros(len(P), dtype=np.int64), np.zeros(len(P), dtype=np.int64)
        iali[has], jali[has] = pds.dom["ali_from"][first[has]], pds.dom["ali_to"][first[has]]
        keys.update(model=m, lnP=lnP, score=score64, iali=iali, jali=jali, target=t)
        if parts is not None:
            keys.update({k: v[P] for k, v in parts.items()}, nexpected=pds.nexpected[P].copy())
    nd = pds.ndom[P]
    di = segment_ranges(pds.dom_start[P], nd)  # the records' domains, in order
    if th.cut:
        included = reported = passed.tolist()
        dom_cut = pds.dom["score"][di] >= np.repeat(db.cutoffs[m, col + 1].astype(np.float64), nd)
        drep = np.repeat(passed, nd) & dom_cut
        if source is not None:
            source.set_flags(reported=drep, included=drep)
        flags = iter(drep.tolist())
        for h, rep, inc in zip(hits, reported, included):
            h.reported, h.included = rep, inc
            if source is None:
                for dom in h.domains:
                    dom.reported = dom.included = next(flags)
    if keys:  # threshold_hits' inputs as arrays too: flags, and the domains' values in record order
        keys.update(reported=np.asarray(reported, dtype=bool).reshape(len(P)),
                    included=np.asarray(included, dtype=bool).reshape(len(P)), nd=nd, noverlaps=pds.noverlaps[P],
                    dom_lnP=pds.dom["lnP"][di], dom_exp=_exp(pds.dom["lnP"][di]), dom_score=pds.dom["score"][di],
                    dom_ali_from=pds.dom["ali_from"][di], dom_ali_to=pds.dom["ali_to"][di],
                    source=source)
        # (with cutoffs, the domains' own test; threshold_hits takes it with their hit's flags, which the
        # search's rescoring may change)
        if th.cut:
            keys.update(dom_reported=dom_cut, dom_included=dom_cut.copy())
        else:
            keys.update(dom_reported=source.reported.copy(), dom_included=source.included.copy())
    return hits


def _first_max(values: np.ndarray, start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per segment, the offset of its first largest value (a later one must be strictly larger)."""
    best = np.zeros(len(start), dtype=np.int64)
    if not len(start):
        return best
    top = values[start].copy()
    for d in range(1, int(count.max())):
        live = np.flatnonzero(count > d)
        cand = values[start[live] + d]
        better = cand > top[live]
        best[live[better]] = d
        top[live[better]] = cand[better]
    return best


def key_columns(keys: list) -> dict | None:
    """The columns :func:`threshold_hits` reads (``cols``) from the ``keys`` of each batch's
    :func:`make_hits`, in the records' order; None where some batch has none."""
    parts = [k for k in keys if k]
    if not parts or None in keys or not all("nd" in k for k in parts):
        return None
    cols = {name: np.concatenate([k[name] for k in parts]) for name in parts[0] if name != "source"}
    cols["sources"] = [k["source"] for k in parts]
    return cols


def threshold_hits(hits: list[Hit], th: Thresholds, Z: float, db: ProfileDB | None = None,
                   flagged: bool = False, cols: dict | None = None) -> None:
    """p7_tophits_Threshold, per query model: flags, domZ, E-values; then the #h74 workaround.

    Vectorised over all hits and domains; E-values are ``exp(lnP) * Z`` (``* domZ``) with the C
    library's exp, as HMMER computes them.  ``flagged``: the hits' flags and E-values are already
    set for this Z (:func:`make_hits` sets them), only the domains' are computed; ``cols`` (with
    ``flagged``): the records' values as arrays, as :func:`make_hits` puts them into its ``keys``
    (model, reported, included, nd, noverlaps; dom_lnP, dom_score over their domains in order;
    optionally dom_exp, exp of dom_lnP), read instead of the records.
    """
    n = len(hits)
    if not n:
        return
    if cols is not None and not (flagged and len(cols["model"]) == n):
        cols = None

    def column(name, objs, dtype):
        if cols is not None:
            return cols[name]
        return np.fromiter(map(attrgetter(name[4:] if name.startswith("dom_") else name), objs), dtype=dtype,
                           count=len(objs))

    model = column("model", hits, np.int64)
    if flagged:
        rep = column("reported", hits, bool)
        inc = column("included", hits, bool)
    elif not th.cut:
        score = np.fromiter(map(attrgetter("score"), hits), dtype=np.float64, count=n)
        evalue = _exp(np.fromiter(map(attrgetter("lnP"), hits), dtype=np.float64, count=n)) * Z
        rep = passes_threshold(score, evalue, th.T, th.E)
        inc = rep & passes_threshold(score, evalue, th.incT, th.incE)
        for h, r, i, e in zip(hits, rep.tolist(), inc.tolist(), evalue.tolist()):
            h.reported, h.included, h.evalue = r, i, e
    else:
        evalue = _exp(np.fromiter(map(attrgetter("lnP"), hits), dtype=np.float64, count=n)) * Z
        rep = np.fromiter(map(attrgetter("reported"), hits), dtype=bool, count=n)
        inc = np.fromiter(map(attrgetter("included"), hits), dtype=bool, count=n)
        for h, e in zip(hits, evalue.tolist()):
            h.evalue = e
    if th.domZ is not None:
        domZ = np.full(n, float(th.domZ))
    else:
        domZ = np.bincount(model, weights=rep.astype(np.float64))[model]  # reported hits of the hit's model
    if cols is not None and "sources" in cols:
        _threshold_domains(cols, th, Z, rep, inc, domZ)
        return
    dom_lists = list(map(attrgetter("domains"), hits))
    nd = cols["nd"] if cols is not None else np.fromiter(map(len, dom_lists), dtype=np.int64, count=n)
    doms = list(chain.from_iterable(dom_lists))
    if len(doms) != int(nd.sum()):
        raise ValueError("threshold_hits: the records' domains are not the columns' domains")
    dh = np.repeat(np.arange(n), nd)
    e = _exp(column("dom_lnP", doms, np.float64))
    c_evalue, i_evalue = e * domZ[dh], e * Z
    if not th.cut:
        dscore = column("dom_score", doms, np.float64)
        drep = rep[dh] & passes_threshold(dscore, c_evalue, th.domT, th.domE)
        dinc = inc[dh] & passes_threshold(dscore, c_evalue, th.incdomT, th.incdomE)
        for d, ce, ie, r, i in zip(doms, c_evalue.tolist(), i_evalue.tolist(), drep.tolist(), dinc.tolist()):
            d.c_evalue, d.i_evalue, d.reported, d.included = ce, ie, r, i
    else:
        for d, ce, ie in zip(doms, c_evalue.tolist(), i_evalue.tolist()):
            d.c_evalue, d.i_evalue = ce, ie
    overlapping = column("noverlaps", hits, np.int64)
    for t in np.flatnonzero(overlapping).tolist():  # workaround_bug_h74: hide duplicate alignments from one cluster
        ds = dom_lists[t]
        for a in range(len(ds)):
            for b in range(a + 1, len(ds)):
                d1, d2 = ds[a], ds[b]
                if d1.ali_from == d2.ali_from and d1.ali_to == d2.ali_to:
                    drop = d2 if d1.score >= d2.score else d1
                    drop.reported = drop.included = False


def duplicate_alignments(first: np.ndarray, counts: np.ndarray, ali_from: np.ndarray, ali_to: np.ndarray,
                         score: np.ndarray) -> list[int]:
    """HMMER's workaround_bug_h74 on arrays over domains: of each hit's domains ``first[t]`` to
    ``first[t] + counts[t] - 1``, two with the same alignment coordinates lose the lower-scoring one (the
    later where the scores are equal).  Returns the indices of the domains it hides (no longer reported
    or included)."""
    idx = segment_ranges(first, counts)
    af, at, sc = ali_from[idx].tolist(), ali_to[idx].tolist(), score[idx].tolist()
    drop, pos = [], 0
    for a0, k in zip(first.tolist(), counts.tolist()):
        for a in range(pos, pos + k):
            for b in range(a + 1, pos + k):
                if af[a] == af[b] and at[a] == at[b]:
                    drop.append(a0 + (b if sc[a] >= sc[b] else a) - pos)
        pos += k
    return drop


def _threshold_domains(cols: dict, th: Thresholds, Z: float, rep: np.ndarray, inc: np.ndarray,
                       domZ: np.ndarray) -> None:
    """:func:`threshold_hits`' domain part on the columns of :func:`make_hits`' keys: E-values and
    flags of every domain as arrays, then the #h74 workaround on them, set in each batch's
    :class:`~hmmcascade.domaindef.records.DomainSource` (``cols["sources"]``: the sources in record order)."""
    nd = cols["nd"]
    dh = np.repeat(np.arange(len(nd)), nd)
    e = cols["dom_exp"] if "dom_exp" in cols else _exp(cols["dom_lnP"])
    c_evalue, i_evalue = e * domZ[dh], e * Z
    if not th.cut:
        dscore = cols["dom_score"]
        drep = rep[dh] & passes_threshold(dscore, c_evalue, th.domT, th.domE)
        dinc = inc[dh] & passes_threshold(dscore, c_evalue, th.incdomT, th.incdomE)
    else:
        drep, dinc = cols["dom_reported"] & rep[dh], cols["dom_included"] & inc[dh]
    # workaround_bug_h74, as threshold_hits, on the domains of the hits with overlaps
    over = np.flatnonzero(cols["noverlaps"])
    drop = duplicate_alignments((np.cumsum(nd) - nd)[over], nd[over], cols["dom_ali_from"], cols["dom_ali_to"],
                                cols["dom_score"])
    drep[drop] = dinc[drop] = False
    at = 0
    for source in cols["sources"]:
        k = len(source)
        source.set_flags(c_evalue=c_evalue[at:at + k], i_evalue=i_evalue[at:at + k], reported=drep[at:at + k],
                         included=dinc[at:at + k])
        at += k
    if at != len(c_evalue):
        raise ValueError("threshold_hits: the records' domains are not the columns' domains")


def name_rank(seqs: SequenceSet) -> np.ndarray:
    """Each target's rank among the target names in code point order (made once per SequenceSet)."""
    rank = seqs.__dict__.get("_name_rank")
    if rank is None:
        _, rank = np.unique(np.asarray(seqs.names, dtype=str), return_inverse=True)
        seqs.__dict__["_name_rank"] = rank = rank.reshape(-1)
    return rank


def _hit_lexsort(model, primary, rank, flag, iali, target) -> np.ndarray:
    """``np.lexsort((target, iali, flag, rank, primary, model))`` (model first), faster: the four
    integer keys packed into one int64 where they fit (rank, target, iali >= 0; flag 0/1), then
    three stable argsorts, the last (model) a radix sort when models fit 16 bits."""
    bits = [int(max(int(v.max()), 0)).bit_length() if len(v) else 0 for v in (rank, iali, target)]
    if (len(model) == 0 or min(int(rank.min()), int(iali.min()), int(target.min())) < 0
            or bits[0] + 1 + bits[1] + bits[2] > 62):
        return np.lexsort((target, iali, flag, rank, primary, model))
    low = (((rank.astype(np.int64) << 1 | flag.astype(np.int64)) << bits[1] | iali.astype(np.int64)) << bits[2]
           | target.astype(np.int64))
    order = np.argsort(low, kind="stable")
    return by_model(order[np.argsort(primary[order], kind="stable")], model)


def by_model(order: np.ndarray, model: np.ndarray) -> np.ndarray:
    """``order`` sorted again, stably, by ``model[order]``: a radix sort where the models fit 16 bits (so
    ``by_model(np.argsort(key, kind="stable"), model)`` is ``np.lexsort((key, model))``)."""
    fits = len(model) and int(model.min()) >= 0 and int(model.max()) < (1 << 15)
    mk = model.astype(np.int16) if fits else model
    return order[np.argsort(mk[order], kind="stable")]


def sort_hits(hits: list[Hit], th: Thresholds, keys=None) -> list[Hit]:
    """Models in database order; within a model, HMMER's order (:func:`hmmcascade.output.sort_hits`).

    ``keys``: ``(per-batch key dicts of make_hits, in the hits' order; the searched
    SequenceSet)``: the same order from arrays, without reading every record again."""
    from .output import hit_order

    inc_by_E = th.cut is None and th.incT is None
    if keys is not None and len(hits):
        parts, seqs = keys
        col = {name: np.concatenate([k[name] for k in parts if k]) for name in
               ("model", "lnP", "score", "iali", "jali", "target")}
        primary = col["lnP"] if inc_by_E else -col["score"]
        if len(primary) == len(hits) and not np.isnan(primary).any():
            # target names ranked in code point order, as hit_order ranks them
            rank = name_rank(seqs)
            iali, jali = col["iali"], col["jali"]
            order = _hit_lexsort(col["model"], primary, rank[col["target"]], (iali >= jali).astype(np.int64), iali,
                                 col["target"])
            return list(map(hits.__getitem__, order.tolist()))
    return list(map(hits.__getitem__, hit_order(hits, inc_by_E=inc_by_E, by_model=True).tolist()))

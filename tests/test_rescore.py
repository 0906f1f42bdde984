"""The search's rescoring (hmmcascade.rescore): the hits whose printed values, flags or order lie within
the fast Forward parser's rounding get their Forward score in HMMER's order.

On a CPU device the decoding is already HMMER's order, so rescoring every hit (option ``rescore=all``)
must leave every record as it was, bit for bit: that holds the rescoring's pieces (the exact Forward
score of a new batch of the targets, the sequence score made again from its parts, E-values, flags,
the records kept for the margin and dropped) to the search's own.  The margin's tests are on arrays."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from hmmcascade import cascade, rescore, stats
from hmmcascade.options import SearchOptions, choose
from hmmcascade.reporting import Thresholds

F32 = np.float32


def _rows(res):
    """Every record's printed and compared values, with its domains'."""
    return [(h.model, h.target, h.score, h.pre_score, h.bias, h.lnP, h.evalue, h.reported, h.included, h.nexpected,
             tuple((d.env_from, d.env_to, d.score, d.bias, d.c_evalue, d.i_evalue, d.reported, d.included, d.acc)
                   for d in h.domains)) for h in res.records]


@pytest.mark.parametrize("th", [Thresholds(Z=2000), Thresholds(Z=2000, T=12.0, incT=25.0, domT=10.0),
                                Thresholds(cut="ga")], ids=["E", "T", "cut_ga"])
def test_rescoring_every_hit_changes_nothing_where_the_decoding_is_exact(default_db, default_seqs, device, th):
    base = cascade.search(default_db, default_seqs, device, th)
    every = cascade.search(default_db, default_seqs, device, th, options=SearchOptions(rescore="all"))
    assert every.stats.rescored["flagged"] >= len(every.records) > 0
    assert every.stats.rescored["changed"] == 0
    assert _rows(every) == _rows(base)
    assert all(h.reported for h in every.records)


def test_records_kept_for_the_margin_are_dropped_when_not_reportable(default_db, default_seqs, device):
    """E set just below a hit's E-value: the margin keeps that hit's record until the rescoring, which
    leaves it unreported; the search then returns the same records as without the rescoring."""
    probe = cascade.search(default_db, default_seqs, device, Thresholds(Z=2000))
    ev = sorted(h.evalue for h in probe.records if h.evalue > 1e-3)[len(probe.records) // 3]
    th = Thresholds(Z=2000, E=ev * (1 - 1e-7))
    base = cascade.search(default_db, default_seqs, device, th)
    every = cascade.search(default_db, default_seqs, device, th, options=SearchOptions(rescore="all"))
    assert every.stats.rescored["records"] > len(base.records)  # (the margin's record among them)
    assert _rows(every) == _rows(base)


def test_rescore_option_defaults():
    assert choose("rescore", None, True) == "on" and choose("rescore", None, False) == "on"
    assert choose("envelope", None, True) == "wg"
    with pytest.raises(ValueError, match="rescore"):
        SearchOptions(rescore="sometimes")


def _columns(fwd, model=None, nexp=None):
    n = len(fwd)
    fwd = np.asarray(fwd, dtype=F32)
    cols = dict(model=np.zeros(n, dtype=np.int64) if model is None else np.asarray(model, dtype=np.int64),
                fwd=fwd, nul=np.full(n, -2.0, F32), seqbias=np.full(n, 0.25, F32), sum_score=np.zeros(n, F32),
                pre2_score=np.zeros(n, F32), sum_ok=np.zeros(n, bool),
                nexpected=np.full(n, 1.02) if nexp is None else np.asarray(nexp, dtype=np.float64))
    sc, _ = rescore.sequence_scores(cols["fwd"], cols["nul"], cols["seqbias"], cols["sum_score"], cols["pre2_score"],
                                    cols["sum_ok"])
    cols["score"] = sc.astype(np.float64)
    db = SimpleNamespace(evparams=np.tile(np.array([0, 0, 0, 0, -4.0, 0.693, 0, 0], dtype=F32), (4, 1)),
                         cutoffs=np.zeros((4, 6)))
    ev = db.evparams[cols["model"]].astype(np.float64)
    cols["lnP"] = stats.exp_logsurv(sc, ev[:, 4], ev[:, 5])
    return cols, db


def _fwd_for_score(bits):
    """Forward scores (nats) whose sequence score is ``bits`` (null -2, bias 0.25 nats)."""
    return np.asarray(bits, dtype=np.float64) * np.log(2.0) + (-2.0 + 0.25)


def test_margin_flags_what_could_print_otherwise():
    # scores a hair from a tenth's boundary (x.x5) are flagged, others not; E far from its digits' boundaries
    far, near = 30.02, 30.05 + 2e-6
    cols, db = _columns(_fwd_for_score([far, near]), model=[0, 1])
    flag = rescore._uncertain(cols, Thresholds(Z=1.0, E=1e9), 1.0, db, True)
    assert flag.tolist()[1] is True
    # the margin is units in the last place: the same score far from every boundary is not flagged
    assert rescore.margin_nats(np.array([20.0], F32))[0] < 1e-4


def test_margin_flags_thresholds_neighbours_and_domain_counts():
    Z = 1000.0
    cols, db = _columns(_fwd_for_score([40.0, 40.0, 60.0]), model=[0, 1, 2])
    # reporting threshold set at the first hit's E-value: its record is flagged, the others are not
    e0 = float(np.exp(cols["lnP"][0]) * Z)
    flag = rescore._uncertain(cols, Thresholds(E=e0), Z, db, True)
    assert flag[0] and not flag[2]
    # two hits of one model whose sort keys lie within each other's margins (and differ)
    cols, db = _columns(_fwd_for_score([40.0, 40.0]) + np.array([0.0, 2e-6]), model=[3, 3])
    assert rescore._uncertain(cols, Thresholds(E=1e9), Z, db, True).all()
    # exactly equal keys (a copy of a sequence) are HMMER's tie too: not flagged for it
    cols, db = _columns(_fwd_for_score([40.23, 40.23]), model=[3, 3])
    assert not rescore._uncertain(cols, Thresholds(E=1e9), Z, db, True).any()
    # the expected number of domains near a tenth's boundary
    cols, db = _columns(_fwd_for_score([40.23, 40.23]), model=[0, 1], nexp=[1.05 + 1e-6, 1.02])
    assert rescore._uncertain(cols, Thresholds(E=1e9), Z, db, True).tolist() == [True, False]


def test_neighbours_flagged_within_each_model_whatever_the_records_order():
    """The order test over many models (a record's neighbours in its model's key order), the records shuffled:
    the pairs a reference walk over each model's sorted keys finds, no more."""
    rng = np.random.default_rng(5)
    n = 3000
    bits = np.round(rng.uniform(25.0, 60.0, n), 1) + 0.02  # (far from every printed digit's boundary)
    close = rng.choice(n, 200, replace=False)
    bits[close[:100]] = bits[close[100:]] + 3e-6  # (pairs within the margin of each other)
    model = rng.integers(0, 4, n)
    model[close[:100]] = model[close[100:]]  # (each pair in one model)
    cols, db = _columns(_fwd_for_score(bits), model=model)
    flag = rescore._uncertain(cols, Thresholds(E=1e9), 1000.0, db, True)
    own = rescore.own_uncertain(cols, Thresholds(E=1e9), 1000.0, db, True)
    want = own["uncertain"].copy()
    for mdl in range(4):
        idx = np.flatnonzero(model == mdl)
        idx = idx[np.argsort(cols["lnP"][idx], kind="stable")]
        for a, b in zip(idx[:-1], idx[1:]):
            if own["key_lo"][b] <= own["key_hi"][a] and cols["lnP"][a] != cols["lnP"][b]:
                want[a] = want[b] = True
    assert np.array_equal(flag, want) and want.sum() >= 100 and not own["uncertain"][close].all()


def test_relaxed_scores_bound_the_score_from_above():
    cols, _ = _columns(_fwd_for_score([12.0, 250.0, 900.0]))
    parts = {k: cols[k] for k in rescore.PART_NAMES}
    hi = rescore.relaxed_scores(parts)
    assert (hi > cols["score"]).all()
    assert ((hi - cols["score"]) * np.log(2.0) <= 2 * rescore.margin_nats(cols["fwd"])).all()


def test_pairs_near_f3_are_decided_on_the_forward_score_in_hmmers_order(default_db, default_seqs, device):
    """F3 set at one pair's own P-value (HMMER keeps a pair whose P is not above F3) keeps it, the next
    smaller double drops it: the decision is the exact Forward score's, whatever the filter kernel's rounding."""
    from hmmcascade.cascade import Cascade

    seqs = default_seqs.subset(np.argsort(default_seqs.lengths, kind="stable")[:800])
    c = Cascade(device, default_db, options=SearchOptions(rescore="off"))
    every = Thresholds(Z=2000, F3=1.0)
    out, _ = c.filter_batch(seqs, every)
    x_fast = stats.bits(out.fwd_nats, out.filtersc_nats)
    p = int(np.argsort(x_fast)[len(x_fast) * 9 // 10])  # a strong pair, not the strongest
    fsc, _ = c.domains.exact_forward(out.batch, out.seq[p:p + 1], out.model[p:p + 1])
    x = stats.bits(fsc, out.filtersc_nats[p:p + 1])
    ev = default_db.evparams.astype(np.float64)
    P = float(stats.exp_surv(x, ev[out.model[p], 4], ev[out.model[p], 5])[0])
    assert 0.0 < P < 1e-3
    pair = (int(out.seq[p]), int(out.model[p]))
    for F3, kept in ((P, True), (float(np.nextafter(P, 0.0)), False)):
        th = Thresholds(Z=2000, F3=F3)
        c2 = Cascade(device, default_db, options=SearchOptions(rescore="on"))
        o, st = c2.filter_batch(seqs, th)
        assert pair in set(zip(o.near_f3["seq"].tolist(), o.near_f3["model"].tolist()))
        o, st = c2.domain_batch(o, st, defer_scoring=True)
        assert (pair in set(zip(o.seq.tolist(), o.model.tolist()))) == kept
        assert st.rescored_f3 >= 1 and st.past_fwd == len(o.seq)


def test_with_cutoffs_a_record_kept_for_the_margin_gets_its_domains_flags_with_it(default_db, default_seqs, device,
                                                                                   monkeypatch):
    """--cut_ga with one model's sequence cutoff a hair above its best hit's score: the margin keeps that
    record unreported until the rescoring.  When the Forward score in HMMER's order (here made higher than
    the filter's by a quarter of the margin, the plumbing's test) passes the cutoff, the hit is reported
    and its domains flagged by their own cutoff, as a search with the cutoff just below reports them."""
    import dataclasses

    base = cascade.search(default_db, default_seqs, device, Thresholds(Z=2000, cut="ga"))
    best = max(base.records, key=lambda h: h.score)
    cut = default_db.cutoffs.copy()
    cut[best.model, 0] = np.nextafter(np.float32(best.score), np.float32(np.inf))  # just above: not reported
    db = dataclasses.replace(default_db, cutoffs=cut)
    th = Thresholds(Z=2000, cut="ga")
    off = cascade.search(db, default_seqs, device, th, options=SearchOptions(rescore="off"))
    assert (best.model, best.target) not in {(h.model, h.target) for h in off.records}
    real = rescore.exact_forward

    def higher(cascade_, seqs, targets, models):
        fsc, nexp = real(cascade_, seqs, targets, models)
        return (fsc.astype(np.float64) + rescore.margin_nats(fsc) / 4).astype(F32), nexp

    monkeypatch.setattr(rescore, "exact_forward", higher)
    every = cascade.search(db, default_seqs, device, th, options=SearchOptions(rescore="all"))
    got = {(h.model, h.target): h for h in every.records}
    assert (best.model, best.target) in got
    hit = got[(best.model, best.target)]
    assert hit.reported and hit.included and hit.score > best.score
    ref = {(h.model, h.target): h for h in base.records}[(best.model, best.target)]
    assert [(d.reported, d.included) for d in hit.domains] == [(d.reported, d.included) for d in ref.domains]
    assert any(d.reported for d in hit.domains)


def test_each_batchs_own_flags_are_the_ones_made_at_the_end(default_db, default_seqs, device, monkeypatch):
    """With the decoding's warp kernels (rescore on, also on a CPU device) the records thread flags each
    batch's records by their own values (own_uncertain): the rescoring then flags the same records as when
    it makes every test from the columns at the end, and the search prints the exact decoding's rows (the
    records it did not flag keep the warp kernels' last bits, which no printed value shows)."""
    seen = []
    real = rescore.rescore_records

    def spy(casc, seqs, records, keys, cols, th, Z, mode):
        assert mode == "on" and "uncertain" in cols and len(keys) > 1  # (several batches' flags)
        bare = {k: v for k, v in cols.items() if k not in ("uncertain", "key_lo", "key_hi")}
        seen.append((rescore._uncertain(cols, th, Z, casc.db), rescore._uncertain(bare, th, Z, casc.db)))
        return real(casc, seqs, records, keys, cols, th, Z, mode)

    monkeypatch.setattr(cascade, "rescore_records", spy)
    th = Thresholds(Z=2000)
    fast = cascade.search(default_db, default_seqs, device, th,
                          options=SearchOptions(decode="warp", batch_residues=60_000))
    assert len(seen) == 1 and np.array_equal(*seen[0]) and seen[0][0].any()
    monkeypatch.setattr(cascade, "rescore_records", real)
    exact = cascade.search(default_db, default_seqs, device, th, options=SearchOptions(batch_residues=60_000))
    assert _printed(fast) == _printed(exact)


def _printed(res):
    """Every record's values as the tables print them, in order, with its domains' values."""
    return [(h.model, h.target, f"{h.score:.1f}", f"{h.bias:.1f}", f"{h.evalue:.2g}", h.reported, h.included,
             f"{h.nexpected:.1f}", r[-1]) for h, r in zip(res.records, _rows(res))]

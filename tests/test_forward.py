"""src/hmmcascade/kernels/forward.cl and the search's reported hits.

1. ``cascade.search`` of the default data (Z = 2000, E <= 10) against
   ``pyhmmer.hmmsearch`` (HMMER 3.4): same targets, and the same
   full-sequence score before the null2 correction (``Hit.pre_score``).
2. The kernel's Forward score against a float64 Forward on the same tables.
"""

from __future__ import annotations

import numpy as np
import pyhmmer
import pytest
from pyhmmer.easel import Alphabet, SequenceFile

from conftest import BEST_HITS, DEFAULT_SEQS
from hmmcascade import device_data, filters, profiles
from hmmcascade.press import press
from hmmcascade.instrument import Instrument

Z = 2000


@pytest.fixture(scope="module")
def hmmer_hits(default_hmms):
    """pyhmmer.hmmsearch of the default data with Z = 2000 and E = 1e9: every target past the Forward filter.

    With E that large HMMER reports every pair that passed its four filters
    (domain definition and null2 are run on all of them), so the E <= 10
    set at default thresholds is the subset with ``evalue <= 10``.
    """
    with SequenceFile(str(DEFAULT_SEQS), digital=True, alphabet=Alphabet.amino()) as sf:
        targets = sf.read_block()
    hits = {}
    for top in pyhmmer.hmmsearch(default_hmms, targets, cpus=2, Z=Z, E=1e9, domE=1e9):
        for hit in top:
            hits[(top.query.name, hit.name)] = hit
    return hits


def test_hits_match_hmmer(default_search, default_db, default_hmms, default_seqs, hmmer_hits):
    """Same hits as HMMER, with HMMER's scores.

    * The reported set is exactly HMMER's at E <= 10 (the resources README counts 201),
      out of the 240 pairs that pass HMMER's four filters ("Passed Fwd filter").
    * ``score`` (after null2 and HMMER's domain-sum override) and ``pre_score`` equal
      HMMER's within 0.05 bits: HMMER sums the same Forward terms in another order
      (striped), so float32 scores of up to ~1,400 bits differ by a few 1e-5 before the
      domain stage, and the printed precision is 0.1 bits.
    * E-values within 1% (0.05 bits moves an E-value by lambda * 0.05 ~ 3.5% at most;
      in practice the differences are ~1e-4 bits).
    """
    res = default_search
    ours = {(h.model_name, h.target_name): h for h in res.records if h.reported}
    assert len(ours) == len(res.hits)  # one hit per (model, target)
    reported = {k for k, h in hmmer_hits.items() if h.evalue <= 10.0}
    assert len(reported) == 201
    assert len(hmmer_hits) == res.stats.past_fwd == 240
    assert set(ours) == reported
    overridden = 0
    for key in sorted(reported):
        hit, mine = hmmer_hits[key], ours[key]
        assert mine.score == pytest.approx(hit.score, abs=0.05), (key, mine.score, hit.score)
        assert mine.pre_score == pytest.approx(hit.pre_score, abs=0.05), (key, mine.pre_score, hit.pre_score)
        assert mine.evalue == pytest.approx(hit.evalue, rel=0.01), key
        overridden += hit.score == hit.sum_score
    # HMMER 3.4 replaces the score by the domain-sum reconstruction for 12 of the 201: we must too.
    assert overridden == 12


#: Models of the direct Forward comparison: lengths 13 to 1021, every remainder of M mod 4.
FWD_MODELS = ("MraY_sig1", "tRNA_SAD", "MarR", "Peptidase_S49", "NMT1", "Aminotran_1_2", "PFL-like", "ACR_tran")


def generic_forward(db, m: int, seqs, lp) -> np.ndarray:
    """Forward score (nats) of model ``m`` for all sequences, float64, HMMER's local multihit model.

    The recurrence of src/hmmcascade/kernels/forward.cl (p7_ForwardParser) on the pressed
    float tables: odds-ratio emissions, transition probabilities, N/C/J
    move/loop for each length, E move/loop; E collects M and D of every node;
    score = log(C(L) tCT).  Evaluated in log space (logaddexp), which needs no
    rescaling and loses nothing at float64; the D chain is the closed form
    S_k + logsumexp_{l<=k}(M(l) + tMD_l - S_l), S the running sum of log tDD.
    """
    with np.errstate(divide="ignore"):  # log(0) = -inf for impossible transitions and emissions
        e = np.log(db.emission(db.fwd_msc_f32, m).astype(np.float64))
        t = np.log(db.transitions(db.fwd_tsc_f32, m).astype(np.float64))
        e_move, e_loop = np.log(db.fwd_xf_e_f32[m].astype(np.float64))
        move_all = np.log(lp.xf_move_f32.astype(np.float64))
        loop_all = np.log(lp.xf_loop_f32.astype(np.float64))
    M = e.shape[1]
    tBM, tMM, tIM, tDM, tMD, tMI, tII, tDD = (t[:, j] for j in range(8))
    S = np.cumsum(tDD[: M - 1])
    assert np.all(np.isfinite(S))
    lse = np.logaddexp

    order = np.argsort(-seqs.lengths, kind="stable")  # longest first: active sequences are a prefix
    L = seqs.lengths[order].astype(int)
    x = np.zeros((len(order), int(L[0])), dtype=np.intp)
    for j, s in enumerate(order):
        x[j, : L[j]] = seqs.residues[seqs.offsets[s] : seqs.offsets[s] + L[j]]
    move, loop = move_all[order], loop_all[order]
    n = len(order)
    Mp = np.full((n, M), -np.inf)
    Ip, Dp = Mp.copy(), Mp.copy()
    N = np.zeros(n)
    B = move.copy()
    C = np.full(n, -np.inf)
    J = C.copy()
    score = np.empty(n)
    col0 = np.full((n, 1), -np.inf)
    with np.errstate(invalid="ignore"):  # -inf - -inf never reaches a result: lse(-inf, -inf) = -inf
        for i in range(L[0]):
            a = int(np.count_nonzero(L > i))
            Mp, Ip, Dp, N, B, C, J = Mp[:a], Ip[:a], Dp[:a], N[:a], B[:a], C[:a], J[:a]
            mv, lo = move[:a], loop[:a]

            def prev(A):
                return np.concatenate([col0[:a], A[:, :-1]], axis=1)

            Mc = lse(lse(B[:, None] + tBM, prev(Mp) + tMM), lse(prev(Ip) + tIM, prev(Dp) + tDM)) + e[x[:a, i]]
            Ic = lse(Mp + tMI, Ip + tII)
            Dc = np.concatenate([col0[:a], S + lse.accumulate(Mc[:, : M - 1] + tMD[: M - 1] - S, axis=1)], axis=1)
            E = lse(lse.reduce(Mc, axis=1), lse.reduce(Dc, axis=1))
            N = N + lo
            C = lse(C + lo, E + e_move)
            J = lse(J + lo, E + e_loop)
            B = lse(J, N) + mv
            Mp, Ip, Dp = Mc, Ic, Dc
            done = np.flatnonzero(L[:a] == i + 1)
            score[done] = C[done] + mv[done]
    out = np.empty(n)
    out[order] = score
    return out


@pytest.mark.parametrize("path", ["serial", "warp"])
def test_forward_filter_matches_float64_forward(default_hmms, msv_sample, device, path):
    """Kernel Forward (nats) = float64 Forward within 1e-4 nats + 1e-6 relative: forward_filter
    (path "serial") and forward_warp<C> (path "warp"; models of up to 1,024 nodes, all 8 here).

    8 models (M 13..1021) x 14 sequences: each model's best hit (scores up to
    ~1,000 nats), the 1- and 9-residue fragments, and proteins of 14 to 4,560
    residues.  The kernel works in float32 and adds one float log per
    rescaled row to a float32 total: for the long, non-homologous targets
    that is ~1e-6 nats of error, but a 1,000-nat score is itself a float32
    with spacing 6e-5, accumulated over ~1,000 rescalings, so the bound grows
    by 1e-6 x |score| (0.001 nats at 1,000).  HMMER's own Forward is float32 as well.
    """
    hmms = [h for h in default_hmms if h.name in FWD_MODELS]
    db = press(hmms)
    seqs = msv_sample.seqs
    index = {n: i for i, n in enumerate(seqs.names)}
    L = seqs.lengths
    chosen = [index[BEST_HITS[h.name]] for h in hmms]
    chosen += [int(np.flatnonzero(L == 1)[0]), int(np.flatnonzero(L == 9)[0]), int(np.argmax(L))]
    chosen += [int(np.flatnonzero(L >= v)[0]) for v in (14, 100, 300)]
    sub = seqs.subset(np.unique(chosen))
    assert len(sub) == 14 and sub.lengths.min() == 1 and sub.lengths.max() == 4560

    lp = profiles.length_params(sub.lengths, db)
    batch = device_data.DeviceBatch.upload(device, sub, lp)
    ff = filters.ForwardFilter(device, device_data.DeviceModels(device, db), 64 << 10, path=path)  # several launches
    pair_model = np.repeat(np.arange(len(db)), len(sub))
    pair_seq = np.tile(np.arange(len(sub)), len(db))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(device, "instrument", Instrument(launches=True))
        got, _ = ff(batch, pair_seq, pair_model)
        log = device.instrument.launches
    warp = [r for r in log if r[0].startswith("ForwardFilter/warp")]
    if path == "warp":  # M 13, 44, 59 -> warp4; 154, 216 -> warp8; 363 -> warp12; 647 -> warp24; 1021 -> warp32
        # (in launch order; with a side queue its launches, warp24 and warp32, come first)
        assert sorted(r[0] for r in warp) == sorted(f"ForwardFilter/warp{c}" for c in (4, 8, 12, 24, 32))
        assert sum(r[2] for r in log) == sum(r[2] for r in warp) == 8 * len(sub)
    else:
        assert not warp
    for m in range(len(db)):
        ref = generic_forward(db, m, sub, lp)
        k = got[pair_model == m].astype(np.float64)
        assert np.all(np.isfinite(ref)) and np.all(np.isfinite(k)), db.names[m]
        np.testing.assert_allclose(k, ref, rtol=1e-6, atol=1e-4, err_msg=db.names[m])
    assert got.max() > 900  # strong hits were compared (ACR_tran's best: ~995 nats)


@pytest.mark.parametrize("wg_cells", [1, 20000])
def test_group_kernel_equals_serial_kernel(default_db, msv_sample, device, wg_cells):
    """forward_wg (a work-group per pair: rows spread over the work-items, the D chain and E sums
    walked by one) gives forward_filter's scores bit for bit: 600 random pairs of the default data
    plus fragments of 1 and 9 residues, all through forward_wg (wg_cells 1) or the larger ones only."""
    db, seqs = default_db, msv_sample.seqs
    lp = profiles.length_params(seqs.lengths, db)
    batch = device_data.DeviceBatch.upload(device, seqs, lp)
    models = device_data.DeviceModels(device, db)
    rng = np.random.default_rng(5)
    L = seqs.lengths
    short = np.concatenate([np.flatnonzero(L == 1)[:1], np.flatnonzero(L == 9)[:1]])
    pair_seq = np.concatenate([rng.integers(0, len(seqs), 600), np.repeat(short, 20)]).astype(np.int32)
    pair_model = np.concatenate([rng.integers(0, len(db), 600),
                                 rng.integers(0, len(db), 20 * len(short))]).astype(np.int32)
    ref, _ = filters.ForwardFilter(device, models, 1 << 20, wg_cells=0, path="serial")(batch, pair_seq, pair_model)
    ff = filters.ForwardFilter(device, models, 1 << 20, wg_cells=wg_cells, path="serial")
    got, _ = ff(batch, pair_seq, pair_model)
    assert np.array_equal(got.view(np.int32), ref.view(np.int32))
    if wg_cells == 1:  # forward_warp on the same pairs: forward_filter's scores to float rounding
        warp, _ = filters.ForwardFilter(device, models, 1 << 20, wg_cells=0, path="warp")(batch, pair_seq, pair_model)
        assert (models.node_words[pair_model] <= 256).all()  # every pair on forward_warp
        np.testing.assert_allclose(warp, ref, rtol=2e-6, atol=2e-5)
    cells = db.M[pair_model].astype(np.int64) * L[pair_seq]
    assert (cells >= wg_cells).sum() > 100 and (wg_cells == 1 or (cells < wg_cells).sum() > 50)

"""domaindef.ensemble, .traces, .easel_random: HMMER's stochastic traceback clustering of multi-domain regions.

1. The random generator against HMMER's own (``pyhmmer.easel.Randomness(seed,
   fast=True)`` is Easel's ``esl_randomness_CreateFast``): identical doubles.
2. ``fchoose``, the trace bookkeeping, null2 and the segment-pair clustering
   on hand-built inputs whose answers follow from the C source.
3. End to end on real models and proteins: a reference Forward written here
   (HMMER's SSE ``forward_engine`` emulated lane by lane, checked against
   pyhmmer's Forward score bit for bit), HMMER's region heuristics on float64
   posteriors, then :func:`region_trace_ensemble`.  Its envelopes must equal
   pyhmmer's ``Domain.env_from/env_to`` and its null2 scores must reproduce
   pyhmmer's ``Domain.correction`` exactly (that sum depends on all 200
   sampled traces, so it fails unless every random draw and every float
   rounding is HMMER's).
"""

from __future__ import annotations

import math

import numpy as np
import pyhmmer
import pytest
from conftest import DEFAULT_HMMS, DEFAULT_SEQS, PYHMMER_DATA
from pyhmmer.easel import Alphabet, Randomness, SequenceFile
from pyhmmer.plan7 import HMMFile

from hmmcascade import profiles
from hmmcascade.press import press
from hmmcascade.domaindef import easel_random, ensemble, traces
from hmmcascade.domaindef.easel_random import EaselRandom
from hmmcascade.domaindef.ensemble import Cluster, SpEnsemble
from hmmcascade.domaindef.traces import (
    BM, DD, DM, II, IM, LOOP, MD, MI, MM, MOVE, OC, OE, OJ, ON,
    P7T_B, P7T_C, P7T_D, P7T_E, P7T_I, P7T_J, P7T_M, P7T_N, P7T_S, P7T_T,
    ModelTables, RegionForward, Trace,
)

f32 = np.float32
LOG2R = 1.44269504088896341  # eslCONST_LOG2R: pyhmmer reports Domain.correction = domcorrection * LOG2R


class FixedRolls:
    """A stand-in generator that returns given rolls, then 0.5."""

    def __init__(self, rolls):
        self.rolls = list(rolls)

    def random(self) -> float:
        return self.rolls.pop(0) if self.rolls else 0.5


# ---------------------------------------------------------------- random numbers


@pytest.mark.parametrize("seed", [1, 7, 42, 12345, 2**31, 2**32 - 1])
def test_random_is_easels_fast_generator(seed):
    """10,000 draws equal Easel's (double for double), and reinit replays them (HMMER's do_reseeding)."""
    ours, easel = EaselRandom(seed), Randomness(seed, fast=True)
    draws = [ours.random() for _ in range(10_000)]
    assert draws == [easel.random() for _ in range(10_000)]
    ours.reinit()
    assert [ours.random() for _ in range(100)] == draws[:100]


def test_random_pipeline_seed_and_refusals():
    # HMMER's pipeline generator: esl_randomness_CreateFast(42); first draws as printed by pyhmmer
    rng = EaselRandom()
    assert rng.seed == 42
    assert [rng.random(), rng.random()] == [0.10076649952679873, 0.8413558166939765]
    for bad in (0, -1, 2**32):
        with pytest.raises(ValueError):
            EaselRandom(bad)


def test_fchoose_edges():
    """``roll < cumsum / norm``: a roll exactly on a boundary goes right; zeros are never chosen."""
    p = np.array([0.25, 0.25, 0.5], dtype=f32)
    assert easel_random.fchoose(FixedRolls([0.2499999]), p) == 0
    assert easel_random.fchoose(FixedRolls([0.25]), p) == 1
    assert easel_random.fchoose(FixedRolls([0.5]), p) == 2
    assert easel_random.fchoose(FixedRolls([0.9999999]), p) == 2
    assert easel_random.fchoose(FixedRolls([0.0]), [0.0, 1.0, 0.0]) == 1
    assert easel_random.fchoose(FixedRolls([0.9999999]), [0.0, 1.0, 0.0]) == 1
    assert easel_random.fchoose(FixedRolls([0.25]), [1.0, 3.0]) == 1  # unnormalised weights: 1/4 is the boundary
    assert easel_random.fchoose(FixedRolls([0.2499]), [1.0, 3.0]) == 0
    with pytest.raises(ValueError):
        easel_random.fchoose(FixedRolls([0.1]), [0.0, 0.0])


def test_fchoose_distribution():
    """20,000 draws from (0.1, 0.2, 0.3, 0.4): each frequency within 5 binomial SDs (<= 0.017)."""
    rng = EaselRandom(7)
    p = np.array([0.1, 0.2, 0.3, 0.4], dtype=f32)
    counts = np.bincount([easel_random.fchoose(rng, p) for _ in range(20_000)], minlength=4)
    sd = np.sqrt(p * (1 - p) / 20_000)
    assert np.all(np.abs(counts / 20_000 - p) < 5 * sd)


def test_fnorm_is_kahan_float():
    """esl_vec_FNorm sums with Kahan compensation in float: 1 + 2^-24 + 2^-24 = 1 + 2^-23, not 1."""
    tiny = 2.0**-24
    p = easel_random.fnorm(np.array([[1.0, tiny, tiny], [0.0, 0.0, 0.0]], dtype=f32))
    assert p.dtype == np.float32
    assert p[0, 0] == f32(1) / f32(1 + 2 * tiny) and p[0, 0] != 1.0
    assert p[1].tolist() == [f32(1 / 3)] * 3  # zero sum: 1/n each


# ---------------------------------------------------------------- traces


def _toy_model(M: int) -> ModelTables:
    tsc = np.full((M, 8), 0.5, dtype=f32)
    tsc[0, [MM, IM, DM]] = 0
    tsc[-1, [MD, MI, II, DD]] = 0
    xf = np.array([[0.5, 0.5], [0.1, 0.9], [0.1, 0.9], [0.1, 0.9]], dtype=f32)
    return ModelTables(tsc=tsc, msc=np.ones((29, M), dtype=f32), xf=xf)


def _one_row_forward(M: int, m_row, d_row) -> RegionForward:
    """Rows 0 and 1 of a (synthetic) Forward matrix: only row 1's M and D cells set."""
    mmx = np.zeros((2, M + 1), dtype=f32)
    dmx = np.zeros((2, M + 1), dtype=f32)
    mmx[1, 1:], dmx[1, 1:] = m_row, d_row
    xmx = np.zeros((2, 6), dtype=f32)
    xmx[0] = [0, 1, 0, 0.1, 0, 1]
    xmx[1] = [mmx[1].sum() + dmx[1].sum(), 0.9, 0, 0, 0, 1]
    return RegionForward(mmx, np.zeros_like(mmx), dmx, xmx)


def test_select_e_walks_hmmer_striped_order():
    """M = 5 is striped in Q = 2 vectors: E's predecessors are visited M1 M3 M5 D1 D3 D5 M2 M4 D2 D4.

    With five equal M cells a roll of 0.5 lands on the third visited cell,
    M5 (in node order it would be M3).  Trace: S N B M_k E C T.
    """
    M = 5
    model = _toy_model(M)
    fwd = _one_row_forward(M, np.ones(M), np.zeros(M))
    sampler = traces.TraceSampler(fwd, model)
    for roll, k in [(0.1, 1), (0.3, 3), (0.5, 5), (0.7, 2), (0.9, 4)]:
        tr = sampler.sample(FixedRolls([0.5, roll]))
        assert tr.st == [P7T_S, P7T_N, P7T_B, P7T_M, P7T_E, P7T_C, P7T_T]
        assert tr.k[3] == k and tr.i[3] == 1

    # nine equal cells (D1 is 0): M1 M3 M5 D3 D5 M2 M4 D2 D4; roll 3.5/9 picks D3, then D3 <- M2 (roll 0.1)
    fwd = _one_row_forward(M, np.ones(M), [0, 1, 1, 1, 1])
    tr = traces.TraceSampler(fwd, model).sample(FixedRolls([0.5, 3.5 / 9, 0.1]))
    assert tr.st == [P7T_S, P7T_N, P7T_B, P7T_M, P7T_D, P7T_E, P7T_C, P7T_T]
    assert tr.k[3:5] == [2, 3] and tr.i[3:5] == [1, 0]


def test_select_e_rounds_its_norm_to_float():
    """select_e weighs cells by the float ``(float)(1.0 / E)``, not the double: a roll between the two
    first cut points must go past M1 (cells from a random row where the two differ)."""
    M = 5
    cells = np.array([1.2677323818206787, 1.925695538520813, 0.7162393927574158, 1.9229742288589478,
                      0.967747151851654], dtype=f32)
    fwd = _one_row_forward(M, cells, np.zeros(M))
    E = float(fwd.xmx[1, 0])
    hmmer_cut = float(cells[0] * f32(1.0 / E))
    double_cut = float(f32(float(cells[0]) * (1.0 / E)))
    assert hmmer_cut < double_cut
    tr = traces.TraceSampler(fwd, _toy_model(M)).sample(FixedRolls([0.5, (hmmer_cut + double_cut) / 2]))
    assert tr.k[3] == 3  # the next cell in striped order (M1 M3 M5 M2 M4)


def test_trace_conventions_and_index():
    """p7_trace_Append/Reverse: N, C, J emit on their second and later visits; p7_trace_Index finds B..E spans."""
    tr = Trace()
    # appended as p7_StochasticTrace appends them, from T back to S, for the L = 8 path
    # S N N1 B M1:2 M2:3 E J J4 B M3:5 I3:6 M4:7 E C C8 T   (state, node:residue)
    for st, k, i in [(P7T_T, 0, 8), (P7T_C, 0, 8), (P7T_C, 0, 8), (P7T_E, 0, 7), (P7T_M, 4, 7), (P7T_I, 3, 6),
                     (P7T_M, 3, 5), (P7T_B, 0, 4), (P7T_J, 0, 4), (P7T_J, 0, 4), (P7T_E, 0, 3), (P7T_M, 2, 3),
                     (P7T_M, 1, 2), (P7T_B, 0, 1), (P7T_N, 0, 1), (P7T_N, 0, 1), (P7T_S, 0, 0)]:
        tr.append(st, k, i)
    tr.reverse()
    assert tr.st == [P7T_S, P7T_N, P7T_N, P7T_B, P7T_M, P7T_M, P7T_E, P7T_J, P7T_J, P7T_B, P7T_M, P7T_I, P7T_M,
                     P7T_E, P7T_C, P7T_C, P7T_T]
    assert tr.i == [0, 0, 1, 0, 2, 3, 0, 0, 4, 0, 5, 6, 7, 0, 0, 8, 0]
    assert tr.k == [0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 3, 3, 4, 0, 0, 0, 0]
    doms = traces.trace_index(tr)
    assert [(d.tfrom, d.tto, d.sqfrom, d.sqto, d.hmmfrom, d.hmmto) for d in doms] == [
        (3, 6, 2, 3, 1, 2), (9, 13, 5, 7, 3, 4)]


def test_null2_by_trace():
    """Frequency-weighted emission odds; inserts counted in the match slot (HMMER); degeneracies averaged."""
    rs = np.random.default_rng(3)
    M = 7
    model = ModelTables(tsc=np.zeros((M, 8), dtype=f32), msc=rs.uniform(0.1, 4.0, (29, M)).astype(f32),
                        xf=np.zeros((4, 2), dtype=f32))
    tr = Trace(st=[P7T_S, P7T_N, P7T_B, P7T_M, P7T_M, P7T_I, P7T_M, P7T_E, P7T_C, P7T_T],
               k=[0, 0, 0, 1, 2, 2, 6, 0, 0, 0], i=[0, 0, 0, 1, 2, 3, 4, 0, 0, 0], M=M, L=4)
    null2 = traces.null2_by_trace(model, tr, 2, 7)
    assert null2.dtype == np.float32 and null2.shape == (29,)
    expect = (model.msc[:20, 0] + 2 * model.msc[:20, 1] + model.msc[:20, 5]) / 4.0  # I2 counts as M2
    np.testing.assert_allclose(null2[:20], expect, rtol=1e-6)
    assert null2[21] == f32(f32(null2[2] + null2[11]) / f32(2))  # B = D, N
    assert null2[22] == f32(f32(null2[7] + null2[9]) / f32(2))  # J = I, L
    assert null2[24] == null2[8] and null2[25] == null2[1]  # O -> K, U -> C
    np.testing.assert_allclose(null2[26], null2[:20].mean(), rtol=1e-6)  # X
    assert null2[20] == null2[27] == null2[28] == 1.0  # gap, '*', '~'


def test_null2_sums_lanes_as_hmmer():
    """Each of the four SSE lanes is summed over q, then the lanes as (l0 + l1) + (l2 + l3):
    lanes (1, 2^-24, 2^-24, 2^-24) give 1 + 2^-23 (in node order the sum would round to 1)."""
    M = 8  # Q = 2: nodes 1, 3, 5, 7 are lanes 0..3 of vector 0
    msc = np.ones((29, M), dtype=f32)
    msc[0, [0, 2, 4, 6]] = [4.0, 2.0**-22, 2.0**-22, 2.0**-22]  # x frequency 1/4 -> 1, 2^-24, 2^-24, 2^-24
    model = ModelTables(tsc=np.zeros((M, 8), dtype=f32), msc=msc, xf=np.zeros((4, 2), dtype=f32))
    tr = Trace(st=[P7T_B, P7T_M, P7T_M, P7T_M, P7T_M, P7T_E], k=[0, 1, 3, 5, 7, 0], i=[0, 1, 2, 3, 4, 0], M=M, L=4)
    assert traces.null2_by_trace(model, tr, 0, 5)[0] == f32(1 + 2.0**-23)


# ---------------------------------------------------------------- segment pair ensemble


def _ensemble(pairs_per_trace) -> SpEnsemble:
    sp = SpEnsemble()
    for t, pairs in enumerate(pairs_per_trace):
        for p in pairs:
            sp.add(t, *p)
    return sp


def test_cluster_two_domains():
    """Two repeats sampled in every trace, with jitter: two clusters, probability 1, in sequence order."""
    rs = np.random.default_rng(0)
    traces = []
    for _ in range(50):
        a, b = rs.integers(-1, 2, size=2)
        traces.append([(10 + a, 60 + b, 2 + a, 51 + b), (100 + b, 150 + a, 2 + b, 51 + a)])
    got = _ensemble(traces).cluster()
    assert [(c.i, c.j, c.k, c.m) for c in got] == [(9, 61, 1, 52), (99, 151, 1, 52)]
    assert [c.prob for c in got] == [1.0, 1.0]


def test_cluster_endpoint_trimming_and_fallback():
    """Endpoints need >= ceilf(ninc * 0.02) pairs (2 of 100): a lone outlier start is trimmed, two are kept."""
    base = [(10, 60, 1, 51)] * 98
    one = [[p] for p in base + [(7, 60, 1, 51), (10, 60, 1, 51)]]  # one start at 7 (diagonal 6 vs 9: linked)
    two = [[p] for p in base + [(7, 60, 1, 51), (7, 60, 1, 51)]]
    assert [(c.i, c.j) for c in _ensemble(one).cluster()] == [(10, 60)]
    assert [(c.i, c.j) for c in _ensemble(two).cluster()] == [(7, 60)]
    # all endpoints distinct: no position reaches 2, so each falls back to the first maximum (leftmost)
    chain = [[(10 + t, 200 + t, 1 + t, 191 + t)] for t in range(100)]
    assert [(c.i, c.j, c.k, c.m) for c in _ensemble(chain).cluster()] == [(10, 200, 1, 191)]


def test_cluster_posterior_threshold_counts_traces():
    """A cluster needs pairs in >= 25% of the traces; two pairs of one trace count once."""
    hit = (10, 60, 1, 51)
    traces = [[hit] if t < 24 else [] for t in range(100)]
    traces[0] = [hit, (11, 61, 2, 52)]  # same cluster twice in trace 0
    sp = SpEnsemble()
    for t, pairs in enumerate(traces):
        sp.add(t, 200, 210, 1, 11)  # every trace has some pair, so nsamples = 100
        for p in pairs:
            sp.add(t, *p)
    got = sp.cluster()
    assert [(c.i, c.j) for c in got] == [(200, 210)]  # 24/100 < 0.25: the (10, 60) cluster is rejected
    traces = [[hit] if t < 25 else [] for t in range(100)]
    sp = SpEnsemble()
    for t, pairs in enumerate(traces):
        sp.add(t, 200, 210, 1, 11)
        for p in pairs:
            sp.add(t, *p)
    assert [(c.i, c.j, c.prob) for c in sp.cluster()] == [(10, 60, float(f32(0.25))), (200, 210, 1.0)]


def test_cluster_linkage_rule():
    """Diagonals within 4 at start or end link; the model overlap has no +1 (HMMER), so 7/10 < 0.8."""
    def nclusters(p, q):
        return _ensemble([[p], [q]]).cluster(min_posterior=0.0).__len__()

    assert nclusters((10, 60, 1, 51), (10, 60, 5, 55)) == 1  # start diagonals 9 and 5
    assert nclusters((10, 60, 1, 51), (10, 60, 7, 57)) == 2  # 9 and 3, ends also 6 apart
    assert nclusters((11, 20, 1, 10), (13, 22, 3, 12)) == 2  # seq overlap 8/10 = 0.8 passes; model (10-3)/10 fails
    assert nclusters((11, 20, 1, 10), (12, 21, 2, 11)) == 1  # model (10-2)/10 = 0.8
    with pytest.raises(ValueError):
        SpEnsemble().add(1, 1, 2, 1, 2)


def test_remove_dominated():
    """>= 80% overlap: the less probable goes (the earlier on ties); the scan stops at an overlap of exactly 0."""
    a, b = Cluster(1, 10, 1, 10, 0, 0.9), Cluster(2, 10, 1, 9, 1, 0.5)
    assert ensemble.remove_dominated([a, b]) == [a]
    assert ensemble.remove_dominated([a, Cluster(2, 10, 1, 9, 1, 0.9)]) == [Cluster(2, 10, 1, 9, 1, 0.9)]
    adjacent = Cluster(11, 20, 1, 10, 2, 0.3)  # overlap with a: 10 - 11 + 1 = 0 -> stop scanning after a
    assert ensemble.remove_dominated([a, adjacent, b]) == [a, adjacent, b]
    apart = Cluster(30, 40, 1, 10, 2, 0.3)  # negative overlap does not stop the scan
    assert ensemble.remove_dominated([a, apart, b]) == [a, apart]


# ---------------------------------------------------------------- end to end: reference Forward and regions


def _stripe(values: np.ndarray, Q: int) -> np.ndarray:
    """Node values [M] -> HMMER's striped [Q, 4] (node r*Q+q+1 at [q, r]), zero padding."""
    out = np.zeros(4 * Q, dtype=f32)
    out[: len(values)] = values
    return out.reshape(4, Q).T.copy()


def _rshift(v: np.ndarray) -> np.ndarray:
    """esl_sse_rightshiftz_float: lanes (a, b, c, d) -> (0, a, b, c)."""
    return np.concatenate([[f32(0)], v[:3]]).astype(f32)


def reference_forward(model: ModelTables, dsq_r: np.ndarray) -> tuple[RegionForward, np.float32]:
    """HMMER's ``p7_Forward`` (impl_sse ``forward_engine``) emulated in float32, lane by lane.

    ``dsq_r``: codes 1..L (``dsq_r[0]`` unused).  Same products and sums in
    the same order as the SSE code, the D->D passes included (all four below
    M = 100, until nothing changes above), and the same sparse rescaling.
    Returns the full matrix and the score in nats (float, as HMMER's).
    """
    M, L = model.M, len(dsq_r) - 1
    Q = traces.nqf(M)
    t = [_stripe(model.tsc[:, c], Q) for c in range(8)]
    emis = np.stack([_stripe(model.msc[x], Q) for x in range(model.msc.shape[0])])
    xf = model.xf
    mS, iS, dS = (np.zeros((L + 1, Q, 4), dtype=f32) for _ in range(3))
    xmx = np.zeros((L + 1, 6), dtype=f32)
    xE, xN, xJ, xB, xC = f32(0), f32(1), f32(0), xf[ON, MOVE], f32(0)
    xmx[0] = [xE, xN, xJ, xB, xC, 1]
    totscale = f32(0)  # P7_OMX.totscale is a float
    for i in range(1, L + 1):
        mp, ip, dp = mS[i - 1], iS[i - 1], dS[i - 1]
        mpv, ipv, dpv = (np.vstack([_rshift(a[Q - 1]), a[:-1]]) for a in (mp, ip, dp))  # node k-1
        sv = xB * t[BM]
        sv = sv + mpv * t[MM]
        sv = sv + ipv * t[IM]
        sv = sv + dpv * t[DM]
        sv = sv * emis[dsq_r[i]]
        mS[i] = sv
        iS[i] = mp * t[MI] + ip * t[II]
        md = sv * t[MD]
        D = np.zeros((Q, 4), dtype=f32)
        D[1:] = md[:-1]
        dcv = _rshift(md[Q - 1])
        for q in range(Q):
            D[q] = dcv + D[q]
            dcv = D[q] * t[DD][q]
        for _ in range(3):
            dcv = _rshift(dcv)
            changed = False
            for q in range(Q):
                new = dcv + D[q]
                changed |= bool(np.any(new > D[q]))
                D[q] = new
                dcv = dcv * t[DD][q]
            if M >= 100 and not changed:
                break
        dS[i] = D
        xEv = np.zeros(4, dtype=f32)
        for q in range(Q):
            xEv = xEv + sv[q]
        for q in range(Q):
            xEv = D[q] + xEv
        xE = (xEv[0] + xEv[1]) + (xEv[2] + xEv[3])
        xN = xN * xf[ON, LOOP]
        xC = (xC * xf[OC, LOOP]) + (xE * xf[OE, MOVE])
        xJ = (xJ * xf[OJ, LOOP]) + (xE * xf[OE, LOOP])
        xB = (xJ * xf[OJ, MOVE]) + (xN * xf[ON, MOVE])
        scale = f32(1)
        if float(xE) > 1.0e4:
            xN, xC, xJ, xB = xN / xE, xC / xE, xJ / xE, xB / xE
            inv = f32(1.0 / float(xE))
            mS[i] *= inv
            dS[i] *= inv
            iS[i] *= inv
            scale, xE = xE, f32(1)
            totscale = f32(float(totscale) + math.log(float(scale)))
        xmx[i] = [xE, xN, xJ, xB, xC, scale]

    def unstripe(a):
        out = np.zeros((L + 1, M + 1), dtype=f32)
        out[:, 1:] = a.transpose(0, 2, 1).reshape(L + 1, 4 * Q)[:, :M]
        return out

    score = f32(float(totscale) + math.log(float(xC * xf[OC, MOVE])))
    return RegionForward(unstripe(mS), unstripe(iS), unstripe(dS), xmx), score


def posterior_decoding(model: ModelTables, dsq: np.ndarray):
    """float64 Forward/Backward of the multihit local model: ``btot, etot, mocc`` as p7_DomainDecoding defines them.

    Unscaled odds ratios: fine for the scores here (well under 700 nats), not for any target.
    """
    M, L = model.M, len(dsq) - 1
    t, e, xf = model.tsc.astype(float), model.msc.astype(float), model.xf.astype(float)
    fm, fi, fd = (np.zeros((L + 1, M + 1)) for _ in range(3))
    fx = np.zeros((L + 1, 5))  # E N J B C
    fx[0] = [0, 1, 0, xf[ON, MOVE], 0]
    for i in range(1, L + 1):
        fm[i, 1:] = (fx[i - 1, 3] * t[:, BM] + fm[i - 1, :-1] * t[:, MM] + fi[i - 1, :-1] * t[:, IM]
                     + fd[i - 1, :-1] * t[:, DM]) * e[dsq[i]]
        fi[i, 1:] = fm[i - 1, 1:] * t[:, MI] + fi[i - 1, 1:] * t[:, II]
        md, dd, d = (fm[i, 1:] * t[:, MD]).tolist(), t[:, DD].tolist(), 0.0
        for k in range(2, M + 1):
            d = md[k - 2] + d * dd[k - 2]
            fd[i, k] = d
        E = fm[i].sum() + fd[i].sum()
        N = fx[i - 1, 1] * xf[ON, LOOP]
        J = fx[i - 1, 2] * xf[OJ, LOOP] + E * xf[OE, LOOP]
        fx[i] = [E, N, J, J * xf[OJ, MOVE] + N * xf[ON, MOVE], fx[i - 1, 4] * xf[OC, LOOP] + E * xf[OE, MOVE]]
    total = fx[L, 4] * xf[OC, MOVE]
    bm, bi = np.zeros((L + 2, M + 2)), np.zeros((L + 2, M + 2))
    bx = np.zeros((L + 2, 5))
    t_next = np.zeros((M + 1, 3))  # transitions into node k+1 (MM, IM, DM), indexed by k
    t_next[1:M] = t[1:, [MM, IM, DM]]
    for i in range(L, -1, -1):
        into = np.zeros(M + 2)  # into[k+1] = e_{k+1}(x_{i+1}) M(i+1, k+1)
        if i < L:
            into[1:M + 1] = e[dsq[i + 1]] * bm[i + 1, 1:M + 1]
            B = float(np.dot(t[:, BM], into[1:M + 1]))
            J = bx[i + 1, 2] * xf[OJ, LOOP] + B * xf[OJ, MOVE]
            C = bx[i + 1, 4] * xf[OC, LOOP]
            N = bx[i + 1, 1] * xf[ON, LOOP] + B * xf[ON, MOVE]
        else:
            B, J, C, N = 0.0, 0.0, xf[OC, MOVE], 0.0
        E = C * xf[OE, MOVE] + J * xf[OE, LOOP]
        bx[i] = [E, N, J, B, C]
        nxt = into[2:M + 2]  # for k = 1..M
        bi[i, 1:M + 1] = t_next[1:, 1] * nxt + t[:, II] * bi[i + 1, 1:M + 1]
        m_part = E + t_next[1:, 0] * nxt + t[:, MI] * bi[i + 1, 1:M + 1]
        d_part = (E + t_next[1:, 2] * nxt).tolist()
        tdd = t[:, DD].tolist()
        d_next = 0.0
        bd = np.zeros(M + 1)
        for k in range(M, 0, -1):
            bd[k] = d_part[k - 1] + tdd[k - 1] * d_next
            d_next = bd[k]
        bm[i, 1:M + 1] = m_part + t[:, MD] * np.concatenate([bd[2:], [0.0]])
    btot, etot, mocc = np.zeros(L + 1), np.zeros(L + 1), np.zeros(L + 1)
    for i in range(1, L + 1):
        btot[i] = btot[i - 1] + fx[i - 1, 3] * bx[i - 1, 3] / total
        etot[i] = etot[i - 1] + fx[i, 0] * bx[i, 0] / total
        njc = (fx[i - 1, 1] * bx[i, 1] * xf[ON, LOOP] + fx[i - 1, 2] * bx[i, 2] * xf[OJ, LOOP]
               + fx[i - 1, 4] * bx[i, 4] * xf[OC, LOOP])
        mocc[i] = 1.0 - njc / total
    return btot, etot, mocc


def find_regions(btot, etot, mocc, rt1=0.25, rt2=0.10, rt3=0.20) -> list[tuple[int, int, bool]]:
    """The region loop of p7_domaindef_ByPosteriorHeuristics: (i, j, is_multidomain_region)."""
    out, i, triggered = [], -1, False
    for j in range(1, len(mocc)):
        if not triggered:
            if mocc[j] - (btot[j] - btot[j - 1]) < rt2 or i == -1:
                i = j
            if mocc[j] >= rt1:
                triggered = True
        elif mocc[j] - (etot[j] - etot[j - 1]) < rt2:
            best = max(min(etot[z] - etot[i - 1], btot[j] - btot[z - 1]) for z in range(i, j + 1))
            out.append((i, j, best >= rt3))
            i, triggered = -1, False
    return out


_NEXT = {P7T_S: {P7T_N}, P7T_N: {P7T_N, P7T_B}, P7T_B: {P7T_M}, P7T_M: {P7T_M, P7T_I, P7T_D, P7T_E},
         P7T_I: {P7T_I, P7T_M}, P7T_D: {P7T_D, P7T_M, P7T_E}, P7T_E: {P7T_C, P7T_J}, P7T_J: {P7T_J, P7T_B},
         P7T_C: {P7T_C, P7T_T}}


def assert_valid_path(tr: Trace, model: ModelTables, codes: np.ndarray) -> None:
    """A local multihit path S N.. B (core) E [J.. B (core) E].. C.. T, every step of nonzero probability,
    emitting residues 1..L once each in order."""
    st, k, i, M = tr.st, tr.k, tr.i, model.M
    assert st[:2] == [P7T_S, P7T_N] and st[-2:] == [P7T_C, P7T_T]
    ts = model.tsc
    for z in range(len(st) - 1):
        a, b = st[z], st[z + 1]
        assert b in _NEXT[a], (z, a, b)
        if b == P7T_M and a != P7T_B:
            assert k[z + 1] == k[z] + 1 and ts[k[z + 1] - 1, {P7T_M: MM, P7T_I: IM, P7T_D: DM}[a]] > 0
        if b == P7T_M and a == P7T_B:
            assert ts[k[z + 1] - 1, BM] > 0
        if b == P7T_D:
            assert k[z + 1] == k[z] + 1 and ts[k[z] - 1, MD if a == P7T_M else DD] > 0
        if b == P7T_I:
            assert k[z + 1] == k[z] and ts[k[z] - 1, MI if a == P7T_M else II] > 0
        if st[z + 1] in (P7T_N, P7T_C, P7T_J):
            assert (i[z + 1] > 0) == (a == b)
    emitted = [i[z] for z in range(len(st)) if i[z] > 0]
    assert emitted == list(range(1, tr.L + 1))
    for z in range(len(st)):
        if st[z] == P7T_M:
            assert 1 <= k[z] <= M and model.msc[codes[i[z]], k[z] - 1] > 0
        elif st[z] == P7T_D:
            assert 1 <= k[z] <= M and i[z] == 0


def _read_search(hmm_path, seqs_path, model_name):
    with HMMFile(hmm_path) as hf:
        hmm = next(h for h in hf if h.name == model_name)
    with SequenceFile(str(seqs_path), digital=True, alphabet=Alphabet.amino()) as sf:
        seqs = sf.read_block()
    hits = next(iter(pyhmmer.hmmsearch([hmm], seqs, cpus=1)))
    return hmm, {s.name: s for s in seqs}, {h.name: h for h in hits}


#: pyhmmer's test model PF02826 (2-Hacid_dh_C) against its test genome HG003687 (2,100 proteins), and
#: DUF4131 against the embedded default proteins (resources/: 2,000 of the shared dev proteins, 48 of its
#: Pfam 35.0 models; see resources/README.md).
SOURCES = {
    "pyhmmer": (PYHMMER_DATA / "hmms" / "txt" / "PF02826.hmm", PYHMMER_DATA / "seqs" / "938293.PRJEB85.HG003687.faa",
                "2-Hacid_dh_C"),
    "default": (DEFAULT_HMMS, DEFAULT_SEQS, "DUF4131"),
}


@pytest.fixture(scope="module")
def searches():
    """``source -> (hmm, sequences by name, pyhmmer hits by name)``, each search run once."""
    cache = {}

    def get(source):
        if source not in cache:
            cache[source] = _read_search(*SOURCES[source])
        return cache[source]
    return get


def _setup(hmm, seq):
    db = press([hmm])
    L = len(seq)
    dsq = np.concatenate([[0], np.asarray(seq.sequence)]).astype(np.uint8)
    return ModelTables.from_db(db, 0, L), dsq, db


def _region_codes(dsq, ireg, jreg):
    return np.concatenate([[0], dsq[ireg:jreg + 1]]).astype(np.uint8)


# Multi-domain regions, with pyhmmer's envelopes inside them (hmmsearch, HMMER 3.4, default options):
#   PF02826 x HG003686_664  region 56..172  -> 59-142, 132-170 (overlapping: only clustering makes these)
#   PF02826 x HG003687_15   region 231..372 -> 231-305, 291-372
#   PF02826 x HG003685_432  region 45..116  -> one envelope, 45-92 (trimmed by the endpoint statistics)
#   DUF4131 x HG003686_20   region 69..485  -> five overlapping repeats
CASES = [
    ("pyhmmer", "938293.PRJEB85.HG003686_664", (56, 172), [(59, 142), (132, 170)]),
    ("pyhmmer", "938293.PRJEB85.HG003687_15", (231, 372), [(231, 305), (291, 372)]),
    ("pyhmmer", "938293.PRJEB85.HG003685_432", (45, 116), [(45, 92)]),
    ("default", "938293.PRJEB85.HG003686_20", (69, 485), [(69, 171), (124, 236), (184, 281), (233, 383), (361, 485)]),
]
CASE_IDS = [f"{c[0]}-{c[1].split('.')[-1]}" for c in CASES]


def test_reference_forward_is_hmmers(searches):
    """The test's Forward gives pyhmmer's pre-null2 score bit for bit ((fwd - null1) / log 2, as float)."""
    hmm, seqs, hits = searches("pyhmmer")
    name = CASES[0][1]
    model, dsq, db = _setup(hmm, seqs[name])
    _, score = reference_forward(model, dsq)
    nullsc = profiles.length_params(np.array([len(dsq) - 1]), db).nullsc_nats[0]
    pre_bits = f32(float(f32(score - nullsc)) / 0.69314718055994529)
    assert float(pre_bits) == hits[name].pre_score  # 18.087797164916992 bits


@pytest.mark.parametrize("source,name,region,envelopes", CASES, ids=CASE_IDS)
def test_region_matches_hmmer(searches, source, name, region, envelopes):
    """Region found as HMMER finds it; envelopes = pyhmmer's; null2 sums = pyhmmer's Domain.correction exactly."""
    hmm, seqs, hits = searches(source)
    model, dsq, _ = _setup(hmm, seqs[name])
    multi = [(i, j) for i, j, is_multi in find_regions(*posterior_decoding(model, dsq)) if is_multi]
    assert multi == [region]
    ireg, jreg = region
    fwd, _ = reference_forward(model, _region_codes(dsq, ireg, jreg))
    rng = EaselRandom(42)
    rng.random()  # the generator is reset inside: earlier use must not matter
    n2sc, envs = ensemble.region_trace_ensemble(fwd, model, dsq, ireg, jreg, rng)
    assert n2sc.dtype == np.float32 and n2sc.shape == (jreg - ireg + 1,)
    assert envs == envelopes
    domains = {(d.env_from, d.env_to): d for d in hits[name].domains}
    for i, j in envs:
        domcorrection = f32(0)
        for v in n2sc[i - ireg : j - ireg + 1]:  # rescore_isolated_domain's float sum
            domcorrection = f32(domcorrection + v)
        assert float(domcorrection) * LOG2R == domains[(i, j)].correction


@pytest.mark.parametrize("case,expect", [(0, 1.443), (3, 4.020)], ids=[CASE_IDS[0], CASE_IDS[3]])
def test_sampled_traces_are_valid_paths(searches, case, expect):
    """All 200 traces of a region are valid paths; their mean domain count is the posterior expectation.

    Expected domains in the region = sum of B posteriors (float64
    Forward/Backward of the region, same model): 1.443 for PF02826 x
    HG003686_664 (2,000 traces give 1.436), 4.020 for the DUF4131 repeats.
    The mean of the 200 traces must be within 4 standard errors (SD of the
    counts / sqrt(200)).
    """
    source, name, (ireg, jreg), _ = CASES[case]
    hmm, seqs, _ = searches(source)
    model, dsq, _ = _setup(hmm, seqs[name])
    region = _region_codes(dsq, ireg, jreg)
    fwd, _ = reference_forward(model, region)
    sampler = traces.TraceSampler(fwd, model)
    rng = EaselRandom(42)
    counts = []
    for _ in range(200):
        tr = sampler.sample(rng)
        assert_valid_path(tr, model, region)
        counts.append(len(traces.trace_index(tr)))
    expected = posterior_decoding(model, region)[0][-1]
    assert expected == pytest.approx(expect, abs=0.001)
    se = np.std(counts) / np.sqrt(len(counts))
    assert abs(np.mean(counts) - expected) < 4 * se


def test_region_input_checks(searches):
    hmm, seqs, _ = searches("pyhmmer")
    _, name, (ireg, jreg), _ = CASES[2]
    model, dsq, _ = _setup(hmm, seqs[name])
    fwd, _ = reference_forward(model, _region_codes(dsq, ireg, jreg))
    with pytest.raises(ValueError, match="rows"):
        ensemble.region_trace_ensemble(fwd, model, dsq, ireg, jreg + 1, EaselRandom(42))
    with pytest.raises(ValueError, match="float32"):
        traces.TraceSampler(RegionForward(fwd.mmx.astype(np.float64), fwd.imx, fwd.dmx, fwd.xmx), model)

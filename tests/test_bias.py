"""src/hmmcascade/kernels/bias.cl and BiasFilter: HMMER's biased-composition filter (p7_bg_FilterScore's HMM part).

Reference: Easel's ``esl_hmm_Forward`` on the two-state filter HMM of
``p7_bg_SetFilter`` / ``p7_bg_SetLength``, with HMMER's float parameters,
evaluated here in float64.  The state-1 emission odds are rebuilt from the
optimized profile's composition (what hmmsearch passes to p7_bg_SetFilter)
by ``esl_hmm_Configure``'s rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyhmmer.easel import Alphabet
from pyhmmer.plan7 import Background, Profile

from hmmcascade import device_data, filters, profiles

AMINO = Alphabet.amino()
SYMBOLS = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"  # Easel's amino codes 0..28
#: Easel's amino degeneracies (esl_alphabet.c): B = N|D, J = I|L, Z = Q|E, O (pyrrolysine) = K,
#: U (selenocysteine) = C, X = any.
DEGENERATE = {"B": "ND", "J": "IL", "Z": "QE", "O": "K", "U": "C", "X": "ACDEFGHIKLMNPQRSTVWY"}
f32 = np.float32


def configure_odds(compo: np.ndarray, bg_f: np.ndarray) -> np.ndarray:
    """esl_hmm_Configure's state-1 odds ``eo[x]`` for x = 0..28, in float as Easel computes them.

    Canonical: e[x] / f[x].  Gap, nonresidue ('*'), missing: 1.  Degenerate:
    (sum of e over its residues) / (sum of f), sums accumulated in residue order.
    """
    eo = np.ones(len(SYMBOLS), dtype=np.float32)
    for x in range(20):
        eo[x] = f32(compo[x]) / f32(bg_f[x])
    for sym, members in DEGENERATE.items():
        num = den = f32(0.0)
        for y in sorted(SYMBOLS.index(c) for c in members):
            num = f32(num + f32(compo[y]))
            den = f32(den + f32(bg_f[y]))
        eo[SYMBOLS.index(sym)] = num / den
    return eo


def filter_hmm_forward(xs, Ms, eos, dtype) -> np.ndarray:
    """esl_hmm_Forward score (nats) of the filter HMM, one per pair, all pairs at once.

    HMMER's float parameters: pi = (0.999f, 0.001f); t00 = p1 = (float)L/(float)(L+1),
    t01 = 1 - p1; L1 = (float)M/8, t10 = 1/(L1+1), t11 = L1/(L1+1); both states
    end with probability 1; eo0 = 1.  Easel's order of operations:
    d(1,k) = eo_k(x_1) pi_k; d(i,k) = (0 + d(i-1,0) t0k + d(i-1,1) t1k) eo_k(x_i);
    each row divided by its maximum (which is also at least 0) and
    log(max) (a double log stored as float) added to the float total;
    finally log(d(L,0) + d(L,1)).

    ``dtype=np.float64``: that recurrence in double (the reference);
    ``dtype=np.float32``: every operation rounded to float as Easel's C code
    rounds it, so the result is HMMER's own float score.
    """
    t = dtype
    n = len(xs)
    L = np.array([len(x) for x in xs])
    order = np.argsort(-L, kind="stable")  # longest first: active pairs are a prefix
    L = L[order]
    x = np.zeros((n, L[0]), dtype=np.intp)
    e1 = np.zeros((n, L[0]), dtype=t)
    for j, p in enumerate(order):
        x[j, : L[j]] = xs[p]
        e1[j, : L[j]] = eos[p][xs[p]]
    p1 = (L.astype(np.float32) / (L + 1).astype(np.float32)).astype(t)
    t00, t01 = p1, (np.float32(1.0) - p1.astype(np.float32)).astype(t)
    L1 = np.array([Ms[p] for p in order], dtype=np.float32) / np.float32(8.0)
    t10 = (np.float32(1.0) / (L1 + np.float32(1.0))).astype(t)
    t11 = (L1 / (L1 + np.float32(1.0))).astype(t)

    def log(v):  # C: (float) log((double) v) in Easel's float code
        return np.log(v.astype(np.float64)).astype(t)

    d0 = np.full(n, np.float32(1.0) * np.float32(0.999), dtype=t)
    d1 = e1[:, 0] * t(np.float32(0.001))
    mx = np.maximum(np.maximum(d0, t(0.0)), d1)
    d0, d1 = d0 / mx, d1 / mx
    logsc = t(0.0) + log(mx)
    out = np.empty(n, dtype=np.float64)
    for i in range(1, L[0] + 1):
        a = int(np.count_nonzero(L > i))
        done = np.flatnonzero(L == i)
        out[done] = logsc[done] + log(d0[done] + d1[done])
        d0, d1, logsc = d0[:a], d1[:a], logsc[:a]
        n0 = (t(0.0) + d0 * t00[:a]) + d1 * t10[:a]
        n1 = ((t(0.0) + d0 * t01[:a]) + d1 * t11[:a]) * e1[:a, i] if a else n0
        mx = np.maximum(np.maximum(n0, t(0.0)), n1)
        d0, d1 = n0 / mx, n1 / mx
        logsc = logsc + log(mx)
    result = np.empty(n, dtype=np.float64)
    result[order] = out
    return result


@pytest.fixture(scope="module")
def bias_pairs(msv_sample):
    """25 models x 10 sequences = 250 pairs.

    Sequences: the 6 with degenerate residues (X in three genome proteins that
    also end in '*', U in two selenoproteins, X in one short protein), the
    1- and 9-residue fragments, the 4,560-residue protein, and a 300-residue one.
    """
    s = msv_sample
    L = s.seqs.lengths
    degenerate = [i for i in range(len(L)) if np.any((s.residues(i) >= 21) & (s.residues(i) <= 26))]
    chosen = degenerate + [int(np.flatnonzero(L == 1)[0]), int(np.flatnonzero(L == 9)[0]),
                           int(np.argmax(L)), int(np.flatnonzero(L >= 300)[0])]
    chosen = np.unique(chosen)
    pair_model = np.repeat(np.arange(len(s.db)), len(chosen))
    pair_seq = np.tile(chosen, len(s.db))
    return pair_seq, pair_model


def test_bias_odds_table_is_esl_hmm_configure(msv_sample):
    """``bias_odds_f32`` equals esl_hmm_Configure's odds from the optimized profile's composition, exactly."""
    bg = Background(AMINO)
    bg_f = np.asarray(bg.residue_frequencies, dtype=np.float32)
    for m, hmm in enumerate(msv_sample.hmms):
        p = Profile(hmm.M, AMINO)
        p.configure(hmm, bg, 400)
        compo = np.asarray(p.to_optimized().compositions, dtype=np.float32)
        np.testing.assert_array_equal(msv_sample.db.bias_odds_f32[m], configure_odds(compo, bg_f), err_msg=hmm.name)


def test_bias_filter_matches_esl_hmm_forward(msv_sample, bias_pairs, device):
    """Kernel score = float64 esl_hmm_Forward within 1e-4 nats + 1e-5 relative, for 250 pairs incl. X, U, '*'.

    The kernel, like Easel, is float32 and adds one float log per residue to a
    float32 total.  Each addition rounds by up to half a float spacing
    (6e-8 relative to the total); over the 4,560-residue protein these
    roundings random-walk to ~70 x 6e-8 = 4e-6 of the total (observed: 1.2e-4
    nats on a 77-nat score).  Hence 1e-4 nats plus 1e-5 relative.  The float32
    emulation of Easel's arithmetic, in contrast, must agree exactly.

    And two bounds that hold for any two-state HMM whose transition rows sum
    to 1 (checked to 1e-4 for the kernel's rounding): the score is at least
    that of the all-background path, log(0.999) + (L-1) log(p1), and at most
    sum_i log max(1, eo1(x_i)), every residue taking its better state for free.
    """
    s = msv_sample
    pair_seq, pair_model = bias_pairs
    lp = profiles.length_params(s.seqs.lengths, s.db)
    batch = device_data.DeviceBatch.upload(device, s.seqs, lp)
    bias = filters.BiasFilter(device, device_data.DeviceModels(device, s.db), 64 << 20)
    got, _ = bias(batch, pair_seq, pair_model)

    bg_f = np.asarray(Background(AMINO).residue_frequencies, dtype=np.float32)
    eo = []
    for hmm in s.hmms:
        p = Profile(hmm.M, AMINO)
        p.configure(hmm, Background(AMINO), 400)
        eo.append(configure_odds(np.asarray(p.to_optimized().compositions, dtype=np.float32), bg_f))
    xs = [s.residues(i).astype(np.intp) for i in pair_seq]
    Ms = [s.hmms[m].M for m in pair_model]
    ref = filter_hmm_forward(xs, Ms, [eo[m] for m in pair_model], np.float64)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=1e-5, atol=1e-4)
    # and bit for bit with Easel's float arithmetic (bias.cl: "operation by operation")
    hmmer_float = filter_hmm_forward(xs, Ms, [eo[m] for m in pair_model], np.float32)
    mismatch = np.flatnonzero(got.astype(np.float64) != hmmer_float)
    assert len(mismatch) == 0, [(int(pair_model[p]), int(pair_seq[p]), got[p], hmmer_float[p]) for p in mismatch[:5]]

    L = s.seqs.lengths[pair_seq].astype(np.float64)
    p1 = lp.p1_f32[pair_seq].astype(np.float64)
    lower = np.log(float(f32(0.999))) + (L - 1) * np.log(p1)
    upper = np.array([np.sum(np.log(np.maximum(1.0, eo[m][x].astype(np.float64)))) for m, x in zip(pair_model, xs)])
    assert np.all(got >= lower - 1e-4)
    assert np.all(got <= upper + 1e-4)
    # the sample is not trivial: composition matters for some pairs (score well above the background path)
    assert np.max(got - lower) > 1.0
    codes = np.concatenate(xs)
    assert {SYMBOLS.index(c) for c in "XU*"} <= set(codes.tolist())

"""kernels/msv.cl and MsvFilter: HMMER's MSV filter score, bit for bit.

Reference: pyhmmer 0.12.3's ``OptimizedProfile.msv_filter`` (HMMER 3.4
``p7_MSVFilter``, SSV shortcut included) after ``om.L = len(seq)``, as the
pipeline reconfigures the length before filtering.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyhmmer.easel import Alphabet, DigitalSequence
from pyhmmer.plan7 import Background, Profile

from hmmcascade import filters, profiles, stats

AMINO = Alphabet.amino()


@pytest.fixture(scope="module")
def msv_run(msv_sample, device):
    """Kernel J(L) words and scores (nats) for every (model, sequence) pair of the sample, one launch."""
    s = msv_sample
    lp = profiles.length_params(s.seqs.lengths, s.db)
    models = filters.DeviceModels(device, s.db)
    batch = filters.DeviceBatch.upload(device, s.seqs, lp)
    msv = filters.MsvFilter(device, models, 256 << 20, path="tiled")
    xj, _ = msv(batch, 0, len(s.db))
    usc = stats.msv_nats(xj, lp.tjb_u8[None, :], s.db.msv_params_u8[:, 2, None], s.db.scale_b)
    return msv, batch, xj, usc


@pytest.fixture(scope="module")
def hmmer_msv(msv_sample):
    """HMMER's MSV score (nats) for every pair: ``[models, sequences]`` float32, +inf on byte overflow."""
    s = msv_sample
    bg = Background(AMINO)
    dsqs = [DigitalSequence(AMINO, name=s.seqs.names[i].encode(), sequence=s.residues(i)) for i in range(len(s.seqs))]
    out = np.empty((len(s.hmms), len(dsqs)), dtype=np.float32)
    for m, hmm in enumerate(s.hmms):
        p = Profile(hmm.M, AMINO)
        p.configure(hmm, bg, 400)
        om = p.to_optimized()
        for i, dsq in enumerate(dsqs):
            om.L = len(dsq)
            out[m, i] = om.msv_filter(dsq)  # a C float returned as a Python float: the conversion is exact
    return out


def test_sample_covers_lengths_and_both_paths(msv_sample, hmmer_msv):
    """The comparison below covers lengths 1..>2,000 and both exits of the filter (score and overflow)."""
    L = msv_sample.seqs.lengths
    assert len(msv_sample.hmms) >= 20 and len(L) >= 300
    assert L.min() == 1 and np.count_nonzero(L < 10) == 9 and np.count_nonzero(L > 2000) == 6
    overflow = np.isposinf(hmmer_msv)
    assert overflow.any() and (~overflow).any()
    assert np.all(np.isfinite(hmmer_msv[~overflow]))


def test_msv_scores_bit_identical_to_hmmer(msv_sample, msv_run, hmmer_msv):
    """Every (model, sequence) pair: the kernel's score equals HMMER's float exactly (+inf both on overflow).

    No tolerance: the kernel reproduces HMMER's saturated byte arithmetic and
    the host its float conversion, so any difference is a bug.
    """
    _, _, xj, usc = msv_run
    mismatch = np.argwhere(usc != hmmer_msv)  # inf == inf holds; float equality otherwise
    details = [(msv_sample.hmms[m].name, msv_sample.seqs.names[s], int(msv_sample.seqs.lengths[s]),
                float(usc[m, s]), float(hmmer_msv[m, s])) for m, s in mismatch[:10]]
    assert len(mismatch) == 0, f"{len(mismatch)} of {usc.size} pairs differ, e.g. {details}"
    np.testing.assert_array_equal(xj == -1, np.isposinf(hmmer_msv))  # -1 is the kernel's overflow flag


def test_msv_model_subrange_launch(msv_sample, msv_run):
    """A launch over models [lo, hi) fills rows 0..hi-lo with exactly those models' words.

    The cascade launches the models in ranges that fit the scratch budget
    (``model_groups``); an off-by-one in ``model0`` or the row offsets would
    give another model's words.  Also ``model_groups`` covers every model once.
    """
    msv, batch, xj, _ = msv_run
    lo, hi = 5, 11
    part, _ = msv(batch, lo, hi)
    np.testing.assert_array_equal(part, xj[lo:hi])
    n_seq = len(msv_sample.seqs)
    M = msv_sample.db.M
    small = filters.MsvFilter(msv.dev, msv.models, 4 * batch.grp_words * 3)  # room for three models
    groups = list(small.model_groups(batch.grp_words))
    assert all(hi - lo <= 3 for lo, hi in groups)
    assert len(groups) > 1 and groups[0][0] == 0 and groups[-1][1] == len(M)
    assert all(a[1] == b[0] for a, b in zip(groups, groups[1:]))


def test_tiled_and_exact_paths_both_used(msv_sample, msv_run):
    """msv_tiled assumes a constant B state and hands the pairs where that fails to msv_exact.

    The bit-identity test above covers both only if both ran: some pairs (the high
    scorers, incl. every overflow) must have been rerun, most must not."""
    msv, _, xj, _ = msv_run
    assert 0 < msv.reruns < xj.size // 10
    assert msv.reruns >= int((xj == -1).sum())


def test_exact_path_equals_tiled(msv_sample, msv_run):
    """The CPU default (msv_exact on every pair) gives the same words as the tiled GPU path."""
    msv, batch, xj, _ = msv_run
    exact = filters.MsvFilter(msv.dev, msv.models, 256 << 20, path="exact")
    got, _ = exact(batch, 0, len(msv_sample.db))
    np.testing.assert_array_equal(got, xj)


def test_group_kernel_equals_exact(msv_sample, msv_run):
    """msv_exact_wg (a work-group per pair, used for the tiled kernel's reruns) gives msv_exact's words
    on every pair, overflows included; models too long for its local rows take msv_exact."""
    msv, batch, xj, _ = msv_run
    n_mod, n_seq = xj.shape
    mi, si = np.divmod(np.arange(n_mod * n_seq), n_seq)
    got, _ = msv._exact_groups(batch, si.astype(np.int32), mi.astype(np.int32))
    np.testing.assert_array_equal(got.reshape(n_mod, n_seq), xj)
    assert (xj == -1).any()

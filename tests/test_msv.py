"""src/hmmcascade/kernels/msv.cl and MsvFilter: HMMER's MSV filter score, bit for bit.

Reference: pyhmmer 0.12.3's ``OptimizedProfile.msv_filter`` (HMMER 3.4
``p7_MSVFilter``, SSV shortcut included) after ``om.L = len(seq)``, as the
pipeline reconfigures the length before filtering.  Both tiled kernels are
compared with it: ``msv_tiled2`` (two models per work-item, path "tiled") and
``msv_tiled`` (one, path "tiled1"); and with each other word for word, before
the reruns, -2, -3 and the lower bounds included.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyhmmer.easel import Alphabet, DigitalSequence
from pyhmmer.plan7 import Background, Profile

from hmmcascade import cascade, device_data, msv_filter, profiles, stats
from hmmcascade.options import SearchOptions

AMINO = Alphabet.amino()


@pytest.fixture(scope="module", params=["tiled", "tiled1"])
def msv_run(request, msv_sample, device):
    """Kernel J(L) words and scores (nats) for every (model, sequence) pair of the sample, one launch,
    with each tiled kernel (``msv_tiled2``, ``msv_tiled``) and the reruns."""
    s = msv_sample
    lp = profiles.length_params(s.seqs.lengths, s.db)
    models = device_data.DeviceModels(device, s.db)
    batch = device_data.DeviceBatch.upload(device, s.seqs, lp)
    msv = msv_filter.MsvFilter(device, models, 256 << 20, path=request.param)
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
    M = msv_sample.db.M
    small = msv_filter.MsvFilter(msv.dev, msv.models, 4 * batch.grp_words * 3)  # room for three models
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
    exact = msv_filter.MsvFilter(msv.dev, msv.models, 256 << 20, path="exact")
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


@pytest.fixture(scope="module")
def tiled_pair(msv_sample, device):
    """Both tiled kernels on the sample's models, the sample's batch, and three sets of prefilter
    thresholds: none; the search's own (``cascade._msv_thresholds`` at F1 = 0.02); and a harsh
    one, per model the median J(L) of the sample (ties between J(L) and threshold included), so
    that most words are -3."""
    s = msv_sample
    lp = profiles.length_params(s.seqs.lengths, s.db)
    models = device_data.DeviceModels(device, s.db)
    one = msv_filter.MsvFilter(device, models, 256 << 20, path="tiled1")
    two = msv_filter.MsvFilter(device, models, 256 << 20, path="tiled")
    batch = device_data.DeviceBatch.upload(device, s.seqs, lp)
    plain = _tiled_words(one, batch, 0, len(s.db))
    median = np.array([np.median(row[row >= 0]) for row in plain], dtype=np.float32)
    thresholds = {"none": (None, None), "search": cascade._msv_thresholds(lp, s.db, 0.02),
                  "harsh": (median, np.zeros(len(s.seqs), dtype=np.float32))}
    return one, two, batch, thresholds


def _tiled_words(msv, batch, lo, hi, thr=(None, None)):
    """The tiled kernel's words for models [lo, hi) as the kernel wrote them (-2 not rerun)."""
    return msv.finish(msv.start(batch, lo, hi, *thr), rerun=False)[0]


#: launches of the sample's 25 models (database order: M = 409, 257, 55, 1021, ..., 91, 13, 154, ...):
#: all (odd: the shortest, M = 13, less than one tile, alone), all but the last or the first (even:
#: the longest, M = 1021 = 32 tiles, paired with the next longest), 7 models, single models (a pair
#: with no model b), M = 55 and 1021 forced into one pair (2 tiles against 32), and 91, 13, 154
LAUNCHES = [(0, 25), (0, 24), (1, 25), (5, 12), (16, 17), (3, 4), (2, 4), (15, 18)]


@pytest.mark.parametrize("lo,hi", LAUNCHES)
@pytest.mark.parametrize("thr", ["none", "search", "harsh"])
def test_tiled2_words_equal_tiled1(msv_sample, tiled_pair, lo, hi, thr):
    """msv_tiled2 (two models per work-item, 16-bit halves) writes msv_tiled's words for every pair:
    J(L), -2 (rerun), lower bounds and -3 (below the prefilter threshold), with each set of thresholds.

    Exact equality, no tolerance: each half computes msv_tiled's integer recurrence (the kernel
    header shows no half leaves int16), so any difference is a bug."""
    one, two, batch, thresholds = tiled_pair
    want = _tiled_words(one, batch, lo, hi, thresholds[thr])
    got = _tiled_words(two, batch, lo, hi, thresholds[thr])
    assert got.shape == (hi - lo, len(msv_sample.seqs))
    mismatch = np.argwhere(got != want)
    L = msv_sample.seqs.lengths
    details = [(lo + int(m), int(L[q]), int(got[m, q]), int(want[m, q])) for m, q in mismatch[:10]]
    assert len(mismatch) == 0, f"{len(mismatch)} words differ (model, L, tiled2, tiled1): {details}"
    if (lo, hi) == (0, 25):  # the kinds of word each set of thresholds gives in the full launch
        assert (got <= msv_filter.MSV_LB_CODE).any() and (got >= 0).any()
        assert (got == -3).any() == (thr != "none")
        assert (got == -3).mean() > 0.3 or thr != "harsh"


def test_tiled_lower_bounds_bound_hmmer(msv_sample, tiled_pair, hmmer_msv):
    """Where the tiled kernel's B state was not constant it writes a lower bound of J(L)
    (MSV_LB_CODE - lb): HMMER's J(L) is at least lb, or overflows.  The device's tests let such
    pairs through on the bound alone (select.cl), so a bound above HMMER's score would pass a
    pair HMMER drops."""
    one, two, batch, _ = tiled_pair
    s = msv_sample
    words = _tiled_words(two, batch, 0, len(s.db))
    exact = msv_filter.MsvFilter(one.dev, one.models, 256 << 20, path="exact")(batch, 0, len(s.db))[0]
    lb_at = words <= msv_filter.MSV_LB_CODE
    lb = msv_filter.MSV_LB_CODE - words[lb_at].astype(np.int64)
    assert lb_at.any() and (lb >= 0).all() and (lb <= 255).all()
    xj = exact[lb_at].astype(np.int64)
    assert np.all((xj == -1) | (xj >= lb))
    assert (xj == lb).any() and (xj == -1).any()  # tight where B stayed nearly constant; overflows
    # every overflow of HMMER's is one of them; the other words are exact
    assert np.all(lb_at[np.isposinf(hmmer_msv)])
    plain = words >= 0
    np.testing.assert_array_equal(words[plain], exact[plain])


def test_tiled2_sample_covers_lengths(msv_sample):
    """The launches above cover what the pair kernel treats specially: a model shorter than one
    tile and one of many tiles, paired with models of other tile counts; sequences of 1 to 5
    residues (a partly used first word), lengths not a multiple of 4 (padding codes in the last
    word), long ones, and a last work-group with fewer live sequences than work-items."""
    M = msv_sample.db.M
    L = msv_sample.seqs.lengths
    assert len(M) == 25 and M[16] == M.min() < 32 and M[3] == M.max() > 30 * 32
    assert M[2] < 2 * 32 and M[15:18].tolist() == [91, 13, 154]
    assert set(range(1, 6)) <= set(L.tolist()) and (L % 4 != 0).any() and L.max() > 2000
    assert len(L) % device_data.LOCAL_SIZE != 0


def test_tiled2_short_sequences_and_exact(msv_sample, tiled_pair):
    """A batch of only the 1- to 5-residue fragments (one work-group, 59 of 64 work-items idle):
    msv_tiled2's words equal msv_tiled's, and after the reruns msv_exact's (HMMER's recurrence)."""
    one, two, _, _ = tiled_pair
    s = msv_sample
    seqs = s.seqs.subset(np.flatnonzero(s.seqs.lengths <= 5))
    assert seqs.lengths.tolist() == [1, 2, 3, 4, 5]
    lp = profiles.length_params(seqs.lengths, s.db)
    batch = device_data.DeviceBatch.upload(one.dev, seqs, lp)
    for lo, hi in LAUNCHES:
        np.testing.assert_array_equal(_tiled_words(two, batch, lo, hi), _tiled_words(one, batch, lo, hi))
    exact = msv_filter.MsvFilter(one.dev, one.models, 256 << 20, path="exact")
    np.testing.assert_array_equal(two(batch, 0, len(s.db))[0], exact(batch, 0, len(s.db))[0])


def test_tiled2_pairs_models_of_similar_length(msv_sample, tiled_pair):
    """msv_tiled2's pairs: the models of the range in order of node count (stable), paired
    consecutively, the shortest alone (row b = -1) when the count is odd; on the device longest
    pair first.  The device list is made once per range."""
    _, two, _, _ = tiled_pair
    M = msv_sample.db.M
    for lo, hi in LAUNCHES:
        n_pairs, buf = two._pair_rows(lo, hi)
        assert two._pair_rows(lo, hi)[1] is buf  # cached
        rows = two.dev.from_device(buf, np.int32, 2 * n_pairs).reshape(n_pairs, 2)
        by_length = np.argsort(M[lo:hi], kind="stable").tolist()
        if (hi - lo) % 2:
            by_length.insert(1, -1)
        assert rows[::-1].ravel().tolist() == by_length
        longer = M[lo + rows.max(axis=1)]
        assert np.all(np.diff(longer) <= 0)


def test_tiled2_pair_cache_is_bounded(msv_sample, device):
    """The pair lists cached per model range start over after 256 ranges (many batch shapes)."""
    s = msv_sample
    msv = msv_filter.MsvFilter(device, device_data.DeviceModels(device, s.db), 1 << 20, path="tiled")
    ranges = [(lo, hi) for lo in range(len(s.db)) for hi in range(lo + 1, len(s.db) + 1)][:257]
    for lo, hi in ranges:
        msv._pair_rows(lo, hi)
    assert list(msv._pair_cache) == [ranges[-1]]
    n_pairs, buf = msv._pair_rows(0, 3)
    assert msv.dev.from_device(buf, np.int32, 2 * n_pairs).reshape(-1, 2)[-1, 1] == -1


def test_msv_path_choice(tiled_pair):
    """``path`` (or the options' ``msv``) picks the tiled kernel; an unknown name is an error; "tiled1"
    (msv_tiled, kept to compare with) is a constructor argument, no search option."""
    one, two, _, _ = tiled_pair
    assert two.kernel.function_name == "msv_tiled2" and one.kernel.function_name == "msv_tiled"
    assert msv_filter.MsvFilter(one.dev, one.models, 1 << 20, path="tiled1").path == "tiled1"
    assert msv_filter.MsvFilter(one.dev, one.models, 1 << 20, options=SearchOptions(msv="tiled")).path == "tiled"
    with pytest.raises(ValueError, match="MSV path"):
        SearchOptions(msv="tiled1")
    with pytest.raises(ValueError, match="MSV path"):
        msv_filter.MsvFilter(one.dev, one.models, 1 << 20, path="tiled3")
